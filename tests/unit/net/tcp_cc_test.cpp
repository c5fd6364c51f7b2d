#include "ferry/net/tcp_cc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "test_util.h"

namespace ferry::net {

// Internal linkage: other test files print seq_num the same way.
static void PrintTo(seq_num s, std::ostream *os) {
    *os << "seq " << s.value();
}

namespace {

using test::PrintTo;

constexpr uint32_t smss = 1000;  // round numbers: every RFC formula stays exact
constexpr uint64_t ms = 1'000'000;
const seq_num iss(0);

cc_config config(cc_algorithm a, uint32_t iw_segments = 0, uint32_t ssthresh = 0xffffffff) {
    cc_config c;
    c.algorithm = a;
    c.smss = smss;
    c.initial_window_segments = iw_segments;
    c.initial_ssthresh = ssthresh;
    return c;
}

cc_ack new_ack(uint32_t ack, uint32_t acked, uint32_t flight, uint64_t now = 0,
               uint64_t srtt = 100 * ms) {
    cc_ack a;
    a.ack = seq_num(ack);
    a.bytes_acked = acked;
    a.flight_size = flight;
    a.now_ns = now;
    a.srtt_ns = srtt;
    return a;
}

// ---- RFC 5681 §3.1 eq. 3 ----------------------------------------------------

struct iw_case {
    const char *name;
    uint32_t smss;
    uint32_t iw;
};

class InitialWindow : public testing::TestWithParam<iw_case> {};

TEST_P(InitialWindow, Rfc5681Equation3) {
    const auto &c = GetParam();
    EXPECT_EQ(tcp_cc::rfc5681_initial_window(c.smss), c.iw);
    cc_config cfg = config(cc_algorithm::new_reno);
    cfg.smss = c.smss;
    EXPECT_EQ(tcp_cc(cfg, iss).cwnd(), c.iw);
}

INSTANTIATE_TEST_SUITE_P(
    Table, InitialWindow,
    testing::Values(iw_case{"smss_536", 536, 2144}, iw_case{"smss_1095", 1095, 4380},
                    iw_case{"smss_1096", 1096, 3288}, iw_case{"smss_1460", 1460, 4380},
                    iw_case{"smss_2190", 2190, 6570}, iw_case{"smss_2191", 2191, 4382},
                    iw_case{"smss_9000", 9000, 18000}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Cc, ConfiguredInitialWindowAndSsthresh) {
    const tcp_cc cc(config(cc_algorithm::cubic, 10), iss);
    EXPECT_EQ(cc.cwnd(), 10 * smss);  // RFC 6928
    EXPECT_EQ(cc.ssthresh(), 0xffffffffu);
    EXPECT_TRUE(cc.in_slow_start());
    EXPECT_EQ(cc.algorithm(), cc_algorithm::cubic);
    EXPECT_NE(cc.cubic(), nullptr);
    EXPECT_EQ(cc.new_reno(), nullptr);
    EXPECT_EQ(cc.recover(), iss);
}

// ---- slow start (RFC 5681 §3.1, RFC 3465 §2.2-2.3) --------------------------

TEST(Cc, SlowStartCountsBytesUpToTwoSegments) {
    tcp_cc cc(config(cc_algorithm::new_reno), iss);
    ASSERT_EQ(cc.cwnd(), 4000u);
    EXPECT_EQ(cc.on_ack(new_ack(1001, 1000, 3000)), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 5000u);
    EXPECT_EQ(cc.on_ack(new_ack(4001, 3000, 2000)), cc_action::none);  // L = 2*SMSS
    EXPECT_EQ(cc.cwnd(), 7000u);
    EXPECT_EQ(cc.on_ack(new_ack(4501, 500, 1500)), cc_action::none);  // a partial segment
    EXPECT_EQ(cc.cwnd(), 7500u);
}

TEST(Cc, NoGrowthWhenNotCwndLimited) {
    for (cc_algorithm alg : {cc_algorithm::new_reno, cc_algorithm::cubic}) {
        tcp_cc ss(config(alg), iss);
        cc_ack a = new_ack(1001, 1000, 0);
        a.cwnd_limited = false;
        EXPECT_EQ(ss.on_ack(a), cc_action::none);
        EXPECT_EQ(ss.cwnd(), 4000u) << name(alg);
        tcp_cc ca(config(alg, 10, 10000), iss);
        for (int i = 0; i < 50; ++i) {
            a.now_ns += 100 * ms;
            EXPECT_EQ(ca.on_ack(a), cc_action::none);
        }
        EXPECT_EQ(ca.cwnd(), 10000u) << name(alg);
    }
}

// ---- NewReno congestion avoidance (RFC 5681 §3.1, RFC 3465 §2.1) -----------

TEST(NewReno, CongestionAvoidanceAddsOneSegmentPerWindow) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    ASSERT_FALSE(cc.in_slow_start());
    uint32_t ack = 1;
    for (int i = 0; i < 9; ++i) {
        EXPECT_EQ(cc.on_ack(new_ack(ack += 1000, 1000, 9000)), cc_action::none);
        EXPECT_EQ(cc.cwnd(), 10000u) << i;
        EXPECT_EQ(cc.new_reno()->bytes_acked(), 1000u * (i + 1));
    }
    EXPECT_EQ(cc.on_ack(new_ack(ack += 1000, 1000, 9000)), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 11000u);
    EXPECT_EQ(cc.new_reno()->bytes_acked(), 0u);
    // The next increase takes 11 segments.
    for (int i = 0; i < 10; ++i) {
        (void)cc.on_ack(new_ack(ack += 1000, 1000, 10000));
    }
    EXPECT_EQ(cc.cwnd(), 11000u);
    (void)cc.on_ack(new_ack(ack += 1000, 1000, 10000));
    EXPECT_EQ(cc.cwnd(), 12000u);
    // A stretch ACK of three windows still adds one segment.
    (void)cc.on_ack(new_ack(ack += 36000, 36000, 0));
    EXPECT_EQ(cc.cwnd(), 13000u);
    EXPECT_LT(cc.new_reno()->bytes_acked(), 13000u);
}

// ---- loss: ssthresh (RFC 5681 eq. 4, RFC 9438 §4.6) -------------------------

struct ssthresh_case {
    const char *name;
    cc_algorithm alg;
    uint32_t flight;
    uint32_t ssthresh;
};

class SsthreshOnLoss : public testing::TestWithParam<ssthresh_case> {};

TEST_P(SsthreshOnLoss, FastRetransmitAndTimeout) {
    const auto &c = GetParam();
    tcp_cc cc(config(c.alg, 100, 100000), iss);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(cc.on_dup_ack(seq_num(1), seq_num(100001), c.flight), cc_action::none);
    }
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), seq_num(100001), c.flight), cc_action::fast_retransmit);
    EXPECT_EQ(cc.ssthresh(), c.ssthresh);
    EXPECT_EQ(cc.cwnd(), c.ssthresh + 3 * smss);  // RFC 5681 §3.2 step 3
    EXPECT_TRUE(cc.in_recovery());
    EXPECT_EQ(cc.recover(), seq_num(100000));

    tcp_cc to(config(c.alg, 100, 100000), iss);
    to.on_rto(seq_num(100001), c.flight, false);
    EXPECT_EQ(to.ssthresh(), c.ssthresh);
    EXPECT_EQ(to.cwnd(), smss);  // the loss window
}

INSTANTIATE_TEST_SUITE_P(
    Table, SsthreshOnLoss,
    testing::Values(ssthresh_case{"reno_half", cc_algorithm::new_reno, 100000, 50000},
                    ssthresh_case{"reno_odd", cc_algorithm::new_reno, 10001, 5000},
                    ssthresh_case{"reno_floor_two_segments", cc_algorithm::new_reno, 3000, 2000},
                    ssthresh_case{"reno_empty_flight", cc_algorithm::new_reno, 0, 2000},
                    ssthresh_case{"cubic_beta", cc_algorithm::cubic, 100000, 70000},
                    ssthresh_case{"cubic_truncates", cc_algorithm::cubic, 100001, 70000},
                    ssthresh_case{"cubic_floor_two_segments", cc_algorithm::cubic, 2800, 2000}),
    [](const auto &info) { return std::string(info.param.name); });

// ---- NewReno fast recovery (RFC 5681 §3.2, RFC 6582 §3.2) -------------------

TEST(NewReno, FastRecoveryPartialAndFullAcks) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    const seq_num snd_max(10001);  // ten segments out, the first lost
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), snd_max, 10000), cc_action::none);
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), snd_max, 10000), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 10000u);  // no change on the first two (RFC 5681 §3.2 step 1)
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), snd_max, 10000), cc_action::fast_retransmit);
    EXPECT_EQ(cc.ssthresh(), 5000u);
    EXPECT_EQ(cc.cwnd(), 8000u);
    EXPECT_EQ(cc.recover(), seq_num(10000));
    // Step 4: inflate by SMSS per further duplicate.
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), snd_max, 10000), cc_action::none);
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), snd_max, 10000), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 10000u);
    // RFC 6582 step 3, partial ACK of 2 segments: deflate by 2000, add back 1000.
    EXPECT_EQ(cc.on_ack(new_ack(2001, 2000, 8000 + 2000)), cc_action::retransmit_restart_timer);
    EXPECT_EQ(cc.cwnd(), 9000u);
    EXPECT_TRUE(cc.in_recovery());
    // A partial ACK of less than SMSS: deflate only; not the first any more.
    EXPECT_EQ(cc.on_ack(new_ack(2501, 500, 9500)), cc_action::retransmit);
    EXPECT_EQ(cc.cwnd(), 8500u);
    EXPECT_EQ(cc.on_dup_ack(seq_num(2501), snd_max, 9500), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 9500u);
    // Full ACK (SEG.ACK > recover): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
    EXPECT_EQ(cc.on_ack(new_ack(10001, 7500, 4000)), cc_action::none);
    EXPECT_FALSE(cc.in_recovery());
    EXPECT_EQ(cc.cwnd(), 5000u);
    EXPECT_EQ(cc.dup_acks(), 0u);
}

TEST(NewReno, FullAckWithLittleInFlightAvoidsABurst) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(10001), 10000);
    }
    EXPECT_EQ(cc.on_ack(new_ack(10001, 10000, 0)), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 2000u);  // max(0, SMSS) + SMSS < ssthresh
    EXPECT_TRUE(cc.in_slow_start());
}

TEST(NewReno, PartialAckNeverLeavesLessThanOneSegment) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(20001), 4000);
    }
    ASSERT_EQ(cc.cwnd(), 5000u);  // ssthresh 2000 + 3 SMSS
    EXPECT_EQ(cc.on_ack(new_ack(9501, 9500, 10500)), cc_action::retransmit_restart_timer);
    EXPECT_EQ(cc.cwnd(), smss);
}

// RFC 6582 §3.2 step 2: duplicates of data sent before the last timeout or
// recovery (SEG.ACK <= recover) do not start another fast retransmit.
TEST(NewReno, NoFastRetransmitForAcksBelowRecover) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    cc.on_rto(seq_num(10001), 10000, false);
    EXPECT_EQ(cc.recover(), seq_num(10000));
    const uint32_t ssthresh = cc.ssthresh();
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(cc.on_dup_ack(seq_num(5001), seq_num(10001), 5000), cc_action::none);
    }
    EXPECT_EQ(cc.ssthresh(), ssthresh);
    EXPECT_EQ(cc.cwnd(), smss);
    EXPECT_FALSE(cc.in_recovery());
    // A new ACK resets the count; beyond recover, three duplicates start fast
    // retransmit again.
    (void)cc.on_ack(new_ack(10001, 5000, 0));
    EXPECT_EQ(cc.dup_acks(), 0u);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(cc.on_dup_ack(seq_num(10001), seq_num(14001), 4000), cc_action::none);
    }
    EXPECT_EQ(cc.on_dup_ack(seq_num(10001), seq_num(14001), 4000), cc_action::fast_retransmit);
    EXPECT_EQ(cc.recover(), seq_num(14000));
}

// ---- timeouts (RFC 5681 §3.1, RFC 3465 §2.3, RFC 6582 §3.2 step 4) ----------

TEST(NewReno, TimeoutResetsToLossWindowAndSlowStartsOneSegmentPerAck) {
    tcp_cc cc(config(cc_algorithm::new_reno, 10, 10000), iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(10001), 10000);
    }
    ASSERT_TRUE(cc.in_recovery());
    cc.on_rto(seq_num(10001), 10000, false);
    EXPECT_FALSE(cc.in_recovery());
    EXPECT_EQ(cc.cwnd(), smss);
    EXPECT_EQ(cc.ssthresh(), 5000u);
    // A second timeout of the same segment holds ssthresh (a fresh one with
    // this flight would set 2000).
    cc.on_rto(seq_num(10001), 3000, true);
    EXPECT_EQ(cc.ssthresh(), 5000u);
    EXPECT_EQ(cc.cwnd(), smss);
    // L = 1*SMSS in the slow start after a timeout.
    (void)cc.on_ack(new_ack(3001, 3000, 7000));
    EXPECT_EQ(cc.cwnd(), 2000u);
    (void)cc.on_ack(new_ack(6001, 3000, 4000));
    EXPECT_EQ(cc.cwnd(), 3000u);
    (void)cc.on_ack(new_ack(7001, 1000, 3000));
    (void)cc.on_ack(new_ack(8001, 1000, 2000));
    EXPECT_EQ(cc.cwnd(), 5000u);
    EXPECT_FALSE(cc.in_slow_start());
    // The first congestion-avoidance ACK ends the post-timeout limit; a later
    // slow start (after a full-ACK deflation) uses L = 2*SMSS again.
    (void)cc.on_ack(new_ack(11001, 3000, 1000));
    EXPECT_EQ(cc.cwnd(), 5000u);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(11001), seq_num(22001), 11000);
    }
    ASSERT_TRUE(cc.in_recovery());
    EXPECT_EQ(cc.ssthresh(), 5500u);
    EXPECT_EQ(cc.on_ack(new_ack(22001, 11000, 0)), cc_action::none);
    ASSERT_EQ(cc.cwnd(), 2000u);
    (void)cc.on_ack(new_ack(25001, 3000, 0));
    EXPECT_EQ(cc.cwnd(), 4000u);
}

// ---- CUBIC (RFC 9438 §4) ----------------------------------------------------

// The RFC's formulas, written out again from the text in segments and seconds
// (eq. 1, eq. 2, §4.2's target), as the reference for the implementation's
// byte arithmetic.
struct cubic_reference {
    double w_max;  // segments
    double k;      // seconds
    [[nodiscard]] double w(double t) const { return 0.4 * std::pow(t - k, 3) + w_max; }
};

// A CUBIC flow at 100 segments that sees three duplicate ACKs and recovers with
// 70 segments still in flight: cwnd = ssthresh = 70 segments, W_max = 100.
tcp_cc cubic_after_loss(bool fast_convergence = true) {
    cc_config c = config(cc_algorithm::cubic, 100, 100000);
    c.fast_convergence = fast_convergence;
    tcp_cc cc(c, iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(100001), 100000);
    }
    (void)cc.on_ack(new_ack(100001, 100000, 70000));
    return cc;
}

TEST(Cubic, MultiplicativeDecrease) {
    tcp_cc cc(config(cc_algorithm::cubic, 100, 100000), iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(100001), 100000);
    }
    EXPECT_EQ(cc.ssthresh(), 70000u);  // β = 0.7 of the flight
    EXPECT_EQ(cc.cwnd(), 73000u);      // + 3 SMSS for the duplicates
    EXPECT_DOUBLE_EQ(cc.cubic()->w_max(), 100000.0);
    EXPECT_DOUBLE_EQ(cc.cubic()->cwnd_prior(), 100000.0);
    EXPECT_FALSE(cc.cubic()->in_epoch());
    (void)cc.on_ack(new_ack(100001, 100000, 70000));
    EXPECT_EQ(cc.cwnd(), 70000u);
}

// One ACK per RTT covering the whole window of a flow that lost at W_max =
// 1000 segments (RTT 100 ms: far from Reno's region): cwnd follows
// W_cubic(t + RTT), concave below W_max, flat around t = K, convex after.
TEST(Cubic, GrowthCurveFollowsWCubic) {
    cc_config cfg = config(cc_algorithm::cubic, 1000, 1'000'000);
    tcp_cc cc(cfg, iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(1'000'001), 1'000'000);
    }
    (void)cc.on_ack(new_ack(1'000'001, 1'000'000, 700'000));
    ASSERT_EQ(cc.cwnd(), 700'000u);
    constexpr uint64_t rtt = 100 * ms;
    uint64_t now = 1'000'000 * ms;
    uint32_t ack = 1'000'001;
    const cubic_reference ref{1000.0, std::cbrt(300.0 / 0.4)};  // K = cbrt(750) = 9.0856 s

    std::vector<uint32_t> cwnd_of;  // after the ACK at t = 0.1 * index
    for (int i = 0; i <= 150; ++i) {
        const uint32_t before = cc.cwnd();
        ASSERT_EQ(cc.on_ack(new_ack(ack += before, before, before, now, rtt)), cc_action::none);
        if (i == 0) {
            ASSERT_TRUE(cc.cubic()->in_epoch());
            EXPECT_EQ(cc.cubic()->epoch_start_ns(), now);
            EXPECT_EQ(cc.cubic()->cwnd_epoch(), 700'000u);
            EXPECT_DOUBLE_EQ(cc.cubic()->k(), ref.k);
        }
        const double t = static_cast<double>(i) * 0.1;
        // No more than 1.5x per RTT, never a decrease.
        EXPECT_GE(cc.cwnd(), before);
        EXPECT_LE(cc.cwnd(), before * 1.5 + 1);
        // Outside the Reno-friendly region the window is the clamped target.
        if (ref.w(t) * smss >= cc.cubic()->w_est()) {
            const double target =
                std::clamp(ref.w(t + 0.1) * smss, static_cast<double>(before), 1.5 * before);
            EXPECT_NEAR(cc.cwnd(), target, 1.0) << "t " << t;
        } else {
            EXPECT_EQ(i, 0) << "only the first ACK (t = 0, W_cubic = cwnd_epoch) is Reno's";
        }
        cwnd_of.push_back(cc.cwnd());
        now += rtt;
    }
    const auto at_k = static_cast<std::size_t>(std::lround(ref.k / 0.1)) - 1;  // t + RTT ~ K
    // Concave: below W_max the increments shrink.
    for (std::size_t i = 2; i < at_k; ++i) {
        EXPECT_LE(cwnd_of[i], 1'000'000u);
        EXPECT_LE(cwnd_of[i] - cwnd_of[i - 1], cwnd_of[i - 1] - cwnd_of[i - 2] + 1) << i;
    }
    // The plateau: the window reaches W_max one RTT before K.
    EXPECT_NEAR(cwnd_of[at_k], 1'000'000.0, 100.0);
    // Convex: past W_max the increments grow.
    for (std::size_t i = at_k + 3; i < cwnd_of.size(); ++i) {
        EXPECT_GT(cwnd_of[i], 1'000'000u);
        EXPECT_GE(cwnd_of[i] - cwnd_of[i - 1] + 1, cwnd_of[i - 1] - cwnd_of[i - 2]) << i;
    }
    // 15 s after the loss: W_cubic(15.1) = 0.4 * (15.1 - K)^3 + 1000 = 1087.02 segments.
    EXPECT_NEAR(cwnd_of.back(), 1'087'023.0, 2.0);
}

// RFC 9438 §4.3: with a small window and a short RTT, Reno would grow faster
// than W_cubic; CUBIC then follows W_est, growing α_cubic = 3(1-β)/(1+β) =
// 0.529 segments per RTT up to cwnd_prior, then 1 segment per RTT like Reno.
TEST(Cubic, RenoFriendlyRegion) {
    cc_config c = config(cc_algorithm::cubic, 10, 10000);
    tcp_cc cc(c, iss);
    for (int i = 0; i < 3; ++i) {
        (void)cc.on_dup_ack(seq_num(1), seq_num(10001), 10000);
    }
    (void)cc.on_ack(new_ack(10001, 10000, 7000));
    ASSERT_EQ(cc.cwnd(), 7000u);
    constexpr uint64_t rtt = 10 * ms;
    uint64_t now = 1'000 * ms;
    uint32_t ack = 10001;
    double w_est = 7000;  // segments * SMSS, §4.3: starts at cwnd_epoch
    for (int i = 0; i < 20; ++i) {
        const uint32_t before = cc.cwnd();
        (void)cc.on_ack(new_ack(ack += before, before, before, now, rtt));
        w_est += (w_est >= 10000 ? 1.0 : cc_cubic::alpha) * smss;
        EXPECT_NEAR(cc.cubic()->w_est(), w_est, 1e-6) << i;
        EXPECT_NEAR(cc.cwnd(), std::floor(w_est), 1.0) << i;
        // W_cubic stays below: t is tiny next to K = cbrt(7.5) s.
        EXPECT_LT(cc.cubic()->w_cubic(static_cast<double>(i) * 0.01, smss), w_est) << i;
        now += rtt;
    }
    EXPECT_NEAR(cc_cubic::alpha, 0.5294117647, 1e-9);
    // Six RTTs at 0.529 reach cwnd_prior (7000 + 6 * 529.4 = 10176), then
    // fourteen at 1000: 24176.
    EXPECT_NEAR(cc.cwnd(), 24176.0, 1.0);
}

// RFC 9438 §4.7.
TEST(Cubic, FastConvergenceLowersWmax) {
    for (bool fc : {true, false}) {
        tcp_cc cc = cubic_after_loss(fc);
        ASSERT_EQ(cc.cwnd(), 70000u);
        // A second loss before the window regained W_max = 100 segments.
        for (int i = 0; i < 3; ++i) {
            (void)cc.on_dup_ack(seq_num(100001), seq_num(170001), 70000);
        }
        EXPECT_DOUBLE_EQ(cc.cubic()->w_max(), fc ? 70000 * 1.7 / 2 : 70000.0);
        EXPECT_DOUBLE_EQ(cc.cubic()->cwnd_prior(), 70000.0);
        EXPECT_EQ(cc.ssthresh(), 49000u);
        // The next epoch's K uses the lowered W_max: cbrt((59.5 - 49) / 0.4).
        (void)cc.on_ack(new_ack(170001, 70000, 49000, 5'000 * ms));
        (void)cc.on_ack(new_ack(219001, 49000, 49000, 5'100 * ms));
        ASSERT_TRUE(cc.cubic()->in_epoch());
        EXPECT_DOUBLE_EQ(cc.cubic()->k(), std::cbrt(((fc ? 59.5 : 70.0) - 49.0) / 0.4));
    }
}

// RFC 9438 §4.8: after a timeout the first congestion avoidance stage has
// K = 0 and W_max = cwnd at its start.
TEST(Cubic, TimeoutStartsConvexFromCwndEpoch) {
    tcp_cc cc(config(cc_algorithm::cubic, 100, 100000), iss);
    cc.on_rto(seq_num(100001), 100000, false);
    EXPECT_EQ(cc.cwnd(), smss);
    EXPECT_EQ(cc.ssthresh(), 70000u);
    EXPECT_DOUBLE_EQ(cc.cubic()->cwnd_prior(), 100000.0);
    // Slow start at one segment per ACK (after an RTO) up to ssthresh.
    uint32_t ack = 1;
    uint64_t now = 0;
    while (cc.in_slow_start()) {
        (void)cc.on_ack(new_ack(ack += smss, smss, 0, now += ms));
    }
    EXPECT_EQ(cc.cwnd(), 70000u);
    (void)cc.on_ack(new_ack(ack += smss, smss, 0, now += ms));
    ASSERT_TRUE(cc.cubic()->in_epoch());
    EXPECT_DOUBLE_EQ(cc.cubic()->k(), 0.0);
    EXPECT_DOUBLE_EQ(cc.cubic()->w_max(), 70000.0);
    EXPECT_EQ(cc.cubic()->cwnd_epoch(), 70000u);
}

// RFC 9438 §4.10: leaving the first slow start without a loss, K = 0 and
// W_max = cwnd_prior = cwnd.
TEST(Cubic, FirstSlowStartExitWithoutLoss) {
    tcp_cc cc(config(cc_algorithm::cubic, 10, 20000), iss);
    uint32_t ack = 1;
    while (cc.in_slow_start()) {
        (void)cc.on_ack(new_ack(ack += 2000, 2000, 0));
    }
    const uint32_t at_exit = cc.cwnd();
    EXPECT_EQ(at_exit, 20000u);
    (void)cc.on_ack(new_ack(ack += 1000, 1000, 0, 7 * ms));
    EXPECT_DOUBLE_EQ(cc.cubic()->k(), 0.0);
    EXPECT_DOUBLE_EQ(cc.cubic()->w_max(), at_exit);
    EXPECT_DOUBLE_EQ(cc.cubic()->cwnd_prior(), at_exit);
}

// RFC 9438 §4.2: t leaves out application-limited time.
TEST(Cubic, ApplicationLimitedTimeIsNotCounted) {
    tcp_cc cc = cubic_after_loss();
    (void)cc.on_ack(new_ack(170001, 70000, 70000, 1'000 * ms));
    const uint64_t start = cc.cubic()->epoch_start_ns();
    EXPECT_EQ(start, 1'000 * ms);
    cc_ack idle = new_ack(170002, 1, 10, 3'000 * ms);
    idle.cwnd_limited = false;
    const uint32_t cwnd = cc.cwnd();
    EXPECT_EQ(cc.on_ack(idle), cc_action::none);
    EXPECT_EQ(cc.cwnd(), cwnd);
    EXPECT_EQ(cc.cubic()->epoch_start_ns(), start + 2'000 * ms);
}

TEST(Cc, Names) {
    EXPECT_STREQ(name(cc_algorithm::new_reno), "new_reno");
    EXPECT_STREQ(name(cc_algorithm::cubic), "cubic");
    EXPECT_STREQ(name(cc_action::none), "none");
    EXPECT_STREQ(name(cc_action::fast_retransmit), "fast_retransmit");
    EXPECT_STREQ(name(cc_action::retransmit_restart_timer), "retransmit_restart_timer");
    EXPECT_STREQ(name(cc_action::retransmit), "retransmit");
}

}  // namespace
}  // namespace ferry::net
