#include "ferry/net/icmp.h"

#include <cstring>

#include "ferry/net/checksum.h"

namespace ferry::net {

icmp_error icmpv4_packet::check() const noexcept {
    if (const icmp_error e = check_len(); e != icmp_error::none) {
        return e;
    }
    if (!verify_checksum()) {
        return icmp_error::bad_checksum;
    }
    return icmp_error::none;
}

bool icmpv4_packet::verify_checksum() const noexcept {
    return checksum_ok(buf_);
}

void icmpv4_packet::fill_checksum() noexcept {
    set_checksum(0);
    set_checksum(ferry::net::checksum(buf_));
}

icmp_error icmp_echo_repr::parse(const icmpv4_packet &p, icmp_echo_repr &out) noexcept {
    if (const icmp_error e = p.check(); e != icmp_error::none) {
        return e;
    }
    const uint8_t t = p.type();
    if ((t != static_cast<uint8_t>(icmp_type::echo_request) &&
         t != static_cast<uint8_t>(icmp_type::echo_reply)) ||
        p.code() != 0) {
        return icmp_error::unsupported;
    }
    out.type = static_cast<icmp_type>(t);
    out.ident = p.echo_ident();
    out.seq = p.echo_seq();
    out.data = p.payload();
    return icmp_error::none;
}

void icmp_echo_repr::emit(icmpv4_packet &p) const noexcept {
    // Data first: it may alias the buffer (a reply built over its request).
    std::span<uint8_t> dst = p.payload();
    if (!data.empty() && dst.data() != data.data()) {
        std::memmove(dst.data(), data.data(), data.size());
    }
    p.set_type(static_cast<uint8_t>(type));
    p.set_code(0);
    p.set_echo_ident(ident);
    p.set_echo_seq(seq);
    p.fill_checksum();
}

}  // namespace ferry::net
