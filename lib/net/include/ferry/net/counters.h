// Per-(lcore, port) counters of the Ethernet/ARP/IPv4/ICMP stack.
//
// One X-macro list yields the struct fields, the telemetry names and the help
// text (CONVENTIONS.md "Per-lcore counters"). Every drop has its own counter:
// a frame is counted once at its layer's *_rx and at most once in a *_drop_*.
#pragma once

#include "ferry/base/counter.h"

// clang-format off
#define FERRY_NET_COUNTERS(X)                                                                    \
    X(eth_rx,                     "Ethernet frames received")                                    \
    X(eth_drop_runt,              "frames shorter than the 14-byte Ethernet header")             \
    X(eth_drop_header_split,      "multi-segment frames whose headers are not in the first segment") \
    X(eth_drop_not_ours,          "unicast frames for another MAC address")                      \
    X(eth_drop_multicast,         "multicast (non-broadcast) frames")                            \
    X(eth_drop_bad_src,           "frames with a multicast source MAC address")                  \
    X(eth_drop_vlan,              "802.1Q/802.1ad tagged frames (VLANs are not supported)")      \
    X(eth_drop_unknown_ethertype, "frames with an EtherType other than IPv4 and ARP")            \
    X(arp_rx,                     "ARP packets received")                                        \
    X(arp_drop_malformed,         "ARP packets truncated or with wrong address lengths")         \
    X(arp_drop_unsupported,       "ARP packets for another hardware/protocol type or opcode")    \
    X(arp_drop_bad_sender,        "ARP packets with a group or zero sender MAC, or a multicast/loopback/240.0.0.0/4 sender IP") \
    X(arp_drop_not_ours,          "ARP packets whose target is not our address (after the RFC 826 merge)") \
    X(arp_conflict,               "ARP packets from another host claiming our address")          \
    X(arp_requests_answered,      "ARP requests for our address answered")                       \
    X(arp_replies_rx,             "ARP replies for our address received")                        \
    X(arp_requests_sent,          "ARP requests sent to resolve a next hop")                     \
    X(arp_gratuitous_sent,        "gratuitous ARP announcements sent")                           \
    X(neigh_learned,              "neighbor entries added or resolved")                          \
    X(neigh_updated,              "reachable neighbor entries given a new MAC by ARP")           \
    X(neigh_refreshed,            "reachable neighbor entries confirmed by ARP (same MAC)")      \
    X(neigh_share_suppressed,     "bindings not re-shared with the other lcores: no change, or changed too often") \
    X(neigh_expired,              "neighbor entries removed after the timeout")                  \
    X(neigh_evicted,              "neighbor entries reclaimed to make room")                     \
    X(neigh_table_full,           "neighbor insertions refused: table full")                     \
    X(neigh_pending_full_drop,    "packets dropped: too many waiting for one address")           \
    X(neigh_resolve_failed,       "address resolutions given up after the last ARP retry")       \
    X(neigh_resolve_failed_drop,  "packets dropped because their next hop did not resolve")      \
    X(ipv4_rx,                    "IPv4 datagrams received")                                     \
    X(ipv4_drop_truncated,        "IPv4 datagrams shorter than their header or total length")    \
    X(ipv4_drop_bad_version,      "IPv4 datagrams with version != 4")                            \
    X(ipv4_drop_bad_ihl,          "IPv4 datagrams with IHL < 5")                                 \
    X(ipv4_drop_bad_length,       "IPv4 datagrams with total length < header length")            \
    X(ipv4_drop_bad_checksum,     "IPv4 datagrams with a bad header checksum")                   \
    X(ipv4_rx_ttl_below_2,        "IPv4 datagrams for us with TTL 0 or 1, delivered (RFC 1122 3.2.1.7)") \
    X(ipv4_frag_rx,               "IPv4 fragments received (reassembled: ip_reassembly.h)")     \
    X(ipv4_frag_reassembled,      "IPv4 datagrams reassembled from fragments")                   \
    X(ipv4_frag_drop_overlap,     "IPv4 fragments overlapping a held one: dropped with their datagram (RFC 5722)") \
    X(ipv4_frag_drop_bad,         "IPv4 fragments not a multiple of 8, past the end or 65535: dropped with their datagram") \
    X(ipv4_frag_drop_tiny,        "IPv4 first fragments too short for the transport header (RFC 1858)") \
    X(ipv4_frag_drop_duplicate,   "IPv4 fragments that duplicate a held one exactly")            \
    X(ipv4_frag_drop_too_many,    "IPv4 datagrams of more than 64 fragments, dropped")           \
    X(ipv4_frag_drop_evicted,     "IPv4 datagrams in reassembly dropped to make room (64 datagrams, 512 fragments)") \
    X(ipv4_frag_drop_timeout,     "IPv4 datagrams not complete within 30 s, dropped")            \
    X(ipv4_drop_not_ours,         "IPv4 datagrams for another unicast address")                  \
    X(ipv4_drop_link_broadcast,   "unicast IPv4 datagrams received in a link-layer broadcast (RFC 1122 3.3.6)") \
    X(ipv4_drop_broadcast,        "IPv4 datagrams to a broadcast or multicast address")          \
    X(ipv4_drop_bad_src,          "IPv4 datagrams with a source that is not a unicast address of another host") \
    X(ipv4_drop_unknown_protocol, "IPv4 datagrams for a protocol other than ICMP and TCP")       \
    X(ipv4_drop_no_route,         "IPv4 datagrams to send with no on-link or gateway next hop")  \
    X(ipv4_tx,                    "IPv4 datagrams queued for transmission")                      \
    X(tcp_drop_unimplemented,     "TCP segments dropped: no TCP layer attached yet")             \
    X(tcp_rx,                     "TCP segments received (handed to the TCP layer)")             \
    X(tcp_drop_malformed,         "TCP segments truncated or with a data offset < 5")            \
    X(tcp_drop_bad_options,       "TCP segments with a malformed option list (RFC 9293 3.1 MUST-7)") \
    X(tcp_drop_bad_checksum,      "TCP segments with a bad checksum (NIC or software check)")    \
    X(tcp_cksum_hw_verified,      "TCP checksums the NIC verified (rx offload flags)")           \
    X(tcp_drop_rst_no_flow,       "RST segments for no connection (ignored, RFC 9293 3.10.7.1)") \
    X(tcp_rst_no_flow,            "RSTs sent to segments for no connection or listener (RFC 9293 3.10.7.1)") \
    X(tcp_rst_sent_no_flow,       "RSTs sent for segments matching no connection or listener")   \
    X(tcp_drop_not_owner,         "segments to a listener's port matching no flow here: the port is shared, another lcore may own the flow (no hand-off)") \
    X(tcp_handoff_out,            "segments of another lcore's flow handed to that lcore (misdelivered by the NIC)") \
    X(tcp_handoff_in,             "segments another lcore handed to this one (flows this lcore owns)") \
    X(tcp_drop_handoff_full,      "segments of another lcore's flow dropped: the cross-core queue was full") \
    X(tcp_connect_no_port,        "connect() calls that found no free local port owned by this lcore") \
    X(tcp_connect_no_slot,        "connect() calls that found the connection pool full") \
    X(neigh_shared_in,            "neighbor entries learned from another lcore's ARP") \
    X(neigh_share_dropped,        "neighbor bindings or routers not offered to another lcore: no mbuf, or its cross-core queue full") \
    X(tcp_drop_listen_other,      "segments to a listener without SYN or ACK, or with RST (ignored)") \
    X(tcp_drop_syn_fin,           "SYN+FIN segments to a listener (dropped: no SYN-ACK, no state)") \
    X(tcp_tx,                     "TCP segments built and handed to IPv4 output")                \
    X(tcp_tx_copied,              "TCP segments whose payload was copied (port without chains)") \
    X(syn_cookies_sent,           "SYN-ACKs carrying a SYN cookie (RFC 4987 3.6)")               \
    X(syn_cookies_validated,      "connections rebuilt from a valid SYN cookie ACK")             \
    X(syn_cookie_rejected,        "ACKs to a listener with no valid cookie (RST sent)")          \
    X(listen_backlog_full,        "SYNs that found their listener's SYN backlog full")           \
    X(flow_table_full,            "SYNs or cookie ACKs that found no free connection slot")      \
    X(tcp_time_wait_recycled,     "TIME-WAIT connections ended early to free a slot (pool full)") \
    X(tcp_time_wait_reopened,     "TIME-WAIT connections ended by a new SYN on their tuple (RFC 6191)") \
    X(tcp_drop_mem_pressure,      "segment payloads dropped while the mbuf pool was low (ACKs kept)")  \
    X(conn_opened,                "connections created (passive open, SYN cookie or connect)")   \
    X(conn_closed,                "connections freed (CLOSED, reported to the application)")     \
    X(icmp_rx,                    "ICMP messages received")                                      \
    X(icmp_drop_truncated,        "ICMP messages shorter than 8 bytes")                          \
    X(icmp_drop_bad_checksum,     "ICMP messages with a bad checksum")                           \
    X(icmp_drop_unsupported,      "ICMP messages other than echo request (code 0)")              \
    X(icmp_drop_oversize,         "ICMP echo requests larger than the MTU (no fragmentation)")   \
    X(icmp_echo_replied,          "ICMP echo requests answered")                                 \
    X(ipv6_rx,                    "IPv6 datagrams received (a port with an IPv6 address)")       \
    X(ipv6_drop_malformed,        "IPv6 datagrams truncated or not version 6")                   \
    X(ipv6_drop_not_ours,         "IPv6 datagrams for another address or group")                 \
    X(ipv6_drop_unsupported,      "ICMPv6 messages not taken: not ND or echo request, or an ND/echo frame in several segments") \
    X(ipv6_drop_ext_header,       "IPv6 datagrams with a malformed extension header: it or an option runs past the payload") \
    X(ipv6_drop_ext_split,        "IPv6 datagrams whose extension headers (or the TCP header after them) run past the first segment") \
    X(ipv6_frag_rx,               "IPv6 fragments received, not atomic (RFC 8200 4.5; reassembled: ip_reassembly.h)") \
    X(ipv6_frag_reassembled,      "IPv6 datagrams reassembled from fragments")                   \
    X(ipv6_frag_drop_overlap,     "IPv6 fragments overlapping a held one: dropped with their datagram (RFC 5722)") \
    X(ipv6_frag_drop_bad,         "IPv6 fragments not a multiple of 8, past the end or 65535, or nested: dropped") \
    X(ipv6_frag_drop_tiny,        "IPv6 first fragments too short for the headers that follow (RFC 7112)") \
    X(ipv6_frag_drop_duplicate,   "IPv6 fragments that duplicate a held one exactly")            \
    X(ipv6_frag_drop_too_many,    "IPv6 datagrams of more than 64 fragments, dropped")           \
    X(ipv6_frag_drop_evicted,     "IPv6 datagrams in reassembly dropped to make room (64 datagrams, 512 fragments)") \
    X(ipv6_frag_drop_timeout,     "IPv6 datagrams not complete within 60 s, dropped")            \
    X(ipv6_drop_no_next,          "IPv6 datagrams with nothing after their headers (next header 59, RFC 8200 4.7)") \
    X(ipv6_drop_option,           "IPv6 datagrams with an unrecognized option whose action bits say discard (RFC 8200 4.2)") \
    X(ipv6_drop_routing,          "IPv6 datagrams with a routing header with segments left (not a router, RFC 8200 4.4)") \
    X(ipv6_drop_unknown_next,     "IPv6 datagrams for an unrecognized next header, UDP included (RFC 8200 4)") \
    X(ipv6_drop_bad_src,          "IPv6 datagrams from ::, a group, loopback, a mapped IPv4 or our own address") \
    X(ipv6_drop_no_route,         "IPv6 datagrams to send off-link: no IPv6 router is configured")  \
    X(ipv6_tx,                    "IPv6 datagrams sent (TCP, neighbour discovery, echo replies, ICMPv6 errors)") \
    X(nd_solicitations_sent,      "Neighbor Solicitations sent to resolve a peer's IPv6 address")  \
    X(nd_learned,                 "neighbour entries set or refreshed from Neighbor Discovery")  \
    X(nd_rx,                      "Neighbor Solicitations and Advertisements received")          \
    X(nd_drop_invalid,            "Neighbor Discovery messages failing RFC 4861 section 7.1's checks") \
    X(nd_dad_sent,                "duplicate address detection probes sent for our IPv6 address (at port start)") \
    X(nd_conflict,                "Neighbor Advertisements from another node for our IPv6 address: a duplicate") \
    X(nd_ignored,                 "valid Neighbor Discovery messages not asking for our address") \
    X(nd_advertised,              "Neighbor Advertisements sent for our address")                \
    X(nd_rs_sent,                 "Router Solicitations sent (RFC 4861 6.3.7: at start, up to 3, until an advertisement)") \
    X(nd_ra_rx,                   "Router Advertisements received")                              \
    X(nd_ra_drop_invalid,         "Router Advertisements failing RFC 4861 6.1.2 (hop limit, source, length, options)") \
    X(nd_ra_ignored,              "valid Router Advertisements not used: gateway6 set, discovery off, or 4 routers known") \
    X(nd_router_added,            "default routers learned from Router Advertisements (or from another lcore)") \
    X(nd_router_removed,          "default routers dropped: lifetime 0 or run out")              \
    X(icmpv6_drop_bad_checksum,   "ICMPv6 echo requests with a bad checksum")                    \
    X(icmpv6_drop_oversize,       "ICMPv6 echo requests whose reply would exceed the MTU (no fragmentation)") \
    X(icmpv6_echo_replied,        "ICMPv6 echo requests answered")                               \
    X(icmpv6_param_problem_sent,  "ICMPv6 Parameter Problem messages sent (RFC 4443 3.4)")        \
    X(icmpv6_error_ineligible,    "ICMPv6 errors not sent (RFC 4443 2.4(e)): about an ICMPv6 error, to a group, from no single node") \
    X(icmpv6_error_rate_limited,  "ICMPv6 errors not sent: over the rate limit (RFC 4443 2.4(f))") \
    X(tx_alloc_fail,              "frames not sent: mbuf allocation or copy failed")             \
    X(tx_drop_full,               "frames dropped: transmit queue full")                         \
    X(tx_frames,                  "frames handed to the port for transmission")
// clang-format on

namespace ferry::net {

struct alignas(64) net_counters {
    FERRY_NET_COUNTERS(FERRY_COUNTER_MEMBER)
};

#define FERRY_NET_COUNTER_FIELD(name, help) FERRY_COUNTER_FIELD(net_counters, name, help)
inline constexpr ferry::counter_field<net_counters> net_counter_fields[] = {
    FERRY_NET_COUNTERS(FERRY_NET_COUNTER_FIELD)};
#undef FERRY_NET_COUNTER_FIELD

}  // namespace ferry::net
