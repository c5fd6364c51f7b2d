// What the telemetry commands and the Prometheus exporter read: a view of the
// running process that the app builds once every worker is set up.
//
// This layer sits above every other (lib/meson.build): it reads the counter
// blocks of the reactor, the stack, TCP, the cross-core rings and the proxy,
// but it never includes the app's headers. The app describes its workers
// here (pointers to their blocks, one entry per lcore) and registers the one
// action telemetry may take (waking every worker after a settings change).
//
// Everything a view points to must stay valid and, apart from the counters,
// unchanged while the view is published (commands.h) or an exporter serving
// it runs (exporter.h). Readers only load: counters with relaxed atomic loads
// (ferry/base/counter.h), the health words and the ring tails atomically;
// ethdev stats and mempool counts through DPDK calls safe from any thread;
// the kernel's packet ring counts through net::kernel_rings::read() (a mutex
// and a getsockopt per socket, never touching a worker).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferry/base/counter.h"
#include "ferry/config/config.h"
#include "ferry/net/counters.h"
#include "ferry/net/fault.h"
#include "ferry/net/port.h"
#include "ferry/net/queue_io.h"
#include "ferry/net/tcp_block_pool.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/proxy/proxy.h"
#include "ferry/reactor/reactor.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/outbox.h"

namespace ferry::telemetry {

struct exporter_counters;  // exporter.h

// One port as one lcore serves it.
struct lcore_port_view {
    const net::net_counters *net = nullptr;      // never null
    const net::tcp_counters *tcp = nullptr;      // null: no TCP layer on this port
    const net::fault_counters *fault = nullptr;  // null: no [port.fault] on this port
    // The TCP layer's ring blocks (tcp_block_pool.h); null: no TCP layer.
    const net::tcp_block_pool *blocks = nullptr;
    // The TCP layer's connection slots ever made (resident); 0: no layer.
    const net::tcp_layer *tcp_layer = nullptr;
};

// One worker lcore.
struct lcore_view {
    unsigned lcore = 0;  // EAL lcore id
    // Worker index: the queue it owns on every port, its row in the mesh.
    uint16_t index = 0;
    const reactor::reactor *loop = nullptr;                // never null
    const reactor::reactor_counters *reactor = nullptr;  // never null
    // The port I/O counters (exported as group "io": ferry_io_*_total).
    const net::io_counters *io = nullptr;  // never null
    std::vector<lcore_port_view> ports;            // same order as process_view::ports
    const proxy::worker_proxy *proxy = nullptr;  // null without [[listener]]
    const xcore::outbox *out = nullptr;          // null with one worker
};

// ferry's memory bound (docs/OPERATIONS.md "Memory"), fixed once it is
// ready: everything it allocates is allocated at start-up.
struct memory_plan {
    // Allowance for what is not counted piece by piece (thread stacks, the
    // allocator's overhead, neighbour tables, log buffers): fixed, per worker.
    static constexpr uint64_t slack_fixed = 16ull << 20;
    static constexpr uint64_t slack_per_worker = 2ull << 20;
    uint64_t base_rss = 0;        // resident after EAL initialisation, before ferry allocated
    uint64_t dpdk_heap = 0;       // DPDK heap ferry took: mbuf pools, rings, queues
    uint64_t tcp_reserved = 0;    // every worker's TCP layers (connection slots, tables)
    uint64_t proxy_reserved = 0;  // every worker's proxy (client/upstream slots, head buffers)
    // The kernel's packet rings of af_packet ports (rx + tx per queue pair), mapped
    // into ferry and resident from start-up (net::kernel_rings::bytes).
    uint64_t kernel_rings = 0;
    uint64_t slack = 0;
    uint64_t bound = 0;  // the sum: resident memory never goes above it
};

// This process's resident memory now (VmRSS) and its peak (VmHWM), in bytes,
// from /proc/self/status; 0 when it cannot be read.
struct resident {
    uint64_t now = 0, peak = 0;
};
[[nodiscard]] resident read_resident() noexcept;

// Configuration reloads (the app's reload.h), written by the one thread that
// reloads, read with relaxed loads.
struct reload_counters {
    std::atomic<uint64_t> generation{0};  // 0: the configuration ferry started with
    std::atomic<uint64_t> hash{0};        // FNV-1a of the active configuration's text
    std::atomic<uint64_t> applied{0};     // files swapped in
    std::atomic<uint64_t> unchanged{0};   // files read that changed nothing
    std::atomic<uint64_t> refused{0};     // valid files that change what needs a restart
    std::atomic<uint64_t> invalid{0};     // files that did not parse or validate
    std::atomic<uint64_t> last_unix_ns{0};  // when the last reload ended (0: none yet)
    // Reloaded configurations still in memory (held by the reloader, a worker
    // not yet past its safe point, or a reader): at most workers + readers + 1.
    std::atomic<uint64_t> alive{0};
};

// What one reload did, for /ferry/reload.
struct reload_report {
    // applied | unchanged | refused | invalid; a check: would_apply instead of applied
    std::string result;
    std::vector<std::string> errors;   // file:line:col: key '...': why (refused, invalid)
    std::vector<std::string> changes;  // what was applied ("route[0].path_prefix: ...")
    std::string source;                // the file read
    uint64_t generation = 0, hash = 0;  // in force afterwards
};

struct process_view {
    // The configuration in force (the one ferry started with, then each one
    // a reload swapped in), held by the caller while it reads it: a reload
    // may replace it meanwhile. Never null.
    std::shared_ptr<const config::ferry_config> (*config_snapshot)() = nullptr;
    [[nodiscard]] std::shared_ptr<const config::ferry_config> configuration() const {
        return config_snapshot();
    }
    // Reloads: the counters (null: no reloads offered), and the action
    // /ferry/reload takes (re-read the file, validate, swap in; the report
    // says what happened). With `check` nothing is applied or counted: the
    // report says what a reload of `path` ("": the configured file) would do.
    const reload_counters *reloads = nullptr;
    void (*reload)(reload_report &out, bool check, const std::string &path) = nullptr;
    std::string drivers_dir;
    std::span<const net::port> ports;
    std::vector<lcore_view> lcores;
    const xcore::mesh *mesh = nullptr;                   // null with one worker
    const proxy::shared_state *proxy_shared = nullptr;  // null without [[listener]]
    // The live settings; /ferry/wakeup_mode and /ferry/idle_threshold_us
    // write them, then call wake_all so sleeping workers re-read them at once.
    reactor::settings *settings = nullptr;  // never null
    void (*wake_all)() = nullptr;           // never null
    memory_plan memory;
    // The [admin] exporter's counters; null without metrics_address.
    const exporter_counters *exporter = nullptr;
    // Set from SIGTERM/SIGINT on (the stop request): readiness (GET /healthz)
    // answers 503 "draining". Null: never.
    const std::atomic<bool> *draining = nullptr;
};

}  // namespace ferry::telemetry
