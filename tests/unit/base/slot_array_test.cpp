#include "ferry/base/slot_array.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <vector>

namespace ferry {
namespace {

struct probe {
    static inline int alive = 0;
    uint32_t index = 99;  // set by init
    int value = 7;        // value-initialised
    std::array<char, 1000> pad{};
    probe() { ++alive; }
    ~probe() { --alive; }
};

TEST(SlotArray, MakesSlotsInOrderAndReusesTheLastGivenBack) {
    {
        slot_array<probe> a(4);
        std::vector<uint32_t> inits;
        auto init = [&](uint32_t i, probe &p) {
            inits.push_back(i);
            p.index = i;
        };
        EXPECT_EQ(a.made(), 0u);
        EXPECT_EQ(a.take(init), 0u);
        EXPECT_EQ(a.take(init), 1u);
        EXPECT_EQ(a.take(init), 2u);
        EXPECT_EQ(probe::alive, 3);
        EXPECT_EQ(a[1].index, 1u);
        EXPECT_EQ(a[1].value, 7);
        a[1].value = 42;
        a.give(1);
        a.give(0);
        EXPECT_EQ(a.in_use(), 1u);
        EXPECT_EQ(a.available(), 3u);
        EXPECT_EQ(a.take(init), 0u);  // last given back first
        EXPECT_EQ(a.take(init), 1u);
        EXPECT_EQ(a[1].value, 42);  // not made again: the user resets what it must
        EXPECT_EQ(a.take(init), 3u);  // then the one never used
        EXPECT_EQ(a.take(init), slot_array<probe>::none);
        EXPECT_EQ(a.made(), 4u);
        EXPECT_EQ(a.available(), 0u);
        EXPECT_EQ(inits, (std::vector<uint32_t>{0, 1, 2, 3}));
        EXPECT_EQ(a.index_of(a[2]), 2u);
    }
    EXPECT_EQ(probe::alive, 0);  // every made slot destroyed
}

// Slots never made are address space, not memory: only the pages of the
// made ones are resident (mincore).
TEST(SlotArray, OnlyMadeSlotsAreResident) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const uint32_t cap = 100000;  // ~100 MB of 1 KiB slots
    slot_array<probe> a(cap);
    EXPECT_GE(a.reserved_bytes(), std::size_t(cap) * sizeof(probe));
    for (int i = 0; i < 10; ++i) (void)a.take();
    auto resident = [&](std::size_t from, std::size_t to) {
        const std::size_t len = to - from;
        std::vector<unsigned char> v((len + page - 1) / page);
        auto *p = reinterpret_cast<std::byte *>(a.data()) + from;
        EXPECT_EQ(mincore(p, len, v.data()), 0);
        std::size_t n = 0;
        for (unsigned char c : v) n += c & 1;
        return n;
    };
    const std::size_t made_bytes = 10 * sizeof(probe);
    EXPECT_EQ(resident(0, (made_bytes + page - 1) / page * page),
              (made_bytes + page - 1) / page);
    const std::size_t rest = (made_bytes + page - 1) / page * page;
    EXPECT_EQ(resident(rest, std::size_t(cap) * sizeof(probe) / page * page), 0u);
}

TEST(SlotArray, ZeroCapacityHandsOutNothing) {
    slot_array<probe> a(0);
    EXPECT_EQ(a.take(), slot_array<probe>::none);
    EXPECT_EQ(a.reserved_bytes(), 0u);
}

// Address space that cannot be had (2^60 bytes, past any x86-64 or arm64
// user space) is not a state a slot array serves from: it says so and aborts.
TEST(SlotArrayDeathTest, NoAddressSpaceAborts) {
    struct huge {
        char b[std::size_t(1) << 28];
    };
    EXPECT_DEATH({ slot_array<huge> a(UINT32_MAX); }, "cannot reserve");
}

// A side array makes its elements in index order as its owner's slots are
// made, and destroys them with it.
TEST(SideArray, GrowsInIndexOrderUpToItsCapacity) {
    {
        side_array<probe> s;
        EXPECT_FALSE(s.reserved());
        s.reserve(3);
        EXPECT_TRUE(s.reserved());
        EXPECT_EQ(s.made(), 0u);
        s.grow(2);
        EXPECT_EQ(s.made(), 2u);
        EXPECT_EQ(probe::alive, 2);
        s[1].value = 42;
        s.grow(1);  // never shrinks, never remakes
        EXPECT_EQ(s[1].value, 42);
        s.grow(10);  // at most the capacity
        EXPECT_EQ(s.made(), 3u);
        EXPECT_EQ(s[2].value, 7);
        EXPECT_EQ(probe::alive, 3);
        s.reserve(100);  // once
        EXPECT_EQ(s.capacity(), 3u);
    }
    EXPECT_EQ(probe::alive, 0);
}

}  // namespace
}  // namespace ferry
