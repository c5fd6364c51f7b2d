#include "ferry/net/tcp_isn.h"

#include <array>

#include "ferry/net/byte_order.h"

namespace ferry::net {

uint32_t tcp_isn_generator::offset(const tcp_tuple &t) const noexcept {
    std::array<uint8_t, 12> in{};
    wire::store_be32(in.data(), t.local_addr.value());
    wire::store_be16(in.data() + 4, t.local_port);
    wire::store_be32(in.data() + 6, t.remote_addr.value());
    wire::store_be16(in.data() + 10, t.remote_port);
    return static_cast<uint32_t>(siphash24(key_, in));
}

uint32_t tcp_ts_offset(const siphash_key &key, ipv4_addr local, ipv4_addr remote) noexcept {
    std::array<uint8_t, 8> in{};
    wire::store_be32(in.data(), local.value());
    wire::store_be32(in.data() + 4, remote.value());
    return static_cast<uint32_t>(siphash24(key, in));
}

}  // namespace ferry::net
