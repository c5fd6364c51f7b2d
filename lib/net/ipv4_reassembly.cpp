// IPv4 fragment reassembly (ipv4_reassembly.h).
#include "ferry/net/ipv4_reassembly.h"

#include <algorithm>

#include "ferry/net/mbuf_chain.h"

namespace ferry::net {

ipv4_reassembly::ipv4_reassembly(const reassembly_config &cfg) noexcept : cfg_(cfg) {
    cfg_.max_datagrams = std::clamp<uint32_t>(cfg_.max_datagrams, 1, table_capacity);
    cfg_.max_frames = std::max<uint32_t>(cfg_.max_frames, 1);
}

ipv4_reassembly::~ipv4_reassembly() {
    for (datagram &d : table_)
        if (d.used) release(d);
}

ipv4_reassembly::datagram *ipv4_reassembly::find(const ipv4_repr &ip) noexcept {
    for (datagram &d : table_)
        if (d.used && d.ident == ip.ident && d.src == ip.src && d.dst == ip.dst &&
            d.protocol == ip.protocol)
            return &d;
    return nullptr;
}

uint32_t ipv4_reassembly::release(datagram &d) noexcept {
    const uint32_t n = d.n;
    for (uint32_t i = 0; i < d.n; ++i) rte_pktmbuf_free(d.frags[i].m);
    nframes_ -= n;
    --ndatagrams_;
    d.used = false;
    d.n = 0;
    return n;
}

void ipv4_reassembly::evict_oldest(result &r) noexcept {
    datagram *oldest = nullptr;
    for (datagram &d : table_)
        if (d.used && (oldest == nullptr || d.born < oldest->born)) oldest = &d;
    if (oldest == nullptr) return;
    r.freed += release(*oldest);
    ++r.evicted;
}

ipv4_reassembly::datagram *ipv4_reassembly::create(const ipv4_repr &ip, uint64_t now_ns,
                                                   result &r) noexcept {
    while (ndatagrams_ >= cfg_.max_datagrams) evict_oldest(r);
    for (datagram &d : table_) {
        if (d.used) continue;
        d.used = true;
        d.src = ip.src;
        d.dst = ip.dst;
        d.ident = ip.ident;
        d.protocol = ip.protocol;
        d.deadline = now_ns + cfg_.timeout_ns;
        d.born = births_++;
        d.total = 0;
        d.have_last = false;
        d.have = 0;
        d.n = 0;
        ++ndatagrams_;
        return &d;
    }
    return nullptr;  // not reached: max_datagrams <= table_capacity
}

ipv4_reassembly::result ipv4_reassembly::input(rte_mbuf *m, uint32_t l3_off, const ipv4_repr &ip,
                                               uint32_t hlen, uint64_t now_ns) noexcept {
    result r;
    const uint32_t off = ip.frag_offset;
    const uint32_t len = ip.payload_len;
    const uint32_t end = off + len;
    datagram *d = find(ip);
    auto fail = [&](outcome why) {
        rte_pktmbuf_free(m);
        ++r.freed;
        if (d != nullptr) r.freed += release(*d);
        r.what = why;
        return r;
    };
    // RFC 791: every fragment but the last carries a multiple of 8 octets;
    // none reaches past 65535 octets of datagram, or past the end the last
    // one set.
    if ((ip.more_fragments && (len == 0 || len % 8 != 0)) || hlen + end > 65535 ||
        (d != nullptr && d->have_last && (end > d->total || (!ip.more_fragments && end != d->total))))
        return fail(outcome::bad);
    if (!ip.more_fragments && d != nullptr)
        for (uint32_t i = 0; i < d->n; ++i)
            if (uint32_t{d->frags[i].off} + d->frags[i].len > end) return fail(outcome::bad);
    if (off == 0 && len < min_first_payload && ip.more_fragments) return fail(outcome::tiny);
    if (d != nullptr) {
        // RFC 5722 §4: an overlap discards the whole datagram; an exact
        // duplicate (a retransmission of the same fragment) only itself.
        for (uint32_t i = 0; i < d->n; ++i) {
            const fragment &f = d->frags[i];
            if (f.off == off && f.len == len) {
                rte_pktmbuf_free(m);
                r.freed = 1;
                r.what = outcome::duplicate;
                return r;
            }
            if (off < uint32_t{f.off} + f.len && f.off < end) return fail(outcome::overlap);
        }
        if (d->n == max_fragments) return fail(outcome::too_many);
    }
    while (nframes_ >= cfg_.max_frames) {
        const uint64_t mine = d != nullptr ? d->born : UINT64_MAX;
        evict_oldest(r);
        if (d != nullptr && (!d->used || d->born != mine)) d = nullptr;  // it was the oldest
    }
    if (d == nullptr) d = create(ip, now_ns, r);
    // Insert in offset order.
    uint32_t at = d->n;
    while (at > 0 && d->frags[at - 1].off > off) {
        d->frags[at] = d->frags[at - 1];
        --at;
    }
    d->frags[at] = fragment{m, static_cast<uint16_t>(off), static_cast<uint16_t>(len),
                            static_cast<uint16_t>(l3_off + hlen), static_cast<uint16_t>(l3_off)};
    ++d->n;
    ++nframes_;
    d->have += len;
    if (!ip.more_fragments) {
        d->have_last = true;
        d->total = end;
    }
    // No overlaps, all inside [0, total): as many bytes as the total is
    // every byte.
    if (!d->have_last || d->have != d->total) return r;
    r.frame = assemble(*d);
    r.what = outcome::complete;
    return r;
}

rte_mbuf *ipv4_reassembly::assemble(datagram &d) noexcept {
    const fragment &first = d.frags[0];  // offset 0: have == total and no gap
    rte_mbuf *head = first.m;
    // The first frame without its Ethernet padding, then each payload.
    chain_truncate(head, uint32_t{first.skip} + first.len);
    for (uint32_t i = 1; i < d.n; ++i) {
        const fragment &f = d.frags[i];
        rte_mbuf *m = f.m;
        rte_pktmbuf_adj(m, f.skip);  // headers are in the first segment
        chain_truncate(m, f.len);
        if (rte_pktmbuf_chain(head, m) != 0) rte_pktmbuf_free(m);  // > 65535 segments: never
    }
    // The header of an unfragmented datagram of this length.
    const uint32_t hlen = uint32_t{first.skip} - first.l3;
    ipv4_packet p(std::span<uint8_t>(rte_pktmbuf_mtod_offset(head, uint8_t *, first.l3), hlen));
    p.set_total_len(static_cast<uint16_t>(hlen + d.total));
    p.set_flags_frag(p.dont_fragment(), false, 0);
    p.fill_checksum();
    // What the port said of the first fragment's checksums does not hold for
    // the datagram (a fragment's L4 checksum cannot be checked): unknown, so
    // TCP sums the whole datagram itself.
    head->ol_flags &= ~(RTE_MBUF_F_RX_L4_CKSUM_MASK | RTE_MBUF_F_RX_IP_CKSUM_MASK);
    nframes_ -= d.n;
    --ndatagrams_;
    d.used = false;
    d.n = 0;
    return head;
}

uint32_t ipv4_reassembly::poll(uint64_t now_ns) noexcept {
    uint32_t expired = 0;
    if (ndatagrams_ == 0) return 0;  // the common case: no fragments held
    for (datagram &d : table_) {
        if (d.used && d.deadline <= now_ns) {
            release(d);
            ++expired;
        }
    }
    return expired;
}

uint64_t ipv4_reassembly::next_deadline() const noexcept {
    uint64_t next = UINT64_MAX;
    // Asked on every loop iteration: the table is 64 records of 1 KiB, one
    // cache line each to look at, and almost always empty.
    if (ndatagrams_ == 0) return next;
    for (const datagram &d : table_)
        if (d.used) next = std::min(next, d.deadline);
    return next;
}

}  // namespace ferry::net
