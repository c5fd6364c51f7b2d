// The four numbers that name a TCP connection (RFC 9293 §3.3.1: "a pair of
// sockets"), seen from this host: local is ours, remote is the peer's.
#pragma once

#include <cstdint>

#include "ferry/net/addr.h"

namespace ferry::net {

struct tcp_tuple {
    ipv4_addr local_addr;
    ipv4_addr remote_addr;
    uint16_t local_port = 0;
    uint16_t remote_port = 0;

    friend constexpr bool operator==(const tcp_tuple &, const tcp_tuple &) noexcept = default;
};

}  // namespace ferry::net
