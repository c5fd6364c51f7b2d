#include "ferry/net/ipv6.h"

#include <algorithm>

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

namespace {

constexpr bool is_extension(uint8_t nh) noexcept {
    switch (static_cast<ipv6_next>(nh)) {
        case ipv6_next::hop_by_hop:
        case ipv6_next::routing:
        case ipv6_next::fragment:
        case ipv6_next::destination:
            return true;
        default:
            return false;
    }
}

// A fragment header's offset and M flag (RFC 8200 §4.5), the reserved bits
// masked off: zero for an atomic fragment.
constexpr uint16_t frag_offset_more(const uint8_t *h) noexcept {
    return wire::load_be16(h + 2) & 0xfff9;
}

// Whether the upper layer behind the extension header `nh` at `off` of `d`
// is an ICMPv6 error message or redirect (RFC 4443 §2.4(e.1), (e.2)),
// skipping the headers by their lengths alone; true when it cannot be
// found in `d` (truncated chain, a later fragment). Precondition: off <= d.size().
bool about_icmpv6_error(std::span<const uint8_t> d, uint8_t nh, std::size_t off) noexcept {
    while (is_extension(nh)) {
        if (d.size() - off < 8) return true;  // every extension header has 8 bytes at least
        const bool frag = nh == static_cast<uint8_t>(ipv6_next::fragment);
        if (frag && (wire::load_be16(d.data() + off + 2) & 0xfff8) != 0) return true;
        const std::size_t len = frag ? 8 : (std::size_t{d[off + 1]} + 1) * 8;
        if (d.size() - off < len) return true;
        nh = d[off];
        off += len;
    }
    if (nh != static_cast<uint8_t>(ipv6_next::icmpv6)) return false;
    if (off >= d.size()) return true;
    return d[off] < 128 || d[off] == static_cast<uint8_t>(icmpv6_type::redirect);
}

// RFC 8200 §4.2: the TLV-encoded options of the Hop-by-Hop or Destination
// Options header `h` (all of it), which starts at byte `at` of the
// datagram. True to go on; else `w` says why not.
bool walk_options(std::span<const uint8_t> h, std::size_t at, ipv6_ext_walk &w) noexcept {
    constexpr uint8_t pad1 = 0, padn = 1;
    for (std::size_t i = 2; i < h.size();) {
        const uint8_t type = h[i];
        if (type == pad1) {  // "a single octet of padding": no length field
            ++i;
            continue;
        }
        if (h.size() - i < 2 || h.size() - i - 2 < h[i + 1]) {
            w.verdict = ipv6_ext_verdict::malformed;  // the option runs past its header
            return false;
        }
        if (type != padn) {
            // "the Option Type identifiers are internally encoded such that
            // their highest-order 2 bits specify the action that must be
            // taken if the processing IPv6 node does not recognize the
            // Option Type". Ferry recognizes none but the two paddings.
            switch (type >> 6) {
                case 0:  // "skip over this option and continue processing the header"
                    break;
                case 1:  // "discard the packet"
                    w.verdict = ipv6_ext_verdict::unknown_option;
                    return false;
                default:
                    // 10: "discard the packet and, regardless of whether or
                    // not the packet's Destination Address was a multicast
                    // address, send an ICMP Parameter Problem, Code 2,
                    // message to the packet's Source Address, pointing to
                    // the unrecognized Option Type"; 11: the same "only if
                    // the packet's Destination Address was not a multicast
                    // address".
                    w.verdict = ipv6_ext_verdict::unknown_option;
                    w.answer = true;
                    w.code = icmpv6_param_code::option;
                    w.pointer = static_cast<uint32_t>(at + i);
                    w.multicast_ok = (type >> 6) == 2;
                    return false;
            }
        }
        i += 2 + std::size_t{h[i + 1]};
    }
    return true;
}

}  // namespace

ipv6_ext_walk walk_ipv6_ext(std::span<const uint8_t> dgram, const ipv6_repr &ip) noexcept {
    ipv6_ext_walk w;
    const std::size_t end = ipv6_repr::header_len + ip.payload_len;
    const std::span<const uint8_t> d = dgram.first(std::min(dgram.size(), end));
    if (d.size() < ipv6_repr::header_len) {  // not from ipv6_repr::parse on these bytes
        w.verdict = ipv6_ext_verdict::beyond;
        return w;
    }
    uint8_t nh = ip.next_header;
    std::size_t at = 6;  // where `nh` was read
    // Invariant: off <= d.size() <= end.
    std::size_t off = ipv6_repr::header_len;
    for (;;) {
        const auto next = static_cast<ipv6_next>(nh);
        if (next == ipv6_next::no_next) {
            // §4.7: "there is nothing following that header"; bytes after
            // it "must be ignored".
            w.verdict = ipv6_ext_verdict::no_next;
            return w;
        }
        if (!is_extension(nh)) {
            w.verdict = ipv6_ext_verdict::upper;
            w.next_header = nh;
            w.offset = static_cast<uint32_t>(off);
            w.next_header_at = static_cast<uint32_t>(at);
            return w;
        }
        if (next == ipv6_next::hop_by_hop && off != ipv6_repr::header_len) {
            // §4.3: it "must immediately follow the IPv6 header". Elsewhere
            // 0 is an unrecognized Next Header (RFC 2460 §4 said so; Linux
            // answers it with code 1 too).
            w.verdict = ipv6_ext_verdict::misplaced_hop_by_hop;
            w.answer = true;
            w.code = icmpv6_param_code::next_header;
            w.pointer = static_cast<uint32_t>(at);
            w.about_icmpv6_error = about_icmpv6_error(d, nh, off);
            return w;
        }
        // Every extension header is 8 bytes or more: a fragment header
        // exactly 8 (§4.5), the others 8 plus 8 per unit of Hdr Ext Len.
        if (end - off < 8) {
            w.verdict = ipv6_ext_verdict::malformed;
            return w;
        }
        if (d.size() - off < 8) {
            w.verdict = ipv6_ext_verdict::beyond;
            return w;
        }
        const std::size_t len = next == ipv6_next::fragment ? 8 : (std::size_t{d[off + 1]} + 1) * 8;
        if (end - off < len) {
            w.verdict = ipv6_ext_verdict::malformed;
            return w;
        }
        if (d.size() - off < len) {
            w.verdict = ipv6_ext_verdict::beyond;
            return w;
        }
        const std::span<const uint8_t> h = d.subspan(off, len);
        switch (next) {
            case ipv6_next::hop_by_hop:
            case ipv6_next::destination:
                if (!walk_options(h, off, w)) {
                    if (w.answer) w.about_icmpv6_error = about_icmpv6_error(d, nh, off);
                    return w;
                }
                break;
            case ipv6_next::routing:
                // §4.4: an unrecognized Routing Type (ferry is no router and
                // recognizes none): "If Segments Left is zero, the node must
                // ignore the Routing header and proceed to process the next
                // header"; else "discard the packet and send an ICMP
                // Parameter Problem, Code 0, message to the packet's Source
                // Address, pointing to the unrecognized Routing Type".
                if (h[3] != 0) {
                    w.verdict = ipv6_ext_verdict::routing;
                    w.answer = true;
                    w.code = icmpv6_param_code::header_field;
                    w.pointer = static_cast<uint32_t>(off + 2);
                    w.about_icmpv6_error = about_icmpv6_error(d, nh, off);
                    return w;
                }
                break;
            default:  // fragment
                // RFC 6946 §4: an atomic fragment (offset 0, M 0) "MUST be
                // processed in isolation"; a real one goes to reassembly
                // (the stack's, ip_reassembly.h), told where the Fragment
                // header is and which field names it.
                if (frag_offset_more(h.data()) != 0) {
                    w.verdict = ipv6_ext_verdict::fragment;
                    w.offset = static_cast<uint32_t>(off);
                    w.next_header_at = static_cast<uint32_t>(at);
                    return w;
                }
                break;
        }
        at = off;  // every extension header's Next Header is its first byte
        nh = h[0];
        off += len;
    }
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

