// Router discovery's two messages (RFC 4861 §4.1, §4.2), parsed and
// validated as §6.1.2 says, or emitted. The stack's use of them (a default
// router for what is off-link when no gateway6 is configured) is in
// stack_router.cpp.
//
// Read first: RFC 4861 §6.1.2 (validity of a Router Advertisement), §6.3.4
// (what a host does with one), §6.3.7 (sending Router Solicitations), §4.6
// (options: a length of 0 is invalid, unknown ones are skipped).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/ipv6.h"

namespace ferry::net {

enum class ra_error : uint8_t {
    none = 0,
    not_ra,          // not type 134
    bad_hop_limit,   // IP hop limit != 255: it did not come from the link
    bad_source,      // the source is not link-local (§6.1.2: routers use theirs)
    truncated,       // shorter than 16 bytes, or an option runs past the end
    bad_checksum,
    bad_code,        // ICMP code != 0
    bad_option,      // an option of length 0
};

[[nodiscard]] constexpr const char *name(ra_error e) noexcept {
    switch (e) {
        case ra_error::none: return "none";
        case ra_error::not_ra: return "not_ra";
        case ra_error::bad_hop_limit: return "bad_hop_limit";
        case ra_error::bad_source: return "bad_source";
        case ra_error::truncated: return "truncated";
        case ra_error::bad_checksum: return "bad_checksum";
        case ra_error::bad_code: return "bad_code";
        case ra_error::bad_option: return "bad_option";
    }
    return "unknown";
}

// A Router Advertisement (type 134): what ferry uses of it.
struct ra_repr {
    // Seconds this router may be the default router; 0: it is not one.
    uint16_t router_lifetime_s = 0;
    // The Source Link-Layer Address option (§4.6.1), when it holds a MAC.
    std::optional<mac_addr> lladdr;
    // The MTU option (§4.6.4), if any (not applied: the port's mtu rules).
    std::optional<uint32_t> mtu;

    // `ip`: the datagram's header (source, destination, hop limit); `msg`:
    // the whole ICMPv6 message.
    [[nodiscard]] static ra_error parse(const ipv6_repr &ip, std::span<const uint8_t> msg,
                                        ra_repr &out) noexcept;
};

// A Router Solicitation (type 133, §4.1) from `src` to `dst` with our
// link-layer address (§6.3.7: included unless the source is ::). Its length,
// then the writer (with the checksum).
[[nodiscard]] constexpr std::size_t rs_len(bool lladdr) noexcept { return lladdr ? 16 : 8; }
void emit_rs(const ipv6_addr &src, const ipv6_addr &dst, const std::optional<mac_addr> &lladdr,
             std::span<uint8_t> out) noexcept;

// ff02::2, all routers on the link.
[[nodiscard]] constexpr ipv6_addr all_routers() noexcept {
    return ipv6_addr({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
}

}  // namespace ferry::net
