// A minimal EAL for test and benchmark binaries that need mbufs, rings or the TSC: one lcore
// on the first CPU this process may run on, no hugepages, no PCI, no shared
// config files, no telemetry, errors only in the log, and a unique
// --file-prefix (<tag>-<pid>) so test binaries can run side by side.
//
// DPDK 22.11: --no-huge implies legacy memory mode, which the EAL refuses to
// combine with --in-memory, so --no-shconf stands in for it; the run directory
// the EAL still creates (empty) is removed by eal_stop().
#pragma once

#include <sched.h>

namespace ferry::test {

// Returns false (after printing DPDK's reason) if rte_eal_init failed.
// `cpu` is the main lcore's CPU; -1 = the first CPU this process may run on.
bool eal_start(const char *argv0, const char *tag, unsigned mem_mb, int cpu = -1);

// rte_eal_cleanup() and removal of the run directory. Safe if eal_start failed.
void eal_stop();

// The CPUs the process could run on before rte_eal_init pinned the main
// thread to its lcore (threads of stress tests use them all).
const cpu_set_t &original_cpus();

}  // namespace ferry::test
