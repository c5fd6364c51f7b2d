// The TCP layer on a real stack and real mbufs: segments in as frames, exact
// segments and counters out. RFC 9293 §3.10.7.1 (no connection), §3.10.7.2
// (LISTEN), RFC 4987 §3.6 (SYN cookies), the flow table, handles, timers.
#include "ferry/net/tcp_layer.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "ferry/net/mbuf_chain.h"
#include "ferry/net/stack.h"
#include "ferry/net/steering.h"
#include "stack_test_env.h"
#include "tcp_test_util.h"
#include "test_util.h"

namespace ferry::net {
namespace {

using namespace test;

const ipv4_addr our_ip = ipv4_addr::from_octets(10, 0, 0, 1);
const ipv4_addr peer_ip = ipv4_addr::from_octets(10, 0, 0, 2);
constexpr uint64_t ms = 1'000'000;

struct seg_out {
    tcp_repr h;
    bytes data;
};

class TcpLayerTest : public testing::Test {
protected:
    void SetUp() override { start(tcp_layer_config{}); }

    void start(tcp_layer_config cfg, uint32_t max_connections = 4) {
        ASSERT_NE(g_pool, nullptr);
        layer_.reset();
        st_.reset();
        if (!avail0_)
            avail0_ = rte_mempool_avail_count(g_pool);
        iface_config ic;
        ic.mac = mac_addr({0x02, 0, 0, 0, 0, 0x01});
        ic.addr = our_ip;
        st_.emplace(ic, g_pool, nc_);
        cfg.max_connections = max_connections;
        cfg.conn.timestamps = timestamps_;  // off unless a test turns them on
        cfg.isn_key = siphash_key{1, 2};
        cfg.cookie_key0 = siphash_key{3, 4};
        cfg.cookie_key1 = siphash_key{5, 6};
        layer_.emplace(cfg, *st_, g_pool, nc_, tc_);
        st_->attach_tcp(&*layer_);
        // The peer's ARP request teaches the stack its MAC (no ARP for our replies).
        arp_spec a;
        input_frame(concat({eth_header(bcast_mac, peer_mac, 0x0806), build_arp(a)}), 0);
        take();
    }

    void TearDown() override {
        layer_.reset();
        st_.reset();
        if (avail0_) {
            EXPECT_EQ(rte_mempool_avail_count(g_pool), *avail0_) << "mbuf leak";
        }
    }

    void input_frame(const bytes &f, uint64_t now) {
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        rte_mbuf *b[] = {m};
        st_->input_burst(b, now);
    }

    // A segment from the peer: header `h` (payload_len from data), checksum
    // right unless `corrupt`.
    void send(tcp_repr h, const bytes &data = {}, uint64_t now = 0, bool corrupt = false) {
        h.payload_len = static_cast<uint32_t>(data.size());
        bytes seg(h.header_len() + data.size());
        std::copy(data.begin(), data.end(), seg.begin() + static_cast<long>(h.header_len()));
        tcp_segment s{std::span<uint8_t>(seg)};
        h.emit(s, peer_ip, our_ip);
        if (corrupt)
            seg[seg.size() - 1] ^= 0x40;
        ipv4_spec ip;
        ip.protocol = 6;
        ip.payload = seg;
        input_frame(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(ip)}), now);
    }

    // Every TCP segment queued for tx, parsed (checksum verified), freed.
    std::vector<seg_out> take() {
        std::vector<seg_out> out;
        for (bytes &f : take_tx_frames(*st_)) {
            if (f.size() < 34 || f[23] != 6)
                continue;  // not TCP (ARP)
            tcp_segment s(std::span<uint8_t>(f).subspan(34));
            EXPECT_TRUE(s.verify_checksum(our_ip, peer_ip)) << "bad checksum";
            seg_out o;
            EXPECT_EQ(tcp_repr::parse(s, o.h), tcp_error::none);
            o.data.assign(s.payload().begin(), s.payload().end());
            out.push_back(o);
        }
        return out;
    }

    static tcp_repr seg(uint16_t sport, uint16_t dport, uint32_t seq, uint8_t flags,
                        uint32_t ack = 0) {
        return tcp_seg(sport, dport, seq, flags, ack);
    }

    std::vector<tcp_notice> events() {
        tcp_notice n[16];
        const std::size_t k = layer_->poll_events(n);
        return {n, n + k};
    }

    // Handshake to `port` from peer port `sport`; returns our ISS.
    uint32_t handshake(uint16_t sport, uint16_t port, uint32_t peer_iss) {
        tcp_repr syn = seg(sport, port, peer_iss, tcp_flag::syn);
        syn.options.mss = 1460;
        send(syn);
        auto out = take();
        EXPECT_EQ(out.size(), 1u);
        if (out.empty())
            return 0;
        EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
        EXPECT_EQ(out[0].h.ack, seq_num(peer_iss + 1));
        const uint32_t iss = out[0].h.seq.value();
        send(seg(sport, port, peer_iss + 1, tcp_flag::ack, iss + 1));
        return iss;
    }

    bool timestamps_ = false;
    net_counters nc_;
    tcp_counters tc_;
    std::optional<stack> st_;
    std::optional<tcp_layer> layer_;
    std::optional<unsigned> avail0_;
};

TEST_F(TcpLayerTest, closed_port_syn_gets_rst_ack) {
    // RFC 9293 §3.10.7.1: ACK off -> <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
    send(seg(40000, 80, 1000, tcp_flag::syn));
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::rst | tcp_flag::ack);
    EXPECT_EQ(out[0].h.seq, seq_num(0));
    EXPECT_EQ(out[0].h.ack, seq_num(1001));
    EXPECT_EQ(out[0].h.src_port, 80);
    EXPECT_EQ(out[0].h.dst_port, 40000);
    EXPECT_EQ(nc_.tcp_rst_sent_no_flow.get(), 1u);
}

TEST_F(TcpLayerTest, closed_port_ack_gets_rst_at_seg_ack_and_rst_gets_nothing) {
    // "If the ACK bit is on, <SEQ=SEG.ACK><CTL=RST>"; data counts in SEG.LEN.
    send(seg(40000, 80, 1000, tcp_flag::ack, 777), from_string("hello"));
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::rst);
    EXPECT_EQ(out[0].h.seq, seq_num(777));
    // "An incoming segment containing a RST is discarded."
    send(seg(40000, 80, 1000, tcp_flag::rst));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(nc_.tcp_drop_rst_no_flow.get(), 1u);
}

TEST_F(TcpLayerTest, bad_checksum_is_dropped_and_counted) {
    send(seg(40000, 80, 1000, tcp_flag::syn), from_string("xyz"), 0, true);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(nc_.tcp_drop_bad_checksum.get(), 1u);
    EXPECT_EQ(nc_.tcp_rx.get(), 1u);
}

TEST_F(TcpLayerTest, listener_drops_syn_fin_and_syn_rst_without_state) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    send(seg(40000, 7, 1000, tcp_flag::syn | tcp_flag::fin));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(nc_.tcp_drop_syn_fin.get(), 1u);
    send(seg(40001, 7, 1000, tcp_flag::syn | tcp_flag::rst));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(nc_.tcp_drop_listen_other.get(), 1u);
    EXPECT_EQ(layer_->active(), 0u);
    // A plain SYN from the same port is still answered.
    send(seg(40000, 7, 2000, tcp_flag::syn));
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
}

TEST_F(TcpLayerTest, passive_open_data_close_and_stale_handle) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    EXPECT_EQ(layer_->listen(7), tcp_layer::listen_result::already);
    const uint32_t iss = handshake(5000, 7, 100);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::connected);
    EXPECT_EQ(ev[0].local_port, 7);
    const tcp_handle h = ev[0].h;
    ASSERT_NE(layer_->get(h), nullptr);
    EXPECT_EQ(layer_->get(h)->state(), tcp_state::established);

    // Data in, read it, send it back (zero-copy: the received chain).
    send(seg(5000, 7, 101, tcp_flag::ack | tcp_flag::psh, iss + 1), from_string("ping"));
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::readable);
    tcp_rx_piece p[4];
    ASSERT_EQ(layer_->recv(h, p, 0), 1u);
    EXPECT_EQ(p[0].len, 4u);
    rte_mbuf *m = p[0].m;
    ASSERT_NE(rte_pktmbuf_adj(m, static_cast<uint16_t>(p[0].off)), nullptr);
    rte_pktmbuf_trim(m, static_cast<uint16_t>(rte_pktmbuf_pkt_len(m) - 4));
    ASSERT_EQ(layer_->send(h, m, 0), 4u);
    auto out = take();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back().data, from_string("ping"));
    EXPECT_EQ(out.back().h.seq, seq_num(iss + 1));

    // Peer FIN, our close: LAST-ACK, then the final ACK frees the slot.
    send(seg(5000, 7, 105, tcp_flag::ack | tcp_flag::fin, iss + 5));
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::peer_fin);
    layer_->close(h, 0);
    out = take();
    ASSERT_FALSE(out.empty());
    EXPECT_TRUE(out.back().h.has(tcp_flag::fin));
    send(seg(5000, 7, 106, tcp_flag::ack, iss + 6));
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::closed);
    // Until the next poll_events() the slot is kept (nothing reuses it while
    // the application handles this batch); the handle names a CLOSED
    // connection, and calls on it do nothing.
    ASSERT_NE(layer_->get(h), nullptr);
    EXPECT_EQ(layer_->get(h)->state(), tcp_state::closed);
    layer_->close(h, 0);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(layer_->active(), 0u);
    EXPECT_TRUE(events().empty());  // frees the slot
    EXPECT_EQ(layer_->get(h), nullptr) << "a handle outlives its connection";
    EXPECT_EQ(nc_.conn_opened.get(), 1u);
    EXPECT_EQ(nc_.conn_closed.get(), 1u);

    // The same 4-tuple now has no flow: an ACK gets a RST.
    send(seg(5000, 7, 106, tcp_flag::ack, iss + 6));
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::rst);
}

// Before the lcore sleeps, the connections whose delayed ACKs their timer
// sent last time send the one they owe now (the timer would wake the lcore
// for it); the others keep theirs delayed, and connections with nothing due
// are left alone.
TEST_F(TcpLayerTest, before_a_sleep_only_acks_the_timer_would_send_go_early) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    uint32_t iss[3];
    for (uint16_t i = 0; i < 3; ++i) iss[i] = handshake(5000 + i, 7, 100);
    (void)events();
    EXPECT_EQ(layer_->ack_before_sleep(0), 0u);  // nothing owed
    // 5000 and 5001 get data whose ACK the timer sends at 40 ms.
    for (uint16_t i = 0; i < 2; ++i)
        send(seg(5000 + i, 7, 101, tcp_flag::ack, iss[i] + 1), from_string("one"), 0);
    EXPECT_TRUE(take().empty());
    layer_->poll_timers(40 * ms);
    EXPECT_EQ(take().size(), 2u);
    EXPECT_EQ(tc_.delayed_acks.get(), 2u);
    // Data on all three at 100 ms, then the lcore is about to sleep.
    for (uint16_t i = 0; i < 3; ++i) {
        const uint32_t seq = i < 2 ? 104 : 101;
        send(seg(5000 + i, 7, seq, tcp_flag::ack, iss[i] + 1), from_string("two"), 100 * ms);
    }
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(layer_->ack_before_sleep(100 * ms), 2u);
    auto out = take();
    ASSERT_EQ(out.size(), 2u);
    for (const seg_out &o : out) {
        EXPECT_EQ(o.h.flags, tcp_flag::ack);
        EXPECT_TRUE(o.data.empty());
        EXPECT_EQ(o.h.ack, seq_num(107));
        EXPECT_NE(o.h.dst_port, 5002);
    }
    EXPECT_EQ(tc_.idle_acks.get(), 2u);
    // 5002's ACK still waits for its timer, the only deadline left soon.
    EXPECT_EQ(layer_->next_deadline(), 140 * ms);
    EXPECT_EQ(layer_->ack_before_sleep(100 * ms), 0u);
    layer_->poll_timers(140 * ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.dst_port, 5002);
    EXPECT_EQ(out[0].h.ack, seq_num(104));
}

// More connections owe an ACK before a sleep than one walk of the timer heap
// collects (64): the walk repeats until none is left, and passes over those
// whose ACKs ride on their data.
TEST_F(TcpLayerTest, before_a_sleep_every_owed_ack_goes_however_many_connections_owe_one) {
    constexpr uint16_t n = 150;
    start(tcp_layer_config{}, 256);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    std::vector<uint32_t> iss(n);
    for (uint16_t i = 0; i < n; ++i) iss[i] = handshake(5000 + i, 7, 100);
    (void)events();
    // Every connection but each fifth gets data whose ACK the timer sends.
    for (uint16_t i = 0; i < n; ++i)
        if (i % 5 != 0) send(seg(5000 + i, 7, 101, tcp_flag::ack, iss[i] + 1), from_string("one"), 0);
    EXPECT_TRUE(take().empty());
    layer_->poll_timers(40 * ms);
    EXPECT_EQ(take().size(), n - n / 5);
    // Data on all of them at 100 ms, then the lcore is about to sleep.
    for (uint16_t i = 0; i < n; ++i) {
        const uint32_t seq = i % 5 != 0 ? 104 : 101;
        send(seg(5000 + i, 7, seq, tcp_flag::ack, iss[i] + 1), from_string("two"), 100 * ms);
    }
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(layer_->ack_before_sleep(100 * ms), uint32_t{n - n / 5});
    auto out = take();
    ASSERT_EQ(out.size(), n - n / 5);
    std::vector<bool> acked(n);
    for (const seg_out &o : out) {
        const uint16_t i = static_cast<uint16_t>(o.h.dst_port - 5000);
        ASSERT_LT(i, n);
        EXPECT_NE(i % 5, 0) << "its ACK was not the timer's";
        EXPECT_FALSE(acked[i]) << "two ACKs to " << o.h.dst_port;
        acked[i] = true;
        EXPECT_EQ(o.h.ack, seq_num(107));
    }
    EXPECT_EQ(tc_.idle_acks.get(), uint64_t{n - n / 5});
    EXPECT_EQ(layer_->ack_before_sleep(100 * ms), 0u);
    // The others' ACKs still wait for their timers.
    layer_->poll_timers(140 * ms);
    EXPECT_EQ(take().size(), n / 5);
}

// conn.defer_output (issue 17): what a loop iteration queues leaves at
// flush() in as few segments as the MSS allows, carrying the ACK owed for
// the data that came in; a duplicate ACK for out-of-order data does not wait.
TEST_F(TcpLayerTest, deferred_output_leaves_at_flush_in_full_segments_with_the_ack) {
    tcp_layer_config cfg;
    cfg.conn.defer_output = true;
    start(cfg);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(5000, 7, 100);
    const auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    const tcp_handle h = ev[0].h;

    // Two segments of data in one burst: the second makes an ACK due
    // (RFC 5681 §4.2), but it waits for what the application writes.
    send(seg(5000, 7, 101, tcp_flag::ack, iss + 1), from_string("GET "));
    send(seg(5000, 7, 105, tcp_flag::ack | tcp_flag::psh, iss + 1), from_string("/\r\n"));
    EXPECT_TRUE(take().empty()) << "the ACK went before flush()";
    EXPECT_EQ(layer_->flush_pending(), 1u);
    tcp_rx_piece p[4];
    const std::size_t n = layer_->recv(h, p, 0);
    for (std::size_t i = 0; i < n; ++i) rte_pktmbuf_free(p[i].m);
    // A response head and its body written apart: one segment at flush().
    auto chain = [](std::string_view s) {
        return chain_from(g_pool, s.data(), static_cast<uint32_t>(s.size()));
    };
    ASSERT_EQ(layer_->send(h, chain("HTTP/1.1 200 OK\r\n\r\n"), 0), 19u);
    ASSERT_EQ(layer_->send(h, chain("abc"), 0), 3u);
    EXPECT_TRUE(take().empty());
    layer_->flush(0);
    EXPECT_EQ(layer_->flush_pending(), 0u);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data, from_string("HTTP/1.1 200 OK\r\n\r\nabc"));
    EXPECT_EQ(out[0].h.seq, seq_num(iss + 1));
    EXPECT_EQ(out[0].h.ack, seq_num(108));
    layer_->flush(0);
    EXPECT_TRUE(take().empty()) << "a second flush sends nothing";

    // Out-of-order data: its duplicate ACK goes at once.
    send(seg(5000, 7, 200, tcp_flag::ack, iss + 23), from_string("late"));
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.ack, seq_num(108));
    EXPECT_TRUE(out[0].data.empty());
    layer_->abort(h, 0);
    take();
    (void)events();
}

// An idle keep-alive connection (a request read, its answer acknowledged)
// holds no ring block: the memory a connection costs while idle is its state
// alone (issue 15). The blocks come back as each queue empties.
TEST_F(TcpLayerTest, an_idle_connection_holds_no_ring_blocks) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(5000, 7, 100);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    const tcp_handle h = ev[0].h;
    EXPECT_EQ(layer_->blocks().in_use(), 0u);
    uint32_t seq = 101, ack = iss + 1;
    for (int round = 0; round < 3; ++round) {
        send(seg(5000, 7, seq, tcp_flag::ack | tcp_flag::psh, ack), from_string("GET"));
        seq += 3;
        ASSERT_FALSE(events().empty());
        EXPECT_EQ(layer_->blocks().in_use(), 1u);  // the receive ring
        tcp_rx_piece p[4];
        ASSERT_EQ(layer_->recv(h, p, 0), 1u);
        rte_pktmbuf_free(p[0].m);
        EXPECT_EQ(layer_->blocks().in_use(), 0u);
        rte_mbuf *answer = rte_pktmbuf_alloc(g_pool);
        ASSERT_NE(answer, nullptr);
        std::memset(rte_pktmbuf_append(answer, 500), 'a', 500);
        ASSERT_EQ(layer_->send(h, answer, 0), 500u);
        EXPECT_EQ(layer_->blocks().in_use(), 1u);  // the send ring, until acknowledged
        (void)take();
        ack += 500;
        send(seg(5000, 7, seq, tcp_flag::ack, ack));
        (void)events();
        EXPECT_EQ(layer_->blocks().in_use(), 0u) << "round " << round;
    }
    ASSERT_NE(layer_->get(h), nullptr);
    EXPECT_EQ(layer_->get(h)->state(), tcp_state::established);
    EXPECT_EQ(layer_->blocks().touched(), 1u);  // one block, reused every time
    EXPECT_EQ(layer_->blocks().exhausted(), 0u);
}

TEST_F(TcpLayerTest, syn_ack_retransmitted_by_stack_timers) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    send(seg(5000, 7, 100, tcp_flag::syn));
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    const uint64_t d = st_->next_deadline();
    ASSERT_NE(d, UINT64_MAX);
    st_->poll_timers(d - 1);
    EXPECT_TRUE(take().empty());
    st_->poll_timers(d);
    auto again = take();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].h.flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(again[0].h.seq, out[0].h.seq);
}

// With a ts_key (as main.cpp sets one for the process), every connection
// between two addresses sends the same timestamp clock, whichever layer
// (lcore) holds it and whatever else the layer's config says: a cookie
// SYN-ACK's TSval and the rebuilt connection's agree, so the peer's PAWS
// never sees ferry's clock step back (before, each lcore had its own random
// offset).
TEST_F(TcpLayerTest, one_ts_key_gives_every_connection_to_a_peer_the_same_clock) {
    tcp_layer_config c;
    c.syn_backlog = 1;
    c.conn.ts_offset = 0x12345678;  // ignored with a key
    c.ts_key = siphash_key{0x0102030405060708ull, 0x1112131415161718ull};
    timestamps_ = true;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    tcp_repr syn = seg(5000, 7, 100, tcp_flag::syn);
    syn.options.timestamps = tcp_timestamps{1000, 0};
    send(syn);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].h.options.timestamps.has_value());
    // The cookie path: the backlog is full, the SYN-ACK carries the same clock.
    tcp_repr syn2 = seg(5001, 7, 9000, tcp_flag::syn);
    syn2.options.timestamps = tcp_timestamps{1000, 0};
    send(syn2);
    auto out2 = take();
    ASSERT_EQ(out2.size(), 1u);
    ASSERT_TRUE(out2[0].h.options.timestamps.has_value());
    ASSERT_EQ(nc_.syn_cookies_sent.get(), 1u);
    const uint32_t expected = tcp_ts_offset(c.ts_key, our_ip, peer_ip);  // the clock is 0 ms
    // Same instant: the plain SYN-ACK's TSval is exactly clock + offset; the
    // cookie's low bits carry its options (tcp_syncookie.h), the rest agrees.
    EXPECT_EQ(out[0].h.options.timestamps->tsval, expected);
    EXPECT_LT(expected - out2[0].h.options.timestamps->tsval, 128u);  // at most a step back
    EXPECT_NE(expected, c.conn.ts_offset);
}

TEST_F(TcpLayerTest, full_backlog_answers_with_syn_cookies) {
    tcp_layer_config c;
    c.syn_backlog = 1;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    send(seg(5000, 7, 100, tcp_flag::syn));
    ASSERT_EQ(take().size(), 1u);
    EXPECT_EQ(layer_->active(), 1u);

    tcp_repr syn = seg(5001, 7, 9000, tcp_flag::syn);
    syn.options.mss = 1460;
    send(syn, {}, 10 * ms);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(layer_->active(), 1u) << "a cookie SYN-ACK takes no slot";
    EXPECT_EQ(nc_.listen_backlog_full.get(), 1u);
    EXPECT_EQ(nc_.syn_cookies_sent.get(), 1u);

    // A forged ACK: RST, counted.
    send(seg(5001, 7, 9001, tcp_flag::ack, out[0].h.seq.value() + 2), {}, 20 * ms);
    auto rst = take();
    ASSERT_EQ(rst.size(), 1u);
    EXPECT_EQ(rst[0].h.flags, tcp_flag::rst);
    EXPECT_EQ(nc_.syn_cookie_rejected.get(), 1u);

    // The right ACK (with data) rebuilds the connection: ESTABLISHED, data queued.
    send(seg(5001, 7, 9001, tcp_flag::ack, out[0].h.seq.value() + 1), from_string("hi"), 20 * ms);
    EXPECT_EQ(nc_.syn_cookies_validated.get(), 1u);
    EXPECT_EQ(layer_->active(), 2u);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::connected);
    tcp_conn *conn = layer_->get(ev[0].h);
    ASSERT_NE(conn, nullptr);
    EXPECT_EQ(conn->state(), tcp_state::established);
    EXPECT_EQ(conn->recv_queued(), 2u);
    EXPECT_EQ(conn->snd_mss(), 1460);
}

TEST_F(TcpLayerTest, pool_exhaustion_is_counted) {
    tcp_layer_config c;
    c.syn_cookies = false;
    start(c);  // 4 slots
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    for (uint16_t i = 0; i < 5; ++i)
        send(seg(static_cast<uint16_t>(6000 + i), 7, 1, tcp_flag::syn));
    EXPECT_EQ(take().size(), 4u);
    EXPECT_EQ(layer_->active(), 4u);
    EXPECT_EQ(nc_.flow_table_full.get(), 1u);
}

TEST_F(TcpLayerTest, shared_port_does_not_reset_another_lcores_flow) {
    tcp_layer_config c;
    c.shared_port = true;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    send(seg(5000, 7, 100, tcp_flag::ack, 12345), from_string("data"));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(nc_.tcp_drop_not_owner.get(), 1u);
    EXPECT_EQ(nc_.tcp_rst_sent_no_flow.get(), 0u);
}

TEST_F(TcpLayerTest, active_open_handshake_data_and_close) {
    // RFC 9293 §3.10.1 OPEN (active): SYN-SENT, then the SYN-ACK makes it
    // ESTABLISHED and the app gets `connected` on an `active` notice.
    tcp_handle h;
    ASSERT_EQ(layer_->connect(peer_ip, 8080, 0, h), tcp_layer::connect_result::ok);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn);
    EXPECT_EQ(out[0].h.dst_port, 8080);
    const uint16_t lport = out[0].h.src_port;
    EXPECT_GE(lport, 32768);
    EXPECT_LE(lport, 60999);
    const uint32_t iss = out[0].h.seq.value();
    tcp_repr sa = seg(8080, lport, 7000, tcp_flag::syn | tcp_flag::ack, iss + 1);
    sa.options.mss = 1460;
    send(sa, {}, ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);  // the ACK of the handshake
    EXPECT_EQ(out[0].h.flags, tcp_flag::ack);
    EXPECT_EQ(out[0].h.ack, seq_num(7001));
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].active);
    EXPECT_EQ(ev[0].h, h);
    EXPECT_EQ(ev[0].local_port, lport);
    EXPECT_TRUE(ev[0].events & tcp_event::connected);
    layer_->abort(h, 2 * ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].h.flags & tcp_flag::rst);
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::closed);
    EXPECT_EQ(ev[0].reason, tcp_close_reason::aborted);
    EXPECT_EQ(layer_->active(), 0u);
}

TEST_F(TcpLayerTest, connect_refused_reports_reason) {
    tcp_handle h;
    ASSERT_EQ(layer_->connect(peer_ip, 81, 0, h), tcp_layer::connect_result::ok);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    // RST,ACK acknowledging our SYN: ECONNREFUSED (RFC 9293 §3.10.7.3 SYN-SENT).
    send(seg(81, out[0].h.src_port, 0, tcp_flag::rst | tcp_flag::ack, out[0].h.seq.value() + 1));
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::closed);
    EXPECT_EQ(ev[0].reason, tcp_close_reason::refused);
}

TEST_F(TcpLayerTest, connect_uses_distinct_ports_and_reports_exhaustion) {
    tcp_layer_config c;
    c.ephemeral_lo = 40000;
    c.ephemeral_hi = 40002;  // three ports, four slots
    start(c);
    std::vector<uint16_t> ports;
    tcp_handle h;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(layer_->connect(peer_ip, 80, 0, h), tcp_layer::connect_result::ok);
        auto out = take();
        ASSERT_EQ(out.size(), 1u);
        ports.push_back(out[0].h.src_port);
    }
    std::sort(ports.begin(), ports.end());
    EXPECT_EQ(ports, (std::vector<uint16_t>{40000, 40001, 40002}));
    EXPECT_EQ(layer_->connect(peer_ip, 80, 0, h), tcp_layer::connect_result::no_port);
    EXPECT_EQ(nc_.tcp_connect_no_port.get(), 1u);
    // Another destination port is another tuple: the same local ports serve.
    EXPECT_EQ(layer_->connect(peer_ip, 81, 0, h), tcp_layer::connect_result::ok);
    take();
    EXPECT_EQ(layer_->connect(peer_ip, 82, 0, h), tcp_layer::connect_result::no_slot);
    EXPECT_EQ(layer_->connect(ipv4_addr::any(), 82, 0, h), tcp_layer::connect_result::bad_address);
}

struct handoff_sink {
    std::vector<std::pair<uint16_t, rte_mbuf *>> got;
    bool accept = true;
    static bool take(void *ctx, uint16_t owner, rte_mbuf *m) noexcept {
        auto *s = static_cast<handoff_sink *>(ctx);
        if (!s->accept) return false;
        s->got.emplace_back(owner, m);
        return true;
    }
};

TEST_F(TcpLayerTest, connect_picks_ports_this_queue_owns) {
    handoff_sink sink;
    tcp_layer_config c;
    c.queue = 2;
    c.nqueues = 4;
    c.handoff = handoff_sink::take;
    c.handoff_ctx = &sink;
    start(c);
    tcp_handle h;
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(layer_->connect(peer_ip, 80, 0, h), tcp_layer::connect_result::ok);
        auto out = take();
        ASSERT_EQ(out.size(), 1u);
        const uint16_t lport = out[0].h.src_port;
        EXPECT_EQ(flow_queue(flow_steer_hash(our_ip.value(), lport, peer_ip.value(), 80), 4), 2u);
        EXPECT_EQ(layer_->owner_of(tcp_tuple{our_ip, peer_ip, lport, 80}), 2u);
    }
    EXPECT_TRUE(sink.got.empty());
}

TEST_F(TcpLayerTest, segments_of_other_queues_flows_are_handed_over) {
    handoff_sink sink;
    tcp_layer_config c;
    c.queue = 0;
    c.nqueues = 2;
    c.handoff = handoff_sink::take;
    c.handoff_ctx = &sink;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    // Source ports of both owners: ours are answered here, the others leave.
    uint16_t mine = 0, theirs = 0;
    for (uint16_t p = 5000; mine == 0 || theirs == 0; ++p)
        (layer_->owner_of(tcp_tuple{our_ip, peer_ip, 7, p}) == 0 ? mine : theirs) = p;
    send(seg(theirs, 7, 100, tcp_flag::syn));
    EXPECT_TRUE(take().empty());
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].first, 1u);
    EXPECT_EQ(nc_.tcp_handoff_out.get(), 1u);
    EXPECT_EQ(nc_.tcp_rx.get(), 0u);  // counted by the owner
    // The owner's stack takes it through input_handoff: here, a second layer
    // plays queue 1 on its own stack.
    net_counters nc1;
    tcp_counters tc1;
    iface_config ic;
    ic.mac = mac_addr({0x02, 0, 0, 0, 0, 0x01});
    ic.addr = our_ip;
    {
        stack st1(ic, g_pool, nc1);
        tcp_layer_config c1 = c;
        c1.queue = 1;
        tcp_layer l1(c1, st1, g_pool, nc1, tc1);
        st1.attach_tcp(&l1);
        ASSERT_EQ(l1.listen(7), tcp_layer::listen_result::ok);
        st1.learn_shared(peer_ip, mac_addr({0x02, 0, 0, 0, 0, 0x02}), 0);  // as the neighbor hook would
        EXPECT_EQ(nc1.neigh_shared_in.get(), 1u);
        st1.input_handoff(sink.got[0].second, 0);
        EXPECT_EQ(nc1.tcp_handoff_in.get(), 1u);
        EXPECT_EQ(nc1.tcp_rx.get(), 1u);
        EXPECT_EQ(l1.active(), 1u);  // SYN-RECEIVED on the owner
        auto tx = st1.tx_pending();
        ASSERT_EQ(tx.size(), 1u);  // its SYN-ACK, addressed without an ARP of its own
        rte_pktmbuf_free_bulk(tx.data(), static_cast<unsigned>(tx.size()));
        st1.tx_consumed(static_cast<uint16_t>(tx.size()));
        st1.attach_tcp(nullptr);
    }
    // A full cross-core queue: dropped and counted, the frame freed.
    sink.accept = false;
    send(seg(theirs, 7, 100, tcp_flag::syn));
    EXPECT_EQ(nc_.tcp_drop_handoff_full.get(), 1u);
    // Our own flow is served here.
    send(seg(mine, 7, 100, tcp_flag::syn));
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
}

// Issue 13, bug 3: a segment of another queue's flow is verified (checksum,
// options) before it is handed over: a corrupt one never costs a ring slot
// and is counted here; a good one reaches the owner marked verified, so the
// owner does not sum it again.
TEST_F(TcpLayerTest, segments_are_verified_before_they_are_handed_over) {
    handoff_sink sink;
    tcp_layer_config c;
    c.queue = 0;
    c.nqueues = 2;
    c.handoff = handoff_sink::take;
    c.handoff_ctx = &sink;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    uint16_t theirs = 5000;
    while (layer_->owner_of(tcp_tuple{our_ip, peer_ip, 7, theirs}) == 0) ++theirs;
    send(seg(theirs, 7, 100, tcp_flag::syn), {}, 0, /*corrupt=*/true);
    send(seg(theirs, 7, 100, tcp_flag::syn), bytes{1, 2, 3}, 0, /*corrupt=*/true);
    EXPECT_TRUE(sink.got.empty()) << "a corrupt segment was handed over";
    EXPECT_EQ(nc_.tcp_drop_bad_checksum.get(), 2u);
    EXPECT_EQ(nc_.tcp_handoff_out.get(), 0u);
    send(seg(theirs, 7, 100, tcp_flag::syn));
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(nc_.tcp_handoff_out.get(), 1u);
    for (auto &g : sink.got) rte_pktmbuf_free(g.second);
}

TEST_F(TcpLayerTest, unread_data_survives_an_orderly_close_until_read) {
    // We close first (FIN), the peer's data and FIN arrive, TIME-WAIT runs
    // out: the data not read yet stays readable, `closed` comes after it.
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(5000, 7, 100);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    const tcp_handle h = ev[0].h;
    layer_->close(h, ms);  // FIN-WAIT-1
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].h.flags & tcp_flag::fin);
    // The peer acknowledges our FIN and sends data and its own FIN.
    send(seg(5000, 7, 101, tcp_flag::ack | tcp_flag::fin, iss + 2), from_string("abc"), 2 * ms);
    take();
    layer_->poll_timers(2 * ms + 61'000 * ms);  // 2*MSL passed: CLOSED
    take();
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_FALSE(ev[0].events & tcp_event::closed);
    EXPECT_TRUE(ev[0].events & tcp_event::readable);
    EXPECT_EQ(layer_->active(), 1u);
    tcp_rx_piece p[4];
    const std::size_t n = layer_->recv(h, p, 62'000 * ms);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(p[0].len, 3u);
    rte_pktmbuf_free(p[0].m);
    ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::closed);
    EXPECT_EQ(ev[0].reason, tcp_close_reason::normal);
    EXPECT_EQ(layer_->active(), 0u);
}

TEST_F(TcpLayerTest, abort_of_a_closed_connection_with_unread_data_frees_it) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(5001, 7, 100);
    const tcp_handle h = events().at(0).h;
    layer_->close(h, ms);
    take();
    send(seg(5001, 7, 101, tcp_flag::ack | tcp_flag::fin, iss + 2), from_string("abc"), 2 * ms);
    take();
    layer_->poll_timers(62'000 * ms);
    take();
    ASSERT_EQ(events().size(), 1u);  // readable
    layer_->abort(h, 62'000 * ms);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::closed);
    EXPECT_EQ(ev[0].reason, tcp_close_reason::aborted);
    EXPECT_EQ(layer_->active(), 0u);
}

TEST_F(TcpLayerTest, a_closed_slot_is_not_reused_within_the_batch_that_reports_it) {
    // The application handles a batch of notices in order; if handling one
    // opens a connection, that connection must not take the slot of a
    // `closed` notice later in the same batch (the notice would then match it).
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    handshake(5002, 7, 100);
    const tcp_handle a = events().at(0).h;
    layer_->abort(a, ms);
    take();
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    ASSERT_TRUE(ev[0].events & tcp_event::closed);
    tcp_handle b;
    ASSERT_EQ(layer_->connect(peer_ip, 80, 2 * ms, b), tcp_layer::connect_result::ok);
    take();
    EXPECT_NE(b.index, a.index);
    EXPECT_TRUE(events().empty());
    EXPECT_EQ(layer_->get(a), nullptr);
    EXPECT_NE(layer_->get(b), nullptr);
}

TEST_F(TcpLayerTest, time_wait_is_reported_at_entry_and_yields_its_slot_when_the_pool_is_full) {
    // We close first: TIME-WAIT. The application hears `closed` on entry (its
    // handle goes stale); the slot waits out 2*MSL in the layer, unless a new
    // connection needs it while the pool is full: then the oldest goes.
    tcp_layer_config c;
    c.syn_cookies = false;
    start(c);  // 4 slots
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    std::vector<tcp_handle> hs;
    for (uint16_t i = 0; i < 4; ++i) {
        const uint16_t sport = static_cast<uint16_t>(6000 + i);
        const uint32_t iss = handshake(sport, 7, 100);
        const tcp_handle h = events().at(0).h;
        layer_->close(h, (i + 1) * ms);
        ASSERT_EQ(take().size(), 1u);  // our FIN
        send(seg(sport, 7, 101, tcp_flag::ack | tcp_flag::fin, iss + 2), {}, (i + 1) * ms);
        ASSERT_EQ(take().size(), 1u);  // the ACK of theirs
        EXPECT_EQ(layer_->get(h)->state(), tcp_state::time_wait);
        auto ev = events();
        ASSERT_EQ(ev.size(), 1u);
        EXPECT_EQ(ev[0].h, h);
        EXPECT_TRUE(ev[0].events & tcp_event::closed);
        EXPECT_EQ(ev[0].reason, tcp_close_reason::normal);
        EXPECT_EQ(layer_->get(h), nullptr);  // stale for the application
        hs.push_back(h);
    }
    EXPECT_EQ(layer_->active(), 0u);
    EXPECT_EQ(layer_->time_wait(), 4u);
    EXPECT_EQ(nc_.conn_closed.get(), 0u);
    // A retransmitted FIN in TIME-WAIT is still answered, silently for the app.
    send(seg(6003, 7, 101, tcp_flag::ack | tcp_flag::fin, 0), {}, 5 * ms);
    take();
    EXPECT_TRUE(events().empty());
    // Pool full: a new SYN takes the oldest TIME-WAIT slot (peer port 6000).
    send(seg(6100, 7, 500, tcp_flag::syn), {}, 10 * ms);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(nc_.tcp_time_wait_recycled.get(), 1u);
    EXPECT_EQ(nc_.flow_table_full.get(), 0u);
    EXPECT_EQ(layer_->time_wait(), 3u);
    // So does connect().
    tcp_handle a;
    ASSERT_EQ(layer_->connect(peer_ip, 80, 11 * ms, a), tcp_layer::connect_result::ok);
    take();
    EXPECT_EQ(nc_.tcp_time_wait_recycled.get(), 2u);
    EXPECT_EQ(layer_->time_wait(), 2u);
    // The recycled tuple is gone: its segments get RST like any unknown flow.
    send(seg(6000, 7, 102, tcp_flag::ack, 1), {}, 12 * ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].h.flags & tcp_flag::rst);
    // The rest run out quietly: no notice, the slots come back.
    layer_->poll_timers(70'000 * ms);
    take();
    for (const tcp_notice &n : events())
        EXPECT_FALSE(n.events & tcp_event::closed) << "TIME-WAIT ended twice";
    EXPECT_EQ(layer_->time_wait(), 0u);
    EXPECT_EQ(nc_.conn_closed.get(), 4u);
    EXPECT_EQ(layer_->active(), 2u);  // the new passive and active connections
}

// Issue 15, finding 3: after ferry closed first (a rejected request), its
// TIME-WAIT held the 4-tuple, and a client that reused its port got only
// ACKs for the old connection to its SYN (its RST to them is ignored in
// TIME-WAIT, RFC 1337), so its connect timed out. RFC 6191 / RFC 9293
// §3.10.7.4 (as Linux and BSD do): a SYN whose sequence number is above
// RCV.NXT (or, with timestamps on the old connection, whose TSval is newer
// than TS.Recent) ends TIME-WAIT and opens a new connection.
TEST_F(TcpLayerTest, a_new_syn_reopens_a_tuple_in_time_wait) {
    tcp_layer_config c;
    c.syn_cookies = false;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(6000, 7, 100);
    const tcp_handle h = events().at(0).h;
    layer_->close(h, 1 * ms);
    ASSERT_EQ(take().size(), 1u);  // our FIN
    send(seg(6000, 7, 101, tcp_flag::ack | tcp_flag::fin, iss + 2), {}, 1 * ms);
    ASSERT_EQ(take().size(), 1u);  // the ACK of theirs
    (void)events();
    ASSERT_EQ(layer_->time_wait(), 1u);
    // An old duplicate SYN (not above RCV.NXT = 102) keeps TIME-WAIT: ACKed.
    send(seg(6000, 7, 50, tcp_flag::syn), {}, 2 * ms);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::ack);
    EXPECT_EQ(layer_->time_wait(), 1u);
    // A new incarnation's SYN: SYN-ACK, and TIME-WAIT ends.
    send(seg(6000, 7, 90000, tcp_flag::syn), {}, 3 * ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(out[0].h.ack, seq_num(90001));
    EXPECT_EQ(nc_.tcp_time_wait_reopened.get(), 1u);
    EXPECT_EQ(layer_->time_wait(), 0u);
    send(seg(6000, 7, 90001, tcp_flag::ack, out[0].h.seq.value() + 1), {}, 4 * ms);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::connected) << int(ev[0].events);
    EXPECT_EQ(layer_->active(), 1u);
}

// The same with timestamps on the old connection: the SYN's TSval decides
// (newer: a new incarnation even with a lower sequence number; older: PAWS,
// an old duplicate, TIME-WAIT stays).
TEST_F(TcpLayerTest, a_syn_with_a_newer_timestamp_reopens_time_wait_an_older_one_does_not) {
    tcp_layer_config c;
    c.syn_cookies = false;
    timestamps_ = true;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    auto with_ts = [](tcp_repr h, uint32_t tsval, uint32_t tsecr) {
        h.options.timestamps = tcp_timestamps{tsval, tsecr};
        return h;
    };
    tcp_repr syn = with_ts(seg(6001, 7, 100, tcp_flag::syn), 1000, 0);
    syn.options.mss = 1460;
    send(syn);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    const uint32_t iss = out[0].h.seq.value();
    ASSERT_TRUE(out[0].h.options.timestamps.has_value());
    const uint32_t our_ts = out[0].h.options.timestamps->tsval;
    send(with_ts(seg(6001, 7, 101, tcp_flag::ack, iss + 1), 1001, our_ts));
    const tcp_handle h = events().at(0).h;
    ASSERT_TRUE(layer_->get(h)->ts_enabled());
    layer_->close(h, 1 * ms);
    ASSERT_EQ(take().size(), 1u);
    send(with_ts(seg(6001, 7, 101, tcp_flag::ack | tcp_flag::fin, iss + 2), 1002, our_ts), {},
         1 * ms);
    take();
    (void)events();
    ASSERT_EQ(layer_->time_wait(), 1u);
    // Older TSval, though its sequence number is far ahead: PAWS keeps TIME-WAIT.
    send(with_ts(seg(6001, 7, 90000, tcp_flag::syn), 900, 0), {}, 2 * ms);
    out = take();
    EXPECT_TRUE(out.empty() || out[0].h.flags == tcp_flag::ack);
    EXPECT_EQ(layer_->time_wait(), 1u);
    EXPECT_EQ(nc_.tcp_time_wait_reopened.get(), 0u);
    // Newer TSval, a sequence number below RCV.NXT: a new incarnation.
    send(with_ts(seg(6001, 7, 50, tcp_flag::syn), 5000, 0), {}, 3 * ms);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].h.flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(out[0].h.ack, seq_num(51));
    EXPECT_EQ(nc_.tcp_time_wait_reopened.get(), 1u);
    EXPECT_EQ(layer_->time_wait(), 0u);
}

// Memory pressure (issue 15): the payload of a segment is dropped, its
// control part kept: our data is acknowledged (the send queue frees), a FIN
// behind the dropped data is not taken, nothing becomes readable. Once the
// pressure is off, the peer's retransmission is taken as usual.
TEST_F(TcpLayerTest, under_memory_pressure_payloads_are_dropped_and_acks_kept) {
    tcp_layer_config c;
    c.syn_cookies = false;
    start(c);
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    const uint32_t iss = handshake(5000, 7, 100);
    const tcp_handle h = events().at(0).h;
    // We send 4 bytes; they stay queued until acknowledged.
    rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, 4), "pong", 4);
    ASSERT_EQ(layer_->send(h, m, 0), 4u);
    take();
    EXPECT_EQ(layer_->get(h)->send_queued(), 4u);
    layer_->set_mem_pressure(true);
    // Their data, a FIN, and the ACK of ours.
    send(seg(5000, 7, 101, tcp_flag::ack | tcp_flag::psh | tcp_flag::fin, iss + 5),
         from_string("ping"), 1 * ms);
    EXPECT_EQ(nc_.tcp_drop_mem_pressure.get(), 1u);
    EXPECT_EQ(layer_->get(h)->send_queued(), 0u) << "the ACK was processed";
    EXPECT_EQ(layer_->get(h)->state(), tcp_state::established) << "the FIN was not taken";
    for (const tcp_notice &n : events()) EXPECT_FALSE(n.events & tcp_event::readable);
    take();
    // The pressure ends; the retransmission is taken.
    layer_->set_mem_pressure(false);
    send(seg(5000, 7, 101, tcp_flag::ack | tcp_flag::psh | tcp_flag::fin, iss + 5),
         from_string("ping"), 300 * ms);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].events & tcp_event::readable);
    EXPECT_TRUE(ev[0].events & tcp_event::peer_fin);
    tcp_rx_piece p[4];
    ASSERT_EQ(layer_->recv(h, p, 300 * ms), 1u);
    EXPECT_EQ(p[0].len, 4u);
    rte_pktmbuf_free(p[0].m);
    EXPECT_EQ(nc_.tcp_drop_mem_pressure.get(), 1u);
    take();
    layer_->abort(h, 301 * ms);
    take();
    (void)events();
}

}  // namespace
}  // namespace ferry::net

namespace ferry::net {
namespace {

// What a connection slot costs the TCP layer, as docs/OPERATIONS.md
// ("Sizing", Memory) states it: about 1.1 KiB of connection state, resident
// from start-up, plus four 4 KiB blocks of address space (a send ring, a
// receive ring, an out-of-order store, RACK's transmission records) that
// become resident only while a connection holds data; everything else it
// allocates grows with the slots too. (Before the ring blocks, the rings were inside the state: 10 KiB per
// slot, resident whether the connection was idle or never opened.)
// A slot is made (and its memory touched) only when a connection first
// needs it; a freed slot is reused before a new one is made, so the slots
// made are the most ever in use at once.
TEST_F(TcpLayerTest, slots_are_made_when_first_needed_and_reused) {
    ASSERT_EQ(layer_->listen(7), tcp_layer::listen_result::ok);
    EXPECT_EQ(layer_->slots_made(), 0u);
    (void)handshake(5000, 7, 100);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(layer_->slots_made(), 1u);
    (void)handshake(5001, 7, 200);
    auto ev2 = events();
    ASSERT_EQ(ev2.size(), 1u);
    EXPECT_EQ(layer_->slots_made(), 2u);
    layer_->abort(ev[0].h, 0);
    (void)take();
    EXPECT_EQ(events().size(), 1u);  // `closed`
    (void)events();                  // the next batch: the slot is free now
    EXPECT_EQ(layer_->active(), 1u);
    (void)handshake(5002, 7, 300);
    EXPECT_EQ(events().size(), 1u);
    EXPECT_EQ(layer_->active(), 2u);
    EXPECT_EQ(layer_->slots_made(), 2u);  // the aborted one's slot, reused
    EXPECT_EQ(layer_->get(ev[0].h), nullptr);  // its old handle is stale
}

TEST_F(TcpLayerTest, a_connection_slot_costs_what_the_docs_say) {
    auto reserved = [&](uint32_t slots) {
        tcp_layer_config c;
        c.max_connections = slots;
        tcp_layer l(c, *st_, g_pool, nc_, tc_);
        return l.reserved_bytes();
    };
    const size_t a = reserved(64), b = reserved(1088);
    const size_t per_slot = (b - a) / 1024;
    const size_t blocks = tcp_block_pool::blocks_per_connection * tcp_block_pool::block_bytes;
    // 1152 before BBR's ACK-aggregation state, 1176 before the tuple's
    // addresses grew to IPv6's 16 bytes.
    EXPECT_LE(sizeof(tcp_conn), 1200u);
    EXPECT_GE(per_slot, sizeof(tcp_conn) + blocks);
    EXPECT_LE(per_slot, blocks + 1536) << "per slot: " << per_slot;
}

}  // namespace
}  // namespace ferry::net
