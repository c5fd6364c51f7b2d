// The adaptive wakeup policy (wakeup_mode::adaptive): how long an idle lcore
// spins before it tries to sleep, learned per lcore from the idle gaps it
// sees.
//
// The rule is Linux cpuidle-haltpoll's, on gaps instead of guest halts. A
// gap is the time from the last work to the next. The window W starts at 0
// (sleep as soon as idle) and is bounded by a limit L, a few times what a
// sleep/wake round trip costs on this machine (learned: the lateness of the
// lcore's own timer wakeups, an EWMA): twice for idle gaps, four times for
// gaps with a request out to an origin, where a sleep puts a wake-up into
// that request's latency (the reactor's two windows):
//   - the gap ended while spinning: the spin paid off; W stays;
//   - the lcore slept and the work came within L: the sleep was too short
//     to be worth its wake-up, a longer spin would have caught the work
//     without one: W grows (doubled, at least grow_start, at most L);
//   - the lcore slept and the work came after L: spinning longer would only
//     have burnt CPU: W shrinks (halves, or loses an eighth: shrink_shift;
//     0 below grow_start).
// So a lcore whose work comes in quick succession (a request, then its
// upstream's answer a few tens of us later) learns to spin through those
// gaps, and one whose work is sparse learns to sleep at once.
//
// Pure logic (no clock, no syscalls): the reactor feeds it.
#pragma once

#include <cstdint>

namespace ferry::reactor {

class spin_window {
public:
    static constexpr uint64_t grow_start_ns = 10'000;
    static constexpr uint64_t min_limit_ns = 20'000;
    static constexpr uint64_t max_limit_ns = 1'000'000;

    // `wake_cost_ns`: the first estimate of a sleep/wake round trip's cost;
    // the limit is `limit_factor` times the wake cost. A sleep past the
    // limit takes W / 2^shrink_shift off the window: 1 (halve) for idle
    // gaps; the reactor's window for gaps with a request out uses 3 (an
    // eighth), so that an odd slow answer (the p99 of an origin) does not
    // undo what a run of quick ones taught, while an origin whose answers
    // all come late still brings it to 0 in a few tens of gaps.
    explicit spin_window(uint64_t wake_cost_ns, uint32_t limit_factor = 2,
                         uint32_t shrink_shift = 1) noexcept;

    enum class verdict : uint8_t { spun, short_sleep, long_sleep };
    // An idle gap of `gap_ns` ended (work came); `slept`: the lcore slept in
    // it. The caller passes when the work came: a sleeping lcore learns of
    // it about a wake cost later (reactor::end_gap).
    verdict on_gap(uint64_t gap_ns, bool slept) noexcept;
    // A timer wakeup came `late_ns` after its deadline: a wake cost sample.
    void on_wake_late(uint64_t late_ns) noexcept;

    [[nodiscard]] uint64_t window() const noexcept { return window_; }
    [[nodiscard]] uint64_t limit() const noexcept { return limit_; }
    [[nodiscard]] uint64_t wake_cost() const noexcept { return wake_cost_; }

private:
    void set_cost(uint64_t c) noexcept;
    uint64_t window_ = 0;
    uint64_t limit_ = 0;
    uint64_t wake_cost_ = 0;
    uint32_t factor_ = 2;
    uint32_t shrink_shift_ = 1;
};

}  // namespace ferry::reactor
