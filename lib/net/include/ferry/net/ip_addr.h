// An IPv4 or an IPv6 address in one value type for lib/net: ferry's
// ip_address (ferry/base/ip_address.h: 16 bytes, IPv4 as IPv4-mapped) with
// the wire types' conversions. What serves both families alike holds one: a
// TCP connection's tuple, the neighbour cache, a client's address.
#pragma once

#include "ferry/base/ip_address.h"
#include "ferry/net/addr.h"
#include "ferry/net/ipv6.h"

namespace ferry::net {

class ip_addr : public ferry::ip_address {
public:
    constexpr ip_addr() noexcept = default;
    // Implicit: an IPv4 or IPv6 address, or the configuration's form, is an ip_addr.
    constexpr ip_addr(const ferry::ip_address &a) noexcept  // NOLINT(google-explicit-constructor)
        : ferry::ip_address(a) {}
    constexpr ip_addr(ipv4_addr a) noexcept  // NOLINT(google-explicit-constructor)
        : ferry::ip_address(ferry::ip_address::v4(a.value())) {}
    constexpr ip_addr(const ipv6_addr &a) noexcept  // NOLINT(google-explicit-constructor)
        : ferry::ip_address(ferry::ip_address::v6(a.bytes())) {}

    // The IPv4 address (meaningful when is_v4()).
    [[nodiscard]] constexpr ipv4_addr v4() const noexcept { return ipv4_addr(v4_value()); }
    // The IPv6 address (meaningful when is_v6()).
    [[nodiscard]] constexpr ipv6_addr v6() const noexcept { return ipv6_addr(bytes()); }

    // Here, so that an ipv4_addr or ipv6_addr converts to compare.
    friend constexpr bool operator==(const ip_addr &a, const ip_addr &b) noexcept {
        return a.bytes() == b.bytes();
    }
    friend constexpr auto operator<=>(const ip_addr &a, const ip_addr &b) noexcept {
        return a.bytes() <=> b.bytes();
    }
};

}  // namespace ferry::net
