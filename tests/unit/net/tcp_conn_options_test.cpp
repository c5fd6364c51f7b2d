// tcp_conn options and reassembly (layer 4): MSS, window scaling,
// timestamps and PAWS, SACK generation, out-of-order reassembly; fast
// retransmit / NewReno recovery and keep-alive (layer 5).
#include "ferry/net/tcp_conn.h"

#include <gtest/gtest.h>

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

tcp_repr peer_syn(const tcp_options &o, uint16_t win = 20000) {
    tcp_repr syn;
    syn.src_port = tcp_harness::peer_port;
    syn.dst_port = tcp_harness::local_port;
    syn.seq = seq_num(P);
    syn.flags = SYN;
    syn.window = win;
    syn.options = o;
    return syn;
}

tcp_options ts(uint32_t val, uint32_t ecr) {
    tcp_options o;
    o.timestamps = tcp_timestamps{val, ecr};
    return o;
}

tcp_options sack(std::initializer_list<std::pair<uint32_t, uint32_t>> blocks) {
    tcp_options o;
    for (auto [l, r] : blocks) {
        o.sack[o.sack_count++] = tcp_sack_block{seq_num(l), seq_num(r)};
    }
    return o;
}

// ---- MSS -----------------------------------------------------------------

TEST(TcpConnOptions, PeerMssLimitsSegments) {
    tcp_harness t;
    t.create();
    tcp_options o;
    o.mss = 400;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o), 0));
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, tcp_harness::mss_opt(1000)});
    t.send_seg({ACK, P + 1, L + 1, 20000});
    EXPECT_EQ(t.app_send(pattern(900)), 900u);
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(400)});
    t.expect_seg({ACK, L + 401, P + 1, 10000, pattern(400, 144)});
    t.expect_seg({ACK | PSH, L + 801, P + 1, 10000, pattern(100, 32)});
}

// A peer MSS below the timestamp option's 12 bytes wrapped the effective MSS
// (8 - 12 as an unsigned number), so ferry sent MTU-sized segments to a peer
// that asked for tiny ones. Now the peer's MSS has a floor of 48 (Linux's
// tcp_min_snd_mss) before the options come out of it, and above the floor
// what the peer advertised is never exceeded.
TEST(TcpConnOptions, TinyPeerMssHasAFloorAndNeverWraps) {
    struct mss_case {
        uint16_t peer_mss;
        bool timestamps;
        uint16_t want;
    };
    for (const mss_case c : {mss_case{8, true, 36}, mss_case{8, false, 48},
                             mss_case{11, true, 36}, mss_case{40, true, 36},
                             mss_case{100, true, 88}, mss_case{100, false, 100},
                             mss_case{1, false, 48}}) {
        tcp_harness t;
        t.cfg.timestamps = true;  // ours on: the peer's SYN decides
        t.create();
        tcp_options o = c.timestamps ? ts(5, 0) : tcp_options{};
        o.mss = c.peer_mss;
        ASSERT_TRUE(t.conn->open_passive(peer_syn(o), 0));
        EXPECT_EQ(t.conn->ts_enabled(), c.timestamps);
        EXPECT_EQ(t.conn->snd_mss(), c.want) << "peer MSS " << c.peer_mss << " ts "
                                             << c.timestamps;
        t.out.clear();  // the SYN-ACK (its options are other tests')
    }
}

// ---- Window scaling (RFC 7323 §2) -----------------------------------------

TEST(TcpConnOptions, WindowScaleNegotiated) {
    tcp_harness t;
    t.cfg.window_scaling = true;
    t.cfg.rcv_buf = 256 * 1024;  // needs a shift of 3 to fit 16 bits
    t.create();
    tcp_options o;
    o.mss = 1000;
    o.window_shift = 7;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o, 1000), 0));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.window_shift = 3;
    // The SYN-ACK's window is not scaled.
    t.expect_seg({SYN | ACK, L, P + 1, 65535, {}, want});
    EXPECT_EQ(t.conn->snd().wnd, 1000u);
    t.send_seg({ACK, P + 1, L + 1, 100});
    EXPECT_EQ(t.conn->snd().wnd, 100u << 7);
    EXPECT_EQ(t.conn->snd().wscale, 7);
    EXPECT_EQ(t.conn->rcv().wscale, 3);
    t.send_seg({ACK, P + 1, L + 1, 100, pattern(100)});
    // (256 KiB - 100) rounded down to 8: 262040 >> 3.
    t.expect_seg({ACK, L + 1, P + 101, 32755});
    EXPECT_EQ(t.conn->rcv_wnd(), 262040u);
}

TEST(TcpConnOptions, NoWindowScaleUnlessBothSides) {
    tcp_harness t;
    t.cfg.window_scaling = true;
    t.cfg.rcv_buf = 256 * 1024;
    t.create();
    ASSERT_TRUE(t.conn->open_passive(peer_syn(tcp_harness::mss_opt(1000)), 0));
    t.expect_seg({SYN | ACK, L, P + 1, 65535, {}, tcp_harness::mss_opt(1000)});
    t.send_seg({ACK, P + 1, L + 1, 100});
    EXPECT_EQ(t.conn->snd().wnd, 100u);
    EXPECT_EQ(t.conn->rcv().wscale, 0);
    t.send_seg({ACK, P + 1, L + 1, 100, pattern(100)});
    // Unscaled and capped at 65535; the right edge moves by >= 1 MSS only.
    t.expect_seg({ACK, L + 1, P + 101, 65435});
}

TEST(TcpConnOptions, ActiveOpenOffersEverything) {
    tcp_harness t;
    t.cfg.window_scaling = true;
    t.cfg.timestamps = true;
    t.cfg.sack = true;
    t.cfg.rcv_buf = 256 * 1024;
    t.create();
    t.now = 2 * sec;
    ASSERT_TRUE(t.conn->open_active(t.now));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.window_shift = 3;
    want.sack_permitted = true;
    want.timestamps = tcp_timestamps{2000, 0};
    t.expect_seg({SYN, L, 0, 65535, {}, want});
    // The peer takes only timestamps.
    tcp_options o = ts(77, 2000);
    o.mss = 1000;
    t.now = 2 * sec + 30 * ms;
    t.send_seg({SYN | ACK, P, L + 1, 20000, {}, o});
    t.expect_seg({ACK, L + 1, P + 1, 65535, {}, ts(2030, 77)});
    EXPECT_TRUE(t.conn->ts_enabled());
    EXPECT_FALSE(t.conn->sack_enabled());
    EXPECT_EQ(t.conn->rcv().wscale, 0);
    EXPECT_EQ(t.conn->snd_mss(), 988);  // 1000 - 12 bytes of timestamps
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 30 * ms);
}

// ---- Timestamps and PAWS (RFC 7323 §3-§5) ----------------------------------

TEST(TcpConnOptions, TimestampsEchoAndPaws) {
    tcp_harness t;
    t.cfg.timestamps = true;
    t.create();
    t.now = 1 * sec;
    tcp_options o = ts(500, 0);
    o.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o), t.now));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.timestamps = tcp_timestamps{1000, 500};
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, want});
    t.now = 1010 * ms;
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, ts(510, 1000)});
    ASSERT_EQ(t.conn->state(), tcp_state::established);
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 10 * ms);  // from TSecr
    EXPECT_EQ(t.conn->snd_mss(), 988);
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(100), ts(520, 1000)});
    t.expect_seg({ACK, L + 1, P + 101, 9900, {}, ts(1010, 520)});
    // PAWS: an older TSval is rejected (ACK sent, data dropped).
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(100, 100), ts(400, 1000)});
    t.expect_seg({ACK, L + 1, P + 101, 9900, {}, ts(1010, 520)});
    EXPECT_EQ(t.ctr.paws_rejects.get(), 1u);
    EXPECT_EQ(t.conn->recv_queued(), 100u);
    // The same TSval is fine.
    t.send_seg({ACK, P + 101, L + 1, 20000, pattern(100, 100), ts(520, 1000)});
    t.expect_seg({ACK, L + 1, P + 201, 9800, {}, ts(1010, 520)});
    // Our data carries timestamps and leaves them room in the MSS.
    t.now = 1100 * ms;
    EXPECT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({ACK, L + 1, P + 201, 9800, pattern(988), ts(1100, 520)});
    t.expect_seg({ACK | PSH, L + 989, P + 201, 9800, pattern(12, 220), ts(1100, 520)});
}

// With timestamps on, data's RTT still comes from the timed segment, in
// nanoseconds: the echo's millisecond clock would read 0 for this 0.9 ms.
TEST(TcpConnOptions, DataRttIsTimedInNanosecondsWithTimestamps) {
    tcp_harness t;
    t.cfg.timestamps = true;
    t.create();
    t.now = 1 * sec;
    tcp_options o = ts(500, 0);
    o.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o), t.now));
    (void)t.pop();
    t.now = 1010 * ms;
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, ts(510, 1000)});
    ASSERT_EQ(t.conn->rtt().srtt_ns(), 10 * ms);  // no sample yet: the echo's
    t.now = 2 * sec;
    EXPECT_EQ(t.app_send(pattern(500)), 500u);
    t.expect_seg({ACK | PSH, L + 1, P + 1, 10000, pattern(500), ts(2000, 510)});
    t.now = 2 * sec + 900'000;  // 0.9 ms
    t.send_seg({ACK, P + 1, L + 501, 20000, {}, ts(530, 2000)});
    // SRTT + (R - SRTT) / 8 with R = 0.9 ms (with the echo's R = 0: 8.75 ms).
    EXPECT_EQ(t.conn->rtt().srtt_ns(), 8'862'500u);
}

TEST(TcpConnOptions, PawsIgnoresTsRecentOlderThan24Days) {
    tcp_harness t;
    t.cfg.timestamps = true;
    t.create();
    tcp_options o = ts(0x80000000u, 0);
    o.mss = 1000;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o), 0));
    (void)t.pop();
    t.send_seg({ACK, P + 1, L + 1, 20000, {}, ts(0x80000000u, 0)});
    t.now = tcp_conn::paws_idle_ns + 1;
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(10), ts(5, 0)});
    EXPECT_EQ(t.ctr.paws_rejects.get(), 0u);
    EXPECT_EQ(t.conn->recv_queued(), 10u);
    (void)t.pop();
}

// ---- SACK (RFC 2018) and reassembly ----------------------------------------

TEST(TcpConnOptions, SackBlocksForOutOfOrderData) {
    tcp_harness t;
    t.cfg.sack = true;
    t.create();
    tcp_options o = tcp_harness::mss_opt(1000);
    o.sack_permitted = true;
    ASSERT_TRUE(t.conn->open_passive(peer_syn(o), 0));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.sack_permitted = true;
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, want});
    t.send_seg({ACK, P + 1, L + 1, 20000});
    ASSERT_TRUE(t.conn->sack_enabled());

    t.send_seg({ACK, P + 1001, L + 1, 20000, pattern(1000, 1000 % 256)});
    t.expect_seg({ACK, L + 1, P + 1, 10000, {}, sack({{P + 1001, P + 2001}})});
    t.send_seg({ACK, P + 3001, L + 1, 20000, pattern(500, 3000 % 256)});
    // The block with the latest segment first (RFC 2018 §4).
    t.expect_seg(
        {ACK, L + 1, P + 1, 10000, {}, sack({{P + 3001, P + 3501}, {P + 1001, P + 2001}})});
    // A duplicate of stored data: still a duplicate ACK; the D-SACK block
    // first, then the block that holds it (RFC 2883 §4, example 6).
    t.send_seg({ACK, P + 1001, L + 1, 20000, pattern(1000, 1000 % 256)});
    t.expect_seg({ACK, L + 1, P + 1, 10000, {},
                  sack({{P + 1001, P + 2001}, {P + 1001, P + 2001}, {P + 3001, P + 3501}})});
    EXPECT_EQ(t.ctr.ooo_segments.get(), 2u);
    EXPECT_EQ(t.ctr.ooo_duplicate.get(), 1u);
    EXPECT_EQ(t.ctr.dsacks_sent.get(), 1u);
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 2001, 8000, {}, sack({{P + 3001, P + 3501}})});
    t.send_seg({ACK, P + 2001, L + 1, 20000, pattern(1000, 2000 % 256)});
    t.expect_seg({ACK, L + 1, P + 3501, 6500});
    EXPECT_EQ(t.app_recv(), pattern(3500));
    t.expect_seg({ACK, L + 1, P + 3501, 10000});  // window update
}

// RFC 2883: data that arrives twice is reported once, in the first SACK block
// of the ACK that answers it, so that its sender can tell a needless
// retransmission (and undo what it cost). Before, ferry reported nothing and
// a Linux sender took every spurious retransmission (its tail loss probes on
// a LAN: ~140 per 256 MiB through the proxy) for a loss.
tcp_harness &sack_peer(tcp_harness &t, bool dsack = true) {
    t.cfg.sack = true;
    t.cfg.dsack = dsack;
    t.create();
    tcp_options o = tcp_harness::mss_opt(1000);
    o.sack_permitted = true;
    EXPECT_TRUE(t.conn->open_passive(peer_syn(o), 0));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.sack_permitted = true;
    t.expect_seg({SYN | ACK, L, P + 1, 10000, {}, want});
    t.send_seg({ACK, P + 1, L + 1, 20000});
    return t;
}

TEST(TcpConnDsack, AnOldDuplicateIsReportedBelowTheCumulativeAck) {
    tcp_harness t;
    sack_peer(t);
    t.send_seg({ACK | PSH, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 1001, 9000});
    // The same segment again (the peer's ACK was lost, or its probe was
    // needless): an immediate ACK whose first block is below the ACK.
    t.send_seg({ACK | PSH, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 1001, 9000, {}, sack({{P + 1, P + 1001}})});
    EXPECT_EQ(t.ctr.dsacks_sent.get(), 1u);
    // Reported once: the next ACK carries no block.
    t.send_seg({ACK, P + 1001, L + 1, 20000, pattern(500, 1000 % 256)});
    t.expect_seg({ACK, L + 1, P + 1501, 8500});
    EXPECT_EQ(t.app_recv(), pattern(1500));
    // The peer's last segment was short and it knows 8500 of 10000: the
    // window goes with the next segment (TcpConnData.WindowUpdates...).
    t.expect_nothing();
}

TEST(TcpConnDsack, ThePartOfASegmentAlreadyReceivedIsReported) {
    tcp_harness t;
    sack_peer(t);
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 1001, 9000});
    // A retransmission that repacketised [501, 1501): 500 octets old, 500 new.
    t.send_seg({ACK, P + 501, L + 1, 20000, pattern(1000, 500 % 256)});
    t.expect_seg({ACK, L + 1, P + 1501, 8500, {}, sack({{P + 501, P + 1001}})});
    EXPECT_EQ(t.ctr.dsacks_sent.get(), 1u);
    EXPECT_EQ(t.app_recv(), pattern(1500));
    t.expect_nothing();  // a short segment, 8500 of 10000 known: no pure update
}

TEST(TcpConnDsack, NoneWhenTurnedOff) {
    tcp_harness t;
    sack_peer(t, false);
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 1001, 9000});
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(1000)});
    t.expect_seg({ACK, L + 1, P + 1001, 9000});
    EXPECT_EQ(t.ctr.dsacks_sent.get(), 0u);
}

TEST(TcpConnReassembly, OverlapsAndFinOutOfOrder) {
    tcp_harness t;
    t.establish_passive();
    t.send_seg({ACK, P + 501, L + 1, 20000, pattern(500, 500 % 256)});
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    t.send_seg({ACK, P + 301, L + 1, 20000, pattern(400, 300 % 256)});  // overlaps the first
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    t.send_seg({ACK | FIN, P + 1001, L + 1, 20000});  // FIN ahead of a gap
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    t.send_seg({ACK, P + 201, L + 1, 20000, pattern(700, 200 % 256)});  // covers the middle
    t.expect_seg({ACK, L + 1, P + 1, 10000});
    t.send_seg({ACK, P + 1, L + 1, 20000, pattern(300)});
    EXPECT_EQ(t.conn->state(), tcp_state::close_wait);
    t.expect_seg({ACK, L + 1, P + 1002, 8999});
    EXPECT_EQ(t.app_recv(), pattern(1000));
}

// ---- Layer 5: fast retransmit and NewReno recovery (RFC 5681, RFC 6582) ---

TEST(TcpConnFastRetransmit, ThreeDupAcksThenPartialAndFullAck) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(5000)), 5000u);
    for (uint32_t i = 0; i < 5; ++i) {
        (void)t.pop();
    }
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    EXPECT_EQ(t.conn->cc().cwnd(), 11000u);
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    t.expect_nothing();
    t.send_seg({ACK, P + 1, L + 1001, 20000});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 1000 % 256)});
    EXPECT_EQ(t.ctr.dup_acks.get(), 3u);
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    EXPECT_TRUE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().ssthresh(), 2000u);  // FlightSize 4000 / 2
    EXPECT_EQ(t.conn->cc().cwnd(), 5000u);      // ssthresh + 3 SMSS
    // A dup that is not one (it carries data) does not count.
    t.send_seg({ACK, P + 1, L + 1001, 20000, pattern(10)});
    t.expect_seg({ACK, L + 5001, P + 11, 9990});
    EXPECT_EQ(t.ctr.dup_acks.get(), 3u);
    // Partial ACK: the next hole is retransmitted.
    t.send_seg({ACK, P + 11, L + 3001, 20000});
    t.expect_seg({ACK, L + 3001, P + 11, 9990, pattern(1000, 3000 % 256)});
    EXPECT_TRUE(t.conn->cc().in_recovery());
    // Full ACK ends recovery.
    t.send_seg({ACK, P + 11, L + 5001, 20000});
    EXPECT_FALSE(t.conn->cc().in_recovery());
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);
    EXPECT_EQ(t.conn->rtx_deadline(), tcp_conn::never);
    t.expect_nothing();
}

TEST(TcpConnFastRetransmit, LimitedTransmitOnFirstTwoDupAcks) {
    tcp_harness t;
    t.cfg.cc.initial_window_segments = 2;
    t.establish_passive();
    EXPECT_EQ(t.app_send(pattern(4000)), 4000u);
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});
    t.expect_seg({ACK, L + 1001, P + 1, 10000, pattern(1000, 1000 % 256)});
    t.expect_nothing();  // cwnd 2000
    t.send_seg({ACK, P + 1, L + 1, 20000});
    t.expect_seg({ACK, L + 2001, P + 1, 10000, pattern(1000, 2000 % 256)});
    t.send_seg({ACK, P + 1, L + 1, 20000});
    t.expect_seg({ACK | PSH, L + 3001, P + 1, 10000, pattern(1000, 3000 % 256)});
    EXPECT_EQ(t.conn->cc().cwnd(), 2000u);  // unchanged by Limited Transmit
    t.send_seg({ACK, P + 1, L + 1, 20000});
    t.expect_seg({ACK, L + 1, P + 1, 10000, pattern(1000)});  // fast retransmit
    EXPECT_EQ(t.ctr.fast_retransmits.get(), 1u);
    t.expect_nothing();
}

// ---- Layer 5: keep-alive (RFC 1122 §4.2.3.6) --------------------------------

TEST(TcpConnKeepalive, ProbesAndTimesOut) {
    tcp_harness t;
    t.cfg.keepalive = true;
    t.cfg.keepalive_idle_ns = 10 * sec;
    t.cfg.keepalive_interval_ns = 1 * sec;
    t.cfg.keepalive_probes = 2;
    t.establish_passive();
    EXPECT_EQ(t.conn->keepalive_deadline(), 10 * sec);
    t.advance_to(10 * sec);
    t.expect_seg({ACK, L, P + 1, 10000});  // SEG.SEQ = SND.NXT - 1
    t.now = 10500 * ms;
    t.send_seg({ACK, P + 1, L + 1, 20000});  // the answer
    EXPECT_EQ(t.conn->keepalive_deadline(), 20500 * ms);
    t.advance_to(20500 * ms);
    t.expect_seg({ACK, L, P + 1, 10000});
    t.advance_to(21500 * ms);
    t.expect_seg({ACK, L, P + 1, 10000});
    EXPECT_EQ(t.ctr.keepalives.get(), 3u);
    t.advance_to(22500 * ms - 1);
    EXPECT_EQ(t.conn->state(), tcp_state::established);
    t.advance_to(22500 * ms);
    EXPECT_EQ(t.conn->state(), tcp_state::closed);
    EXPECT_EQ(t.conn->close_reason(), tcp_close_reason::timed_out);
    EXPECT_EQ(t.ctr.keepalive_timeouts.get(), 1u);
    t.expect_nothing();
}

TEST(TcpConnKeepalive, OffByDefault) {
    tcp_harness t;
    t.establish_passive();
    EXPECT_EQ(t.conn->keepalive_deadline(), tcp_conn::never);
    EXPECT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

// ---- The queues on their own ---------------------------------------------

TEST(TcpRecvQueue, OutOfOrderStoreTrimsAndReplaces) {
    ASSERT_NE(g_pool, nullptr);
    tcp_recv_queue q;
    auto piece = [](uint32_t len) { return tcp_rx_piece{make_chain(pattern(len)), 0, len}; };
    using r = tcp_recv_queue::ooo_result;
    EXPECT_EQ(q.insert_ooo(seq_num(100), piece(50), false), r::inserted);   // [100,150)
    EXPECT_EQ(q.insert_ooo(seq_num(200), piece(50), false), r::inserted);   // [200,250)
    EXPECT_EQ(q.insert_ooo(seq_num(110), piece(20), false), r::duplicate);  // inside
    EXPECT_EQ(q.insert_ooo(seq_num(90), piece(200), false), r::inserted);   // covers both
    EXPECT_EQ(q.ooo_count(), 1u);
    std::array<tcp_sack_block, 4> b{};
    ASSERT_EQ(q.sack_blocks(b), 1u);
    EXPECT_EQ(b[0], (tcp_sack_block{seq_num(90), seq_num(290)}));
    // Trimmed to [290,300), and chained onto [90,290): still one entry.
    EXPECT_EQ(q.insert_ooo(seq_num(280), piece(20), false), r::inserted);
    EXPECT_EQ(q.ooo_count(), 1u);
    ASSERT_EQ(q.sack_blocks(b), 1u);
    EXPECT_EQ(b[0], (tcp_sack_block{seq_num(90), seq_num(300)}));
    bool fin = false;
    EXPECT_EQ(q.drain(seq_num(50), fin).value(), 50u);  // gap before 90
    EXPECT_EQ(q.drain(seq_num(95), fin).value(), 300u);
    EXPECT_FALSE(fin);
    EXPECT_EQ(q.bytes(), 205u);
    std::array<tcp_rx_piece, 4> out{};
    ASSERT_EQ(q.pop(out), 1u);
    EXPECT_EQ(out[0].off, 5u);  // the first 5 octets were before RCV.NXT
    EXPECT_EQ(out[0].len, 205u);
    bytes want = pattern(195, 5);
    const bytes tail = pattern(10, 10);  // octets 10..19 of the 20-octet piece
    want.insert(want.end(), tail.begin(), tail.end());
    EXPECT_EQ(chain_bytes(out[0].m, out[0].off, out[0].len), want);
    EXPECT_EQ(out[0].m->pkt_len, 210u);  // exactly the data: [90,300)
    rte_pktmbuf_free(out[0].m);
}

// Out-of-order segments that follow one another take one entry: a run of
// them behind a loss cannot fill the store, only separate ranges can.
TEST(TcpRecvQueue, OutOfOrderStoreChainsConsecutivePieces) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    {
        tcp_recv_queue q;
        using r = tcp_recv_queue::ooo_result;
        // 100 pieces of 100 octets from 1000, each in a chain with a 40-octet
        // "header" before the data and 6 octets of padding after it, inserted
        // out of order (every even one, then every odd one).
        const auto insert = [&](uint32_t i) {
            bytes frame = pattern(40, 0xee);
            const bytes data = pattern(100, static_cast<uint8_t>(i));
            frame.insert(frame.end(), data.begin(), data.end());
            frame.resize(frame.size() + 6, 0xff);
            return q.insert_ooo(seq_num(1000 + 100 * i),
                                tcp_rx_piece{make_chain(frame, 64), 40, 100}, false);
        };
        for (uint32_t i = 0; i < 100; i += 2) {
            if (i < 2 * tcp_recv_queue::ooo_capacity) {
                EXPECT_EQ(insert(i), r::inserted) << i;
            } else {
                EXPECT_EQ(insert(i), r::full) << i;  // 32 separate ranges: full
            }
        }
        EXPECT_EQ(q.ooo_count(), tcp_recv_queue::ooo_capacity);
        for (uint32_t i = 1; i < 2 * tcp_recv_queue::ooo_capacity; i += 2) {
            EXPECT_EQ(insert(i), r::inserted) << i;  // fills a gap: the neighbours join
        }
        EXPECT_EQ(q.ooo_count(), 1u);
        std::array<tcp_sack_block, 4> b{};
        ASSERT_EQ(q.sack_blocks(b), 1u);
        EXPECT_EQ(b[0], (tcp_sack_block{seq_num(1000), seq_num(1000 + 100 * 64)}));
        bool fin = false;
        EXPECT_EQ(q.drain(seq_num(1000), fin).value(), 1000u + 100 * 64);
        std::array<tcp_rx_piece, 4> out{};
        ASSERT_EQ(q.pop(out), 1u);
        bytes want;
        for (uint32_t i = 0; i < 64; ++i) {
            const bytes d = pattern(100, static_cast<uint8_t>(i));
            want.insert(want.end(), d.begin(), d.end());
        }
        EXPECT_EQ(out[0].off, 0u);
        EXPECT_EQ(out[0].len, 6400u);
        EXPECT_EQ(out[0].m->pkt_len, 6400u);
        EXPECT_EQ(chain_bytes(out[0].m, 0, 6400), want);
        uint32_t segs = 0;
        for (const rte_mbuf *s = out[0].m; s != nullptr; s = s->next) {
            ++segs;
        }
        EXPECT_EQ(segs, out[0].m->nb_segs);
        rte_pktmbuf_free(out[0].m);
    }
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);  // nothing leaked
}

// A piece whose mbuf someone else also holds is not cut or chained.
TEST(TcpRecvQueue, SharedMbufIsNotChained) {
    ASSERT_NE(g_pool, nullptr);
    tcp_recv_queue q;
    using r = tcp_recv_queue::ooo_result;
    rte_mbuf *a = make_chain(pattern(120), 1024);
    rte_mbuf *shared = make_chain(pattern(120, 100), 1024);
    rte_mbuf_refcnt_update(shared, 1);  // a second holder
    EXPECT_EQ(q.insert_ooo(seq_num(100), tcp_rx_piece{a, 10, 100}, false), r::inserted);
    EXPECT_EQ(q.insert_ooo(seq_num(200), tcp_rx_piece{shared, 10, 100}, false), r::inserted);
    EXPECT_EQ(q.ooo_count(), 2u);  // touching, but kept apart
    EXPECT_EQ(shared->data_len, 120u);
    EXPECT_EQ(rte_pktmbuf_mtod(shared, const uint8_t *)[0], 100);
    bool fin = false;
    EXPECT_EQ(q.drain(seq_num(100), fin).value(), 300u);
    std::array<tcp_rx_piece, 4> out{};
    ASSERT_EQ(q.pop(out), 2u);
    EXPECT_EQ(chain_bytes(out[0].m, out[0].off, out[0].len), pattern(100, 10));
    EXPECT_EQ(chain_bytes(out[1].m, out[1].off, out[1].len), pattern(100, 110));
    rte_pktmbuf_free(out[0].m);
    rte_pktmbuf_free(out[1].m);
    rte_pktmbuf_free(shared);  // the other holder's reference
}

TEST(TcpSendQueue, GatherAcrossChainsAndRelease) {
    ASSERT_NE(g_pool, nullptr);
    tcp_send_queue q(1000);
    EXPECT_EQ(q.push(make_chain(pattern(300), 100)), 300u);
    EXPECT_EQ(q.push(make_chain(pattern(800, 44), 500)), 800u);  // soft limit: taken
    rte_mbuf *extra = make_chain(pattern(10));
    EXPECT_EQ(q.push(extra), 0u);  // 1100 >= 1000
    rte_pktmbuf_free(extra);
    std::array<tcp_payload_ref, 16> refs;
    std::size_t n = 0;
    EXPECT_EQ(q.gather(250, 400, refs, n), 400u);
    ASSERT_EQ(n, 2u);  // 50 of the 3rd 100-byte segment, 350 of the 500-byte one
    EXPECT_EQ(refs[0].off, 50u);
    EXPECT_EQ(refs[0].len, 50u);
    EXPECT_EQ(refs[1].off, 0u);
    EXPECT_EQ(refs[1].len, 350u);
    EXPECT_EQ(rte_pktmbuf_mtod(refs[1].m, const uint8_t *)[0], 44);
    q.release(350);
    EXPECT_EQ(q.bytes(), 750u);
    EXPECT_EQ(q.chains(), 1u);
    EXPECT_EQ(q.gather(0, 10, std::span(refs).first(1), n), 10u);
    EXPECT_EQ(refs[0].off, 50u);
    EXPECT_EQ(q.gather(0, 750, std::span(refs).first(1), n), 450u);  // refs ran out
}

}  // namespace
}  // namespace ferry::net
