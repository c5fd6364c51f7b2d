// The cross-core protocol of shared pools (proxy.h): messages out through
// the outbox with a per-peer backlog when its lane is full, credits, and the
// messages in: the client's side (responses for a handed-over request) and
// the owner's side (requests for a shared connection owned here).
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>

#include "ferry/xcore/handle.h"

namespace ferry::proxy {

uint64_t worker_proxy::xhandle(const client &c) const noexcept {
    return xcore::conn_handle{static_cast<uint16_t>(lcore_index_), c.xgen,
                              static_cast<uint32_t>(&c - clients_.data())}
        .pack();
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
        if (h.index >= clients_.made()) return;
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
    handoff_end(c.xpeer);
    if (c.upstream >= 0 && c.server >= 0) busy_end(c.upstream, c.server);
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
    if (h.lcore == lcore_index_ && h.index < clients_.made()) {
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
            if (!(m.flags & xf_interim) && !c.response_started) {
                c.response_started = true;
                c.resp_framed = (m.flags & xf_framed) != 0;
            }
            if (m.arg != 0 && !(m.flags & xf_interim))
                c.al_status = static_cast<uint16_t>(m.arg & 0xffff);  // al_end's, access log or not
            if (m.arg != 0 && c.al_open) {
                // A response head (proxy.h): its status and connect time.
                access_record &r = al_rec(c);
                if (r.urt_ns == access_record::no_time) {
                    r.urt_ns = now - std::min(now, c.t_xsent);
                    const uint32_t uct_ms = m.arg >> 16;
                    r.uct_ns = uct_ms == 0xffff ? access_record::no_time : uint64_t(uct_ms) * ms;
                }
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
            // arg = status | the timeout_kind that failed it << 16 | the
            // term_reason << 24 (0: none said; send_answer picks one by status).
            const uint16_t status = static_cast<uint16_t>(m.arg);
            if (c.al_open) al_rec(c).timeout = static_cast<timeout_kind>((m.arg >> 16) & 0xff);
            al_reason(c, static_cast<term_reason>((m.arg >> 24) & 0xff));
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
        // Past our slots: a shared upstream the sender's reload added, which
        // this worker takes at its next iteration: the request waits for it.
        const bool later = slot >= nslots_ && has_shared_;
        if (!later && (slot >= nslots_ || slots_[slot].q == nullptr)) {
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
        // (Retries come from the upstream's configuration: none for a
        // request that waits for it.)
        const uint32_t retries = later ? 0 : cfg_->upstreams[slots_[slot].upstream].retries;
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
        r.http10 = m.flags & xf_http10;
        r.route = static_cast<int16_t>(route_of_flags(m.flags));
        r.response_started = false;
        r.ri = http::request_info{};
        r.ri.head = m.flags & xf_head;
        r.credit = xcore_window;
        r.retries_left = 0;
        r.retry_head = nullptr;
        if ((m.flags & xf_retry) && retries > 0) {
            r.retry_head = gate() ? rte_pktmbuf_clone(m.mbuf, m.mbuf->pool) : nullptr;
            if (r.retry_head != nullptr) r.retries_left = retries;
        }
        r.qh = 0;
        r.q[0] = m.mbuf;
        r.qn = 1;
        m.mbuf = nullptr;
        rreq_of_[key] = idx;
        ++nrreqs_;
        if (later) {
            ctr_.shared_waiting_reload.inc();
            pending_rreqs_.emplace_back(idx, r.agen);  // reserved: at most max_rreqs_
            return;
        }
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
            if (m.flags & xf_end) r.end = true;  // the body's last bytes
            if (u != nullptr) pump_req(r, *u, now);
            break;
        case op_req_end:
            r.end = true;
            if (u != nullptr) arm_sending(*u, now);  // sent once its queue drains
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

}  // namespace ferry::proxy
