#include "ferry/base/block_pool.h"

#include <cstdlib>

#include "slot_mapping.h"

namespace ferry {

block_pool::block_pool(std::size_t block_bytes, std::size_t align, uint32_t blocks) noexcept
    : block_(block_bytes), align_(align) {
    if (blocks == 0) {
        heap_ = true;
        return;
    }
    // Blocks first (page-aligned), then the free stack: a slot array's
    // mapping (slot_mapping.h), untouched.
    const detail::slot_mapping m = detail::map_slots(block_bytes, blocks);
    if (m.base == nullptr) {
        // No address space: every take() fails and is counted; the users
        // treat that as a full queue or a refused connection.
        return;
    }
    arena_ = m.base;
    free_ = m.free;
    map_bytes_ = m.bytes;
    capacity_ = blocks;
}

block_pool::~block_pool() {
    detail::unmap_slots(arena_, map_bytes_);
}

void *block_pool::take() noexcept {
    void *b = nullptr;
    if (arena_ != nullptr) {
        if (nfree_ != 0) {
            b = arena_ + std::size_t(free_[--nfree_]) * block_;
        } else if (fresh_ < capacity_) {
            b = arena_ + std::size_t(fresh_++) * block_;
            touched_.set(fresh_);
        }
    } else if (heap_) {
        b = std::aligned_alloc(align_, block_);
    }
    if (b == nullptr) {
        exhausted_.inc();
        return nullptr;
    }
    in_use_.inc();
    if (in_use_.get() > peak_.get()) peak_.set(in_use_.get());
    return b;
}

void block_pool::give(void *b) noexcept {
    if (b == nullptr) return;
    in_use_.dec();
    if (!heap_) {
        const auto idx = static_cast<uint32_t>((static_cast<std::byte *>(b) - arena_) / block_);
        free_[nfree_++] = idx;
    } else {
        std::free(b);
    }
}

}  // namespace ferry
