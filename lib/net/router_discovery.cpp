// Router Solicitation and Advertisement wire formats (router_discovery.h).
#include "ferry/net/router_discovery.h"

#include "ferry/net/byte_order.h"

namespace ferry::net {
namespace {

// RFC 4861 §4.6: option types.
constexpr uint8_t opt_source_lladdr = 1, opt_mtu = 5;
constexpr std::size_t ra_header_len = 16;  // type .. retrans timer

}  // namespace

ra_error ra_repr::parse(const ipv6_repr &ip, std::span<const uint8_t> msg, ra_repr &out) noexcept {
    if (msg.empty() || msg[0] != static_cast<uint8_t>(icmpv6_type::router_advertisement))
        return ra_error::not_ra;
    // §6.1.2, in its order.
    if (!ip.src.is_link_local()) return ra_error::bad_source;
    if (ip.hop_limit != 255) return ra_error::bad_hop_limit;
    if (msg.size() < ra_header_len) return ra_error::truncated;
    if (!icmpv6_checksum_ok(ip.src, ip.dst, msg)) return ra_error::bad_checksum;
    if (msg[1] != 0) return ra_error::bad_code;
    ra_repr r;
    // Cur Hop Limit (4), M/O flags (5), Router Lifetime (6), Reachable Time
    // (8), Retrans Timer (12): only the lifetime matters to a host that
    // configures its addresses and timers by hand.
    r.router_lifetime_s = wire::load_be16(msg.data() + 6);
    for (std::size_t off = ra_header_len; off < msg.size();) {
        if (msg.size() - off < 2) return ra_error::truncated;
        const std::size_t len = std::size_t{msg[off + 1]} * 8;
        if (len == 0) return ra_error::bad_option;
        if (len > msg.size() - off) return ra_error::truncated;
        const uint8_t type = msg[off];
        // Ethernet: 6 bytes after type and length (RFC 2464 §6).
        if (type == opt_source_lladdr && len == 8)
            r.lladdr = mac_addr::from_bytes(msg.subspan(off + 2).first<6>());
        if (type == opt_mtu && len == 8) r.mtu = wire::load_be32(msg.data() + off + 4);
        off += len;
    }
    out = r;
    return ra_error::none;
}

void emit_rs(const ipv6_addr &src, const ipv6_addr &dst, const std::optional<mac_addr> &lladdr,
             std::span<uint8_t> out) noexcept {
    const std::size_t n = rs_len(lladdr.has_value());
    out[0] = static_cast<uint8_t>(icmpv6_type::router_solicitation);
    for (std::size_t i = 1; i < 8; ++i) out[i] = 0;  // code, checksum, reserved
    if (lladdr) {
        out[8] = opt_source_lladdr;
        out[9] = 1;  // 8 bytes
        lladdr->write(out.subspan<10, 6>());
    }
    wire::store_be16(out.data() + 2, icmpv6_checksum(src, dst, out.first(n)));
}

}  // namespace ferry::net
