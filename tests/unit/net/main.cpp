// Test main for the lib/net unit tests: brings up a minimal EAL (no hugepages,
// no PCI, no shared config files) and one small pktmbuf pool for the stack
// tests. The pure tests (wire formats, neighbor table) need neither.
//
// DPDK 22.11 notes: --no-huge implies legacy memory mode, which the EAL refuses
// to combine with --in-memory, so --no-shconf stands in for it (no config
// file, no multi-process socket). The run directory the EAL still creates
// (empty) is removed at exit.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stack_test_env.h"

namespace ferry::net::test {
rte_mempool *g_pool = nullptr;
}

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);

    // One lcore, on a CPU this process may run on (the machine is shared).
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int i = 0; i < CPU_SETSIZE; ++i) {
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
        }
    }
    const std::string lcore = std::to_string(cpu);
    const std::string prefix = "ferry-unit-net-" + std::to_string(getpid());
    std::vector<const char *> args = {argv[0],
                                      "-l",
                                      lcore.c_str(),
                                      "--no-huge",
                                      "-m",
                                      "64",
                                      "--no-pci",
                                      "--no-shconf",
                                      "--no-telemetry",
                                      "--log-level=*:error",
                                      "--file-prefix",
                                      prefix.c_str()};
    const bool eal_ok =
        rte_eal_init(static_cast<int>(args.size()), const_cast<char **>(args.data())) >= 0;
    std::string run_dir;
    if (eal_ok) {
        run_dir = rte_eal_get_runtime_dir();
        // Enough for a full tx queue (1024) plus what a test holds on the side.
        ferry::net::test::g_pool = rte_pktmbuf_pool_create(
            "net_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
        if (ferry::net::test::g_pool == nullptr) {
            std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
        }
    } else {
        // The stack tests fail on the missing pool; the pure tests still run.
        std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    }

    const int rc = RUN_ALL_TESTS();

    if (eal_ok) {
        rte_mempool_free(ferry::net::test::g_pool);
        rte_eal_cleanup();
        if (!run_dir.empty()) {
            rmdir(run_dir.c_str());
        }
    }
    return rc;
}
