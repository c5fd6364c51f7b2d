// Test main for the lib/proxy unit tests: a minimal EAL (tests/common) and
// one pktmbuf pool that both sides of the bed (bed.h) draw from.
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "bed.h"
#include "test_eal.h"

namespace ferry::proxy::test {
rte_mempool *g_pool = nullptr;
}

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    if (ferry::test::eal_start(argv[0], "ferry-unit-proxy", 128)) {
        ferry::proxy::test::g_pool = rte_pktmbuf_pool_create(
            "proxy_test", 16383, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
        if (ferry::proxy::test::g_pool == nullptr)
            std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
    }
    const int rc = RUN_ALL_TESTS();
    rte_mempool_free(ferry::proxy::test::g_pool);
    ferry::test::eal_stop();
    return rc;
}
