// The producer side of a worker's cross-core rings (DESIGN.md, "The reactor
// iteration", flush step, and "The doorbell protocol", producer side).
//
// Callbacks on the worker's lcore send() messages into a fixed-size local
// queue per peer: no ring access, no shared cache line touched, so a message
// costs a 24-byte copy. Once per reactor iteration flush() moves each peer's
// queue into that peer's ring with ONE rte_ring_sp_enqueue_burst_elem and then
// checks that peer's doorbell ONCE (reactor::notify: one seq_cst fence, and a
// syscall only if the peer sleeps and no other producer already woke it).
// Batching is what keeps both the ring's shared indices and the fence off the
// per-message path.
//
// Backpressure (DESIGN.md "Cross-core work": nothing is dropped): a full ring
// leaves the rest of the batch in the local queue, in order, for the next
// flush (counted as ring_full); a full local queue makes send() return false,
// and the caller must stop reading from its source and retry after a flush
// (room() says how much fits).
//
// Per-peer statistics (stats(): the ring's high-water mark and its ring_full
// events) are the one exception to the single-thread rule: the owner
// writes them with relaxed stores, any thread (telemetry, the metrics
// exporter) reads them with relaxed loads (ferry/base/counter.h). The
// high-water mark costs the hot path nothing shared: the depth comes from the
// free_space the enqueue burst already computed from the consumer's tail, so a
// flushed lane pays one compare (and, when the mark rises, one plain store)
// on a line the owner already holds.
//
// Single-threaded: every member is called on the owning worker's lcore only
// (stats() excepted, see above).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "ferry/base/counter.h"
#include "ferry/reactor/doorbell.h"
#include "ferry/reactor/reactor.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/message.h"

struct rte_mempool;

namespace ferry::xcore {

class outbox {
public:
    // `peer_bells[w]` is worker w's doorbell, non-null for every peer this
    // outbox sends to (entry `self` is not used; the array is read at
    // construction only).
    // `queue_size` is the local queue per peer in messages; 0 means the
    // mesh's ring size. Counters are the owning lcore's: msgs_out,
    // enqueue_bursts, ring_full, doorbells_rung, doorbells_suppressed,
    // doorbell_errors. The wakeup mode is read from `s` at every flush, so a
    // runtime switch takes effect at the next one. Allocates its queues here
    // (on the calling thread: construct on the owning lcore for NUMA-local
    // first touch), never afterwards.
    outbox(mesh &m, unsigned self, reactor::reactor_counters &c,
           reactor::doorbell *const *peer_bells, const reactor::settings &s,
           unsigned queue_size = 0);
    // Releases (frees the mbuf chains of) messages still queued locally.
    ~outbox();
    outbox(const outbox &) = delete;
    outbox &operator=(const outbox &) = delete;

    // Queues `m` for `peer` (peer != self, peer < workers). Returns true: the
    // message (and its mbuf chain) now belongs to the outbox and reaches the
    // peer's ring at a flush. false: the local queue to `peer` is full; the
    // message was not taken (the caller still owns it) and the caller must
    // pause its source until room(peer) > 0.
    [[nodiscard]] bool send(unsigned peer, const message &m) noexcept {
        lane &l = lanes_[peer];
        if (l.count == queue_size_)
            return false;
        l.q[l.count++] = m;
        if (!l.listed) {
            l.listed = true;
            dirty_[ndirty_++] = static_cast<uint16_t>(peer);
        }
        return true;
    }

    // Queues a copy of `m` for every peer. With `payload` non-empty, each copy
    // carries its own mbuf from `pool` holding it (news too long for a
    // message's three words, e.g. an IPv6 address); `m.mbuf` is ignored.
    // Never waits: a peer whose local queue is full, or for whom no mbuf was
    // left, is skipped (nothing stays allocated for it). Returns how many
    // peers were skipped. For news that a later copy repeats (a neighbour's
    // binding, a router): control traffic, never the data path's.
    [[nodiscard]] unsigned broadcast(message m, rte_mempool *pool,
                                     std::span<const uint8_t> payload) noexcept;

    // Messages send(peer, ...) would accept now.
    [[nodiscard]] unsigned room(unsigned peer) const noexcept {
        return queue_size_ - lanes_[peer].count;
    }
    // Messages queued for `peer`, not yet in its ring.
    [[nodiscard]] unsigned queued(unsigned peer) const noexcept { return lanes_[peer].count; }

    // For every peer with queued messages: one enqueue burst (enqueue_bursts,
    // msgs_out; what the ring did not take stays queued in order and counts
    // ring_full), then, after all bursts, one notify() per peer whose ring
    // received something (doorbells_rung / _suppressed / doorbell_errors).
    // A burst the ring refused entirely needs no doorbell: the ring is full,
    // so the peer has work and was notified when that work was enqueued.
    void flush(uint64_t now) noexcept;

    // Registration with the owning lcore's reactor (after the tx flushers).
    [[nodiscard]] reactor::flusher as_flusher() noexcept;

    [[nodiscard]] unsigned self() const noexcept { return self_; }
    [[nodiscard]] unsigned queue_size() const noexcept { return queue_size_; }

    // What the lane to one peer saw since construction.
    struct lane_stats {
        // The deepest ring(self, peer) was right after one of this outbox's
        // enqueue bursts (capacity minus the burst's free_space: the
        // consumer may already have taken some by then, so this is the
        // producer's view, never more than the ring's capacity). 0 before the
        // first burst.
        uint64_t high_water = 0;
        // Enqueue bursts to this peer that left messages behind (the per-peer
        // share of reactor_counters::ring_full).
        uint64_t ring_full = 0;
    };
    // Any thread (relaxed loads; the two values are not a consistent pair).
    // peer == self or peer >= workers: zeros.
    [[nodiscard]] lane_stats stats(unsigned peer) const noexcept {
        if (peer >= workers_ || peer == self_)
            return {};
        return {lanes_[peer].high_water.get(), lanes_[peer].ring_full.get()};
    }

private:
    // Per peer; written by the owner only (other threads just read the two
    // stats, seldom: a scrape), so no false-sharing concern, but one line
    // each keeps a flush over few peers to few lines (48 bytes used).
    struct alignas(64) lane {
        message *q = nullptr;  // queue_size_ entries, [0, count) queued, oldest first
        uint32_t count = 0;
        bool listed = false;  // in dirty_
        rte_ring *ring = nullptr;
        reactor::doorbell *bell = nullptr;
        // Written by the owner at flush, read by any thread (stats()).
        ferry::counter high_water;
        ferry::counter ring_full;
    };
    static_assert(sizeof(lane) == 64, "one cache line per lane");

    const unsigned self_;
    const unsigned workers_;
    const unsigned queue_size_;
    const unsigned capacity_;  // of every ring (the mesh's ring_size, RING_F_EXACT_SZ)
    reactor::reactor_counters &c_;
    const reactor::settings &settings_;
    std::unique_ptr<lane[]> lanes_;
    std::unique_ptr<message[]> storage_;
    // Peers with queued messages (each once), so a flush costs O(busy peers),
    // not O(workers); notify_ is scratch space for one flush.
    std::unique_ptr<uint16_t[]> dirty_;
    std::unique_ptr<uint16_t[]> notify_;
    unsigned ndirty_ = 0;
};

}  // namespace ferry::xcore
