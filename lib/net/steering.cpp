#include "ferry/net/steering.h"

#include "ferry/net/byte_order.h"

namespace ferry::net {
namespace {

constexpr std::size_t eth_len = 14;

// Both take the frame with its EtherType already checked, n >= eth_len.

uint32_t ipv4_steer_hash(const uint8_t *p, std::size_t n) noexcept {
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

// An address as ip_address::fold() digests it: the XOR of its four
// big-endian words.
uint32_t fold_ipv6(const uint8_t *a) noexcept {
    return wire::load_be32(a) ^ wire::load_be32(a + 4) ^ wire::load_be32(a + 8) ^
           wire::load_be32(a + 12);
}

uint32_t ipv6_steer_hash(const uint8_t *p, std::size_t n) noexcept {
    // RFC 8200 §3: a fixed 40-byte header, version 6 in the high nibble of
    // its first byte, Next Header at 6, the addresses at 8 and 24. Every
    // field read lies in the first 40 + 4 bytes, the ports last: a shorter
    // frame is 0 whatever its bytes, as the program's port load ends it.
    constexpr std::size_t ip6_len = 40;
    const std::size_t l4 = eth_len + ip6_len;
    if (n < l4 + 4 || p[eth_len] >> 4 != 6) {
        return 0;
    }
    // TCP or UDP right after the fixed header. Behind extension headers (RFC
    // 8200 §4: a chain to walk, which a forward-only program cannot) the
    // ports are not at a fixed offset: such frames are 0 like IPv4 fragments.
    const uint8_t next = p[eth_len + 6];
    if (next != 6 && next != 17) {
        return 0;
    }
    // ip_address::fold, as flow_steer_hash(const tcp_tuple &) applies it.
    // (It would give an IPv4-mapped address's IPv4 value instead, but those
    // never appear on the wire, RFC 4291 §2.5.5.2, and ferry drops them.)
    const uint32_t src = fold_ipv6(p + eth_len + 8);
    const uint32_t dst = fold_ipv6(p + eth_len + 24);
    return flow_steer_hash(src, wire::load_be16(p + l4), dst, wire::load_be16(p + l4 + 2));
}

}  // namespace

// Mirrors the eBPF program in tap_steering.cpp check for check. There, a load
// past the end of the frame ends the program with 0, like a failed check here;
// so the order of the length checks does not matter, only that every field
// the program reads is inside the frame.
uint32_t frame_steer_hash(std::span<const uint8_t> frame) noexcept {
    const uint8_t *p = frame.data();
    const std::size_t n = frame.size();
    if (n < eth_len) {
        return 0;
    }
    // EtherType: IPv4 (RFC 894) or IPv6 (RFC 2464 §3). A VLAN tag in the data
    // makes it 0x8100.
    switch (wire::load_be16(p + 12)) {
        case 0x0800:
            return ipv4_steer_hash(p, n);
        case 0x86dd:
            return ipv6_steer_hash(p, n);
        default:
            return 0;
    }
}

}  // namespace ferry::net
