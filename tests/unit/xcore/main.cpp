// Test main for the lib/xcore unit tests: brings up a minimal EAL (no
// hugepages, no PCI, no shared config files; rings and the TSC clock need it)
// and a small pktmbuf pool for the ownership tests.
//
// DPDK 22.11: --no-huge implies legacy memory mode, which the EAL refuses to
// combine with --in-memory, so --no-shconf stands in for it. rte_eal_init pins
// the main thread to its lcore; the CPU set from before is kept so that the
// reactor threads of the stress tests can run on every CPU.
#include <pthread.h>
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

#include "env.h"

namespace ferry::xcore::test {
rte_mempool *g_pool = nullptr;
cpu_set_t g_cpus;

void unpin_this_thread() noexcept {
    (void)pthread_setaffinity_np(pthread_self(), sizeof g_cpus, &g_cpus);
}
}  // namespace ferry::xcore::test

int main(int argc, char **argv) {
    using ferry::xcore::test::g_cpus;
    testing::InitGoogleTest(&argc, argv);

    CPU_ZERO(&g_cpus);
    int cpu = 0;
    if (sched_getaffinity(0, sizeof g_cpus, &g_cpus) == 0) {
        for (int i = 0; i < CPU_SETSIZE; ++i) {
            if (CPU_ISSET(i, &g_cpus)) {
                cpu = i;
                break;
            }
        }
    }
    const std::string lcore = std::to_string(cpu);
    const std::string prefix = "ferry-unit-xcore-" + std::to_string(getpid());
    std::vector<const char *> args = {
        argv[0],         "-l",          lcore.c_str(), "--no-huge",      "-m",
        "128",           "--no-pci",    "--no-shconf", "--no-telemetry", "--log-level=*:error",
        "--file-prefix", prefix.c_str()};
    const bool eal_ok =
        rte_eal_init(static_cast<int>(args.size()), const_cast<char **>(args.data())) >= 0;
    if (!eal_ok) {
        std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    const std::string run_dir = rte_eal_get_runtime_dir();
    ferry::xcore::test::g_pool =
        rte_pktmbuf_pool_create("xcore_test", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (ferry::xcore::test::g_pool == nullptr)
        std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
    ferry::xcore::test::unpin_this_thread();

    const int rc = RUN_ALL_TESTS();

    rte_mempool_free(ferry::xcore::test::g_pool);
    rte_eal_cleanup();
    if (!run_dir.empty())
        rmdir(run_dir.c_str());
    return rc;
}
