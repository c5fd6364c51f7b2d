// IPv6 addresses as text, for every layer (lib/net's ipv6_addr, the
// configuration's addresses): RFC 4291 §2.2 forms 1 and 2 in, RFC 5952 §4's
// canonical form out. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ferry {

using ipv6_bytes = std::array<uint8_t, 16>;  // network order

// Whether the first `prefix_len` bits of `a` equal `net`'s (lengths above
// 128 count as 128): `a` lies in net/prefix_len.
[[nodiscard]] constexpr bool ipv6_in_prefix(const ipv6_bytes &a, const ipv6_bytes &net,
                                            unsigned prefix_len) noexcept {
    const unsigned bits = prefix_len > 128 ? 128 : prefix_len;
    for (unsigned i = 0; i < bits / 8; ++i)
        if (a[i] != net[i]) return false;
    if (bits % 8 == 0) return true;
    const auto mask = static_cast<uint8_t>(0xff00 >> (bits % 8));
    return (a[bits / 8] & mask) == (net[bits / 8] & mask);
}
// fe80::/10 (RFC 4291 §2.5.6).
[[nodiscard]] constexpr bool ipv6_is_link_local(const ipv6_bytes &a) noexcept {
    return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

// Eight groups of 1-4 hex digits separated by ':', one run of zero groups
// replaced by "::" (at most once); either case. Form 3 (a dotted IPv4 tail),
// zone indices ("%eth0") and a prefix length are refused: nullopt, as for
// anything else.
[[nodiscard]] std::optional<ipv6_bytes> parse_ipv6(std::string_view s) noexcept;
// "address/len", len 0..128 without leading zeros; the address as written.
[[nodiscard]] std::optional<std::pair<ipv6_bytes, uint8_t>> parse_ipv6_prefix(
    std::string_view s) noexcept;
// Lower case, no leading zeros, the longest run of two or more zero groups
// (the first of equal ones) as "::".
[[nodiscard]] std::string format_ipv6(const ipv6_bytes &a);
// The same into `out` without allocating (hot paths: the access log,
// X-Forwarded-For); returns the length written (no terminator).
inline constexpr std::size_t ipv6_text_max = 39;
std::size_t format_ipv6(const ipv6_bytes &a, std::span<char, ipv6_text_max> out) noexcept;

}  // namespace ferry
