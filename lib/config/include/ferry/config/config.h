// Typed configuration for ferry and the driver profiles it brings ports up with.
//
// Everything here is control-path code: it allocates, returns result<> with a message, and
// never touches DPDK (the app and lib/net map the names below onto rte_eth_* flags). Every
// error names file:line:column and the key path of the offending TOML node, so a typo in a
// config is reported where it is instead of being silently ignored.
//
// The configuration file (all keys listed; anything else is an error):
//
//   [ferry]                         # optional table, every key optional
//   workers = 2                     # 0..128; 0 (default) = one worker per EAL lcore
//   wakeup_mode = "conditional"     # conditional | always | poll (DESIGN.md "doorbell")
//   idle_threshold_us = 200         # 1..1000000: no work this long -> try to sleep
//   neighbor_timeout_s = 60         # 1..86400: ARP entry lifetime
//
//   [tcp]                           # optional: the TCP layer of every (lcore, port)
//   max_connections = 1024          # 1..1048576 connection slots per lcore and port
//   syn_backlog = 128               # 1..65535 connections in SYN-RECEIVED per listener
//   syn_cookies = true              # RFC 4987 SYN cookies when the backlog is full
//   time_wait_ms = 60000            # 0..240000, 2*MSL (RFC 9293 3.10.8)
//   tx_checksum_offload = false     # let the port compute TCP checksums (needs the
//                                   #   profile's tcp_cksum tx offload)
//
//   [tcp_test]                      # optional: test services inside ferry, 0 = off
//   echo_port = 7                   # 0..65535: sends back what it receives (RFC 862)
//   discard_port = 9                # reads and drops (RFC 863)
//   source_port = 19                # sends a deterministic stream (byte k = k mod 251)
//   source_bytes = 0                # 0..2^48: the source closes after this many, 0 = never
//                                   #   (the three ports must differ)
//
//   [[port]]                        # at least one
//   name = "tap0"                   # required, unique, 1..32 of [a-z0-9_]
//   profile = "net_tap"             # required, drivers-config/<profile>.toml
//   iface = "ferry0"                # kernel interface (tap to create, af_packet's veth);
//                                   #   1..15 of [A-Za-z0-9_.-], unique
//   # pci = "0000:03:00.0"          # for pci profiles: dddd:bb:dd.f, unique
//   address = "10.77.0.1/24"        # required; a host address (not network/broadcast,
//                                   #   not 0/8, 127/8, multicast or 240/4); prefix 1..32;
//                                   #   subnets of different ports must not overlap
//   gateway = "10.77.0.254"         # optional, a host inside the port's subnet
//   mac = "02:00:0a:4d:00:01"       # optional, unicast and not all-zero
//   mtu = 1500                      # 68..9000
//   mbufs = 16384                   # 1024..16777216, the port's mbuf pool
//   rx_desc = 0                     # 0 = the profile's, else a power of two in 32..32768
//   tx_desc = 0                     # same
//
// A driver profile (drivers-config/<name>.toml, see drivers-config/README.md):
//
//   [profile]
//   name = "net_tap"                # must match the file name
//   bus = "vdev"                    # vdev | pci
//   binding = "vfio-pci"            # pci only: vfio-pci (default for pci) | none (bifurcated
//                                   #   PMDs such as mlx5 drive the device next to its
//                                   #   kernel driver); vdev profiles may only say none
//   kernel_driver = "ixgbe"         # pci only, [a-z0-9_-]{1,32}: the kernel driver the
//                                   #   device leaves (vfio-pci) or stays on (none, required)
//   driver = "net_tap"              # DPDK driver name, net_[a-z0-9_]+
//   devargs = "iface={iface}"       # placeholders {iface} {queues} {index}, no whitespace
//   max_queues = 4                  # 1..1024
//   rx_desc = 64                    # power of two in 32..32768
//   tx_desc = 64
//   rx_interrupts = true            # can a queue wake a sleeping lcore
//   rss = false                     # configure RTE_ETH_MQ_RX_RSS (false: the device
//                                   #   spreads flows itself, or there is one queue)
//   rx_offloads = ["ipv4_cksum"]    # from known_rx_offloads()
//   tx_offloads = ["multi_segs"]    # from known_tx_offloads()
//   caveats = "..."                 # optional free text
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/base/result.h"

namespace ferry::config {

// How a producer wakes a consumer lcore that may be asleep (DESIGN.md "The doorbell
// protocol"): only when it announced idleness, on every enqueue, or never (cores poll).
enum class wakeup_mode : uint8_t { conditional, always, poll };
std::string_view to_string(wakeup_mode m);
// "conditional" | "always" | "poll"; anything else (including other case) -> nullopt.
std::optional<wakeup_mode> parse_wakeup_mode(std::string_view s);

// Where a TOML node is. line/column are 1-based; 0 = unknown.
struct source_pos {
    std::string file;
    uint32_t line = 0, column = 0;
};

struct error {
    source_pos where;
    std::string key;  // key path: "ferry.workers", "port[0].address"; empty if none
    std::string message;
    // "file:line:col: key 'port[0].address': message"; unknown parts are left out
    // ("file: message", "key 'x': message", "message").
    std::string to_string() const;
};

enum class bus : uint8_t { vdev, pci };
std::string_view to_string(bus b);

// What deploy/ferry-setup does with a pci device before ferry starts: bind it to vfio-pci,
// or leave it on its kernel driver (bifurcated PMDs: mlx5 works through rdma-core).
enum class binding : uint8_t { none, vfio_pci };
std::string_view to_string(binding b);  // "none" | "vfio-pci"

struct driver_profile {
    std::string name, file;  // profile name, file it came from
    bus bus_kind = bus::vdev;
    binding bind = binding::none;  // pci profiles default to vfio_pci
    std::string kernel_driver;     // pci only; required with binding::none
    std::string driver;   // DPDK driver name, e.g. "net_tap"
    std::string devargs;  // template; {iface} {queues} {index} are replaced by expand_devargs
    uint16_t max_queues = 1, rx_desc = 0, tx_desc = 0;
    bool rx_interrupts = false, rss = false;
    std::vector<std::string> rx_offloads, tx_offloads;  // names from known_*_offloads()
    std::string caveats;
};

// The offload names a profile may list, in DPDK's RTE_ETH_{RX,TX}_OFFLOAD_* order. A name
// means the same flag minus the prefix, lower-cased (tcp_tso = RTE_ETH_TX_OFFLOAD_TCP_TSO).
std::span<const std::string_view> known_rx_offloads();
std::span<const std::string_view> known_tx_offloads();

struct port_config {
    std::string name, profile, iface, pci;
    uint32_t address = 0;  // IPv4, host byte order, from "a.b.c.d/len"
    uint8_t prefix_len = 0;
    std::optional<uint32_t> gateway;
    std::optional<std::array<uint8_t, 6>> mac;
    uint16_t mtu = 1500;
    uint32_t mbufs = 16384;
    uint16_t rx_desc = 0, tx_desc = 0;  // 0 = the profile's
    uint32_t index = 0;                 // position in the [[port]] list: key paths, {index}
    source_pos where;                   // the port's table
};

struct tcp_config {
    uint32_t max_connections = 1024;
    uint32_t syn_backlog = 128;
    bool syn_cookies = true;
    uint32_t time_wait_ms = 60000;
    bool tx_checksum_offload = false;
};

struct tcp_test_config {
    uint16_t echo_port = 0, discard_port = 0, source_port = 0;  // 0 = off
    uint64_t source_bytes = 0;                                  // 0 = unlimited
};

struct ferry_config {
    std::string source;    // file path, or "<embedded default>"
    uint32_t workers = 0;  // 0 = one worker per EAL lcore
    wakeup_mode wakeup = wakeup_mode::conditional;
    uint32_t idle_threshold_us = 200;
    uint32_t neighbor_timeout_s = 60;
    tcp_config tcp;
    tcp_test_config tcp_test;
    std::vector<port_config> ports;
};

// Parses and validates a whole configuration. source_name is used in error positions and
// copied to ferry_config::source. Returns the first error in document order.
result<ferry_config, error> parse(std::string_view toml_text, std::string_view source_name);
// Reads path and parse()s it. An unreadable file -> error{where.file = path, message =
// "cannot read file: <errno text>"}.
result<ferry_config, error> load_file(const std::string &path);
// TOML text of the built-in configuration: one net_tap port "tap0" on iface "ferry0",
// address 10.77.0.1/24, no gateway. Parse it with source_name embedded_default_name.
std::string_view embedded_default();
inline constexpr std::string_view embedded_default_name = "<embedded default>";

// Parses and validates a driver profile. When source_name's file name ends in ".toml", the
// profile's name must equal the rest of it (drivers-config/net_tap.toml names net_tap).
result<driver_profile, error> parse_profile(std::string_view text, std::string_view source_name);
// Loads dir/<name>.toml. name must be [a-z0-9_]+ (no paths). A missing file -> error
// listing the profiles available in dir; an unreadable dir or file -> errno text.
result<driver_profile, error> load_profile(const std::string &dir, std::string_view name);

// Checks a port against the profile it will be opened with, for `queues` queue pairs:
// the port names this profile; a vdev profile whose devargs use {iface} needs iface, other
// vdev profiles and pci profiles must not set it; pci profiles need pci (dddd:bb:dd.f),
// vdev profiles must not set it; 1 <= queues <= max_queues; mtu in 68..9000; rx/tx_desc
// (the port's or else the profile's) powers of two in 32..32768; mbufs cover the descriptor
// rings, queues * (rx_desc + tx_desc). nullopt if fine, else an error at the port's table.
std::optional<error> check_port(const port_config &port, const driver_profile &profile,
                                uint32_t queues);

// The profile's devargs with {iface}, {queues} and {index} (port.index) filled in.
std::string expand_devargs(const driver_profile &profile, const port_config &port, uint32_t queues);
// The EAL device argument for the port: vdev -> "<driver>_<port name>[,<devargs>]" (for
// --vdev; EAL matches the driver by name prefix), pci -> "<pci>[,<devargs>]" (for -a).
std::string eal_device(const driver_profile &profile, const port_config &port, uint32_t queues);

// "10.77.0.1" (host byte order in).
std::string format_ipv4(uint32_t addr);
// "02:00:0a:4d:00:01".
std::string format_mac(const std::array<uint8_t, 6> &mac);

}  // namespace ferry::config
