// tcp_prr (RFC 6937) on its own: DeliveredData from SND.UNA and SACKd, the
// proportional part (pipe > ssthresh), the PRR-SSRB reduction bound (pipe <=
// ssthresh) on RFC 6937 §3.1's burst example, prr_out from retransmissions
// and from SND.MAX. tcp_conn_prr_script_test.cpp scripts it in a connection.
#include "ferry/net/tcp_prr.h"

#include <gtest/gtest.h>

namespace ferry::net {
namespace {

constexpr uint32_t mss = 1000;
constexpr seq_num base(1000);

// SND.UNA after k segments of 1000 octets from `base`.
seq_num at(uint32_t k) {
    return base + static_cast<int32_t>(1000 * k);
}

// RFC 6937 §2: DeliveredData = change_in(snd.una) + change_in(SACKd).
TEST(TcpPrr, DeliveredDataIsTheChangeInSndUnaPlusTheSignedChangeInSacked) {
    tcp_prr p;
    EXPECT_EQ(p.delivered(at(0), 0), 0u);        // the reference point
    EXPECT_EQ(p.delivered(at(1), 0), 1000u);     // a cumulative ACK of one segment
    EXPECT_EQ(p.delivered(at(1), 1000), 1000u);  // one SACKed
    EXPECT_EQ(p.delivered(at(1), 3000), 2000u);  // two more SACKed
    EXPECT_EQ(p.delivered(at(1), 3000), 0u);     // a duplicate with nothing new
    // The hole at SND.UNA is filled: SND.UNA moves over it and the three
    // SACKed segments (4000), SACKd falls by those three: one delivered.
    EXPECT_EQ(p.delivered(at(5), 0), 1000u);
    // The scoreboard is cleared (an RTO) with 2000 SACKed: never negative,
    // and the next ACK counts from there.
    EXPECT_EQ(p.delivered(at(5), 2000), 2000u);
    EXPECT_EQ(p.delivered(at(5), 0), 0u);
    EXPECT_EQ(p.delivered(at(6), 1000), 2000u);
}

// pipe > ssthresh: sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) -
// prr_out. With ssthresh = RecoverFS / 2 one segment goes for every two
// delivered; the first retransmission (prr_out 1000) is paid back before
// any new data goes, and new data counts through SND.MAX.
TEST(TcpPrr, AbovePipeSsthreshTheRateIsSsthreshOverRecoverFs) {
    tcp_prr p;
    seq_num snd_max = at(20);
    p.start(20000, snd_max);
    ASSERT_TRUE(p.active());
    EXPECT_EQ(p.recover_fs(), 20000u);
    // The ACK that starts recovery: CEIL(1000 * 10000 / 20000) = 500.
    EXPECT_EQ(p.on_ack(1000, 18000, 10000, mss, snd_max), 500u);
    EXPECT_EQ(p.cwnd(), 18500u);
    p.on_retransmit(1000);  // the fast retransmit, sndcnt or not
    EXPECT_EQ(p.prr_out(), 1000u);
    // Each later ACK delivers one segment; pipe falls by it and rises by
    // what is sent.
    EXPECT_EQ(p.on_ack(1000, 18000, 10000, mss, snd_max), 0u);     // 1000 - 1000
    EXPECT_EQ(p.on_ack(1000, 17000, 10000, mss, snd_max), 500u);   // 1500 - 1000
    EXPECT_EQ(p.on_ack(1000, 16000, 10000, mss, snd_max), 1000u);  // 2000 - 1000
    EXPECT_EQ(p.cwnd(), 17000u);
    snd_max = snd_max + 1000;                                     // one new segment sent
    EXPECT_EQ(p.on_ack(1000, 16000, 10000, mss, snd_max), 500u);  // 2500 - 2000
    EXPECT_EQ(p.prr_out(), 2000u);
    EXPECT_EQ(p.on_ack(1000, 15000, 10000, mss, snd_max), 1000u);  // 3000 - 2000
    EXPECT_EQ(p.prr_delivered(), 6000u);
    // CUBIC's ssthresh (0.7): CEIL(7000 * 7000 / 10000) = 4900.
    tcp_prr q;
    q.start(10000, at(10));
    EXPECT_EQ(q.on_ack(7000, 8000, 7000, mss, at(10)), 4900u);
    // Rounding is up: CEIL(1 * 7000 / 10000) = 1.
    tcp_prr r;
    r.start(10000, at(10));
    EXPECT_EQ(r.on_ack(1, 9999, 7000, mss, at(10)), 1u);
}

// RFC 6937 §3.1's burst: cwnd = FlightSize = 20 segments, ssthresh 10, 15
// lost; recovery begins with pipe = 4 on the ACK of segment 17 and PRR-SSRB
// sends 2 per ACK ("2R 2R 2R", bound "bd d d") as pipe climbs 4, 5, 6.
// (PRR-CRB would send 1, RFC 6675 7 at once.)
TEST(TcpPrr, BelowSsthreshTheSlowStartBoundSendsDeliveredPlusOneSegment) {
    tcp_prr p;
    const seq_num snd_max = at(22);
    p.start(22000, snd_max);
    EXPECT_EQ(p.on_ack(1000, 4000, 10000, mss, snd_max), 2000u);
    EXPECT_EQ(p.cwnd(), 6000u);
    p.on_retransmit(1000);
    p.on_retransmit(1000);
    EXPECT_EQ(p.on_ack(1000, 5000, 10000, mss, snd_max), 2000u);
    p.on_retransmit(2000);
    EXPECT_EQ(p.on_ack(1000, 6000, 10000, mss, snd_max), 2000u);
    p.on_retransmit(2000);
    // Banked: prr_delivered - prr_out (when the sender sent less than was
    // delivered) counts in the limit too: MAX(4000 - 0, 1000) + 1000.
    tcp_prr q;
    q.start(22000, snd_max);
    EXPECT_EQ(q.on_ack(4000, 2000, 10000, mss, snd_max), 5000u);
    // ... and never more than ssthresh - pipe.
    tcp_prr r;
    r.start(22000, snd_max);
    EXPECT_EQ(r.on_ack(4000, 9000, 10000, mss, snd_max), 1000u);
    EXPECT_EQ(r.cwnd(), 10000u);
    // At pipe == ssthresh nothing goes.
    tcp_prr s;
    s.start(22000, snd_max);
    EXPECT_EQ(s.on_ack(1000, 10000, 10000, mss, snd_max), 0u);
    EXPECT_EQ(s.cwnd(), 10000u);
}

// More sent than the reduction allows so far (the forced first
// retransmission with a tiny DeliveredData): sndcnt is 0, not negative.
TEST(TcpPrr, SndcntIsNeverNegative) {
    tcp_prr p;
    p.start(20000, at(20));
    EXPECT_EQ(p.on_ack(100, 19000, 10000, mss, at(20)), 50u);
    p.on_retransmit(1000);
    EXPECT_EQ(p.on_ack(100, 19900, 10000, mss, at(20)), 0u);  // CEIL(100) - 1000
    EXPECT_EQ(p.cwnd(), 19900u);
}

// A new episode starts from zero; retransmissions outside one do not count.
TEST(TcpPrr, StartResetsTheEpisodeAndStopEndsIt) {
    tcp_prr p;
    p.on_retransmit(1000);
    EXPECT_EQ(p.prr_out(), 0u);
    p.start(10000, at(10));
    (void)p.on_ack(3000, 9000, 5000, mss, at(12));  // 2000 new since start
    p.on_retransmit(1000);
    EXPECT_EQ(p.prr_out(), 3000u);
    EXPECT_EQ(p.prr_delivered(), 3000u);
    p.stop();
    EXPECT_FALSE(p.active());
    p.start(8000, at(12));
    EXPECT_EQ(p.prr_out(), 0u);
    EXPECT_EQ(p.prr_delivered(), 0u);
    EXPECT_EQ(p.recover_fs(), 8000u);
}

}  // namespace
}  // namespace ferry::net
