#include "ferry/net/addr.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <array>
#include <optional>
#include <string>

namespace ferry::net {
namespace {

using test::PrintTo;

struct mac_parse_case {
    const char *name;
    const char *text;
    std::optional<std::array<uint8_t, 6>> expected;
};

class MacParse : public testing::TestWithParam<mac_parse_case> {};

TEST_P(MacParse, Parses) {
    const auto &c = GetParam();
    const auto m = mac_addr::parse(c.text);
    ASSERT_EQ(m.has_value(), c.expected.has_value()) << c.text;
    if (m) {
        EXPECT_EQ(m->bytes(), *c.expected);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, MacParse,
    testing::Values(mac_parse_case{"lower", "02:00:5e:10:00:01",
                                   std::array<uint8_t, 6>{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}},
                    mac_parse_case{"upper", "0A:BC:DE:F0:12:34",
                                   std::array<uint8_t, 6>{0x0a, 0xbc, 0xde, 0xf0, 0x12, 0x34}},
                    mac_parse_case{"broadcast", "ff:ff:ff:ff:ff:ff",
                                   std::array<uint8_t, 6>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
                    mac_parse_case{"empty", "", std::nullopt},
                    mac_parse_case{"five_groups", "02:00:5e:10:00", std::nullopt},
                    mac_parse_case{"seven_groups", "02:00:5e:10:00:01:02", std::nullopt},
                    mac_parse_case{"dashes", "02-00-5e-10-00-01", std::nullopt},
                    mac_parse_case{"not_hex", "02:00:5e:10:00:0g", std::nullopt},
                    mac_parse_case{"short_group", "2:00:5e:10:00:01", std::nullopt},
                    mac_parse_case{"trailing_space", "02:00:5e:10:00:01 ", std::nullopt},
                    mac_parse_case{"trailing_colon", "02:00:5e:10:00:1:", std::nullopt}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(MacAddr, ToStringRoundTrip) {
    const mac_addr m({0x02, 0x00, 0x5e, 0xab, 0xcd, 0xef});
    EXPECT_EQ(m.to_string(), "02:00:5e:ab:cd:ef");
    EXPECT_EQ(mac_addr::parse(m.to_string()), m);
}

struct mac_class_case {
    const char *name;
    mac_addr mac;
    bool broadcast, multicast, unicast, zero;
};

class MacClass : public testing::TestWithParam<mac_class_case> {};

TEST_P(MacClass, Classifies) {
    const auto &c = GetParam();
    EXPECT_EQ(c.mac.is_broadcast(), c.broadcast);
    EXPECT_EQ(c.mac.is_multicast(), c.multicast);
    EXPECT_EQ(c.mac.is_unicast(), c.unicast);
    EXPECT_EQ(c.mac.is_zero(), c.zero);
}

INSTANTIATE_TEST_SUITE_P(
    Table, MacClass,
    testing::Values(mac_class_case{"broadcast", mac_addr::broadcast(), true, true, false, false},
                    mac_class_case{"ipv4_multicast", mac_addr({0x01, 0x00, 0x5e, 0, 0, 1}), false,
                                   true, false, false},
                    mac_class_case{"local_unicast", mac_addr({0x02, 0, 0, 0, 0, 1}), false, false,
                                   true, false},
                    mac_class_case{"zero", mac_addr{}, false, false, true, true}),
    [](const auto &info) { return std::string(info.param.name); });

struct ipv4_parse_case {
    const char *name;
    const char *text;
    std::optional<uint32_t> expected;
};

class Ipv4Parse : public testing::TestWithParam<ipv4_parse_case> {};

TEST_P(Ipv4Parse, Parses) {
    const auto &c = GetParam();
    const auto a = ipv4_addr::parse(c.text);
    ASSERT_EQ(a.has_value(), c.expected.has_value()) << c.text;
    if (a) {
        EXPECT_EQ(a->value(), *c.expected);
        EXPECT_EQ(a->to_string(), c.text);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, Ipv4Parse,
    testing::Values(ipv4_parse_case{"simple", "10.0.0.1", 0x0a000001},
                    ipv4_parse_case{"zero", "0.0.0.0", 0},
                    ipv4_parse_case{"broadcast", "255.255.255.255", 0xffffffff},
                    ipv4_parse_case{"mixed", "192.168.100.254", 0xc0a864fe},
                    ipv4_parse_case{"octet_too_big", "256.0.0.1", std::nullopt},
                    ipv4_parse_case{"three_octets", "1.2.3", std::nullopt},
                    ipv4_parse_case{"five_octets", "1.2.3.4.5", std::nullopt},
                    ipv4_parse_case{"leading_zero", "01.2.3.4", std::nullopt},
                    ipv4_parse_case{"empty_octet", "1..2.3", std::nullopt},
                    ipv4_parse_case{"trailing_dot", "1.2.3.4.", std::nullopt},
                    ipv4_parse_case{"trailing_space", "1.2.3.4 ", std::nullopt},
                    ipv4_parse_case{"letters", "a.b.c.d", std::nullopt},
                    ipv4_parse_case{"negative", "1.2.3.-4", std::nullopt},
                    ipv4_parse_case{"four_digits", "1234.1.1.1", std::nullopt},
                    ipv4_parse_case{"empty", "", std::nullopt}),
    [](const auto &info) { return std::string(info.param.name); });

struct subnet_case {
    const char *name;
    ipv4_addr addr;
    ipv4_addr net;
    uint8_t prefix_len;
    bool inside;
};

class Ipv4Subnet : public testing::TestWithParam<subnet_case> {};

TEST_P(Ipv4Subnet, InSubnet) {
    const auto &c = GetParam();
    EXPECT_EQ(c.addr.in_subnet(c.net, c.prefix_len), c.inside);
}

constexpr ipv4_addr ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return ipv4_addr::from_octets(a, b, c, d);
}

INSTANTIATE_TEST_SUITE_P(
    Table, Ipv4Subnet,
    testing::Values(subnet_case{"same_24", ip(10, 0, 0, 9), ip(10, 0, 0, 1), 24, true},
                    subnet_case{"other_24", ip(10, 0, 1, 9), ip(10, 0, 0, 1), 24, false},
                    subnet_case{"slash_0", ip(8, 8, 8, 8), ip(10, 0, 0, 1), 0, true},
                    subnet_case{"slash_32_same", ip(10, 0, 0, 1), ip(10, 0, 0, 1), 32, true},
                    subnet_case{"slash_32_other", ip(10, 0, 0, 2), ip(10, 0, 0, 1), 32, false},
                    subnet_case{"slash_31", ip(10, 0, 0, 1), ip(10, 0, 0, 0), 31, true},
                    subnet_case{"slash_9_edge", ip(10, 127, 255, 255), ip(10, 0, 0, 0), 9, true},
                    subnet_case{"slash_9_out", ip(10, 128, 0, 0), ip(10, 0, 0, 0), 9, false}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Ipv4Addr, MasksAndBroadcast) {
    EXPECT_EQ(ipv4_addr::prefix_mask(0), 0u);
    EXPECT_EQ(ipv4_addr::prefix_mask(8), 0xff000000u);
    EXPECT_EQ(ipv4_addr::prefix_mask(24), 0xffffff00u);
    EXPECT_EQ(ipv4_addr::prefix_mask(32), 0xffffffffu);
    EXPECT_EQ(ipv4_addr::prefix_mask(40), 0xffffffffu);
    EXPECT_EQ(ip(10, 0, 0, 1).subnet_broadcast(24), ip(10, 0, 0, 255));
    EXPECT_EQ(ip(10, 1, 2, 3).subnet_broadcast(8), ip(10, 255, 255, 255));
    EXPECT_EQ(ip(10, 0, 0, 1).subnet_broadcast(31), std::nullopt);
    EXPECT_EQ(ip(10, 0, 0, 1).subnet_broadcast(32), std::nullopt);
}

TEST(Ipv4Addr, Classification) {
    EXPECT_TRUE(ipv4_addr::any().is_unspecified());
    EXPECT_TRUE(ip(0, 1, 2, 3).is_this_network());
    EXPECT_TRUE(ipv4_addr::broadcast().is_broadcast());
    EXPECT_TRUE(ipv4_addr::broadcast().is_reserved());
    EXPECT_TRUE(ip(224, 0, 0, 1).is_multicast());
    EXPECT_TRUE(ip(239, 255, 255, 255).is_multicast());
    EXPECT_FALSE(ip(240, 0, 0, 1).is_multicast());
    EXPECT_TRUE(ip(240, 0, 0, 1).is_reserved());
    EXPECT_TRUE(ip(127, 0, 0, 1).is_loopback());
    EXPECT_FALSE(ip(10, 0, 0, 1).is_multicast() || ip(10, 0, 0, 1).is_loopback() ||
                 ip(10, 0, 0, 1).is_reserved() || ip(10, 0, 0, 1).is_this_network());
}

TEST(Ipv4Addr, WireOrder) {
    std::array<uint8_t, 4> b{};
    ip(192, 0, 2, 7).write(b);
    EXPECT_EQ(b, (std::array<uint8_t, 4>{192, 0, 2, 7}));
    EXPECT_EQ(ipv4_addr::from_bytes(b), ip(192, 0, 2, 7));
    EXPECT_EQ(ip(192, 0, 2, 7).value(), 0xc0000207u);
}

TEST(MulticastMac, Rfc1112Mapping) {
    // RFC 1112 §6.4: only the low 23 bits of the group are used.
    EXPECT_EQ(multicast_mac(ip(224, 0, 0, 251)), mac_addr({0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}));
    EXPECT_EQ(multicast_mac(ip(239, 255, 1, 2)), mac_addr({0x01, 0x00, 0x5e, 0x7f, 0x01, 0x02}));
}

}  // namespace
}  // namespace ferry::net
