#include "ferry/net/tcp_isn.h"

#include <array>

#include "ferry/net/byte_order.h"

namespace ferry::net {

uint32_t tcp_isn_generator::offset(const tcp_tuple &t) const noexcept {
    std::array<uint8_t, 36> in{};
    std::size_t n = t.local_addr.put(in.data());
    wire::store_be16(in.data() + n, t.local_port);
    n += 2;
    n += t.remote_addr.put(in.data() + n);
    wire::store_be16(in.data() + n, t.remote_port);
    return static_cast<uint32_t>(siphash24(key_, std::span(in.data(), n + 2)));
}

uint32_t tcp_ts_offset(const siphash_key &key, const ip_addr &local,
                       const ip_addr &remote) noexcept {
    std::array<uint8_t, 32> in{};
    std::size_t n = local.put(in.data());
    n += remote.put(in.data() + n);
    return static_cast<uint32_t>(siphash24(key, std::span(in.data(), n)));
}

}  // namespace ferry::net
