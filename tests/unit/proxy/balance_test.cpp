// balance.h: routing and the three balancers, table-driven, no bed.
#include "ferry/proxy/balance.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace ferry::proxy {
namespace {

std::vector<server_view> views(std::vector<uint32_t> weights) {
    std::vector<server_view> v;
    for (uint32_t w : weights) v.push_back({w, true, 0});
    return v;
}

std::string sequence(std::vector<server_view> v, int picks) {
    std::vector<int64_t> cur(v.size(), 0);
    std::string out;
    for (int i = 0; i < picks; ++i) {
        const int s = pick_round_robin(v, cur);
        out += s < 0 ? '-' : static_cast<char>('a' + s);
    }
    return out;
}

struct rr_case {
    const char *name;
    std::vector<uint32_t> weights;
    std::vector<bool> up;
    std::string expect;  // one round of picks
};

class RoundRobin : public testing::TestWithParam<rr_case> {};

TEST_P(RoundRobin, SmoothWeightedSequence) {
    const rr_case &c = GetParam();
    auto v = views(c.weights);
    for (size_t i = 0; i < c.up.size(); ++i) v[i].up = c.up[i];
    EXPECT_EQ(sequence(v, static_cast<int>(c.expect.size())), c.expect);
}

INSTANTIATE_TEST_SUITE_P(
    Table, RoundRobin,
    testing::Values(rr_case{"equal", {1, 1, 1}, {}, "abcabc"},
                    // nginx's documented example: {5, 1, 1} -> a a b a c a a.
                    rr_case{"nginx_5_1_1", {5, 1, 1}, {}, "aabacaa"},
                    rr_case{"two_to_one", {2, 1}, {}, "abaaba"},
                    rr_case{"down_is_skipped", {1, 1, 1}, {true, false, true}, "acacac"},
                    rr_case{"all_down", {1, 1}, {false, false}, "--"}),
    [](const auto &i) { return std::string(i.param.name); });

// Over every window of sum(weights) picks, each server gets exactly its weight.
TEST(RoundRobin, FairOverEveryFullRound) {
    const std::vector<uint32_t> w = {3, 1, 4, 1, 5};
    const std::string seq = sequence(views(w), 14 * 20);
    for (size_t round = 0; round < 20; ++round) {
        std::map<char, uint32_t> n;
        for (char ch : seq.substr(round * 14, 14)) ++n[ch];
        for (size_t s = 0; s < w.size(); ++s) EXPECT_EQ(n[static_cast<char>('a' + s)], w[s]);
    }
}

struct lc_case {
    const char *name;
    std::vector<server_view> servers;
    size_t start;
    int expect;
};

class LeastConn : public testing::TestWithParam<lc_case> {};

TEST_P(LeastConn, Picks) {
    const lc_case &c = GetParam();
    EXPECT_EQ(pick_least_conn(c.servers, c.start), c.expect);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LeastConn,
    testing::Values(
        lc_case{"fewest_busy", {{1, true, 3}, {1, true, 1}, {1, true, 2}}, 0, 1},
        lc_case{"tie_goes_to_first_from_start", {{1, true, 2}, {1, true, 2}, {1, true, 2}}, 1, 1},
        lc_case{"tie_wraps_around", {{1, true, 2}, {1, true, 5}, {1, true, 2}}, 1, 2},
        lc_case{"tie_from_zero", {{1, true, 0}, {1, true, 0}}, 0, 0},
        // Per unit of weight: 4 busy on weight 4 beats 2 busy on weight 1.
        lc_case{"weighted", {{1, true, 2}, {4, true, 4}}, 0, 1},
        lc_case{"down_never", {{1, false, 0}, {1, true, 9}}, 0, 1},
        lc_case{"none_up", {{1, false, 0}, {1, false, 0}}, 0, -1}),
    [](const auto &i) { return std::string(i.param.name); });

std::vector<config::server_config> servers(uint32_t n) {
    std::vector<config::server_config> v;
    for (uint32_t i = 0; i < n; ++i) v.push_back({ip_address::v4(0x0a000100 + i), 8080, 1, {}});
    return v;
}

// Which server each of many keys maps to.
std::vector<int> mapping(const std::vector<config::server_config> &srv,
                         const std::vector<server_view> &v) {
    const hash_ring ring(srv);
    std::vector<int> out;
    for (uint32_t k = 0; k < 20000; ++k)
        out.push_back(ring.pick(hash_key(config::hash_key_kind::client_ip, k, "", ""), v));
    return out;
}

TEST(ConsistentHash, RemovingAServerMovesOnlyItsKeys) {
    const auto srv = servers(10);
    auto v = views(std::vector<uint32_t>(10, 1));
    const auto before = mapping(srv, v);
    v[3].up = false;  // server 3 goes down
    const auto after = mapping(srv, v);
    size_t moved = 0, of3 = 0;
    for (size_t i = 0; i < before.size(); ++i) {
        of3 += before[i] == 3;
        if (before[i] != after[i]) {
            ++moved;
            EXPECT_EQ(before[i], 3) << "key " << i << " moved off a server that stayed up";
        }
        EXPECT_NE(after[i], 3);
    }
    EXPECT_EQ(moved, of3);
    // About a tenth of the keys (64 points per server spread them).
    EXPECT_GT(moved, before.size() / 20);
    EXPECT_LT(moved, before.size() / 5);
}

TEST(ConsistentHash, AddingAServerMovesAboutOneNthOfTheKeysAndOnlyToIt) {
    const auto before = mapping(servers(10), views(std::vector<uint32_t>(10, 1)));
    const auto after = mapping(servers(11), views(std::vector<uint32_t>(11, 1)));
    size_t moved = 0;
    for (size_t i = 0; i < before.size(); ++i)
        if (before[i] != after[i]) {
            ++moved;
            EXPECT_EQ(after[i], 10) << "key " << i << " moved between old servers";
        }
    EXPECT_GT(moved, before.size() / 22);  // ~1/11
    EXPECT_LT(moved, before.size() / 6);
}

TEST(ConsistentHash, WeightScalesTheShareAndNoneUpIsMinusOne) {
    auto srv = servers(2);
    srv[1].weight = 3;
    const hash_ring ring(srv);
    EXPECT_EQ(ring.points(), 4u * hash_ring::points_per_weight);
    auto v = views({1, 3});
    size_t n1 = 0;
    for (uint32_t k = 0; k < 20000; ++k)
        n1 += ring.pick(hash_key(config::hash_key_kind::uri, 0, "/k" + std::to_string(k), ""), v) == 1;
    EXPECT_GT(n1, 20000u * 6 / 10);  // ~3/4
    EXPECT_LT(n1, 20000u * 9 / 10);
    v[0].up = v[1].up = false;
    EXPECT_EQ(ring.pick(42, v), -1);
}

TEST(ConsistentHash, HostKeysIgnoreCase) {
    EXPECT_EQ(hash_key(config::hash_key_kind::host, 1, "/a", "Example.COM"),
              hash_key(config::hash_key_kind::host, 2, "/b", "example.com"));
    EXPECT_NE(hash_key(config::hash_key_kind::uri, 1, "/A", ""),
              hash_key(config::hash_key_kind::uri, 1, "/a", ""));
}

struct route_case {
    const char *name;
    int listener;
    const char *host;
    const char *path;
    int expect;
};

class Routing : public testing::TestWithParam<route_case> {
protected:
    static std::vector<config::route_config> routes() {
        std::vector<config::route_config> r(5);
        r[0].host = "api.example.com";
        r[0].path_prefix = "/v1/";
        r[0].upstream_index = 1;
        r[1].host = ".example.com";
        r[1].host_wildcard = true;
        r[1].upstream_index = 2;
        r[2].listener_index = 1;  // only on listener 1
        r[2].path_prefix = "/admin";
        r[2].upstream_index = 3;
        r[3].host = "static.test";
        r[3].upstream_index = 4;
        r[4].path_prefix = "/img/";
        r[4].upstream_index = 5;
        return r;
    }
};

TEST_P(Routing, FirstMatchInFileOrder) {
    const route_case &c = GetParam();
    config::listener_config l;
    l.default_upstream_index = c.listener == 0 ? 0 : -1;
    EXPECT_EQ(route_request(routes(), l, c.listener, host_without_port(c.host), c.path), c.expect);
}

INSTANTIATE_TEST_SUITE_P(
    Table, Routing,
    testing::Values(route_case{"exact_host_and_prefix", 0, "api.example.com", "/v1/x", 1},
                    route_case{"exact_host_case_and_port", 0, "API.Example.com:8443", "/v1/", 1},
                    route_case{"prefix_miss_falls_to_wildcard", 0, "api.example.com", "/v2", 2},
                    route_case{"wildcard_suffix", 0, "www.example.com", "/", 2},
                    route_case{"wildcard_needs_a_label", 0, "example.com", "/", 0},
                    route_case{"listener_specific", 1, "x.test", "/admin/a", 3},
                    route_case{"listener_specific_elsewhere", 0, "x.test", "/admin/a", 0},
                    route_case{"host_exact_only", 0, "static.test.evil", "/", 0},
                    route_case{"any_host_prefix", 0, "whatever", "/img/a.png", 5},
                    route_case{"default", 0, "other", "/", 0},
                    route_case{"no_default_404", 1, "other", "/", -1},
                    route_case{"ipv6_literal_keeps_port_part", 0, "[::1]:80", "/", 0}),
    [](const auto &i) { return std::string(i.param.name); });

TEST(Routing, HostWithoutPort) {
    EXPECT_EQ(host_without_port("a.b:80"), "a.b");
    EXPECT_EQ(host_without_port("a.b"), "a.b");
    EXPECT_EQ(host_without_port("[::1]:80"), "[::1]:80");
    EXPECT_EQ(host_without_port(""), "");
}

}  // namespace
}  // namespace ferry::proxy
