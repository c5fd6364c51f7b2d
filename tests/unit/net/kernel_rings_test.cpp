// ferry/net/kernel_rings.h against the kernel: a TPACKET_V2 socket set up as
// the af_packet PMD sets up a queue's (rx and tx rings, mmap'ed, bound to an
// interface), in a private network namespace whose loopback carries only the
// datagrams the test sends. Its 2-frame rx ring is never drained, so all but
// two frames are dropped and counted by the kernel.
//
// Needs root (unshare(CLONE_NEWNET), AF_PACKET); skips without it. The work
// runs in a forked child, which reports back through a pipe: the namespace
// and its sockets die with it.
#include "ferry/net/kernel_rings.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace ferry::net {
namespace {

// The ring: one 4 KiB block of two 2 KiB frames, for rx and again for tx (the
// PMD's layout with framecnt=2).
constexpr unsigned block_size = 4096, frame_size = 2048, frames = 2;

struct report {
    enum : int { ok, skip, fail } status = fail;
    char msg[256] = {};
    int ring_fd = -1, unbound_fd = -1;
    unsigned found_on_lo = 0, found_any = 0;  // packet_sockets(lo), packet_sockets(0)
    bool lo_is_ring = false, any_has_both = false;
    uint64_t bytes = 0, sent = 0;
    kernel_ring_totals first, again, after_more;
};

void set_msg(report &r, const char *what) {
    std::snprintf(r.msg, sizeof r.msg, "%s: %s", what, std::strerror(errno));
}

uint64_t now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

// Sends n UDP datagrams to 127.0.0.1:9 (discard; nobody listens: the kernel
// answers with ICMP, which the ring sees too).
bool send_datagrams(unsigned n, report &r) {
    const int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u < 0)
        return set_msg(r, "udp socket"), false;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char payload[64] = "ferry kernel_rings_test";
    for (unsigned i = 0; i < n; ++i)
        if (sendto(u, payload, sizeof payload, 0, reinterpret_cast<const sockaddr *>(&to),
                   sizeof to) == static_cast<ssize_t>(sizeof payload))
            ++r.sent;
    close(u);
    return true;
}

// Reads until the kernel has counted at least `drops` drops (the datagrams'
// frames pass the packet tap in softirq context, possibly after sendto
// returned), or 5 s.
kernel_ring_totals wait_drops(kernel_rings &k, uint64_t drops) {
    const uint64_t deadline = now_ms() + 5000;
    kernel_ring_totals t = k.read();
    while (t.drops < drops && now_ms() < deadline) {
        usleep(1000);
        t = k.read();
    }
    return t;
}

void run(report &r) {
    if (unshare(CLONE_NEWNET) != 0) {
        r.status = errno == EPERM ? report::skip : report::fail;
        return set_msg(r, "unshare(CLONE_NEWNET)");
    }
    const int ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, IFNAMSIZ, "lo");
    if (ctl < 0 || ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0)
        return set_msg(r, "SIOCGIFFLAGS lo");
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    if (ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0)
        return set_msg(r, "SIOCSIFFLAGS lo up");
    close(ctl);
    const int lo = static_cast<int>(if_nametoindex("lo"));
    if (lo == 0)
        return set_msg(r, "if_nametoindex(lo)");

    // As the PMD: ETH_P_ALL, TPACKET_V2, rx and tx rings, one mapping, bound.
    const int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (s < 0) {
        r.status = errno == EPERM ? report::skip : report::fail;
        return set_msg(r, "AF_PACKET socket");
    }
    int v2 = TPACKET_V2;
    tpacket_req req{block_size, 1, frame_size, frames};
    if (setsockopt(s, SOL_PACKET, PACKET_VERSION, &v2, sizeof v2) != 0 ||
        setsockopt(s, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0 ||
        setsockopt(s, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) != 0)
        return set_msg(r, "TPACKET_V2 rings");
    void *map = mmap(nullptr, 2 * block_size, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
    if (map == MAP_FAILED)
        return set_msg(r, "mmap of the rings");
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = lo;
    if (bind(s, reinterpret_cast<const sockaddr *>(&sll), sizeof sll) != 0)
        return set_msg(r, "bind to lo");
    // Not bound to an interface (and protocol 0: it receives nothing): found
    // by packet_sockets(0) only. A UDP socket is never found.
    const int unbound = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    const int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (unbound < 0 || udp < 0)
        return set_msg(r, "other sockets");
    r.ring_fd = s;
    r.unbound_fd = unbound;

    const std::vector<int> on_lo = packet_sockets(lo), any = packet_sockets(0);
    r.found_on_lo = static_cast<unsigned>(on_lo.size());
    r.lo_is_ring = on_lo.size() == 1 && on_lo[0] == s;
    r.found_any = static_cast<unsigned>(any.size());
    r.any_has_both =
        any.size() == 2 && any[0] == std::min(s, unbound) && any[1] == std::max(s, unbound);

    kernel_rings k({s});
    r.bytes = k.bytes();
    (void)k.read();  // whatever lo carried before: not ours
    constexpr unsigned burst = 40;
    if (!send_datagrams(burst, r))
        return;
    r.first = wait_drops(k, burst - frames);
    r.again = k.read();  // no traffic since: the totals stay (the kernel's count was reset)
    if (!send_datagrams(burst, r))
        return;
    r.after_more = wait_drops(k, r.again.drops + burst);
    r.status = report::ok;
}

TEST(KernelRings, FindsTheRingSocketAndAccumulatesItsDrops) {
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root: a private network namespace and an AF_PACKET socket";
    int pipe_fd[2];
    ASSERT_EQ(pipe2(pipe_fd, O_CLOEXEC), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
        // Child: no gtest assertions here; everything goes back in the report.
        close(pipe_fd[0]);
        alarm(30);
        report r;
        run(r);
        const ssize_t n = write(pipe_fd[1], &r, sizeof r);
        _exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 1);
    }
    close(pipe_fd[1]);
    report r;
    size_t got = 0;
    while (got < sizeof r) {
        const ssize_t n = read(pipe_fd[0], reinterpret_cast<char *>(&r) + got, sizeof r - got);
        if (n <= 0)
            break;
        got += static_cast<size_t>(n);
    }
    close(pipe_fd[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "child status " << wstatus;
    ASSERT_EQ(got, sizeof r);
    if (r.status == report::skip)
        GTEST_SKIP() << r.msg;
    ASSERT_EQ(r.status, report::ok) << r.msg;

    // Found by the interface it is bound to; the unbound one only without a filter.
    EXPECT_EQ(r.found_on_lo, 1u);
    EXPECT_TRUE(r.lo_is_ring) << "ring fd " << r.ring_fd;
    EXPECT_EQ(r.found_any, 2u);
    EXPECT_TRUE(r.any_has_both) << "ring fd " << r.ring_fd << ", unbound fd " << r.unbound_fd;
    // The mapping: rx and tx ring, one block each.
    EXPECT_EQ(r.bytes, 2u * block_size);
    EXPECT_EQ(r.sent, 80u);

    // Every datagram passed the tap at least once; the ring took two frames at
    // most and the kernel dropped (and counted) the rest.
    EXPECT_GE(r.first.packets, 40u);
    EXPECT_GE(r.first.drops, 40u - frames);
    EXPECT_LE(r.first.packets - r.first.drops, frames);
    // Reading resets the kernel's counts but not the totals.
    EXPECT_GE(r.again.drops, r.first.drops);
    EXPECT_GE(r.again.packets, r.first.packets);
    // More traffic adds to them: the ring is still full.
    EXPECT_GE(r.after_more.drops, r.again.drops + 40u);
    EXPECT_EQ(r.after_more.packets - r.after_more.drops, r.first.packets - r.first.drops);
}

TEST(KernelRings, NothingMappedForAnFdThatIsNoSocket) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    EXPECT_EQ(socket_mapped_bytes(p[0]), 0u);
    close(p[0]);
    close(p[1]);
    EXPECT_EQ(socket_mapped_bytes(-1), 0u);
    kernel_rings none({});
    EXPECT_EQ(none.bytes(), 0u);
    const kernel_ring_totals t = none.read();
    EXPECT_EQ(t.packets, 0u);
    EXPECT_EQ(t.drops, 0u);
}

}  // namespace
}  // namespace ferry::net
