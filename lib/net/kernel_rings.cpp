#include "ferry/net/kernel_rings.h"

#include <rte_alarm.h>

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ferry::net {

namespace {

// This process's sockets of `domain`, ascending; `keep` filters them.
template <class Keep>
std::vector<int> sockets_of(int domain, Keep keep) {
    std::vector<int> out;
    DIR *d = opendir("/proc/self/fd");
    if (d == nullptr)
        return out;
    const int own = dirfd(d);
    while (const dirent *e = readdir(d)) {
        char *end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd < 0 || fd == own)
            continue;
        struct stat st {};
        if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        // SO_DOMAIN first: getsockname of another family fills a different
        // sockaddr, and `keep` would read its fields from the wrong bytes.
        int got = 0;
        socklen_t dlen = sizeof got;
        if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &got, &dlen) != 0 ||
            got != domain)
            continue;
        if (keep(static_cast<int>(fd)))
            out.push_back(static_cast<int>(fd));
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<int> packet_sockets(int ifindex) {
    return sockets_of(AF_PACKET, [ifindex](int fd) {
        sockaddr_ll sll{};
        socklen_t len = sizeof sll;
        if (getsockname(fd, reinterpret_cast<sockaddr *>(&sll), &len) != 0)
            return false;
        return ifindex == 0 || sll.sll_ifindex == ifindex;
    });
}

std::vector<int> xdp_sockets() {
    return sockets_of(AF_XDP, [](int) { return true; });
}

uint64_t socket_mapped_bytes(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0;
    // A mapping of a socket is named after its inode: "socket:[12345]".
    const std::string name = "socket:[" + std::to_string(st.st_ino) + "]";
    std::FILE *f = std::fopen("/proc/self/maps", "r");
    if (f == nullptr)
        return 0;
    uint64_t total = 0;
    char line[PATH_MAX + 256];  // a whole line: the path is the last field
    while (std::fgets(line, sizeof line, f) != nullptr) {
        // "start-end perms offset dev inode   path"
        unsigned long long start = 0, end = 0;
        if (std::sscanf(line, "%llx-%llx", &start, &end) != 2 || end < start)
            continue;
        std::string_view l(line);
        while (!l.empty() && (l.back() == '\n' || l.back() == ' '))
            l.remove_suffix(1);
        if (l.ends_with(name) && l.size() > name.size() && l[l.size() - name.size() - 1] == ' ')
            total += end - start;
    }
    std::fclose(f);
    return total;
}

namespace {

uint64_t mapped_bytes(const std::vector<int> &fds) {
    uint64_t b = 0;
    for (int fd : fds)
        b += socket_mapped_bytes(fd);
    return b;
}

}  // namespace

kernel_rings::kernel_rings(std::vector<int> fds)
    : fds_(std::move(fds)), bytes_(mapped_bytes(fds_)) {}

kernel_rings::~kernel_rings() {
    // Waits for a callback running on the alarm thread, and removes the alarm
    // that callback may just have re-armed (rte_eal_alarm_cancel loops until
    // no matching alarm is executing, then drops every pending one).
    if (polling_)
        (void)rte_eal_alarm_cancel(on_alarm, this);
}

kernel_ring_totals kernel_rings::read() noexcept {
    // One lock for the reads and the additions: two readers (the telemetry
    // thread, the exporter, the alarm) must not both read a socket's count
    // (the second would see 0) and then publish totals out of order.
    std::lock_guard<std::mutex> g(mu_);
    for (int fd : fds_) {
        // TPACKET_V2 sockets answer with struct tpacket_stats; tp_packets
        // already includes tp_drops (packet_getsockopt adds them).
        tpacket_stats st{};
        socklen_t len = sizeof st;
        if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0)
            continue;
        totals_.packets += st.tp_packets;
        totals_.drops += st.tp_drops;
    }
    return totals_;
}

bool kernel_rings::start_polling() noexcept {
    if (polling_)
        return true;
    polling_ = rte_eal_alarm_set(poll_period_us, on_alarm, this) == 0;
    return polling_;
}

void kernel_rings::on_alarm(void *arg) {
    auto *self = static_cast<kernel_rings *>(arg);
    (void)self->read();
    // Re-armed from inside the callback: the destructor's cancel removes it.
    (void)rte_eal_alarm_set(poll_period_us, on_alarm, self);
}

}  // namespace ferry::net
