#include "ferry/net/mbuf_chain.h"
#include "ferry/net/tcp_layer.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "ferry/base/compiler.h"
#include "ferry/net/byte_order.h"
#include "ferry/net/checksum.h"
#include "ferry/net/ethernet.h"
#include "ferry/net/stack.h"
#include "ferry/net/steering.h"

namespace ferry::net {

namespace {

constexpr uint32_t none = UINT32_MAX;
constexpr uint32_t eth_hlen = ethernet_frame::header_len;
constexpr uint32_t ip4_hlen = ipv4_repr::header_len();
constexpr uint32_t ip6_hlen = ipv6_repr::header_len;

// tcp_conn's choice (tcp_conn.cpp wscale_for): the cookie SYN-ACK must offer
// the shift the rebuilt connection will use.
uint8_t wscale_for(uint32_t buf) noexcept {
    uint8_t s = 0;
    while (s < tcp_options::max_window_shift && (buf >> s) > 0xffff) {
        ++s;
    }
    return s;
}

uint32_t next_pow2(uint32_t v) noexcept {
    uint32_t p = 1;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

}  // namespace

struct tcp_layer::slot {
    std::optional<tcp_conn> conn;
    tcp_layer *layer = nullptr;
    listener *lst = nullptr;  // set while counted in the listener's SYN backlog
    uint64_t deadline = tcp_conn::never;
    uint32_t heap_pos = none;
    uint32_t gen = 0;
    uint16_t local_port = 0;
    bool active = false;    // opened by connect()
    bool ready = false;     // in the ready ring
    bool in_table = false;  // in the flow table
    bool detached = false;  // in TIME-WAIT, `closed` reported: the layer's alone
    bool owed = false;      // in owed_: its output waits for flush()
    uint32_t tw_prev = none, tw_next = none;  // the TIME-WAIT FIFO, when detached
};

tcp_layer::tcp_layer(const tcp_layer_config &cfg, stack &st, rte_mempool *pool, net_counters &nc,
                     tcp_counters &tc)
    : cfg_(cfg),
      blocks_(std::max<uint32_t>(cfg.max_connections, 1) * tcp_block_pool::blocks_per_connection),
      st_(st),
      pool_(pool),
      nc_(nc),
      tc_(tc),
      isn_(cfg.isn_key),
      cookies_(cfg.cookie_key0, cfg.cookie_key1),
      slots_(std::max<uint32_t>(cfg.max_connections, 1)) {
    if (cfg_.max_connections == 0) {
        cfg_.max_connections = 1;
    }
    const uint32_t n = cfg_.max_connections;
    cfg_.conn.blocks = &blocks_;
    // Written before they are read (as slots are used): not initialised, so
    // not resident until then.
    heap_ = std::make_unique_for_overwrite<uint32_t[]>(n);
    ready_ = std::make_unique_for_overwrite<uint32_t[]>(n);
    owed_ = std::make_unique_for_overwrite<uint32_t[]>(n);
    zombies_ = std::make_unique_for_overwrite<uint32_t[]>(n);
    // Load factor at most 1/2: linear probing stays short.
    const uint32_t buckets = next_pow2(2 * n);
    table_ = std::make_unique<uint32_t[]>(buckets);
    std::fill_n(table_.get(), buckets, 0u);
    table_mask_ = buckets - 1;
    listeners_ = std::make_unique<listener[]>(cfg_.max_listeners);
    reserved_ = slots_.reserved_bytes() + size_t(n) * 4 * sizeof(uint32_t) +
                size_t(buckets) * sizeof(uint32_t) +
                size_t(cfg_.max_listeners) * sizeof(listener) + blocks_.reserved_bytes();
    if (cfg_.nqueues == 0) {
        cfg_.nqueues = 1;
    }
    if (cfg_.ephemeral_lo == 0 || cfg_.ephemeral_hi < cfg_.ephemeral_lo) {
        cfg_.ephemeral_lo = 32768;
        cfg_.ephemeral_hi = 60999;
    }
    // Start each lcore's walk of the range somewhere else (and unpredictably:
    // RFC 6056 §3.3 wants ephemeral ports hard to guess).
    port_cursor_ = static_cast<uint32_t>(cfg_.flow_key.k0 ^ cfg_.flow_key.k1);
    // Over IPv6 the network header is 20 bytes longer (40, RFC 8200 §3):
    // the MSS we offer and send is that much smaller for the same MTU.
    conn6_ = cfg_.conn;
    if (conn6_.mss > 20 + tcp_conn::min_snd_mss) conn6_.mss = static_cast<uint16_t>(conn6_.mss - 20);
}

uint16_t tcp_layer::owner_of(const tcp_tuple &t) const noexcept {
    if (cfg_.nqueues <= 1) {
        return 0;
    }
    return flow_queue(flow_steer_hash(t), cfg_.nqueues);
}

tcp_layer::connect_result tcp_layer::connect(const ip_addr &remote, uint16_t port, uint64_t now,
                                             tcp_handle &out) noexcept {
    now_ = now;
    const bool v6 = remote.is_v6();
    if (port == 0 || (v6 ? remote.v6().is_unspecified() || remote.v6().is_multicast() ||
                               !st_.config().addr6
                         : remote.v4().value() == 0)) {
        return connect_result::bad_address;
    }
    if (!reclaim()) {
        nc_.tcp_connect_no_slot.inc();
        return connect_result::no_slot;
    }
    // RFC 6056 §3.3.4-like: walk the range from a per-lcore cursor; keep the
    // first port whose tuple we own and that no flow (TIME-WAIT included) uses.
    const uint32_t range = uint32_t(cfg_.ephemeral_hi) - cfg_.ephemeral_lo + 1;
    tcp_tuple t{v6 ? ip_addr(*st_.config().addr6) : ip_addr(st_.config().addr), remote, 0, port};
    bool found = false;
    for (uint32_t i = 0; i < range; ++i) {
        const uint32_t off = port_cursor_++ % range;
        t.local_port = static_cast<uint16_t>(cfg_.ephemeral_lo + off);
        if (owner_of(t) != cfg_.queue || find_listener(t.local_port) != nullptr ||
            lookup(t) != none) {
            continue;
        }
        found = true;
        break;
    }
    if (!found) {
        nc_.tcp_connect_no_port.inc();
        return connect_result::no_port;
    }
    const uint32_t idx = alloc_slot();
    slot &s = slots_[idx];
    if (cfg_.active_keepalive_ns != 0) {
        // An upstream's connection: a peer that lost it (crashed, restarted,
        // its reset lost on the way) answers the first probe with a reset,
        // instead of leaving a request waiting for its response timeout.
        tcp_conn_config c = conn_config(t);
        c.keepalive = true;
        c.keepalive_idle_ns = c.keepalive_interval_ns = cfg_.active_keepalive_ns;
        c.keepalive_probes = cfg_.active_keepalive_probes;
        s.conn.emplace(c, t, isn_.isn(t, now_), &tcp_layer::emit_cb, &s, tc_);
    } else {
        s.conn.emplace(conn_config(t), t, isn_.isn(t, now_), &tcp_layer::emit_cb, &s, tc_);
    }
    s.conn->set_ts_offset(ts_offset_of(t));
    s.local_port = t.local_port;
    s.active = true;
    if (!insert_flow(t, idx)) {  // cannot happen: the table has 2x the slots
        free_slot(idx);
        nc_.tcp_connect_no_slot.inc();
        return connect_result::no_slot;
    }
    nc_.conn_opened.inc();
    out = tcp_handle{idx, s.gen};
    // A SYN that cannot be sent now (no mbuf) is retransmitted by the RTO.
    (void)s.conn->open_active(now);
    after(idx);
    return connect_result::ok;
}

tcp_layer::~tcp_layer() {
    for (uint32_t i = 0; i < slots_.made(); ++i) {
        slots_[i].conn.reset();  // frees the queued chains
    }
}

tcp_layer::listen_result tcp_layer::listen(uint16_t port) noexcept {
    if (find_listener(port) != nullptr) {
        return listen_result::already;
    }
    if (nlisteners_ == cfg_.max_listeners) {
        return listen_result::full;
    }
    listeners_[nlisteners_++] = listener{port, 0};
    return listen_result::ok;
}

bool tcp_layer::unlisten(uint16_t port) noexcept {
    for (uint32_t i = 0; i < nlisteners_; ++i) {
        if (listeners_[i].port != port) {
            continue;
        }
        // Connections still in SYN-RECEIVED point at their listener: keep the
        // array stable by only clearing the port (0 never matches a segment).
        listeners_[i].port = 0;
        return true;
    }
    return false;
}

tcp_layer::listener *tcp_layer::find_listener(uint16_t port) noexcept {
    if (port == 0) {
        return nullptr;  // also what unlisten() leaves behind
    }
    for (uint32_t i = 0; i < nlisteners_; ++i) {
        if (listeners_[i].port == port) {
            return &listeners_[i];
        }
    }
    return nullptr;
}

// ---------------------------------------------------------------- receive

bool tcp_layer::checksum_ok(const rte_mbuf *m, const ip_addr &src, const ip_addr &dst,
                            uint32_t l4_off, uint32_t len) const noexcept {
    // The port's rx offload, when it looked (RTE_MBUF_F_RX_L4_CKSUM_NONE: the
    // field is wrong but the data was verified, e.g. a virtio peer).
    switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
        case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
        case RTE_MBUF_F_RX_L4_CKSUM_NONE:
            nc_.tcp_cksum_hw_verified.inc();
            return true;
        case RTE_MBUF_F_RX_L4_CKSUM_BAD:
            return false;
        default:
            break;
    }
    // RFC 9293 §3.1: pseudo-header + the whole segment must sum to all ones.
    internet_checksum c = tcp_pseudo_header(src, dst, static_cast<uint16_t>(len));
    const internet_checksum data = chain_sum(m, l4_off, len);
    // Both sums start at even offsets of the checksummed message (the
    // pseudo-header is 12 or 40 bytes): adding the folded data sum is exact.
    c.add_word(data.fold());
    return c.fold() == 0xffff;
}

void tcp_layer::input(rte_mbuf *m, const ipv4_repr &ip, uint32_t l4_off, uint64_t now,
                      bool verified) noexcept {
    input_segment(m, ip.src, ip.dst, ip.payload_len, l4_off, now, verified);
}

void tcp_layer::input(rte_mbuf *m, const ipv6_repr &ip, uint32_t l4_off, uint64_t now,
                      bool verified) noexcept {
    input_segment(m, ip.src, ip.dst, ip.payload_len, l4_off, now, verified);
}

void tcp_layer::input_segment(rte_mbuf *m, const ip_addr &src, const ip_addr &dst, uint32_t len,
                              uint32_t l4_off, uint64_t now, bool verified) noexcept {
    now_ = now;
    // The stack guarantees the first segment holds every header (or the whole frame).
    const uint32_t first = std::min<uint32_t>(rte_pktmbuf_data_len(m) - l4_off, len);
    const tcp_segment seg({rte_pktmbuf_mtod_offset(m, uint8_t *, l4_off), first}, len);
    // tcp_rx counts the segments this lcore handles: its own flows' and the
    // ones it drops; a segment it hands over is counted by its owner.
    if (seg.check() != tcp_error::none) {
        nc_.tcp_rx.inc();
        nc_.tcp_drop_malformed.inc();
        rte_pktmbuf_free(m);
        return;
    }
    // Everything a segment can be dropped for on its own is checked before a
    // hand-off (issue 13): a corrupt segment of another lcore's flow must not
    // cost a ring slot there. A handed-over segment arrives verified.
    if (!verified && !checksum_ok(m, src, dst, l4_off, len)) {
        nc_.tcp_rx.inc();
        nc_.tcp_drop_bad_checksum.inc();
        rte_pktmbuf_free(m);
        return;
    }
    tcp_repr r;
    if (tcp_repr::parse(seg, r) != tcp_error::none) {
        nc_.tcp_rx.inc();
        nc_.tcp_drop_bad_options.inc();
        rte_pktmbuf_free(m);
        return;
    }
    if (cfg_.nqueues > 1 && cfg_.handoff != nullptr && !verified) {
        // Flow ownership: the owner's layer handles it (input_handoff).
        const uint16_t owner = owner_of(tcp_tuple{dst, src, r.dst_port, r.src_port});
        if (owner != cfg_.queue) {
            if (cfg_.handoff(cfg_.handoff_ctx, owner, m)) {
                nc_.tcp_handoff_out.inc();
            } else {
                nc_.tcp_drop_handoff_full.inc();
                rte_pktmbuf_free(m);
            }
            return;
        }
    }
    nc_.tcp_rx.inc();
    const tcp_tuple t{dst, src, r.dst_port, r.src_port};
    const uint32_t payload_off = l4_off + static_cast<uint32_t>(seg.header_len());

    const uint32_t idx = lookup(t);
    if (idx != none && slots_[idx].detached &&
        (r.flags & (tcp_flag::syn | tcp_flag::ack | tcp_flag::rst)) == tcp_flag::syn &&
        slots_[idx].conn->time_wait_takes_syn(r)) {
        // A new incarnation of a tuple whose TIME-WAIT only the layer still
        // keeps (the application is done with it): TIME-WAIT ends and the
        // SYN goes to the listener. Answering it with an ACK of the old
        // connection instead stalls the client's connect until 2*MSL passed.
        if (listener *l = find_listener(r.dst_port)) {
            nc_.tcp_time_wait_reopened.inc();
            free_slot(idx);
            input_listen(*l, t, r, m, payload_off);
            return;
        }
    }
    if (idx != none) {
        // RFC 9293 §3.10.7.3 - §3.10.7.4: the connection's own state machine.
        rte_mbuf *payload = m;
        if (r.payload_len != 0 && mem_pressure_ && !r.has(tcp_flag::syn) &&
            !r.has(tcp_flag::rst)) {
            // The data goes (the peer sends it again); its ACK is still news.
            // A FIN behind the dropped data cannot be taken either.
            nc_.tcp_drop_mem_pressure.inc();
            tcp_repr ctl = r;
            ctl.payload_len = 0;
            ctl.flags &= static_cast<uint8_t>(~tcp_flag::fin);
            rte_pktmbuf_free(m);
            slots_[idx].conn->input(ctl, nullptr, payload_off, now);
            after(idx);
            return;
        }
        if (r.payload_len == 0) {
            rte_pktmbuf_free(m);
            payload = nullptr;
        }
        slots_[idx].conn->input(r, payload, payload_off, now);
        after(idx);
        return;
    }
    if (listener *l = find_listener(r.dst_port)) {
        input_listen(*l, t, r, m, payload_off);
        return;
    }
    // RFC 9293 §3.10.7.1 "If the state is CLOSED (i.e., TCB does not exist)".
    if (r.has(tcp_flag::rst)) {
        // "An incoming segment containing a RST is discarded."
        nc_.tcp_drop_rst_no_flow.inc();
    } else {
        nc_.tcp_rst_no_flow.inc();  // a closed port, or a flow forgotten
        reply_rst(t, r);
    }
    rte_pktmbuf_free(m);
}

void tcp_layer::reply_rst(const tcp_tuple &t, const tcp_repr &seg) noexcept {
    tcp_repr h;
    h.src_port = t.local_port;
    h.dst_port = t.remote_port;
    if (!seg.has(tcp_flag::ack)) {
        // "If the ACK bit is off, sequence number zero is used,
        //  <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>"
        h.seq = seq_num(0);
        h.ack = seg.seq + static_cast<int32_t>(seg.seg_len());
        h.flags = tcp_flag::rst | tcp_flag::ack;
    } else {
        // "If the ACK bit is on, <SEQ=SEG.ACK><CTL=RST>"
        h.seq = seg.ack;
        h.flags = tcp_flag::rst;
    }
    nc_.tcp_rst_sent_no_flow.inc();
    send_segment(t, h, tcp_payload{});
}

void tcp_layer::input_listen(listener &l, const tcp_tuple &t, const tcp_repr &seg, rte_mbuf *m,
                             uint32_t payload_off) noexcept {
    // RFC 9293 §3.10.7.2 "If the state is LISTEN", in its order.
    // "First, check for a RST: An incoming RST segment could not be valid ...
    //  should be ignored."
    if (seg.has(tcp_flag::rst)) {
        nc_.tcp_drop_listen_other.inc();
        rte_pktmbuf_free(m);
        return;
    }
    // "Second, check for an ACK: Any acknowledgment is bad if it arrives on a
    //  connection still in the LISTEN state. An acceptable reset segment
    //  should be formed for any arriving ACK-bearing segment."
    // Except the ACK that completes a SYN-cookie handshake (RFC 4987 §3.6).
    if (seg.has(tcp_flag::ack)) {
        if (cfg_.syn_cookies && !seg.has(tcp_flag::syn) &&
            accept_cookie(l, t, seg, m, payload_off)) {
            return;
        }
        if (cfg_.shared_port && !seg.has(tcp_flag::syn)) {
            // Most likely a segment of another lcore's connection.
            nc_.tcp_drop_not_owner.inc();
            rte_pktmbuf_free(m);
            return;
        }
        if (cfg_.syn_cookies && !seg.has(tcp_flag::syn)) {
            nc_.syn_cookie_rejected.inc();
        }
        reply_rst(t, seg);
        rte_pktmbuf_free(m);
        return;
    }
    // "Third, check for a SYN". Data in the SYN is not kept (tcp_conn.h).
    if (!seg.has(tcp_flag::syn)) {
        // "Fourth, other data or control ... drop the segment and return."
        nc_.tcp_drop_listen_other.inc();
        rte_pktmbuf_free(m);
        return;
    }
    // SYN+FIN: RFC 9293 would open and leave the FIN for later; no real
    // client sends it (it is a scan / evasion probe), and Linux drops it here
    // too. Dropped, counted, no SYN-ACK and no state.
    if (seg.has(tcp_flag::fin)) {
        nc_.tcp_drop_syn_fin.inc();
        rte_pktmbuf_free(m);
        return;
    }
    rte_pktmbuf_free(m);
    const bool backlog_full = l.syn_rcvd >= cfg_.syn_backlog;
    if (backlog_full || !reclaim()) {
        (backlog_full ? nc_.listen_backlog_full : nc_.flow_table_full).inc();
        if (cfg_.syn_cookies) {
            send_cookie_syn_ack(t, seg);
        }
        return;
    }
    const uint32_t idx = alloc_slot();
    slot &s = slots_[idx];
    s.conn.emplace(conn_config(t), t, isn_.isn(t, now_), &tcp_layer::emit_cb, &s, tc_);
    s.conn->set_ts_offset(ts_offset_of(t));
    s.local_port = t.local_port;
    if (!insert_flow(t, idx)) {  // cannot happen: the table has 2x the slots
        nc_.flow_table_full.inc();
        free_slot(idx);
        return;
    }
    nc_.conn_opened.inc();
    if (!s.conn->open_passive(seg, now_)) {
        s.conn->abort(now_);
        after(idx);
        return;
    }
    s.lst = &l;
    ++l.syn_rcvd;
    after(idx);
}

void tcp_layer::send_cookie_syn_ack(const tcp_tuple &t, const tcp_repr &syn) noexcept {
    const uint16_t client_mss = syn.options.mss.value_or(tcp_conn::default_mss);
    tcp_repr h;
    h.src_port = t.local_port;
    h.dst_port = t.remote_port;
    h.seq = cookies_.encode(t, syn.seq, client_mss, now_);
    h.ack = syn.seq + 1;
    h.flags = tcp_flag::syn | tcp_flag::ack;
    // RFC 7323 §2.2: the window of a SYN is never scaled.
    h.window = static_cast<uint16_t>(std::min<uint32_t>(cfg_.conn.rcv_buf, 0xffff));
    h.options.mss = conn_config(t).mss;
    // Window scale and SACK survive only inside the timestamp (tcp_syncookie.h):
    // without timestamps they are not offered, so both ends agree on none.
    if (cfg_.conn.timestamps && syn.options.timestamps) {
        syncookie_options o;
        if (cfg_.conn.window_scaling) {
            o.window_shift = syn.options.window_shift;
        }
        o.sack_ok = cfg_.conn.sack && syn.options.sack_permitted;
        const uint32_t ts_now = static_cast<uint32_t>(now_ / 1'000'000) + ts_offset_of(t);
        h.options.timestamps =
            tcp_timestamps{tcp_syncookies::encode_tsval(ts_now, o), syn.options.timestamps->tsval};
        if (o.window_shift) {
            h.options.window_shift = wscale_for(cfg_.conn.rcv_buf);
        }
        h.options.sack_permitted = o.sack_ok;
    }
    nc_.syn_cookies_sent.inc();
    send_segment(t, h, tcp_payload{});
}

uint32_t tcp_layer::ts_offset_of(const tcp_tuple &t) const noexcept {
    const bool keyed = cfg_.ts_key.k0 != 0 || cfg_.ts_key.k1 != 0;
    return keyed ? tcp_ts_offset(cfg_.ts_key, t.local_addr, t.remote_addr) : cfg_.conn.ts_offset;
}

bool tcp_layer::accept_cookie(listener &, const tcp_tuple &t, const tcp_repr &ack, rte_mbuf *m,
                              uint32_t payload_off) noexcept {
    uint16_t mss = 0;
    if (cookies_.decode(t, ack.seq - 1, ack.ack - 1, now_, mss) != syncookie_error::none) {
        return false;
    }
    if (!reclaim()) {
        nc_.flow_table_full.inc();
        return false;
    }
    // The SYN the cookie stands for, rebuilt: the client's ISN, MSS, and what
    // the echoed TSval carried (RFC 7323 §3.2: TSecr of the ACK).
    tcp_repr syn;
    syn.src_port = t.remote_port;
    syn.dst_port = t.local_port;
    syn.seq = ack.seq - 1;
    syn.flags = tcp_flag::syn;
    syn.window = ack.window;
    syn.options.mss = mss;
    if (ack.options.timestamps) {
        const syncookie_options o = tcp_syncookies::decode_tsecr(ack.options.timestamps->tsecr);
        syn.options.timestamps = tcp_timestamps{ack.options.timestamps->tsval, 0};
        syn.options.window_shift = o.window_shift;
        syn.options.sack_permitted = o.sack_ok;
    }
    const uint32_t idx = alloc_slot();
    slot &s = slots_[idx];
    s.conn.emplace(conn_config(t), t, ack.ack - 1, &tcp_layer::emit_cb, &s, tc_);
    s.conn->set_ts_offset(ts_offset_of(t));  // the clock of the cookie's SYN-ACK
    s.local_port = t.local_port;
    if (!insert_flow(t, idx)) {
        free_slot(idx);
        return false;
    }
    // Replay the handshake without sending the SYN-ACK again (the client has it).
    mute_ = true;
    const bool opened = s.conn->open_passive(syn, now_);
    mute_ = false;
    if (!opened) {
        free_slot(idx);
        return false;
    }
    nc_.conn_opened.inc();
    nc_.syn_cookies_validated.inc();
    rte_mbuf *payload = m;
    if (ack.payload_len == 0) {
        rte_pktmbuf_free(m);
        payload = nullptr;
    }
    s.conn->input(ack, payload, payload_off, now_);
    after(idx);
    return true;
}

// ---------------------------------------------------------------- transmit

void tcp_layer::emit_cb(void *ctx, const tcp_repr &hdr, const tcp_payload &payload) {
    auto *s = static_cast<slot *>(ctx);
    tcp_layer &l = *s->layer;
    if (l.mute_) {
        return;
    }
    l.send_segment(s->conn->tuple(), hdr, payload);
}

void tcp_layer::send_segment(const tcp_tuple &t, const tcp_repr &h,
                             const tcp_payload &payload) noexcept {
    const auto hl = static_cast<uint32_t>(h.header_len());
    const bool v6 = t.is_v6();
    const uint32_t ip_hlen = v6 ? ip6_hlen : ip4_hlen;
    const uint32_t hdrs = eth_hlen + ip_hlen + hl;
    const bool copy = !cfg_.tx_chains && payload.len != 0;
    rte_mbuf *m = rte_pktmbuf_alloc(pool_);
    if (FERRY_UNLIKELY(m == nullptr)) {
        nc_.tx_alloc_fail.inc();
        return;
    }
    auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, hdrs + (copy ? payload.len : 0)));
    if (FERRY_UNLIKELY(d == nullptr)) {
        nc_.tx_alloc_fail.inc();
        rte_pktmbuf_free(m);
        return;
    }
    // Payload: copied behind the header, or attached segment by segment.
    if (copy) {
        uint8_t *p = d + hdrs;
        for (const tcp_payload_ref &r : payload.refs) {
            std::memcpy(p, rte_pktmbuf_mtod_offset(r.m, const uint8_t *, r.off), r.len);
            p += r.len;
        }
        nc_.tcp_tx_copied.inc();
    } else {
        rte_mbuf *last = m;
        for (const tcp_payload_ref &r : payload.refs) {
            rte_mbuf *mi = rte_pktmbuf_alloc(pool_);
            if (FERRY_UNLIKELY(mi == nullptr)) {
                nc_.tx_alloc_fail.inc();
                rte_pktmbuf_free(m);
                return;
            }
            // The indirect mbuf takes a reference on r.m's buffer: the send
            // queue may free its chain while the frame waits for the NIC.
            rte_pktmbuf_attach(mi, r.m);
            mi->data_off = static_cast<uint16_t>(mi->data_off + r.off);
            mi->data_len = static_cast<uint16_t>(r.len);
            mi->pkt_len = r.len;
            mi->ol_flags &= RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL;
            last->next = mi;
            last = mi;
            ++m->nb_segs;
            m->pkt_len += r.len;
        }
    }
    tcp_segment seg({d + eth_hlen + ip_hlen, hl + (copy ? payload.len : 0)}, hl + payload.len);
    const auto tcp_len = static_cast<uint16_t>(hl + payload.len);
    if (cfg_.tx_cksum_offload) {
        internet_checksum none_sum;
        h.emit(seg, t.local_addr, t.remote_addr, none_sum);
        // What the NIC expects in the field: the folded pseudo-header sum
        // (rte_ipv4_phdr_cksum), not complemented.
        seg.set_checksum(tcp_pseudo_header(t.local_addr, t.remote_addr, tcp_len).fold());
        m->ol_flags |= (v6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4) | RTE_MBUF_F_TX_TCP_CKSUM;
        m->l2_len = eth_hlen;
        m->l3_len = ip_hlen;
    } else {
        internet_checksum sum;
        for (const tcp_payload_ref &r : payload.refs) {
            sum.add({rte_pktmbuf_mtod_offset(r.m, const uint8_t *, r.off), r.len});
        }
        h.emit(seg, t.local_addr, t.remote_addr, sum);
    }
    nc_.tcp_tx.inc();
    if (v6) {
        ipv6_repr ip;
        ip.payload_len = tcp_len;
        ip.next_header = static_cast<uint8_t>(ipv6_next::tcp);
        ip.hop_limit = stack::default_ttl;
        ip.src = t.local_addr.v6();
        ip.dst = t.remote_addr.v6();
        ip.emit({d + eth_hlen, ip6_hlen});
        st_.output_ipv6(m, ip.dst, now_);
        return;
    }
    // DF with ID 0: an atomic datagram (RFC 6864 §4.1); we never fragment.
    ipv4_packet ipp({d + eth_hlen, ip_hlen});
    ipv4_repr{.src = t.local_addr.v4(),
              .dst = t.remote_addr.v4(),
              .protocol = ip_protocol::tcp,
              .payload_len = tcp_len,
              .ttl = stack::default_ttl,
              .tos = 0,
              .ident = 0,
              .dont_fragment = true}
        .emit(ipp);
    st_.output_ipv4(m, t.remote_addr.v4(), now_);
}

// ---------------------------------------------------------------- application

tcp_conn *tcp_layer::get(tcp_handle h) noexcept {
    if (h.index >= slots_.made()) {
        return nullptr;
    }
    slot &s = slots_[h.index];
    return s.gen == h.gen && s.conn ? &*s.conn : nullptr;
}

uint32_t tcp_layer::send(tcp_handle h, rte_mbuf *chain, uint64_t now) noexcept {
    tcp_conn *c = get(h);
    if (c == nullptr) {
        return 0;
    }
    now_ = now;
    const uint32_t n = c->send(chain, now);
    after(h.index);
    return n;
}

std::size_t tcp_layer::recv(tcp_handle h, std::span<tcp_rx_piece> out, uint64_t now) noexcept {
    tcp_conn *c = get(h);
    if (c == nullptr) {
        return 0;
    }
    now_ = now;
    const std::size_t n = c->recv(out, now);
    after(h.index);
    return n;
}

void tcp_layer::quick_ack(tcp_handle h, uint64_t now) noexcept {
    if (tcp_conn *c = get(h)) {
        now_ = now;
        c->quick_ack(now);
        after(h.index);
    }
}

void tcp_layer::close(tcp_handle h, uint64_t now) noexcept {
    if (tcp_conn *c = get(h)) {
        now_ = now;
        c->close(now);
        after(h.index);
    }
}

void tcp_layer::abort(tcp_handle h, uint64_t now) noexcept {
    if (tcp_conn *c = get(h)) {
        now_ = now;
        c->abort(now);
        after(h.index);
    }
}

std::size_t tcp_layer::poll_events(std::span<tcp_notice> out) noexcept {
    // The previous batch is handled: its closed connections go now.
    for (uint32_t i = 0; i < nzombies_; ++i) {
        free_slot(zombies_[i]);
    }
    nzombies_ = 0;
    std::size_t n = 0;
    while (n < out.size() && ready_len_ != 0) {
        const uint32_t idx = ready_[ready_head_];
        ready_head_ = (ready_head_ + 1) % cfg_.max_connections;
        --ready_len_;
        slot &s = slots_[idx];
        s.ready = false;
        if (!s.conn) {
            continue;
        }
        uint8_t ev = s.conn->take_events();
        if (s.detached) {
            // Reported already: TIME-WAIT ran out (or goes on quietly).
            if (s.conn->state() == tcp_state::closed) {
                free_slot(idx);
            }
            continue;
        }
        const tcp_notice note{tcp_handle{idx, s.gen}, ev, s.local_port, s.active};
        if (s.conn->state() == tcp_state::time_wait && s.conn->recv_queued() == 0) {
            // Both FINs are through and everything received was read: the
            // application is done with it; 2*MSL is the layer's to wait.
            out[n++] = tcp_notice{note.h, static_cast<uint8_t>(ev | tcp_event::closed),
                                  note.local_port, note.active, tcp_close_reason::normal};
            s.detached = true;
            ++s.gen;  // the application's handle is stale from here on
            s.tw_prev = tw_tail_;
            s.tw_next = none;
            (tw_tail_ != none ? slots_[tw_tail_].tw_next : tw_head_) = idx;
            tw_tail_ = idx;
            ++ntw_;
            continue;
        }
        if (s.conn->state() == tcp_state::closed) {
            if (s.conn->close_reason() == tcp_close_reason::normal && s.conn->recv_queued() != 0) {
                // An orderly close (e.g. TIME-WAIT ran out) with data the
                // application has not read yet: it stays readable, as on
                // Linux after shutdown(SHUT_WR); `closed` follows once
                // recv() emptied the queue (after() lists the slot again).
                out[n++] = tcp_notice{
                    note.h, static_cast<uint8_t>((ev & ~tcp_event::closed) | tcp_event::readable),
                    note.local_port, note.active};
                continue;
            }
            out[n++] = tcp_notice{note.h, static_cast<uint8_t>(ev | tcp_event::closed),
                                  note.local_port, note.active, s.conn->close_reason()};
            zombies_[nzombies_++] = idx;
            continue;
        }
        if (ev != 0) {
            out[n++] = note;
        }
    }
    return n;
}

// ---------------------------------------------------------------- timers

void tcp_layer::poll_timers(uint64_t now) noexcept {
    now_ = now;
    // Bounded: a connection whose deadline stays due runs again next time.
    for (uint32_t budget = heap_len_; budget != 0 && heap_len_ != 0; --budget) {
        const uint32_t idx = heap_[0];
        if (slots_[idx].deadline > now) {
            break;
        }
        slots_[idx].conn->on_timer(now);
        after(idx);
    }
}

uint32_t tcp_layer::ack_before_sleep(uint64_t now) noexcept {
    if (heap_len_ == 0 || !cfg_.conn.delayed_ack) {
        return 0;
    }
    now_ = now;
    // A delayed ACK is due within the timeout, so its connection's heap
    // entry is too: a walk of the heap that stops below every entry due
    // later visits only those (a child is never due before its parent).
    // What it finds is acted on after the walk (after() moves entries).
    const uint64_t bound = now + std::max(cfg_.conn.delayed_ack_ns, conn6_.delayed_ack_ns);
    constexpr uint32_t batch = 64;
    uint32_t sent = 0;
    for (;;) {
        uint32_t found[batch], nfound = 0;
        uint32_t stack[2 * 64], depth = 0;  // a heap of 2^32 entries is 32 deep
        stack[depth++] = 0;
        while (depth != 0 && nfound < batch) {
            const uint32_t pos = stack[--depth];
            const uint32_t idx = heap_[pos];
            if (slots_[idx].deadline > bound) {
                continue;
            }
            const tcp_conn &c = *slots_[idx].conn;
            if (c.delack_deadline() != tcp_conn::never && c.delack_fate() != 0) {
                found[nfound++] = idx;
            }
            for (uint32_t child = 2 * pos + 1; child <= 2 * pos + 2; ++child) {
                if (child < heap_len_) {
                    stack[depth++] = child;
                }
            }
        }
        uint32_t round = 0;
        for (uint32_t i = 0; i < nfound; ++i) {
            if (slots_[found[i]].conn->ack_before_idle(now)) {
                ++round;
            }
            after(found[i]);
        }
        sent += round;
        // Each full round sent at least one (those it sent owe nothing now):
        // the next walk finds fewer.
        if (nfound < batch || round == 0) {
            return sent;
        }
    }
}

uint64_t tcp_layer::next_deadline() const noexcept {
    return heap_len_ != 0 ? slots_[heap_[0]].deadline : tcp_conn::never;
}

void tcp_layer::flush(uint64_t now) noexcept {
    if (owed_len_ == 0) {
        return;
    }
    now_ = now;
    // after() may append (not for these: output() settles what they owe).
    for (uint32_t i = 0; i < owed_len_; ++i) {
        const uint32_t idx = owed_[i];
        slot &s = slots_[idx];
        if (!s.owed) {
            continue;
        }
        s.owed = false;
        s.conn->flush_output(now);
        after(idx);
    }
    owed_len_ = 0;
}

void tcp_layer::after(uint32_t idx) noexcept {
    slot &s = slots_[idx];
    tcp_conn &c = *s.conn;
    if (s.lst != nullptr && c.state() != tcp_state::syn_received) {
        --s.lst->syn_rcvd;
        s.lst = nullptr;
    }
    const bool closed = c.state() == tcp_state::closed;
    if (closed && s.in_table) {
        // A new SYN on the same 4-tuple may open a new connection at once.
        erase_flow(c.tuple());
        s.in_table = false;
    }
    if (c.output_owed() && !s.owed) {
        if (owed_len_ < cfg_.max_connections) {
            s.owed = true;
            owed_[owed_len_++] = idx;
        } else {
            c.flush_output(now_);  // only after slots were freed and reused in one iteration
        }
    }
    heap_set(idx, closed ? tcp_conn::never : c.next_deadline());
    const bool tw_report = c.state() == tcp_state::time_wait && !s.detached;
    if (!s.ready && (closed || tw_report || c.events() != 0)) {
        s.ready = true;
        ready_[(ready_head_ + ready_len_) % cfg_.max_connections] = idx;
        ++ready_len_;
    }
}

void tcp_layer::heap_set(uint32_t idx, uint64_t deadline) noexcept {
    slot &s = slots_[idx];
    if (deadline == tcp_conn::never) {
        heap_remove(idx);
        s.deadline = deadline;
        return;
    }
    const uint64_t old = s.deadline;
    s.deadline = deadline;
    if (s.heap_pos == none) {
        s.heap_pos = heap_len_;
        heap_[heap_len_++] = idx;
        heap_up(s.heap_pos);
    } else if (deadline < old) {
        heap_up(s.heap_pos);
    } else if (deadline > old) {
        heap_down(s.heap_pos);
    }
}

void tcp_layer::heap_remove(uint32_t idx) noexcept {
    const uint32_t pos = slots_[idx].heap_pos;
    if (pos == none) {
        return;
    }
    const uint32_t last = --heap_len_;
    if (pos != last) {
        heap_swap(pos, last);
        heap_up(pos);
        heap_down(pos);
    }
    slots_[idx].heap_pos = none;
}

void tcp_layer::heap_swap(uint32_t a, uint32_t b) noexcept {
    std::swap(heap_[a], heap_[b]);
    slots_[heap_[a]].heap_pos = a;
    slots_[heap_[b]].heap_pos = b;
}

void tcp_layer::heap_up(uint32_t pos) noexcept {
    while (pos > 0) {
        const uint32_t parent = (pos - 1) / 2;
        if (slots_[heap_[parent]].deadline <= slots_[heap_[pos]].deadline) {
            break;
        }
        heap_swap(pos, parent);
        pos = parent;
    }
}

void tcp_layer::heap_down(uint32_t pos) noexcept {
    for (;;) {
        const uint32_t l = 2 * pos + 1, r = l + 1;
        uint32_t m = pos;
        if (l < heap_len_ && slots_[heap_[l]].deadline < slots_[heap_[m]].deadline) {
            m = l;
        }
        if (r < heap_len_ && slots_[heap_[r]].deadline < slots_[heap_[m]].deadline) {
            m = r;
        }
        if (m == pos) {
            return;
        }
        heap_swap(pos, m);
        pos = m;
    }
}

// ---------------------------------------------------------------- slots, flow table

bool tcp_layer::reclaim() noexcept {
    if (slots_.available() != 0) {
        return true;
    }
    if (tw_head_ == none) {
        return false;
    }
    nc_.tcp_time_wait_recycled.inc();
    free_slot(tw_head_);  // its tuple leaves the flow table with it
    return true;
}

void tcp_layer::tw_unlink(uint32_t idx) noexcept {
    slot &s = slots_[idx];
    (s.tw_prev != none ? slots_[s.tw_prev].tw_next : tw_head_) = s.tw_next;
    (s.tw_next != none ? slots_[s.tw_next].tw_prev : tw_tail_) = s.tw_prev;
    s.tw_prev = s.tw_next = none;
    s.detached = false;
    --ntw_;
}

uint32_t tcp_layer::alloc_slot() noexcept {
    return slots_.take([this](uint32_t, slot &s) { s.layer = this; });
}

void tcp_layer::free_slot(uint32_t idx) noexcept {
    slot &s = slots_[idx];
    if (s.detached) {
        tw_unlink(idx);
    }
    if (s.in_table) {
        erase_flow(s.conn->tuple());
        s.in_table = false;
    }
    heap_remove(idx);
    s.deadline = tcp_conn::never;
    if (s.lst != nullptr) {
        --s.lst->syn_rcvd;
        s.lst = nullptr;
    }
    s.conn.reset();
    s.active = false;
    s.owed = false;  // its owed_ entry, if any, is skipped
    ++s.gen;  // every handle to the old connection is stale now
    slots_.give(idx);
    nc_.conn_closed.inc();
}

uint64_t tcp_layer::hash(const tcp_tuple &t) const noexcept {
    uint8_t b[36];
    std::size_t n = t.local_addr.put(b);
    n += t.remote_addr.put(b + n);
    wire::store_be16(b + n, t.local_port);
    wire::store_be16(b + n + 2, t.remote_port);
    return siphash24(cfg_.flow_key, std::span<const uint8_t>(b, n + 4));
}

uint32_t tcp_layer::lookup(const tcp_tuple &t) const noexcept {
    for (uint32_t i = static_cast<uint32_t>(hash(t)) & table_mask_; table_[i] != 0;
         i = (i + 1) & table_mask_) {
        const uint32_t idx = table_[i] - 1;
        if (slots_[idx].conn->tuple() == t) {
            return idx;
        }
    }
    return none;
}

bool tcp_layer::insert_flow(const tcp_tuple &t, uint32_t idx) noexcept {
    uint32_t i = static_cast<uint32_t>(hash(t)) & table_mask_;
    for (uint32_t probes = 0; table_[i] != 0; ++probes, i = (i + 1) & table_mask_) {
        if (probes > table_mask_) {
            return false;
        }
    }
    table_[i] = idx + 1;
    slots_[idx].in_table = true;
    return true;
}

void tcp_layer::erase_flow(const tcp_tuple &t) noexcept {
    uint32_t i = static_cast<uint32_t>(hash(t)) & table_mask_;
    while (table_[i] != 0 && slots_[table_[i] - 1].conn->tuple() != t) {
        i = (i + 1) & table_mask_;
    }
    if (table_[i] == 0) {
        return;
    }
    // Backward-shift deletion (Knuth 6.4 Algorithm R): no tombstones, so
    // lookups never walk over dead buckets.
    for (uint32_t j = i;;) {
        j = (j + 1) & table_mask_;
        if (table_[j] == 0) {
            break;
        }
        const uint32_t k =
            static_cast<uint32_t>(hash(slots_[table_[j] - 1].conn->tuple())) & table_mask_;
        // Entry j may move to i unless its home k lies cyclically in (i, j].
        const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            table_[i] = table_[j];
            i = j;
        }
    }
    table_[i] = 0;
}

}  // namespace ferry::net
