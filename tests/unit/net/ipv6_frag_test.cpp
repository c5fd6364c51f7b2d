// IPv6 fragments (RFC 8200 §4.5) on a real stack with a TCP layer: datagrams
// cut by hand into fragments, fed in any order, must come out as the
// unfragmented datagram would (a TCP segment's data in the layer, an echo
// request's reply byte for byte); what RFC 8200 and RFC 5722 reject is
// dropped with its datagram, counted, answered with the Parameter Problem
// §4.5 names where it names one, and nothing leaks (the fixture's TearDown).
// The table's own rules (holes, bounds, eviction) are ip_reassembly_test.cpp's.
#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "ipv6_stack_fixture.h"

namespace ferry::net {
namespace {

using namespace test6;

// The datagram whose fragmentable part is `part` (`next` names its first
// header) cut at `cuts` (multiples of 8), one frame per piece: the fixed
// header, the unfragmentable extension headers `unfrag` (whose last Next
// Header must be 44; the fixed header's names the first of them, `first`),
// the Fragment header, the piece.
struct frag_spec {
    bytes part;
    uint8_t next = nh_tcp;
    std::vector<std::size_t> cuts;
    uint32_t ident = 7;
    bytes unfrag = {};
    uint8_t first = fh;
};

std::vector<bytes> fragments(const frag_spec &s) {
    std::vector<bytes> out;
    std::size_t from = 0;
    std::vector<std::size_t> ends = s.cuts;
    ends.push_back(s.part.size());
    for (std::size_t i = 0; i < ends.size(); ++i) {
        const std::size_t to = ends[i];
        const bytes piece(s.part.begin() + static_cast<long>(from),
                          s.part.begin() + static_cast<long>(to));
        out.push_back(frame6(
            s.first, concat({s.unfrag,
                             fragment(s.next, static_cast<uint16_t>(from / 8), i + 1 < ends.size(),
                                      s.ident),
                             piece})));
        from = to;
    }
    return out;
}

class Ipv6FragTest : public Ipv6StackTest {
protected:
    // An established connection from the peer's `sport` to port 80.
    tcp_handle open(uint16_t sport, uint32_t isn) {
        input(frame6(nh_tcp, segment(tcp_seg(sport, 80, isn, tcp_flag::syn))));
        expect_syn_ack(isn);
        input(frame6(nh_tcp,
                     segment(tcp_seg(sport, 80, isn + 1, tcp_flag::ack, syn_ack_seq_ + 1))));
        tcp_notice n[4];
        EXPECT_EQ(layer_->poll_events(n), 1u);
        return n[0].h;
    }

    // Everything the layer holds for `h`.
    bytes received(tcp_handle h, uint64_t now) {
        tcp_rx_piece pieces[16];
        const std::size_t k = layer_->recv(h, pieces, now);
        bytes got;
        for (std::size_t i = 0; i < k; ++i) {
            bytes chunk(pieces[i].len);
            EXPECT_EQ(
                piece_copy_out(pieces[i], reinterpret_cast<char *>(chunk.data()), pieces[i].len),
                pieces[i].len);
            got.insert(got.end(), chunk.begin(), chunk.end());
            rte_pktmbuf_free(pieces[i].m);
        }
        return got;
    }

    void close(tcp_handle h, uint64_t now) {
        layer_->abort(h, now);
        (void)take();
        tcp_notice n[4];
        (void)layer_->poll_events(n);
    }

    static bytes pattern(std::size_t n, unsigned salt) {
        bytes b(n);
        for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 13 + salt);
        return b;
    }
};

TEST_F(Ipv6FragTest, ASegmentInThreeFragmentsInAnyOrderIsDeliveredWhole) {
    learn_peer();
    const tcp_handle h = open(41000, 100);
    const bytes data = pattern(1200, 1);
    const bytes seg =
        segment(tcp_seg(41000, 80, 101, tcp_flag::ack | tcp_flag::psh, syn_ack_seq_ + 1), data);
    const auto f = fragments({.part = seg, .cuts = {512, 1024}});
    ASSERT_EQ(f.size(), 3u);
    // The middle one, the last (Ethernet padding after it), then the first.
    input(f[1], 1 * ms);
    bytes last = f[2];
    last.insert(last.end(), 6, 0xee);
    input(last, 1 * ms);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 0u);
    EXPECT_TRUE(received(h, 1 * ms).empty());
    input(f[0], 2 * ms);
    EXPECT_EQ(received(h, 2 * ms), data);
    EXPECT_EQ(count("ipv6_frag_rx"), 3u);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 1u);
    expect_drops({});
    close(h, 3 * ms);
}

TEST_F(Ipv6FragTest, FragmentsInSeveralSegmentsBehindAHopByHopHeaderAreDeliveredWhole) {
    // The unfragmentable part has a hop-by-hop header, so the Next Header
    // that named the Fragment header is that header's (byte 40); the
    // fragmentable part starts with a destination options header. Each
    // frame comes in several mbufs, the first holding 134 bytes
    // (stack::max_header_bytes), as a NIC's first segment holds at least.
    learn_peer();
    const tcp_handle h = open(41001, 200);
    const bytes data = pattern(700, 2);
    const bytes seg =
        segment(tcp_seg(41001, 80, 201, tcp_flag::ack | tcp_flag::psh, syn_ack_seq_ + 1), data);
    const auto f = fragments({.part = concat({ext(nh_tcp, padn(6)), seg}),
                              .next = dopt,
                              .cuts = {96, 400},
                              .unfrag = ext(fh, padn(6)),
                              .first = hbh});
    input(f[2], 1 * ms, {134, 135, 200});
    input(f[0], 1 * ms, {134});
    input(f[1], 1 * ms, {134, 300});
    EXPECT_EQ(received(h, 2 * ms), data);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 1u);
    expect_drops({});
    close(h, 3 * ms);
}

TEST_F(Ipv6FragTest, AnEchoRequestInFragmentsGetsTheReplyItWouldGetWhole) {
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0x12, 0x34, 0, 9}, pattern(400, 3)}));
    input(frame6(nh_icmp, req));
    const auto plain = take_tx_frames(*st_);
    ASSERT_EQ(plain.size(), 1u);
    const auto f = fragments({.part = req, .next = nh_icmp, .cuts = {128, 256}, .ident = 99});
    input(f[2]);
    input(f[0]);
    input(f[1]);
    const auto whole = take_tx_frames(*st_);
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_EQ(hex(whole[0]), hex(plain[0]));
    // As Linux sends `ping -6 -s 1400` over a 1280-byte path: 1232 + 176.
    const bytes big = icmp6(peer6, our6, 128, 0, concat({{0x12, 0x34, 0, 10}, pattern(1400, 3)}));
    input(frame6(nh_icmp, big));
    const auto big_plain = take_tx_frames(*st_);
    ASSERT_EQ(big_plain.size(), 1u);
    const auto g = fragments({.part = big, .next = nh_icmp, .cuts = {1232}, .ident = 100});
    input(g[0]);
    input(g[1]);
    const auto big_whole = take_tx_frames(*st_);
    ASSERT_EQ(big_whole.size(), 1u);
    EXPECT_EQ(hex(big_whole[0]), hex(big_plain[0]));
    EXPECT_EQ(count("icmpv6_echo_replied"), 4u);
    expect_drops({});
}

TEST_F(Ipv6FragTest, AnEchoRequestInSeveralSegmentsIsAnsweredAndOneOverTheMtuIsNot) {
    // The same request in one mbuf and in three: the same reply.
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0x12, 0x34, 0, 10}, pattern(600, 12)}));
    input(frame6(nh_icmp, req));
    const auto one = take_tx_frames(*st_);
    input(frame6(nh_icmp, req), 0, {134, 400});
    const auto three = take_tx_frames(*st_);
    ASSERT_EQ(one.size(), 1u);
    ASSERT_EQ(three.size(), 1u);
    EXPECT_EQ(hex(three[0]), hex(one[0]));
    // A bad checksum anywhere in the chain is seen.
    bytes bad = frame6(nh_icmp, req);
    bad[500] ^= 0x40;
    input(bad, 0, {134, 400});
    // 3000 bytes in fragments: the reply would need fragments too, which
    // ferry does not send (as for IPv4: counted).
    const bytes big = icmp6(peer6, our6, 128, 0, concat({{0x12, 0x34, 0, 11}, pattern(3000, 13)}));
    for (const bytes &f : fragments({.part = big, .next = nh_icmp, .cuts = {1400, 2800}}))
        input(f);
    EXPECT_TRUE(take_tx_frames(*st_).empty());
    EXPECT_EQ(count("icmpv6_echo_replied"), 2u);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 1u);
    expect_drops({{"icmpv6_drop_bad_checksum", 1}, {"icmpv6_drop_oversize", 1}});
}

TEST_F(Ipv6FragTest, DatagramsAreToldApartByIdentificationAndSource) {
    // Two echo requests with the same identification from two sources, and
    // a third from the first source with another, interleaved: three replies.
    const ipv6_addr other = *ipv6_addr::parse("fd00:77::3");
    const bytes a = icmp6(peer6, our6, 128, 0, concat({{0, 1, 0, 1}, pattern(200, 4)}));
    const bytes b = icmp6(other, our6, 128, 0, concat({{0, 2, 0, 1}, pattern(200, 5)}));
    const bytes c = icmp6(peer6, our6, 128, 0, concat({{0, 3, 0, 1}, pattern(200, 6)}));
    const std::vector<bytes> fa = fragments({.part = a, .next = nh_icmp, .cuts = {104}, .ident = 5});
    std::vector<bytes> fb = fragments({.part = b, .next = nh_icmp, .cuts = {104}, .ident = 5});
    for (bytes &x : fb) std::copy(other.bytes().begin(), other.bytes().end(), x.begin() + 14 + 8);
    const std::vector<bytes> fc = fragments({.part = c, .next = nh_icmp, .cuts = {104}, .ident = 6});
    for (const std::vector<bytes> *v : std::initializer_list<const std::vector<bytes> *>{&fa, &fb, &fc}) input((*v)[0]);
    EXPECT_TRUE(take_tx_frames(*st_).empty());
    for (const std::vector<bytes> *v : std::initializer_list<const std::vector<bytes> *>{&fc, &fb, &fa}) input((*v)[1]);
    EXPECT_EQ(count("icmpv6_echo_replied"), 3u);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 3u);
    // The replies go to the peer (its address learned from the solicitation
    // sent for it) or wait on neighbour discovery: none is lost either way.
    expect_drops({});
}

TEST_F(Ipv6FragTest, AnOverlapDropsTheDatagramAndADuplicateOnlyItself) {
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0, 7, 0, 1}, pattern(300, 7)}));
    // RFC 5722: the second piece again, shifted back by 8 bytes onto the
    // first: the datagram is gone, the rest that comes later starts anew.
    auto f = fragments({.part = req, .next = nh_icmp, .cuts = {96, 200}, .ident = 1});
    const auto shifted = fragments({.part = req, .next = nh_icmp, .cuts = {88, 200}, .ident = 1});
    input(f[0]);
    input(shifted[1]);
    EXPECT_EQ(count("ipv6_frag_drop_overlap"), 1u);
    input(f[1]);
    input(f[2]);
    EXPECT_TRUE(take_tx_frames(*st_).empty()) << "the first fragment went with the overlap";
    // An exact duplicate (a retransmitted fragment) costs only itself.
    f = fragments({.part = req, .next = nh_icmp, .cuts = {96, 200}, .ident = 2});
    input(f[0]);
    input(f[0]);
    input(f[2]);
    input(f[1]);
    EXPECT_EQ(take_tx_frames(*st_).size(), 1u);
    EXPECT_EQ(count("ipv6_frag_reassembled"), 1u);
    EXPECT_EQ(count("ipv6_frag_rx"), 8u);
    expect_drops({{"ipv6_frag_drop_overlap", 1}, {"ipv6_frag_drop_duplicate", 1}});
}

TEST_F(Ipv6FragTest, LengthsRfc8200ForbidsGetAParameterProblem) {
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0, 8, 0, 1}, pattern(300, 8)}));
    // M set and a length not a multiple of 8: code 0 at the Payload Length.
    const auto odd = fragments({.part = req, .next = nh_icmp, .cuts = {100}, .ident = 3});
    input(odd[0]);
    auto out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 0, 4, odd[0]);
    // A fragment that would end past 65535 bytes: code 0 at the Fragment
    // Offset field (the Fragment header's byte 2, behind a hop-by-hop one).
    const bytes tail = frame6(hbh, concat({ext(fh, padn(6)),
                                           fragment(nh_icmp, 8189, false, 4), pattern(32, 9)}),
                              {});
    input(tail, 1 * sec);
    out = take();
    ASSERT_EQ(out.size(), 1u);
    expect_param_problem(out[0], 0, 40 + 8 + 2, tail);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 2u);
    expect_drops({{"ipv6_frag_drop_bad", 2}});
    EXPECT_EQ(st_->next_deadline(), UINT64_MAX) << "nothing held";
}

TEST_F(Ipv6FragTest, ATinyFirstFragmentAndAFragmentInsideAReassembledOneAreDropped) {
    // RFC 7112: the first fragment must hold the headers up to the upper
    // layer's; 16 bytes of a 300-byte message do not (no error is sent).
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0, 9, 0, 1}, pattern(300, 10)}));
    const auto tiny = fragments({.part = req, .next = nh_icmp, .cuts = {16}, .ident = 8});
    input(tiny[0]);
    // A datagram that, put together, starts with another (real) fragment.
    const bytes inner = concat({fragment(nh_icmp, 0, true, 10), req});
    const auto outer = fragments({.part = inner, .next = fh, .cuts = {96}, .ident = 9});
    input(outer[0]);
    input(outer[1]);
    EXPECT_TRUE(take().empty());
    EXPECT_EQ(count("ipv6_frag_reassembled"), 1u);
    expect_drops({{"ipv6_frag_drop_tiny", 1}, {"ipv6_frag_drop_bad", 1}});
}

TEST_F(Ipv6FragTest, AnIncompleteDatagramIsDroppedAfterSixtySeconds) {
    const bytes req = icmp6(peer6, our6, 128, 0, concat({{0, 10, 0, 1}, pattern(300, 11)}));
    const auto f = fragments({.part = req, .next = nh_icmp, .cuts = {96}, .ident = 11});
    input(f[0], 5 * sec);
    EXPECT_EQ(st_->next_deadline(), 65 * sec);
    st_->poll_timers(65 * sec - 1);
    EXPECT_EQ(count("ipv6_frag_drop_timeout"), 0u);
    st_->poll_timers(65 * sec);
    EXPECT_EQ(count("ipv6_frag_drop_timeout"), 1u);
    EXPECT_EQ(st_->next_deadline(), UINT64_MAX);
    // Its last fragment, late, starts a datagram of its own that times out too.
    input(f[1], 66 * sec);
    st_->poll_timers(126 * sec);
    EXPECT_TRUE(take().empty());
    expect_drops({{"ipv6_frag_drop_timeout", 2}});
}

TEST_F(Ipv6FragTest, AnAtomicFragmentIsTakenAsItIs) {
    learn_peer();
    // RFC 6946 §4: offset 0 and M 0, processed in isolation: no reassembly.
    input(frame6(fh, concat({fragment(nh_tcp, 0, false),
                             segment(tcp_seg(40004, 80, 9, tcp_flag::syn))})));
    expect_syn_ack(9);
    input(frame6(nh_tcp, segment(tcp_seg(40004, 80, 10, tcp_flag::rst))));
    EXPECT_EQ(count("ipv6_frag_rx"), 0u);
    expect_drops({});
}

}  // namespace
}  // namespace ferry::net
