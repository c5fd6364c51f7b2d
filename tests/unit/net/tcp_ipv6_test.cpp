// TCP over IPv6 on a real stack and real mbufs (issue 18 item 3): segments
// in as Ethernet/IPv6 frames, exact frames and counters out. RFC 8200 §8.1
// (the pseudo-header, checked here against a byte-by-byte model, not
// tcp_pseudo_header), RFC 4861 §7.2 (resolving the peer before the first
// segment leaves; learning from a solicitation), RFC 9293 (handshakes).
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "stack_test_env.h"
#include "tcp_test_util.h"
#include "test_util.h"

namespace ferry::net {
namespace {

using namespace test;

const ipv6_addr our6 = *ipv6_addr::parse("fd00:77::1");
const ipv6_addr peer6 = *ipv6_addr::parse("fd00:77::2");
const mac_addr peer_mac_v = mac_addr({0x02, 0, 0, 0, 0, 0x02});

bytes addr_bytes(const ipv6_addr &a) { return bytes(a.bytes().begin(), a.bytes().end()); }

// RFC 8200 §8.1's pseudo-header written out byte by byte, then the segment,
// through the textbook checksum loop.
uint16_t model_checksum(const ipv6_addr &src, const ipv6_addr &dst, bytes seg) {
    seg[16] = seg[17] = 0;
    const auto len = static_cast<uint32_t>(seg.size());
    bytes ph = concat({addr_bytes(src), addr_bytes(dst),
                       {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)},
                       {0, 0, 0, 6}});
    return ref_checksum(concat({ph, seg}));
}

bytes ipv6_header(const ipv6_addr &src, const ipv6_addr &dst, uint8_t next, std::size_t plen,
                  uint8_t hop = 64) {
    bytes h = {0x60, 0, 0, 0, uint8_t(plen >> 8), uint8_t(plen), next, hop};
    return concat({h, addr_bytes(src), addr_bytes(dst)});
}

// An ND message (type 135/136) with one link-layer address option.
bytes nd_message(uint8_t type, const ipv6_addr &src, const ipv6_addr &dst,
                 const ipv6_addr &target, uint8_t flags, uint8_t opt_type) {
    bytes msg = {type, 0, 0, 0, flags, 0, 0, 0};
    msg = concat({msg, addr_bytes(target), {opt_type, 1}, peer_mac});
    const uint32_t len = static_cast<uint32_t>(msg.size());
    bytes ph = concat({addr_bytes(src), addr_bytes(dst),
                       {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)},
                       {0, 0, 0, 58}});
    put16(msg, 2, ref_checksum(concat({ph, msg})));
    return msg;
}

class TcpIpv6Test : public testing::Test {
protected:
    void SetUp() override { start(true); }

    void start(bool with_addr6, std::optional<ipv6_addr> gateway6 = std::nullopt) {
        ASSERT_NE(g_pool, nullptr);
        layer_.reset();
        st_.reset();
        if (!avail0_) avail0_ = rte_mempool_avail_count(g_pool);
        iface_config ic;
        ic.mac = mac_addr({0x02, 0, 0, 0, 0, 0x01});
        ic.addr = ipv4_addr::from_octets(10, 0, 0, 1);
        if (with_addr6) ic.addr6 = our6;
        ic.gateway6 = gateway6;
        st_.emplace(ic, g_pool, nc_);
        tcp_layer_config cfg;
        cfg.max_connections = 4;
        cfg.conn.timestamps = false;
        cfg.isn_key = siphash_key{1, 2};
        cfg.cookie_key0 = siphash_key{3, 4};
        cfg.cookie_key1 = siphash_key{5, 6};
        layer_.emplace(cfg, *st_, g_pool, nc_, tc_);
        st_->attach_tcp(&*layer_);
    }

    void TearDown() override {
        layer_.reset();
        st_.reset();
        if (avail0_) {
            EXPECT_EQ(rte_mempool_avail_count(g_pool), *avail0_) << "mbuf leak";
        }
    }

    void input_frame(const bytes &f, uint64_t now = 0, bool handoff = false) {
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        // The exhaustion tests: the pool holds only `spare_` free mbufs
        // while the stack takes the frame.
        std::optional<pool_dry> held;
        if (spare_) {
            held.emplace(g_pool);
            held->give_back(*spare_);
        }
        if (handoff) {
            st_->input_handoff(m, now);
            return;
        }
        rte_mbuf *b[] = {m};
        st_->input_burst(b, now);
    }

    // A TCP segment from the peer over IPv6, checksummed by the model
    // (wrong when `corrupt`), from `src`.
    void send(tcp_repr h, const bytes &data = {}, uint64_t now = 0, bool corrupt = false,
              const ipv6_addr &src = peer6, bool handoff = false) {
        h.payload_len = static_cast<uint32_t>(data.size());
        bytes seg(h.header_len() + data.size());
        std::copy(data.begin(), data.end(), seg.begin() + static_cast<long>(h.header_len()));
        tcp_segment s{std::span<uint8_t>(seg)};
        h.emit(s, src, our6);
        put16(seg, 16, static_cast<uint16_t>(model_checksum(src, our6, seg) ^ (corrupt ? 1 : 0)));
        input_frame(concat({eth_header(our_mac, peer_mac, 0x86dd),
                            ipv6_header(src, our6, 6, seg.size()), seg}),
                    now, handoff);
    }

    // The peer answers a solicitation for itself (RFC 4861 §7.2.4).
    void advertise(uint8_t flags = 0x60 /* solicited, override */) {
        input_frame(concat({eth_header(our_mac, peer_mac, 0x86dd),
                            ipv6_header(peer6, our6, 58, 32, 255),
                            nd_message(136, peer6, our6, peer6, flags, 2)}));
    }

    std::vector<frame_out> take_frames() {
        std::vector<frame_out> out;
        for (const bytes &f : take_tx_frames(*st_)) out.push_back(parse_frame(f));
        return out;
    }

    // The TCP segments among the frames sent, checked against the model.
    std::vector<tcp_repr> take_tcp(std::vector<bytes> *payloads = nullptr) {
        std::vector<tcp_repr> out;
        for (frame_out &f : take_frames()) {
            if (f.next_header != 6) continue;
            EXPECT_EQ(f.eth_dst, peer_mac);
            EXPECT_EQ(f.src, our6);
            EXPECT_EQ(f.dst, peer6);
            const uint16_t field = static_cast<uint16_t>(f.l4[16] << 8 | f.l4[17]);
            EXPECT_EQ(field, model_checksum(our6, peer6, f.l4)) << "the RFC 8200 pseudo-header";
            tcp_segment s(std::span<uint8_t>(f.l4));
            tcp_repr r;
            EXPECT_EQ(tcp_repr::parse(s, r), tcp_error::none);
            if (payloads) payloads->emplace_back(s.payload().begin(), s.payload().end());
            out.push_back(r);
        }
        return out;
    }

    std::vector<tcp_notice> events() {
        tcp_notice n[16];
        const std::size_t k = layer_->poll_events(n);
        return {n, n + k};
    }

    net_counters nc_;
    tcp_counters tc_;
    std::optional<stack> st_;
    std::optional<tcp_layer> layer_;
    std::optional<unsigned> avail0_;
    std::optional<std::size_t> spare_;  // input_frame: mbufs left free, if set
};

uint64_t count(const net_counters &nc, std::string_view name) {
    for (const auto &f : net_counter_fields)
        if (name == f.name) return (nc.*f.member).get();
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

TEST_F(TcpIpv6Test, APassiveOpenResolvesThePeerThenCarriesDataBothWays) {
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    tcp_repr syn = tcp_seg(40000, 80, 1000, tcp_flag::syn);
    syn.options.mss = 1440;
    send(syn);
    // The SYN-ACK waits for the peer's link-layer address: a solicitation
    // goes to its solicited-node group (RFC 4861 §7.2.2).
    auto fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);
    EXPECT_EQ(fr[0].next_header, 58);
    EXPECT_EQ(fr[0].hop_limit, 255);
    EXPECT_EQ(fr[0].dst, peer6.solicited_node());
    EXPECT_EQ(fr[0].eth_dst, (bytes{0x33, 0x33, 0xff, 0, 0, 0x02}));
    nd_repr ns;
    ipv6_repr ip;
    ip.src = fr[0].src;
    ip.dst = fr[0].dst;
    ip.hop_limit = 255;
    ASSERT_EQ(nd_repr::parse(ip, fr[0].l4, ns), nd_error::none);
    EXPECT_EQ(ns.type, icmpv6_type::neighbor_solicitation);
    EXPECT_EQ(ns.target, peer6);
    EXPECT_EQ(ns.lladdr, mac_addr({0x02, 0, 0, 0, 0, 0x01}));
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 1u);
    advertise();
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(out[0].ack, seq_num(1001));
    // Over IPv6 the MSS offered is 20 bytes less than over IPv4 (1460).
    EXPECT_EQ(out[0].options.mss, 1440);
    const uint32_t iss = out[0].seq.value();
    send(tcp_seg(40000, 80, 1001, tcp_flag::ack, iss + 1));
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    const tcp_handle h = ev[0].h;
    EXPECT_FALSE(ev[0].active);
    ASSERT_NE(layer_->get(h), nullptr);
    EXPECT_EQ(layer_->get(h)->tuple().remote_addr, ip_addr(peer6));
    EXPECT_EQ(layer_->get(h)->tuple().local_addr, ip_addr(our6));
    // Data in, data out.
    send(tcp_seg(40000, 80, 1001, tcp_flag::ack | tcp_flag::psh, iss + 1), from_string("hello"));
    tcp_rx_piece pieces[4];
    const std::size_t n = layer_->recv(h, pieces, 1);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(pieces[0].len, 5u);
    for (std::size_t i = 0; i < n; ++i) rte_pktmbuf_free(pieces[i].m);
    rte_mbuf *chain = rte_pktmbuf_alloc(g_pool);
    std::memcpy(rte_pktmbuf_append(chain, 5), "world", 5);
    EXPECT_EQ(layer_->send(h, chain, 2), 5u);
    layer_->flush(2);
    std::vector<bytes> data;
    out = take_tcp(&data);
    ASSERT_GE(out.size(), 1u);
    EXPECT_EQ(data.back(), from_string("world"));
    EXPECT_EQ(out.back().ack, seq_num(1006));
    EXPECT_EQ(count(nc_, "nd_learned"), 1u);
    layer_->abort(h, 3);
    (void)take_tcp();
    (void)events();
}

TEST_F(TcpIpv6Test, AnActiveOpenPicksOurIpv6AddressAndASmallerMss) {
    tcp_handle h;
    ASSERT_EQ(layer_->connect(peer6, 8080, 0, h), tcp_layer::connect_result::ok);
    auto fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);  // the solicitation; the SYN waits
    EXPECT_EQ(fr[0].next_header, 58);
    advertise();
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::syn);
    EXPECT_EQ(out[0].options.mss, 1440);
    const uint16_t lport = out[0].src_port;
    tcp_repr sa = tcp_seg(8080, lport, 7000, tcp_flag::syn | tcp_flag::ack, out[0].seq.value() + 1);
    sa.options.mss = 1440;
    send(sa, {}, 1'000'000);
    out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::ack);
    auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(ev[0].active && (ev[0].events & tcp_event::connected));
    EXPECT_EQ(layer_->get(h)->snd_mss(), 1440);
    layer_->abort(h, 2'000'000);
    (void)take_tcp();
    (void)events();
}

TEST_F(TcpIpv6Test, WithoutAnIpv6AddressAnIpv6ConnectIsABadAddress) {
    start(false);
    tcp_handle h;
    EXPECT_EQ(layer_->connect(peer6, 8080, 0, h), tcp_layer::connect_result::bad_address);
    start(true);
    EXPECT_EQ(layer_->connect(*ipv6_addr::parse("ff02::1"), 80, 0, h),
              tcp_layer::connect_result::bad_address);
    // Off-link: no IPv6 router is configured, so the SYN has no route.
    ASSERT_EQ(layer_->connect(*ipv6_addr::parse("fd01::5"), 80, 0, h),
              tcp_layer::connect_result::ok);
    EXPECT_TRUE(take_frames().empty());
    EXPECT_EQ(count(nc_, "ipv6_drop_no_route"), 1u);
    layer_->abort(h, 1);
    (void)events();
}

TEST_F(TcpIpv6Test, OffLinkPeersAreReachedThroughTheGateway6) {
    // The router is fd00:77::2 here (the peer's MAC answers for it).
    start(true, peer6);
    tcp_handle h;
    const ipv6_addr far = *ipv6_addr::parse("fd01::5");
    ASSERT_EQ(layer_->connect(far, 80, 0, h), tcp_layer::connect_result::ok);
    auto fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);  // a solicitation for the router, not for fd01::5
    EXPECT_EQ(fr[0].next_header, 58);
    EXPECT_EQ(fr[0].dst, peer6.solicited_node());
    advertise();
    fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);
    EXPECT_EQ(fr[0].next_header, 6);
    EXPECT_EQ(fr[0].eth_dst, peer_mac);  // to the router's MAC
    EXPECT_EQ(fr[0].dst, far);            // for the far host
    EXPECT_EQ(count(nc_, "ipv6_drop_no_route"), 0u);
    layer_->abort(h, 1);
    (void)take_frames();
    (void)events();
}

TEST_F(TcpIpv6Test, ASolicitationWithTheSendersAddressTeachesItsLinkLayerAddress) {
    // RFC 4861 §7.2.3: then the SYN-ACK leaves at once, without a solicitation.
    input_frame(concat({eth_header(bytes{0x33, 0x33, 0xff, 0, 0, 0x01}, peer_mac, 0x86dd),
                        ipv6_header(peer6, our6.solicited_node(), 58, 32, 255),
                        nd_message(135, peer6, our6.solicited_node(), our6, 0, 1)}));
    auto fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);  // our advertisement
    EXPECT_EQ(count(nc_, "nd_advertised"), 1u);
    EXPECT_EQ(count(nc_, "nd_learned"), 1u);
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    send(tcp_seg(40001, 80, 5, tcp_flag::syn));
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 0u);
    send(tcp_seg(40001, 80, 6, tcp_flag::rst, 0));
    (void)events();
}

TEST_F(TcpIpv6Test, AtStartTheAddressIsProbedAndAnnouncedAndADuplicateIsCounted) {
    st_->announce(0);
    std::vector<frame_out> nd;
    for (frame_out &f : take_frames())
        if (f.ethertype == 0x86dd) nd.push_back(f);
    ASSERT_EQ(nd.size(), 2u);
    // RFC 4862 §5.4.2: from ::, to our solicited-node group, no option.
    EXPECT_TRUE(nd[0].src.is_unspecified());
    EXPECT_EQ(nd[0].dst, our6.solicited_node());
    EXPECT_EQ(nd[0].hop_limit, 255);
    ipv6_repr ip;
    ip.src = nd[0].src;
    ip.dst = nd[0].dst;
    ip.hop_limit = 255;
    nd_repr dad;
    ASSERT_EQ(nd_repr::parse(ip, nd[0].l4, dad), nd_error::none);
    EXPECT_EQ(dad.type, icmpv6_type::neighbor_solicitation);
    EXPECT_EQ(dad.target, our6);
    EXPECT_FALSE(dad.lladdr.has_value());
    // RFC 4861 §7.2.6: unsolicited, override, to all-nodes.
    ip.src = nd[1].src;
    ip.dst = nd[1].dst;
    nd_repr na;
    ASSERT_EQ(nd_repr::parse(ip, nd[1].l4, na), nd_error::none);
    EXPECT_EQ(nd[1].dst, ipv6_addr::all_nodes());
    EXPECT_EQ(na.type, icmpv6_type::neighbor_advertisement);
    EXPECT_TRUE(na.override_ && !na.solicited);
    EXPECT_EQ(na.target, our6);
    EXPECT_EQ(na.lladdr, mac_addr({0x02, 0, 0, 0, 0, 0x01}));
    EXPECT_EQ(count(nc_, "nd_dad_sent"), 1u);
    // Another node answers for our address: a duplicate, counted, not learned.
    input_frame(concat({eth_header(bytes{0x33, 0x33, 0, 0, 0, 1}, peer_mac, 0x86dd),
                        ipv6_header(our6, ipv6_addr::all_nodes(), 58, 32, 255),
                        nd_message(136, our6, ipv6_addr::all_nodes(), our6, 0x20, 2)}));
    EXPECT_EQ(count(nc_, "nd_conflict"), 1u);
    EXPECT_EQ(st_->neighbors().state(our6), neighbor_state::free);
}

TEST_F(TcpIpv6Test, WithThePoolDryNeighbourDiscoveryFailsCountedAndRecovers) {
    // A SYN from a peer not resolved yet, the pool dry: the SYN-ACK (made
    // in the SYN's own mbuf) waits in the neighbour table, the solicitation
    // finds no mbuf (counted). The table's retry a second later solicits
    // again, the answer releases what waited (the SYN-ACK, and its
    // retransmission of the same second): the handshake completes.
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    spare_ = 0;
    send(tcp_seg(40000, 80, 1000, tcp_flag::syn));
    spare_.reset();
    EXPECT_TRUE(take_frames().empty());
    EXPECT_EQ(count(nc_, "tx_alloc_fail"), 1u);
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 0u);
    EXPECT_EQ(st_->neighbors().state(peer6), neighbor_state::incomplete);
    st_->poll_timers(1'100'000'000);
    auto fr = take_frames();
    ASSERT_EQ(fr.size(), 1u);
    EXPECT_EQ(fr[0].dst, peer6.solicited_node());
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 1u);
    advertise();
    const auto out = take_tcp();
    ASSERT_GE(out.size(), 1u);
    for (const tcp_repr &r : out) EXPECT_EQ(r.flags, tcp_flag::syn | tcp_flag::ack);
    send(tcp_seg(40000, 80, 1001, tcp_flag::ack, out[0].seq.value() + 1), {}, 1'200'000'000);
    const auto ev = events();
    ASSERT_EQ(ev.size(), 1u);
    layer_->abort(ev[0].h, 1'300'000'000);
    (void)take_tcp();
    (void)events();
}

TEST_F(TcpIpv6Test, WithThePoolDryTheStartProbesAreCountedNotSent) {
    std::size_t before = 0;
    {
        pool_dry held(g_pool);
        st_->announce(0);  // the ARP announcement, the DAD probe, the advertisement
        before = take_frames().size();
    }
    EXPECT_EQ(before, 0u);
    EXPECT_EQ(count(nc_, "tx_alloc_fail"), 3u);
    EXPECT_EQ(count(nc_, "nd_dad_sent"), 0u);
    EXPECT_EQ(count(nc_, "nd_advertised"), 0u);
    EXPECT_EQ(count(nc_, "arp_gratuitous_sent"), 0u);
}

TEST_F(TcpIpv6Test, AnAdvertisementNobodyAskedForChangesNothing) {
    advertise(0x20);  // unsolicited, override
    EXPECT_EQ(count(nc_, "nd_ignored"), 1u);
    EXPECT_EQ(st_->neighbors().state(peer6), neighbor_state::free);
    EXPECT_TRUE(take_frames().empty());
}

// Found by test_ipv6_tcp: an upstream connection on lcore 1 solicited its
// server; the answer reached lcore 0 (net_tap delivers IPv6 to queue 0),
// which had no entry and dropped it, so the connect timed out (504). A
// solicited advertisement answers this node: it is taken (and shared).
TEST_F(TcpIpv6Test, ASolicitedAdvertisementIsTakenByAnLcoreThatDidNotAsk) {
    advertise(0x60);  // solicited, override; this stack sent no solicitation
    EXPECT_EQ(count(nc_, "nd_learned"), 1u);
    EXPECT_EQ(st_->neighbors().state(peer6), neighbor_state::reachable);
}

TEST_F(TcpIpv6Test, BadSegmentsAreDroppedAndCounted) {
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    send(tcp_seg(40000, 80, 1, tcp_flag::syn), {}, 0, /*corrupt=*/true);
    EXPECT_EQ(count(nc_, "tcp_drop_bad_checksum"), 1u);
    send(tcp_seg(40000, 80, 1, tcp_flag::syn), {}, 0, false, *ipv6_addr::parse("ff02::1"));
    EXPECT_EQ(count(nc_, "ipv6_drop_bad_src"), 1u);
    send(tcp_seg(40000, 80, 1, tcp_flag::syn), {}, 0, false, our6);
    EXPECT_EQ(count(nc_, "ipv6_drop_bad_src"), 2u);
    // A segment whose payload length runs past the frame.
    bytes f = concat({eth_header(our_mac, peer_mac, 0x86dd), ipv6_header(peer6, our6, 6, 40),
                      bytes(20, 0)});
    input_frame(f);
    EXPECT_EQ(count(nc_, "ipv6_drop_malformed"), 1u);
    EXPECT_TRUE(take_frames().empty());
    EXPECT_EQ(layer_->active(), 0u);
}

TEST_F(TcpIpv6Test, AClosedPortAnswersWithAResetOverIpv6) {
    send(tcp_seg(40000, 81, 1, tcp_flag::syn));
    (void)take_frames();  // the solicitation
    advertise();
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::rst | tcp_flag::ack);
    EXPECT_EQ(out[0].ack, seq_num(2));
}

TEST_F(TcpIpv6Test, AHandedOverIpv6SegmentIsTakenAsVerified) {
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    // Another lcore verified it: the checksum is not summed again.
    send(tcp_seg(40000, 80, 1000, tcp_flag::syn), {}, 0, /*corrupt=*/true, peer6, /*handoff=*/true);
    EXPECT_EQ(count(nc_, "tcp_handoff_in"), 1u);
    EXPECT_EQ(count(nc_, "tcp_drop_bad_checksum"), 0u);
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 1u);  // for the SYN-ACK
    advertise();
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::syn | tcp_flag::ack);
    send(tcp_seg(40000, 80, 1001, tcp_flag::rst, 0));
    (void)events();
}

TEST_F(TcpIpv6Test, BindingsLearnedFromNeighborDiscoveryGoToTheOtherLcores) {
    // The answer to a solicitation lands on one queue (on net_tap queue 0):
    // the flow's owner learns the binding through the hook, as for ARP.
    struct shared_log {
        std::vector<std::pair<ip_addr, mac_addr>> got;
        static void hook(void *ctx, const ip_addr &ip, mac_addr mac) noexcept {
            static_cast<shared_log *>(ctx)->got.emplace_back(ip, mac);
        }
    } log;
    st_->set_neighbor_hook(&shared_log::hook, &log);
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    send(tcp_seg(40000, 80, 1000, tcp_flag::syn));
    (void)take_frames();  // the solicitation
    advertise();
    ASSERT_EQ(log.got.size(), 1u);
    EXPECT_EQ(log.got[0].first, ip_addr(peer6));
    EXPECT_EQ(log.got[0].second, peer_mac_v);
    ASSERT_EQ(take_tcp().size(), 1u);  // the SYN-ACK it released
    send(tcp_seg(40000, 80, 1001, tcp_flag::rst, 0));
    (void)events();
    // Another lcore's stack, told, sends at once without soliciting.
    start(true);
    st_->learn_shared(peer6, peer_mac_v, 0);
    ASSERT_EQ(layer_->listen(80), tcp_layer::listen_result::ok);
    send(tcp_seg(40002, 80, 1, tcp_flag::syn));
    auto out = take_tcp();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, tcp_flag::syn | tcp_flag::ack);
    EXPECT_EQ(count(nc_, "nd_solicitations_sent"), 1u);  // the first stack's only
    send(tcp_seg(40002, 80, 2, tcp_flag::rst, 0));
    (void)events();
}

}  // namespace
}  // namespace ferry::net
