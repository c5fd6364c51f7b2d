#include "ferry/net/tcp_conn_queues.h"

#include <algorithm>

namespace ferry::net {

namespace {

// Octets of [l, r) that also lie in [a, b).
uint32_t overlap(seq_num l, seq_num r, seq_num a, seq_num b) noexcept {
    const seq_num lo = seq_max(l, a);
    const seq_num hi = seq_min(r, b);
    return lo < hi ? distance(lo, hi) : 0;
}

// Cuts the chain of `p` down to exactly its data: the segments wholly before
// p.off or after p.off + p.len are freed, the first and last ones trimmed
// (data_off / data_len), then p.off = 0 and the head's pkt_len = p.len,
// nb_segs the segments left. Returns the last segment. Returns null, p
// untouched, when a segment is shared (refcnt > 1: another holder sees the
// same mbuf header) or the chain holds less than p claims.
rte_mbuf *cut_to_piece(tcp_rx_piece &p) noexcept {
    uint64_t have = 0;
    for (rte_mbuf *s = p.m; s != nullptr; s = s->next) {
        if (rte_mbuf_refcnt_read(s) != 1) {
            return nullptr;
        }
        have += s->data_len;
    }
    if (p.m == nullptr || p.len == 0 || have < uint64_t{p.off} + p.len) {
        return nullptr;
    }
    rte_mbuf *head = p.m;
    uint32_t off = p.off;
    while (off >= head->data_len) {  // segments before the data
        rte_mbuf *next = head->next;
        off -= head->data_len;
        head->next = nullptr;
        head->nb_segs = 1;
        rte_pktmbuf_free_seg(head);
        head = next;
    }
    head->data_off = static_cast<uint16_t>(head->data_off + off);
    head->data_len = static_cast<uint16_t>(head->data_len - off);
    uint32_t left = p.len;
    uint16_t segs = 1;
    rte_mbuf *tail = head;
    while (left > tail->data_len) {
        left -= tail->data_len;
        tail = tail->next;
        ++segs;
    }
    tail->data_len = static_cast<uint16_t>(left);
    if (tail->next != nullptr) {  // segments after the data
        rte_pktmbuf_free(tail->next);
        tail->next = nullptr;
    }
    head->nb_segs = segs;
    head->pkt_len = p.len;
    p.m = head;
    p.off = 0;
    return tail;
}

}  // namespace

// ---- tcp_send_queue ----

uint32_t tcp_send_queue::push(rte_mbuf *chain) noexcept {
    if (chain == nullptr || chain->pkt_len == 0 || bytes_ >= limit_ || count_ == capacity) {
        return 0;
    }
    if (ring_ == nullptr) {
        ring_ = static_cast<entry *>(pool_->take());
        if (ring_ == nullptr) {
            return 0;
        }
        head_ = 0;
    }
    ring_[(head_ + count_) % capacity] = entry{chain, chain->pkt_len};
    ++count_;
    bytes_ += chain->pkt_len;
    return chain->pkt_len;
}

void tcp_send_queue::release(uint32_t n) noexcept {
    n = std::min(n, bytes_);
    bytes_ -= n;
    while (n > 0) {
        entry &e = ring_[head_];
        const uint32_t left = e.len - head_off_;
        if (n < left) {
            head_off_ += n;
            return;
        }
        n -= left;
        rte_pktmbuf_free(e.m);
        head_ = (head_ + 1) % capacity;
        --count_;
        head_off_ = 0;
    }
    drop_ring();
}

void tcp_send_queue::drop_ring() noexcept {
    if (count_ == 0 && ring_ != nullptr) {
        pool_->give(ring_);
        ring_ = nullptr;
        head_ = 0;
        head_off_ = 0;
    }
}

uint32_t tcp_send_queue::gather(uint32_t off, uint32_t len, std::span<tcp_payload_ref> refs,
                                std::size_t &nrefs) const noexcept {
    nrefs = 0;
    uint32_t covered = 0;
    off += head_off_;
    for (std::size_t i = 0; i < count_ && covered < len; ++i) {
        const entry &e = ring_[(head_ + i) % capacity];
        if (off >= e.len) {
            off -= e.len;
            continue;
        }
        for (rte_mbuf *s = e.m; s != nullptr && covered < len; s = s->next) {
            if (off >= s->data_len) {
                off -= s->data_len;
                continue;
            }
            if (nrefs == refs.size()) {
                return covered;
            }
            const uint32_t take = std::min<uint32_t>(s->data_len - off, len - covered);
            refs[nrefs++] = tcp_payload_ref{s, off, take};
            covered += take;
            off = 0;
        }
        off = 0;
    }
    return covered;
}

void tcp_send_queue::clear() noexcept {
    while (count_ > 0) {
        rte_pktmbuf_free(ring_[head_].m);
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    drop_ring();
    head_ = 0;
    head_off_ = 0;
    bytes_ = 0;
}

// ---- tcp_sack_scoreboard ----

uint32_t tcp_sack_scoreboard::add(seq_num left, seq_num right, bool &overflow) noexcept {
    // i: the first range that reaches left (overlaps or touches [left, right));
    // j: one past the last range that starts at or before right.
    std::size_t i = 0;
    while (i < count_ && r_[i].right < left) {
        ++i;
    }
    std::size_t j = i;
    while (j < count_ && r_[j].left <= right) {
        ++j;
    }
    if (i == j) {  // touches nothing: a range of its own at i
        if (count_ == capacity) {
            overflow = true;
            if (i == count_) {
                return 0;  // it would be the highest: it is the one forgotten
            }
            --count_;  // forget the highest
        }
        for (std::size_t k = count_; k > i; --k) {
            r_[k] = r_[k - 1];
        }
        r_[i] = range{left, right};
        ++count_;
        return distance(left, right);
    }
    // Merge ranges i..j-1 and the block into r_[i].
    uint32_t known = 0;
    for (std::size_t k = i; k < j; ++k) {
        known += overlap(left, right, r_[k].left, r_[k].right);
    }
    r_[i] = range{seq_min(left, r_[i].left), seq_max(right, r_[j - 1].right)};
    const std::size_t gone = j - i - 1;
    if (gone > 0) {
        for (std::size_t k = j; k < count_; ++k) {
            r_[k - gone] = r_[k];
        }
        count_ -= static_cast<uint32_t>(gone);
    }
    return distance(left, right) - known;
}

void tcp_sack_scoreboard::ack_to(seq_num una) noexcept {
    // A range reaching past `una` but starting at or below it goes too: the
    // peer's RCV.NXT never stops at or inside data it holds, so it dropped
    // that data (reneged, RFC 2018 §8) and keeping the range could only
    // keep the octet at SND.UNA from being retransmitted.
    std::size_t i = 0;
    while (i < count_ && r_[i].left <= una) {
        ++i;
    }
    if (i > 0) {
        for (std::size_t k = i; k < count_; ++k) {
            r_[k - i] = r_[k];
        }
        count_ -= static_cast<uint32_t>(i);
    }
}

uint32_t tcp_sack_scoreboard::sacked_bytes() const noexcept {
    uint32_t n = 0;
    for (std::size_t k = 0; k < count_; ++k) {
        n += distance(r_[k].left, r_[k].right);
    }
    return n;
}

uint32_t tcp_sack_scoreboard::sacked_below(seq_num seq) const noexcept {
    uint32_t n = 0;
    for (std::size_t k = 0; k < count_ && r_[k].left < seq; ++k) {
        n += distance(r_[k].left, seq_min(r_[k].right, seq));
    }
    return n;
}

bool tcp_sack_scoreboard::is_sacked(seq_num seq) const noexcept {
    for (std::size_t k = 0; k < count_; ++k) {
        if (seq < r_[k].left) {
            return false;
        }
        if (seq < r_[k].right) {
            return true;
        }
    }
    return false;
}

bool tcp_sack_scoreboard::hole_lost(std::size_t k, uint32_t smss) const noexcept {
    if (count_ - k >= dup_thresh) {
        return true;
    }
    uint64_t above = 0;
    for (std::size_t i = k; i < count_; ++i) {
        above += distance(r_[i].left, r_[i].right);
    }
    return above > uint64_t{dup_thresh - 1} * smss;
}

bool tcp_sack_scoreboard::is_lost(seq_num seq, uint32_t smss) const noexcept {
    std::size_t k = 0;
    while (k < count_ && r_[k].right <= seq) {
        ++k;
    }
    if (k == count_ || r_[k].left <= seq) {
        return false;  // nothing SACKed above, or seq itself is SACKed
    }
    return hole_lost(k, smss);
}

uint32_t tcp_sack_scoreboard::pipe(seq_num una, seq_num high_data, seq_num high_rxt,
                                   uint32_t smss) const noexcept {
    // The holes, from the top down: the one above the highest range (never
    // lost: nothing is SACKed above it), then the one below each range k,
    // lost once the ranges from k up pass IsLost's test. Lost-ness only grows
    // going down, so the sums carry.
    uint64_t pipe = 0;
    uint64_t sacked_above = 0;
    bool lost = false;
    for (std::size_t k = count_ + 1; k-- > 0;) {
        const seq_num start = k == 0 ? una : r_[k - 1].right;
        const seq_num end = k == count_ ? high_data : r_[k].left;
        if (k < count_) {
            sacked_above += distance(r_[k].left, r_[k].right);
            lost =
                lost || count_ - k >= dup_thresh || sacked_above > uint64_t{dup_thresh - 1} * smss;
        }
        if (!(start < end)) {
            continue;
        }
        if (!lost) {
            pipe += distance(start, end);
        }
        pipe += overlap(start, end, una, high_rxt);
    }
    return static_cast<uint32_t>(std::min<uint64_t>(pipe, UINT32_MAX));
}

bool tcp_sack_scoreboard::next_hole(seq_num una, seq_num from, bool lost_only, uint32_t smss,
                                    uint32_t max_len, seq_num &start, seq_num &end) const noexcept {
    for (std::size_t k = 0; k < count_; ++k) {
        const seq_num hole_start = seq_max(k == 0 ? una : r_[k - 1].right, from);
        const seq_num hole_end = r_[k].left;
        if (!(hole_start < hole_end)) {
            continue;
        }
        if (lost_only && !hole_lost(k, smss)) {
            return false;  // and no hole above is lost either
        }
        start = hole_start;
        end = hole_start + static_cast<int32_t>(std::min(distance(hole_start, hole_end), max_len));
        return true;
    }
    return false;
}

seq_num tcp_sack_scoreboard::skip_sacked(seq_num seq) const noexcept {
    for (std::size_t k = 0; k < count_; ++k) {
        if (seq < r_[k].left) {
            break;
        }
        if (seq < r_[k].right) {
            return r_[k].right;
        }
    }
    return seq;
}

uint32_t tcp_sack_scoreboard::unsacked_run(seq_num seq, uint32_t len) const noexcept {
    for (std::size_t k = 0; k < count_; ++k) {
        if (seq < r_[k].left) {
            return std::min(len, distance(seq, r_[k].left));
        }
    }
    return len;
}

// ---- tcp_recv_queue ----

bool tcp_recv_queue::have_ring() noexcept {
    if (ring_ == nullptr) {
        ring_ = static_cast<tcp_rx_piece *>(pool_->take());
        head_ = 0;
    }
    return ring_ != nullptr;
}

void tcp_recv_queue::settle_ring() noexcept {
    if (count_ == 0 && ring_ != nullptr) {
        pool_->give(ring_);
        ring_ = nullptr;
        head_ = 0;
    }
}

void tcp_recv_queue::settle_ooo() noexcept {
    if (ooo_count_ == 0 && ooo_ != nullptr) {
        pool_->give(ooo_);
        ooo_ = nullptr;
    }
}

bool tcp_recv_queue::push(tcp_rx_piece p) noexcept {
    if (count_ == capacity || !have_ring()) {
        return false;
    }
    ring_[(head_ + count_) % capacity] = p;
    ++count_;
    bytes_ += p.len;
    return true;
}

std::size_t tcp_recv_queue::pop(std::span<tcp_rx_piece> out) noexcept {
    std::size_t n = 0;
    while (n < out.size() && count_ > 0) {
        out[n++] = ring_[head_];
        bytes_ -= ring_[head_].len;
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    settle_ring();
    return n;
}

tcp_recv_queue::ooo_result tcp_recv_queue::insert_ooo(seq_num seq, tcp_rx_piece p,
                                                      bool fin) noexcept {
    if (fin) {
        ooo_fin_ = seq + static_cast<int32_t>(p.len);
        ooo_fin_valid_ = true;
    }
    if (p.len == 0) {
        rte_pktmbuf_free(p.m);
        return fin ? ooo_result::inserted : ooo_result::duplicate;
    }
    seq_num end = seq + static_cast<int32_t>(p.len);
    // Nothing new: a stored piece covers it all. That piece holds the data
    // that "triggered this ACK" (RFC 2018 §4): its block goes first.
    for (std::size_t i = 0; i < ooo_count_; ++i) {
        if (ooo_[i].seq <= seq && ooo_[i].seq + static_cast<int32_t>(ooo_[i].p.len) >= end) {
            last_seq_ = ooo_[i].seq;
            rte_pktmbuf_free(p.m);
            return ooo_result::duplicate;
        }
    }
    // Remove the stored pieces the new one covers entirely.
    std::size_t w = 0;
    for (std::size_t i = 0; i < ooo_count_; ++i) {
        ooo_entry &e = ooo_[i];
        const seq_num e_end = e.seq + static_cast<int32_t>(e.p.len);
        if (e.seq >= seq && e_end <= end) {
            rte_pktmbuf_free(e.p.m);
            continue;
        }
        ooo_[w++] = e;
    }
    for (std::size_t i = w; i < ooo_count_; ++i) {
        ooo_[i] = ooo_entry{};
    }
    ooo_count_ = w;
    // Position: the first stored piece starting after seq.
    std::size_t pos = 0;
    while (pos < ooo_count_ && ooo_[pos].seq <= seq) {
        ++pos;
    }
    if (pos > 0) {  // the predecessor overlaps the front
        const ooo_entry &prev = ooo_[pos - 1];
        const seq_num prev_end = prev.seq + static_cast<int32_t>(prev.p.len);
        if (prev_end >= end) {
            rte_pktmbuf_free(p.m);
            return ooo_result::duplicate;
        }
        if (prev_end > seq) {
            const uint32_t cut = distance(seq, prev_end);
            p.off += cut;
            p.len -= cut;
            seq = prev_end;
        }
    }
    if (pos < ooo_count_ && ooo_[pos].seq < end) {  // the successor overlaps the back
        p.len = distance(seq, ooo_[pos].seq);
        end = ooo_[pos].seq;
    }
    ooo_entry n{seq, p, nullptr};
    n.tail = cut_to_piece(n.p);
    last_seq_ = seq;
    // Coalesce: chain onto the predecessor that ends where this begins, then
    // the successor that begins where this ends onto the result.
    if (pos > 0 && ooo_[pos - 1].seq + static_cast<int32_t>(ooo_[pos - 1].p.len) == seq &&
        join(ooo_[pos - 1], n)) {
        if (pos < ooo_count_ && ooo_[pos].seq == end && join(ooo_[pos - 1], ooo_[pos])) {
            for (std::size_t i = pos + 1; i < ooo_count_; ++i) {
                ooo_[i - 1] = ooo_[i];
            }
            ooo_[--ooo_count_] = ooo_entry{};
        }
        return ooo_result::inserted;
    }
    if (pos < ooo_count_ && ooo_[pos].seq == end && join(n, ooo_[pos])) {
        ooo_[pos] = n;
        return ooo_result::inserted;
    }
    if (ooo_count_ == ooo_capacity) {
        rte_pktmbuf_free(n.p.m);
        return ooo_result::full;
    }
    if (ooo_ == nullptr && (ooo_ = static_cast<ooo_entry *>(pool_->take())) == nullptr) {
        rte_pktmbuf_free(n.p.m);
        return ooo_result::full;
    }
    for (std::size_t i = ooo_count_; i > pos; --i) {
        ooo_[i] = ooo_[i - 1];
    }
    ooo_[pos] = n;
    ++ooo_count_;
    return ooo_result::inserted;
}

bool tcp_recv_queue::join(ooo_entry &a, ooo_entry &b) noexcept {
    if (a.tail == nullptr || b.tail == nullptr ||
        uint32_t{a.p.m->nb_segs} + b.p.m->nb_segs > RTE_MBUF_MAX_NB_SEGS) {
        return false;
    }
    // As rte_pktmbuf_chain(), without its walk to the last segment.
    a.tail->next = b.p.m;
    a.p.m->nb_segs = static_cast<uint16_t>(a.p.m->nb_segs + b.p.m->nb_segs);
    a.p.m->pkt_len += b.p.m->pkt_len;
    b.p.m->pkt_len = b.p.m->data_len;
    b.p.m->nb_segs = 1;
    a.p.len += b.p.len;
    a.tail = b.tail;
    b = ooo_entry{};
    return true;
}

seq_num tcp_recv_queue::drain(seq_num rcv_nxt, bool &fin) noexcept {
    fin = false;
    std::size_t done = 0;
    while (done < ooo_count_ && ooo_[done].seq <= rcv_nxt) {
        ooo_entry &e = ooo_[done];
        const seq_num e_end = e.seq + static_cast<int32_t>(e.p.len);
        if (e_end <= rcv_nxt) {
            rte_pktmbuf_free(e.p.m);
        } else {
            if (count_ == capacity || !have_ring()) {
                break;
            }
            const uint32_t cut = distance(e.seq, rcv_nxt);
            e.p.off += cut;
            e.p.len -= cut;
            (void)push(e.p);
            rcv_nxt = e_end;
        }
        ++done;
    }
    if (done > 0) {
        for (std::size_t i = done; i < ooo_count_; ++i) {
            ooo_[i - done] = ooo_[i];
        }
        for (std::size_t i = ooo_count_ - done; i < ooo_count_; ++i) {
            ooo_[i] = ooo_entry{};
        }
        ooo_count_ -= done;
        settle_ooo();
    }
    if (ooo_fin_valid_ && ooo_fin_ == rcv_nxt) {
        fin = true;
        ooo_fin_valid_ = false;
    }
    return rcv_nxt;
}

std::size_t tcp_recv_queue::sack_blocks(std::span<tcp_sack_block> out) const noexcept {
    if (out.empty() || ooo_count_ == 0) {
        return 0;
    }
    // Merge adjacent pieces into blocks, in sequence order.
    std::array<tcp_sack_block, ooo_capacity> all{};
    std::size_t nb = 0;
    std::size_t recent = 0;
    for (std::size_t i = 0; i < ooo_count_; ++i) {
        const seq_num s = ooo_[i].seq;
        const seq_num e = s + static_cast<int32_t>(ooo_[i].p.len);
        if (nb > 0 && all[nb - 1].right == s) {
            all[nb - 1].right = e;
        } else {
            all[nb++] = tcp_sack_block{s, e};
        }
        if (s <= last_seq_ && last_seq_ < e) {
            recent = nb - 1;
        }
    }
    std::size_t n = 0;
    out[n++] = all[recent];
    for (std::size_t i = 0; i < nb && n < out.size(); ++i) {
        if (i != recent) {
            out[n++] = all[i];
        }
    }
    return n;
}

void tcp_recv_queue::clear_ooo() noexcept {
    for (std::size_t i = 0; i < ooo_count_; ++i) {
        rte_pktmbuf_free(ooo_[i].p.m);
    }
    ooo_count_ = 0;
    settle_ooo();
    ooo_fin_valid_ = false;
}

void tcp_recv_queue::clear() noexcept {
    clear_ooo();
    while (count_ > 0) {
        rte_pktmbuf_free(ring_[head_].m);
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    settle_ring();
    head_ = 0;
    bytes_ = 0;
}

}  // namespace ferry::net
