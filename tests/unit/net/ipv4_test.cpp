#include "ferry/net/ipv4.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using namespace test;

ipv4_spec with(void (*f)(ipv4_spec &)) {
    ipv4_spec s;
    f(s);
    return s;
}

struct ipv4_case {
    const char *name;
    bytes datagram;
    ipv4_error expected;
    std::size_t header_len = 20;
    std::size_t payload_len = 8;
    bool fragment = false;
};

class Ipv4Check : public testing::TestWithParam<ipv4_case> {};

TEST_P(Ipv4Check, ParsesOrRejects) {
    auto c = GetParam();
    ipv4_packet p(c.datagram);
    EXPECT_EQ(p.check(), c.expected) << name(p.check());
    ipv4_repr r;
    EXPECT_EQ(ipv4_repr::parse(p, r), c.expected);
    EXPECT_EQ(ipv4_packet::new_checked(c.datagram).has_value(), c.expected == ipv4_error::none);
    if (c.expected == ipv4_error::none) {
        EXPECT_EQ(p.header_len(), c.header_len);
        EXPECT_EQ(p.payload().size(), c.payload_len);
        EXPECT_EQ(r.payload_len, c.payload_len);
        EXPECT_EQ(p.is_fragment(), c.fragment);
        EXPECT_EQ(r.is_fragment(), c.fragment);
        EXPECT_EQ(r.src, ipv4_addr::from_octets(10, 0, 0, 2));
        EXPECT_EQ(r.dst, ipv4_addr::from_octets(10, 0, 0, 1));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, Ipv4Check,
    testing::Values(
        ipv4_case{"plain", build_ipv4({}), ipv4_error::none},
        ipv4_case{"no_payload", build_ipv4(with([](ipv4_spec &s) { s.payload.clear(); })),
                  ipv4_error::none, 20, 0},
        ipv4_case{"options_4", build_ipv4(with([](ipv4_spec &s) {
                      s.ver_ihl = 0x46;
                      s.options = 4;
                  })),
                  ipv4_error::none, 24},
        ipv4_case{"options_40", build_ipv4(with([](ipv4_spec &s) {
                      s.ver_ihl = 0x4f;
                      s.options = 40;
                  })),
                  ipv4_error::none, 60},
        // Ethernet pads short frames to 60 bytes: bytes past the total length
        // are not payload.
        ipv4_case{"trailing_padding", build_ipv4(with([](ipv4_spec &s) { s.padding = 18; })),
                  ipv4_error::none},
        ipv4_case{"df_is_not_fragment",
                  build_ipv4(with([](ipv4_spec &s) { s.flags_frag = 0x4000; })), ipv4_error::none},
        ipv4_case{"first_fragment_mf",
                  build_ipv4(with([](ipv4_spec &s) { s.flags_frag = 0x2000; })), ipv4_error::none,
                  20, 8, true},
        ipv4_case{"last_fragment_offset",
                  build_ipv4(with([](ipv4_spec &s) { s.flags_frag = 0x00b9; })), ipv4_error::none,
                  20, 8, true},
        ipv4_case{"version_6", build_ipv4(with([](ipv4_spec &s) { s.ver_ihl = 0x65; })),
                  ipv4_error::bad_version},
        ipv4_case{"version_0", build_ipv4(with([](ipv4_spec &s) { s.ver_ihl = 0x05; })),
                  ipv4_error::bad_version},
        ipv4_case{"ihl_4", build_ipv4(with([](ipv4_spec &s) { s.ver_ihl = 0x44; })),
                  ipv4_error::bad_ihl},
        ipv4_case{"ihl_0", build_ipv4(with([](ipv4_spec &s) { s.ver_ihl = 0x40; })),
                  ipv4_error::bad_ihl},
        ipv4_case{"total_below_header", build_ipv4(with([](ipv4_spec &s) { s.total_len = 19; })),
                  ipv4_error::bad_length},
        ipv4_case{"total_below_ihl", build_ipv4(with([](ipv4_spec &s) {
                      s.ver_ihl = 0x46;
                      s.options = 4;
                      s.total_len = 22;
                  })),
                  ipv4_error::bad_length},
        ipv4_case{"total_beyond_buffer", build_ipv4(with([](ipv4_spec &s) { s.total_len = 29; })),
                  ipv4_error::truncated},
        // IHL 15 announces 60 header bytes; total length claims them, the buffer lacks them.
        ipv4_case{"ihl_beyond_buffer", build_ipv4(with([](ipv4_spec &s) {
                      s.ver_ihl = 0x4f;
                      s.total_len = 60;
                      s.payload = bytes(4, 0);
                  })),
                  ipv4_error::truncated},
        ipv4_case{"bad_checksum", build_ipv4(with([](ipv4_spec &s) { s.checksum = 0xdead; })),
                  ipv4_error::bad_checksum},
        ipv4_case{"nineteen_bytes", bytes(19, 0x45), ipv4_error::truncated},
        ipv4_case{"empty", bytes{}, ipv4_error::truncated}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Ipv4, TruncatedAtEveryLength) {
    const bytes full = build_ipv4(with([](ipv4_spec &s) {
        s.ver_ihl = 0x46;
        s.options = 4;
    }));
    for (std::size_t len = 0; len < full.size(); ++len) {
        bytes b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(ipv4_packet(b).check(), ipv4_error::truncated) << "len " << len;
    }
    bytes b = full;
    EXPECT_EQ(ipv4_packet(b).check(), ipv4_error::none);
}

// Any single corrupted bit outside version/IHL/total length is caught by the
// header checksum; inside the payload it is not the header's business.
TEST(Ipv4, CorruptionCaughtByChecksum) {
    const bytes good = build_ipv4(with([](ipv4_spec &s) {
        s.ver_ihl = 0x46;
        s.options = 4;
    }));
    for (std::size_t at = 4; at < good.size(); ++at) {
        for (int bit = 0; bit < 8; ++bit) {
            bytes b = good;
            b[at] ^= static_cast<uint8_t>(1 << bit);
            EXPECT_EQ(ipv4_packet(b).check(), at < 24 ? ipv4_error::bad_checksum : ipv4_error::none)
                << "byte " << at << " bit " << bit;
        }
    }
}

TEST(Ipv4, SegmentedDatagram) {
    // Only the header is in the span; the rest of the datagram is in later
    // mbuf segments, `datagram_bytes` says how much exists in total.
    bytes full = build_ipv4(with([](ipv4_spec &s) { s.payload = bytes(100, 1); }));
    std::span<uint8_t> head = std::span(full).first(20);
    EXPECT_EQ(ipv4_packet(head).check(), ipv4_error::truncated);
    EXPECT_EQ(ipv4_packet(head, 120).check(), ipv4_error::none);
    EXPECT_EQ(ipv4_packet(head, 140).check(), ipv4_error::none);  // padding
    EXPECT_EQ(ipv4_packet(head, 119).check(), ipv4_error::truncated);
    EXPECT_EQ(ipv4_packet(head, 120).payload().size(), 0u);  // only what is in the span
}

TEST(Ipv4, FieldAccessors) {
    bytes b = build_ipv4(with([](ipv4_spec &s) {
        s.tos = 0xb8;
        s.ident = 0xbeef;
        s.flags_frag = 0x4000 | 0x2000 | 3;
        s.ttl = 7;
        s.protocol = 6;
    }));
    ipv4_repr r;
    ASSERT_EQ(ipv4_repr::parse(ipv4_packet(b), r), ipv4_error::none);
    EXPECT_EQ(r.tos, 0xb8);
    EXPECT_EQ(r.ident, 0xbeef);
    EXPECT_TRUE(r.dont_fragment);
    EXPECT_TRUE(r.more_fragments);
    EXPECT_EQ(r.frag_offset, 24);
    EXPECT_EQ(r.ttl, 7);
    EXPECT_EQ(r.protocol, ip_protocol::tcp);
}

TEST(Ipv4, EmitParseRoundTrip) {
    const ipv4_repr r{.src = ipv4_addr::from_octets(192, 0, 2, 1),
                      .dst = ipv4_addr::from_octets(198, 51, 100, 2),
                      .protocol = ip_protocol::udp,
                      .payload_len = 12,
                      .ttl = 33,
                      .tos = 0x10,
                      .ident = 0x0102,
                      .dont_fragment = true};
    bytes b(r.buffer_len(), 0);
    ipv4_packet p(b);
    r.emit(p);
    // Independent reference: the same header built field by field.
    const bytes expected = build_ipv4(with([](ipv4_spec &s) {
        s.tos = 0x10;
        s.ident = 0x0102;
        s.flags_frag = 0x4000;
        s.ttl = 33;
        s.protocol = 17;
        s.src = {192, 0, 2, 1};
        s.dst = {198, 51, 100, 2};
        s.payload = bytes(12, 0);
    }));
    EXPECT_EQ(hex(b), hex(expected));
    ipv4_repr back;
    ASSERT_EQ(ipv4_repr::parse(p, back), ipv4_error::none);
    EXPECT_EQ(back, r);
}

TEST(Ipv4, ErrorNames) {
    EXPECT_STREQ(name(ipv4_error::truncated), "truncated");
    EXPECT_STREQ(name(ipv4_error::bad_version), "bad_version");
    EXPECT_STREQ(name(ipv4_error::bad_ihl), "bad_ihl");
    EXPECT_STREQ(name(ipv4_error::bad_length), "bad_length");
    EXPECT_STREQ(name(ipv4_error::bad_checksum), "bad_checksum");
}

}  // namespace
}  // namespace ferry::net
