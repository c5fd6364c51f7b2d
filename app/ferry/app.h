// Process-wide state of a running ferry: built on the main thread before the
// workers launch, read-only afterwards except for each worker's own blocks.
#pragma once

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <atomic>
#include <memory>
#include <vector>

#include "ferry/base/counter.h"
#include "ferry/config/config.h"
#include "ferry/net/counters.h"
#include "ferry/net/port.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "tcp_app.h"
#include "ferry/reactor/reactor.h"

namespace ferry::app {

// Port I/O counters per lcore (the loop's own counters are the reactor's).
#define FERRY_IO_COUNTERS(X)                                                  \
    X(rx_packets, "frames received from all of this lcore's queues")          \
    X(rx_bursts, "rx bursts that returned frames")                            \
    X(tx_packets, "frames handed to the NIC")                                 \
    X(tx_short_bursts, "tx bursts the NIC took only partly (retried later)")  \
    X(tx_drop_stuck, "frames freed after the NIC refused them for too long")

struct alignas(64) io_counters {
    FERRY_IO_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_IO_FIELD(n, h) FERRY_COUNTER_FIELD(io_counters, n, h)
inline constexpr counter_field<io_counters> io_counter_fields[] = {FERRY_IO_COUNTERS(FERRY_IO_FIELD)};

// One rx/tx queue pair of one port as seen by its worker: the reactor polls
// it, the pre-sleep re-check asks pending() (which receives into the stash,
// so nothing is lost), and the flusher transmits the stack's batch.
struct queue_io {
    static constexpr uint16_t burst = 32;
    uint16_t port_id = 0, queue = 0;
    net::stack *stack = nullptr;
    tcp_test_app *app = nullptr;  // null without [tcp_test] services
    io_counters *io = nullptr;
    uint32_t tx_stuck = 0;  // consecutive flushes the NIC refused part of the batch
    uint16_t stash_n = 0, stash_pos = 0;
    rte_mbuf *stash[burst];
};

// What one worker lcore owns: queue `index` of every port, a stack per port,
// its reactor and its counters.
struct worker {
    unsigned lcore = 0;
    uint16_t index = 0;
    reactor::reactor_counters rc;
    io_counters io;
    std::vector<net::net_counters *> net_counters;    // one per port, same order as ports
    std::vector<std::unique_ptr<net::stack>> stacks;  // one per port
    std::vector<std::unique_ptr<net::tcp_counters>> tcp_counters;  // one per port
    std::vector<std::unique_ptr<net::tcp_layer>> tcp_layers;       // one per port
    std::vector<std::unique_ptr<tcp_test_app>> tcp_apps;           // one per port, or none
    std::vector<std::unique_ptr<queue_io>> queues;    // one per port
    std::unique_ptr<reactor::reactor> loop;
};

struct app_state {
    config::ferry_config cfg;
    std::string drivers_dir;
    std::vector<net::port> ports;
    std::vector<std::unique_ptr<worker>> workers;
    std::vector<std::unique_ptr<net::net_counters>> net_counter_blocks;
    worker *by_lcore[RTE_MAX_LCORE] = {};
    reactor::settings settings;
};

// Set by SIGINT/SIGTERM; workers poll it once per iteration.
extern std::atomic<bool> stop_requested;

// The one app_state of the process, for telemetry callbacks (which carry no context).
extern app_state *the_app;

// Builds each worker's reactor with its queue pollers and flusher. Returns an
// error message, or "" on success.
std::string setup_worker(app_state &app, worker &w);
int worker_main(void *arg);
// Rings every worker's doorbell so sleepers re-read the stop flag and settings.
void wake_all_workers() noexcept;
void register_telemetry();

}  // namespace ferry::app
