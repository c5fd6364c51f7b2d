// tcp_conn with injected time: retransmission (RFC 6298), SYN retries,
// delayed ACKs, zero-window probes (layer 2); RST / SYN / ACK hardening of
// RFC 5961 (layer 3).
#include "ferry/net/tcp_conn.h"

#include <gtest/gtest.h>

#include "tcp_conn_harness.h"

namespace ferry::net {
namespace {

using namespace test;
constexpr uint8_t SYN = tcp_flag::syn;
constexpr uint8_t ACK = tcp_flag::ack;
constexpr uint8_t FIN = tcp_flag::fin;
constexpr uint8_t RST = tcp_flag::rst;
constexpr uint8_t PSH = tcp_flag::psh;
constexpr uint32_t L = tcp_harness::local_iss;
constexpr uint32_t P = tcp_harness::peer_iss;

// ---- Layer 2: retransmission ---------------------------------------------

// After establish_passive() at t = 0 the handshake gave an RTT sample of 0:
// SRTT 0, RTTVAR 0, RTO = max(0 + max(G, 0), min_rto) = 200 ms.
TEST(TcpConnRto, BacksOffExactly) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.conn->rtt().rto_ns(), 200 * ms);
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    EXPECT_EQ(t.conn->next_deadline(), 200 * ms);
    t.advance_to(200 * ms - 1);
    t.expect_nothing();
    t.advance_to(200 * ms);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    EXPECT_EQ(t.conn->rtt().rto_ns(), 400 * ms);
    EXPECT_EQ(t.conn->rtx_deadline(), 600 * ms);
    t.advance_to(600 * ms);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    EXPECT_EQ(t.conn->rtx_deadline(), 1400 * ms);
    EXPECT_EQ(t.ctr.rto_fired.get(), 2u);
    EXPECT_EQ(t.ctr.retransmits.get(), 2u);
    // The ACK of a retransmitted segment gives no sample (Karn): the
    // backed-off RTO stays.
    t.advance_to(700 * ms);
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    EXPECT_EQ(t.conn->rtt().rto_ns(), 800 * ms);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    // New data, sent once: its ACK collapses the backoff.
    EXPECT_EQ(t.app_send(pattern(10)), 10u);
    t.expect_seg({ACK | PSH, L + 1001, P + 1, 10000, pattern(10)});
    EXPECT_EQ(t.conn->rtx_deadline(), 1500 * ms);
    t.advance_to(800 * ms);
    t.send_seg({ACK, P + 1, L + 1011, 20000});
    // Second sample, 100 ms: SRTT 12.5 ms, RTTVAR 25 ms -> 112.5 ms -> min 200 ms.
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 12'500'000u);
    EXPECT_EQ(t.conn->rtt().rto_ns(), 200 * ms);
}

TEST(TcpConnRto, GoesBackToUnaAndSlowStarts) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(3000)), 3000u);
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 232)});
    t.expect_seg({ACK | PSH, L + 2001, P + 1, 10000, pattern(1000, 208)});
    t.advance_to(200 * ms);
    // Loss window: one segment.
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().cwnd(), 1000u);
    EXPECT_EQ(t.conn->snd().nxt.value(), L + 1001);
    EXPECT_EQ(t.conn->snd().max.value(), L + 3001);
    // Its ACK: cwnd 2000 (RFC 3465 §2.3: L = 1 SMSS after a timeout), two more.
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 232)});
    t.expect_seg({ACK | PSH, L + 2001, P + 1, 10000, pattern(1000, 208)});
    EXPECT_EQ(t.ctr.retransmits.get(), 3u);
    // A late ACK for the whole first flight is taken.
    t.send_seg({ACK, P + 1, L + 3001, 20000});
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

TEST(TcpConnRto, GivesUpAfterMaxRetransmits) {
    tcp_harness t;
    t.cfg.max_retransmits = 3;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(100)), 100u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(100)});
    for (uint64_t at : {200 * ms, 600 * ms, 1400 * ms}) {
        t.advance_to(at);
        t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(100)});
        EXPECT_EQ(t.conn->state(), tcp_state::established);
    }
    t.advance_to(3000 * ms - 1);
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    t.advance_to(3000 * ms);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::timed_out);
    EXPECT_EQ(t.ctr.conn_timed_out.get(), 1u);
    t.expect_nothing();  // no RST on a timeout
}

TEST(TcpConnRto, FinIsRetransmitted) {
    tcp_harness t;
    t.establish_passive();
    t.conn->close(t.now);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
    t.advance_to(200 * ms);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
    t.send_seg({ACK, P + 1, L + 2, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::fin_wait_2);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

TEST(TcpConnRto, SynRetransmitsThenThreeSecondRto) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(0));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.advance_to(1 * sec);
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->next_deadline(), 3 * sec);
    t.advance_to(3 * sec);
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->next_deadline(), 7 * sec);
    t.advance_to(3500 * ms);
    t.send_seg({SYN | ACK, P, L + 1, 20000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    // No sample (the SYN was retransmitted); RFC 6298 §5.7 raises an RTO
    // below 3 s to 3 s: the backed-off 4 s stays.
    EXPECT_FALSE(t.conn->rtt().has_sample());
    EXPECT_EQ(t.conn->rtt().rto_ns(), 4 * sec);
    EXPECT_EQ(t.ctr.syn_retransmits.get(), 2u);
}

TEST(TcpConnRto, SynRetransmittedOnceThenRtoIsThreeSeconds) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(0));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.advance_to(1 * sec);
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->rtt().rto_ns(), 2 * sec);
    t.advance_to(1500 * ms);
    t.send_seg({SYN | ACK, P, L + 1, 20000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->rtt().rto_ns(), 3 * sec);  // RFC 6298 §5.7
}

TEST(TcpConnRto, SynRetriesExhausted) {
    tcp_harness t;
    t.cfg.max_syn_retries = 2;
    t.create();
    ASSERT_TRUE(t.conn->open_active(0));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.advance_to(3 * sec);
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.advance_to(7 * sec);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::timed_out);
    t.expect_nothing();
}

TEST(TcpConnRto, SynAckRetransmitted) {
    tcp_harness t;
    t.create();
    tcp_repr syn;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(syn, 0));
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    t.advance_to(1 * sec);
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->next_deadline(), 3 * sec);
}

// ---- Layer 2: delayed ACK ------------------------------------------------

TEST(TcpConnDelayedAck, AcksEverySecondSegmentOrAfterTimeout) {
    tcp_harness t;
    t.cfg.delayed_ack = true;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.expect_nothing();
    EXPECT_EQ(t.conn->delack_deadline(), 40 * ms);
    t.advance_to(40 * ms);
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    EXPECT_EQ(t.ctr.delayed_acks.get(), 1u);
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(100)});
    t.expect_nothing();
    t.send_seg({ACK, P + 201, L + 1, 20000, pattern(100)});
    t.expect_seg({ACK, L + 1, P + 301, 9700});
    EXPECT_EQ(t.conn->delack_deadline(), tcp_conn::never);
}

TEST(TcpConnDelayedAck, DataPiggybacksTheAck) {
    tcp_harness t;
    t.cfg.delayed_ack = true;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.expect_nothing();
    EXPECT_EQ(t.app_send(pattern(5)), 5u);
    t.expect_seg({ACK | PSH, L + 1, P + 101, 9900, pattern(5)});
    EXPECT_EQ(t.conn->delack_deadline(), tcp_conn::never);
}

TEST(TcpConnDelayedAck, OutOfOrderIsAckedAtOnce) {
    tcp_harness t;
    t.cfg.delayed_ack = true;
    t.establish_passive();
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(100, 100)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    // Filling the gap: immediate ACK of everything (RFC 5681 §4.2).
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.expect_seg({ACK, L + 1, P + 201, 9800});
    EXPECT_EQ(t.app_recv(), pattern(200));
}

// An upstream connection between requests: the response's ACK waits for
// the next request, which comes after the timeout, so the timer sends it.
// Once that happened, an lcore about to sleep sends it at once instead
// (the timer would wake it); where data soon carries the ACKs, it does not.
TEST(TcpConnDelayedAck, AckGoesBeforeASleepWhereTheTimerSentTheLastOne) {
    tcp_harness t;
    t.cfg.delayed_ack = true;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    EXPECT_FALSE(t.conn->ack_before_idle(t.now));  // nothing known yet: delayed
    t.expect_nothing();
    t.advance_to(40 * ms);
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    EXPECT_EQ(t.conn->delack_fate(), 1);
    // The next request, a response, and the lcore goes to sleep.
    t.advance_to(100 * ms);
    EXPECT_EQ(t.app_send(pattern(5)), 5u);
    t.expect_seg({ACK | PSH, L + 1, P + 101, 9900, pattern(5)});
    t.send_seg({ACK, P + 101, L + 6, 20000, pattern(100)});
    t.expect_nothing();
    EXPECT_TRUE(t.conn->ack_before_idle(t.now));
    t.expect_seg({ACK, L + 6, P + 201, 9800});
    EXPECT_EQ(t.conn->delack_deadline(), tcp_conn::never);
    EXPECT_EQ(t.ctr.idle_acks.get(), 1u);
    t.advance_to(200 * ms);
    t.expect_nothing();  // no timer left
    EXPECT_EQ(t.ctr.delayed_acks.get(), 1u);
    // The next request came after the deadline the idle ACK beat: the
    // timer would have sent it.
    EXPECT_EQ(t.app_send(pattern(5)), 5u);
    t.expect_seg({ACK | PSH, L + 6, P + 201, 9800, pattern(5)});
    EXPECT_EQ(t.conn->delack_fate(), 2);
    EXPECT_EQ(t.ctr.idle_acks_early.get(), 0u);
    EXPECT_FALSE(t.conn->ack_before_idle(t.now));  // no ACK owed
    t.expect_nothing();
}

TEST(TcpConnDelayedAck, AcksThatDataCarriesStayDelayedBeforeASleep) {
    tcp_harness t;
    t.cfg.delayed_ack = true;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.advance_to(40 * ms);
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    EXPECT_EQ(t.conn->delack_fate(), 1);
    // An idle ACK whose deadline the data beats: counted, and the
    // connection learns its ACKs ride on data.
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(100)});
    EXPECT_TRUE(t.conn->ack_before_idle(t.now));
    t.expect_seg({ACK, L + 1, P + 201, 9800});
    t.advance(ms);
    EXPECT_EQ(t.app_send(pattern(5)), 5u);
    t.expect_seg({ACK | PSH, L + 1, P + 201, 9800, pattern(5)});
    EXPECT_EQ(t.ctr.idle_acks_early.get(), 1u);
    EXPECT_EQ(t.conn->delack_fate(), 0);
    // From now on the ACK waits for the data, sleep or not.
    t.send_seg({ACK, P + 201, L + 6, 20000, pattern(100)});
    EXPECT_FALSE(t.conn->ack_before_idle(t.now));
    t.expect_nothing();
    t.advance(ms);
    EXPECT_EQ(t.app_send(pattern(5)), 5u);
    t.expect_seg({ACK | PSH, L + 6, P + 301, 9700, pattern(5)});
    EXPECT_EQ(t.ctr.idle_acks.get(), 1u);
    EXPECT_EQ(t.ctr.delayed_acks.get(), 1u);
}

// ---- Layer 2: zero window ------------------------------------------------

TEST(TcpConnPersist, ProbesZeroWindowWithBackoff) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    t.now = 10 * ms;
    t.send_seg({ACK, P + 1, L + 1001, 0});  // all acked, window closed
    EXPECT_EQ(t.conn->rtt().rto_ns(), 200 * ms);
    EXPECT_EQ(t.app_send(pattern(500, 7)), 500u);
    t.expect_nothing();
    EXPECT_EQ(t.conn->persist_deadline(), 210 * ms);
    t.advance_to(210 * ms);
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1, 7)});
    EXPECT_EQ(t.conn->persist_deadline(), 610 * ms);
    // Still closed: the probe's octet is not taken; not a duplicate ACK.
    t.send_seg({ACK, P + 1, L + 1001, 0});
    t.expect_nothing();
    EXPECT_EQ(t.ctr.dup_acks.get(), 0u);
    t.advance_to(610 * ms);
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1, 7)});
    EXPECT_EQ(t.conn->persist_deadline(), 1410 * ms);
    EXPECT_EQ(t.ctr.zero_window_probes.get(), 2u);
    // The window opens: the data goes, the persist timer stops.
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    t.expect_seg({ACK | PSH, L + 1001, P + 1, 10000, pattern(500, 7)});
    EXPECT_EQ(t.conn->persist_deadline(), tcp_conn::never);
    EXPECT_EQ(t.conn->rtx_deadline(), 610 * ms + 200 * ms);
}

TEST(TcpConnPersist, ProbeOctetTaken) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    t.send_seg({ACK, P + 1, L + 1001, 0});
    EXPECT_EQ(t.app_send(pattern(3)), 3u);
    t.advance_to(200 * ms);
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1)});
    // The peer took the octet and is closed again.
    t.send_seg({ACK, P + 1, L + 1002, 0});
    EXPECT_EQ(t.conn->snd().una.value(), L + 1002);
    EXPECT_EQ(t.conn->send_queued(), 2u);
    EXPECT_NE(t.conn->persist_deadline(), tcp_conn::never);
    t.send_seg({ACK, P + 1, L + 1002, 1000});
    t.expect_seg({ACK | PSH, L + 1002, P + 1, 10000, pattern(2, 1)});
}

// RFC 9293 §3.8.6.1: the interval between probes "SHOULD increase
// exponentially" while the window stays zero, also when the peer takes each
// probe's octet (Linux does when its real window is a few bytes that its
// window scale rounds to 0). Before, every taken octet reset the backoff and
// the probes went at a fixed RTO (~0.4 s seen from outside).
TEST(TcpConnPersist, ProbesBackOffWhileTheWindowStaysZeroEvenWhenOctetsAreTaken) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    t.send_seg({ACK, P + 1, L + 1001, 0});
    EXPECT_EQ(t.app_send(pattern(10)), 10u);
    uint64_t at = t.conn->persist_deadline();
    ASSERT_EQ(at, 200 * ms);
    uint64_t gap = 200 * ms;
    for (uint32_t k = 0; k < 5; ++k) {
        t.advance_to(at);
        t.expect_seg({ACK, L + 1001 + k, P + 1, 10000, pattern(1, k)});
        t.send_seg({ACK, P + 1, L + 1002 + k, 0});  // taken; still closed
        const uint64_t next = t.conn->persist_deadline();
        EXPECT_EQ(next - at, 2 * gap) << "probe " << k;
        gap = next - at;
        at = next;
    }
    EXPECT_EQ(t.ctr.zero_window_probes.get(), 5u);
    // The window opens: the rest goes, and the backoff is gone.
    t.send_seg({ACK, P + 1, L + 1006, 1000});
    t.expect_seg({ACK | PSH, L + 1006, P + 1, 10000, pattern(5, 5)});
    EXPECT_EQ(t.conn->persist_deadline(), tcp_conn::never);
}

// After a probe, SND.MAX covers the probe's octet, which lies past the
// peer's (zero) window. An ACK from SND.MAX would be out of the peer's window
// there (Linux drops it: TCPACKSkippedSeq) and its ACK field unread: with
// both ends' windows closed on data the other has not acknowledged, neither
// would ever move. Pure ACKs come from the window's right edge then (as
// Linux's tcp_acceptable_seq()).
TEST(TcpConnPersist, AcksAfterProbeStayInsidePeerWindow) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(1000)});
    t.send_seg({ACK, P + 1, L + 1001, 0});
    EXPECT_EQ(t.app_send(pattern(3)), 3u);
    t.advance_to(200 * ms);
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1)});
    // The peer, window still closed, sends data: acknowledged from L + 1001.
    t.send_seg({ACK, P + 1, L + 1001, 0, pattern(100)});
    t.expect_seg({ACK, L + 1001, P + 101, 9900});
    // An out-of-window duplicate of the peer's data gets the same.
    t.send_seg({ACK, P + 1, L + 1001, 0, pattern(100)});
    t.expect_seg({ACK, L + 1001, P + 101, 9900});
    // Once the window opens, the probe's octet and the rest go from SND.UNA.
    t.send_seg({ACK, P + 101, L + 1001, 1000});
    t.expect_seg({ACK | PSH, L + 1001, P + 101, 9900, pattern(3)});
}

// ---- Layer 3: RFC 5961 ---------------------------------------------------

TEST(TcpConnReset, ExactSequenceResets) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(10)});
    t.expect_seg({ACK, L + 1, P + 11, 9990});
    t.send_seg({RST, P + 11, 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::reset);
    EXPECT_EQ(t.conn->take_events() & tcp_event::closed, tcp_event::closed);
    EXPECT_EQ(t.conn->recv_queued(), 0u);  // queues flushed
    EXPECT_EQ(t.ctr.resets_received.get(), 1u);
    t.expect_nothing();
}

TEST(TcpConnReset, InWindowButNotExactGetsChallengeAck) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({RST, P + 100, 0, 0});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    EXPECT_EQ(t.ctr.challenge_acks.get(), 1u);
    t.send_seg({RST | ACK, P + 9999, L + 1, 0});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.ctr.challenge_acks.get(), 2u);
}

TEST(TcpConnReset, OutsideWindowIsDropped) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({RST, P + 10001, 0, 0});
    t.send_seg({RST, P, 0, 0});
    t.expect_nothing();
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    EXPECT_EQ(t.ctr.resets_ignored.get(), 2u);
}

TEST(TcpConnReset, ResetInSynReceived) {
    tcp_harness t;
    t.create();
    tcp_repr syn;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(syn, 0));
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    t.send_seg({RST, P + 1, 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::refused);
}

TEST(TcpConnReset, ResetInTimeWaitIsIgnoredRfc1337) {
    // RFC 1337 §3: a RST (here: the peer's answer to a late duplicate, its
    // TCB gone) neither cuts TIME-WAIT short nor turns the orderly end into a
    // reset; 2*MSL still runs out normally.
    tcp_harness t;
    t.establish_passive();
    t.conn->close(t.now);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
    t.send_seg({ACK | FIN, P + 1, L + 2, 20000});
    t.expect_seg({ACK, L + 2, P + 2, 9999});
    ASSERT_EQ(t.conn->state(), tcp_state::time_wait);
    t.send_seg({RST, P + 2, 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::time_wait);
    EXPECT_EQ(t.ctr.resets_ignored.get(), 1u);
    t.send_seg({RST, P + 7, 0, 0});  // in-window but not exact: no challenge ACK either
    t.expect_nothing();
    t.now = t.conn->next_deadline();
    t.conn->on_timer(t.now);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::normal);
}

TEST(TcpConnHardening, SynInSynchronizedStateGetsChallengeAck) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({SYN, P + 5, 0, 20000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.ctr.challenge_acks.get(), 1u);
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    // Outside the window: the plain "unacceptable" ACK.
    t.send_seg({SYN, P + 50000, 0, 20000});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
}

TEST(TcpConnHardening, PureAckAtRightEdgeIsTaken) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(100)), 100u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(100)});
    // SEG.SEQ = RCV.NXT + RCV.WND, no data: strictly outside RFC 9293's
    // test, taken as Linux does; its ACK field counts.
    t.send_seg({ACK, P + 1 + 10000, L + 101, 20000});
    t.expect_nothing();
    EXPECT_EQ(t.conn->snd().una.value(), L + 101);
    EXPECT_EQ(t.ctr.rcv_unacceptable.get(), 0u);
    // One further is outside.
    t.send_seg({ACK, P + 1 + 10001, L + 101, 20000});
    t.expect_seg({ACK, L + 101, P + 1, 10000});
}

TEST(TcpConnHardening, OutOfWindowPureAcksAreRateLimited) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK, P + 50000, L + 1, 20000});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    t.send_seg({ACK, P + 50000, L + 1, 20000});
    t.now = 499 * ms;
    t.send_seg({ACK, P + 50000, L + 1, 20000});
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rcv_oow_ack_limited.get(), 2u);
    t.now = 500 * ms;
    t.send_seg({ACK, P + 50000, L + 1, 20000});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    // Data out of window is always answered.
    t.send_seg({ACK, P + 50000, L + 1, 20000, pattern(10)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
}

TEST(TcpConnHardening, AckBelowMaxSndWndIsDropped) {
    tcp_harness t;
    t.establish_passive();
    // SND.UNA - MAX.SND.WND = L + 1 - 20000: an ACK below it is dropped (ACK sent).
    t.send_seg({ACK, P + 1, L + 1 - 20001, 20000, pattern(10)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->recv_queued(), 0u);
    EXPECT_EQ(t.ctr.rcv_ack_too_old.get(), 1u);
    // At the edge it is old but acceptable: the data is taken.
    t.send_seg({ACK, P + 1, L + 1 - 20000, 20000, pattern(10)});
    t.expect_seg({ACK, L + 1, P + 11, 9990});
}

}  // namespace
}  // namespace ferry::net

namespace ferry::net {
namespace {

using namespace test;

// RFC 5961 in every synchronized state, table-driven: the harness builds the
// state, then one segment; what must come out and where the state goes.
class TcpConnEveryState : public testing::TestWithParam<tcp_state> {};

std::string state_param_name(const testing::TestParamInfo<tcp_state> &i) {
    return name(i.param);
}

TEST_P(TcpConnEveryState, RstAtRcvNxtCloses) {
    if (GetParam() == tcp_state::time_wait) GTEST_SKIP() << "RFC 1337: see ResetInTimeWaitIsIgnoredRfc1337";
    tcp_harness t;
    t.enter(GetParam());
    t.send_seg({tcp_flag::rst, t.conn->rcv().nxt.value(), 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), GetParam() == tcp_state::syn_received
                                          ? tcp_close_reason::refused
                                          : tcp_close_reason::reset);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    t.expect_nothing();
}

TEST_P(TcpConnEveryState, RstInWindowGetsChallengeAck) {
    if (GetParam() == tcp_state::time_wait) GTEST_SKIP() << "RFC 1337: see ResetInTimeWaitIsIgnoredRfc1337";
    tcp_harness t;
    t.enter(GetParam());
    const uint32_t rcv_nxt = t.conn->rcv().nxt.value();
    const uint32_t snd_max = t.conn->snd().max.value();
    const uint16_t win = static_cast<uint16_t>(t.conn->rcv_wnd());
    t.send_seg({tcp_flag::rst, rcv_nxt + 1, 0, 0});
    t.expect_seg({tcp_flag::ack, snd_max, rcv_nxt, win});
    EXPECT_EQ(t.conn->state(), GetParam());
    EXPECT_EQ(t.ctr.challenge_acks.get(), 1u);
}

TEST_P(TcpConnEveryState, SynGetsChallengeAck) {
    tcp_harness t;
    t.enter(GetParam());
    const uint32_t rcv_nxt = t.conn->rcv().nxt.value();
    const uint32_t snd_max = t.conn->snd().max.value();
    const uint16_t win = static_cast<uint16_t>(t.conn->rcv_wnd());
    t.send_seg({tcp_flag::syn, rcv_nxt, 0, 20000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({tcp_flag::ack, snd_max, rcv_nxt, win});
    EXPECT_EQ(t.conn->state(), GetParam());
}

TEST_P(TcpConnEveryState, RstOutsideWindowIgnored) {
    tcp_harness t;
    t.enter(GetParam());
    t.send_seg({tcp_flag::rst, t.conn->rcv().nxt.value() + 100000, 0, 0});
    t.expect_nothing();
    EXPECT_EQ(t.conn->state(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Synchronized, TcpConnEveryState,
                         testing::Values(tcp_state::syn_received, tcp_state::established,
                                         tcp_state::fin_wait_1, tcp_state::fin_wait_2,
                                         tcp_state::close_wait, tcp_state::closing,
                                         tcp_state::last_ack, tcp_state::time_wait),
                         state_param_name);

}  // namespace
}  // namespace ferry::net
