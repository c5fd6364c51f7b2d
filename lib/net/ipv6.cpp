#include "ferry/net/ipv6.h"

#include "ferry/base/ipv6_text.h"
#include "ferry/net/byte_order.h"

namespace ferry::net {
namespace {

constexpr uint8_t ll_source = 1, ll_target = 2;  // RFC 4861 §4.6.1 option types

}  // namespace

std::optional<ipv6_addr> ipv6_addr::parse(std::string_view s) noexcept {
    const auto b = parse_ipv6(s);
    if (!b) return std::nullopt;
    return ipv6_addr(*b);
}

std::optional<std::pair<ipv6_addr, uint8_t>> ipv6_addr::parse_prefix(std::string_view s) noexcept {
    const auto p = parse_ipv6_prefix(s);
    if (!p) return std::nullopt;
    return std::pair{ipv6_addr(p->first), p->second};
}

std::string ipv6_addr::to_string() const { return format_ipv6(b_); }

ipv6_error ipv6_repr::parse(std::span<const uint8_t> buf, ipv6_repr &out,
                             std::size_t total) noexcept {
    if (buf.size() < header_len) return ipv6_error::truncated;
    const uint32_t w0 = wire::load_be32(buf.data());
    if ((w0 >> 28) != 6) return ipv6_error::bad_version;
    out.traffic_class = static_cast<uint8_t>(w0 >> 20);
    out.flow_label = w0 & 0xfffff;
    out.payload_len = wire::load_be16(buf.data() + 4);
    out.next_header = buf[6];
    out.hop_limit = buf[7];
    out.src = ipv6_addr::from_bytes(buf.subspan<8, 16>());
    out.dst = ipv6_addr::from_bytes(buf.subspan<24, 16>());
    // A payload length of 0 with a hop-by-hop jumbogram option (RFC 2675)
    // is not for links of ferry's MTUs: it is simply too short.
    if ((total == SIZE_MAX ? buf.size() : total) < header_len + out.payload_len)
        return ipv6_error::truncated;
    return ipv6_error::none;
}

void ipv6_repr::emit(std::span<uint8_t> out) const noexcept {
    wire::store_be32(out.data(), (6u << 28) | (uint32_t{traffic_class} << 20) | (flow_label & 0xfffff));
    wire::store_be16(out.data() + 4, payload_len);
    out[6] = next_header;
    out[7] = hop_limit;
    src.write(out.subspan<8, 16>());
    dst.write(out.subspan<24, 16>());
}

void add_ipv6_pseudo_header(internet_checksum &c, const ipv6_addr &src, const ipv6_addr &dst,
                            uint32_t upper_len, uint8_t next_header) noexcept {
    c.add(src.bytes());
    c.add(dst.bytes());
    c.add_word(static_cast<uint16_t>(upper_len >> 16));
    c.add_word(static_cast<uint16_t>(upper_len));
    c.add_word(next_header);  // three zero bytes, then the next header
}

uint16_t icmpv6_checksum(const ipv6_addr &src, const ipv6_addr &dst,
                         std::span<const uint8_t> msg) noexcept {
    internet_checksum c;
    add_ipv6_pseudo_header(c, src, dst, static_cast<uint32_t>(msg.size()),
                           static_cast<uint8_t>(ipv6_next::icmpv6));
    if (msg.size() >= 4) {
        c.add(msg.first(2));  // type, code; the checksum field counts as zero
        c.add(msg.subspan(4));
    } else {
        c.add(msg);
    }
    return c.finish();
}

bool icmpv6_checksum_ok(const ipv6_addr &src, const ipv6_addr &dst,
                        std::span<const uint8_t> msg) noexcept {
    return msg.size() >= 4 && icmpv6_checksum(src, dst, msg) == wire::load_be16(msg.data() + 2);
}

nd_error nd_repr::parse(const ipv6_repr &ip, std::span<const uint8_t> msg, nd_repr &out) noexcept {
    if (msg.empty() || (msg[0] != static_cast<uint8_t>(icmpv6_type::neighbor_solicitation) &&
                        msg[0] != static_cast<uint8_t>(icmpv6_type::neighbor_advertisement)))
        return nd_error::not_nd;
    // RFC 4861 §7.1.1 / §7.1.2, in its order.
    if (ip.hop_limit != 255) return nd_error::bad_hop_limit;
    if (msg.size() < 24) return nd_error::truncated;
    if (!icmpv6_checksum_ok(ip.src, ip.dst, msg)) return nd_error::bad_checksum;
    if (msg[1] != 0) return nd_error::bad_code;
    out = nd_repr{};
    out.type = static_cast<icmpv6_type>(msg[0]);
    const bool ns = out.type == icmpv6_type::neighbor_solicitation;
    out.target = ipv6_addr::from_bytes(msg.subspan<8, 16>());
    if (out.target.is_multicast()) return nd_error::multicast_target;
    if (!ns) {
        out.router = (msg[4] & 0x80) != 0;
        out.solicited = (msg[4] & 0x40) != 0;
        out.override_ = (msg[4] & 0x20) != 0;
        if (out.solicited && ip.dst.is_multicast()) return nd_error::solicited_to_multicast;
    }
    bool lladdr_option = false;
    for (size_t off = 24; off < msg.size();) {
        if (msg.size() - off < 2) return nd_error::truncated;
        const size_t len = size_t{msg[off + 1]} * 8;
        if (len == 0) return nd_error::bad_option;
        if (len > msg.size() - off) return nd_error::truncated;
        const uint8_t type = msg[off];
        if (type == (ns ? ll_source : ll_target)) {
            lladdr_option = true;
            // Ethernet: 6 bytes after type and length (RFC 2464 §6); a longer
            // option is another link's, and not one ferry can use.
            if (len == 8) out.lladdr = mac_addr::from_bytes(msg.subspan(off + 2).first<6>());
        }
        off += len;
    }
    if (ns && ip.src.is_unspecified() &&
        (lladdr_option || ip.dst != out.target.solicited_node()))
        return nd_error::bad_dad;
    return nd_error::none;
}

void nd_repr::emit(const ipv6_addr &src, const ipv6_addr &dst, std::span<uint8_t> out) const noexcept {
    const bool ns = type == icmpv6_type::neighbor_solicitation;
    out[0] = static_cast<uint8_t>(type);
    out[1] = 0;
    out[2] = out[3] = 0;
    out[4] = ns ? 0
                : static_cast<uint8_t>((router ? 0x80 : 0) | (solicited ? 0x40 : 0) |
                                       (override_ ? 0x20 : 0));
    out[5] = out[6] = out[7] = 0;
    target.write(out.subspan<8, 16>());
    if (lladdr) {
        out[24] = ns ? ll_source : ll_target;
        out[25] = 1;  // 8 bytes
        lladdr->write(out.subspan<26, 6>());
    }
    const std::span<uint8_t> msg = out.first(len());
    wire::store_be16(out.data() + 2, icmpv6_checksum(src, dst, msg));
}

}  // namespace ferry::net

