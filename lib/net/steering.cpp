#include "ferry/net/steering.h"

#include "ferry/net/byte_order.h"

namespace ferry::net {

// Mirrors the eBPF program in tap_steering.cpp check for check. There, a load
// past the end of the frame ends the program with 0, like a failed check here;
// so the order of the length checks does not matter, only that every field
// the program reads is inside the frame.
uint32_t frame_steer_hash(std::span<const uint8_t> frame) noexcept {
    constexpr std::size_t eth_len = 14;
    const uint8_t *p = frame.data();
    const std::size_t n = frame.size();

    // EtherType: IPv4 only (RFC 894). A VLAN tag in the data makes it 0x8100.
    if (n < eth_len || wire::load_be16(p + 12) != 0x0800) {
        return 0;
    }
    // RFC 791 §3.1: version 4, IHL in 32-bit words, at least 5.
    if (n < eth_len + 1) {
        return 0;
    }
    const unsigned version = p[eth_len] >> 4;
    const std::size_t ihl = p[eth_len] & 0x0f;
    if (version != 4 || ihl < 5) {
        return 0;
    }
    // Flags and fragment offset: MF (0x2000) or a non-zero offset (0x1fff)
    // is a fragment; DF (0x4000) is not.
    if (n < eth_len + 8 || (wire::load_be16(p + eth_len + 6) & 0x3fff) != 0) {
        return 0;
    }
    if (n < eth_len + 10) {
        return 0;
    }
    const uint8_t proto = p[eth_len + 9];
    if (proto != 6 && proto != 17) {
        return 0;
    }
    // Source and destination ports are the first 4 bytes of both TCP (RFC 9293
    // §3.1) and UDP (RFC 768) headers, right after the IP header and options.
    const std::size_t l4 = eth_len + 4 * ihl;
    if (n < l4 + 4) {
        return 0;
    }
    const uint32_t src = wire::load_be32(p + eth_len + 12);
    const uint32_t dst = wire::load_be32(p + eth_len + 16);
    return flow_steer_hash(src, wire::load_be16(p + l4), dst, wire::load_be16(p + l4 + 2));
}

}  // namespace ferry::net
