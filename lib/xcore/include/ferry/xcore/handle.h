// A connection handle that can cross cores: which lcore owns the connection,
// its slot in that lcore's connection pool, and the slot's generation. A slot's
// generation increments each time it is reused, so a message that arrives for
// a connection that closed meanwhile carries a stale generation and is
// detected (and its mbufs freed) instead of being delivered to the slot's new
// owner (DESIGN.md, "Cross-core work").
#pragma once

#include <cstdint>

namespace ferry::xcore {

struct conn_handle {
    uint16_t lcore = UINT16_MAX;
    uint16_t generation = 0;
    uint32_t index = UINT32_MAX;

    [[nodiscard]] constexpr bool valid() const noexcept { return lcore != UINT16_MAX; }

    // One 64-bit word, so a ring message carries it by value.
    [[nodiscard]] constexpr uint64_t pack() const noexcept {
        return uint64_t(lcore) << 48 | uint64_t(generation) << 32 | index;
    }
    [[nodiscard]] static constexpr conn_handle unpack(uint64_t v) noexcept {
        return {static_cast<uint16_t>(v >> 48), static_cast<uint16_t>(v >> 32),
                static_cast<uint32_t>(v)};
    }
    friend constexpr bool operator==(conn_handle, conn_handle) = default;
};

static_assert(sizeof(conn_handle) == 8);
static_assert(conn_handle::unpack(conn_handle{3, 7, 42}.pack()) == conn_handle{3, 7, 42});

// Generations wrap: a slot reused 65536 times between a message's send and its
// receipt would alias. Pools size slots so that reuse cannot outrun a ring
// (a message spends microseconds in flight).
[[nodiscard]] constexpr bool is_current(conn_handle h, uint16_t slot_generation) noexcept {
    return h.generation == slot_generation;
}

}  // namespace ferry::xcore
