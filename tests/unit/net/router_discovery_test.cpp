// Router discovery (RFC 4861 §6.3): Router Advertisements parsed and
// validated as §6.1.2 says (every rule, on hand-built messages), Router
// Solicitations byte for byte, and on a real stack: solicitations at start
// and their retransmissions, a default router from an advertisement that
// carries an off-link client's SYN-ACK, its lifetime, lifetime 0, a
// configured gateway6 or discovery off, and the hook that shares a router
// with the other lcores.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "ferry/net/router_discovery.h"
#include "ipv6_stack_fixture.h"

namespace ferry::net {
namespace {

using namespace test6;

const ipv6_addr router_ll = *ipv6_addr::parse("fe80::1");
const ipv6_addr router2_ll = *ipv6_addr::parse("fe80::2");
const ipv6_addr far6 = *ipv6_addr::parse("fd00:99::5");  // off the port's fd00:77::/64
const bytes router_mac{0x02, 0, 0, 0, 0, 0xfe};

// RFC 4861 §4.2: Cur Hop Limit, M/O flags, Router Lifetime, Reachable Time,
// Retrans Timer, then `options`.
bytes ra_body(uint16_t lifetime_s, const bytes &options = {}) {
    return concat({{64, 0, uint8_t(lifetime_s >> 8), uint8_t(lifetime_s)},
                   {0, 0, 0x75, 0x30},  // reachable time 30000 ms
                   {0, 0, 0x03, 0xe8},  // retrans timer 1000 ms
                   options});
}
bytes sllao(const bytes &mac) { return concat({{1, 1}, mac}); }
bytes mtu_option(uint32_t mtu) {
    return {5, 1, 0, 0, uint8_t(mtu >> 24), uint8_t(mtu >> 16), uint8_t(mtu >> 8), uint8_t(mtu)};
}
bytes ra_msg(uint16_t lifetime_s, const bytes &options = {}, const ipv6_addr &src = router_ll,
             const ipv6_addr &dst = ipv6_addr::all_nodes()) {
    return icmp6(src, dst, 134, 0, ra_body(lifetime_s, options));
}

ipv6_repr header(const ipv6_addr &src, std::size_t len, uint8_t hop = 255) {
    ipv6_repr ip;
    ip.src = src;
    ip.dst = ipv6_addr::all_nodes();
    ip.hop_limit = hop;
    ip.next_header = 58;
    ip.payload_len = static_cast<uint16_t>(len);
    return ip;
}

TEST(RouterAdvertisement, ParsesLifetimeLinkLayerAddressAndMtu) {
    const bytes msg = ra_msg(1800, concat({mtu_option(1480), sllao(router_mac), {99, 1, 0, 0, 0, 0,
                                                                                 0, 0}}));
    ra_repr ra;
    ASSERT_EQ(ra_repr::parse(header(router_ll, msg.size()), msg, ra), ra_error::none);
    EXPECT_EQ(ra.router_lifetime_s, 1800);
    ASSERT_TRUE(ra.lladdr);
    EXPECT_EQ(bytes(ra.lladdr->bytes().begin(), ra.lladdr->bytes().end()), router_mac);
    EXPECT_EQ(ra.mtu, 1480u);
    const bytes bare = ra_msg(0);
    ASSERT_EQ(ra_repr::parse(header(router_ll, bare.size()), bare, ra), ra_error::none);
    EXPECT_EQ(ra.router_lifetime_s, 0);
    EXPECT_FALSE(ra.lladdr);
    EXPECT_FALSE(ra.mtu);
}

TEST(RouterAdvertisement, EveryValidityRuleOfSection612) {
    ra_repr ra;
    const bytes good = ra_msg(60, sllao(router_mac));
    // Not from a link-local address: routers advertise from theirs.
    const bytes from_global = ra_msg(60, {}, peer6);
    EXPECT_EQ(ra_repr::parse(header(peer6, from_global.size()), from_global, ra),
              ra_error::bad_source);
    // Forwarded by a router: hop limit below 255.
    EXPECT_EQ(ra_repr::parse(header(router_ll, good.size(), 254), good, ra),
              ra_error::bad_hop_limit);
    // Shorter than 16 bytes.
    bytes short_msg = icmp6(router_ll, ipv6_addr::all_nodes(), 134, 0, bytes(11, 0));
    EXPECT_EQ(ra_repr::parse(header(router_ll, short_msg.size()), short_msg, ra),
              ra_error::truncated);
    bytes bad_sum = good;
    bad_sum[20] ^= 1;
    EXPECT_EQ(ra_repr::parse(header(router_ll, bad_sum.size()), bad_sum, ra),
              ra_error::bad_checksum);
    const bytes code1 = icmp6(router_ll, ipv6_addr::all_nodes(), 134, 1, ra_body(60));
    EXPECT_EQ(ra_repr::parse(header(router_ll, code1.size()), code1, ra), ra_error::bad_code);
    const bytes zero_len = ra_msg(60, {1, 0, 0, 0, 0, 0, 0, 0});
    EXPECT_EQ(ra_repr::parse(header(router_ll, zero_len.size()), zero_len, ra),
              ra_error::bad_option);
    const bytes past_end = ra_msg(60, {1, 2, 0, 0, 0, 0, 0, 0});
    EXPECT_EQ(ra_repr::parse(header(router_ll, past_end.size()), past_end, ra),
              ra_error::truncated);
    const bytes odd_tail = ra_msg(60, {1});
    EXPECT_EQ(ra_repr::parse(header(router_ll, odd_tail.size()), odd_tail, ra),
              ra_error::truncated);
    const bytes ns = icmp6(router_ll, our6, 135, 0, bytes(20, 0));
    EXPECT_EQ(ra_repr::parse(header(router_ll, ns.size()), ns, ra), ra_error::not_ra);
}

// Every prefix of a valid advertisement with three options, its checksum made
// right for the prefix so that the option walk decides: a prefix that ends on
// an option boundary is valid with the options before it, any other is
// truncated, and a refused one leaves `out` as it was. (The parser is pure: no
// cut may read past the message, which the ASan build checks.)
TEST(RouterAdvertisement, CutAtEveryLengthIsTruncatedUnlessItEndsOnAnOptionBoundary) {
    const bytes opts = concat({sllao(router_mac), mtu_option(1480),
                               {99, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}});
    const bytes body = ra_body(60, opts);
    const bytes whole = icmp6(router_ll, ipv6_addr::all_nodes(), 134, 0, body);
    ASSERT_EQ(whole.size(), 48u);
    // The fixed part ends at 16; the options at 24, 32 and 48.
    const std::size_t boundaries[] = {16, 24, 32, 48};
    for (std::size_t n = 0; n <= whole.size(); ++n) {
        const bytes msg = n < 4 ? bytes(whole.begin(), whole.begin() + static_cast<long>(n))
                                : icmp6(router_ll, ipv6_addr::all_nodes(), 134, 0,
                                        bytes(body.begin(), body.begin() + static_cast<long>(n - 4)));
        ASSERT_EQ(msg.size(), n);
        ra_repr ra;
        ra.router_lifetime_s = 7;
        const ra_error e = ra_repr::parse(header(router_ll, msg.size()), msg, ra);
        const bool boundary = std::find(std::begin(boundaries), std::end(boundaries), n) !=
                              std::end(boundaries);
        const ra_error want = n == 0 ? ra_error::not_ra : boundary ? ra_error::none : ra_error::truncated;
        EXPECT_EQ(e, want) << "cut at " << n << ": " << name(e);
        if (e == ra_error::none) {
            EXPECT_EQ(ra.router_lifetime_s, 60) << n;
            EXPECT_EQ(ra.lladdr.has_value(), n >= 24) << n;
            EXPECT_EQ(ra.mtu.has_value(), n >= 32) << n;
        } else {
            EXPECT_EQ(ra.router_lifetime_s, 7) << "a refused cut at " << n << " wrote out";
            EXPECT_FALSE(ra.lladdr) << n;
        }
    }
}

TEST(RouterSolicitation, IsWrittenByteForByte) {
    const ipv6_addr dst = all_routers();
    EXPECT_EQ(dst.to_string(), "ff02::2");
    bytes out(rs_len(true));
    emit_rs(our6, dst, mac_addr::from_bytes(std::span<const uint8_t, 6>(our_mac.data(), 6)), out);
    bytes want = concat({{133, 0, 0, 0, 0, 0, 0, 0}, sllao(our_mac)});
    put16(want, 2, ref_checksum(concat({pseudo_header(our6, dst, want.size(), 58), want})));
    EXPECT_EQ(hex(out), hex(want));
    bytes bare(rs_len(false));
    emit_rs(our6, dst, std::nullopt, bare);
    EXPECT_EQ(bare.size(), 8u);
    EXPECT_EQ(bare[0], 133);
}

class RouterDiscoveryTest : public Ipv6StackTest {
protected:
    void SetUp() override {
        start(10, 10, [](iface_config &ic) { ic.router_discovery = true; });
    }

    // A Router Advertisement from `src` with our router's MAC in a
    // link-layer address option, to all nodes.
    void advertise(uint16_t lifetime_s, uint64_t now, const ipv6_addr &src = router_ll,
                   uint8_t hop = 255) {
        input(frame6(nh_icmp, ra_msg(lifetime_s, sllao(router_mac), src),
                     {.src = src, .dst = ipv6_addr::all_nodes(), .eth_dst = all_nodes_mac,
                      .hop = hop}),
              now);
    }

    // A SYN from the off-link client far6; what leaves in answer.
    std::vector<frame_out> syn_from_far(uint16_t sport, uint64_t now) {
        tcp_repr h = tcp_seg(sport, 80, 1000, tcp_flag::syn);
        bytes seg(h.header_len());
        tcp_segment s{std::span<uint8_t>(seg)};
        h.emit(s, far6, our6);
        seg[16] = seg[17] = 0;
        put16(seg, 16, ref_checksum(concat({pseudo_header(far6, our6, seg.size(), 6), seg})));
        input(frame6(nh_tcp, seg, {.src = far6}), now);
        return take();
    }

    // The IPv6 frames sent (announce() sends a gratuitous ARP too).
    std::vector<frame_out> take_v6() {
        std::vector<frame_out> out;
        for (const bytes &f : take_tx_frames(*st_)) {
            frame_out p = parse_frame(f);
            if (p.ethertype == 0x86dd) out.push_back(p);
        }
        return out;
    }

    // Every Router Solicitation among `frames`, checked.
    std::size_t solicitations(const std::vector<frame_out> &frames) {
        std::size_t n = 0;
        for (const frame_out &f : frames) {
            if (f.next_header != nh_icmp || f.l4.empty() || f.l4[0] != 133) continue;
            ++n;
            EXPECT_EQ(f.dst, all_routers());
            EXPECT_EQ(f.src, our6);
            EXPECT_EQ(f.hop_limit, 255);
            EXPECT_EQ(f.eth_dst, (bytes{0x33, 0x33, 0, 0, 0, 2}));
            EXPECT_EQ(hex(f.l4), hex([&] {
                          bytes want = concat({{133, 0, 0, 0, 0, 0, 0, 0}, sllao(our_mac)});
                          put16(want, 2, ref_checksum(concat({pseudo_header(our6, all_routers(),
                                                                            want.size(), 58),
                                                              want})));
                          return want;
                      }()));
        }
        return n;
    }
};

TEST_F(RouterDiscoveryTest, ThreeSolicitationsFourSecondsApartUntilAnAdvertisement) {
    st_->announce(1 * sec);
    EXPECT_EQ(solicitations(take_v6()), 1u);
    EXPECT_EQ(st_->next_deadline(), 5 * sec);
    st_->poll_timers(5 * sec - 1);
    EXPECT_EQ(solicitations(take_v6()), 0u);
    st_->poll_timers(5 * sec);
    EXPECT_EQ(solicitations(take_v6()), 1u);
    st_->poll_timers(9 * sec);
    EXPECT_EQ(solicitations(take_v6()), 1u);
    st_->poll_timers(13 * sec);
    EXPECT_EQ(solicitations(take_v6()), 0u) << "MAX_RTR_SOLICITATIONS is 3";
    EXPECT_EQ(count("nd_rs_sent"), 3u);
    EXPECT_EQ(st_->next_deadline(), UINT64_MAX);
    // An advertisement after the first one stops the rest.
    start(10, 10, [](iface_config &ic) { ic.router_discovery = true; });
    st_->announce(0);
    (void)take_v6();
    advertise(600, 1 * sec);
    st_->poll_timers(10 * sec);
    EXPECT_EQ(solicitations(take_v6()), 0u);
    EXPECT_EQ(count("nd_rs_sent"), 1u);
}

TEST_F(RouterDiscoveryTest, AnOffLinkClientIsAnsweredThroughTheAdvertisedRouterUntilItsLifetimeEnds) {
    EXPECT_TRUE(syn_from_far(41000, 0).empty());
    EXPECT_EQ(count("ipv6_drop_no_route"), 1u);
    EXPECT_FALSE(st_->router6(0));
    advertise(30, 1 * sec);
    EXPECT_EQ(st_->router6(1 * sec), router_ll);
    EXPECT_EQ(count("nd_router_added"), 1u);
    // The router's MAC came in the advertisement: the SYN-ACK leaves at once.
    auto out = syn_from_far(41001, 2 * sec);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dst, far6);
    EXPECT_EQ(out[0].eth_dst, router_mac);
    EXPECT_EQ(out[0].next_header, nh_tcp);
    // A new advertisement renews the lifetime: 30 s from 20 s.
    advertise(30, 20 * sec);
    st_->poll_timers(49 * sec);
    EXPECT_EQ(st_->router6(49 * sec), router_ll);
    EXPECT_LE(st_->next_deadline(), 50 * sec);
    st_->poll_timers(50 * sec);
    EXPECT_FALSE(st_->router6(50 * sec));
    EXPECT_EQ(count("nd_router_removed"), 1u);
    (void)take();  // the connections' SYN-ACK retransmissions up to here
    const uint64_t no_route = count("ipv6_drop_no_route");
    EXPECT_TRUE(syn_from_far(41002, 51 * sec).empty());
    EXPECT_EQ(count("ipv6_drop_no_route"), no_route + 1);
    // Lifetime 0 takes a router out at once; the second one heard takes over.
    advertise(600, 60 * sec);
    advertise(600, 61 * sec, router2_ll);
    EXPECT_EQ(st_->router6(62 * sec), router_ll);
    advertise(0, 62 * sec);
    EXPECT_EQ(st_->router6(62 * sec), router2_ll);
    EXPECT_EQ(count("nd_router_removed"), 2u);
    layer_->poll_timers(63 * sec);  // the connections' SYN-ACK retransmissions
    (void)take();
}

TEST_F(RouterDiscoveryTest, InvalidOrUnwantedAdvertisementsChangeNothing) {
    advertise(600, 0, router_ll, 64);  // forwarded: not from the link
    advertise(600, 0, peer6);          // not link-local
    EXPECT_EQ(count("nd_ra_drop_invalid"), 2u);
    EXPECT_FALSE(st_->router6(1));
    // A configured gateway6 wins; discovery off ignores advertisements.
    start(10, 10, [](iface_config &ic) {
        ic.router_discovery = true;
        ic.gateway6 = *ipv6_addr::parse("fe80::99");
    });
    advertise(600, 0);
    EXPECT_EQ(st_->router6(1), ipv6_addr::parse("fe80::99"));
    st_->announce(0);
    EXPECT_EQ(solicitations(take_v6()), 0u) << "no solicitation with a gateway6";
    start(10, 10, nullptr);
    advertise(600, 0);
    EXPECT_FALSE(st_->router6(1));
    EXPECT_EQ(count("nd_ra_ignored"), 1u);
    st_->announce(0);
    EXPECT_EQ(solicitations(take_v6()), 0u);
    // More than four routers: the first four stay.
    start(10, 10, [](iface_config &ic) { ic.router_discovery = true; });
    for (uint8_t i = 1; i <= 5; ++i) {
        auto b = router_ll.bytes();
        b[15] = i;
        advertise(600, 0, ipv6_addr(b));
    }
    EXPECT_EQ(count("nd_router_added"), 4u);
    EXPECT_EQ(count("nd_ra_ignored"), 1u);
    expect_drops({{"nd_ra_drop_invalid", 0}});
}

TEST_F(RouterDiscoveryTest, WithThePoolDryASolicitationIsCountedAndTheNextOneStillGoes) {
    {
        pool_dry dry(g_pool);
        st_->announce(0);
        EXPECT_EQ(count("nd_rs_sent"), 0u);
        EXPECT_GE(count("tx_alloc_fail"), 1u);
    }
    EXPECT_TRUE(take_v6().empty());
    st_->poll_timers(4 * sec);
    EXPECT_EQ(solicitations(take_v6()), 1u) << "the second of the three";
    st_->poll_timers(8 * sec);
    EXPECT_EQ(solicitations(take_v6()), 1u);
    st_->poll_timers(12 * sec);
    EXPECT_EQ(solicitations(take_v6()), 0u);
    EXPECT_EQ(count("nd_rs_sent"), 2u);
}

struct hook_log {
    std::vector<std::pair<ipv6_addr, uint16_t>> calls;
    static void record(void *ctx, const ipv6_addr &r, uint16_t lifetime) noexcept {
        static_cast<hook_log *>(ctx)->calls.emplace_back(r, lifetime);
    }
};

TEST_F(RouterDiscoveryTest, ARouterIsSharedThroughTheHookAndLearnedFromAnotherLcore) {
    hook_log log;
    st_->set_router_hook(hook_log::record, &log);
    advertise(300, 0);
    advertise(0, 1 * sec);
    ASSERT_EQ(log.calls.size(), 2u);
    EXPECT_EQ(log.calls[0], std::make_pair(router_ll, uint16_t{300}));
    EXPECT_EQ(log.calls[1], std::make_pair(router_ll, uint16_t{0}));
    // Another lcore's news: used here, not passed on again.
    st_->learn_router_shared(router2_ll, 120, 2 * sec);
    EXPECT_EQ(st_->router6(3 * sec), router2_ll);
    EXPECT_EQ(log.calls.size(), 2u);
    st_->learn_router_shared(router2_ll, 0, 4 * sec);
    EXPECT_FALSE(st_->router6(4 * sec));
}

}  // namespace
}  // namespace ferry::net
