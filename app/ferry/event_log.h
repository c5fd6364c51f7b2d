// The event log's writer (lib/proxy events.h, docs/OPERATIONS.md "Event log"):
// ONE DPDK control thread, never a worker lcore, drains every worker's ring of
// server_events each tick_ms, passes them through the per-server rate limit
// (proxy::event_limiter) and logs each line through rte_log (type ferry.events):
//
//   ferry.events: server down upstream=<name> server=<addr:port> cause="<cause>" checks|failures=<n>
//   ferry.events: server up upstream=<name> server=<addr:port> down_seconds=<s>
//   ferry.events: server changes not logged upstream=.. server=.. changes=<n> window_seconds=<w> reason="rate limit" now=<down|up>
//
// A worker never waits for it: a full ring drops the event and counts it
// (events_dropped in /ferry/http). What the thread did is counted in
// shared_state::events (/ferry/events, ferry_events_*_total).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "access_log.h"
#include "drain_thread.h"
#include "ferry/config/config.h"
#include "ferry/proxy/events.h"
#include "ferry/proxy/proxy.h"

namespace ferry::app {

class event_log_writer {
public:
    // Events per worker ring: far more than the changes one tick can see.
    static constexpr uint32_t ring_events = 1024;
    static constexpr int tick_ms = 100;
    // The rate limit: per server, at most burst lines per window.
    static constexpr uint32_t burst = 10;
    static constexpr uint64_t window_ns = 60'000'000'000ull;

    // `upstreams` names the upstreams by slot (it must outlive the writer).
    event_log_writer(const config::ferry_config &cfg, proxy::shared_state &shared,
                     const name_table &upstreams);
    ~event_log_writer();  // stop()
    event_log_writer(const event_log_writer &) = delete;
    event_log_writer &operator=(const event_log_writer &) = delete;

    // A new ring for one worker, owned by the writer (it must outlive the
    // proxy it is given to). Before start() only.
    proxy::event_sink *add_sink();
    // Starts the thread. Error text, or "" on success.
    std::string start();
    // Wakes the thread, which drains every ring, logs and exits; joins it.
    // Call once the workers stopped. Idempotent.
    void stop() noexcept;

private:
    void drain() noexcept;
    void line(const proxy::server_event &e) noexcept;
    [[nodiscard]] size_t key(uint16_t upstream, uint16_t server) const noexcept {
        return base_[upstream] + server;
    }

    access_log_names names_;
    proxy::shared_state &shared_;
    std::vector<size_t> base_;          // first dense server index of each upstream
    std::vector<size_t> caps_;          // each upstream's server slots
    std::vector<uint16_t> upstream_of_;               // dense index -> upstream
    std::vector<std::string> server_names_;           // dense index -> "a.b.c.d:port"
    std::vector<uint64_t> down_since_;  // per server: when it went down (0: up)
    std::unique_ptr<proxy::event_limiter> limiter_;
    std::vector<std::unique_ptr<proxy::event_sink>> sinks_;
    drain_thread thread_;  // last: stopped first, while the rings still exist
};

}  // namespace ferry::app
