// The Ethernet/ARP/IPv4/ICMP stack of one port on one lcore, with IPv6
// (extension headers, neighbour discovery, echo, TCP, the ICMPv6 errors a
// host must send) when the port has an IPv6 address.
//
// Read first: RFC 1122 §2 (link layer: ARP cache, link-layer broadcast rules)
// and §3.2 (IPv4 and ICMP duties of a host), RFC 826, RFC 791, RFC 792;
// for IPv6 RFC 8200, RFC 4861 and RFC 4443 §2.4 (ipv6.h lists the sections).
//
// Receive path, in order (each drop has its own counter in net_counters):
//   Ethernet: header in the first segment, untagged, to our MAC or broadcast,
//             unicast source -> ARP or IPv4 by EtherType
//   ARP:      RFC 826 merge into the neighbor table, answer requests for our
//             address in place, release packets that waited for the sender
//   IPv4:     header checks (ipv4_packet::check), to our address, sane source,
//             TTL, not a fragment -> ICMP, or TCP (the hook where TCP attaches)
//   ICMP:     echo request -> echo reply built in place
//   IPv6:     header checks, to our address (or its groups); the extension
//             headers walked in order (RFC 8200 §4, walk_ipv6_ext in ipv6.h):
//             options by their action bits, a routing header with Segments
//             Left 0 skipped, an atomic fragment skipped, a real fragment and
//             No Next Header dropped, the chain within the first segment ->
//             TCP (unicast, sane source; the upper-layer length without the
//             extension headers), Neighbor Solicitation / Advertisement
//             (RFC 4861 §7.1 checks, §7.2 cache), echo; any other upper
//             layer (UDP too: ferry has none) is an unrecognized Next Header
//   ICMPv6 errors: the Parameter Problems RFC 8200 §4 asks for (code 0 a
//             routing header with segments left, 1 an unrecognized Next
//             Header, 2 an unknown option with action bits 10/11), built in
//             a fresh mbuf back to the sender's MAC, never for what RFC 4443
//             §2.4(e) forbids, rate-limited per stack (§2.4(f))
//
// Single-threaded: one stack per (lcore, port); nothing here is shared. The
// stack reads no clock (time comes in as now_ns) and calls no NIC function:
// frames to send pile up in tx_pending() for the port code to transmit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ferry/net/addr.h"
#include "ferry/net/arp.h"
#include "ferry/net/counters.h"
#include "ferry/net/ethernet.h"
#include "ferry/net/ipv4.h"
#include "ferry/net/ip_reassembly.h"
#include "ferry/net/ipv6.h"
#include "ferry/net/neighbor.h"

struct rte_mbuf;
struct rte_mempool;

namespace ferry::net {

class tcp_layer;

struct iface_config {
    mac_addr mac;
    ipv4_addr addr;
    uint8_t prefix_len = 24;
    std::optional<ipv4_addr> gateway;  // must be on-link
    uint16_t mtu = 1500;
    uint64_t neighbor_timeout_ns = 60'000'000'000;
    uint64_t arp_retry_ns = 1'000'000'000;
    uint32_t arp_max_tries = 3;
    uint32_t neighbor_capacity = 256;
    // An IPv6 address (ipv6.h): the stack answers Neighbor Solicitations for
    // it and ICMPv6 echo requests to it, and carries TCP over IPv6 to and
    // from on-link peers; without one IPv6 frames are dropped as an unknown
    // EtherType.
    std::optional<ipv6_addr> addr6;
    uint8_t prefix6_len = 64;
    // The IPv6 router for destinations off addr6's prefix (on-link itself);
    // without one, a router learned by router discovery (below), else they
    // have no route (ipv6_drop_no_route).
    std::optional<ipv6_addr> gateway6;
    // RFC 4861 §6.3 (stack_router.cpp): without gateway6, solicit routers at
    // start (announce()) and take default routers from advertisements.
    bool router_discovery = false;
    // RFC 4443 §2.4(f): ICMPv6 error messages "MUST" be rate-limited. A
    // token bucket per stack: on average at most icmp6_errors_per_s a second,
    // at most icmp6_error_burst at once (0: none are sent). What it holds
    // back is counted (icmpv6_error_rate_limited).
    uint32_t icmp6_errors_per_s = 10;
    uint32_t icmp6_error_burst = 10;
};

class stack {
public:
    static constexpr std::size_t tx_capacity = 1024;
    // RFC 1700 / IANA default TTL, also Linux's.
    static constexpr uint8_t default_ttl = 64;
    // Ethernet + the longest IPv4 header + the longest TCP header. A
    // multi-segment frame must carry at least this much (or all of itself) in its
    // first segment, so every header is contiguous; NICs fill the first
    // segment first, so only odd chains fail this. IPv6 extension headers
    // may make the headers longer: a chain (or a TCP header behind one) that
    // runs past the first segment is dropped (ipv6_drop_ext_split).
    static constexpr uint32_t max_header_bytes = 14 + 60 + 60;

    // `pool` supplies mbufs for frames the stack originates (ARP requests,
    // announcements) and for copies of shared mbufs it must modify. `counters`
    // must outlive the stack.
    stack(const iface_config &cfg, rte_mempool *pool, net_counters &counters);
    // Frees frames still queued for transmission or waiting for ARP.
    ~stack();
    stack(const stack &) = delete;
    stack &operator=(const stack &) = delete;

    // Takes ownership of every mbuf: each is consumed (freed and counted, or
    // turned into a reply in place and queued for tx).
    void input_burst(std::span<rte_mbuf *const> pkts, uint64_t now_ns) noexcept;

    // Sends an IPv4 datagram toward `dst`. `m`'s data starts with 14 bytes
    // reserved for the Ethernet header (filled here), followed by a complete
    // IPv4 header (checksum included) and its payload. Resolves the next hop
    // (dst on-link, else the gateway) through the neighbor table and holds the
    // datagram while ARP is in progress. Broadcast and multicast destinations
    // need no resolution. Takes ownership.
    void output_ipv4(rte_mbuf *m, ipv4_addr dst, uint64_t now_ns) noexcept;
    // The same for an IPv6 datagram (40-byte header after the reserved 14
    // bytes) toward `dst`: on-link (our prefix, link-local) directly, else
    // through cfg.gateway6 (none: dropped, ipv6_drop_no_route); the next
    // hop's link-layer address comes from Neighbor Discovery (RFC 4861
    // §7.2), solicited and retried as ARP is, the datagram held meanwhile.
    void output_ipv6(rte_mbuf *m, const ipv6_addr &dst, uint64_t now_ns) noexcept;

    // ARP retries, giving up (frees the waiting packets), neighbor expiry.
    void poll_timers(uint64_t now_ns) noexcept;
    // When poll_timers() has work next, UINT64_MAX if never; may be early (see
    // neighbor_table::next_deadline), never late.
    [[nodiscard]] uint64_t next_deadline() const noexcept;
    // Fragment frames held for reassembly (mbufs of the pool kept between inputs).
    [[nodiscard]] uint32_t fragments_held() const noexcept { return frag_.frames_held(); }

    // Frames to transmit, oldest first. They stay owned by the stack until
    // tx_consumed() says the port took them.
    [[nodiscard]] std::span<rte_mbuf *> tx_pending() noexcept {
        return {txq_.data() + tx_head_, tx_len_};
    }
    // The caller transmitted the first n of tx_pending() (the NIC owns them now).
    void tx_consumed(uint16_t n) noexcept;

    // Attaches the TCP layer (tcp_layer.h) that takes every TCP segment from
    // here on; null detaches (segments are then dropped, tcp_drop_unimplemented).
    // Its timers join poll_timers()/next_deadline(). Must outlive the stack's use.
    void attach_tcp(tcp_layer *t) noexcept { tcp_ = t; }
    // Memory pressure for the TCP layer (tcp_layer::set_mem_pressure).
    void set_mem_pressure(bool on) noexcept;
    [[nodiscard]] tcp_layer *tcp() noexcept { return tcp_; }

    // A frame the stack of the same port on another lcore received, validated
    // (Ethernet, IPv4) and handed here because this lcore owns its TCP flow
    // (tcp_layer.h, "Flow ownership"). Owns `m`; counted as tcp_handoff_in.
    void input_handoff(rte_mbuf *m, uint64_t now_ns) noexcept;

    // Neighbor sharing. Each lcore serving a port has its own neighbor table,
    // but the answer to an ARP request or a Neighbor Solicitation lands on
    // one queue only (and on net_tap always on queue 0), so a binding learned
    // from ARP or ND is offered to the other lcores: the hook is called with
    // every <ip, mac> this stack learned or refreshed from an ARP packet for
    // our address or an ND message (only news: learn_result::share), and the
    // app delivers it to the other stacks' learn_shared().
    using neighbor_hook = void (*)(void *ctx, const ip_addr &ip, mac_addr mac) noexcept;
    void set_neighbor_hook(neighbor_hook h, void *ctx) noexcept {
        neigh_hook_ = h;
        neigh_hook_ctx_ = ctx;
    }
    // Merges a binding another lcore's stack learned, as if its ARP packet had
    // arrived here (packets waiting for `ip` leave). Never calls the hook.
    void learn_shared(const ip_addr &ip, mac_addr mac, uint64_t now_ns) noexcept;

    // Gratuitous ARP for cfg.addr (RFC 5227 §3 announcement), sent at port
    // start; with cfg.addr6 also duplicate address detection for it (RFC
    // 4862 §5.4.2, one probe), an unsolicited advertisement (RFC 4861
    // §7.2.6) and, with router discovery, Router Solicitations (up to 3, 4 s
    // apart, until an advertisement comes: §6.3.7).
    void announce(uint64_t now_ns) noexcept;

    // Router discovery learned `router` (lifetime 0: it is no longer one)
    // from an advertisement this stack received: the app passes it to the
    // other lcores' learn_router_shared() (their queues may never see one).
    using router_hook = void (*)(void *ctx, const ipv6_addr &router,
                                 uint16_t lifetime_s) noexcept;
    void set_router_hook(router_hook h, void *ctx) noexcept {
        router_hook_ = h;
        router_hook_ctx_ = ctx;
    }
    void learn_router_shared(const ipv6_addr &router, uint16_t lifetime_s,
                             uint64_t now_ns) noexcept;
    // The next hop for off-link IPv6 destinations: cfg.gateway6, else the
    // first default router learned whose lifetime has not run out.
    [[nodiscard]] std::optional<ipv6_addr> router6(uint64_t now_ns) const noexcept;

    [[nodiscard]] const neighbor_table &neighbors() const noexcept { return neigh_; }
    [[nodiscard]] const iface_config &config() const noexcept { return cfg_; }

private:
    void learned(const neighbor_table::learn_result &lr, mac_addr mac) noexcept;
    // learned(), then the binding to the other lcores when it is news.
    void learned_and_shared(const neighbor_table::learn_result &lr, const ip_addr &ip,
                            mac_addr mac) noexcept;
    void input_frame(rte_mbuf *m, uint64_t now_ns) noexcept;
    void input_arp(rte_mbuf *m, std::span<uint8_t> payload, uint64_t now_ns) noexcept;
    // IPv6 (with cfg_.addr6): the extension headers, then TCP, neighbour
    // discovery, echo, or a Parameter Problem; a fragment to reassembly.
    // `whole`: `m` is a datagram reassembled here (a Fragment header in it
    // is one too many).
    void input_ipv6(rte_mbuf *m, const ethernet_repr &eth, std::span<uint8_t> payload,
                    uint64_t now_ns, bool whole = false) noexcept;
    // A fragment (the Fragment header at ext.offset) to reassembly: null
    // while its datagram is not complete or it was dropped (counted; a
    // Parameter Problem for a length RFC 8200 §4.5 names), else the whole
    // datagram's frame, its header rewritten as an unfragmented one's.
    rte_mbuf *reassemble6(rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip,
                          std::span<const uint8_t> dgram, const ipv6_ext_walk &ext,
                          uint64_t now_ns) noexcept;
    // ND and echo, for `ip` (the upper-layer length in its payload_len)
    // with the ICMPv6 message at byte `l4` of the datagram, in `msg`.
    void input_icmpv6(rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip, uint32_t l4,
                      std::span<uint8_t> msg, uint64_t now_ns) noexcept;
    // RFC 4443 §3.4: answers the datagram in `m` (the caller still owns and
    // drops it) with a Parameter Problem `code` at `pointer`, unless §2.4(e)
    // forbids one (icmpv6_error_ineligible): an ICMPv6 error message or
    // redirect (`about_error`), a group destination or a link-layer
    // multicast/broadcast frame (unless `multicast_ok`), a source that is no
    // single other node; or the rate limit (§2.4(f)) holds it back
    // (icmpv6_error_rate_limited); or no mbuf (tx_alloc_fail).
    void send_param_problem(const rte_mbuf *m, const ethernet_repr &eth, const ipv6_repr &ip,
                            icmpv6_param_code code, uint32_t pointer, bool multicast_ok,
                            bool about_error, uint64_t now_ns) noexcept;
    // Takes a token from the ICMPv6 error bucket if it has one.
    [[nodiscard]] bool icmp6_error_token(uint64_t now_ns) noexcept;
    void input_nd(const ethernet_repr &eth, const ipv6_repr &ip, const nd_repr &nd,
                  uint64_t now_ns) noexcept;
    // Router discovery (stack_router.cpp): a Router Advertisement (`msg`,
    // the whole message), the default router list, Router Solicitations.
    void input_ra(const ipv6_repr &ip, std::span<const uint8_t> msg, uint64_t now_ns) noexcept;
    void set_router(const ipv6_addr &router, uint16_t lifetime_s, uint64_t now_ns) noexcept;
    void remove_router(uint32_t i) noexcept;
    void expire_routers(uint64_t now_ns) noexcept;
    void solicit_routers(uint64_t now_ns) noexcept;
    void send_rs(uint64_t now_ns) noexcept;
    void poll_routers(uint64_t now_ns) noexcept;
    [[nodiscard]] uint64_t routers_deadline() const noexcept;
    [[nodiscard]] bool valid_source6(const ipv6_addr &src) const noexcept;
    bool send_solicitation(const ipv6_addr &target) noexcept;
    // A fresh frame for a link-local ICMPv6 message of `len` bytes (neighbour
    // and router discovery: hop limit 255), its Ethernet and IPv6 headers
    // written and `msg` its message's bytes; null (tx_alloc_fail) if no mbuf.
    rte_mbuf *link_icmpv6_frame(const ipv6_addr &src, const ipv6_addr &dst, mac_addr eth_dst,
                                std::size_t len, std::span<uint8_t> &msg) noexcept;
    // A Neighbor Solicitation or Advertisement in a fresh mbuf, hop limit 255,
    // queued for tx (ipv6_tx); false (tx_alloc_fail) if no mbuf.
    bool send_nd(const nd_repr &msg, const ipv6_addr &src, const ipv6_addr &dst,
                 mac_addr eth_dst) noexcept;
    // An ARP request or a Neighbor Solicitation for `ip`.
    void solicit(const ip_addr &ip) noexcept;
    void resolve_and_send(rte_mbuf *m, const ip_addr &next_hop, uint64_t now_ns) noexcept;
    // send_ipv4 or its IPv6 twin, by the datagram's version.
    void send_ip(rte_mbuf *m, mac_addr dst) noexcept;
    void answer_solicitation(const ethernet_repr &eth, const ipv6_repr &ip,
                             const nd_repr &ns) noexcept;
    // Whether a multicast frame is for a group this port's IPv6 address is in.
    [[nodiscard]] bool ipv6_group(const ethernet_repr &eth) const noexcept;
    void input_ipv4(rte_mbuf *m, const ethernet_repr &eth, std::span<uint8_t> payload,
                    uint64_t now_ns) noexcept;
    void input_icmp(rte_mbuf *m, const ethernet_repr &eth, const ipv4_repr &ip,
                    uint32_t ip_header_len) noexcept;
    // THE TCP HOOK. Called for every datagram that passed the IPv4 (or IPv6)
    // checks with protocol (next header) 6; `l4_off` is the TCP header's offset in the frame. Owns `m`.
    // Hands the segment to the attached tcp_layer, or drops it.
    template <class IpRepr>
    void input_tcp(rte_mbuf *m, const IpRepr &ip, uint32_t l4_off, uint64_t now_ns) noexcept;

    // RFC 1122 §3.2.1.3: addresses that must not appear as a source.
    [[nodiscard]] bool valid_source(ipv4_addr src) const noexcept;
    // Fills the Ethernet header of a frame with an IPv4 datagram and queues it.
    void send_ipv4(rte_mbuf *m, mac_addr dst) noexcept;
    // Builds an ARP packet from our addresses in a fresh mbuf and queues it.
    // False (counted) if no mbuf.
    bool send_arp(arp_op op, mac_addr eth_dst, mac_addr target_hw, ipv4_addr target_ip) noexcept;
    // Queues a frame for tx; frees and counts it when the queue is full.
    void transmit(rte_mbuf *m) noexcept;
    void drop(rte_mbuf *m, ferry::counter &c) noexcept;
    rte_mbuf *reassemble(rte_mbuf *m, ipv4_repr &ip, uint32_t &hlen, uint64_t now_ns) noexcept;
    // `m` itself if every segment is direct and unshared, else a private copy
    // (the original is freed). Null (counted) if the copy failed.
    [[nodiscard]] rte_mbuf *make_writable(rte_mbuf *m) noexcept;

    iface_config cfg_;
    rte_mempool *pool_;
    net_counters &ctr_;
    neighbor_table neigh_;
    ip_reassembly frag_;
    ip_reassembly frag6_;  // RFC 8200 §4.5: 60 s
    tcp_layer *tcp_ = nullptr;
    neighbor_hook neigh_hook_ = nullptr;
    void *neigh_hook_ctx_ = nullptr;
    router_hook router_hook_ = nullptr;
    void *router_hook_ctx_ = nullptr;
    // The default router list (RFC 4861 §6.3.4), in the order first heard.
    struct default_router {
        ipv6_addr addr;
        uint64_t expires_ns = 0;
    };
    static constexpr uint32_t max_routers = 4;
    std::array<default_router, max_routers> routers_{};
    uint32_t nrouters_ = 0;
    // Router Solicitations still to send, and when the next one is due.
    uint32_t rs_left_ = 0;
    uint64_t rs_next_ns_ = 0;
    std::optional<ipv4_addr> subnet_bcast_;
    // The ICMPv6 error token bucket (RFC 4443 §2.4(f)) as time credit: each
    // error costs 1 s / icmp6_errors_per_s, the credit grows with now_ns up
    // to icmp6_error_burst errors' worth; it starts full.
    uint64_t icmp6_credit_ns_ = 0;
    uint64_t icmp6_refill_ns_ = 0;  // the now_ns the credit was last grown to
    // Pending frames are txq_[tx_head_, tx_head_ + tx_len_): a contiguous span
    // for rte_eth_tx_burst; compacted to the front when the tail hits the end.
    std::array<rte_mbuf *, tx_capacity> txq_{};
    uint32_t tx_head_ = 0;
    uint32_t tx_len_ = 0;
};

}  // namespace ferry::net
