// Scripted segment tests for tcp_conn: handshakes, data transfer, FIN paths,
// TIME-WAIT (layer 1); timers (layer 2); RST/SYN/ACK hardening (layer 3).
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

// Fixed storage, no allocation: the footprint the header documents.
static_assert(sizeof(tcp_conn) < 10 * 1024);

// ---- Layer 1: handshakes -------------------------------------------------

TEST(TcpConnHandshake, PassiveOpen) {
    tcp_harness t;
    t.create();
    std::vector<std::pair<tcp_state, tcp_state>> trace;
    t.conn->set_trace(
        [](void *ctx, tcp_state a, tcp_state b) {
            static_cast<std::vector<std::pair<tcp_state, tcp_state>> *>(ctx)->emplace_back(a, b);
        },
        &trace);
    tcp_repr syn;
    syn.src_port = t.peer_port;
    syn.dst_port = t.local_port;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = 1200;
    ASSERT_TRUE(t.conn->open_passive(syn, t.now));
    EXPECT_EQ(t.conn->state(), tcp_state::syn_received);
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->rtx_deadline(), 1 * sec);
    t.now = 10 * ms;
    t.send_seg({ACK, P + 1, L + 1, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    EXPECT_EQ(t.conn->take_events() & tcp_event::connected, tcp_event::connected);
    EXPECT_EQ(t.conn->snd_mss(), 1000);  // min(1200, ours)
    EXPECT_EQ(t.conn->snd().wnd, 20000u);
    EXPECT_EQ(t.conn->rtx_deadline(), tcp_conn::never);
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 10 * ms);  // the SYN-ACK was sent once
    t.expect_nothing();
    ASSERT_EQ(trace.size(), 2u);
    EXPECT_EQ(trace[0].second, tcp_state::syn_received);
    EXPECT_EQ(trace[1].second, tcp_state::established);
    EXPECT_EQ(t.ctr.conn_established.get(), 1u);
    EXPECT_EQ(std::string(name(tcp_state::syn_received)), "syn_received");
    EXPECT_EQ(std::string(name(tcp_state::time_wait)), "time_wait");
}

TEST(TcpConnHandshake, PassiveOpenRefusesNonSyn) {
    tcp_harness t;
    t.create();
    tcp_repr h;
    h.flags = ACK;
    EXPECT_FALSE(t.conn->open_passive(h, 0));
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    t.expect_nothing();
}

TEST(TcpConnHandshake, ActiveOpen) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(t.now));
    EXPECT_EQ(t.conn->state(), tcp_state::syn_sent);
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_FALSE(t.conn->open_active(t.now));
    t.now = 5 * ms;
    t.send_seg({SYN | ACK, P, L + 1, 30000, {}, tcp_harness::mss_opt(800)});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->snd_mss(), 800);
    EXPECT_EQ(t.conn->snd().wnd, 30000u);
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 5 * ms);
    EXPECT_EQ(t.conn->take_events() & tcp_event::connected, tcp_event::connected);
}

TEST(TcpConnHandshake, ActiveOpenSendsQueuedDataOnEstablished) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(t.now));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.app_send(pattern(300)), 300u);
    t.expect_nothing();  // not before ESTABLISHED
    t.send_seg({SYN | ACK, P, L + 1, 30000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(300)});
}

TEST(TcpConnHandshake, SynSentBadAckSendsReset) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(t.now));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    // "If SEG.ACK =< ISS or SEG.ACK > SND.NXT, send a reset <SEQ=SEG.ACK><CTL=RST>"
    t.send_seg({SYN | ACK, P, L + 7, 30000});
    t.expect_seg({RST, L + 7, 0, 0});
    t.send_seg({SYN | ACK, P, L, 30000});
    t.expect_seg({RST, L, 0, 0});
    // With RST set: dropped silently.
    t.send_seg({RST | ACK, P, L + 7, 0});
    t.expect_nothing();
    EXPECT_EQ(t.conn->state(), tcp_state::syn_sent);
    EXPECT_EQ(t.ctr.rcv_bad_ack_syn_sent.get(), 3u);
}

TEST(TcpConnHandshake, SynSentResetRefuses) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(t.now));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.send_seg({RST, 0, 0, 0});  // no ACK: dropped
    EXPECT_EQ(t.conn->state(), tcp_state::syn_sent);
    t.send_seg({RST | ACK, 0, L + 1, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::refused);
    EXPECT_EQ(t.conn->take_events() & tcp_event::closed, tcp_event::closed);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
    t.expect_nothing();
}

TEST(TcpConnHandshake, SynReceivedBadAckSendsReset) {
    tcp_harness t;
    t.create();
    tcp_repr syn;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    ASSERT_TRUE(t.conn->open_passive(syn, 0));
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->snd_mss(), 536);  // no MSS option: RFC 9293 §3.7.1 default
    t.send_seg({ACK, P + 1, L + 5, 20000});
    t.expect_seg({RST, L + 5, 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::syn_received);
    // The peer retransmits its SYN: our SYN-ACK again.
    t.send_seg({SYN, P, 0, 20000});
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
}

TEST(TcpConnHandshake, SimultaneousOpen) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(t.now));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    // Their SYN crosses ours: SYN-RECEIVED, SYN-ACK with our ISS.
    t.send_seg({SYN, P, 0, 20000, {}, tcp_harness::mss_opt(1000)});
    EXPECT_EQ(t.conn->state(), tcp_state::syn_received);
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    // Their SYN-ACK: its SYN is old (unacceptable): an ACK in reply.
    t.send_seg({SYN | ACK, P, L + 1, 20000, {}, tcp_harness::mss_opt(1000)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->state(), tcp_state::syn_received);
    // Their ACK of our SYN-ACK completes it.
    t.send_seg({ACK, P + 1, L + 1, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    t.expect_nothing();
}

// ---- Layer 1: data transfer ----------------------------------------------

TEST(TcpConnData, ReceiveInOrder) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK | PSH, P + 1, L + 1, 20000, pattern(100)});
    EXPECT_EQ(t.conn->take_events() & tcp_event::readable, tcp_event::readable);
    // No delayed ACK in this config: the window shrinks by what is queued.
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(50, 100)});
    t.expect_seg({ACK, L + 1, P + 151, 9850});
    EXPECT_EQ(t.conn->recv_queued(), 150u);
    EXPECT_EQ(t.app_recv(), pattern(150));
    // 150 bytes read: less than an MSS, no window update (SWS avoidance).
    t.expect_nothing();
    EXPECT_EQ(t.conn->rcv().nxt.value(), P + 151);
}

TEST(TcpConnData, DuplicateAndPartiallyOldSegments) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    // Entirely old: "not acceptable": ACK, dropped.
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100)});
    t.expect_seg({ACK, L + 1, P + 101, 9900});
    EXPECT_EQ(t.ctr.rcv_unacceptable.get(), 1u);
    // Overlapping: the new part is taken.
    t.send_seg({ACK, P + 51, L + 1, 20000, pattern(100, 50)});
    t.expect_seg({ACK, L + 1, P + 151, 9850});
    EXPECT_EQ(t.app_recv(), pattern(150));
}

TEST(TcpConnData, ReceiveTrimsToWindow) {
    tcp_harness t;
    t.cfg.rcv_buf = 1000;
    t.create();
    tcp_repr syn;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(syn, 0));
    t.expect_seg({SYN | ACK, L, P + 1, 1000, {}, tcp_harness::mss_opt(1000)});
    t.send_seg({ACK, P + 1, L + 1, 20000});
    // 1200 bytes and a FIN into a 1000-byte window: 1000 taken, FIN dropped.
    t.send_seg({ACK | FIN, P + 1, L + 1, 20000, pattern(1200)});
    t.expect_seg({ACK, L + 1, P + 1001, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    // Zero window: data is unacceptable.
    t.send_seg({ACK, P + 1001, L + 1, 20000, pattern(1)});
    t.expect_seg({ACK, L + 1, P + 1001, 0});
    // Reading opens the window: a window update.
    EXPECT_EQ(t.app_recv().size(), 1000u);
    t.expect_seg({ACK, L + 1, P + 1001, 1000});
    EXPECT_EQ(t.ctr.window_updates.get(), 1u);
}

// Issue 17: a pure window update goes to a peer that is sending full-sized
// segments, or whose known window fell below half the new one; a peer whose
// last segment was short (a keep-alive request or response) learns the window
// with the next segment. Before, every read that moved the right edge by an
// MSS sent one (~0.15 frames per request on a keep-alive origin leg).
TEST(TcpConnData, WindowUpdatesGoToAStreamingPeerOrOneNearTheEdge) {
    tcp_harness t;
    t.establish_passive();
    uint32_t at = P + 1, win = 10000;
    for (int i = 0; i < 4; ++i) {  // short segments: 1200 octets unread
        t.send_seg({ACK | PSH, at, L + 1, 20000, pattern(300)});
        at += 300;
        win -= 300;
        t.expect_seg({ACK, L + 1, at, static_cast<uint16_t>(win)});
    }
    EXPECT_EQ(t.app_recv().size(), 1200u);
    t.expect_nothing();  // 8800 known of 10000, and the peer is not streaming
    EXPECT_EQ(t.ctr.window_updates.get(), 0u);
    // A full-sized segment: the peer is mid-stream, and is told at once.
    t.send_seg({ACK, at, L + 1, 20000, pattern(1000)});
    at += 1000;
    t.expect_seg({ACK, L + 1, at, 9000});
    EXPECT_EQ(t.app_recv().size(), 1000u);
    t.expect_seg({ACK, L + 1, at, 10000});
    EXPECT_EQ(t.ctr.window_updates.get(), 1u);
    // Short segments down to less than half the window: told at once.
    win = 10000;
    for (int i = 0; i < 6; ++i) {
        t.send_seg({ACK | PSH, at, L + 1, 20000, pattern(900)});
        at += 900;
        win -= 900;
        t.expect_seg({ACK, L + 1, at, static_cast<uint16_t>(win)});
    }
    EXPECT_EQ(t.app_recv().size(), 5400u);
    t.expect_seg({ACK, L + 1, at, 10000});
    EXPECT_EQ(t.ctr.window_updates.get(), 2u);
}

TEST(TcpConnData, SendSegmentsAndAck) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(2500)), 2500u);
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 232)});  // 1000 % 256 = 232
    t.expect_seg({ACK | PSH, L + 2001, P + 1, 10000, pattern(500, 208)});
    EXPECT_EQ(t.conn->snd().nxt.value(), L + 2501);
    EXPECT_EQ(t.conn->rtx_deadline(), 200 * ms);
    t.now = 50 * ms;
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    EXPECT_EQ(t.conn->snd().una.value(), L + 1001);
    EXPECT_EQ(t.conn->send_queued(), 1500u);
    EXPECT_EQ(t.conn->take_events() & tcp_event::writable, tcp_event::writable);
    // RTT 50 ms: RTO = 50 + max(G, 4*25) = 150 -> min 200 ms; restarted.
    EXPECT_EQ(t.conn->rtt().rto_ns(), 200 * ms);
    EXPECT_EQ(t.conn->rtx_deadline(), 250 * ms);
    t.send_seg({ACK, P + 1, L + 2501, 20000});
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.conn->rtx_deadline(), tcp_conn::never);
    t.expect_nothing();
}

TEST(TcpConnData, SendRespectsPeerWindow) {
    tcp_harness t;
    t.establish_passive(1500);
    EXPECT_EQ(t.app_send(pattern(3000)), 3000u);
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});
    // The 500 octets the window has left wait for the ACK: a full segment
    // or nothing while data is in flight (sender SWS avoidance).
    t.expect_nothing();
    EXPECT_GE(t.ctr.sws_held.get(), 1u);
    // The ACK opens the window again (SND.WL1/WL2 rule).
    t.send_seg({ACK, P + 1, L + 1001, 1500});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 232)});  // 1000 % 256
    t.expect_nothing();
    t.send_seg({ACK, P + 1, L + 2001, 1500});
    t.expect_seg({ACK | PSH, L + 2001, P + 1, 10000, pattern(1000, 208)});
}

TEST(TcpConnData, AWindowSmallerThanASegmentIsUsedWhenNothingIsInFlight) {
    tcp_harness t;
    t.establish_passive(500);
    EXPECT_EQ(t.app_send(pattern(1200)), 1200u);
    // Nothing would open the window otherwise (no ACK is on its way).
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(500)});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, L + 501, 500});
    t.expect_seg({ACK, L + 501, P + 1, 10000, pattern(500, 500 % 256)});
    t.send_seg({ACK, P + 1, L + 1001, 500});
    t.expect_seg({ACK | PSH, L + 1001, P + 1, 10000, pattern(200, 1000 % 256)});
}

TEST(TcpConnData, NewDataWaitsForAWholeSegmentOfCongestionWindow) {
    tcp_harness t;
    t.establish_passive(60000);  // the peer's window is not the limit
    EXPECT_EQ(t.app_send(pattern(15000)), 15000u);
    for (uint32_t i = 0; i < 10; ++i) {  // IW 10 (RFC 6928)
        t.expect_seg({ACK, L + 1 + static_cast<int32_t>(1000 * i), P + 1, 10000,
                      pattern(1000, static_cast<uint8_t>(1000 * i % 256))});
    }
    t.expect_nothing();
    // 2500 octets acknowledged: slow start adds at most 2 SMSS (RFC 5681
    // §3.1, L = 2), so cwnd is 12000 with 7500 in flight. Four full segments
    // fit; the 500 octets cwnd leaves wait (they went as a segment of their
    // own before), though 1000 more are queued.
    t.send_seg({ACK, P + 1, L + 2501, 60000});
    for (uint32_t i = 10; i < 14; ++i) {
        t.expect_seg({ACK, L + 1 + static_cast<int32_t>(1000 * i), P + 1, 10000,
                      pattern(1000, static_cast<uint8_t>(1000 * i % 256))});
    }
    t.expect_nothing();
    EXPECT_GE(t.ctr.sws_held.get(), 1u);
    // Everything acknowledged: the last segment goes whole.
    t.send_seg({ACK, P + 1, L + 14001, 60000});
    t.expect_seg({ACK | PSH, L + 14001, P + 1, 10000, pattern(1000, 14000 % 256)});
    t.expect_nothing();
}

TEST(TcpConnData, AckForUnsentDataIsAnsweredAndDropped) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK, P + 1, L + 100, 20000, pattern(10)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->recv_queued(), 0u);
    EXPECT_EQ(t.ctr.rcv_ack_too_new.get(), 1u);
}

TEST(TcpConnData, SegmentWithoutAckIsDropped) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({0, P + 1, 0, 20000, pattern(10)});
    t.expect_nothing();
    EXPECT_EQ(t.conn->recv_queued(), 0u);
    EXPECT_EQ(t.ctr.rcv_no_ack.get(), 1u);
}

// ---- Layer 1: closing ----------------------------------------------------

TEST(TcpConnClose, PassiveClose) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK | FIN, P + 1, L + 1, 20000, pattern(10)});
    EXPECT_EQ(t.conn->state(), tcp_state::close_wait);
    // The FIN takes a sequence number but no buffer: the right edge stays
    // where it was (RFC 9293 §3.8.6.2.2), so the window reads one less.
    t.expect_seg({ACK, L + 1, P + 12, 9989});
    EXPECT_EQ(t.conn->take_events() & (tcp_event::peer_fin | tcp_event::readable),
              tcp_event::peer_fin | tcp_event::readable);
    EXPECT_EQ(t.app_recv(), pattern(10));
    // Half-close: we can still send.
    EXPECT_EQ(t.app_send(pattern(20)), 20u);
    t.expect_seg({ACK | PSH, L + 1, P + 12, 9989, pattern(20)});
    t.conn->close(t.now);
    EXPECT_EQ(t.conn->state(), tcp_state::last_ack);
    t.expect_seg({ACK | FIN, L + 21, P + 12, 9989});
    t.send_seg({ACK, P + 12, L + 21, 20000});  // data acked, not the FIN
    EXPECT_EQ(t.conn->state(), tcp_state::last_ack);
    t.send_seg({ACK, P + 12, L + 22, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::normal);
    t.expect_nothing();
}

TEST(TcpConnClose, ActiveCloseThroughTimeWait) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(100)), 100u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(100)});
    t.conn->close(t.now);
    EXPECT_EQ(t.conn->state(), tcp_state::fin_wait_1);
    t.expect_seg({ACK | FIN, L + 101, P + 1, 10000});
    EXPECT_EQ(t.app_send(pattern(1)), 0u);  // no SEND after CLOSE
    t.send_seg({ACK, P + 1, L + 102, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::fin_wait_2);
    // Half-closed: the peer still sends.
    t.send_seg({ACK, P + 1, L + 102, 20000, pattern(30)});
    t.expect_seg({ACK, L + 102, P + 31, 9970});
    t.now = 1 * sec;
    t.send_seg({ACK | FIN, P + 31, L + 102, 20000});
    t.expect_seg({ACK, L + 102, P + 32, 9969});
    EXPECT_EQ(t.conn->state(), tcp_state::time_wait);
    EXPECT_EQ(t.conn->time_wait_deadline(), 61 * sec);
    EXPECT_EQ(t.conn->next_deadline(), 61 * sec);
    EXPECT_EQ(t.ctr.time_wait_entered.get(), 1u);
    // A retransmitted FIN is acknowledged and restarts the 2 MSL timer.
    t.now = 2 * sec;
    t.send_seg({ACK | FIN, P + 31, L + 102, 20000});
    t.expect_seg({ACK, L + 102, P + 32, 9969});
    EXPECT_EQ(t.conn->time_wait_deadline(), 62 * sec);
    t.advance_to(62 * sec - 1);
    EXPECT_EQ(t.conn->state(), tcp_state::time_wait);
    t.advance_to(62 * sec);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::normal);
    EXPECT_EQ(t.app_recv(), pattern(30));  // an orderly close keeps what was received
    t.expect_nothing();
}

TEST(TcpConnClose, FinAndAckTogetherGoStraightToTimeWait) {
    tcp_harness t;
    t.establish_passive();
    t.conn->close(t.now);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
    t.send_seg({ACK | FIN, P + 1, L + 2, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::time_wait);
    t.expect_seg({ACK, L + 2, P + 2, 9999});
}

TEST(TcpConnClose, SimultaneousClose) {
    tcp_harness t;
    t.establish_passive();
    t.conn->close(t.now);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
    // Their FIN crosses ours (it does not acknowledge our FIN): CLOSING.
    t.send_seg({ACK | FIN, P + 1, L + 1, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::closing);
    t.expect_seg({ACK, L + 2, P + 2, 9999});
    t.send_seg({ACK, P + 2, L + 2, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::time_wait);
    t.expect_nothing();
    t.advance(60 * sec);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
}

TEST(TcpConnClose, CloseInSynSentJustCloses) {
    tcp_harness t;
    t.create();
    ASSERT_TRUE(t.conn->open_active(0));
    t.expect_seg({SYN, L, 0, 10000, {}, tcp_harness::mss_opt(1000)});
    t.conn->close(0);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    t.expect_nothing();
}

TEST(TcpConnClose, CloseInSynReceivedSendsFinAfterEstablished) {
    tcp_harness t;
    t.create();
    tcp_repr syn;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(syn, 0));
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    t.conn->close(0);
    t.expect_nothing();
    t.send_seg({ACK, P + 1, L + 1, 20000});
    EXPECT_EQ(t.conn->state(), tcp_state::fin_wait_1);
    t.expect_seg({ACK | FIN, L + 1, P + 1, 10000});
}

TEST(TcpConnClose, AbortSendsReset) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(10)), 10u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(10)});
    t.conn->abort(t.now);
    t.expect_seg({RST, L + 11, 0, 0});
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::aborted);
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.ctr.resets_sent.get(), 1u);
    // Segments for a closed connection are only counted.
    t.send_seg({ACK, P + 1, L + 11, 20000});
    t.expect_nothing();
    EXPECT_EQ(t.ctr.rcv_in_closed.get(), 1u);
}

}  // namespace
}  // namespace ferry::net
