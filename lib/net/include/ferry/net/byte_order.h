// Big-endian ("network byte order", RFC 1700) loads and stores on raw bytes.
//
// The wire views never cast a buffer to a packed struct: a byte-wise load is
// alignment-safe, has no strict-aliasing hazard, and compiles to a single
// mov + bswap on x86.
#pragma once

#include <cstdint>

namespace ferry::net::wire {

[[nodiscard]] constexpr uint16_t load_be16(const uint8_t *p) noexcept {
    return static_cast<uint16_t>((uint16_t{p[0]} << 8) | p[1]);
}

[[nodiscard]] constexpr uint32_t load_be32(const uint8_t *p) noexcept {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

constexpr void store_be16(uint8_t *p, uint16_t v) noexcept {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

constexpr void store_be32(uint8_t *p, uint32_t v) noexcept {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

}  // namespace ferry::net::wire
