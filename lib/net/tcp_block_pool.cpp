#include "ferry/net/tcp_block_pool.h"

#include <sys/mman.h>

#include <cstdlib>

namespace ferry::net {

tcp_block_pool::tcp_block_pool(uint32_t blocks) noexcept {
    if (blocks == 0) {
        heap_ = true;
        return;
    }
    // Blocks first (page-aligned), then the free stack; one mapping, untouched.
    const std::size_t stack = (std::size_t(blocks) * sizeof(uint32_t) + block_bytes - 1) /
                              block_bytes * block_bytes;
    const std::size_t bytes = std::size_t(blocks) * block_bytes + stack;
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        // No address space: every take() fails and is counted (the queues
        // behave as full); the connections still open and close.
        return;
    }
    arena_ = static_cast<std::byte *>(p);
    free_ = reinterpret_cast<uint32_t *>(arena_ + std::size_t(blocks) * block_bytes);
    map_bytes_ = bytes;
    capacity_ = blocks;
}

tcp_block_pool::~tcp_block_pool() {
    if (arena_ != nullptr) munmap(arena_, map_bytes_);
}

void *tcp_block_pool::take() noexcept {
    void *b = nullptr;
    if (arena_ != nullptr) {
        if (nfree_ != 0)
            b = arena_ + std::size_t(free_[--nfree_]) * block_bytes;
        else if (fresh_ < capacity_) {
            b = arena_ + std::size_t(fresh_++) * block_bytes;
            touched_.set(fresh_);
        }
    } else if (heap_) {
        b = std::aligned_alloc(block_bytes, block_bytes);
    }
    if (b == nullptr) {
        exhausted_.inc();
        return nullptr;
    }
    in_use_.inc();
    if (in_use_.get() > peak_.get()) peak_.set(in_use_.get());
    return b;
}

void tcp_block_pool::give(void *b) noexcept {
    if (b == nullptr) return;
    in_use_.dec();
    if (!heap_) {
        const auto idx = static_cast<uint32_t>((static_cast<std::byte *>(b) - arena_) / block_bytes);
        free_[nfree_++] = idx;
    } else {
        std::free(b);
    }
}

tcp_block_pool &tcp_block_pool::heap() noexcept {
    thread_local tcp_block_pool pool(0);
    return pool;
}

}  // namespace ferry::net
