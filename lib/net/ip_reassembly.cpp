// IP fragment reassembly (ip_reassembly.h).
#include "ferry/net/ip_reassembly.h"

#include <cstring>

#include <algorithm>

#include "ferry/net/mbuf_chain.h"

namespace ferry::net {

ip_reassembly::ip_reassembly(const reassembly_config &cfg) noexcept : cfg_(cfg) {
    cfg_.max_datagrams = std::clamp<uint32_t>(cfg_.max_datagrams, 1, table_capacity);
    cfg_.max_frames = std::max<uint32_t>(cfg_.max_frames, 1);
}

ip_reassembly::~ip_reassembly() {
    for (datagram &d : table_)
        if (d.used) release(d);
}

ip_reassembly::datagram *ip_reassembly::find(const fragment_desc &f) noexcept {
    for (datagram &d : table_)
        if (d.used && d.ident == f.ident && d.src == f.src && d.dst == f.dst &&
            d.protocol == f.protocol)
            return &d;
    return nullptr;
}

uint32_t ip_reassembly::release(datagram &d) noexcept {
    const uint32_t n = d.n;
    for (uint32_t i = 0; i < d.n; ++i) rte_pktmbuf_free(d.frags[i].m);
    nframes_ -= n;
    --ndatagrams_;
    d.used = false;
    d.n = 0;
    return n;
}

void ip_reassembly::evict_oldest(result &r) noexcept {
    datagram *oldest = nullptr;
    for (datagram &d : table_)
        if (d.used && (oldest == nullptr || d.born < oldest->born)) oldest = &d;
    if (oldest == nullptr) return;
    r.freed += release(*oldest);
    ++r.evicted;
}

ip_reassembly::datagram *ip_reassembly::create(const fragment_desc &f, uint64_t now_ns,
                                               result &r) noexcept {
    while (ndatagrams_ >= cfg_.max_datagrams) evict_oldest(r);
    for (datagram &d : table_) {
        if (d.used) continue;
        d.used = true;
        d.src = f.src;
        d.dst = f.dst;
        d.ident = f.ident;
        d.protocol = f.protocol;
        d.tag = 0;
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

ip_reassembly::result ip_reassembly::input(rte_mbuf *m, const fragment_desc &fd,
                                           uint64_t now_ns) noexcept {
    result r;
    const uint32_t off = fd.offset;
    const uint32_t len = fd.len;
    const uint32_t end = off + len;
    const bool more = fd.more;
    datagram *d = find(fd);
    auto fail = [&](outcome why) {
        rte_pktmbuf_free(m);
        ++r.freed;
        if (d != nullptr) r.freed += release(*d);
        r.what = why;
        return r;
    };
    // RFC 791, RFC 8200 §4.5: every fragment but the last carries a
    // multiple of 8 octets; none reaches past 65535 octets of datagram, or
    // past the end the last one set.
    if ((more && (len == 0 || len % 8 != 0)) || fd.length_base + end > 65535 ||
        (d != nullptr && d->have_last && (end > d->total || (!more && end != d->total))))
        return fail(outcome::bad);
    if (!more && d != nullptr)
        for (uint32_t i = 0; i < d->n; ++i)
            if (uint32_t{d->frags[i].off} + d->frags[i].len > end) return fail(outcome::bad);
    if (off == 0 && len < min_first_payload && more) return fail(outcome::tiny);
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
    if (d == nullptr) d = create(fd, now_ns, r);
    if (off == 0) d->tag = fd.tag;
    // Insert in offset order.
    uint32_t at = d->n;
    while (at > 0 && d->frags[at - 1].off > off) {
        d->frags[at] = d->frags[at - 1];
        --at;
    }
    d->frags[at] = fragment{m, static_cast<uint16_t>(off), static_cast<uint16_t>(len),
                            static_cast<uint16_t>(fd.skip), static_cast<uint16_t>(fd.keep)};
    ++d->n;
    ++nframes_;
    d->have += len;
    if (!more) {
        d->have_last = true;
        d->total = end;
    }
    // No overlaps, all inside [0, total): as many bytes as the total is
    // every byte.
    if (!d->have_last || d->have != d->total) return r;
    r.total = d->total;
    r.tag = d->tag;
    r.frame = assemble(*d);
    r.what = outcome::complete;
    return r;
}

ip_reassembly::result ip_reassembly::input(rte_mbuf *m, uint32_t l3_off, const ipv4_repr &ip,
                                           uint32_t hlen, uint64_t now_ns) noexcept {
    fragment_desc f;
    f.src = ip_addr(ip.src);
    f.dst = ip_addr(ip.dst);
    f.ident = ip.ident;
    f.protocol = static_cast<uint8_t>(ip.protocol);
    f.offset = ip.frag_offset;
    f.len = ip.payload_len;
    f.more = ip.more_fragments;
    f.keep = f.skip = l3_off + hlen;
    f.length_base = hlen;
    result r = input(m, f, now_ns);
    if (r.what != outcome::complete) return r;
    // The header of an unfragmented datagram of this length.
    ipv4_packet p(std::span<uint8_t>(rte_pktmbuf_mtod_offset(r.frame, uint8_t *, l3_off), hlen));
    p.set_total_len(static_cast<uint16_t>(hlen + r.total));
    p.set_flags_frag(p.dont_fragment(), false, 0);
    p.fill_checksum();
    return r;
}

rte_mbuf *ip_reassembly::assemble(datagram &d) noexcept {
    const fragment &first = d.frags[0];  // offset 0: have == total and no gap
    rte_mbuf *head = first.m;
    // The first frame without its Ethernet padding (and without what lies
    // between the kept headers and the payload: IPv6's Fragment header,
    // which the headers slide over), then each payload.
    chain_truncate(head, uint32_t{first.skip} + first.len);
    if (const uint32_t gap = uint32_t{first.skip} - first.keep; gap != 0) {
        uint8_t *p = rte_pktmbuf_mtod(head, uint8_t *);
        std::memmove(p + gap, p, first.keep);
        rte_pktmbuf_adj(head, static_cast<uint16_t>(gap));
    }
    for (uint32_t i = 1; i < d.n; ++i) {
        const fragment &f = d.frags[i];
        rte_mbuf *m = f.m;
        rte_pktmbuf_adj(m, f.skip);  // headers are in the first segment
        chain_truncate(m, f.len);
        if (rte_pktmbuf_chain(head, m) != 0) rte_pktmbuf_free(m);  // > 65535 segments: never
    }
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

uint32_t ip_reassembly::poll(uint64_t now_ns) noexcept {
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

uint64_t ip_reassembly::next_deadline() const noexcept {
    uint64_t next = UINT64_MAX;
    // Asked on every loop iteration: the table is 64 records of 1 KiB, one
    // cache line each to look at, and almost always empty.
    if (ndatagrams_ == 0) return next;
    for (const datagram &d : table_)
        if (d.used) next = std::min(next, d.deadline);
    return next;
}

}  // namespace ferry::net
