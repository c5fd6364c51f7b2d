#include "ferry/net/tcp_conn_queues.h"

#include <algorithm>

namespace ferry::net {

// ---- tcp_send_queue ----

uint32_t tcp_send_queue::push(rte_mbuf *chain) noexcept {
    if (chain == nullptr || chain->pkt_len == 0 || bytes_ >= limit_ || count_ == capacity) {
        return 0;
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
        e = entry{};
        head_ = (head_ + 1) % capacity;
        --count_;
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
        ring_[head_] = entry{};
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    head_ = 0;
    head_off_ = 0;
    bytes_ = 0;
}

// ---- tcp_recv_queue ----

bool tcp_recv_queue::push(tcp_rx_piece p) noexcept {
    if (count_ == capacity) {
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
        ring_[head_] = tcp_rx_piece{};
        head_ = (head_ + 1) % capacity;
        --count_;
    }
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
    if (ooo_count_ == ooo_capacity) {
        rte_pktmbuf_free(p.m);
        return ooo_result::full;
    }
    for (std::size_t i = ooo_count_; i > pos; --i) {
        ooo_[i] = ooo_[i - 1];
    }
    ooo_[pos] = ooo_entry{seq, p};
    ++ooo_count_;
    last_seq_ = seq;
    return ooo_result::inserted;
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
            if (count_ == capacity) {
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
        if (s == last_seq_) {
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
        ooo_[i] = ooo_entry{};
    }
    ooo_count_ = 0;
    ooo_fin_valid_ = false;
}

void tcp_recv_queue::clear() noexcept {
    clear_ooo();
    while (count_ > 0) {
        rte_pktmbuf_free(ring_[head_].m);
        ring_[head_] = tcp_rx_piece{};
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    head_ = 0;
    bytes_ = 0;
}

}  // namespace ferry::net
