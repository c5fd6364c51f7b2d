// The client side: a request head is read and parsed, checked, routed, its
// server picked (balance.h) and the request dispatched: to a connection of
// this lcore's pool, to a shared connection of this lcore, or handed to the
// worker that owns the shared connection (shared_pool.cpp, handoff.cpp).
// Then its body (body.cpp), and the end of the exchange: a generated error,
// the response finished, the client closed, aborted or freed.
#include "internal.h"

#include <array>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ferry/http/serializer.h"
#include "ferry/http/status.h"
#include "ferry/net/mbuf_chain.h"

namespace ferry::proxy {

namespace {

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

void worker_proxy::drive_client(client &c, uint64_t now) noexcept {
    drive_client_turn(c, now);
    if (c.used) settle_head(c);  // nothing buffered: an idle client holds no head buffer
}

void worker_proxy::drive_client_turn(client &c, uint64_t now) noexcept {
    for (int guard = 0; c.used; ++guard) {
        if (guard == 64) {  // enough for one turn: the rest at the next poll
            redrive_later(c);
            return;
        }
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
            case client::st::tunnel:
                if (upconn *u = tunnel_peer(c); u != nullptr)
                    tunnel_turn(c, *u, now);
                else
                    tunnel_end(c, nullptr, false, now);
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
            if (r.st == http::parse_result::status::done) return start_request(c, r.consumed, now);
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
            } else if (c.buf_len != 0) {
                want_more(c, now);  // part of a head
            }
            return false;
        }
        if (c.buf_len == 0 && c.requests > 0) {
            // A new request began: its head must arrive in time.
            timers_.arm(c.timer, header_deadline(now));
            pending_head_begin(c, now);  // may reset another client, never c
        }
        if (c.t_req == 0) c.t_req = now;  // the request's first byte
        if (!attach_head(c)) {
            reject(c, 503, now);
            return false;
        }
        c.fill_buf();
    }
}

// A complete request head (the first `consumed` bytes of the buffer): the
// checks, the route and the server, then dispatch(). True when the client's
// state changed (go on), false when it was rejected.
bool worker_proxy::start_request(client &c, uint32_t consumed, uint64_t now) noexcept {
    pending_head_end(c);
    pin(c);  // the request runs under the configuration in force now (reconfigure())
    c.head_len = consumed;
    const http::request &req = c.req;
    c.head_method = req.m == http::method::head;
    c.http10 = req.version_minor == 0;
    c.keep_alive = req.keep_alive && !draining_ &&
                   (cfg_->http.max_requests_per_connection == 0 ||
                    c.requests + 1 < cfg_->http.max_requests_per_connection);
    ++c.requests;
    ctr_.requests.inc();
    c.al_status = 0;  // the per-route counts need it, access log or not
    c.route = c.ctr_route = route_none;
    if (alog_ != nullptr) al_begin(c, req, now);
    c.t_started = c.t_req != 0 ? c.t_req : now;
    c.t_req = 0;
    // Protocol upgrades (RFC 9110 §7.8): tunnelled (WebSocket) when the
    // origin answers 101. An HTTP/1.0 request's Upgrade MUST be ignored, and
    // h2c is not tunnelled (ferry speaks HTTP/1.1 to origins): both go on as
    // plain HTTP with Upgrade dropped (hop-by-hop), as a server may ignore it.
    // CONNECT has no place in a reverse proxy; an Upgrade request with a body
    // would make the tunnel's first bytes depend on where the body ends.
    // (h2c: HTTP/2 over cleartext, RFC 7540 §3.2.)
    const bool tunnel =
        req.upgrade && !c.http10 && !http::lists_token(req.headers, "upgrade", "h2c");
    if (req.m == http::method::connect || (tunnel && req.body != http::body_kind::none)) {
        ctr_.upgrades_refused.inc();
        c.upgrade = false;
        reject(c, 501, now);
        return false;
    }
    c.upgrade = tunnel;
    if (req.upgrade && !tunnel) ctr_.upgrades_ignored.inc();
    if (req.body == http::body_kind::content_length && cfg_->http.max_body_bytes != 0 &&
        req.content_length > cfg_->http.max_body_bytes) {
        ctr_.body_too_large.inc();
        reject(c, 413, now);
        return false;
    }
    const std::string_view host = host_without_port(req.host);
    int route = route_none;
    const int upstream =
        // A listener a reload removed: its connections' requests take the
        // routes for every listener and its last default_upstream.
        route_request(cfg_->routes, listener_by_slot_[c.listener],
                      listener_pos_[c.listener] >= 0 ? listener_pos_[c.listener] : -2, host,
                      req.origin_form.empty() ? req.target : req.origin_form, &route);
    c.route = c.ctr_route = static_cast<int16_t>(route);
    if (upstream < 0) {
        ctr_.generated_404.inc();
        if (!answer_keeps(c)) {
            reject(c, 404, now);
            return false;
        }
        answer_and_go_on(c, 404, now);
        return true;
    }
    c.upstream = upstream;
    if (c.al_open) al_rec(c).upstream = static_cast<int16_t>(upstream);
    // The server (hash keys come from this request).
    const auto &uc = cfg_of(c).upstreams[upstream];
    c.balance_key = uc.balance == config::balance_mode::consistent_hash
                        ? hash_key(uc.hash_key, c.peer_addr.fold(), req.target, host)
                        : 0;
    const int server = pick_server(upstream, c.balance_key, now);
    if (server < 0) {
        al_reason(c, term_reason::no_healthy_server);
        reject_generated(c, 503, now);
        return c.state == client::st::head && c.used;  // kept: go on with the next
    }
    if (c.al_open) al_server(c, upstream, server);
    return dispatch(c, consumed, upstream, server, now);
}

// c's request head serialized toward server `server` of `upstream`
// (RFC 9110 §7.6: hop-by-hop fields dropped, Via, X-Forwarded-*) as a chain
// of `port`'s pool; null when it was rejected (431: too large; 503: no mbuf).
rte_mbuf *worker_proxy::forward_head(client &c, int upstream, int server, uint16_t port,
                                     uint64_t now) noexcept {
    const config::server_endpoint srv = endpoint_of(upstream, server);
    std::array<char, net::ip_addr::text_max> addr;
    const std::size_t addr_len = c.peer_addr.format(addr);
    http::forward_info fi;
    // An IPv6 client as its plain RFC 5952 text, as nginx's
    // $proxy_add_x_forwarded_for writes it (brackets are Forwarded's, RFC 7239).
    const config::ferry_config &cf = cfg_of(c);
    fi.client_addr = cf.http.add_x_forwarded ? std::string_view(addr.data(), addr_len) : "";
    fi.keep_alive = true;
    fi.via_name = cf.http.via;
    fi.request_version_minor = c.http10 ? 0 : 1;
    std::array<char, ip_address::endpoint_text_max> hostbuf;
    fi.default_host = std::string_view(hostbuf.data(), srv.addr.format_endpoint(srv.port, hostbuf));
    fi.edit = request_edit(gen_of(c), c.route);
    fi.upgrade = c.upgrade;
    const size_t hl =
        http::serialize_request_head(c.req, fi, std::span(scratch_.get(), scratch_size));
    if (hl == 0) {
        // The head with ferry's fields does not fit the scratch buffer.
        note_rejected(http::parse_error::head_too_large);
        reject(c, 431, now);  // closes c.up
        return nullptr;
    }
    rte_mbuf *head = chain_of(scratch_.get(), static_cast<uint32_t>(hl), port);
    if (head == nullptr) reject_generated(c, 503, now);  // counted as no_buffer; closes c.up
    return head;
}

// Sends c's request to its server: on a connection of this lcore's pool
// (local), in the FIFO of this lcore's shared connection, or handed over to
// the worker that owns the shared connection (hand_over).
bool worker_proxy::dispatch(client &c, uint32_t consumed, int upstream, int server,
                            uint64_t now) noexcept {
    const http::request &req = c.req;
    const auto &uc = cfg_of(c).upstreams[upstream];
    // local pool: a connection of this lcore's own pool. shared: the next of
    // the server's N connections, owned by worker k % n (with own_idle_first
    // an idle one this worker owns, if any).
    upconn *u = nullptr;
    uint32_t slot = none;
    unsigned owner = lcore_index_;
    // A tunnel-to-be takes a connection of this lcore, shared pool or not:
    // a shared connection serves requests in turn, a tunnel for its life.
    if (uc.pool != config::pool_mode::shared || c.upgrade) {
        u = acquire(c, upstream, server, now, false);
        if (u == nullptr) {
            reject_generated(c, 503, now);
            return false;
        }
    } else {
        const uint32_t n = uc.shared_connections;
        const uint32_t base = shared_base_[upstream] + static_cast<uint32_t>(server) * n;
        if (uc.shared_pick == config::shared_pick_mode::own_idle_first)
            slot = own_idle_slot(base, n);
        if (slot != none) {
            ctr_.shared_own_idle.inc();
        } else {
            uint32_t &rr = shared_rr_[upstream][server];
            const uint32_t k = rr;
            rr = rr + 1 == n ? 0 : rr + 1;
            slot = base + k;
        }
        owner = slots_[slot].owner;
    }
    const uint16_t hport = u != nullptr ? u->port : port_for(endpoint_of(upstream, server).addr);
    rte_mbuf *head = forward_head(c, upstream, server, hport, now);
    if (head == nullptr) return false;
    // Without a body a request can be replayed (upconn_failed decides when:
    // any method while nothing reached the server, an idempotent one while
    // nothing of the response came back). A remote owner replays only
    // idempotent ones, and keeps its own clone.
    const bool retryable = req.body == http::body_kind::none && uc.retries > 0;
    c.retry_idempotent = idempotent(req.m);
    c.retries_left = 0;
    if (retryable && owner == lcore_index_) {
        c.retry_head = clone_of(head, hport);
        c.retries_left = c.retry_head != nullptr ? uc.retries : 0;
    }
    if (u != nullptr) {
        u->ri = http::request_info::of(req);
        u->t_sent = now;
        begin_total(*u, now);
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
    c.head_len = 0;
    c.hp.reset();
    c.response_started = false;
    timers_.cancel(c.timer);
    c.q_body = req.body != http::body_kind::none;
    c.state = client::st::wait;
    if (u != nullptr) return begin_body(c, *u, now);
    if (owner != lcore_index_) {
        const uint16_t flags = (c.keep_alive ? xf_keep_alive : 0) |
                               (req.m == http::method::head ? xf_head : 0) |
                               (c.http10 ? xf_http10 : 0) | xf_route(route_id(c.ctr_route)) |
                               (retryable && c.retry_idempotent ? xf_retry : 0);
        return hand_over(c, head, slot, owner, flags, hport, server, now);
    }
    // Our own shared connection: wait in its FIFO (run_kicks attaches; the
    // body is read from then on).
    c.q_head = head;
    c.q_ri = http::request_info::of(req);
    c.queued = true;
    if (!shared_submit(slot, job{static_cast<uint32_t>(&c - clients_.data()), c.gen, false},
                       false)) {
        c.queued = false;
        rte_pktmbuf_free(c.q_head);
        c.q_head = nullptr;
        ctr_.shared_queue_full.inc();
        reject_generated(c, 503, now);
        return false;
    }
    return true;
}

// Another worker owns the shared connection: the request goes to it as a
// req_head with the body bytes that came with the head (one data message);
// the rest of the body follows as req_body messages (client_body).
bool worker_proxy::hand_over(client &c, rte_mbuf *head, uint32_t slot, unsigned owner,
                             uint16_t flags, uint16_t hport, int server, uint64_t now) noexcept {
    if (!c.q_body) {
        flags |= xf_end;
    } else if (c.buf_len != 0) {
        const buf_body b = body_from_buf(c, hport, true);
        const auto &fr = b.fr;
        if (fr.error) {
            note_rejected(fr.err);
            rte_pktmbuf_free(head);
            reject(c, http::status_for(fr.err), now);
            return false;
        }
        if (b.no_buffer || (b.m != nullptr && !net::chain_append(head, b.m))) {
            rte_pktmbuf_free(b.m);
            rte_pktmbuf_free(head);
            reject_generated(c, 503, now);
            return false;
        }
        std::memmove(c.buf, c.buf + fr.consumed, c.buf_len - fr.consumed);
        c.buf_len -= fr.consumed;
        if (fr.done) flags |= xf_end;
    }
    if (!(flags & xf_end)) {
        c.state = client::st::body;
        timers_.arm(c.timer, now + cfg_of(c).http.client_body_timeout_ms * ms);
    }
    ++c.xgen;
    c.remote = true;
    c.xbroken = false;
    c.t_xsent = now;
    if (c.al_open) al_rec(c).flags |= access_record::f_crossed;
    c.xpeer = static_cast<uint16_t>(owner);
    c.xcredit = xcore_window - 1;
    c.server = server;
    busy_begin(c.upstream, server);
    handoff_begin(owner);
    ctr_.xcore_requests_out.inc();
    xsend(owner, op_req_head, xhandle(c), flags, slot, head);
    return true;
}

// Request body bytes that came with the head (copied: small), toward the
// upconn the request was just given; sets the client's state. False if the
// client was rejected.
bool worker_proxy::begin_body(client &c, upconn &u, uint64_t now) noexcept {
    if (!c.q_body) {
        c.state = client::st::wait;
        arm_sending(u, now);
        return true;
    }
    c.state = client::st::body;
    timers_.arm(c.timer, now + cfg_of(c).http.client_body_timeout_ms * ms);
    if (c.buf_len != 0) {
        const buf_body b = body_from_buf(c, u.port, true);
        const auto &fr = b.fr;
        if (fr.error) {
            note_rejected(fr.err);
            reject(c, http::status_for(fr.err), now);  // closes u
            return false;
        }
        // Bytes that cannot be forwarded end the exchange: never skip them.
        if (b.no_buffer || (b.m != nullptr && !push(u, b.m, now))) {
            reject_generated(c, 503, now);  // closes u
            return false;
        }
        std::memmove(c.buf, c.buf + fr.consumed, c.buf_len - fr.consumed);
        c.buf_len -= fr.consumed;
        if (fr.done) c.state = client::st::wait;
    }
    arm_sending(u, now);
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
        sink.end_flag = xf_end;
    } else {
        if (c.up == none) return;
        u = &upconns_[c.up];
        if (!u->used || u->gen != c.up_gen) return;
        sink.dst = u;
    }
    const uint64_t sent0 = c.framer.wire_bytes();
    const pump_result r = pump_body(c, sink, cfg_of(c).http.max_body_bytes,
                                    uint64_t(cfg_of(c).http.client_body_timeout_ms) * ms, 0, now);
    switch (r.end) {
        case pump_end::blocked:
            // Request bytes went to the upstream: its send inactivity restarts.
            if (u != nullptr && c.framer.wire_bytes() != sent0) arm_sending(*u, now);
            return;
        case pump_end::done:
            // The end rides on the last body bytes (xf_end) when they left
            // here; alone, it could reach the owner after the origin had
            // answered those bytes, and the owner would take the request for
            // unfinished and end the client's connection after the response
            // (test_http's shared phase, 1 run in ~8).
            if (c.remote && !sink.end_sent) {
                ctr_.xcore_lone_req_end.inc();
                xsend(c.xpeer, op_req_end, sink.handle, 0, 0, nullptr);
            }
            c.state = client::st::wait;
            timers_.cancel(c.timer);
            if (u != nullptr) arm_sending(*u, now);  // now the response timeout
            return;
        case pump_end::eof:
            // The client went away mid-body: the request cannot complete.
            ctr_.client_gone.inc();
            al_reason(c, term_reason::client_aborted);
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
            al_reason(c, term_reason::no_resources);
            abort_client(c, now);  // aborts the remote side
            return;
    }
}

// ---- clients waiting for a head (slowloris)

void worker_proxy::pending_head_begin(client &c, uint64_t now) noexcept {
    if (c.pending_head) return;
    if (ph_n_ >= ph_cap_ && ph_head_ != none) {
        // The one waiting longest goes: a legitimate client sends its head
        // at once, an attacker trickles it (reset: its slot frees now).
        client &old = clients_[ph_head_];
        ctr_.clients_evicted.inc();
        if (alog_ != nullptr && !old.al_open) al_unparsed(old, now);
        al_reason(old, term_reason::evicted);
        abort_client(old, now);  // leaves the list
    }
    const uint32_t idx = static_cast<uint32_t>(&c - clients_.data());
    c.pending_head = true;
    c.ph_prev = ph_tail_;
    c.ph_next = none;
    (ph_tail_ != none ? clients_[ph_tail_].ph_next : ph_head_) = idx;
    ph_tail_ = idx;
    ++ph_n_;
}

void worker_proxy::pending_head_end(client &c) noexcept {
    if (!c.pending_head) return;
    (c.ph_prev != none ? clients_[c.ph_prev].ph_next : ph_head_) = c.ph_next;
    (c.ph_next != none ? clients_[c.ph_next].ph_prev : ph_tail_) = c.ph_prev;
    c.ph_prev = c.ph_next = none;
    c.pending_head = false;
    --ph_n_;
}

// A client timeout (header, body): 408, and the access record says which.
void worker_proxy::reject_timeout(client &c, timeout_kind k, uint64_t now) noexcept {
    if (alog_ != nullptr && !c.al_open && c.state != client::st::closing) al_unparsed(c, now);
    if (c.al_open) al_rec(c).timeout = k;
    reject(c, 408, now);
}

void worker_proxy::reject(client &c, uint16_t status, uint64_t now) noexcept {
    // A head that did not parse (or never came: 408) still gets its line; a
    // client already closing was answered before.
    if (alog_ != nullptr && !c.al_open && c.state != client::st::closing) al_unparsed(c, now);
    send_answer(c, status, false, now);
    close_client(c, now);
}

// A generated answer after whatever c's request holds is let go (its queued
// head, its upstream connection, a remote side): counted, pushed with
// Connection: keep-alive (no body to a HEAD request) or close, logged. False
// when no mbuf could hold it (counted as no_buffer).
bool worker_proxy::send_answer(client &c, uint16_t status, bool keep, uint64_t now) noexcept {
    pending_head_end(c);
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
    const size_t n = http::serialize_error(status, !keep, std::span(scratch_.get(), scratch_size),
                                           keep && c.head_method);
    const bool sent = push(c, chain_of(scratch_.get(), static_cast<uint32_t>(n), c.port), now);
    if (c.al_open) {
        // A generated answer whose cause was not said where it was found.
        switch (status) {
            case 404:
                al_reason(c, term_reason::no_route);
                break;
            case 408:
                al_reason(c, term_reason::client_timeout);
                break;
            case 503:
                al_reason(c, term_reason::no_resources);
                break;
            case 502:
            case 504:
                break;  // upstream failures say theirs (upconn_failed)
            default:
                al_reason(c, term_reason::bad_request);
                break;
        }
    }
    c.al_status = status;
    al_end(c, status, false, now);  // access log or not: the histogram and the per-route counts
    return sent;
}

bool worker_proxy::answer_keeps(const client &c) const noexcept {
    if (!c.keep_alive || draining_ || c.response_started || c.xbroken) return false;
    switch (c.state) {
        case client::st::head:  // parsed, not dispatched: only without a body
            return c.head_len != 0 && c.req.body == http::body_kind::none;
        case client::st::wait:  // all of the request read (unless queued with its body unread)
            return !(c.queued && c.q_body);
        default:
            return false;
    }
}

void worker_proxy::answer_and_go_on(client &c, uint16_t status, uint64_t now) noexcept {
    ctr_.errors_kept_alive.inc();
    const bool sent = send_answer(c, status, true, now);
    if (c.head_len != 0) {  // the head was not consumed (dispatch never ran)
        std::memmove(c.buf, c.buf + c.head_len, c.buf_len - c.head_len);
        c.buf_len -= c.head_len;
        c.head_len = 0;
    }
    c.response_started = false;
    if (c.retry_head != nullptr) {
        rte_pktmbuf_free(c.retry_head);
        c.retry_head = nullptr;
    }
    c.retries_left = 0;
    if (!sent) {  // no mbuf for the answer (counted as no_buffer): the connection ends
        close_client(c, now);
        return;
    }
    c.state = client::st::head;
    c.hp.reset();
    timers_.arm(c.timer, now + cfg_->http.client_idle_timeout_ms * ms);
    // A pipelined request may be read already; the caller may be inside
    // drive_client for c: go on from poll(), never recursively.
    if (c.buf_len != 0 || c.in_n != 0) redrive_later(c);
}

void worker_proxy::redrive_later(client &c) noexcept {
    if (c.redrive) return;
    c.redrive = true;
    redrive_.emplace_back(static_cast<uint32_t>(&c - clients_.data()), c.gen);
}

void worker_proxy::run_redrives(uint64_t now) noexcept {
    // Swapped out: a client driven here may list itself again (next poll).
    std::vector<std::pair<uint32_t, uint32_t>> list;
    list.swap(redrive_);
    for (const auto &[idx, gen] : list) {
        client &c = clients_[idx];
        if (!c.used || c.gen != gen || !c.redrive) continue;
        c.redrive = false;
        drive_client(c, now);
    }
    list.clear();
    if (redrive_.empty()) redrive_.swap(list);  // keep the reserved capacity
}

void worker_proxy::close_client(client &c, uint64_t now) noexcept {
    if (c.state == client::st::tunnel) {
        tunnel_end(c, tunnel_peer(c), true, now);  // closes c
        return;
    }
    pending_head_end(c);
    abort_remote(c);
    c.state = client::st::closing;
    c.closing = true;
    timers_.arm(c.timer, now + cfg_->http.client_idle_timeout_ms * ms);  // bound the lingering
    drop_input(c);
    flush(c, now);
}

void worker_proxy::abort_client(client &c, uint64_t now) noexcept {
    if (c.state == client::st::tunnel) {
        tunnel_end(c, tunnel_peer(c), false, now);  // resets c
        return;
    }
    pending_head_end(c);
    abort_remote(c);
    al_end(c, 444, true, now);  // 444: ferry reset it before any response head
    ctr_.client_aborted.inc();
    if (c.state != client::st::closing && c.response_started && c.resp_framed && c.h.valid()) {
        // Cut mid-response, and its framing shows the cut (a Content-Length
        // not reached, no last chunk): what is queued goes out, then a FIN,
        // which TCP delivers however many segments are lost. A reset is sent
        // once: lost, it leaves the client waiting for the rest for ever.
        ctr_.client_cut_closed.inc();
        c.keep_alive = false;
        close_client(c, now);
        return;
    }
    if (c.h.valid()) ports_[c.port].layer->abort(c.h, now);
    // The closed event frees it.
    c.state = client::st::closing;
}

void worker_proxy::free_client(client &c, uint64_t now) noexcept {
    if (c.state == client::st::tunnel) tunnel_close(c, tunnel_peer(c), false, now);
    // Still open: the client closed or reset before its response was complete
    // (499, as nginx logs it, when no response head went out).
    if (c.al_open) al_reason(c, term_reason::client_aborted);
    al_end(c, 499, true, now);  // a request in progress is counted, access log or not
    pending_head_end(c);
    timers_.cancel(c.timer);
    abort_remote(c);  // B aborts its upstream side
    drop_input(c);
    drop_head(c);
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
    unpin(c);
    c.used = false;
    listener_ctr(c.listener, l_active).dec();
    ctr_.client_closed.inc();
    clients_.give(clients_.index_of(c));
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
    timers_.arm(c.timer, now + cfg_->http.client_idle_timeout_ms * ms);
    drive_client(c, now);
}

}  // namespace ferry::proxy
