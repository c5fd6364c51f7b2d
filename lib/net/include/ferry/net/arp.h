// ARP for IPv4 over Ethernet.
//
// Read first: RFC 826 ("Packet format" and "Packet Reception", the merge
// algorithm), RFC 5227 §2.1.1 and §3 (probes and announcements, sender 0.0.0.0),
// RFC 1122 §2.3.2 (cache timeout and flooding rules).
//
//   0      2      4    5    6      8     14    18     24    28
//   | hrd  | pro  |hln |pln | op   | sha | spa | tha  | tpa |
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/byte_order.h"

namespace ferry::net {

enum class arp_op : uint16_t {
    request = 1,  // ares_op$REQUEST
    reply = 2,    // ares_op$REPLY
};

enum class arp_error : uint8_t {
    none = 0,
    truncated,              // shorter than the fixed part or than hln/pln announce
    unsupported_hardware,   // ar$hrd != 1 (Ethernet)
    unsupported_protocol,   // ar$pro != 0x0800 (IPv4)
    bad_address_length,     // Ethernet/IPv4 but ar$hln != 6 or ar$pln != 4
    unsupported_operation,  // ar$op neither request nor reply (e.g. RARP, InARP)
};

[[nodiscard]] constexpr const char *name(arp_error e) noexcept {
    switch (e) {
        case arp_error::none:
            return "none";
        case arp_error::truncated:
            return "truncated";
        case arp_error::unsupported_hardware:
            return "unsupported_hardware";
        case arp_error::unsupported_protocol:
            return "unsupported_protocol";
        case arp_error::bad_address_length:
            return "bad_address_length";
        case arp_error::unsupported_operation:
            return "unsupported_operation";
    }
    return "unknown";
}

// Zero-copy view of an ARP packet. check() validates only lengths; the address
// accessors assume the Ethernet/IPv4 layout, so use them after arp_repr::parse
// (or after checking hardware/protocol type and lengths yourself).
class arp_packet {
public:
    static constexpr std::size_t fixed_len = 8;  // hrd, pro, hln, pln, op
    static constexpr std::size_t ethernet_ipv4_len = 28;
    static constexpr uint16_t hrd_ethernet = 1;  // RFC 826 ares_hrd$Ethernet
    static constexpr uint16_t pro_ipv4 = 0x0800;

    explicit arp_packet(std::span<uint8_t> buf) noexcept : buf_(buf) {}

    // truncated if the fixed part or the four addresses it announces do not fit.
    [[nodiscard]] arp_error check() const noexcept;
    [[nodiscard]] static std::optional<arp_packet> new_checked(std::span<uint8_t> buf) noexcept {
        arp_packet p(buf);
        if (p.check() != arp_error::none) {
            return std::nullopt;
        }
        return p;
    }

    [[nodiscard]] uint16_t hardware_type() const noexcept { return wire::load_be16(buf_.data()); }
    [[nodiscard]] uint16_t protocol_type() const noexcept {
        return wire::load_be16(buf_.data() + 2);
    }
    [[nodiscard]] uint8_t hardware_len() const noexcept { return buf_[4]; }
    [[nodiscard]] uint8_t protocol_len() const noexcept { return buf_[5]; }
    [[nodiscard]] uint16_t operation() const noexcept { return wire::load_be16(buf_.data() + 6); }
    // The packet length its own hln/pln announce.
    [[nodiscard]] std::size_t announced_len() const noexcept {
        return fixed_len + 2 * (std::size_t{hardware_len()} + protocol_len());
    }

    [[nodiscard]] mac_addr sender_hw() const noexcept {
        return mac_addr::from_bytes(buf_.subspan<8, 6>());
    }
    [[nodiscard]] ipv4_addr sender_ip() const noexcept {
        return ipv4_addr::from_bytes(buf_.subspan<14, 4>());
    }
    [[nodiscard]] mac_addr target_hw() const noexcept {
        return mac_addr::from_bytes(buf_.subspan<18, 6>());
    }
    [[nodiscard]] ipv4_addr target_ip() const noexcept {
        return ipv4_addr::from_bytes(buf_.subspan<24, 4>());
    }

    void set_hardware_type(uint16_t v) noexcept { wire::store_be16(buf_.data(), v); }
    void set_protocol_type(uint16_t v) noexcept { wire::store_be16(buf_.data() + 2, v); }
    void set_hardware_len(uint8_t v) noexcept { buf_[4] = v; }
    void set_protocol_len(uint8_t v) noexcept { buf_[5] = v; }
    void set_operation(uint16_t v) noexcept { wire::store_be16(buf_.data() + 6, v); }
    void set_sender_hw(mac_addr m) noexcept { m.write(buf_.subspan<8, 6>()); }
    void set_sender_ip(ipv4_addr a) noexcept { a.write(buf_.subspan<14, 4>()); }
    void set_target_hw(mac_addr m) noexcept { m.write(buf_.subspan<18, 6>()); }
    void set_target_ip(ipv4_addr a) noexcept { a.write(buf_.subspan<24, 4>()); }

    [[nodiscard]] std::span<uint8_t> buffer() const noexcept { return buf_; }

private:
    std::span<uint8_t> buf_;
};

// A validated Ethernet/IPv4 ARP packet.
struct arp_repr {
    arp_op op = arp_op::request;
    mac_addr sender_hw;
    ipv4_addr sender_ip;
    mac_addr target_hw;
    ipv4_addr target_ip;

    // Lengths, then (RFC 826 "Packet Reception") hardware type, protocol type,
    // their address lengths, then the opcode. Returns the first failure.
    [[nodiscard]] static arp_error parse(const arp_packet &p, arp_repr &out) noexcept;
    [[nodiscard]] static constexpr std::size_t buffer_len() noexcept {
        return arp_packet::ethernet_ipv4_len;
    }
    // Writes all 28 bytes. Precondition: p.buffer().size() >= buffer_len().
    void emit(arp_packet &p) const noexcept;

    friend bool operator==(const arp_repr &, const arp_repr &) noexcept = default;
};

}  // namespace ferry::net
