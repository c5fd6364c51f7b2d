#include "ferry/net/ethernet.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using namespace test;

struct eth_case {
    const char *name;
    bytes frame;
    eth_error expected;
    uint16_t type = 0;
    std::size_t payload_len = 0;
};

class EthernetCheck : public testing::TestWithParam<eth_case> {};

TEST_P(EthernetCheck, ParsesOrRejects) {
    auto c = GetParam();
    ethernet_frame f(c.frame);
    EXPECT_EQ(f.check(), c.expected) << name(f.check());
    ethernet_repr r;
    EXPECT_EQ(ethernet_repr::parse(f, r), c.expected);
    EXPECT_EQ(ethernet_frame::new_checked(c.frame).has_value(), c.expected == eth_error::none);
    if (c.expected == eth_error::none) {
        EXPECT_EQ(r.dst, mac_addr({0x02, 0, 0, 0, 0, 0x01}));
        EXPECT_EQ(r.src, mac_addr({0x02, 0, 0, 0, 0, 0x02}));
        EXPECT_EQ(static_cast<uint16_t>(r.type), c.type);
        EXPECT_EQ(f.payload().size(), c.payload_len);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, EthernetCheck,
    testing::Values(
        eth_case{"ipv4", concat({eth_header(our_mac, peer_mac, 0x0800), bytes(46, 0)}),
                 eth_error::none, 0x0800, 46},
        eth_case{"arp", concat({eth_header(our_mac, peer_mac, 0x0806), bytes(28, 0)}),
                 eth_error::none, 0x0806, 28},
        eth_case{"header_only", eth_header(our_mac, peer_mac, 0x86dd), eth_error::none, 0x86dd, 0},
        // 802.3 length field instead of an EtherType: well formed, dispatch drops it.
        eth_case{"length_field", concat({eth_header(our_mac, peer_mac, 46), bytes(46, 0)}),
                 eth_error::none, 46, 46},
        eth_case{"vlan_8100", concat({eth_header(our_mac, peer_mac, 0x8100), bytes(46, 0)}),
                 eth_error::vlan_unsupported},
        eth_case{"qinq_88a8", concat({eth_header(our_mac, peer_mac, 0x88a8), bytes(46, 0)}),
                 eth_error::vlan_unsupported},
        eth_case{"thirteen_bytes", bytes(13, 0), eth_error::truncated},
        eth_case{"empty", bytes{}, eth_error::truncated}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Ethernet, TruncatedAtEveryLength) {
    const bytes full = concat({eth_header(our_mac, peer_mac, 0x0800), bytes(20, 0x45)});
    for (std::size_t len = 0; len < full.size(); ++len) {
        bytes b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(ethernet_frame(b).check(),
                  len < ethernet_frame::header_len ? eth_error::truncated : eth_error::none)
            << "len " << len;
    }
}

TEST(Ethernet, EmitParseRoundTrip) {
    const ethernet_repr r{mac_addr::broadcast(), mac_addr({0x02, 1, 2, 3, 4, 5}), ether_type::arp};
    bytes b(ethernet_repr::buffer_len() + 4, 0xee);
    ethernet_frame f(b);
    r.emit(f);
    EXPECT_EQ(b, concat({bcast_mac, bytes{0x02, 1, 2, 3, 4, 5}, bytes{0x08, 0x06},
                         bytes{0xee, 0xee, 0xee, 0xee}}));
    ethernet_repr back;
    ASSERT_EQ(ethernet_repr::parse(f, back), eth_error::none);
    EXPECT_EQ(back, r);
}

TEST(Ethernet, ErrorNames) {
    EXPECT_STREQ(name(eth_error::none), "none");
    EXPECT_STREQ(name(eth_error::truncated), "truncated");
    EXPECT_STREQ(name(eth_error::vlan_unsupported), "vlan_unsupported");
}

}  // namespace
}  // namespace ferry::net
