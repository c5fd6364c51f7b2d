// The stack's IPv6 half (stack.h): datagrams to us and their extension
// headers, TCP over IPv6, ICMPv6 echo and Parameter Problem errors, neighbour
// discovery (RFC 4861: solicitations, advertisements, resolution through the
// neighbour table stack.cpp shares with ARP) and IPv6 output.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "ferry/base/compiler.h"
#include "ferry/net/byte_order.h"
#include "ferry/net/checksum.h"
#include "ferry/net/icmp.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "stack_internal.h"

namespace ferry::net {

using detail::count_reassembly;
using detail::eth_hlen;
using detail::icmp6_error_cap_ns;
using detail::icmp6_error_cost_ns;
using detail::reset_tx_metadata;

namespace {

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

}  // namespace

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
                       uint64_t now_ns, bool whole) noexcept {
    if (!whole) ctr_.ipv6_rx.inc();
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
        case ipv6_ext_verdict::fragment: {
            if (whole) {  // a Fragment header inside a reassembled datagram
                drop(m, ctr_.ipv6_frag_drop_bad);
                return;
            }
            rte_mbuf *d = reassemble6(m, eth, ip, payload, w, now_ns);
            if (d == nullptr) return;
            // The whole datagram, from its (rewritten) fixed header on.
            input_ipv6(d, eth,
                       std::span<uint8_t>(rte_pktmbuf_mtod_offset(d, uint8_t *, eth_hlen),
                                          d->data_len - eth_hlen),
                       now_ns, true);
            return;
        }
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

rte_mbuf *stack::reassemble6(rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip,
                             std::span<const uint8_t> dgram, const ipv6_ext_walk &ext,
                             uint64_t now_ns) noexcept {
    ctr_.ipv6_frag_rx.inc();
    // RFC 8200 §4.5: the Fragment header: Next Header, reserved, the
    // offset in 8-octet units << 3 | res | M, the Identification.
    const uint8_t *fh = dgram.data() + ext.offset;
    const uint16_t off_m = wire::load_be16(fh + 2);
    fragment_desc f;
    f.src = ip_addr(ip.src);
    f.dst = ip_addr(ip.dst);
    f.ident = wire::load_be32(fh + 4);
    f.offset = off_m & 0xfff8u;
    f.more = (off_m & 1u) != 0;
    f.len = ipv6_repr::header_len + ip.payload_len - (ext.offset + 8);
    f.keep = eth_hlen + ext.offset;  // the fixed header and the unfragmentable part
    f.skip = f.keep + 8;
    f.length_base = ext.offset - static_cast<uint32_t>(ipv6_repr::header_len);
    f.tag = ext.next_header_at << 8 | fh[0];
    // "If the length of a fragment ... is not a multiple of 8 octets and the
    // M flag of that fragment is 1, then that fragment must be discarded and
    // an ICMP Parameter Problem, Code 0, message should be sent to the
    // source of the fragment, pointing to the Payload Length field"; one
    // that would make the datagram longer than 65,535 octets likewise,
    // "pointing to the Fragment Offset field".
    if ((f.more && f.len % 8 != 0) || f.length_base + f.offset + f.len > 65535) {
        const bool long_one = f.length_base + f.offset + f.len > 65535;
        send_param_problem(m, eth, ip, icmpv6_param_code::header_field,
                           long_one ? ext.offset + 2 : 4, /*multicast_ok=*/false,
                           /*about_error=*/false, now_ns);
        drop(m, ctr_.ipv6_frag_drop_bad);
        return nullptr;
    }
    chain_truncate(m, eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len) + ip.payload_len);
    const ip_reassembly::result r = frag6_.input(m, f, now_ns);
    if (!count_reassembly(r, {ctr_.ipv6_frag_reassembled, ctr_.ipv6_frag_drop_duplicate,
                              ctr_.ipv6_frag_drop_overlap, ctr_.ipv6_frag_drop_bad,
                              ctr_.ipv6_frag_drop_tiny, ctr_.ipv6_frag_drop_too_many,
                              ctr_.ipv6_frag_drop_evicted}))
        return nullptr;
    // What an unfragmented datagram's header says: the payload length, and
    // the Next Header that named the Fragment header names what followed it.
    rte_mbuf *d = r.frame;
    uint8_t *l3 = rte_pktmbuf_mtod_offset(d, uint8_t *, eth_hlen);
    const uint32_t plen =
        rte_pktmbuf_pkt_len(d) - eth_hlen - static_cast<uint32_t>(ipv6_repr::header_len);
    wire::store_be16(l3 + 4, static_cast<uint16_t>(plen));
    l3[r.tag >> 8] = static_cast<uint8_t>(r.tag & 0xff);
    return d;
}

void stack::input_icmpv6(rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip, uint32_t l4,
                         std::span<uint8_t> msg, uint64_t now_ns) noexcept {
    const ipv6_addr &ours = *cfg_.addr6;
    // The message's first 4 bytes are in the first segment (`msg`), which
    // holds at least max_header_bytes of the frame.
    if (ip.payload_len < 4 || msg.size() < 4) {
        drop(m, ctr_.ipv6_drop_unsupported);
        return;
    }
    const uint8_t type = msg[0];
    const bool nd = type == static_cast<uint8_t>(icmpv6_type::neighbor_solicitation) ||
                    type == static_cast<uint8_t>(icmpv6_type::neighbor_advertisement);
    const bool ra = type == static_cast<uint8_t>(icmpv6_type::router_advertisement);
    // Neighbour and router discovery in one segment: a message of a few
    // dozen bytes that came in several is not taken (counted).
    if ((nd || ra) && m->nb_segs != 1) {
        drop(m, ctr_.ipv6_drop_unsupported);
        return;
    }
    if (ra) {
        input_ra(ip, msg.first(ip.payload_len), now_ns);
        rte_pktmbuf_free(m);
        return;
    }
    if (nd) {
        msg = msg.first(ip.payload_len);  // the whole message: one segment holds the frame
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
    // The checksum covers the whole message, which may span segments (a
    // large ping, a reassembled one). `rest` sums all but the type/code and
    // checksum words, so the reply's checksum follows from it, as for IPv4.
    const uint32_t msg_off = eth_hlen + l4;
    const internet_checksum rest = chain_sum(m, msg_off + 4, ip.payload_len - 4);
    internet_checksum whole;
    add_ipv6_pseudo_header(whole, ip.src, ip.dst, ip.payload_len,
                           static_cast<uint8_t>(ipv6_next::icmpv6));
    whole.add_word(wire::load_be16(msg.data()));
    whole.add_word(wire::load_be16(msg.data() + 2));
    whole.add_word(rest.fold());
    if (whole.fold() != 0xffff) {
        drop(m, ctr_.icmpv6_drop_bad_checksum);
        return;
    }
    // An echo request from :: or a group has no one to answer.
    if (ip.src.is_unspecified() || ip.src.is_multicast()) {
        drop(m, ctr_.ipv6_drop_not_ours);
        return;
    }
    // The reply is as long as the request, without its extension headers;
    // it must fit the MTU since we do not fragment.
    if (ipv6_repr::header_len + ip.payload_len > cfg_.mtu) {
        drop(m, ctr_.icmpv6_drop_oversize);
        return;
    }
    // `msg` points into `m`: not to be used past here (a copy may replace it).
    m = make_writable(m);
    if (m == nullptr) return;
    constexpr uint32_t fixed_end = eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len);
    chain_truncate(m, msg_off + ip.payload_len);  // Ethernet padding
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
    uint8_t *reply = d + fixed_end;  // its first 4 bytes: in the first segment
    reply[0] = static_cast<uint8_t>(icmpv6_type::echo_reply);
    internet_checksum sum;
    add_ipv6_pseudo_header(sum, out.src, out.dst, ip.payload_len,
                           static_cast<uint8_t>(ipv6_next::icmpv6));
    sum.add_word(wire::load_be16(reply));  // type and code
    sum.add_word(rest.fold());
    wire::store_be16(reply + 2, sum.finish());
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

rte_mbuf *stack::link_icmpv6_frame(const ipv6_addr &src, const ipv6_addr &dst, mac_addr eth_dst,
                                   std::size_t len, std::span<uint8_t> &msg) noexcept {
    rte_mbuf *m = rte_pktmbuf_alloc(pool_);
    if (FERRY_UNLIKELY(m == nullptr)) {
        ctr_.tx_alloc_fail.inc();
        return nullptr;
    }
    const uint32_t total = eth_hlen + static_cast<uint32_t>(ipv6_repr::header_len + len);
    auto *d = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(total)));
    if (FERRY_UNLIKELY(d == nullptr)) {
        drop(m, ctr_.tx_alloc_fail);
        return nullptr;
    }
    ethernet_frame frame({d, eth_hlen});
    ethernet_repr{eth_dst, cfg_.mac, ether_type::ipv6}.emit(frame);
    ipv6_repr out;
    out.payload_len = static_cast<uint16_t>(len);
    out.next_header = static_cast<uint8_t>(ipv6_next::icmpv6);
    out.hop_limit = 255;  // RFC 4861 §6.1, §7.1: checked by the receiver
    out.src = src;
    out.dst = dst;
    out.emit({d + eth_hlen, ipv6_repr::header_len});
    msg = {d + eth_hlen + ipv6_repr::header_len, len};
    return m;
}

bool stack::send_nd(const nd_repr &msg, const ipv6_addr &src, const ipv6_addr &dst,
                    mac_addr eth_dst) noexcept {
    std::span<uint8_t> out;
    rte_mbuf *m = link_icmpv6_frame(src, dst, eth_dst, msg.len(), out);
    if (m == nullptr) return false;
    msg.emit(src, dst, out);
    ctr_.ipv6_tx.inc();
    transmit(m);
    return true;
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
    // the configured router, else one router discovery found.
    const bool on_link = dst.in_subnet(*cfg_.addr6, cfg_.prefix6_len) || dst.is_link_local();
    const std::optional<ipv6_addr> hop = on_link ? std::optional(dst) : router6(now_ns);
    if (dst == *cfg_.addr6 || !hop) {
        drop(m, ctr_.ipv6_drop_no_route);
        return;
    }
    resolve_and_send(m, *hop, now_ns);
}

}  // namespace ferry::net
