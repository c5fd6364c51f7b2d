#include "ferry/net/stack.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "ferry/base/compiler.h"
#include "ferry/net/byte_order.h"
#include "ferry/net/checksum.h"
#include "ferry/net/icmp.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/net/tcp_layer.h"

namespace ferry::net {

namespace {

constexpr uint32_t eth_hlen = ethernet_frame::header_len;

neighbor_config neighbor_config_of(const iface_config &cfg) noexcept {
    return neighbor_config{cfg.neighbor_capacity, cfg.neighbor_timeout_ns, cfg.arp_retry_ns,
                           cfg.arp_max_tries};
}

// What one ICMPv6 error costs from the bucket (stack::icmp6_credit_ns_),
// and how much it holds. A rate of 0 makes both 0: nothing is ever sent.
uint64_t icmp6_error_cost_ns(const iface_config &cfg) noexcept {
    return cfg.icmp6_errors_per_s == 0 ? 0 : 1'000'000'000 / cfg.icmp6_errors_per_s;
}
uint64_t icmp6_error_cap_ns(const iface_config &cfg) noexcept {
    return icmp6_error_cost_ns(cfg) * cfg.icmp6_error_burst;
}

// RFC 4443 §2.4(c): an error carries "as much of invoking packet as
// possible without the ICMPv6 packet exceeding the minimum IPv6 MTU".
constexpr uint32_t ipv6_min_mtu = 1280;  // RFC 8200 §5

// Whether the TCP header at `l4` of `first` (the frame's first segment
// from the IPv6 header on; l4 <= first.size()), options included, lies in
// `first` whenever the segment of `seg_len` bytes has one: tcp_layer reads
// it there. Without extension headers max_header_bytes guarantees it.
bool tcp_header_in(std::span<const uint8_t> first, uint32_t l4, uint32_t seg_len) noexcept {
    const std::size_t avail = first.size() - l4;
    if (avail >= seg_len) return true;
    if (avail < 20) return false;  // tcp_segment::min_header_len
    return avail >= static_cast<std::size_t>(first[l4 + 12] >> 4) * 4;  // data offset
}

// A frame received and turned around keeps no receive metadata: rx offload
// flags, packet type or VLAN would otherwise be read as tx requests.
// Precondition: m is direct (see make_writable), so no flag needs keeping.
void reset_tx_metadata(rte_mbuf *m) noexcept {
    m->ol_flags = 0;
    m->packet_type = 0;
    m->tx_offload = 0;
    m->vlan_tci = 0;
    m->vlan_tci_outer = 0;
}

}  // namespace

stack::stack(const iface_config &cfg, rte_mempool *pool, net_counters &counters)
    : cfg_(cfg),
      pool_(pool),
      ctr_(counters),
      neigh_(neighbor_config_of(cfg)),
      subnet_bcast_(cfg.addr.subnet_broadcast(cfg.prefix_len)),
      icmp6_credit_ns_(icmp6_error_cap_ns(cfg)) {}

stack::~stack() {
    for (rte_mbuf *m : tx_pending()) {
        rte_pktmbuf_free(m);
    }
    tx_len_ = 0;
    neigh_.clear([](rte_mbuf *m) { rte_pktmbuf_free(m); });
}

void stack::drop(rte_mbuf *m, ferry::counter &c) noexcept {
    c.inc();
    rte_pktmbuf_free(m);
}

void stack::transmit(rte_mbuf *m) noexcept {
    if (FERRY_UNLIKELY(tx_len_ == tx_capacity)) {
        drop(m, ctr_.tx_drop_full);
        return;
    }
    if (tx_head_ + tx_len_ == tx_capacity) {
        std::memmove(txq_.data(), txq_.data() + tx_head_, tx_len_ * sizeof(rte_mbuf *));
        tx_head_ = 0;
    }
    txq_[tx_head_ + tx_len_++] = m;
}

void stack::tx_consumed(uint16_t n) noexcept {
    const uint32_t k = std::min<uint32_t>(n, tx_len_);
    tx_head_ += k;
    tx_len_ -= k;
    if (tx_len_ == 0) {
        tx_head_ = 0;
    }
    ctr_.tx_frames.inc(k);
}

rte_mbuf *stack::make_writable(rte_mbuf *m) noexcept {
    bool writable = true;
    for (const rte_mbuf *seg = m; seg != nullptr; seg = seg->next) {
        writable = writable && RTE_MBUF_DIRECT(seg) && rte_mbuf_refcnt_read(seg) == 1;
    }
    if (FERRY_LIKELY(writable)) {
        return m;
    }
    rte_mbuf *c = rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX);
    rte_pktmbuf_free(m);
    if (c == nullptr) {
        ctr_.tx_alloc_fail.inc();
    }
    return c;
}

void stack::input_burst(std::span<rte_mbuf *const> pkts, uint64_t now_ns) noexcept {
    for (rte_mbuf *m : pkts) {
        input_frame(m, now_ns);
    }
}

void stack::input_frame(rte_mbuf *m, uint64_t now_ns) noexcept {
    ctr_.eth_rx.inc();
    const uint32_t first_len = rte_pktmbuf_data_len(m);
    if (FERRY_UNLIKELY(m->nb_segs > 1 &&
                       first_len < std::min(rte_pktmbuf_pkt_len(m), max_header_bytes))) {
        drop(m, ctr_.eth_drop_header_split);
        return;
    }
    ethernet_frame frame({rte_pktmbuf_mtod(m, uint8_t *), first_len});
    ethernet_repr eth;
    switch (ethernet_repr::parse(frame, eth)) {
        case eth_error::none:
            break;
        case eth_error::truncated:
            drop(m, ctr_.eth_drop_runt);
            return;
        case eth_error::vlan_unsupported:
            drop(m, ctr_.eth_drop_vlan);
            return;
    }
    // Our MAC or broadcast; no multicast group is joined.
    if (eth.dst != cfg_.mac) {
        if (!eth.dst.is_multicast()) {
            drop(m, ctr_.eth_drop_not_ours);
            return;
        }
        if (!eth.dst.is_broadcast() && !ipv6_group(eth)) {
            drop(m, ctr_.eth_drop_multicast);
            return;
        }
    }
    // A group address is never a source (IEEE 802-2014 §8.2); answering one
    // would multicast the reply.
    if (eth.src.is_multicast()) {
        drop(m, ctr_.eth_drop_bad_src);
        return;
    }
    switch (eth.type) {
        case ether_type::arp:
            input_arp(m, frame.payload(), now_ns);
            return;
        case ether_type::ipv4:
            input_ipv4(m, eth, frame.payload(), now_ns);
            return;
        case ether_type::ipv6:
            if (cfg_.addr6) {
                input_ipv6(m, eth, frame.payload(), now_ns);
                return;
            }
            drop(m, ctr_.eth_drop_unknown_ethertype);
            return;
        default:
            drop(m, ctr_.eth_drop_unknown_ethertype);
            return;
    }
}

void stack::input_arp(rte_mbuf *m, std::span<uint8_t> payload, uint64_t now_ns) noexcept {
    ctr_.arp_rx.inc();
    arp_repr a;
    switch (arp_repr::parse(arp_packet(payload), a)) {
        case arp_error::none:
            break;
        case arp_error::truncated:
        case arp_error::bad_address_length:
            drop(m, ctr_.arp_drop_malformed);
            return;
        case arp_error::unsupported_hardware:
        case arp_error::unsupported_protocol:
        case arp_error::unsupported_operation:
            drop(m, ctr_.arp_drop_unsupported);
            return;
    }
    // A binding to a group MAC, or for an address that cannot be a host's,
    // must never enter the table.
    if (!a.sender_hw.is_unicast() || a.sender_hw.is_zero() || a.sender_ip.is_multicast() ||
        a.sender_ip.is_reserved() || a.sender_ip.is_loopback()) {
        drop(m, ctr_.arp_drop_bad_sender);
        return;
    }
    if (a.sender_ip == cfg_.addr) {
        // Another host uses our address (RFC 5227 §2.4), or our own announcement
        // came back. Never learn it. Defending the address is not implemented.
        drop(m, a.sender_hw == cfg_.mac ? ctr_.arp_drop_not_ours : ctr_.arp_conflict);
        return;
    }
    const bool for_us = a.target_ip == cfg_.addr;
    // RFC 5227 §2.1.1: a probe's sender address is 0.0.0.0, it binds nothing.
    if (!a.sender_ip.is_unspecified()) {
        learned_and_shared(neigh_.learn(a.sender_ip, a.sender_hw, now_ns, for_us), a.sender_ip,
                           a.sender_hw);
    }
    if (!for_us) {
        drop(m, ctr_.arp_drop_not_ours);
        return;
    }
    if (a.op == arp_op::reply) {
        ctr_.arp_replies_rx.inc();
        rte_pktmbuf_free(m);
        return;
    }
    // RFC 826: "Swap hardware and protocol fields, putting the local hardware
    // and protocol addresses in the sender fields. Set the ar$op field to
    // ares_op$REPLY. Send the packet to the (new) target hardware address".
    m = make_writable(m);
    if (m == nullptr) {
        return;
    }
    constexpr uint32_t reply_len = eth_hlen + arp_repr::buffer_len();
    chain_truncate(m, reply_len);  // Ethernet padding and anything after the ARP packet
    uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
    ethernet_frame frame({d, reply_len});
    arp_packet pkt(frame.payload());
    arp_repr{arp_op::reply, cfg_.mac, cfg_.addr, a.sender_hw, a.sender_ip}.emit(pkt);
    ethernet_repr{a.sender_hw, cfg_.mac, ether_type::arp}.emit(frame);
    reset_tx_metadata(m);
    ctr_.arp_requests_answered.inc();
    transmit(m);
}

bool stack::valid_source(ipv4_addr src) const noexcept {
    // RFC 1122 §3.2.1.3: 0/8 only while booting (a), 127/8 never outside a host
    // (g), broadcast addresses never (c)-(e); multicast is never a source
    // (RFC 1112 §4) and 240/4 is reserved. Our own address from outside is a
    // spoof or a loop (Linux: martian source).
    return !src.is_this_network() && !src.is_loopback() && !src.is_multicast() &&
           !src.is_reserved() && src != cfg_.addr && src != subnet_bcast_;
}

void stack::input_ipv4(rte_mbuf *m, const ethernet_repr &eth, std::span<uint8_t> payload,
                       uint64_t now_ns) noexcept {
    ctr_.ipv4_rx.inc();
    // The datagram may continue in further segments: check() compares the
    // total length with what the whole chain holds.
    const ipv4_packet pkt(payload, rte_pktmbuf_pkt_len(m) - eth_hlen);
    ipv4_repr ip;
    switch (ipv4_repr::parse(pkt, ip)) {
        case ipv4_error::none:
            break;
        case ipv4_error::truncated:
            drop(m, ctr_.ipv4_drop_truncated);
            return;
        case ipv4_error::bad_version:
            drop(m, ctr_.ipv4_drop_bad_version);
            return;
        case ipv4_error::bad_ihl:
            drop(m, ctr_.ipv4_drop_bad_ihl);
            return;
        case ipv4_error::bad_length:
            drop(m, ctr_.ipv4_drop_bad_length);
            return;
        case ipv4_error::bad_checksum:
            drop(m, ctr_.ipv4_drop_bad_checksum);
            return;
    }
    if (ip.dst != cfg_.addr) {
        // Broadcasts (limited, subnet-directed) and multicast are not served:
        // RFC 1122 §3.2.2.6 lets a host ignore broadcast echo requests.
        const bool group =
            ip.dst.is_broadcast() || ip.dst.is_multicast() || ip.dst == subnet_bcast_;
        drop(m, group ? ctr_.ipv4_drop_broadcast : ctr_.ipv4_drop_not_ours);
        return;
    }
    // RFC 1122 §3.3.6: "A host SHOULD silently discard a datagram that is
    // received via a link-layer broadcast but does not specify an IP multicast
    // or broadcast destination address."
    if (eth.dst.is_broadcast()) {
        drop(m, ctr_.ipv4_drop_link_broadcast);
        return;
    }
    if (!valid_source(ip.src)) {
        drop(m, ctr_.ipv4_drop_bad_src);
        return;
    }
    // RFC 1122 §3.2.1.7: "A host MUST NOT discard a datagram just because it
    // was received with TTL less than 2" (RFC 791's "destroyed" at zero is
    // about forwarding; Linux delivers them too). Counted: only a broken
    // sender, or one a hop away that decremented to 0, makes them.
    if (ip.ttl < 2) ctr_.ipv4_rx_ttl_below_2.inc();
    uint32_t hlen = static_cast<uint32_t>(pkt.header_len());
    if (ip.is_fragment()) {
        // RFC 1122 §3.3.2: a host MUST reassemble (ipv4_reassembly.h).
        ctr_.ipv4_frag_rx.inc();
        m = reassemble(m, ip, hlen, now_ns);
        if (m == nullptr) return;
    }
    switch (ip.protocol) {
        case ip_protocol::icmp:
            input_icmp(m, eth, ip, hlen);
            return;
        case ip_protocol::tcp:
            input_tcp(m, ip, eth_hlen + hlen, now_ns);
            return;
        default:
            // RFC 1122 §3.2.2.1 suggests a Protocol Unreachable; not sent yet.
            drop(m, ctr_.ipv4_drop_unknown_protocol);
            return;
    }
}

// A fragment to reassembly: null while its datagram is not complete (or it
// was dropped: counted), else the whole datagram's frame, with `ip` and
// `hlen` its header's.
rte_mbuf *stack::reassemble(rte_mbuf *m, ipv4_repr &ip, uint32_t &hlen, uint64_t now_ns) noexcept {
    const ipv4_reassembly::result r = frag_.input(m, eth_hlen, ip, hlen, now_ns);
    ctr_.ipv4_frag_drop_evicted.inc(r.evicted);
    switch (r.what) {
        case ipv4_reassembly::outcome::held:
            return nullptr;
        case ipv4_reassembly::outcome::duplicate:
            ctr_.ipv4_frag_drop_duplicate.inc();
            return nullptr;
        case ipv4_reassembly::outcome::overlap:
            ctr_.ipv4_frag_drop_overlap.inc();
            return nullptr;
        case ipv4_reassembly::outcome::bad:
            ctr_.ipv4_frag_drop_bad.inc();
            return nullptr;
        case ipv4_reassembly::outcome::tiny:
            ctr_.ipv4_frag_drop_tiny.inc();
            return nullptr;
        case ipv4_reassembly::outcome::too_many:
            ctr_.ipv4_frag_drop_too_many.inc();
            return nullptr;
        case ipv4_reassembly::outcome::complete:
            break;
    }
    ctr_.ipv4_frag_reassembled.inc();
    rte_mbuf *d = r.frame;
    // The whole datagram's header (the first fragment's, rewritten).
    const ipv4_packet pkt(std::span<uint8_t>(rte_pktmbuf_mtod_offset(d, uint8_t *, eth_hlen),
                                             d->data_len - eth_hlen),
                          rte_pktmbuf_pkt_len(d) - eth_hlen);
    if (ipv4_repr::parse(pkt, ip) != ipv4_error::none) {  // not for a datagram we rewrote
        drop(d, ctr_.ipv4_frag_drop_bad);
        return nullptr;
    }
    hlen = static_cast<uint32_t>(pkt.header_len());
    return d;
}

void stack::learned_and_shared(const neighbor_table::learn_result &lr, const ip_addr &ip,
                               mac_addr mac) noexcept {
    learned(lr, mac);
    // Only news goes to the other lcores (learn_result::share).
    if (neigh_hook_ != nullptr) {
        if (lr.share)
            neigh_hook_(neigh_hook_ctx_, ip, mac);
        else if (lr.status == neighbor_table::learn_status::updated ||
                 lr.status == neighbor_table::learn_status::refreshed)
            ctr_.neigh_share_suppressed.inc();
    }
}

void stack::learn_shared(const ip_addr &ip, mac_addr mac, uint64_t now_ns) noexcept {
    ctr_.neigh_shared_in.inc();
    learned(neigh_.learn(ip, mac, now_ns, true), mac);
}

// Counts a learn() by its outcome and sends the packets that waited for it.
void stack::learned(const neighbor_table::learn_result &lr, mac_addr mac) noexcept {
    switch (lr.status) {
        case neighbor_table::learn_status::updated:
            ctr_.neigh_updated.inc();
            break;
        case neighbor_table::learn_status::refreshed:
            ctr_.neigh_refreshed.inc();
            break;
        case neighbor_table::learn_status::resolved:
        case neighbor_table::learn_status::inserted:
            ctr_.neigh_learned.inc();
            break;
        case neighbor_table::learn_status::table_full:
            ctr_.neigh_table_full.inc();
            break;
        case neighbor_table::learn_status::ignored:
            break;
    }
    if (lr.evicted) ctr_.neigh_evicted.inc();
    for (rte_mbuf *p : lr.released) send_ip(p, mac);
}

void stack::input_handoff(rte_mbuf *m, uint64_t now_ns) noexcept {
    ctr_.tcp_handoff_in.inc();
    if (tcp_ == nullptr) {
        drop(m, ctr_.tcp_drop_unimplemented);
        return;
    }
    // The sending lcore's stack (same port, same configuration) checked the
    // Ethernet and IPv4 headers; only the fields TCP needs are read again.
    const uint32_t first = rte_pktmbuf_data_len(m);
    if (first < eth_hlen) {
        drop(m, ctr_.eth_drop_runt);
        return;
    }
    const std::span<uint8_t> l3(rte_pktmbuf_mtod_offset(m, uint8_t *, eth_hlen), first - eth_hlen);
    if (!l3.empty() && (l3[0] >> 4) == 6) {
        ipv6_repr ip6;
        if (ipv6_repr::parse(l3, ip6, rte_pktmbuf_pkt_len(m) - eth_hlen) != ipv6_error::none) {
            drop(m, ctr_.ipv6_drop_malformed);
            return;
        }
        // The sender's walk of the extension headers led to TCP; the same
        // walk over the same bytes finds where (and how long) it is.
        const ipv6_ext_walk w = walk_ipv6_ext(l3, ip6);
        if (w.verdict != ipv6_ext_verdict::upper ||
            w.next_header != static_cast<uint8_t>(ipv6_next::tcp)) {
            drop(m, ctr_.ipv6_drop_malformed);
            return;
        }
        ipv6_repr up = ip6;
        up.payload_len = w.upper_len(ip6);
        tcp_->input(m, up, eth_hlen + w.offset, now_ns, /*verified=*/true);
        return;
    }
    const ipv4_packet pkt(l3, rte_pktmbuf_pkt_len(m) - eth_hlen);
    ipv4_repr ip;
    if (ipv4_repr::parse(pkt, ip) != ipv4_error::none) {
        drop(m, ctr_.ipv4_drop_truncated);
        return;
    }
    // The sending lcore verified the segment (checksum, options) before it
    // handed it over (tcp_layer::input).
    tcp_->input(m, ip, eth_hlen + static_cast<uint32_t>(pkt.header_len()), now_ns,
                /*verified=*/true);
}

template <class IpRepr>
void stack::input_tcp(rte_mbuf *m, const IpRepr &ip, uint32_t l4_off, uint64_t now_ns) noexcept {
    // The TCP layer (RFC 9293 §3.10.7 "SEGMENT ARRIVES") takes over here.
    if (tcp_ == nullptr) {
        drop(m, ctr_.tcp_drop_unimplemented);
        return;
    }
    tcp_->input(m, ip, l4_off, now_ns);
}

void stack::input_icmp(rte_mbuf *m, const ethernet_repr &eth, const ipv4_repr &ip,
                       uint32_t ip_header_len) noexcept {
    ctr_.icmp_rx.inc();
    const uint32_t l4_off = eth_hlen + ip_header_len;
    const uint32_t icmp_len = ip.payload_len;
    // The first segment holds at least max_header_bytes (or the whole frame),
    // so the 8-byte ICMP header is in it whenever the message has one.
    const uint32_t in_first = std::min(rte_pktmbuf_data_len(m) - l4_off, icmp_len);
    icmpv4_packet msg({rte_pktmbuf_mtod_offset(m, uint8_t *, l4_off), in_first});
    if (msg.check_len() != icmp_error::none || icmp_len < icmpv4_packet::header_len) {
        drop(m, ctr_.icmp_drop_truncated);
        return;
    }
    // RFC 792: the checksum covers the whole message, which may span segments.
    // `rest` sums everything but the type/code and checksum words, so the
    // reply's checksum follows from it without a second pass over the data.
    const internet_checksum rest = chain_sum(m, l4_off + 4, icmp_len - 4);
    internet_checksum whole = rest;
    whole.add_word(wire::load_be16(msg.buffer().data()));
    whole.add_word(msg.checksum());
    if (whole.fold() != 0xffff) {
        drop(m, ctr_.icmp_drop_bad_checksum);
        return;
    }
    // RFC 1122 §3.2.2: unknown types are silently discarded. Echo replies are
    // too: nothing here sends echo requests.
    if (msg.type() != static_cast<uint8_t>(icmp_type::echo_request) || msg.code() != 0) {
        drop(m, ctr_.icmp_drop_unsupported);
        return;
    }
    // The reply is as long as the request, without the request's options; it
    // must fit the MTU since we do not fragment.
    if (ipv4_repr::header_len() + icmp_len > cfg_.mtu) {
        drop(m, ctr_.icmp_drop_oversize);
        return;
    }

    m = make_writable(m);
    if (m == nullptr) {
        return;
    }
    chain_truncate(m, l4_off + icmp_len);  // Ethernet padding
    uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
    if (ip_header_len > ipv4_repr::header_len()) {
        // RFC 1122 §3.2.2.6 says Record Route / Timestamp SHOULD be updated and
        // a source route reversed in the reply; we reply without options.
        // Slide Ethernet + fixed IPv4 header up against the ICMP message.
        const uint32_t opt_len = ip_header_len - static_cast<uint32_t>(ipv4_repr::header_len());
        std::memmove(d + opt_len, d, eth_hlen + ipv4_repr::header_len());
        d = reinterpret_cast<uint8_t *>(rte_pktmbuf_adj(m, static_cast<uint16_t>(opt_len)));
    }
    const uint32_t reply_l4 = eth_hlen + static_cast<uint32_t>(ipv4_repr::header_len());

    // RFC 792: "To form an echo reply message, the source and destination
    // addresses are simply reversed, the type code changed to 0, and the
    // checksum recomputed." Only the type/code word changes: the incremental
    // update of RFC 1071 §2(4) / RFC 1624 eqn. 1, done on the sum `rest` kept
    // from verification rather than with eqn. 3 on the old checksum field,
    // because eqn. 3 gets the sign of zero wrong when the reply is all zeros
    // (id 0, seq 0, zero data: the field must be 0xffff, eqn. 3 gives 0x0000).
    icmpv4_packet reply({d + reply_l4, icmpv4_packet::header_len});
    reply.set_type(static_cast<uint8_t>(icmp_type::echo_reply));
    reply.set_code(0);
    internet_checksum reply_sum = rest;
    reply_sum.add_word(static_cast<uint16_t>(icmp_type::echo_reply) << 8);
    reply.set_checksum(reply_sum.finish());

    // A fresh header rather than a patched one: TTL restarts at our default,
    // the options are gone. DF with ID 0 makes it an atomic datagram whose ID
    // carries no meaning (RFC 6864 §4.1); the request's TOS is echoed as Linux does.
    ipv4_packet ip_out({d + eth_hlen, ipv4_repr::header_len()});
    ipv4_repr{.src = cfg_.addr,
              .dst = ip.src,
              .protocol = ip_protocol::icmp,
              .payload_len = static_cast<uint16_t>(icmp_len),
              .ttl = default_ttl,
              .tos = ip.tos,
              .ident = 0,
              .dont_fragment = true}
        .emit(ip_out);

    // Back to the MAC the request came from (as Linux does), not through the
    // neighbor table: no ARP round trip before the first reply.
    ethernet_frame frame({d, eth_hlen});
    ethernet_repr{eth.src, cfg_.mac, ether_type::ipv4}.emit(frame);
    reset_tx_metadata(m);
    ctr_.icmp_echo_replied.inc();
    ctr_.ipv4_tx.inc();
    transmit(m);
}

bool stack::ipv6_group(const ethernet_repr &eth) const noexcept {
    // RFC 4861 §7.2.1: a node joins the solicited-node group of its address
    // (and, as every node, all-nodes).
    return cfg_.addr6 && eth.type == ether_type::ipv6 &&
           (eth.dst == multicast_mac(cfg_.addr6->solicited_node()) ||
            eth.dst == multicast_mac(ipv6_addr::all_nodes()));
}

bool stack::valid_source6(const ipv6_addr &src) const noexcept {
    // RFC 4291 §2.5.2 (:: is never a source), §2.7 (nor a group), §2.5.3
    // (loopback never leaves a node), §2.5.5.2 (mapped addresses are for
    // APIs), and our own address from outside is a loop or a spoof.
    return !src.is_unspecified() && !src.is_multicast() && !src.is_loopback() &&
           !src.is_ipv4_mapped() && src != *cfg_.addr6;
}

void stack::input_ipv6(rte_mbuf *m, const ethernet_repr &eth, std::span<uint8_t> payload,
                       uint64_t now_ns) noexcept {
    ctr_.ipv6_rx.inc();
    ipv6_repr ip;
    if (ipv6_repr::parse(payload, ip, rte_pktmbuf_pkt_len(m) - eth_hlen) != ipv6_error::none) {
        drop(m, ctr_.ipv6_drop_malformed);
        return;
    }
    const ipv6_addr &ours = *cfg_.addr6;
    if (ip.dst != ours && ip.dst != ours.solicited_node() && ip.dst != ipv6_addr::all_nodes()) {
        drop(m, ctr_.ipv6_drop_not_ours);
        return;
    }
    // RFC 8200 §4: the extension headers, in order, within the first
    // segment (input_frame: it holds max_header_bytes or the whole frame).
    const ipv6_ext_walk w = walk_ipv6_ext(payload, ip);
    switch (w.verdict) {
        case ipv6_ext_verdict::upper:
            break;
        case ipv6_ext_verdict::no_next:
            drop(m, ctr_.ipv6_drop_no_next);
            return;
        case ipv6_ext_verdict::fragment:
            drop(m, ctr_.ipv6_drop_fragment);
            return;
        case ipv6_ext_verdict::malformed:
            drop(m, ctr_.ipv6_drop_ext_header);
            return;
        case ipv6_ext_verdict::beyond:
            drop(m, ctr_.ipv6_drop_ext_split);
            return;
        case ipv6_ext_verdict::unknown_option:
        case ipv6_ext_verdict::routing:
        case ipv6_ext_verdict::misplaced_hop_by_hop:
            if (w.answer)
                send_param_problem(m, eth, ip, w.code, w.pointer, w.multicast_ok,
                                   w.about_icmpv6_error, now_ns);
            drop(m, w.verdict == ipv6_ext_verdict::unknown_option ? ctr_.ipv6_drop_option
                    : w.verdict == ipv6_ext_verdict::routing      ? ctr_.ipv6_drop_routing
                                                                  : ctr_.ipv6_drop_unknown_next);
            return;
    }
    // The upper layer's view: its length without the extension headers
    // (RFC 8200 §8.1, the pseudo-header's "Upper-Layer Packet Length").
    ipv6_repr up = ip;
    up.payload_len = w.upper_len(ip);
    if (w.next_header == static_cast<uint8_t>(ipv6_next::tcp)) {
        // Unicast to us only.
        if (ip.dst != ours || eth.dst.is_multicast()) {
            drop(m, ctr_.ipv6_drop_not_ours);
            return;
        }
        if (!valid_source6(ip.src)) {
            drop(m, ctr_.ipv6_drop_bad_src);
            return;
        }
        if (!tcp_header_in(payload, w.offset, up.payload_len)) {
            drop(m, ctr_.ipv6_drop_ext_split);
            return;
        }
        chain_truncate(m, eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len) + ip.payload_len);
        input_tcp(m, up, eth_hlen + w.offset, now_ns);
        return;
    }
    if (w.next_header != static_cast<uint8_t>(ipv6_next::icmpv6)) {
        // RFC 8200 §4: "If, as a result of processing a header, the
        // destination node is required to proceed to the next header but
        // the Next Header value in the current header is unrecognized by
        // the node, it should discard the packet and send an ICMP Parameter
        // Problem message to the source of the packet, with an ICMP Code
        // value of 1". UDP too: ferry has no UDP at all, so the protocol,
        // not a port, is what is missing (Linux, which has UDP, sends a
        // port unreachable, RFC 4443 §3.1). Not an ICMPv6 message: no
        // error about an error.
        send_param_problem(m, eth, ip, icmpv6_param_code::next_header, w.next_header_at,
                           /*multicast_ok=*/false, /*about_error=*/false, now_ns);
        drop(m, ctr_.ipv6_drop_unknown_next);
        return;
    }
    input_icmpv6(m, eth, up, w.offset, payload.subspan(w.offset), now_ns);
}

void stack::input_icmpv6(rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip, uint32_t l4,
                         std::span<uint8_t> msg, uint64_t now_ns) noexcept {
    const ipv6_addr &ours = *cfg_.addr6;
    // Neighbour discovery and echo, each in one segment (a ping of a few KiB
    // that a NIC splits is not answered yet: counted).
    if (m->nb_segs != 1 || ip.payload_len < 4) {
        drop(m, ctr_.ipv6_drop_unsupported);
        return;
    }
    msg = msg.first(ip.payload_len);  // the whole message: one segment holds the frame
    const uint8_t type = msg[0];
    if (type == static_cast<uint8_t>(icmpv6_type::neighbor_solicitation) ||
        type == static_cast<uint8_t>(icmpv6_type::neighbor_advertisement)) {
        ctr_.nd_rx.inc();
        nd_repr nd;
        if (nd_repr::parse(ip, msg, nd) != nd_error::none) {
            drop(m, ctr_.nd_drop_invalid);
            return;
        }
        input_nd(eth, ip, nd, now_ns);
        rte_pktmbuf_free(m);
        return;
    }
    // RFC 4443 §2.4(b): other informational messages are silently
    // discarded; (d) error messages go to the upper layer, which has no use
    // for them yet.
    if (type != static_cast<uint8_t>(icmpv6_type::echo_request) || msg[1] != 0) {
        drop(m, ctr_.ipv6_drop_unsupported);
        return;
    }
    if (!icmpv6_checksum_ok(ip.src, ip.dst, msg)) {
        drop(m, ctr_.icmpv6_drop_bad_checksum);
        return;
    }
    // An echo request from :: or a group has no one to answer.
    if (ip.src.is_unspecified() || ip.src.is_multicast()) {
        drop(m, ctr_.ipv6_drop_not_ours);
        return;
    }
    // `msg` points into `m`: not to be used past here (a copy may replace it).
    m = make_writable(m);
    if (m == nullptr) return;
    constexpr uint32_t fixed_end = eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len);
    chain_truncate(m, eth_hlen + l4 + ip.payload_len);  // Ethernet padding
    uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
    if (const uint32_t ext_len = l4 - static_cast<uint32_t>(ipv6_repr::header_len); ext_len != 0) {
        // The reply carries no extension headers (they were the request's
        // path's): slide Ethernet + fixed header up against the message,
        // as input_icmp does with IPv4 options.
        std::memmove(d + ext_len, d, fixed_end);
        d = reinterpret_cast<uint8_t *>(rte_pktmbuf_adj(m, static_cast<uint16_t>(ext_len)));
    }
    // RFC 4443 §4.2: the reply carries the request's identifier, sequence
    // number and data; from our address (also when the request went to a
    // group), back to its source and the MAC it came from, as for IPv4.
    ipv6_repr out = ip;
    out.next_header = static_cast<uint8_t>(ipv6_next::icmpv6);
    out.src = ours;
    out.dst = ip.src;
    out.hop_limit = default_ttl;
    out.emit({d + eth_hlen, ipv6_repr::header_len});
    const std::span<uint8_t> reply(d + fixed_end, ip.payload_len);
    reply[0] = static_cast<uint8_t>(icmpv6_type::echo_reply);
    const uint16_t sum = icmpv6_checksum(out.src, out.dst, reply);
    wire::store_be16(reply.data() + 2, sum);
    ethernet_frame frame({d, eth_hlen});
    ethernet_repr{eth.src, cfg_.mac, ether_type::ipv6}.emit(frame);
    reset_tx_metadata(m);
    ctr_.icmpv6_echo_replied.inc();
    ctr_.ipv6_tx.inc();
    transmit(m);
}

bool stack::icmp6_error_token(uint64_t now_ns) noexcept {
    const uint64_t cost = icmp6_error_cost_ns(cfg_);
    const uint64_t cap = icmp6_error_cap_ns(cfg_);
    if (cost == 0 || cap == 0) return false;
    // Time that went backwards (another clock, a test) grows nothing.
    if (now_ns > icmp6_refill_ns_) {
        const uint64_t gained = now_ns - icmp6_refill_ns_;
        icmp6_credit_ns_ = gained >= cap - icmp6_credit_ns_ ? cap : icmp6_credit_ns_ + gained;
    }
    icmp6_refill_ns_ = now_ns;
    if (icmp6_credit_ns_ < cost) return false;
    icmp6_credit_ns_ -= cost;
    return true;
}

void stack::send_param_problem(const rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip,
                               icmpv6_param_code code, uint32_t pointer, bool multicast_ok,
                               bool about_error, uint64_t now_ns) noexcept {
    // RFC 4443 §2.4(e): "An ICMPv6 error message MUST NOT be originated as
    // a result of receiving" (e.1) an ICMPv6 error message, (e.2) a
    // redirect, (e.3) a packet destined to an IPv6 multicast address,
    // (e.4) sent as a link-layer multicast or (e.5) broadcast -- with the
    // exception of a Parameter Problem code 2 for an option whose action
    // bits are 10 --, (e.6) a packet whose source does not uniquely identify
    // a single node (::, a group); nor can one go to loopback, a mapped
    // IPv4 address or ourselves (valid_source6).
    const bool group = ip.dst.is_multicast() || eth.dst.is_multicast();
    if (about_error || (group && !multicast_ok) || !valid_source6(ip.src)) {
        ctr_.icmpv6_error_ineligible.inc();
        return;
    }
    // §2.4(f): "an IPv6 node MUST limit the rate of ICMPv6 error messages it originates".
    if (!icmp6_error_token(now_ns)) {
        ctr_.icmpv6_error_rate_limited.inc();
        return;
    }
    rte_mbuf *e = rte_pktmbuf_alloc(pool_);
    if (FERRY_UNLIKELY(e == nullptr)) {
        ctr_.tx_alloc_fail.inc();
        return;
    }
    // §2.4(c): as much of the invoking datagram (fixed header on, without
    // Ethernet padding) as fits in 1280 bytes with our 40 + 8, and in the mbuf.
    constexpr uint32_t head = eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len) + 8;
    const uint32_t room = rte_pktmbuf_tailroom(e);
    if (FERRY_UNLIKELY(room < head)) {
        drop(e, ctr_.tx_alloc_fail);
        return;
    }
    const uint32_t invoking = static_cast<uint32_t>(ipv6_repr::header_len) + ip.payload_len;
    const uint32_t quote = std::min({invoking, ipv6_min_mtu - (head - eth_hlen), room - head});
    auto *d =
        reinterpret_cast<uint8_t *>(rte_pktmbuf_append(e, static_cast<uint16_t>(head + quote)));
    ipv6_repr out;
    out.payload_len = static_cast<uint16_t>(8 + quote);
    out.next_header = static_cast<uint8_t>(ipv6_next::icmpv6);
    out.hop_limit = default_ttl;
    out.src = *cfg_.addr6;
    out.dst = ip.src;
    out.emit({d + eth_hlen, ipv6_repr::header_len});
    // RFC 4443 §3.4: type 4, the code, the checksum, the 32-bit pointer
    // ("the octet offset within the invoking packet where the error was
    // detected"), then the invoking packet.
    uint8_t *msg = d + eth_hlen + ipv6_repr::header_len;
    msg[0] = static_cast<uint8_t>(icmpv6_type::parameter_problem);
    msg[1] = static_cast<uint8_t>(code);
    wire::store_be32(msg + 4, pointer);
    // The invoking datagram may continue past the first segment. Null
    // cannot be (ipv6_repr::parse checked its length against the chain's),
    // but stale pool bytes must never leave in an error.
    const void *src = rte_pktmbuf_read(m, eth_hlen, quote, msg + 8);
    if (FERRY_UNLIKELY(src == nullptr)) {
        drop(e, ctr_.tx_alloc_fail);
        return;
    }
    if (src != msg + 8) std::memcpy(msg + 8, src, quote);
    const std::span<uint8_t> all(msg, 8 + quote);
    wire::store_be16(msg + 2, icmpv6_checksum(out.src, out.dst, all));
    // Back to the MAC the datagram came from, as the echo reply goes: no
    // neighbour lookup for an error.
    ethernet_frame frame({d, eth_hlen});
    ethernet_repr{eth.src, cfg_.mac, ether_type::ipv6}.emit(frame);
    ctr_.icmpv6_param_problem_sent.inc();
    ctr_.ipv6_tx.inc();
    transmit(e);
}

void stack::input_nd(const ethernet_repr &eth, const ipv6_repr &ip, const nd_repr &nd,
                     uint64_t now_ns) noexcept {
    const ipv6_addr &ours = *cfg_.addr6;
    if (nd.type == icmpv6_type::neighbor_solicitation) {
        if (nd.target != ours) {
            ctr_.nd_ignored.inc();
            return;
        }
        // RFC 4861 §7.2.3: a solicitation for us with a source link-layer
        // address creates or updates the sender's entry (not one from ::,
        // which parse() refused to carry that option).
        if (nd.lladdr && !ip.src.is_unspecified() && valid_source6(ip.src) &&
            nd.lladdr->is_unicast()) {
            ctr_.nd_learned.inc();
            learned_and_shared(neigh_.learn(ip.src, *nd.lladdr, now_ns, true), ip.src,
                               *nd.lladdr);
        }
        answer_solicitation(eth, ip, nd);
        return;
    }
    // §7.2.5: an advertisement completes or updates an entry we have; an
    // unsolicited one for an address we never asked about changes nothing.
    // A solicited one answers this node: on a port several lcores serve,
    // the lcore that asked may not be the one it reaches (net_tap delivers
    // IPv6 to queue 0), so it is taken and shared as ARP's answers are.
    // Without the override flag it may not replace a known link-layer address.
    if (nd.target == ours) {
        // Another node advertises our address (RFC 4862 §5.4.4: a duplicate;
        // it answered our detection, or it claims the address): never
        // learned, counted; fix the addressing.
        (nd.lladdr == cfg_.mac ? ctr_.nd_ignored : ctr_.nd_conflict).inc();
        return;
    }
    const bool known = neigh_.state(nd.target) != neighbor_state::free;
    if (!nd.lladdr || !nd.lladdr->is_unicast() || !valid_source6(nd.target) ||
        (!known && !nd.solicited)) {
        ctr_.nd_ignored.inc();
        return;
    }
    if (!nd.override_ && neigh_.state(nd.target) == neighbor_state::reachable) {
        const auto known = neigh_.lookup(nd.target, now_ns);
        if (known && *known != *nd.lladdr) {
            ctr_.nd_ignored.inc();
            return;
        }
    }
    ctr_.nd_learned.inc();
    learned_and_shared(neigh_.learn(nd.target, *nd.lladdr, now_ns, nd.solicited), nd.target,
                       *nd.lladdr);
}

void stack::answer_solicitation(const ethernet_repr &eth, const ipv6_repr &ip,
                                const nd_repr &ns) noexcept {
    // RFC 4861 §7.2.4: to the solicitation's source, solicited and
    // overriding, with our link-layer address; to all-nodes, unsolicited,
    // when the source is :: (another node's duplicate address detection).
    const bool dad = ip.src.is_unspecified();
    nd_repr na;
    na.type = icmpv6_type::neighbor_advertisement;
    na.target = ns.target;
    na.solicited = !dad;
    na.override_ = true;
    na.lladdr = cfg_.mac;
    const ipv6_addr dst = dad ? ipv6_addr::all_nodes() : ip.src;
    if (send_nd(na, *cfg_.addr6, dst, dad ? multicast_mac(dst) : ns.lladdr.value_or(eth.src)))
        ctr_.nd_advertised.inc();
}

bool stack::send_nd(const nd_repr &msg, const ipv6_addr &src, const ipv6_addr &dst,
                    mac_addr eth_dst) noexcept {
    rte_mbuf *m = rte_pktmbuf_alloc(pool_);
    if (FERRY_UNLIKELY(m == nullptr)) {
        ctr_.tx_alloc_fail.inc();
        return false;
    }
    const uint32_t len = eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len + msg.len());
    auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(len)));
    if (FERRY_UNLIKELY(d == nullptr)) {
        drop(m, ctr_.tx_alloc_fail);
        return false;
    }
    ethernet_frame frame({d, eth_hlen});
    ethernet_repr{eth_dst, cfg_.mac, ether_type::ipv6}.emit(frame);
    ipv6_repr out;
    out.payload_len = static_cast<uint16_t>(msg.len());
    out.next_header = static_cast<uint8_t>(ipv6_next::icmpv6);
    out.hop_limit = 255;  // §7.1.1, §7.1.2: checked by the receiver
    out.src = src;
    out.dst = dst;
    out.emit({d + eth_hlen, ipv6_repr::header_len});
    msg.emit(out.src, out.dst, {d + eth_hlen + ipv6_repr::header_len, msg.len()});
    ctr_.ipv6_tx.inc();
    transmit(m);
    return true;
}

void stack::send_ipv4(rte_mbuf *m, mac_addr dst) noexcept {
    ethernet_frame frame({rte_pktmbuf_mtod(m, uint8_t *), eth_hlen});
    ethernet_repr{dst, cfg_.mac, ether_type::ipv4}.emit(frame);
    ctr_.ipv4_tx.inc();
    transmit(m);
}

void stack::send_ip(rte_mbuf *m, mac_addr dst) noexcept {
    // The version nibble of the datagram behind the reserved Ethernet header.
    if ((*rte_pktmbuf_mtod_offset(m, const uint8_t *, eth_hlen) >> 4) != 6) {
        send_ipv4(m, dst);
        return;
    }
    ethernet_frame frame({rte_pktmbuf_mtod(m, uint8_t *), eth_hlen});
    ethernet_repr{dst, cfg_.mac, ether_type::ipv6}.emit(frame);
    ctr_.ipv6_tx.inc();
    transmit(m);
}

bool stack::send_solicitation(const ipv6_addr &target) noexcept {
    // RFC 4861 §7.2.2: to the target's solicited-node group, from our
    // address, with our link-layer address so the answer can come straight
    // back.
    nd_repr ns;
    ns.type = icmpv6_type::neighbor_solicitation;
    ns.target = target;
    ns.lladdr = cfg_.mac;
    if (!send_nd(ns, *cfg_.addr6, target.solicited_node(),
                 multicast_mac(target.solicited_node())))
        return false;
    ctr_.nd_solicitations_sent.inc();
    return true;
}

void stack::solicit(const ip_addr &ip) noexcept {
    if (ip.is_v6()) {
        (void)send_solicitation(ip.v6());
    } else if (send_arp(arp_op::request, mac_addr::broadcast(), mac_addr{}, ip.v4())) {
        // The target hardware address is unknown: RFC 826 leaves it
        // unspecified, RFC 5227 §2.1.1 zeroes it; so do we.
        ctr_.arp_requests_sent.inc();
    }
}

void stack::output_ipv6(rte_mbuf *m, const ipv6_addr &dst, uint64_t now_ns) noexcept {
    if (!cfg_.addr6) {
        drop(m, ctr_.ipv6_drop_no_route);
        return;
    }
    if (dst.is_multicast()) {
        send_ip(m, multicast_mac(dst));
        return;
    }
    // On-link: our prefix and link-local addresses; the rest goes through
    // the configured router (router discovery, RFC 4861 §6.3, is not built).
    const bool on_link = dst.in_subnet(*cfg_.addr6, cfg_.prefix6_len) || dst.is_link_local();
    if (dst == *cfg_.addr6 || (!on_link && !cfg_.gateway6)) {
        drop(m, ctr_.ipv6_drop_no_route);
        return;
    }
    resolve_and_send(m, on_link ? dst : *cfg_.gateway6, now_ns);
}

void stack::resolve_and_send(rte_mbuf *m, const ip_addr &next_hop, uint64_t now_ns) noexcept {
    const auto r = neigh_.resolve(next_hop, m, now_ns);
    if (r.evicted) {
        ctr_.neigh_evicted.inc();
    }
    if (r.displaced != nullptr) {
        drop(r.displaced, ctr_.neigh_pending_full_drop);
    }
    switch (r.status) {
        case neighbor_table::resolve_status::reachable:
            send_ip(m, r.mac);
            return;
        case neighbor_table::resolve_status::queued_new:
            solicit(next_hop);
            return;
        case neighbor_table::resolve_status::queued:
            return;
        case neighbor_table::resolve_status::table_full:
            drop(m, ctr_.neigh_table_full);
            return;
    }
}

bool stack::send_arp(arp_op op, mac_addr eth_dst, mac_addr target_hw,
                     ipv4_addr target_ip) noexcept {
    rte_mbuf *m = rte_pktmbuf_alloc(pool_);
    if (FERRY_UNLIKELY(m == nullptr)) {
        ctr_.tx_alloc_fail.inc();
        return false;
    }
    constexpr uint32_t len = eth_hlen + arp_repr::buffer_len();
    auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, len));
    if (FERRY_UNLIKELY(d == nullptr)) {
        drop(m, ctr_.tx_alloc_fail);
        return false;
    }
    ethernet_frame frame({d, len});
    ethernet_repr{eth_dst, cfg_.mac, ether_type::arp}.emit(frame);
    arp_packet pkt(frame.payload());
    arp_repr{op, cfg_.mac, cfg_.addr, target_hw, target_ip}.emit(pkt);
    transmit(m);
    return true;
}

void stack::output_ipv4(rte_mbuf *m, ipv4_addr dst, uint64_t now_ns) noexcept {
    if (dst.is_broadcast() || dst == subnet_bcast_) {
        send_ipv4(m, mac_addr::broadcast());
        return;
    }
    if (dst.is_multicast()) {
        send_ipv4(m, multicast_mac(dst));
        return;
    }
    ipv4_addr next_hop = dst;
    if (!dst.in_subnet(cfg_.addr, cfg_.prefix_len)) {
        if (!cfg_.gateway) {
            drop(m, ctr_.ipv4_drop_no_route);
            return;
        }
        next_hop = *cfg_.gateway;
    }
    // No loopback path: a datagram to ourselves or to 0/8 cannot leave the port.
    if (next_hop == cfg_.addr || next_hop.is_this_network()) {
        drop(m, ctr_.ipv4_drop_no_route);
        return;
    }
    resolve_and_send(m, next_hop, now_ns);
}

void stack::poll_timers(uint64_t now_ns) noexcept {
    neigh_.poll(now_ns, [this](const neighbor_event &ev) {
        switch (ev.what) {
            case neighbor_event::kind::solicit:
                // RFC 1122 §2.3.2.1: at most one request per second per address
                // with the default arp_retry_ns (RFC 4861 §10 RetransTimer is
                // one second too, MAX_MULTICAST_SOLICIT 3).
                solicit(ev.ip);
                break;
            case neighbor_event::kind::failed:
                ctr_.neigh_resolve_failed.inc();
                for (rte_mbuf *p : ev.pending) {
                    drop(p, ctr_.neigh_resolve_failed_drop);
                }
                break;
            case neighbor_event::kind::expired:
                ctr_.neigh_expired.inc();
                break;
        }
    });
    if (const uint32_t n = frag_.poll(now_ns); n != 0) ctr_.ipv4_frag_drop_timeout.inc(n);
    if (tcp_ != nullptr) {
        tcp_->poll_timers(now_ns);
    }
}

uint64_t stack::next_deadline() const noexcept {
    const uint64_t n = std::min(neigh_.next_deadline(), frag_.next_deadline());
    return tcp_ != nullptr ? std::min(n, tcp_->next_deadline()) : n;
}

void stack::announce(uint64_t) noexcept {
    // RFC 5227 §3: an ARP Announcement is a request with sender and target
    // protocol address both ours and a zero target hardware address, broadcast.
    if (send_arp(arp_op::request, mac_addr::broadcast(), mac_addr{}, cfg_.addr)) {
        ctr_.arp_gratuitous_sent.inc();
    }
    if (!cfg_.addr6) return;
    const ipv6_addr &ours = *cfg_.addr6;
    // RFC 4862 §5.4.2: duplicate address detection, a solicitation for our
    // address from :: to its solicited-node group, without a link-layer
    // address option. ferry uses the address at once, as RFC 4429's
    // optimistic addresses may: a node that has it answers to all-nodes, and
    // that advertisement (or any other for our address) is counted as a
    // conflict (input_nd), as arp_conflict is for IPv4.
    nd_repr ns;
    ns.type = icmpv6_type::neighbor_solicitation;
    ns.target = ours;
    if (send_nd(ns, ipv6_addr{}, ours.solicited_node(), multicast_mac(ours.solicited_node())))
        ctr_.nd_dad_sent.inc();
    // RFC 4861 §7.2.6: an unsolicited advertisement to all-nodes, override
    // set, so that caches holding another MAC for the address (a restart on
    // another NIC) take ours at once.
    nd_repr na;
    na.type = icmpv6_type::neighbor_advertisement;
    na.target = ours;
    na.override_ = true;
    na.lladdr = cfg_.mac;
    if (send_nd(na, ours, ipv6_addr::all_nodes(), multicast_mac(ipv6_addr::all_nodes())))
        ctr_.nd_advertised.inc();
}

void stack::set_mem_pressure(bool on) noexcept {
    if (tcp_ != nullptr) tcp_->set_mem_pressure(on);
}

}  // namespace ferry::net
