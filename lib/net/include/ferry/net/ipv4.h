// IPv4 datagrams.
//
// Read first: RFC 791 §3.1 (header format), RFC 1122 §3.2.1 (what a host must
// check and discard), RFC 1071 (the header checksum), RFC 6864 (the ID field).
//
//   0       4       8               16      19                      31
//   |version|  IHL  |  DSCP/ECN     |          total length          |
//   |        identification         |flags|    fragment offset       |
//   |     TTL       |   protocol    |        header checksum         |
//   |                        source address                          |
//   |                     destination address                        |
//   |              options (IHL > 5), then the payload               |
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/byte_order.h"

namespace ferry::net {

enum class ip_protocol : uint8_t {
    icmp = 1,
    tcp = 6,
    udp = 17,
};

enum class ipv4_error : uint8_t {
    none = 0,
    truncated,     // fewer bytes than the 20-byte header, the IHL or the total length
    bad_version,   // version field != 4
    bad_ihl,       // IHL < 5
    bad_length,    // total length < IHL * 4
    bad_checksum,  // header checksum does not verify (RFC 1122 §3.2.1.2: MUST discard)
};

[[nodiscard]] constexpr const char *name(ipv4_error e) noexcept {
    switch (e) {
        case ipv4_error::none:
            return "none";
        case ipv4_error::truncated:
            return "truncated";
        case ipv4_error::bad_version:
            return "bad_version";
        case ipv4_error::bad_ihl:
            return "bad_ihl";
        case ipv4_error::bad_length:
            return "bad_length";
        case ipv4_error::bad_checksum:
            return "bad_checksum";
    }
    return "unknown";
}

// Zero-copy view of a datagram. Field accessors require check() == none.
//
// The span must hold the whole header; it may hold less than the whole datagram
// when the rest lives in further mbuf segments: `datagram_bytes` then says how
// many bytes of the datagram exist in total (from the first header byte to the
// end of the frame, trailing Ethernet padding included).
class ipv4_packet {
public:
    static constexpr std::size_t min_header_len = 20;
    static constexpr std::size_t max_header_len = 60;
    static constexpr uint16_t flag_df = 0x4000;
    static constexpr uint16_t flag_mf = 0x2000;
    static constexpr uint16_t frag_offset_mask = 0x1fff;

    explicit ipv4_packet(std::span<uint8_t> buf) noexcept
        : buf_(buf), datagram_bytes_(buf.size()) {}
    ipv4_packet(std::span<uint8_t> buf, std::size_t datagram_bytes) noexcept
        : buf_(buf), datagram_bytes_(std::max(datagram_bytes, buf.size())) {}

    // In order: truncated (< 20 bytes), bad_version, bad_ihl, bad_length
    // (total length < header length), truncated (header not all in the span, or
    // total length > datagram_bytes), bad_checksum. Bytes beyond the total
    // length are Ethernet padding (IEEE 802.3 minimum frame) and are ignored.
    // Options are not interpreted (RFC 1122 §3.2.1.8 lets a host ignore unknown ones).
    [[nodiscard]] ipv4_error check() const noexcept;
    [[nodiscard]] static std::optional<ipv4_packet> new_checked(std::span<uint8_t> buf) noexcept {
        ipv4_packet p(buf);
        if (p.check() != ipv4_error::none) {
            return std::nullopt;
        }
        return p;
    }

    [[nodiscard]] uint8_t version() const noexcept { return buf_[0] >> 4; }
    [[nodiscard]] uint8_t ihl() const noexcept { return buf_[0] & 0x0f; }  // 32-bit words
    [[nodiscard]] std::size_t header_len() const noexcept { return std::size_t{ihl()} * 4; }
    [[nodiscard]] uint8_t tos() const noexcept { return buf_[1]; }  // DSCP << 2 | ECN
    [[nodiscard]] uint16_t total_len() const noexcept { return wire::load_be16(buf_.data() + 2); }
    [[nodiscard]] uint16_t ident() const noexcept { return wire::load_be16(buf_.data() + 4); }
    [[nodiscard]] bool dont_fragment() const noexcept { return (flags_frag() & flag_df) != 0; }
    [[nodiscard]] bool more_fragments() const noexcept { return (flags_frag() & flag_mf) != 0; }
    // In bytes (the field counts 8-byte units).
    [[nodiscard]] uint16_t frag_offset() const noexcept {
        return static_cast<uint16_t>((flags_frag() & frag_offset_mask) * 8);
    }
    // A fragment has MF set or a non-zero offset (RFC 791 §3.2 "Fragmentation").
    [[nodiscard]] bool is_fragment() const noexcept {
        return (flags_frag() & (flag_mf | frag_offset_mask)) != 0;
    }
    [[nodiscard]] uint8_t ttl() const noexcept { return buf_[8]; }
    [[nodiscard]] uint8_t protocol() const noexcept { return buf_[9]; }
    [[nodiscard]] uint16_t header_checksum() const noexcept {
        return wire::load_be16(buf_.data() + 10);
    }
    [[nodiscard]] ipv4_addr src() const noexcept {
        return ipv4_addr::from_bytes(buf_.subspan<12, 4>());
    }
    [[nodiscard]] ipv4_addr dst() const noexcept {
        return ipv4_addr::from_bytes(buf_.subspan<16, 4>());
    }
    [[nodiscard]] std::span<uint8_t> options() const noexcept {
        return buf_.subspan(min_header_len, header_len() - min_header_len);
    }
    [[nodiscard]] std::span<uint8_t> header() const noexcept { return buf_.first(header_len()); }
    // The part of the payload that is in the span (all of it unless segmented),
    // padding excluded.
    [[nodiscard]] std::span<uint8_t> payload() const noexcept {
        const std::size_t end = std::min<std::size_t>(total_len(), buf_.size());
        return buf_.subspan(header_len(), end - header_len());
    }
    [[nodiscard]] bool verify_checksum() const noexcept;
    [[nodiscard]] std::span<uint8_t> buffer() const noexcept { return buf_; }
    [[nodiscard]] std::size_t datagram_bytes() const noexcept { return datagram_bytes_; }

    void set_version_ihl(uint8_t version, uint8_t ihl) noexcept {
        buf_[0] = static_cast<uint8_t>(version << 4 | (ihl & 0x0f));
    }
    void set_tos(uint8_t v) noexcept { buf_[1] = v; }
    void set_total_len(uint16_t v) noexcept { wire::store_be16(buf_.data() + 2, v); }
    void set_ident(uint16_t v) noexcept { wire::store_be16(buf_.data() + 4, v); }
    // `offset` in bytes, a multiple of 8.
    void set_flags_frag(bool df, bool mf, uint16_t offset) noexcept {
        wire::store_be16(buf_.data() + 6,
                         static_cast<uint16_t>((df ? flag_df : 0) | (mf ? flag_mf : 0) |
                                               ((offset / 8) & frag_offset_mask)));
    }
    void set_ttl(uint8_t v) noexcept { buf_[8] = v; }
    void set_protocol(uint8_t v) noexcept { buf_[9] = v; }
    void set_header_checksum(uint16_t v) noexcept { wire::store_be16(buf_.data() + 10, v); }
    void set_src(ipv4_addr a) noexcept { a.write(buf_.subspan<12, 4>()); }
    void set_dst(ipv4_addr a) noexcept { a.write(buf_.subspan<16, 4>()); }
    // Recomputes the header checksum over header_len() bytes.
    void fill_checksum() noexcept;

private:
    [[nodiscard]] uint16_t flags_frag() const noexcept { return wire::load_be16(buf_.data() + 6); }

    std::span<uint8_t> buf_;
    std::size_t datagram_bytes_;
};

// A validated IPv4 header (options dropped).
struct ipv4_repr {
    ipv4_addr src;
    ipv4_addr dst;
    ip_protocol protocol = ip_protocol::tcp;
    uint16_t payload_len = 0;
    uint8_t ttl = 64;
    uint8_t tos = 0;
    uint16_t ident = 0;
    bool dont_fragment = false;
    bool more_fragments = false;
    uint16_t frag_offset = 0;  // bytes

    [[nodiscard]] bool is_fragment() const noexcept { return more_fragments || frag_offset != 0; }

    // check() and then reads the fields; payload_len = total length - IHL * 4.
    [[nodiscard]] static ipv4_error parse(const ipv4_packet &p, ipv4_repr &out) noexcept;
    // The emitted header has no options.
    [[nodiscard]] static constexpr std::size_t header_len() noexcept {
        return ipv4_packet::min_header_len;
    }
    [[nodiscard]] std::size_t buffer_len() const noexcept { return header_len() + payload_len; }
    // Writes a 20-byte header including its checksum; leaves the payload alone.
    // Precondition: p.buffer().size() >= header_len() and
    // header_len() + payload_len <= 65535.
    void emit(ipv4_packet &p) const noexcept;

    friend bool operator==(const ipv4_repr &, const ipv4_repr &) noexcept = default;
};

}  // namespace ferry::net
