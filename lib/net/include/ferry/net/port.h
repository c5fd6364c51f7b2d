// NIC port bring-up from a driver profile (drivers-config/<profile>.toml) and
// per-queue burst I/O.
//
// One port = one DPDK ethdev with one rx/tx queue pair per worker lcore and one
// mbuf pool (per-lcore mempool caches keep allocation lock-free). Capabilities
// (rx interrupts, checksum offload, RSS) are probed here, logged under
// ferry.port, and exported in /ferry/ports; a missing one falls back to
// software (checksums) or to polling (interrupts).
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/base/result.h"
#include "ferry/net/fault.h"
#include "ferry/net/kernel_rings.h"
#include "ferry/net/packet_io.h"

namespace ferry::net {

struct port_caps {
    bool rx_interrupts = false;  // every rx queue has an event fd we can sleep on
    // No rx interrupts, but every rx queue reads an AF_PACKET or AF_XDP
    // socket's mmap'ed ring, and the socket polls readable while the ring holds a frame: a
    // sleeping lcore can wait on it (port::rx_wake_fds) as on an interrupt fd.
    bool rx_wake_sockets = false;
    bool rss = false;            // the NIC spreads flows over queues by hash
    bool rx_ipv4_cksum = false, rx_tcp_cksum = false, rx_udp_cksum = false;
    bool tx_ipv4_cksum = false, tx_tcp_cksum = false, tx_udp_cksum = false;
    bool tx_multi_segs = false;
    uint16_t max_rx_queues = 0, max_tx_queues = 0;
};

// Everything lib/net needs to open and run a port, resolved by the app from
// its configuration ([[port]] and the driver profile): lib/net reads no
// configuration of its own.
struct port_spec {
    std::string name;     // the [[port]] name, for messages and telemetry
    std::string profile;  // the driver profile's name
    bool pci = false;     // a PCI device EAL probed (-a); else a vdev created here
    std::string driver;   // vdev: the DPDK driver, e.g. "net_tap"
    std::string devargs;  // vdev: the driver's arguments, expanded for this port
    std::string pci_addr; // pci: dddd:bb:dd.f
    std::string iface;    // the kernel interface a vdev makes or uses ("" = none)
    uint32_t address = 0;  // IPv4, host byte order
    uint8_t prefix_len = 0;
    std::optional<uint32_t> gateway;
    std::optional<std::array<uint8_t, 16>> address6;  // IPv6, network order
    uint8_t prefix6_len = 0;
    std::optional<std::array<uint8_t, 16>> gateway6;  // the IPv6 router, on-link
    uint32_t icmp6_errors_per_s = 10, icmp6_error_burst = 10;  // iface_config's
    bool router_discovery = true;  // iface_config's (with address6, without gateway6)
    std::optional<std::array<uint8_t, 6>> mac;  // else the device's own
    uint16_t mtu = 1500;
    uint32_t mbufs = 16384;
    uint16_t rx_desc = 0, tx_desc = 0;  // per queue (0: the device's default)
    bool rx_interrupts = false, rss = false;              // the profile offers them
    std::vector<std::string> rx_offloads, tx_offloads;  // offload names (offload_flag)
    fault_spec fault;
};

struct port {
    port_spec spec;
    uint16_t id = UINT16_MAX;  // DPDK port id
    std::string dev_name;      // ethdev name, e.g. net_tap0
    std::string driver_name;   // from rte_eth_dev_info
    uint16_t queues = 0;       // rx/tx queue pairs, one per worker
    uint16_t rx_desc = 0, tx_desc = 0;
    rte_mempool *pool = nullptr;
    rte_ether_addr mac{};
    port_caps caps;
    uint64_t rx_offloads = 0, tx_offloads = 0;  // enabled, not merely offered
    // How kernel->ferry traffic is spread over the queues, so that a flow's
    // owner (tcp_layer "Flow ownership") is computable: "tap-ebpf" (net_tap
    // with our steering program), "single-queue", or "none (...)" when the
    // steering could not be set (flows then often arrive on another lcore's
    // queue and are handed over: correct, slower).
    std::string steering;
    // The kernel's packet rings when the PMD receives through AF_PACKET
    // sockets (net_af_packet: one per queue pair), for the drops the kernel
    // counts on them (kernel_rings.h); null for every other driver. Heap-held:
    // its address is the EAL alarm's argument while the port moves.
    std::unique_ptr<kernel_rings> kernel;
    // Per queue, the AF_PACKET or AF_XDP socket its rx ring belongs to, when
    // caps.rx_wake_sockets (else empty). Owned by the PMD.
    std::vector<int> rx_wake_fds;
    // net_ferry_packet (packet_io.h): ferry's own AF_PACKET queue pairs, one per
    // queue, behind the net_ring ethdev `id`; empty for every other driver.
    std::vector<std::unique_ptr<packet_queue>> packet_queues;
    bool created = false;  // a vdev this process hot-plugged (removed on close)
    bool started = false;
};

// Creates the device (vdev) or finds it (pci, probed by EAL from -a), creates
// its mbuf pool, configures `queues` queue pairs and starts it. `want_rx_intr`
// asks for rx interrupts (the profile must offer them). On failure returns a
// message naming the port and the failing DPDK call with its errno text, and
// releases what it had created.
[[nodiscard]] result<port, std::string> port_open(const port_spec &spec, uint16_t queues,
                                                  uint32_t workers, bool want_rx_intr);

// The fd an lcore sleeping on rx queue `queue` waits on: the queue's rx
// interrupt fd (caps.rx_interrupts), its AF_PACKET or AF_XDP socket
// (caps.rx_wake_sockets), or -1: the queue must be polled.
[[nodiscard]] int rx_wake_fd(const port &p, uint16_t queue) noexcept;

// Stops and closes the device and frees its pool. Safe on a partly opened port.
// Reads the kernel rings' counts a last time (logged when the kernel dropped
// frames) and stops reading them before the PMD closes their sockets.
void port_close(port &p) noexcept;

// The profile driver name of ferry's own AF_PACKET path (packet_io.h).
inline constexpr std::string_view own_packet_driver = "net_ferry_packet";

// The ethdev offload bit for a profile offload name (rx or tx side), 0 if the
// name is unknown or belongs to the other direction.
[[nodiscard]] uint64_t offload_flag(std::string_view name, bool rx) noexcept;

// Names of the offload bits, for logs and telemetry.
[[nodiscard]] std::string offload_names(uint64_t rx_offloads, uint64_t tx_offloads);

}  // namespace ferry::net
