// block_pool's own contract where it differs from the TCP queues' use of it
// (tests/unit/net/tcp_block_pool_test.cpp): what a pool without address
// space does.
#include "ferry/base/block_pool.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ferry {
namespace {

// Address space that cannot be had (2^60 bytes, past any x86-64 or arm64
// user space): a bounded pool hands out nothing and counts every refusal,
// where a slot_array aborts (slot_array_test).
TEST(BlockPool, NoAddressSpaceHandsOutNothing) {
    block_pool p(std::size_t(1) << 40, 64, uint32_t(1) << 20);
    EXPECT_TRUE(p.bounded());
    EXPECT_EQ(p.capacity(), 0u);
    EXPECT_EQ(p.reserved_bytes(), 0u);
    EXPECT_EQ(p.take(), nullptr);
    EXPECT_EQ(p.take(), nullptr);
    EXPECT_EQ(p.exhausted(), 2u);
    EXPECT_EQ(p.in_use(), 0u);
}

TEST(BlockPool, ReusesTheLastGivenBackAndCountsWhatWasTouched) {
    block_pool p(128, 64, 3);
    EXPECT_EQ(p.capacity(), 3u);
    EXPECT_GE(p.reserved_bytes(), 3u * 128);
    void *a = p.take();
    void *b = p.take();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    p.give(a);
    EXPECT_EQ(p.take(), a);  // last given back first
    EXPECT_NE(p.take(), nullptr);
    EXPECT_EQ(p.take(), nullptr);
    EXPECT_EQ(p.exhausted(), 1u);
    EXPECT_EQ(p.touched(), 3u);
    EXPECT_EQ(p.peak(), 3u);
}

}  // namespace
}  // namespace ferry
