// The adaptive policy's choice (spin_window.h), alone: no clock, no loop.
// Unless a test says otherwise a window starts with L = 60 us, S = 5 us and
// λ = 100%: a sleep is priced C = 65 us of CPU.
#include "ferry/reactor/spin_window.h"

#include <gtest/gtest.h>

#include "exp_gaps.h"

#include <cmath>
#include <cstdint>

namespace ferry::reactor {
namespace {

constexpr uint64_t us = 1000;

spin_window make(uint32_t weight_pct = 100) { return spin_window(60 * us, 5 * us, weight_pct); }

using test::exp_gaps;

TEST(SpinWindow, BucketEdgesAreLogSpacedFromOneMicrosecond) {
    EXPECT_EQ(spin_window::edge(0), 0u);
    EXPECT_EQ(spin_window::edge(1), 1 * us);
    EXPECT_EQ(spin_window::edge(2), 1500u);
    EXPECT_EQ(spin_window::edge(3), 2 * us);
    EXPECT_EQ(spin_window::edge(4), 3 * us);
    EXPECT_EQ(spin_window::edge(spin_window::nbuckets - 1), 2048 * us);
    for (unsigned i = 1; i < spin_window::nbuckets; ++i)
        EXPECT_LT(spin_window::edge(i - 1), spin_window::edge(i));
}

TEST(SpinWindow, WithNoGapsSeenItSleepsAtOnceAndPricesASleepAsItsCpuPlusItsLatency) {
    spin_window w = make();
    EXPECT_EQ(w.window(), 0u);
    EXPECT_EQ(w.price(), 65 * us);
    EXPECT_EQ(w.limit(), 4 * 65 * us);
    EXPECT_EQ(w.sleep_latency(), 60 * us);
    EXPECT_EQ(make(200).price(), 125 * us);
    EXPECT_EQ(make(0).price(), 5 * us);
    // The limit stays within [20 us, 2 ms].
    EXPECT_EQ(spin_window(1 * us, 1 * us).limit(), spin_window::min_limit_ns);
    EXPECT_EQ(spin_window(900 * us, 5 * us).limit(), spin_window::max_limit_ns);
}

TEST(SpinWindow, GapsShorterThanAPriceAreSpunThroughWithTheShortestWindowThatCatchesThem) {
    spin_window w = make();
    for (int i = 0; i < 32; ++i) EXPECT_EQ(w.on_gap(20 * us, false), spin_window::verdict::spun);
    // 20 us lies in [16, 24): a 24 us spin catches every one.
    EXPECT_EQ(w.window(), 24 * us);
}

TEST(SpinWindow, GapsLongerThanAPriceAreSleptThroughAtOnce) {
    spin_window w = make();
    for (int i = 0; i < 32; ++i) w.on_gap(20 * us, false);
    ASSERT_GT(w.window(), 0u);
    // 200 us gaps from now on (slept through: 60 us of wake latency on top).
    for (int i = 0; i < 200; ++i)
        EXPECT_EQ(w.on_gap(260 * us, true), spin_window::verdict::long_sleep);
    EXPECT_EQ(w.window(), 0u);
}

// Memoryless gaps: waiting longer never makes the rest of the wait shorter,
// so the choice is all or nothing: spin when the mean gap is under the
// price, sleep at once when it is over.
TEST(SpinWindow, ExponentialGapsSpinBelowThePriceAndSleepAtOnceAbove) {
    spin_window quick = make();
    exp_gaps q{.mean_ns = 20 * us};
    for (int i = 0; i < 2000; ++i) quick.on_gap(q.next(), false);
    EXPECT_GE(quick.window(), 100 * us);

    spin_window slow = make();
    exp_gaps s{.mean_ns = 250 * us};
    for (int i = 0; i < 2000; ++i) slow.on_gap(s.next(), false);
    EXPECT_EQ(slow.window(), 0u);
}

// Two kinds of gap on one lcore (an origin's quick answers, and clients'
// think time): the window catches the quick ones and sleeps through the
// rest instead of spinning up to the limit for them.
TEST(SpinWindow, AMixtureGetsAWindowForItsShortModeOnly) {
    spin_window w = make();
    for (int i = 0; i < 300; ++i) {
        w.on_gap(10 * us, false);
        w.on_gap(10 * us, false);
        w.on_gap(1000 * us, false);
    }
    EXPECT_EQ(w.window(), 12 * us);
}

TEST(SpinWindow, TheLatencyWeightMovesTheChoice) {
    spin_window w = make();
    for (int i = 0; i < 64; ++i) w.on_gap(40 * us, false);
    EXPECT_EQ(w.window(), 48 * us);  // 40 us of spin against 65
    w.set_latency_weight(0);         // latency is free: 40 us of spin against 5
    EXPECT_EQ(w.price(), 5 * us);
    EXPECT_EQ(w.window(), 0u);
    w.set_latency_weight(1000);
    EXPECT_EQ(w.window(), 48 * us);
    EXPECT_EQ(w.latency_weight_pct(), 1000u);
}

// A sleeping lcore learns of the work a wake-up after it came: the gap is
// recorded as long as the work kept the lcore waiting, and judged by that.
TEST(SpinWindow, ASleptGapLosesTheSleepsLatencyAndIsJudgedAgainstThePrice) {
    spin_window w = make();
    // 100 us observed, 40 us of it waiting on work: a spin of 48 us would
    // have caught it for less than the sleep's 65.
    EXPECT_EQ(w.on_gap(100 * us, true), spin_window::verdict::short_sleep);
    EXPECT_EQ(w.window(), 48 * us);
    EXPECT_EQ(w.on_gap(30 * us, false), spin_window::verdict::spun);
    EXPECT_EQ(w.on_gap(160 * us, true), spin_window::verdict::long_sleep);  // 100 us > 65
    EXPECT_EQ(w.on_gap(10 * us, true), spin_window::verdict::short_sleep);  // can't go below 0
}

// The histogram halves every `history` gaps: a load that changed is
// learned within a few hundred gaps, whatever came before.
TEST(SpinWindow, OldGapsFade) {
    spin_window w = make();
    for (int i = 0; i < 5000; ++i) w.on_gap(500 * us, false);
    ASSERT_EQ(w.window(), 0u);
    int n = 0;
    while (w.window() == 0 && n < 5000) {
        w.on_gap(20 * us, false);
        ++n;
    }
    EXPECT_EQ(w.window(), 24 * us);
    EXPECT_LT(n, 2 * int(spin_window::history));
    EXPECT_LT(w.remembered(), double(spin_window::history));
}

// A port without rx interrupts naps: N = sqrt(2 S R / λ) within [10 us,
// the budget], R the mean rest of a gap that outlasts the window; half a
// nap is latency, so it is in the price.
TEST(SpinWindow, NapLengthBalancesTheNapsCpuAgainstTheirLatency) {
    spin_window w = make();
    w.set_nap_budget(100 * us);
    EXPECT_EQ(w.nap(), 100 * us);  // no gaps yet: the budget
    EXPECT_EQ(w.sleep_latency(), 110 * us);
    EXPECT_EQ(w.price(), 115 * us);
    // Idle for long stretches: naps as long as the budget allows.
    for (int i = 0; i < 64; ++i) w.on_gap(10'000 * us, false);
    EXPECT_EQ(w.window(), 0u);
    EXPECT_EQ(w.nap(), 100 * us);
    // Gaps of 200 us: sqrt(2 x 5 us x 200 us) = 44.7 us.
    spin_window b = make();
    b.set_nap_budget(100 * us);
    for (int i = 0; i < 600; ++i) b.on_gap(200 * us, false);
    EXPECT_EQ(b.window(), 0u);
    EXPECT_NEAR(double(b.nap()), 44.7 * us, 1.0 * us);
    EXPECT_EQ(b.price(), 5 * us + 60 * us + b.nap() / 2);
    // Latency weighs more and a sleep costs less CPU: shorter naps, down
    // to the 10 us floor (sqrt(2 x 1 us x 3 ms / 100) = 7.7 us).
    spin_window f = make(10'000);
    f.set_nap_budget(100 * us);
    for (int i = 0; i < 100; ++i) f.on_sleep_cpu(1 * us);
    for (int i = 0; i < 64; ++i) f.on_gap(3000 * us, false);
    EXPECT_EQ(f.window(), 0u);
    EXPECT_EQ(f.nap(), spin_window::min_nap_ns);
    // No budget: no naps.
    b.set_nap_budget(0);
    EXPECT_EQ(b.nap(), 0u);
    EXPECT_EQ(b.sleep_latency(), 60 * us);
}

// A window keeps what the fixed modes would have spent on its gaps (spin
// T, then sleep), and reports its own CPU and its options per gap.
TEST(SpinWindow, ItKeepsItsOwnCpuAndTheFixedModesCpuOnTheSameGaps) {
    spin_window w = make(1000);  // C = 605 us
    w.set_cpu_reference(200 * us);
    for (int i = 0; i < 10; ++i) w.on_gap(100 * us, false);
    for (int i = 0; i < 10; ++i) w.on_gap(1000 * us, false);
    // T = 200 us: 100 us spun, or 200 us spun and a 5 us sleep.
    EXPECT_NEAR(w.cpu_reference_cost(), 10 * 100e3 + 10 * 205e3, 1);
    EXPECT_NEAR(w.ref_cpu_per_gap(), 152.5e3, 1);
    ASSERT_EQ(w.window(), 128 * us);  // 100 us caught for less than a 605 us price
    EXPECT_NEAR(w.cpu_now(), 10 * 100e3 + 10 * 133e3, 1);
    double cost[spin_window::nbuckets], cpu[spin_window::nbuckets];
    const unsigned n = w.options(cost, cpu);
    ASSERT_GE(n, 16u);
    EXPECT_EQ(spin_window::edge(15), 128 * us);
    EXPECT_NEAR(cpu[0], 5e3, 1);                       // every gap a sleep
    EXPECT_NEAR(cpu[15], (100e3 + 133e3) / 2, 1);      // W = 128 us
    EXPECT_NEAR(cost[15], (100e3 + 128e3 + 605e3) / 2, 1);
    // A new threshold counts the remembered gaps afresh.
    w.set_cpu_reference(50 * us);
    EXPECT_NEAR(w.ref_cpu_per_gap(), 55e3, 1);
    // force() overrides the choice until the next one.
    w.force(0);
    EXPECT_EQ(w.window(), 0u);
    const uint32_t c = w.choices();
    for (int i = 0; i < 16; ++i) w.on_gap(100 * us, false);
    EXPECT_GT(w.choices(), c);
    EXPECT_EQ(w.window(), 128 * us);
}

TEST(SpinWindow, WakeLatenessAndSleepCpuSamplesMoveThePrice) {
    spin_window w = make();
    for (int i = 0; i < 100; ++i) w.on_wake_late(200 * us);
    EXPECT_NEAR(double(w.wake_cost()), 200.0 * us, 2.0 * us);
    for (int i = 0; i < 100; ++i) w.on_sleep_cpu(20 * us);
    EXPECT_NEAR(double(w.sleep_cpu()), 20.0 * us, 1.0 * us);
    EXPECT_NEAR(double(w.price()), 220.0 * us, 3.0 * us);
    // 100 us gaps: not worth a spin at 65 us a sleep, worth it at 220.
    for (int i = 0; i < 64; ++i) w.on_gap(100 * us, false);
    EXPECT_EQ(w.window(), 128 * us);
    // One absurd sample (a preempted vCPU) moves either a little: L by a
    // sixteenth, S by an eighth at most.
    const uint64_t cost = w.wake_cost(), cpu = w.sleep_cpu();
    w.on_wake_late(50'000 * us);
    EXPECT_EQ(w.wake_cost(), cost + cost / 16);
    w.on_sleep_cpu(50'000 * us);
    EXPECT_LE(w.sleep_cpu(), cpu + cpu / 8 + 2 * us);
    // A lasting change is followed: 40 samples of 1 ms.
    for (int i = 0; i < 40; ++i) w.on_wake_late(1000 * us);
    EXPECT_EQ(w.wake_cost(), 1000 * us);
}

// L is a median: a tail of slow wake-ups (one in five 20x the others) does
// not move it, where a mean would be 5x.
TEST(SpinWindow, TheWakeLatencyIsTheMedianOfItsSamplesNotTheMean) {
    spin_window w = make();
    for (int i = 0; i < 500; ++i) w.on_wake_late(i % 5 == 0 ? 1000 * us : 50 * us);
    EXPECT_NEAR(double(w.wake_cost()), 50.0 * us, 5.0 * us);
    EXPECT_NEAR(double(w.price()), 5.0 * us + 50.0 * us, 5.0 * us);
}

}  // namespace
}  // namespace ferry::reactor
