// Process-wide state of a running ferry: built on the main thread before the
// workers launch, read-only afterwards except for each worker's own block.
#pragma once

#include <rte_lcore.h>

#include <atomic>
#include <memory>
#include <vector>

#include "ferry/base/counter.h"
#include "ferry/config/config.h"
#include "ferry/net/counters.h"
#include "ferry/net/port.h"
#include "ferry/net/stack.h"

namespace ferry::app {

// Per-lcore loop counters (the reactor grows these into the full set).
#define FERRY_LCORE_COUNTERS(X)                                               \
    X(polls, "loop iterations")                                               \
    X(busy_polls, "iterations that found work (rx or timers)")                \
    X(rx_packets, "frames received from all of this lcore's queues")          \
    X(tx_packets, "frames handed to the NIC")                                 \
    X(tx_short_bursts, "tx bursts the NIC took only partly (retried later)")  \
    X(tx_drop_stuck, "frames freed after the NIC refused them for too long")

struct alignas(64) lcore_counters {
    FERRY_LCORE_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_LCORE_FIELD(n, h) FERRY_COUNTER_FIELD(lcore_counters, n, h)
inline constexpr counter_field<lcore_counters> lcore_counter_fields[] = {
    FERRY_LCORE_COUNTERS(FERRY_LCORE_FIELD)};

// What one worker lcore owns: queue `index` of every port and a stack per port.
struct worker {
    unsigned lcore = 0;
    uint16_t index = 0;
    lcore_counters counters;
    std::vector<net::net_counters *> net_counters;  // one per port, same order as ports
    std::vector<std::unique_ptr<net::stack>> stacks;  // one per port
};

struct app_state {
    config::ferry_config cfg;
    std::string drivers_dir;
    std::vector<net::port> ports;
    std::vector<std::unique_ptr<worker>> workers;
    std::vector<std::unique_ptr<net::net_counters>> net_counter_blocks;
    worker *by_lcore[RTE_MAX_LCORE] = {};
    uint64_t tsc_hz = 0;
};

// Set by SIGINT/SIGTERM; workers poll it once per iteration.
extern std::atomic<bool> stop_requested;

// The one app_state of the process, for telemetry callbacks (which carry no context).
extern app_state *the_app;

int worker_main(void *arg);
void register_telemetry();

}  // namespace ferry::app
