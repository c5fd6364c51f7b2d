// Per-lcore hierarchical timing wheel.
//
// Read first: G. Varghese, T. Lauck, "Hashed and Hierarchical Timing Wheels" (SOSP '87),
// scheme 7; the pre-4.8 Linux kernel/timer.c cascade is the same structure.
//
// Shape. Time is counted in ticks of 2^tick_shift ns (default 2^16 ns = 65.536 us). The wheel
// has `levels` = 5 levels of 64 slots; a slot at level L spans 64^L ticks, so the wheel covers
// 2^30 ticks (~19.5 h at the default tick). Where a timer lives is decided by the highest
// 6-bit digit in which its expiry tick `e` differs from the wheel's current tick `cur`:
//
//     e == cur or e, cur differ only in digit 0   -> level 0, slot digit0(e)
//     highest differing digit is L (1 <= L < 5)     -> level L, slot digitL(e)
//     they differ above digit 4                     -> the overflow list
//
// Invariants (argued in timer_wheel.cpp, relied on everywhere):
//   I1. a timer at level L agrees with cur on every digit above L, and for L >= 1 its
//       digit L is strictly greater than cur's (level 0: >=). So a level-0 slot holds exactly
//       one tick, and every timer at level L expires before every timer at level L+1.
//   I2. only the slot whose digit equals cur's needs attention when cur moves: the slot is
//       "cascaded" (its timers are re-placed relative to the new cur, landing lower down).
//   I3. overflow timers differ from cur above the top digit; the list is re-examined when cur
//       enters the 2^30-tick block holding the earliest of them.
// With one 64-bit occupancy bitmap per level, the next tick at which anything happens (a
// level-0 slot to fire or a higher slot to cascade) is found with one ctz per level, so
// advance() jumps straight between occupied slots: a core that slept for hours pays for the
// slots it meets, not for the ticks in between.
//
// Firing contract. advance(now) fires exactly the timers armed before the call whose deadline
// (ns) is <= now, and no others: never early, never late with respect to `now`. They fire
// in tick order; within one tick in no particular order ("deadline order within the tick
// resolution"). Timers armed with a deadline that has already passed fire on the next
// advance(), whatever its `now`.
//
// Re-entrancy. Callbacks may arm, re-arm and cancel any timer, including the one firing and
// ones that are due in the same advance() (a cancelled or re-armed due timer does not fire).
// A timer armed or re-armed from a callback is not fired by the advance() that is running,
// even if its deadline is <= now: it fires on the next call. That makes a callback that
// re-arms itself "for now" a one-per-iteration timer instead of an endless loop, and bounds
// the work one advance() does. Callbacks must not call advance() or destroy the wheel.
//
// Cost. arm, cancel: O(1), no allocation (the timer is intrusive). advance(): O(timers fired
// + timers cascaded + levels per occupied slot met); each timer cascades at most once per
// level (plus once per overflow re-examination, which happens once per ~19.5 h block).
// next_deadline(): O(levels).
//
// Threading: none. A wheel and its timers belong to one lcore.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace ferry::reactor {

// Timer callback: a plain function pointer and the context stored in the timer, called with
// the `now` of the advance() that fires it (so a callback never reads a clock itself and a
// test's fake clock reaches it). The timer is already disarmed when this runs, so the
// callback may re-arm it.
using timer_fn = void (*)(void *ctx, uint64_t now);

namespace detail {
// Intrusive circular doubly-linked list node; a list head is a bare node (sentinel), so
// unlinking needs no knowledge of which list a node is in.
struct timer_link {
    timer_link *next_ = nullptr;
    timer_link *prev_ = nullptr;
};
}  // namespace detail

// A timer embedded in its owner's struct. Not copyable or movable: the wheel points at it.
// It must be disarmed (cancelled, fired, or its wheel destroyed) before it is destroyed.
class timer : private detail::timer_link {
public:
    timer() = default;
    timer(timer_fn fn, void *ctx) : fn_(fn), ctx_(ctx) {}
    timer(const timer &) = delete;
    timer &operator=(const timer &) = delete;
    ~timer() { assert(!armed() && "destroying an armed timer leaves a dangling wheel link"); }

    // Only while disarmed, or from this timer's own callback (it is disarmed then too).
    void set_callback(timer_fn fn, void *ctx) noexcept {
        fn_ = fn;
        ctx_ = ctx;
    }

    [[nodiscard]] bool armed() const noexcept { return where_ != unarmed_; }
    // The deadline of the last arm(); meaningful while armed.
    [[nodiscard]] uint64_t deadline() const noexcept { return deadline_; }

private:
    friend class timer_wheel;

    // Where the timer is linked: level * slots + slot, or one of these.
    static constexpr uint16_t unarmed_ = 0xffff;
    static constexpr uint16_t overflow_ = 0xfffe;
    static constexpr uint16_t due_ = 0xfffd;  // collected by a running advance(), not fired yet

    uint64_t deadline_ = 0;
    timer_fn fn_ = nullptr;
    void *ctx_ = nullptr;
    uint16_t where_ = unarmed_;
};

class timer_wheel {
public:
    static constexpr unsigned level_bits = 6;
    static constexpr unsigned slots = 1u << level_bits;  // per level; one uint64_t bitmap
    static constexpr unsigned levels = 5;
    // 2^16 ns = 65.536 us: well below anything the stack times (delayed ACK 40 ms, RTO >= 200
    // ms, keep-alive and idle timeouts in seconds) and below epoll's 1 ms timeout unit, yet
    // coarse enough that the wheel spans ~19.5 h before the overflow list is needed.
    static constexpr unsigned default_tick_shift = 16;
    static constexpr unsigned max_tick_shift = 32;
    // next_deadline() when nothing is armed.
    static constexpr uint64_t no_deadline = UINT64_MAX;

    // `now` is the current time in ns (any epoch; the wheel only compares). The tick is
    // 2^tick_shift ns, tick_shift <= max_tick_shift.
    explicit timer_wheel(uint64_t now, unsigned tick_shift = default_tick_shift) noexcept;
    // Disarms every pending timer, so timers may outlive the wheel.
    ~timer_wheel();
    timer_wheel(const timer_wheel &) = delete;
    timer_wheel &operator=(const timer_wheel &) = delete;

    // Arms `t` to fire at `deadline` (ns, same clock as advance()). If `t` is armed it is
    // re-armed: moved, not duplicated. A deadline <= now() fires on the next advance(). The
    // callback must have been set. O(1).
    void arm(timer &t, uint64_t deadline) noexcept;

    // Disarms `t`. Returns true if it was armed (it will not fire), false if it was not (no-op).
    // O(1).
    bool cancel(timer &t) noexcept;

    // Moves the wheel to `now` (ns; a value below now() is treated as now()) and fires every
    // timer armed before this call whose deadline is <= now, in tick order. Returns the
    // number of callbacks run. Not re-entrant.
    size_t advance(uint64_t now) noexcept;

    // A lower bound on the earliest pending deadline, or no_deadline if nothing is armed. It is
    // never later than the real earliest deadline, so sleeping until it never misses a timer.
    // It is exact unless the slot holding the earliest timer lost its earliest member to
    // cancel() or a re-arm since the slot was last filled, scanned or cascaded; then it is
    // that stale deadline, which lies in the same slot's time range as the real one. Sleeping
    // until a stale value costs one needless wakeup: the advance(value) run then re-sorts the
    // slot (level 0: scan; higher: cascade into the empty levels below), after which the value
    // is exact again. So between two fires an idle core wakes needlessly at most once.
    // A value <= now() means "call advance() now" (a timer was armed in the past). O(levels).
    [[nodiscard]] uint64_t next_deadline() const noexcept;

    [[nodiscard]] uint64_t now() const noexcept { return now_; }
    [[nodiscard]] uint64_t tick_ns() const noexcept { return uint64_t{1} << tick_shift_; }
    [[nodiscard]] unsigned tick_shift() const noexcept { return tick_shift_; }
    // Number of armed timers (including ones collected by a running advance()).
    [[nodiscard]] size_t pending() const noexcept { return pending_; }

private:
    using link = detail::timer_link;

    static timer *as_timer(link *l) noexcept { return static_cast<timer *>(l); }
    static void list_init(link &head) noexcept { head.next_ = head.prev_ = &head; }
    static bool list_empty(const link &head) noexcept { return head.next_ == &head; }
    static void list_push_back(link &head, link &n) noexcept;
    static void list_unlink(link &n) noexcept;
    // Moves all of `from` to the back of `to`; `from` becomes empty.
    static void list_splice_back(link &to, link &from) noexcept;

    // Links `t` (unlinked) according to its deadline relative to cur_.
    void place(timer &t) noexcept;
    // Unlinks `t` (linked) and fixes the bookkeeping of the slot it leaves.
    void unlink(timer &t) noexcept;
    // Re-places every timer of level `level` slot `slot` relative to cur_ (I2).
    void cascade_slot(unsigned level, unsigned slot) noexcept;
    // Re-places every overflow timer relative to cur_ (I3).
    void reexamine_overflow() noexcept;
    // Cascades whatever cur_ has just reached.
    void cascade_at_cur() noexcept;
    // The first tick > cur_ at which a slot fires or cascades, or UINT64_MAX.
    [[nodiscard]] uint64_t next_event_tick() const noexcept;
    // Moves the timers of the current tick's slot with deadline <= now to due_.
    void collect_current(uint64_t now) noexcept;

    uint64_t now_;
    uint64_t cur_;  // current tick: now_ >> tick_shift_; every earlier tick has been handled
    unsigned tick_shift_;
    size_t pending_ = 0;
    bool in_advance_ = false;

    uint64_t occupied_[levels] = {};  // bit s: slot s of that level is non-empty
    // Lower bound of the deadlines in each slot (exact unless its minimum was cancelled);
    // UINT64_MAX when empty.
    uint64_t slot_min_[levels][slots];
    link slot_[levels][slots];
    link overflow_;
    uint64_t overflow_min_ = UINT64_MAX;  // lower bound, as slot_min_
    link due_;                            // timers collected by advance(), fired in list order
};

}  // namespace ferry::reactor
