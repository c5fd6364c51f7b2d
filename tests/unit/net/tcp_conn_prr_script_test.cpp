// Proportional Rate Reduction (RFC 6937) and the D-SACK undo (RFC 2883,
// RFC 3708, RFC 8985 §6.2 step 4) as a sender: one scripted segment test per
// behaviour (issue 16) — a single loss in a large flight (one segment for
// every two delivered), the recovery's exit at ssthresh, a burst loss that
// takes pipe far below ssthresh (PRR-SSRB grows it back by one segment per
// ACK), a burst found by RACK's timer (no ACK clock: one segment, then
// two per ACK), a spurious retransmission reported by D-SACK (the reduction
// is undone), a real loss next to a spurious one (not undone), and RACK's
// reordering window growing after a D-SACK. Each script states exactly
// which segments go out and when. tcp_prr_test.cpp and tcp_undo_test.cpp
// test the pure parts.
//
// Read first: RFC 6937 §3 (the algorithm) and §3.1 (its examples, which the
// first and third scripts follow), RFC 6675 §5 (the recovery PRR paces),
// RFC 2883 §4 and RFC 3708 (D-SACK), RFC 8985 §6.2 step 4.
//
// Every script starts from establish_prr(): SACK, RACK and PRR on, NewReno (so
// that ssthresh = FlightSize / 2, RFC 5681 eq. 4), MSS 1000, the peer's
// window 60000, a path RTT of exactly 10 ms learnt from a first segment.
// All of a round's ACKs arrive in one tick (as one poll takes a NIC's
// burst), so RACK's window (RACK.min_RTT / 4 = 2.5 ms, 0 from the third
// DupAck on) never passes within a round: DupAcks and RFC 6675's IsLost
// decide, as in RFC 6937's examples.
//
// The numbers to follow, for a flight whose segment 2 is lost and that has
// RecoverFS = 22000 and ssthresh = 11000 when recovery begins:
//   pipe > ssthresh:  sndcnt = CEIL(prr_delivered * 11000 / 22000) - prr_out
//   pipe <= ssthresh: sndcnt = MIN(11000 - pipe,
//                                  MAX(prr_delivered - prr_out, DeliveredData) + 1000)
// and a segment goes while pipe + 1000 <= pipe (at the ACK) + sndcnt.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "ferry/net/tcp_conn.h"
#include "ferry/net/tcp_rack.h"
#include "tcp_conn_harness.h"
#include "tcp_conn_sender_script.h"

namespace ferry::net {
namespace {

using namespace test;
using namespace test::sender;

constexpr uint16_t W = 60000;  // the peer's window

// What the peer sends here: an ACK of everything below `to`, with SACK
// blocks, and the window W.
seg ack(uint32_t to, std::initializer_list<std::pair<uint32_t, uint32_t>> blocks = {}) {
    return ack_to(to, blocks, W);
}

// sender::establish() with the peer's window W and an initial window of
// `iw` segments (cwnd iw + 1 after it), NewReno.
void establish_prr(tcp_harness &t, uint32_t iw = 19, bool rack = true) {
    establish(t, path{.peer_window = W, .initial_window = iw, .rack = rack});
    ASSERT_EQ(t.conn->cc().algorithm(), cc_algorithm::new_reno);
}

// ---- One loss in a large flight -----------------------------------------------

// 40 segments written; cwnd lets 2..21 go at t0. 2 is lost; the ACKs of
// 3..21 arrive at t1 = t0 + RTT, each SACKing one more. The first two
// DupAcks let 22 and 23 out (RFC 6675 step 3: pipe 19000 < cwnd 20000). The
// third starts recovery: RecoveryPoint S(24) - 1, RecoverFS = 22000,
// ssthresh = 11000 (cwnd with it, tcp_cc), and 2 is resent. Then, while
// pipe > ssthresh, a new segment goes on every second ACK (sndcnt
// alternates 500 / 1000: CEIL(prr_delivered / 2) - prr_out), where RFC 6675
// with cwnd = 11000 would stay silent for eight ACKs and then send one per
// ACK; once pipe reaches ssthresh (the ACK of 18), one per ACK. Returns t1
// with the 17 ACKs of the recovery processed: 2 resent, 24..31 sent.
uint64_t one_loss_first_round(tcp_harness &t) {
    const uint64_t t0 = t.now;
    EXPECT_EQ(t.app_send(pattern(40000)), 40000u);
    for (uint32_t k = 2; k <= 21; ++k) {
        t.expect_seg(data(k));
    }
    t.expect_nothing();
    const uint64_t t1 = t0 + rtt;
    t.advance_to(t1);
    t.send_seg(ack(S(2), {{S(3), S(4)}}));
    t.expect_seg(data(22));
    t.send_seg(ack(S(2), {{S(3), S(5)}}));
    t.expect_seg(data(23));
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    t.send_seg(ack(S(2), {{S(3), S(6)}}));
    t.expect_seg(rtx(2));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 11000u);  // FlightSize [S(2), S(24)) / 2
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    EXPECT_EQ(t.conn->cc().recover(), seq_num(S(24) - 1));
    EXPECT_TRUE(t.conn->prr().active());
    EXPECT_EQ(t.conn->prr().recover_fs(), 22000u);
    EXPECT_EQ(t.conn->prr().prr_delivered(), 1000u);
    // sndcnt = CEIL(1000 * 11000 / 22000) = 500 at pipe 18000 (3 SACKed, 2
    // lost): the limit is 18500, and the resent 2 (prr_out 1000) fills it.
    EXPECT_EQ(t.conn->prr().cwnd(), 18500u);
    EXPECT_EQ(t.conn->prr().prr_out(), 1000u);
    EXPECT_EQ(t.ctr.prr_episodes.get(), 1u);
    // The ACK of segment k (6..21): whether it lets the next new segment go.
    uint32_t next = 24;
    for (uint32_t k = 6; k <= 21; ++k) {
        t.send_seg(ack(S(2), {{S(3), S(k + 1)}}));
        // Above ssthresh (pipe 18000 down to 12000): the even ACKs 8..16
        // (sndcnt 1000). At pipe == ssthresh (the ACK of 18): nothing
        // (ssthresh - pipe = 0). Below it: PRR-SSRB, one per ACK.
        const bool sends = (k >= 8 && k <= 16 && k % 2 == 0) || k >= 19;
        if (sends) {
            t.expect_seg(data(next++));
        }
        t.expect_nothing();
        if (k == 17) {
            EXPECT_EQ(t.conn->sack_pipe(), 12000u);  // 2's resend, 18..28
            EXPECT_EQ(t.conn->prr().prr_out(), 6000u);
            EXPECT_EQ(t.conn->prr().prr_delivered(), 13000u);
        }
    }
    EXPECT_EQ(next, 32u);  // 8 new segments and one resend for 17 ACKs
    EXPECT_EQ(t.conn->prr().prr_delivered(), 17000u);
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);  // the target, all along
    EXPECT_EQ(t.now, t1);
    return t1;
}

TEST(TcpConnPrrScript, OneLossInALargeFlightSendsOneSegmentForEveryTwoDelivered) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t));
    const uint64_t t1 = one_loss_first_round(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    // t2: the peer gets 22, 23, the resent 2, then 24..31. Pipe is below
    // ssthresh: one segment per ACK (MIN(ssthresh - pipe, ...) = 1000).
    t.advance_to(t1 + rtt);
    t.expect_nothing();
    t.send_seg(ack(S(2), {{S(3), S(23)}}));
    t.expect_seg(data(32));
    t.send_seg(ack(S(2), {{S(3), S(24)}}));
    t.expect_seg(data(33));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // The resent 2 fills the hole: the ACK covers RecoveryPoint. Recovery
    // ends with cwnd = ssthresh; 24..33 are in flight (10000), one more goes.
    t.send_seg(ack(S(24)));
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_FALSE(t.conn->prr().active());
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    t.expect_seg(data(34));
    t.expect_nothing();
    // Congestion avoidance from there: each ACK lets one out.
    t.send_seg(ack(S(25)));
    t.expect_seg(data(35));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.prr_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.dsack_undos.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
}

// ---- The exit: cwnd = ssthresh ---------------------------------------------------

// The same first round; at t2 the ACKs of 22 and 23 are lost, and the first
// ACK to arrive is the resent 2's, which covers RecoveryPoint with only
// 24..31 (8000) in flight. PRR ends recovery with cwnd = ssthresh (RFC
// 6937 §4: the flight is meant to end at ssthresh): 3 segments go.
// (RFC 6582's exit would give min(ssthresh, FlightSize + SMSS) = 9000 and
// one segment: TcpConnSack.HolesThenNewDataAndRecoveryPoint.)
TEST(TcpConnPrrScript, RecoveryEndsWithCwndAtSsthresh) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t));
    const uint64_t t1 = one_loss_first_round(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    t.advance_to(t1 + rtt);
    t.send_seg(ack(S(24)));
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 11000u);
    t.expect_seg(data(32));
    t.expect_seg(data(33));
    t.expect_seg(data(34));
    t.expect_nothing();
    EXPECT_EQ(t.conn->snd().max, seq_num(S(35)));
}

// ---- A burst loss: PRR-SSRB ----------------------------------------------------

// RFC 6937 §3.1's second example: 2..21 go at t0, 2..16 (15 segments) are
// lost. The ACKs of 17 and 18 let 22 and 23 out; the third DupAck (19's)
// starts recovery with pipe = 4000 (20..23), far below ssthresh = 11000.
// RFC 6675 would send ssthresh - pipe = 7 segments at once; PRR-SSRB sends
// DeliveredData + 1 segment = 2 per ACK ("2R 2R 2R") until pipe reaches
// ssthresh, then one per ACK: a slow start back to ssthresh, clocked by the
// ACKs, each hole once, lowest first.
TEST(TcpConnPrrScript, ABurstLossSlowStartsBackToSsthresh) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(40000)), 40000u);
    for (uint32_t k = 2; k <= 21; ++k) {
        t.expect_seg(data(k));
    }
    t.expect_nothing();
    const uint64_t t1 = t0 + rtt;
    t.advance_to(t1);
    t.send_seg(ack(S(2), {{S(17), S(18)}}));
    t.expect_seg(data(22));
    t.send_seg(ack(S(2), {{S(17), S(19)}}));
    t.expect_seg(data(23));
    t.expect_nothing();
    // Recovery: sndcnt = MIN(11000 - 4000, MAX(1000 - 0, 1000) + 1000).
    t.send_seg(ack(S(2), {{S(17), S(20)}}));
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 11000u);
    EXPECT_EQ(t.conn->prr().cwnd(), 6000u);  // pipe 4000 + sndcnt 2000
    t.expect_seg(rtx(2));
    t.expect_seg(rtx(3));
    t.expect_nothing();
    // pipe 5000, then 6000 (the resends count): 2 per ACK.
    t.send_seg(ack(S(2), {{S(17), S(21)}}));
    t.expect_seg(rtx(4));
    t.expect_seg(rtx(5));
    t.expect_nothing();
    t.send_seg(ack(S(2), {{S(17), S(22)}}));
    t.expect_seg(rtx(6));
    t.expect_seg(rtx(7));
    t.expect_nothing();
    EXPECT_EQ(t.conn->sack_pipe(), 8000u);  // 22, 23 and six resends
    // t2: 22, 23 and the resends 2..7 arrive, in that order. Two per ACK
    // while pipe + 2000 <= ssthresh (7000, 8000, 9000 after the ACK), then
    // one (10000 after the ACK), the holes first (8..16), then new data.
    t.advance_to(t1 + rtt);
    t.send_seg(ack(S(2), {{S(17), S(23)}}));
    t.expect_seg(rtx(8));
    t.expect_seg(rtx(9));
    t.expect_nothing();
    t.send_seg(ack(S(2), {{S(17), S(24)}}));
    t.expect_seg(rtx(10));
    t.expect_seg(rtx(11));
    t.expect_nothing();
    t.send_seg(ack(S(3), {{S(17), S(24)}}));
    t.expect_seg(rtx(12));
    t.expect_seg(rtx(13));
    t.expect_nothing();
    EXPECT_EQ(t.conn->sack_pipe(), 11000u);  // at ssthresh
    t.send_seg(ack(S(4), {{S(17), S(24)}}));
    t.expect_seg(rtx(14));
    t.expect_nothing();
    t.send_seg(ack(S(5), {{S(17), S(24)}}));
    t.expect_seg(rtx(15));
    t.expect_nothing();
    t.send_seg(ack(S(6), {{S(17), S(24)}}));
    t.expect_seg(rtx(16));
    t.expect_nothing();
    t.send_seg(ack(S(7), {{S(17), S(24)}}));
    t.expect_seg(data(24));  // every hole resent: new data (rule 2)
    t.send_seg(ack(S(8), {{S(17), S(24)}}));
    t.expect_seg(data(25));
    t.expect_nothing();
    // t3: the resends 8..16 and 24, 25 arrive; one segment per ACK. The
    // resent 16 fills the last hole: the ACK covers RecoveryPoint (S(24) -
    // 1) and recovery ends with cwnd = ssthresh and 24..33 in flight.
    t.advance_to(t1 + 2 * rtt);
    uint32_t next = 26;
    for (uint32_t k = 8; k <= 15; ++k) {
        t.send_seg(ack(S(k + 1), {{S(17), S(24)}}));
        t.expect_seg(data(next++));
        t.expect_nothing();
    }
    EXPECT_TRUE(t.conn->cc().in_recovery());
    t.send_seg(ack(S(24)));
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    t.expect_seg(data(next++));
    t.expect_nothing();
    EXPECT_EQ(next, 35u);
    EXPECT_EQ(t.ctr.retransmits.get(), 15u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 15u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 15u);  // RACK's marks at the third DupAck
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 0u);
}

// ---- A burst found by RACK's timer ---------------------------------------------

// TcpConnRackScript.ABurstIsMarkedLostAtOnceAndResentInOrderWithinCwnd with
// PRR: 2..7 go at t0 (cwnd 11000), 3, 4, 5 are lost, 6 and 7 SACKed; the
// reordering timer marks the three lost and starts recovery (ssthresh 2500)
// with nothing in flight and no ACK: DeliveredData 0, sndcnt = MIN(2500,
// 0 + 1000): 3 alone goes (RFC 6675 sent 3 and 4). Its ACK delivers 1000:
// sndcnt = MIN(2500, MAX(0, 1000) + 1000), 4 and 5 go.
TEST(TcpConnPrrScript, ABurstFoundByTheTimerStartsFromOneSegment) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 10));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(6000)), 6000u);
    for (uint32_t k = 2; k <= 7; ++k) {
        t.expect_seg(data(k, k == 7));
    }
    t.advance(rtt);
    t.send_seg(ack(S(3)));
    t.send_seg(ack(S(3), {{S(6), S(7)}}));
    t.send_seg(ack(S(3), {{S(6), S(8)}}));
    t.expect_nothing();
    const uint64_t due = t0 + rtt + rtt / 4;  // RACK.rtt + RACK.reo_wnd
    ASSERT_EQ(t.conn->rack().deadline(), due);
    t.advance_to(due);
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 2500u);
    EXPECT_EQ(t.conn->prr().prr_delivered(), 0u);
    EXPECT_EQ(t.conn->prr().cwnd(), 1000u);
    t.expect_seg(rtx(3));
    t.expect_nothing();
    t.advance_to(due + rtt);
    t.send_seg(ack(S(4), {{S(6), S(8)}}));
    t.expect_seg(rtx(4));
    t.expect_seg(rtx(5));
    t.expect_nothing();
    t.advance(rtt);
    t.send_seg(ack(S(5), {{S(6), S(8)}}));
    t.send_seg(ack(S(8)));
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 2500u);  // ssthresh
    EXPECT_EQ(t.ctr.retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.rack_retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.prr_episodes.get(), 1u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

// ---- D-SACK: undo, or not ---------------------------------------------------------

// 2..11 go at t0 (cwnd 11000); 3 is delayed, not lost. At t1 the ACK of 2
// (cwnd 12000: slow start) and the SACKs of 4, 5, 6 arrive: the third DupAck
// makes RACK's window 0, 3 is marked lost and resent, and recovery halves
// the window: ssthresh = cwnd = FlightSize / 2 = 4500. The original 3
// arrives 3 ms late: its ACK covers RecoveryPoint, recovery ends at
// ssthresh. Returns t1.
uint64_t spurious_recovery(tcp_harness &t) {
    const uint64_t t0 = t.now;
    EXPECT_EQ(t.app_send(pattern(10000)), 10000u);
    for (uint32_t k = 2; k <= 11; ++k) {
        t.expect_seg(data(k, k == 11));
    }
    const uint64_t t1 = t0 + rtt;
    t.advance_to(t1);
    t.send_seg(ack(S(3)));
    EXPECT_EQ(t.conn->cc().cwnd(), 12000u);
    t.send_seg(ack(S(3), {{S(4), S(5)}}));
    t.send_seg(ack(S(3), {{S(4), S(6)}}));
    t.expect_nothing();
    t.send_seg(ack(S(3), {{S(4), S(7)}}));
    t.expect_seg(rtx(3));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 4500u);
    EXPECT_EQ(t.conn->undo().prior_cwnd(), 12000u);
    EXPECT_EQ(t.conn->undo().prior_ssthresh(), 0xffffffffu);  // still in slow start
    for (uint32_t k = 7; k <= 11; ++k) {
        t.send_seg(ack(S(3), {{S(4), S(k + 1)}}));
        t.expect_nothing();
    }
    t.advance_to(t1 + 3 * ms);
    t.send_seg(ack(S(12)));  // the original 3
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 4500u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 4500u);
    EXPECT_EQ(t.ctr.dsacks_received.get(), 0u);
    return t1;
}

// The resent 3 reaches the peer, which already has it and reports it with
// a D-SACK below the ACK (RFC 2883 §4). It was the episode's only
// retransmission: the recovery was spurious (RFC 3708), and cwnd and
// ssthresh go back to 12000 and "infinite" (slow start). RACK's reordering
// window doubles (RFC 8985 §6.2 step 4). The next write goes out with the
// restored window, 12 segments at once.
TEST(TcpConnPrrScript, ASpuriousRetransmissionReportedByDsackUndoesTheReduction) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 10));
    const uint64_t t1 = spurious_recovery(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    EXPECT_EQ(t.conn->rack().reo_wnd_mult(), 1u);
    EXPECT_EQ(t.conn->rack().reo_wnd_persist(), 15u);  // a recovery ended without D-SACK
    t.advance_to(t1 + rtt);
    t.send_seg(ack(S(12), {{S(3), S(4)}}));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.dsacks_received.get(), 1u);
    EXPECT_EQ(t.ctr.dsack_undos.get(), 1u);
    EXPECT_EQ(t.conn->cc().cwnd(), 12000u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 0xffffffffu);
    EXPECT_FALSE(t.conn->undo().active());
    EXPECT_EQ(t.ctr.reo_wnd_grown.get(), 1u);
    EXPECT_EQ(t.conn->rack().reo_wnd_mult(), 2u);
    EXPECT_EQ(t.conn->rack().reo_wnd_persist(), 16u);
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 1u);  // for the scoreboard, still nothing
    // The same report again (a duplicated ACK): no second undo. The D-SACK
    // round ended at once (RACK.dsack_round = SND.NXT = SND.UNA), so RFC
    // 8985 grows the window again.
    t.send_seg(ack(S(12), {{S(3), S(4)}}));
    EXPECT_EQ(t.ctr.dsacks_received.get(), 2u);
    EXPECT_EQ(t.ctr.dsack_undos.get(), 1u);
    EXPECT_EQ(t.conn->cc().cwnd(), 12000u);
    EXPECT_EQ(t.ctr.reo_wnd_grown.get(), 2u);
    EXPECT_EQ(t.conn->rack().reo_wnd_mult(), 3u);
    ASSERT_EQ(t.app_send(pattern(12000, static_cast<uint8_t>(10000))), 12000u);
    for (uint32_t k = 12; k <= 23; ++k) {
        t.expect_seg(data(k, k == 23));
    }
    t.expect_nothing();
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
}

// As above, but 5 is really lost, and resent too (the first hole after 3 is
// SACKed around it). The peer reports the copy of 3 as a duplicate, not
// 5's: only half of what the episode resent was not needed, and the
// reduction stands.
TEST(TcpConnPrrScript, ARealLossNextToASpuriousOneIsNotUndone) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 10));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(10000)), 10000u);
    for (uint32_t k = 2; k <= 11; ++k) {
        t.expect_seg(data(k, k == 11));
    }
    const uint64_t t1 = t0 + rtt;
    t.advance_to(t1);
    t.send_seg(ack(S(3)));
    t.send_seg(ack(S(3), {{S(4), S(5)}}));
    t.send_seg(ack(S(3), {{S(6), S(7)}, {S(4), S(5)}}));
    t.send_seg(ack(S(3), {{S(6), S(8)}, {S(4), S(5)}}));
    t.expect_seg(rtx(3));  // the third DupAck: 3 lost (RACK), recovery
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().ssthresh(), 4500u);
    // RACK marked 5 lost with 3 (both were sent before 7). PRR-SSRB: at the
    // third DupAck pipe = 4000 (8..11), sndcnt = MIN(4500 - 4000, 2000) =
    // 500, the resent 3 took it; at 8's, pipe 4000 again (3's resend, 9..11),
    // sndcnt 500; at 9's, pipe 3000 and MIN(1500, MAX(3000 - 1000, 1000) +
    // 1000): 5 goes.
    for (uint32_t k = 8; k <= 11; ++k) {
        t.send_seg(ack(S(3), {{S(6), S(k + 1)}, {S(4), S(5)}}));
        if (k == 9) {
            t.expect_seg(rtx(5));
        }
        t.expect_nothing();
    }
    // The original 3 arrives; 5 is still missing.
    t.advance_to(t1 + 3 * ms);
    t.send_seg(ack(S(5), {{S(6), S(12)}}));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // The resends arrive: 3 is a duplicate, 5 fills the hole.
    t.advance_to(t1 + rtt);
    t.send_seg(ack(S(5), {{S(3), S(4)}, {S(6), S(12)}}));
    EXPECT_EQ(t.ctr.dsacks_received.get(), 1u);
    EXPECT_EQ(t.conn->undo().retransmitted(), 2000u);
    EXPECT_EQ(t.conn->undo().reported(), 1000u);
    t.send_seg(ack(S(12)));
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.ctr.dsack_undos.get(), 0u);
    EXPECT_EQ(t.conn->cc().cwnd(), 4500u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 4500u);
    EXPECT_EQ(t.ctr.retransmits.get(), 2u);
}

// After the undo, RACK.reo_wnd_mult is 2: the reordering window is 2 *
// RACK.min_RTT / 4 = 5 ms. A segment 4 ms late with one DupAck (which the
// 2.5 ms window of TcpConnRackScript.ReorderingBeyondTheWindow would have
// resent) arrives before it passes: nothing is resent.
TEST(TcpConnPrrScript, AfterADsackTheReorderingWindowIsWider) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 10));
    const uint64_t t1 = spurious_recovery(t);
    ASSERT_FALSE(::testing::Test::HasFailure());
    t.advance_to(t1 + rtt);
    t.send_seg(ack(S(12), {{S(3), S(4)}}));
    ASSERT_EQ(t.conn->rack().reo_wnd_mult(), 2u);
    ASSERT_EQ(t.conn->rtt().srtt_ns(), rtt);
    ASSERT_EQ(t.conn->rack().min_rtt(), rtt);
    // 12, 13, 14 go at t2; 13 is 4 ms late.
    const uint64_t t2 = t.now;
    ASSERT_EQ(t.app_send(pattern(3000, static_cast<uint8_t>(10000))), 3000u);
    t.expect_seg(data(12));
    t.expect_seg(data(13));
    t.expect_seg(data(14, true));
    t.advance_to(t2 + rtt);
    t.send_seg(ack(S(13)));
    t.send_seg(ack(S(13), {{S(14), S(15)}}));
    t.expect_nothing();
    EXPECT_EQ(t.conn->rack().deadline(), t2 + rtt + 5 * ms);
    t.advance_to(t2 + rtt + 4 * ms);
    t.expect_nothing();
    t.send_seg(ack(S(15)));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);  // the spurious 3 only
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.rack_lost.get(), 1000u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

// ---- F-RTO: a spurious timeout, or not ----------------------------------------

// F-RTO (RFC 5682 §3) on its own: RACK off, so that no tail loss probe
// comes before the timeout. cwnd 11000; 2..12 go at t0 with 9 more segments
// queued. No ACK comes for 250 ms (a delay, not a loss): the RTO fires at
// t0 + 200 ms, resends 2 and cuts cwnd to 1000 (ssthresh 5500). The delayed
// ACK of the original 2 is the first after the timeout: it advances SND.UNA
// short of RecoveryPoint (S(13)), so 13 and 14 go instead of 3 and 4. The
// next ACK acknowledges 3, which was never resent: the timeout was
// spurious, cwnd and ssthresh go back to 11000 and "infinite", and the
// sender goes on from there; nothing else is resent.
TEST(TcpConnPrrScript, FrtoUndoesASpuriousTimeout) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 10, false));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(20000)), 20000u);
    for (uint32_t k = 2; k <= 12; ++k) {
        t.expect_seg(data(k));
    }
    t.expect_nothing();
    ASSERT_EQ(t.conn->rtx_deadline(), t0 + rto);
    t.advance_to(t0 + rto);
    t.expect_seg(rtx(2));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rto_fired.get(), 1u);
    EXPECT_EQ(t.conn->cc().cwnd(), 1000u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 5500u);
    EXPECT_TRUE(t.conn->undo().frto_pending());
    EXPECT_EQ(t.conn->undo().frto_recovery_point(), seq_num(S(13)));
    t.advance_to(t0 + 250 * ms);
    t.send_seg(ack(S(3)));  // step 2: the original 2's ACK
    t.expect_seg(data(13));
    t.expect_seg(data(14));
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);  // slow start after the timeout
    t.send_seg(ack(S(4)));                  // step 3: 3 was never resent
    EXPECT_EQ(t.ctr.frto_undos.get(), 1u);
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 0xffffffffu);
    t.expect_nothing();     // 4..14 in flight: 11000
    t.send_seg(ack(S(5)));  // slow start: cwnd 12000, two go
    t.expect_seg(data(15));
    t.expect_seg(data(16));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.dsack_undos.get(), 0u);
}

// The same start, but 2..6 (the whole flight: cwnd 5000) were lost. The
// resent 2's ACK is step 2: 7 and 8 go. The peer SACKs them, above
// RecoveryPoint (S(7)), and acknowledges nothing below: the timeout was
// real, the go-back resumes from SND.UNA with cwnd 2000 (3 and 4), and the
// window stays cut.
TEST(TcpConnPrrScript, FrtoKeepsARealTimeout) {
    tcp_harness t;
    ASSERT_NO_FATAL_FAILURE(establish_prr(t, 4, false));
    const uint64_t t0 = t.now;
    ASSERT_EQ(t.app_send(pattern(10000)), 10000u);
    for (uint32_t k = 2; k <= 6; ++k) {
        t.expect_seg(data(k));
    }
    t.expect_nothing();
    t.advance_to(t0 + rto);
    t.expect_seg(rtx(2));
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().ssthresh(), 2500u);
    t.advance(rtt);
    t.send_seg(ack(S(3)));
    t.expect_seg(data(7));
    t.expect_seg(data(8));
    t.expect_nothing();
    t.advance(rtt);
    t.send_seg(ack(S(3), {{S(7), S(8)}}));
    EXPECT_FALSE(t.conn->undo().frto_pending());
    t.expect_seg(rtx(3));
    t.expect_seg(rtx(4));
    t.expect_nothing();
    t.send_seg(ack(S(3), {{S(7), S(9)}}));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.frto_undos.get(), 0u);
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);
    EXPECT_EQ(t.conn->cc().ssthresh(), 2500u);
    // The go-back goes on as the resends are acknowledged; 7 and 8 (SACKed)
    // are skipped.
    t.advance(rtt);
    t.send_seg(ack(S(5), {{S(7), S(9)}}));
    t.expect_seg(rtx(5));
    t.expect_seg(rtx(6));
    t.expect_nothing();
    EXPECT_EQ(t.ctr.retransmits.get(), 5u);
}

}  // namespace
}  // namespace ferry::net
