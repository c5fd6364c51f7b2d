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
#include "ferry/reactor/stop_request.h"
#include "ferry/net/counters.h"
#include "ferry/net/fault.h"
#include "ferry/net/port.h"
#include "ferry/net/queue_io.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/proxy/proxy.h"
#include "reload.h"
#include "tcp_app.h"
#include "ferry/reactor/reactor.h"
#include "ferry/telemetry/view.h"
#include "ferry/xcore/inbox.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/outbox.h"

namespace ferry::app {

// A worker's queue pair of one port (lib/net's queue I/O) and the
// [tcp_test] services on that port: the reactor polls them together.
struct port_queue {
    std::unique_ptr<net::queue_io> io;
    tcp_test_app *app = nullptr;  // null without [tcp_test] services
    net::tcp_layer *tcp = nullptr;  // the port's TCP layer on this lcore
};

// Cross-core message opcodes of the app (lib/xcore carries them opaquely).
enum xcore_op : uint16_t {
    // A frame of a TCP flow the receiver owns (tcp_layer "Flow ownership").
    // mbuf = the frame, flags = port index.
    op_rx_frame = 1,
    // A neighbour binding learned by the sender (stack::set_neighbor_hook).
    // handle = MAC (48 bits), flags = port index; an IPv4 address in arg
    // (mbuf null), an IPv6 one as the 16 bytes of `mbuf`'s data (a buffer of
    // the port's pool: such news is rare, a few per peer and minute).
    op_neighbor = 2,
    // A default router learned (or given up) by the sender's router
    // discovery (stack::set_router_hook): arg = its lifetime in seconds (0:
    // no longer a router), flags = port index, the address as the 16 bytes
    // of `mbuf`'s data.
    op_router = 3,
};

struct worker;

// What the per-port callbacks of a worker's stack and TCP layer need.
struct port_link {
    worker *w = nullptr;
    uint16_t port = 0;  // index in app_state::ports
    rte_mempool *pool = nullptr;  // the port's (IPv6 neighbour news travels in an mbuf)
};

// What one worker lcore owns: queue `index` of every port, a stack per port,
// its reactor and its counters.
struct worker {
    unsigned lcore = 0;
    uint16_t index = 0;
    reactor::reactor_counters rc;
    net::io_counters io;
    std::vector<net::net_counters *> net_counters;    // one per port, same order as ports
    std::vector<std::unique_ptr<net::stack>> stacks;  // one per port
    std::vector<std::unique_ptr<net::tcp_counters>> tcp_counters;  // one per port
    std::vector<std::unique_ptr<net::tcp_layer>> tcp_layers;       // one per port
    std::vector<std::unique_ptr<tcp_test_app>> tcp_apps;           // one per port, or none
    std::vector<std::unique_ptr<port_queue>> queues;    // one per port
    std::vector<std::unique_ptr<port_link>> links;    // one per port
    std::unique_ptr<reactor::reactor> loop;
    // The HTTP proxy of this lcore (null without [[listener]]).
    std::unique_ptr<proxy::worker_proxy> proxy;
    // Cross-core rings to and from the other workers (null with one worker).
    std::unique_ptr<xcore::outbox> out;
    std::unique_ptr<xcore::inbox> in;
    // The reload generation this worker's proxy runs (reload.h), and that
    // configuration, held while the proxy reads it (null: the initial one).
    uint64_t config_generation = 0;
    std::shared_ptr<const config::ferry_config> config;
};

struct app_state {
    // The configuration ferry started with; reload.active() is the one in force.
    config::ferry_config cfg;
    reloader reload;
    std::string drivers_dir;
    std::vector<net::port> ports;
    std::vector<std::unique_ptr<worker>> workers;
    std::vector<std::unique_ptr<net::net_counters>> net_counter_blocks;
    worker *by_lcore[RTE_MAX_LCORE] = {};
    // One SPSC ring per ordered pair of workers (null with one worker).
    std::unique_ptr<xcore::mesh> mesh;
    // The proxy's process-wide state (server health), null without listeners.
    std::unique_ptr<proxy::shared_state> proxy_shared;
    reactor::settings settings;
};

// Made by SIGINT/SIGTERM; workers poll its flag once per iteration, and it
// rings every worker's doorbell so that a loop about to sleep sees it too.
extern reactor::stop_request stop_requested;

// The one app_state of the process, for callbacks that carry no context.
extern app_state *the_app;

// Builds each worker's reactor with its queue pollers and flusher. Returns an
// error message, or "" on success.
std::string setup_worker(app_state &app, worker &w);
// Creates the cross-core rings for `workers` workers (none for one worker),
// before the workers are set up (setup_worker registers each inbox). Error or "".
std::string create_mesh(app_state &app, unsigned workers);
// Every worker's outbox, once setup_worker ran for all of them (an outbox
// needs every peer's doorbell). Error or "".
std::string setup_outboxes(app_state &app);
// tcp_layer_config::handoff and the stack's neighbor hook for `link`.
bool handoff_frame(void *link, uint16_t owner, rte_mbuf *m) noexcept;
void share_neighbor(void *link, const net::ip_addr &ip, net::mac_addr mac) noexcept;
void share_router(void *link, const net::ipv6_addr &router, uint16_t lifetime_s) noexcept;
int worker_main(void *arg);
// Rings every worker's doorbell so sleepers re-read the stop flag and settings.
void wake_all_workers() noexcept;
// What lib/telemetry's commands and exporter read: every worker's counter
// blocks, once the workers (and their outboxes) are set up.
telemetry::process_view telemetry_view(app_state &app);

}  // namespace ferry::app
