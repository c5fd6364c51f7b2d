// Shared by the IPv6 tests on a real stack (ipv6_ext_test.cpp,
// ipv6_frag_test.cpp): frames built byte by byte (fixed header, extension
// headers, upper layers) and a fixture with a stack and a TCP layer listening
// on port 80, frames in, parsed frames and counters out, no mbuf leaked.
#pragma once

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

namespace ferry::net::test6 {

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

inline bytes addr_bytes(const ipv6_addr &a) { return bytes(a.bytes().begin(), a.bytes().end()); }

// RFC 8200 §8.1's pseudo-header, byte by byte.
inline bytes pseudo_header(const ipv6_addr &src, const ipv6_addr &dst, std::size_t len, uint8_t next) {
    return concat({addr_bytes(src), addr_bytes(dst),
                   {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)},
                   {0, 0, 0, next}});
}

inline bytes ipv6_header(const ipv6_addr &src, const ipv6_addr &dst, uint8_t next, std::size_t plen,
                  uint8_t hop = 64) {
    bytes h = {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), next, hop};
    return concat({h, addr_bytes(src), addr_bytes(dst)});
}

// ---- extension headers, built by hand

// PadN of `n` bytes in all (n >= 2), RFC 8200 §4.2.
inline bytes padn(std::size_t n) {
    bytes b(n, 0);
    b[0] = 1;
    b[1] = static_cast<uint8_t>(n - 2);
    return b;
}
// An option of type `type` with `len` data bytes.
inline bytes option(uint8_t type, uint8_t len) {
    bytes b(2 + len, 0xab);
    b[0] = type;
    b[1] = len;
    return b;
}
// A Hop-by-Hop / Destination Options or Routing header: Next Header, Hdr
// Ext Len (from the size), then `body`, which must make it 8n bytes.
inline bytes ext(uint8_t next, const bytes &body) {
    EXPECT_EQ((body.size() + 2) % 8, 0u) << "extension header of " << body.size() + 2 << " bytes";
    return concat({{next, static_cast<uint8_t>((body.size() + 2) / 8 - 1)}, body});
}
// A routing header of type 4 (SRH) with `left` segments left and 8 more bytes.
inline bytes routing(uint8_t next, uint8_t left) {
    return ext(next, {4, left, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
}
// A fragment header (RFC 8200 §4.5): offset in 8-byte units, M flag.
inline bytes fragment(uint8_t next, uint16_t offset, bool more, uint32_t ident = 0x12345678) {
    const uint16_t w = static_cast<uint16_t>(offset << 3 | (more ? 1 : 0));
    return {next, 0, uint8_t(w >> 8), uint8_t(w), uint8_t(ident >> 24), uint8_t(ident >> 16),
            uint8_t(ident >> 8), uint8_t(ident)};
}

// ---- upper layers

inline bytes icmp6(const ipv6_addr &src, const ipv6_addr &dst, uint8_t type, uint8_t code,
            const bytes &body) {
    bytes msg = concat({{type, code, 0, 0}, body});
    put16(msg, 2, ref_checksum(concat({pseudo_header(src, dst, msg.size(), 58), msg})));
    return msg;
}
inline bytes echo_request(const ipv6_addr &src = peer6, const ipv6_addr &dst = our6) {
    return icmp6(src, dst, 128, 0, concat({{0x12, 0x34, 0, 1}, from_string("pingdata")}));
}
// No UDP checksum check anywhere here: any value does.
inline bytes udp(std::size_t data_len = 4) {
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
inline bytes frame6(uint8_t first, const bytes &rest, const frame_spec &s = {}) {
    return concat({eth_header(s.eth_dst, peer_mac, 0x86dd),
                   ipv6_header(s.src, s.dst, first, rest.size(), s.hop), rest});
}

// ------------------------------------------------------------ on a stack

class Ipv6StackTest : public testing::Test {
protected:
    void SetUp() override { start(); }

    // `tweak` changes the interface's configuration before the stack is made.
    void start(uint32_t errors_per_s = 10, uint32_t burst = 10,
               void (*tweak)(iface_config &) = nullptr) {
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
        if (tweak != nullptr) tweak(ic);
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

}  // namespace ferry::net::test6
