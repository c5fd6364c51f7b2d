// The unit of cross-core work (DESIGN.md, "Cross-core work"): 24 bytes carried
// by value in a per-pair SPSC rte_ring, so handing a message over is a copy of
// three words and no allocation. The mbuf chain it names moves with it: after
// outbox::send() returned true the sender must not touch the chain again; the
// receiver's handler owns it (and frees or forwards it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "ferry/xcore/handle.h"

struct rte_mbuf;

namespace ferry::xcore {

struct message {
    rte_mbuf *mbuf = nullptr;  // chain handed over (ownership moves), may be null
    uint64_t handle = 0;       // conn_handle::pack() of the connection this is for
    uint16_t opcode = 0;       // what the receiver is asked to do (defined by the layer above)
    uint16_t flags = 0;        // e.g. end-of-message (defined by the layer above)
    uint32_t arg = 0;          // opcode-specific
};

// rte_ring_*_elem requires a multiple of 4 bytes; 24 keeps eight messages in
// three cache lines and lets the ring copy them with 8-byte moves.
inline constexpr unsigned message_size = 24;
static_assert(sizeof(message) == message_size);
static_assert(std::is_trivially_copyable_v<message>);
static_assert(alignof(message) == 8);

// What the receiving lcore's check of a message's connection handle found.
enum class handle_status : uint8_t {
    current,       // the handle names a live connection of this lcore: deliver
    stale,         // the slot was reused since the message was sent: drop (release())
    foreign,       // the handle names another lcore (or is invalid): a routing bug, drop
    out_of_range,  // slot index beyond this lcore's pool: a corrupt handle, drop
};

[[nodiscard]] const char *name(handle_status s) noexcept;

// The receiver's check before it delivers a message to a connection slot.
// `self` is the lcore id this receiver's handles carry; `slot_generations` is
// its pool's generation per slot (incremented on every reuse). Pure: no
// counters, the caller counts by status.
[[nodiscard]] constexpr handle_status check_handle(
    uint64_t packed, uint16_t self, std::span<const uint32_t> slot_generations) noexcept {
    const conn_handle h = conn_handle::unpack(packed);
    if (!h.valid() || h.lcore != self)
        return handle_status::foreign;
    if (h.index >= slot_generations.size())
        return handle_status::out_of_range;
    return is_current(h, slot_generations[h.index]) ? handle_status::current : handle_status::stale;
}

// Frees the message's mbuf chain (if any) and clears the pointer: for
// messages that will not be delivered (stale or foreign handle, shutdown).
void release(message &m) noexcept;

}  // namespace ferry::xcore
