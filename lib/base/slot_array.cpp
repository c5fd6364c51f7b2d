#include "ferry/base/slot_array.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ferry {

namespace detail {

void slot_space::map(std::size_t elem_bytes, uint32_t capacity) {
    cap_ = capacity;
    // Elements first (page-aligned, so aligned for any T), then the free
    // stack; one mapping, untouched.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t elems = (std::size_t(capacity) * elem_bytes + page - 1) / page * page;
    const std::size_t bytes =
        (elems + std::size_t(capacity) * sizeof(uint32_t) + page - 1) / page * page;
    if (bytes == 0) return;
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        // As a failed new at start-up would (make_unique elsewhere): no
        // address space for the slots is not a state to serve from.
        std::fprintf(stderr, "ferry: cannot reserve %zu bytes of address space for %u slots: %s\n",
                     bytes, capacity, std::strerror(errno));
        std::abort();
    }
    base_ = static_cast<std::byte *>(p);
    free_ = reinterpret_cast<uint32_t *>(base_ + elems);
    map_bytes_ = bytes;
}

slot_space::~slot_space() {
    if (base_ != nullptr) munmap(base_, map_bytes_);
}

}  // namespace detail

}  // namespace ferry
