#include "ferry/net/mbuf_chain.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

namespace ferry::net {

rte_mbuf *chain_from(rte_mempool *pool, const char *data, uint32_t len) noexcept {
    rte_mbuf *head = nullptr, *last = nullptr;
    while (len > 0) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        if (m == nullptr) {
            rte_pktmbuf_free(head);
            return nullptr;
        }
        const uint32_t k = std::min<uint32_t>(len, rte_pktmbuf_tailroom(m));
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(k)), data, k);
        data += k;
        len -= k;
        if (head == nullptr) {
            head = m;
        } else {
            last->next = m;
            ++head->nb_segs;
            head->pkt_len += k;
        }
        last = m;
    }
    return head;
}

namespace {

// Keeps the first len bytes of m (walking the segments: pkt_len is not
// trusted), frees the segments after them and sets nb_segs and pkt_len.
// False when the chain holds fewer than len bytes (nothing changed).
bool keep_front(rte_mbuf *m, uint32_t len) noexcept {
    rte_mbuf *seg = m;
    uint32_t left = len;
    uint16_t nsegs = 1;
    while (seg->data_len < left) {
        if (seg->next == nullptr) return false;
        left -= seg->data_len;
        seg = seg->next;
        ++nsegs;
    }
    seg->data_len = static_cast<uint16_t>(left);
    if (seg->next != nullptr) {
        rte_pktmbuf_free(seg->next);
        seg->next = nullptr;
    }
    m->nb_segs = nsegs;
    m->pkt_len = len;
    return true;
}

}  // namespace

void chain_truncate(rte_mbuf *m, uint32_t len) noexcept {
    if (len < m->pkt_len) (void)keep_front(m, len);
}

rte_mbuf *chain_cut(rte_mbuf *m, uint32_t off, uint32_t len) noexcept {
    if (m == nullptr) return nullptr;
    // Free whole segments before the range; the next one becomes the head.
    while (off >= m->data_len) {
        rte_mbuf *next = m->next;
        if (next == nullptr) {
            rte_pktmbuf_free(m);
            return nullptr;
        }
        next->nb_segs = static_cast<uint16_t>(m->nb_segs - 1);
        next->pkt_len = m->pkt_len - m->data_len;
        off -= m->data_len;
        m->next = nullptr;
        m->nb_segs = 1;
        rte_pktmbuf_free_seg(m);
        m = next;
    }
    m->data_off = static_cast<uint16_t>(m->data_off + off);
    m->data_len = static_cast<uint16_t>(m->data_len - off);
    m->pkt_len -= off;
    if (len == 0 || !keep_front(m, len)) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    return m;
}

bool chain_append(rte_mbuf *head, rte_mbuf *tail) noexcept {
    return rte_pktmbuf_chain(head, tail) == 0;
}

internet_checksum chain_sum(const rte_mbuf *m, uint32_t off, uint32_t len) noexcept {
    internet_checksum c;
    for (const rte_mbuf *seg = m; seg != nullptr && len > 0; seg = seg->next) {
        if (off >= seg->data_len) {
            off -= seg->data_len;
            continue;
        }
        const uint32_t n = std::min<uint32_t>(seg->data_len - off, len);
        c.add({rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n});
        len -= n;
        off = 0;
    }
    return c;
}

uint32_t piece_copy_out(const tcp_rx_piece &p, char *dst, uint32_t n) noexcept {
    n = std::min(n, p.len);
    uint32_t off = p.off, done = 0;
    for (const rte_mbuf *s = p.m; s != nullptr && done < n; s = s->next) {
        if (off >= s->data_len) {
            off -= s->data_len;
            continue;
        }
        const uint32_t k = std::min<uint32_t>(s->data_len - off, n - done);
        std::memcpy(dst + done, rte_pktmbuf_mtod_offset(s, const char *, off), k);
        done += k;
        off = 0;
    }
    return done;
}

rte_mbuf *piece_take_front(tcp_rx_piece &p, uint32_t n, rte_mempool *pool, bool &whole) noexcept {
    whole = n >= p.len;
    if (whole) {
        rte_mbuf *m = chain_cut(p.m, p.off, p.len);
        p = {};
        return m;
    }
    rte_mbuf *c = rte_pktmbuf_clone(p.m, pool);
    if (c == nullptr) return nullptr;
    rte_mbuf *m = chain_cut(c, p.off, n);
    p.off += n;
    p.len -= n;
    return m;
}

}  // namespace ferry::net
