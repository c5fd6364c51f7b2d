// The conditional doorbell (DESIGN.md, "The doorbell protocol").
//
// Each lcore owns one doorbell: an idle word that says "I am (about to be)
// asleep" and an eventfd in its epoll set. A producer that has just enqueued
// messages for that lcore rings the eventfd only if the idle word says it
// sleeps: a polling consumer costs its producers no syscall (the userspace form
// of TIF_POLLING_NRFLAG and of Tempesta FW's "IPI only if the softirq is not
// running"), a sleeping one is woken within microseconds.
//
// Memory ordering (the whole argument; tests/model/doorbell.pml checks it):
//
//   consumer C                         producer P
//   S1 store sleeping = 1              S2 ring enqueue (stores the message, then
//                                         the ring's producer tail)
//   F1 fence(seq_cst)                  F2 fence(seq_cst)
//   L1 load every inbound ring tail    L2 load sleeping
//
// This is Dekker's pattern: with a seq_cst fence between each side's store and
// its load, the two fences are ordered one way or the other in the single total
// order of seq_cst operations, so at least one load sees the other side's
// store: either C's re-check (L1) sees P's message and C does not sleep, or P
// (L2) sees sleeping == 1 and rings. Without F2 (x86 store buffer: S2 can sit
// in P's buffer while L2 reads the old sleeping == 0) both can miss and the
// message waits in the ring while C sleeps: a lost wakeup.
//
// exchange(sleeping, 0) == 1 picks exactly one ringer among concurrent
// producers per sleep; the others see 0 and count a suppressed doorbell.
//
// That one ringer also stamps the time it rang (rung_at): the owner, woken by
// it, learns how long a hand-off to a sleeping lcore waits for it to run (its
// eventfd write, the wake-up, the scheduler), an honest sample of what a sleep
// costs in latency, beside its late timer wake-ups (reactor::try_sleep). The
// stamp is side information: no step of the argument above reads it.
#pragma once

#include <atomic>
#include <cstdint>

namespace ferry::reactor {

enum class wakeup_mode : uint8_t {
    conditional,  // ring only a sleeping peer
    always,       // ring on every flush that enqueued something: the pre-fix baseline
    poll,         // never sleep, never ring: classic DPDK
    adaptive,     // conditional's doorbell; the spin before a sleep learned per lcore (default)
};

[[nodiscard]] const char *name(wakeup_mode m) noexcept;
[[nodiscard]] bool parse_wakeup_mode(const char *s, wakeup_mode &out) noexcept;

struct alignas(64) doorbell {
    // 1 while the owner is asleep or committed to the pre-sleep re-check.
    // Written by the owner (1 and 0) and by producers (exchange to 0).
    std::atomic<uint32_t> sleeping{0};
    // eventfd (non-blocking) in the owner's epoll set; fixed after start-up.
    int fd = -1;
    // reactor::now_ns() when the elected ringer rang (0: none since the owner
    // last looked). Written by that ringer, taken (exchange to 0) by the owner.
    std::atomic<uint64_t> rung_at{0};
};

enum class ring_result : uint8_t { rung, suppressed, failed };

// Writes 1 to the doorbell's eventfd: one syscall. Returns false if write
// failed (EAGAIN cannot happen before 2^64-1 unread rings).
bool ring(const doorbell &d) noexcept;
// ring() by the producer elected for a sleep: stamps rung_at first.
bool ring_sleeper(doorbell &d) noexcept;

// Producer side, once per flush after the enqueue burst(s) to the doorbell's
// owner (not once per message). `mode` is the process's current wakeup mode.
// F2 of the argument above is the fence in here.
inline ring_result notify(doorbell &peer, wakeup_mode mode) noexcept {
    if (mode == wakeup_mode::always) return ring(peer) ? ring_result::rung : ring_result::failed;
    if (mode == wakeup_mode::poll) return ring_result::suppressed;
    // conditional and adaptive: the same protocol (adaptive only changes
    // when the consumer tries to sleep, not how).
    // F2: orders our ring enqueue (S2) before the load of `sleeping` (L2).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // The relaxed load first keeps the common case (peer polling) free of a
    // locked instruction and of pulling the line exclusive.
    if (peer.sleeping.load(std::memory_order_relaxed) != 0 &&
        peer.sleeping.exchange(0, std::memory_order_acq_rel) == 1)
        return ring_sleeper(peer) ? ring_result::rung : ring_result::failed;
    return ring_result::suppressed;
}

}  // namespace ferry::reactor
