// gso_run (packet_io.h): which consecutive segments of a tx burst may leave as
// one GSO frame, on frames built as tcp_layer builds them (Ethernet + IPv4 +
// TCP with timestamps in a header mbuf, the payload in it or chained behind,
// RTE_MBUF_F_TX_TCP_CKSUM). What the kernel then does with the frame
// (tcp_gso_segment) is exercised end to end by tests/integration/test_ferry_packet.py.
#include "ferry/net/packet_io.h"

#include <rte_ip.h>
#include <rte_mbuf.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ferry/net/byte_order.h"
#include "stack_test_env.h"

namespace ferry::net {
namespace {

using test::g_pool;
using wire::load_be16;
using wire::load_be32;
using wire::store_be16;
using wire::store_be32;

constexpr uint8_t ack = 0x10, psh = 0x08, fin = 0x01, syn = 0x02;

struct seg_spec {
    uint32_t seq = 1000;
    uint32_t len = 1448;
    uint8_t flags = ack;
    uint32_t ack_no = 77;
    uint16_t window = 512;
    uint32_t tsval = 5;
    uint16_t sport = 8080, dport = 40000;
    bool offload = true;
    bool chained = false;  // payload in a second mbuf
    bool v6 = false;       // over IPv6 (fd00:77::1 -> fd00:77::2) instead of IPv4
};

rte_mbuf *segment(const seg_spec &s) {
    const uint32_t l3 = s.v6 ? 40 : 20;
    const uint32_t hl = 14 + l3 + 32;  // TCP with NOP NOP timestamps
    rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
    EXPECT_NE(m, nullptr);
    auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(hl + (s.chained ? 0 : s.len))));
    std::memset(d, 0, hl);
    std::memcpy(d, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02", 12);
    store_be16(d + 12, s.v6 ? 0x86dd : 0x0800);
    uint8_t *ip = d + 14;
    if (s.v6) {
        ip[0] = 0x60;
        store_be16(ip + 4, static_cast<uint16_t>(32 + s.len));
        ip[6] = 6;
        ip[7] = 64;
        ip[8] = ip[24] = 0xfd;
        ip[11] = ip[27] = 0x77;
        ip[23] = 1;
        ip[39] = 2;
    } else {
        ip[0] = 0x45;
        store_be16(ip + 2, static_cast<uint16_t>(20 + 32 + s.len));
        store_be16(ip + 6, 0x4000);  // DF
        ip[8] = 64;
        ip[9] = 6;
        store_be32(ip + 12, 0x0a4d0001);
        store_be32(ip + 16, 0x0a4d0002);
    }
    uint8_t *t = ip + l3;
    store_be16(t, s.sport);
    store_be16(t + 2, s.dport);
    store_be32(t + 4, s.seq);
    store_be32(t + 8, s.ack_no);
    t[12] = 8 << 4;
    t[13] = s.flags;
    store_be16(t + 14, s.window);
    t[20] = 1;
    t[21] = 1;
    t[22] = 8;
    t[23] = 10;
    store_be32(t + 24, s.tsval);
    store_be32(t + 28, 3);
    if (s.chained) {
        rte_mbuf *p = rte_pktmbuf_alloc(g_pool);
        EXPECT_NE(p, nullptr);
        EXPECT_NE(rte_pktmbuf_append(p, static_cast<uint16_t>(s.len)), nullptr);
        m->next = p;
        m->nb_segs = 2;
        m->pkt_len += s.len;
    }
    if (s.offload) {
        m->ol_flags |= (s.v6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4) | RTE_MBUF_F_TX_TCP_CKSUM;
        m->l2_len = 14;
        m->l3_len = l3;
    }
    return m;
}

class GsoRun : public testing::Test {
protected:
    void SetUp() override {
        if (g_pool == nullptr) GTEST_SKIP() << "no EAL";
    }
    void TearDown() override {
        for (rte_mbuf *m : pkts) rte_pktmbuf_free(m);
    }
    // Appends a segment right after the last one (seq continues) with `s`'s other fields.
    void next(seg_spec s) {
        s.seq = at;
        pkts.push_back(segment(s));
        at += s.len + ((s.flags & fin) ? 1 : 0);
    }
    uint16_t run(size_t from = 0) {
        return gso_run(pkts.data() + from, static_cast<uint16_t>(pkts.size() - from));
    }
    std::vector<rte_mbuf *> pkts;
    uint32_t at = 1000;
};

TEST_F(GsoRun, FullSegmentsAndAShortPushedTailAreOneFrame) {
    for (int i = 0; i < 4; ++i) next({});
    next({.len = 300, .flags = ack | psh});
    EXPECT_EQ(run(), 5);
}

TEST_F(GsoRun, Ipv6SegmentsMergeToo) {
    seg_spec s;
    s.v6 = true;
    next(s);
    next(s);
    next(s);
    seg_spec tail = s;
    tail.len = 500;
    tail.flags = ack | psh;
    next(tail);
    EXPECT_EQ(run(), 4);
}

TEST_F(GsoRun, IpFamiliesAndIpv6HeadersThatDifferSplit) {
    seg_spec s;
    s.v6 = true;
    next(s);
    seg_spec v4 = s;
    v4.v6 = false;
    next(v4);  // an IPv4 segment of the same flow's numbers: never merged with IPv6
    EXPECT_EQ(run(), 1);
    pkts.pop_back();
    at -= v4.len;
    next(s);
    // A different flow label (IPv6 bytes 1..3) is a different header.
    rte_pktmbuf_mtod(pkts.back(), uint8_t *)[14 + 3] = 7;
    EXPECT_EQ(run(), 1);
}

TEST_F(GsoRun, ChainedPayloadsMergeLikeCopiedOnes) {
    next({.chained = true});
    next({});
    next({.len = 1000, .flags = ack | psh, .chained = true});
    EXPECT_EQ(run(), 3);
}

TEST_F(GsoRun, ASegmentAloneOrFirstOfOneIsOne) {
    next({});
    EXPECT_EQ(run(), 1);
}

TEST_F(GsoRun, AShortSegmentEndsTheRun) {
    next({});
    next({.len = 500});
    next({});
    EXPECT_EQ(run(), 2);  // every segment but the last carries the GSO size
    EXPECT_EQ(run(2), 1);
}

TEST_F(GsoRun, ALongerSegmentThanTheFirstIsNotMerged) {
    next({.len = 1000});
    next({.len = 1448});
    EXPECT_EQ(run(), 1);
}

TEST_F(GsoRun, PushOrFinEndsTheRunAndOnlyTheLastMayCarryThem) {
    next({});
    next({.flags = ack | psh});
    next({});
    EXPECT_EQ(run(), 2);
    TearDown();
    pkts.clear();
    next({.flags = ack | psh});
    next({});
    EXPECT_EQ(run(), 1) << "a pushed first segment is a frame of its own";
    TearDown();
    pkts.clear();
    next({});
    next({.len = 10, .flags = ack | fin});
    EXPECT_EQ(run(), 2);
}

TEST_F(GsoRun, AGapInSequenceSplits) {
    next({});
    at += 1448;  // a hole: a retransmission, or SACKed data skipped
    next({});
    EXPECT_EQ(run(), 1);
}

TEST_F(GsoRun, AnyHeaderDifferenceTheKernelWouldNotReproduceSplits) {
    const seg_spec others[] = {{.ack_no = 78}, {.window = 511}, {.tsval = 6},
                               {.sport = 8081},   {.dport = 40001}};
    for (const seg_spec &o : others) {
        next({});
        next(o);
        EXPECT_EQ(run(pkts.size() - 2), 1);
    }
}

TEST_F(GsoRun, PureAcksSynsAndSoftwareChecksumsAreAlone) {
    next({.len = 0});
    next({.len = 0});
    EXPECT_EQ(run(), 1) << "a pure ACK has no GSO size";
    next({.flags = syn | ack});
    next({});
    EXPECT_EQ(run(2), 1);
    next({.offload = false});
    next({.offload = false});
    EXPECT_EQ(run(4), 1) << "a checksum already summed cannot be split by the kernel";
    next({});
    next({.offload = false});
    EXPECT_EQ(run(6), 1);
}

TEST_F(GsoRun, BoundedBySegmentsAndByTheIpv4Length) {
    for (int i = 0; i < 60; ++i) next({});
    EXPECT_EQ(run(), gso_max_segments);
    TearDown();
    pkts.clear();
    for (int i = 0; i < 40; ++i) next({.len = 1900, .chained = true});  // 40 x 1900 > 65535
    const uint16_t n = run();
    EXPECT_EQ(n, (gso_max_ip_bytes - 52) / 1900);
    EXPECT_LE(20u + 32u + n * 1900u, gso_max_ip_bytes);
}

}  // namespace
}  // namespace ferry::net

// gso_split: a GSO frame as the kernel hands it to a packet socket (virtio-net
// header first), cut into the segments tcp_gso_segment() would make.
namespace ferry::net {
namespace {

struct vnet {
    uint8_t flags, gso_type;
    uint16_t hdr_len, gso_size, csum_start, csum_offset;
};
static_assert(sizeof(vnet) == 10);

// A frame of `payload` bytes (byte i = i % 251) with tcp flags `flags`,
// starting at sequence 5000, IPv4 id 300, behind a virtio-net header.
std::vector<uint8_t> gso_frame(uint32_t payload, uint16_t gso, uint8_t flags,
                               uint8_t gso_type = 1, uint8_t proto = 6) {
    constexpr uint32_t hl = 14 + 20 + 32;
    std::vector<uint8_t> b(sizeof(vnet) + hl + payload, 0);
    vnet v{1, gso_type, hl, gso, 34, 16};
    std::memcpy(b.data(), &v, sizeof v);
    uint8_t *d = b.data() + sizeof v;
    store_be16(d + 12, 0x0800);
    uint8_t *ip = d + 14;
    ip[0] = 0x45;
    store_be16(ip + 2, static_cast<uint16_t>(20 + 32 + payload));
    store_be16(ip + 4, 300);
    store_be16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = proto;
    store_be32(ip + 12, 0x0a4d0002);
    store_be32(ip + 16, 0x0a4d0001);
    uint8_t *t = ip + 20;
    store_be16(t, 80);
    store_be16(t + 2, 40000);
    store_be32(t + 4, 5000);
    store_be32(t + 8, 9);
    t[12] = 8 << 4;
    t[13] = flags;
    store_be16(t + 14, 1000);
    for (uint32_t i = 0; i < payload; ++i) d[hl + i] = static_cast<uint8_t>(i % 251);
    return b;
}

// The same over IPv6 (fd00:77::2 -> fd00:77::1, flow label 0x12345, hop
// limit 64), gso_type TCPV6 (4), with `ecn` ORing VIRTIO_NET_HDR_GSO_ECN in.
std::vector<uint8_t> gso_frame6(uint32_t payload, uint16_t gso, uint8_t flags, bool ecn = false,
                                uint8_t next_header = 6) {
    constexpr uint32_t hl = 14 + 40 + 32;
    std::vector<uint8_t> b(sizeof(vnet) + hl + payload, 0);
    vnet v{1, static_cast<uint8_t>(4 | (ecn ? 0x80 : 0)), hl, gso, 54, 16};
    std::memcpy(b.data(), &v, sizeof v);
    uint8_t *d = b.data() + sizeof v;
    store_be16(d + 12, 0x86dd);
    uint8_t *ip = d + 14;
    store_be32(ip, 0x60012345);
    store_be16(ip + 4, static_cast<uint16_t>(32 + payload));
    ip[6] = next_header;
    ip[7] = 64;
    ip[8] = 0xfd, ip[11] = 0x77, ip[23] = 2;    // source fd00:77::2
    ip[24] = 0xfd, ip[27] = 0x77, ip[39] = 1;   // destination fd00:77::1
    uint8_t *t = ip + 40;
    store_be16(t, 80);
    store_be16(t + 2, 40000);
    store_be32(t + 4, 5000);
    store_be32(t + 8, 9);
    t[12] = 8 << 4;
    t[13] = flags;
    store_be16(t + 14, 1000);
    for (uint32_t i = 0; i < payload; ++i) d[hl + i] = static_cast<uint8_t>(i % 251);
    return b;
}

class GsoSplit : public testing::Test {
protected:
    void SetUp() override {
        if (g_pool == nullptr) GTEST_SKIP() << "no EAL";
    }
    void TearDown() override {
        for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(out[i]);
    }
    uint16_t split(const std::vector<uint8_t> &b, uint16_t cap = 64) {
        n = gso_split(b.data(), static_cast<uint32_t>(b.size()), g_pool, out, cap);
        return n;
    }
    // `b` (a 4-segment GSO frame) against a dry pool, then one mbuf short,
    // then a full one: nothing cut until all four fit.
    void empty_pool_case(const std::vector<uint8_t> &b);
    rte_mbuf *out[64] = {};
    uint16_t n = 0;
};

TEST_F(GsoSplit, CutsIntoGsoSizedSegmentsWithTheKernelsHeaders) {
    const uint8_t cwr = 0x80;
    const auto b = gso_frame(3 * 1448 + 700, 1448, 0x10 | 0x08 | 0x01 | cwr);  // ACK PSH FIN CWR
    ASSERT_EQ(split(b), 4);
    uint32_t at = 0;
    for (uint16_t i = 0; i < n; ++i) {
        const rte_mbuf *m = out[i];
        const uint32_t chunk = i < 3 ? 1448 : 700;
        const auto *d = rte_pktmbuf_mtod(m, const uint8_t *);
        ASSERT_EQ(m->pkt_len, 66 + chunk);
        EXPECT_EQ(load_be16(d + 14 + 2), 52 + chunk) << "IPv4 total length";
        EXPECT_EQ(load_be16(d + 14 + 4), 300 + i) << "IPv4 id";
        rte_ipv4_hdr ip;
        std::memcpy(&ip, d + 14, sizeof ip);
        const uint16_t sent = ip.hdr_checksum;
        ip.hdr_checksum = 0;
        EXPECT_EQ(rte_ipv4_cksum(&ip), sent) << "a valid IPv4 header checksum";
        EXPECT_EQ(load_be32(d + 34 + 4), 5000 + at) << "sequence";
        EXPECT_EQ(load_be32(d + 34 + 8), 9u) << "the same ACK";
        const uint8_t fl = d[34 + 13];
        EXPECT_EQ(fl & 0x10, 0x10);
        EXPECT_EQ((fl & 0x09) != 0, i == 3) << "PSH and FIN on the last segment only";
        EXPECT_EQ((fl & cwr) != 0, i == 0) << "CWR on the first only";
        EXPECT_EQ(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD);
        for (uint32_t k = 0; k < chunk; ++k)
            ASSERT_EQ(d[66 + k], static_cast<uint8_t>((at + k) % 251)) << "payload byte " << at + k;
        at += chunk;
    }
}

// Found by hand on IPv6 over net_ferry_packet: a veth peer with TSO on sent
// TCPv6 GSO frames, gso_split refused them (packet_rx_truncated) and 3 of 4
// echo connections stalled.
TEST_F(GsoSplit, CutsTcpOverIpv6Too) {
    const auto b = gso_frame6(2 * 1428 + 500, 1428, 0x10 | 0x08 | 0x80, /*ecn=*/true);
    ASSERT_EQ(split(b), 3);
    uint32_t at = 0;
    for (uint16_t i = 0; i < n; ++i) {
        const rte_mbuf *m = out[i];
        const uint32_t chunk = i < 2 ? 1428 : 500;
        const auto *d = rte_pktmbuf_mtod(m, const uint8_t *);
        ASSERT_EQ(m->pkt_len, 86 + chunk);
        EXPECT_EQ(load_be16(d + 12), 0x86dd);
        EXPECT_EQ(load_be32(d + 14), 0x60012345u) << "version, class, flow label kept";
        EXPECT_EQ(load_be16(d + 14 + 4), 32 + chunk) << "IPv6 payload length";
        EXPECT_EQ(d[14 + 6], 6);
        EXPECT_EQ(d[14 + 23], 2) << "source";
        EXPECT_EQ(d[14 + 39], 1) << "destination";
        EXPECT_EQ(load_be32(d + 54 + 4), 5000 + at) << "sequence";
        const uint8_t fl = d[54 + 13];
        EXPECT_EQ((fl & 0x08) != 0, i == 2) << "PSH on the last segment only";
        EXPECT_EQ((fl & 0x80) != 0, i == 0) << "CWR on the first only";
        EXPECT_EQ(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD);
        for (uint32_t k = 0; k < chunk; ++k)
            ASSERT_EQ(d[86 + k], static_cast<uint8_t>((at + k) % 251)) << "payload byte " << at + k;
        at += chunk;
    }
}

TEST_F(GsoSplit, AnIpv6FrameWithAnExtensionHeaderIsNotCut) {
    const unsigned before = rte_mempool_avail_count(g_pool);
    EXPECT_EQ(split(gso_frame6(3 * 1428, 1428, 0x10, false, /*next_header=*/0)), 0);
    EXPECT_EQ(rte_mempool_avail_count(g_pool), before);
}

TEST_F(GsoSplit, AFrameWithoutGsoIsCopiedAsItIs) {
    const auto b = gso_frame(1000, 0, 0x18, /*gso_type=*/0);
    ASSERT_EQ(split(b), 1);
    EXPECT_EQ(out[0]->pkt_len, b.size() - 10);
    EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(out[0], const uint8_t *), b.data() + 10, b.size() - 10), 0);
}

TEST_F(GsoSplit, RefusesWhatItCannotCutAndAllocatesNothingThen) {
    const unsigned before = rte_mempool_avail_count(g_pool);
    EXPECT_EQ(split(gso_frame(4000, 1448, 0x10, 1, /*proto=*/17)), 0) << "not TCP";
    EXPECT_EQ(split(gso_frame(4000, 0, 0x10)), 0) << "no GSO size";
    EXPECT_EQ(split(gso_frame(8000, 4000, 0x10)), 0) << "a segment larger than an mbuf";
    EXPECT_EQ(split(gso_frame(3 * 1448, 1448, 0x10, /*gso_type=*/4)), 0)
        << "TCPv6 said of an IPv4 frame";
    EXPECT_EQ(split(gso_frame(10 * 1448, 1448, 0x10), 9), 0) << "more segments than room";
    EXPECT_EQ(rte_mempool_avail_count(g_pool), before);
}

TEST_F(GsoSplit, AnEmptyPoolTakesNothingAndCutsNothing) {
    for (const bool v6 : {false, true}) {
        SCOPED_TRACE(v6 ? "TCPv6" : "TCPv4");
        empty_pool_case(v6 ? gso_frame6(4 * 1428, 1428, 0x10) : gso_frame(4 * 1448, 1448, 0x10));
    }
}

void GsoSplit::empty_pool_case(const std::vector<uint8_t> &b) {
    std::vector<rte_mbuf *> held;
    while (rte_mbuf *m = rte_pktmbuf_alloc(g_pool)) held.push_back(m);
    ASSERT_EQ(rte_mempool_avail_count(g_pool), 0u);
    EXPECT_EQ(split(b), 0);
    // One short of the four segments: still all or nothing.
    for (int i = 0; i < 3; ++i) {
        rte_pktmbuf_free(held.back());
        held.pop_back();
    }
    EXPECT_EQ(split(b), 0);
    EXPECT_EQ(rte_mempool_avail_count(g_pool), 3u);
    for (rte_mbuf *m : held) rte_pktmbuf_free(m);
    EXPECT_EQ(split(b), 4) << "and cuts once mbufs are back";
    for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(out[i]);
    n = 0;
}

}  // namespace
}  // namespace ferry::net
