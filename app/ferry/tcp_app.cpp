#include "tcp_app.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "ferry/net/mbuf_chain.h"

namespace ferry::app {
namespace {

constexpr uint32_t pattern_period = 251;

// Bytes k mod 251 for k in [0, 251 + 2048): a copy from offset (pos mod 251)
// gives any stretch of up to 2048 bytes of the stream.
struct pattern_table {
    std::array<uint8_t, pattern_period + 4096> b{};
    constexpr pattern_table() {
        for (uint32_t i = 0; i < b.size(); ++i)
            b[i] = static_cast<uint8_t>(i % pattern_period);
    }
};
constexpr pattern_table pattern{};


}  // namespace

tcp_test_app::tcp_test_app(const config::tcp_test_config &cfg, net::tcp_layer &layer,
                           rte_mempool *pool)
    : cfg_(cfg), layer_(layer), pool_(pool) {
    states_ = std::make_unique<conn_state[]>(layer.capacity());
    for (uint16_t port : {cfg.echo_port, cfg.discard_port, cfg.source_port, cfg.relay_port})
        if (port != 0)
            (void)layer_.listen(port);
}

tcp_test_app::~tcp_test_app() {
    for (uint32_t i = 0; i < layer_.capacity(); ++i)
        reset(states_[i]);
}

void tcp_test_app::reset(conn_state &s) noexcept {
    for (uint16_t i = 0; i < s.npend; ++i)
        rte_pktmbuf_free(s.pend[i]);
    s.npend = 0;
    for (uint16_t i = 0; i < s.nowed; ++i)
        rte_pktmbuf_free(s.owed[i]);
    s.nowed = 0;
    s.close_after_owed = false;
    s.k = kind::none;
    s.fin_seen = s.closing = false;
    s.generated = 0;
    s.peer = net::tcp_handle{};
}

uint32_t tcp_test_app::run(uint64_t now) noexcept {
    auto &notes = notes_;  // a member: a local array was zeroed on every call
    uint32_t handled = 0;
    // Bounded: handling may raise new events, which the next iteration takes.
    for (int round = 0; round < 4; ++round) {
        const std::size_t n = layer_.poll_events(notes);
        for (std::size_t i = 0; i < n; ++i)
            handle(notes[i], now);
        handled += static_cast<uint32_t>(n);
        if (n < notes.size())
            break;
    }
    return handled;
}

void tcp_test_app::handle(const net::tcp_notice &n, uint64_t now) noexcept {
    conn_state &s = states_[n.h.index];
    if (s.gen != n.h.gen || s.k == kind::none) {
        reset(s);
        s.gen = n.h.gen;
        if (n.active) {
            // Only relay_out connections are opened here, and start_relay
            // sets their state first: this one lost its relay partner.
            s.k = kind::none;
            layer_.abort(n.h, now);
            return;
        }
        s.k = n.local_port == cfg_.echo_port      ? kind::echo
              : n.local_port == cfg_.discard_port ? kind::discard
              : n.local_port == cfg_.relay_port   ? kind::relay_in
                                                  : kind::source;
        if (s.k == kind::relay_in) start_relay(n, s, now);
    }
    if (s.k == kind::relay_in || s.k == kind::relay_out) {
        if (n.events & net::tcp_event::closed) {
            relay_closed(n, s, now);
            return;
        }
        if (n.events & net::tcp_event::peer_fin) s.fin_seen = true;
        if (s.nowed != 0 || s.close_after_owed) {
            // What a closed peer left for us, then its FIN.
            uint16_t done = 0;
            while (done < s.nowed && layer_.send(n.h, s.owed[done], now) != 0) ++done;
            std::memmove(s.owed, s.owed + done, (s.nowed - done) * sizeof(rte_mbuf *));
            s.nowed = static_cast<uint16_t>(s.nowed - done);
            if (s.nowed == 0 && s.close_after_owed) {
                s.close_after_owed = false;
                layer_.close(n.h, now);
            }
        }
        pump_relay(n.h, s, now);  // this side -> its peer
        if (s.peer.valid()) {     // and the peer -> this side (this one may be writable now)
            conn_state &p = states_[s.peer.index];
            if (p.gen == s.peer.gen && p.peer == n.h) pump_relay(s.peer, p, now);
        }
        return;
    }
    if (n.events & net::tcp_event::closed) {
        reset(s);  // the handle is stale from here on
        return;
    }
    if (n.events & net::tcp_event::peer_fin)
        s.fin_seen = true;
    switch (s.k) {
        case kind::echo:
            pump_echo(n.h, s, now);
            break;
        case kind::discard:
            drain_discard(n.h, now);
            if (s.fin_seen && !s.closing) {
                s.closing = true;
                layer_.close(n.h, now);
            }
            break;
        case kind::source:
            drain_discard(n.h, now);
            if (s.fin_seen) {
                if (!s.closing) {
                    s.closing = true;
                    layer_.close(n.h, now);
                }
                break;
            }
            pump_source(n.h, s, now);
            break;
        case kind::relay_in:
        case kind::relay_out:  // handled above
        case kind::none:
            break;
    }
}

bool tcp_test_app::flush_pending(net::tcp_handle h, conn_state &s, uint64_t now) noexcept {
    uint16_t done = 0;
    while (done < s.npend && layer_.send(h, s.pend[done], now) != 0)
        ++done;
    if (done != 0) {
        std::memmove(s.pend, s.pend + done, (s.npend - done) * sizeof(rte_mbuf *));
        s.npend = static_cast<uint16_t>(s.npend - done);
    }
    return s.npend == 0;
}

void tcp_test_app::pump_echo(net::tcp_handle h, conn_state &s, uint64_t now) noexcept {
    net::tcp_rx_piece pieces[max_pending];
    while (flush_pending(h, s, now)) {
        const std::size_t n = layer_.recv(h, std::span(pieces, max_pending), now);
        if (n == 0)
            break;
        for (std::size_t i = 0; i < n; ++i) {
            if (pieces[i].len == 0) {
                rte_pktmbuf_free(pieces[i].m);
                continue;
            }
            if (rte_mbuf *c = net::chain_cut(pieces[i].m, pieces[i].off, pieces[i].len))
                s.pend[s.npend++] = c;
        }
    }
    net::tcp_conn *c = layer_.get(h);
    if (c != nullptr && s.fin_seen && !s.closing && s.npend == 0 && c->recv_queued() == 0) {
        s.closing = true;
        layer_.close(h, now);
    }
}

void tcp_test_app::start_relay(const net::tcp_notice &n, conn_state &s, uint64_t now) noexcept {
    ++relay_accepted;
    net::tcp_handle out;
    if (layer_.connect(net::ipv4_addr(cfg_.relay_addr), cfg_.relay_to_port, now, out) !=
        net::tcp_layer::connect_result::ok) {
        ++relay_connect_failed;
        s.k = kind::none;
        layer_.abort(n.h, now);
        return;
    }
    conn_state &o = states_[out.index];
    reset(o);
    o.gen = out.gen;
    o.k = kind::relay_out;
    o.peer = n.h;
    s.peer = out;
}

void tcp_test_app::pump_relay(net::tcp_handle src, conn_state &s, uint64_t now) noexcept {
    if (!s.peer.valid()) return;
    net::tcp_rx_piece pieces[max_pending];
    // Forward what src received, as long as the peer takes it: what it
    // refuses waits in s.pend, and src is not read meanwhile (its window
    // closes, so the sender slows down).
    while (flush_pending(s.peer, s, now)) {
        const std::size_t n = layer_.recv(src, std::span(pieces, max_pending), now);
        if (n == 0) break;
        for (std::size_t i = 0; i < n; ++i) {
            if (pieces[i].len == 0) {
                rte_pktmbuf_free(pieces[i].m);
                continue;
            }
            if (rte_mbuf *c = net::chain_cut(pieces[i].m, pieces[i].off, pieces[i].len)) s.pend[s.npend++] = c;
        }
    }
    // Half-close: src's FIN goes on once everything before it did.
    net::tcp_conn *c = layer_.get(src);
    if (c != nullptr && s.fin_seen && !s.closing && s.npend == 0 && c->recv_queued() == 0) {
        s.closing = true;
        layer_.close(s.peer, now);
    }
}

void tcp_test_app::relay_closed(const net::tcp_notice &n, conn_state &s, uint64_t now) noexcept {
    const net::tcp_handle peer = s.peer;
    const bool orderly = n.reason == net::tcp_close_reason::normal;
    if (!peer.valid()) {
        reset(s);
        return;
    }
    conn_state &p = states_[peer.index];
    if (p.gen != peer.gen || !(p.peer == n.h)) {
        reset(s);
        return;
    }
    if (orderly && (s.npend != 0 || !s.closing)) {
        // n.h ended in order but its data (and FIN) did not all reach the
        // peer yet (backpressure): the peer still gets them.
        for (uint16_t i = 0; i < s.npend && p.nowed < max_pending; ++i) p.owed[p.nowed++] = s.pend[i];
        s.npend = 0;
        p.close_after_owed = !s.closing;
        s.closing = true;
        // Flush what fits now; the peer's next `writable` event does the rest.
        uint16_t done = 0;
        while (done < p.nowed && layer_.send(peer, p.owed[done], now) != 0) ++done;
        std::memmove(p.owed, p.owed + done, (p.nowed - done) * sizeof(rte_mbuf *));
        p.nowed = static_cast<uint16_t>(p.nowed - done);
        if (p.nowed == 0 && p.close_after_owed) {
            p.close_after_owed = false;
            layer_.close(peer, now);
        }
    }
    reset(s);
    p.peer = net::tcp_handle{};
    if (!orderly) {
        // The other side must learn that the stream broke: RST, not FIN.
        ++relay_aborted;
        layer_.abort(peer, now);
    }
    // An orderly end of n.h means both FINs crossed the relay already (ours
    // to n.h was sent by pump_relay once the peer's data was through).
}

void tcp_test_app::drain_discard(net::tcp_handle h, uint64_t now) noexcept {
    net::tcp_rx_piece pieces[32];
    for (;;) {
        const std::size_t n = layer_.recv(h, pieces, now);
        for (std::size_t i = 0; i < n; ++i)
            rte_pktmbuf_free(pieces[i].m);
        if (n < std::size(pieces))
            return;
    }
}

void tcp_test_app::pump_source(net::tcp_handle h, conn_state &s, uint64_t now) noexcept {
    const uint64_t limit = cfg_.source_bytes;
    // send() refuses once the send queue holds snd_buf bytes: that bounds the loop.
    while (!s.closing) {
        if (s.npend == 0) {
            if (limit != 0 && s.generated >= limit)
                break;
            rte_mbuf *m = rte_pktmbuf_alloc(pool_);
            if (m == nullptr)
                return;  // retried on the next writable event
            uint32_t len = std::min<uint32_t>(rte_pktmbuf_tailroom(m), 2048);
            if (limit != 0)
                len = static_cast<uint32_t>(std::min<uint64_t>(len, limit - s.generated));
            auto *d =
                reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(len)));
            std::memcpy(d, pattern.b.data() + s.generated % pattern_period, len);
            s.generated += len;
            s.pend[s.npend++] = m;
        }
        if (!flush_pending(h, s, now))
            return;
    }
    if (limit != 0 && s.generated >= limit && s.npend == 0 && !s.closing) {
        s.closing = true;
        layer_.close(h, now);
    }
}

}  // namespace ferry::app
