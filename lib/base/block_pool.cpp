#include "ferry/base/block_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace ferry {

block_pool::block_pool(std::size_t block_bytes, std::size_t align, uint32_t blocks) noexcept
    : block_(block_bytes), align_(align) {
    if (blocks == 0) {
        heap_ = true;
        return;
    }
    // Blocks first (page-aligned), then the free stack; one mapping, untouched.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t arena = std::size_t(blocks) * block_bytes;
    const std::size_t stack = std::size_t(blocks) * sizeof(uint32_t);
    const std::size_t bytes = ((arena + page - 1) / page * page + stack + page - 1) / page * page;
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        // No address space: every take() fails and is counted; the users
        // treat that as a full queue or a refused connection.
        return;
    }
    arena_ = static_cast<std::byte *>(p);
    free_ = reinterpret_cast<uint32_t *>(arena_ + (arena + page - 1) / page * page);
    map_bytes_ = bytes;
    capacity_ = blocks;
}

block_pool::~block_pool() {
    if (arena_ != nullptr) munmap(arena_, map_bytes_);
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
