// Shared state of the lib/xcore unit tests, set up by main.cpp.
#pragma once

#include <sched.h>

struct rte_mempool;

namespace ferry::xcore::test {

// A small pktmbuf pool (null if the EAL did not come up).
extern rte_mempool *g_pool;
// The CPUs this process may run on, saved before rte_eal_init pinned the main
// thread to one of them: test threads restore it so that they spread out.
extern cpu_set_t g_cpus;
// Makes the calling thread runnable on every CPU in g_cpus.
void unpin_this_thread() noexcept;

}  // namespace ferry::xcore::test
