#include "ferry/net/arp.h"

namespace ferry::net {

arp_error arp_packet::check() const noexcept {
    if (buf_.size() < fixed_len) {
        return arp_error::truncated;
    }
    if (buf_.size() < announced_len()) {
        return arp_error::truncated;
    }
    return arp_error::none;
}

arp_error arp_repr::parse(const arp_packet &p, arp_repr &out) noexcept {
    if (const arp_error e = p.check(); e != arp_error::none) {
        return e;
    }
    // RFC 826: "?Do I have the hardware type in ar$hrd?" ... "?Do I speak the
    // protocol in ar$pro?" -- anything else is silently discarded.
    if (p.hardware_type() != arp_packet::hrd_ethernet) {
        return arp_error::unsupported_hardware;
    }
    if (p.protocol_type() != arp_packet::pro_ipv4) {
        return arp_error::unsupported_protocol;
    }
    // "[optionally check the hardware length ar$hln]": we must, the fixed-offset
    // accessors depend on it.
    if (p.hardware_len() != mac_addr::size || p.protocol_len() != ipv4_addr::size) {
        return arp_error::bad_address_length;
    }
    const uint16_t op = p.operation();
    if (op != static_cast<uint16_t>(arp_op::request) &&
        op != static_cast<uint16_t>(arp_op::reply)) {
        return arp_error::unsupported_operation;
    }
    out.op = static_cast<arp_op>(op);
    out.sender_hw = p.sender_hw();
    out.sender_ip = p.sender_ip();
    out.target_hw = p.target_hw();
    out.target_ip = p.target_ip();
    return arp_error::none;
}

void arp_repr::emit(arp_packet &p) const noexcept {
    p.set_hardware_type(arp_packet::hrd_ethernet);
    p.set_protocol_type(arp_packet::pro_ipv4);
    p.set_hardware_len(mac_addr::size);
    p.set_protocol_len(ipv4_addr::size);
    p.set_operation(static_cast<uint16_t>(op));
    p.set_sender_hw(sender_hw);
    p.set_sender_ip(sender_ip);
    p.set_target_hw(target_hw);
    p.set_target_ip(target_ip);
}

}  // namespace ferry::net
