// The blocks the TCP queues' rings live in (tcp_conn_queues.h): a block_pool
// (ferry/base/block_pool.h) of 4 KiB blocks, handed to a queue while it holds
// data and taken back when it empties.
//
// Why: an idle keep-alive connection has nothing queued either way and
// nothing outstanding, so it needs no rings and no RACK records. Held inline, the send ring, the receive ring and the
// out-of-order store cost every connection slot ~9.5 KiB, resident from
// start-up; from this pool they cost what the connections that hold data at
// the same moment use (issue 15: memory per idle connection).
//
// tcp_layer sizes its pool at blocks_per_connection per connection slot, so
// take() cannot fail there; a failure (a pool sized smaller) is counted, and
// the queue then behaves as full (tcp_conn drops the segment, or the
// application keeps its chain). heap() is an unbounded pool, one per thread,
// for queues made outside a tcp_layer (unit tests, tools).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/base/block_pool.h"

namespace ferry::net {

class tcp_block_pool : public block_pool {
public:
    static constexpr std::size_t block_bytes = 4096;
    // A send ring, a receive ring, an out-of-order store and RACK's
    // transmission records (tcp_rack.h).
    static constexpr uint32_t blocks_per_connection = 4;

    // `blocks` == 0: unbounded, over the C heap.
    explicit tcp_block_pool(uint32_t blocks) noexcept
        : block_pool(block_bytes, block_bytes, blocks) {}

    // The calling thread's unbounded pool.
    [[nodiscard]] static tcp_block_pool &heap() noexcept {
        thread_local tcp_block_pool pool(0);
        return pool;
    }
};

}  // namespace ferry::net
