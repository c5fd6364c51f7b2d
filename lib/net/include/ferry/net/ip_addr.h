// An IPv4 or an IPv6 address in one value type, for what serves both
// families alike: a TCP connection's tuple, its peer in the access log.
//
// Read first: RFC 4291 §2.5.5.2 (the IPv4-mapped form ::ffff:a.b.c.d, used
// here as the in-memory form of an IPv4 address, never on the wire).
//
// Held as 16 bytes in network order; an IPv4 address as IPv4-mapped, so
// equality, ordering and hashing need no family tag and an IPv4 tuple hashes
// the same 4-byte addresses as before (put(), the bytes a hash reads). The
// default value is 0.0.0.0 (IPv4, unspecified), as ipv4_addr's.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ferry/net/addr.h"
#include "ferry/net/ipv6.h"

namespace ferry::net {

class ip_addr {
public:
    // The longest text form: an IPv6 address (ferry/base/ipv6_text.h).
    static constexpr std::size_t text_max = 39;

    constexpr ip_addr() noexcept : ip_addr(ipv4_addr{}) {}
    // Implicit: an IPv4 or IPv6 address is an ip_addr.
    constexpr ip_addr(ipv4_addr a) noexcept {  // NOLINT(google-explicit-constructor)
        b_[10] = b_[11] = 0xff;
        const uint32_t v = a.value();
        b_[12] = static_cast<uint8_t>(v >> 24);
        b_[13] = static_cast<uint8_t>(v >> 16);
        b_[14] = static_cast<uint8_t>(v >> 8);
        b_[15] = static_cast<uint8_t>(v);
    }
    constexpr ip_addr(const ipv6_addr &a) noexcept  // NOLINT(google-explicit-constructor)
        : b_(a.bytes()) {}

    [[nodiscard]] constexpr bool is_v4() const noexcept {
        for (std::size_t i = 0; i < 10; ++i)
            if (b_[i] != 0) return false;
        return b_[10] == 0xff && b_[11] == 0xff;
    }
    [[nodiscard]] constexpr bool is_v6() const noexcept { return !is_v4(); }
    // The IPv4 address (meaningful when is_v4()).
    [[nodiscard]] constexpr ipv4_addr v4() const noexcept {
        return ipv4_addr((uint32_t{b_[12]} << 24) | (uint32_t{b_[13]} << 16) |
                         (uint32_t{b_[14]} << 8) | b_[15]);
    }
    // The IPv6 address (meaningful when is_v6()).
    [[nodiscard]] constexpr ipv6_addr v6() const noexcept { return ipv6_addr(b_); }
    [[nodiscard]] constexpr const std::array<uint8_t, 16> &bytes() const noexcept { return b_; }
    // A 32-bit digest of the address: the IPv4 address itself, or the XOR of
    // an IPv6 address's four words (flow steering, balancing by source).
    [[nodiscard]] constexpr uint32_t fold() const noexcept {
        if (is_v4()) return v4().value();
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
    // The same as a string. Control path only.
    [[nodiscard]] std::string to_string() const;

    friend constexpr auto operator<=>(const ip_addr &, const ip_addr &) noexcept = default;

private:
    std::array<uint8_t, 16> b_{};
};

}  // namespace ferry::net
