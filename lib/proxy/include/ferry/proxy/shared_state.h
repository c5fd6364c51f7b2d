// What every lcore's proxy shares, process-wide: the health and operator
// state of each upstream server, the drain flag and the shared pools' drain
// words, written with relaxed atomics and read by the other workers and the
// telemetry thread. The worker itself: proxy.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "ferry/config/config.h"
#include "ferry/proxy/events.h"

namespace ferry::proxy {

// An operator's say over one server (telemetry /ferry/server, as HAProxy's
// `set server ... state`): `ready` takes requests as its health allows;
// `drain` takes no new request (those in flight finish; its idle keep-alive
// connections close at their idle timeout); `maint` the same, and its active
// health checks stop. Neither counts as down, and neither is tried when
// every server is down (when_all_down = "try"): the operator said no.
enum class server_admin : uint8_t { ready = 0, drain = 1, maint = 2 };

[[nodiscard]] constexpr const char *name(server_admin a) noexcept {
    switch (a) {
        case server_admin::ready:
            return "ready";
        case server_admin::drain:
            return "drain";
        case server_admin::maint:
            return "maint";
    }
    return "unknown";
}

// Process-wide state of one upstream server, shared by every lcore.
struct alignas(64) server_health {
    // 0 = up; else the time (ns, reactor clock) until which it counts as down.
    std::atomic<uint64_t> down_until{0};
    std::atomic<uint32_t> consecutive_fails{0};
    std::atomic<uint32_t> marked_down{0};  // times it went down (telemetry)
    std::atomic<server_admin> admin{server_admin::ready};
    // The weight the operator set at run time (round_robin and least_conn);
    // 0: the configuration's.
    std::atomic<uint32_t> weight{0};
    std::atomic<uint32_t> admin_changes{0};  // state and weight changes (telemetry)
};

// Shared by every lcore's proxy: health words, one per server of every upstream.
struct shared_state {
    explicit shared_state(const config::ferry_config &cfg);
    // health[u][s] for upstream u, server s.
    std::vector<std::unique_ptr<server_health[]>> health;
    // Set by the app's workers when SIGTERM/SIGINT ends their loop (before
    // drain_grace_ms); readiness (/healthz) reads the stop request itself.
    std::atomic<bool> draining{false};
    // The event-log writer's counters (events.h; its thread writes them).
    event_log_counters events;
    // Drain words of the shared pools, one row per worker, written by that
    // worker only: requests it handed to each other worker and not finished,
    // and (once it drains) its open clients (UINT32_MAX before it drains).
    static constexpr unsigned max_workers = 128;  // < xcore::conn_handle::max_lcores
    struct alignas(64) xcore_row {
        std::atomic<uint32_t> inflight_to[max_workers];
        std::atomic<uint32_t> clients_open{UINT32_MAX};
    };
    std::unique_ptr<xcore_row[]> xrows;
};

}  // namespace ferry::proxy
