#include "ferry/net/ipv4.h"

#include "ferry/net/checksum.h"

namespace ferry::net {

ipv4_error ipv4_packet::check() const noexcept {
    if (buf_.size() < min_header_len) {
        return ipv4_error::truncated;
    }
    if (version() != 4) {
        return ipv4_error::bad_version;
    }
    if (ihl() < 5) {
        return ipv4_error::bad_ihl;
    }
    if (total_len() < header_len()) {
        return ipv4_error::bad_length;
    }
    if (buf_.size() < header_len() || datagram_bytes_ < total_len()) {
        return ipv4_error::truncated;
    }
    if (!verify_checksum()) {
        return ipv4_error::bad_checksum;
    }
    return ipv4_error::none;
}

bool ipv4_packet::verify_checksum() const noexcept {
    return checksum_ok(header());
}

void ipv4_packet::fill_checksum() noexcept {
    set_header_checksum(0);
    set_header_checksum(checksum(header()));
}

ipv4_error ipv4_repr::parse(const ipv4_packet &p, ipv4_repr &out) noexcept {
    if (const ipv4_error e = p.check(); e != ipv4_error::none) {
        return e;
    }
    out.src = p.src();
    out.dst = p.dst();
    out.protocol = static_cast<ip_protocol>(p.protocol());
    out.payload_len = static_cast<uint16_t>(p.total_len() - p.header_len());
    out.ttl = p.ttl();
    out.tos = p.tos();
    out.ident = p.ident();
    out.dont_fragment = p.dont_fragment();
    out.more_fragments = p.more_fragments();
    out.frag_offset = p.frag_offset();
    return ipv4_error::none;
}

void ipv4_repr::emit(ipv4_packet &p) const noexcept {
    p.set_version_ihl(4, static_cast<uint8_t>(header_len() / 4));
    p.set_tos(tos);
    p.set_total_len(static_cast<uint16_t>(header_len() + payload_len));
    p.set_ident(ident);
    p.set_flags_frag(dont_fragment, more_fragments, frag_offset);
    p.set_ttl(ttl);
    p.set_protocol(static_cast<uint8_t>(protocol));
    p.set_src(src);
    p.set_dst(dst);
    p.fill_checksum();
}

}  // namespace ferry::net
