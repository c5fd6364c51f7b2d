// RACK-TLP (RFC 8985) as a sender: one scripted segment test per mechanism
// (issue 16) — reordering within the reordering window and beyond it, ACK
// loss (shorter and longer than the probe timeout), the loss of a burst, a
// retransmission that is not lost though new data sent before it in the same
// tick is SACKed first, the loss of one segment in the middle of a flight.
// Each script states exactly which segments go out and the simulated time at
// which they go.
// tcp_conn_sack_test.cpp has the tail loss probe and lost retransmission
// scripts (TcpConnRack.*), tcp_rack_test.cpp the record ring on its own.
//
// Read first: RFC 8985 §6.2 (steps 2-5 on every ACK), §6.3 (the reordering
// timer), §7.2-§7.3 (the probe timeout, the probe); RFC 6675 §5 (recovery,
// SetPipe) for what goes out once a loss is known.
//
// Every script starts from establish(): SACK and RACK on, MSS 1000, a path
// RTT of exactly 10 ms learnt from a first segment, so that at t0 (when the
// script's first flight goes):
//  - SRTT = RACK.rtt = RACK.min_RTT = 10 ms, RTO = 200 ms (its floor),
//    cwnd = 11000 (10 segments + one from slow start), the peer's window 20000;
//  - RACK.reo_wnd = RACK.min_RTT / 4 = 2.5 ms while no reordering was seen,
//    the sender is not in recovery and fewer than DupThresh (3) DupAcks came;
//    0 in recovery or from the third on (§6.2 step 4; the RFC counts SACKed
//    segments, ferry DupAcks: the same for a peer that ACKs every segment);
//  - a segment sent at T before the most recently delivered one is lost at
//    T + RACK.rtt + RACK.reo_wnd (step 5), which is when the timer fires;
//  - the PTO for a flight of more than one segment is 2 * SRTT + 2 ms (§7.2,
//    tcp_rack::pto()).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ferry/net/tcp_conn.h"
#include "ferry/net/tcp_rack.h"
#include "tcp_conn_harness.h"
#include "tcp_conn_sender_script.h"

namespace ferry::net {
namespace {

using namespace test;
using namespace test::sender;

constexpr uint64_t us = 1000;
constexpr uint64_t reo_wnd = rtt / 4;                                 // min_RTT / 4
constexpr uint64_t pto = 2 * rtt + tcp_rack::min_probe_allowance_ns;  // 22 ms

// The application's first write: segments 2..last (1000 octets each), all
// sent now, the last with PSH; the probe and retransmission timers start.
void send_flight(tcp_harness &t, uint32_t last) {
    ASSERT_EQ(t.app_send(pattern(1000 * (last - 1))), 1000 * (last - 1));
    for (uint32_t k = 2; k <= last; ++k) {
        t.expect_seg(data(k, k == last));
    }
    t.expect_nothing();
    ASSERT_EQ(t.conn->probe_deadline(), t.now + pto);
    ASSERT_EQ(t.conn->rtx_deadline(), t.now + rto);
}

// Nothing went wrong that the sender had to repair.
void expect_no_repair(const tcp_harness &t) {
    EXPECT_EQ(t.ctr.retransmits.get(), 0u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 0u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 0u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 0u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 0u);
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 0u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_FALSE(t.conn->cc().in_recovery());
}

// ---- Reordering ---------------------------------------------------------------

// 2, 3, 4 go at t0; 4 overtakes 3. Its SACK arms the reordering timer for 3
// at t0 + RACK.rtt + reo_wnd; 3 arrives 1 ns before that: nothing is
// retransmitted, nothing is marked lost, and the sender has now seen
// reordering (§6.2 step 3).
TEST(TcpConnRackScript, ReorderingWithinTheWindowRetransmitsNothing) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t t0 = t.now;
    ASSERT_NO_FATAL_FAILURE(send_flight(t, 4));
    t.advance(rtt);
    t.send_seg(ack_to(S(3)));  // 2 arrived
    t.expect_nothing();
    t.send_seg(ack_to(S(3), {{S(4), S(5)}}));  // 4 arrived before 3
    t.expect_nothing();
    EXPECT_EQ(t.conn->sack_dup_acks(), 1u);
    EXPECT_EQ(t.conn->rack().rack_rtt(), rtt);
    // 3 went at t0 as 4 did, below it: due at t0 + 10 ms + 2.5 ms.
    EXPECT_EQ(t.conn->rack().deadline(), t0 + rtt + reo_wnd);
    EXPECT_EQ(t.conn->next_deadline(), t0 + rtt + reo_wnd);
    // The PTO restarted at the ACK of 2 (§7.2), after the window passes.
    EXPECT_EQ(t.conn->probe_deadline(), t0 + rtt + pto);
    t.advance_to(t0 + rtt + reo_wnd - 1);
    t.expect_nothing();
    t.send_seg(ack_to(S(5)));  // 3, late but within the window
    t.expect_nothing();
    EXPECT_TRUE(t.conn->rack().reordering_seen());
    EXPECT_EQ(t.conn->rack().deadline(), tcp_rack::never);
    EXPECT_EQ(t.conn->rack().records(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);  // nothing outstanding
    // Long after: still nothing.
    t.advance(10 * rto);
    t.expect_nothing();
    expect_no_repair(t);
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u + 1000u + 2000u);  // slow start, no reduction
    EXPECT_EQ(t.conn->send_queued(), 0u);
}

// The same flight, but 3 is still missing when the window passes: RACK marks
// it lost at exactly t0 + RACK.rtt + reo_wnd and it is retransmitted then
// (one DupAck, 1000 octets SACKed: RFC 6675 alone would not call it lost).
// The original arrives after all; its ACK is no RTT sample for the
// retransmission (shorter than min_RTT, §6.2 step 2), recovery ends, and
// the peer's D-SACK of the copy is ignored.
TEST(TcpConnRackScript, ReorderingBeyondTheWindowIsRetransmittedWhenTheWindowPasses) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t t0 = t.now;
    ASSERT_NO_FATAL_FAILURE(send_flight(t, 4));
    t.advance(rtt);
    t.send_seg(ack_to(S(3)));
    t.send_seg(ack_to(S(3), {{S(4), S(5)}}));
    t.expect_nothing();
    ASSERT_EQ(t.conn->rack().deadline(), t0 + rtt + reo_wnd);
    EXPECT_FALSE(t.conn->sack_scoreboard().is_lost(seq_num(S(3)), 1000));
    t.advance_to(t0 + rtt + reo_wnd - 1);
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rack_lost.get(), 0u);
    t.advance_to(t0 + rtt + reo_wnd);
    t.expect_seg(rtx(3));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);  // RACK's mark began the recovery
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 1000u * 2);  // ssthresh = max(FlightSize / 2, 2 * SMSS)
    EXPECT_EQ(t.conn->rack().deadline(), tcp_rack::never);
    // The original 3, 0.5 ms after the retransmission: the ACK answers it.
    t.advance_to(t0 + 13 * ms);
    t.expect_nothing();
    t.send_seg(ack_to(S(5)));
    t.expect_nothing();
    EXPECT_EQ(t.conn->rack().rack_rtt(), rtt);  // 0.5 ms < min_RTT: not a sample
    EXPECT_EQ(t.conn->rack().min_rtt(), rtt);
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    // The copy reaches the peer, which reports it as a duplicate (RFC 2883).
    t.advance_to(t0 + rtt + reo_wnd + rtt);
    t.send_seg(ack_to(S(5), {{S(3), S(4)}}));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
}

// ---- ACK loss -------------------------------------------------------------------

// 12 segments, all delivered; the peer ACKs each but only every third ACK
// arrives (for 4, 7, 10, and 13): the sender sees stretch ACKs and no
// duplicate. Each ACK that arrives restarts the PTO from its arrival;
// nothing is retransmitted and no probe goes before the PTO. Returns the
// time of the last ACK that arrived (the ACK of 10, t0 + 12 ms).
uint64_t ack_loss_until_ten(tcp_harness &t) {
    const uint64_t t0 = t.now;
    EXPECT_EQ(t.app_send(pattern(12000)), 12000u);
    for (uint32_t k = 2; k <= 12; ++k) {
        t.expect_seg(data(k));  // cwnd 11000: 13 waits, so 12 has no PSH
    }
    t.expect_nothing();
    t.advance(rtt);
    t.send_seg(ack_to(S(5)));  // the ACKs of 2 and 3 were lost
    // Slow start: cwnd + min(3000, 2 * SMSS) = 13000, 8000 in flight.
    EXPECT_EQ(t.conn->cc().cwnd(), 13000u);
    t.expect_seg(data(13, true));
    t.expect_nothing();
    EXPECT_EQ(t.conn->probe_deadline(), t0 + rtt + pto);
    t.advance(1 * ms);
    t.send_seg(ack_to(S(8)));  // the ACKs of 5 and 6 were lost
    t.expect_nothing();
    EXPECT_EQ(t.conn->probe_deadline(), t0 + 11 * ms + pto);
    t.advance(1 * ms);
    t.send_seg(ack_to(S(11)));  // the ACKs of 8 and 9 were lost
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().cwnd(), 17000u);
    EXPECT_EQ(t.conn->probe_deadline(), t0 + 12 * ms + pto);
    EXPECT_EQ(t.conn->rtx_deadline(), t0 + 12 * ms + rto);
    EXPECT_EQ(t.conn->rack().deadline(), tcp_rack::never);
    EXPECT_EQ(t.conn->sack_dup_acks(), 0u);
    EXPECT_EQ(t.ctr.dup_acks.get(), 0u);
    return t0 + 12 * ms;
}

// The ACKs of 11 and 12 are lost too; the ACK of 13 comes 1 ns before the
// probe would go and acknowledges all three: nothing was ever retransmitted.
TEST(TcpConnRackScript, LostAcksAreNotLostData) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t last = ack_loss_until_ten(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    t.advance_to(last + pto - 1);
    t.expect_nothing();
    t.send_seg(ack_to(S(14)));  // the stretch ACK
    t.expect_nothing();
    EXPECT_EQ(t.conn->snd().una, seq_num(S(14)));
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.conn->cc().cwnd(), 19000u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    expect_no_repair(t);
    EXPECT_EQ(t.ctr.dup_acks.get(), 0u);
}

// The ACKs stay lost past the PTO: at exactly its deadline one probe goes,
// the last segment again (§7.3: nothing new to send), and no second one;
// the stretch ACK then acknowledges everything with a D-SACK for the
// probe's copy. Nothing is marked lost, no recovery, no cwnd reduction.
TEST(TcpConnRackScript, AckLossLongerThanThePtoCostsOneProbe) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t last = ack_loss_until_ten(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    t.advance_to(last + pto - 1);
    t.expect_nothing();
    t.advance_to(last + pto);
    t.expect_seg(rtx(13));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.tlp_probes.get(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.conn->probe_deadline(), tcp_conn::never);  // one probe per flight
    EXPECT_EQ(t.conn->rtx_deadline(), last + pto + rto);   // §7.3: the RTO restarts
    t.advance(6 * ms);
    t.expect_nothing();
    t.send_seg(ack_to(S(14), {{S(13), S(14)}}));
    t.expect_nothing();
    EXPECT_EQ(t.conn->snd().una, seq_num(S(14)));
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 1u);  // the D-SACK
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 19000u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 0u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 0u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    t.advance(10 * rto);
    t.expect_nothing();
}

// ---- Loss of a burst -----------------------------------------------------------

// 2..7 go at t0; 3, 4 and 5 are lost. 6 and 7 are SACKed: two DupAcks and
// 2000 octets above the hole, short of RFC 6675's DupThresh and IsLost. When
// the window passes, RACK marks all three lost at once (3000 octets) and
// recovery begins with cwnd = ssthresh = FlightSize / 2 = 2500: nothing is
// in the network (6 and 7 are SACKed, 3..5 known lost), so 3 and 4 go at
// once (pipe 2000) and 5 when the ACK of 3 takes one out. In order, each
// once. Data written after that goes as the resends leave the network: the
// originals of the resent segments are not counted in pipe.
// The sending is RFC 6675's own (cwnd - pipe at once, RFC 6582's exit), so
// PRR is off here; with PRR (the default) the same burst goes one segment
// on the timer and two per ACK after it: tcp_conn_prr_script_test.cpp.
TEST(TcpConnRackScript, ABurstIsMarkedLostAtOnceAndResentInOrderWithinCwnd) {
    tcp_harness t;
    t.cfg.prr = false;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t t0 = t.now;
    ASSERT_NO_FATAL_FAILURE(send_flight(t, 7));
    t.advance(rtt);
    t.send_seg(ack_to(S(3)));
    t.send_seg(ack_to(S(3), {{S(6), S(7)}}));
    t.send_seg(ack_to(S(3), {{S(6), S(8)}}));
    t.expect_nothing();
    EXPECT_EQ(t.conn->sack_dup_acks(), 2u);
    EXPECT_FALSE(t.conn->sack_scoreboard().is_lost(seq_num(S(3)), 1000));
    ASSERT_EQ(t.conn->rack().deadline(), t0 + rtt + reo_wnd);
    t.advance_to(t0 + rtt + reo_wnd - 1);
    t.expect_nothing();
    t.advance_to(t0 + rtt + reo_wnd);
    EXPECT_EQ(t.ctr.rack_lost.get(), 3000u);  // one timer, the whole burst
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 2500u);
    EXPECT_EQ(t.conn->cc().cwnd(), 2500u);
    t.expect_seg(rtx(3));
    t.expect_seg(rtx(4));
    t.expect_nothing();
    EXPECT_EQ(t.conn->sack_high_rxt(), seq_num(S(5)));
    // The retransmissions of 3 and 4 arrive one RTT later.
    t.advance_to(t0 + rtt + reo_wnd + rtt);
    t.expect_nothing();
    t.send_seg(ack_to(S(4), {{S(6), S(8)}}));
    t.expect_seg(rtx(5));
    t.expect_nothing();
    t.send_seg(ack_to(S(5), {{S(6), S(8)}}));
    t.expect_nothing();  // nothing left to send
    // The application writes 8 and 9. In the network: the resent 5 only
    // (its original is known lost), pipe 1000: one new segment fits in cwnd.
    EXPECT_EQ(t.conn->rack().any_lost(), false);
    ASSERT_EQ(t.app_send(pattern(2000, static_cast<uint8_t>(6000))), 2000u);
    t.expect_seg(data(8));
    t.expect_nothing();
    t.advance(rtt);
    t.send_seg(ack_to(S(8)));  // the full ACK: cwnd = min(ssthresh, 1000 + SMSS)
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);
    t.expect_seg(data(9, true));
    t.expect_nothing();
    t.advance(rtt);
    t.send_seg(ack_to(S(9)));
    t.send_seg(ack_to(S(10)));
    t.expect_nothing();
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.ctr.retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 3000u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

// ---- Loss of a retransmission, or not --------------------------------------------

// One burst of ACKs, in one tick of the clock (as one poll of the stack
// takes a NIC's burst): the first ACK opens cwnd and new segments 13 and 14
// go, a later one is the third DupAck and 3 is retransmitted — after 13 and
// 14, at the same `now`. One RTT later 13 and 14 are SACKed before the
// resent 3 is acknowledged, as they reach the peer first. RACK must not call
// that resend lost: RACK_sent_after (§6.2) breaks a tie in transmission time
// by sequence number, which says the resend (lower) went before 13; it went
// after. Nothing is sent again.
TEST(TcpConnRackScript, ARetransmissionSentAfterNewDataInOneTickIsNotLostWhenTheNewDataIsSacked) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(13000)), 13000u);
    for (uint32_t k = 2; k <= 12; ++k) {
        t.expect_seg(data(k));  // cwnd 11000: 13 and 14 wait
    }
    t.expect_nothing();
    const uint64_t tick = t0 + rtt;  // every ACK below arrives then; 3 was lost
    t.advance_to(tick);
    t.send_seg(ack_to(S(3)));  // cwnd 12000, 10000 in flight
    t.expect_seg(data(13));
    t.expect_seg(data(14, true));
    t.expect_nothing();
    t.send_seg(ack_to(S(3), {{S(4), S(5)}}));
    t.send_seg(ack_to(S(3), {{S(4), S(6)}}));
    t.expect_nothing();
    t.send_seg(ack_to(S(3), {{S(4), S(7)}}));  // DupThresh: reo_wnd 0, 3 is lost
    t.expect_seg(rtx(3));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    for (uint32_t k = 7; k <= 12; ++k) {
        t.send_seg(ack_to(S(3), {{S(4), S(k + 1)}}));
        t.expect_nothing();
    }
    EXPECT_EQ(t.now, tick);
    // 13 and 14 reach the peer before the resent 3, which follows them.
    t.advance_to(tick + rtt);
    t.expect_nothing();
    t.send_seg(ack_to(S(3), {{S(4), S(14)}}));
    t.expect_nothing();  // the resend went after 13: not lost
    EXPECT_EQ(t.conn->rack().rack_rtt(), rtt);
    t.send_seg(ack_to(S(3), {{S(4), S(15)}}));
    t.expect_nothing();
    t.send_seg(ack_to(S(15)));
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

// ---- Loss of one segment mid-flight -----------------------------------------------

// 2..11 go at t0; 5 is lost. The peer's ACKs arrive 100 us apart. Each SACK
// moves RACK.rtt, and the timer for 5 with it; the third DupAck (8's)
// makes the window 0 and 5 is lost at once: it is retransmitted at exactly
// t0 + 10.6 ms, once, and nothing else is.
TEST(TcpConnRackScript, OneLossMidFlightIsRetransmittedOnceAtTheThirdDupAck) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t));
    const uint64_t t0 = t.now;
    ASSERT_NO_FATAL_FAILURE(send_flight(t, 11));
    // The ACK of segment k arrives at t0 + 10 ms + (k - 2) * 100 us.
    const auto arrival = [&](uint32_t k) { return t0 + rtt + (k - 2) * 100 * us; };
    for (uint32_t k = 2; k <= 4; ++k) {
        t.advance_to(arrival(k));
        t.send_seg(ack_to(S(k + 1)));
        t.expect_nothing();
    }
    t.advance_to(arrival(6));
    t.send_seg(ack_to(S(5), {{S(6), S(7)}}));
    t.expect_nothing();
    EXPECT_EQ(t.conn->rack().rack_rtt(), rtt + 400 * us);
    EXPECT_EQ(t.conn->rack().deadline(), t0 + rtt + 400 * us + reo_wnd);
    t.advance_to(arrival(7));
    t.send_seg(ack_to(S(5), {{S(6), S(8)}}));
    t.expect_nothing();
    EXPECT_EQ(t.conn->rack().deadline(), t0 + rtt + 500 * us + reo_wnd);
    EXPECT_EQ(t.ctr.rack_lost.get(), 0u);
    t.advance_to(arrival(8));
    t.send_seg(ack_to(S(5), {{S(6), S(9)}}));
    t.expect_seg(rtx(5));
    t.expect_nothing();
    EXPECT_EQ(t.now, t0 + rtt + 600 * us);
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 3500u);  // FlightSize [S(5), S(12)) / 2
    EXPECT_EQ(t.conn->rack().deadline(), tcp_rack::never);
    for (uint32_t k = 9; k <= 11; ++k) {
        t.advance_to(arrival(k));
        t.send_seg(ack_to(S(5), {{S(6), S(k + 1)}}));
        t.expect_nothing();
    }
    t.advance_to(t0 + rtt + 600 * us + rtt);
    t.expect_nothing();
    t.send_seg(ack_to(S(12)));
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

}  // namespace
}  // namespace ferry::net
// ---- Back-to-back recoveries ----------------------------------------------------

namespace ferry::net {
namespace {

using namespace test;
using namespace test::sender;

// The data segments emitted since the last call, by number.
std::vector<uint32_t> sent_segments(tcp_harness &t) {
    std::vector<uint32_t> v;
    while (std::optional<emitted> e = t.pop()) {
        if (!e->data.empty()) {
            v.push_back((e->hdr.seq.value() - L - 1) / 1000 + 1);
        }
    }
    return v;
}

// The peer: one ACK per data segment that arrives (no delayed ACKs), the
// cumulative ACK and up to three SACK blocks, the one holding the segment
// that just arrived first, then the others from the highest down.
struct peer {
    std::set<uint32_t> got;  // above the cumulative ACK
    uint32_t next = 2;       // the segment the cumulative ACK asks for
    seg on_arrival(uint32_t k) {
        got.insert(k);
        while (got.count(next) != 0) {
            got.erase(next);
            ++next;
        }
        std::vector<std::pair<uint32_t, uint32_t>> runs;  // [first, last]
        for (uint32_t g : got) {
            if (!runs.empty() && runs.back().second + 1 == g) {
                runs.back().second = g;
            } else {
                runs.push_back({g, g});
            }
        }
        tcp_options o;
        std::vector<tcp_sack_block> blocks;
        for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
            const tcp_sack_block b{seq_num(S(it->first)), seq_num(S(it->second + 1))};
            if (k >= it->first && k <= it->second) {
                blocks.insert(blocks.begin(), b);
            } else {
                blocks.push_back(b);
            }
        }
        for (std::size_t i = 0; i < blocks.size() && i < 3; ++i) {
            o.sack[o.sack_count++] = blocks[i];
        }
        return {tcp_flag::ack, P + 1, S(next), 60000, {}, o};
    }
};

struct arrival {
    uint32_t segment;             // arrives at the peer
    std::vector<uint32_t> sends;  // what the sender sends on its ACK
    bool ack_lost = false;        // the ACK does not reach the sender
};

// A recovery that begins on the ACK that ends the previous one does not
// resend the holes that one resent and whose copies are still on their way
// (HighRxt carries over; RACK watches those copies). 3 and 5 are lost; the
// recovery resends both (RecoveryPoint S(17) - 1) and sends 17..22 as PRR
// lets it; 5's retransmission and 17 are lost too, so RACK resends 5 and 17
// a round later; the ACK of 22 is lost. The ACK of 5's second copy is the
// full ACK (S(17)), and it SACKs 22 anew: a DupAck whose IsLost(17) starts
// a second recovery at once. 17's copy, sent after 5's, is still in flight:
// nothing goes (until 2026-12-05, (4.3) resent 17 here), and its ACK a
// moment later takes SND.UNA past both. Every round's ACKs arrive in one
// tick, one per segment, in the order the segments were sent.
TEST(TcpConnRackScript, ARecoveryRightAfterAnotherDoesNotResendWhatIsInFlight) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish(t, path{.peer_window = 60000, .initial_window = 10}));
    ASSERT_EQ(t.app_send(pattern(1000 * 60)), 60000u);
    EXPECT_EQ(sent_segments(t), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    const std::vector<std::vector<arrival>> rounds = {
        // 3 and 5 lost. The ACK of 2 grows the window (13, 14); the first
        // two DupAcks let 15 and 16 out (RFC 6675 step 3); the third starts
        // recovery with 3; 5 goes when PRR lets it.
        {{2, {13, 14}}, {4, {15}}, {6, {16}}, {7, {3}}, {8, {}}, {9, {}}, {10, {}},
         {11, {5}}, {12, {17}}},
        // 5's copy and 17 lost.
        {{13, {18}}, {14, {19}}, {15, {20}}, {16, {21}}, {3, {22}}},
        // RACK: 5's copy and 17 are lost (18 was sent after both). The ACK
        // of 22 is lost.
        {{18, {5, 17, 23}}, {19, {24}}, {20, {25}}, {21, {26}}, {22, {}, true}},
        // The full ACK: the second recovery begins, and sends nothing.
        {{5, {}}, {17, {27}}, {23, {28}}, {24, {29}}, {25, {30}}, {26, {31}}},
    };
    peer p;
    for (std::size_t r = 0; r < rounds.size(); ++r) {
        t.advance(rtt);
        for (const arrival &a : rounds[r]) {
            const seg ack = p.on_arrival(a.segment);
            if (!a.ack_lost) {
                t.send_seg(ack);
            }
            EXPECT_EQ(sent_segments(t), a.sends)
                << "round " << r + 1 << ", the ACK of " << a.segment;
        }
        if (r == 2) {
            EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
        }
    }
    EXPECT_EQ(t.conn->snd().una.value(), S(27));
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 2u);
    EXPECT_EQ(t.ctr.rxt_in_flight_kept.get(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 4u);  // 3, 5, 5 and 17
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
}

}  // namespace
}  // namespace ferry::net
