// worker_proxy: construction, the event loop's entry points (poll, the TCP
// events, accept), endpoint plumbing (pull, push, flush, mbuf allocation
// through one gate), the timers and the drain. The request's path through the
// other files: README.md.
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "ferry/config/reload.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/xcore/handle.h"

namespace ferry::proxy {

shared_state::shared_state(const config::ferry_config &cfg)
    : xrows(std::make_unique<xcore_row[]>(max_workers)) {
    // Every upstream slot, those a reload may add included (config.h
    // upstream_capacity): the vector never grows while workers read it.
    for (size_t u = 0; u < config::upstream_capacity(cfg); ++u)
        health.push_back(std::make_unique<server_health[]>(config::server_capacity(cfg, u)));
}

worker_proxy::worker_proxy(const config::ferry_config &cfg, std::span<const port_ref> ports,
                           unsigned lcore_index, shared_state &shared,
                           reactor::timer_wheel &timers, uint64_t now, const proxy_options &opts)
    : cfg_(&cfg),
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
        auto owner = reserve<uint32_t>(reserved_base_, p.layer->capacity());
        std::fill_n(owner.get(), p.layer->capacity(), none);
        slot_owner_.push_back(std::move(owner));
    }
    // A client needs one slot, its upstream connection another.
    // A client slot must fit a cross-core handle's index.
    max_clients_ = std::clamp<uint32_t>(slots, 1, xcore::conn_handle::index_limit);
    max_upconns_ = std::max<uint32_t>(1, slots);
    // Default: 7/8 of the client slots. The eighth left is for clients past
    // their heads; a cap far below the slots turns a slowloris larger than
    // it into a churn of evictions and instant reconnects (perf/slowloris:
    // half the slots against 10k attackers cost 36k resets a second).
    ph_cap_ = cfg_->http.max_pending_heads != 0
                  ? cfg_->http.max_pending_heads
                  : std::max<uint32_t>(1, max_clients_ - max_clients_ / 8);
    clients_.reserve(max_clients_);
    upconns_.reserve(max_upconns_);
    reserved_base_ += clients_.reserved_bytes() + upconns_.reserved_bytes();
    const uint32_t cap = limits_.max_head_bytes;  // a head buffer's bytes
    // A head block: the bytes, then the fields (aligned for them).
    head_fields_off_ = (size_t(cap) + alignof(http::header) - 1) / alignof(http::header) *
                       alignof(http::header);
    const size_t block = (head_fields_off_ + size_t(limits_.max_headers) * sizeof(http::header) +
                          63) / 64 * 64;
    // Clients may hold client_head_cap_ blocks; every upstream connection
    // slot has its own, so a response head never waits for a client's.
    client_head_cap_ = cfg_->http.client_head_buffers != 0
                           ? std::min(cfg_->http.client_head_buffers, max_clients_)
                           : max_clients_;
    heads_ = std::make_unique<block_pool>(block, 64, client_head_cap_ + max_upconns_);
    reserved_base_ += sizeof(block_pool) + heads_->reserved_bytes();
    scratch_ = reserve<char>(reserved_base_, scratch_size);
    redrive_.reserve(max_clients_);
    // Room for the listeners and routes a reload may add (config.h
    // listener_slot_capacity, config/reload.h route_capacity).
    const size_t listener_cap = listener_capacity(cfg);
    listener_ctr_ = std::make_unique<counter[]>((listener_cap + 1) * l_n);
    route_stride_ = config::route_capacity(cfg.routes.size()) + 2;
    gens_.push_back(std::make_unique<config_gen>());
    cur_ = gens_.back().get();
    cur_->cfg = &cfg;
    build_edits(*cur_);
    set_listeners();
    route_ctr_ = std::make_unique<counter[]>(std::max<size_t>(1, listener_cap) *
                                             route_stride_ * 5);
    // Every upstream slot, those a reload may add included: telemetry reads
    // a slot's counters as soon as a configuration names it.
    for (size_t u = 0; u < config::upstream_capacity(cfg); ++u) {
        auto st = std::make_unique<upstream_state>();
        const size_t cap = config::server_capacity(cfg, u);
        st->idle_head.assign(cap, none);
        st->nidle.assign(cap, 0);
        st->busy.assign(cap, 0);
        st->hc_conn.assign(cap, none);
        st->present.assign(cap, 0);
        if (u < cfg.upstreams.size()) set_servers(*st, cfg.upstreams[u]);
        ups_.push_back(std::move(st));
        srv_ctr_.push_back(reserve<server_counters>(reserved_base_, cap));
    }
    health_timer_.set_callback(health_timer_cb, this);
    init_shared();
}

size_t worker_proxy::listener_capacity(const config::ferry_config &cfg) noexcept {
    return std::max<size_t>(cfg.listener_slot_capacity, cfg.listeners.size());
}

void worker_proxy::set_listeners() {
    listener_by_slot_.resize(listener_capacity(*cfg_));
    listener_pos_.assign(listener_by_slot_.size(), -1);
    for (size_t i = 0; i < cfg_->listeners.size(); ++i) {
        const config::listener_config &l = cfg_->listeners[i];
        listener_by_slot_[l.slot] = l;
        listener_pos_[l.slot] = static_cast<int>(i);
    }
}

void worker_proxy::relisten(const config::ferry_config &prev,
                            const config::ferry_config &next) noexcept {
    auto pairs = [this](const config::ferry_config &c) {
        std::vector<std::pair<size_t, uint16_t>> v;
        for (const auto &l : c.listeners)
            for (size_t i = 0; i < ports_.size(); ++i)
                if (binds(l, i)) v.emplace_back(i, l.port);
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        return v;
    };
    const auto before = pairs(prev), after = pairs(next);
    for (const auto &[i, port] : before)
        if (!std::binary_search(after.begin(), after.end(), std::pair{i, port})) {
            (void)ports_[i].layer->unlisten(port);  // its connections carry on
            ctr_.reload_listen.inc();
        }
    if (draining_) return;  // no new listener while draining
    for (const auto &[i, port] : after)
        if (!std::binary_search(before.begin(), before.end(), std::pair{i, port})) {
            if (ports_[i].layer->listen(port) == net::tcp_layer::listen_result::full)
                ctr_.reload_listen_failed.inc();
            else
                ctr_.reload_listen.inc();
        }
}

size_t worker_proxy::slot_capacity(const config::upstream_config &uc) noexcept {
    return std::max<size_t>(uc.slot_capacity, uc.servers.size());
}

void worker_proxy::set_servers(upstream_state &st, const config::upstream_config &uc) {
    const size_t n = uc.servers.size();
    st.present.assign(slot_capacity(uc), 0);
    st.view.assign(n, server_view{});
    for (size_t i = 0; i < n; ++i) {
        st.view[i].weight = uc.servers[i].weight;
        st.present[uc.servers[i].slot] = 1;
    }
    // Weights are read from the configuration at each pick; the ring holds
    // them in its points.
    st.rr_current.assign(n, 0);
    st.ring = uc.balance == config::balance_mode::consistent_hash ? hash_ring(uc.servers)
                                                                   : hash_ring();
}

void worker_proxy::build_edits(config_gen &g) {
    // Header rules: views into *g.cfg (which outlives g), spans into each
    // route's own vectors (sized first, so none moves afterwards).
    g.edits.clear();
    g.edits.resize(g.cfg->routes.size());
    for (size_t i = 0; i < g.cfg->routes.size(); ++i) {
        auto fill = [](const config::header_rules &h, edit_storage &s) {
            for (const std::string &n : h.remove) s.remove.emplace_back(n);
            for (const auto &[n, v] : h.set) s.set.push_back({n, v});
            for (const auto &[n, v] : h.add) s.add.push_back({n, v});
            s.edit = http::header_edit{s.remove, s.set, s.add};
            s.any = !h.empty();
        };
        fill(g.cfg->routes[i].request_headers, g.edits[i].req);
        fill(g.cfg->routes[i].response_headers, g.edits[i].resp);
    }
    g.route_of_id.assign(g.cfg->route_ids, static_cast<int16_t>(route_none));
    for (size_t i = 0; i < g.cfg->routes.size(); ++i)
        if (g.cfg->routes[i].id < g.route_of_id.size())
            g.route_of_id[g.cfg->routes[i].id] = static_cast<int16_t>(i);
}

int worker_proxy::route_of_id(const config_gen &g, int id) noexcept {
    if (id < 0) return id;  // route_default, route_none
    return static_cast<size_t>(id) < g.route_of_id.size() ? g.route_of_id[id] : route_none;
}

int worker_proxy::route_id(int route) const noexcept {
    if (route < 0 || static_cast<size_t>(route) >= cfg_->routes.size()) return route;
    return static_cast<int>(cfg_->routes[route].id);
}

void worker_proxy::pin(client &c) noexcept {
    if (c.cgen == cur_) return;
    unpin(c);
    c.cgen = cur_;
    ++cur_->pins;
}

void worker_proxy::unpin(client &c) noexcept {
    config_gen *g = c.cgen;
    if (g == nullptr) return;
    c.cgen = nullptr;
    // The last request of a replaced configuration is done: it goes (its
    // header rules with it; the app's hold on the configuration drops).
    if (--g->pins == 0 && g != cur_) retire(g);
}

void worker_proxy::retire(config_gen *g) noexcept {
    for (size_t i = 0; i < gens_.size(); ++i) {
        if (gens_[i].get() != g) continue;
        gens_.erase(gens_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
    }
    held_.store(static_cast<uint32_t>(gens_.size()), std::memory_order_relaxed);
}

const config::ferry_config &worker_proxy::cfg_of(const client &c) const noexcept {
    return *gen_of(c).cfg;
}

const worker_proxy::config_gen &worker_proxy::gen_of(const client &c) const noexcept {
    return c.cgen != nullptr ? *c.cgen : *cur_;
}

void worker_proxy::reconfigure(const config::ferry_config &next, uint64_t now) {
    adopt(next, nullptr, now);
}

void worker_proxy::reconfigure(std::shared_ptr<const config::ferry_config> next, uint64_t now) {
    const config::ferry_config &n = *next;
    adopt(n, std::move(next), now);
}

void worker_proxy::adopt(const config::ferry_config &next,
                         std::shared_ptr<const config::ferry_config> hold, uint64_t now) {
    last_now_ = now;
    // Routes added, removed or moved (config/reload.h route_map): the
    // counts of requests in flight follow their route to its new position
    // (a removed route's are nobody's), and so do its counters (this lcore
    // writes them alone); the requests themselves keep their configuration.
    const std::vector<int> map = config::route_map(*cfg_, next);
    if (!config::routes_in_place(map, next.routes.size())) {
        for (uint32_t i = 0; i < clients_.made(); ++i) {
            client &c = clients_[i];
            if (c.used && c.ctr_route >= 0 && static_cast<size_t>(c.ctr_route) < map.size())
                c.ctr_route = static_cast<int16_t>(map[c.ctr_route] >= 0 ? map[c.ctr_route]
                                                                         : route_none);
        }
        const size_t listeners = std::max<size_t>(1, listener_capacity(next));
        std::vector<uint64_t> old(map.size() * 5);
        for (size_t l = 0; l < listeners; ++l) {
            for (size_t r = 0; r < map.size(); ++r)
                for (unsigned cls = 1; cls <= 5; ++cls)
                    old[r * 5 + cls - 1] =
                        route_ctr_[route_index(l, static_cast<int>(r), cls)].get();
            for (size_t r = 0; r < std::max(map.size(), next.routes.size()); ++r)
                for (unsigned cls = 1; cls <= 5; ++cls)
                    route_ctr_[route_index(l, static_cast<int>(r), cls)].set(0);
            for (size_t r = 0; r < map.size(); ++r)
                if (map[r] >= 0)
                    for (unsigned cls = 1; cls <= 5; ++cls)
                        route_ctr_[route_index(l, map[r], cls)].set(old[r * 5 + cls - 1]);
        }
    }
    relisten(*cfg_, next);
    grow_shared(next);
    // The configuration in force becomes a replaced one: kept while a
    // request that started under it is in flight.
    config_gen *prev = cur_;
    gens_.push_back(std::make_unique<config_gen>());
    cur_ = gens_.back().get();
    cur_->hold = std::move(hold);
    cur_->cfg = &next;
    build_edits(*cur_);
    held_.store(static_cast<uint32_t>(gens_.size()), std::memory_order_relaxed);
    if (prev->pins == 0) retire(prev);
    cfg_ = &next;
    set_listeners();
    bool checks = false;
    // Upstreams by slot (config.h ferry_config::upstreams): one a reload
    // removed is a retired placeholder without servers, so its idle
    // connections close below and busy ones when their response ends.
    for (size_t u = 0; u < ups_.size() && u < next.upstreams.size(); ++u) {
        const config::upstream_config &uc = next.upstreams[u];
        upstream_state &st = *ups_[u];
        const std::vector<uint8_t> was = st.present;
        set_servers(st, uc);
        checks = checks || uc.health_checks();
        // A server the reload removed: its idle connections close now; busy
        // ones when their response ends (release_upconn), a health check in
        // flight when it ends. Its slot keeps its counters and health, for a
        // reload that brings the address back.
        for (size_t s = 0; s < was.size() && s < st.present.size(); ++s) {
            if (!was[s] || st.present[s]) continue;
            ctr_.servers_removed.inc();
            while (st.idle_head[s] != none) {
                upconn &i = upconns_[st.idle_head[s]];
                ctr_.upstream_retired.inc();
                close_upconn(i, false, now);  // off the idle list (unaccount)
            }
        }
    }
    reconfigure_shared(now);
    if (lcore_index_ == 0 && !draining_) {
        if (!checks)
            timers_.cancel(health_timer_);
        else if (!health_timer_.armed())
            timers_.arm(health_timer_, now + 100 * ms);
    }
    ctr_.reconfigured.inc();
}

worker_proxy::~worker_proxy() {
    send_fn_ = nullptr;  // nothing goes out any more: xsend() frees instead
    timers_.cancel(health_timer_);
    for (uint32_t i = 0; i < clients_.made(); ++i) {
        client &c = clients_[i];
        timers_.cancel(c.timer);
        if (c.used) free_client(c, last_now_);
    }
    for (uint32_t i = 0; i < upconns_.made(); ++i) {
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

bool worker_proxy::binds(const config::listener_config &l, size_t port) noexcept {
    return l.port_index < 0 || static_cast<size_t>(l.port_index) == port;
}

std::string worker_proxy::listen(uint64_t now) {
    for (const auto &l : cfg_->listeners)
        for (size_t i = 0; i < ports_.size(); ++i)
            if (binds(l, i) &&
                ports_[i].layer->listen(l.port) == net::tcp_layer::listen_result::full)
                return "listener '" + l.name + "': too many listeners on a port";
    if (lcore_index_ == 0) {
        for (const auto &u : cfg_->upstreams)
            if (!u.health_check_path.empty()) {
                timers_.arm(health_timer_, now + 100 * ms);
                break;
            }
    }
    return "";
}

bool worker_proxy::pending() const noexcept {
    for (const port_ref &p : ports_)
        if (p.layer->has_events()) return true;
    return backlog_total_ != 0 || !kick_list_.empty() || nxfail_ != 0 || !redrive_.empty();
}

uint32_t worker_proxy::poll(uint64_t now) noexcept {
    last_now_ = now;
    uint32_t work = 0;
    if (backlog_total_ != 0 && retry_backlog()) ++work;
    if (nxfail_ != 0) {
        fail_broken(now);
        ++work;
    }
    auto &notes = notes_;
    for (uint16_t p = 0; p < ports_.size(); ++p) {
        for (int round = 0; round < 8; ++round) {
            const size_t n = ports_[p].layer->poll_events(notes);
            for (size_t i = 0; i < n; ++i) on_event(p, notes[i], now);
            work += static_cast<uint32_t>(n);
            if (n < notes.size()) break;
        }
    }
    if (!kick_list_.empty()) {
        run_kicks(now);
        ++work;
    }
    if (!redrive_.empty()) {
        run_redrives(now);
        ++work;
    }
    if (draining_ && has_shared_)
        shared_.xrows[lcore_index_].clients_open.store(clients_.in_use(),
                                                       std::memory_order_relaxed);
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
            if (u.state == upconn::st::tunnel) {
                // The origin reset: the client is reset. Both ways closed
                // (clean): what ferry still holds of the origin's bytes goes
                // to the client, then its FIN; u stays (its connection gone)
                // until the pump has passed them on (tunnel_end frees it).
                client *c = tunnel_peer(u);
                if (c == nullptr) {
                    free_upconn(u, now);
                } else if (!clean) {
                    tunnel_end(*c, &u, false, now);
                } else {
                    u.eof = true;
                    (void)tunnel_turn(*c, u, now);
                }
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
            term_reason why = term_reason::upstream_reset;
            if (n.reason == net::tcp_close_reason::timed_out)
                why = term_reason::upstream_timeout;
            else if (refused)
                why = term_reason::upstream_connect_refused;
            else if (clean)
                why = term_reason::upstream_closed;
            upconn_failed(u, n.reason == net::tcp_close_reason::timed_out ? 504 : 502, why, true,
                          now);
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
            if (u.health)
                timers_.arm(u.timer,
                            now + cfg_->upstreams[u.upstream].health_check_timeout_ms * ms);
            else
                arm_sending(u, now);
        }
        if (n.events & net::tcp_event::peer_fin) u.eof = true;
        drive_upconn(u, now);
        return;
    }
    client &c = clients_[owner];
    if (!c.used || !(c.h == n.h) || c.port != port) return;
    if (n.events & net::tcp_event::closed) {
        if (c.state == client::st::tunnel) {
            // The client reset: the origin is reset. Both ways closed
            // (clean): what ferry still holds of the client's bytes goes to
            // the origin, then a FIN; c stays (its connection gone) until the
            // pump has passed them on (tunnel_end frees it).
            owner = none;
            c.h = net::tcp_handle{};
            upconn *u = tunnel_peer(c);
            if (n.reason != net::tcp_close_reason::normal || u == nullptr) {
                tunnel_end(c, u, false, now);
            } else {
                c.eof = true;
                (void)tunnel_turn(c, *u, now);
            }
            return;
        }
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
    int pos = -1;
    for (size_t i = 0; i < cfg_->listeners.size(); ++i)
        if (cfg_->listeners[i].port == n.local_port && binds(cfg_->listeners[i], port))
            pos = static_cast<int>(i);
    const auto *conn = layer.get(n.h);
    if (pos < 0 || conn == nullptr || clients_.available() == 0 || draining_) {
        layer.abort(n.h, now);
        return;
    }
    const auto &lc = cfg_->listeners[pos];
    const size_t li = lc.slot;  // counters and the client keep the slot
    if (lc.max_connections != 0 && listener_ctr(li, l_active).get() >= lc.max_connections) {
        ctr_.client_refused_limit.inc();
        listener_ctr(li, l_refused).inc();
        layer.abort(n.h, now);
        return;
    }
    const uint32_t idx = clients_.take([this](uint32_t i, client &nc) {
        nc.px = this;
        nc.cap = limits_.max_head_bytes;
        nc.timer.set_callback(client_timer_cb, &nc);
        if (al_pending_.reserved()) al_pending_.grow(i + 1);
    });
    client &c = clients_[idx];
    c.used = true;
    ++c.gen;
    c.port = port;
    c.h = n.h;
    c.in_head = c.in_n = c.out_n = 0;
    c.eof = c.closing = c.fin_sent = false;
    drop_head(c);
    c.state = client::st::head;
    c.listener = static_cast<uint16_t>(li);
    c.peer_addr = conn->tuple().remote_addr;
    c.peer_port = conn->tuple().remote_port;
    c.al_open = false;
    c.al_status = 0;
    c.t_req = 0;
    c.t_started = 0;
    c.resp_bytes = 0;
    c.up = none;
    c.requests = 0;
    c.keep_alive = true;
    c.response_started = false;
    c.retry_head = nullptr;
    c.head_len = 0;
    c.redrive = false;
    c.cred_mask = 0;
    c.queued = c.remote = c.xbroken = false;
    c.q_head = nullptr;
    slot_owner_[port][n.h.index] = idx;
    listener_ctr(li, l_active).inc();
    listener_ctr(li, l_accepted).inc();
    ctr_.client_accepted.inc();
    if (grace_) ctr_.drain_grace_accepted.inc();
    timers_.arm(c.timer, header_deadline(now));
    pending_head_begin(c, now);
    if (n.events & net::tcp_event::peer_fin) c.eof = true;
    drive_client(c, now);
}

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

void worker_proxy::want_more(endpoint &e, uint64_t now) noexcept {
    if (e.h.valid()) ports_[e.port].layer->quick_ack(e.h, now);
}

void worker_proxy::drop_input(endpoint &e) noexcept {
    while (e.in_n != 0) {
        rte_pktmbuf_free(e.front().m);
        e.pop();
    }
}

uint64_t worker_proxy::header_deadline(uint64_t now) noexcept {
    // xorshift64: the spread needs no quality, only to differ per head.
    uint64_t x = spread_state_;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    spread_state_ = x;
    const uint64_t t = uint64_t(cfg_->http.client_header_timeout_ms) * ms;
    // (t / 4) * a 24-bit fraction: at most 9e11 ns * 2^24, within 64 bits.
    return now + t - (((t / 4) * (x >> 40)) >> 24);
}

bool worker_proxy::attach_head(endpoint &e) noexcept {
    if (e.buf != nullptr) return true;
    void *b = e.is_up || client_heads_ < client_head_cap_ ? heads_->take() : nullptr;
    if (b == nullptr) {
        ctr_.head_buffers_exhausted.inc();
        return false;
    }
    if (!e.is_up) ++client_heads_;
    e.buf = static_cast<char *>(b);
    e.fields = reinterpret_cast<http::header *>(e.buf + head_fields_off_);
    return true;
}

void worker_proxy::settle_head(endpoint &e) noexcept {
    if (e.buf != nullptr && e.buf_len == 0 &&
        e.hp.current_phase() == http::head_parser::phase::start_line) {
        heads_->give(e.buf);
        if (!e.is_up) --client_heads_;
        e.buf = nullptr;
        e.fields = nullptr;
    }
}

void worker_proxy::drop_head(endpoint &e) noexcept {
    e.buf_len = 0;
    e.hp.reset();
    settle_head(e);
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
    if (answer_keeps(c))
        answer_and_go_on(c, status, now);
    else
        reject(c, status, now);
}

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
                px.reject_timeout(c, timeout_kind::header, now);
            }
            break;
        case client::st::body:
            px.ctr_.timeouts_body.inc();
            px.reject_timeout(c, timeout_kind::body, now);
            break;
        case client::st::wait:
            break;
        case client::st::tunnel:
            px.tunnel_timer(c, now);
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
        case upconn::st::tunnel:
            // The client's timer decides (it is armed for the tunnel's life).
            if (px.tunnel_peer(u) == nullptr) px.close_upconn(u, true, now);
            break;
        case upconn::st::connecting:
        case upconn::st::head:
        case upconn::st::body: {
            // Which bound passed: the total one, or the timer's own kind.
            timeout_kind k = u.state == upconn::st::connecting ? timeout_kind::connect : u.tkind;
            if (u.total_at != 0 && now >= u.total_at) k = timeout_kind::total;
            if (u.state == upconn::st::connecting) px.ctr_.upstream_connect_failed.inc();
            px.count_timeout(u.health ? timeout_kind::none : k);
            px.upconn_failed(u, 504, term_reason::upstream_timeout, true, now, k);
            break;
        }
    }
    if (!px.kick_list_.empty()) px.run_kicks(now);
}

void worker_proxy::count_timeout(timeout_kind k) noexcept {
    switch (k) {
        case timeout_kind::connect:
            ctr_.timeouts_connect.inc();
            break;
        case timeout_kind::write:
            ctr_.timeouts_write.inc();
            break;
        case timeout_kind::response:
            ctr_.timeouts_response.inc();
            break;
        case timeout_kind::read:
            ctr_.timeouts_read.inc();
            break;
        case timeout_kind::total:
            ctr_.timeouts_total.inc();
            break;
        default:
            return;  // a health check's timeout counts as a failed check
    }
    ctr_.timeouts_upstream.inc();
}

void worker_proxy::health_timer_cb(void *ctx, uint64_t now) noexcept {
    auto &px = *static_cast<worker_proxy *>(ctx);
    px.last_now_ = now;
    px.run_health_checks(now);
}

void worker_proxy::begin_drain(uint64_t now) noexcept {
    if (draining_) return;
    draining_ = true;
    timers_.cancel(health_timer_);
    for (const auto &l : cfg_->listeners)
        for (size_t i = 0; i < ports_.size(); ++i)
            if (binds(l, i)) (void)ports_[i].layer->unlisten(l.port);
    for (uint32_t i = 0; i < clients_.made(); ++i) {
        client &c = clients_[i];
        if (!c.used) continue;
        c.keep_alive = false;
        if (c.state == client::st::head && c.buf_len == 0 && c.in_n == 0) {
            ctr_.drained.inc();
            close_client(c, now);
        }
    }
    for (uint32_t i = 0; i < upconns_.made(); ++i) {
        upconn &u = upconns_[i];
        if (u.used && (u.state == upconn::st::idle || u.health)) close_upconn(u, u.health, now);
    }
    if (has_shared_)
        shared_.xrows[lcore_index_].clients_open.store(clients_.in_use(),
                                                       std::memory_order_relaxed);
    if (!kick_list_.empty()) run_kicks(now);
}

bool worker_proxy::exchanges_in_flight() const noexcept {
    // Requests other workers handed us; ours out to an origin or handed to
    // other workers (exchanges_: the sum exchanges_recount() walks).
    return nrreqs_ != 0 || exchanges_ > tunnels_;
}

uint32_t worker_proxy::exchanges_recount() const noexcept {
    uint32_t n = 0;
    for (const uint32_t k : inflight_to_) n += k;
    for (const auto &us : ups_)
        for (const uint32_t b : us->busy) n += b;
    return n;
}

void worker_proxy::busy_begin(int upstream, int server) noexcept {
    ++ups_[upstream]->busy[server];
    ++exchanges_;
}

void worker_proxy::busy_end(int upstream, int server) noexcept {
    uint32_t &b = ups_[upstream]->busy[server];
    if (b == 0) return;
    --b;
    --exchanges_;
}

void worker_proxy::handoff_begin(unsigned peer) noexcept {
    ++inflight_to_[peer];
    ++exchanges_;
    shared_.xrows[lcore_index_].inflight_to[peer].store(inflight_to_[peer],
                                                        std::memory_order_relaxed);
}

void worker_proxy::handoff_end(unsigned peer) noexcept {
    if (inflight_to_[peer] > 0) {
        --inflight_to_[peer];
        --exchanges_;
    }
    shared_.xrows[lcore_index_].inflight_to[peer].store(inflight_to_[peer],
                                                        std::memory_order_relaxed);
}

uint32_t worker_proxy::open_connections() const noexcept {
    uint32_t n = clients_.in_use() + upconns_.in_use();
    if (!has_shared_ || nworkers_ < 2) return n;
    // Cross-core work: requests handed to us and not answered, messages not
    // out yet, and any peer that may still hand us a request (it has clients,
    // or has not begun draining: UINT32_MAX).
    n += nrreqs_ + backlog_total_;
    auto &rows = shared_.xrows;
    if (draining_)
        rows[lcore_index_].clients_open.store(clients_.in_use(), std::memory_order_relaxed);
    for (unsigned p = 0; p < nworkers_; ++p) {
        if (p == lcore_index_) continue;
        n += rows[p].inflight_to[lcore_index_].load(std::memory_order_relaxed);
        if (rows[p].clients_open.load(std::memory_order_relaxed) != 0) ++n;
    }
    return n;
}

void worker_proxy::abort_all(uint64_t now) noexcept {
    for (uint32_t i = 0; i < clients_.made(); ++i)
        if (clients_[i].used && clients_[i].h.valid()) {
            if (clients_[i].al_open && al_rec(clients_[i]).reason == term_reason::none)
                al_rec(clients_[i]).reason = term_reason::drain_timeout;
            al_end(clients_[i], 444, true, now);  // the drain timeout cut it
            ctr_.drained.inc();
            ports_[clients_[i].port].layer->abort(clients_[i].h, now);
        }
    for (uint32_t i = 0; i < upconns_.made(); ++i)
        if (upconns_[i].used && upconns_[i].h.valid())
            ports_[upconns_[i].port].layer->abort(upconns_[i].h, now);
}

}  // namespace ferry::proxy
