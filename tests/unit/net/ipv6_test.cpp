// lib/net ipv6.h: text forms (RFC 4291 §2.2, RFC 5952), the fixed header,
// ICMPv6's checksum and Neighbor Discovery's NS/NA with their checks (RFC
// 4861 §7.1). Expected bytes were made by an independent Python RFC 1071 sum
// over the RFC 8200 §8.1 pseudo-header, not by the code under test.
#include "ferry/net/ipv6.h"
#include "ferry/net/ip_addr.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::net {
namespace {

ipv6_addr A(const char *s) {
    const auto a = ipv6_addr::parse(s);
    EXPECT_TRUE(a.has_value()) << s;
    return a.value_or(ipv6_addr{});
}

std::vector<uint8_t> hex(std::string_view h) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    return out;
}

TEST(Ipv6Addr, TextFormsParseAndPrintCanonically) {
    struct row {
        const char *in, *canonical;
    };
    const row rows[] = {
        {"::", "::"},
        {"::1", "::1"},
        {"fd00::1", "fd00::1"},
        {"FD00:0:0:0:0:0:0:1", "fd00::1"},
        {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},  // the first of equal runs
        {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"},  // one zero group stays
        {"2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8::ff00:42:8329"},
        {"fe80::", "fe80::"},
        {"1:0:0:2:0:0:0:3", "1:0:0:2::3"},  // the longer run
    };
    for (const row &r : rows) {
        SCOPED_TRACE(r.in);
        EXPECT_EQ(A(r.in).to_string(), r.canonical);
        EXPECT_EQ(A(r.canonical), A(r.in));
    }
    for (const char *bad : {"", ":", ":::", "1::2::3", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9",
                            "12345::", "g::", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8",
                            "::ffff:10.0.0.1", "fe80::1%eth0", "1:", ":1", "fd00::1/64"})
        EXPECT_FALSE(ipv6_addr::parse(bad).has_value()) << bad;
    const auto p = ipv6_addr::parse_prefix("fd00:77::1/64");
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->first, A("fd00:77::1"));
    EXPECT_EQ(p->second, 64);
    for (const char *bad : {"fd00::1", "fd00::1/129", "fd00::1/", "fd00::1/064", "x/64"})
        EXPECT_FALSE(ipv6_addr::parse_prefix(bad).has_value()) << bad;
}

TEST(Ipv6Addr, KindsSubnetsAndGroups) {
    EXPECT_TRUE(A("::").is_unspecified());
    EXPECT_TRUE(A("::1").is_loopback());
    EXPECT_FALSE(A("::2").is_loopback());
    EXPECT_TRUE(A("ff02::1").is_multicast());
    EXPECT_TRUE(A("fe80::1").is_link_local());
    EXPECT_TRUE(A("febf::1").is_link_local());
    EXPECT_FALSE(A("fec0::1").is_link_local());
    EXPECT_TRUE(A("fd12::1").is_unique_local());
    EXPECT_TRUE(A("fc00::1").is_unique_local());
    EXPECT_FALSE(A("fe00::1").is_unique_local());
    EXPECT_TRUE(A("::ffff:a00:1").is_ipv4_mapped());
    EXPECT_TRUE(A("fd00:77::9").in_subnet(A("fd00:77::"), 64));
    EXPECT_FALSE(A("fd00:78::9").in_subnet(A("fd00:77::"), 64));
    EXPECT_TRUE(A("fd00:77::9").in_subnet(A("fd00:7f::"), 28));   // a prefix inside a byte
    EXPECT_FALSE(A("fd00:77::9").in_subnet(A("fd00:7f::"), 29));
    EXPECT_TRUE(A("fd00::1").in_subnet(A("::"), 0));
    EXPECT_EQ(A("fd00::12:3456").solicited_node(), A("ff02::1:ff12:3456"));
    EXPECT_EQ(multicast_mac(A("ff02::1:ff12:3456")),
              mac_addr({0x33, 0x33, 0xff, 0x12, 0x34, 0x56}));
    EXPECT_EQ(ipv6_addr::all_nodes(), A("ff02::1"));
}

TEST(Ipv6Header, RoundTripAndErrors) {
    ipv6_repr h;
    h.traffic_class = 0xb8;
    h.flow_label = 0xabcde;
    h.payload_len = 8;
    h.next_header = static_cast<uint8_t>(ipv6_next::icmpv6);
    h.hop_limit = 255;
    h.src = A("fe80::2");
    h.dst = A("fd00::1");
    std::vector<uint8_t> buf(48 + 4);  // 4 bytes of padding past the payload
    h.emit(buf);
    EXPECT_EQ(buf[0], 0x6b);  // version 6, the traffic class's high nibble
    EXPECT_EQ(buf[1], 0x8a);
    ipv6_repr p;
    ASSERT_EQ(ipv6_repr::parse(buf, p), ipv6_error::none);
    EXPECT_EQ(p.traffic_class, 0xb8);
    EXPECT_EQ(p.flow_label, 0xabcdeu);
    EXPECT_EQ(p.payload_len, 8);
    EXPECT_EQ(p.next_header, 58);
    EXPECT_EQ(p.hop_limit, 255);
    EXPECT_EQ(p.src, h.src);
    EXPECT_EQ(p.dst, h.dst);
    EXPECT_EQ(ipv6_repr::parse(std::span(buf).first(39), p), ipv6_error::truncated);
    EXPECT_EQ(ipv6_repr::parse(std::span(buf).first(47), p), ipv6_error::truncated);
    buf[0] = 0x4b;
    EXPECT_EQ(ipv6_repr::parse(buf, p), ipv6_error::bad_version);
}

// fe80::2 (02:00:00:00:00:02) asks for fd00::1; fd00::1 (02:00:00:00:00:01)
// answers, solicited and overriding.
constexpr std::string_view ns_hex = "87007c1700000000fd0000000000000000000000000000010101020000000002";
constexpr std::string_view na_hex = "88001b1c60000000fd0000000000000000000000000000010201020000000001";

ipv6_repr nd_ip(const char *src, const char *dst) {
    ipv6_repr ip;
    ip.hop_limit = 255;
    ip.next_header = 58;
    ip.src = A(src);
    ip.dst = A(dst);
    return ip;
}

TEST(NeighborDiscovery, EmitsWhatAnIndependentSumExpects) {
    nd_repr ns;
    ns.type = icmpv6_type::neighbor_solicitation;
    ns.target = A("fd00::1");
    ns.lladdr = mac_addr({2, 0, 0, 0, 0, 2});
    std::vector<uint8_t> out(ns.len());
    ns.emit(A("fe80::2"), A("ff02::1:ff00:1"), out);
    EXPECT_EQ(out, hex(ns_hex));

    nd_repr na;
    na.type = icmpv6_type::neighbor_advertisement;
    na.target = A("fd00::1");
    na.solicited = na.override_ = true;
    na.lladdr = mac_addr({2, 0, 0, 0, 0, 1});
    out.assign(na.len(), 0);
    na.emit(A("fd00::1"), A("fe80::2"), out);
    EXPECT_EQ(out, hex(na_hex));
    EXPECT_TRUE(icmpv6_checksum_ok(A("fd00::1"), A("fe80::2"), out));
    EXPECT_FALSE(icmpv6_checksum_ok(A("fd00::2"), A("fe80::2"), out));  // the pseudo-header counts
}

TEST(NeighborDiscovery, ParsesAndChecksLikeRfc4861Section7) {
    const std::vector<uint8_t> ns = hex(ns_hex), na = hex(na_hex);
    nd_repr r;
    ASSERT_EQ(nd_repr::parse(nd_ip("fe80::2", "ff02::1:ff00:1"), ns, r), nd_error::none);
    EXPECT_EQ(r.type, icmpv6_type::neighbor_solicitation);
    EXPECT_EQ(r.target, A("fd00::1"));
    ASSERT_TRUE(r.lladdr.has_value());
    EXPECT_EQ(*r.lladdr, mac_addr({2, 0, 0, 0, 0, 2}));
    ASSERT_EQ(nd_repr::parse(nd_ip("fd00::1", "fe80::2"), na, r), nd_error::none);
    EXPECT_TRUE(r.solicited && r.override_ && !r.router);
    EXPECT_EQ(*r.lladdr, mac_addr({2, 0, 0, 0, 0, 1}));

    // Not from the link.
    ipv6_repr far = nd_ip("fe80::2", "ff02::1:ff00:1");
    far.hop_limit = 254;
    EXPECT_EQ(nd_repr::parse(far, ns, r), nd_error::bad_hop_limit);
    // The sum covers the pseudo-header: another destination breaks it.
    EXPECT_EQ(nd_repr::parse(nd_ip("fe80::2", "ff02::1:ff00:2"), ns, r), nd_error::bad_checksum);
    EXPECT_EQ(nd_repr::parse(nd_ip("fe80::2", "ff02::1:ff00:1"), std::span(ns).first(23), r),
              nd_error::truncated);
    std::vector<uint8_t> echo = ns;
    echo[0] = 128;
    EXPECT_EQ(nd_repr::parse(nd_ip("fe80::2", "ff02::1:ff00:1"), echo, r), nd_error::not_nd);

    // Re-summed variants: a code, a zero-length option, a multicast target,
    // DAD with a source link-layer address, a solicited NA to a group.
    auto resum = [](std::vector<uint8_t> m, const ipv6_repr &ip) {
        const uint16_t c = icmpv6_checksum(ip.src, ip.dst, m);
        m[2] = static_cast<uint8_t>(c >> 8);
        m[3] = static_cast<uint8_t>(c);
        return m;
    };
    const ipv6_repr to_group = nd_ip("fe80::2", "ff02::1:ff00:1");
    std::vector<uint8_t> m = ns;
    m[1] = 1;
    EXPECT_EQ(nd_repr::parse(to_group, resum(m, to_group), r), nd_error::bad_code);
    m = ns;
    m[25] = 0;
    EXPECT_EQ(nd_repr::parse(to_group, resum(m, to_group), r), nd_error::bad_option);
    m = ns;
    m[25] = 2;  // 16 bytes: past the end
    EXPECT_EQ(nd_repr::parse(to_group, resum(m, to_group), r), nd_error::truncated);
    m = ns;
    m[8] = 0xff;
    EXPECT_EQ(nd_repr::parse(to_group, resum(m, to_group), r), nd_error::multicast_target);
    const ipv6_repr dad = nd_ip("::", "ff02::1:ff00:1");
    EXPECT_EQ(nd_repr::parse(dad, resum(ns, dad), r), nd_error::bad_dad);
    m = ns;
    m.resize(24);  // DAD without the option: fine
    EXPECT_EQ(nd_repr::parse(dad, resum(m, dad), r), nd_error::none);
    EXPECT_FALSE(r.lladdr.has_value());
    const ipv6_repr na_group = nd_ip("fd00::1", "ff02::1");
    EXPECT_EQ(nd_repr::parse(na_group, resum(na, na_group), r), nd_error::solicited_to_multicast);
    // An unknown option is skipped.
    m = ns;
    m.insert(m.begin() + 24, {14, 1, 0, 0, 0, 0, 0, 0});  // a nonce option (RFC 3971), 8 bytes
    ASSERT_EQ(nd_repr::parse(to_group, resum(m, to_group), r), nd_error::none);
    EXPECT_EQ(*r.lladdr, mac_addr({2, 0, 0, 0, 0, 2}));
}

TEST(IpAddr, HoldsEitherFamilyAndKeepsThemApart) {
    const ip_addr v4 = ipv4_addr::from_octets(10, 77, 0, 2);
    EXPECT_TRUE(v4.is_v4());
    EXPECT_EQ(v4.v4(), ipv4_addr::from_octets(10, 77, 0, 2));
    EXPECT_EQ(v4.to_string(), "10.77.0.2");
    EXPECT_EQ(v4.fold(), 0x0a4d0002u);
    EXPECT_EQ(ip_addr().to_string(), "0.0.0.0");
    EXPECT_TRUE(ip_addr().is_v4());
    const ip_addr v6 = *ipv6_addr::parse("fd00:77::2");
    EXPECT_TRUE(v6.is_v6());
    EXPECT_EQ(v6.v6(), *ipv6_addr::parse("fd00:77::2"));
    EXPECT_EQ(v6.to_string(), "fd00:77::2");
    EXPECT_EQ(v6.fold(), 0xfd000077u ^ 2u);
    // The mapped form of 10.77.0.2 is that IPv4 address, not an IPv6 one.
    EXPECT_EQ(ip_addr(*ipv6_addr::parse("::ffff:a4d:2")), v4);
    EXPECT_NE(ip_addr(*ipv6_addr::parse("::a4d:2")), v4);
    uint8_t b[16];
    EXPECT_EQ(v4.put(b), 4u);
    EXPECT_EQ(b[0], 10);
    EXPECT_EQ(v6.put(b), 16u);
    EXPECT_EQ(b[0], 0xfd);
    // The longest text fits format()'s buffer.
    const ip_addr longest = *ipv6_addr::parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe");
    EXPECT_EQ(longest.to_string().size(), ip_addr::text_max);
    EXPECT_EQ(ip_addr(ipv4_addr::from_octets(255, 255, 255, 255)).to_string(), "255.255.255.255");
}

}  // namespace
}  // namespace ferry::net
