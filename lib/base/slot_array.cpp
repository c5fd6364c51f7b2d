#include "ferry/base/slot_array.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "slot_mapping.h"

namespace ferry {

namespace detail {

void slot_space::map(std::size_t elem_bytes, uint32_t capacity) {
    cap_ = capacity;
    const slot_mapping m = map_slots(elem_bytes, capacity);
    if (m.base == nullptr && m.bytes != 0) {
        // As a failed new at start-up would (make_unique elsewhere): no
        // address space for the slots is not a state to serve from.
        std::fprintf(stderr, "ferry: cannot reserve %zu bytes of address space for %u slots: %s\n",
                     m.bytes, capacity, std::strerror(errno));
        std::abort();
    }
    base_ = m.base;
    free_ = m.free;
    map_bytes_ = m.bytes;
}

slot_space::~slot_space() {
    unmap_slots(base_, map_bytes_);
}

}  // namespace detail

}  // namespace ferry
