// Helpers shared by the lib/net unit tests: byte vectors, a reference RFC 1071
// checksum written independently of the one under test, frame builders.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::net::test {

using bytes = std::vector<uint8_t>;

inline bytes concat(std::initializer_list<bytes> parts) {
    bytes out;
    for (const bytes &p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

template <std::size_t N>
bytes to_bytes(const uint8_t (&a)[N]) {
    return bytes(a, a + N);
}

// The textbook 16-bit-at-a-time loop (RFC 1071 §4.1), kept deliberately
// different from internet_checksum's 32-bit deferred-carry implementation.
inline uint16_t ref_checksum(std::span<const uint8_t> b) {
    uint32_t sum = 0;
    std::size_t i = 0;
    for (; i + 1 < b.size(); i += 2) {
        sum += static_cast<uint32_t>(b[i] << 8 | b[i + 1]);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if (i < b.size()) {
        sum += static_cast<uint32_t>(b[i] << 8);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum & 0xffff);
}

// Test-case structs print as their name in gtest messages instead of a byte
// dump. Found by ADL through a `using test::PrintTo;` next to the cases.
template <class T>
requires requires(const T &t) {
    std::string_view(t.name);
}
void PrintTo(const T &c, std::ostream *os) {
    *os << c.name;
}

inline bytes from_string(std::string_view s) {
    return bytes(s.begin(), s.end());
}

inline void put16(bytes &b, std::size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}

inline std::string hex(std::span<const uint8_t> b) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i > 0 && i % 16 == 0) {
            s += '\n';
        } else if (i > 0) {
            s += ' ';
        }
        s += digits[b[i] >> 4];
        s += digits[b[i] & 15];
    }
    return s;
}

inline const bytes our_mac{0x02, 0, 0, 0, 0, 0x01};
inline const bytes peer_mac{0x02, 0, 0, 0, 0, 0x02};
inline const bytes bcast_mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

inline bytes eth_header(const bytes &dst, const bytes &src, uint16_t type) {
    bytes h = concat({dst, src, bytes{0, 0}});
    put16(h, 12, type);
    return h;
}

// An ARP packet with every field settable (for malformed cases).
struct arp_spec {
    uint16_t htype = 1;
    uint16_t ptype = 0x0800;
    uint8_t hlen = 6;
    uint8_t plen = 4;
    uint16_t op = 1;
    bytes sha = peer_mac;
    bytes spa{10, 0, 0, 2};
    bytes tha{0, 0, 0, 0, 0, 0};
    bytes tpa{10, 0, 0, 1};
};

inline bytes build_arp(const arp_spec &s) {
    bytes b(8);
    put16(b, 0, s.htype);
    put16(b, 2, s.ptype);
    b[4] = s.hlen;
    b[5] = s.plen;
    put16(b, 6, s.op);
    return concat({b, s.sha, s.spa, s.tha, s.tpa});
}

// An IPv4 datagram with every field settable. The checksum is computed over
// the IHL-announced header (as far as the bytes exist) unless `checksum` is set.
struct ipv4_spec {
    uint8_t ver_ihl = 0x45;
    uint8_t tos = 0;
    std::optional<uint16_t> total_len;  // default: the real length
    uint16_t ident = 0x1234;
    uint16_t flags_frag = 0;
    uint8_t ttl = 64;
    uint8_t protocol = 1;
    bytes src{10, 0, 0, 2};
    bytes dst{10, 0, 0, 1};
    std::size_t options = 0;  // bytes of NOP options (type 1)
    bytes payload = bytes(8, 0xaa);
    std::size_t padding = 0;  // trailing bytes beyond the total length
    std::optional<uint16_t> checksum;
};

inline bytes build_ipv4(const ipv4_spec &s) {
    bytes b(12);
    b[0] = s.ver_ihl;
    b[1] = s.tos;
    const std::size_t real = 20 + s.options + s.payload.size();
    put16(b, 2, s.total_len.value_or(static_cast<uint16_t>(real)));
    put16(b, 4, s.ident);
    put16(b, 6, s.flags_frag);
    b[8] = s.ttl;
    b[9] = s.protocol;
    // b[10..11]: checksum, filled below.
    b = concat({b, s.src, s.dst, bytes(s.options, 0x01)});
    const std::size_t hlen = std::min<std::size_t>((s.ver_ihl & 0x0f) * 4u, b.size());
    put16(b, 10, s.checksum.value_or(ref_checksum(std::span(b).first(hlen))));
    return concat({b, s.payload, bytes(s.padding, 0)});
}

// An ICMP echo message; the checksum is right unless `checksum` is set.
struct icmp_spec {
    uint8_t type = 8;
    uint8_t code = 0;
    uint16_t ident = 0x4242;
    uint16_t seq = 1;
    // From a string: GCC 12 warns falsely (-Wuninitialized) on an
    // initializer_list member initializer here.
    bytes data = from_string("ferry!");
    std::optional<uint16_t> checksum;
};

inline bytes build_icmp(const icmp_spec &s) {
    bytes b(8);
    b[0] = s.type;
    b[1] = s.code;
    put16(b, 4, s.ident);
    put16(b, 6, s.seq);
    b = concat({b, s.data});
    put16(b, 2, s.checksum.value_or(ref_checksum(b)));
    return b;
}

}  // namespace ferry::net::test
