// ICMP for IPv4: echo request / echo reply only.
//
// Read first: RFC 792 ("Echo or Echo Reply Message"), RFC 1122 §3.2.2 (what a
// host must do: §3.2.2.6 echo, §3.2.2 "silently discard" of unknown types).
//
//   0        8        16                31
//   |  type  |  code  |     checksum     |
//   |   identifier    | sequence number  |   (echo; other types differ here)
//   |  data ...
//
// The checksum covers the whole ICMP message (header and data), RFC 792.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/byte_order.h"

namespace ferry::net {

enum class icmp_type : uint8_t {
    echo_reply = 0,
    dest_unreachable = 3,
    echo_request = 8,
    time_exceeded = 11,
};

enum class icmp_error : uint8_t {
    none = 0,
    truncated,     // shorter than the 8-byte header every RFC 792 message has
    bad_checksum,  // checksum over the whole message does not verify
    unsupported,   // not an echo request / reply with code 0
};

[[nodiscard]] constexpr const char *name(icmp_error e) noexcept {
    switch (e) {
        case icmp_error::none:
            return "none";
        case icmp_error::truncated:
            return "truncated";
        case icmp_error::bad_checksum:
            return "bad_checksum";
        case icmp_error::unsupported:
            return "unsupported";
    }
    return "unknown";
}

// Zero-copy view of an ICMP message; the span is the whole message (the IPv4
// payload). Field accessors require check_len() == none.
class icmpv4_packet {
public:
    static constexpr std::size_t header_len = 8;

    explicit icmpv4_packet(std::span<uint8_t> buf) noexcept : buf_(buf) {}

    [[nodiscard]] icmp_error check_len() const noexcept {
        return buf_.size() < header_len ? icmp_error::truncated : icmp_error::none;
    }
    // check_len(), then the checksum over the span.
    [[nodiscard]] icmp_error check() const noexcept;
    [[nodiscard]] static std::optional<icmpv4_packet> new_checked(std::span<uint8_t> buf) noexcept {
        icmpv4_packet p(buf);
        if (p.check() != icmp_error::none) {
            return std::nullopt;
        }
        return p;
    }

    [[nodiscard]] uint8_t type() const noexcept { return buf_[0]; }
    [[nodiscard]] uint8_t code() const noexcept { return buf_[1]; }
    [[nodiscard]] uint16_t checksum() const noexcept { return wire::load_be16(buf_.data() + 2); }
    [[nodiscard]] uint16_t echo_ident() const noexcept { return wire::load_be16(buf_.data() + 4); }
    [[nodiscard]] uint16_t echo_seq() const noexcept { return wire::load_be16(buf_.data() + 6); }
    [[nodiscard]] std::span<uint8_t> payload() const noexcept { return buf_.subspan(header_len); }
    [[nodiscard]] std::span<uint8_t> buffer() const noexcept { return buf_; }
    [[nodiscard]] bool verify_checksum() const noexcept;

    void set_type(uint8_t v) noexcept { buf_[0] = v; }
    void set_code(uint8_t v) noexcept { buf_[1] = v; }
    void set_checksum(uint16_t v) noexcept { wire::store_be16(buf_.data() + 2, v); }
    void set_echo_ident(uint16_t v) noexcept { wire::store_be16(buf_.data() + 4, v); }
    void set_echo_seq(uint16_t v) noexcept { wire::store_be16(buf_.data() + 6, v); }
    // Recomputes the checksum over the whole span.
    void fill_checksum() noexcept;

private:
    std::span<uint8_t> buf_;
};

// A validated echo request or reply. `data` points into the parsed buffer (zero copy).
struct icmp_echo_repr {
    icmp_type type = icmp_type::echo_request;  // echo_request or echo_reply
    uint16_t ident = 0;
    uint16_t seq = 0;
    std::span<const uint8_t> data;

    // check() (length and checksum), then type echo request/reply with code 0
    // (RFC 792), else unsupported.
    [[nodiscard]] static icmp_error parse(const icmpv4_packet &p, icmp_echo_repr &out) noexcept;
    [[nodiscard]] std::size_t buffer_len() const noexcept {
        return icmpv4_packet::header_len + data.size();
    }
    // Writes header and data (data may alias the destination) and the checksum.
    // Precondition: p.buffer().size() == buffer_len().
    void emit(icmpv4_packet &p) const noexcept;
};

}  // namespace ferry::net
