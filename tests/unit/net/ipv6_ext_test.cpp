// IPv6 extension headers (RFC 8200 §4) and the ICMPv6 errors a host must
// send for them (RFC 4443 §2.4, §3.4), first on walk_ipv6_ext alone (pure,
// every case also cut at every length), then on a real stack with a TCP
// layer: frames in, exact frames and counters out. Expected errors are
// checked byte by byte: the pointer, the quoted datagram and a checksum
// summed here over a pseudo-header written out by hand (RFC 8200 §8.1).
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ferry/net/mbuf_chain.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "stack_test_env.h"
#include "tcp_test_util.h"
#include "test_util.h"
#include "ipv6_stack_fixture.h"

namespace ferry::net {
namespace {

using namespace test6;

class Ipv6ExtTest : public Ipv6StackTest {};

// ------------------------------------------------------------ walk_ipv6_ext

struct walk_case {
    const char *name;
    uint8_t first;  // the fixed header's next header
    bytes rest;     // what follows the fixed header
    ipv6_ext_verdict verdict;
    uint8_t next_header = 0;  // upper
    uint32_t offset = 40;     // upper
    uint32_t next_header_at = 6;
    bool answer = false;
    icmpv6_param_code code = icmpv6_param_code::header_field;
    uint32_t pointer = 0;
    bool multicast_ok = false;
    bool about_error = false;
};

const walk_case walk_cases[] = {
    {"tcp_plain", nh_tcp, bytes(20, 0), ipv6_ext_verdict::upper, nh_tcp, 40, 6},
    {"udp_plain", nh_udp, udp(), ipv6_ext_verdict::upper, nh_udp, 40, 6},
    {"hbh_pad1_padn", hbh, concat({ext(nh_tcp, concat({{0}, padn(5)})), bytes(20, 0)}),
     ipv6_ext_verdict::upper, nh_tcp, 48, 40},
    {"hbh_dopt_routing0_tcp", hbh,
     concat({ext(dopt, padn(6)), ext(rh, padn(14)), routing(nh_tcp, 0), bytes(20, 0)}),
     ipv6_ext_verdict::upper, nh_tcp, 80, 64},
    {"option_00_skipped", dopt, concat({ext(nh_icmp, concat({option(0x3e, 2), padn(2)})),
                                        echo_request()}),
     ipv6_ext_verdict::upper, nh_icmp, 48, 40},
    {"option_01_discard", dopt, concat({ext(nh_tcp, concat({padn(2), option(0x7e, 2)})),
                                        bytes(20, 0)}),
     ipv6_ext_verdict::unknown_option},
    // The pointer: fixed header 40, the options header's 2, PadN 2.
    {"option_10_answer", dopt, concat({ext(nh_tcp, concat({padn(2), option(0xbe, 2)})),
                                       bytes(20, 0)}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 44, true},
    {"option_11_answer_unicast_only", hbh,
     concat({ext(nh_tcp, concat({padn(2), option(0xfe, 2)})), bytes(20, 0)}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 44, false},
    {"option_in_second_header", hbh,
     concat({ext(dopt, padn(6)), ext(nh_tcp, concat({{0, 0, 0}, option(0xc2, 1)})),
             bytes(20, 0)}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 53, false},
    {"option_before_icmp_error", dopt,
     concat({ext(nh_icmp, concat({padn(2), option(0xbe, 2)})),
             icmp6(peer6, our6, 1, 4, bytes(8, 0))}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 44, true, true},
    {"option_before_redirect", dopt,
     concat({ext(nh_icmp, concat({padn(2), option(0xbe, 2)})),
             icmp6(peer6, our6, 137, 0, bytes(36, 0))}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 44, true, true},
    {"option_before_echo", dopt,
     concat({ext(nh_icmp, concat({padn(2), option(0xbe, 2)})), echo_request()}),
     ipv6_ext_verdict::unknown_option, 0, 40, 6, true, icmpv6_param_code::option, 44, true, false},
    // PadN, then an option of 3 data bytes with 2 left in the header.
    {"option_past_its_header", dopt, concat({{nh_tcp, 0, 1, 0, 0x3e, 3, 0, 0}, bytes(20, 0)}),
     ipv6_ext_verdict::malformed},
    {"header_past_payload", dopt, bytes{nh_tcp, 1, 1, 4, 0, 0, 0, 0, 0, 0},
     ipv6_ext_verdict::malformed},
    {"header_shorter_than_8", dopt, bytes{nh_tcp, 0, 1, 2}, ipv6_ext_verdict::malformed},
    {"routing_segments_left", rh, concat({routing(nh_tcp, 1), bytes(20, 0)}),
     ipv6_ext_verdict::routing, 0, 40, 6, true, icmpv6_param_code::header_field, 42, false},
    {"routing_behind_hbh", hbh, concat({ext(rh, padn(6)), routing(nh_tcp, 3), bytes(20, 0)}),
     ipv6_ext_verdict::routing, 0, 40, 6, true, icmpv6_param_code::header_field, 50, false},
    {"fragment_first", fh, concat({fragment(nh_tcp, 0, true), bytes(20, 0)}),
     ipv6_ext_verdict::fragment},
    {"fragment_later", fh, concat({fragment(nh_tcp, 185, false), bytes(20, 0)}),
     ipv6_ext_verdict::fragment},
    {"fragment_atomic", fh, concat({fragment(nh_tcp, 0, false), bytes(20, 0)}),
     ipv6_ext_verdict::upper, nh_tcp, 48, 40},
    {"no_next_plain", none, bytes(16, 0), ipv6_ext_verdict::no_next},
    {"no_next_after_dopt", dopt, concat({ext(none, padn(6)), bytes(8, 0)}),
     ipv6_ext_verdict::no_next},
    {"hbh_not_first", dopt, concat({ext(hbh, padn(6)), ext(nh_tcp, padn(6)), bytes(20, 0)}),
     ipv6_ext_verdict::misplaced_hop_by_hop, 0, 40, 6, true, icmpv6_param_code::next_header, 40},
    {"unknown_after_dopt", dopt, concat({ext(nh_udp, padn(6)), udp()}), ipv6_ext_verdict::upper,
     nh_udp, 48, 40},
};

class WalkIpv6Ext : public testing::TestWithParam<walk_case> {};

bytes datagram(const walk_case &c) {
    return concat({ipv6_header(peer6, our6, c.first, c.rest.size()), c.rest});
}

void expect_walk(const walk_case &c, const ipv6_ext_walk &w) {
    ASSERT_EQ(name(w.verdict), std::string(name(c.verdict)));
    EXPECT_EQ(w.answer, c.answer);
    if (w.verdict == ipv6_ext_verdict::upper) {
        EXPECT_EQ(w.next_header, c.next_header);
        EXPECT_EQ(w.offset, c.offset);
        EXPECT_EQ(w.next_header_at, c.next_header_at);
    }
    if (c.answer) {
        EXPECT_EQ(w.code, c.code);
        EXPECT_EQ(w.pointer, c.pointer);
        EXPECT_EQ(w.multicast_ok, c.multicast_ok);
        EXPECT_EQ(w.about_icmpv6_error, c.about_error);
    }
}

TEST_P(WalkIpv6Ext, Whole) {
    const walk_case &c = GetParam();
    const bytes d = datagram(c);
    ipv6_repr ip;
    ASSERT_EQ(ipv6_repr::parse(d, ip), ipv6_error::none);
    expect_walk(c, walk_ipv6_ext(d, ip));
    // Ethernet padding after the datagram changes nothing.
    const bytes padded = concat({d, bytes(7, 0xee)});
    expect_walk(c, walk_ipv6_ext(padded, ip));
}

// The bytes given cut at every length (a first segment that ends there, in
// a buffer of exactly that size so a sanitizer sees any read past it):
// either the same answer, when the walk did not need the bytes cut off, or
// `beyond`; never anything else.
TEST_P(WalkIpv6Ext, CutAtEveryLength) {
    const walk_case &c = GetParam();
    const bytes d = datagram(c);
    ipv6_repr ip;
    ASSERT_EQ(ipv6_repr::parse(d, ip), ipv6_error::none);
    const ipv6_ext_walk whole = walk_ipv6_ext(d, ip);
    bool saw_whole_answer_before_end = false;
    for (std::size_t cut = ipv6_repr::header_len; cut < d.size(); ++cut) {
        const bytes part(d.begin(), d.begin() + static_cast<long>(cut));
        const ipv6_ext_walk w = walk_ipv6_ext(part, ip);
        if (w.verdict == ipv6_ext_verdict::beyond) {
            EXPECT_FALSE(saw_whole_answer_before_end)
                << "beyond after a shorter cut sufficed, cut " << cut;
            continue;
        }
        saw_whole_answer_before_end = true;
        SCOPED_TRACE("cut " + std::to_string(cut));
        EXPECT_EQ(w.verdict, whole.verdict);
        EXPECT_EQ(w.offset, whole.offset);
        EXPECT_EQ(w.pointer, whole.pointer);
        // Cut short, the walk may not see what the upper layer is: it
        // then says "about an error" (the safe side), never the reverse.
        if (w.answer && whole.about_icmpv6_error) {
            EXPECT_TRUE(w.about_icmpv6_error);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, WalkIpv6Ext, testing::ValuesIn(walk_cases),
                         [](const auto &i) { return std::string(i.param.name); });

TEST(WalkIpv6ExtLimits, ACutChainIsBeyondAndAShortPayloadIsMalformed) {
    // A destination options header of 16 bytes: with 10 bytes of it given
    // (and the payload saying 24) the rest is in another segment.
    const bytes d = concat({ipv6_header(peer6, our6, dopt, 24), ext(nh_tcp, padn(14)),
                            bytes(8, 0)});
    ipv6_repr ip;
    ASSERT_EQ(ipv6_repr::parse(d, ip), ipv6_error::none);
    EXPECT_EQ(walk_ipv6_ext(std::span(d).first(50), ip).verdict, ipv6_ext_verdict::beyond);
    EXPECT_EQ(walk_ipv6_ext(d, ip).verdict, ipv6_ext_verdict::upper);
    // The same bytes, but the payload length ends inside the header.
    ip.payload_len = 12;
    EXPECT_EQ(walk_ipv6_ext(d, ip).verdict, ipv6_ext_verdict::malformed);
    EXPECT_EQ(walk_ipv6_ext(std::span(d).first(50), ip).verdict, ipv6_ext_verdict::malformed);
}

TEST(WalkIpv6ExtLimits, TheUpperLayerLengthLeavesTheExtensionHeadersOut) {
    const bytes d = concat({ipv6_header(peer6, our6, hbh, 16 + 20), ext(dopt, padn(6)),
                            ext(nh_tcp, padn(6)), bytes(20, 0)});
    ipv6_repr ip;
    ASSERT_EQ(ipv6_repr::parse(d, ip), ipv6_error::none);
    const ipv6_ext_walk w = walk_ipv6_ext(d, ip);
    EXPECT_EQ(w.offset, 56u);
    EXPECT_EQ(w.upper_len(ip), 20u);
}


TEST_F(Ipv6ExtTest, ASynBehindAHopByHopHeaderWithPadNGetsItsSynAckAndDataFollows) {
    learn_peer();
    const bytes hop = ext(dopt, concat({{0}, padn(5)}));  // Pad1, PadN
    const bytes dst = ext(nh_tcp, padn(6));
    input(frame6(hbh, concat({hop, dst, segment(tcp_seg(40000, 80, 1000, tcp_flag::syn))})));
    expect_syn_ack(1000);
    input(frame6(hbh, concat({hop, dst, segment(tcp_seg(40000, 80, 1001, tcp_flag::ack,
                                                         syn_ack_seq_ + 1))})));
    tcp_notice n[4];
    ASSERT_EQ(layer_->poll_events(n), 1u);
    const tcp_handle h = n[0].h;
    // 300 bytes of data behind both headers, in two segments (the first
    // holds 134 bytes, stack::max_header_bytes), with Ethernet padding
    // after: the layer gets exactly the data, its checksum summed over the
    // upper-layer length only.
    bytes data(300, 0);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
    bytes f = frame6(hbh, concat({hop, dst, segment(tcp_seg(40000, 80, 1001,
                                                            tcp_flag::ack | tcp_flag::psh,
                                                            syn_ack_seq_ + 1),
                                                    data)}));
    input(f, 1 * ms, {134});
    tcp_rx_piece pieces[4];
    const std::size_t k = layer_->recv(h, pieces, 2 * ms);
    bytes got;
    for (std::size_t i = 0; i < k; ++i) {
        bytes chunk(pieces[i].len);
        EXPECT_EQ(piece_copy_out(pieces[i], reinterpret_cast<char *>(chunk.data()), pieces[i].len),
                  pieces[i].len);
        got.insert(got.end(), chunk.begin(), chunk.end());
        rte_pktmbuf_free(pieces[i].m);
    }
    EXPECT_EQ(got, data);
    expect_drops({});
    layer_->abort(h, 3 * ms);
    (void)take();
    (void)layer_->poll_events(n);
}

TEST_F(Ipv6ExtTest, ASynBehindADestinationOptionsHeaderGetsItsSynAck) {
    learn_peer();
    // An unknown option with action bits 00 is skipped (RFC 8200 §4.2).
    input(frame6(dopt, concat({ext(nh_tcp, concat({option(0x1e, 2), option(0x3f, 0)})),
                               segment(tcp_seg(40001, 80, 77, tcp_flag::syn))})));
    expect_syn_ack(77);
    expect_drops({});
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 0u);
    input(frame6(nh_tcp, segment(tcp_seg(40001, 80, 78, tcp_flag::rst))));
}

TEST_F(Ipv6ExtTest, ASegmentWhoseChecksumCoversTheExtensionHeadersIsDropped) {
    // The same SYN, but summed with the payload length (extension headers
    // included) in the pseudo-header: a host that did that would be wrong.
    learn_peer();
    const bytes opts = ext(nh_tcp, padn(6));
    bytes seg = segment(tcp_seg(40002, 80, 5, tcp_flag::syn));
    seg[16] = seg[17] = 0;
    put16(seg, 16, ref_checksum(concat({pseudo_header(peer6, our6, seg.size() + 8, 6), seg})));
    input(frame6(dopt, concat({opts, seg})));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("tcp_drop_bad_checksum"), 1u);
}

TEST_F(Ipv6ExtTest, AHandedOverSegmentBehindExtensionHeadersIsFoundAgain) {
    learn_peer();
    // Another lcore walked the headers; this one finds the TCP header too.
    input(frame6(hbh, concat({ext(dopt, padn(6)), ext(nh_tcp, padn(14)),
                              segment(tcp_seg(40003, 80, 500, tcp_flag::syn))})),
          0, {}, /*handoff=*/true);
    EXPECT_EQ(count("tcp_handoff_in"), 1u);
    expect_syn_ack(500);
    input(frame6(nh_tcp, segment(tcp_seg(40003, 80, 501, tcp_flag::rst))));
}

TEST_F(Ipv6ExtTest, EchoAndNeighbourDiscoveryWorkBehindExtensionHeaders) {
    // The reply to an echo request behind a hop-by-hop header is the reply
    // to the same request without it: no extension headers echoed.
    input(frame6(nh_icmp, echo_request()));
    auto plain = take_tx_frames(*st_);
    ASSERT_EQ(plain.size(), 1u);
    input(frame6(hbh, concat({ext(nh_icmp, padn(6)), echo_request()})));
    auto behind = take_tx_frames(*st_);
    ASSERT_EQ(behind.size(), 1u);
    EXPECT_EQ(hex(behind[0]), hex(plain[0]));
    EXPECT_EQ(count("icmpv6_echo_replied"), 2u);
    // A solicitation for us behind a destination options header: answered.
    bytes ns = concat({{135, 0, 0, 0, 0, 0, 0, 0}, addr_bytes(our6), {1, 1}, peer_mac});
    put16(ns, 2,
          ref_checksum(concat({pseudo_header(peer6, our6.solicited_node(), ns.size(), 58), ns})));
    input(frame6(
        dopt, concat({ext(nh_icmp, padn(6)), ns}),
        {.dst = our6.solicited_node(), .eth_dst = {0x33, 0x33, 0xff, 0, 0, 0x01}, .hop = 255}));
    const auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].l4[0], 136);
    EXPECT_EQ(count("nd_advertised"), 1u);
    expect_drops({});
}

struct option_case {
    const char *name;
    uint8_t type;     // the unknown option's type
    bool to_group;    // an echo request to ff02::1 (in a 33:33:00:00:00:01 frame)
    bool reply;       // the echo request is answered
    bool error;       // a Parameter Problem code 2 is sent
    bool ineligible;  // RFC 4443 §2.4(e) forbids the error
};

// RFC 8200 §4.2 by the two high-order bits of the option type; an echo
// request carries the option so a skipped one is seen to go on.
const option_case option_cases[] = {
    {"skip_00", 0x1e, false, true, false, false},
    {"discard_01", 0x5e, false, false, false, false},
    {"answer_10", 0x9e, false, false, true, false},
    {"answer_11", 0xde, false, false, true, false},
    {"group_skip_00", 0x1e, true, true, false, false},
    {"group_discard_01", 0x5e, true, false, false, false},
    {"group_answer_10", 0x9e, true, false, true, false},  // RFC 4443 §2.4(e.3) exception
    {"group_not_11", 0xde, true, false, false, true},
};

class Ipv6OptionTest : public Ipv6ExtTest, public testing::WithParamInterface<option_case> {};

TEST_P(Ipv6OptionTest, TheActionBitsDecide) {
    const option_case &c = GetParam();
    frame_spec s;
    if (c.to_group) {
        s.dst = all_nodes;
        s.eth_dst = all_nodes_mac;
    }
    // PadN first, so the option type sits at 40 + 2 + 4 = 46.
    const bytes f = frame6(hbh, concat({ext(nh_icmp, concat({padn(4), option(c.type, 0)})),
                                        echo_request(peer6, s.dst)}),
                           s);
    input(f);
    const auto out = take();
    ASSERT_EQ(out.size(), c.reply || c.error ? 1u : 0u);
    if (c.reply) {
        EXPECT_EQ(out[0].l4[0], 129);
        EXPECT_EQ(out[0].src, our6);
        expect_drops({});
    } else {
        expect_drops({{"ipv6_drop_option", 1}});
    }
    if (c.error) expect_param_problem(out[0], 2, 46, f);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), c.error ? 1u : 0u);
    EXPECT_EQ(count("icmpv6_error_ineligible"), c.ineligible ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Cases, Ipv6OptionTest, testing::ValuesIn(option_cases),
                         [](const auto &i) { return std::string(i.param.name); });

TEST_F(Ipv6ExtTest, ARoutingHeaderWithSegmentsLeftIsAnsweredWithCode0) {
    learn_peer();
    // Segments Left 0: ignored (RFC 8200 §4.4), the SYN goes on.
    input(frame6(rh, concat({routing(nh_tcp, 0), segment(tcp_seg(40006, 80, 30, tcp_flag::syn))})));
    expect_syn_ack(30);
    input(frame6(nh_tcp, segment(tcp_seg(40006, 80, 31, tcp_flag::rst))));
    // Segments Left 1 behind a hop-by-hop header: we are not a router.
    // The pointer is at the Routing Type (40 + 8 + 2), as §4.4 says for an
    // unrecognized one.
    const bytes f = frame6(hbh, concat({ext(rh, padn(6)), routing(nh_tcp, 1),
                                        segment(tcp_seg(40007, 80, 40, tcp_flag::syn))}));
    input(f);
    const auto out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 0, 50, f);
    expect_drops({{"ipv6_drop_routing", 1}});
}

TEST_F(Ipv6ExtTest, UdpGetsAParameterProblemCode1AtTheNextHeaderField) {
    // No extension header: the fixed header's Next Header, offset 6.
    const bytes f = udp_frame();
    input(f);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 1, 6, f);
    // Behind a destination options header: that header's Next Header (40).
    const bytes g = frame6(dopt, concat({ext(nh_udp, padn(6)), udp()}));
    input(g);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 1, 40, g);
    // An unknown protocol (SCTP) likewise.
    const bytes sctp = frame6(132, bytes(12, 0));
    input(sctp);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 1, 6, sctp);
    // A hop-by-hop header anywhere but first is an unrecognized one too.
    const bytes late =
        frame6(dopt, concat({ext(hbh, padn(6)), ext(nh_tcp, padn(6)), bytes(20, 0)}));
    input(late);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 1, 40, late);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 4u);
    expect_drops({{"ipv6_drop_unknown_next", 4}});
}

TEST_F(Ipv6ExtTest, WithThePoolDryAnErrorIsNotSentAndNothingLeaks) {
    // The Parameter Problem needs an mbuf of its own: none, none sent, the
    // invoking datagram freed and counted as ever (TearDown: no leak).
    const bytes f = udp_frame();
    input(f, 0, {}, false, true);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("tx_alloc_fail"), 1u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 0u);
    expect_drops({{"ipv6_drop_unknown_next", 1}});
    // With mbufs again, the same datagram is answered.
    input(f, 1'000'000'000);
    const auto out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 1, 6, f);
}

TEST_F(Ipv6ExtTest, WithThePoolDryAnEchoIsAnsweredInItsOwnMbufAndASolicitationIsNot) {
    // An echo reply is the request's own mbuf turned around: no allocation.
    input(frame6(nh_icmp, echo_request()), 0, {}, false, true);
    EXPECT_EQ(take().size(), 1u);
    EXPECT_EQ(count("icmpv6_echo_replied"), 1u);
    // A request whose mbuf is shared (a clone's, refcount 2) must be copied
    // before it is written: no mbuf for the copy, no reply, freed, counted.
    {
        const bytes f = frame6(nh_icmp, echo_request());
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        rte_mbuf_refcnt_update(m, 1);  // the other holder
        {
            pool_dry held(g_pool);
            rte_mbuf *b[] = {m};
            st_->input_burst(b, 0);
        }
        EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);  // the stack let its reference go
        rte_pktmbuf_free(m);
    }
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("tx_alloc_fail"), 1u);
    EXPECT_EQ(count("icmpv6_echo_replied"), 1u);
    // A solicitation for us: the advertisement needs an mbuf.
    bytes ns = concat({{135, 0, 0, 0, 0, 0, 0, 0}, addr_bytes(our6), {1, 1}, peer_mac});
    put16(ns, 2,
          ref_checksum(concat({pseudo_header(peer6, our6.solicited_node(), ns.size(), 58), ns})));
    const bytes nsf = frame6(
        nh_icmp, ns,
        {.dst = our6.solicited_node(), .eth_dst = {0x33, 0x33, 0xff, 0, 0, 0x01}, .hop = 255});
    input(nsf, 0, {}, false, true);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("tx_alloc_fail"), 2u);
    EXPECT_EQ(count("nd_advertised"), 0u);
    EXPECT_EQ(count("nd_learned"), 1u);  // what it taught is kept
    input(nsf);
    const auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].l4[0], 136);
    EXPECT_EQ(count("nd_advertised"), 1u);
    expect_drops({});
}

TEST_F(Ipv6ExtTest, TheErrorQuotesWhatFitsIn1280BytesFromEverySegment) {
    // A 1452-byte datagram in three segments, with Ethernet padding after
    // it in a frame that does not count: the error quotes its first 1232
    // bytes, making 1280 in all (RFC 4443 §2.4(c)).
    bytes f = frame6(nh_udp, udp(1404));
    ASSERT_EQ(f.size(), 14u + 1452);
    input(f, 0, {200, 900});
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].l4.size() + 40, 1280u);
    expect_param_problem(out[0], 1, 6, f);
    // A short one quoted whole, its Ethernet padding left out.
    const bytes small = frame6(nh_udp, udp(0));
    input(concat({small, bytes(6, 0)}));
    out = take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].l4.size(), 8u + 48);
    expect_param_problem(out[0], 1, 6, small);
}

TEST_F(Ipv6ExtTest, NoErrorAnswersWhatRfc4443ForbidsIt) {
    // (e.6) from ::, from a group.
    input(udp_frame({.src = ipv6_addr{}}));
    input(udp_frame({.src = all_nodes}));
    // (e.3) to a group; (e.4) to us, but in a link-layer multicast frame.
    input(udp_frame({.dst = all_nodes, .eth_dst = all_nodes_mac}));
    input(udp_frame({.eth_dst = {0x33, 0x33, 0xff, 0, 0, 0x01}}));
    // (e.5) a link-layer broadcast.
    input(udp_frame({.eth_dst = bcast_mac}));
    // (e.1) an ICMPv6 error (Destination Unreachable) behind an option whose
    // action bits 10 would otherwise be answered; (e.2) a redirect.
    const bytes opt = ext(nh_icmp, concat({padn(2), option(0x9e, 2)}));
    input(frame6(dopt, concat({opt, icmp6(peer6, our6, 1, 4, bytes(52, 0))})));
    input(frame6(dopt, concat({opt, icmp6(peer6, our6, 137, 0, bytes(36, 0))})));
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("icmpv6_error_ineligible"), 7u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 0u);
    expect_drops({{"ipv6_drop_unknown_next", 5}, {"ipv6_drop_option", 2}});
    // The same from a unicast source to our address, and the same option
    // before an echo request, are answered.
    input(udp_frame());
    input(frame6(dopt, concat({opt, echo_request()})));
    EXPECT_EQ(take().size(), 2u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 2u);
    EXPECT_EQ(count("icmpv6_error_ineligible"), 7u);
}

TEST_F(Ipv6ExtTest, ErrorsAreRateLimitedTenASecond) {
    const uint64_t t0 = 5 * sec;
    for (int i = 0; i < 11; ++i) input(udp_frame(), t0 + static_cast<uint64_t>(i) * ms);
    EXPECT_EQ(take().size(), 10u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 10u);
    EXPECT_EQ(count("icmpv6_error_rate_limited"), 1u);
    // 100 ms buys one more (1 s / 10), not two.
    input(udp_frame(), t0 + 110 * ms);
    input(udp_frame(), t0 + 110 * ms);
    EXPECT_EQ(take().size(), 1u);
    EXPECT_EQ(count("icmpv6_error_rate_limited"), 2u);
    // A second later the bucket is full again: ten more, then limited.
    for (int i = 0; i < 11; ++i) input(udp_frame(), t0 + 1200 * ms);
    EXPECT_EQ(take().size(), 10u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 21u);
    EXPECT_EQ(count("icmpv6_error_rate_limited"), 3u);
    // Every datagram was dropped and counted once, error or not.
    expect_drops({{"ipv6_drop_unknown_next", 24}});
}

TEST_F(Ipv6ExtTest, ARateOfZeroSendsNoErrors) {
    start(0, 10);
    input(udp_frame(), 10 * sec);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("icmpv6_error_rate_limited"), 1u);
    start(10, 10);
    input(udp_frame(), 10 * sec);
    EXPECT_EQ(take().size(), 1u);
}

TEST_F(Ipv6ExtTest, AChainPastTheFirstSegmentIsDroppedAndCounted) {
    learn_peer();
    // A 96-byte destination options header: the first segment (134 bytes,
    // 80 of them after the fixed header) ends inside it.
    const bytes big = ext(nh_tcp, padn(94));
    const bytes seg = segment(tcp_seg(40008, 80, 1, tcp_flag::syn), bytes(100, 0));
    input(frame6(dopt, concat({big, seg})), 0, {134});
    // A 72-byte one ends at 126: the TCP header behind it does not fit.
    const bytes mid = ext(nh_tcp, padn(70));
    input(frame6(dopt, concat({mid, seg})), 0, {134});
    EXPECT_TRUE(take().empty());
    expect_drops({{"ipv6_drop_ext_split", 2}});
    // The same in one segment: taken.
    input(frame6(dopt, concat({big, seg})));
    expect_syn_ack(1);
    input(frame6(nh_tcp, segment(tcp_seg(40008, 80, 2, tcp_flag::rst))));
}

TEST_F(Ipv6ExtTest, MalformedChainsAndNoNextHeaderAreDroppedSilently) {
    // An option running past its header; a header running past the payload;
    // No Next Header (RFC 8200 §4.7), with bytes after it that are ignored.
    input(frame6(dopt, concat({{nh_tcp, 0, 1, 0, 0x3e, 3, 0, 0}, bytes(20, 0)})));
    input(frame6(dopt, bytes{nh_tcp, 1, 1, 4, 0, 0, 0, 0, 0, 0}));
    input(frame6(none, bytes(8, 0)));
    input(frame6(hbh, concat({ext(none, padn(6)), bytes(8, 0)})));
    EXPECT_TRUE(take().empty());
    expect_drops({{"ipv6_drop_ext_header", 2}, {"ipv6_drop_no_next", 2}});
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 0u);
}

}  // namespace
}  // namespace ferry::net
