#include "ferry/net/checksum.h"

#include "ferry/net/byte_order.h"

namespace ferry::net {

void internet_checksum::add(std::span<const uint8_t> data) noexcept {
    const uint8_t *p = data.data();
    std::size_t n = data.size();
    if (n == 0) {
        return;
    }
    uint64_t s = sum_;
    if (odd_) {
        // The previous piece ended in the high byte of a word: this byte is its low half.
        s += p[0];
        ++p;
        --n;
        odd_ = false;
    }
    // At most 2^32 additions of values below 2^32 before the 64-bit sum could
    // overflow: no realistic message comes near.
    while (n >= 4) {
        s += wire::load_be32(p);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        s += wire::load_be16(p);
        p += 2;
        n -= 2;
    }
    if (n == 1) {
        // RFC 1071 §4.1: an odd trailing byte is padded with a zero low byte.
        s += uint64_t{p[0]} << 8;
        odd_ = true;
    }
    sum_ = s;
}

uint16_t internet_checksum::fold() const noexcept {
    uint64_t s = sum_;
    while ((s >> 16) != 0) {
        s = (s & 0xffff) + (s >> 16);
    }
    return static_cast<uint16_t>(s);
}

}  // namespace ferry::net
