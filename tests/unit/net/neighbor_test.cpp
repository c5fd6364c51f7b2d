#include "ferry/net/neighbor.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace ferry::net {
namespace {

using status = neighbor_table::learn_status;
using rstatus = neighbor_table::resolve_status;
using kind = neighbor_event::kind;

constexpr uint64_t sec = 1'000'000'000;

// The table never dereferences packets: distinct fake addresses stand in.
rte_mbuf *pkt(uintptr_t n) {
    return reinterpret_cast<rte_mbuf *>(0x1000 + 64 * n);
}

ipv4_addr ip(uint8_t d) {
    return ipv4_addr::from_octets(10, 0, 0, d);
}
mac_addr mac(uint8_t d) {
    return mac_addr({0x02, 0, 0, 0, 0, d});
}

neighbor_config cfg(uint32_t capacity = 16) {
    return neighbor_config{capacity, 60 * sec, 1 * sec, 3};
}

std::vector<neighbor_event> poll_all(neighbor_table &t, uint64_t now,
                                     std::vector<rte_mbuf *> *pending = nullptr) {
    std::vector<neighbor_event> out;
    t.poll(now, [&](const neighbor_event &ev) {
        out.push_back(ev);
        if (pending != nullptr) {
            pending->insert(pending->end(), ev.pending.begin(), ev.pending.end());
        }
        out.back().pending = {};  // only valid during the callback
    });
    return out;
}

TEST(Neighbor, EmptyTable) {
    neighbor_table t(cfg());
    EXPECT_EQ(t.lookup(ip(2), 0), std::nullopt);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.capacity(), 16u);
    EXPECT_EQ(t.next_deadline(), UINT64_MAX);
    EXPECT_TRUE(poll_all(t, 100 * sec).empty());
}

TEST(Neighbor, MergeRulesRfc826) {
    neighbor_table t(cfg());
    // Not in the table and not for us: RFC 826 adds nothing.
    auto r = t.learn(ip(2), mac(2), 0, /*target_is_us=*/false);
    EXPECT_EQ(r.status, status::ignored);
    EXPECT_EQ(t.size(), 0u);
    // For us: added.
    r = t.learn(ip(2), mac(2), 0, true);
    EXPECT_EQ(r.status, status::inserted);
    EXPECT_TRUE(r.released.empty());
    EXPECT_EQ(t.lookup(ip(2), 1), mac(2));
    EXPECT_EQ(t.state(ip(2)), neighbor_state::reachable);
    // Present: updated from any ARP packet, even one not for us.
    r = t.learn(ip(2), mac(9), 5 * sec, false);
    EXPECT_EQ(r.status, status::updated);
    EXPECT_EQ(t.lookup(ip(2), 5 * sec), mac(9));
    EXPECT_EQ(t.size(), 1u);
}

TEST(Neighbor, ExpiresAfterTimeout) {
    neighbor_table t(cfg());
    ASSERT_EQ(t.learn(ip(2), mac(2), 10, true).status, status::inserted);
    EXPECT_EQ(t.next_deadline(), 10 + 60 * sec);
    EXPECT_EQ(t.lookup(ip(2), 10 + 60 * sec - 1), mac(2));
    EXPECT_EQ(t.lookup(ip(2), 10 + 60 * sec), std::nullopt);
    EXPECT_TRUE(poll_all(t, 10 + 60 * sec - 1).empty());
    const auto evs = poll_all(t, 10 + 60 * sec);
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].what, kind::expired);
    EXPECT_EQ(evs[0].ip, ip(2));
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.next_deadline(), UINT64_MAX);
}

// learn_result::share: news only (issue 13, bug 3).
TEST(Neighbor, ShareSaysOnlyNews) {
    neighbor_table t(cfg());  // timeout 60 s: an unchanged binding re-shared after 30 s
    const uint64_t ms = sec / 1000;
    auto l = [&](int m, uint64_t at) { return t.learn(ip(2), mac(m), at, true); };
    EXPECT_TRUE(l(2, 0).share);                  // inserted
    EXPECT_FALSE(l(2, 1 * sec).share);           // refreshed, nothing new
    EXPECT_EQ(l(2, 29 * sec).status, status::refreshed);
    EXPECT_TRUE(l(2, 30 * sec).share);           // refreshed, half a timeout since
    const auto moved = l(3, 30 * sec + 100 * ms);
    EXPECT_EQ(moved.status, status::updated);
    EXPECT_TRUE(moved.share);                    // a new MAC, 100 ms since the last share
    EXPECT_FALSE(l(2, 30 * sec + 150 * ms).share);  // flapping: held back
    EXPECT_TRUE(l(3, 30 * sec + 200 * ms).share);   // 100 ms since the last share
}

TEST(Neighbor, RefreshAndConfirmExtendLifetime) {
    neighbor_table t(cfg());
    ASSERT_EQ(t.learn(ip(2), mac(2), 0, true).status, status::inserted);
    ASSERT_EQ(t.learn(ip(2), mac(2), 30 * sec, false).status, status::refreshed);
    EXPECT_EQ(t.lookup(ip(2), 80 * sec), mac(2));
    // The deadline may be early; a poll then recomputes it exactly.
    EXPECT_LE(t.next_deadline(), 90 * sec);
    EXPECT_TRUE(poll_all(t, 60 * sec).empty());
    EXPECT_EQ(t.next_deadline(), 90 * sec);
    EXPECT_TRUE(t.confirm(ip(2), 85 * sec));
    EXPECT_FALSE(t.confirm(ip(3), 85 * sec));
    EXPECT_EQ(t.lookup(ip(2), 140 * sec), mac(2));
    EXPECT_EQ(t.lookup(ip(2), 145 * sec), std::nullopt);
}

TEST(Neighbor, ResolveQueuesThenReleasesInOrder) {
    neighbor_table t(cfg());
    auto r = t.resolve(ip(2), pkt(1), 0);
    EXPECT_EQ(r.status, rstatus::queued_new);
    EXPECT_EQ(t.state(ip(2)), neighbor_state::incomplete);
    EXPECT_EQ(t.next_deadline(), 1 * sec);
    r = t.resolve(ip(2), pkt(2), 10);
    EXPECT_EQ(r.status, rstatus::queued);
    EXPECT_EQ(r.displaced, nullptr);
    EXPECT_EQ(t.pending_count(ip(2)), 2u);
    EXPECT_EQ(t.lookup(ip(2), 10), std::nullopt);
    // The reply: present in the table, so merged whatever the target.
    const auto l = t.learn(ip(2), mac(2), 20, false);
    EXPECT_EQ(l.status, status::resolved);
    ASSERT_EQ(l.released.size(), 2u);
    EXPECT_EQ(l.released[0], pkt(1));
    EXPECT_EQ(l.released[1], pkt(2));
    EXPECT_EQ(t.pending_count(ip(2)), 0u);
    EXPECT_EQ(t.lookup(ip(2), 30), mac(2));
    r = t.resolve(ip(2), pkt(3), 40);
    EXPECT_EQ(r.status, rstatus::reachable);
    EXPECT_EQ(r.mac, mac(2));
    EXPECT_EQ(t.pending_count(ip(2)), 0u);  // not taken
}

TEST(Neighbor, RetriesThenGivesUpAndHandsBackPackets) {
    neighbor_table t(cfg());
    ASSERT_EQ(t.resolve(ip(2), pkt(1), 0).status, rstatus::queued_new);  // request 1
    ASSERT_EQ(t.resolve(ip(2), pkt(2), 0).status, rstatus::queued);
    EXPECT_TRUE(poll_all(t, 1 * sec - 1).empty());
    auto evs = poll_all(t, 1 * sec);
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].what, kind::solicit);
    EXPECT_EQ(evs[0].ip, ip(2));
    EXPECT_EQ(evs[0].tries, 2u);
    EXPECT_EQ(t.next_deadline(), 2 * sec);
    evs = poll_all(t, 2 * sec);
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].what, kind::solicit);
    EXPECT_EQ(evs[0].tries, 3u);
    std::vector<rte_mbuf *> handed_back;
    evs = poll_all(t, 3 * sec, &handed_back);
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].what, kind::failed);
    EXPECT_EQ(evs[0].tries, 3u);
    EXPECT_EQ(handed_back, (std::vector<rte_mbuf *>{pkt(1), pkt(2)}));
    EXPECT_EQ(t.state(ip(2)), neighbor_state::free);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.next_deadline(), UINT64_MAX);
}

TEST(Neighbor, FullQueueKeepsTheLatest) {
    // RFC 1122 §2.3.2.2: keep the latest packet; the oldest is handed back.
    neighbor_table t(cfg());
    for (uintptr_t i = 1; i <= neighbor_table::max_pending; ++i) {
        const auto r = t.resolve(ip(2), pkt(i), 0);
        ASSERT_EQ(r.displaced, nullptr);
    }
    const auto r = t.resolve(ip(2), pkt(100), 0);
    EXPECT_EQ(r.status, rstatus::queued);
    EXPECT_EQ(r.displaced, pkt(1));
    EXPECT_EQ(t.pending_count(ip(2)), neighbor_table::max_pending);
    const auto l = t.learn(ip(2), mac(2), 1, true);
    ASSERT_EQ(l.released.size(), neighbor_table::max_pending);
    EXPECT_EQ(l.released.front(), pkt(2));
    EXPECT_EQ(l.released.back(), pkt(100));
}

TEST(Neighbor, ExpiredEntryIsResolvedAgain) {
    neighbor_table t(cfg());
    ASSERT_EQ(t.learn(ip(2), mac(2), 0, true).status, status::inserted);
    const auto r = t.resolve(ip(2), pkt(1), 60 * sec);  // expired, not yet polled
    EXPECT_EQ(r.status, rstatus::queued_new);
    EXPECT_EQ(t.state(ip(2)), neighbor_state::incomplete);
    EXPECT_EQ(t.pending_count(ip(2)), 1u);
}

TEST(Neighbor, CapacityUnsolicitedNeverEvictsLive) {
    neighbor_table t(cfg(4));
    for (uint8_t i = 1; i <= 4; ++i) {
        ASSERT_EQ(t.learn(ip(i), mac(i), i, true).status, status::inserted);
    }
    auto r = t.learn(ip(5), mac(5), 10, true);
    EXPECT_EQ(r.status, status::table_full);
    EXPECT_EQ(t.lookup(ip(5), 10), std::nullopt);
    // Once entries expired, an insertion reclaims the one expired longest.
    r = t.learn(ip(5), mac(5), 60 * sec + 2, true);
    EXPECT_EQ(r.status, status::inserted);
    EXPECT_TRUE(r.evicted);
    EXPECT_EQ(t.state(ip(1)), neighbor_state::free);
    EXPECT_EQ(t.lookup(ip(5), 60 * sec + 2), mac(5));
    EXPECT_EQ(t.size(), 4u);
}

TEST(Neighbor, CapacityResolveEvictsLeastRecentlyConfirmed) {
    neighbor_table t(cfg(4));
    for (uint8_t i = 1; i <= 4; ++i) {
        ASSERT_EQ(t.learn(ip(i), mac(i), i, true).status, status::inserted);
    }
    ASSERT_TRUE(t.confirm(ip(1), 100));  // ip(2) is now the least recently confirmed
    const auto r = t.resolve(ip(9), pkt(1), 200);
    EXPECT_EQ(r.status, rstatus::queued_new);
    EXPECT_TRUE(r.evicted);
    EXPECT_EQ(t.state(ip(2)), neighbor_state::free);
    EXPECT_EQ(t.state(ip(1)), neighbor_state::reachable);
    EXPECT_EQ(t.state(ip(9)), neighbor_state::incomplete);
}

TEST(Neighbor, CapacityFullOfIncompleteReportsFull) {
    neighbor_table t(cfg(2));
    ASSERT_EQ(t.resolve(ip(1), pkt(1), 0).status, rstatus::queued_new);
    ASSERT_EQ(t.resolve(ip(2), pkt(2), 0).status, rstatus::queued_new);
    const auto r = t.resolve(ip(3), pkt(3), 0);
    EXPECT_EQ(r.status, rstatus::table_full);  // packet not taken
    EXPECT_EQ(t.pending_count(ip(3)), 0u);
    EXPECT_EQ(t.learn(ip(3), mac(3), 0, true).status, status::table_full);
}

TEST(Neighbor, ClearHandsBackEverything) {
    neighbor_table t(cfg());
    ASSERT_EQ(t.resolve(ip(1), pkt(1), 0).status, rstatus::queued_new);
    ASSERT_EQ(t.resolve(ip(1), pkt(2), 0).status, rstatus::queued);
    ASSERT_EQ(t.resolve(ip(2), pkt(3), 0).status, rstatus::queued_new);
    ASSERT_EQ(t.learn(ip(3), mac(3), 0, true).status, status::inserted);
    std::vector<rte_mbuf *> got;
    t.clear([&](rte_mbuf *m) { got.push_back(m); });
    EXPECT_EQ(got, (std::vector<rte_mbuf *>{pkt(1), pkt(2), pkt(3)}));
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.next_deadline(), UINT64_MAX);
}

TEST(Neighbor, ZeroCapacityClampsToOne) {
    neighbor_table t(cfg(0));
    EXPECT_EQ(t.capacity(), 1u);
    EXPECT_EQ(t.learn(ip(1), mac(1), 0, true).status, status::inserted);
    EXPECT_EQ(t.learn(ip(2), mac(2), 0, true).status, status::table_full);
}

// Model check of the open-addressing index under churn: random insertions,
// refreshes and expiries must agree with a std::map at every step.
TEST(Neighbor, ChurnAgreesWithModel) {
    constexpr uint32_t capacity = 64;
    neighbor_table t(neighbor_config{capacity, 100, 1, 3});
    std::map<uint32_t, std::pair<mac_addr, uint64_t>> model;  // ip -> (mac, confirmed)
    std::mt19937 rng(826);
    uint64_t now = 0;
    for (int step = 0; step < 20000; ++step) {
        now += rng() % 3;
        // Few distinct addresses in a /24 and a /16 so the probe runs collide.
        const ipv4_addr a(0x0a000000u | (rng() % 2 ? rng() % 96 : (rng() % 96) << 8));
        const mac_addr m(
            {0x02, 0, 0, 0, static_cast<uint8_t>(step >> 8), static_cast<uint8_t>(step)});
        switch (rng() % 4) {
            case 0:
            case 1: {
                const auto r = t.learn(a, m, now, true);
                auto it = model.find(a.value());
                if (it != model.end()) {
                    ASSERT_EQ(r.status, status::updated);
                    it->second = {m, now};
                } else if (r.status == status::inserted) {
                    // If it reclaimed an expired entry, the resync below notices.
                    model[a.value()] = {m, now};
                } else {
                    ASSERT_EQ(r.status, status::table_full);
                    ASSERT_EQ(t.size(), capacity);
                }
                break;
            }
            case 2: {
                t.poll(now, [&](const neighbor_event &ev) {
                    ASSERT_EQ(ev.what, kind::expired);
                    auto it = model.find(ev.ip.v4().value());
                    ASSERT_NE(it, model.end());
                    ASSERT_GE(now, it->second.second + 100);
                    model.erase(it);
                });
                break;
            }
            case 3: {
                const auto got = t.lookup(a, now);
                auto it = model.find(a.value());
                if (it == model.end() || now >= it->second.second + 100) {
                    ASSERT_EQ(got, std::nullopt);
                } else {
                    ASSERT_EQ(got, it->second.first);
                }
                break;
            }
        }
        // Entries the table reclaimed on insertion are gone from it: resync the
        // model by asking the table about every expired model entry.
        for (auto it = model.begin(); it != model.end();) {
            if (t.state(ipv4_addr(it->first)) == neighbor_state::free) {
                ASSERT_GE(now, it->second.second + 100) << "a live entry vanished";
                it = model.erase(it);
            } else {
                ++it;
            }
        }
        ASSERT_EQ(t.size(), model.size()) << "step " << step;
    }
}

}  // namespace
}  // namespace ferry::net
