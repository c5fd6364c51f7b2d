// Start-up checks that name the real cause of a failure DPDK would report
// with a misleading errno (issue 19, item 4): "EAL initialisation failed:
// Permission denied" for no hugepages, "rte_dev_probe failed: Invalid
// argument" for a user without the capabilities, "Operation not permitted"
// for an af_packet interface that does not exist. Each returns the message
// (with the fix) or "" when the check passes.
#pragma once

#include <string>
#include <vector>

#include "ferry/config/config.h"

namespace ferry::app {

// Ports whose profile attaches to an existing kernel interface (af_packet,
// af_xdp; a tap creates its own) name one that exists in this network
// namespace. "file:line:col: key 'port[i].iface': ..." as --check's errors.
std::string check_interfaces(const config::ferry_config &cfg,
                             const std::vector<config::driver_profile> &profiles);

// The capabilities the ports' drivers need (CAP_NET_ADMIN for a tap,
// CAP_NET_RAW for af_packet/af_xdp, CAP_IPC_LOCK for kernel rings, CAP_BPF or
// CAP_SYS_ADMIN for af_xdp's XDP program), from /proc/self/status CapEff.
std::string check_capabilities(const std::vector<config::driver_profile> &profiles);

// Without --no-huge among the EAL arguments (argv[1..eal_argc)), EAL needs
// free hugepages: /proc/meminfo's HugePages_Free.
std::string check_hugepages(int eal_argc, char **argv);

// A warning for --check, which does not see the command line ferry will be
// started with: "" if hugepages are free.
std::string hugepage_note();

}  // namespace ferry::app
