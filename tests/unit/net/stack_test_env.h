// Shared between the test main (which creates it) and the stack tests.
#pragma once

struct rte_mempool;

namespace ferry::net::test {
// Null if the EAL could not start: every stack test then fails on it.
extern rte_mempool *g_pool;
}  // namespace ferry::net::test
