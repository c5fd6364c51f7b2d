// The stack's frame dispatch, IPv4, ARP, ICMP, neighbour resolution and
// timers; IPv6, ICMPv6 and neighbour discovery are in stack_ipv6.cpp.
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
#include "stack_internal.h"

namespace ferry::net {

using detail::count_reassembly;
using detail::eth_hlen;
using detail::icmp6_error_cap_ns;
using detail::reset_tx_metadata;

namespace {

neighbor_config neighbor_config_of(const iface_config &cfg) noexcept {
    return neighbor_config{cfg.neighbor_capacity, cfg.neighbor_timeout_ns, cfg.arp_retry_ns,
                           cfg.arp_max_tries};
}

}  // namespace

stack::stack(const iface_config &cfg, rte_mempool *pool, net_counters &counters)
    : cfg_(cfg),
      pool_(pool),
      ctr_(counters),
      neigh_(neighbor_config_of(cfg)),
      frag6_(reassembly_config{.timeout_ns = 60'000'000'000}),
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
        // RFC 1122 §3.3.2: a host MUST reassemble (ip_reassembly.h).
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
    const ip_reassembly::result r = frag_.input(m, eth_hlen, ip, hlen, now_ns);
    if (!count_reassembly(r, {ctr_.ipv4_frag_reassembled, ctr_.ipv4_frag_drop_duplicate,
                              ctr_.ipv4_frag_drop_overlap, ctr_.ipv4_frag_drop_bad,
                              ctr_.ipv4_frag_drop_tiny, ctr_.ipv4_frag_drop_too_many,
                              ctr_.ipv4_frag_drop_evicted}))
        return nullptr;
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
// IPv4's here, IPv6's from stack_ipv6.cpp.
template void stack::input_tcp<ipv4_repr>(rte_mbuf *, const ipv4_repr &, uint32_t,
                                          uint64_t) noexcept;
template void stack::input_tcp<ipv6_repr>(rte_mbuf *, const ipv6_repr &, uint32_t,
                                          uint64_t) noexcept;

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

void stack::solicit(const ip_addr &ip) noexcept {
    if (ip.is_v6()) {
        (void)send_solicitation(ip.v6());
    } else if (send_arp(arp_op::request, mac_addr::broadcast(), mac_addr{}, ip.v4())) {
        // The target hardware address is unknown: RFC 826 leaves it
        // unspecified, RFC 5227 §2.1.1 zeroes it; so do we.
        ctr_.arp_requests_sent.inc();
    }
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
    // RFC 8200 §4.5 would have a Time Exceeded (code 1) go to the source when
    // the first fragment had come ("should"): not sent, counted.
    if (const uint32_t n = frag6_.poll(now_ns); n != 0) ctr_.ipv6_frag_drop_timeout.inc(n);
    poll_routers(now_ns);
    if (tcp_ != nullptr) {
        tcp_->poll_timers(now_ns);
    }
}

uint64_t stack::next_deadline() const noexcept {
    const uint64_t n =
        std::min({neigh_.next_deadline(), frag_.next_deadline(), frag6_.next_deadline(),
                  routers_deadline()});
    return tcp_ != nullptr ? std::min(n, tcp_->next_deadline()) : n;
}

void stack::announce(uint64_t now_ns) noexcept {
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
    solicit_routers(now_ns);
}

void stack::set_mem_pressure(bool on) noexcept {
    if (tcp_ != nullptr) tcp_->set_mem_pressure(on);
}

}  // namespace ferry::net
