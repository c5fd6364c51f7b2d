// BBR's model and window (tcp_bbr.h), driven by hand: every delivery, RTT
// sample and time is given, and the window is checked against the model's
// arithmetic (draft-cardwell-iccrg-bbr-congestion-control-00).
#include <gtest/gtest.h>

#include "ferry/net/tcp_bbr.h"
#include "ferry/net/tcp_cc.h"

namespace ferry::net {
namespace {

constexpr uint32_t smss = 1000;
constexpr uint64_t us = 1000;
constexpr uint64_t ms = 1000 * us;

// A sender whose flight is delivered at a steady rate: each round trip of
// `rtt` delivers `per_round` octets in `acks` equal ACKs, and the flight at
// each ACK is the window (window-limited, as a bulk sender is).
struct driver {
    cc_bbr bbr;
    cc_window w{.cwnd = 10 * smss, .ssthresh = 0xffffffff, .smss = smss};
    uint64_t now = 0;
    uint32_t full_pipe = 0, probe_rtt = 0;

    uint8_t ack(uint32_t n, uint32_t in_flight, bool recovering = false, bool app_limited = false) {
        const uint8_t ev = bbr.on_delivery(w,
                                           cc_delivery{.acked = n,
                                                       .in_flight = in_flight,
                                                       .now_ns = now,
                                                       .app_limited = app_limited},
                                           recovering);
        full_pipe += (ev & bbr_event::full_pipe) != 0 ? 1 : 0;
        probe_rtt += (ev & bbr_event::probe_rtt) != 0 ? 1 : 0;
        return ev;
    }
    // One round trip: `per_round` octets over `rtt`, in ACKs of 2 segments,
    // the flight after each being `flight` (0: the window), and an RTT
    // sample of `sampled` (0: `rtt`).
    void round(uint64_t rtt, uint32_t per_round, uint32_t flight = 0, bool app_limited = false,
               uint64_t sampled = 0) {
        const uint32_t acks = std::max<uint32_t>(1, per_round / (2 * smss));
        for (uint32_t i = 0; i < acks; ++i) {
            now += rtt / acks;
            ack(per_round / acks, flight != 0 ? flight : w.cwnd, false, app_limited);
        }
        bbr.on_rtt(sampled != 0 ? sampled : rtt, now);
    }
};

TEST(TcpBbr, StartupGrowsByWhatIsDeliveredBeforeThereIsAModel) {
    driver d;
    EXPECT_EQ(d.bbr.mode(), bbr_mode::startup);
    EXPECT_EQ(d.bbr.target_cwnd(smss), 0u);
    d.ack(2 * smss, 8 * smss);
    EXPECT_EQ(d.w.cwnd, 12 * smss);
    d.ack(2 * smss, 10 * smss);
    EXPECT_EQ(d.w.cwnd, 14 * smss);
}

TEST(TcpBbr, TheRateIsWhatARoundDeliveredOverItsLength) {
    driver d;
    d.bbr.on_rtt(100 * us, 0);
    // The first ACK starts a round; its flight of 20 segments is delivered
    // over 100 us: 200 MB/s.
    d.ack(smss, 20 * smss);
    EXPECT_EQ(d.bbr.btl_bw(), 0u);
    for (int i = 0; i < 10; ++i) {
        d.now += 10 * us;
        const uint8_t ev = d.ack(2 * smss, 20 * smss);
        EXPECT_EQ((ev & bbr_event::round) != 0, i == 9) << i;
    }
    EXPECT_EQ(d.bbr.rounds(), 1u);
    EXPECT_EQ(d.bbr.btl_bw(), 200'000'000u);
    EXPECT_EQ(d.bbr.rt_prop_ns(), 100 * us);
    // BDP = 200 MB/s x 100 us = 20,000 octets; STARTUP's target is 2.885 x
    // that plus 3 segments.
    EXPECT_EQ(d.bbr.bdp(1.0), 20'000u);
    EXPECT_EQ(d.bbr.target_cwnd(smss), 57'700u + 3 * smss);
}

TEST(TcpBbr, CompressedAcksCannotClaimMoreThanTheFlightOverRtprop) {
    driver d;
    d.bbr.on_rtt(100 * us, 0);
    d.ack(smss, 10 * smss);
    // The whole flight acknowledged within 1 us (a receiver's batch): the
    // round counts as RTprop long, 10,000 octets / 100 us = 100 MB/s, not 10 GB/s.
    d.now += 1 * us;
    d.ack(10 * smss, 10 * smss);
    EXPECT_EQ(d.bbr.rounds(), 1u);
    EXPECT_EQ(d.bbr.btl_bw(), 100'000'000u);
}

TEST(TcpBbr, StartupEndsAfterThreeRoundsWithoutGrowthThenDrainsToOneBdp) {
    driver d;
    // The path carries 40,000 octets per 100 us round trip (400 MB/s), however
    // large the window grows.
    d.bbr.on_rtt(100 * us, 0);
    int rounds = 0;
    while (d.bbr.mode() == bbr_mode::startup && rounds < 50) {
        const uint32_t per = std::min<uint32_t>(d.w.cwnd, 40'000);
        d.round(100 * us, per);
        ++rounds;
    }
    EXPECT_EQ(d.bbr.mode(), bbr_mode::drain);
    EXPECT_TRUE(d.bbr.full_bw_reached());
    EXPECT_EQ(d.full_pipe, 1u);
    EXPECT_EQ(d.bbr.btl_bw(), 400'000'000u);
    // DRAIN: the window is one BDP (+3 segments, and the 2-segment ACK the
    // aggregation allowance keeps room for: the first ACK of an epoch counts
    // whole, as in Linux) at once.
    d.now += 5 * us;  // 2,000 octets at 400 MB/s
    d.ack(2 * smss, 80'000);
    EXPECT_EQ(d.bbr.mode(), bbr_mode::drain);
    EXPECT_EQ(d.bbr.aggregation_cwnd(), 2 * smss);
    EXPECT_EQ(d.w.cwnd, 40'000u + 3 * smss + 2 * smss);
    // The flight came down to what that window holds: PROBE_BW, window 2 x
    // BDP + 3 segments, reached by growing with what is delivered.
    d.now += 5 * us;
    d.ack(2 * smss, 43'000);
    EXPECT_EQ(d.bbr.mode(), bbr_mode::probe_bw);
    EXPECT_EQ(d.w.cwnd, 47'000u);
    for (int i = 0; i < 20; ++i) {
        d.round(100 * us, 40'000);
    }
    EXPECT_EQ(d.w.cwnd, 2 * 40'000u + 3 * smss + 2 * smss);
    EXPECT_EQ(d.bbr.btl_bw(), 400'000'000u);
}

// A driver already in PROBE_BW on a 400 MB/s, 100 us path.
driver in_probe_bw() {
    driver d;
    d.bbr.on_rtt(100 * us, 0);
    for (int i = 0; i < 50 && d.bbr.mode() != bbr_mode::probe_bw; ++i) {
        d.round(100 * us, std::min<uint32_t>(d.w.cwnd, 40'000),
                d.bbr.mode() == bbr_mode::drain ? 40'000 : 0);
    }
    for (int i = 0; i < 20; ++i) {
        d.round(100 * us, 40'000);
    }
    return d;
}

TEST(TcpBbr, BatchedAcksWidenTheWindowByWhatTheyDeliverBeyondTheRate) {
    driver d = in_probe_bw();
    EXPECT_EQ(d.bbr.extra_acked(), 2 * smss);  // an epoch's first ACK counts whole
    EXPECT_EQ(d.w.cwnd, 2 * 40'000u + 3 * smss + 2 * smss);
    // The receiver now acknowledges 40,000 octets at a time, 100 us apart:
    // the same 400 MB/s, but each ACK delivers what BtlBw needs 100 us for
    // at once, and a window of 2 x BDP would run dry between two of them.
    for (int i = 0; i < 6; ++i) {
        d.now += 100 * us;
        d.ack(40'000, d.w.cwnd);
        d.bbr.on_rtt(100 * us, d.now);
    }
    EXPECT_EQ(d.bbr.btl_bw(), 400'000'000u);
    EXPECT_EQ(d.bbr.extra_acked(), 40'000u);
    EXPECT_EQ(d.bbr.aggregation_cwnd(), 40'000u);
    EXPECT_EQ(d.w.cwnd, 2 * 40'000u + 3 * smss + 40'000u);
    // Back to ACKs every 2 segments: the batches age out of the maximum
    // within 10 of BBR's rounds (a round delivers the flight at its start,
    // 3 of these at first) and the window returns to its target.
    // (An epoch ends when the delivery falls behind the rate: here one gap
    // of 200 us; at exactly the rate the excess would be carried on until the
    // epoch's 1 MiB limit, as in Linux.)
    d.now += 200 * us;
    for (int i = 0; i < 40; ++i) {
        d.round(100 * us, 40'000);
    }
    EXPECT_EQ(d.bbr.extra_acked(), 2 * smss);
    EXPECT_EQ(d.w.cwnd, 2 * 40'000u + 3 * smss + 2 * smss);
}

TEST(TcpBbr, StartupAddsNoAggregationAllowance) {
    driver d;
    d.bbr.on_rtt(100 * us, 0);
    for (int i = 0; i < 5; ++i) {
        // The whole flight acknowledged at once each round: in STARTUP the
        // rate estimate lags a rate that doubles, so nothing is sampled.
        d.now += 100 * us;
        d.ack(d.w.cwnd, d.w.cwnd);
    }
    EXPECT_EQ(d.bbr.mode(), bbr_mode::startup);
    EXPECT_EQ(d.bbr.extra_acked(), 0u);
    EXPECT_EQ(d.bbr.aggregation_cwnd(), 0u);
}

TEST(TcpBbr, ApplicationLimitedRoundsDoNotLowerTheEstimate) {
    driver d = in_probe_bw();
    ASSERT_EQ(d.bbr.mode(), bbr_mode::probe_bw);
    ASSERT_EQ(d.bbr.btl_bw(), 400'000'000u);
    // Twenty rounds in which the application had only 5,000 octets a round.
    for (int i = 0; i < 20; ++i) {
        d.round(100 * us, 5'000, 5'000, true);
    }
    EXPECT_EQ(d.bbr.btl_bw(), 400'000'000u);
    // The same rate, window-limited: the path really slowed; after ten
    // rounds the estimate follows.
    for (int i = 0; i < 12; ++i) {
        d.round(100 * us, 5'000, 5'000, false);
    }
    EXPECT_EQ(d.bbr.btl_bw(), 50'000'000u);
}

TEST(TcpBbr, ALossDoesNotReduceTheWindow) {
    for (cc_algorithm alg : {cc_algorithm::bbr, cc_algorithm::cubic}) {
        cc_config c;
        c.algorithm = alg;
        c.smss = smss;
        c.initial_window_segments = 40;
        tcp_cc cc(c, seq_num(0));
        ASSERT_TRUE(cc.on_sack_recovery(seq_num(1), seq_num(40'001), 40'000));
        if (alg == cc_algorithm::bbr) {
            EXPECT_EQ(cc.ssthresh(), 40'000u);
            EXPECT_EQ(cc.cwnd(), 40'000u);
        } else {
            EXPECT_EQ(cc.ssthresh(), 28'000u);  // β = 0.7
            EXPECT_EQ(cc.cwnd(), 28'000u);
        }
    }
}

TEST(TcpBbr, DeliveriesInRecoveryUpdateTheModelButLeaveTheWindowToPrr) {
    driver d = in_probe_bw();
    const uint32_t cwnd = d.w.cwnd;
    const uint32_t rounds = d.bbr.rounds();
    for (int i = 0; i < 40; ++i) {
        d.now += 5 * us;
        d.ack(2 * smss, 20'000, true);
    }
    EXPECT_EQ(d.w.cwnd, cwnd);
    EXPECT_GT(d.bbr.rounds(), rounds);
}

TEST(TcpBbr, AfterATimeoutTheWindowGrowsBackToTheTarget) {
    cc_config c;
    c.algorithm = cc_algorithm::bbr;
    c.smss = smss;
    c.initial_window_segments = 10;
    tcp_cc cc(c, seq_num(0));
    cc.on_rtt(100 * us, 0);
    uint64_t now = 0;
    auto deliver = [&](uint32_t n, uint32_t flight) {
        return cc.on_delivery(cc_delivery{.acked = n, .in_flight = flight, .now_ns = now});
    };
    // 30 rounds of a 400 MB/s, 100 us path.
    for (int r = 0; r < 30; ++r) {
        for (int i = 0; i < 10; ++i) {
            now += 10 * us;
            deliver(std::min<uint32_t>(cc.cwnd(), 40'000) / 10, cc.cwnd());
        }
        cc.on_rtt(100 * us, now);
    }
    ASSERT_NE(cc.bbr(), nullptr);
    const uint64_t target = cc.bbr()->target_cwnd(smss);
    ASSERT_GT(target, 40'000u);
    cc.on_rto(seq_num(500'000), 80'000, false);
    EXPECT_EQ(cc.cwnd(), smss);
    (void)cc.on_ack(cc_ack{.ack = seq_num(1000), .bytes_acked = smss, .flight_size = 0,
                           .now_ns = now});
    EXPECT_EQ(cc.cwnd(), smss);  // on_ack leaves BBR's window alone
    now += 5 * us;
    deliver(2 * smss, 0);
    EXPECT_EQ(cc.cwnd(), 4 * smss);  // never below 4 segments
    for (int i = 0; i < 200; ++i) {
        now += 5 * us;  // 400 MB/s
        deliver(2 * smss, cc.cwnd());
    }
    EXPECT_EQ(cc.cwnd(), target);
}

TEST(TcpBbr, ProbeRttAfterTenSecondsHoldsFourSegmentsThenRestoresTheWindow) {
    driver d = in_probe_bw();
    const uint32_t cwnd = d.w.cwnd;
    ASSERT_GT(cwnd, 4 * smss);
    // Ten seconds in which no RTT sample is as short as RTprop (the timed
    // segments always met a queue).
    const uint64_t until = d.now + cc_bbr::min_rtt_window_ns;
    while (d.probe_rtt == 0 && d.now < until + 1 * ms) {
        d.round(100 * us, 40'000, 0, false, 150 * us);
    }
    EXPECT_EQ(d.probe_rtt, 1u);
    EXPECT_GT(d.now, until);
    EXPECT_LE(d.now, until + 1 * ms + 100 * us);  // (stamps are kept in milliseconds)
    EXPECT_EQ(d.bbr.mode(), bbr_mode::probe_rtt);
    EXPECT_EQ(d.w.cwnd, 4 * smss);
    // The flight is down to 4 segments: held for 200 ms and a round.
    const uint64_t entered = d.now;
    while (d.bbr.mode() == bbr_mode::probe_rtt && d.now < entered + 1'000 * ms) {
        d.round(100 * us, 4 * smss, 4 * smss);
        if (d.bbr.mode() == bbr_mode::probe_rtt) {
            EXPECT_EQ(d.w.cwnd, 4 * smss);
        }
    }
    EXPECT_EQ(d.bbr.mode(), bbr_mode::probe_bw);
    EXPECT_GE(d.now, entered + cc_bbr::probe_rtt_duration_ns - 1 * ms);
    EXPECT_LT(d.now, entered + cc_bbr::probe_rtt_duration_ns + 1 * ms);
    EXPECT_GE(d.w.cwnd, cwnd);
    // Its rounds of 4 segments did not count as the path's rate.
    EXPECT_EQ(d.bbr.btl_bw(), 400'000'000u);
    EXPECT_EQ(d.bbr.rt_prop_ns(), 100 * us);
    EXPECT_EQ(d.probe_rtt, 1u);
}

}  // namespace
}  // namespace ferry::net
