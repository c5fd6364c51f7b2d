// The Internet checksum: 16-bit one's complement of the one's complement sum.
//
// Read first: RFC 1071 (computation, byte-order independence, deferred carries),
// RFC 1624 (incremental update; eqn. 3 is the one that is right for -0).
//
// Values are host-order integers that stand for the big-endian 16-bit field on
// the wire: store them with wire::store_be16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ferry::net {

// Accumulates data given in pieces (for instance the segments of an mbuf
// chain); pieces may have odd lengths, the bytes are summed as one stream.
class internet_checksum {
public:
    void add(std::span<const uint8_t> data) noexcept;
    // Adds a 16-bit word that sits at an even offset of the message, wherever
    // the byte stream added so far ends (the sum is commutative over aligned
    // words). For fields kept out of the stream, e.g. a header word that changes.
    void add_word(uint16_t w) noexcept { sum_ += w; }

    // The one's complement sum folded to 16 bits (RFC 1071 §4.1 "fold 32-bit
    // sum to 16 bits"). A message that carries a correct checksum folds to 0xffff.
    [[nodiscard]] uint16_t fold() const noexcept;
    // The value for the checksum field: ~fold().
    [[nodiscard]] uint16_t finish() const noexcept { return static_cast<uint16_t>(~fold()); }

private:
    // 32-bit big-endian words are added into 64 bits and folded at the end
    // (RFC 1071 §2(C) "deferred carries"): 2^16 == 1 mod 0xffff, so a 32-bit
    // word contributes the same as its two 16-bit halves.
    uint64_t sum_ = 0;
    // An odd number of bytes has been added: the next byte is a low-order byte.
    bool odd_ = false;
};

// Checksum field value for a contiguous message whose checksum field is zero.
[[nodiscard]] inline uint16_t checksum(std::span<const uint8_t> data) noexcept {
    internet_checksum c;
    c.add(data);
    return c.finish();
}

// True if a contiguous message that includes its checksum field verifies.
[[nodiscard]] inline bool checksum_ok(std::span<const uint8_t> data) noexcept {
    internet_checksum c;
    c.add(data);
    return c.fold() == 0xffff;
}

// RFC 1624 §3 eqn. 3: HC' = ~(~HC + ~m + m'), the new checksum field after the
// 16-bit word m of the covered data changed to m_new. It gives the value a full
// recomputation would, where RFC 1141's eqn. 2 can differ in the sign of zero;
// the unit tests check the match.
// Precondition: the covered data is not all zero after the change. RFC 1624
// §3 relies on "at least one non-zero field" (true of every IP header); for
// all-zero data eqn. 3 yields 0x0000 where 0xffff is right. A message that can
// be all zero (an ICMP echo reply with id 0, seq 0 and zero data) should keep
// the one's complement sum of its unchanged part instead (see the ICMP path
// in stack.cpp).
[[nodiscard]] constexpr uint16_t checksum_update16(uint16_t hc, uint16_t m,
                                                   uint16_t m_new) noexcept {
    uint32_t s =
        static_cast<uint32_t>(static_cast<uint16_t>(~hc)) + static_cast<uint16_t>(~m) + m_new;
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return static_cast<uint16_t>(~s);
}

// The same for a 32-bit field (an IPv4 address): two 16-bit updates.
[[nodiscard]] constexpr uint16_t checksum_update32(uint16_t hc, uint32_t m,
                                                   uint32_t m_new) noexcept {
    hc = checksum_update16(hc, static_cast<uint16_t>(m >> 16), static_cast<uint16_t>(m_new >> 16));
    return checksum_update16(hc, static_cast<uint16_t>(m), static_cast<uint16_t>(m_new));
}

}  // namespace ferry::net
