// SipHash-2-4, the keyed hash behind the TCP initial sequence numbers
// (tcp_isn.h) and SYN cookies (tcp_syncookie.h).
//
// Read first: J.-P. Aumasson, D. J. Bernstein, "SipHash: a fast short-input
// PRF" (2012), §2 (the algorithm: initialization, compression, finalization),
// Appendix A (the worked example and the test vectors the unit test checks).
//
// Written from the paper's description. It lives in lib/net under a tcp_ name
// because TCP is its only user; constexpr so that a key and its outputs can be
// checked at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ferry::net {

// The 128-bit key as two 64-bit words: k0 is key bytes 0..7 read little-endian,
// k1 bytes 8..15 (paper §2: "k0 and k1 ... little-endian").
struct siphash_key {
    uint64_t k0 = 0;
    uint64_t k1 = 0;

    [[nodiscard]] static constexpr siphash_key from_bytes(std::span<const uint8_t, 16> b) noexcept {
        siphash_key k;
        for (std::size_t i = 0; i < 8; ++i) {
            k.k0 |= uint64_t{b[i]} << (8 * i);
            k.k1 |= uint64_t{b[8 + i]} << (8 * i);
        }
        return k;
    }

    friend constexpr bool operator==(const siphash_key &, const siphash_key &) noexcept = default;
};

namespace detail {

[[nodiscard]] constexpr uint64_t rotl64(uint64_t x, int b) noexcept {
    return (x << b) | (x >> (64 - b));
}

// One SipRound (paper §2, "SipRound"): four additions, rotations and XORs.
constexpr void sip_round(uint64_t &v0, uint64_t &v1, uint64_t &v2, uint64_t &v3) noexcept {
    v0 += v1;
    v1 = rotl64(v1, 13);
    v1 ^= v0;
    v0 = rotl64(v0, 32);
    v2 += v3;
    v3 = rotl64(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl64(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl64(v1, 17);
    v1 ^= v2;
    v2 = rotl64(v2, 32);
}

}  // namespace detail

// SipHash-2-4 of `msg` under `key`: c = 2 rounds per message word, d = 4
// finalization rounds.
[[nodiscard]] constexpr uint64_t siphash24(const siphash_key &key,
                                           std::span<const uint8_t> msg) noexcept {
    // Initialization: the key XORed with "somepseudorandomlygeneratedbytes".
    uint64_t v0 = key.k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = key.k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = key.k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = key.k1 ^ 0x7465646279746573ULL;

    // Compression: the message as little-endian 64-bit words m_i; the last word
    // holds the remaining 0..7 bytes and, in its top byte, the length mod 256.
    const std::size_t n = msg.size();
    const std::size_t whole = n & ~std::size_t{7};
    for (std::size_t i = 0; i < whole; i += 8) {
        uint64_t m = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            m |= uint64_t{msg[i + j]} << (8 * j);
        }
        v3 ^= m;
        detail::sip_round(v0, v1, v2, v3);
        detail::sip_round(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
    for (std::size_t j = 0; whole + j < n; ++j) {
        last |= uint64_t{msg[whole + j]} << (8 * j);
    }
    v3 ^= last;
    detail::sip_round(v0, v1, v2, v3);
    detail::sip_round(v0, v1, v2, v3);
    v0 ^= last;

    // Finalization.
    v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) {
        detail::sip_round(v0, v1, v2, v3);
    }
    return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace ferry::net
