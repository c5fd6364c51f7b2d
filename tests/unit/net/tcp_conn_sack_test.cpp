// SACK-based loss recovery (RFC 6675) as a sender: the scoreboard on its own,
// scripted segment tests (which holes go out, in which order, when recovery
// ends, what an RTO does, which blocks are refused), and two tcp_conns over a
// lossy, reordering in-memory link with and without SACK.
#include <gtest/gtest.h>

#include <cstdio>
#include <queue>
#include <random>
#include <vector>

#include "ferry/net/tcp_conn.h"
#include "tcp_conn_harness.h"

namespace ferry::net {
namespace {

using namespace test;
constexpr uint8_t SYN = tcp_flag::syn;
constexpr uint8_t ACK = tcp_flag::ack;
constexpr uint8_t FIN = tcp_flag::fin;
constexpr uint8_t PSH = tcp_flag::psh;
constexpr uint32_t L = tcp_harness::local_iss;
constexpr uint32_t P = tcp_harness::peer_iss;

tcp_options sack(std::initializer_list<std::pair<uint32_t, uint32_t>> blocks) {
    tcp_options o;
    for (auto [l, r] : blocks) {
        o.sack[o.sack_count++] = tcp_sack_block{seq_num(l), seq_num(r)};
    }
    return o;
}

// The first octet of data segment k (1-based) of 1000 octets.
constexpr uint32_t S(uint32_t k) {
    return L + 1 + 1000 * (k - 1);
}

// Passive open with SACK-permitted on both SYNs (and an MSS of `peer_mss`
// from the peer), then ESTABLISHED.
// RFC 6675 on its own: the scripts below time nothing, so RACK (RFC 8985),
// which marks losses by time, is off here; tcp_rack_test.cpp scripts it.
void establish_sack(tcp_harness &t, uint16_t peer_mss = 1000, bool peer_sack = true,
                    bool rack = false, uint64_t handshake_rtt = 0) {
    t.cfg.sack = true;
    t.cfg.rack = rack;
    t.create();
    tcp_repr syn;
    syn.src_port = tcp_harness::peer_port;
    syn.dst_port = tcp_harness::local_port;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = 20000;
    syn.options.mss = peer_mss;
    syn.options.sack_permitted = peer_sack;
    ASSERT_TRUE(t.conn->open_passive(syn, t.now));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.sack_permitted = peer_sack;
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, want});
    t.now += handshake_rtt;
    t.send_seg({ACK, P + 1, L + 1, 20000});
    ASSERT_EQ(t.conn->state(), tcp_state::established);
    ASSERT_EQ(t.conn->sack_enabled(), peer_sack);
    (void)t.conn->take_events();
}

// Sends `n` octets and checks that segments 1.. of 1000 octets go out.
void send_and_expect(tcp_harness &t, uint32_t n, uint32_t segments) {
    ASSERT_EQ(t.app_send(pattern(n)), n);
    for (uint32_t k = 1; k <= segments; ++k) {
        const bool last = 1000 * k >= n;
        t.expect_seg({static_cast<uint8_t>(ACK | (last ? PSH : 0)), S(k), P + 1, 10000,
                      pattern(1000, static_cast<uint8_t>(1000 * (k - 1)))});
    }
    t.expect_nothing();
}

// Data segment k as the connection retransmits it (no PSH).
seg rtx(uint32_t k) {
    return {ACK, S(k), P + 1, 10000, pattern(1000, static_cast<uint8_t>(1000 * (k - 1)))};
}

// ---- The scoreboard on its own ---------------------------------------------

using sb = tcp_sack_scoreboard;

std::vector<std::pair<uint32_t, uint32_t>> ranges_of(const sb &b) {
    std::vector<std::pair<uint32_t, uint32_t>> v;
    for (const sb::range &r : b.ranges()) {
        v.emplace_back(r.left.value(), r.right.value());
    }
    return v;
}

using rv = std::vector<std::pair<uint32_t, uint32_t>>;

TEST(TcpSackScoreboard, MergesAndCountsWhatIsNew) {
    sb b;
    bool of = false;
    EXPECT_EQ(b.add(seq_num(300), seq_num(400), of), 100u);
    EXPECT_EQ(b.add(seq_num(100), seq_num(200), of), 100u);
    EXPECT_EQ(b.add(seq_num(500), seq_num(600), of), 100u);
    EXPECT_EQ(ranges_of(b), (rv{{100, 200}, {300, 400}, {500, 600}}));
    EXPECT_EQ(b.add(seq_num(300), seq_num(400), of), 0u);   // nothing new
    EXPECT_EQ(b.add(seq_num(350), seq_num(450), of), 50u);  // overlaps the end
    EXPECT_EQ(b.add(seq_num(450), seq_num(500), of), 50u);  // touches both: one range
    EXPECT_EQ(ranges_of(b), (rv{{100, 200}, {300, 600}}));
    EXPECT_EQ(b.add(seq_num(50), seq_num(700), of), 650u - 400u);  // covers everything
    EXPECT_EQ(ranges_of(b), (rv{{50, 700}}));
    EXPECT_FALSE(of);
    EXPECT_EQ(b.sacked_bytes(), 650u);
    EXPECT_TRUE(b.is_sacked(seq_num(50)));
    EXPECT_FALSE(b.is_sacked(seq_num(700)));
}

TEST(TcpSackScoreboard, AckToForgetsBelowUna) {
    sb b;
    bool of = false;
    (void)b.add(seq_num(100), seq_num(200), of);
    (void)b.add(seq_num(300), seq_num(400), of);
    b.ack_to(seq_num(100));  // the peer's RCV.NXT at a range it held: gone
    EXPECT_EQ(ranges_of(b), (rv{{300, 400}}));
    (void)b.add(seq_num(500), seq_num(600), of);
    b.ack_to(seq_num(350));  // ... or inside one
    EXPECT_EQ(ranges_of(b), (rv{{500, 600}}));
    b.ack_to(seq_num(450));
    EXPECT_EQ(ranges_of(b), (rv{{500, 600}}));
    b.ack_to(seq_num(1000));
    EXPECT_TRUE(b.empty());
}

TEST(TcpSackScoreboard, AcrossTheWrap) {
    sb b;
    bool of = false;
    const seq_num base(0xffffff00u);
    EXPECT_EQ(b.add(base + 0x180, base + 0x200, of), 0x80u);
    EXPECT_EQ(b.add(base + 0x80, base + 0x100, of), 0x80u);
    EXPECT_EQ(b.add(base + 0xc0, base + 0x190, of), 0x80u);  // [0x100, 0x180) was new
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b.ranges()[0].left, base + 0x80);
    EXPECT_EQ(b.ranges()[0].right, base + 0x200);
    // [base, base+0x80) has 0x180 > 2*100 octets SACKed above: lost, not in
    // pipe; [base+0x200, base+0x300) is.
    EXPECT_FALSE(b.is_lost(base + 0x200, 100));
    EXPECT_TRUE(b.is_lost(base + 0x7f, 100));
    EXPECT_EQ(b.pipe(base, base + 0x300, base, 100), 0x100u);
}

TEST(TcpSackScoreboard, OverflowForgetsTheHighest) {
    sb b;
    bool of = false;
    for (uint32_t i = 0; i < sb::capacity; ++i) {
        EXPECT_EQ(b.add(seq_num(1000 + 20 * i), seq_num(1010 + 20 * i), of), 10u);
    }
    EXPECT_FALSE(of);
    const uint32_t top = 1000 + 20 * (sb::capacity - 1);
    // A new highest range is the one forgotten.
    EXPECT_EQ(b.add(seq_num(top + 100), seq_num(top + 110), of), 0u);
    EXPECT_TRUE(of);
    EXPECT_EQ(b.highest(), seq_num(top + 10));
    // A new range lower down pushes the highest out.
    of = false;
    EXPECT_EQ(b.add(seq_num(10), seq_num(20), of), 10u);
    EXPECT_TRUE(of);
    EXPECT_EQ(b.size(), sb::capacity);
    EXPECT_EQ(b.ranges()[0].left, seq_num(10));
    EXPECT_EQ(b.highest(), seq_num(top - 20 + 10));
    // Merging needs no room.
    of = false;
    EXPECT_EQ(b.add(seq_num(1010), seq_num(1020), of), 10u);
    EXPECT_FALSE(of);
    EXPECT_EQ(b.size(), sb::capacity - 1);
}

// IsLost: DupThresh (3) ranges above, or more than 2*SMSS octets above.
TEST(TcpSackScoreboard, IsLostPipeAndNextHole) {
    const uint32_t smss = 100;
    sb b;
    bool of = false;
    // una 0, high_data 1000. SACKed: [200,300) [400,450) [600,700).
    (void)b.add(seq_num(200), seq_num(300), of);
    (void)b.add(seq_num(400), seq_num(450), of);
    (void)b.add(seq_num(600), seq_num(700), of);
    EXPECT_TRUE(b.is_lost(seq_num(0), smss));     // 3 ranges above
    EXPECT_TRUE(b.is_lost(seq_num(199), smss));   // the same hole
    EXPECT_FALSE(b.is_lost(seq_num(250), smss));  // SACKed
    EXPECT_FALSE(b.is_lost(seq_num(300), smss));  // 2 ranges, 150 octets above
    EXPECT_FALSE(b.is_lost(seq_num(700), smss));  // nothing above
    // pipe: [0,200) lost; [300,400), [450,600), [700,1000) not: 100 + 150 + 300.
    EXPECT_EQ(b.pipe(seq_num(0), seq_num(1000), seq_num(0), smss), 550u);
    // With [0,150) retransmitted: + 150.
    EXPECT_EQ(b.pipe(seq_num(0), seq_num(1000), seq_num(150), smss), 700u);
    // With [0,200) and [300,350) (a hole not lost, rule 3) retransmitted:
    // the lost octets count once, the others twice.
    EXPECT_EQ(b.pipe(seq_num(0), seq_num(1000), seq_num(350), smss), 550u + 200u + 50u);
    seq_num s;
    seq_num e;
    ASSERT_TRUE(b.next_hole(seq_num(0), seq_num(0), true, smss, smss, s, e));
    EXPECT_EQ(s, seq_num(0));
    EXPECT_EQ(e, seq_num(100));  // one SMSS
    ASSERT_TRUE(b.next_hole(seq_num(0), seq_num(150), true, smss, smss, s, e));
    EXPECT_EQ(s, seq_num(150));
    EXPECT_EQ(e, seq_num(200));  // up to the SACKed octet
    EXPECT_FALSE(b.next_hole(seq_num(0), seq_num(200), true, smss, smss, s, e));
    ASSERT_TRUE(b.next_hole(seq_num(0), seq_num(200), false, smss, smss, s, e));  // rule 3
    EXPECT_EQ(s, seq_num(300));
    EXPECT_EQ(e, seq_num(400));
    ASSERT_TRUE(b.next_hole(seq_num(0), seq_num(400), false, smss, smss, s, e));
    EXPECT_EQ(s, seq_num(450));
    EXPECT_EQ(e, seq_num(550));
    EXPECT_FALSE(b.next_hole(seq_num(0), seq_num(600), false, smss, smss, s, e));  // 1.b
    // More than 2*SMSS octets above make a single range enough.
    sb one;
    (void)one.add(seq_num(100), seq_num(301), of);
    EXPECT_TRUE(one.is_lost(seq_num(0), smss));
    sb exact;
    (void)exact.add(seq_num(100), seq_num(300), of);
    EXPECT_FALSE(exact.is_lost(seq_num(0), smss));
    EXPECT_EQ(b.skip_sacked(seq_num(250)), seq_num(300));
    EXPECT_EQ(b.skip_sacked(seq_num(300)), seq_num(300));
    EXPECT_EQ(b.unsacked_run(seq_num(350), 1000), 50u);
    EXPECT_EQ(b.unsacked_run(seq_num(700), 1000), 1000u);
}

// ---- The tcp_cc hook -----------------------------------------------------------

TEST(TcpCcSack, RecoveryWithoutInflation) {
    cc_config c;
    c.algorithm = cc_algorithm::new_reno;
    c.smss = 1000;
    c.initial_window_segments = 10;
    tcp_cc cc(c, seq_num(0));
    ASSERT_TRUE(cc.on_sack_recovery(seq_num(1), seq_num(10001), 10000));
    EXPECT_TRUE(cc.in_sack_recovery());
    EXPECT_EQ(cc.ssthresh(), 5000u);
    EXPECT_EQ(cc.cwnd(), 5000u);  // RFC 6675 (4.2): no + 3*SMSS
    EXPECT_EQ(cc.recover(), seq_num(10000));
    EXPECT_FALSE(cc.on_sack_recovery(seq_num(1), seq_num(10001), 10000));  // already in it
    EXPECT_EQ(cc.on_dup_ack(seq_num(1), seq_num(10001), 10000), cc_action::none);
    EXPECT_EQ(cc.cwnd(), 5000u);  // no inflation
    // A partial ACK asks for nothing and leaves cwnd.
    EXPECT_EQ(cc.on_ack(cc_ack{.ack = seq_num(4001), .bytes_acked = 4000, .flight_size = 6000}),
              cc_action::none);
    EXPECT_EQ(cc.cwnd(), 5000u);
    EXPECT_TRUE(cc.in_recovery());
    // The full ACK ends it: cwnd = min(ssthresh, FlightSize + SMSS).
    EXPECT_EQ(cc.on_ack(cc_ack{.ack = seq_num(10001), .bytes_acked = 6000, .flight_size = 0}),
              cc_action::none);
    EXPECT_FALSE(cc.in_recovery());
    EXPECT_FALSE(cc.in_sack_recovery());
    EXPECT_EQ(cc.cwnd(), 2000u);
    // After an RTO, no episode before SND.UNA passes the RecoveryPoint (§5.1).
    cc.on_rto(seq_num(20001), 10000, false);
    EXPECT_FALSE(cc.on_sack_recovery(seq_num(15001), seq_num(25001), 10000));
    EXPECT_FALSE(cc.on_sack_recovery(seq_num(20000), seq_num(25001), 10000));
    EXPECT_TRUE(cc.on_sack_recovery(seq_num(20001), seq_num(25001), 5000));
    cc.on_rto(seq_num(25001), 5000, false);
    EXPECT_FALSE(cc.in_recovery());
    EXPECT_FALSE(cc.in_sack_recovery());
}

// ---- Scripted: which segments go out -----------------------------------------

// 10 segments in flight; 1 and 2 are lost and the peer SACKs 3..10 as they
// arrive. Exactly the two holes are retransmitted, once each, in order.
TEST(TcpConnSack, OnlyTheHolesAreRetransmittedOnceInOrder) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(4)}})});
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(5)}})});
    t.expect_nothing();  // DupAcks 2, 2000 octets SACKed: not yet lost
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->sack_dup_acks(), 2u);
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(6)}})});
    // Recovery: ssthresh = cwnd = FlightSize / 2; segment 1 at once (4.3).
    t.expect_seg(rtx(1));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 5000u);
    EXPECT_EQ(t.conn->cc().cwnd(), 5000u);
    EXPECT_EQ(t.conn->sack_high_rxt(), seq_num(S(2)));
    // pipe: 1000 retransmitted + [S(6), S(11)) not lost.
    EXPECT_EQ(t.conn->sack_pipe(), 6000u);
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(7)}})});
    t.expect_nothing();  // pipe 5000
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(8)}})});
    t.expect_seg(rtx(2));  // pipe 4000: cwnd - pipe >= SMSS, NextSeg rule 1
    for (uint32_t k = 8; k <= 10; ++k) {
        t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(k + 1)}})});
        t.expect_nothing();  // no hole left above HighRxt, no new data
    }
    EXPECT_EQ(t.conn->sack_pipe(), 2000u);
    // Partial ACK: segment 1 arrived. Still in recovery, nothing to send.
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(11)}})});
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 5000u);
    EXPECT_EQ(t.conn->send_queued(), 9000u);  // SACKed data stays until acknowledged
    // The full ACK ends recovery.
    t.send_seg({ACK, P + 1, S(11), 20000});
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.conn->rtx_deadline(), tcp_conn::never);
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 2u);
    EXPECT_EQ(t.ctr.retransmits.get(), 2u);
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    EXPECT_EQ(t.ctr.sack_blocks_received.get(), 9u);
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
}

// Segments 2, 5 and 8 lost: each hole goes once, lowest first — 2 and 5 as
// lost (rule 1), 8 (which never gets 2*SMSS SACKed above it) by rule 3 once
// nothing else may go.
TEST(TcpConnSack, MultipleHoles) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    t.send_seg({ACK, P + 1, S(2), 20000});  // segment 1
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(4)}})});
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(5)}})});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(6), S(7)}, {S(3), S(5)}})});
    t.expect_seg(rtx(2));                   // DupAcks 3
    EXPECT_EQ(t.conn->cc().cwnd(), 4500u);  // FlightSize 9000 / 2
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(6), S(8)}, {S(3), S(5)}})});
    t.expect_nothing();
    // Segment 9: the hole at 5 now has 2 ranges and 3000 octets above it.
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(9), S(10)}, {S(6), S(8)}, {S(3), S(5)}})});
    t.expect_seg(rtx(5));
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(9), S(11)}, {S(6), S(8)}, {S(3), S(5)}})});
    EXPECT_FALSE(t.conn->sack_scoreboard().is_lost(seq_num(S(8)), 1000));
    t.expect_seg(rtx(8));  // rule 3
    t.expect_nothing();
    // The retransmissions arrive: partial, partial, full.
    t.send_seg({ACK, P + 1, S(5), 20000, {}, sack({{S(6), S(8)}, {S(9), S(11)}})});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(8), 20000, {}, sack({{S(9), S(11)}})});
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    t.send_seg({ACK, P + 1, S(11), 20000});
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.retransmits.get(), 3u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
}

// Holes first, then new data while pipe < cwnd (RFC 6675 (C)); before
// recovery, DupAcks let new data out as SACKs shrink pipe (step 3). Recovery
// ends when the ACK covers RecoveryPoint, with new data still in flight.
// The exit checked is RFC 6582's (cwnd = min(ssthresh, FlightSize + SMSS)),
// so PRR, whose exit is cwnd = ssthresh, is off here (the segments sent are
// the same with it: tcp_conn_prr_script_test.cpp scripts PRR).
TEST(TcpConnSack, HolesThenNewDataAndRecoveryPoint) {
    tcp_harness t;
    t.cfg.prr = false;
    establish_sack(t);
    ASSERT_EQ(t.app_send(pattern(15000)), 15000u);
    for (uint32_t k = 1; k <= 10; ++k) {
        t.expect_seg(
            {ACK, S(k), P + 1, 10000, pattern(1000, static_cast<uint8_t>(1000 * (k - 1)))});
    }
    t.expect_nothing();
    const auto newseg = [](uint32_t k) {
        return seg{static_cast<uint8_t>(ACK | (k == 15 ? PSH : 0)), S(k), P + 1, 10000,
                   pattern(1000, static_cast<uint8_t>(1000 * (k - 1)))};
    };
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(4)}})});
    t.expect_seg(newseg(11));  // step 3: pipe 9000 < cwnd 10000
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(5)}})});
    t.expect_seg(newseg(12));
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(6)}})});
    t.expect_seg(rtx(1));  // recovery: RecoveryPoint = S(13) - 1
    t.expect_nothing();
    EXPECT_EQ(t.conn->cc().cwnd(), 6000u);  // FlightSize 12000 / 2
    EXPECT_EQ(t.conn->cc().recover(), seq_num(S(13) - 1));
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(7)}})});
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(8)}})});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(9)}})});
    t.expect_seg(rtx(2));  // the hole before new data
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(10)}})});
    t.expect_seg(newseg(13));  // then new data (rule 2)
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(11)}})});
    t.expect_seg(newseg(14));
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(12)}})});
    t.expect_seg(newseg(15));
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(13)}})});
    t.expect_nothing();  // nothing left to send
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(13)}})});
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // Just below RecoveryPoint: still recovering.
    t.send_seg({ACK, P + 1, S(13) - 1, 20000});
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // Covering it ends recovery, segments 13..15 still in flight:
    // cwnd = min(ssthresh, FlightSize + SMSS).
    t.send_seg({ACK, P + 1, S(13), 20000});
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 4000u);
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(16), 20000});
    t.expect_nothing();
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 2u);
    EXPECT_EQ(t.ctr.retransmits.get(), 2u);
}

// The peer SACKs 3..10, then reneges (RFC 2018 §8): its cumulative ACK stops
// at 3 and its blocks vanish. The SACKed data was never freed, and the RTO
// resends it from SND.UNA.
TEST(TcpConnSack, RenegingIsSafe) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    for (uint32_t k = 3; k <= 10; ++k) {
        t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(k + 1)}})});
    }
    t.expect_seg(rtx(1));
    t.expect_seg(rtx(2));
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(3), 20000});  // no blocks: reneged
    t.expect_nothing();
    EXPECT_EQ(t.conn->send_queued(), 8000u);  // SND.UNA alone frees
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // RCV.NXT stopped where the peer claimed to hold data: the range is gone.
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    t.advance_to(t.conn->rtx_deadline());
    EXPECT_EQ(t.ctr.rto_fired.get(), 1u);
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    t.expect_seg(rtx(3));  // go back to SND.UNA: once-SACKed data is resent
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(4), 20000});
    t.expect_seg(rtx(4));
    t.expect_seg(rtx(5));
    t.expect_nothing();
}

// RTO in the middle of SACK recovery: recovery ends, the scoreboard is
// cleared, the sender goes back to SND.UNA; what the peer SACKs after that is
// skipped by the go-back, and no new recovery starts before SND.MAX is acked.
TEST(TcpConnSack, RtoDuringRecovery) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    for (uint32_t k = 3; k <= 10; ++k) {
        t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(k + 1)}})});
    }
    t.expect_seg(rtx(1));
    t.expect_seg(rtx(2));
    t.expect_nothing();
    // Both retransmissions are lost.
    t.advance_to(t.conn->rtx_deadline());
    EXPECT_EQ(t.ctr.rto_fired.get(), 1u);
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    EXPECT_EQ(t.conn->cc().cwnd(), 1000u);
    EXPECT_EQ(t.conn->snd().nxt, seq_num(S(2)));
    t.expect_seg(rtx(1));
    t.expect_nothing();
    // Segment 1 arrives; the peer still holds 3..10.
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(11)}})});
    t.expect_seg(rtx(2));
    t.expect_nothing();  // 3..10 are skipped
    EXPECT_EQ(t.conn->snd().nxt, seq_num(S(11)));
    EXPECT_FALSE(t.conn->cc().in_recovery());
    t.send_seg({ACK, P + 1, S(11), 20000});
    t.expect_nothing();
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.ctr.retransmits.get(), 4u);
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 2u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 1u);
}

// After an RTO, duplicate ACKs for data sent before it start no recovery
// (RFC 6675 §5.1): the go-back covers it.
TEST(TcpConnSack, NoRecoveryBeforeTheTimeoutsRecoveryPointIsAcked) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    t.advance_to(t.conn->rtx_deadline());
    t.expect_seg(rtx(1));
    for (uint32_t k = 3; k <= 6; ++k) {
        t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{S(3), S(k + 1)}})});
    }
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 0u);
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(7)}})});
    t.expect_seg(rtx(2));  // the go-back, skipping 3..6
    t.expect_seg(rtx(7));
    t.expect_nothing();
}

// Blocks that are empty, inverted, beyond SND.MAX, at or below SND.UNA (a
// D-SACK), holding SND.UNA or absurdly far are counted and ignored; the
// rest are used. (Each ACK changes the window, so that none is an RFC 5681
// duplicate: only new SACK information counts as a DupAck here.)
TEST(TcpConnSack, InvalidAndOutOfWindowBlocksAreIgnoredAndCounted) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    t.send_seg({ACK, P + 1, S(3), 20000});  // segments 1 and 2
    t.send_seg({ACK,
                P + 1,
                S(3),
                19000,
                {},
                sack({{S(2), S(3)},      // D-SACK: below SND.UNA
                      {S(10), S(12)},    // past SND.MAX
                      {S(5), S(5)},      // empty
                      {S(6), S(5)}})});  // inverted
    t.send_seg({ACK,
                P + 1,
                S(3),
                18000,
                {},
                sack({{S(5) + 0x80000000u, S(6) + 0x80000000u},  // half the space away
                      {S(1), S(4)},                              // straddles SND.UNA
                      {S(3), S(4)}})});                          // holds SND.UNA
    EXPECT_EQ(t.ctr.sack_blocks_received.get(), 7u);
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 7u);
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    EXPECT_EQ(t.conn->sack_dup_acks(), 0u);
    // Valid ones are taken, up to SND.MAX itself.
    t.send_seg({ACK, P + 1, S(3), 18000, {}, sack({{S(10), S(11)}, {S(5), S(6)}})});
    t.expect_nothing();
    EXPECT_EQ(t.ctr.sack_blocks_received.get(), 9u);
    EXPECT_EQ(t.ctr.sack_blocks_invalid.get(), 7u);
    const auto r = t.conn->sack_scoreboard().ranges();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].left, seq_num(S(5)));
    EXPECT_EQ(r[1].right, seq_num(S(11)));
    EXPECT_EQ(t.conn->sack_dup_acks(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 0u);
}

// Three duplicate ACKs without blocks still start SACK recovery (DupThresh).
TEST(TcpConnSack, DupAcksWithoutBlocksStartRecovery) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 5000, 5);
    t.send_seg({ACK, P + 1, S(2), 20000});
    t.send_seg({ACK, P + 1, S(2), 20000});
    t.send_seg({ACK, P + 1, S(2), 20000});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(2), 20000});
    t.expect_seg(rtx(2));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);  // FlightSize 4000 / 2, no inflation
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    t.send_seg({ACK, P + 1, S(6), 20000});
    EXPECT_FALSE(t.conn->cc().in_recovery());
    t.expect_nothing();
}

// A hole shorter than a segment: the retransmission stops at the SACKed
// octet (the peer's blocks need not fall on our segment boundaries).
TEST(TcpConnSack, RetransmissionNeverCoversSackedOctets) {
    tcp_harness t;
    establish_sack(t);
    send_and_expect(t, 10000, 10);
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, sack({{L + 401, S(11)}})});
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(400)});  // IsLost at once
    t.expect_nothing();
    EXPECT_EQ(t.ctr.sack_retransmits.get(), 1u);
}

// Without SACK-permitted from the peer, blocks are not even looked at and
// the recovery is NewReno's (cwnd = ssthresh + 3*SMSS).
TEST(TcpConnSack, NotNegotiatedMeansNewReno) {
    tcp_harness t;
    establish_sack(t, 1000, /*peer_sack=*/false);
    send_and_expect(t, 5000, 5);
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(4)}})});
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(5)}})});
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(6)}})});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(6)}})});
    t.expect_seg(rtx(2));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    EXPECT_FALSE(t.conn->cc().in_sack_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u + 3000u);
    EXPECT_EQ(t.ctr.sack_blocks_received.get(), 0u);
    EXPECT_TRUE(t.conn->sack_scoreboard().empty());
    // A partial ACK retransmits the next segment, whatever was SACKed.
    t.send_seg({ACK, P + 1, S(3), 20000, {}, sack({{S(4), S(6)}})});
    t.expect_seg(rtx(3));
    t.expect_nothing();
}

// More separate SACKed ranges than the scoreboard holds: the overflow is
// counted, and still no retransmission covers an octet the peer SACKed.
TEST(TcpConnSack, ScoreboardOverflow) {
    tcp_harness t;
    t.cfg.cc.initial_window_segments = 90;
    establish_sack(t, /*peer_mss=*/200);
    ASSERT_EQ(t.app_send(pattern(18000)), 18000u);
    // 90 segments of 200; the peer gets every odd one (1-based: 2, 4, ...
    // are lost) and reports the newest block first, as RFC 2018 §4 says.
    for (uint32_t k = 0; k < 90; ++k) {
        ASSERT_TRUE(t.pop().has_value());
    }
    t.expect_nothing();
    const auto first = [](uint32_t k) { return L + 1 + 200 * (k - 1); };
    std::vector<emitted> sent;
    for (uint32_t k = 3; k <= 89; k += 2) {
        t.send_seg({ACK, P + 1, first(2), 20000, {}, sack({{first(k), first(k + 1)}})});
        while (std::optional<emitted> e = t.pop()) {
            sent.push_back(std::move(*e));
        }
    }
    EXPECT_GT(t.ctr.sack_scoreboard_overflow.get(), 0u);
    EXPECT_EQ(t.conn->sack_scoreboard().size(), tcp_sack_scoreboard::capacity);
    ASSERT_FALSE(sent.empty());
    for (const emitted &e : sent) {
        // Every retransmission is one whole even (lost) segment.
        const uint32_t off = e.hdr.seq.value() - (L + 1);
        EXPECT_EQ(off % 200, 0u);
        EXPECT_EQ((off / 200 + 1) % 2, 0u) << "segment " << off / 200 + 1 << " was SACKed";
        EXPECT_EQ(e.data.size(), 200u);
    }
    // Only holes below the highest remembered range are resent, once each.
    for (std::size_t i = 1; i < sent.size(); ++i) {
        EXPECT_GT(sent[i].hdr.seq.value(), sent[i - 1].hdr.seq.value());
    }
    EXPECT_EQ(sent.size(), t.ctr.sack_retransmits.get());
}

// ---- Scripted: RACK-TLP (RFC 8985) -------------------------------------------

// SACK with RACK on, and an RTT of 10 ms learnt from a first segment.
void establish_rack(tcp_harness &t) {
    establish_sack(t, 1000, true, /*rack=*/true, /*handshake_rtt=*/10 * ms);
    send_and_expect(t, 1000, 1);
    t.advance(10 * ms);
    t.send_seg({ACK, P + 1, S(2), 20000});
    t.expect_nothing();
    ASSERT_EQ(t.conn->rtt().srtt_ns(), 10 * ms);
}

// Data segment k (1-based, 1000 octets) of what the application sent after
// establish_rack's first segment: stream offset 1000 * (k - 2).
seg rtx_after_warmup(uint32_t k) {
    return {ACK, S(k), P + 1, 10000, pattern(1000, static_cast<uint8_t>(1000 * (k - 2)))};
}

// The last two segments of a flight are lost: no DupAck can come. A tail
// loss probe (the last segment again) goes after 2 * SRTT + 2 ms instead of
// the 200 ms RTO; its SACK shows the other loss, which RACK marks lost at
// once, and recovery resends it.
TEST(TcpConnRack, ATailLossIsProbedInsteadOfTimedOut) {
    tcp_harness t;
    establish_rack(t);
    ASSERT_EQ(t.app_send(pattern(5000)), 5000u);
    for (uint32_t k = 2; k <= 6; ++k) {
        t.expect_seg({static_cast<uint8_t>(ACK | (k == 6 ? PSH : 0)), S(k), P + 1, 10000,
                      pattern(1000, static_cast<uint8_t>(1000 * (k - 2)))});
    }
    t.advance(10 * ms);
    t.send_seg({ACK, P + 1, S(5), 20000});  // 2..4 arrived; 5 and 6 lost
    t.expect_nothing();
    const uint64_t srtt = t.conn->rtt().srtt_ns();
    ASSERT_NE(t.conn->probe_deadline(), tcp_conn::never);
    EXPECT_EQ(t.conn->probe_deadline(), t.now + 2 * srtt + tcp_rack::min_probe_allowance_ns);
    EXPECT_LT(t.conn->probe_deadline(), t.conn->rtx_deadline());
    t.advance_to(t.conn->probe_deadline());
    t.expect_seg(rtx_after_warmup(6));  // the probe: the last segment
    t.expect_nothing();
    EXPECT_EQ(t.ctr.tlp_probes.get(), 1u);
    t.advance(10 * ms);
    t.send_seg({ACK, P + 1, S(5), 20000, {}, sack({{S(6), S(7)}})});
    t.expect_seg(rtx_after_warmup(5));  // RACK: sent before a delivered one, RTT passed
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // RACK's mark started the recovery (one DupAck only): its first
    // retransmission (RFC 6675 step 4.3) is the lost segment.
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    t.advance(10 * ms);
    t.send_seg({ACK, P + 1, S(7), 20000});
    t.expect_nothing();
    EXPECT_EQ(t.conn->send_queued(), 0u);
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_GE(t.ctr.rack_lost.get(), 1000u);
}

// Nothing comes back for a whole flight that the congestion window limits.
// By default the probe is the last segment sent, again: a receiver answers a
// duplicate at once (here with a D-SACK, RFC 2883), where it may hold the
// ACK for new in-order data for its delayed-ACK time (Linux did, for 200 ms,
// on the af_packet bed). Only one probe goes until an ACK answers, and a
// probe that the D-SACK shows needless reduces nothing.
TEST(TcpConnRack, AProbeResendsTheLastSegmentByDefault) {
    tcp_harness t;
    establish_rack(t);
    ASSERT_EQ(t.app_send(pattern(20000)), 20000u);
    std::vector<emitted> first;
    while (std::optional<emitted> e = t.pop()) first.push_back(std::move(*e));
    ASSERT_FALSE(first.empty());
    const uint32_t last = first.back().hdr.seq.value();
    const uint32_t next = last + 1000;  // the first unsent octet
    const uint32_t cwnd = t.conn->cc().cwnd();
    ASSERT_NE(t.conn->probe_deadline(), tcp_conn::never);
    t.advance_to(t.conn->probe_deadline());
    std::optional<emitted> probe = t.pop();
    ASSERT_TRUE(probe.has_value());
    EXPECT_EQ(probe->hdr.seq.value(), last);  // the last segment again
    EXPECT_EQ(probe->data, first.back().data);
    t.expect_nothing();
    EXPECT_EQ(t.ctr.tlp_probes.get(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 1u);
    EXPECT_EQ(t.conn->probe_deadline(), tcp_conn::never);
    // The peer had it all: the answer acknowledges the flight and reports
    // the probe's segment as a duplicate. New data follows; no recovery.
    t.advance(1 * ms);
    t.send_seg({ACK, P + 1, next, 40000, {}, sack({{last, next}})});
    EXPECT_EQ(t.ctr.dsacks_received.get(), 1u);
    EXPECT_EQ(t.ctr.sack_recovery_episodes.get(), 0u);
    EXPECT_GE(t.conn->cc().cwnd(), cwnd);
    std::optional<emitted> more = t.pop();
    ASSERT_TRUE(more.has_value());
    EXPECT_EQ(more->hdr.seq.value(), next);
    while (t.pop().has_value()) {
    }
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
}

// With [tcp] tlp_new_data the probe is the next new segment (RFC 8985 §7.3's
// SHOULD, cwnd aside), not a retransmission, and only one probe goes until an
// ACK answers.
TEST(TcpConnRack, AProbeSendsNewDataWhenThereIsSomeWithTlpNewData) {
    tcp_harness t;
    t.cfg.tlp_new_data = true;
    establish_rack(t);
    ASSERT_EQ(t.app_send(pattern(20000)), 20000u);
    std::vector<emitted> first;
    while (std::optional<emitted> e = t.pop()) first.push_back(std::move(*e));
    ASSERT_FALSE(first.empty());
    const uint32_t next = first.back().hdr.seq.value() + 1000;  // the first unsent octet
    ASSERT_NE(t.conn->probe_deadline(), tcp_conn::never);
    t.advance_to(t.conn->probe_deadline());
    std::optional<emitted> probe = t.pop();
    ASSERT_TRUE(probe.has_value());
    EXPECT_EQ(probe->hdr.seq.value(), next);  // new data
    EXPECT_EQ(probe->data.size(), 1000u);
    t.expect_nothing();
    EXPECT_EQ(t.ctr.tlp_probes.get(), 1u);
    EXPECT_EQ(t.ctr.retransmits.get(), 0u);
    // No second probe: the RTO is next.
    EXPECT_EQ(t.conn->probe_deadline(), tcp_conn::never);
    EXPECT_NE(t.conn->rtx_deadline(), tcp_conn::never);
    // Everything acknowledged: the rest goes, and the probe may be armed again.
    t.advance(5 * ms);
    t.send_seg({ACK, P + 1, next + 1000, 40000});
    while (t.pop().has_value()) {
    }
    EXPECT_NE(t.conn->probe_deadline(), tcp_conn::never);
    t.send_seg({ACK, P + 1, S(2) + 20000, 40000});
    t.expect_nothing();
    EXPECT_EQ(t.conn->probe_deadline(), tcp_conn::never);  // nothing outstanding
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
}

// Segment 2 is lost, and so is its retransmission; everything else was
// SACKed and there is nothing new to send (the send queue holds the whole
// window behind the hole), so no later delivery can show RACK the loss. The
// probe resends the hole after 2 * SRTT + 2 ms, long before the RTO.
TEST(TcpConnRack, ALostRetransmissionIsResentBeforeTheTimeout) {
    tcp_harness t;
    establish_rack(t);
    ASSERT_EQ(t.app_send(pattern(6000)), 6000u);
    for (uint32_t k = 2; k <= 7; ++k) {
        t.expect_seg({static_cast<uint8_t>(ACK | (k == 7 ? PSH : 0)), S(k), P + 1, 10000,
                      pattern(1000, static_cast<uint8_t>(1000 * (k - 2)))});
    }
    t.advance(10 * ms);
    // 3..7 arrive, 2 does not: RACK marks 2 lost at the first SACK whose
    // reordering window has passed, or DupThresh does; either way one
    // retransmission.
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(4)}})});
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(5)}})});
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(6)}})});
    t.advance_to(std::min(t.conn->next_deadline(), t.now + 5 * ms));
    t.send_seg({ACK, P + 1, S(2), 20000, {}, sack({{S(3), S(8)}})});
    t.expect_seg(rtx_after_warmup(2));
    t.expect_nothing();
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // That retransmission is lost too. Nothing else may go.
    ASSERT_NE(t.conn->probe_deadline(), tcp_conn::never);
    EXPECT_LT(t.conn->probe_deadline(), t.conn->rtx_deadline());
    t.advance_to(t.conn->probe_deadline());
    t.expect_seg(rtx_after_warmup(2));
    t.expect_nothing();
    t.advance(10 * ms);
    t.send_seg({ACK, P + 1, S(8), 20000});
    t.expect_nothing();
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.ctr.rto_fired.get(), 0u);
    EXPECT_EQ(t.ctr.tlp_probes.get(), 1u);
}

// ---- Two connections over a lossy, reordering link ------------------------

// The data byte at stream offset i.
uint8_t stream_byte(uint64_t i) {
    uint64_t x = i * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x);
}

struct link_result {
    uint64_t received = 0;
    uint64_t payload_sent = 0;  // data octets the sender emitted, first sends included
    uint64_t retransmits = 0;
    uint64_t rto = 0;
    uint64_t sack_retransmits = 0;
    uint64_t sack_episodes = 0;
    uint64_t tlp_probes = 0;
    uint64_t rack_retransmits = 0;
    uint64_t sacked_resent = 0;  // octets emitted while SACKed on the sender's scoreboard
    uint64_t queue_drops = 0;    // segments the bottleneck's buffer had no room for
    uint64_t data_lost = 0;      // data segments from the sender the link lost (at random)
    double seconds = 0;   // until both ends closed (TIME-WAIT included)
    double transfer = 0;  // until the receiver had every byte
    bool closed_normally = false;
};

// One direction: ep[0] sends `total` bytes to ep[1], which only reads, then
// both close. Each segment is lost with probability `loss` and delayed by
// delay + uniform(0, jitter) (which reorders those sent close together).
class lossy_link {
public:
    lossy_link(bool use_sack, uint64_t seed, uint64_t total, double loss, uint64_t delay,
               uint64_t jitter, cc_algorithm cc = cc_algorithm::cubic, bool rack = true)
        : rng_(seed), total_(total), loss_(loss), delay_(delay), jitter_(jitter) {
        cfg_.mss = 1460;
        cfg_.rcv_buf = 256 * 1024;
        cfg_.snd_buf = 256 * 1024;
        cfg_.sack = use_sack;
        cfg_.rack = rack;
        cfg_.cc.algorithm = cc;
        cfg_.cc.initial_window_segments = 10;
        cfg_.max_retransmits = 30;
    }

    // A bottleneck on the data direction: `bytes_per_s` (frames of payload +
    // 54 octets of headers serialized one after another) and a drop-tail
    // buffer of `buffer_bytes`.
    void bottleneck(uint64_t bytes_per_s, uint64_t buffer_bytes) {
        rate_ = bytes_per_s;
        buffer_ = buffer_bytes;
    }
    tcp_conn_config &config() { return cfg_; }

    link_result run() {
        const tcp_tuple ta{ipv4_addr::from_octets(10, 0, 0, 1), ipv4_addr::from_octets(10, 0, 0, 2),
                           40000, 80};
        const tcp_tuple tb{ta.remote_addr, ta.local_addr, 80, 40000};
        ep_[0] =
            std::make_unique<tcp_conn>(cfg_, ta, seq_num(0xfff00000u), &on_emit, &ctx_[0], ctr_);
        ep_[1] =
            std::make_unique<tcp_conn>(cfg_, tb, seq_num(0x12345678u), &on_emit, &ctx_[1], ctr_);
        EXPECT_TRUE(ep_[0]->open_active(0));
        for (uint64_t steps = 0; steps < 5'000'000; ++steps) {
            app();
            if (testing::Test::HasFatalFailure()) {
                break;
            }
            if (ep_[0]->state() == tcp_state::closed && ep_[1]->state() == tcp_state::closed) {
                break;
            }
            const uint64_t d = std::min(ep_[0]->next_deadline(), ep_[1]->next_deadline());
            const uint64_t w = wire_.empty() ? tcp_conn::never : wire_.top().at;
            const uint64_t t = std::min(d, w);
            if (t == tcp_conn::never || t > 3600 * sec) {
                ADD_FAILURE() << "stalled at " << res_.received << " of " << total_;
                break;
            }
            now_ = std::max(now_, t);
            if (w == t) {
                packet p = wire_.top();
                wire_.pop();
                deliver(p);
            } else {
                for (auto &e : ep_) {
                    if (e->next_deadline() <= now_) {
                        e->on_timer(now_);
                    }
                }
            }
        }
        res_.retransmits = ctr_.retransmits.get();
        res_.rto = ctr_.rto_fired.get();
        res_.sack_retransmits = ctr_.sack_retransmits.get();
        res_.sack_episodes = ctr_.sack_recovery_episodes.get();
        res_.tlp_probes = ctr_.tlp_probes.get();
        res_.rack_retransmits = ctr_.rack_retransmits.get();
        res_.seconds = static_cast<double>(now_) / 1e9;
        res_.closed_normally = ep_[0]->close_reason() == tcp_close_reason::normal &&
                               ep_[1]->close_reason() == tcp_close_reason::normal;
        ep_[0].reset();
        ep_[1].reset();
        while (!wire_.empty()) {
            wire_.pop();
        }
        return res_;
    }

private:
    struct packet {
        uint64_t at;
        uint64_t order;
        int to;
        tcp_repr hdr;
        bytes data;
        bool operator<(const packet &o) const {  // std::priority_queue: the earliest on top
            return at != o.at ? at > o.at : order > o.order;
        }
    };
    struct emit_ctx {
        lossy_link *l;
        int from;
    };

    static void on_emit(void *p, const tcp_repr &h, const tcp_payload &pl) {
        auto *c = static_cast<emit_ctx *>(p);
        lossy_link &l = *c->l;
        packet pk{0, 0, 1 - c->from, h, {}};
        for (const tcp_payload_ref &r : pl.refs) {
            const uint8_t *d = rte_pktmbuf_mtod(r.m, const uint8_t *) + r.off;
            pk.data.insert(pk.data.end(), d, d + r.len);
        }
        if (c->from == 0 && pl.len > 0) {
            l.res_.payload_sent += pl.len;
            // RFC 6675: no octet the scoreboard holds as SACKed is sent again.
            const tcp_sack_scoreboard &sb = l.ep_[0]->sack_scoreboard();
            for (uint32_t i = 0; i < pl.len; ++i) {
                if (sb.is_sacked(h.seq + static_cast<int32_t>(i))) {
                    ++l.res_.sacked_resent;
                }
            }
        }
        if (std::uniform_real_distribution<double>(0, 1)(l.rng_) < l.loss_) {
            if (c->from == 0 && pl.len > 0) {
                ++l.res_.data_lost;
            }
            return;
        }
        uint64_t leaves = l.now_;
        if (c->from == 0 && l.rate_ != 0) {
            const uint64_t busy_until = std::max(l.link_free_, l.now_);
            if ((busy_until - l.now_) * l.rate_ / 1'000'000'000 > l.buffer_) {
                ++l.res_.queue_drops;
                return;
            }
            leaves = busy_until + (uint64_t{pl.len} + 54) * 1'000'000'000 / l.rate_;
            l.link_free_ = leaves;
        }
        const uint64_t j =
            l.jitter_ == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, l.jitter_)(l.rng_);
        pk.at = leaves + l.delay_ + j;
        pk.order = l.order_++;
        l.wire_.push(std::move(pk));
    }

    void deliver(const packet &p) {
        tcp_conn &dst = *ep_[p.to];
        if (p.to == 1 && dst.state() == tcp_state::closed &&
            dst.close_reason() == tcp_close_reason::none) {
            if (p.hdr.has(tcp_flag::syn) && !p.hdr.has(tcp_flag::ack)) {
                EXPECT_TRUE(dst.open_passive(p.hdr, now_));
            }
            return;
        }
        rte_mbuf *m = nullptr;
        if (!p.data.empty()) {
            m = make_chain(p.data, 2048);
            ASSERT_NE(m, nullptr);
        }
        dst.input(p.hdr, m, 0, now_);
    }

    void app() {
        tcp_conn &rx = *ep_[1];
        std::array<tcp_rx_piece, 32> pieces;
        for (std::size_t n; (n = rx.recv(pieces, now_)) != 0;) {
            for (std::size_t k = 0; k < n; ++k) {
                const bytes b = chain_bytes(pieces[k].m, pieces[k].off, pieces[k].len);
                ASSERT_EQ(b.size(), pieces[k].len);
                for (uint8_t v : b) {
                    ASSERT_EQ(v, stream_byte(res_.received)) << "offset " << res_.received;
                    ++res_.received;
                }
                if (res_.received == total_) {
                    res_.transfer = static_cast<double>(now_) / 1e9;
                }
                rte_pktmbuf_free(pieces[k].m);
            }
        }
        ASSERT_LE(res_.received, total_);
        if ((rx.events() & tcp_event::peer_fin) != 0 && rx.state() == tcp_state::close_wait) {
            rx.close(now_);
        }
        tcp_conn &tx = *ep_[0];
        if (tx.state() != tcp_state::established) {
            return;
        }
        while (sent_ < total_ && tx.send_space() > 0) {
            const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(8000, total_ - sent_));
            bytes chunk(n);
            for (uint32_t k = 0; k < n; ++k) {
                chunk[k] = stream_byte(sent_ + k);
            }
            rte_mbuf *m = make_chain(chunk, 2000);
            ASSERT_NE(m, nullptr);
            const uint32_t took = tx.send(m, now_);
            if (took == 0) {
                rte_pktmbuf_free(m);
                break;
            }
            sent_ += took;
        }
        if (sent_ == total_) {
            tx.close(now_);
        }
    }

    std::mt19937_64 rng_;
    uint64_t total_;
    double loss_;
    uint64_t delay_;
    uint64_t jitter_;
    tcp_conn_config cfg_;
    tcp_counters ctr_;
    std::unique_ptr<tcp_conn> ep_[2];
    emit_ctx ctx_[2] = {{this, 0}, {this, 1}};
    std::priority_queue<packet> wire_;
    uint64_t rate_ = 0;       // bottleneck, bytes per second (0: none)
    uint64_t buffer_ = 0;     // its buffer, bytes
    uint64_t link_free_ = 0;  // when the bottleneck has sent what it holds
    uint64_t now_ = 0;
    uint64_t order_ = 0;
    uint64_t sent_ = 0;
    link_result res_;
};

TEST(TcpConnSackLink, FourMiBWithLossAndReorderingFewerRetransmissionsWithSack) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    constexpr uint64_t total = 4ull * 1024 * 1024;
    // Summed over seeds: on one seed the two can tie within a few segments
    // at 5% loss, where either must resend at least 5%.
    uint64_t resent[2] = {0, 0};
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        link_result r[2];
        for (int use_sack = 0; use_sack < 2; ++use_sack) {
            lossy_link l(use_sack != 0, seed, total, 0.05, 10 * ms, 4 * ms);
            r[use_sack] = l.run();
            if (HasFatalFailure()) {
                return;
            }
            const link_result &x = r[use_sack];
            EXPECT_EQ(x.received, total) << (use_sack ? "sack" : "no sack") << " seed " << seed;
            EXPECT_TRUE(x.closed_normally) << (use_sack ? "sack" : "no sack") << " seed " << seed;
            EXPECT_GE(x.payload_sent, total);
            resent[use_sack] += x.payload_sent - total;
            std::printf(
                "[ link     ] seed %llu %-8s: %llu octets retransmitted (%.1f%% of %llu), %llu "
                "segments (%llu holes by SACK), %llu RTOs, %llu SACK recoveries, %.2f s to "
                "transfer\n",
                static_cast<unsigned long long>(seed), use_sack ? "SACK" : "NewReno",
                static_cast<unsigned long long>(x.payload_sent - total),
                100.0 * static_cast<double>(x.payload_sent - total) / total,
                static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(x.retransmits),
                static_cast<unsigned long long>(x.sack_retransmits),
                static_cast<unsigned long long>(x.rto),
                static_cast<unsigned long long>(x.sack_episodes), x.transfer);
        }
        EXPECT_EQ(r[0].sack_episodes, 0u) << "seed " << seed;
        EXPECT_GT(r[1].sack_episodes, 0u) << "seed " << seed;
        EXPECT_EQ(r[1].sacked_resent, 0u) << "seed " << seed;
    }
    EXPECT_LT(resent[1], resent[0]);
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);
}

// More seeds, shorter transfers: every byte arrives, nothing SACKed is ever
// resent, with each congestion control.
TEST(TcpConnSackLink, RandomSeeds) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
        std::mt19937_64 g(seed * 104729);
        const double loss = std::uniform_real_distribution<double>(0.0, 0.12)(g);
        const uint64_t delay = std::uniform_int_distribution<uint64_t>(1, 20)(g) * ms;
        const uint64_t jitter = std::uniform_int_distribution<uint64_t>(0, 10)(g) * ms;
        SCOPED_TRACE("seed " + std::to_string(seed) + " loss " + std::to_string(loss));
        lossy_link l(true, seed, 512 * 1024, loss, delay, jitter,
                     seed % 3 == 0   ? cc_algorithm::bbr
                     : (seed & 1) != 0 ? cc_algorithm::new_reno
                                       : cc_algorithm::cubic);
        const link_result x = l.run();
        if (HasFatalFailure()) {
            return;
        }
        EXPECT_EQ(x.received, 512u * 1024);
        EXPECT_TRUE(x.closed_normally);
        EXPECT_EQ(x.sacked_resent, 0u);
    }
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);
}

// A LAN (25 us each way) losing 1% and 3% of segments both ways, 4 MiB, over
// 8 seeds: without RACK-TLP most of the transfer time is retransmission
// timeouts (a lost retransmission, or a loss with nothing sent after it,
// waits 200 ms, thousands of round trips here); with it they are rare and the
// transfer is more than 5 times faster. Several seeds, not one: whether one
// seeded run needs a timeout moves with any change to either end (the
// receiver's D-SACKs let the sender undo, and widen RACK's reordering
// window); 8 seeds at 3% measured 19 RTOs without RACK-TLP and 4 with it.
// The figures are printed (the simulation is seeded: the same every time).
TEST(TcpConnSackLink, ALossyLanRarelyNeedsARetransmissionTimeout) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    constexpr uint64_t total = 4ull << 20;
    constexpr uint64_t seeds = 8;
    for (double loss : {0.01, 0.03}) {
        double transfer[2] = {0, 0};
        uint64_t rtos[2] = {0, 0}, retransmits[2] = {0, 0}, probes[2] = {0, 0};
        for (int rack = 0; rack < 2; ++rack) {
            for (uint64_t seed = 1; seed <= seeds; ++seed) {
                lossy_link l(true, seed, total, loss, 25 * 1000, 0, cc_algorithm::cubic,
                             rack != 0);
                const link_result x = l.run();
                if (HasFatalFailure()) {
                    return;
                }
                EXPECT_EQ(x.received, total) << "seed " << seed;
                EXPECT_TRUE(x.closed_normally) << "seed " << seed;
                EXPECT_EQ(x.sacked_resent, 0u) << "seed " << seed;
                transfer[rack] += x.transfer / seeds;
                rtos[rack] += x.rto;
                retransmits[rack] += x.retransmits;
                probes[rack] += x.tlp_probes;
            }
            std::printf("[ lan      ] loss %.0f%%, RACK-TLP %-3s, %llu seeds: %.4f s mean, "
                        "%.1f MB/s, %llu RTOs, %llu retransmissions, %llu probes\n",
                        loss * 100, rack ? "on" : "off", static_cast<unsigned long long>(seeds),
                        transfer[rack], static_cast<double>(total) / transfer[rack] / 1e6,
                        static_cast<unsigned long long>(rtos[rack]),
                        static_cast<unsigned long long>(retransmits[rack]),
                        static_cast<unsigned long long>(probes[rack]));
        }
        EXPECT_GT(rtos[0], 2 * rtos[1]) << "the scenario no longer needs RACK-TLP";
        EXPECT_LT(transfer[1] * 5, transfer[0]);
    }
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);
}

// A 1 Gbit/s bottleneck with a 1 ms round trip (a BDP of 125 kB, about 85
// segments) and a buffer of two BDPs (BBR's window is 2 x BDP; with one,
// its STARTUP and the quantum overflow it by a few segments), losing 1% and 3% of segments at random
// both ways. CUBIC reads each loss as congestion and its window settles far
// below the BDP; BBR's model (tcp_bbr.h) keeps the bottleneck busy: the
// issue-16 bed's Linux sender (BBR) against ferry's CUBIC, in the small.
// Also: every byte arrives, nothing SACKed is resent, at most 3
// retransmissions for every 2 segments lost (each loss is resent at least
// once; a lost retransmission, again), and BBR's standing queue stays within
// the buffer (few drops there). Figures printed; seeded.
TEST(TcpConnSackLink, BbrKeepsALossyBottleneckBusyWhereCubicBacksOff) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    constexpr uint64_t total = 8ull << 20;
    constexpr uint64_t rate = 125'000'000;  // bytes per second
    constexpr uint64_t seeds = 4;
    for (double loss : {0.01, 0.03}) {
        double mbps[2] = {0, 0};
        uint64_t rtos[2] = {0, 0}, drops[2] = {0, 0}, lost[2] = {0, 0}, resent[2] = {0, 0};
        const cc_algorithm algs[2] = {cc_algorithm::cubic, cc_algorithm::bbr};
        for (int i = 0; i < 2; ++i) {
            for (uint64_t seed = 1; seed <= seeds; ++seed) {
                lossy_link l(true, seed, total, loss, 500 * 1000, 0, algs[i]);
                l.bottleneck(rate, 250'000);
                l.config().rcv_buf = 1 << 20;
                l.config().snd_buf = 1 << 20;
                const link_result x = l.run();
                if (HasFatalFailure()) {
                    return;
                }
                EXPECT_EQ(x.received, total) << name(algs[i]) << " seed " << seed;
                EXPECT_TRUE(x.closed_normally) << name(algs[i]) << " seed " << seed;
                EXPECT_EQ(x.sacked_resent, 0u) << name(algs[i]) << " seed " << seed;
                mbps[i] += static_cast<double>(total) / x.transfer / 1e6 / seeds;
                rtos[i] += x.rto;
                drops[i] += x.queue_drops;
                lost[i] += x.data_lost + x.queue_drops;
                resent[i] += x.retransmits;
            }
            std::printf("[ bottleneck ] loss %.0f%%, %-5s, %llu seeds: %.1f MB/s of %.1f, %llu RTOs, "
                        "%llu drops at the bottleneck, %llu retransmissions for %llu segments "
                        "lost\n",
                        loss * 100, name(algs[i]), static_cast<unsigned long long>(seeds), mbps[i],
                        rate / 1e6, static_cast<unsigned long long>(rtos[i]),
                        static_cast<unsigned long long>(drops[i]),
                        static_cast<unsigned long long>(resent[i]),
                        static_cast<unsigned long long>(lost[i]));
            // Few spurious retransmissions: until 2026-12-05 a SACK recovery
            // that began as the last one ended resent the holes that one had
            // resent, still in flight (BBR here: 5x as many as were lost).
            EXPECT_LE(resent[i] * 2, lost[i] * 3) << name(algs[i]) << " loss " << loss;
        }
        EXPECT_GT(mbps[1], 2 * mbps[0]) << "loss " << loss;
        EXPECT_GT(mbps[1], 0.6 * rate / 1e6) << "loss " << loss;
        EXPECT_LT(drops[1], seeds * total / 1460 / 100) << "loss " << loss;
    }
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);
}

}  // namespace
}  // namespace ferry::net
