#include "ferry/net/arp.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using namespace test;

arp_spec with(void (*f)(arp_spec &)) {
    arp_spec s;
    f(s);
    return s;
}

struct arp_case {
    const char *name;
    bytes packet;
    arp_error expected;
    arp_op op = arp_op::request;
};

class ArpParse : public testing::TestWithParam<arp_case> {};

TEST_P(ArpParse, ParsesOrRejects) {
    auto c = GetParam();
    arp_packet p(c.packet);
    arp_repr r;
    const arp_error e = arp_repr::parse(p, r);
    EXPECT_EQ(e, c.expected) << name(e);
    if (c.expected == arp_error::none) {
        EXPECT_EQ(r.op, c.op);
        EXPECT_EQ(r.sender_hw, mac_addr({0x02, 0, 0, 0, 0, 0x02}));
        EXPECT_EQ(r.sender_ip, ipv4_addr::from_octets(10, 0, 0, 2));
        EXPECT_EQ(r.target_ip, ipv4_addr::from_octets(10, 0, 0, 1));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ArpParse,
    testing::Values(
        arp_case{"request", build_arp({}), arp_error::none, arp_op::request},
        arp_case{"reply", build_arp(with([](arp_spec &s) { s.op = 2; })), arp_error::none,
                 arp_op::reply},
        // Ethernet minimum-frame padding after the packet is ignored.
        arp_case{"padded", concat({build_arp({}), bytes(18, 0)}), arp_error::none},
        arp_case{"ieee802_hardware", build_arp(with([](arp_spec &s) { s.htype = 6; })),
                 arp_error::unsupported_hardware},
        arp_case{"ipv6_protocol", build_arp(with([](arp_spec &s) { s.ptype = 0x86dd; })),
                 arp_error::unsupported_protocol},
        // hln 8 announces 8 + 2*(8+4) = 32 bytes: present here, but not Ethernet.
        arp_case{"hln_8", concat({build_arp(with([](arp_spec &s) { s.hlen = 8; })), bytes(4, 0)}),
                 arp_error::bad_address_length},
        arp_case{"pln_16_short", build_arp(with([](arp_spec &s) { s.plen = 16; })),
                 arp_error::truncated},
        arp_case{"pln_16",
                 concat({build_arp(with([](arp_spec &s) { s.plen = 16; })), bytes(24, 0)}),
                 arp_error::bad_address_length},
        arp_case{"rarp_op_3", build_arp(with([](arp_spec &s) { s.op = 3; })),
                 arp_error::unsupported_operation},
        arp_case{"op_0", build_arp(with([](arp_spec &s) { s.op = 0; })),
                 arp_error::unsupported_operation},
        arp_case{"fixed_part_only", bytes{0, 1, 8, 0, 6, 4, 0, 1}, arp_error::truncated},
        arp_case{"empty", bytes{}, arp_error::truncated}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Arp, TruncatedAtEveryLength) {
    const bytes full = build_arp({});
    ASSERT_EQ(full.size(), 28u);
    for (std::size_t len = 0; len < full.size(); ++len) {
        bytes b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
        arp_repr r;
        EXPECT_EQ(arp_repr::parse(arp_packet(b), r), arp_error::truncated) << "len " << len;
        EXPECT_FALSE(arp_packet::new_checked(b).has_value());
    }
}

TEST(Arp, EmitParseRoundTrip) {
    const arp_repr r{arp_op::reply, mac_addr({0x02, 0, 0, 0, 0, 0x01}),
                     ipv4_addr::from_octets(10, 0, 0, 1), mac_addr({0x02, 0, 0, 0, 0, 0x02}),
                     ipv4_addr::from_octets(10, 0, 0, 2)};
    bytes b(arp_repr::buffer_len(), 0xee);
    arp_packet p(b);
    r.emit(p);
    EXPECT_EQ(b, build_arp(with([](arp_spec &s) {
                  s.op = 2;
                  s.sha = our_mac;
                  s.spa = {10, 0, 0, 1};
                  s.tha = peer_mac;
                  s.tpa = {10, 0, 0, 2};
              })));
    arp_repr back;
    ASSERT_EQ(arp_repr::parse(p, back), arp_error::none);
    EXPECT_EQ(back, r);
}

TEST(Arp, ErrorNames) {
    EXPECT_STREQ(name(arp_error::unsupported_hardware), "unsupported_hardware");
    EXPECT_STREQ(name(arp_error::bad_address_length), "bad_address_length");
    EXPECT_STREQ(name(arp_error::unsupported_operation), "unsupported_operation");
}

}  // namespace
}  // namespace ferry::net
