// Shared upstream pools (proxy.h "Upstream pools"): the slots of each
// server's N connections, their FIFOs of jobs (local clients and requests
// handed over by other workers), opening and reusing the owner's connection,
// and the requests other workers handed to this one (rreq).
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <bit>

namespace ferry::proxy {

void worker_proxy::set_xcore(unsigned workers, xcore_send_fn send, void *ctx) {
    send_fn_ = send;
    send_ctx_ = ctx;
    nworkers_ = send != nullptr ? std::clamp(workers, 1u, shared_state::max_workers) : 1;
    init_shared();
}

// The shared connections of upstream ui (shared pool uc) as `slots` from
// `base` on: laid out by server slot (config.h server_config::slot), for
// every slot the upstream may have over ferry's life, so that a reload may
// add and remove servers and every worker numbers them alike. Returns how
// many this worker owns (each with its FIFO).
uint32_t worker_proxy::lay_out_shared(shared_slot *slots, uint32_t base, size_t ui,
                                      const config::upstream_config &uc) {
    const size_t cap = slot_capacity(uc);
    const uint32_t n = uc.shared_connections;
    shared_base_[ui] = base;
    // Each lcore starts at its own k, so the lcores' first requests
    // spread over the connections (and over the owners).
    shared_rr_[ui].assign(cap, lcore_index_ % n);
    uint32_t owned = 0;
    for (uint32_t sv = 0; sv < cap; ++sv)
        for (uint32_t k = 0; k < n; ++k) {
            shared_slot &sl = slots[base + sv * n + k];
            sl.upstream = static_cast<int>(ui);
            sl.server = static_cast<int>(sv);
            sl.k = k;
            sl.owner = k % nworkers_;
            if (sl.owner == lcore_index_) {
                sl.q = reserve<job>(reserved_shared_, shared_fifo_cap);
                ++owned;
            }
        }
    return owned;
}

void worker_proxy::init_shared() {
    const size_t nup = cfg_->upstreams.size();
    has_shared_ = false;
    shared_base_.assign(nup, 0);
    shared_rr_.assign(nup, {});
    uint32_t total = 0;
    for (const auto &uc : cfg_->upstreams)
        if (uc.pool == config::pool_mode::shared)
            total += static_cast<uint32_t>(slot_capacity(uc)) * uc.shared_connections;
    reserved_shared_ = 0;
    slots_ = reserve<shared_slot>(reserved_shared_, std::max<uint32_t>(1, total));
    uint32_t id = 0, owned = 0;
    for (size_t ui = 0; ui < nup; ++ui) {
        const auto &uc = cfg_->upstreams[ui];
        if (uc.pool != config::pool_mode::shared) continue;
        has_shared_ = true;
        owned += lay_out_shared(slots_.get(), id, ui, uc);
        id += static_cast<uint32_t>(slot_capacity(uc)) * uc.shared_connections;
    }
    nslots_ = id;
    kick_list_.clear();
    kick_list_.reserve(2 * size_t(nslots_) + 16);
    const bool cross = has_shared_ && nworkers_ > 1;
    // At least one connection's worth even when this worker owns none yet:
    // a reload may add a shared upstream whose connections it owns.
    max_rreqs_ = cross ? std::min<uint32_t>(std::max<uint32_t>(owned, 1) * (shared_fifo_cap + 1),
                                            4 * max_clients_)
                       : 0;
    rreqs_ = reserve<rreq>(reserved_shared_, std::max<uint32_t>(1, max_rreqs_));
    pending_rreqs_.reserve(max_rreqs_);
    free_rreqs_ = reserve<uint32_t>(reserved_shared_, std::max<uint32_t>(1, max_rreqs_));
    nfree_rreqs_ = 0;
    nrreqs_ = 0;
    for (uint32_t i = 0; i < max_rreqs_; ++i) free_rreqs_[nfree_rreqs_++] = max_rreqs_ - 1 - i;
    const size_t table = cross ? size_t(nworkers_) * max_clients_ : 0;
    rreq_of_ = reserve<uint32_t>(reserved_shared_, std::max<size_t>(1, table));
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
        b.q = reserve<xcore::message>(reserved_shared_, cap);
        b.mask = cap - 1;
    }
    backlog_total_ = 0;
    xfail_ = reserve<xfail_entry>(reserved_shared_, cross ? max_clients_ + max_rreqs_ : 1);
    nxfail_ = 0;
    inflight_to_.assign(nworkers_, 0);
}

bool worker_proxy::slot_known(const shared_slot &sl) const noexcept {
    return static_cast<size_t>(sl.server) < cfg_->upstreams[sl.upstream].slots.size();
}

void worker_proxy::grow_shared(const config::ferry_config &next) {
    const size_t old_n = shared_base_.size();
    const size_t nup = next.upstreams.size();
    if (nup <= old_n) return;
    shared_base_.resize(nup, 0);
    shared_rr_.resize(nup);
    uint32_t add = 0;
    for (size_t ui = old_n; ui < nup; ++ui) {
        const auto &uc = next.upstreams[ui];
        if (uc.retired || uc.pool != config::pool_mode::shared) continue;
        add += static_cast<uint32_t>(slot_capacity(uc)) * uc.shared_connections;
    }
    if (add == 0) return;
    auto grown = std::make_unique<shared_slot[]>(size_t(nslots_) + add);
    reserved_shared_ += size_t(add) * sizeof(shared_slot);
    for (uint32_t i = 0; i < nslots_; ++i) grown[i] = std::move(slots_[i]);
    uint32_t id = nslots_;
    for (size_t ui = old_n; ui < nup; ++ui) {
        const auto &uc = next.upstreams[ui];
        if (uc.retired || uc.pool != config::pool_mode::shared) continue;
        (void)lay_out_shared(grown.get(), id, ui, uc);
        id += static_cast<uint32_t>(slot_capacity(uc)) * uc.shared_connections;
    }
    slots_ = std::move(grown);
    nslots_ = id;
    has_shared_ = true;
    kick_list_.reserve(2 * size_t(nslots_) + 16);
}

void worker_proxy::reconfigure_shared(uint64_t now) noexcept {
    // Requests that waited for this worker to take the reload that added
    // their shared upstream.
    for (const auto &[idx, agen] : pending_rreqs_) {
        rreq &r = rreqs_[idx];
        if (!r.used || r.agen != agen || !r.queued) continue;  // aborted meanwhile
        if (r.slot >= nslots_ || slots_[r.slot].q == nullptr ||
            !shared_submit(r.slot, job{idx, r.agen, true}, false)) {
            ctr_.shared_queue_full.inc();
            r.queued = false;
            xsend(r.from, op_resp_error, r.handle, 0, 503, nullptr);
            free_rreq(r);
        }
    }
    pending_rreqs_.clear();
    if (!has_shared_) return;
    for (uint32_t si = 0; si < nslots_; ++si) {
        shared_slot &sl = slots_[si];
        if (sl.q == nullptr) continue;
        // A removed server's idle shared connection closes now; a busy one
        // when its job ends (shared_release).
        if (!ups_[sl.upstream]->present[sl.server] && sl.conn != none) {
            upconn &u = upconns_[sl.conn];
            if (u.used && u.state == upconn::st::idle && u.client == none && u.rq == none) {
                ctr_.upstream_retired.inc();
                close_upconn(u, false, now);
            }
        }
        if (sl.qn != 0) kick(si);  // jobs that waited for this configuration
    }
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
            if (u != nullptr && u->state == upconn::st::idle && !u->reusable()) {
                close_upconn(*u, true, now);
                continue;
            }
            if (u == nullptr && !slot_known(sl)) {
                // A server a reload added, handed over by a worker that took
                // the reload first: its address comes with this worker's
                // next reconfigure(), which kicks the slot again.
                ctr_.shared_waiting_reload.inc();
                break;
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
    upconn *up = open_upconn(sl.upstream, sl.server, now);
    if (up == nullptr) {
        ctr_.upstream_no_connection.inc();
        return nullptr;
    }
    upconn &u = *up;
    u.shared = true;
    u.slot = si;
    sl.conn = static_cast<uint32_t>(up - upconns_.data());
    if (sl.opened) ctr_.shared_reconnects.inc();
    sl.opened = true;
    ctr_.upstream_connects.inc();
    srv_ctr_[sl.upstream][sl.server].connections.inc();
    arm_upconn(u, timeout_kind::connect, now);
    return &u;
}

uint32_t worker_proxy::own_idle_slot(uint32_t base, uint32_t n) const noexcept {
    for (uint32_t k = 0; k < n; ++k) {
        const shared_slot &sl = slots_[base + k];
        if (sl.owner != lcore_index_ || sl.q == nullptr || sl.qn != 0 || sl.listed ||
            sl.conn == none)
            continue;
        const upconn &u = upconns_[sl.conn];
        // What run_kicks would attach a job to at once (no reopen).
        if (u.reusable() && u.client == none && u.rq == none) return base + k;
    }
    return none;
}

// The job takes the slot's connection (idle, or still connecting).
void worker_proxy::attach(uint32_t si, upconn &u, const job &j, uint64_t now) noexcept {
    const shared_slot &sl = slots_[si];
    const uint32_t uidx = static_cast<uint32_t>(&u - upconns_.data());
    if (u.state == upconn::st::idle) {
        u.reused = true;
        u.state = upconn::st::head;
        srv_ctr_[sl.upstream][sl.server].idle.dec();
        ctr_.upstream_reused.inc();
    }
    drop_head(u);
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
        busy_begin(sl.upstream, sl.server);
        u.ri = c.q_ri;
        begin_total(u, now);
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
    begin_total(u, now);
    pump_req(r, u, now);
}

// A shared connection's job ended: keep it for the next one, or close it
// (the slot reopens for the next job).
void worker_proxy::shared_release(upconn &u, bool reusable, uint64_t now) noexcept {
    u.cred_mask = 0;
    // A reload removed its server: it has drained, and ends with a FIN.
    const bool retired = !ups_[u.upstream]->present[u.server];
    if (retired && reusable) ctr_.upstream_retired.inc();
    if (!reusable || retired || u.eof || !u.h.valid() || u.slot == none) {
        u.state = upconn::st::body;
        close_upconn(u, must_abort(u, reusable), now);
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
    uint32_t owed = 0, moved = 0;
    while (r.qn != 0 && u.out_n < endpoint::out_cap) {
        ++moved;
        rte_mbuf *m = r.q[r.qh];
        r.q[r.qh] = nullptr;
        r.qh = (r.qh + 1) % xcore_window;
        --r.qn;
        if (push_credited(u, m, now) == 1) ++owed;
    }
    if (owed != 0) xsend(r.from, op_credit, r.handle, 0, owed, nullptr);
    if (moved != 0) arm_sending(u, now);  // the request's sending went on
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

}  // namespace ferry::proxy
