// Test main for the lib/xcore unit tests: a minimal EAL (tests/common/test_eal.h;
// rings and the TSC clock need it) and a small pktmbuf pool for the ownership
// tests. rte_eal_init pins the main thread to its lcore; unpin_this_thread()
// restores the CPU set from before so that the reactor threads of the stress
// tests can run on every CPU.
#include <pthread.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "env.h"
#include "test_eal.h"

namespace ferry::xcore::test {
rte_mempool *g_pool = nullptr;

void unpin_this_thread() noexcept {
    const cpu_set_t &cpus = ferry::test::original_cpus();
    (void)pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
}
}  // namespace ferry::xcore::test

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    if (!ferry::test::eal_start(argv[0], "ferry-unit-xcore", 128)) return 1;
    ferry::xcore::test::g_pool =
        rte_pktmbuf_pool_create("xcore_test", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (ferry::xcore::test::g_pool == nullptr)
        std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
    ferry::xcore::test::unpin_this_thread();

    const int rc = RUN_ALL_TESTS();

    rte_mempool_free(ferry::xcore::test::g_pool);
    ferry::test::eal_stop();
    return rc;
}
