// A connection handle that can cross cores: which lcore owns the connection,
// its slot in that lcore's connection pool, and the slot's generation. A slot's
// generation increments each time it is reused, so a message that arrives for
// a connection that closed meanwhile carries a stale generation and is
// detected (and its mbufs freed) instead of being delivered to the slot's new
// owner (DESIGN.md, "Cross-core work").
#pragma once

#include <cstdint>

namespace ferry::xcore {

// Packed into one 64-bit word: lcore (8 bits) | index (24 bits) | generation
// (32 bits). The generation is the widest part on purpose: a stale handle is
// accepted only if its slot was reused exactly a multiple of 2^32 times while
// the message was in flight (microseconds), which cannot happen; 16 bits wrapped
// after 65,536 reuses, a few seconds of churn on one slot.
struct conn_handle {
    static constexpr uint16_t no_lcore = 0xff;           // invalid handle
    static constexpr uint16_t max_lcores = 0xff;         // lcores 0..254
    static constexpr uint32_t index_limit = 1u << 24;    // slots 0..2^24-1

    uint16_t lcore = no_lcore;
    uint32_t generation = 0;
    uint32_t index = index_limit - 1;

    [[nodiscard]] constexpr bool valid() const noexcept { return lcore < max_lcores; }

    // One 64-bit word, so a ring message carries it by value. lcore must be
    // below max_lcores (or no_lcore) and index below index_limit.
    [[nodiscard]] constexpr uint64_t pack() const noexcept {
        return uint64_t(lcore & 0xff) << 56 | uint64_t(index & (index_limit - 1)) << 32 |
               generation;
    }
    [[nodiscard]] static constexpr conn_handle unpack(uint64_t v) noexcept {
        return {static_cast<uint16_t>(v >> 56),
                static_cast<uint32_t>(v),
                static_cast<uint32_t>(v >> 32) & (index_limit - 1)};
    }
    friend constexpr bool operator==(conn_handle, conn_handle) = default;
};

static_assert(conn_handle::unpack(conn_handle{3, 7, 42}.pack()) == conn_handle{3, 7, 42});
static_assert(conn_handle::unpack(conn_handle{254, 0xffffffffu, conn_handle::index_limit - 1}.pack()) ==
              conn_handle{254, 0xffffffffu, conn_handle::index_limit - 1});
static_assert(!conn_handle::unpack(conn_handle{}.pack()).valid());

[[nodiscard]] constexpr bool is_current(conn_handle h, uint32_t slot_generation) noexcept {
    return h.generation == slot_generation;
}

}  // namespace ferry::xcore
