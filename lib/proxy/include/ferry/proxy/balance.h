// Routing and load balancing as pure functions over a snapshot: no clock, no
// connections, no counters, so each is table-tested alone
// (tests/unit/proxy/balance_test.cpp).
//
// Routing: [[route]] entries in file order, first match wins (host: exact or
// "*."-wildcard suffix, case-insensitive, port stripped; path: prefix of the
// origin-form target); no match -> the listener's default upstream.
//
// Balancers (per upstream, per lcore):
//   round_robin      nginx's smooth weighted round robin: each pick adds every
//                    up server's weight to its running score, takes the
//                    highest (first on ties) and subtracts the total from it.
//                    Over sum(weights) picks each server is chosen exactly
//                    `weight` times, interleaved ({5,1,1} -> a a b a c a a).
//   least_conn       the up server with the fewest requests in flight per unit
//                    of weight; ties go to the first from `start` on (the
//                    caller rotates it, so ties spread).
//   consistent_hash  a ring of 64 points per unit of weight, placed by a hash
//                    of the server's address:port (ketama-like); a key maps to
//                    the first point at or after it whose server is up.
//                    Adding or removing a server moves only the keys of the
//                    points it gains or loses (about 1/n of them).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/config/config.h"

namespace ferry::proxy {

// ASCII case-insensitive equality (host names).
[[nodiscard]] bool iequals(std::string_view a, std::string_view b) noexcept;

// The host of a Host value without its port ("a.b:80" -> "a.b"; an IPv6
// literal "[::1]:80" is left as it is).
[[nodiscard]] std::string_view host_without_port(std::string_view host) noexcept;

// The upstream index a request goes to, or -1 (no route and no default:
// 404). `host` without its port; `path` the origin-form target. `route`
// (optional) gets the index of the route that matched, route_default when
// the listener's default_upstream took it, route_none when nothing did.
inline constexpr int route_default = -1, route_none = -2;
[[nodiscard]] int route_request(std::span<const config::route_config> routes,
                                const config::listener_config &listener, int listener_index,
                                std::string_view host, std::string_view path,
                                int *route = nullptr) noexcept;

// One server of an upstream as a balancer sees it now.
struct server_view {
    uint32_t weight = 1;  // >= 1
    bool up = true;       // not marked down by health checks
    uint32_t busy = 0;    // requests in flight on this lcore
};

// Smooth weighted round robin. `current` is the upstream's running score per
// server (state kept between calls, zero at start). -1 if no server is up.
[[nodiscard]] int pick_round_robin(std::span<const server_view> servers,
                                   std::span<int64_t> current) noexcept;

// Least requests in flight per unit of weight; ties: the first from `start`
// (mod n) on. -1 if no server is up.
[[nodiscard]] int pick_least_conn(std::span<const server_view> servers, size_t start) noexcept;

// The consistent-hash ring of one upstream.
class hash_ring {
public:
    static constexpr uint32_t points_per_weight = 64;
    hash_ring() = default;
    explicit hash_ring(std::span<const config::server_config> servers);
    // The server for `key` (first point >= key going round, whose server is
    // up), -1 if none is up.
    [[nodiscard]] int pick(uint64_t key, std::span<const server_view> servers) const noexcept;
    [[nodiscard]] size_t points() const noexcept { return points_.size(); }

private:
    std::vector<std::pair<uint64_t, uint32_t>> points_;  // sorted: point, server
};

// The hash key of a request for consistent_hash (a 64-bit mix of the client
// address, the target as received, or the lowercased host).
[[nodiscard]] uint64_t hash_key(config::hash_key_kind kind, uint32_t client_addr,
                                std::string_view target, std::string_view host) noexcept;

}  // namespace ferry::proxy
