#include "ferry/proxy/proxy.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "ferry/http/serializer.h"
#include "ferry/http/status.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/proxy/balance.h"
#include "ferry/net/tcp_conn.h"
#include "ferry/xcore/handle.h"

namespace ferry::proxy {

namespace {

constexpr uint32_t none = UINT32_MAX;
constexpr uint32_t kind_up = 0x80000000u;
constexpr uint64_t ms = 1'000'000;
// Head buffers hold a head of up to max_header_bytes plus what arrived with it.
constexpr uint32_t scratch_size = 96 * 1024;
// Body pieces batched into one cross-core data message, up to this many bytes.
constexpr uint32_t xcore_batch = 32 * 1024;

// Feeds the piece's bytes to the framer segment by segment; returns the
// bytes that belong to the body and the framer's last result.
http::body_framer::feed_result feed_piece(http::body_framer &f, const net::tcp_rx_piece &p) noexcept {
    http::body_framer::feed_result total;
    uint32_t off = p.off, left = p.len;
    for (const rte_mbuf *s = p.m; s != nullptr && left > 0; s = s->next) {
        if (off >= s->data_len) {
            off -= s->data_len;
            continue;
        }
        const uint32_t k = std::min<uint32_t>(s->data_len - off, left);
        const auto r = f.feed({rte_pktmbuf_mtod_offset(s, const char *, off), k});
        total.consumed += r.consumed;
        total.done = r.done;
        total.error = r.error;
        total.err = r.err;
        if (r.done || r.error || r.consumed < k) break;
        left -= k;
        off = 0;
    }
    return total;
}

bool idempotent(http::method m) noexcept {
    switch (m) {
        case http::method::get:
        case http::method::head:
        case http::method::put:
        case http::method::delete_:
        case http::method::options:
        case http::method::trace:
            return true;
        default:
            return false;
    }
}

}  // namespace

// ---------------------------------------------------------------- objects

struct worker_proxy::endpoint {
    static constexpr uint32_t in_cap = 32;
    static constexpr uint32_t out_cap = 32;
    worker_proxy *px = nullptr;
    uint16_t port = 0;
    net::tcp_handle h;
    net::tcp_rx_piece in[in_cap];  // ring of received, unprocessed pieces
    uint32_t in_head = 0, in_n = 0;
    rte_mbuf *out[out_cap] = {};  // chains send() refused so far, in order
    uint32_t out_n = 0;
    // Bit i: out[i] came in a cross-core data message and owes its sender a
    // credit when the TCP send queue takes it (shared pools).
    uint32_t cred_mask = 0;
    bool is_up = false;     // an upconn (else a client)
    bool eof = false;       // the peer's FIN arrived (no data after `in`)
    bool closing = false;   // close once `out` is empty
    bool fin_sent = false;  // close() called
    char *buf = nullptr;    // head buffer (cap bytes)
    uint32_t cap = 0, buf_len = 0;
    // The head being parsed: the parser fills the message and its fields as
    // their lines complete, so both must outlive one parse call (a head
    // arriving in several reads); reset with hp.
    http::head_parser hp;
    http::header *fields = nullptr;  // limits_.max_headers entries of its own
    http::body_framer framer;
    reactor::timer timer;
    uint32_t gen = 0;
    bool used = false;

    net::tcp_rx_piece &front() noexcept { return in[in_head]; }
    void pop() noexcept {
        in_head = (in_head + 1) % in_cap;
        --in_n;
    }
};

struct worker_proxy::client : worker_proxy::endpoint {
    enum class st : uint8_t { head, body, wait, closing };
    st state = st::head;
    uint16_t listener = 0;
    uint32_t peer_addr = 0;
    http::request req;   // the head being parsed (valid once hp is done)
    uint32_t up = none;  // the upconn serving the current request
    uint32_t up_gen = 0;
    uint32_t requests = 0;
    bool keep_alive = true;
    bool response_started = false;
    bool head_method = false;
    bool http10 = false;
    int upstream = -1;
    rte_mbuf *retry_head = nullptr;  // a clone of the request head, for one retry
    uint32_t retries_left = 0;
    // Shared pool, owner here: waiting in a shared connection's FIFO with
    // its serialized head (the body is read once the connection is ours).
    bool queued = false;
    bool q_body = false;  // the request has a body (begin_body once attached)
    rte_mbuf *q_head = nullptr;
    http::request_info q_ri;
    // Shared pool, owner elsewhere: the request went to worker xpeer.
    bool remote = false;
    uint16_t xpeer = 0;
    uint32_t xgen = 0;     // request generation (the handle's), see proxy.h
    uint32_t xcredit = 0;  // data messages we may still send
    bool xbroken = false;  // a message of the request was dropped (fail_broken)
    int server = -1;
    // Access log (used only with a sink): the request whose record is in
    // al_pending_ has not ended yet; when its first byte was read (0 = no
    // request begun); response bytes handed to the connection for it; the
    // final status the response head carried (0 = none yet); the hand-over
    // time of a remote request.
    bool al_open = false;
    uint16_t peer_port = 0;
    uint16_t al_status = 0;
    uint64_t t_req = 0;
    uint64_t resp_bytes = 0;
    uint64_t t_xsent = 0;
};

struct worker_proxy::upconn : worker_proxy::endpoint {
    enum class st : uint8_t { connecting, idle, head, body, closing };
    st state = st::connecting;
    int upstream = -1, server = -1;
    uint32_t client = none, client_gen = 0;
    bool reused = false;
    bool health = false;  // an active health check, no client
    bool resp_keep_alive = false;
    http::response resp;  // the head being parsed (valid once hp is done)
    http::request_info ri;
    uint64_t t_sent = 0;
    uint64_t t_conn = 0;  // connected (0 = not yet)
    uint32_t idle_prev = none, idle_next = none;
    // Shared pool: `shared` for the connection's life; `slot` while it serves
    // its slot (none once closing); `rq` the remote request it serves.
    bool shared = false;
    uint32_t slot = none;
    uint32_t rq = none, rq_gen = 0;
};

// A request another worker handed over (B's side of the protocol in proxy.h).
struct worker_proxy::rreq {
    bool used = false;
    bool queued = false;            // in its slot's FIFO
    bool end = false;               // the whole request arrived (req_end / xf_end)
    bool keep_alive = true;         // the client stays open after the response
    bool response_started = false;  // resp_data sent
    bool broken = false;            // a message of it was dropped (fail_broken)
    uint16_t from = 0;
    uint32_t xgen = 0;
    uint32_t agen = 0;  // allocation generation (FIFO entries, upconn links)
    uint32_t cidx = 0, slot = none, up = none, up_gen = 0;
    uint32_t credit = 0;  // resp_data we may still send
    uint32_t retries_left = 0;
    uint64_t handle = 0;
    http::request_info ri;
    rte_mbuf *retry_head = nullptr;
    rte_mbuf *q[xcore_window] = {};  // chains received, not yet pushed to the upconn
    uint32_t qh = 0, qn = 0;
};

struct worker_proxy::shared_slot {
    int upstream = -1, server = -1;
    uint32_t k = 0;
    unsigned owner = 0;
    uint32_t conn = none;  // the upconn serving this slot, or none
    bool opened = false;   // a connection was opened before (reopen counts)
    bool listed = false;   // in kick_list_
    std::unique_ptr<job[]> q;  // FIFO (owner only), shared_fifo_cap entries
    uint32_t qh = 0, qn = 0;
};

struct worker_proxy::upstream_state {
    std::vector<uint32_t> idle_head;  // per server: idle upconns (doubly linked)
    std::vector<uint32_t> nidle;
    std::vector<int64_t> rr_current;  // smooth weighted round robin (nginx)
    std::vector<uint32_t> busy;       // per server: requests in flight here
    hash_ring ring;                   // consistent hash
    std::vector<server_view> view;    // the balancer's snapshot (pick_server)
    std::vector<uint32_t> hc_conn;    // health check in flight per server
};

shared_state::shared_state(const config::ferry_config &cfg)
    : xrows(std::make_unique<xcore_row[]>(max_workers)) {
    for (const auto &u : cfg.upstreams)
        health.push_back(std::make_unique<server_health[]>(u.servers.size()));
}

// ---------------------------------------------------------------- setup

worker_proxy::worker_proxy(const config::ferry_config &cfg, std::span<const port_ref> ports,
                           unsigned lcore_index, shared_state &shared,
                           reactor::timer_wheel &timers, uint64_t now, const proxy_options &opts)
    : cfg_(cfg),
      ports_(ports.begin(), ports.end()),
      lcore_index_(lcore_index),
      shared_(shared),
      timers_(timers) {
    refuse_every_ = opts.xcore_refuse_every;
    fail_alloc_at_ = opts.fail_alloc_at;
    backlog_cap_ = opts.xcore_backlog_cap;
    last_now_ = now;
    limits_.max_head_bytes = cfg.http.max_header_bytes;
    limits_.max_headers = cfg.http.max_headers;
    uint32_t slots = 0;
    for (const port_ref &p : ports_) {
        slots += p.layer->capacity();
        auto owner = std::make_unique<uint32_t[]>(p.layer->capacity());
        std::fill_n(owner.get(), p.layer->capacity(), none);
        slot_owner_.push_back(std::move(owner));
    }
    // A client needs one slot, its upstream connection another.
    // A client slot must fit a cross-core handle's index.
    max_clients_ = std::clamp<uint32_t>(slots, 1, xcore::conn_handle::index_limit);
    max_upconns_ = std::max<uint32_t>(1, slots);
    clients_ = std::make_unique<client[]>(max_clients_);
    upconns_ = std::make_unique<upconn[]>(max_upconns_);
    const uint32_t cap = limits_.max_head_bytes;
    buffers_ = std::make_unique<char[]>(size_t(cap) * (max_clients_ + max_upconns_));
    free_clients_ = std::make_unique<uint32_t[]>(max_clients_);
    free_upconns_ = std::make_unique<uint32_t[]>(max_upconns_);
    for (uint32_t i = 0; i < max_clients_; ++i) {
        client &c = clients_[i];
        c.px = this;
        c.buf = buffers_.get() + size_t(cap) * i;
        c.cap = cap;
        c.timer.set_callback(client_timer_cb, &c);
        free_clients_[nfree_clients_++] = max_clients_ - 1 - i;
    }
    for (uint32_t i = 0; i < max_upconns_; ++i) {
        upconn &u = upconns_[i];
        u.px = this;
        u.is_up = true;
        u.buf = buffers_.get() + size_t(cap) * (max_clients_ + i);
        u.cap = cap;
        u.timer.set_callback(upconn_timer_cb, &u);
        free_upconns_[nfree_upconns_++] = max_upconns_ - 1 - i;
    }
    fields_ = std::make_unique<http::header[]>(size_t(limits_.max_headers) *
                                               (max_clients_ + max_upconns_));
    for (uint32_t i = 0; i < max_clients_; ++i)
        clients_[i].fields = fields_.get() + size_t(limits_.max_headers) * i;
    for (uint32_t i = 0; i < max_upconns_; ++i)
        upconns_[i].fields = fields_.get() + size_t(limits_.max_headers) * (max_clients_ + i);
    scratch_ = std::make_unique<char[]>(scratch_size);
    listener_active_.assign(cfg.listeners.size(), 0);
    for (const auto &uc : cfg.upstreams) {
        auto st = std::make_unique<upstream_state>();
        const size_t n = uc.servers.size();
        st->idle_head.assign(n, none);
        st->nidle.assign(n, 0);
        st->rr_current.assign(n, 0);
        st->busy.assign(n, 0);
        st->hc_conn.assign(n, none);
        st->view.assign(n, server_view{});
        for (size_t i = 0; i < n; ++i) st->view[i].weight = uc.servers[i].weight;
        if (uc.balance == config::balance_mode::consistent_hash) st->ring = hash_ring(uc.servers);
        ups_.push_back(std::move(st));
        srv_ctr_.push_back(std::make_unique<server_counters[]>(n));
    }
    health_timer_.set_callback(health_timer_cb, this);
    init_shared();
}

worker_proxy::~worker_proxy() {
    send_fn_ = nullptr;  // nothing goes out any more: xsend() frees instead
    timers_.cancel(health_timer_);
    for (uint32_t i = 0; i < max_clients_; ++i) {
        client &c = clients_[i];
        timers_.cancel(c.timer);
        if (c.used) free_client(c, last_now_);
    }
    for (uint32_t i = 0; i < max_upconns_; ++i) {
        upconn &u = upconns_[i];
        timers_.cancel(u.timer);
        if (u.used) free_upconn(u, last_now_);
    }
    for (uint32_t i = 0; i < max_rreqs_; ++i)
        if (rreqs_[i].used) free_rreq(rreqs_[i]);
    for (backlog &b : backlog_) {
        for (uint32_t i = 0; i < b.n; ++i) xcore::release(b.q[(b.head + i) & b.mask]);
        b.n = 0;
    }
}

std::string worker_proxy::listen(uint64_t now) {
    for (const auto &l : cfg_.listeners)
        for (const port_ref &p : ports_)
            if (p.layer->listen(l.port) == net::tcp_layer::listen_result::full)
                return "listener '" + l.name + "': too many listeners on a port";
    if (lcore_index_ == 0) {
        for (const auto &u : cfg_.upstreams)
            if (!u.health_check_path.empty()) {
                timers_.arm(health_timer_, now + 100 * ms);
                break;
            }
    }
    return "";
}

// ---------------------------------------------------------------- events

bool worker_proxy::pending() const noexcept {
    for (const port_ref &p : ports_)
        if (p.layer->has_events()) return true;
    return backlog_total_ != 0 || !kick_list_.empty() || nxfail_ != 0;
}

uint32_t worker_proxy::poll(uint64_t now) noexcept {
    last_now_ = now;
    uint32_t work = 0;
    if (backlog_total_ != 0 && retry_backlog()) ++work;
    if (nxfail_ != 0) {
        fail_broken(now);
        ++work;
    }
    net::tcp_notice notes[32];
    for (uint16_t p = 0; p < ports_.size(); ++p) {
        for (int round = 0; round < 8; ++round) {
            const size_t n = ports_[p].layer->poll_events(notes);
            for (size_t i = 0; i < n; ++i) on_event(p, notes[i], now);
            work += static_cast<uint32_t>(n);
            if (n < std::size(notes)) break;
        }
    }
    if (!kick_list_.empty()) {
        run_kicks(now);
        ++work;
    }
    if (draining_ && has_shared_)
        shared_.xrows[lcore_index_].clients_open.store(nclients_, std::memory_order_relaxed);
    return work;
}

void worker_proxy::on_event(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept {
    uint32_t &owner = slot_owner_[port][n.h.index];
    if (owner == none) {
        if (n.active || (n.events & net::tcp_event::closed)) {
            if (!(n.events & net::tcp_event::closed)) ports_[port].layer->abort(n.h, now);
            return;
        }
        on_accept(port, n, now);
        return;
    }
    if (owner & kind_up) {
        upconn &u = upconns_[owner & ~kind_up];
        if (!u.used || !(u.h == n.h) || u.port != port) return;
        if (n.events & net::tcp_event::closed) {
            owner = none;
            u.h = net::tcp_handle{};  // the slot is gone
            const bool clean = n.reason == net::tcp_close_reason::normal;
            if (u.state == upconn::st::idle || u.state == upconn::st::closing) {
                if (u.state == upconn::st::idle) ctr_.upstream_closed_idle.inc();
                free_upconn(u, now);
                return;
            }
            if (u.state == upconn::st::body && u.framer.kind() == http::body_kind::until_close &&
                clean) {
                u.eof = true;
                drive_upconn(u, now);  // ends the response at EOF
                if (u.used) free_upconn(u, now);
                return;
            }
            const bool refused = n.reason == net::tcp_close_reason::refused ||
                                 (u.state == upconn::st::connecting);
            if (refused) ctr_.upstream_connect_failed.inc();
            upconn_failed(u, n.reason == net::tcp_close_reason::timed_out ? 504 : 502, true, now);
            return;
        }
        if (n.events & net::tcp_event::connected && u.state == upconn::st::connecting) {
            u.t_conn = now;
            if (u.client == none && u.rq == none && !u.health) {  // its client is gone
                if (!u.shared) {
                    close_upconn(u, true, now);
                    return;
                }
                // A shared connection stays: the next job of its FIFO takes it.
                u.state = upconn::st::idle;
                srv_ctr_[u.upstream][u.server].idle.inc();
                timers_.cancel(u.timer);
                if (u.slot != none) kick(u.slot);
                if (n.events & net::tcp_event::peer_fin) u.eof = true;
                drive_upconn(u, now);
                return;
            }
            u.state = upconn::st::head;
            timers_.cancel(u.timer);
            const auto &uc = cfg_.upstreams[u.upstream];
            timers_.arm(u.timer, now + (u.health ? uc.health_check_timeout_ms
                                                 : uc.response_timeout_ms) * ms);
        }
        if (n.events & net::tcp_event::peer_fin) u.eof = true;
        drive_upconn(u, now);
        return;
    }
    client &c = clients_[owner];
    if (!c.used || !(c.h == n.h) || c.port != port) return;
    if (n.events & net::tcp_event::closed) {
        owner = none;
        c.h = net::tcp_handle{};
        if (c.state != client::st::closing || c.up != none) {
            if (c.up != none || c.remote || c.queued) ctr_.client_gone.inc();
        }
        free_client(c, now);
        return;
    }
    if (n.events & net::tcp_event::peer_fin) c.eof = true;
    drive_client(c, now);
}

void worker_proxy::on_accept(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept {
    net::tcp_layer &layer = *ports_[port].layer;
    int li = -1;
    for (size_t i = 0; i < cfg_.listeners.size(); ++i)
        if (cfg_.listeners[i].port == n.local_port) li = static_cast<int>(i);
    const auto *conn = layer.get(n.h);
    if (li < 0 || conn == nullptr || nfree_clients_ == 0 || draining_) {
        layer.abort(n.h, now);
        return;
    }
    const auto &lc = cfg_.listeners[li];
    if (lc.max_connections != 0 && listener_active_[li] >= lc.max_connections) {
        ctr_.client_refused_limit.inc();
        layer.abort(n.h, now);
        return;
    }
    const uint32_t idx = free_clients_[--nfree_clients_];
    client &c = clients_[idx];
    c.used = true;
    ++c.gen;
    c.port = port;
    c.h = n.h;
    c.in_head = c.in_n = c.out_n = 0;
    c.eof = c.closing = c.fin_sent = false;
    c.buf_len = 0;
    c.hp.reset();
    c.state = client::st::head;
    c.listener = static_cast<uint16_t>(li);
    c.peer_addr = conn->tuple().remote_addr.value();
    c.peer_port = conn->tuple().remote_port;
    c.al_open = false;
    c.al_status = 0;
    c.t_req = 0;
    c.resp_bytes = 0;
    c.up = none;
    c.requests = 0;
    c.keep_alive = true;
    c.response_started = false;
    c.retry_head = nullptr;
    c.cred_mask = 0;
    c.queued = c.remote = c.xbroken = false;
    c.q_head = nullptr;
    slot_owner_[port][n.h.index] = idx;
    ++nclients_;
    ++listener_active_[li];
    ctr_.client_accepted.inc();
    timers_.arm(c.timer, now + cfg_.http.client_header_timeout_ms * ms);
    if (n.events & net::tcp_event::peer_fin) c.eof = true;
    drive_client(c, now);
}

// ---------------------------------------------------------------- plumbing

uint32_t worker_proxy::pull(endpoint &e, uint64_t now) noexcept {
    if (e.in_n == endpoint::in_cap || !e.h.valid()) return 0;
    net::tcp_rx_piece got[endpoint::in_cap];
    const size_t n =
        ports_[e.port].layer->recv(e.h, std::span(got, endpoint::in_cap - e.in_n), now);
    uint32_t added = 0;
    for (size_t i = 0; i < n; ++i) {
        if (got[i].len == 0) {
            rte_pktmbuf_free(got[i].m);
            continue;
        }
        e.in[(e.in_head + e.in_n) % endpoint::in_cap] = got[i];
        ++e.in_n;
        ++added;
    }
    return added;
}

void worker_proxy::drop_input(endpoint &e) noexcept {
    while (e.in_n != 0) {
        rte_pktmbuf_free(e.front().m);
        e.pop();
    }
}

bool worker_proxy::flush(endpoint &e, uint64_t now) noexcept {
    uint32_t done = 0;
    while (done < e.out_n && e.h.valid() &&
           ports_[e.port].layer->send(e.h, e.out[done], now) != 0)
        ++done;
    if (done != 0) {
        if (e.cred_mask != 0) {
            const uint32_t bits = done >= 32 ? e.cred_mask : e.cred_mask & ((1u << done) - 1);
            e.cred_mask = done >= 32 ? 0 : e.cred_mask >> done;
            if (bits != 0) credit_back(e, static_cast<uint32_t>(std::popcount(bits)));
        }
        std::memmove(e.out, e.out + done, (e.out_n - done) * sizeof(rte_mbuf *));
        e.out_n -= done;
    }
    if (e.out_n == 0 && e.closing && !e.fin_sent && e.h.valid()) {
        e.fin_sent = true;
        ports_[e.port].layer->close(e.h, now);
    }
    return e.out_n == 0;
}

bool worker_proxy::push(endpoint &e, rte_mbuf *chain, uint64_t now) noexcept {
    if (chain == nullptr) return false;
    const uint32_t len = chain->pkt_len;
    if (e.out_n == 0 && e.h.valid() && ports_[e.port].layer->send(e.h, chain, now) != 0) {
        if (!e.is_up) static_cast<client &>(e).resp_bytes += len;
        return true;
    }
    if (e.out_n == endpoint::out_cap) {
        rte_pktmbuf_free(chain);
        return false;
    }
    e.out[e.out_n++] = chain;
    if (!e.is_up) static_cast<client &>(e).resp_bytes += len;
    return true;
}

// Like push() for a chain that came in a cross-core data message: 1 when the
// TCP send queue took it now (its credit is owed at once), 0 when it waits in
// the out queue (flush() returns its credit), -1 when it was freed (out full).
int worker_proxy::push_credited(endpoint &e, rte_mbuf *chain, uint64_t now) noexcept {
    if (chain == nullptr) return -1;
    const uint32_t len = chain->pkt_len;
    if (!e.is_up) static_cast<client &>(e).resp_bytes += len;  // taken now or below (else aborted)
    if (e.out_n == 0 && e.h.valid() && ports_[e.port].layer->send(e.h, chain, now) != 0) return 1;
    if (e.out_n == endpoint::out_cap) {
        rte_pktmbuf_free(chain);
        return -1;
    }
    e.cred_mask |= 1u << e.out_n;
    e.out[e.out_n++] = chain;
    return 0;
}

uint64_t worker_proxy::xhandle(const client &c) const noexcept {
    return xcore::conn_handle{static_cast<uint16_t>(lcore_index_), c.xgen,
                              static_cast<uint32_t>(&c - clients_.get())}
        .pack();
}

bool worker_proxy::gate() noexcept {
    return fail_alloc_at_ == 0 || ++nalloc_ != fail_alloc_at_;
}

rte_mbuf *worker_proxy::chain_of(const char *data, uint32_t len, uint16_t port) noexcept {
    rte_mbuf *m = gate() ? net::chain_from(ports_[port].pool, data, len) : nullptr;
    if (m == nullptr) ctr_.no_buffer.inc();
    return m;
}

rte_mbuf *worker_proxy::clone_of(rte_mbuf *m, uint16_t port) noexcept {
    rte_mbuf *c = gate() ? rte_pktmbuf_clone(m, ports_[port].pool) : nullptr;
    if (c == nullptr) ctr_.no_buffer.inc();
    return c;
}

rte_mbuf *worker_proxy::take_front(net::tcp_rx_piece &p, uint32_t n, uint16_t port,
                                   bool &whole) noexcept {
    if (n < p.len && !gate()) {  // a split costs a clone
        whole = false;
        return nullptr;
    }
    return net::piece_take_front(p, n, ports_[port].pool, whole);
}

// ---------------------------------------------------------------- body pump
//
// One pump moves a body from its source endpoint (the framer says where it
// ends) to a sink, in either direction and whether the other side is local
// (an endpoint: its non-empty out queue is backpressure) or on another
// worker (data messages batched up to xcore_batch, one per credit). Body
// chains are never copied: a piece is taken whole, or split off with a clone.

bool worker_proxy::sink_ready(body_sink &s, uint64_t now) noexcept {
    if (s.dst != nullptr) return flush(*s.dst, now);
    return s.acc != nullptr || *s.credit != 0;
}

bool worker_proxy::sink_put(body_sink &s, rte_mbuf *m, uint32_t len, uint64_t now) noexcept {
    if (s.dst != nullptr) return push(*s.dst, m, now);
    if (s.acc == nullptr) {
        s.acc = m;
        --*s.credit;  // the batch's credit
    } else if (!net::chain_append(s.acc, m)) {
        rte_pktmbuf_free(m);
        return false;
    }
    s.acc_len += len;
    if (s.acc_len >= xcore_batch) sink_flush(s);
    return true;
}

void worker_proxy::sink_flush(body_sink &s) noexcept {
    if (s.acc == nullptr) return;
    if (s.sent != nullptr) *s.sent = true;
    xsend(s.peer, s.op, s.handle, 0, 0, s.acc);
    s.acc = nullptr;
    s.acc_len = 0;
}

worker_proxy::pump_result worker_proxy::pump_body(endpoint &src, body_sink &sink,
                                                  uint64_t body_limit, uint64_t rearm_ns,
                                                  uint64_t now) noexcept {
    for (;;) {
        if (!sink_ready(sink, now)) return {pump_end::blocked};  // read nothing more
        if (src.in_n == 0 && pull(src, now) == 0) {
            sink_flush(sink);
            return {src.eof ? pump_end::eof : pump_end::blocked};
        }
        net::tcp_rx_piece &p = src.front();
        const auto fr = feed_piece(src.framer, p);
        if (fr.error) {
            sink_flush(sink);  // what came before is good: in order, then the end
            return {pump_end::bad_framing, fr.err};
        }
        if (body_limit != 0 && src.framer.payload_bytes() > body_limit) {
            sink_flush(sink);
            return {pump_end::too_large};
        }
        if (fr.consumed != 0) {
            bool whole = false;
            rte_mbuf *m = take_front(p, fr.consumed, src.port, whole);
            if (whole) src.pop();
            if (m == nullptr || !sink_put(sink, m, fr.consumed, now)) {
                ctr_.no_buffer.inc();
                sink_flush(sink);
                return {pump_end::no_buffer};
            }
            timers_.arm(src.timer, now + rearm_ns);
        }
        if (fr.done) {
            sink_flush(sink);
            return {pump_end::done};
        }
    }
}

void worker_proxy::note_rejected(http::parse_error e) noexcept {
    ctr_.requests_rejected.inc();
    ctr_.rejected_by_reason[static_cast<uint8_t>(e) & 63].inc();
}

void worker_proxy::reject_generated(client &c, uint16_t status, uint64_t now) noexcept {
    if (status == 504)
        ctr_.generated_504.inc();
    else if (status == 503)
        ctr_.generated_503.inc();
    else
        ctr_.generated_502.inc();
    reject(c, status, now);
}

// ---------------------------------------------------------------- client

void worker_proxy::drive_client(client &c, uint64_t now) noexcept {
    for (int guard = 0; guard < 64 && c.used; ++guard) {
        switch (c.state) {
            case client::st::head:
                if (!client_head(c, now)) return;
                break;
            case client::st::body:
                // A handed-over request's response may already be coming back.
                if (c.remote && c.out_n != 0) flush(c, now);
                client_body(c, now);
                return;
            case client::st::wait:
                // The response may be waiting for room toward the client.
                if (flush(c, now) && c.up != none) {
                    upconn &u = upconns_[c.up];
                    if (u.used && u.gen == c.up_gen && u.state == upconn::st::body)
                        upconn_body(u, now);
                }
                return;
            case client::st::closing:
                drop_input(c);
                while (pull(c, now) != 0) drop_input(c);
                flush(c, now);
                return;
        }
    }
}

// Reads and parses a request head. True when the state changed (go on).
bool worker_proxy::client_head(client &c, uint64_t now) noexcept {
    if (!flush(c, now)) return false;  // the previous response is not out yet
    for (;;) {
        if (c.buf_len != 0) {
            if (c.t_req == 0) c.t_req = now;  // a pipelined head already in the buffer
            http::request &req = c.req;
            // A new head: nothing of the last one may stay (the parser sets
            // only what it sees; it writes nothing before the start line).
            if (c.hp.current_phase() == http::head_parser::phase::start_line) req = {};
            const auto r = http::parse_request(c.hp, {c.buf, c.buf_len}, req,
                                               std::span(c.fields, limits_.max_headers), limits_);
            if (r.st == http::parse_result::status::error) {
                note_rejected(r.err);
                reject(c, http::status_for(r.err), now);
                return false;
            }
            if (r.st == http::parse_result::status::done) {
                // start_request consumes the head; residue stays in buf.
                const uint32_t consumed = r.consumed;
                // Route and forward.
                c.head_method = req.m == http::method::head;
                c.http10 = req.version_minor == 0;
                c.keep_alive = req.keep_alive && !draining_ &&
                               (cfg_.http.max_requests_per_connection == 0 ||
                                c.requests + 1 < cfg_.http.max_requests_per_connection);
                ++c.requests;
                ctr_.requests.inc();
                if (alog_ != nullptr) al_begin(c, req, now);
                c.t_req = 0;
                if (req.m == http::method::connect || req.upgrade) {
                    reject(c, 501, now);  // no tunnels, no protocol upgrades
                    return false;
                }
                if (req.body == http::body_kind::content_length && cfg_.http.max_body_bytes != 0 &&
                    req.content_length > cfg_.http.max_body_bytes) {
                    ctr_.body_too_large.inc();
                    reject(c, 413, now);
                    return false;
                }
                // Route.
                const std::string_view host = host_without_port(req.host);
                const int upstream = route_request(
                    cfg_.routes, cfg_.listeners[c.listener], c.listener, host,
                    req.origin_form.empty() ? req.target : req.origin_form);
                if (upstream < 0) {
                    ctr_.generated_404.inc();
                    reject(c, 404, now);
                    return false;
                }
                c.upstream = upstream;
                if (c.al_open) al_rec(c).upstream = static_cast<int16_t>(upstream);
                const auto &uc = cfg_.upstreams[upstream];
                // Pick a server (hash keys come from this request).
                const int server = pick_server(upstream, c.peer_addr, req.target, host, now);
                if (server < 0) {
                    reject_generated(c, 503, now);
                    return false;
                }
                if (c.al_open) al_rec(c).server = static_cast<int16_t>(server);
                // local pool: a connection of this lcore's own pool. shared: the
                // next of the server's N connections, owned by worker k % n.
                const bool shared_pool = uc.pool == config::pool_mode::shared;
                upconn *u = nullptr;
                uint32_t slot = none;
                unsigned owner = lcore_index_;
                if (!shared_pool) {
                    u = acquire(c, upstream, server, now, false);
                    if (u == nullptr) {
                        reject_generated(c, 503, now);
                        return false;
                    }
                } else {
                    const uint32_t n = uc.shared_connections;
                    uint32_t &rr = shared_rr_[upstream][server];
                    const uint32_t k = rr;
                    rr = rr + 1 == n ? 0 : rr + 1;
                    slot = shared_base_[upstream] + static_cast<uint32_t>(server) * n + k;
                    owner = slots_[slot].owner;
                }
                const uint16_t hport = u != nullptr ? u->port : port_for(uc.servers[server].addr);
                // Serialize the head toward the origin.
                char addr[16];
                std::snprintf(addr, sizeof addr, "%u.%u.%u.%u", c.peer_addr >> 24,
                              (c.peer_addr >> 16) & 255, (c.peer_addr >> 8) & 255, c.peer_addr & 255);
                http::forward_info fi;
                fi.client_addr = cfg_.http.add_x_forwarded ? std::string_view(addr) : "";
                fi.keep_alive = true;
                fi.via_name = cfg_.http.via;
                fi.request_version_minor = c.http10 ? 0 : 1;
                char hostbuf[32];
                const auto &srv = uc.servers[server];
                std::snprintf(hostbuf, sizeof hostbuf, "%u.%u.%u.%u:%u", srv.addr >> 24,
                              (srv.addr >> 16) & 255, (srv.addr >> 8) & 255, srv.addr & 255,
                              srv.port);
                fi.default_host = hostbuf;
                const size_t hl = http::serialize_request_head(
                    req, fi, std::span(scratch_.get(), scratch_size));
                if (hl == 0) {
                    // The head with ferry's fields does not fit the scratch
                    // buffer: too large to forward.
                    note_rejected(http::parse_error::head_too_large);
                    reject(c, 431, now);  // closes u
                    return false;
                }
                rte_mbuf *head = chain_of(scratch_.get(), static_cast<uint32_t>(hl), hport);
                if (head == nullptr) {  // counted as no_buffer
                    reject_generated(c, 503, now);  // closes u
                    return false;
                }
                const bool retryable =
                    req.body == http::body_kind::none && idempotent(req.m) && uc.retries > 0;
                c.retries_left = 0;
                if (retryable && owner == lcore_index_) {  // a remote owner keeps its own clone
                    c.retry_head = clone_of(head, hport);
                    c.retries_left = c.retry_head != nullptr ? uc.retries : 0;
                }
                if (u != nullptr) {
                    u->ri = http::request_info::of(req);
                    u->t_sent = now;
                    srv_ctr_[upstream][server].requests.inc();
                    if (!push(*u, head, now)) {
                        reject_generated(c, 503, now);  // closes u
                        return false;
                    }
                }
                // The request body, then whatever follows it (pipelining).
                c.framer.reset(req.body, req.content_length, limits_);
                if (c.al_open && req.body != http::body_kind::none)
                    al_rec(c).flags |= access_record::f_has_body;
                std::memmove(c.buf, c.buf + consumed, c.buf_len - consumed);
                c.buf_len -= consumed;
                c.hp.reset();
                c.response_started = false;
                timers_.cancel(c.timer);
                c.q_body = req.body != http::body_kind::none;
                c.state = client::st::wait;
                if (u != nullptr) return begin_body(c, *u, now);
                const uint32_t cidx = static_cast<uint32_t>(&c - clients_.get());
                if (owner == lcore_index_) {
                    // Our own shared connection: wait in its FIFO (run_kicks
                    // attaches; the body is read from then on).
                    c.q_head = head;
                    c.q_ri = http::request_info::of(req);
                    c.queued = true;
                    if (!shared_submit(slot, job{cidx, c.gen, false}, false)) {
                        c.queued = false;
                        rte_pktmbuf_free(c.q_head);
                        c.q_head = nullptr;
                        ctr_.shared_queue_full.inc();
                        reject_generated(c, 503, now);
                        return false;
                    }
                    return true;
                }
                // Another worker owns it: hand the request over, with the body
                // bytes that came with the head (one data message).
                uint16_t flags = (c.keep_alive ? xf_keep_alive : 0) |
                                 (req.m == http::method::head ? xf_head : 0) |
                                 (retryable ? xf_retry : 0);
                if (!c.q_body) {
                    flags |= xf_end;
                } else if (c.buf_len != 0) {
                    const auto fr = c.framer.feed({c.buf, c.buf_len});
                    if (fr.error) {
                        note_rejected(fr.err);
                        rte_pktmbuf_free(head);
                        reject(c, http::status_for(fr.err), now);
                        return false;
                    }
                    if (fr.consumed != 0) {
                        rte_mbuf *body = chain_of(c.buf, fr.consumed, hport);
                        if (body == nullptr || !net::chain_append(head, body)) {
                            rte_pktmbuf_free(body);
                            rte_pktmbuf_free(head);
                            reject_generated(c, 503, now);
                            return false;
                        }
                    }
                    std::memmove(c.buf, c.buf + fr.consumed, c.buf_len - fr.consumed);
                    c.buf_len -= fr.consumed;
                    if (fr.done) flags |= xf_end;
                }
                if (!(flags & xf_end)) {
                    c.state = client::st::body;
                    timers_.arm(c.timer, now + cfg_.http.client_body_timeout_ms * ms);
                }
                ++c.xgen;
                c.remote = true;
                c.xbroken = false;
                c.t_xsent = now;
                if (c.al_open) al_rec(c).flags |= access_record::f_crossed;
                c.xpeer = static_cast<uint16_t>(owner);
                c.xcredit = xcore_window - 1;
                c.server = server;
                ++ups_[upstream]->busy[server];
                ++inflight_to_[owner];
                shared_.xrows[lcore_index_].inflight_to[owner].store(inflight_to_[owner],
                                                                     std::memory_order_relaxed);
                ctr_.xcore_requests_out.inc();
                xsend(owner, op_req_head, xhandle(c), flags, slot, head);
                return true;
            }
            if (c.buf_len >= c.cap) {
                note_rejected(http::parse_error::head_too_large);
                reject(c, 431, now);
                return false;
            }
        }
        // More bytes.
        if (c.in_n == 0 && pull(c, now) == 0) {
            if (c.eof) {
                // End of the connection between requests (or mid-head).
                close_client(c, now);
            }
            return false;
        }
        if (c.buf_len == 0 && c.requests > 0) {
            // A new request began: its head must arrive in time.
            timers_.arm(c.timer, now + cfg_.http.client_header_timeout_ms * ms);
        }
        if (c.t_req == 0) c.t_req = now;  // the request's first byte
        net::tcp_rx_piece &p = c.front();
        const uint32_t k = net::piece_copy_out(p, c.buf + c.buf_len, c.cap - c.buf_len);
        c.buf_len += k;
        p.off += k;
        p.len -= k;
        if (p.len == 0) {
            rte_pktmbuf_free(p.m);
            c.pop();
        }
    }
}

// Request body bytes that came with the head (copied: small), toward the
// upconn the request was just given; sets the client's state. False if the
// client was rejected.
bool worker_proxy::begin_body(client &c, upconn &u, uint64_t now) noexcept {
    if (!c.q_body) {
        c.state = client::st::wait;
        return true;
    }
    c.state = client::st::body;
    timers_.arm(c.timer, now + cfg_.http.client_body_timeout_ms * ms);
    if (c.buf_len != 0) {
        const auto fr = c.framer.feed({c.buf, c.buf_len});
        if (fr.error) {
            note_rejected(fr.err);
            reject(c, http::status_for(fr.err), now);  // closes u
            return false;
        }
        // Bytes that cannot be forwarded end the exchange: never skip them.
        if (fr.consumed != 0 && !push(u, chain_of(c.buf, fr.consumed, u.port), now)) {
            reject_generated(c, 503, now);  // closes u
            return false;
        }
        std::memmove(c.buf, c.buf + fr.consumed, c.buf_len - fr.consumed);
        c.buf_len -= fr.consumed;
        if (fr.done) c.state = client::st::wait;
    }
    return true;
}

// The request body toward its upstream connection (or, handed over, toward
// the owner of the shared connection), until it ends or the sink is full.
void worker_proxy::client_body(client &c, uint64_t now) noexcept {
    body_sink sink;
    upconn *u = nullptr;
    if (c.remote) {
        sink.peer = c.xpeer;
        sink.op = op_req_body;
        sink.handle = xhandle(c);
        sink.credit = &c.xcredit;
    } else {
        if (c.up == none) return;
        u = &upconns_[c.up];
        if (!u->used || u->gen != c.up_gen) return;
        sink.dst = u;
    }
    const pump_result r = pump_body(c, sink, cfg_.http.max_body_bytes,
                                    uint64_t(cfg_.http.client_body_timeout_ms) * ms, now);
    switch (r.end) {
        case pump_end::blocked:
            return;
        case pump_end::done:
            if (c.remote) xsend(c.xpeer, op_req_end, sink.handle, 0, 0, nullptr);
            c.state = client::st::wait;
            timers_.cancel(c.timer);
            return;
        case pump_end::eof:
            // The client went away mid-body: the request cannot complete.
            ctr_.client_gone.inc();
            if (u != nullptr) {
                close_upconn(*u, true, now);
                c.up = none;
            }
            abort_remote(c);
            al_end(c, 499, true, now);
            close_client(c, now);
            return;
        case pump_end::bad_framing:
            note_rejected(r.err);
            reject(c, http::status_for(r.err), now);  // closes u / aborts the remote side
            return;
        case pump_end::too_large:
            ctr_.body_too_large.inc();
            reject(c, 413, now);
            return;
        case pump_end::no_buffer:
            if (u != nullptr) {
                close_upconn(*u, true, now);
                c.up = none;
            }
            abort_client(c, now);  // aborts the remote side
            return;
    }
}

void worker_proxy::reject(client &c, uint16_t status, uint64_t now) noexcept {
    // A head that did not parse (or never came: 408) still gets its line; a
    // client already closing was answered before.
    if (alog_ != nullptr && !c.al_open && c.state != client::st::closing) al_unparsed(c, now);
    abort_remote(c);
    if (c.q_head != nullptr) {
        rte_pktmbuf_free(c.q_head);
        c.q_head = nullptr;
    }
    c.queued = false;
    if (c.up != none) {
        upconn &u = upconns_[c.up];
        if (u.used && u.gen == c.up_gen) close_upconn(u, true, now);
        c.up = none;
    }
    if (status >= 500)
        ctr_.responses_5xx.inc();
    else
        ctr_.responses_4xx.inc();
    const size_t n = http::serialize_error(status, true, std::span(scratch_.get(), scratch_size));
    push(c, chain_of(scratch_.get(), static_cast<uint32_t>(n), c.port), now);
    if (c.al_open) {
        c.al_status = status;
        al_end(c, status, false, now);
    }
    close_client(c, now);
}

void worker_proxy::close_client(client &c, uint64_t now) noexcept {
    abort_remote(c);
    c.state = client::st::closing;
    c.closing = true;
    timers_.arm(c.timer, now + cfg_.http.client_idle_timeout_ms * ms);  // bound the lingering
    drop_input(c);
    flush(c, now);
}

void worker_proxy::abort_client(client &c, uint64_t now) noexcept {
    abort_remote(c);
    al_end(c, 444, true, now);  // 444: ferry reset it before any response head
    ctr_.client_aborted.inc();
    if (c.h.valid()) ports_[c.port].layer->abort(c.h, now);
    // The closed event frees it.
    c.state = client::st::closing;
}

void worker_proxy::free_client(client &c, uint64_t now) noexcept {
    // Still open: the client closed or reset before its response was complete
    // (499, as nginx logs it, when no response head went out).
    if (c.al_open) al_end(c, 499, true, now);
    timers_.cancel(c.timer);
    abort_remote(c);  // B aborts its upstream side
    drop_input(c);
    for (uint32_t i = 0; i < c.out_n; ++i) rte_pktmbuf_free(c.out[i]);
    c.out_n = 0;
    c.cred_mask = 0;
    if (c.q_head != nullptr) {
        rte_pktmbuf_free(c.q_head);
        c.q_head = nullptr;
    }
    c.queued = false;
    if (c.retry_head != nullptr) {
        rte_pktmbuf_free(c.retry_head);
        c.retry_head = nullptr;
    }
    if (c.up != none) {
        upconn &u = upconns_[c.up];
        if (u.used && u.gen == c.up_gen && u.state != upconn::st::idle)
            close_upconn(u, true, now);
        c.up = none;
    }
    if (c.h.valid()) {
        slot_owner_[c.port][c.h.index] = none;
        ports_[c.port].layer->abort(c.h, now);
        c.h = net::tcp_handle{};
    }
    c.used = false;
    --nclients_;
    --listener_active_[c.listener];
    ctr_.client_closed.inc();
    free_clients_[nfree_clients_++] = static_cast<uint32_t>(&c - clients_.get());
}

void worker_proxy::finish_response(client &c, upconn *u, bool reusable, uint64_t now) noexcept {
    if (c.state == client::st::body) {
        // The origin answered before the request body was through (RFC 9112
        // §9.3: e.g. an early 413): the rest of the body cannot be told from
        // a next request, so both connections end after this response.
        c.keep_alive = false;
        reusable = false;
    }
    al_end(c, 0, false, now);
    if (u != nullptr) {
        u->client = none;
        release_upconn(*u, reusable, now);
    }
    c.up = none;
    c.response_started = false;
    if (c.retry_head != nullptr) {
        rte_pktmbuf_free(c.retry_head);
        c.retry_head = nullptr;
    }
    if (!c.keep_alive || draining_) {
        if (draining_) ctr_.drained.inc();
        close_client(c, now);
        return;
    }
    c.state = client::st::head;
    c.hp.reset();
    timers_.arm(c.timer, now + cfg_.http.client_idle_timeout_ms * ms);
    drive_client(c, now);
}

// ---------------------------------------------------------------- access log

namespace {

// Copies up to cap bytes of v into dst; sets len; true if v was cut.
template <class Len>
bool clip(char *dst, uint32_t cap, std::string_view v, Len &len) noexcept {
    const size_t n = std::min<size_t>(v.size(), cap);
    std::memcpy(dst, v.data(), n);
    len = static_cast<Len>(n);
    return n < v.size();
}

}  // namespace

void worker_proxy::set_access_log(access_log_sink *sink) {
    alog_ = sink;
    al_pending_ = sink != nullptr ? std::make_unique<access_record[]>(max_clients_) : nullptr;
}

access_record &worker_proxy::al_rec(const client &c) noexcept {
    return al_pending_[static_cast<size_t>(&c - clients_.get())];
}

// Everything the line needs of the head, copied now: the head buffer is
// reused for the next request.
void worker_proxy::al_begin(client &c, const http::request &req, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    r.t_start = c.t_req != 0 ? c.t_req : now;
    r.flags = access_record::f_parsed;
    r.version_minor = req.version_minor;
    r.client_addr = c.peer_addr;
    r.client_port = c.peer_port;
    r.upstream = r.server = -1;
    r.uct_ns = r.urt_ns = access_record::no_time;
    std::string_view referer, agent;
    for (const http::header &h : req.headers) {
        if (referer.empty() && iequals(h.name, "referer"))
            referer = h.value;
        else if (agent.empty() && iequals(h.name, "user-agent"))
            agent = h.value;
    }
    bool cut = clip(r.method, access_record::method_cap, req.method_text, r.method_len);
    cut |= clip(r.target, access_record::target_cap, req.target, r.target_len);
    cut |= clip(r.host, access_record::host_cap, req.host.empty() ? req.authority : req.host,
                r.host_len);
    cut |= clip(r.referer, access_record::referer_cap, referer, r.referer_len);
    cut |= clip(r.user_agent, access_record::user_agent_cap, agent, r.user_agent_len);
    if (cut) r.flags |= access_record::f_truncated;
    c.al_open = true;
    c.al_status = 0;
    c.resp_bytes = 0;
}

// A head that did not parse: its raw first line (up to CR or LF) stands for
// the request line; nothing else of it is trusted.
void worker_proxy::al_unparsed(client &c, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    r.t_start = c.t_req != 0 ? c.t_req : now;
    c.t_req = 0;
    r.flags = 0;
    r.version_minor = 1;
    r.client_addr = c.peer_addr;
    r.client_port = c.peer_port;
    r.upstream = r.server = -1;
    r.uct_ns = r.urt_ns = access_record::no_time;
    r.method_len = 0;
    r.host_len = r.referer_len = r.user_agent_len = 0;
    const std::string_view buf(c.buf, c.buf_len);
    const size_t eol = buf.find_first_of("\r\n");
    if (clip(r.target, access_record::target_cap, buf.substr(0, eol), r.target_len))
        r.flags |= access_record::f_truncated;
    c.al_open = true;
    c.al_status = 0;
    c.resp_bytes = 0;
}

// A response head from the upstream for c's request (local side; a remote
// one arrives in on_client_message). urt/uct count from the moment the
// request was given to the connection (u.t_sent); a reused connection's
// connect time is 0.
void worker_proxy::al_head(client &c, const upconn &u, uint16_t status, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    if (r.urt_ns == access_record::no_time) {
        r.urt_ns = now - std::min(now, u.t_sent);
        r.uct_ns = u.reused            ? 0
                   : u.t_conn != 0     ? u.t_conn - std::min(u.t_conn, u.t_sent)
                                       : access_record::no_time;
    }
    if (status >= 200) c.al_status = status;
}

void worker_proxy::al_end(client &c, uint16_t status_if_none, bool aborted, uint64_t now) noexcept {
    if (!c.al_open) return;  // never set without a sink
    c.al_open = false;
    access_record &r = al_rec(c);
    access_record *slot = alog_->reserve();
    if (slot == nullptr) {
        ctr_.access_log_dropped.inc();  // the writer fell behind: never wait for it
        return;
    }
    r.t_end = now;
    r.bytes_sent = c.resp_bytes;
    r.body_bytes = (r.flags & access_record::f_has_body) ? c.framer.payload_bytes() : 0;
    r.status = c.al_status != 0 ? c.al_status : status_if_none;
    if (aborted) r.flags |= access_record::f_aborted;
    std::memcpy(static_cast<void *>(slot), &r, sizeof r);
    alog_->commit();
    ctr_.access_log_records.inc();
}

// ---------------------------------------------------------------- upstream

int worker_proxy::pick_server(int upstream, uint32_t client_addr, std::string_view target,
                              std::string_view host, uint64_t now) noexcept {
    const auto &uc = cfg_.upstreams[upstream];
    upstream_state &us = *ups_[upstream];
    for (size_t s = 0; s < us.view.size(); ++s) {
        const uint64_t d = shared_.health[upstream][s].down_until.load(std::memory_order_relaxed);
        us.view[s].up = d == 0 || d <= now;
        us.view[s].busy = us.busy[s];
    }
    switch (uc.balance) {
        case config::balance_mode::round_robin:
            return pick_round_robin(us.view, us.rr_current);
        case config::balance_mode::least_conn:
            return pick_least_conn(us.view, ctr_.requests.get() % us.view.size());
        case config::balance_mode::consistent_hash:
            return us.ring.pick(hash_key(uc.hash_key, client_addr, target, host), us.view);
    }
    return -1;
}

uint16_t worker_proxy::port_for(uint32_t addr) const noexcept {
    for (uint16_t i = 0; i < ports_.size(); ++i) {
        const uint32_t mask =
            ports_[i].prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - ports_[i].prefix_len);
        if ((addr & mask) == (ports_[i].addr & mask)) return i;
    }
    for (uint16_t i = 0; i < ports_.size(); ++i)
        if (ports_[i].has_gateway) return i;
    return 0;
}

worker_proxy::upconn *worker_proxy::acquire(client &c, int upstream, int server, uint64_t now,
                                            bool fresh_only) noexcept {
    upstream_state &us = *ups_[upstream];
    const auto &uc = cfg_.upstreams[upstream];
    upconn *u = nullptr;
    if (!fresh_only) {
        // Most recently used idle connection first (LIFO: warm, least likely
        // to have been closed by the origin's keep-alive timeout).
        while (us.idle_head[server] != none) {
            upconn &cand = upconns_[us.idle_head[server]];
            unaccount(cand);  // off the idle list
            if (cand.eof || !cand.h.valid()) {
                close_upconn(cand, true, now);
                continue;
            }
            u = &cand;
            u->reused = true;
            u->state = upconn::st::head;
            ctr_.upstream_reused.inc();
            timers_.arm(u->timer, now + uc.response_timeout_ms * ms);
            break;
        }
    }
    if (u == nullptr) {
        const auto &srv = uc.servers[server];
        const uint16_t port = port_for(srv.addr);
        net::tcp_handle h;
        if (nfree_upconns_ == 0 ||
            ports_[port].layer->connect(net::ipv4_addr(srv.addr), srv.port, now, h) !=
                net::tcp_layer::connect_result::ok) {
            ctr_.upstream_no_connection.inc();
            return nullptr;
        }
        const uint32_t idx = free_upconns_[--nfree_upconns_];
        u = &upconns_[idx];
        u->used = true;
        ++u->gen;
        u->port = port;
        u->h = h;
        u->in_head = u->in_n = u->out_n = 0;
        u->eof = u->closing = u->fin_sent = false;
        u->buf_len = 0;
        u->upstream = upstream;
        u->server = server;
        u->reused = false;
        u->health = false;
        u->shared = false;
        u->slot = u->rq = none;
        u->cred_mask = 0;
        u->state = upconn::st::connecting;
        u->t_conn = 0;
        u->idle_next = u->idle_prev = none;
        slot_owner_[port][h.index] = idx | kind_up;
        ++nupconns_;
        ctr_.upstream_connects.inc();
        srv_ctr_[upstream][server].connections.inc();
        timers_.arm(u->timer, now + uc.connect_timeout_ms * ms);
    }
    u->client = static_cast<uint32_t>(&c - clients_.get());
    u->client_gen = c.gen;
    u->hp.reset();
    u->buf_len = 0;
    c.up = static_cast<uint32_t>(u - upconns_.get());
    c.up_gen = u->gen;
    ++us.busy[server];
    srv_ctr_[upstream][server].active.inc();
    return u;
}

void worker_proxy::drive_upconn(upconn &u, uint64_t now) noexcept {
    if (!u.used) return;
    if (u.state == upconn::st::connecting) return;
    if (u.state == upconn::st::idle) {
        // Nothing is expected from an idle origin: EOF or stray bytes end it.
        if (u.in_n != 0 || pull(u, now) != 0 || u.eof) close_upconn(u, u.in_n != 0, now);
        return;
    }
    if (u.state == upconn::st::closing) {
        drop_input(u);
        while (pull(u, now) != 0) drop_input(u);
        flush(u, now);
        return;
    }
    flush(u, now);
    // The request body may be waiting for room toward us.
    if (u.client != none) {
        client &c = clients_[u.client];
        if (c.used && c.gen == u.client_gen && c.state == client::st::body && u.out_n == 0)
            client_body(c, now);
        if (!u.used) return;
    } else if (rreq *r = rreq_of(u); r != nullptr && r->qn != 0) {
        pump_req(*r, u, now);
    }
    for (int guard = 0; guard < 64 && u.used; ++guard) {
        if (u.state == upconn::st::head) {
            if (!upconn_head(u, now)) return;
        } else if (u.state == upconn::st::body) {
            upconn_body(u, now);
            return;
        } else {
            return;
        }
    }
}

bool worker_proxy::upconn_head(upconn &u, uint64_t now) noexcept {
    client *cp = nullptr;
    rreq *rp = nullptr;
    if (u.client != none) {
        client &c = clients_[u.client];
        if (c.used && c.gen == u.client_gen) cp = &c;
    } else if (u.rq != none) {
        rp = rreq_of(u);
    }
    if (cp == nullptr && rp == nullptr && !u.health) {
        close_upconn(u, true, now);
        return false;
    }
    for (;;) {
        // A handed-over request: out of credit, the client's lcore has not
        // taken the last chains yet; read nothing more.
        if (rp != nullptr && rp->credit == 0) return false;
        if (u.buf_len != 0) {
            http::response &resp = u.resp;
            if (u.hp.current_phase() == http::head_parser::phase::start_line) resp = {};
            const auto r = http::parse_response(u.hp, {u.buf, u.buf_len}, u.ri, resp,
                                                std::span(u.fields, limits_.max_headers), limits_);
            if (r.st == http::parse_result::status::error) {
                ctr_.upstream_bad_response.inc();
                upconn_failed(u, 502, true, now);
                return false;
            }
            if (r.st == http::parse_result::status::done) {
                const uint32_t consumed = r.consumed;
                if (u.health) {
                    const bool ok = resp.status >= 200 && resp.status < 400;
                    if (!ok) ctr_.health_check_failed.inc();
                    ups_[u.upstream]->hc_conn[u.server] = none;
                    health_result(u.upstream, u.server, ok, now);
                    close_upconn(u, true, now);
                    return false;
                }
                if (resp.status == 101) {  // no upgrades through ferry
                    ctr_.upstream_bad_response.inc();
                    upconn_failed(u, 502, false, now);
                    return false;
                }
                auto &sc = srv_ctr_[u.upstream][u.server];
                if (resp.status >= 200) {
                    sc.latency_ns.inc(now - u.t_sent);
                    sc.responses.inc();
                    auto &h = shared_.health[u.upstream][u.server];
                    if (h.consecutive_fails.load(std::memory_order_relaxed) != 0)
                        h.consecutive_fails.store(0, std::memory_order_relaxed);
                }
                const bool until_close = resp.body == http::body_kind::until_close;
                bool &keep_alive = cp != nullptr ? cp->keep_alive : rp->keep_alive;
                if (until_close) keep_alive = false;
                http::forward_info fi;
                fi.keep_alive = keep_alive && resp.status >= 200;
                fi.via_name = cfg_.http.via;
                const size_t hl = http::serialize_response_head(
                    resp, fi, std::span(scratch_.get(), scratch_size));
                rte_mbuf *head =
                    hl != 0 ? chain_of(scratch_.get(), static_cast<uint32_t>(hl),
                                       cp != nullptr ? cp->port : u.port)
                            : nullptr;
                if (head == nullptr) {
                    // Too large to forward (502), or no mbuf (503, no_buffer).
                    if (hl == 0) ctr_.upstream_bad_response.inc();
                    upconn_failed(u, hl == 0 ? 502 : 503, false, now);
                    return false;
                }
                // Remote: the head leaves with the body bytes that came with it
                // (one resp_data); a 1xx leaves at once. Its arg tells A the
                // status and the connect time, for the access log (proxy.h).
                rte_mbuf *rhead = nullptr;
                uint32_t head_arg = resp.status;
                if (cp == nullptr) {
                    uint32_t uct_ms = 0xffff;  // unknown
                    if (u.reused)
                        uct_ms = 0;
                    else if (u.t_conn != 0)
                        uct_ms = static_cast<uint32_t>(std::min<uint64_t>(
                            (u.t_conn - std::min(u.t_conn, u.t_sent)) / ms, 0xfffe));
                    head_arg |= uct_ms << 16;
                }
                if (cp != nullptr) {
                    client &c = *cp;
                    if (c.al_open) al_head(c, u, resp.status, now);
                    if (!push(c, head, now)) {  // the client's out queue is full
                        ctr_.no_buffer.inc();
                        upconn_failed(u, 503, false, now);
                        return false;
                    }
                    c.response_started = true;
                    if (c.retry_head != nullptr) {
                        rte_pktmbuf_free(c.retry_head);
                        c.retry_head = nullptr;
                    }
                } else {
                    if (rp->retry_head != nullptr) {
                        rte_pktmbuf_free(rp->retry_head);
                        rp->retry_head = nullptr;
                    }
                    rhead = head;
                }
                switch (resp.status / 100) {
                    case 1:
                        ctr_.responses_1xx.inc();
                        break;
                    case 2:
                        ctr_.responses_2xx.inc();
                        break;
                    case 3:
                        ctr_.responses_3xx.inc();
                        break;
                    case 4:
                        ctr_.responses_4xx.inc();
                        break;
                    default:
                        ctr_.responses_5xx.inc();
                        break;
                }
                std::memmove(u.buf, u.buf + consumed, u.buf_len - consumed);
                u.buf_len -= consumed;
                u.hp.reset();
                if (resp.status < 200) {
                    // 1xx: a complete message; the final response follows.
                    if (cp != nullptr) {
                        cp->response_started = false;
                    } else {
                        --rp->credit;
                        xsend(rp->from, op_resp_data, rp->handle, xf_interim, head_arg, rhead);
                    }
                    continue;
                }
                auto send_rhead = [&] {
                    if (rhead == nullptr) return;
                    --rp->credit;
                    rp->response_started = true;
                    xsend(rp->from, op_resp_data, rp->handle, 0, head_arg, rhead);
                    rhead = nullptr;
                };
                u.resp_keep_alive = resp.keep_alive && !until_close;
                u.framer.reset(resp.body, resp.content_length, limits_);
                u.state = upconn::st::body;
                const auto &uc = cfg_.upstreams[u.upstream];
                timers_.arm(u.timer, now + uc.read_timeout_ms * ms);
                // Body bytes that came with the head: copied (small).
                if (u.buf_len != 0) {
                    const auto fr = u.framer.feed({u.buf, u.buf_len});
                    if (fr.error) {
                        rte_pktmbuf_free(rhead);
                        ctr_.upstream_bad_response.inc();
                        upconn_failed(u, 502, true, now);
                        return false;
                    }
                    if (fr.consumed != 0) {
                        rte_mbuf *body =
                            chain_of(u.buf, fr.consumed, cp != nullptr ? cp->port : u.port);
                        if (cp != nullptr) {
                            if (!push(*cp, body, now)) {  // the head went: abort the client
                                if (body != nullptr) ctr_.no_buffer.inc();
                                upconn_failed(u, 502, false, now);
                                return false;
                            }
                        } else if (body == nullptr || !net::chain_append(rhead, body)) {
                            rte_pktmbuf_free(body);
                            rte_pktmbuf_free(rhead);
                            upconn_failed(u, 503, false, now);
                            return false;
                        }
                    }
                    const bool extra = fr.consumed < u.buf_len;
                    u.buf_len = 0;
                    if (rp != nullptr) send_rhead();
                    if (fr.done) {
                        const bool reusable = u.resp_keep_alive && !extra && u.in_n == 0;
                        if (cp != nullptr)
                            finish_response(*cp, &u, reusable, now);
                        else
                            finish_rreq(u, *rp, reusable, now);
                        return false;
                    }
                    if (extra) {
                        ctr_.upstream_bad_response.inc();
                        upconn_failed(u, 502, true, now);
                        return false;
                    }
                }
                if (rp != nullptr) send_rhead();
                if (u.framer.done()) {  // no body
                    const bool reusable = u.resp_keep_alive && u.in_n == 0;
                    if (cp != nullptr)
                        finish_response(*cp, &u, reusable, now);
                    else
                        finish_rreq(u, *rp, reusable, now);
                    return false;
                }
                return true;
            }
            if (u.buf_len >= u.cap) {
                ctr_.upstream_bad_response.inc();
                upconn_failed(u, 502, true, now);
                return false;
            }
        }
        if (u.in_n == 0 && pull(u, now) == 0) {
            if (u.eof) {
                // Closed before (the rest of) a response head.
                upconn_failed(u, 502, true, now);
            }
            return false;
        }
        net::tcp_rx_piece &p = u.front();
        const uint32_t k = net::piece_copy_out(p, u.buf + u.buf_len, u.cap - u.buf_len);
        u.buf_len += k;
        p.off += k;
        p.len -= k;
        if (p.len == 0) {
            rte_pktmbuf_free(p.m);
            u.pop();
        }
    }
}

// The response body toward the client (or, for a handed-over request,
// toward the client's worker), until it ends or the sink is full.
void worker_proxy::upconn_body(upconn &u, uint64_t now) noexcept {
    client *cp = nullptr;
    rreq *rp = nullptr;
    body_sink sink;
    if (u.client != none) {
        client &c = clients_[u.client];
        if (c.used && c.gen == u.client_gen) cp = &c;
        sink.dst = cp;
    } else if ((rp = rreq_of(u)) != nullptr) {
        sink.peer = rp->from;
        sink.op = op_resp_data;
        sink.handle = rp->handle;
        sink.credit = &rp->credit;
        sink.sent = &rp->response_started;
    }
    if (cp == nullptr && rp == nullptr) {
        close_upconn(u, true, now);
        return;
    }
    const auto &uc = cfg_.upstreams[u.upstream];
    const pump_result r = pump_body(u, sink, 0, uint64_t(uc.read_timeout_ms) * ms, now);
    auto finish = [&](bool reusable) {
        if (cp != nullptr)
            finish_response(*cp, &u, reusable, now);
        else
            finish_rreq(u, *rp, reusable, now);
    };
    switch (r.end) {
        case pump_end::blocked:
            return;
        case pump_end::done:
            finish(u.resp_keep_alive && u.in_n == 0 && !u.eof);
            return;
        case pump_end::eof:
            if (u.framer.kind() == http::body_kind::until_close) {
                finish(false);
                return;
            }
            [[fallthrough]];  // closed mid-body: the response is truncated
        case pump_end::bad_framing:
        case pump_end::too_large:
            ctr_.upstream_bad_response.inc();
            upconn_failed(u, 502, true, now);
            return;
        case pump_end::no_buffer:
            upconn_failed(u, 502, false, now);
            return;
    }
}

void worker_proxy::upconn_failed(upconn &u, uint16_t status, bool count_health,
                                 uint64_t now) noexcept {
    if (u.health) {
        ctr_.health_check_failed.inc();
        ups_[u.upstream]->hc_conn[u.server] = none;
        health_result(u.upstream, u.server, false, now);
        close_upconn(u, true, now);
        return;
    }
    client *cp = nullptr;
    if (u.client != none) {
        client &c = clients_[u.client];
        if (c.used && c.gen == u.client_gen) cp = &c;
    }
    const int upstream = u.upstream, server = u.server;
    const uint16_t uport = u.port;
    const bool reused = u.reused;
    const uint32_t slot = u.slot;
    const http::request_info ri = u.ri;
    if (cp != nullptr && cp->al_open && (reused || u.t_conn != 0))
        al_rec(*cp).uct_ns = reused ? 0 : u.t_conn - std::min(u.t_conn, u.t_sent);
    if (count_health && !reused) {
        srv_ctr_[upstream][server].failures.inc();
        health_result(upstream, server, false, now);
    }
    // A handed-over request: detach it first (close_upconn would answer 502).
    rreq *rp = rreq_of(u);
    if (rp != nullptr) {
        u.rq = none;
        u.cred_mask = 0;
        srv_ctr_[upstream][server].active.dec();
        rp->up = none;
    }
    close_upconn(u, true, now);  // also ends its busy accounting for the client
    if (rp != nullptr) {
        rreq &r = *rp;
        if (reused && r.retry_head != nullptr && r.retries_left > 0 && r.end &&
            !r.response_started && slot != none && r.qn == 0) {
            --r.retries_left;
            ctr_.requests_retried.inc();
            rte_mbuf *again =
                r.retries_left > 0 ? clone_of(r.retry_head, uport) : nullptr;
            r.q[r.qh] = r.retry_head;
            r.qn = 1;
            r.retry_head = again;
            r.queued = true;
            if (shared_submit(slot, job{static_cast<uint32_t>(rp - rreqs_.get()), r.agen, true},
                              true))
                return;
            r.queued = false;
        }
        xsend(r.from, op_resp_error, r.handle, 0, status, nullptr);
        free_rreq(r);
        return;
    }
    if (cp == nullptr) return;
    client &c = *cp;
    c.up = none;
    if (c.response_started) {
        abort_client(c, now);
        return;
    }
    // RFC 9110 §9.2.2: an idempotent request may be retried; only when the
    // connection was a reused keep-alive one (the origin may have closed it
    // just as we sent) and the request had no body.
    if (reused && c.retry_head != nullptr && c.retries_left > 0 && c.state == client::st::wait) {
        if (slot != none) {
            // Shared pool: first in line for the slot's next connection.
            --c.retries_left;
            ctr_.requests_retried.inc();
            rte_mbuf *again = c.retries_left > 0
                                  ? clone_of(c.retry_head, c.port)
                                  : nullptr;
            c.q_head = c.retry_head;
            c.retry_head = again;
            c.q_ri = ri;
            c.q_body = false;
            c.queued = true;
            if (shared_submit(slot, job{static_cast<uint32_t>(cp - clients_.get()), c.gen, false},
                              true))
                return;
            c.queued = false;
            rte_pktmbuf_free(c.q_head);
            c.q_head = nullptr;
        } else if (upconn *fresh = acquire(c, upstream, server, now, true); fresh != nullptr) {
            --c.retries_left;
            ctr_.requests_retried.inc();
            rte_mbuf *again = c.retries_left > 0 ? clone_of(c.retry_head, fresh->port) : nullptr;
            fresh->ri = ri;
            fresh->t_sent = now;
            const bool sent = push(*fresh, c.retry_head, now);
            c.retry_head = again;
            if (sent) return;
            status = 503;  // reject below closes fresh
        }
    }
    reject_generated(c, status, now);
}

void worker_proxy::release_upconn(upconn &u, bool reusable, uint64_t now) noexcept {
    upstream_state &us = *ups_[u.upstream];
    if (us.busy[u.server] > 0) --us.busy[u.server];
    srv_ctr_[u.upstream][u.server].active.dec();
    if (u.shared) {
        shared_release(u, reusable, now);
        return;
    }
    const auto &uc = cfg_.upstreams[u.upstream];
    if (!reusable || draining_ || u.eof || us.nidle[u.server] >= uc.max_idle) {
        u.state = upconn::st::body;  // so close_upconn does not touch the idle list
        close_upconn(u, !reusable, now);
        return;
    }
    u.state = upconn::st::idle;
    u.reused = false;
    u.idle_prev = none;
    u.idle_next = us.idle_head[u.server];
    if (u.idle_next != none) upconns_[u.idle_next].idle_prev = static_cast<uint32_t>(&u - upconns_.get());
    us.idle_head[u.server] = static_cast<uint32_t>(&u - upconns_.get());
    ++us.nidle[u.server];
    srv_ctr_[u.upstream][u.server].idle.inc();
    timers_.arm(u.timer, now + cfg_.http.client_idle_timeout_ms * ms);
}

// Takes u out of the idle list and the idle gauge, or out of the busy count
// of its client, exactly once: an idle connection leaves the idle state here,
// so closing it afterwards (or freeing it) does not count it again.
void worker_proxy::unaccount(upconn &u) noexcept {
    upstream_state &us = *ups_[u.upstream];
    if (u.state == upconn::st::idle) {
        if (!u.shared) {  // shared connections are in no idle list
            const uint32_t idx = static_cast<uint32_t>(&u - upconns_.get());
            if (u.idle_prev != none)
                upconns_[u.idle_prev].idle_next = u.idle_next;
            else if (us.idle_head[u.server] == idx)
                us.idle_head[u.server] = u.idle_next;
            if (u.idle_next != none) upconns_[u.idle_next].idle_prev = u.idle_prev;
            u.idle_next = u.idle_prev = none;
            --us.nidle[u.server];
        }
        srv_ctr_[u.upstream][u.server].idle.dec();
        u.state = upconn::st::closing;
    } else if (u.client != none) {
        // Still counted busy for a client.
        if (us.busy[u.server] > 0) --us.busy[u.server];
        srv_ctr_[u.upstream][u.server].active.dec();
        u.client = none;
    }
}

void worker_proxy::close_upconn(upconn &u, bool abort, uint64_t now) noexcept {
    if (!u.used) return;
    unaccount(u);
    if (u.rq != none) {
        // A handed-over request still on it: its client's lcore answers 502.
        rreq *r = rreq_of(u);
        u.rq = none;
        srv_ctr_[u.upstream][u.server].active.dec();
        if (r != nullptr) {
            r->up = none;
            xsend(r->from, op_resp_error, r->handle, 0, 502, nullptr);
            free_rreq(*r);
        }
    }
    u.cred_mask = 0;
    if (u.slot != none) {
        // The slot's next job opens a fresh connection.
        shared_slot &sl = slots_[u.slot];
        if (sl.conn == static_cast<uint32_t>(&u - upconns_.get())) sl.conn = none;
        kick(u.slot);
        u.slot = none;
    }
    timers_.cancel(u.timer);
    drop_input(u);
    if (!u.h.valid()) {
        free_upconn(u, now);
        return;
    }
    if (abort) {
        ctr_.upstream_aborted.inc();
        ports_[u.port].layer->abort(u.h, now);  // its closed event frees it
        u.state = upconn::st::closing;
        return;
    }
    u.state = upconn::st::closing;
    u.closing = true;
    flush(u, now);
}

void worker_proxy::free_upconn(upconn &u, uint64_t now) noexcept {
    if (!u.used) return;
    unaccount(u);
    if (u.rq != none) {
        rreq *r = rreq_of(u);
        u.rq = none;
        srv_ctr_[u.upstream][u.server].active.dec();
        if (r != nullptr) {
            r->up = none;
            xsend(r->from, op_resp_error, r->handle, 0, 502, nullptr);
            free_rreq(*r);
        }
    }
    if (u.slot != none) {
        shared_slot &sl = slots_[u.slot];
        if (sl.conn == static_cast<uint32_t>(&u - upconns_.get())) sl.conn = none;
        kick(u.slot);
        u.slot = none;
    }
    if (u.health && ups_[u.upstream]->hc_conn[u.server] == static_cast<uint32_t>(&u - upconns_.get()))
        ups_[u.upstream]->hc_conn[u.server] = none;
    timers_.cancel(u.timer);
    drop_input(u);
    for (uint32_t i = 0; i < u.out_n; ++i) rte_pktmbuf_free(u.out[i]);
    u.out_n = 0;
    u.cred_mask = 0;
    if (u.h.valid()) {
        slot_owner_[u.port][u.h.index] = none;
        ports_[u.port].layer->abort(u.h, now);
        u.h = net::tcp_handle{};
    }
    u.used = false;
    u.client = none;
    u.health = false;
    u.shared = false;
    u.idle_next = u.idle_prev = none;
    --nupconns_;
    free_upconns_[nfree_upconns_++] = static_cast<uint32_t>(&u - upconns_.get());
}

void worker_proxy::health_result(int upstream, int server, bool ok, uint64_t now) noexcept {
    auto &h = shared_.health[upstream][server];
    const auto &uc = cfg_.upstreams[upstream];
    if (ok) {
        h.consecutive_fails.store(0, std::memory_order_relaxed);
        if (h.down_until.load(std::memory_order_relaxed) != 0)
            h.down_until.store(0, std::memory_order_relaxed);
        return;
    }
    const uint32_t f = h.consecutive_fails.fetch_add(1, std::memory_order_relaxed) + 1;
    if (uc.max_fails != 0 && f >= uc.max_fails) {
        h.down_until.store(now + uc.fail_timeout_ms * ms, std::memory_order_relaxed);
        h.consecutive_fails.store(0, std::memory_order_relaxed);
        h.marked_down.fetch_add(1, std::memory_order_relaxed);
    }
}

void worker_proxy::run_health_checks(uint64_t now) noexcept {
    uint64_t next = UINT64_MAX;
    for (size_t ui = 0; ui < cfg_.upstreams.size(); ++ui) {
        const auto &uc = cfg_.upstreams[ui];
        if (uc.health_check_path.empty()) continue;
        next = std::min<uint64_t>(next, now + uc.health_check_interval_ms * ms);
        upstream_state &us = *ups_[ui];
        for (size_t s = 0; s < uc.servers.size(); ++s) {
            if (us.hc_conn[s] != none) continue;  // still running (its timer ends it)
            if (nfree_upconns_ == 0) return;
            const auto &srv = uc.servers[s];
            const uint16_t port = port_for(srv.addr);
            net::tcp_handle h;
            if (ports_[port].layer->connect(net::ipv4_addr(srv.addr), srv.port, now, h) !=
                net::tcp_layer::connect_result::ok)
                continue;
            const uint32_t idx = free_upconns_[--nfree_upconns_];
            upconn &u = upconns_[idx];
            u.used = true;
            ++u.gen;
            u.port = port;
            u.h = h;
            u.in_head = u.in_n = u.out_n = 0;
            u.eof = u.closing = u.fin_sent = false;
            u.buf_len = 0;
            u.hp.reset();
            u.upstream = static_cast<int>(ui);
            u.server = static_cast<int>(s);
            u.reused = false;
            u.health = true;
            u.shared = false;
            u.slot = u.rq = none;
            u.cred_mask = 0;
            u.client = none;
            u.state = upconn::st::connecting;
            u.t_conn = 0;
            u.ri = http::request_info{};
            slot_owner_[port][h.index] = idx | kind_up;
            ++nupconns_;
            us.hc_conn[s] = idx;
            ctr_.health_checks.inc();
            char host[32];
            std::snprintf(host, sizeof host, "%u.%u.%u.%u:%u", srv.addr >> 24,
                          (srv.addr >> 16) & 255, (srv.addr >> 8) & 255, srv.addr & 255, srv.port);
            const int n = std::snprintf(
                scratch_.get(), scratch_size,
                "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: ferry-health-check\r\n"
                "Connection: close\r\n\r\n",
                uc.health_check_path.c_str(),
                uc.health_check_host.empty() ? host : uc.health_check_host.c_str());
            if (!push(u, chain_of(scratch_.get(), static_cast<uint32_t>(n), port), now)) {
                // No mbuf for the check: say nothing about the server's health.
                us.hc_conn[s] = none;
                u.health = false;
                close_upconn(u, true, now);
                continue;
            }
            timers_.arm(u.timer, now + uc.health_check_timeout_ms * ms);
        }
    }
    if (next != UINT64_MAX && !draining_) timers_.arm(health_timer_, next);
}

// ---------------------------------------------------------------- shared pools

void worker_proxy::set_xcore(unsigned workers, xcore_send_fn send, void *ctx) {
    send_fn_ = send;
    send_ctx_ = ctx;
    nworkers_ = send != nullptr ? std::clamp(workers, 1u, shared_state::max_workers) : 1;
    init_shared();
}

void worker_proxy::init_shared() {
    const size_t nup = cfg_.upstreams.size();
    has_shared_ = false;
    shared_base_.assign(nup, 0);
    shared_rr_.assign(nup, {});
    uint32_t id = 0;
    for (size_t ui = 0; ui < nup; ++ui) {
        const auto &uc = cfg_.upstreams[ui];
        if (uc.pool != config::pool_mode::shared) continue;
        has_shared_ = true;
        shared_base_[ui] = id;
        // Each lcore starts at its own k, so the lcores' first requests
        // spread over the connections (and over the owners).
        shared_rr_[ui].assign(uc.servers.size(), lcore_index_ % uc.shared_connections);
        id += static_cast<uint32_t>(uc.servers.size()) * uc.shared_connections;
    }
    nslots_ = id;
    slots_ = std::make_unique<shared_slot[]>(std::max<uint32_t>(1, nslots_));
    uint32_t owned = 0;
    for (size_t ui = 0; ui < nup; ++ui) {
        const auto &uc = cfg_.upstreams[ui];
        if (uc.pool != config::pool_mode::shared) continue;
        for (uint32_t s = 0; s < uc.servers.size(); ++s)
            for (uint32_t k = 0; k < uc.shared_connections; ++k) {
                shared_slot &sl = slots_[shared_base_[ui] + s * uc.shared_connections + k];
                sl.upstream = static_cast<int>(ui);
                sl.server = static_cast<int>(s);
                sl.k = k;
                sl.owner = k % nworkers_;
                if (sl.owner == lcore_index_) {
                    sl.q = std::make_unique<job[]>(shared_fifo_cap);
                    ++owned;
                }
            }
    }
    kick_list_.clear();
    kick_list_.reserve(2 * size_t(nslots_) + 16);
    const bool cross = has_shared_ && nworkers_ > 1;
    max_rreqs_ = cross && owned != 0
                     ? std::min<uint32_t>(owned * (shared_fifo_cap + 1), 4 * max_clients_)
                     : 0;
    rreqs_ = std::make_unique<rreq[]>(std::max<uint32_t>(1, max_rreqs_));
    free_rreqs_ = std::make_unique<uint32_t[]>(std::max<uint32_t>(1, max_rreqs_));
    nfree_rreqs_ = 0;
    nrreqs_ = 0;
    for (uint32_t i = 0; i < max_rreqs_; ++i) free_rreqs_[nfree_rreqs_++] = max_rreqs_ - 1 - i;
    const size_t table = cross ? size_t(nworkers_) * max_clients_ : 0;
    rreq_of_ = std::make_unique<uint32_t[]>(std::max<size_t>(1, table));
    std::fill_n(rreq_of_.get(), std::max<size_t>(1, table), none);
    // The backlog of each peer, sized here once: every request crossing to
    // or from that peer has at most xcore_window data messages, one credit
    // entry (credits coalesce), a terminal message and an abort waiting;
    // beyond backlog_max entries a message is dropped, counted and its
    // request failed on both sides (fail_broken).
    const uint64_t want =
        uint64_t(std::max(max_clients_, max_rreqs_)) * (xcore_window + 3);
    const uint32_t cap = std::bit_ceil(static_cast<uint32_t>(
        backlog_cap_ != 0 ? std::min<uint64_t>(backlog_cap_, backlog_max)
                          : std::clamp<uint64_t>(want, 256, backlog_max)));
    backlog_.clear();
    backlog_.resize(cross ? nworkers_ : 0);
    for (backlog &b : backlog_) {
        b.q = std::make_unique<xcore::message[]>(cap);
        b.mask = cap - 1;
    }
    backlog_total_ = 0;
    xfail_ = std::make_unique<xfail_entry[]>(cross ? max_clients_ + max_rreqs_ : 1);
    nxfail_ = 0;
    inflight_to_.assign(nworkers_, 0);
}

void worker_proxy::xsend(unsigned peer, uint16_t op, uint64_t handle, uint16_t flags,
                         uint32_t arg, rte_mbuf *m) noexcept {
    xcore::message msg;
    msg.mbuf = m;
    msg.handle = handle;
    msg.opcode = op;
    msg.flags = flags;
    msg.arg = arg;
    if (send_fn_ == nullptr || peer >= backlog_.size()) {  // shutting down
        xcore::release(msg);
        return;
    }
    backlog &b = backlog_[peer];
    const bool refuse = refuse_every_ != 0 && ++refuse_n_ % refuse_every_ == 0;
    if (b.n == 0 && !refuse && send_fn_(send_ctx_, peer, msg)) {
        ctr_.xcore_msgs_out.inc();
        return;
    }
    // The outbox's lane is full: keep it, in order, for the next poll.
    ctr_.xcore_send_retry.inc();
    if (op == op_credit && b.n != 0) {
        // Credits for one request add up: the last entry may take these too.
        xcore::message &last = b.q[(b.head + b.n - 1) & b.mask];
        if (last.opcode == op_credit && last.handle == handle) {
            last.arg += arg;
            return;
        }
    }
    if (b.n == b.mask + 1) {
        // Full (a peer that has not drained its ring for a long while): the
        // request this was for cannot go on without it.
        ctr_.xcore_backlog_full.inc();
        xcore::release(msg);
        mark_broken(peer, handle);
        return;
    }
    b.q[(b.head + b.n) & b.mask] = msg;
    ++b.n;
    ++backlog_total_;
}

// A message of the request `handle` (to or from `peer`) was dropped: its
// stream has a gap, so the request ends on this side at the next poll (not
// here: xsend is called from the middle of every path).
void worker_proxy::mark_broken(unsigned peer, uint64_t handle) noexcept {
    const xcore::conn_handle h = xcore::conn_handle::unpack(handle);
    if (h.lcore == lcore_index_) {  // our client's request
        if (h.index >= max_clients_) return;
        client &c = clients_[h.index];
        if (!c.used || !c.remote || c.xgen != h.generation || c.xbroken) return;
        c.xbroken = true;
        xfail_[nxfail_++] = {h.index, c.gen, false};
        return;
    }
    if (peer >= nworkers_ || h.index >= max_clients_ || max_rreqs_ == 0) return;
    const uint32_t ri = rreq_of_[size_t(peer) * max_clients_ + h.index];
    if (ri == none || !rreqs_[ri].used || rreqs_[ri].xgen != h.generation || rreqs_[ri].broken)
        return;
    rreqs_[ri].broken = true;
    xfail_[nxfail_++] = {ri, rreqs_[ri].agen, true};
}

// Ends the requests mark_broken() named: a client is reset (its owner is
// told, if its lane has room by now); a request handed to us loses its
// upstream connection (the response cannot be resynchronised) and its
// client's lcore is told.
void worker_proxy::fail_broken(uint64_t now) noexcept {
    // Failing one may mark it again (its abort dropped too): the flags keep
    // every request in the list at most once, and a second mark is a no-op.
    while (nxfail_ != 0) {
        const xfail_entry e = xfail_[--nxfail_];
        if (!e.rreq) {
            client &c = clients_[e.idx];
            if (!c.used || c.gen != e.gen || !c.xbroken) continue;
            c.xbroken = false;
            if (c.remote) abort_client(c, now);  // sends req_abort
            continue;
        }
        rreq &r = rreqs_[e.idx];
        if (!r.used || r.agen != e.gen || !r.broken) continue;
        upconn *u = r.up != none && upconns_[r.up].used && upconns_[r.up].gen == r.up_gen &&
                            upconns_[r.up].rq == e.idx
                        ? &upconns_[r.up]
                        : nullptr;
        xsend(r.from, op_resp_error, r.handle, 0, 502, nullptr);
        free_rreq(r);
        if (u != nullptr) close_upconn(*u, true, now);
    }
}

bool worker_proxy::retry_backlog() noexcept {
    bool moved = false;
    for (unsigned peer = 0; peer < backlog_.size(); ++peer) {
        backlog &b = backlog_[peer];
        while (b.n != 0 && send_fn_ != nullptr && send_fn_(send_ctx_, peer, b.q[b.head])) {
            b.head = (b.head + 1) & b.mask;
            --b.n;
            --backlog_total_;
            ctr_.xcore_msgs_out.inc();
            moved = true;
        }
        if (b.n == 0) b.head = 0;
    }
    return moved;
}

// Chains of a cross-core data message reached e's TCP send queue: the sender
// may send n more.
void worker_proxy::credit_back(endpoint &e, uint32_t n) noexcept {
    if (!e.is_up) {
        client &c = static_cast<client &>(e);
        if (!c.remote) return;
        xsend(c.xpeer, op_credit, xhandle(c), 0, n, nullptr);
        return;
    }
    if (rreq *r = rreq_of(static_cast<upconn &>(e))) xsend(r->from, op_credit, r->handle, 0, n, nullptr);
}

worker_proxy::rreq *worker_proxy::rreq_of(upconn &u) noexcept {
    if (u.rq == none) return nullptr;
    rreq &r = rreqs_[u.rq];
    return r.used && r.agen == u.rq_gen ? &r : nullptr;
}

bool worker_proxy::job_valid(const job &j) const noexcept {
    if (!j.remote) {
        const client &c = clients_[j.idx];
        return c.used && c.gen == j.gen && c.queued;
    }
    const rreq &r = rreqs_[j.idx];
    return r.used && r.agen == j.gen && r.queued;
}

// Queues a job on its slot's FIFO (at the front for a retry). False if full.
bool worker_proxy::shared_submit(uint32_t slot, job j, bool front) noexcept {
    shared_slot &sl = slots_[slot];
    if (sl.q == nullptr) return false;
    if (sl.qn == shared_fifo_cap) {
        // Drop the entries of jobs that went away meanwhile.
        uint32_t kept = 0;
        for (uint32_t i = 0; i < sl.qn; ++i) {
            const job &x = sl.q[(sl.qh + i) % shared_fifo_cap];
            if (job_valid(x)) sl.q[(sl.qh + kept++) % shared_fifo_cap] = x;
        }
        sl.qn = kept;
        if (sl.qn == shared_fifo_cap) return false;
    }
    if (front) {
        sl.qh = (sl.qh + shared_fifo_cap - 1) % shared_fifo_cap;
        sl.q[sl.qh] = j;
    } else {
        sl.q[(sl.qh + sl.qn) % shared_fifo_cap] = j;
    }
    ++sl.qn;
    kick(slot);
    return true;
}

void worker_proxy::kick(uint32_t slot) noexcept {
    shared_slot &sl = slots_[slot];
    if (sl.listed) return;
    sl.listed = true;
    kick_list_.push_back(slot);
}

// Gives each kicked slot's connection its next job, opening (or reopening)
// the connection when there is none.
void worker_proxy::run_kicks(uint64_t now) noexcept {
    for (size_t i = 0; i < kick_list_.size(); ++i) {
        const uint32_t si = kick_list_[i];
        shared_slot &sl = slots_[si];
        sl.listed = false;
        if (sl.q == nullptr) continue;
        for (uint32_t guard = 0; guard < 2 * shared_fifo_cap + 4; ++guard) {
            while (sl.qn != 0 && !job_valid(sl.q[sl.qh])) {
                sl.qh = (sl.qh + 1) % shared_fifo_cap;
                --sl.qn;
            }
            upconn *u = sl.conn != none ? &upconns_[sl.conn] : nullptr;
            if (u != nullptr && (u->client != none || u->rq != none)) break;  // busy
            if (u != nullptr && u->state != upconn::st::idle &&
                u->state != upconn::st::connecting) {
                close_upconn(*u, true, now);  // no job on a connection mid-exchange
                continue;
            }
            if (sl.qn == 0) {
                if (u != nullptr && draining_ && u->state == upconn::st::idle)
                    close_upconn(*u, false, now);
                break;
            }
            if (u != nullptr && u->state == upconn::st::idle &&
                (u->eof || !u->h.valid() || u->in_n != 0)) {
                close_upconn(*u, true, now);
                continue;
            }
            if (u == nullptr) {
                u = open_shared(si, now);
                if (u == nullptr) {
                    const job j = sl.q[sl.qh];
                    sl.qh = (sl.qh + 1) % shared_fifo_cap;
                    --sl.qn;
                    fail_job(j, 503, now);
                    continue;
                }
            }
            const job j = sl.q[sl.qh];
            sl.qh = (sl.qh + 1) % shared_fifo_cap;
            --sl.qn;
            attach(si, *u, j, now);
            break;
        }
    }
    kick_list_.clear();
}

void worker_proxy::fail_job(const job &j, uint16_t status, uint64_t now) noexcept {
    if (!j.remote) {
        client &c = clients_[j.idx];
        c.queued = false;
        reject_generated(c, status, now);  // frees q_head
        return;
    }
    rreq &r = rreqs_[j.idx];
    r.queued = false;
    xsend(r.from, op_resp_error, r.handle, 0, status, nullptr);
    free_rreq(r);
}

worker_proxy::upconn *worker_proxy::open_shared(uint32_t si, uint64_t now) noexcept {
    shared_slot &sl = slots_[si];
    const auto &uc = cfg_.upstreams[sl.upstream];
    const auto &srv = uc.servers[sl.server];
    const uint16_t port = port_for(srv.addr);
    net::tcp_handle h;
    if (nfree_upconns_ == 0 ||
        ports_[port].layer->connect(net::ipv4_addr(srv.addr), srv.port, now, h) !=
            net::tcp_layer::connect_result::ok) {
        ctr_.upstream_no_connection.inc();
        return nullptr;
    }
    const uint32_t idx = free_upconns_[--nfree_upconns_];
    upconn &u = upconns_[idx];
    u.used = true;
    ++u.gen;
    u.port = port;
    u.h = h;
    u.in_head = u.in_n = u.out_n = 0;
    u.cred_mask = 0;
    u.eof = u.closing = u.fin_sent = false;
    u.buf_len = 0;
    u.hp.reset();
    u.upstream = sl.upstream;
    u.server = sl.server;
    u.reused = false;
    u.health = false;
    u.shared = true;
    u.slot = si;
    u.client = u.rq = none;
    u.state = upconn::st::connecting;
    u.t_conn = 0;
    u.idle_next = u.idle_prev = none;
    slot_owner_[port][h.index] = idx | kind_up;
    ++nupconns_;
    sl.conn = idx;
    if (sl.opened) ctr_.shared_reconnects.inc();
    sl.opened = true;
    ctr_.upstream_connects.inc();
    srv_ctr_[sl.upstream][sl.server].connections.inc();
    timers_.arm(u.timer, now + uc.connect_timeout_ms * ms);
    return &u;
}

// The job takes the slot's connection (idle, or still connecting).
void worker_proxy::attach(uint32_t si, upconn &u, const job &j, uint64_t now) noexcept {
    const shared_slot &sl = slots_[si];
    const auto &uc = cfg_.upstreams[sl.upstream];
    const uint32_t uidx = static_cast<uint32_t>(&u - upconns_.get());
    if (u.state == upconn::st::idle) {
        u.reused = true;
        u.state = upconn::st::head;
        srv_ctr_[sl.upstream][sl.server].idle.dec();
        ctr_.upstream_reused.inc();
        timers_.arm(u.timer, now + uc.response_timeout_ms * ms);
    }
    u.hp.reset();
    u.buf_len = 0;
    u.cred_mask = 0;
    u.t_sent = now;
    srv_ctr_[sl.upstream][sl.server].requests.inc();
    srv_ctr_[sl.upstream][sl.server].active.inc();
    if (!j.remote) {
        client &c = clients_[j.idx];
        c.queued = false;
        u.client = j.idx;
        u.client_gen = c.gen;
        c.up = uidx;
        c.up_gen = u.gen;
        ++ups_[sl.upstream]->busy[sl.server];
        u.ri = c.q_ri;
        rte_mbuf *head = c.q_head;
        c.q_head = nullptr;
        if (!push(u, head, now)) {
            reject_generated(c, 503, now);  // closes u (the slot reopens)
            return;
        }
        if (begin_body(c, u, now) && c.used && c.state == client::st::body) client_body(c, now);
        return;
    }
    rreq &r = rreqs_[j.idx];
    r.queued = false;
    u.rq = j.idx;
    u.rq_gen = r.agen;
    r.up = uidx;
    r.up_gen = u.gen;
    u.ri = r.ri;
    pump_req(r, u, now);
}

// A shared connection's job ended: keep it for the next one, or close it
// (the slot reopens for the next job).
void worker_proxy::shared_release(upconn &u, bool reusable, uint64_t now) noexcept {
    u.cred_mask = 0;
    if (!reusable || u.eof || !u.h.valid() || u.slot == none) {
        u.state = upconn::st::body;
        close_upconn(u, !reusable, now);
        return;
    }
    u.state = upconn::st::idle;
    u.reused = false;
    srv_ctr_[u.upstream][u.server].idle.inc();
    timers_.cancel(u.timer);  // shared connections have no idle timeout
    kick(u.slot);
}

// Moves the chains a remote request brought into its upstream connection.
void worker_proxy::pump_req(rreq &r, upconn &u, uint64_t now) noexcept {
    uint32_t owed = 0;
    while (r.qn != 0 && u.out_n < endpoint::out_cap) {
        rte_mbuf *m = r.q[r.qh];
        r.q[r.qh] = nullptr;
        r.qh = (r.qh + 1) % xcore_window;
        --r.qn;
        if (push_credited(u, m, now) == 1) ++owed;
    }
    if (owed != 0) xsend(r.from, op_credit, r.handle, 0, owed, nullptr);
}

// The response of a remote request is complete.
void worker_proxy::finish_rreq(upconn &u, rreq &r, bool reusable, uint64_t now) noexcept {
    // Early response (the request was not all through): as in local mode,
    // both connections end after it.
    const bool complete = r.end && r.qn == 0;
    xsend(r.from, op_resp_end, r.handle, 0, r.keep_alive && complete ? 1 : 0, nullptr);
    u.rq = none;
    u.cred_mask = 0;
    srv_ctr_[u.upstream][u.server].active.dec();
    r.up = none;
    free_rreq(r);
    shared_release(u, reusable && complete, now);
}

void worker_proxy::free_rreq(rreq &r) noexcept {
    if (!r.used) return;
    while (r.qn != 0) {
        rte_pktmbuf_free(r.q[r.qh]);
        r.q[r.qh] = nullptr;
        r.qh = (r.qh + 1) % xcore_window;
        --r.qn;
    }
    r.qh = 0;
    if (r.retry_head != nullptr) {
        rte_pktmbuf_free(r.retry_head);
        r.retry_head = nullptr;
    }
    const uint32_t idx = static_cast<uint32_t>(&r - rreqs_.get());
    const size_t key = size_t(r.from) * max_clients_ + r.cidx;
    if (rreq_of_[key] == idx) rreq_of_[key] = none;
    if (r.up != none) {
        upconn &u = upconns_[r.up];
        if (u.used && u.gen == r.up_gen && u.rq == idx) {
            u.rq = none;
            u.cred_mask = 0;
            srv_ctr_[u.upstream][u.server].active.dec();
        }
        r.up = none;
    }
    r.used = false;
    r.queued = false;
    ++r.agen;
    --nrreqs_;
    free_rreqs_[nfree_rreqs_++] = idx;
}

// The client's handed-over request ends here (aborted): tell its owner.
void worker_proxy::abort_remote(client &c) noexcept {
    if (!c.remote) return;
    xsend(c.xpeer, op_req_abort, xhandle(c), 0, 0, nullptr);
    end_remote(c);
}

void worker_proxy::end_remote(client &c) noexcept {
    if (!c.remote) return;
    c.remote = false;
    ++c.xgen;  // later messages of this request are stale
    c.cred_mask = 0;
    if (inflight_to_[c.xpeer] > 0) --inflight_to_[c.xpeer];
    shared_.xrows[lcore_index_].inflight_to[c.xpeer].store(inflight_to_[c.xpeer],
                                                           std::memory_order_relaxed);
    if (c.upstream >= 0 && c.server >= 0) {
        auto &busy = ups_[c.upstream]->busy[c.server];
        if (busy > 0) --busy;
    }
}

void worker_proxy::on_message(unsigned from, xcore::message &m, uint64_t now) noexcept {
    last_now_ = now;
    ctr_.xcore_msgs_in.inc();
    switch (m.opcode) {
        case op_resp_data:
        case op_resp_end:
        case op_resp_error:
            on_client_message(from, m, now);
            break;
        case op_req_head:
        case op_req_body:
        case op_req_end:
        case op_req_abort:
            on_owner_message(from, m, now);
            break;
        case op_credit:
            // Credits flow both ways: the handle names our client when we
            // are the client's side.
            if (xcore::conn_handle::unpack(m.handle).lcore == lcore_index_)
                on_client_message(from, m, now);
            else
                on_owner_message(from, m, now);
            break;
        default:
            ctr_.xcore_stale.inc();
            xcore::release(m);
            break;
    }
    if (!kick_list_.empty()) run_kicks(now);
}

// The client's side (A): responses and credits for a handed-over request.
void worker_proxy::on_client_message(unsigned from, xcore::message &m, uint64_t now) noexcept {
    const xcore::conn_handle h = xcore::conn_handle::unpack(m.handle);
    client *cp = nullptr;
    if (h.lcore == lcore_index_ && h.index < max_clients_) {
        client &c = clients_[h.index];
        if (c.used && c.remote && c.xgen == h.generation && c.xpeer == from) cp = &c;
    }
    if (cp == nullptr) {
        // The client is gone (or its request ended): free what came with it.
        // The last credits of an aborted request land here too.
        ctr_.xcore_stale.inc();
        xcore::release(m);
        return;
    }
    client &c = *cp;
    switch (m.opcode) {
        case op_resp_data: {
            if (!(m.flags & xf_interim)) c.response_started = true;
            if (m.arg != 0 && c.al_open) {
                // A response head (proxy.h): its status and connect time.
                access_record &r = al_rec(c);
                if (r.urt_ns == access_record::no_time) {
                    r.urt_ns = now - std::min(now, c.t_xsent);
                    const uint32_t uct_ms = m.arg >> 16;
                    r.uct_ns = uct_ms == 0xffff ? access_record::no_time : uint64_t(uct_ms) * ms;
                }
                if (!(m.flags & xf_interim)) c.al_status = static_cast<uint16_t>(m.arg & 0xffff);
            }
            const int r = push_credited(c, m.mbuf, now);
            m.mbuf = nullptr;
            if (r == 1) {
                credit_back(c, 1);
            } else if (r < 0) {
                ctr_.no_buffer.inc();
                abort_client(c, now);  // sends req_abort
            }
            break;
        }
        case op_resp_end:
            end_remote(c);
            if (m.arg == 0) c.keep_alive = false;
            finish_response(c, nullptr, false, now);
            break;
        case op_resp_error: {
            end_remote(c);
            const uint16_t status = static_cast<uint16_t>(m.arg);
            if (c.response_started) {
                abort_client(c, now);
                break;
            }
            reject_generated(c, status, now);
            break;
        }
        case op_credit:
            c.xcredit += m.arg;
            if (c.state == client::st::body) client_body(c, now);
            break;
        default:
            xcore::release(m);
            break;
    }
}

// The owner's side (B): requests handed over for our shared connections.
void worker_proxy::on_owner_message(unsigned from, xcore::message &m, uint64_t now) noexcept {
    const xcore::conn_handle h = xcore::conn_handle::unpack(m.handle);
    if (h.lcore != from || from >= nworkers_ || from == lcore_index_ || h.index >= max_clients_ ||
        max_rreqs_ == 0) {
        ctr_.xcore_stale.inc();
        xcore::release(m);
        return;
    }
    const size_t key = size_t(from) * max_clients_ + h.index;
    const uint32_t ri = rreq_of_[key];
    rreq *rp = nullptr;
    if (ri != none && rreqs_[ri].used && rreqs_[ri].xgen == h.generation) rp = &rreqs_[ri];
    if (m.opcode == op_req_head) {
        if (rp != nullptr) {  // a second head for one request: cannot happen
            ctr_.xcore_stale.inc();
            xcore::release(m);
            return;
        }
        if (ri != none && rreqs_[ri].used) {
            // A request of this client slot we still hold: its client moved on.
            rreq &old = rreqs_[ri];
            upconn *ou = old.up != none ? &upconns_[old.up] : nullptr;
            const bool on_conn = ou != nullptr && ou->used && ou->gen == old.up_gen && ou->rq == ri;
            free_rreq(old);  // detaches it from its connection
            if (on_conn) close_upconn(*ou, true, now);
        }
        const uint32_t slot = m.arg;
        if (slot >= nslots_ || slots_[slot].q == nullptr) {
            ctr_.xcore_stale.inc();
            xcore::release(m);
            xsend(from, op_resp_error, m.handle, 0, 502, nullptr);
            return;
        }
        ctr_.xcore_requests_in.inc();
        if (nfree_rreqs_ == 0) {
            ctr_.shared_queue_full.inc();
            xcore::release(m);
            xsend(from, op_resp_error, m.handle, 0, 503, nullptr);
            return;
        }
        const shared_slot &sl = slots_[slot];
        const auto &uc = cfg_.upstreams[sl.upstream];
        const uint32_t idx = free_rreqs_[--nfree_rreqs_];
        rreq &r = rreqs_[idx];
        r.used = true;
        r.broken = false;
        r.queued = true;
        r.from = static_cast<uint16_t>(from);
        r.xgen = h.generation;
        r.cidx = h.index;
        r.handle = m.handle;
        r.slot = slot;
        r.up = none;
        r.end = m.flags & xf_end;
        r.keep_alive = m.flags & xf_keep_alive;
        r.response_started = false;
        r.ri = http::request_info{};
        r.ri.head = m.flags & xf_head;
        r.credit = xcore_window;
        r.retries_left = 0;
        r.retry_head = nullptr;
        if ((m.flags & xf_retry) && uc.retries > 0) {
            r.retry_head = gate() ? rte_pktmbuf_clone(m.mbuf, m.mbuf->pool) : nullptr;
            if (r.retry_head != nullptr) r.retries_left = uc.retries;
        }
        r.qh = 0;
        r.q[0] = m.mbuf;
        r.qn = 1;
        m.mbuf = nullptr;
        rreq_of_[key] = idx;
        ++nrreqs_;
        if (!shared_submit(slot, job{idx, r.agen, true}, false)) {
            ctr_.shared_queue_full.inc();
            r.queued = false;
            xsend(from, op_resp_error, r.handle, 0, 503, nullptr);
            free_rreq(r);
        }
        return;
    }
    if (rp == nullptr) {
        // The request ended here (answered, failed, or aborted) before this
        // arrived. Credits for it are expected (the last ones of every
        // response cross its resp_end) and not counted.
        if (m.opcode != op_credit) ctr_.xcore_stale.inc();
        xcore::release(m);
        return;
    }
    rreq &r = *rp;
    upconn *u = nullptr;
    if (r.up != none && upconns_[r.up].used && upconns_[r.up].gen == r.up_gen &&
        upconns_[r.up].rq == ri)
        u = &upconns_[r.up];
    switch (m.opcode) {
        case op_req_body:
            if (r.qn == xcore_window) {  // over its credit: cannot happen
                ctr_.xcore_stale.inc();
                xcore::release(m);
                return;
            }
            r.q[(r.qh + r.qn) % xcore_window] = m.mbuf;
            ++r.qn;
            m.mbuf = nullptr;
            if (u != nullptr) pump_req(r, *u, now);
            break;
        case op_req_end:
            r.end = true;
            break;
        case op_req_abort:
            // The client is gone: the response cannot be resynchronised, so
            // the connection goes too (the slot reopens for its next job). A
            // queued request just leaves (its FIFO entry is stale now).
            ctr_.xcore_aborted.inc();
            free_rreq(r);
            if (u != nullptr) close_upconn(*u, true, now);
            break;
        case op_credit:
            r.credit += m.arg;
            if (u != nullptr && (u->state == upconn::st::head || u->state == upconn::st::body))
                drive_upconn(*u, now);
            break;
        default:
            xcore::release(m);
            break;
    }
}

// ---------------------------------------------------------------- timers

void worker_proxy::client_timer_cb(void *ctx, uint64_t now) noexcept {
    auto &c = *static_cast<client *>(ctx);
    worker_proxy &px = *c.px;
    px.last_now_ = now;
    if (!c.used) return;
    switch (c.state) {
        case client::st::head:
            if (c.buf_len == 0 && c.in_n == 0 && c.requests > 0) {
                px.ctr_.timeouts_idle.inc();
                px.close_client(c, now);
            } else {
                px.ctr_.timeouts_header.inc();
                // RFC 9110 §15.5.9: 408 for a request that did not arrive in time.
                px.reject(c, 408, now);
            }
            break;
        case client::st::body:
            px.ctr_.timeouts_body.inc();
            px.reject(c, 408, now);
            break;
        case client::st::wait:
            break;
        case client::st::closing:
            // Lingered too long with unsent data or no FIN answer: give up.
            px.abort_client(c, now);
            break;
    }
    if (!px.kick_list_.empty()) px.run_kicks(now);
}

void worker_proxy::upconn_timer_cb(void *ctx, uint64_t now) noexcept {
    auto &u = *static_cast<upconn *>(ctx);
    worker_proxy &px = *u.px;
    px.last_now_ = now;
    if (!u.used) return;
    switch (u.state) {
        case upconn::st::idle:
            px.ctr_.upstream_closed_idle.inc();
            px.close_upconn(u, false, now);
            break;
        case upconn::st::closing:
            px.close_upconn(u, true, now);
            break;
        case upconn::st::connecting:
            px.ctr_.upstream_connect_failed.inc();
            px.ctr_.timeouts_upstream.inc();
            px.upconn_failed(u, 504, true, now);
            break;
        case upconn::st::head:
        case upconn::st::body:
            px.ctr_.timeouts_upstream.inc();
            px.upconn_failed(u, 504, true, now);
            break;
    }
    if (!px.kick_list_.empty()) px.run_kicks(now);
}

void worker_proxy::health_timer_cb(void *ctx, uint64_t now) noexcept {
    auto &px = *static_cast<worker_proxy *>(ctx);
    px.last_now_ = now;
    px.run_health_checks(now);
}

// ---------------------------------------------------------------- drain

void worker_proxy::begin_drain(uint64_t now) noexcept {
    if (draining_) return;
    draining_ = true;
    timers_.cancel(health_timer_);
    for (const auto &l : cfg_.listeners)
        for (const port_ref &p : ports_) (void)p.layer->unlisten(l.port);
    for (uint32_t i = 0; i < max_clients_; ++i) {
        client &c = clients_[i];
        if (!c.used) continue;
        c.keep_alive = false;
        if (c.state == client::st::head && c.buf_len == 0 && c.in_n == 0) {
            ctr_.drained.inc();
            close_client(c, now);
        }
    }
    for (uint32_t i = 0; i < max_upconns_; ++i) {
        upconn &u = upconns_[i];
        if (u.used && (u.state == upconn::st::idle || u.health)) close_upconn(u, u.health, now);
    }
    if (has_shared_)
        shared_.xrows[lcore_index_].clients_open.store(nclients_, std::memory_order_relaxed);
    if (!kick_list_.empty()) run_kicks(now);
}

uint32_t worker_proxy::open_connections() const noexcept {
    uint32_t n = nclients_ + nupconns_;
    if (!has_shared_ || nworkers_ < 2) return n;
    // Cross-core work: requests handed to us and not answered, messages not
    // out yet, and any peer that may still hand us a request (it has clients,
    // or has not begun draining: UINT32_MAX).
    n += nrreqs_ + backlog_total_;
    auto &rows = shared_.xrows;
    if (draining_) rows[lcore_index_].clients_open.store(nclients_, std::memory_order_relaxed);
    for (unsigned p = 0; p < nworkers_; ++p) {
        if (p == lcore_index_) continue;
        n += rows[p].inflight_to[lcore_index_].load(std::memory_order_relaxed);
        if (rows[p].clients_open.load(std::memory_order_relaxed) != 0) ++n;
    }
    return n;
}

void worker_proxy::abort_all(uint64_t now) noexcept {
    for (uint32_t i = 0; i < max_clients_; ++i)
        if (clients_[i].used && clients_[i].h.valid()) {
            al_end(clients_[i], 444, true, now);  // the drain timeout cut it
            ctr_.drained.inc();
            ports_[clients_[i].port].layer->abort(clients_[i].h, now);
        }
    for (uint32_t i = 0; i < max_upconns_; ++i)
        if (upconns_[i].used && upconns_[i].h.valid())
            ports_[upconns_[i].port].layer->abort(upconns_[i].h, now);
}

}  // namespace ferry::proxy
