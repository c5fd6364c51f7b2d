// An IPv4 or an IPv6 address in one value type, for every layer: the
// configuration's upstream servers, telemetry, the access log, and (as
// lib/net's ip_addr, which adds the wire types) a TCP connection's tuple.
//
// Read first: RFC 4291 §2.5.5.2 (the IPv4-mapped form ::ffff:a.b.c.d, used
// here as the in-memory form of an IPv4 address, never on the wire), RFC
// 5952 §4 (text), RFC 3986 §3.2.2 (an IPv6 address in a host:port is
// bracketed: "[fd00::2]:80").
//
// Held as 16 bytes in network order; an IPv4 address as IPv4-mapped, so
// equality, ordering and hashing need no family tag, and put() gives a hash
// the 4 bytes of an IPv4 address as before. The default value is 0.0.0.0.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ferry/base/ipv6_text.h"

namespace ferry {

class ip_address {
public:
    // The longest text forms: an IPv6 address; "[" address "]:" port.
    static constexpr std::size_t text_max = ipv6_text_max;
    static constexpr std::size_t endpoint_text_max = ipv6_text_max + 8;

    constexpr ip_address() noexcept { b_[10] = b_[11] = 0xff; }
    [[nodiscard]] static constexpr ip_address v4(uint32_t host_order) noexcept {
        ip_address a;
        a.b_[12] = static_cast<uint8_t>(host_order >> 24);
        a.b_[13] = static_cast<uint8_t>(host_order >> 16);
        a.b_[14] = static_cast<uint8_t>(host_order >> 8);
        a.b_[15] = static_cast<uint8_t>(host_order);
        return a;
    }
    // An IPv4-mapped address here is that IPv4 address.
    [[nodiscard]] static constexpr ip_address v6(const ipv6_bytes &b) noexcept {
        ip_address a;
        a.b_ = b;
        return a;
    }

    [[nodiscard]] constexpr bool is_v4() const noexcept {
        for (std::size_t i = 0; i < 10; ++i)
            if (b_[i] != 0) return false;
        return b_[10] == 0xff && b_[11] == 0xff;
    }
    [[nodiscard]] constexpr bool is_v6() const noexcept { return !is_v4(); }
    // The IPv4 address in host byte order (meaningful when is_v4()).
    [[nodiscard]] constexpr uint32_t v4_value() const noexcept {
        return (uint32_t{b_[12]} << 24) | (uint32_t{b_[13]} << 16) | (uint32_t{b_[14]} << 8) |
               b_[15];
    }
    [[nodiscard]] constexpr const ipv6_bytes &bytes() const noexcept { return b_; }
    // A 32-bit digest: the IPv4 address itself, or the XOR of an IPv6
    // address's four words (flow steering, balancing by address).
    [[nodiscard]] constexpr uint32_t fold() const noexcept {
        if (is_v4()) return v4_value();
        uint32_t x = 0;
        for (std::size_t i = 0; i < 16; i += 4)
            x ^= (uint32_t{b_[i]} << 24) | (uint32_t{b_[i + 1]} << 16) |
                 (uint32_t{b_[i + 2]} << 8) | b_[i + 3];
        return x;
    }
    // Writes the address as a hash reads it: 4 bytes for IPv4, 16 for IPv6
    // (network order); returns how many.
    constexpr std::size_t put(uint8_t *out) const noexcept {
        const std::size_t from = is_v4() ? 12 : 0;
        for (std::size_t i = from; i < 16; ++i) out[i - from] = b_[i];
        return 16 - from;
    }
    // Dotted quad or RFC 5952 text into `out`, no terminator; returns the
    // length. Allocation-free (hot paths).
    std::size_t format(std::span<char, text_max> out) const noexcept;
    // "a.b.c.d:port" or "[v6]:port" (a Host field, a log line), the same way.
    std::size_t format_endpoint(uint16_t port,
                                std::span<char, endpoint_text_max> out) const noexcept;
    // The same as strings. Control path only.
    [[nodiscard]] std::string to_string() const;
    [[nodiscard]] std::string endpoint_string(uint16_t port) const;

    friend constexpr auto operator<=>(const ip_address &, const ip_address &) noexcept = default;

private:
    ipv6_bytes b_{};
};

}  // namespace ferry
