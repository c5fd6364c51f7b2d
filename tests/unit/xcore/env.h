// Shared state of the lib/xcore unit tests, set up by main.cpp.
#pragma once

#include <sched.h>

struct rte_mempool;

namespace ferry::xcore::test {

// A small pktmbuf pool (null if the EAL did not come up).
extern rte_mempool *g_pool;
// Makes the calling thread runnable on every CPU the process had before
// rte_eal_init pinned the main thread (ferry::test::original_cpus()).
void unpin_this_thread() noexcept;

}  // namespace ferry::xcore::test
