// Test main for the lib/net unit tests: a minimal EAL (tests/common/test_eal.h)
// and one small pktmbuf pool for the stack tests. The pure tests (wire
// formats, neighbor table, TCP pieces) need neither.
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "stack_test_env.h"
#include "test_eal.h"

namespace ferry::net::test {
rte_mempool *g_pool = nullptr;
}

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    if (ferry::test::eal_start(argv[0], "ferry-unit-net", 64)) {
        // Enough for a full tx queue (1024) plus what a test holds on the side.
        ferry::net::test::g_pool = rte_pktmbuf_pool_create(
            "net_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
        if (ferry::net::test::g_pool == nullptr)
            std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
    }
    // Without the EAL the stack tests fail on the missing pool; the pure tests still run.
    const int rc = RUN_ALL_TESTS();
    rte_mempool_free(ferry::net::test::g_pool);
    ferry::test::eal_stop();
    return rc;
}
