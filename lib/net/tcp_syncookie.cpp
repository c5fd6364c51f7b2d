#include "ferry/net/tcp_syncookie.h"

#include "ferry/net/byte_order.h"

namespace ferry::net {

namespace {
constexpr uint32_t cookie_bits = 24;
constexpr uint32_t cookie_mask = (1u << cookie_bits) - 1;
}  // namespace

uint32_t tcp_syncookies::hash(const siphash_key &k, const tcp_tuple &t, uint32_t count,
                              seq_num client_isn) noexcept {
    // Client first, as the SYN names them (Linux: saddr, daddr, sport, dport, count).
    std::array<uint8_t, 44> in{};
    std::size_t n = t.remote_addr.put(in.data());
    n += t.local_addr.put(in.data() + n);
    wire::store_be16(in.data() + n, t.remote_port);
    wire::store_be16(in.data() + n + 2, t.local_port);
    wire::store_be32(in.data() + n + 4, count);
    wire::store_be32(in.data() + n + 8, client_isn.value());
    return static_cast<uint32_t>(siphash24(k, std::span(in.data(), n + 12)));
}

seq_num tcp_syncookies::encode(const tcp_tuple &t, seq_num client_isn, uint16_t client_mss,
                               uint64_t now_ns) const noexcept {
    const uint32_t count = time_slot(now_ns);
    const uint32_t data = mss_index(client_mss);
    return seq_num(hash(k0_, t, 0, seq_num(0)) + client_isn.value() + (count << cookie_bits) +
                   ((hash(k1_, t, count, client_isn) + data) & cookie_mask));
}

syncookie_error tcp_syncookies::decode(const tcp_tuple &t, seq_num client_isn, seq_num cookie,
                                       uint64_t now_ns, uint16_t &mss) const noexcept {
    const uint32_t count = time_slot(now_ns);
    // Strip the outer layer: what remains is (slot << 24) + (H1(slot) + m) mod 2^24.
    const uint32_t c = cookie.value() - hash(k0_, t, 0, seq_num(0)) - client_isn.value();
    // Slots elapsed since the cookie was made, modulo the 8 bits that carry it.
    const uint32_t age = (count - (c >> cookie_bits)) & (0xffffffffu >> cookie_bits);
    if (age >= max_age_slots) {
        return syncookie_error::expired;
    }
    const uint32_t data = (c - hash(k1_, t, count - age, client_isn)) & cookie_mask;
    if (data >= mss_table.size()) {
        return syncookie_error::bad_cookie;
    }
    mss = mss_table[data];
    return syncookie_error::none;
}

}  // namespace ferry::net
