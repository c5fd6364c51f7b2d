// The upstream side: picking a server (balance.h over a snapshot), getting a
// connection from this lcore's pool (idle keep-alive first, else a new one),
// reading the response head and handing it on, the response body, failures
// (retry, 502/504, counted for passive health: health.cpp), the idle pool,
// closing.
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ferry/http/serializer.h"
#include "ferry/net/mbuf_chain.h"

namespace ferry::proxy {

int worker_proxy::pick_server(int upstream, uint64_t key, uint64_t now, int exclude) noexcept {
    const auto &uc = cfg_->upstreams[upstream];
    upstream_state &us = *ups_[upstream];
    if (us.view.empty()) return -1;  // retired by a reload: a retry finds no server
    bool any_up = false;
    bool any_ready = false;
    // The view is by position in the configuration; health, load and the
    // result (and `exclude`) by slot.
    for (size_t i = 0; i < us.view.size(); ++i) {
        const int s = uc.servers[i].slot;
        const server_health &h = shared_.health[upstream][s];
        const uint64_t d = h.down_until.load(std::memory_order_relaxed);
        const bool ready =
            h.admin.load(std::memory_order_relaxed) == server_admin::ready && s != exclude;
        const uint32_t w = h.weight.load(std::memory_order_relaxed);
        us.view[i].weight = w != 0 ? w : uc.servers[i].weight;
        us.view[i].up = ready && (d == 0 || d <= now);
        us.view[i].busy = us.busy[s];
        any_up |= us.view[i].up;
        any_ready |= ready;
    }
    // Every server down: try them all the same rather than refuse (a server
    // back up serves at once, and its success marks it up). The one a retry
    // leaves out stays out, and so do those the operator drained.
    if (!any_up && any_ready && uc.when_all_down == config::all_down_mode::try_anyway) {
        for (size_t i = 0; i < us.view.size(); ++i) {
            const int s = uc.servers[i].slot;
            us.view[i].up = s != exclude &&
                            shared_.health[upstream][s].admin.load(std::memory_order_relaxed) ==
                                server_admin::ready;
        }
        if (exclude < 0 || us.view.size() > 1) ctr_.all_down_tried.inc();
    }
    int i = -1;
    switch (uc.balance) {
        case config::balance_mode::round_robin:
            i = pick_round_robin(us.view, us.rr_current);
            break;
        case config::balance_mode::least_conn:
            i = pick_least_conn(us.view, ctr_.requests.get() % us.view.size());
            break;
        case config::balance_mode::consistent_hash:
            i = us.ring.pick(key, us.view);
            break;
    }
    return i < 0 ? -1 : uc.servers[static_cast<size_t>(i)].slot;
}

uint16_t worker_proxy::port_for(const ip_address &a) const noexcept {
    if (a.is_v6()) {
        // The configuration checked that some port's prefix holds it, or
        // some port has a gateway6 or router discovery, or that it is link-local (then the first
        // port with an IPv6 address).
        for (uint16_t i = 0; i < ports_.size(); ++i)
            if (ports_[i].addr6 &&
                ipv6_in_prefix(a.bytes(), *ports_[i].addr6, ports_[i].prefix6_len))
                return i;
        for (uint16_t i = 0; i < ports_.size(); ++i)
            if (ports_[i].routed6 && !ipv6_is_link_local(a.bytes())) return i;
        for (uint16_t i = 0; i < ports_.size(); ++i)
            if (ports_[i].addr6) return i;
        return 0;
    }
    const uint32_t addr = a.v4_value();
    for (uint16_t i = 0; i < ports_.size(); ++i) {
        const uint32_t mask =
            ports_[i].prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - ports_[i].prefix_len);
        if ((addr & mask) == (ports_[i].addr & mask)) return i;
    }
    for (uint16_t i = 0; i < ports_.size(); ++i)
        if (ports_[i].has_gateway) return i;
    return 0;
}

// A new connection (SYN sent) to the server in slot `server` of `upstream` in
// a free upconn slot, every field of the slot reset (not counted: the callers
// count it as theirs); null when no upconn slot, TCP slot or local port is free.
worker_proxy::upconn *worker_proxy::open_upconn(int upstream, int server, uint64_t now) noexcept {
    const config::server_endpoint srv = endpoint_of(upstream, server);
    const uint16_t port = port_for(srv.addr);
    net::tcp_handle h;
    if (upconns_.available() == 0 ||
        ports_[port].layer->connect(srv.addr, srv.port, now, h) !=
            net::tcp_layer::connect_result::ok)
        return nullptr;
    const uint32_t idx = upconns_.take([this](uint32_t, upconn &nu) {
        nu.px = this;
        nu.is_up = true;
        nu.cap = limits_.max_head_bytes;
        nu.timer.set_callback(upconn_timer_cb, &nu);
    });
    upconn &u = upconns_[idx];
    u.used = true;
    ++u.gen;
    u.port = port;
    u.h = h;
    u.in_head = u.in_n = u.out_n = 0;
    u.cred_mask = 0;
    u.eof = u.closing = u.fin_sent = false;
    drop_head(u);
    u.upstream = upstream;
    u.server = server;
    u.reused = false;
    u.health = false;
    u.shared = false;
    u.slot = u.rq = none;
    u.client = none;
    u.state = upconn::st::connecting;
    u.t_conn = 0;
    u.tkind = timeout_kind::none;
    u.total_at = 0;
    u.ri = http::request_info{};
    u.idle_next = u.idle_prev = none;
    slot_owner_[port][h.index] = idx | kind_up;
    return &u;
}

worker_proxy::upconn *worker_proxy::acquire(client &c, int upstream, int server, uint64_t now,
                                            bool fresh_only) noexcept {
    upstream_state &us = *ups_[upstream];
    upconn *u = nullptr;
    if (!fresh_only) {
        // Most recently used idle connection first (LIFO: warm, least likely
        // to have been closed by the origin's keep-alive timeout).
        while (us.idle_head[server] != none) {
            upconn &cand = upconns_[us.idle_head[server]];
            unaccount(cand);  // off the idle list
            if (cand.eof || !cand.h.valid()) {
                close_upconn(cand, false, now);  // the origin closed it: our FIN answers
                continue;
            }
            u = &cand;
            u->reused = true;
            u->state = upconn::st::head;
            ctr_.upstream_reused.inc();
            u->total_at = 0;
            break;
        }
    }
    const bool fresh = u == nullptr;
    if (fresh) {
        u = open_upconn(upstream, server, now);
        if (u == nullptr) {
            ctr_.upstream_no_connection.inc();
            return nullptr;
        }
        ctr_.upstream_connects.inc();
        srv_ctr_[upstream][server].connections.inc();
    }
    // The client first: its route may set the timeouts (timeout_ms).
    u->client = static_cast<uint32_t>(&c - clients_.data());
    u->client_gen = c.gen;
    // Connecting, or (reused) the request is being sent.
    arm_upconn(*u, fresh ? timeout_kind::connect : timeout_kind::write, now);
    drop_head(*u);
    c.up = static_cast<uint32_t>(u - upconns_.data());
    c.up_gen = u->gen;
    busy_begin(upstream, server);
    srv_ctr_[upstream][server].active.inc();
    return u;
}

void worker_proxy::drive_upconn(upconn &u, uint64_t now) noexcept {
    drive_upconn_turn(u, now);
    if (u.used) settle_head(u);  // nothing buffered: an idle connection holds no head buffer
}

void worker_proxy::drive_upconn_turn(upconn &u, uint64_t now) noexcept {
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
        } else if (u.state == upconn::st::tunnel) {
            if (client *c = tunnel_peer(u); c != nullptr)
                tunnel_turn(*c, u, now);
            else
                close_upconn(u, true, now);
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
                upconn_failed(u, 502, term_reason::upstream_bad_response, true, now);
                return false;
            }
            if (r.st == http::parse_result::status::done) {
                const head_next next = response_head(u, cp, rp, r.consumed, now);
                if (next == head_next::again) continue;  // a 1xx went: the final head follows
                return next == head_next::body || next == head_next::tunnel;
            }
            if (u.buf_len >= u.cap) {
                ctr_.upstream_bad_response.inc();
                upconn_failed(u, 502, term_reason::upstream_bad_response, true, now);
                return false;
            }
        }
        if (u.in_n == 0 && pull(u, now) == 0) {
            if (u.eof) {
                // Closed before (the rest of) a response head.
                upconn_failed(u, 502, term_reason::upstream_closed, true, now);
            } else if (u.buf_len != 0) {
                want_more(u, now);  // part of a head
            }
            return false;
        }
        if (!attach_head(u)) {
            upconn_failed(u, 502, term_reason::no_resources, false, now);
            return false;
        }
        u.fill_buf();
    }
}

// A complete response head (the first `consumed` bytes of u's buffer) for
// the local client cp or the remote request rp (or a health check): checked,
// counted, serialized toward the client and sent with the body bytes that
// came with it. again: it was a 1xx (the final head follows); body: the body
// follows (upconn_body); stop: the exchange ended or failed.
worker_proxy::head_next worker_proxy::response_head(upconn &u, client *cp, rreq *rp,
                                                    uint32_t consumed, uint64_t now) noexcept {
    const http::response &resp = u.resp;
    if (u.health) {
        const bool ok = resp.status >= 200 && resp.status < 400;
        ups_[u.upstream]->hc_conn[u.server] = none;
        if (ok) {
            health_ok(u.upstream, u.server, now);
        } else {
            ctr_.health_check_failed.inc();
            server_event ev;
            ev.status = resp.status;
            ev.check = true;
            health_failed(u.upstream, u.server, now, ev);
        }
        // The check is over: a FIN, not a reset (the probe asked for
        // Connection: close, and a reset would count as upstream_aborted).
        // What else the origin sends is read and dropped while closing.
        close_upconn(u, false, now);
        return head_next::stop;
    }
    // 101 only switches a request that asked (RFC 9110 §15.2.2), with the
    // protocol named in Upgrade; anything else is out of step.
    const bool switching = resp.status == 101;
    if (switching && (cp == nullptr || !cp->upgrade || !resp.upgrade)) {
        ctr_.upstream_bad_response.inc();
        upconn_failed(u, 502, term_reason::upstream_bad_response, false, now);
        return head_next::stop;
    }
    if (cp != nullptr && cp->upgrade && resp.status >= 200) {
        ctr_.upgrades_declined.inc();  // an ordinary response: plain HTTP goes on
        cp->upgrade = false;
    }
    // A final response, or the 101 that ends the exchange as HTTP: an answer
    // (latency, health), the route's response rules, the access log's status.
    const bool answer = resp.status >= 200 || switching;
    auto &sc = srv_ctr_[u.upstream][u.server];
    if (answer) {
        sc.latency_ns.inc(now - u.t_sent);
        sc.responses.inc();
        sc.latency.observe(now - u.t_sent);
        // An answer: the server is alive (it may have been tried while marked
        // down, when_all_down = "try").
        health_ok(u.upstream, u.server, now);
    }
    const bool until_close = resp.body == http::body_kind::until_close;
    // An HTTP/1.0 client cannot receive chunked coding (RFC 9112 §6.1; ferry
    // asked in HTTP/1.0, but an origin may chunk anyway): the payload alone,
    // delimited by the close.
    u.dechunk = resp.body == http::body_kind::chunked &&
                (cp != nullptr ? cp->http10 : rp->http10);
    bool &keep_alive = cp != nullptr ? cp->keep_alive : rp->keep_alive;
    if (until_close || u.dechunk) keep_alive = false;
    http::forward_info fi;
    fi.keep_alive = keep_alive && resp.status >= 200;
    // A client of this lcore: its request's configuration; a hand-off from
    // another's: the one in force here (rreq's route is an index into it).
    const config_gen &g = cp != nullptr ? gen_of(*cp) : *cur_;
    fi.via_name = g.cfg->http.via;
    fi.dechunk = u.dechunk;
    fi.upgrade = switching;
    // The route's response rules, on answers only (not on an interim 1xx).
    if (answer)
        fi.edit = response_edit(g, cp != nullptr ? cp->route : route_of_id(g, rp->route));
    const size_t hl =
        http::serialize_response_head(resp, fi, std::span(scratch_.get(), scratch_size));
    rte_mbuf *head = hl != 0 ? chain_of(scratch_.get(), static_cast<uint32_t>(hl),
                                        cp != nullptr ? cp->port : u.port)
                             : nullptr;
    if (head == nullptr) {
        // Too large to forward (502), or no mbuf (503, no_buffer).
        if (hl == 0) ctr_.upstream_bad_response.inc();
        upconn_failed(u, hl == 0 ? 502 : 503,
                      hl == 0 ? term_reason::upstream_bad_response : term_reason::no_resources,
                      false, now);
        return head_next::stop;
    }
    // Remote: the head leaves with the body bytes that came with it (one
    // resp_data); a 1xx leaves at once. Its arg tells A the status and the
    // connect time, for the access log (proxy.h).
    rte_mbuf *rhead = nullptr;
    uint32_t head_arg = resp.status;
    if (cp != nullptr) {
        client &c = *cp;
        if (c.al_open) al_head(c, u, now);
        if (answer) c.al_status = resp.status;  // al_end's, access log or not
        if (!push(c, head, now)) {  // the client's out queue is full
            ctr_.no_buffer.inc();
            upconn_failed(u, 503, term_reason::no_resources, false, now);
            return head_next::stop;
        }
        c.response_started = true;
        c.resp_framed = framed_toward_client(u);
        if (c.retry_head != nullptr) {
            rte_pktmbuf_free(c.retry_head);
            c.retry_head = nullptr;
        }
    } else {
        uint32_t uct_ms = 0xffff;  // unknown
        if (u.reused)
            uct_ms = 0;
        else if (u.t_conn != 0)
            uct_ms = static_cast<uint32_t>(
                std::min<uint64_t>((u.t_conn - std::min(u.t_conn, u.t_sent)) / ms, 0xfffe));
        head_arg |= uct_ms << 16;
        if (rp->retry_head != nullptr) {
            rte_pktmbuf_free(rp->retry_head);
            rp->retry_head = nullptr;
        }
        rhead = head;
    }
    count_response(resp.status);
    std::memmove(u.buf, u.buf + consumed, u.buf_len - consumed);
    u.buf_len -= consumed;
    u.hp.reset();
    if (switching) return begin_tunnel(*cp, u, now) ? head_next::tunnel : head_next::stop;
    if (resp.status < 200) {
        // 1xx: a complete message; the final response follows.
        if (cp != nullptr) {
            cp->response_started = false;
        } else {
            --rp->credit;
            xsend(rp->from, op_resp_data, rp->handle, xf_interim, head_arg, rhead);
        }
        return head_next::again;
    }
    u.resp_keep_alive = resp.keep_alive && !until_close;
    u.framer.reset(resp.body, resp.content_length, limits_);
    u.state = upconn::st::body;
    arm_upconn(u, timeout_kind::read, now);
    return head_body(u, cp, rp, rhead, head_arg, now) ? head_next::body : head_next::stop;
}

// The body bytes that came with a response head (copied: small) go after
// it: pushed to the local client, or in the remote head's message, which
// leaves here. True when the body goes on (upconn_body), false when the
// response ended with them or failed.
bool worker_proxy::head_body(upconn &u, client *cp, rreq *rp, rte_mbuf *rhead, uint32_t head_arg,
                             uint64_t now) noexcept {
    auto send_rhead = [&] {
        if (rhead == nullptr) return;
        --rp->credit;
        rp->response_started = true;
        xsend(rp->from, op_resp_data, rp->handle, framed_toward_client(u) ? xf_framed : 0, head_arg,
              rhead);
        rhead = nullptr;
    };
    auto finish = [&](bool reusable) {
        if (cp != nullptr)
            finish_response(*cp, &u, reusable, now);
        else
            finish_rreq(u, *rp, reusable, now);
    };
    if (u.buf_len != 0) {
        const buf_body b = body_from_buf(u, cp != nullptr ? cp->port : u.port, !u.dechunk);
        const auto &fr = b.fr;
        if (fr.error) {
            rte_pktmbuf_free(rhead);
            ctr_.upstream_bad_response.inc();
            upconn_failed(u, 502, term_reason::upstream_bad_response, true, now);
            return false;
        }
        if (b.m != nullptr || b.no_buffer) {
            rte_mbuf *body = b.m;
            if (cp != nullptr) {
                if (body == nullptr || !push(*cp, body, now)) {  // the head went: abort the client
                    if (body != nullptr) ctr_.no_buffer.inc();
                    upconn_failed(u, 502, term_reason::no_resources, false, now);
                    return false;
                }
            } else if (body == nullptr || !net::chain_append(rhead, body)) {
                rte_pktmbuf_free(body);
                rte_pktmbuf_free(rhead);
                upconn_failed(u, 503, term_reason::no_resources, false, now);
                return false;
            }
        }
        const bool extra = fr.consumed < u.buf_len;
        u.buf_len = 0;
        if (rp != nullptr) send_rhead();
        if (fr.done) {
            finish(u.resp_keep_alive && !extra && u.in_n == 0);
            return false;
        }
        if (extra) {
            ctr_.upstream_bad_response.inc();
            upconn_failed(u, 502, term_reason::upstream_bad_response, true, now);
            return false;
        }
    }
    if (rp != nullptr) send_rhead();
    if (u.framer.done()) {  // no body
        finish(u.resp_keep_alive && u.in_n == 0);
        return false;
    }
    return true;
}

void worker_proxy::count_response(uint16_t status) noexcept {
    switch (status / 100) {
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
    sink.framing = !u.dechunk;
    const pump_result r =
        pump_body(u, sink, 0, uint64_t(timeout_ms(u, timeout_kind::read)) * ms, u.total_at, now);
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
            // Closed mid-body: the response is truncated.
            ctr_.upstream_bad_response.inc();
            upconn_failed(u, 502, term_reason::upstream_closed, true, now);
            return;
        case pump_end::bad_framing:
        case pump_end::too_large:
            ctr_.upstream_bad_response.inc();
            upconn_failed(u, 502, term_reason::upstream_bad_response, true, now);
            return;
        case pump_end::no_buffer:
            upconn_failed(u, 502, term_reason::no_resources, false, now);
            return;
    }
}

// Whether a failure lets a request be replayed: a connection error, or a
// connect timeout; not a write, response, read or total timeout.
bool worker_proxy::replayable(timeout_kind tk) noexcept {
    return tk == timeout_kind::none || tk == timeout_kind::connect;
}

// ---- upstream timers

uint32_t worker_proxy::timeout_ms(upconn &u, timeout_kind k) noexcept {
    // A request's timeouts are those of the configuration it started under
    // (a hand-off from another lcore: the one in force here).
    const config::ferry_config *cf = cfg_;
    int route = route_none;  // a health check's, or nobody's: the upstream's
    if (!u.health) {
        const client *c = u.client != none ? &clients_[u.client] : nullptr;
        if (c != nullptr && c->used && c->gen == u.client_gen) {
            route = c->route;
            cf = &cfg_of(*c);
        } else if (const rreq *r = rreq_of(u); r != nullptr) {
            route = route_of_id(*cur_, r->route);  // the route with its id here now
        }
    }
    const auto &uc = cf->upstreams[u.upstream];
    // (A hand-off's route is the sender's index: a reload the two lcores
    // have not both taken yet may have moved it past this one's routes.)
    const config::route_config *rc =
        route >= 0 && static_cast<size_t>(route) < cf->routes.size() ? &cf->routes[route] : nullptr;
    auto pick = [&](uint32_t config::route_config::*own, uint32_t ups) {
        return rc != nullptr && rc->*own != config::route_config::inherit_timeout ? rc->*own : ups;
    };
    switch (k) {
        case timeout_kind::connect:
            return pick(&config::route_config::connect_timeout_ms, uc.connect_timeout_ms);
        case timeout_kind::write:
            return pick(&config::route_config::write_timeout_ms, uc.write_timeout_ms);
        case timeout_kind::response:
            return pick(&config::route_config::response_timeout_ms, uc.response_timeout_ms);
        case timeout_kind::total:
            return pick(&config::route_config::total_timeout_ms, uc.total_timeout_ms);
        default:
            return pick(&config::route_config::read_timeout_ms, uc.read_timeout_ms);
    }
}

void worker_proxy::arm_upconn(upconn &u, timeout_kind k, uint64_t now) noexcept {
    u.tkind = k;
    timers_.arm(u.timer, capped(now + uint64_t(timeout_ms(u, k)) * ms, u.total_at));
}

bool worker_proxy::request_sent(upconn &u) noexcept {
    if (u.client != none) {
        const client &c = clients_[u.client];
        if (c.used && c.gen == u.client_gen) return c.state != client::st::body;
    }
    if (const rreq *r = rreq_of(u); r != nullptr) return r->end && r->qn == 0;
    return true;
}

void worker_proxy::arm_sending(upconn &u, uint64_t now) noexcept {
    if (u.state != upconn::st::head || u.health) return;
    arm_upconn(u, request_sent(u) ? timeout_kind::response : timeout_kind::write, now);
}

void worker_proxy::begin_total(upconn &u, uint64_t now) noexcept {
    const uint32_t t = timeout_ms(u, timeout_kind::total);
    u.total_at = t != 0 ? now + uint64_t(t) * ms : 0;
    if (u.state == upconn::st::head) arm_sending(u, now);
    // connecting: the connect timer stays, capped by the total at connect.
}

void worker_proxy::upconn_failed(upconn &u, uint16_t status, term_reason why, bool count_health,
                                 uint64_t now, timeout_kind tk) noexcept {
    server_event ev;
    ev.why = why;
    ev.timeout = tk;
    if (u.health) {
        ctr_.health_check_failed.inc();
        ups_[u.upstream]->hc_conn[u.server] = none;
        ev.check = true;
        health_failed(u.upstream, u.server, now, ev);
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
    // Nothing of the request reached the server: the connection never came up.
    const bool sent_nothing = !reused && u.t_conn == 0;
    const uint32_t slot = u.slot;
    const http::request_info ri = u.ri;
    if (cp != nullptr && cp->al_open && (reused || u.t_conn != 0))
        al_rec(*cp).uct_ns = reused ? 0 : u.t_conn - std::min(u.t_conn, u.t_sent);
    if (cp != nullptr && cp->al_open) {
        access_record &rec = al_rec(*cp);
        rec.timeout = tk;
        if (rec.reason == term_reason::none) rec.reason = why;
    }
    if (count_health && !reused) {
        srv_ctr_[upstream][server].failures.inc();
        health_failed(upstream, server, now, ev);
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
        if ((reused || sent_nothing) && replayable(tk) && r.retry_head != nullptr &&
            r.retries_left > 0 && r.end && !r.response_started && slot != none && r.qn == 0) {
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
        xsend(r.from, op_resp_error, r.handle, 0,
              status | uint32_t(tk) << 16 | uint32_t(why) << 24, nullptr);
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
    // A request without a body is replayed (up to `retries` times) when its
    // connection failed before any response byte came back: any method while
    // nothing reached the server (the connection never came up), an
    // idempotent one (RFC 9110 §9.2.2) after it was sent too; never after a
    // response, write or total timeout (the server may be busy with it), and
    // never once the response began. Local pools pick another server when
    // one is up (the failed one is left out), shared pools queue it on the
    // same slot's next connection.
    if (replayable(tk) && (sent_nothing || c.retry_idempotent) && c.retry_head != nullptr &&
        c.retries_left > 0 && c.state == client::st::wait) {
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
            if (shared_submit(slot, job{static_cast<uint32_t>(cp - clients_.data()), c.gen, false},
                              true))
                return;
            c.queued = false;
            rte_pktmbuf_free(c.q_head);
            c.q_head = nullptr;
        } else if (const int next = pick_server(upstream, c.balance_key, now, server),
                   target = next >= 0 ? next : server;
                   upconn *fresh = acquire(c, upstream, target, now, next < 0)) {
            --c.retries_left;
            ctr_.requests_retried.inc();
            if (c.al_open) al_server(c, upstream, target);
            rte_mbuf *again = c.retries_left > 0 ? clone_of(c.retry_head, fresh->port) : nullptr;
            fresh->ri = ri;
            fresh->t_sent = now;
            begin_total(*fresh, now);
            const bool sent = push(*fresh, c.retry_head, now);
            c.retry_head = again;
            if (sent) return;
            status = 503;  // reject below closes fresh
        }
    }
    reject_generated(c, status, now);
}

bool worker_proxy::framed_toward_client(const upconn &u) noexcept {
    return u.resp.body != http::body_kind::until_close && !u.dechunk;
}

// A connection that cannot be reused after a complete response ends with a
// FIN when the origin ended it (Connection: close, a body delimited by the
// close, its FIN): nothing is wrong, and a reset there is what made a clean
// load run count upstream_aborted (nginx says Connection: close on the
// keepalive_requests-th response of a connection). It is reset when it is out
// of step: bytes past the response, or an early response before the request
// body was all sent.
bool worker_proxy::must_abort(const upconn &u, bool reusable) noexcept {
    return !reusable && u.resp_keep_alive && !u.eof;
}

void worker_proxy::release_upconn(upconn &u, bool reusable, uint64_t now) noexcept {
    upstream_state &us = *ups_[u.upstream];
    busy_end(u.upstream, u.server);
    srv_ctr_[u.upstream][u.server].active.dec();
    if (u.shared) {
        shared_release(u, reusable, now);
        return;
    }
    const auto &uc = cfg_->upstreams[u.upstream];
    // A reload removed its server: it has drained, and ends with a FIN.
    const bool retired = !us.present[u.server];
    if (retired && reusable) ctr_.upstream_retired.inc();
    if (!reusable || retired || draining_ || u.eof || us.nidle[u.server] >= uc.max_idle) {
        u.state = upconn::st::body;  // so close_upconn does not touch the idle list
        close_upconn(u, must_abort(u, reusable), now);
        return;
    }
    u.state = upconn::st::idle;
    u.reused = false;
    u.idle_prev = none;
    u.idle_next = us.idle_head[u.server];
    if (u.idle_next != none) upconns_[u.idle_next].idle_prev = static_cast<uint32_t>(&u - upconns_.data());
    us.idle_head[u.server] = static_cast<uint32_t>(&u - upconns_.data());
    ++us.nidle[u.server];
    srv_ctr_[u.upstream][u.server].idle.inc();
    timers_.arm(u.timer, now + cfg_->http.client_idle_timeout_ms * ms);
}

// Takes u out of the idle list and the idle gauge, or out of the busy count
// of its client, exactly once: an idle connection leaves the idle state here,
// so closing it afterwards (or freeing it) does not count it again.
void worker_proxy::unaccount(upconn &u) noexcept {
    upstream_state &us = *ups_[u.upstream];
    if (u.state == upconn::st::idle) {
        if (!u.shared) {  // shared connections are in no idle list
            const uint32_t idx = static_cast<uint32_t>(&u - upconns_.data());
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
        busy_end(u.upstream, u.server);
        srv_ctr_[u.upstream][u.server].active.dec();
        u.client = none;
    }
}

// Ends what u still serves: its accounting (unaccount), a handed-over
// request on it (its client's lcore answers 502) and its shared slot (the
// slot's next job opens a fresh connection).
void worker_proxy::detach_upconn(upconn &u) noexcept {
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
    u.cred_mask = 0;
    if (u.slot != none) {
        shared_slot &sl = slots_[u.slot];
        if (sl.conn == static_cast<uint32_t>(&u - upconns_.data())) sl.conn = none;
        kick(u.slot);
        u.slot = none;
    }
}

void worker_proxy::close_upconn(upconn &u, bool abort, uint64_t now) noexcept {
    if (!u.used) return;
    detach_upconn(u);
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
    ctr_.upstream_closed.inc();
    u.state = upconn::st::closing;
    u.closing = true;
    flush(u, now);
}

void worker_proxy::free_upconn(upconn &u, uint64_t now) noexcept {
    if (!u.used) return;
    detach_upconn(u);
    if (u.health && ups_[u.upstream]->hc_conn[u.server] == static_cast<uint32_t>(&u - upconns_.data()))
        ups_[u.upstream]->hc_conn[u.server] = none;
    timers_.cancel(u.timer);
    drop_input(u);
    drop_head(u);
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
    upconns_.give(upconns_.index_of(u));
}

}  // namespace ferry::proxy
