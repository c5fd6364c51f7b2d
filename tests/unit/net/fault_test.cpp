// The fault injector on real mbufs: frames carry a sequence number, so every
// test can say exactly which frames came out, in which order, and that every
// mbuf went back to the pool (the fixture checks the pool's in-use count).
#include "ferry/net/fault.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stack_test_env.h"

namespace ferry::net {
namespace {

using test::g_pool;

constexpr uint64_t always = fault_params::always;
constexpr uint16_t frame_len = 60;

// A frame whose first 4 bytes are `id` and whose other bytes follow from it.
// `cut` > 0 makes a two-segment chain split at that offset.
rte_mbuf *make_frame(uint32_t id, uint16_t cut = 0) {
    uint8_t data[frame_len];
    std::memcpy(data, &id, sizeof id);
    for (uint16_t k = sizeof id; k < frame_len; ++k) {
        data[k] = static_cast<uint8_t>(id * 7 + k);
    }
    rte_mbuf *head = rte_pktmbuf_alloc(g_pool);
    if (head == nullptr) {
        ADD_FAILURE() << "pool empty";
        return nullptr;
    }
    const uint16_t first = cut != 0 ? cut : frame_len;
    std::memcpy(rte_pktmbuf_append(head, first), data, first);
    if (cut != 0) {
        rte_mbuf *tail = rte_pktmbuf_alloc(g_pool);
        const auto rest = static_cast<uint16_t>(frame_len - cut);
        std::memcpy(rte_pktmbuf_append(tail, rest), data + cut, rest);
        EXPECT_EQ(rte_pktmbuf_chain(head, tail), 0);
    }
    return head;
}

std::vector<uint8_t> bytes_of(const rte_mbuf *m) {
    std::vector<uint8_t> out(rte_pktmbuf_pkt_len(m));
    const void *p = rte_pktmbuf_read(m, 0, static_cast<uint32_t>(out.size()), out.data());
    if (p != out.data()) {
        std::memcpy(out.data(), p, out.size());
    }
    return out;
}

uint32_t id_of(const rte_mbuf *m) {
    uint32_t id;
    std::memcpy(&id, rte_pktmbuf_mtod(m, const uint8_t *), sizeof id);
    return id;
}

std::vector<uint32_t> ids(rte_mbuf *const *pkts, uint16_t n) {
    std::vector<uint32_t> out;
    for (uint16_t k = 0; k < n; ++k) {
        out.push_back(id_of(pkts[k]));
    }
    return out;
}

// Fills pkts[0, n) with frames first_id, first_id + 1, ...
void fill(rte_mbuf **pkts, uint16_t n, uint32_t first_id) {
    for (uint16_t k = 0; k < n; ++k) {
        pkts[k] = make_frame(first_id + k);
    }
}

void free_all(rte_mbuf **pkts, uint16_t n) {
    for (uint16_t k = 0; k < n; ++k) {
        rte_pktmbuf_free(pkts[k]);
    }
}

uint64_t counter_value(const fault_counters &c, std::string_view name) {
    for (const auto &f : fault_counter_fields) {
        if (name == f.name) {
            return (c.*f.member).get();
        }
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

// Every counter is zero except those named with their value.
void expect_counters(const fault_counters &c,
                     std::initializer_list<std::pair<std::string_view, uint64_t>> nonzero) {
    for (const auto &f : fault_counter_fields) {
        uint64_t want = 0;
        for (const auto &[name, v] : nonzero) {
            if (name == f.name) {
                want = v;
            }
        }
        EXPECT_EQ((c.*f.member).get(), want) << f.name;
    }
}

class fault_test : public testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(g_pool, nullptr) << "no EAL";
        in_use_ = rte_mempool_in_use_count(g_pool);
    }
    // No test may leak or double-free an mbuf; injectors are locals of the
    // test body, so their destructors have run by now.
    void TearDown() override {
        if (g_pool != nullptr) {
            EXPECT_EQ(rte_mempool_in_use_count(g_pool), in_use_);
        }
    }
    [[nodiscard]] unsigned leaked() const { return rte_mempool_in_use_count(g_pool) - in_use_; }

    fault_counters ctr_;
    unsigned in_use_ = 0;
};

TEST_F(fault_test, zero_probability_changes_nothing) {
    fault_params p;
    EXPECT_FALSE(fault_injector::enabled(p));
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[32];
    fill(pkts, 16, 100);
    rte_mbuf *before[16];
    std::memcpy(before, pkts, sizeof before);
    ASSERT_EQ(f.rx(pkts, 16, 32, 0), 16);
    EXPECT_EQ(std::memcmp(before, pkts, sizeof before), 0);
    ASSERT_EQ(f.tx(pkts, 16, 32, 0), 16);
    EXPECT_EQ(std::memcmp(before, pkts, sizeof before), 0);
    EXPECT_EQ(f.rx(pkts, 0, 32, 0), 0);
    EXPECT_FALSE(f.holding());
    EXPECT_EQ(f.next_deadline(), UINT64_MAX);
    expect_counters(ctr_, {});
    free_all(pkts, 16);
}

TEST_F(fault_test, enabled_by_any_probability) {
    uint64_t fault_params::*fields[] = {&fault_params::rx_drop,      &fault_params::rx_duplicate,
                                        &fault_params::rx_reorder,   &fault_params::tx_drop,
                                        &fault_params::tx_duplicate, &fault_params::tx_reorder};
    for (auto field : fields) {
        fault_params p;
        p.*field = 1;
        EXPECT_TRUE(fault_injector::enabled(p));
    }
    fault_params p;
    p.hold_ns = 5;
    p.seed = 7;
    EXPECT_FALSE(fault_injector::enabled(p));
}

TEST_F(fault_test, drop_always_frees_everything) {
    fault_params p;
    p.rx_drop = always;
    p.tx_drop = always;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[32];
    fill(pkts, 32, 0);
    EXPECT_EQ(f.rx(pkts, 32, 32, 0), 0);
    EXPECT_EQ(leaked(), 0u);
    fill(pkts, 20, 0);
    EXPECT_EQ(f.tx(pkts, 20, 32, 0), 0);
    EXPECT_EQ(leaked(), 0u);
    expect_counters(ctr_, {{"rx_dropped", 32}, {"tx_dropped", 20}});
}

TEST_F(fault_test, duplicate_is_a_deep_copy_right_after_the_original) {
    fault_params p;
    p.rx_duplicate = always;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[6];
    pkts[0] = make_frame(1);
    pkts[1] = make_frame(2, 20);  // a two-segment chain
    pkts[2] = make_frame(3);
    rte_mbuf *orig[3] = {pkts[0], pkts[1], pkts[2]};
    ASSERT_EQ(f.rx(pkts, 3, 6, 0), 6);
    EXPECT_EQ(ids(pkts, 6), (std::vector<uint32_t>{1, 1, 2, 2, 3, 3}));
    for (int k = 0; k < 3; ++k) {
        rte_mbuf *a = pkts[2 * k];
        rte_mbuf *b = pkts[2 * k + 1];
        EXPECT_EQ(a, orig[k]);
        ASSERT_NE(b, a);
        EXPECT_EQ(bytes_of(b), bytes_of(a));
        EXPECT_EQ(rte_pktmbuf_pkt_len(b), rte_pktmbuf_pkt_len(a));
        // Deep: the copy's data lives in its own buffers, unshared.
        for (const rte_mbuf *s = b; s != nullptr; s = s->next) {
            EXPECT_TRUE(RTE_MBUF_DIRECT(s));
            EXPECT_EQ(rte_mbuf_refcnt_read(s), 1);
            for (const rte_mbuf *t = a; t != nullptr; t = t->next) {
                EXPECT_NE(s->buf_addr, t->buf_addr);
            }
        }
        EXPECT_EQ(rte_mbuf_refcnt_read(a), 1);
    }
    // Rewriting the original in place (as the stack does) leaves the copy alone.
    const std::vector<uint8_t> copy_before = bytes_of(pkts[3]);
    std::memset(rte_pktmbuf_mtod(pkts[2], uint8_t *), 0xee, rte_pktmbuf_data_len(pkts[2]));
    EXPECT_EQ(bytes_of(pkts[3]), copy_before);
    expect_counters(ctr_, {{"rx_duplicated", 3}});
    free_all(pkts, 6);
}

TEST_F(fault_test, duplicates_never_exceed_cap) {
    fault_params p;
    p.rx_duplicate = always;
    p.tx_duplicate = always;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[8];
    fill(pkts, 4, 1);
    ASSERT_EQ(f.rx(pkts, 4, 6, 0), 6);
    EXPECT_EQ(ids(pkts, 6), (std::vector<uint32_t>{1, 1, 2, 2, 3, 4}));
    free_all(pkts, 6);
    // No room at all: nothing changes. A cap below n counts as n.
    fill(pkts, 4, 1);
    ASSERT_EQ(f.tx(pkts, 4, 4, 0), 4);
    EXPECT_EQ(ids(pkts, 4), (std::vector<uint32_t>{1, 2, 3, 4}));
    ASSERT_EQ(f.tx(pkts, 4, 2, 0), 4);
    EXPECT_EQ(ids(pkts, 4), (std::vector<uint32_t>{1, 2, 3, 4}));
    free_all(pkts, 4);
    expect_counters(ctr_, {{"rx_duplicated", 2}, {"tx_duplicated", 0}, {"dup_no_room", 10}});
}

TEST_F(fault_test, duplicate_fills_gaps_left_by_drops) {
    // Drops leave free slots before the unread frames; a duplicate goes there
    // instead of moving the rest. Whatever the draws, the result must be in
    // order with each copy right after its original.
    fault_params p;
    p.rx_drop = always / 2;
    p.rx_duplicate = always / 2;
    p.seed = 11;
    fault_injector f(p, g_pool, ctr_);
    uint32_t next = 0;
    for (int round = 0; round < 200; ++round) {
        rte_mbuf *pkts[24];
        fill(pkts, 12, next);
        const uint16_t n = f.rx(pkts, 12, 24, 0);
        std::vector<uint32_t> got = ids(pkts, n);
        for (size_t k = 1; k < got.size(); ++k) {
            EXPECT_LE(got[k - 1], got[k]);
            if (got[k - 1] == got[k]) {
                EXPECT_NE(pkts[k - 1], pkts[k]);
                EXPECT_EQ(bytes_of(pkts[k - 1]), bytes_of(pkts[k]));
                EXPECT_TRUE(k + 1 == got.size() || got[k + 1] != got[k]);
            }
        }
        free_all(pkts, n);
        next += 12;
    }
    EXPECT_GT(ctr_.rx_dropped.get(), 0u);
    EXPECT_GT(ctr_.rx_duplicated.get(), 0u);
    EXPECT_EQ(ctr_.dup_no_room.get(), 0u);
}

TEST_F(fault_test, duplicate_without_mbuf_is_skipped) {
    // A pool for the copies with 4 mbufs in it.
    rte_mempool *small = rte_pktmbuf_pool_create("fault_test_small", 4, 0, 0,
                                                 RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(small, nullptr);
    {
        fault_params p;
        p.rx_duplicate = always;
        fault_injector f(p, small, ctr_);
        rte_mbuf *pkts[16];
        fill(pkts, 8, 1);
        ASSERT_EQ(f.rx(pkts, 8, 16, 0), 12);
        EXPECT_EQ(ids(pkts, 12), (std::vector<uint32_t>{1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8}));
        expect_counters(ctr_, {{"rx_duplicated", 4}, {"dup_no_mbuf", 4}});
        free_all(pkts, 12);
    }
    EXPECT_EQ(rte_mempool_in_use_count(small), 0u);
    rte_mempool_free(small);
}

TEST_F(fault_test, held_frame_released_after_hold_ns_with_empty_burst) {
    fault_params p;
    p.rx_reorder = always;
    p.hold_ns = 1000;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[9];
    pkts[0] = make_frame(42);
    EXPECT_EQ(f.rx(pkts, 1, 9, 5000), 0);
    EXPECT_TRUE(f.holding());
    EXPECT_TRUE(f.holding(fault_direction::rx));
    EXPECT_FALSE(f.holding(fault_direction::tx));
    EXPECT_EQ(f.next_deadline(fault_direction::rx), 6000u);
    EXPECT_EQ(f.next_deadline(fault_direction::tx), UINT64_MAX);
    EXPECT_EQ(f.next_deadline(), 6000u);
    // An empty call before the hold time is over keeps it.
    EXPECT_EQ(f.rx(pkts, 0, 9, 5999), 0);
    EXPECT_TRUE(f.holding());
    // The tx side has nothing to release.
    EXPECT_EQ(f.tx(pkts, 0, 9, 6000), 0);
    EXPECT_EQ(f.rx(pkts, 0, 9, 6000), 1);
    EXPECT_EQ(id_of(pkts[0]), 42u);
    EXPECT_FALSE(f.holding());
    EXPECT_EQ(f.next_deadline(), UINT64_MAX);
    expect_counters(ctr_, {{"rx_reordered", 1}});
    free_all(pkts, 1);
}

TEST_F(fault_test, frame_past_the_hold_slots_overtakes_the_held_ones) {
    // With every slot taken, the ninth frame cannot be held: it goes first,
    // ahead of the eight frames sent before it.
    fault_params p;
    p.rx_reorder = always;
    p.hold_ns = 100;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[16];
    fill(pkts, 9, 0);
    ASSERT_EQ(f.rx(pkts, 9, 16, 0), 1);
    EXPECT_EQ(id_of(pkts[0]), 8u);
    free_all(pkts, 1);
    EXPECT_EQ(f.rx(pkts, 0, 16, 99), 0);
    ASSERT_EQ(f.rx(pkts, 0, 16, 100), 8);
    EXPECT_EQ(ids(pkts, 8), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    expect_counters(ctr_, {{"rx_reordered", 8}, {"reorder_no_slot", 1}});
    free_all(pkts, 8);
}

TEST_F(fault_test, held_frames_wait_for_room_in_the_array) {
    fault_params p;
    p.rx_reorder = always;
    p.hold_ns = 100;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[16];
    fill(pkts, 8, 0);
    ASSERT_EQ(f.rx(pkts, 8, 16, 0), 0);
    // A full array: the held frames stay, and with every slot taken the new
    // frames pass in order.
    fill(pkts, 4, 100);
    ASSERT_EQ(f.rx(pkts, 4, 4, 200), 4);
    EXPECT_EQ(ids(pkts, 4), (std::vector<uint32_t>{100, 101, 102, 103}));
    free_all(pkts, 4);
    // Then as much as fits, oldest first.
    ASSERT_EQ(f.rx(pkts, 0, 4, 200), 4);
    EXPECT_EQ(ids(pkts, 4), (std::vector<uint32_t>{0, 1, 2, 3}));
    free_all(pkts, 4);
    EXPECT_TRUE(f.holding());
    ASSERT_EQ(f.rx(pkts, 0, 4, 200), 4);
    EXPECT_EQ(ids(pkts, 4), (std::vector<uint32_t>{4, 5, 6, 7}));
    free_all(pkts, 4);
    EXPECT_FALSE(f.holding());
    expect_counters(ctr_, {{"rx_reordered", 8}, {"reorder_no_slot", 4}});
}

// Bursts of 1..4 numbered frames with reordering only: each call must return
// exactly (its burst minus the frames it held, in order) followed by (the
// frames the previous call held, in order). That pins the semantics down
// whatever the draws are.
TEST_F(fault_test, reordered_frames_come_after_the_next_burst) {
    fault_params p;
    p.rx_reorder = always / 4;
    p.seed = 2024;
    fault_injector f(p, g_pool, ctr_);
    std::vector<uint32_t> held_before;  // what the previous call held
    uint32_t next = 0;
    uint64_t overtaken = 0;  // frames delivered behind a later frame
    std::set<uint32_t> seen;
    for (uint32_t call = 0; call < 2000; ++call) {
        const auto n = static_cast<uint16_t>(call % 4 + 1);
        rte_mbuf *pkts[4 + fault_injector::release_room];
        fill(pkts, n, next);
        const uint16_t out = f.rx(pkts, n, static_cast<uint16_t>(std::size(pkts)), call * 10);
        const std::vector<uint32_t> got = ids(pkts, out);
        // Split the output: this burst's frames first, then released ones.
        size_t k = 0;
        std::vector<uint32_t> kept;
        while (k < got.size() && got[k] >= next) {
            kept.push_back(got[k++]);
        }
        const std::vector<uint32_t> released(got.begin() + static_cast<long>(k), got.end());
        ASSERT_EQ(released, held_before) << "call " << call;
        EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
        std::vector<uint32_t> held_now;
        for (uint32_t id = next, j = 0; id < next + n; ++id) {
            if (j < kept.size() && kept[j] == id) {
                ++j;
            } else {
                held_now.push_back(id);
            }
        }
        if (!kept.empty()) {
            overtaken += released.size();
        }
        for (uint32_t id : got) {
            EXPECT_TRUE(seen.insert(id).second) << "frame " << id << " twice";
        }
        held_before = held_now;
        next += n;
        free_all(pkts, out);
    }
    rte_mbuf *rest[fault_injector::max_held];
    const uint16_t r = f.release_all(fault_direction::rx, rest, fault_injector::max_held);
    EXPECT_EQ(ids(rest, r), held_before);
    for (uint32_t id : ids(rest, r)) {
        seen.insert(id);
    }
    free_all(rest, r);
    EXPECT_EQ(seen.size(), next);  // nothing lost
    // About a quarter of the frames were held, and many overtaken.
    EXPECT_NEAR(static_cast<double>(ctr_.rx_reordered.get()), next / 4.0, next * 0.03);
    EXPECT_GT(overtaken, 200u);
    EXPECT_EQ(ctr_.reorder_no_slot.get(), 0u);
}

TEST_F(fault_test, tx_uses_its_own_probabilities_and_hold_slots) {
    fault_params p;
    p.rx_drop = always;
    p.tx_reorder = always;
    p.hold_ns = 500;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[16];
    fill(pkts, 3, 1);
    ASSERT_EQ(f.tx(pkts, 3, 16, 1000), 0);
    EXPECT_TRUE(f.holding(fault_direction::tx));
    EXPECT_FALSE(f.holding(fault_direction::rx));
    EXPECT_EQ(f.next_deadline(fault_direction::tx), 1500u);
    EXPECT_EQ(f.next_deadline(), 1500u);
    // rx drops everything and releases nothing of tx's.
    fill(pkts, 2, 10);
    EXPECT_EQ(f.rx(pkts, 2, 16, 1050), 0);
    EXPECT_TRUE(f.holding(fault_direction::tx));
    // The next tx batch is held too (tx_reorder = always) and the first three
    // come out.
    fill(pkts, 2, 20);
    ASSERT_EQ(f.tx(pkts, 2, 16, 1100), 3);
    EXPECT_EQ(ids(pkts, 3), (std::vector<uint32_t>{1, 2, 3}));
    free_all(pkts, 3);
    EXPECT_EQ(f.next_deadline(), 1600u);
    ASSERT_EQ(f.release_all(fault_direction::tx, pkts, 16), 2);
    EXPECT_EQ(ids(pkts, 2), (std::vector<uint32_t>{20, 21}));
    free_all(pkts, 2);
    expect_counters(ctr_, {{"rx_dropped", 2}, {"tx_reordered", 5}});
}

TEST_F(fault_test, release_all_respects_cap_and_order) {
    fault_params p;
    p.rx_reorder = always;
    fault_injector f(p, g_pool, ctr_);
    rte_mbuf *pkts[8];
    fill(pkts, 5, 1);
    ASSERT_EQ(f.rx(pkts, 5, 8, 0), 0);
    EXPECT_EQ(f.release_all(fault_direction::tx, pkts, 8), 0);
    ASSERT_EQ(f.release_all(fault_direction::rx, pkts, 3), 3);
    EXPECT_EQ(ids(pkts, 3), (std::vector<uint32_t>{1, 2, 3}));
    free_all(pkts, 3);
    ASSERT_EQ(f.release_all(fault_direction::rx, pkts, 8), 2);
    EXPECT_EQ(ids(pkts, 2), (std::vector<uint32_t>{4, 5}));
    free_all(pkts, 2);
    EXPECT_FALSE(f.holding());
    EXPECT_EQ(f.next_deadline(), UINT64_MAX);
}

TEST_F(fault_test, destructor_frees_held_frames) {
    {
        fault_params p;
        p.rx_reorder = always;
        p.tx_reorder = always;
        fault_injector f(p, g_pool, ctr_);
        rte_mbuf *pkts[8];
        fill(pkts, 5, 1);
        ASSERT_EQ(f.rx(pkts, 5, 8, 0), 0);
        fill(pkts, 3, 1);
        ASSERT_EQ(f.tx(pkts, 3, 8, 0), 0);
        EXPECT_EQ(leaked(), 8u);
    }
    EXPECT_EQ(ctr_.held_discarded.get(), 8u);
}

struct rate_case {
    const char *name;
    uint64_t fault_params::*field;
    const char *counter;
};

void PrintTo(const rate_case &c, std::ostream *os) {
    *os << c.name;
}

class fault_rate : public fault_test, public testing::WithParamInterface<rate_case> {};

// 200k frames at p = 0.02: the count is deterministic for the seed, and must
// be a plausible binomial draw (mean 4000, sd 62.6; the bound is ~5 sd).
TEST_P(fault_rate, matches_probability_over_200k_frames) {
    const rate_case &c = GetParam();
    constexpr uint32_t frames = 200000;
    constexpr uint16_t burst = 32;
    auto run = [&](uint64_t seed) {
        fault_counters ctr;
        fault_params p;
        p.*c.field = fault_threshold(0.02);
        p.seed = seed;
        fault_injector f(p, g_pool, ctr);
        uint64_t delivered = 0;
        for (uint32_t sent = 0; sent < frames; sent += burst) {
            rte_mbuf *pkts[2 * burst + fault_injector::release_room];
            fill(pkts, burst, sent);
            const uint16_t n =
                c.field == &fault_params::tx_drop || c.field == &fault_params::tx_duplicate ||
                        c.field == &fault_params::tx_reorder
                    ? f.tx(pkts, burst, static_cast<uint16_t>(std::size(pkts)), sent)
                    : f.rx(pkts, burst, static_cast<uint16_t>(std::size(pkts)), sent);
            delivered += n;
            free_all(pkts, n);
        }
        for (fault_direction d : {fault_direction::rx, fault_direction::tx}) {
            rte_mbuf *rest[fault_injector::max_held];
            const uint16_t r = f.release_all(d, rest, fault_injector::max_held);
            delivered += r;
            free_all(rest, r);
        }
        const uint64_t hits = counter_value(ctr, c.counter);
        // Frames are conserved: drops take away, duplicates add, reorders neither.
        EXPECT_EQ(delivered, frames - ctr.rx_dropped.get() - ctr.tx_dropped.get() +
                                 ctr.rx_duplicated.get() + ctr.tx_duplicated.get());
        EXPECT_EQ(ctr.dup_no_room.get() + ctr.dup_no_mbuf.get() + ctr.reorder_no_slot.get(), 0u);
        return hits;
    };
    const uint64_t hits = run(1);
    EXPECT_GE(hits, 3700u);
    EXPECT_LE(hits, 4300u);
    EXPECT_EQ(run(1), hits);  // repeatable
    const uint64_t other = run(2);
    EXPECT_NE(other, hits);
    EXPECT_GE(other, 3700u);
    EXPECT_LE(other, 4300u);
}

INSTANTIATE_TEST_SUITE_P(
    fault, fault_rate,
    testing::Values(rate_case{"rx_drop", &fault_params::rx_drop, "rx_dropped"},
                    rate_case{"rx_duplicate", &fault_params::rx_duplicate, "rx_duplicated"},
                    rate_case{"rx_reorder", &fault_params::rx_reorder, "rx_reordered"},
                    rate_case{"tx_drop", &fault_params::tx_drop, "tx_dropped"},
                    rate_case{"tx_duplicate", &fault_params::tx_duplicate, "tx_duplicated"},
                    rate_case{"tx_reorder", &fault_params::tx_reorder, "tx_reordered"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST_F(fault_test, everything_at_once_conserves_frames) {
    fault_params p;
    p.rx_drop = p.rx_duplicate = p.rx_reorder = fault_threshold(0.1);
    p.tx_drop = p.tx_duplicate = p.tx_reorder = fault_threshold(0.1);
    p.hold_ns = 50;
    p.seed = 99;
    fault_injector f(p, g_pool, ctr_);
    uint64_t sent = 0, delivered = 0;
    for (uint32_t call = 0; call < 5000; ++call) {
        // Uneven bursts, some empty, and arrays with little spare room.
        const auto n = static_cast<uint16_t>(call * 7 % 13);
        const auto cap = static_cast<uint16_t>(n + call % 5);
        rte_mbuf *pkts[32];
        fill(pkts, n, static_cast<uint32_t>(sent));
        sent += n;
        const uint16_t out =
            call % 2 == 0 ? f.rx(pkts, n, cap, call * 10) : f.tx(pkts, n, cap, call * 10);
        ASSERT_LE(out, cap);
        delivered += out;
        free_all(pkts, out);
    }
    for (fault_direction d : {fault_direction::rx, fault_direction::tx}) {
        rte_mbuf *rest[fault_injector::max_held];
        const uint16_t r = f.release_all(d, rest, fault_injector::max_held);
        delivered += r;
        free_all(rest, r);
    }
    EXPECT_EQ(delivered, sent - ctr_.rx_dropped.get() - ctr_.tx_dropped.get() +
                             ctr_.rx_duplicated.get() + ctr_.tx_duplicated.get());
    for (const char *name : {"rx_dropped", "rx_duplicated", "rx_reordered", "tx_dropped",
                             "tx_duplicated", "tx_reordered", "dup_no_room"}) {
        EXPECT_GT(counter_value(ctr_, name), 0u) << name;
    }
}

TEST(fault_params_of, converts_config) {
    fault_spec c;
    c.rx_drop = 0.02;
    c.rx_duplicate = 1.0;
    c.rx_reorder = 0.5;
    c.tx_drop = 0.0;
    c.tx_duplicate = 1e-9;
    c.tx_reorder = 0.25;
    c.reorder_hold_us = 250;
    const fault_params p = fault_params_of(c, 0, 0);
    EXPECT_EQ(p.rx_drop, static_cast<uint64_t>(std::llround(0.02 * 4294967296.0)));
    EXPECT_EQ(p.rx_duplicate, fault_params::always);
    EXPECT_EQ(p.rx_reorder, uint64_t{1} << 31);
    EXPECT_EQ(p.tx_drop, 0u);
    EXPECT_EQ(p.tx_duplicate, 4u);  // 1e-9 * 2^32 = 4.29
    EXPECT_EQ(p.tx_reorder, uint64_t{1} << 30);
    EXPECT_EQ(p.hold_ns, 250'000u);
    EXPECT_TRUE(fault_injector::enabled(p));
    EXPECT_FALSE(fault_injector::enabled(fault_params_of(fault_spec{}, 3, 4)));
}

TEST(fault_params_of, seed_depends_on_config_port_and_lcore) {
    fault_spec c;
    const uint64_t base = fault_params_of(c, 0, 0).seed;
    EXPECT_EQ(fault_params_of(c, 0, 0).seed, base);
    std::set<uint64_t> seeds{base};
    for (uint32_t port = 0; port < 4; ++port) {
        for (uint32_t lcore = 0; lcore < 4; ++lcore) {
            seeds.insert(fault_params_of(c, port, lcore).seed);
        }
    }
    EXPECT_EQ(seeds.size(), 16u);
    c.seed = 1;
    EXPECT_NE(fault_params_of(c, 0, 0).seed, base);
}

TEST(fault_threshold, edges) {
    EXPECT_EQ(fault_threshold(0.0), 0u);
    EXPECT_EQ(fault_threshold(-0.5), 0u);
    EXPECT_EQ(fault_threshold(std::nan("")), 0u);
    EXPECT_EQ(fault_threshold(1.0), fault_params::always);
    EXPECT_EQ(fault_threshold(2.0), fault_params::always);
    EXPECT_EQ(fault_threshold(0.5), uint64_t{1} << 31);
    EXPECT_EQ(fault_threshold(1.0 / 4294967296.0), 1u);
}

TEST(fault_counters, one_field_per_counter) {
    std::set<std::string> names;
    for (const auto &f : fault_counter_fields) {
        EXPECT_TRUE(names.insert(f.name).second) << f.name;
        EXPECT_NE(std::string(f.help), "");
    }
    for (const char *n : {"rx_dropped", "rx_duplicated", "rx_reordered", "tx_dropped",
                          "tx_duplicated", "tx_reordered", "dup_no_mbuf"}) {
        EXPECT_EQ(names.count(n), 1u) << n;
    }
    EXPECT_EQ(alignof(fault_counters), 64u);
    EXPECT_GE(sizeof(fault_counters), std::size(fault_counter_fields) * sizeof(ferry::counter));
}

}  // namespace
}  // namespace ferry::net
