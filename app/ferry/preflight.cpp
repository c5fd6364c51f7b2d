#include "preflight.h"

#include <net/if.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <string_view>

namespace ferry::app {
namespace {

bool attaches_to_existing_iface(const config::driver_profile &p) {
    return p.driver == "net_af_packet" || p.driver == "net_af_xdp" || p.driver == "net_ferry_packet";
}

// A /proc "Key:   value" line's value, or -1.
long long proc_field(const char *path, std::string_view key) {
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line))
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
            line[key.size()] == ':')
            return std::stoll(line.substr(key.size() + 1), nullptr, 0);
    return -1;
}

uint64_t effective_caps() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
    return 0;
}

constexpr int cap_net_admin = 12, cap_net_raw = 13, cap_ipc_lock = 14, cap_sys_admin = 21,
              cap_bpf = 39;

}  // namespace

std::string check_interfaces(const config::ferry_config &cfg,
                             const std::vector<config::driver_profile> &profiles) {
    for (size_t i = 0; i < cfg.ports.size() && i < profiles.size(); ++i) {
        const auto &port = cfg.ports[i];
        const auto &pr = profiles[i];
        if (!attaches_to_existing_iface(pr) || port.iface.empty()) continue;
        if (if_nametoindex(port.iface.c_str()) != 0) continue;
        return config::error{port.where, "port[" + std::to_string(i) + "].iface",
                             "interface '" + port.iface +
                                 "' does not exist in this network namespace: profile '" +
                                 pr.name +
                                 "' attaches to an existing interface (see `ip link`; run ferry "
                                 "in the interface's namespace, or use net_tap, which creates "
                                 "its own)"}
            .to_string();
    }
    return "";
}

std::string check_capabilities(const std::vector<config::driver_profile> &profiles) {
    const uint64_t caps = effective_caps();
    auto has = [caps](int c) { return (caps >> c) & 1u; };
    std::string missing;
    auto need = [&](bool needed, bool held, const char *name, const std::string &why) {
        if (needed && !held && missing.find(name) == std::string::npos)
            missing += std::string(missing.empty() ? "" : ", ") + name + " (" + why + ")";
    };
    for (const auto &p : profiles) {
        need(p.driver == "net_tap", has(cap_net_admin), "CAP_NET_ADMIN",
             "profile " + p.name + " creates its interface");
        need(attaches_to_existing_iface(p), has(cap_net_raw), "CAP_NET_RAW",
             "profile " + p.name + " opens packet sockets");
        // Two rings of ring_frames frames (2 KiB each by default) per queue
        // pair are locked: RLIMIT_MEMLOCK may allow that without the capability.
        rlimit ml{};
        const bool rlimit_ok = getrlimit(RLIMIT_MEMLOCK, &ml) == 0 &&
                               (ml.rlim_cur == RLIM_INFINITY ||
                                ml.rlim_cur >= uint64_t{2} * p.ring_frames * 2048u);
        need(p.ring_frames != 0 && !rlimit_ok, has(cap_ipc_lock), "CAP_IPC_LOCK",
             "profile " + p.name + " locks its rings in memory, above RLIMIT_MEMLOCK");
        need(p.driver == "net_af_xdp", has(cap_bpf) || has(cap_sys_admin), "CAP_BPF",
             "profile " + p.name + " loads an XDP program");
    }
    if (missing.empty()) return "";
    return "missing " + missing +
           ": run ferry as root, or grant them (setcap, or AmbientCapabilities= in "
           "deploy/ferry.service)";
}

std::string check_hugepages(int eal_argc, char **argv) {
    for (int i = 1; i < eal_argc; ++i)
        if (std::strcmp(argv[i], "--no-huge") == 0) return "";
    return hugepage_note();
}

std::string hugepage_note() {
    // Every page size counts (EAL takes any); /proc/meminfo shows the default size only.
    long long total = 0, free_pages = 0;
    std::error_code ec;
    for (const auto &d : std::filesystem::directory_iterator("/sys/kernel/mm/hugepages", ec)) {
        std::ifstream t(d.path() / "nr_hugepages"), f(d.path() / "free_hugepages");
        long long n = 0, fr = 0;
        if (t >> n) total += n;
        if (f >> fr) free_pages += fr;
    }
    if (ec) {  // no sysfs: the default size
        total = std::max(0LL, proc_field("/proc/meminfo", "HugePages_Total"));
        free_pages = std::max(0LL, proc_field("/proc/meminfo", "HugePages_Free"));
    }
    if (free_pages > 0) return "";
    return "no free hugepages (" + std::to_string(total) + " reserved, " +
           std::to_string(free_pages) +
           " free, all sizes): reserve some (echo 512 > /proc/sys/vm/nr_hugepages) or start "
           "ferry with the EAL options --no-huge -m 512";
}

}  // namespace ferry::app
