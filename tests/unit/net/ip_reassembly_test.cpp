// ip_reassembly on its own: fragments in any order make one frame whose
// bytes and header are those of the unfragmented datagram; duplicates,
// overlaps, bad lengths, too many fragments, the bounds and the timeout
// drop what they must and free every mbuf.
#include "ferry/net/ip_reassembly.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tcp_conn_harness.h"
#include "test_util.h"

namespace ferry::net {
namespace {

using namespace test;
using outcome = ip_reassembly::outcome;
constexpr uint32_t eth = 14;

// The datagram's payload byte at offset i.
uint8_t byte_at(uint32_t i) { return static_cast<uint8_t>(i * 7 + 3); }

struct frag_spec {
    uint16_t ident = 7;
    uint32_t off = 0;
    uint32_t len = 0;
    bool mf = true;
    uint32_t options = 0;  // IP option bytes (a header of 20 + options)
    uint32_t padding = 0;  // Ethernet padding after the datagram
};

// A fragment frame: Ethernet header, IPv4 header, its slice of the payload.
struct frag {
    rte_mbuf *m;
    ipv4_repr ip;
    uint32_t hlen;
};
frag make(const frag_spec &f) {
    ipv4_spec s;
    s.ident = f.ident;
    s.protocol = 6;
    s.options = f.options;
    s.ver_ihl = static_cast<uint8_t>(0x45 + f.options / 4);
    s.padding = f.padding;
    s.flags_frag = static_cast<uint16_t>((f.mf ? 0x2000 : 0) | (f.off / 8));
    s.payload.resize(f.len);
    for (uint32_t i = 0; i < f.len; ++i) s.payload[i] = byte_at(f.off + i);
    const bytes frame = concat({bytes(eth, 0), build_ipv4(s)});
    rte_mbuf *m = make_chain(frame, 4096);
    const ipv4_packet p(std::span<uint8_t>(rte_pktmbuf_mtod_offset(m, uint8_t *, eth),
                                           m->data_len - eth),
                        rte_pktmbuf_pkt_len(m) - eth);
    frag out{m, {}, static_cast<uint32_t>(p.header_len())};
    EXPECT_EQ(ipv4_repr::parse(p, out.ip), ipv4_error::none);
    return out;
}

ip_reassembly::result feed(ip_reassembly &r, const frag_spec &f, uint64_t now = 0) {
    frag x = make(f);
    return r.input(x.m, eth, x.ip, x.hlen, now);
}

class Reassembly : public testing::Test {
protected:
    void SetUp() override { avail0_ = rte_mempool_avail_count(g_pool); }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(g_pool), avail0_); }
    // The datagram in `m` is the unfragmented one of `total` payload bytes
    // with a header of `hlen` bytes; frees m.
    void expect_whole(rte_mbuf *m, uint32_t total, uint32_t hlen = 20) {
        ASSERT_NE(m, nullptr);
        const bytes b = chain_bytes(m, 0, rte_pktmbuf_pkt_len(m));
        ASSERT_EQ(b.size(), eth + hlen + total);
        const ipv4_packet p(std::span<uint8_t>(const_cast<uint8_t *>(b.data()) + eth, b.size() - eth));
        ipv4_repr ip;
        EXPECT_EQ(ipv4_repr::parse(p, ip), ipv4_error::none);  // checksum recomputed
        EXPECT_FALSE(ip.is_fragment());
        EXPECT_EQ(ip.payload_len, total);
        EXPECT_EQ(p.header_len(), hlen);
        for (uint32_t i = 0; i < total; ++i)
            ASSERT_EQ(b[eth + hlen + i], byte_at(i)) << "payload byte " << i;
        rte_pktmbuf_free(m);
    }
    unsigned avail0_ = 0;
};

TEST_F(Reassembly, EveryOrderOfFourFragmentsGivesTheDatagram) {
    const frag_spec parts[] = {{7, 0, 1480}, {7, 1480, 1480}, {7, 2960, 1480}, {7, 4440, 100, false}};
    std::vector<int> order = {0, 1, 2, 3};
    do {
        ip_reassembly r;
        for (size_t k = 0; k < 4; ++k) {
            auto res = feed(r, parts[order[k]]);
            if (k < 3) {
                EXPECT_EQ(res.what, outcome::held);
            } else {
                ASSERT_EQ(res.what, outcome::complete);
                expect_whole(res.frame, 4540);
            }
        }
        EXPECT_EQ(r.datagrams(), 0u);
        EXPECT_EQ(r.frames_held(), 0u);
    } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(Reassembly, OptionsOfTheFirstFragmentAndEthernetPaddingOfTheLast) {
    ip_reassembly r;
    EXPECT_EQ(feed(r, {7, 64, 8, false, 0, 30}).what, outcome::held);  // 30 bytes of padding
    auto res = feed(r, {7, 0, 64, true, 8});                           // 8 bytes of options
    ASSERT_EQ(res.what, outcome::complete);
    expect_whole(res.frame, 72, 28);
}

// The port may have marked the first fragment's L4 checksum good (or not
// checked): that says nothing of the datagram's, which TCP must sum itself.
TEST_F(Reassembly, TheDatagramsChecksumFlagsAreUnknown) {
    ip_reassembly r;
    frag first = make({7, 0, 64});
    first.m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_GOOD;
    EXPECT_EQ(r.input(first.m, eth, first.ip, first.hlen, 0).what, outcome::held);
    auto res = feed(r, {7, 64, 8, false});
    ASSERT_EQ(res.what, outcome::complete);
    EXPECT_EQ(res.frame->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN);
    EXPECT_EQ(res.frame->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK, RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN);
    expect_whole(res.frame, 72);
}

TEST_F(Reassembly, DuplicateIsDroppedAloneOverlapDropsTheDatagram) {
    ip_reassembly r;
    EXPECT_EQ(feed(r, {7, 0, 64}).what, outcome::held);
    auto dup = feed(r, {7, 0, 64});
    EXPECT_EQ(dup.what, outcome::duplicate);
    EXPECT_EQ(dup.freed, 1u);
    EXPECT_EQ(r.frames_held(), 1u);
    auto ov = feed(r, {7, 32, 64});  // 32..95 overlaps 0..63
    EXPECT_EQ(ov.what, outcome::overlap);
    EXPECT_EQ(ov.freed, 2u);
    EXPECT_EQ(r.datagrams(), 0u);
    // A fragment that would overwrite part of the first (RFC 1858 §3.2's
    // offset-1 attack) is an overlap too.
    EXPECT_EQ(feed(r, {8, 0, 64}).what, outcome::held);
    EXPECT_EQ(feed(r, {8, 8, 16}).what, outcome::overlap);
    EXPECT_EQ(r.frames_held(), 0u);
}

TEST_F(Reassembly, BadLengthsAndEnds) {
    ip_reassembly r;
    EXPECT_EQ(feed(r, {7, 0, 68}).what, outcome::bad);          // not a multiple of 8, MF set
    EXPECT_EQ(feed(r, {7, 65528, 16, false}).what, outcome::bad);  // past 65535
    EXPECT_EQ(feed(r, {7, 0, 16, true}).what, outcome::tiny);   // first fragment < 64 bytes
    // The last fragment sets the end: nothing may lie past it, and a second
    // "last" must agree.
    EXPECT_EQ(feed(r, {9, 128, 64, false}).what, outcome::held);
    EXPECT_EQ(feed(r, {9, 256, 8, true}).what, outcome::bad);
    EXPECT_EQ(r.datagrams(), 0u);
    EXPECT_EQ(feed(r, {10, 128, 64, true}).what, outcome::held);
    EXPECT_EQ(feed(r, {10, 64, 8, false}).what, outcome::bad);  // ends before held data
    EXPECT_EQ(feed(r, {11, 128, 64, false}).what, outcome::held);
    EXPECT_EQ(feed(r, {11, 0, 64, false}).what, outcome::bad);  // a second, other end
    EXPECT_EQ(r.frames_held(), 0u);
}

TEST_F(Reassembly, MoreThanMaxFragmentsDropsTheDatagram) {
    ip_reassembly r;
    for (uint32_t i = 1; i <= ip_reassembly::max_fragments; ++i)
        ASSERT_EQ(feed(r, {7, i * 64, 64}).what, outcome::held) << i;
    auto res = feed(r, {7, 0, 64});
    EXPECT_EQ(res.what, outcome::too_many);
    EXPECT_EQ(res.freed, ip_reassembly::max_fragments + 1);
    EXPECT_EQ(r.frames_held(), 0u);
}

TEST_F(Reassembly, BoundsEvictTheOldestDatagram) {
    reassembly_config c;
    c.max_datagrams = 4;
    c.max_frames = 6;
    ip_reassembly r(c);
    for (uint16_t id = 1; id <= 4; ++id) EXPECT_EQ(feed(r, {id, 64, 64}).what, outcome::held);
    auto res = feed(r, {5, 64, 64});  // a fifth datagram: the first goes
    EXPECT_EQ(res.what, outcome::held);
    EXPECT_EQ(res.evicted, 1u);
    EXPECT_EQ(r.datagrams(), 4u);
    EXPECT_EQ(feed(r, {2, 128, 64}).what, outcome::held);  // 5 frames
    EXPECT_EQ(feed(r, {2, 192, 64}).what, outcome::held);  // 6 frames
    res = feed(r, {3, 128, 64});  // a seventh frame: the oldest (2, with 3 frames) goes
    EXPECT_EQ(res.evicted, 1u);
    EXPECT_EQ(r.frames_held(), 4u);
    // Datagram 1 was evicted: its fragments start a new one, never complete
    // with what was freed.
    EXPECT_EQ(feed(r, {1, 0, 64}).what, outcome::held);
}

TEST_F(Reassembly, IncompleteDatagramsExpire) {
    reassembly_config c;
    c.timeout_ns = 30'000'000'000;
    ip_reassembly r(c);
    EXPECT_EQ(feed(r, {7, 0, 64}, 1'000).what, outcome::held);
    EXPECT_EQ(feed(r, {8, 0, 64}, 5'000'000'000).what, outcome::held);
    EXPECT_EQ(r.next_deadline(), 30'000'001'000u);
    EXPECT_EQ(r.poll(30'000'000'999), 0u);
    EXPECT_EQ(r.poll(30'000'001'000), 1u);
    EXPECT_EQ(r.next_deadline(), 35'000'000'000u);
    EXPECT_EQ(r.poll(40'000'000'000), 1u);
    EXPECT_EQ(r.next_deadline(), UINT64_MAX);
}

TEST_F(Reassembly, DestructorFreesWhatIsHeld) {
    {
        ip_reassembly r;
        for (uint16_t id = 1; id <= 10; ++id) EXPECT_EQ(feed(r, {id, 64, 64}).what, outcome::held);
    }  // TearDown: every mbuf back
}

// Random fragmentations of random sizes, in random order with duplicates:
// always the original datagram.
TEST_F(Reassembly, RandomFragmentations) {
    std::mt19937 g(15);
    for (int round = 0; round < 200; ++round) {
        const uint32_t total = std::uniform_int_distribution<uint32_t>(65, 20000)(g);
        std::vector<frag_spec> parts;
        for (uint32_t off = 0; off < total;) {
            uint32_t len = std::uniform_int_distribution<uint32_t>(8, 190)(g) * 8;
            if (off == 0) len = std::max<uint32_t>(len, 64);
            const bool last = off + len >= total;
            if (last) len = total - off;
            parts.push_back({static_cast<uint16_t>(round), off, len, !last});
            off += len;
        }
        if (parts.size() > ip_reassembly::max_fragments) continue;
        std::shuffle(parts.begin(), parts.end(), g);
        ip_reassembly r;
        ip_reassembly::result res;
        for (size_t k = 0; k < parts.size(); ++k) {
            if (k > 0 && g() % 4 == 0) {
                EXPECT_EQ(feed(r, parts[k - 1]).what, outcome::duplicate);
            }
            res = feed(r, parts[k]);
        }
        ASSERT_EQ(res.what, outcome::complete) << "round " << round;
        expect_whole(res.frame, total);
    }
}

}  // namespace
}  // namespace ferry::net
