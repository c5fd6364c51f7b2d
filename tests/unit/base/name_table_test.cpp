// name_table.h: a slot is named once, reads see all of a name or nothing,
// and a reader thread sees a name the writer published after the fact.
#include "ferry/base/name_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

namespace ferry {
namespace {

TEST(NameTable, ASlotIsNamedOnce) {
    name_table t(3);
    EXPECT_EQ(t.capacity(), 3u);
    EXPECT_EQ(t[0], "");
    EXPECT_TRUE(t.name(0, "app"));
    EXPECT_FALSE(t.name(0, "other"));  // a named slot keeps its name
    EXPECT_EQ(t[0], "app");
    EXPECT_FALSE(t.name(1, ""));  // an empty name names nothing
    EXPECT_EQ(t[1], "");
    EXPECT_TRUE(t.name(2, "edge"));
    EXPECT_EQ(t[2], "edge");
}

TEST(NameTable, PastTheCapacityAndLongNames) {
    name_table t(1);
    EXPECT_FALSE(t.name(1, "x"));
    EXPECT_EQ(t[1], "");
    EXPECT_EQ(t[1000], "");
    const std::string long_name(name_table::max_len + 10, 'n');
    EXPECT_TRUE(t.name(0, long_name));
    EXPECT_EQ(t[0], long_name.substr(0, name_table::max_len));
}

TEST(NameTable, AReaderSeesAWholeNameOrNothing) {
    // The writer names slots one after another while a reader reads them
    // all: each read is "" or the slot's full name (TSan/ASan builds check
    // the memory order too).
    constexpr size_t n = 256;
    name_table t(n);
    std::atomic<bool> done{false};
    size_t bad = 0;
    std::thread reader([&] {
        while (!done.load(std::memory_order_acquire))
            for (size_t i = 0; i < n; ++i) {
                const std::string_view s = t[i];
                if (!s.empty() && s != "upstream_" + std::to_string(i)) ++bad;
            }
    });
    for (size_t i = 0; i < n; ++i) t.name(i, "upstream_" + std::to_string(i));
    done.store(true, std::memory_order_release);
    reader.join();
    EXPECT_EQ(bad, 0u);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(t[i], "upstream_" + std::to_string(i));
}

}  // namespace
}  // namespace ferry
