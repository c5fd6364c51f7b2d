// Port queue I/O: one rx/tx queue pair of one port, served by one lcore. It
// feeds what the NIC received to that lcore's stack (through the port's fault
// injector when [port.fault] is on) and transmits what the stack queued.
//
// The reactor (lib/reactor) drives it through a poller: poll() receives a
// burst (or the stash) and runs the stack's timers, pending() is the
// pre-sleep re-check (it receives into the stash, so nothing it sees is lost),
// next_deadline() the stack's (and the injector's) next timer, arm()/disarm()
// the rx interrupt around a sleep; flush() is the worker's tx flusher.
//
// Single-threaded: only the owning lcore calls it. Counters are the lcore's
// io_counters, shared by its queues (the caller owns them).
#pragma once

#include <cstdint>
#include <memory>

#include "ferry/base/counter.h"
#include "ferry/net/fault.h"

struct rte_mbuf;
struct rte_mempool;

// Port I/O counters per lcore (the loop's own counters are the reactor's).
#define FERRY_IO_COUNTERS(X)                                                              \
    X(rx_packets, "frames received from all of this lcore's queues")                      \
    X(rx_bursts, "rx bursts that returned frames")                                        \
    X(tx_packets, "frames handed to the NIC")                                             \
    X(tx_short_bursts, "tx bursts the NIC took only partly (retried later)")              \
    X(tx_drop_stuck, "frames freed after the NIC refused them for too long")              \
    X(mem_pressure, "times the pool's free mbufs fell below the reserve (TCP drops payloads)")

namespace ferry::net {

class packet_queue;
class stack;

struct alignas(64) io_counters {
    FERRY_IO_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_IO_FIELD(n, h) FERRY_COUNTER_FIELD(io_counters, n, h)
inline constexpr counter_field<io_counters> io_counter_fields[] = {FERRY_IO_COUNTERS(FERRY_IO_FIELD)};
#undef FERRY_IO_FIELD

class queue_io {
public:
    static constexpr uint16_t burst = 32;
    // A tx batch the NIC refuses this many flushes in a row is freed (and
    // counted) so a wedged queue cannot hold the pool's mbufs forever.
    static constexpr uint32_t tx_stuck_limit = 100000;

    // Queue `queue` of DPDK port `port_id`, feeding `st`; `fault` (null: off)
    // makes an injector drawing duplicates from `pool`. st and io must
    // outlive the queue.
    queue_io(uint16_t port_id, uint16_t queue, stack &st, io_counters &io,
             const fault_params *fault, rte_mempool *pool);
    ~queue_io();
    queue_io(const queue_io &) = delete;
    queue_io &operator=(const queue_io &) = delete;

    // One rx burst (the stash first) into the stack, then its due timers.
    // Samples the pool for memory pressure first (see reserve_).
    // Returns the work done (frames + timer runs).
    uint32_t poll(uint64_t now) noexcept;
    // True if a frame is waiting (received into the stash for the next poll).
    [[nodiscard]] bool pending() noexcept;
    [[nodiscard]] uint64_t next_deadline() const noexcept;
    // The rx interrupt around a sleep. Real NICs need it armed; net_tap
    // answers -ENOTSUP but its queue fd fires anyway (TESTBED.md), so the
    // result is not checked.
    void arm() noexcept;
    void disarm() noexcept;
    // Transmits the stack's batch (through the injector when on).
    void flush(uint64_t now) noexcept;
    // net_ferry_packet: the queue pair behind this ethdev queue, filled before
    // every rx burst and drained after every tx burst (packet_io.h).
    void attach(packet_queue *pq) noexcept { pkt_ = pq; }

    [[nodiscard]] uint16_t port_id() const noexcept { return port_id_; }
    [[nodiscard]] uint16_t queue() const noexcept { return queue_; }
    [[nodiscard]] const fault_counters &faults() const noexcept { return fault_ctr_; }

private:
    void flush_faulty(uint64_t now) noexcept;
    void flush_plain() noexcept;
    void sample_pressure() noexcept;

    uint16_t port_id_, queue_;
    stack &st_;
    io_counters &io_;
    uint32_t tx_stuck_ = 0;  // consecutive flushes the NIC refused part of the batch
    // Memory pressure: the pool's free count is sampled every
    // pressure_period polls with frames (every poll while under pressure);
    // below reserve_ (an eighth of the pool, at least 64) the stack drops
    // received payloads (tcp_layer::set_mem_pressure).
    static constexpr uint8_t pressure_period = 8;
    rte_mempool *pool_ = nullptr;
    packet_queue *pkt_ = nullptr;
    uint32_t reserve_ = 0;
    uint8_t sample_in_ = 0;
    bool pressure_ = false;
    uint16_t stash_n_ = 0;
    rte_mbuf *stash_[burst];
    fault_counters fault_ctr_{};
    std::unique_ptr<fault_injector> fault_;  // [port.fault]: loss, duplication, reordering
};

}  // namespace ferry::net
