// Tunnels: a protocol upgrade through the proxy (RFC 9110 §7.8; WebSocket,
// RFC 6455 §4.1). An Upgrade request goes to an origin on a connection of the
// client's own lcore (client.cpp: dispatch) with its Upgrade field and
// "Connection: upgrade"; a 101 that names the protocol is forwarded the same
// way (upstream.cpp: response_head) and from then on the client and its
// upstream connection carry bytes both ways, unparsed, until:
//   - each side closed its direction: a FIN is passed on once what came
//     before it is out (half-close, in either order), and the tunnel ends
//     when both directions ended;
//   - either side reset, or an mbuf could not be had: both are reset;
//   - neither side sent a byte for tunnel_idle_timeout_ms: both get a FIN.
// Bytes move by the body pump (body.cpp) with an until-close framer:
// zero-copy chains, backpressure by the other side's out queue. Counted in
// /ferry/http (tunnels_*, tunnel_bytes_*, timeouts_tunnel); the access-log
// record is written when the tunnel ends (status 101, bytes both ways).
#include "internal.h"

#include <rte_mbuf.h>

namespace ferry::proxy {

worker_proxy::upconn *worker_proxy::tunnel_peer(client &c) noexcept {
    if (c.up == none) return nullptr;
    upconn &u = upconns_[c.up];
    return u.used && u.gen == c.up_gen && u.state == upconn::st::tunnel ? &u : nullptr;
}

worker_proxy::client *worker_proxy::tunnel_peer(upconn &u) noexcept {
    if (u.client == none) return nullptr;
    client &c = clients_[u.client];
    return c.used && c.gen == u.client_gen && c.state == client::st::tunnel ? &c : nullptr;
}

bool worker_proxy::begin_tunnel(client &c, upconn &u, uint64_t now) noexcept {
    c.state = client::st::tunnel;
    u.state = upconn::st::tunnel;
    ++tunnels_;
    ctr_.tunnels_opened.inc();
    c.response_started = true;
    c.resp_framed = false;
    if (c.retry_head != nullptr) {
        rte_pktmbuf_free(c.retry_head);
        c.retry_head = nullptr;
    }
    c.retries_left = 0;
    // Every byte from here on is the new protocol's, to the close.
    c.framer.reset(http::body_kind::until_close, 0, limits_);
    u.framer.reset(http::body_kind::until_close, 0, limits_);
    if (c.al_open) al_rec(c).flags |= access_record::f_has_body;  // bytes up, in the record
    u.tkind = timeout_kind::none;
    u.total_at = 0;
    timers_.cancel(u.timer);
    c.tunnel_last = now;
    timers_.arm(c.timer, now + uint64_t(cfg_of(c).http.tunnel_idle_timeout_ms) * ms);
    // What came after the 101 head (the origin's first bytes), and what the
    // client sent after its request head: each toward the other side.
    bool ok = true;
    if (u.buf_len != 0) {
        ctr_.tunnel_bytes_down.inc(u.buf_len);
        ok = push(c, chain_of(u.buf, u.buf_len, c.port), now);
    }
    if (ok && c.buf_len != 0) {
        ctr_.tunnel_bytes_up.inc(c.buf_len);
        ok = push(u, chain_of(c.buf, c.buf_len, u.port), now);
    }
    drop_head(u);
    drop_head(c);
    if (!ok) {
        al_reason(c, term_reason::no_resources);
        tunnel_end(c, &u, false, now);
        return false;
    }
    return tunnel_turn(c, u, now);
}

// One direction: src's bytes toward dst until either has no more for now.
// closed: src's FIN came and was passed on (dst closes once its queue is
// out); failed: no mbuf (counted).
worker_proxy::tunnel_dir_end worker_proxy::tunnel_dir(endpoint &src, endpoint &dst, client &c,
                                                      bool up, uint64_t now) noexcept {
    if (dst.closing) return tunnel_dir_end::closed;  // this direction ended before
    body_sink sink;
    sink.dst = &dst;
    const uint64_t before = src.framer.payload_bytes();
    const pump_result r =
        pump_body(src, sink, 0, uint64_t(cfg_of(c).http.tunnel_idle_timeout_ms) * ms, 0, now);
    if (const uint64_t moved = src.framer.payload_bytes() - before; moved != 0) {
        (up ? ctr_.tunnel_bytes_up : ctr_.tunnel_bytes_down).inc(moved);
        c.tunnel_last = now;
    }
    switch (r.end) {
        case pump_end::blocked:
        case pump_end::done:  // an until-close body never ends but by eof
            return tunnel_dir_end::going;
        case pump_end::eof:
            dst.closing = true;  // half-close: the FIN follows what is queued
            flush(dst, now);
            return tunnel_dir_end::closed;
        default:
            return tunnel_dir_end::failed;
    }
}

bool worker_proxy::tunnel_turn(client &c, upconn &u, uint64_t now) noexcept {
    flush(c, now);
    flush(u, now);
    const tunnel_dir_end up = tunnel_dir(c, u, c, true, now);
    const tunnel_dir_end down =
        up == tunnel_dir_end::failed ? up : tunnel_dir(u, c, c, false, now);
    if (up == tunnel_dir_end::failed || down == tunnel_dir_end::failed) {
        al_reason(c, term_reason::no_resources);
        tunnel_end(c, &u, false, now);
        return false;
    }
    if (up == tunnel_dir_end::closed && down == tunnel_dir_end::closed) {
        tunnel_end(c, &u, true, now);  // both FINs are passed on (or queued)
        return false;
    }
    return true;
}

void worker_proxy::tunnel_close(client &c, upconn *u, bool clean, uint64_t now) noexcept {
    if (c.state != client::st::tunnel) return;
    --tunnels_;
    ctr_.tunnels_closed.inc();
    al_end(c, 101, !clean, now);
    c.state = client::st::closing;  // close_client / abort_client see no tunnel
    // close_upconn ends u's busy accounting for c (unaccount), and frees u
    // when its connection is gone already.
    if (u != nullptr) close_upconn(*u, !clean, now);
    c.up = none;
}

void worker_proxy::tunnel_end(client &c, upconn *u, bool clean, uint64_t now) noexcept {
    if (c.state != client::st::tunnel) return;
    tunnel_close(c, u, clean, now);
    if (!c.h.valid())
        free_client(c, now);  // its connection ended before the tunnel did
    else if (clean)
        close_client(c, now);
    else
        ports_[c.port].layer->abort(c.h, now);  // its closed event frees it
}

void worker_proxy::tunnel_timer(client &c, uint64_t now) noexcept {
    const uint64_t idle = uint64_t(cfg_of(c).http.tunnel_idle_timeout_ms) * ms;
    if (now - c.tunnel_last < idle) {
        timers_.arm(c.timer, c.tunnel_last + idle);
        return;
    }
    ctr_.timeouts_tunnel.inc();
    if (c.al_open) al_rec(c).timeout = timeout_kind::tunnel;
    tunnel_end(c, tunnel_peer(c), true, now);
}

}  // namespace ferry::proxy
