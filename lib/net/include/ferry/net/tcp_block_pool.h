// Fixed-size blocks for the rings of the TCP queues (tcp_conn_queues.h),
// handed to a queue while it holds data and taken back when it empties.
//
// Why: an idle keep-alive connection has nothing queued either way, so it
// needs no rings. Held inline, the send ring, the receive ring and the
// out-of-order store cost every connection slot ~9.5 KiB, resident from
// start-up; from this pool they cost what the connections that hold data at
// the same moment use (issue 15: memory per idle connection).
//
// A bounded pool reserves `blocks` blocks of address space at construction
// (mmap, MAP_NORESERVE) and touches none: a block's pages become resident the
// first time it is handed out. Freed blocks are handed out again last-freed-
// first, so the resident set follows the peak number of blocks in use, not
// the number of connections that ever held data. tcp_layer sizes its pool at
// blocks_per_connection per connection slot, so take() cannot fail there; a
// failure (a pool sized smaller) is counted, and the queue then behaves as
// full (tcp_conn drops the segment, or the application keeps its chain).
//
// heap() is an unbounded pool over aligned_alloc, one per thread, for queues
// made outside a tcp_layer (unit tests, tools).
//
// One lcore uses a pool: no locking. Its figures (in_use() ...) may be read
// from any thread (telemetry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/base/counter.h"

namespace ferry::net {

class tcp_block_pool {
public:
    static constexpr std::size_t block_bytes = 4096;
    // A send ring, a receive ring and an out-of-order store.
    static constexpr uint32_t blocks_per_connection = 3;

    // `blocks` == 0: unbounded, over the C heap (see heap()).
    explicit tcp_block_pool(uint32_t blocks) noexcept;
    ~tcp_block_pool();
    tcp_block_pool(const tcp_block_pool &) = delete;
    tcp_block_pool &operator=(const tcp_block_pool &) = delete;

    // A block of block_bytes, aligned to block_bytes, contents undefined; null
    // when the pool is exhausted (counted in exhausted()).
    [[nodiscard]] void *take() noexcept;
    // Gives back a block take() returned (null is ignored).
    void give(void *b) noexcept;

    // The calling thread's unbounded pool.
    [[nodiscard]] static tcp_block_pool &heap() noexcept;

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
    std::byte *arena_ = nullptr;   // capacity_ blocks (bounded)
    uint32_t *free_ = nullptr;     // stack of freed block indices, in the same mapping
    std::size_t map_bytes_ = 0;
    uint32_t capacity_ = 0;
    uint32_t nfree_ = 0;           // entries on the free stack
    uint32_t fresh_ = 0;           // blocks [fresh_, capacity_) never handed out
    counter in_use_, peak_, touched_, exhausted_;
    bool heap_ = false;
};

}  // namespace ferry::net
