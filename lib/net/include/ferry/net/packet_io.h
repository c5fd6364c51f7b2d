// ferry's own AF_PACKET path (profile net_ferry_packet): one packet socket per
// queue pair on an existing interface, with virtio-net headers (PACKET_VNET_HDR)
// so that the kernel takes ferry's frames as a local sender's are taken:
//
//   - tx: the TCP checksum is left to the kernel (VIRTIO_NET_HDR_F_NEEDS_CSUM:
//     the skb is CHECKSUM_PARTIAL, and a veth peer's stack trusts it without
//     summing the bytes), and consecutive full-sized segments of one flow in a
//     burst leave as one GSO frame (VIRTIO_NET_HDR_GSO_TCPV4), which crosses a
//     veth whole and is cut into the very segments ferry's TCP built only
//     where a device cannot take it (tx GSO coalescing: gso_run below);
//   - rx: a frame whose checksum the kernel left unfilled (TP_STATUS_CSUMNOTREADY,
//     a local CHECKSUM_PARTIAL sender) or already verified (TP_STATUS_CSUM_VALID)
//     is marked good, so a veth peer may keep its tx checksum offload on; and a
//     frame larger than a ring frame (a GSO frame from a peer with TSO on, which
//     tpacket_rcv() also queues whole on the socket when PACKET_COPY_THRESH is
//     set, marking the ring's truncated copy TP_STATUS_COPY) is read whole with
//     recvmsg and cut into the segments it stands for (gso_split below), so a
//     veth peer may keep TSO and GSO on as well and ferry's TCP still sees
//     MSS-sized segments.
//
// The 22.11 net_af_packet PMD has neither (no vnet headers: every frame is
// summed by ferry and again by the peer, and sent one by one), and the DPDK
// headers a driver needs (ethdev_driver.h) are not in Debian's libdpdk-dev. So
// the ethdev ferry's layers see is a net_ring device (rte_eth_from_rings, a
// public API) whose per-queue rte_rings this file fills and drains: the
// worker's queue_io calls receive() before each rx burst and transmit() after
// each tx burst, on the same lcore (single producer, single consumer rings).
// ethdev's counters, MAC, start/stop and the layers above stay as for any port.
//
// Read first: Documentation/networking/packet_mmap.rst; in net/packet/af_packet.c
// tpacket_rcv() (rx ring frames, TP_STATUS_CSUM*, vnet header before the MAC),
// packet_snd() and packet_snd_vnet_parse() (a vnet header ahead of each sent
// frame); include/linux/virtio_net.h virtio_net_hdr_to_skb(); and in
// net/ipv4/tcp_offload.c tcp_gso_segment() (how a GSO frame is cut: the header
// copied, seq advanced by gso_size, PSH/FIN on the last segment only, the
// checksum field holding the pseudo-header sum over the whole TCP length).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ferry/base/counter.h"
#include "ferry/base/result.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

#define FERRY_PACKET_COUNTERS(X)                                                                  \
    X(rx_frames, "frames read from the kernel's rx rings")                                        \
    X(rx_csum_partial, "of them, TCP/UDP checksum left unfilled by a local sender "               \
                       "(CHECKSUM_PARTIAL): taken as verified")                                   \
    X(rx_csum_valid, "of them, checksum already verified by the kernel")                          \
    X(rx_gso_frames, "frames larger than a ring frame read whole (a peer's GSO frames)")         \
    X(rx_gso_segments, "the segments those frames were cut into")                                \
    X(rx_truncated, "frames dropped: larger than a ring frame and not readable whole (the "       \
                    "socket's receive buffer full, or not a TCP GSO frame)")                \
    X(rx_nombuf, "frames dropped: no mbuf")                                                       \
    X(tx_frames, "frames handed to the kernel (a GSO frame counts once)")                         \
    X(tx_segments, "segments those frames carry (what the wire sees without GSO)")                \
    X(tx_gso_frames, "GSO frames: consecutive segments of one flow sent as one")                  \
    X(tx_syscalls, "sendmmsg calls")                                                              \
    X(tx_retry, "times the kernel took part of a batch (EAGAIN/ENOBUFS); the rest waits")         \
    X(tx_errors, "frames the kernel refused (freed and counted)")

namespace ferry::net {

struct alignas(64) packet_counters {
    FERRY_PACKET_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_PACKET_FIELD(n, h) FERRY_COUNTER_FIELD(packet_counters, n, h)
inline constexpr counter_field<packet_counters> packet_counter_fields[] = {
    FERRY_PACKET_COUNTERS(FERRY_PACKET_FIELD)};
#undef FERRY_PACKET_FIELD

// The largest IP datagram a GSO frame may describe (IPv4's tot_len is 16
// bits; IPv6 frames are held to the same, counting their fixed header).
inline constexpr uint32_t gso_max_ip_bytes = 65535;
// At most this many segments go in one GSO frame (each adds iovecs).
inline constexpr uint16_t gso_max_segments = 44;

// How many of pkts[0..n) leave as one frame starting at pkts[0] (1: alone).
// Merged are consecutive TCP segments of one flow over IPv4 (no options) or
// IPv6 (no extension headers), each with its TCP checksum left to the device
// (RTE_MBUF_F_TX_TCP_CKSUM, l2_len/l3_len set), that differ only where
// tcp_gso_segment() makes them differ: identical Ethernet, IP (but for IPv4's
// total length, id and checksum, IPv6's payload length) and TCP headers (but
// for sequence number, PSH/FIN and checksum: the same ACK, window and option
// bytes), each starting where the previous one's payload ends; every segment
// but the last carries exactly the first one's payload length (the GSO size)
// and only ACK; the last may carry less, PSH and FIN. Pure: reads the mbufs.
[[nodiscard]] uint16_t gso_run(rte_mbuf *const *pkts, uint16_t n) noexcept;

// A GSO frame as the kernel hands it to a packet socket with PACKET_VNET_HDR
// (virtio-net header first) cut into the MSS-sized segments tcp_gso_segment()
// would make: the headers copied, the sequence number advanced by the GSO size,
// IPv4 length, id and header checksum (or the IPv6 payload length) per
// segment, PSH and FIN on the last segment only, CWR on the first only, each
// segment's TCP checksum marked good (the kernel's frame is CHECKSUM_PARTIAL or
// verified). A frame without GSO that fits an mbuf is copied as it is. Writes
// at most `cap` mbufs of `pool` to `out`; returns how many, 0 when the frame is
// not one it can cut (not TCP over IPv4 or over IPv6 without extension headers,
// a segment larger than an mbuf, no mbuf: nothing is written then).
[[nodiscard]] uint16_t gso_split(const uint8_t *vnet_and_frame, uint32_t len, rte_mempool *pool,
                                 rte_mbuf **out, uint16_t cap) noexcept;

class packet_queue {
public:
    struct params {
        std::string port;     // for messages
        std::string iface;    // the interface the socket binds to (for messages)
        int ifindex = 0;      // and its index
        uint16_t queue = 0;   // this queue pair
        uint16_t nqueues = 1; // a fanout group spreads flows when > 1
        uint16_t fanout_id = 0;
        // The group's steering program (load_fanout_steering_program), set
        // by queue 0 as it joins (PACKET_FANOUT_EBPF); -1: the kernel's flow
        // hash (PACKET_FANOUT_HASH), which ferry cannot compute.
        int fanout_prog_fd = -1;
        uint32_t ring_frames = 4096;  // rx ring frames (power of two)
        uint32_t frame_size = 2048;
        bool gso = true;      // coalesce segments on tx
        int numa_socket = 0;
    };
    // Opens the socket (vnet headers, TPACKET_V2 rx ring, PACKET_IGNORE_OUTGOING,
    // fanout), maps the ring, binds, and makes the queue pair's rte_rings.
    static result<std::unique_ptr<packet_queue>, std::string> open(const params &p);
    ~packet_queue();
    packet_queue(const packet_queue &) = delete;
    packet_queue &operator=(const packet_queue &) = delete;

    // The socket: readable while the rx ring holds a frame (a wake fd).
    [[nodiscard]] int fd() const noexcept { return fd_; }
    // The rings the net_ring ethdev reads (rx) and writes (tx) for this queue.
    [[nodiscard]] rte_ring *rx_ring() const noexcept { return rx_ring_; }
    [[nodiscard]] rte_ring *tx_ring() const noexcept { return tx_ring_; }

    // Moves the frames the kernel's rx ring holds into rx_ring(), copied into
    // mbufs of `pool` (no more than rx_ring() has room for). Returns how many.
    uint32_t receive(rte_mempool *pool) noexcept;
    // Sends what tx_ring() holds (and what the kernel refused last time
    // first), coalesced by gso_run. Returns the frames the kernel took.
    uint32_t transmit() noexcept;

    // Frames the kernel refused for now (EAGAIN/ENOBUFS) wait for the next
    // transmit(): the lcore must not sleep on them (queue_io::pending).
    [[nodiscard]] bool tx_held() const noexcept { return held_n_ != 0; }

    [[nodiscard]] const packet_counters &counters() const noexcept { return ctr_; }

private:
    packet_queue() = default;
    uint32_t send_batch(rte_mbuf **pkts, uint16_t n) noexcept;

    int fd_ = -1;
    int ifindex_ = 0;
    uint8_t *ring_ = nullptr;
    size_t ring_bytes_ = 0;
    uint32_t frames_ = 0, frame_size_ = 0, next_ = 0;
    bool gso_ = true;
    // One frame read whole with recvmsg (virtio-net header + up to 64 KiB).
    std::unique_ptr<uint8_t[]> whole_;
    rte_ring *rx_ring_ = nullptr, *tx_ring_ = nullptr;
    // Frames dequeued from tx_ring() that the kernel has not taken yet.
    static constexpr uint16_t batch = 64;
    uint16_t held_n_ = 0;
    rte_mbuf *held_[batch] = {};
    packet_counters ctr_{};
};

}  // namespace ferry::net
