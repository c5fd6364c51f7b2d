// Helpers for the scripts of tcp_conn as a sender of 1000-octet segments
// (tcp_conn_rack_script_test.cpp, tcp_conn_prr_script_test.cpp): segment
// numbers, the data they carry, the peer's ACKs with SACK blocks, and a
// connection established over a path of a known RTT.
#pragma once

#include <initializer_list>
#include <utility>

#include <gtest/gtest.h>

#include "ferry/net/tcp_conn.h"
#include "tcp_conn_harness.h"

namespace ferry::net::test::sender {

inline constexpr uint32_t L = tcp_harness::local_iss;
inline constexpr uint32_t P = tcp_harness::peer_iss;
inline constexpr uint64_t rtt = 10 * ms;   // the path's
inline constexpr uint64_t rto = 200 * ms;  // RTO with that RTT: its floor

// The first octet of data segment k (1-based, 1000 octets each).
constexpr uint32_t S(uint32_t k) {
    return L + 1 + 1000 * (k - 1);
}

inline tcp_options sack(std::initializer_list<std::pair<uint32_t, uint32_t>> blocks) {
    tcp_options o;
    for (auto [l, r] : blocks) {
        o.sack[o.sack_count++] = tcp_sack_block{seq_num(l), seq_num(r)};
    }
    return o;
}

// Data segment k (k >= 2) as the connection sends it: the script's stream
// starts at segment 2 (segment 1 is establish()'s), so segment k carries
// the stream's octets from 1000 * (k - 2). A retransmission has no PSH.
inline seg data(uint32_t k, bool psh = false) {
    return {static_cast<uint8_t>(tcp_flag::ack | (psh ? tcp_flag::psh : 0)), S(k), P + 1, 10000,
            pattern(1000, static_cast<uint8_t>(1000 * (k - 2)))};
}
inline seg rtx(uint32_t k) {
    return data(k);
}

// What the peer sends: an ACK of everything below `ack`, with SACK blocks,
// and its window.
inline seg ack_to(uint32_t ack, std::initializer_list<std::pair<uint32_t, uint32_t>> blocks = {},
                  uint16_t window = 20000) {
    return {tcp_flag::ack, P + 1, ack, window, {}, sack(blocks)};
}

// The peer and the path of establish().
struct path {
    uint16_t peer_window = 20000;
    uint32_t initial_window = 10;  // ours, in segments
    bool rack = true;
};

// Passive open with SACK-permitted both ways (RACK as `p.rack`), then one
// segment answered after exactly `rtt`. It leaves SRTT = 10 ms, RTO 200 ms,
// with RACK RACK.rtt = RACK.min_RTT = 10 ms and no reordering seen, cwnd =
// p.initial_window + 1 segments (slow start), nothing outstanding.
inline void establish(tcp_harness &t, const path &p = {}) {
    t.cfg.sack = true;
    t.cfg.rack = p.rack;
    t.cfg.cc.initial_window_segments = p.initial_window;
    t.create();
    tcp_repr syn;
    syn.src_port = tcp_harness::peer_port;
    syn.dst_port = tcp_harness::local_port;
    syn.seq = seq_num(P);
    syn.flags = tcp_flag::syn;
    syn.window = p.peer_window;
    syn.options.mss = 1000;
    syn.options.sack_permitted = true;
    ASSERT_TRUE(t.conn->open_passive(syn, t.now));
    tcp_options want = tcp_harness::mss_opt(1000);
    want.sack_permitted = true;
    t.expect_seg({tcp_flag::syn | tcp_flag::ack, L, P + 1, 10000, {}, want});
    t.now += rtt;
    t.send_seg({tcp_flag::ack, P + 1, L + 1, p.peer_window});
    ASSERT_EQ(t.conn->state(), tcp_state::established);
    ASSERT_TRUE(t.conn->sack_enabled());
    (void)t.conn->take_events();
    ASSERT_EQ(t.app_send(pattern(1000)), 1000u);
    t.expect_seg({tcp_flag::ack | tcp_flag::psh, S(1), P + 1, 10000, pattern(1000)});
    t.advance(rtt);
    t.send_seg(ack_to(S(2), {}, p.peer_window));
    t.expect_nothing();
    ASSERT_EQ(t.conn->rtt().srtt_ns(), rtt);
    ASSERT_EQ(t.conn->rtt().rto_ns(), rto);
    if (p.rack) {
        ASSERT_EQ(t.conn->rack().rack_rtt(), rtt);
        ASSERT_EQ(t.conn->rack().min_rtt(), rtt);
        ASSERT_FALSE(t.conn->rack().reordering_seen());
    }
    ASSERT_EQ(t.conn->cc().cwnd(), 1000u * (p.initial_window + 1));
    ASSERT_EQ(t.conn->next_deadline(), tcp_conn::never);
}

}  // namespace ferry::net::test::sender
