#include "ferry/net/packet_io.h"

#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/net/byte_order.h"

namespace ferry::net {

namespace {

using wire::load_be16;
using wire::load_be32;
using wire::store_be16;
using wire::store_be32;

// struct virtio_net_hdr (include/uapi/linux/virtio_net.h, little-endian as
// the kernel reads it here: vio_le() on x86), declared here because that
// header's struct virtio_net_hdr_v1_hash names a field DPDK defines as a macro.
struct virtio_net_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;      // Ethernet + IP + TCP headers
    uint16_t gso_size;     // payload bytes per segment
    uint16_t csum_start;   // where the checksum's sum starts
    uint16_t csum_offset;  // the checksum field, from csum_start
};
static_assert(sizeof(virtio_net_hdr) == 10);
constexpr uint8_t VIRTIO_NET_HDR_F_NEEDS_CSUM = 1;
constexpr uint8_t VIRTIO_NET_HDR_GSO_TCPV4 = 1;
constexpr uint8_t VIRTIO_NET_HDR_GSO_TCPV6 = 4;
constexpr uint8_t VIRTIO_NET_HDR_GSO_ECN = 0x80;  // ORed into gso_type: the frame has CWR set
constexpr uint32_t ip6_len = 40;

constexpr uint32_t eth_len = 14, ip_len = 20, tcp_min = 20;
constexpr uint8_t tcp_fin = 0x01, tcp_psh = 0x08, tcp_ack = 0x10, tcp_cwr = 0x80;
// A virtio-net header and the largest frame a GSO packet makes.
constexpr uint32_t whole_bytes = sizeof(virtio_net_hdr) + eth_len + 65535;
constexpr uint8_t VIRTIO_NET_HDR_F_DATA_VALID = 2;
constexpr uint8_t VIRTIO_NET_HDR_GSO_NONE = 0;

// The headers of a segment gso_run may merge: Ethernet + IPv4 without options
// (or the fixed IPv6 header alone) + TCP, all in the first mbuf, the IP
// length matching the frame, and the TCP checksum left to the device. 0 when
// it is not such a segment.
uint32_t tcp_headers(const rte_mbuf *m) noexcept {
    const uint32_t l3 = m->l3_len;
    if ((m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) == 0 || m->l2_len != eth_len ||
        (l3 != ip_len && l3 != ip6_len) || m->data_len < eth_len + l3 + tcp_min)
        return 0;
    const auto *d = rte_pktmbuf_mtod(m, const uint8_t *);
    const uint8_t *ip = d + eth_len;
    if (l3 == ip_len ? load_be16(d + 12) != ETH_P_IP || ip[0] != 0x45 || ip[9] != IPPROTO_TCP ||
                           (load_be16(ip + 6) & 0x3fff) != 0 ||
                           load_be16(ip + 2) != m->pkt_len - eth_len
                     : load_be16(d + 12) != ETH_P_IPV6 || (ip[0] >> 4) != 6 ||
                           ip[6] != IPPROTO_TCP ||
                           load_be16(ip + 4) != m->pkt_len - eth_len - ip6_len)
        return 0;
    const uint32_t hl = eth_len + l3 + (ip[l3 + 12] >> 4) * 4u;
    return hl >= eth_len + l3 + tcp_min && m->data_len >= hl && m->pkt_len > hl ? hl : 0;
}

}  // namespace

uint16_t gso_split(const uint8_t *vnet_and_frame, uint32_t len, rte_mempool *pool,
                   rte_mbuf **out, uint16_t cap) noexcept {
    if (len <= sizeof(virtio_net_hdr) || cap == 0) return 0;
    virtio_net_hdr vh;
    std::memcpy(&vh, vnet_and_frame, sizeof vh);
    const uint8_t *f = vnet_and_frame + sizeof vh;
    len -= sizeof vh;
    const uint64_t good = (vh.flags & (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
                              ? RTE_MBUF_F_RX_L4_CKSUM_GOOD
                              : 0;
    const uint32_t room = RTE_MBUF_DEFAULT_DATAROOM;
    if (vh.gso_type == VIRTIO_NET_HDR_GSO_NONE) {
        rte_mbuf *m = len <= room ? rte_pktmbuf_alloc(pool) : nullptr;
        if (m == nullptr) return 0;
        std::memcpy(rte_pktmbuf_mtod(m, uint8_t *), f, len);
        m->data_len = static_cast<uint16_t>(len);
        m->pkt_len = len;
        m->ol_flags |= good;
        out[0] = m;
        return 1;
    }
    // TCP over IPv4 or IPv6 (the fixed header alone: Linux's TCP puts no
    // extension header in a GSO frame), the headers whole, a GSO size that
    // fits an mbuf.
    const uint8_t gtype = static_cast<uint8_t>(vh.gso_type & ~VIRTIO_NET_HDR_GSO_ECN);
    const bool v6 = gtype == VIRTIO_NET_HDR_GSO_TCPV6;
    if ((gtype != VIRTIO_NET_HDR_GSO_TCPV4 && !v6) || len < eth_len + ip_len + tcp_min ||
        load_be16(f + 12) != (v6 ? ETH_P_IPV6 : ETH_P_IP))
        return 0;
    const uint8_t *ip = f + eth_len;
    const uint32_t ihl = v6 ? ip6_len : (ip[0] & 0x0f) * 4u;
    if (v6 ? (ip[0] >> 4) != 6 || ip[6] != IPPROTO_TCP
           : (ip[0] >> 4) != 4 || ihl < ip_len || ip[9] != IPPROTO_TCP)
        return 0;
    if (len < eth_len + ihl + tcp_min) return 0;
    const uint32_t hl = eth_len + ihl + (ip[ihl + 12] >> 4) * 4u;
    const uint32_t gso = vh.gso_size;
    const uint32_t ip_total = v6 ? ip6_len + load_be16(ip + 4) : load_be16(ip + 2);
    if (hl < eth_len + ihl + tcp_min || len <= hl || gso == 0 || hl + gso > room ||
        ip_total + eth_len < len)
        return 0;
    const uint32_t payload = len - hl;
    const uint32_t segs = (payload + gso - 1) / gso;
    if (segs > cap || rte_pktmbuf_alloc_bulk(pool, out, segs) != 0) return 0;
    const uint32_t seq0 = load_be32(ip + ihl + 4);
    const uint16_t id0 = load_be16(ip + 4);
    const uint8_t flags = ip[ihl + 13];
    for (uint32_t i = 0; i < segs; ++i) {
        rte_mbuf *m = out[i];
        const uint32_t chunk = i + 1 < segs ? gso : payload - i * gso;
        uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
        std::memcpy(d, f, hl);
        std::memcpy(d + hl, f + hl + i * gso, chunk);
        m->data_len = static_cast<uint16_t>(hl + chunk);
        m->pkt_len = hl + chunk;
        m->ol_flags |= good;
        if (v6) {
            // Payload length: the TCP header and this segment's data.
            store_be16(d + eth_len + 4, static_cast<uint16_t>(hl - eth_len - ip6_len + chunk));
        } else {
            auto *sip = reinterpret_cast<rte_ipv4_hdr *>(d + eth_len);
            store_be16(d + eth_len + 2, static_cast<uint16_t>(hl - eth_len + chunk));
            store_be16(d + eth_len + 4, static_cast<uint16_t>(id0 + i));
            sip->hdr_checksum = 0;
            sip->hdr_checksum = rte_ipv4_cksum(sip);
        }
        uint8_t *t = d + eth_len + ihl;
        const uint32_t seq = seq0 + i * gso;
        store_be32(t + 4, seq);
        uint8_t fl = flags;
        if (i + 1 < segs) fl = static_cast<uint8_t>(fl & ~(tcp_psh | tcp_fin));
        if (i != 0) fl = static_cast<uint8_t>(fl & ~tcp_cwr);
        t[13] = fl;
    }
    return static_cast<uint16_t>(segs);
}

uint16_t gso_run(rte_mbuf *const *pkts, uint16_t n) noexcept {
    if (n < 2) return 1;
    const rte_mbuf *a = pkts[0];
    const uint32_t hl = tcp_headers(a);
    if (hl == 0) return 1;
    const auto *ea = rte_pktmbuf_mtod(a, const uint8_t *);
    const uint32_t l3 = a->l3_len;  // 20 (IPv4) or 40 (IPv6): tcp_headers checked
    const uint8_t *ia = ea + eth_len, *ta = ia + l3;
    if (ta[13] != tcp_ack) return 1;
    const uint32_t mss = a->pkt_len - hl;
    const uint32_t tcp_hl = hl - eth_len - l3;
    uint32_t seq = load_be32(ta + 4) + mss;
    uint32_t ip_total = l3 + tcp_hl + mss;
    uint16_t k = 1;
    while (k < n && k < gso_max_segments) {
        const rte_mbuf *b = pkts[k];
        if (b->l3_len != l3 || tcp_headers(b) != hl) break;
        const uint32_t len = b->pkt_len - hl;
        if (len > mss || ip_total + len > gso_max_ip_bytes) break;
        const auto *eb = rte_pktmbuf_mtod(b, const uint8_t *);
        const uint8_t *ib = eb + eth_len, *tb = ib + l3;
        // Equal where every segment tcp_gso_segment() cuts is equal: IPv4
        // but its length, id and checksum; IPv6 but its payload length.
        const bool same_ip = l3 == ip_len ? std::memcmp(ia, ib, 2) == 0 &&
                                                std::memcmp(ia + 6, ib + 6, 4) == 0 &&
                                                std::memcmp(ia + 12, ib + 12, 8) == 0
                                          : std::memcmp(ia, ib, 4) == 0 &&
                                                std::memcmp(ia + 6, ib + 6, 34) == 0;
        if (std::memcmp(ea, eb, eth_len) != 0 || !same_ip || std::memcmp(ta, tb, 4) != 0 || std::memcmp(ta + 8, tb + 8, 5) != 0 ||
            std::memcmp(ta + 14, tb + 14, 2) != 0 || std::memcmp(ta + 18, tb + 18, tcp_hl - 18) != 0)
            break;
        const uint8_t flags = tb[13];
        if (load_be32(tb + 4) != seq || (flags & ~(tcp_psh | tcp_fin)) != tcp_ack) break;
        ++k;
        ip_total += len;
        seq += len;
        if (len < mss || flags != tcp_ack) break;  // the last one
    }
    return k;
}

result<std::unique_ptr<packet_queue>, std::string> packet_queue::open(const params &p) {
    auto fail = [&p](const char *what, int err) {
        return unexpected{"port '" + p.port + "' queue " + std::to_string(p.queue) + " (iface " +
                          p.iface + "): " + what + ": " + std::strerror(err)};
    };
    std::unique_ptr<packet_queue> q(new packet_queue());
    q->gso_ = p.gso;
    q->ifindex_ = p.ifindex;
    // Protocol 0: nothing is received before the ring is mapped and bound.
    q->fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (q->fd_ < 0) return fail("socket(AF_PACKET)", errno);
    const int one = 1, v2 = TPACKET_V2;
    // Before the ring: the kernel refuses PACKET_VNET_HDR on a socket with one.
    if (setsockopt(q->fd_, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) != 0)
        return fail("PACKET_VNET_HDR", errno);
    if (setsockopt(q->fd_, SOL_PACKET, PACKET_VERSION, &v2, sizeof v2) != 0)
        return fail("PACKET_VERSION", errno);
    // Our own frames (and the kernel's) leaving the interface are not input.
    if (setsockopt(q->fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0)
        return fail("PACKET_IGNORE_OUTGOING", errno);
    // The skbs of a burst stay charged to the socket until the peer consumes them.
    const int sndbuf = 4 << 20;
    if (setsockopt(q->fd_, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) != 0)
        (void)setsockopt(q->fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    // A frame larger than a ring frame is also queued whole on the socket (its
    // ring copy marked TP_STATUS_COPY), up to the receive buffer.
    if (setsockopt(q->fd_, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof one) != 0)
        return fail("PACKET_COPY_THRESH", errno);
    const int rcvbuf = 8 << 20;
    if (setsockopt(q->fd_, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
        (void)setsockopt(q->fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    q->whole_ = std::make_unique<uint8_t[]>(whole_bytes);
    q->frame_size_ = p.frame_size;
    q->frames_ = p.ring_frames;
    tpacket_req req{};
    req.tp_frame_size = p.frame_size;
    req.tp_frame_nr = p.ring_frames;
    const uint32_t per_block = p.ring_frames < 32 ? p.ring_frames : 32;
    req.tp_block_size = p.frame_size * per_block;
    req.tp_block_nr = p.ring_frames / per_block;
    if (setsockopt(q->fd_, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
        return fail("PACKET_RX_RING", errno);
    q->ring_bytes_ = size_t{req.tp_block_size} * req.tp_block_nr;
    void *ring = mmap(nullptr, q->ring_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED,
                      q->fd_, 0);
    if (ring == MAP_FAILED) return fail("mmap of the rx ring", errno);
    q->ring_ = static_cast<uint8_t *>(ring);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = q->ifindex_;
    if (bind(q->fd_, reinterpret_cast<sockaddr *>(&sll), sizeof sll) != 0) return fail("bind", errno);
    if (p.nqueues > 1) {
        const int type = p.fanout_prog_fd >= 0 ? PACKET_FANOUT_EBPF : PACKET_FANOUT_HASH;
        const int fanout = p.fanout_id | (type << 16);
        if (setsockopt(q->fd_, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof fanout) != 0)
            return fail("PACKET_FANOUT", errno);
        // The program is the group's: set once, by its first member (until
        // then the group sends every frame to it).
        if (p.fanout_prog_fd >= 0 && p.queue == 0 &&
            setsockopt(q->fd_, SOL_PACKET, PACKET_FANOUT_DATA, &p.fanout_prog_fd,
                       sizeof p.fanout_prog_fd) != 0)
            return fail("PACKET_FANOUT_DATA", errno);
    }
    const std::string base = "fp" + std::to_string(p.fanout_id) + "_" + std::to_string(p.queue);
    // The net_ring ethdev's queues: this lcore alone enqueues and dequeues.
    q->rx_ring_ = rte_ring_create((base + "r").c_str(), 1024, p.numa_socket,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
    q->tx_ring_ = rte_ring_create((base + "t").c_str(), 1024, p.numa_socket,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (q->rx_ring_ == nullptr || q->tx_ring_ == nullptr) return fail("rte_ring_create", rte_errno);
    return q;
}

packet_queue::~packet_queue() {
    if (held_n_ != 0) rte_pktmbuf_free_bulk(held_, held_n_);
    for (rte_ring *r : {rx_ring_, tx_ring_}) {
        if (r == nullptr) continue;
        void *m;
        while (rte_ring_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
        rte_ring_free(r);
    }
    if (ring_ != nullptr) munmap(ring_, ring_bytes_);
    if (fd_ >= 0) ::close(fd_);
}

uint32_t packet_queue::receive(rte_mempool *pool) noexcept {
    // A frame read whole may become this many segments (64 KiB of 1448).
    constexpr uint16_t max_split = 48;
    static_assert(batch > max_split);
    uint32_t room = rte_ring_free_count(rx_ring_);
    uint32_t moved = 0;
    rte_mbuf *out[batch];
    uint16_t n = 0;
    auto push = [&] {
        moved += rte_ring_sp_enqueue_burst(rx_ring_, reinterpret_cast<void **>(out), n, nullptr);
        n = 0;
    };
    while (room > 0) {
        auto *h = reinterpret_cast<tpacket2_hdr *>(ring_ + size_t{next_} * frame_size_);
        const uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if ((status & TP_STATUS_USER) == 0) break;
        const uint8_t *frame = reinterpret_cast<const uint8_t *>(h) + h->tp_mac;
        const uint32_t len = h->tp_snaplen;
        rte_mbuf *m = nullptr;
        if (status & TP_STATUS_COPY) {
            // The whole frame waits on the socket, in ring order.
            if (room < max_split) break;  // the next call takes it
            if (n > batch - max_split) push();
            const ssize_t got = ::recv(fd_, whole_.get(), whole_bytes, MSG_DONTWAIT | MSG_TRUNC);
            const uint16_t k = got > 0 && static_cast<size_t>(got) <= whole_bytes
                                   ? gso_split(whole_.get(), static_cast<uint32_t>(got), pool,
                                               out + n, max_split)
                                   : 0;
            ctr_.rx_frames.inc();
            if (k == 0) {
                ctr_.rx_truncated.inc();
            } else {
                ctr_.rx_gso_frames.inc();
                ctr_.rx_gso_segments.inc(k);
                n = static_cast<uint16_t>(n + k);
                room -= k;
            }
            __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
            next_ = next_ + 1 == frames_ ? 0 : next_ + 1;
            if (n == batch) push();
            continue;
        }
        ctr_.rx_frames.inc();
        if (len < h->tp_len || len > RTE_MBUF_DEFAULT_DATAROOM) {
            ctr_.rx_truncated.inc();
        } else if ((m = rte_pktmbuf_alloc(pool)) == nullptr) {
            ctr_.rx_nombuf.inc();
        } else {
            std::memcpy(rte_pktmbuf_mtod(m, uint8_t *), frame, len);
            m->data_len = static_cast<uint16_t>(len);
            m->pkt_len = len;
            if (status & TP_STATUS_CSUMNOTREADY) {
                // A local sender's CHECKSUM_PARTIAL frame: the field holds the
                // pseudo-header sum only, and nothing on the way can corrupt it.
                m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
                ctr_.rx_csum_partial.inc();
            } else if (status & TP_STATUS_CSUM_VALID) {
                m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
                ctr_.rx_csum_valid.inc();
            }
            out[n++] = m;
        }
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        next_ = next_ + 1 == frames_ ? 0 : next_ + 1;
        --room;
        if (n == batch) push();
    }
    if (n != 0) push();
    return moved;
}

uint32_t packet_queue::transmit() noexcept {
    uint32_t sent = 0;
    for (;;) {
        if (held_n_ < batch)
            held_n_ = static_cast<uint16_t>(
                held_n_ + rte_ring_sc_dequeue_burst(tx_ring_, reinterpret_cast<void **>(held_ + held_n_),
                                                    batch - held_n_, nullptr));
        if (held_n_ == 0) return sent;
        const uint16_t n = held_n_;
        const uint64_t before = ctr_.tx_frames.get();
        const uint32_t done = send_batch(held_, n);
        sent += static_cast<uint32_t>(ctr_.tx_frames.get() - before);
        if (done < n) std::memmove(held_, held_ + done, (n - done) * sizeof(rte_mbuf *));
        held_n_ = static_cast<uint16_t>(n - done);
        if (done == 0) return sent;  // the kernel takes nothing now: retried next flush
    }
}

// Sends pkts[0..n) as few frames as gso_run allows, one sendmmsg per batch.
// Returns how many of the mbufs were consumed (sent, or refused and freed);
// the rest were not tried or the kernel could not take them now.
uint32_t packet_queue::send_batch(rte_mbuf **pkts, uint16_t n) noexcept {
    constexpr uint32_t max_iov = 1024;
    iovec iov[max_iov];
    mmsghdr msgs[batch];
    virtio_net_hdr vh[batch];
    sockaddr_ll to[batch];
    uint8_t scratch[batch][eth_len + ip6_len + 60];  // the longest headers: IPv6, TCP with options
    uint16_t first[batch + 1];
    uint32_t niov = 0;
    uint16_t nmsg = 0, i = 0;
    while (i < n) {
        const uint16_t run = gso_ ? gso_run(pkts + i, static_cast<uint16_t>(n - i)) : 1;
        uint32_t need = 2;
        for (uint16_t k = 0; k < run; ++k) need += pkts[i + k]->nb_segs;
        if (niov + need > max_iov) break;
        const rte_mbuf *a = pkts[i];
        const auto *d = rte_pktmbuf_mtod(a, const uint8_t *);
        virtio_net_hdr &h = vh[nmsg];
        h = virtio_net_hdr{};
        const uint32_t msg_iov = niov;
        iov[niov++] = {&h, sizeof h};
        if (run > 1) {
            const uint32_t hl = tcp_headers(a);
            uint8_t *s = scratch[nmsg];
            std::memcpy(s, d, hl);
            iov[niov++] = {s, hl};
            uint32_t total = 0;
            for (uint16_t k = 0; k < run; ++k) {
                const rte_mbuf *m = pkts[i + k];
                total += m->pkt_len - hl;
                // The payload: the chain past the headers.
                uint32_t skip = hl;
                for (const rte_mbuf *seg = m; seg != nullptr; seg = seg->next) {
                    if (skip >= seg->data_len) {
                        skip -= seg->data_len;
                        continue;
                    }
                    iov[niov++] = {rte_pktmbuf_mtod_offset(seg, uint8_t *, skip), seg->data_len - skip};
                    skip = 0;
                }
            }
            const uint32_t l3 = a->l3_len;
            uint16_t ph = 0;
            if (l3 == ip_len) {
                auto *ip = reinterpret_cast<rte_ipv4_hdr *>(s + eth_len);
                ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(hl - eth_len + total));
                ip->hdr_checksum = 0;
                ip->hdr_checksum = rte_ipv4_cksum(ip);
                // tcp_gso_segment() adjusts this sum by each segment's length.
                ph = rte_ipv4_phdr_cksum(ip, 0);
                h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
            } else {
                auto *ip6 = reinterpret_cast<rte_ipv6_hdr *>(s + eth_len);
                ip6->payload_len = rte_cpu_to_be_16(static_cast<uint16_t>(hl - eth_len - ip6_len + total));
                ph = rte_ipv6_phdr_cksum(ip6, 0);
                h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
            }
            uint8_t *th = s + eth_len + l3;
            const auto *last = rte_pktmbuf_mtod(pkts[i + run - 1], const uint8_t *);
            th[13] = static_cast<uint8_t>(th[13] | (last[eth_len + l3 + 13] & (tcp_psh | tcp_fin)));
            std::memcpy(th + 16, &ph, 2);
            h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
            h.hdr_len = static_cast<uint16_t>(hl);
            h.gso_size = static_cast<uint16_t>(a->pkt_len - hl);
            h.csum_start = static_cast<uint16_t>(eth_len + l3);
            h.csum_offset = 16;
            ctr_.tx_gso_frames.inc();
        } else {
            for (const rte_mbuf *seg = a; seg != nullptr; seg = seg->next)
                if (seg->data_len != 0) iov[niov++] = {rte_pktmbuf_mtod(seg, uint8_t *), seg->data_len};
            if (a->ol_flags & (RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM)) {
                h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
                h.csum_start = static_cast<uint16_t>(a->l2_len + a->l3_len);
                h.csum_offset = (a->ol_flags & RTE_MBUF_F_TX_L4_MASK) == RTE_MBUF_F_TX_UDP_CKSUM ? 6 : 16;
            }
        }
        sockaddr_ll &sll = to[nmsg];
        sll = sockaddr_ll{};
        sll.sll_family = AF_PACKET;
        sll.sll_ifindex = ifindex_;
        std::memcpy(&sll.sll_protocol, d + 12, 2);  // the frame's EtherType, network order
        msgs[nmsg].msg_hdr = msghdr{};
        msgs[nmsg].msg_hdr.msg_name = &sll;
        msgs[nmsg].msg_hdr.msg_namelen = sizeof sll;
        msgs[nmsg].msg_hdr.msg_iov = &iov[msg_iov];
        msgs[nmsg].msg_hdr.msg_iovlen = niov - msg_iov;
        msgs[nmsg].msg_len = 0;
        first[nmsg] = i;
        ++nmsg;
        i = static_cast<uint16_t>(i + run);
    }
    first[nmsg] = i;
    uint16_t done = 0;  // messages sent or refused
    while (done < nmsg) {
        const int r = sendmmsg(fd_, msgs + done, nmsg - done, MSG_DONTWAIT);
        ctr_.tx_syscalls.inc();
        if (r > 0) {
            for (int k = 0; k < r; ++k) {
                ctr_.tx_frames.inc();
                ctr_.tx_segments.inc(first[done + k + 1] - first[done + k]);
            }
            done = static_cast<uint16_t>(done + r);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
            ctr_.tx_retry.inc();
            break;
        }
        // Refused (a frame the device cannot take): dropped, counted; TCP resends.
        ctr_.tx_errors.inc(first[done + 1] - first[done]);
        ++done;
    }
    const uint16_t consumed = first[done];
    rte_pktmbuf_free_bulk(pkts, consumed);
    return consumed;
}

}  // namespace ferry::net
