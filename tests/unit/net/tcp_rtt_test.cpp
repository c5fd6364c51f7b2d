#include "ferry/net/tcp_rtt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

constexpr uint64_t ms = 1'000'000;
constexpr uint64_t s = 1'000'000'000;

struct step {
    uint64_t sample;
    uint64_t srtt;
    uint64_t rttvar;
    uint64_t rto;
};

struct rtt_case {
    const char *name;
    rtt_config config;
    uint32_t expected_samples;
    std::vector<step> steps;
};

class RttSequence : public testing::TestWithParam<rtt_case> {};

// Each expected triple was computed with exact rational arithmetic from the
// RFC 6298 §2.2/§2.3 formulas (RFC 7323 Appendix G for expected_samples > 1);
// the samples are chosen so that every value is a whole number of ns, so the
// integer implementation must match exactly.
TEST_P(RttSequence, FollowsRfc6298) {
    const auto &c = GetParam();
    rtt_estimator e(c.config);
    EXPECT_FALSE(e.has_sample());
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
        const step &st = c.steps[i];
        e.on_sample(st.sample, c.expected_samples);
        EXPECT_TRUE(e.has_sample());
        EXPECT_EQ(e.srtt_ns(), st.srtt) << "sample " << i;
        EXPECT_EQ(e.rttvar_ns(), st.rttvar) << "sample " << i;
        EXPECT_EQ(e.rto_ns(), st.rto) << "sample " << i;
    }
}

rtt_config with_min(uint64_t min_rto, uint64_t g = 1 * ms) {
    rtt_config c;
    c.min_rto_ns = min_rto;
    c.granularity_ns = g;
    return c;
}

INSTANTIATE_TEST_SUITE_P(
    Table, RttSequence,
    testing::Values(
        // (2.2): SRTT = R, RTTVAR = R/2, RTO = SRTT + 4*RTTVAR = 3R. Then a
        // steady RTT: RTTVAR decays by 3/4 per sample, RTO toward the floor.
        rtt_case{"steady",
                 {},
                 1,
                 {{100 * ms, 100 * ms, 50 * ms, 300 * ms},
                  {100 * ms, 100 * ms, 37'500'000, 250 * ms},
                  {100 * ms, 100 * ms, 28'125'000, 212'500'000},
                  {100 * ms, 100 * ms, 21'093'750, 200 * ms}}},  // 184.375 ms -> min_rto
        rtt_case{"rise",
                 {},
                 1,
                 {{100 * ms, 100 * ms, 50 * ms, 300 * ms},
                  // RTTVAR = 3/4*50 + 1/4*|100-200| = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5
                  {200 * ms, 112'500'000, 62'500'000, 362'500'000},
                  {200 * ms, 123'437'500, 68'750'000, 398'437'500}}},
        rtt_case{"fall",
                 {},
                 1,
                 {{400 * ms, 400 * ms, 200 * ms, 1200 * ms},
                  {80 * ms, 360 * ms, 230 * ms, 1280 * ms},
                  {80 * ms, 325 * ms, 242'500'000, 1295 * ms}}},
        rtt_case{"jitter",
                 {},
                 1,
                 {{100 * ms, 100 * ms, 50 * ms, 300 * ms},
                  {60 * ms, 95 * ms, 47'500'000, 285 * ms},
                  {140 * ms, 100'625'000, 46'875'000, 288'125'000},
                  {100 * ms, 100'546'875, 35'312'500, 241'796'875}}},
        // A LAN RTT of 250 us: the RTO sits on min_rto (200 ms, Linux's).
        rtt_case{"lan_floor",
                 {},
                 1,
                 {{250'000, 250'000, 125'000, 200 * ms}, {250'000, 250'000, 93'750, 200 * ms}}},
        // RFC 6298 §2.4's own floor of one second when configured.
        rtt_case{
            "rfc_one_second_floor", with_min(1 * s), 1, {{100 * ms, 100 * ms, 50 * ms, 1 * s}}},
        // G: once K*RTTVAR < G the RTO is SRTT + G.
        rtt_case{"granularity",
                 with_min(0, 10 * ms),
                 1,
                 {{8 * ms, 8 * ms, 4 * ms, 24 * ms},
                  {8 * ms, 8 * ms, 3 * ms, 20 * ms},
                  {8 * ms, 8 * ms, 2'250'000, 18 * ms},  // 4*2.25 = 9 < G = 10
                  {8 * ms, 8 * ms, 1'687'500, 18 * ms}}},
        // RFC 6298 §2.5: bounded by max_rto (120 s).
        rtt_case{"ceiling", {}, 1, {{100 * s, 100 * s, 50 * s, 120 * s}}},
        // RFC 7323 Appendix G with ExpectedSamples = 4: gains 1/32 and 1/16.
        rtt_case{"timestamps_every_ack",
                 {},
                 4,
                 {{100 * ms, 100 * ms, 50 * ms, 300 * ms},
                  {200 * ms, 103'125'000, 53'125'000, 315'625'000}}}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Rtt, InitialRtoIsOneSecond) {
    rtt_estimator e;
    EXPECT_EQ(e.rto_ns(), 1 * s);  // RFC 6298 §2.1
    EXPECT_EQ(e.backoffs(), 0u);
    EXPECT_EQ(e.srtt_ns(), 0u);
}

TEST(Rtt, BackoffDoublesUpToTheCap) {
    rtt_estimator e;
    const uint64_t expect[] = {2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 120 * s, 120 * s};
    for (std::size_t i = 0; i < std::size(expect); ++i) {
        e.backoff();
        EXPECT_EQ(e.rto_ns(), expect[i]) << "backoff " << i + 1;
        EXPECT_EQ(e.backoffs(), i + 1);
    }
    for (int i = 0; i < 100; ++i) {  // no overflow however long it lasts
        e.backoff();
    }
    EXPECT_EQ(e.rto_ns(), 120 * s);
}

// RFC 6298 §5.5 keeps the backed-off RTO; the next valid sample (Karn:
// not from a retransmitted segment) recomputes it from SRTT and RTTVAR.
TEST(Rtt, SampleCollapsesBackoff) {
    rtt_estimator e;
    e.on_sample(100 * ms);
    EXPECT_EQ(e.rto_ns(), 300 * ms);
    e.backoff();
    e.backoff();
    EXPECT_EQ(e.rto_ns(), 1200 * ms);
    EXPECT_EQ(e.backoffs(), 2u);
    e.on_sample(100 * ms);
    EXPECT_EQ(e.rto_ns(), 250 * ms);
    EXPECT_EQ(e.backoffs(), 0u);
}

TEST(Rtt, BackoffFromTheFloor) {
    rtt_estimator e;
    e.on_sample(1 * ms);  // RTO = 3 ms -> 200 ms floor
    EXPECT_EQ(e.rto_ns(), 200 * ms);
    e.backoff();
    EXPECT_EQ(e.rto_ns(), 400 * ms);
}

// RFC 6298 §5.7: after a SYN timeout, data starts with an RTO of 3 s unless
// a sample was taken.
TEST(Rtt, ThreeSecondsAfterSynTimeout) {
    rtt_estimator e;
    e.backoff();  // the SYN was retransmitted once: RTO 2 s
    e.on_established_after_syn_timeout();
    EXPECT_EQ(e.rto_ns(), 3 * s);
    EXPECT_EQ(e.backoffs(), 0u);

    rtt_estimator twice;
    twice.backoff();
    twice.backoff();  // 4 s: not below 3 s, kept
    twice.on_established_after_syn_timeout();
    EXPECT_EQ(twice.rto_ns(), 4 * s);

    rtt_estimator sampled;  // a timestamp echo gave a sample
    sampled.backoff();
    sampled.on_sample(50 * ms);
    sampled.on_established_after_syn_timeout();
    EXPECT_EQ(sampled.rto_ns(), 200 * ms);
}

TEST(Rtt, ConfiguredBoundsApplyToTheInitialRto) {
    rtt_config c;
    c.initial_rto_ns = 10 * ms;
    EXPECT_EQ(rtt_estimator(c).rto_ns(), 200 * ms);
    c.initial_rto_ns = 500 * s;
    EXPECT_EQ(rtt_estimator(c).rto_ns(), 120 * s);
}

// Each step truncates by less than 1 ns and old errors decay (by 7/8 for SRTT,
// 3/4 for RTTVAR), so a long run stays within a few ns of the exact
// recurrence (doubles are exact enough at this scale).
TEST(Rtt, LongRunStaysNearTheExactRecurrence) {
    rtt_estimator e;
    double srtt = 0, rttvar = 0;
    uint64_t r = 7'777'777;
    for (int i = 0; i < 200; ++i) {
        r = (r * 48271) % 2147483647 % (300 * ms) + 1;  // a deterministic walk, 1 ns .. 300 ms
        if (i == 0) {
            srtt = static_cast<double>(r);
            rttvar = srtt / 2;
        } else {
            rttvar = 0.75 * rttvar + 0.25 * std::abs(srtt - static_cast<double>(r));
            srtt = 0.875 * srtt + 0.125 * static_cast<double>(r);
        }
        e.on_sample(r);
        EXPECT_NEAR(static_cast<double>(e.srtt_ns()), srtt, 8.0) << i;  // sum of (7/8)^n
        EXPECT_NEAR(static_cast<double>(e.rttvar_ns()), rttvar, 16.0) << i;
    }
}

}  // namespace
}  // namespace ferry::net
