// Ethernet II frames (DIX), without the FCS (the NIC strips it).
//
// Read first: IEEE 802.3-2018 §3.1.1 (frame format), RFC 894 (IPv4 over
// Ethernet), IEEE 802.1Q §9.5 (the VLAN tag we do not support).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/byte_order.h"

namespace ferry::net {

enum class ether_type : uint16_t {
    ipv4 = 0x0800,
    arp = 0x0806,
    vlan = 0x8100,  // IEEE 802.1Q C-tag
    qinq = 0x88a8,  // IEEE 802.1ad S-tag
    ipv6 = 0x86dd,
};

enum class eth_error : uint8_t {
    none = 0,
    truncated,         // shorter than the 14-byte header
    vlan_unsupported,  // 802.1Q / 802.1ad tagged: the port is configured untagged
};

[[nodiscard]] constexpr const char *name(eth_error e) noexcept {
    switch (e) {
        case eth_error::none:
            return "none";
        case eth_error::truncated:
            return "truncated";
        case eth_error::vlan_unsupported:
            return "vlan_unsupported";
    }
    return "unknown";
}

// Zero-copy view of a frame. Field accessors require check() == none.
class ethernet_frame {
public:
    static constexpr std::size_t header_len = 14;

    explicit ethernet_frame(std::span<uint8_t> buf) noexcept : buf_(buf) {}

    [[nodiscard]] eth_error check() const noexcept;
    [[nodiscard]] static std::optional<ethernet_frame> new_checked(
        std::span<uint8_t> buf) noexcept {
        ethernet_frame f(buf);
        if (f.check() != eth_error::none) {
            return std::nullopt;
        }
        return f;
    }

    [[nodiscard]] mac_addr dst() const noexcept {
        return mac_addr::from_bytes(buf_.subspan<0, 6>());
    }
    [[nodiscard]] mac_addr src() const noexcept {
        return mac_addr::from_bytes(buf_.subspan<6, 6>());
    }
    [[nodiscard]] ether_type type() const noexcept {
        return static_cast<ether_type>(wire::load_be16(buf_.data() + 12));
    }
    [[nodiscard]] std::span<uint8_t> payload() const noexcept { return buf_.subspan(header_len); }
    [[nodiscard]] std::span<uint8_t> buffer() const noexcept { return buf_; }

    void set_dst(mac_addr m) noexcept { m.write(buf_.subspan<0, 6>()); }
    void set_src(mac_addr m) noexcept { m.write(buf_.subspan<6, 6>()); }
    void set_type(ether_type t) noexcept {
        wire::store_be16(buf_.data() + 12, static_cast<uint16_t>(t));
    }

private:
    std::span<uint8_t> buf_;
};

struct ethernet_repr {
    mac_addr dst;
    mac_addr src;
    ether_type type = ether_type::ipv4;

    // Validates `f` (check()) and reads its header into `out`.
    [[nodiscard]] static eth_error parse(const ethernet_frame &f, ethernet_repr &out) noexcept;
    [[nodiscard]] static constexpr std::size_t buffer_len() noexcept {
        return ethernet_frame::header_len;
    }
    // Writes the header. Precondition: f.buffer().size() >= buffer_len().
    void emit(ethernet_frame &f) const noexcept;

    friend bool operator==(const ethernet_repr &, const ethernet_repr &) noexcept = default;
};

}  // namespace ferry::net
