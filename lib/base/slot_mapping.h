// The address space behind a slot_array (slot_array.h) and a bounded
// block_pool (block_pool.h): `count` elements from a page boundary (so
// aligned for any element, up to a page), then a stack of `count` uint32_t
// free indices; one mapping (mmap, MAP_NORESERVE) of which no page is
// touched here. Private to lib/base.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::detail {

struct slot_mapping {
    std::byte *base = nullptr;  // the elements; null: nothing is mapped
    uint32_t *free = nullptr;   // the free-index stack, after the elements
    std::size_t bytes = 0;      // the mapping's length
};

// Maps the space for `count` elements of `elem_bytes`. Returns the mapping;
// its base is null when there is nothing to map (`count` 0: bytes is 0) or
// when mmap failed (bytes is the length asked for, errno says why). What a
// failure means is the caller's to decide.
[[nodiscard]] slot_mapping map_slots(std::size_t elem_bytes, uint32_t count) noexcept;
// Unmaps what map_slots() mapped (nothing if its base is null).
void unmap_slots(std::byte *base, std::size_t bytes) noexcept;

}  // namespace ferry::detail
