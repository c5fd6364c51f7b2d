// Flow-to-queue steering: which NIC queue, and so which worker lcore, a flow's
// packets arrive on.
//
// Read first: drivers/net/tun.c (tun_select_queue, tun_ebpf_select_queue,
// __tun_set_ebpf), Documentation/networking/tuntap.rst (multiqueue), and
// shared/TESTBED.md "Which queue a flow lands on".
//
// ferry runs one worker lcore per queue, and the lcore a flow's packets arrive
// on owns it. On net_tap the kernel picks the queue of every kernel->ferry
// frame; left alone it uses tun automq, a hash we cannot compute. A steering
// eBPF program (TUNSETSTEERINGEBPF) replaces that choice with ours:
//
//   queue = (u16)program(frame) % numqueues        (tun_ebpf_select_queue)
//
// The program here returns frame_steer_hash(frame), which for TCP/UDP over
// IPv4 or IPv6 is flow_steer_hash() of the frame's 4-tuple (IPv6 addresses
// folded to 32 bits as ip_address::fold does), so ferry computes the owner of
// any flow in software with flow_queue(flow_steer_hash(...), queues) — for a SYN
// it receives as for a connection it opens (it can pick a local port whose
// return traffic lands on its own queue).
//
// Which frames are hashed, with the ports read at offset `l4`:
//  - Ethernet II with EtherType 0x0800, IP version 4, IHL >= 5 (options are
//    skipped: l4 = 14 + 4*IHL), protocol TCP (6) or UDP (17), and not a
//    fragment (MF clear and fragment offset 0; only the first fragment would
//    carry ports, so all fragments of a datagram go to one queue);
//  - Ethernet II with EtherType 0x86dd, IP version 6, Next Header TCP (6) or
//    UDP (17) in the fixed header (l4 = 14 + 40). Behind extension headers
//    (hop-by-hop, routing, fragment, destination options, ...) the ports sit
//    at an offset only a walk of the chain finds, which the program does not
//    do: those frames are not hashed, and ferry hands them over in software.
// Everything else — ARP, ICMP, ICMPv6 (neighbour discovery, MLD), VLAN-tagged
// frames (tag in the data), fragments, bad version or IHL, frames too short
// to hold the ports (l4 + 4 bytes) — goes to queue 0. The IP total length and
// the IPv6 payload length are not consulted.
//
// Queue numbers are the kernel's: tun numbers queues in the order their fds
// attached, and when an attached queue fd closes or detaches the last queue
// takes its number. net_tap attaches one fd per queue at queue setup, in queue
// order (port_open sets queues up 0..n-1), after detaching its keep-alive fd,
// so kernel queue i is DPDK queue i as long as no queue is released and set up
// again while the port lives.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ferry/base/result.h"
#include "ferry/net/tcp_tuple.h"

namespace ferry::net {

// The steering hash of a flow. Host byte order arguments.
//
// Symmetric: swapping (ip_a, port_a) with (ip_b, port_b) gives the same value,
// so both directions of a flow and both ends' view of it agree. The endpoints
// are folded with XOR (the symmetric part), the port word is spread over 32
// bits by a multiply with 2^32/phi, and MurmurHash3's fmix32 finaliser mixes
// the result, so consecutive or all-even ports spread evenly over any small
// queue count.
//
// Only the low 16 bits are returned (the value is < 65536): tun truncates the
// program's return value to u16 before `% numqueues` (`u16 ret` in
// tun_ebpf_select_queue); a hash that already fits in 16 bits gives the same
// queue on kernels that truncate and on any that would not. fmix32's last step
// (x ^= x >> 16) folds the high half into the low one, so nothing is lost.
//
// The tap steering program (tap_steering.cpp) computes exactly this with
// 32-bit eBPF ALU operations (xor, mul, rsh, and); keep the two in step.
[[nodiscard]] constexpr uint32_t flow_steer_hash(uint32_t ip_a, uint16_t port_a, uint32_t ip_b,
                                                 uint16_t port_b) noexcept {
    uint32_t x = (ip_a ^ ip_b) ^ (static_cast<uint32_t>(port_a ^ port_b) * 0x9e3779b1u);
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x & 0xffffu;
}

[[nodiscard]] constexpr uint32_t flow_steer_hash(const tcp_tuple &t) noexcept {
    // IPv6 addresses folded to 32 bits (ip_address::fold: the XOR of the
    // four words), as the tap program folds a TCP/UDP frame's addresses, so an
    // IPv6 flow arrives on its owner's queue too (extension-header frames
    // excepted: queue 0, handed over).
    return flow_steer_hash(t.local_addr.fold(), t.local_port, t.remote_addr.fold(),
                           t.remote_port);
}

// The queue tun delivers a frame with steering hash `hash` to, on a device with
// `nqueues` attached queues (>= 1): ret % numqueues, as the kernel does.
[[nodiscard]] constexpr uint16_t flow_queue(uint32_t hash, uint16_t nqueues) noexcept {
    return static_cast<uint16_t>(hash % nqueues);
}

// What the tap steering program returns for `frame` (starting at the Ethernet
// header): flow_steer_hash of its addresses and ports for the frames listed at
// the top of this file, 0 for every other frame. The software model of the
// eBPF program, and what ferry uses to tell which queue a raw frame was
// steered to. Pure; reads only `frame`.
[[nodiscard]] uint32_t frame_steer_hash(std::span<const uint8_t> frame) noexcept;

// Control path (tap_steering.cpp).

// Loads the steering program (BPF_PROG_TYPE_SOCKET_FILTER, built in code: no
// compiler, no libbpf) with bpf(2) BPF_PROG_LOAD. Returns the program fd,
// which the caller closes once it has been attached (the tun device keeps its
// own reference), or an error with errno text and the verifier's log. Needs
// CAP_BPF or CAP_SYS_ADMIN where unprivileged BPF is disabled (the Debian
// default).
[[nodiscard]] result<int, std::string> load_tap_steering_program();

// The same program for a packet socket fanout group (PACKET_FANOUT_EBPF, set
// with PACKET_FANOUT_DATA: net_ferry_packet's queues), which runs on frames
// the interface received, with skb->data at their IP header: it reads the
// EtherType and the IP header relative to the skb's link-layer and network
// headers instead, and returns the same value for the same frame. The group
// takes the value modulo its member count, members numbered in the order they
// joined (af_packet.c fanout_demux_bpf, __fanout_link): queue i is the i-th
// socket to join, so ferry computes a flow's queue as on a tap.
[[nodiscard]] result<int, std::string> load_fanout_steering_program();

// Installs `prog_fd` as the steering program of the tap named `ifname` whose
// queue fds this process holds. net_tap does not expose its queue fds, so
// they are found in /proc/self/fd: a link to /dev/net/tun whose TUNGETIFF name
// is `ifname`. Detached queues (the PMD's keep-alive fd; TUNGETIFF reports
// IFF_DETACH_QUEUE, or an ioctl fails with EBADFD) are skipped. The program is
// per device, so one attached fd would do; it is set through every attached
// one. Returns how many fds took it (the number of attached queues this
// process holds), or an error when none did. Call it after the queues are set
// up (rte_eth_rx_queue_setup): before that the device has no attached queue.
[[nodiscard]] result<unsigned, std::string> attach_tap_steering(std::string_view ifname,
                                                                int prog_fd);

}  // namespace ferry::net
