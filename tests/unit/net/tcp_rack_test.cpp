// tcp_rack (RFC 8985) on its own: transmission records, the RACK variables
// an ACK sets, loss marking by time with and without a reordering window,
// lost retransmissions, the record ring's bounds, the probe timeout.
// tcp_conn_sack_test.cpp scripts it inside a connection (TcpConnRack) and
// over a lossy link.
#include "ferry/net/tcp_rack.h"

#include <gtest/gtest.h>

#include "tcp_conn_harness.h"

namespace ferry::net {
namespace {

using test::ms;

constexpr uint32_t base = 1000;
seq_num at(uint32_t k) { return seq_num(base + 1000 * (k - 1)); }  // segment k's first octet

// Records segments first..last (1000 octets each) sent at `when`.
void send(tcp_rack &r, uint32_t first, uint32_t last, uint64_t when, bool rtx = false) {
    for (uint32_t k = first; k <= last; ++k) ASSERT_TRUE(r.on_transmit(at(k), at(k + 1), when, rtx));
}

// SACKs [at(first), at(last + 1)) on `sb`.
void sack(tcp_sack_scoreboard &sb, uint32_t first, uint32_t last) {
    bool overflow = false;
    (void)sb.add(at(first), at(last + 1), overflow);
}

TEST(TcpRack, ALaterDeliveryMarksAnEarlierSegmentLostAfterTheReorderingWindow) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    tcp_sack_scoreboard sb;
    send(r, 1, 4, 0);
    EXPECT_TRUE(r.holds_block());
    // 10 ms later: 1 acknowledged (RTT 10 ms), 3 SACKed; 2 and 4 are not.
    sack(sb, 3, 3);
    r.on_ack(at(2), sb, 10 * ms);
    EXPECT_TRUE(r.has_rtt());
    EXPECT_EQ(r.rack_rtt(), 10 * ms);
    EXPECT_EQ(r.min_rtt(), 10 * ms);
    // Not in recovery, fewer than 3 DupAcks: window = min RTT / 4 = 2.5 ms.
    EXPECT_EQ(r.detect_loss(10 * ms, 10 * ms, false, 1), 0u);
    EXPECT_EQ(r.deadline(), 12 * ms + 500'000);  // 2 is due at 0 + 10 + 2.5 ms
    EXPECT_EQ(r.detect_loss(r.deadline(), 10 * ms, false, 1), 1000u);
    seq_num s, e;
    ASSERT_TRUE(r.next_lost(at(2), sb, s, e));
    EXPECT_EQ(s, at(2));
    EXPECT_EQ(e, at(3));
    // 4 was sent with 3 but after it in sequence: not before the most
    // recently delivered segment, so never lost by this delivery.
    EXPECT_EQ(r.deadline(), tcp_rack::never);
    EXPECT_FALSE(r.reordering_seen());
}

TEST(TcpRack, InRecoveryTheWindowIsZeroUntilReorderingIsSeen) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    tcp_sack_scoreboard sb;
    send(r, 1, 3, 0);
    sack(sb, 2, 2);
    r.on_ack(at(1), sb, 10 * ms);
    EXPECT_EQ(r.detect_loss(10 * ms, 10 * ms, /*in_recovery=*/true, 1), 1000u);  // segment 1 at once
    // Segment 1 arrives after all (it was reordered, never resent): from now
    // on the window applies in recovery too.
    r.on_ack(at(3), sb, 11 * ms);
    EXPECT_TRUE(r.reordering_seen());
    send(r, 4, 5, 20 * ms);
    tcp_sack_scoreboard sb2;
    sack(sb2, 5, 5);
    r.on_ack(at(4), sb2, 30 * ms);
    EXPECT_EQ(r.detect_loss(30 * ms, 10 * ms, true, 1), 0u);
    EXPECT_NE(r.deadline(), tcp_rack::never);
}

TEST(TcpRack, ALostRetransmissionIsMarkedLostByALaterDelivery) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    tcp_sack_scoreboard sb;
    send(r, 1, 4, 0);
    sack(sb, 2, 4);
    r.on_ack(at(1), sb, 10 * ms);
    EXPECT_EQ(r.detect_loss(10 * ms, 10 * ms, true, 3), 1000u);
    // Segment 1 resent at 10 ms; new segment 5 at 11 ms.
    ASSERT_TRUE(r.on_transmit(at(1), at(2), 10 * ms, /*retransmission=*/true));
    EXPECT_FALSE(r.any_lost());  // the lost record is superseded by the new one
    send(r, 5, 5, 11 * ms);
    // 5 is SACKed at 21 ms; 1 is still not acknowledged: its retransmission
    // (sent before 5) is lost too.
    sack(sb, 5, 5);
    r.on_ack(at(1), sb, 21 * ms);
    EXPECT_EQ(r.detect_loss(21 * ms, 10 * ms, true, 3), 1000u);
    seq_num s, e;
    ASSERT_TRUE(r.next_lost(at(1), sb, s, e));
    EXPECT_EQ(s, at(1));
    // SetPipe counts segment 1 once (IsLost, but below HighRxt: resent);
    // RACK knows that transmission is gone too.
    ASSERT_TRUE(sb.is_lost(at(1), 1000));
    EXPECT_EQ(r.lost_in_pipe(at(1), sb, /*high_rxt=*/at(2), 1000), 1000u);
    // Without the resend below HighRxt, nothing of it is in pipe.
    EXPECT_EQ(r.lost_in_pipe(at(1), sb, /*high_rxt=*/at(1), 1000), 0u);
}

TEST(TcpRack, ARetransmissionAnsweredFasterThanThePathIsNotAnRttSample) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    tcp_sack_scoreboard sb;
    send(r, 1, 2, 0);
    sack(sb, 2, 2);
    r.on_ack(at(1), sb, 10 * ms);
    ASSERT_TRUE(r.on_transmit(at(1), at(2), 12 * ms, true));
    // The original's ACK arrives 1 ms after the retransmission: it answers
    // the original (RFC 8985 §6.2 step 2), so RACK.rtt stays 10 ms.
    r.on_ack(at(3), sb, 13 * ms);
    EXPECT_EQ(r.rack_rtt(), 10 * ms);
    EXPECT_FALSE(r.holds_block());  // everything delivered: the ring went back
    EXPECT_EQ(pool.in_use(), 0u);
}

TEST(TcpRack, AFullRingLeavesSegmentsUnrecordedAndCountsThem) {
    tcp_block_pool pool(1);
    tcp_rack r(&pool);
    const std::size_t cap = tcp_block_pool::block_bytes / 16;
    for (uint32_t k = 1; k <= cap; ++k) ASSERT_TRUE(r.on_transmit(at(k), at(k + 1), 0, false));
    EXPECT_FALSE(r.on_transmit(at(cap + 1), at(cap + 2), 0, false));
    EXPECT_EQ(r.unrecorded(), 1u);
    r.clear();
    EXPECT_EQ(pool.in_use(), 0u);
    // No block to be had: nothing is recorded, nothing breaks.
    void *held = pool.take();
    EXPECT_FALSE(r.on_transmit(at(1), at(2), 0, false));
    EXPECT_EQ(r.unrecorded(), 2u);
    pool.give(held);
}

// RFC 8985 §6.2 step 4: a D-SACK grows RACK.reo_wnd_mult by one, once per
// round (until SND.UNA reaches the SND.NXT of the D-SACK that grew it), and
// the window is RACK.reo_wnd_mult * RACK.min_RTT / 4, capped by SRTT.
TEST(TcpRack, ADsackGrowsTheReorderingWindowOncePerRound) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    EXPECT_EQ(r.reo_wnd_mult(), 1u);
    EXPECT_EQ(r.reo_wnd_persist(), 16u);
    EXPECT_FALSE(r.update_reo_wnd(at(1), at(11), false, false));  // no D-SACK
    EXPECT_TRUE(r.update_reo_wnd(at(1), at(11), true, false));    // the round ends at 11
    EXPECT_EQ(r.reo_wnd_mult(), 2u);
    EXPECT_FALSE(r.update_reo_wnd(at(5), at(12), true, false));  // the same round
    EXPECT_EQ(r.reo_wnd_mult(), 2u);
    EXPECT_TRUE(r.update_reo_wnd(at(11), at(20), true, false));  // SND.UNA reached it
    EXPECT_EQ(r.reo_wnd_mult(), 3u);
    // 1 lost, 2..3 SACKed 10 ms after they all went: not in recovery, one
    // DupAck, the window for 1 is 3 * 10 ms / 4 = 7.5 ms.
    tcp_sack_scoreboard sb;
    send(r, 1, 3, 0);
    sack(sb, 2, 3);
    r.on_ack(at(1), sb, 10 * ms);
    EXPECT_EQ(r.detect_loss(10 * ms, 10 * ms, false, 1), 0u);
    EXPECT_EQ(r.deadline(), 17 * ms + 500'000);
    // An SRTT below it caps it.
    EXPECT_EQ(r.detect_loss(10 * ms, 6 * ms, false, 1), 0u);
    EXPECT_EQ(r.deadline(), 16 * ms);
    EXPECT_EQ(r.detect_loss(16 * ms, 6 * ms, false, 1), 1000u);
}

// "Reset the window after 16 DSACK-free recoveries": each recovery that ends
// without a D-SACK on its ACK takes one from RACK.reo_wnd_persist (set to 16
// by the last growth); at 0 the multiplier is 1 again.
TEST(TcpRack, SixteenRecoveriesWithoutADsackResetTheReorderingWindow) {
    tcp_block_pool pool(4);
    tcp_rack r(&pool);
    ASSERT_TRUE(r.update_reo_wnd(at(1), at(11), true, false));
    // A recovery ending on an ACK with a D-SACK inside the round still counts.
    EXPECT_FALSE(r.update_reo_wnd(at(5), at(11), true, true));
    EXPECT_EQ(r.reo_wnd_persist(), 15u);
    for (int i = 0; i < 14; ++i) {
        EXPECT_FALSE(r.update_reo_wnd(at(11), at(20), false, true));
        EXPECT_EQ(r.reo_wnd_mult(), 2u);
    }
    EXPECT_EQ(r.reo_wnd_persist(), 1u);
    EXPECT_FALSE(r.update_reo_wnd(at(11), at(20), false, true));
    EXPECT_EQ(r.reo_wnd_persist(), 0u);
    EXPECT_EQ(r.reo_wnd_mult(), 1u);
    // The next D-SACK starts over.
    EXPECT_TRUE(r.update_reo_wnd(at(20), at(30), true, false));
    EXPECT_EQ(r.reo_wnd_mult(), 2u);
    EXPECT_EQ(r.reo_wnd_persist(), 16u);
}

TEST(TcpRack, TheProbeTimeout) {
    const uint64_t rto = 200 * ms;
    EXPECT_EQ(tcp_rack::pto(10 * ms, 5000, 1000, rto), 22 * ms);
    EXPECT_EQ(tcp_rack::pto(10 * ms, 1000, 1000, rto), rto);  // 220 ms capped by the RTO
    EXPECT_EQ(tcp_rack::pto(50'000, 5000, 1000, rto), 2'100'000u);  // a LAN: 2 * 50 us + 2 ms
    EXPECT_EQ(tcp_rack::pto(0, 5000, 1000, 3000 * ms), 1000 * ms);  // no RTT yet
}

}  // namespace
}  // namespace ferry::net
