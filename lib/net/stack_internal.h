// What stack.cpp and stack_ipv6.cpp share: the Ethernet header length,
// the ICMPv6 error bucket's arithmetic and turning a received frame around.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#include "ferry/base/counter.h"
#include "ferry/net/ethernet.h"
#include "ferry/net/ip_reassembly.h"
#include "ferry/net/stack.h"

namespace ferry::net::detail {

inline constexpr uint32_t eth_hlen = ethernet_frame::header_len;

// What one ICMPv6 error costs from the bucket (stack::icmp6_credit_ns_),
// and how much it holds. A rate of 0 makes both 0: nothing is ever sent.
inline uint64_t icmp6_error_cost_ns(const iface_config &cfg) noexcept {
    return cfg.icmp6_errors_per_s == 0 ? 0 : 1'000'000'000 / cfg.icmp6_errors_per_s;
}
inline uint64_t icmp6_error_cap_ns(const iface_config &cfg) noexcept {
    return icmp6_error_cost_ns(cfg) * cfg.icmp6_error_burst;
}

// A frame received and turned around keeps no receive metadata: rx offload
// flags, packet type or VLAN would otherwise be read as tx requests.
// Precondition: m is direct (see stack::make_writable), so no flag needs keeping.
inline void reset_tx_metadata(rte_mbuf *m) noexcept {
    m->ol_flags = 0;
    m->packet_type = 0;
    m->tx_offload = 0;
    m->vlan_tci = 0;
    m->vlan_tci_outer = 0;
}

// One IP version's reassembly counters (ipv4_frag_* or ipv6_frag_*).
struct frag_counters {
    ferry::counter &reassembled, &duplicate, &overlap, &bad, &tiny, &too_many, &evicted;
};

// Counts what the table did with a fragment; true when `r.frame` is a
// whole datagram to go on with.
inline bool count_reassembly(const ip_reassembly::result &r, const frag_counters &c) noexcept {
    c.evicted.inc(r.evicted);
    using o = ip_reassembly::outcome;
    switch (r.what) {
        case o::held:
            return false;
        case o::duplicate:
            c.duplicate.inc();
            return false;
        case o::overlap:
            c.overlap.inc();
            return false;
        case o::bad:
            c.bad.inc();
            return false;
        case o::tiny:
            c.tiny.inc();
            return false;
        case o::too_many:
            c.too_many.inc();
            return false;
        case o::complete:
            break;
    }
    c.reassembled.inc();
    return true;
}

}  // namespace ferry::net::detail
