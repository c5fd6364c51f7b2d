// tcp_block_pool (the queues' ring blocks) and the queues' use of it: a queue
// holds a block exactly while it holds data, so an idle connection holds none,
// and a bounded pool's memory becomes resident only as blocks are used.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "ferry/net/tcp_block_pool.h"
#include "ferry/net/tcp_conn_queues.h"
#include "tcp_conn_harness.h"

namespace ferry::net {
namespace {

using namespace ferry::net::test;

// Resident pages of [p, p + len) (mincore: what the kernel has mapped in).
size_t resident_pages(const void *p, size_t len) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    const size_t n = (reinterpret_cast<uintptr_t>(p) + len - base + page - 1) / page;
    std::vector<unsigned char> v(n);
    if (mincore(reinterpret_cast<void *>(base), n * page, v.data()) != 0) return SIZE_MAX;
    size_t r = 0;
    for (unsigned char c : v) r += c & 1;
    return r;
}

TEST(TcpBlockPool, HandsOutTheLastFreedBlockFirstAndCountsExhaustion) {
    tcp_block_pool p(3);
    ASSERT_TRUE(p.bounded());
    EXPECT_EQ(p.capacity(), 3u);
    void *a = p.take(), *b = p.take(), *c = p.take();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % tcp_block_pool::block_bytes, 0u);
    EXPECT_EQ(p.take(), nullptr);
    EXPECT_EQ(p.exhausted(), 1u);
    EXPECT_EQ(p.in_use(), 3u);
    p.give(b);
    p.give(a);
    EXPECT_EQ(p.take(), a);  // last freed first: the warm block
    EXPECT_EQ(p.take(), b);
    EXPECT_EQ(p.peak(), 3u);
    EXPECT_EQ(p.touched(), 3u);
    p.give(a);
    p.give(b);
    p.give(c);
    EXPECT_EQ(p.in_use(), 0u);
}

TEST(TcpBlockPool, ABoundedPoolIsResidentOnlyWhereBlocksWereUsed) {
    const uint32_t n = 1024;  // 4 MiB of address space
    tcp_block_pool p(n);
    ASSERT_TRUE(p.bounded());
    EXPECT_GE(p.reserved_bytes(), size_t(n) * tcp_block_pool::block_bytes);
    // Take and give back one block many times (a keep-alive connection's
    // request after request): the same block each time.
    void *first = p.take();
    ASSERT_NE(first, nullptr);
    std::memset(first, 0xab, tcp_block_pool::block_bytes);
    p.give(first);
    for (int i = 0; i < 1000; ++i) {
        void *b = p.take();
        ASSERT_EQ(b, first);
        std::memset(b, i, 64);
        p.give(b);
    }
    EXPECT_EQ(p.touched(), 1u);
    const size_t resident = resident_pages(first, size_t(n) * tcp_block_pool::block_bytes);
    ASSERT_NE(resident, SIZE_MAX);
    EXPECT_LE(resident, 2u) << "a bounded pool made untouched blocks resident";
}

TEST(TcpBlockPool, TheHeapPoolIsUnbounded) {
    tcp_block_pool &h = tcp_block_pool::heap();
    EXPECT_FALSE(h.bounded());
    const uint32_t before = h.in_use();
    std::vector<void *> v;
    for (int i = 0; i < 8; ++i) v.push_back(h.take());
    for (void *b : v) ASSERT_NE(b, nullptr);
    EXPECT_EQ(h.in_use(), before + 8);
    for (void *b : v) h.give(b);
    EXPECT_EQ(h.in_use(), before);
}

TEST(TcpBlockPool, ASendQueueHoldsABlockExactlyWhileItHoldsData) {
    ASSERT_NE(g_pool, nullptr);
    tcp_block_pool p(4);
    tcp_send_queue q(1 << 20, &p);
    EXPECT_FALSE(q.holds_block());
    EXPECT_EQ(p.in_use(), 0u);
    for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(q.push(make_chain(pattern(300))), 300u);
        EXPECT_EQ(q.push(make_chain(pattern(200))), 200u);
        EXPECT_TRUE(q.holds_block());
        EXPECT_EQ(p.in_use(), 1u);
        q.release(250);
        EXPECT_TRUE(q.holds_block());
        q.release(250);  // all acknowledged
        EXPECT_FALSE(q.holds_block());
        EXPECT_EQ(p.in_use(), 0u);
    }
    EXPECT_EQ(p.touched(), 1u);
    EXPECT_EQ(q.push(make_chain(pattern(10))), 10u);
    q.clear();
    EXPECT_EQ(p.in_use(), 0u);
}

TEST(TcpBlockPool, ASendQueueWithoutABlockTakesNothingAndTheCallerKeepsTheChain) {
    ASSERT_NE(g_pool, nullptr);
    tcp_block_pool p(1);
    void *held = p.take();  // the only block
    tcp_send_queue q(1 << 20, &p);
    rte_mbuf *m = make_chain(pattern(100));
    EXPECT_EQ(q.push(m), 0u);
    EXPECT_EQ(q.bytes(), 0u);
    EXPECT_EQ(p.exhausted(), 1u);
    p.give(held);
    EXPECT_EQ(q.push(m), 100u);  // taken once a block is free
    q.clear();
}

TEST(TcpBlockPool, AReceiveQueueHoldsBlocksOnlyWhileItHoldsData) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned mbufs_before = rte_mempool_avail_count(g_pool);
    tcp_block_pool p(2);
    {
        tcp_recv_queue q(&p);
        EXPECT_EQ(q.blocks_held(), 0u);
        auto piece = [](uint32_t len) { return tcp_rx_piece{make_chain(pattern(len)), 0, len}; };
        // Out of order first: the store's block.
        using r = tcp_recv_queue::ooo_result;
        EXPECT_EQ(q.insert_ooo(seq_num(200), piece(100), false), r::inserted);
        EXPECT_EQ(q.blocks_held(), 1u);
        // The hole filled: the ring's block, and the store drains into it.
        ASSERT_TRUE(q.push(piece(100)));
        bool fin = false;
        EXPECT_EQ(q.drain(seq_num(200), fin).value(), 300u);
        EXPECT_EQ(q.blocks_held(), 1u);  // the store gave its block back
        EXPECT_EQ(p.in_use(), 1u);
        std::array<tcp_rx_piece, 4> out{};
        ASSERT_EQ(q.pop(out), 2u);
        for (size_t i = 0; i < 2; ++i) rte_pktmbuf_free(out[i].m);
        EXPECT_EQ(q.blocks_held(), 0u);
        EXPECT_EQ(p.in_use(), 0u);
        // No block to be had: push refuses (tcp_conn drops and counts the
        // segment), the store answers full (the piece is freed).
        void *a = p.take(), *b = p.take();
        tcp_rx_piece x = piece(10);
        EXPECT_FALSE(q.push(x));
        rte_pktmbuf_free(x.m);
        EXPECT_EQ(q.insert_ooo(seq_num(400), piece(10), false), r::full);
        p.give(a);
        p.give(b);
        ASSERT_TRUE(q.push(piece(10)));
        EXPECT_EQ(q.insert_ooo(seq_num(400), piece(10), false), r::inserted);
        EXPECT_EQ(q.blocks_held(), 2u);
    }  // the destructor frees the chains and gives both blocks back
    EXPECT_EQ(p.in_use(), 0u);
    EXPECT_EQ(rte_mempool_avail_count(g_pool), mbufs_before);
}

}  // namespace
}  // namespace ferry::net
