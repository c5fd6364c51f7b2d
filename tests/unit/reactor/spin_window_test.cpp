// The adaptive policy's rule (spin_window.h), alone: no clock, no loop.
#include "ferry/reactor/spin_window.h"

#include <gtest/gtest.h>

namespace ferry::reactor {
namespace {

constexpr uint64_t us = 1000;

TEST(SpinWindow, StartsBySleepingAtOnceWithALimitOfTwiceTheWakeCost) {
    spin_window w(60 * us);
    EXPECT_EQ(w.window(), 0u);
    EXPECT_EQ(w.limit(), 120 * us);
    EXPECT_EQ(w.wake_cost(), 60 * us);
    // The limit stays within [20 us, 1 ms] whatever the wake cost.
    EXPECT_EQ(spin_window(1 * us).limit(), spin_window::min_limit_ns);
    EXPECT_EQ(spin_window(5000 * us).limit(), spin_window::max_limit_ns);
}

// The busy window (a request out to an origin) takes a larger factor: it
// spins through replies up to four wake costs, where the idle window would
// sleep and put a wake-up into the request's latency.
TEST(SpinWindow, TheLimitFactorScalesTheLimit) {
    spin_window busy(60 * us, 4);
    EXPECT_EQ(busy.limit(), 240 * us);
    for (int i = 0; i < 10; ++i) busy.on_gap(200 * us, true);
    EXPECT_EQ(busy.window(), 240 * us);
    spin_window idle(60 * us);
    for (int i = 0; i < 10; ++i) idle.on_gap(200 * us, true);  // past 2 x 60 us
    EXPECT_EQ(idle.window(), 0u);
}

TEST(SpinWindow, ASleepThatEndedWithinTheLimitGrowsTheWindow) {
    spin_window w(60 * us);
    EXPECT_EQ(w.on_gap(40 * us, true), spin_window::verdict::short_sleep);
    EXPECT_EQ(w.window(), spin_window::grow_start_ns);
    w.on_gap(40 * us, true);
    EXPECT_EQ(w.window(), 2 * spin_window::grow_start_ns);
    for (int i = 0; i < 10; ++i) w.on_gap(100 * us, true);
    EXPECT_EQ(w.window(), w.limit());  // capped
}

TEST(SpinWindow, ASpinThatCaughtTheWorkLeavesTheWindow) {
    spin_window w(60 * us);
    w.on_gap(40 * us, true);
    const uint64_t before = w.window();
    EXPECT_EQ(w.on_gap(5 * us, false), spin_window::verdict::spun);
    EXPECT_EQ(w.window(), before);
}

TEST(SpinWindow, ASleepPastTheLimitHalvesTheWindowDownToZero) {
    spin_window w(60 * us);
    for (int i = 0; i < 10; ++i) w.on_gap(100 * us, true);
    ASSERT_EQ(w.window(), 120 * us);
    EXPECT_EQ(w.on_gap(5000 * us, true), spin_window::verdict::long_sleep);
    EXPECT_EQ(w.window(), 60 * us);
    w.on_gap(5000 * us, true);
    w.on_gap(5000 * us, true);
    EXPECT_EQ(w.window(), 15 * us);
    w.on_gap(5000 * us, true);  // 7.5 us: below grow_start, so none
    EXPECT_EQ(w.window(), 0u);
}

TEST(SpinWindow, AShrinkShiftOfThreeTakesAnEighthPerLongSleep) {
    spin_window w(60 * us, 2, 3);
    for (int i = 0; i < 10; ++i) w.on_gap(100 * us, true);
    ASSERT_EQ(w.window(), 120 * us);
    EXPECT_EQ(w.on_gap(5000 * us, true), spin_window::verdict::long_sleep);
    EXPECT_EQ(w.window(), 105 * us);
    // A run of late answers still brings it to 0: 120 x (7/8)^n < 10 us.
    for (int i = 0; i < 20; ++i) w.on_gap(5000 * us, true);
    EXPECT_EQ(w.window(), 0u);
}

TEST(SpinWindow, TimerLatenessMovesTheWakeCostAndTheLimit) {
    spin_window w(60 * us);
    for (int i = 0; i < 100; ++i) w.on_wake_late(200 * us);
    EXPECT_NEAR(double(w.wake_cost()), 200.0 * us, 2.0 * us);
    EXPECT_NEAR(double(w.limit()), 400.0 * us, 4.0 * us);
    for (int i = 0; i < 10; ++i) w.on_gap(300 * us, true);
    EXPECT_EQ(w.window(), w.limit());
    // A faster machine now: the limit shrinks and the window with it.
    for (int i = 0; i < 100; ++i) w.on_wake_late(10 * us);
    EXPECT_LE(w.limit(), spin_window::min_limit_ns + 100);  // the EWMA's integer rounding
    EXPECT_LE(w.window(), w.limit());
    // One absurd sample (a preempted vCPU) moves it by an eighth of 1 ms at most.
    w.on_wake_late(50'000 * us);
    EXPECT_LE(w.wake_cost(), 10 * us + spin_window::max_limit_ns / 8 + 1 * us);
}

}  // namespace
}  // namespace ferry::reactor
