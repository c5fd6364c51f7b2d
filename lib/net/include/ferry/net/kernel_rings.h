// The kernel's side of a port whose PMD receives through AF_PACKET sockets
// (net_af_packet): what the kernel drops before ferry sees a frame.
//
// Read first: Documentation/networking/packet_mmap.rst, and in
// net/packet/af_packet.c tpacket_rcv() (a full rx ring: the frame is dropped
// and counted on the socket) and packet_getsockopt(PACKET_STATISTICS).
//
// The 22.11 PMD opens one AF_PACKET socket per queue pair, each with an
// mmap'ed TPACKET_V2 rx ring and tx ring of `framecnt` frames (devargs). When
// the rx ring is full the kernel drops the frame and counts it in the
// socket's tp_drops; the PMD does not read that count (its imissed stays 0),
// and the interface's rx_dropped does not include it either. So ferry finds
// the PMD's sockets itself and reads their PACKET_STATISTICS:
//
//   - which sockets: every AF_PACKET socket of this process (/proc/self/fd)
//     bound to the port's ifindex (getsockname, sockaddr_ll) that was not
//     there before the device was probed (port_open takes both snapshots);
//   - the counts are 32-bit and reset on every read, so each read is added to
//     64-bit totals under a mutex, and an EAL alarm reads them every
//     kernel_rings::poll_period_us so they cannot wrap between two telemetry
//     requests (2^32 frames in 10 s would be 430 Mpps);
//   - the rings' memory (rx and tx, mapped into this process and counted in
//     its resident size) is measured from /proc/self/maps: the mappings of
//     "socket:[<inode>]" of those sockets.
//
// Control path only: every call here is a syscall. Workers never touch this.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

namespace ferry::net {

// The AF_PACKET sockets of this process bound to interface `ifindex` (any
// interface when 0), in ascending fd order. An fd that closes during the scan
// is skipped. Empty when /proc/self/fd cannot be read.
[[nodiscard]] std::vector<int> packet_sockets(int ifindex);

// This process's AF_XDP sockets, in ascending fd order (an XDP socket names
// neither its interface nor its queue: callers compare before and after the
// call that creates one).
[[nodiscard]] std::vector<int> xdp_sockets();

// Bytes of this process's mappings of socket `fd` (an mmap'ed packet ring: rx
// and tx), from /proc/self/maps; 0 when it has none or on error.
[[nodiscard]] uint64_t socket_mapped_bytes(int fd);

struct kernel_ring_totals {
    // Frames the kernel handed to the rings, dropped ones included
    // (PACKET_STATISTICS tp_packets).
    uint64_t packets = 0;
    // Of them, dropped because the rx ring was full: ferry did not drain it in
    // time (tp_drops). Raise ring_frames, or add workers.
    uint64_t drops = 0;
};

class kernel_rings {
public:
    static constexpr uint64_t poll_period_us = 10'000'000;

    // `fds`: the port's AF_PACKET sockets, owned by the PMD; they must stay
    // open while this object lives (port_close destroys it first). Measures
    // the rings' memory once.
    explicit kernel_rings(std::vector<int> fds);
    ~kernel_rings();
    kernel_rings(const kernel_rings &) = delete;
    kernel_rings &operator=(const kernel_rings &) = delete;

    // Reads PACKET_STATISTICS of every socket (which resets the kernel's
    // counts), adds them to the totals and returns the totals. Any thread; a
    // socket whose read fails adds nothing.
    [[nodiscard]] kernel_ring_totals read() noexcept;

    // Arms an EAL alarm that calls read() every poll_period_us on EAL's
    // interrupt thread until destruction. Needs EAL. Returns false when the
    // alarm cannot be set (the totals are then only as fresh as the last
    // read(), and may miss a wrapped kernel count).
    [[nodiscard]] bool start_polling() noexcept;

    [[nodiscard]] std::span<const int> fds() const noexcept { return fds_; }
    // Ring memory mapped into this process (rx + tx rings of every socket).
    [[nodiscard]] uint64_t bytes() const noexcept { return bytes_; }

private:
    static void on_alarm(void *self);

    const std::vector<int> fds_;
    const uint64_t bytes_;
    bool polling_ = false;
    std::mutex mu_;
    kernel_ring_totals totals_;  // guarded by mu_
};

}  // namespace ferry::net
