#include "ferry/net/port.h"

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/net/steering.h"

RTE_LOG_REGISTER(ferry_logtype_port, ferry.port, INFO);

#define PORT_LOG(level, fmt, ...) FERRY_LOG(level, ferry_logtype_port, "port", fmt, __VA_ARGS__)

namespace ferry::net {
namespace {

struct offload_name {
    const char *name;
    uint64_t rx, tx;
};

// The profile vocabulary (drivers-config/README.md, config::known_rx_offloads /
// known_tx_offloads) mapped to ethdev bits: every name lib/config accepts is here,
// so an offload a profile asks for is requested, never silently ignored.
constexpr offload_name offload_table[] = {
    {"ipv4_cksum", RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, RTE_ETH_TX_OFFLOAD_IPV4_CKSUM},
    {"tcp_cksum", RTE_ETH_RX_OFFLOAD_TCP_CKSUM, RTE_ETH_TX_OFFLOAD_TCP_CKSUM},
    {"udp_cksum", RTE_ETH_RX_OFFLOAD_UDP_CKSUM, RTE_ETH_TX_OFFLOAD_UDP_CKSUM},
    {"tcp_tso", 0, RTE_ETH_TX_OFFLOAD_TCP_TSO},
    {"scatter", RTE_ETH_RX_OFFLOAD_SCATTER, 0},
    {"multi_segs", 0, RTE_ETH_TX_OFFLOAD_MULTI_SEGS},
    {"rss_hash", RTE_ETH_RX_OFFLOAD_RSS_HASH, 0},
    {"vlan_strip", RTE_ETH_RX_OFFLOAD_VLAN_STRIP, 0},
    {"tcp_lro", RTE_ETH_RX_OFFLOAD_TCP_LRO, 0},
    {"timestamp", RTE_ETH_RX_OFFLOAD_TIMESTAMP, 0},
    {"vlan_insert", 0, RTE_ETH_TX_OFFLOAD_VLAN_INSERT},
    {"udp_tso", 0, RTE_ETH_TX_OFFLOAD_UDP_TSO},
    {"mbuf_fast_free", 0, RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE},
};

uint64_t offload_bits(const std::vector<std::string> &names, bool rx) {
    uint64_t bits = 0;
    for (const auto &n : names)
        bits |= offload_flag(n, rx);
    return bits;
}

// Sets p.kernel to the AF_PACKET sockets `fds` (the port's rx rings: the PMD's
// or ferry's own), logs them, and starts reading their drop counts.
void watch_kernel_rings(port &p, std::vector<int> fds) {
    p.kernel = std::make_unique<kernel_rings>(std::move(fds));
    // Frames the kernel drops on a full ring are counted in kernel_ring_drops.
    PORT_LOG(INFO, "%s",
             logfmt("kernel rings mapped")
                 .kv("port", p.spec.name)
                 .kv("sockets", p.kernel->fds().size())
                 .kv("ring_mib", p.kernel->bytes() / 1048576.0, 1)
                 .c_str());
    if (!p.kernel->start_polling())
        PORT_LOG(WARNING, "%s",
                 logfmt("kernel ring counts read on demand")
                     .kv("port", p.spec.name)
                     .kv("cause", "cannot set the EAL alarm that reads them")
                     .kv("note", "read on telemetry requests only")
                     .c_str());
}

// Sets p.kernel to the AF_PACKET sockets bound to `ifindex` that are not in
// `before` (sorted), and starts reading their drop counts periodically. A
// net_af_packet port without exactly one socket per queue pair is logged: its
// drops would be incomplete, or the kernel would fan frames out to sockets of
// queues no worker polls (devargs qpairs above the workers).
void find_kernel_rings(port &p, const std::vector<int> &before, int ifindex) {
    std::vector<int> fds;
    for (int fd : packet_sockets(ifindex))
        if (!std::binary_search(before.begin(), before.end(), fd))
            fds.push_back(fd);
    const bool af_packet = p.driver_name == "net_af_packet";
    if (fds.empty()) {
        if (af_packet)
            PORT_LOG(WARNING, "%s",
                     logfmt("kernel ring drops unreadable")
                         .kv("port", p.spec.name)
                         .kv("device", p.dev_name)
                         .kv("ifindex", unsigned(ifindex))
                         .kv("cause", "no AF_PACKET socket of the device found")
                         .kv("note", "no kernel_ring_drops in /ferry/ports")
                         .c_str());
        return;
    }
    if (af_packet && fds.size() != p.queues)
        PORT_LOG(WARNING, "%s",
                 logfmt("af_packet sockets mismatch")
                     .kv("port", p.spec.name)
                     .kv("sockets", fds.size())
                     .kv("queue_pairs", unsigned(p.queues))
                     .kv("fix", "devargs qpairs should equal the workers, or the kernel hands "
                                "frames to sockets no worker reads")
                     .c_str());
    watch_kernel_rings(p, std::move(fds));
}


// Sets p.rx_wake_fds and p.caps.rx_wake_sockets for a started net_af_packet
// port without rx interrupts. packet_poll() (net/packet/af_packet.c) reports
// an mmap'ed socket readable while the frame the kernel filled last is still
// the user's, and tpacket_rcv() wakes the socket's waiters for every frame:
// an epoll set holding the socket (edge-triggered, as the reactor registers
// wake fds) wakes on the first frame after the pre-sleep re-check, and a
// frame that came before it is found by that re-check. Which socket is which
// queue's: the 22.11 PMD's rx queue data (struct pkt_rx_queue, not public)
// begins with its socket fd; the fd found there is used only if it is one of
// the port's own AF_PACKET sockets (kernel_rings) and no two queues share it.
// Anything else: no wake fds, the queues are polled (or napped) as before.
void find_rx_wake_sockets(port &p) {
    if (p.driver_name != "net_af_packet" || p.caps.rx_interrupts || !p.kernel) return;
    const auto fds = p.kernel->fds();
    std::vector<int> out;
    for (uint16_t q = 0; q < p.queues; ++q) {
        void *const *data = rte_eth_fp_ops[p.id].rxq.data;
        const int fd = data != nullptr && data[q] != nullptr ? *static_cast<const int *>(data[q]) : -1;
        if (std::find(fds.begin(), fds.end(), fd) == fds.end() ||
            std::find(out.begin(), out.end(), fd) != out.end()) {
            PORT_LOG(NOTICE, "%s",
                     logfmt("rx queue polled")
                         .kv("port", p.spec.name)
                         .kv("queue", unsigned(q))
                         .kv("cause", "its AF_PACKET socket is not known")
                         .c_str());
            return;
        }
        out.push_back(fd);
    }
    p.rx_wake_fds = std::move(out);
    p.caps.rx_wake_sockets = true;
}

// Sets p.rx_wake_fds and p.caps.rx_wake_sockets for a started net_af_xdp
// port. `opened[q]` are the AF_XDP sockets rx_queue_setup(q) opened (the PMD
// creates a queue's XSK there). xsk_poll() (net/xdp/xsk.c) reports a socket
// readable while its rx ring holds a descriptor, and the kernel wakes its
// waiters (sk_data_ready) whenever it flushes frames into that ring: the same
// contract as an AF_PACKET ring. A queue that opened other than one socket
// (another PMD version, a shared socket) leaves the port polled (or napped).
void find_xdp_wake_sockets(port &p, const std::vector<std::vector<int>> &opened) {
    if (p.driver_name != "net_af_xdp" || p.caps.rx_interrupts) return;
    std::vector<int> out;
    for (uint16_t q = 0; q < p.queues; ++q) {
        if (q >= opened.size() || opened[q].size() != 1) {
            PORT_LOG(NOTICE, "%s",
                     logfmt("rx queue polled")
                         .kv("port", p.spec.name)
                         .kv("queue", unsigned(q))
                         .kv("cause", "it opened " +
                                          std::to_string(q < opened.size() ? opened[q].size() : 0) +
                                          " AF_XDP sockets (1 expected)")
                         .c_str());
            return;
        }
        out.push_back(opened[q].front());
    }
    p.rx_wake_fds = std::move(out);
    p.caps.rx_wake_sockets = true;
}

std::string fail(const port &p, const char *call, int rc);

// The value of `key` in devargs "k=v,k=v", or "".
std::string devarg(const std::string &args, std::string_view key) {
    size_t at = 0;
    while (at <= args.size()) {
        const size_t end = std::min(args.find(',', at), args.size());
        const std::string_view kv(args.data() + at, end - at);
        if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=')
            return std::string(kv.substr(key.size() + 1));
        at = end + 1;
    }
    return "";
}

// A port whose flows' queues ferry cannot compute (`what`: "tap steering",
// "fanout steering" could not be set): said once, at start.
void warn_no_steering(const port &p, const char *what) {
    PORT_LOG(WARNING, "%s",
             logfmt(std::string("no ") + what)
                 .kv("port", p.spec.name)
                 .kv("cause", p.steering)
                 .kv("note", "flows that arrive on another lcore's queue are handed over "
                             "(tcp_handoff_out)")
                 .c_str());
}

// net_ferry_packet: opens a packet_queue per queue pair on spec.iface and the
// net_ring ethdev over their rings (packet_io.h). Devargs: framecnt (rx ring
// frames per queue, default 4096), gso (on|off, default on).
std::string open_own_packet(port &p) {
    const port_spec &spec = p.spec;
    const int ifindex = static_cast<int>(if_nametoindex(spec.iface.c_str()));
    if (ifindex == 0)
        return "port '" + spec.name + "': interface '" + spec.iface + "': " + std::strerror(errno);
    packet_queue::params pp;
    pp.port = spec.name;
    pp.iface = spec.iface;
    pp.ifindex = ifindex;
    pp.nqueues = p.queues;
    pp.fanout_id = static_cast<uint16_t>((getpid() ^ ifindex) & 0xffff);
    if (const std::string f = devarg(spec.devargs, "framecnt"); !f.empty())
        pp.ring_frames = static_cast<uint32_t>(std::strtoul(f.c_str(), nullptr, 10));
    if ((pp.ring_frames & (pp.ring_frames - 1)) != 0 || pp.ring_frames < 32)
        return "port '" + spec.name + "': framecnt must be a power of two >= 32";
    pp.gso = devarg(spec.devargs, "gso") != "off";
    pp.numa_socket = static_cast<int>(rte_socket_id());
    // Steering: the fanout group runs ferry's steering program, so a flow's
    // frames arrive on the queue ferry computes for it (steering.h); without
    // it (no CAP_BPF) the kernel's hash spreads them and the lcores hand
    // misdelivered segments over (tcp_handoff_out).
    if (p.queues > 1) {
        auto prog = load_fanout_steering_program();
        if (prog) {
            pp.fanout_prog_fd = prog.value();
            p.steering = "fanout-ebpf";
        } else {
            p.steering = "none (" + prog.error() + ")";
            warn_no_steering(p, "fanout steering");
        }
    }
    struct fd_closer {
        int fd;
        ~fd_closer() {
            if (fd >= 0) ::close(fd);  // the group holds its own reference
        }
    } prog_holder{pp.fanout_prog_fd};
    std::vector<rte_ring *> rx, tx;
    std::vector<int> fds;
    for (uint16_t q = 0; q < p.queues; ++q) {
        pp.queue = q;
        auto pq = packet_queue::open(pp);
        if (!pq) return pq.error();
        rx.push_back(pq.value()->rx_ring());
        tx.push_back(pq.value()->tx_ring());
        fds.push_back(pq.value()->fd());
        p.packet_queues.push_back(std::move(pq.value()));
    }
    // rte_eth_from_rings names the device net_ring_<name> (the prefix that
    // finds the net_ring driver); p.dev_name is read back below.
    p.dev_name = "net_ring_" + spec.name;
    PORT_LOG(INFO, "%s",
             logfmt("creating device")
                 .kv("device", p.dev_name)
                 .kv("driver", std::string(own_packet_driver))
                 .kv("iface", spec.iface)
                 .kv("ring_frames", pp.ring_frames)
                 .kv("gso", pp.gso ? "on" : "off")
                 .c_str());
    const int id = rte_eth_from_rings(spec.name.c_str(), rx.data(), p.queues, tx.data(), p.queues,
                                      rte_socket_id());
    if (id < 0) return fail(p, "rte_eth_from_rings", rte_errno);
    p.created = true;
    p.id = static_cast<uint16_t>(id);
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    if (rte_eth_dev_get_name_by_port(p.id, name) == 0) p.dev_name = name;
    // The interface's MAC is ours unless the port names one (net_ring has no
    // MAC to set: ferry writes its frames' source address itself).
    if (spec.mac) {
        std::memcpy(p.mac.addr_bytes, spec.mac->data(), RTE_ETHER_ADDR_LEN);
    } else {
        ifreq ifr{};
        std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", spec.iface.c_str());
        if (ioctl(fds.front(), SIOCGIFHWADDR, &ifr) != 0)
            return "port '" + spec.name + "': SIOCGIFHWADDR on " + spec.iface + ": " +
                   std::strerror(errno);
        std::memcpy(p.mac.addr_bytes, ifr.ifr_hwaddr.sa_data, RTE_ETHER_ADDR_LEN);
    }
    watch_kernel_rings(p, fds);
    p.rx_wake_fds = std::move(fds);
    p.caps.rx_wake_sockets = true;
    return "";
}

std::string fail(const port &p, const char *call, int rc) {
    return "port '" + p.spec.name + "' (" + p.dev_name + "): " + call +
           " failed: " + std::strerror(rc < 0 ? -rc : rc);
}

}  // namespace

int rx_wake_fd(const port &p, uint16_t queue) noexcept {
    if (p.caps.rx_interrupts) return rte_eth_dev_rx_intr_ctl_q_get_fd(p.id, queue);
    if (p.caps.rx_wake_sockets && queue < p.rx_wake_fds.size()) return p.rx_wake_fds[queue];
    return -1;
}

uint64_t offload_flag(std::string_view name, bool rx) noexcept {
    for (const auto &o : offload_table)
        if (name == o.name)
            return rx ? o.rx : o.tx;
    return 0;
}

std::string offload_names(uint64_t rx_offloads, uint64_t tx_offloads) {
    std::string out;
    for (const auto &o : offload_table) {
        const bool rx = o.rx != 0 && (rx_offloads & o.rx) == o.rx;
        const bool tx = o.tx != 0 && (tx_offloads & o.tx) == o.tx;
        if (!rx && !tx)
            continue;
        if (!out.empty())
            out += ' ';
        out += o.name;
        out += rx && tx ? "(rx,tx)" : rx ? "(rx)" : "(tx)";
    }
    return out.empty() ? "none" : out;
}

result<port, std::string> port_open(const port_spec &spec, uint16_t queues, uint32_t workers,
                                    bool want_rx_intr) {
    port p;
    p.spec = spec;
    p.queues = queues;

    // 1. Find or create the ethdev. The AF_PACKET sockets open before the
    // probe are not the new device's (step 2b).
    std::vector<int> packet_fds_before;
    const bool own = !spec.pci && spec.driver == own_packet_driver;
    if (own) {
        if (std::string err = open_own_packet(p); !err.empty()) {
            port_close(p);
            return unexpected{err};
        }
    } else if (!spec.pci) {
        packet_fds_before = packet_sockets(0);
        // A vdev name is the driver name plus a unique suffix (net_tap0).
        p.dev_name = spec.driver + std::to_string(rte_eth_dev_count_total());
        const std::string &args = spec.devargs;
        PORT_LOG(INFO, "%s",
                 logfmt("creating device").kv("device", p.dev_name).kv("devargs", args).c_str());
        // Hot-plug through EAL (the same path as --vdev), so the vdev bus
        // library need not be linked: DPDK loads it as a plugin.
        const std::string devargs = args.empty() ? p.dev_name : p.dev_name + "," + args;
        const int rc = rte_dev_probe(devargs.c_str());
        if (rc != 0)
            return unexpected{fail(p, "rte_dev_probe", rc)};
        p.created = true;
    } else {
        p.dev_name = spec.pci_addr;
    }
    if (!own && rte_eth_dev_get_port_by_name(p.dev_name.c_str(), &p.id) != 0) {
        std::string msg = "port '" + spec.name + "': no ethdev named '" + p.dev_name + "'";
        if (spec.pci)
            msg += " (is the device bound to vfio-pci and allowed with EAL -a " + spec.pci_addr +
                   "?)";
        return unexpected{msg};
    }

    // 2. Probe what the device offers.
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(p.id, &info); rc != 0) {
        port_close(p);
        return unexpected{fail(p, "rte_eth_dev_info_get", rc)};
    }
    p.driver_name = own ? spec.driver : info.driver_name != nullptr ? info.driver_name : "?";
    if (own) {
        // What packet_queue does for the net_ring device (packet_io.h).
        info.rx_offload_capa |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
        info.tx_offload_capa |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    }
    p.caps.max_rx_queues = info.max_rx_queues;
    p.caps.max_tx_queues = info.max_tx_queues;
    p.caps.rx_ipv4_cksum = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
    p.caps.rx_tcp_cksum = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
    p.caps.rx_udp_cksum = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
    p.caps.tx_ipv4_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    p.caps.tx_tcp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
    p.caps.tx_udp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    p.caps.tx_multi_segs = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    p.caps.rss = spec.rss && info.flow_type_rss_offloads != 0 && info.max_rx_queues > 1;
    if (queues > info.max_rx_queues || queues > info.max_tx_queues) {
        port_close(p);
        return unexpected{"port '" + spec.name + "': " + std::to_string(queues) +
                          " queue pairs needed (one per worker) but " + p.driver_name + " offers " +
                          std::to_string(info.max_rx_queues) + " rx / " +
                          std::to_string(info.max_tx_queues) + " tx"};
    }

    // 2b. The kernel's packet rings (net_af_packet): its sockets are the
    // AF_PACKET sockets on the device's interface that the probe opened.
    if (!spec.pci && !own && info.if_index != 0)
        find_kernel_rings(p, packet_fds_before, static_cast<int>(info.if_index));

    // 3. Configure: offloads we asked for and the device has; the rest is done
    // in software, so a missing offload is a notice, not an error.
    const uint64_t want_rx = offload_bits(spec.rx_offloads, true);
    const uint64_t want_tx = offload_bits(spec.tx_offloads, false);
    p.rx_offloads = want_rx & info.rx_offload_capa;
    p.tx_offloads = want_tx & info.tx_offload_capa;
    if (p.rx_offloads != want_rx || p.tx_offloads != want_tx)
        PORT_LOG(NOTICE, "%s",
                 logfmt("offloads done in software")
                     .kv("port", spec.name)
                     .kv("offloads", offload_names(want_rx & ~p.rx_offloads, want_tx & ~p.tx_offloads))
                     .c_str());

    rte_eth_conf conf{};
    conf.rxmode.mtu = spec.mtu;
    // net_ring is told of none: packet_queue does them (see the capa above).
    conf.rxmode.offloads = own ? 0 : p.rx_offloads;
    conf.txmode.offloads = own ? 0 : p.tx_offloads;
    if (p.caps.rss && queues > 1) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
    }
    conf.intr_conf.rxq = want_rx_intr && spec.rx_interrupts ? 1 : 0;
    int rc = rte_eth_dev_configure(p.id, queues, queues, &conf);
    if (rc != 0 && conf.intr_conf.rxq) {
        PORT_LOG(WARNING, "%s",
                 logfmt("rx interrupts unavailable")
                     .kv("port", spec.name)
                     .kv("error", std::strerror(-rc))
                     .kv("note", "the lcores serving the port poll")
                     .c_str());
        conf.intr_conf.rxq = 0;
        rc = rte_eth_dev_configure(p.id, queues, queues, &conf);
    }
    if (rc != 0) {
        port_close(p);
        return unexpected{fail(p, "rte_eth_dev_configure", rc)};
    }

    p.rx_desc = spec.rx_desc;
    p.tx_desc = spec.tx_desc;
    if (rc = rte_eth_dev_adjust_nb_rx_tx_desc(p.id, &p.rx_desc, &p.tx_desc); rc != 0) {
        port_close(p);
        return unexpected{fail(p, "rte_eth_dev_adjust_nb_rx_tx_desc", rc)};
    }

    // 4. The pool must cover every descriptor ring plus the per-lcore caches
    // plus what is in flight in bursts and tx batches; otherwise rx starves
    // under load with no error but rx_nombuf.
    constexpr uint32_t cache = 256, burst_slack = 1024;
    const uint64_t needed =
        uint64_t(queues) * (p.rx_desc + p.tx_desc) + uint64_t(workers) * (cache + burst_slack);
    if (spec.mbufs < needed) {
        port_close(p);
        return unexpected{"port '" + spec.name + "': mbufs = " + std::to_string(spec.mbufs) +
                          " is too small: " + std::to_string(queues) + " queues x (" +
                          std::to_string(p.rx_desc) + " rx + " + std::to_string(p.tx_desc) +
                          " tx descriptors) + per-worker cache and bursts need at least " +
                          std::to_string(needed) + "; raise mbufs in its [[port]]"};
    }
    const int socket = rte_eth_dev_socket_id(p.id);
    const std::string pool_name = "ferry_" + spec.name;
    p.pool = rte_pktmbuf_pool_create(pool_name.c_str(), spec.mbufs, cache, 0,
                                     RTE_MBUF_DEFAULT_BUF_SIZE, socket);
    if (p.pool == nullptr) {
        port_close(p);
        return unexpected{fail(p, "rte_pktmbuf_pool_create", rte_errno)};
    }

    // net_af_xdp creates each queue's XDP socket in rx_queue_setup: the
    // sockets that appear across the call are the queue's (step 5).
    const bool af_xdp = p.driver_name == "net_af_xdp";
    std::vector<std::vector<int>> xdp_opened(af_xdp ? queues : 0);
    for (uint16_t q = 0; q < queues; ++q) {
        rte_eth_rxconf rxc = info.default_rxconf;
        rxc.offloads = conf.rxmode.offloads;
        const std::vector<int> xdp_before = af_xdp ? xdp_sockets() : std::vector<int>{};
        if (rc = rte_eth_rx_queue_setup(p.id, q, p.rx_desc, socket, &rxc, p.pool); rc != 0) {
            port_close(p);
            return unexpected{fail(p, "rte_eth_rx_queue_setup", rc)};
        }
        if (af_xdp)
            for (int fd : xdp_sockets())
                if (!std::binary_search(xdp_before.begin(), xdp_before.end(), fd))
                    xdp_opened[q].push_back(fd);
        rte_eth_txconf txc = info.default_txconf;
        txc.offloads = conf.txmode.offloads;
        if (rc = rte_eth_tx_queue_setup(p.id, q, p.tx_desc, socket, &txc); rc != 0) {
            port_close(p);
            return unexpected{fail(p, "rte_eth_tx_queue_setup", rc)};
        }
    }

    if (spec.mac && !own) {
        rte_ether_addr mac;
        std::memcpy(mac.addr_bytes, spec.mac->data(), RTE_ETHER_ADDR_LEN);
        if (rc = rte_eth_dev_default_mac_addr_set(p.id, &mac); rc != 0) {
            port_close(p);
            return unexpected{fail(p, "rte_eth_dev_default_mac_addr_set", rc)};
        }
    }

    if (rc = rte_eth_dev_start(p.id); rc != 0) {
        port_close(p);
        return unexpected{fail(p, "rte_eth_dev_start", rc)};
    }
    p.started = true;
    if (!own) rte_eth_macaddr_get(p.id, &p.mac);
    // Frames for other MACs cost us rx work for nothing.
    (void)rte_eth_promiscuous_disable(p.id);

    // 5. rx interrupts are real only if every queue has an event fd. net_tap
    // returns -ENOTSUP from rte_eth_dev_rx_intr_enable although its queue fd
    // fires in epoll (TESTBED.md), so the fd is the test, not the enable call.
    if (conf.intr_conf.rxq) {
        p.caps.rx_interrupts = true;
        for (uint16_t q = 0; q < queues; ++q)
            if (rte_eth_dev_rx_intr_ctl_q_get_fd(p.id, q) < 0)
                p.caps.rx_interrupts = false;
    }

    find_rx_wake_sockets(p);
    find_xdp_wake_sockets(p, xdp_opened);

    // 6. Steering: make the queue of every kernel->ferry flow computable.
    if (queues < 2) {
        p.steering = "single-queue";
    } else if (p.driver_name == "net_tap") {
        auto prog = load_tap_steering_program();
        if (!prog) {
            p.steering = "none (" + prog.error() + ")";
        } else {
            auto n = attach_tap_steering(spec.iface, prog.value());
            p.steering = n ? std::string("tap-ebpf") : "none (" + n.error() + ")";
            ::close(prog.value());  // the tap device holds its own reference
        }
        if (p.steering != "tap-ebpf") warn_no_steering(p, "tap steering");
    } else if (p.steering.empty()) {
        p.steering = "none (no computable steering for " + p.driver_name + ")";
    }

    char macs[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(macs, sizeof macs, &p.mac);
    PORT_LOG(INFO, "%s",
             logfmt("port started")
                 .kv("port", spec.name)
                 .kv("device", p.dev_name)
                 .kv("driver", p.driver_name)
                 .kv("port_id", unsigned(p.id))
                 .kv("mac", macs)
                 .kv("queue_pairs", unsigned(queues))
                 .kv("rx_descriptors", unsigned(p.rx_desc))
                 .kv("tx_descriptors", unsigned(p.tx_desc))
                 .kv("mbufs", unsigned(spec.mbufs))
                 .kv("rx_interrupts",
                     p.caps.rx_interrupts ? "yes" : (spec.rx_interrupts ? "no (probe failed)" : "no"))
                 .kv("rss", p.caps.rss ? "yes" : "no")
                 .kv("steering", p.steering)
                 .kv("offloads", offload_names(p.rx_offloads, p.tx_offloads))
                 .c_str());
    return p;
}

void port_close(port &p) noexcept {
    // Before the PMD closes the sockets (rte_eth_dev_close): a read after that
    // could hit an fd number reused by something else.
    if (p.kernel) {
        const kernel_ring_totals t = p.kernel->read();
        if (t.drops != 0)
            PORT_LOG(NOTICE, "%s",
                     logfmt("kernel ring drops")
                         .kv("port", p.spec.name)
                         .kv("dropped", t.drops)
                         .kv("frames", t.packets)
                         .kv("cause", "the port's rx rings were full (kernel_ring_drops)")
                         .c_str());
        p.kernel.reset();
    }
    if (p.id != UINT16_MAX) {
        rte_eth_dev_info info{};
        const bool have_info = rte_eth_dev_info_get(p.id, &info) == 0;
        if (p.started)
            (void)rte_eth_dev_stop(p.id);
        p.started = false;
        (void)rte_eth_dev_close(p.id);
        // A vdev we created is removed again (its tap interface disappears).
        if (p.created && have_info && info.device != nullptr)
            (void)rte_dev_remove(info.device);
        p.id = UINT16_MAX;
    }
    // After the ethdev that reads their rings is gone; before the pool their
    // held mbufs return to.
    p.packet_queues.clear();
    p.created = false;
    if (p.pool != nullptr)
        rte_mempool_free(p.pool);
    p.pool = nullptr;
}

}  // namespace ferry::net
