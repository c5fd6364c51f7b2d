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

namespace ferry::net {
namespace {

using namespace test;
using test::PrintTo;

constexpr uint64_t ms = 1'000'000;
constexpr uint64_t sec = 1'000'000'000;

const ipv6_addr our6 = *ipv6_addr::parse("fd00:77::1");
const ipv6_addr peer6 = *ipv6_addr::parse("fd00:77::2");
const ipv6_addr all_nodes = *ipv6_addr::parse("ff02::1");
const bytes all_nodes_mac{0x33, 0x33, 0, 0, 0, 0x01};

constexpr uint8_t hbh = 0, nh_tcp = 6, nh_udp = 17, rh = 43, fh = 44, nh_icmp = 58, none = 59,
                  dopt = 60;

bytes addr_bytes(const ipv6_addr &a) { return bytes(a.bytes().begin(), a.bytes().end()); }

// RFC 8200 §8.1's pseudo-header, byte by byte.
bytes pseudo_header(const ipv6_addr &src, const ipv6_addr &dst, std::size_t len, uint8_t next) {
    return concat({addr_bytes(src), addr_bytes(dst),
                   {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)},
                   {0, 0, 0, next}});
}

bytes ipv6_header(const ipv6_addr &src, const ipv6_addr &dst, uint8_t next, std::size_t plen,
                  uint8_t hop = 64) {
    bytes h = {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), next, hop};
    return concat({h, addr_bytes(src), addr_bytes(dst)});
}

// ---- extension headers, built by hand

// PadN of `n` bytes in all (n >= 2), RFC 8200 §4.2.
bytes padn(std::size_t n) {
    bytes b(n, 0);
    b[0] = 1;
    b[1] = static_cast<uint8_t>(n - 2);
    return b;
}
// An option of type `type` with `len` data bytes.
bytes option(uint8_t type, uint8_t len) {
    bytes b(2 + len, 0xab);
    b[0] = type;
    b[1] = len;
    return b;
}
// A Hop-by-Hop / Destination Options or Routing header: Next Header, Hdr
// Ext Len (from the size), then `body`, which must make it 8n bytes.
bytes ext(uint8_t next, const bytes &body) {
    EXPECT_EQ((body.size() + 2) % 8, 0u) << "extension header of " << body.size() + 2 << " bytes";
    return concat({{next, static_cast<uint8_t>((body.size() + 2) / 8 - 1)}, body});
}
// A routing header of type 4 (SRH) with `left` segments left and 8 more bytes.
bytes routing(uint8_t next, uint8_t left) {
    return ext(next, {4, left, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
}
// A fragment header (RFC 8200 §4.5): offset in 8-byte units, M flag.
bytes fragment(uint8_t next, uint16_t offset, bool more) {
    const uint16_t w = static_cast<uint16_t>(offset << 3 | (more ? 1 : 0));
    return {next, 0, uint8_t(w >> 8), uint8_t(w), 0x12, 0x34, 0x56, 0x78};
}

// ---- upper layers

bytes icmp6(const ipv6_addr &src, const ipv6_addr &dst, uint8_t type, uint8_t code,
            const bytes &body) {
    bytes msg = concat({{type, code, 0, 0}, body});
    put16(msg, 2, ref_checksum(concat({pseudo_header(src, dst, msg.size(), 58), msg})));
    return msg;
}
bytes echo_request(const ipv6_addr &src = peer6, const ipv6_addr &dst = our6) {
    return icmp6(src, dst, 128, 0, concat({{0x12, 0x34, 0, 1}, from_string("pingdata")}));
}
// No UDP checksum check anywhere here: any value does.
bytes udp(std::size_t data_len = 4) {
    bytes b = {0x30, 0x39, 0x00, 0x35, 0, 0, 0xbe, 0xef};
    put16(b, 4, static_cast<uint16_t>(8 + data_len));
    return concat({b, bytes(data_len, 0x5a)});
}

struct frame_spec {
    ipv6_addr src = peer6, dst = our6;
    bytes eth_dst = our_mac;
    uint8_t hop = 64;
};

// Ethernet + fixed header (next header `first`, payload length from `rest`) + rest.
bytes frame6(uint8_t first, const bytes &rest, const frame_spec &s = {}) {
    return concat({eth_header(s.eth_dst, peer_mac, 0x86dd),
                   ipv6_header(s.src, s.dst, first, rest.size(), s.hop), rest});
}

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

// ------------------------------------------------------------ on a stack

class Ipv6ExtTest : public testing::Test {
protected:
    void SetUp() override { start(); }

    void start(uint32_t errors_per_s = 10, uint32_t burst = 10) {
        ASSERT_NE(g_pool, nullptr);
        layer_.reset();
        st_.reset();
        if (!avail0_) avail0_ = rte_mempool_avail_count(g_pool);
        iface_config ic;
        ic.mac = mac_addr({0x02, 0, 0, 0, 0, 0x01});
        ic.addr = ipv4_addr::from_octets(10, 0, 0, 1);
        ic.addr6 = our6;
        ic.icmp6_errors_per_s = errors_per_s;
        ic.icmp6_error_burst = burst;
        nc_.emplace();  // fresh counters for each configuration
        st_.emplace(ic, g_pool, *nc_);
        tcp_layer_config cfg;
        cfg.max_connections = 4;
        cfg.conn.timestamps = false;
        cfg.isn_key = siphash_key{1, 2};
        cfg.cookie_key0 = siphash_key{3, 4};
        cfg.cookie_key1 = siphash_key{5, 6};
        layer_.emplace(cfg, *st_, g_pool, *nc_, tc_);
        st_->attach_tcp(&*layer_);
        ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    }

    void TearDown() override {
        layer_.reset();
        st_.reset();
        if (avail0_) {
            EXPECT_EQ(rte_mempool_avail_count(g_pool), *avail0_) << "mbuf leak";
        }
    }

    // The frame in one mbuf, or cut into segments at `cuts`; with `dry`, the
    // pool has no free mbuf while the stack takes it (built before).
    void input(const bytes &f, uint64_t now = 0, const std::vector<std::size_t> &cuts = {},
               bool handoff = false, bool dry = false) {
        rte_mbuf *head = nullptr;
        std::size_t from = 0;
        std::vector<std::size_t> ends = cuts;
        ends.push_back(f.size());
        for (std::size_t to : ends) {
            rte_mbuf *seg = rte_pktmbuf_alloc(g_pool);
            ASSERT_NE(seg, nullptr);
            std::memcpy(rte_pktmbuf_append(seg, static_cast<uint16_t>(to - from)), f.data() + from,
                        to - from);
            if (head == nullptr)
                head = seg;
            else
                ASSERT_EQ(rte_pktmbuf_chain(head, seg), 0);
            from = to;
        }
        std::optional<pool_dry> held;
        if (dry) held.emplace(g_pool);
        if (handoff) {
            st_->input_handoff(head, now);
            return;
        }
        rte_mbuf *b[] = {head};
        st_->input_burst(b, now);
    }

    std::vector<frame_out> take() {
        std::vector<frame_out> out;
        for (const bytes &f : take_tx_frames(*st_)) {
            out.push_back(parse_frame(f));
            EXPECT_EQ(out.back().ethertype, 0x86dd);
        }
        return out;
    }

    uint64_t count(std::string_view name) const {
        for (const auto &f : net_counter_fields)
            if (name == f.name) return (*nc_.*f.member).get();
        ADD_FAILURE() << "no counter " << name;
        return 0;
    }

    // Every drop counter is 0 but the ones named, which have these values.
    void expect_drops(const std::map<std::string, uint64_t> &want) const {
        for (const auto &f : net_counter_fields) {
            const std::string n = f.name;
            if (n.find("_drop") == std::string::npos) continue;
            const auto it = want.find(n);
            EXPECT_EQ((*nc_.*f.member).get(), it == want.end() ? 0u : it->second) << n;
        }
    }

    // The peer's link-layer address, learned from a solicited advertisement
    // (RFC 4861 §7.2.5), so a SYN-ACK leaves at once.
    void learn_peer() {
        bytes na = {136, 0, 0, 0, 0x60, 0, 0, 0};
        na = concat({na, addr_bytes(peer6), {2, 1}, peer_mac});
        put16(na, 2, ref_checksum(concat({pseudo_header(peer6, our6, na.size(), 58), na})));
        input(frame6(nh_icmp, na, {.hop = 255}));
        ASSERT_EQ(count("nd_learned"), 1u);
    }

    // A TCP segment from the peer, its checksum over the pseudo-header with
    // the segment's own length (RFC 8200 §8.1: the extension headers are
    // not in it).
    static bytes segment(tcp_repr h, const bytes &data = {}) {
        h.payload_len = static_cast<uint32_t>(data.size());
        bytes seg(h.header_len() + data.size());
        std::copy(data.begin(), data.end(), seg.begin() + static_cast<long>(h.header_len()));
        tcp_segment s{std::span<uint8_t>(seg)};
        h.emit(s, peer6, our6);
        seg[16] = seg[17] = 0;
        put16(seg, 16, ref_checksum(concat({pseudo_header(peer6, our6, seg.size(), 6), seg})));
        return seg;
    }

    // The one frame sent is our SYN-ACK for a SYN with sequence number `seq`.
    void expect_syn_ack(uint32_t seq) {
        const auto out = take();
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].next_header, nh_tcp);
        EXPECT_EQ(out[0].dst, peer6);
        EXPECT_EQ(out[0].eth_dst, peer_mac);
        bytes l4 = out[0].l4;
        tcp_segment s{std::span<uint8_t>(l4)};
        tcp_repr r;
        ASSERT_EQ(tcp_repr::parse(s, r), tcp_error::none);
        EXPECT_EQ(r.flags, tcp_flag::syn | tcp_flag::ack);
        EXPECT_EQ(r.ack, seq_num(seq + 1));
        syn_ack_seq_ = r.seq.value();
    }

    // `f` is our Parameter Problem `code` at `pointer` for the frame
    // `invoking`, to `to`: addresses, the quoted datagram (no Ethernet
    // header, no padding, at most what fits in 1280 bytes) and the checksum.
    void expect_param_problem(const frame_out &f, uint8_t code, uint32_t pointer,
                              const bytes &invoking, const ipv6_addr &to = peer6) {
        EXPECT_EQ(f.eth_dst, peer_mac);
        EXPECT_EQ(f.eth_src, our_mac);
        EXPECT_EQ(f.next_header, nh_icmp);
        EXPECT_EQ(f.hop_limit, 64);
        EXPECT_EQ(f.src, our6);
        EXPECT_EQ(f.dst, to);
        ASSERT_GE(f.l4.size(), 8u);
        EXPECT_EQ(f.l4[0], 4) << "Parameter Problem";
        EXPECT_EQ(f.l4[1], code);
        const uint32_t got_ptr = uint32_t{f.l4[4]} << 24 | uint32_t{f.l4[5]} << 16 |
                                 uint32_t{f.l4[6]} << 8 | f.l4[7];
        EXPECT_EQ(got_ptr, pointer);
        const std::size_t dgram_len = 40 + (std::size_t{invoking[18]} << 8 | invoking[19]);
        const std::size_t quoted = std::min<std::size_t>(dgram_len, 1280 - 48);
        EXPECT_EQ(hex(std::span(f.l4).subspan(8)), hex(std::span(invoking).subspan(14, quoted)));
        // The checksum, summed here over the pseudo-header written out by hand.
        bytes zeroed = f.l4;
        zeroed[2] = zeroed[3] = 0;
        const uint16_t want =
            ref_checksum(concat({pseudo_header(our6, to, f.l4.size(), 58), zeroed}));
        EXPECT_EQ(static_cast<uint16_t>(f.l4[2] << 8 | f.l4[3]), want);
    }

    // A UDP datagram from `src` (ferry has no UDP: an error is due unless
    // RFC 4443 §2.4(e) forbids it).
    static bytes udp_frame(const frame_spec &s = {}) { return frame6(nh_udp, udp(), s); }

    std::optional<net_counters> nc_;
    tcp_counters tc_;
    std::optional<stack> st_;
    std::optional<tcp_layer> layer_;
    std::optional<unsigned> avail0_;
    uint32_t syn_ack_seq_ = 0;
};

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

TEST_F(Ipv6ExtTest, AnAtomicFragmentIsTakenARealOneIsDroppedAndCounted) {
    learn_peer();
    // RFC 6946 §4: offset 0 and M 0, processed in isolation.
    input(frame6(fh, concat({fragment(nh_tcp, 0, false),
                             segment(tcp_seg(40004, 80, 9, tcp_flag::syn))})));
    expect_syn_ack(9);
    input(frame6(nh_tcp, segment(tcp_seg(40004, 80, 10, tcp_flag::rst))));
    // A first fragment and a later one: no reassembly, no error.
    input(frame6(fh, concat({fragment(nh_tcp, 0, true),
                             segment(tcp_seg(40005, 80, 9, tcp_flag::syn))})));
    input(frame6(fh, concat({fragment(nh_tcp, 3, false), bytes(24, 1)})));
    EXPECT_TRUE(take().empty());
    expect_drops({{"ipv6_drop_fragment", 2}});
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
