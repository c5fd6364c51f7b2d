// Fixed-size blocks handed out while an object needs them and taken back
// when it no longer does: the TCP queues' rings (net/tcp_block_pool.h) and
// the proxy's head buffers (a head's bytes and fields while it is read).
//
// A bounded pool reserves `blocks` blocks of address space at construction
// (mmap, MAP_NORESERVE) and touches none: a block's pages become resident the
// first time it is handed out. Freed blocks are handed out again last-freed-
// first, so the resident set follows the peak number of blocks in use at
// once, not the number of objects that ever held one. An unbounded pool
// (blocks = 0) takes each block from the C heap (aligned_alloc) and frees it
// when given back.
//
// One thread uses a pool: no locking. Its figures (in_use() ...) may be read
// from any thread (telemetry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/base/counter.h"

namespace ferry {

class block_pool {
public:
    // `block_bytes`: a multiple of `align` (a power of two, at most the page
    // size); blocks are aligned to it. `blocks` == 0: unbounded. A bounded
    // pool whose address space cannot be reserved hands out nothing (every
    // take() fails and is counted; capacity() and reserved_bytes() are 0),
    // where a slot_array aborts: its users already live with a dry pool.
    block_pool(std::size_t block_bytes, std::size_t align, uint32_t blocks) noexcept;
    ~block_pool();
    block_pool(const block_pool &) = delete;
    block_pool &operator=(const block_pool &) = delete;

    // A block, contents undefined; null when the pool is exhausted (counted
    // in exhausted()).
    [[nodiscard]] void *take() noexcept;
    // Gives back a block take() returned (null is ignored).
    void give(void *b) noexcept;

    [[nodiscard]] std::size_t block_size() const noexcept { return block_; }
    [[nodiscard]] bool bounded() const noexcept { return !heap_; }
    [[nodiscard]] uint32_t capacity() const noexcept { return capacity_; }
    [[nodiscard]] uint32_t in_use() const noexcept { return static_cast<uint32_t>(in_use_.get()); }
    [[nodiscard]] uint32_t peak() const noexcept { return static_cast<uint32_t>(peak_.get()); }
    // Blocks ever handed out of a bounded pool (whose pages were touched).
    [[nodiscard]] uint32_t touched() const noexcept { return static_cast<uint32_t>(touched_.get()); }
    [[nodiscard]] uint64_t exhausted() const noexcept { return exhausted_.get(); }
    // The address space reserved (the most the pool can make resident).
    [[nodiscard]] std::size_t reserved_bytes() const noexcept { return map_bytes_; }

private:
    std::size_t block_;
    std::size_t align_;
    std::byte *arena_ = nullptr;  // capacity_ blocks (bounded)
    uint32_t *free_ = nullptr;    // stack of freed block indices, in the same mapping
    std::size_t map_bytes_ = 0;
    uint32_t capacity_ = 0;
    uint32_t nfree_ = 0;  // entries on the free stack
    uint32_t fresh_ = 0;  // blocks [fresh_, capacity_) never handed out
    bool heap_ = false;
    counter in_use_, peak_, touched_, exhausted_;
};

}  // namespace ferry
