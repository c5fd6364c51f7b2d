#include "test_eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ferry::test {
namespace {
cpu_set_t g_cpus;
bool g_started = false;
std::string g_run_dir;
}  // namespace

const cpu_set_t &original_cpus() { return g_cpus; }

bool eal_start(const char *argv0, const char *tag, unsigned mem_mb, int cpu) {
    CPU_ZERO(&g_cpus);
    const bool have_set = sched_getaffinity(0, sizeof g_cpus, &g_cpus) == 0;
    if (cpu < 0) {
        cpu = 0;
        for (int i = 0; have_set && i < CPU_SETSIZE; ++i)
            if (CPU_ISSET(i, &g_cpus)) {
                cpu = i;
                break;
            }
    }
    const std::string lcore = std::to_string(cpu);
    const std::string mem = std::to_string(mem_mb);
    const std::string prefix = std::string(tag) + "-" + std::to_string(getpid());
    std::vector<const char *> args = {argv0,         "-l",           lcore.c_str(),  "--no-huge",
                                      "-m",          mem.c_str(),    "--no-pci",     "--no-shconf",
                                      "--no-telemetry", "--log-level=*:error", "--file-prefix",
                                      prefix.c_str()};
    if (rte_eal_init(static_cast<int>(args.size()), const_cast<char **>(args.data())) < 0) {
        std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
        return false;
    }
    g_started = true;
    g_run_dir = rte_eal_get_runtime_dir();
    return true;
}

void eal_stop() {
    if (!g_started) return;
    rte_eal_cleanup();
    if (!g_run_dir.empty()) rmdir(g_run_dir.c_str());
    g_started = false;
}

}  // namespace ferry::test
