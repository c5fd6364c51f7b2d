// mbuf_chain.h on real mbufs: every cut of a three-segment chain, truncation,
// building from bytes (and running the pool dry), taking a piece's front.
#include "ferry/net/mbuf_chain.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "stack_test_env.h"

namespace ferry::net {
namespace {

using test::g_pool;

std::string pattern(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
    return s;
}

// A chain of segments with the given lengths, holding pattern() bytes.
rte_mbuf *chain_of_segments(const std::vector<uint16_t> &lens) {
    const std::string bytes = pattern(4096);
    rte_mbuf *head = nullptr, *last = nullptr;
    size_t at = 0;
    for (uint16_t n : lens) {
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        EXPECT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, n), bytes.data() + at, n);
        at += n;
        if (head == nullptr) {
            head = m;
        } else {
            last->next = m;
            ++head->nb_segs;
            head->pkt_len += n;
        }
        last = m;
    }
    return head;
}

// The chain's bytes, after checking its invariants.
std::string bytes_of(const rte_mbuf *m) {
    std::string s;
    uint32_t segs = 0;
    for (const rte_mbuf *x = m; x != nullptr; x = x->next, ++segs)
        s.append(rte_pktmbuf_mtod(x, const char *), x->data_len);
    EXPECT_EQ(segs, m->nb_segs);
    EXPECT_EQ(s.size(), m->pkt_len);
    return s;
}

class MbufChain : public testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(g_pool, nullptr);
        avail0_ = rte_mempool_avail_count(g_pool);
    }
    void TearDown() override { EXPECT_EQ(rte_mempool_avail_count(g_pool), avail0_) << "mbuf leak"; }
    unsigned avail0_ = 0;
};

TEST_F(MbufChain, CutEveryRangeOfAThreeSegmentChain) {
    const std::vector<uint16_t> lens = {100, 50, 200};
    const std::string all = pattern(350);
    for (uint32_t off = 0; off < 350; off += 7)
        for (uint32_t len = 1; off + len <= 350; len += 5) {
            rte_mbuf *m = chain_cut(chain_of_segments(lens), off, len);
            ASSERT_NE(m, nullptr) << off << "+" << len;
            ASSERT_EQ(bytes_of(m), all.substr(off, len)) << off << "+" << len;
            rte_pktmbuf_free(m);
        }
    // Segment boundaries exactly.
    for (uint32_t off : {0u, 99u, 100u, 149u, 150u, 349u}) {
        rte_mbuf *m = chain_cut(chain_of_segments(lens), off, 350 - off);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(bytes_of(m), all.substr(off));
        rte_pktmbuf_free(m);
    }
}

TEST_F(MbufChain, CutOutsideTheChainFreesItAll) {
    EXPECT_EQ(chain_cut(chain_of_segments({100, 50}), 150, 1), nullptr);
    EXPECT_EQ(chain_cut(chain_of_segments({100, 50}), 100, 51), nullptr);
    EXPECT_EQ(chain_cut(chain_of_segments({100, 50}), 0, 0), nullptr);
    EXPECT_EQ(chain_cut(nullptr, 0, 1), nullptr);
}

TEST_F(MbufChain, Truncate) {
    const std::string all = pattern(350);
    for (uint32_t len : {1u, 100u, 101u, 150u, 151u, 349u, 350u, 1000u}) {
        rte_mbuf *m = chain_of_segments({100, 50, 200});
        chain_truncate(m, len);
        EXPECT_EQ(bytes_of(m), all.substr(0, len)) << len;
        rte_pktmbuf_free(m);
    }
}

TEST_F(MbufChain, FromBytesSpansSegmentsAndFailsCleanlyWhenThePoolIsDry) {
    const std::string data = pattern(5000);
    rte_mbuf *m = chain_from(g_pool, data.data(), 5000);
    ASSERT_NE(m, nullptr);
    EXPECT_GT(m->nb_segs, 1);
    EXPECT_EQ(bytes_of(m), data);
    rte_pktmbuf_free(m);
    EXPECT_EQ(chain_from(g_pool, data.data(), 0), nullptr);
    // A pool with two mbufs cannot hold 5000 bytes: nothing leaks.
    rte_mempool *tiny = rte_pktmbuf_pool_create("chain_tiny", 2, 0, 0,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(tiny, nullptr);
    EXPECT_EQ(chain_from(tiny, data.data(), 5000), nullptr);
    EXPECT_EQ(rte_mempool_avail_count(tiny), 2u);
    rte_mempool_free(tiny);
}

TEST_F(MbufChain, AppendAndCopyOut) {
    rte_mbuf *a = chain_of_segments({100});
    rte_mbuf *b = chain_of_segments({50, 20});
    ASSERT_TRUE(chain_append(a, b));
    EXPECT_EQ(a->nb_segs, 3);
    EXPECT_EQ(a->pkt_len, 170u);
    const tcp_rx_piece p{a, 90, 30};
    char out[64];
    ASSERT_EQ(piece_copy_out(p, out, sizeof out), 30u);
    EXPECT_EQ(std::string(out, 30), bytes_of(a).substr(90, 30));
    EXPECT_EQ(piece_copy_out(p, out, 4), 4u);
    rte_pktmbuf_free(a);
}

TEST_F(MbufChain, TakeFrontSplitsAPieceOrTakesItWhole) {
    const std::string all = pattern(350);
    tcp_rx_piece p{chain_of_segments({100, 50, 200}), 10, 300};
    bool whole = true;
    rte_mbuf *a = piece_take_front(p, 120, g_pool, whole);
    ASSERT_NE(a, nullptr);
    EXPECT_FALSE(whole);
    EXPECT_EQ(bytes_of(a), all.substr(10, 120));
    EXPECT_EQ(p.off, 130u);
    EXPECT_EQ(p.len, 180u);
    rte_mbuf *b = piece_take_front(p, 500, g_pool, whole);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(whole);
    EXPECT_EQ(p.m, nullptr);
    EXPECT_EQ(bytes_of(b), all.substr(130, 180));
    rte_pktmbuf_free(a);
    rte_pktmbuf_free(b);
}

}  // namespace
}  // namespace ferry::net
