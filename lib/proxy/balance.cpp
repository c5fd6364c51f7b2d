#include "ferry/proxy/balance.h"

#include <algorithm>

namespace ferry::proxy {
namespace {

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

uint64_t fnv1a(std::string_view s, bool fold) noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h ^= static_cast<uint8_t>(fold ? lower(c) : c);
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t mix64(uint64_t x) noexcept {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view host_without_port(std::string_view host) noexcept {
    const auto colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(']') == std::string_view::npos)
        return host.substr(0, colon);
    return host;
}

int route_request(std::span<const config::route_config> routes,
                  const config::listener_config &listener, int listener_index,
                  std::string_view host, std::string_view path, int *route) noexcept {
    for (size_t i = 0; i < routes.size(); ++i) {
        const auto &rt = routes[i];
        if (rt.listener_index >= 0 && rt.listener_index != listener_index) continue;
        if (!rt.host.empty()) {
            if (rt.host_wildcard) {
                // rt.host is ".suffix": the name must be longer than it.
                if (host.size() <= rt.host.size() ||
                    !iequals(host.substr(host.size() - rt.host.size()), rt.host))
                    continue;
            } else if (!iequals(host, rt.host)) {
                continue;
            }
        }
        if (path.substr(0, rt.path_prefix.size()) != rt.path_prefix) continue;
        if (route != nullptr) *route = static_cast<int>(i);
        return rt.upstream_index;
    }
    if (route != nullptr)
        *route = listener.default_upstream_index >= 0 ? route_default : route_none;
    return listener.default_upstream_index;
}

int pick_round_robin(std::span<const server_view> servers, std::span<int64_t> current) noexcept {
    int best = -1;
    int64_t total = 0;
    for (size_t s = 0; s < servers.size(); ++s) {
        if (!servers[s].up) continue;
        current[s] += servers[s].weight;
        total += servers[s].weight;
        if (best < 0 || current[s] > current[static_cast<size_t>(best)]) best = static_cast<int>(s);
    }
    if (best >= 0) current[static_cast<size_t>(best)] -= total;
    return best;
}

int pick_least_conn(std::span<const server_view> servers, size_t start) noexcept {
    const size_t n = servers.size();
    int best = -1;
    uint64_t best_load = UINT64_MAX;
    for (size_t k = 0; k < n; ++k) {
        const size_t s = (start + k) % n;
        if (!servers[s].up) continue;
        const uint64_t load = uint64_t(servers[s].busy) * 1000 / servers[s].weight;
        if (load < best_load) {
            best_load = load;
            best = static_cast<int>(s);
        }
    }
    return best;
}

hash_ring::hash_ring(std::span<const config::server_config> servers) {
    for (uint32_t s = 0; s < servers.size(); ++s)
        for (uint32_t k = 0; k < points_per_weight * servers[s].weight; ++k)
            points_.emplace_back(
                mix64((uint64_t(servers[s].addr.fold()) << 16 | servers[s].port) * 1315423911u + k), s);
    std::sort(points_.begin(), points_.end());
}

int hash_ring::pick(uint64_t key, std::span<const server_view> servers) const noexcept {
    auto it = std::lower_bound(points_.begin(), points_.end(), std::make_pair(key, uint32_t{0}));
    for (size_t k = 0; k < points_.size(); ++k, ++it) {
        if (it == points_.end()) it = points_.begin();
        if (servers[it->second].up) return static_cast<int>(it->second);
    }
    return -1;
}

uint64_t hash_key(config::hash_key_kind kind, uint32_t client_addr, std::string_view target,
                  std::string_view host) noexcept {
    switch (kind) {
        case config::hash_key_kind::client_ip:
            return mix64(client_addr);
        case config::hash_key_kind::uri:
            return mix64(fnv1a(target, false));
        case config::hash_key_kind::host:
            return mix64(fnv1a(host, true));
    }
    return 0;
}

}  // namespace ferry::proxy
