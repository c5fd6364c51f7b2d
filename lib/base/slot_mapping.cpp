#include "slot_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

namespace ferry::detail {

slot_mapping map_slots(std::size_t elem_bytes, uint32_t count) noexcept {
    // Elements first (page-aligned), then the free stack; one mapping, untouched.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t elems = (std::size_t(count) * elem_bytes + page - 1) / page * page;
    slot_mapping m;
    m.bytes = (elems + std::size_t(count) * sizeof(uint32_t) + page - 1) / page * page;
    if (m.bytes == 0) return m;
    void *p = mmap(nullptr, m.bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return m;
    m.base = static_cast<std::byte *>(p);
    m.free = reinterpret_cast<uint32_t *>(m.base + elems);
    return m;
}

void unmap_slots(std::byte *base, std::size_t bytes) noexcept {
    if (base != nullptr) munmap(base, bytes);
}

}  // namespace ferry::detail
