// The stack's router discovery (RFC 4861 §6.3): Router Solicitations at
// port start, Router Advertisements kept as a short default router list,
// and the next hop for off-link IPv6 destinations when no gateway6 is
// configured. The wire formats are router_discovery.h's.
//
// What a host does with an advertisement and what ferry does of it
// (§6.3.4): the router lifetime makes the source a default router (0:
// no longer one), its link-layer address option goes to the neighbour
// cache; on-link prefixes, the MTU option, reachable time and retransmit
// timer are not applied (ferry's prefix, MTU and timers are configured),
// and addresses are not autoconfigured (RFC 4862: address6 is configured).
// A default router is chosen as the first one heard whose lifetime has
// not run out, not by reachability (§6.3.6 prefers reachable routers).
#include <rte_mbuf.h>

#include <algorithm>

#include "ferry/net/router_discovery.h"
#include "ferry/net/stack.h"

namespace ferry::net {
namespace {

constexpr uint64_t sec_ns = 1'000'000'000;
// RFC 4861 §10: MAX_RTR_SOLICITATIONS, RTR_SOLICITATION_INTERVAL.
constexpr uint32_t max_rtr_solicitations = 3;
constexpr uint64_t rtr_solicitation_interval_ns = 4 * sec_ns;

}  // namespace

void stack::input_ra(const ipv6_repr &ip, std::span<const uint8_t> msg, uint64_t now_ns) noexcept {
    ctr_.nd_ra_rx.inc();
    ra_repr ra;
    if (ra_repr::parse(ip, msg, ra) != ra_error::none) {
        ctr_.nd_ra_drop_invalid.inc();
        return;
    }
    if (!cfg_.router_discovery || cfg_.gateway6) {
        ctr_.nd_ra_ignored.inc();  // a configured router, or discovery off
        return;
    }
    // §6.3.4: "If the advertisement contains a Source Link-Layer Address
    // option, the link-layer address SHOULD be recorded in the Neighbor
    // Cache entry for the router (creating an entry if necessary)".
    if (ra.lladdr && ra.lladdr->is_unicast()) {
        ctr_.nd_learned.inc();
        learned_and_shared(neigh_.learn(ip.src, *ra.lladdr, now_ns, true), ip.src, *ra.lladdr);
    }
    rs_left_ = 0;  // §6.3.7: no more solicitations once an advertisement came
    set_router(ip.src, ra.router_lifetime_s, now_ns);
    if (router_hook_ != nullptr) router_hook_(router_hook_ctx_, ip.src, ra.router_lifetime_s);
}

void stack::learn_router_shared(const ipv6_addr &router, uint16_t lifetime_s,
                                uint64_t now_ns) noexcept {
    if (!cfg_.addr6 || !cfg_.router_discovery || cfg_.gateway6) return;
    rs_left_ = 0;
    set_router(router, lifetime_s, now_ns);
}

void stack::set_router(const ipv6_addr &router, uint16_t lifetime_s, uint64_t now_ns) noexcept {
    expire_routers(now_ns);
    for (uint32_t i = 0; i < nrouters_; ++i) {
        if (routers_[i].addr != router) continue;
        if (lifetime_s == 0) {
            // §6.3.4: "If the address is already present in the host's
            // Default Router List and the received Router Lifetime value is
            // zero, immediately time-out the entry".
            remove_router(i);
        } else {
            routers_[i].expires_ns = now_ns + lifetime_s * sec_ns;
        }
        return;
    }
    if (lifetime_s == 0) return;
    if (nrouters_ == max_routers) {
        ctr_.nd_ra_ignored.inc();  // the list is full: the routers heard first stay
        return;
    }
    routers_[nrouters_++] = {router, now_ns + lifetime_s * sec_ns};
    ctr_.nd_router_added.inc();
}

void stack::remove_router(uint32_t i) noexcept {
    for (uint32_t j = i; j + 1 < nrouters_; ++j) routers_[j] = routers_[j + 1];
    --nrouters_;
    ctr_.nd_router_removed.inc();
}

void stack::expire_routers(uint64_t now_ns) noexcept {
    for (uint32_t i = 0; i < nrouters_;) {
        if (routers_[i].expires_ns <= now_ns)
            remove_router(i);
        else
            ++i;
    }
}

std::optional<ipv6_addr> stack::router6(uint64_t now_ns) const noexcept {
    if (cfg_.gateway6) return cfg_.gateway6;
    for (uint32_t i = 0; i < nrouters_; ++i)
        if (routers_[i].expires_ns > now_ns) return routers_[i].addr;
    return std::nullopt;
}

void stack::solicit_routers(uint64_t now_ns) noexcept {
    if (!cfg_.addr6 || !cfg_.router_discovery || cfg_.gateway6) return;
    rs_left_ = max_rtr_solicitations;
    send_rs(now_ns);
}

void stack::send_rs(uint64_t now_ns) noexcept {
    --rs_left_;
    rs_next_ns_ = now_ns + rtr_solicitation_interval_ns;
    // §6.3.7: to all-routers, from our address (so with our link-layer
    // address), hop limit 255.
    const ipv6_addr dst = all_routers();
    std::span<uint8_t> msg;
    rte_mbuf *m = link_icmpv6_frame(*cfg_.addr6, dst, multicast_mac(dst), rs_len(true), msg);
    if (m == nullptr) return;
    emit_rs(*cfg_.addr6, dst, cfg_.mac, msg);
    ctr_.nd_rs_sent.inc();
    ctr_.ipv6_tx.inc();
    transmit(m);
}

void stack::poll_routers(uint64_t now_ns) noexcept {
    if (rs_left_ != 0 && now_ns >= rs_next_ns_) send_rs(now_ns);
    if (nrouters_ != 0) expire_routers(now_ns);
}

uint64_t stack::routers_deadline() const noexcept {
    uint64_t next = rs_left_ != 0 ? rs_next_ns_ : UINT64_MAX;
    for (uint32_t i = 0; i < nrouters_; ++i) next = std::min(next, routers_[i].expires_ns);
    return next;
}

}  // namespace ferry::net
