// Server health: the shared health words of every server (passive: failures
// counted by any lcore; active: lcore 0's checks), the changes they make
// (down after max_fails failures in a row, up at the next answer), and the
// event each change writes to the event log (events.h).
//
// Every change is an exchange on the server's down_until word, which all
// lcores share: of several lcores racing over one change, exactly one reads
// the old value that makes it a change, and only that one writes the event.
// A server whose fail_timeout_ms passed is tried again but is not "up" for
// the log until it answers (down_until stays non-zero until then), so a
// server that stays dead is logged down once, not once per fail_timeout.
#include "internal.h"

#include <array>
#include <algorithm>
#include <cstdio>

namespace ferry::proxy {

void worker_proxy::emit_event(server_event ev, int upstream, int server, server_event::kind what,
                              uint64_t now) noexcept {
    if (events_ == nullptr) return;
    ev.t_ns = now;
    ev.upstream = static_cast<uint16_t>(upstream);
    ev.server = static_cast<uint16_t>(server);
    const config::server_endpoint ep = endpoint_of(upstream, server);
    ev.addr = ep.addr;
    ev.port = ep.port;
    ev.what = what;
    server_event *slot = events_->reserve();
    if (slot == nullptr) {
        ctr_.events_dropped.inc();  // the writer fell behind: never wait for it
        return;
    }
    *slot = ev;
    events_->commit();
    ctr_.events_written.inc();
}

void worker_proxy::health_ok(int upstream, int server, uint64_t now) noexcept {
    auto &h = shared_.health[upstream][server];
    // Written only on a change: the words are shared by every lcore.
    if (h.consecutive_fails.load(std::memory_order_relaxed) != 0)
        h.consecutive_fails.store(0, std::memory_order_relaxed);
    if (h.down_until.load(std::memory_order_relaxed) == 0) return;
    // Relaxed: the word orders nothing else; the exchange alone decides which
    // lcore saw the change.
    if (h.down_until.exchange(0, std::memory_order_relaxed) == 0) return;
    emit_event(server_event{}, upstream, server, server_event::kind::up, now);
}

void worker_proxy::health_failed(int upstream, int server, uint64_t now,
                                 const server_event &cause) noexcept {
    auto &h = shared_.health[upstream][server];
    const auto &uc = cfg_->upstreams[upstream];
    const uint32_t f = h.consecutive_fails.fetch_add(1, std::memory_order_relaxed) + 1;
    if (uc.max_fails == 0 || f < uc.max_fails) return;
    const uint64_t old =
        h.down_until.exchange(now + uc.fail_timeout_ms * ms, std::memory_order_relaxed);
    h.consecutive_fails.store(0, std::memory_order_relaxed);
    h.marked_down.fetch_add(1, std::memory_order_relaxed);
    if (old != 0) return;  // down already (maybe past its fail_timeout): no change
    server_event ev = cause;
    ev.fails = f;
    emit_event(ev, upstream, server, server_event::kind::down, now);
}

void worker_proxy::run_health_checks(uint64_t now) noexcept {
    uint64_t next = UINT64_MAX;
    for (size_t ui = 0; ui < cfg_->upstreams.size(); ++ui) {
        const auto &uc = cfg_->upstreams[ui];
        if (uc.health_check_path.empty()) continue;
        next = std::min<uint64_t>(next, now + uc.health_check_interval_ms * ms);
        upstream_state &us = *ups_[ui];
        for (const config::server_config &srv : uc.servers) {
            const size_t s = srv.slot;
            if (us.hc_conn[s] != none) continue;  // still running (its timer ends it)
            if (shared_.health[ui][s].admin.load(std::memory_order_relaxed) ==
                server_admin::maint)
                continue;  // in maintenance: not checked
            if (upconns_.available() == 0) return;
            upconn *hc = open_upconn(static_cast<int>(ui), static_cast<int>(s), now);
            if (hc == nullptr) continue;
            upconn &u = *hc;
            const uint16_t port = u.port;
            u.health = true;
            us.hc_conn[s] = static_cast<uint32_t>(hc - upconns_.data());
            ctr_.health_checks.inc();
            std::array<char, ip_address::endpoint_text_max + 1> host{};
            (void)srv.addr.format_endpoint(srv.port, std::span(host).first<ip_address::endpoint_text_max>());
            const int n = std::snprintf(
                scratch_.get(), scratch_size,
                "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: ferry-health-check\r\n"
                "Connection: close\r\n\r\n",
                uc.health_check_path.c_str(),
                uc.health_check_host.empty() ? host.data() : uc.health_check_host.c_str());
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


}  // namespace ferry::proxy
