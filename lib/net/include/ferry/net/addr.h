// Link-layer (IEEE 802 MAC-48) and IPv4 addresses as small value types.
//
// Read first: IEEE 802-2014 §8.2 (MAC address I/G and U/L bits), RFC 791 §3.2
// (IPv4 addressing), RFC 1122 §3.2.1.3 (which addresses are legal where),
// RFC 4632 §3.1 (prefix notation).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ferry::net {

class mac_addr {
public:
    static constexpr std::size_t size = 6;

    constexpr mac_addr() noexcept = default;
    constexpr explicit mac_addr(const std::array<uint8_t, size> &b) noexcept : b_(b) {}

    [[nodiscard]] static constexpr mac_addr from_bytes(std::span<const uint8_t, size> b) noexcept {
        return mac_addr({b[0], b[1], b[2], b[3], b[4], b[5]});
    }
    [[nodiscard]] static constexpr mac_addr broadcast() noexcept {
        return mac_addr({0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    }

    // Parses six two-digit hex groups separated by ':' ("02:00:5e:10:00:01");
    // either case. Anything else (wrong group count or width, other separators,
    // trailing text) returns nullopt.
    [[nodiscard]] static std::optional<mac_addr> parse(std::string_view s) noexcept;

    [[nodiscard]] constexpr const std::array<uint8_t, size> &bytes() const noexcept { return b_; }
    constexpr void write(std::span<uint8_t, size> out) const noexcept {
        for (std::size_t i = 0; i < size; ++i) {
            out[i] = b_[i];
        }
    }

    [[nodiscard]] constexpr bool is_broadcast() const noexcept { return *this == broadcast(); }
    // I/G bit, the least significant bit of the first octet (IEEE 802-2014 §8.2).
    // Broadcast is a multicast address.
    [[nodiscard]] constexpr bool is_multicast() const noexcept { return (b_[0] & 0x01) != 0; }
    [[nodiscard]] constexpr bool is_unicast() const noexcept { return !is_multicast(); }
    [[nodiscard]] constexpr bool is_zero() const noexcept { return *this == mac_addr{}; }

    // Lower-case "02:00:5e:10:00:01". Control path only (allocates).
    [[nodiscard]] std::string to_string() const;

    friend constexpr bool operator==(const mac_addr &, const mac_addr &) noexcept = default;

private:
    std::array<uint8_t, size> b_{};
};

// An IPv4 address held in host byte order; converted only when read from or
// written to the wire.
class ipv4_addr {
public:
    static constexpr std::size_t size = 4;

    constexpr ipv4_addr() noexcept = default;
    constexpr explicit ipv4_addr(uint32_t host_order) noexcept : v_(host_order) {}

    [[nodiscard]] static constexpr ipv4_addr from_octets(uint8_t a, uint8_t b, uint8_t c,
                                                         uint8_t d) noexcept {
        return ipv4_addr((uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | d);
    }
    // `b` is in network order, as on the wire.
    [[nodiscard]] static constexpr ipv4_addr from_bytes(std::span<const uint8_t, size> b) noexcept {
        return from_octets(b[0], b[1], b[2], b[3]);
    }
    [[nodiscard]] static constexpr ipv4_addr any() noexcept { return ipv4_addr(0); }
    [[nodiscard]] static constexpr ipv4_addr broadcast() noexcept { return ipv4_addr(0xffffffff); }

    // Strict dotted quad: exactly four decimal octets 0..255 without leading
    // zeros ("010" is rejected because inet_aton reads it as octal, so the same
    // text would mean two different addresses). Anything else returns nullopt.
    [[nodiscard]] static std::optional<ipv4_addr> parse(std::string_view s) noexcept;

    [[nodiscard]] constexpr uint32_t value() const noexcept { return v_; }
    constexpr void write(std::span<uint8_t, size> out) const noexcept {
        out[0] = static_cast<uint8_t>(v_ >> 24);
        out[1] = static_cast<uint8_t>(v_ >> 16);
        out[2] = static_cast<uint8_t>(v_ >> 8);
        out[3] = static_cast<uint8_t>(v_);
    }

    // Netmask for a prefix length (RFC 4632 §3.1); lengths above 32 clamp to 32.
    [[nodiscard]] static constexpr uint32_t prefix_mask(uint8_t prefix_len) noexcept {
        return prefix_len == 0 ? 0 : prefix_len >= 32 ? 0xffffffff : ~(0xffffffffu >> prefix_len);
    }
    // True when this address lies in net/prefix_len (host bits of `net` ignored).
    [[nodiscard]] constexpr bool in_subnet(ipv4_addr net, uint8_t prefix_len) const noexcept {
        const uint32_t m = prefix_mask(prefix_len);
        return (v_ & m) == (net.v_ & m);
    }
    // The directed broadcast address of this address's subnet, or nullopt for
    // /31 (RFC 3021: point-to-point, no broadcast) and /32.
    [[nodiscard]] constexpr std::optional<ipv4_addr> subnet_broadcast(
        uint8_t prefix_len) const noexcept {
        if (prefix_len >= 31) {
            return std::nullopt;
        }
        return ipv4_addr(v_ | ~prefix_mask(prefix_len));
    }

    // 0.0.0.0: "this host", only legal as a source during bootstrap (RFC 1122 §3.2.1.3(a)).
    [[nodiscard]] constexpr bool is_unspecified() const noexcept { return v_ == 0; }
    [[nodiscard]] constexpr bool is_broadcast() const noexcept { return v_ == 0xffffffff; }
    // 224.0.0.0/4 (RFC 1112 §4).
    [[nodiscard]] constexpr bool is_multicast() const noexcept { return (v_ >> 28) == 0xe; }
    // 127.0.0.0/8, never legal outside a host (RFC 1122 §3.2.1.3(g)).
    [[nodiscard]] constexpr bool is_loopback() const noexcept { return (v_ >> 24) == 127; }
    // 0.0.0.0/8: "this network" (RFC 1122 §3.2.1.3(a)-(b)), never a valid destination.
    [[nodiscard]] constexpr bool is_this_network() const noexcept { return (v_ >> 24) == 0; }
    // 240.0.0.0/4 (RFC 1112 §4 class E; includes 255.255.255.255).
    [[nodiscard]] constexpr bool is_reserved() const noexcept { return (v_ >> 28) == 0xf; }

    // Dotted quad. Control path only (allocates).
    [[nodiscard]] std::string to_string() const;

    friend constexpr auto operator<=>(const ipv4_addr &, const ipv4_addr &) noexcept = default;

private:
    uint32_t v_ = 0;
};

// RFC 1112 §6.4: an IPv4 multicast group maps to 01:00:5e plus its low 23 bits.
[[nodiscard]] constexpr mac_addr multicast_mac(ipv4_addr group) noexcept {
    const uint32_t v = group.value();
    return mac_addr({0x01, 0x00, 0x5e, static_cast<uint8_t>((v >> 16) & 0x7f),
                     static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)});
}

}  // namespace ferry::net
