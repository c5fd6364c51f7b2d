#include "ferry/net/ethernet.h"

namespace ferry::net {

eth_error ethernet_frame::check() const noexcept {
    if (buf_.size() < header_len) {
        return eth_error::truncated;
    }
    // A tagged frame carries the TPID where the EtherType would be (802.1Q §9.5).
    const ether_type t = type();
    if (t == ether_type::vlan || t == ether_type::qinq) {
        return eth_error::vlan_unsupported;
    }
    return eth_error::none;
}

eth_error ethernet_repr::parse(const ethernet_frame &f, ethernet_repr &out) noexcept {
    if (const eth_error e = f.check(); e != eth_error::none) {
        return e;
    }
    out.dst = f.dst();
    out.src = f.src();
    out.type = f.type();
    return eth_error::none;
}

void ethernet_repr::emit(ethernet_frame &f) const noexcept {
    f.set_dst(dst);
    f.set_src(src);
    f.set_type(type);
}

}  // namespace ferry::net
