// Tests of the hierarchical timer wheel: the firing contract (exactly the timers with
// deadline <= now, in tick order), re-entrancy from callbacks, far deadlines and long sleeps,
// next_deadline() as a sleep bound, and a randomized comparison with a std::multimap model.
#include "ferry/reactor/timer_wheel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ferry::reactor {
namespace {

constexpr uint64_t us = 1000;
constexpr uint64_t ms = 1000 * us;
constexpr uint64_t sec = 1000 * ms;
constexpr uint64_t hour = 3600 * sec;
constexpr uint64_t day = 24 * hour;
constexpr uint64_t none = timer_wheel::no_deadline;

// A pool of timers whose callbacks log (id, wheel time) and may run a per-test hook.
struct harness {
    struct item {
        harness *h = nullptr;
        int id = 0;
        timer t;
    };

    explicit harness(uint64_t now, unsigned shift = timer_wheel::default_tick_shift, int n = 64)
        : wheel(now, shift), items(static_cast<size_t>(n)) {
        for (int i = 0; i < n; ++i) {
            items[static_cast<size_t>(i)].h = this;
            items[static_cast<size_t>(i)].id = i;
            items[static_cast<size_t>(i)].t.set_callback(&harness::on_fire,
                                                         &items[static_cast<size_t>(i)]);
        }
    }
    ~harness() {
        for (auto &it : items) {
            wheel.cancel(it.t);
        }
    }

    static void on_fire(void *ctx, uint64_t) {
        auto *it = static_cast<item *>(ctx);
        it->h->fired.push_back(it->id);
        it->h->fired_at.push_back(it->h->wheel.now());
        if (it->h->hook) {
            it->h->hook(*it->h, it->id);
        }
    }

    timer &t(int id) { return items[static_cast<size_t>(id)].t; }
    void arm(int id, uint64_t deadline) { wheel.arm(t(id), deadline); }
    // Advances and returns the ids fired by this call.
    std::vector<int> advance(uint64_t now) {
        fired.clear();
        fired_at.clear();
        const size_t n = wheel.advance(now);
        EXPECT_EQ(n, fired.size());
        return fired;
    }

    timer_wheel wheel;
    std::vector<item> items;  // sized once: timers must not move
    std::vector<int> fired;
    std::vector<uint64_t> fired_at;
    void (*hook)(harness &, int id) = nullptr;
};

// ---------------------------------------------------------------------------------------
// Table-driven scenarios: arm a set of timers at t0, then advance through a list of times,
// each with the exact ids expected to fire (in order; ids sharing a tick are compared as a
// set, since order within a tick is unspecified).

struct scenario_step {
    uint64_t now;
    std::vector<std::vector<int>> groups;  // expected fires, grouped by tick, groups in order
};
struct scenario {
    std::string name;
    unsigned shift;
    uint64_t t0;
    std::vector<uint64_t> deadlines;  // id = index
    std::vector<scenario_step> steps;
};

void PrintTo(const scenario &s, std::ostream *os) {
    *os << s.name;
}

class wheel_scenario : public ::testing::TestWithParam<scenario> {};

TEST_P(wheel_scenario, fires_expected_timers_in_tick_order) {
    const scenario &sc = GetParam();
    harness h(sc.t0, sc.shift);
    for (size_t i = 0; i < sc.deadlines.size(); ++i) {
        h.arm(static_cast<int>(i), sc.deadlines[i]);
    }
    for (const scenario_step &step : sc.steps) {
        const std::vector<int> got = h.advance(step.now);
        size_t pos = 0;
        for (const auto &group : step.groups) {
            ASSERT_LE(pos + group.size(), got.size()) << "advance(" << step.now << ")";
            std::vector<int> a(got.begin() + static_cast<long>(pos),
                               got.begin() + static_cast<long>(pos + group.size()));
            std::vector<int> b = group;
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            EXPECT_EQ(a, b) << "advance(" << step.now << ") group at " << pos;
            pos += group.size();
        }
        EXPECT_EQ(pos, got.size()) << "advance(" << step.now << ") fired extra timers";
    }
}

const uint64_t T = uint64_t{1} << 16;  // default tick
const uint64_t base = 1'000'000'000'000;

INSTANTIATE_TEST_SUITE_P(
    table, wheel_scenario,
    ::testing::Values(
        scenario{"ordering_across_ticks",
                 16,
                 base,
                 {base + 5 * ms, base + 1 * ms, base + 3 * ms, base + 2 * ms, base + 4 * ms},
                 {{base + 10 * ms, {{1}, {3}, {2}, {4}, {0}}}}},
        scenario{"same_deadline",
                 16,
                 base,
                 {base + 7 * ms, base + 7 * ms, base + 7 * ms, base + 1 * ms},
                 {{base + 7 * ms - 1, {{3}}}, {base + 7 * ms, {{0, 1, 2}}}}},
        scenario{"never_early_within_a_tick",
                 16,
                 0,
                 {T / 2, T / 2 + 1, T - 1},
                 {{T / 2 - 1, {}}, {T / 2, {{0}}}, {T / 2, {}}, {T - 2, {{1}}}, {T - 1, {{2}}}}},
        scenario{"deadline_equal_to_now_and_past",
                 16,
                 base,
                 {base, base - 5 * sec, 0},
                 {{base, {{0, 1, 2}}}}},
        scenario{"one_ns_ticks",
                 0,
                 100,
                 {103, 101, 102, 101, 164, 165, 100 + 4096},
                 {{101, {{1, 3}}},
                  {103, {{2}, {0}}},
                  {200, {{4}, {5}}},
                  {100 + 4095, {}},
                  {100 + 4096, {{6}}}}},
        scenario{
            "far_deadlines_one_jump",
            16,
            base,
            {base + 3 * day, base + 1 * hour, base + 20 * hour, base + 40 * day, base + 1 * ms},
            {{base + 365 * day, {{4}, {1}, {2}, {0}, {3}}}}},
        scenario{"far_deadlines_stepwise",
                 16,
                 base,
                 {base + 3 * day, base + 1 * hour, base + 20 * hour, base + 40 * day},
                 {{base + hour - 1, {}},
                  {base + hour, {{1}}},
                  {base + 20 * hour - 1, {}},
                  {base + 20 * hour, {{2}}},
                  {base + 3 * day - 1, {}},
                  {base + 3 * day, {{0}}},
                  {base + 40 * day - 1, {}},
                  {base + 40 * day, {{3}}}}},
        scenario{"one_ms_ticks",
                 20,
                 base,
                 {base + 2500 * us, base + 2400 * us, base + 900 * ms},
                 {{base + 2450 * us, {{1}}}, {base + 2600 * us, {{0}}}, {base + sec, {{2}}}}}),
    [](const ::testing::TestParamInfo<scenario> &info) { return info.param.name; });

// ---------------------------------------------------------------------------------------
// Arm, re-arm, cancel.

TEST(timer_wheel, cancel_before_fire) {
    harness h(0);
    h.arm(0, 10 * ms);
    h.arm(1, 10 * ms);
    EXPECT_EQ(h.wheel.pending(), 2u);
    EXPECT_TRUE(h.wheel.cancel(h.t(0)));
    EXPECT_FALSE(h.t(0).armed());
    EXPECT_FALSE(h.wheel.cancel(h.t(0))) << "second cancel is a no-op";
    EXPECT_EQ(h.wheel.pending(), 1u);
    EXPECT_EQ(h.advance(20 * ms), std::vector<int>{1});
    EXPECT_FALSE(h.wheel.cancel(h.t(1))) << "a fired timer is disarmed";
    EXPECT_EQ(h.wheel.pending(), 0u);
    EXPECT_EQ(h.wheel.next_deadline(), none);
}

TEST(timer_wheel, rearm_moves_an_armed_timer) {
    harness h(0);
    h.arm(0, 50 * ms);
    h.arm(0, 5 * ms);  // earlier
    EXPECT_EQ(h.wheel.pending(), 1u);
    EXPECT_EQ(h.t(0).deadline(), 5 * ms);
    EXPECT_EQ(h.advance(5 * ms), std::vector<int>{0});
    h.arm(0, 6 * ms);
    h.arm(0, 3 * hour);  // later, into a high level
    EXPECT_EQ(h.advance(1 * hour), std::vector<int>{});
    EXPECT_EQ(h.wheel.next_deadline(), 3 * hour);
    EXPECT_EQ(h.advance(3 * hour), std::vector<int>{0});
    EXPECT_EQ(h.wheel.pending(), 0u);
}

TEST(timer_wheel, time_going_backwards_is_clamped) {
    harness h(10 * ms);
    h.arm(0, 11 * ms);
    EXPECT_EQ(h.advance(5 * ms), std::vector<int>{});
    EXPECT_EQ(h.wheel.now(), 10 * ms);
    EXPECT_EQ(h.advance(11 * ms), std::vector<int>{0});
}

// The callback gets the time of the advance() that fires it (the proxy's
// timeouts run on it, never on a clock of their own).
TEST(timer_wheel, callback_receives_the_advance_time) {
    struct seen {
        uint64_t at = 0;
        int n = 0;
    } s;
    timer t([](void *ctx, uint64_t now) {
        auto &x = *static_cast<seen *>(ctx);
        x.at = now;
        ++x.n;
    }, &s);
    timer_wheel w(0);
    w.arm(t, 3 * ms);
    w.advance(2 * ms);
    EXPECT_EQ(s.n, 0);
    w.advance(7 * ms + 5);
    EXPECT_EQ(s.n, 1);
    EXPECT_EQ(s.at, 7 * ms + 5);
}

TEST(timer_wheel, destructor_disarms_pending_timers) {
    timer t([](void *, uint64_t) {}, nullptr);
    {
        timer_wheel w(0);
        w.arm(t, 1 * ms);
        EXPECT_TRUE(t.armed());
    }
    EXPECT_FALSE(t.armed());
}

// ---------------------------------------------------------------------------------------
// Callbacks that arm and cancel.

TEST(timer_wheel, cancel_from_callback_of_a_timer_due_in_the_same_advance) {
    harness h(0, 0);  // 1 ns ticks: 0 fires strictly before 1 and 2
    h.arm(0, 10);
    h.arm(1, 20);
    h.arm(2, 30);
    h.arm(3, 1000);
    h.hook = [](harness &hh, int id) {
        if (id == 0) {
            EXPECT_TRUE(hh.wheel.cancel(hh.t(1)));  // due in this advance
            EXPECT_TRUE(hh.wheel.cancel(hh.t(3)));  // not due yet
        }
    };
    EXPECT_EQ(h.advance(100), (std::vector<int>{0, 2}));
    EXPECT_EQ(h.wheel.pending(), 0u);
    EXPECT_EQ(h.advance(2000), std::vector<int>{});
}

TEST(timer_wheel, callback_cancels_itself_and_one_in_the_same_tick) {
    harness h(0);
    h.arm(0, 1 * ms);
    h.arm(1, 1 * ms);
    h.hook = [](harness &hh, int id) {
        EXPECT_FALSE(hh.wheel.cancel(hh.t(id))) << "already disarmed when its callback runs";
        hh.wheel.cancel(hh.t(1 - id));
    };
    EXPECT_EQ(h.advance(2 * ms).size(), 1u) << "whichever fires first cancels the other";
}

TEST(timer_wheel, periodic_rearm_from_callback) {
    harness h(0);
    h.hook = [](harness &hh, int id) { hh.arm(id, hh.wheel.now() + 10 * ms); };
    h.arm(0, 10 * ms);
    int fires = 0;
    for (uint64_t now = 0; now <= 1 * sec; now += 1 * ms) {
        const auto got = h.advance(now);
        if (now % (10 * ms) == 0 && now != 0) {
            EXPECT_EQ(got, std::vector<int>{0}) << now;
            ++fires;
        } else {
            EXPECT_TRUE(got.empty()) << now;
        }
    }
    EXPECT_EQ(fires, 100);
    EXPECT_TRUE(h.t(0).armed());
}

TEST(timer_wheel, timer_armed_due_from_callback_waits_for_the_next_advance) {
    harness h(0);
    // Re-arming itself "for now" must not loop inside one advance().
    h.hook = [](harness &hh, int id) {
        if (id == 0) {
            hh.arm(0, hh.wheel.now());
            hh.arm(1, 0);  // already past
        }
    };
    h.arm(0, 1 * ms);
    EXPECT_EQ(h.advance(1 * ms), std::vector<int>{0});
    EXPECT_LE(h.wheel.next_deadline(), h.wheel.now()) << "due now: call advance() again";
    h.hook = nullptr;
    auto got = h.advance(1 * ms);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int>{0, 1})) << "both fire on the next call, same tick";
    EXPECT_EQ(h.wheel.pending(), 0u);
}

TEST(timer_wheel, callback_rearms_a_due_timer_later) {
    harness h(0, 0);
    h.arm(0, 10);
    h.arm(1, 20);
    h.hook = [](harness &hh, int id) {
        if (id == 0) {
            hh.arm(1, 500);  // 1 is due in this advance; moving it postpones it
        }
    };
    EXPECT_EQ(h.advance(100), std::vector<int>{0});
    EXPECT_EQ(h.wheel.next_deadline(), 500u);
    EXPECT_EQ(h.advance(499), std::vector<int>{});
    EXPECT_EQ(h.advance(500), std::vector<int>{1});
}

// ---------------------------------------------------------------------------------------
// Long sleeps and level wrap.

TEST(timer_wheel, huge_jump_walks_events_not_ticks) {
    // 1 ns ticks: a jump of ~2^52 ticks would take days if the wheel iterated per tick.
    harness h(12345, 0);
    const uint64_t far = uint64_t{1} << 52;
    h.arm(0, 12345 + far);
    h.arm(1, 12345 + far / 3);
    h.arm(2, 12345 + 77);
    h.arm(3, 12345 + (uint64_t{1} << 31));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(h.advance(12345 + far), (std::vector<int>{2, 3, 1, 0}));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::milliseconds(100));
}

TEST(timer_wheel, long_sleep_with_many_timers_fires_all_in_order) {
    harness h(base, timer_wheel::default_tick_shift, 2000);
    std::mt19937_64 rng(7);
    std::multimap<uint64_t, int> want;
    for (int i = 0; i < 2000; ++i) {
        const uint64_t d = base + rng() % (5 * day);
        h.arm(i, d);
        want.emplace(d, i);
    }
    const auto got = h.advance(base + 6 * day);
    ASSERT_EQ(got.size(), 2000u);
    for (size_t i = 1; i < got.size(); ++i) {
        EXPECT_LE(h.t(got[i - 1]).deadline() >> 16, h.t(got[i]).deadline() >> 16);
    }
}

struct wrap_case {
    std::string name;
    unsigned shift;
    uint64_t start;   // wheel time at construction
    uint64_t period;  // a periodic timer re-armed from its callback
    int fires;
};

void PrintTo(const wrap_case &c, std::ostream *os) {
    *os << c.name;
}

class wheel_wrap : public ::testing::TestWithParam<wrap_case> {};

// The timer crosses digit boundaries of every level (and the overflow boundary) many times;
// each fire must happen exactly in the advance() whose `now` first reaches the deadline,
// whether time advances in odd steps or sleeps straight to next_deadline().
TEST_P(wheel_wrap, periodic_timer_fires_exactly_across_boundaries) {
    const wrap_case &c = GetParam();
    for (int mode = 0; mode < 2; ++mode) {
        harness h(c.start, c.shift);
        static uint64_t period;  // hooks are plain function pointers, not closures
        period = c.period;
        h.hook = [](harness &hh, int id) { hh.arm(id, hh.t(id).deadline() + period); };
        h.arm(0, c.start + c.period);
        std::mt19937_64 rng(static_cast<uint64_t>(c.period));
        uint64_t now = c.start;
        int fired = 0;
        while (fired < c.fires) {
            const uint64_t due = h.t(0).deadline();
            uint64_t next;
            if (mode == 0) {
                next = h.wheel.next_deadline();
                ASSERT_EQ(next, due) << "no cancels: next_deadline() is exact";
            } else {
                next = now + 1 + rng() % (c.period / 3 + 1);
            }
            const auto got = h.advance(next);
            now = next;
            if (now >= due) {
                ASSERT_EQ(got, std::vector<int>{0}) << "now=" << now << " due=" << due;
                ++fired;
            } else {
                ASSERT_TRUE(got.empty()) << "early fire, now=" << now << " due=" << due;
            }
        }
    }
}

constexpr uint64_t p30 = uint64_t{1} << 30;
constexpr uint64_t p36 = uint64_t{1} << 36;

INSTANTIATE_TEST_SUITE_P(
    table, wheel_wrap,
    ::testing::Values(wrap_case{"tick", 0, 0, 1, 300}, wrap_case{"level0_edge", 0, 60, 63, 300},
                      wrap_case{"level1_edge", 0, 4090, 65, 300},
                      wrap_case{"level2", 0, 1, 4097, 200},
                      wrap_case{"level3", 0, (1 << 18) - 2, (1 << 18) + 3, 200},
                      wrap_case{"level4", 0, (1 << 24) - 1, (1 << 24) - 1, 200},
                      wrap_case{"top_minus_one", 0, p30 - 5, p30 - 1, 100},
                      wrap_case{"overflow", 0, 17, p30 + 1, 100},
                      wrap_case{"far_overflow", 0, 3, 5 * p36 + 11, 50},
                      wrap_case{"default_tick_hours", 16, base, 7 * hour + 13, 100},
                      wrap_case{"default_tick_days", 16, base, 3 * day + 1, 50},
                      wrap_case{"high_epoch", 16, uint64_t{1} << 62, 1 * sec + 1, 200},
                      wrap_case{"coarse_tick", 24, 5, 7 * ms, 200}),
    [](const ::testing::TestParamInfo<wrap_case> &info) { return info.param.name; });

// ---------------------------------------------------------------------------------------
// next_deadline() as a sleep bound.

TEST(timer_wheel, next_deadline_is_exact_without_cancels) {
    harness h(base);
    EXPECT_EQ(h.wheel.next_deadline(), none);
    const uint64_t ds[] = {base + 20 * day, base + 5 * hour, base + 3 * sec,
                           base + 70 * ms,  base + 100 * us, base + 1};
    for (int i = 0; i < 6; ++i) {  // each is earlier than the last, at a lower level
        h.arm(i, ds[i]);
        EXPECT_EQ(h.wheel.next_deadline(), ds[i]);
    }
}

TEST(timer_wheel, next_deadline_after_cancel_is_a_bound_that_self_corrects) {
    harness h(0, 0);  // 1 ns ticks: a level-3 slot spans 2^18 ns
    h.arm(0, 300'000);
    h.arm(1, 400'000);  // same level-3 slot as 0
    EXPECT_EQ(h.wheel.next_deadline(), 300'000u);
    h.wheel.cancel(h.t(0));
    const uint64_t bound = h.wheel.next_deadline();
    EXPECT_LE(bound, 400'000u) << "never later than the real earliest";
    EXPECT_EQ(h.advance(bound), std::vector<int>{}) << "one needless wakeup";
    EXPECT_EQ(h.wheel.next_deadline(), 400'000u) << "exact after the slot was re-sorted";
}

// Sleeping core: arm many timers, cancel a random half, then repeatedly sleep until
// next_deadline() and advance. The bound must never pass the real earliest deadline, and
// between two fires the core wakes needlessly at most once.
TEST(timer_wheel, sleeping_core_wakes_needlessly_at_most_once_per_fire) {
    for (unsigned shift : {0u, 8u, 16u}) {
        harness h(base, shift, 3000);
        std::mt19937_64 rng(shift + 1);
        std::multimap<uint64_t, int> ref;
        std::vector<uint64_t> dl(3000);
        for (int i = 0; i < 3000; ++i) {
            const uint64_t spans[] = {uint64_t{1} << 12, uint64_t{1} << 24, uint64_t{1} << 36,
                                      uint64_t{1} << 48};
            dl[static_cast<size_t>(i)] = base + rng() % spans[rng() % 4];
            h.arm(i, dl[static_cast<size_t>(i)]);
        }
        for (int i = 0; i < 3000; ++i) {
            if (rng() % 2) {
                h.wheel.cancel(h.t(i));
            } else {
                ref.emplace(dl[static_cast<size_t>(i)], i);
            }
        }
        int needless = 0;
        while (!ref.empty()) {
            const uint64_t d = h.wheel.next_deadline();
            ASSERT_LE(d, ref.begin()->first);
            const auto got = h.advance(d);
            for (int id : got) {
                auto it = ref.find(dl[static_cast<size_t>(id)]);
                while (it != ref.end() && it->second != id) {
                    ++it;
                }
                ASSERT_NE(it, ref.end());
                ASSERT_LE(it->first, d);
                ref.erase(it);
            }
            if (!ref.empty()) {
                ASSERT_GT(ref.begin()->first, h.wheel.now()) << "everything due has fired";
            }
            needless = got.empty() ? needless + 1 : 0;
            ASSERT_LE(needless, 1) << "shift " << shift;
        }
        EXPECT_EQ(h.wheel.next_deadline(), none);
    }
}

// ---------------------------------------------------------------------------------------
// Randomized comparison against a reference model.
//
// The model is a std::multimap deadline -> id plus per-id state. For every advance(now) it
// predicts the due set D = {armed, deadline <= now}. The wheel must fire exactly D (minus
// timers a callback cancelled or re-armed before they fired), each at most once, in
// non-decreasing tick order, where a timer armed with a past deadline counts at the tick it
// was armed in. Callbacks randomly cancel or re-arm other timers or themselves. After every
// operation next_deadline() must not be later than the model's earliest deadline and
// pending() must match.

struct random_case {
    std::string name;
    unsigned shift;
    uint64_t seed;
    int ops;
};

void PrintTo(const random_case &c, std::ostream *os) {
    *os << c.name;
}

class wheel_random : public ::testing::TestWithParam<random_case> {};

struct model {
    struct entry {
        bool armed = false;
        uint64_t deadline = 0;
        uint64_t key = 0;  // tick it is expected to fire in, for the order check
        bool touched = false;
        bool due = false;
        bool fired = false;
    };

    timer_wheel *wheel = nullptr;
    std::vector<entry> e;
    std::multimap<uint64_t, int> by_deadline;
    std::mt19937_64 rng;
    std::vector<uint64_t> fire_keys;
    unsigned shift = 0;
    int callback_actions = 0;

    void erase(int id) {
        auto range = by_deadline.equal_range(e[static_cast<size_t>(id)].deadline);
        for (auto it = range.first; it != range.second; ++it) {
            if (it->second == id) {
                by_deadline.erase(it);
                return;
            }
        }
        ADD_FAILURE() << "model lost timer " << id;
    }
    void arm(timer &t, int id, uint64_t deadline) {
        entry &x = e[static_cast<size_t>(id)];
        if (x.armed) {
            erase(id);
        }
        wheel->arm(t, deadline);
        x.armed = true;
        x.deadline = deadline;
        x.key = std::max(deadline >> shift, wheel->now() >> shift);
        by_deadline.emplace(deadline, id);
    }
    void cancel(timer &t, int id) {
        entry &x = e[static_cast<size_t>(id)];
        EXPECT_EQ(wheel->cancel(t), x.armed) << id;
        if (x.armed) {
            erase(id);
            x.armed = false;
        }
    }
    uint64_t random_deadline() {
        const uint64_t now = wheel->now();
        const uint64_t tick = uint64_t{1} << shift;
        switch (rng() % 8) {
            case 0:  // past
                return now - std::min(now, rng() % (4 * tick + 1));
            case 1:  // this or the next few ticks
                return now + rng() % (3 * tick);
            case 2:
                return now + rng() % (64 * tick);
            case 3:
                return now + rng() % (4096 * tick);
            case 4:
                return now + rng() % ((uint64_t{1} << 20) * tick);
            case 5:
                return now + rng() % ((uint64_t{1} << 31) * tick);  // around the top
            case 6:  // overflow (capped so that 64-bit time cannot wrap during the test)
                return now + rng() % std::min((uint64_t{1} << 34) * tick, uint64_t{1} << 52);
            default:  // exactly on a tick boundary
                return ((now >> shift) + 1 + rng() % 200) << shift;
        }
    }
};

struct random_item {
    model *m = nullptr;
    std::vector<random_item> *all = nullptr;
    int id = 0;
    timer t;
};

void random_fire(void *ctx, uint64_t) {
    auto *it = static_cast<random_item *>(ctx);
    model &m = *it->m;
    model::entry &x = m.e[static_cast<size_t>(it->id)];
    EXPECT_TRUE(x.armed) << "fired a disarmed timer " << it->id;
    EXPECT_TRUE(x.due) << "fired timer " << it->id << " early: deadline " << x.deadline << " now "
                       << m.wheel->now();
    EXPECT_FALSE(x.touched) << "fired timer " << it->id << " after a callback moved it";
    EXPECT_FALSE(x.fired) << "fired timer " << it->id << " twice";
    EXPECT_LE(x.deadline, m.wheel->now());
    x.fired = true;
    if (x.armed) {
        m.erase(it->id);
        x.armed = false;
    }
    m.fire_keys.push_back(x.key);

    // Sometimes act on the wheel from inside the callback.
    auto &all = *it->all;
    const int other = static_cast<int>(m.rng() % all.size());
    switch (m.rng() % 8) {
        case 0:
            m.cancel(all[static_cast<size_t>(other)].t, other);
            m.e[static_cast<size_t>(other)].touched = true;
            ++m.callback_actions;
            break;
        case 1:
            m.arm(all[static_cast<size_t>(other)].t, other, m.random_deadline());
            m.e[static_cast<size_t>(other)].touched = true;
            ++m.callback_actions;
            break;
        case 2:
            m.arm(it->t, it->id, m.random_deadline());
            x.touched = true;
            ++m.callback_actions;
            break;
        default:
            break;
    }
}

TEST_P(wheel_random, matches_multimap_model) {
    const random_case &c = GetParam();
    constexpr int n = 400;
    const uint64_t start = (c.seed * 0x9e3779b97f4a7c15ULL) >> 16;  // arbitrary epoch
    model m;
    std::vector<random_item> items(n);
    // Declared after the timers so that it is destroyed first and disarms them, also when an
    // ASSERT returns early.
    timer_wheel wheel(start, c.shift);
    m.wheel = &wheel;
    m.e.resize(n);
    m.rng.seed(c.seed);
    m.shift = c.shift;
    for (int i = 0; i < n; ++i) {
        items[static_cast<size_t>(i)].m = &m;
        items[static_cast<size_t>(i)].all = &items;
        items[static_cast<size_t>(i)].id = i;
        items[static_cast<size_t>(i)].t.set_callback(&random_fire, &items[static_cast<size_t>(i)]);
    }
    const uint64_t tick = uint64_t{1} << c.shift;
    size_t total_fired = 0;

    for (int op = 0; op < c.ops; ++op) {
        const int id = static_cast<int>(m.rng() % n);
        const unsigned what = static_cast<unsigned>(m.rng() % 16);
        if (what < 7) {
            m.arm(items[static_cast<size_t>(id)].t, id, m.random_deadline());
        } else if (what < 10) {
            m.cancel(items[static_cast<size_t>(id)].t, id);
        } else {
            uint64_t now = wheel.now();
            switch (what) {
                case 10:
                    now += m.rng() % (2 * tick);
                    break;
                case 11:
                    now += m.rng() % (100 * tick);
                    break;
                case 12:
                    now += m.rng() % ((uint64_t{1} << 22) * tick);
                    break;
                case 13:  // a long sleep (capped: ~2000 of them must not wrap 64-bit time)
                    now += m.rng() % std::min((uint64_t{1} << 33) * tick, uint64_t{1} << 50);
                    break;
                default: {  // a sleeping core: wake at next_deadline()
                    const uint64_t d = wheel.next_deadline();
                    if (d != none) {
                        now = std::max(now, d);
                    }
                    break;
                }
            }
            for (auto &x : m.e) {
                x.touched = false;
                x.fired = false;
                x.due = x.armed && x.deadline <= now;
            }
            m.fire_keys.clear();
            const size_t fired = wheel.advance(now);
            ASSERT_EQ(fired, m.fire_keys.size());
            total_fired += fired;
            for (size_t i = 0; i < m.e.size(); ++i) {
                const model::entry &x = m.e[i];
                if (x.due && !x.touched) {
                    ASSERT_TRUE(x.fired) << "op " << op << ": timer " << i << " deadline "
                                         << x.deadline << " not fired at " << now;
                }
            }
            ASSERT_TRUE(std::is_sorted(m.fire_keys.begin(), m.fire_keys.end()))
                << "op " << op << ": fired out of tick order";
        }
        ASSERT_EQ(wheel.pending(), m.by_deadline.size()) << "op " << op;
        const uint64_t nd = wheel.next_deadline();
        if (m.by_deadline.empty()) {
            ASSERT_EQ(nd, none);
        } else {
            ASSERT_LE(nd, m.by_deadline.begin()->first) << "op " << op << ": bound too late";
        }
    }
    EXPECT_GT(total_fired, static_cast<size_t>(c.ops / 20)) << "the test exercised firing";
    EXPECT_GT(m.callback_actions, 100);
}

INSTANTIATE_TEST_SUITE_P(
    table, wheel_random,
    ::testing::Values(random_case{"ns_tick_a", 0, 1, 30000}, random_case{"ns_tick_b", 0, 2, 30000},
                      random_case{"tick_2p4", 4, 3, 30000}, random_case{"tick_2p10", 10, 4, 30000},
                      random_case{"default_tick", 16, 5, 30000},
                      random_case{"default_tick_b", 16, 6, 30000},
                      random_case{"ms_tick", 20, 7, 30000}),
    [](const ::testing::TestParamInfo<random_case> &info) { return info.param.name; });

}  // namespace
}  // namespace ferry::reactor
