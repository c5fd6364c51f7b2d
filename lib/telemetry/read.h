// Values that /ferry/* (commands.cpp) and /metrics (metrics.cpp) both show,
// read one way for both so the two can never disagree on what they mean.
// Any thread; see view.h for what may be read how.
#pragma once

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ferry/net/packet_io.h"
#include "ferry/telemetry/view.h"

namespace ferry::telemetry::detail {

// The ethdev stats exported per port (rte_eth_stats members).
struct eth_stat_field {
    const char *name;
    const char *help;
    uint64_t rte_eth_stats::*member;
};
inline constexpr eth_stat_field eth_stat_fields[] = {
    {"ipackets", "packets the port received (ethdev stats)", &rte_eth_stats::ipackets},
    {"opackets", "packets the port sent (ethdev stats)", &rte_eth_stats::opackets},
    {"ibytes", "bytes the port received (ethdev stats)", &rte_eth_stats::ibytes},
    {"obytes", "bytes the port sent (ethdev stats)", &rte_eth_stats::obytes},
    {"imissed", "packets the NIC dropped: no free rx descriptor (ethdev stats)",
     &rte_eth_stats::imissed},
    {"ierrors", "erroneous packets received (ethdev stats)", &rte_eth_stats::ierrors},
    {"oerrors", "packets the port failed to send (ethdev stats)", &rte_eth_stats::oerrors},
    {"rx_nombuf", "rx mbuf allocation failures: the mempool was empty (ethdev stats)",
     &rte_eth_stats::rx_nombuf},
};

// The kernel's counts on a port's AF_PACKET rings (net::kernel_rings; only
// ports whose PMD receives through them: net_af_packet).
struct kernel_ring_field {
    const char *name;
    const char *help;
    uint64_t net::kernel_ring_totals::*member;
};
inline constexpr kernel_ring_field kernel_ring_fields[] = {
    {"kernel_ring_packets",
     "frames the kernel handed to the port's af_packet rx rings, dropped ones included "
     "(PACKET_STATISTICS)",
     &net::kernel_ring_totals::packets},
    {"kernel_ring_drops",
     "frames the kernel dropped because the port's af_packet rx ring was full: ferry did not "
     "drain it in time (PACKET_STATISTICS; not in imissed)",
     &net::kernel_ring_totals::drops},
};

// An upstream server's per-lcore counters summed over the lcores.
struct server_totals {
    uint64_t requests = 0, failures = 0, active = 0, idle = 0, connections = 0, latency_ns = 0,
             responses = 0;
};
[[nodiscard]] server_totals sum_server(const process_view &v, size_t upstream, size_t server);

// A refused setting: {"error": why, "allowed": what is}, nothing changed
// (DPDK answers null to a negative return, which tells the operator nothing).
int refused(rte_tel_data *d, const char *why, const char *allowed);

// /ferry/server (server_admin.cpp): read or set a server's admin state and weight.
int server_cmd(const process_view &v, const char *params, rte_tel_data *d);

// True while health checks hold the server down at `now` (reactor clock).
[[nodiscard]] bool server_down(const proxy::server_health &h, uint64_t now) noexcept;

// net_ferry_packet's counter `f` summed over the port's queue pairs (0 for
// other ports): /ferry/ports' packet_* and ferry_port_packet_*_total.
[[nodiscard]] uint64_t packet_total(const net::port &p,
                                    const counter_field<net::packet_counters> &f) noexcept;

// A configuration text's hash as /ferry/config and /ferry/reload show it:
// 16 hex digits.
[[nodiscard]] std::string hash_hex(uint64_t h);

// The proxy's counters summed over the lcores (rejected_by_reason included).
// All zero without [[listener]].
void sum_http(const process_view &v, proxy::http_counters &sum);

// Client connections open now (accepted minus closed), never wrapping below 0:
// closed is read first, so a connection that came and went between the two
// loads cannot make it negative.
[[nodiscard]] uint64_t active_connections(const proxy::http_counters &c) noexcept;

// One cross-core ring from one worker to another.
struct ring_snapshot {
    const lcore_view *from = nullptr;
    const lcore_view *to = nullptr;
    unsigned depth = 0;  // read before `lane`: it can only have been lower than that mark
    unsigned capacity = 0;
    xcore::outbox::lane_stats lane;
};
// Every ring of the mesh in (from, to) order; empty with one worker.
[[nodiscard]] std::vector<ring_snapshot> rings(const process_view &v);
// The same into `out` (cleared first; its capacity is kept: the exporter's scrapes).
void rings(const process_view &v, std::vector<ring_snapshot> &out);

}  // namespace ferry::telemetry::detail
