// TCP segments: the header, its options and the checksum.
//
// Read first: RFC 9293 §3.1 (header format, the checksum and its
// pseudo-header, the option rules MUST-5/6/7/68), §3.2 (EOL, NOP, MSS),
// §3.7.1 (MSS); RFC 7323 §2 (window scale), §3 (timestamps); RFC 2018 §2-§3
// (SACK-permitted, SACK).
//
//   0               8               16              24              31
//   |          source port          |       destination port        |
//   |                        sequence number                        |
//   |                     acknowledgment number                     |
//   | offset| rsrvd |C E U A P R S F|            window             |
//   |           checksum            |        urgent pointer         |
//   |          options (data offset > 5), then the data ...         |
//
// The view checks structure only. The checksum covers the pseudo-header and
// the whole segment, which may span several mbufs: callers verify it (or trust
// the NIC's rx offload) with tcp_pseudo_header() and internet_checksum before
// parsing, or with verify_checksum() when the segment is contiguous.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/byte_order.h"
#include "ferry/net/checksum.h"
#include "ferry/net/ip_addr.h"
#include "ferry/net/tcp_seq.h"

namespace ferry::net {

// Control bits, in the order of the header byte at offset 13 (RFC 9293 §3.1;
// CWR and ECE from RFC 3168 §6.1).
namespace tcp_flag {
inline constexpr uint8_t fin = 0x01;
inline constexpr uint8_t syn = 0x02;
inline constexpr uint8_t rst = 0x04;
inline constexpr uint8_t psh = 0x08;
inline constexpr uint8_t ack = 0x10;
inline constexpr uint8_t urg = 0x20;
inline constexpr uint8_t ece = 0x40;
inline constexpr uint8_t cwr = 0x80;
}  // namespace tcp_flag

enum class tcp_option_kind : uint8_t {
    eol = 0,             // RFC 9293 §3.2
    nop = 1,             // RFC 9293 §3.2
    mss = 2,             // RFC 9293 §3.2, length 4
    window_scale = 3,    // RFC 7323 §2.2, length 3
    sack_permitted = 4,  // RFC 2018 §2, length 2
    sack = 5,            // RFC 2018 §3, length 2 + 8n
    timestamps = 8,      // RFC 7323 §3.2, length 10
};

enum class tcp_option_error : uint8_t {
    none = 0,
    bad_length,  // a length octet of 0 or 1: the "illegal option length" of RFC 9293 §3.1 MUST-7
    overrun,     // the option, or its length octet, runs past the end of the header
    bad_size,    // a kind this code knows with a length its RFC does not allow
};

[[nodiscard]] constexpr const char *name(tcp_option_error e) noexcept {
    switch (e) {
        case tcp_option_error::none:
            return "none";
        case tcp_option_error::bad_length:
            return "bad_length";
        case tcp_option_error::overrun:
            return "overrun";
        case tcp_option_error::bad_size:
            return "bad_size";
    }
    return "unknown";
}

enum class tcp_error : uint8_t {
    none = 0,
    truncated,        // fewer than 20 bytes, or the header the data offset claims is not all there
    bad_data_offset,  // data offset < 5 words
    bad_options,      // the option list is malformed (the reason is a tcp_option_error)
};

[[nodiscard]] constexpr const char *name(tcp_error e) noexcept {
    switch (e) {
        case tcp_error::none:
            return "none";
        case tcp_error::truncated:
            return "truncated";
        case tcp_error::bad_data_offset:
            return "bad_data_offset";
        case tcp_error::bad_options:
            return "bad_options";
    }
    return "unknown";
}

// RFC 9293 §3.1 "Checksum": the sum over the 12-byte pseudo-header (source
// address, destination address, zero, PTCL = 6, TCP length = header + data);
// over IPv6, RFC 8200 §8.1's 40-byte one (the addresses, a 32-bit length,
// zeros, next header 6): the same words but for the addresses' width, since
// a 32-bit length under 64 KiB sums as the 16-bit one. Add the segment bytes
// to it and finish() for the checksum field; its fold() alone is what a NIC
// with tx checksum offload expects in the field (what DPDK's
// rte_ipv4_phdr_cksum / rte_ipv6_phdr_cksum return).
[[nodiscard]] inline internet_checksum tcp_pseudo_header(const ip_addr &src, const ip_addr &dst,
                                                         uint16_t tcp_length) noexcept {
    internet_checksum c;
    const std::size_t from = src.is_v4() ? 12 : 0;  // both of one family
    for (std::size_t i = from; i < 16; i += 2) {
        c.add_word(static_cast<uint16_t>(src.bytes()[i] << 8 | src.bytes()[i + 1]));
        c.add_word(static_cast<uint16_t>(dst.bytes()[i] << 8 | dst.bytes()[i + 1]));
    }
    c.add_word(6);  // zero octet(s), then PTCL / next header (IANA protocol number 6)
    c.add_word(tcp_length);
    return c;
}

// A SACK block: the received range [left, right) (RFC 2018 §3: "Left Edge"
// is the first sequence number of the block, "Right Edge" the one after its last).
struct tcp_sack_block {
    seq_num left;
    seq_num right;

    friend constexpr bool operator==(const tcp_sack_block &,
                                     const tcp_sack_block &) noexcept = default;
};

struct tcp_timestamps {
    uint32_t tsval = 0;
    uint32_t tsecr = 0;

    friend constexpr bool operator==(const tcp_timestamps &,
                                     const tcp_timestamps &) noexcept = default;
};

// The options of one segment, validated. Absent options are nullopt/false.
struct tcp_options {
    static constexpr std::size_t max_len = 40;         // data offset 15 words - 5
    static constexpr uint8_t max_window_shift = 14;    // RFC 7323 §2.3
    static constexpr std::size_t max_sack_blocks = 4;  // RFC 2018 §3: 4 fit in 40 bytes

    std::optional<uint16_t> mss;
    // The shift count, already clamped to 14: RFC 7323 §2.3 "If a Window Scale
    // option is received with a shift.cnt value larger than 14, the TCP SHOULD
    // log the error but MUST use 14 instead". window_shift_clamped records it.
    std::optional<uint8_t> window_shift;
    bool window_shift_clamped = false;
    bool sack_permitted = false;
    std::optional<tcp_timestamps> timestamps;
    uint8_t sack_count = 0;  // blocks in use, first the most recent (RFC 2018 §4)
    std::array<tcp_sack_block, max_sack_blocks> sack{};

    [[nodiscard]] std::span<const tcp_sack_block> sack_blocks() const noexcept {
        return std::span(sack).first(sack_count);
    }

    // Parses an option list (the bytes between the fixed header and the data).
    // EOL ends the list (what follows is padding); NOP is skipped; every other
    // kind needs a length octet >= 2 (else bad_length) and its whole length
    // inside `opts` (else overrun); the kinds above with another length are
    // bad_size (SACK: 1 to 4 blocks). Unknown kinds are skipped (RFC 9293 §3.1
    // MUST-6). Options may start at any offset (RFC 9293 §3.2 MUST-64); a kind
    // that appears twice keeps its last value. On error `out` holds what was
    // parsed before the bad option.
    [[nodiscard]] static tcp_option_error parse(std::span<const uint8_t> opts,
                                                tcp_options &out) noexcept;

    // Number of SACK blocks emit() writes: sack_count, less whatever would not
    // fit in 40 bytes beside the other options (RFC 2018 §3: three with
    // timestamps). The blocks dropped are the last ones.
    [[nodiscard]] std::size_t sack_blocks_emitted() const noexcept;
    // Bytes emit() writes: always a multiple of 4, at most 40.
    [[nodiscard]] std::size_t emit_len() const noexcept;
    // Writes the options in the order and 32-bit alignment Linux uses, each
    // group NOP-padded to a word:
    //   MSS            2 4 mss
    //   SACK-perm + TS 4 2 8 10 tsval tsecr   (or 1 1 8 10 ..., or 1 1 4 2)
    //   window scale   1 3 3 shift            (shift clamped to 14)
    //   SACK           1 1 5 2+8n blocks
    // Precondition: out.size() >= emit_len(). Returns emit_len().
    std::size_t emit(std::span<uint8_t> out) const noexcept;

    friend bool operator==(const tcp_options &, const tcp_options &) noexcept = default;
};

// Zero-copy view of a segment (the IPv4 payload). Field accessors require
// check() == none.
//
// The span must hold the whole header (fixed part and options); it may hold
// less than the whole segment when the data continues in further mbuf
// segments: `segment_bytes` then gives the segment's full length (the IPv4
// total length minus its header). The span must not extend past the segment
// (pass ipv4_packet::payload(), which drops Ethernet padding).
class tcp_segment {
public:
    static constexpr std::size_t min_header_len = 20;
    static constexpr std::size_t max_header_len = 60;

    explicit tcp_segment(std::span<uint8_t> buf) noexcept : buf_(buf), segment_bytes_(buf.size()) {}
    tcp_segment(std::span<uint8_t> buf, std::size_t segment_bytes) noexcept
        : buf_(buf), segment_bytes_(segment_bytes < buf.size() ? buf.size() : segment_bytes) {}

    // In order: truncated (< 20 bytes), bad_data_offset (< 5), truncated
    // (data offset * 4 bytes not all in the span). The reserved bits are
    // ignored (RFC 9293 §3.1: "must be ignored in received segments"); options
    // are not looked at (tcp_repr::parse does).
    [[nodiscard]] tcp_error check() const noexcept;
    [[nodiscard]] static std::optional<tcp_segment> new_checked(std::span<uint8_t> buf) noexcept {
        tcp_segment s(buf);
        if (s.check() != tcp_error::none) {
            return std::nullopt;
        }
        return s;
    }

    [[nodiscard]] uint16_t src_port() const noexcept { return wire::load_be16(buf_.data()); }
    [[nodiscard]] uint16_t dst_port() const noexcept { return wire::load_be16(buf_.data() + 2); }
    [[nodiscard]] seq_num seq_number() const noexcept {
        return seq_num(wire::load_be32(buf_.data() + 4));
    }
    [[nodiscard]] seq_num ack_number() const noexcept {
        return seq_num(wire::load_be32(buf_.data() + 8));
    }
    [[nodiscard]] uint8_t data_offset() const noexcept { return buf_[12] >> 4; }  // 32-bit words
    [[nodiscard]] std::size_t header_len() const noexcept { return std::size_t{data_offset()} * 4; }
    [[nodiscard]] uint8_t flags() const noexcept { return buf_[13]; }
    [[nodiscard]] bool fin() const noexcept { return (flags() & tcp_flag::fin) != 0; }
    [[nodiscard]] bool syn() const noexcept { return (flags() & tcp_flag::syn) != 0; }
    [[nodiscard]] bool rst() const noexcept { return (flags() & tcp_flag::rst) != 0; }
    [[nodiscard]] bool psh() const noexcept { return (flags() & tcp_flag::psh) != 0; }
    [[nodiscard]] bool ack() const noexcept { return (flags() & tcp_flag::ack) != 0; }
    [[nodiscard]] bool urg() const noexcept { return (flags() & tcp_flag::urg) != 0; }
    [[nodiscard]] bool ece() const noexcept { return (flags() & tcp_flag::ece) != 0; }
    [[nodiscard]] bool cwr() const noexcept { return (flags() & tcp_flag::cwr) != 0; }
    [[nodiscard]] uint16_t window() const noexcept { return wire::load_be16(buf_.data() + 14); }
    [[nodiscard]] uint16_t checksum() const noexcept { return wire::load_be16(buf_.data() + 16); }
    [[nodiscard]] uint16_t urgent_ptr() const noexcept { return wire::load_be16(buf_.data() + 18); }
    [[nodiscard]] std::span<uint8_t> options() const noexcept {
        return buf_.subspan(min_header_len, header_len() - min_header_len);
    }
    [[nodiscard]] std::span<uint8_t> header() const noexcept { return buf_.first(header_len()); }
    // The part of the data that is in the span (all of it unless segmented).
    [[nodiscard]] std::span<uint8_t> payload() const noexcept { return buf_.subspan(header_len()); }
    // Data octets in the whole segment.
    [[nodiscard]] std::size_t payload_len() const noexcept { return segment_bytes_ - header_len(); }
    [[nodiscard]] std::span<uint8_t> buffer() const noexcept { return buf_; }
    [[nodiscard]] std::size_t segment_bytes() const noexcept { return segment_bytes_; }

    // Verifies the checksum of a contiguous segment (span == whole segment);
    // false when the span holds only part of it. Needs only the 20-byte
    // fixed header to be present.
    [[nodiscard]] bool verify_checksum(const ip_addr &src, const ip_addr &dst) const noexcept;

    void set_src_port(uint16_t v) noexcept { wire::store_be16(buf_.data(), v); }
    void set_dst_port(uint16_t v) noexcept { wire::store_be16(buf_.data() + 2, v); }
    void set_seq_number(seq_num v) noexcept { wire::store_be32(buf_.data() + 4, v.value()); }
    void set_ack_number(seq_num v) noexcept { wire::store_be32(buf_.data() + 8, v.value()); }
    // Writes the data offset and zeroes the reserved bits (RFC 9293 §3.1:
    // "must be zero in generated segments").
    void set_header_len(std::size_t bytes) noexcept {
        buf_[12] = static_cast<uint8_t>((bytes / 4) << 4);
    }
    void set_flags(uint8_t v) noexcept { buf_[13] = v; }
    void set_window(uint16_t v) noexcept { wire::store_be16(buf_.data() + 14, v); }
    void set_checksum(uint16_t v) noexcept { wire::store_be16(buf_.data() + 16, v); }
    void set_urgent_ptr(uint16_t v) noexcept { wire::store_be16(buf_.data() + 18, v); }
    // Recomputes the checksum of a contiguous segment (span == whole segment).
    void fill_checksum(const ip_addr &src, const ip_addr &dst) noexcept;

private:
    std::span<uint8_t> buf_;
    std::size_t segment_bytes_;
};

// A validated segment header. The data stays in the buffer (tcp_segment::payload()).
struct tcp_repr {
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    seq_num seq;
    seq_num ack;          // meaningful only with tcp_flag::ack
    uint8_t flags = 0;    // tcp_flag bits
    uint16_t window = 0;  // SEG.WND as on the wire, not yet scaled
    uint16_t urgent_ptr = 0;
    tcp_options options;
    uint32_t payload_len = 0;  // data octets

    [[nodiscard]] constexpr bool has(uint8_t flag) const noexcept { return (flags & flag) != 0; }
    // SEG.LEN (RFC 9293 §3.4): the data octets plus one for SYN and one for FIN.
    [[nodiscard]] constexpr uint32_t seg_len() const noexcept {
        return payload_len + (has(tcp_flag::syn) ? 1 : 0) + (has(tcp_flag::fin) ? 1 : 0);
    }

    // check(), then the options. Does not verify the checksum (see the file
    // comment). Normalizes what the RFCs say a receiver must ignore:
    //  - without SYN: MSS (RFC 9293 §3.2 MUST-65: sent only on SYN), window
    //    scale (RFC 7323 §2.2: "MUST be ignored"), SACK-permitted (RFC 2018 §2:
    //    "MUST NOT be sent on non-SYN segments") are dropped;
    //  - without ACK: TSecr reads as 0 (RFC 7323 §3.2: "the receiver MUST
    //    ignore the value of the TSecr field").
    // On bad_options, *why (if given) says what was wrong. Rejecting the whole
    // segment is one of the choices RFC 9293 §3.1 MUST-7 leaves open (Linux
    // instead stops reading options at the bad one); the caller counts it.
    [[nodiscard]] static tcp_error parse(const tcp_segment &s, tcp_repr &out,
                                         tcp_option_error *why = nullptr) noexcept;

    [[nodiscard]] std::size_t header_len() const noexcept {
        return tcp_segment::min_header_len + options.emit_len();
    }
    [[nodiscard]] std::size_t buffer_len() const noexcept { return header_len() + payload_len; }

    // Writes header and options and the checksum over the pseudo-header
    // (src, dst, header_len() + payload_len), the header, and `payload`: the
    // sum of exactly payload_len data bytes, gathered by the caller from
    // wherever the data lives (an mbuf chain). The data itself is not written.
    // Precondition: s.buffer().size() >= header_len() and
    // header_len() + payload_len <= 65515 (the IPv4 limit).
    void emit(tcp_segment &s, const ip_addr &src, const ip_addr &dst,
              const internet_checksum &payload) const noexcept;
    // The same for a contiguous segment: the payload_len data bytes already sit
    // after header_len() in the span (s.buffer().size() >= buffer_len()).
    void emit(tcp_segment &s, const ip_addr &src, const ip_addr &dst) const noexcept;

    friend bool operator==(const tcp_repr &, const tcp_repr &) noexcept = default;
};

}  // namespace ferry::net
