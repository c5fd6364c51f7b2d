// Short names by slot (name_table.h).
#include "ferry/base/name_table.h"

#include <algorithm>
#include <cstring>

namespace ferry {

name_table::name_table(size_t capacity)
    : cap_(capacity), entries_(std::make_unique<entry[]>(std::max<size_t>(1, capacity))) {}

bool name_table::name(size_t slot, std::string_view text) noexcept {
    if (slot >= cap_ || text.empty()) return false;
    entry &e = entries_[slot];
    if (e.len.load(std::memory_order_relaxed) != 0) return false;
    const size_t n = std::min(text.size(), max_len);
    std::memcpy(e.text, text.data(), n);
    e.len.store(static_cast<uint8_t>(n), std::memory_order_release);
    return true;
}

std::string_view name_table::operator[](size_t slot) const noexcept {
    if (slot >= cap_) return {};
    const entry &e = entries_[slot];
    return {e.text, e.len.load(std::memory_order_acquire)};
}

}  // namespace ferry
