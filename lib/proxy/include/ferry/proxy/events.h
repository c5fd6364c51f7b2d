// The event log of the proxy: upstream servers going down and up
// (docs/OPERATIONS.md "Event log").
//
// Shape, as the access log's (access_log.h): the lcore that sees a server's
// health change (the one whose exchange on the shared health word made the
// change: exactly one per change) writes a fixed-size server_event into its
// own SPSC ring (one reserve/commit, no lock, no allocation, no system call;
// a full ring drops the event and counts it in http_counters::events_dropped).
// ONE control thread (app/ferry/event_log.cpp) drains the rings, passes each
// event through an event_limiter and logs the lines through rte_log.
//
// The limiter is what keeps a flapping server from flooding the log: per
// server at most `burst` lines per `window`; the rest are counted, and when
// the window ends a summary line says how many changes went unlogged and the
// server's state after the last of them. Pure: time comes in as `now`.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ferry/base/counter.h"
#include "ferry/base/record_ring.h"
#include "ferry/proxy/access_log.h"

namespace ferry::proxy {

struct server_event {
    enum class kind : uint8_t { down, up };
    uint64_t t_ns = 0;  // reactor clock
    uint16_t upstream = 0, server = 0;  // server: its slot (config.h server_config::slot)
    uint16_t port = 0;                  // the server's address
    ip_address addr;                    //   IPv4 or IPv6
    kind what = kind::down;
    // down: the failure that made it max_fails in a row (a passive failure
    // or a failed active check).
    term_reason why = term_reason::none;
    timeout_kind timeout = timeout_kind::none;  // why == upstream_timeout: which
    uint16_t status = 0;                        // a health check answered this status
    bool check = false;                         // found by an active health check
    uint32_t fails = 0;                         // failures in a row that marked it down
};

using event_sink = record_ring<server_event>;

// What the event-log writer did; written by its thread only, read by any
// (telemetry /ferry/events, ferry_events_*_total).
#define FERRY_EVENT_LOG_COUNTERS(X)                                                        \
    X(lines, "event-log lines written (server down/up, and suppression summaries)")       \
    X(suppressed, "server state changes not logged: over the per-server rate limit")      \
    X(server_down, "server down events seen")                                              \
    X(server_up, "server up events seen")

struct alignas(64) event_log_counters {
    FERRY_EVENT_LOG_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_EVENT_LOG_FIELD(n, h) FERRY_COUNTER_FIELD(event_log_counters, n, h)
inline constexpr counter_field<event_log_counters> event_log_counter_fields[] = {
    FERRY_EVENT_LOG_COUNTERS(FERRY_EVENT_LOG_FIELD)};

// "connect refused", "reset", "timeout (connect)", "health check answered
// 503", ...: the cause of a down event as the line says it.
[[nodiscard]] std::string describe_cause(const server_event &e);

// Per server (by a dense index the caller chooses): at most `burst` lines
// per `window_ns`; a line over it is suppressed and counted.
class event_limiter {
public:
    event_limiter(size_t servers, uint32_t burst, uint64_t window_ns);
    // True: log this event's line now. False: suppressed (counted).
    [[nodiscard]] bool admit(size_t server, bool down, uint64_t now) noexcept;
    // Servers whose window ended at `now` (or was followed by a new one
    // already) with changes suppressed in it: calls f(server, suppressed,
    // down_now) once each, down_now the state its last event left.
    template <class F>
    void summaries(uint64_t now, F &&f) {
        for (size_t i = 0; i < st_.size(); ++i) {
            state &s = st_[i];
            if (s.suppressed == 0 || (!s.due && now - s.start < window_)) continue;
            f(i, s.suppressed, s.last_down);
            s.suppressed = 0;
            if (!s.due) {  // the window is over: the next event opens a new one
                s.start = now;
                s.n = 0;
            }
            s.due = false;
        }
    }

private:
    struct state {
        uint64_t start = 0;  // the window's start
        uint32_t n = 0;      // lines logged in it
        uint64_t suppressed = 0;  // in the window(s) not summarised yet
        bool due = false;         // a new window began with some suppressed
        bool last_down = false;
        bool seen = false;
    };
    std::vector<state> st_;
    uint32_t burst_;
    uint64_t window_;
};

}  // namespace ferry::proxy
