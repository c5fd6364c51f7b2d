// The four numbers that name a TCP connection (RFC 9293 §3.3.1: "a pair of
// sockets"), seen from this host: local is ours, remote is the peer's. Both
// addresses are of one family (ip_addr.h: IPv4 or IPv6).
#pragma once

#include <cstdint>

#include "ferry/net/ip_addr.h"

namespace ferry::net {

struct tcp_tuple {
    ip_addr local_addr;
    ip_addr remote_addr;
    uint16_t local_port = 0;
    uint16_t remote_port = 0;

    friend constexpr bool operator==(const tcp_tuple &, const tcp_tuple &) noexcept = default;

    [[nodiscard]] constexpr bool is_v6() const noexcept { return local_addr.is_v6(); }
};

}  // namespace ferry::net
