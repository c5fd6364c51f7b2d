#include "ferry/net/tcp_rack.h"

#include <algorithm>

namespace ferry::net {

namespace {

// RACK_sent_after (RFC 8985 §6.2): whether (t1, seq1) was sent after (t2, seq2).
bool sent_after(uint64_t t1, seq_num seq1, uint64_t t2, seq_num seq2) noexcept {
    return t1 > t2 || (t1 == t2 && seq1 > seq2);
}

// A fourth record flag, next to tcp_rack.h's f_retransmitted, f_lost and
// f_done: a retransmission that superseded a record marked lost. Its
// original is known gone, which lost_in_pipe() tells SetPipe.
constexpr uint8_t f_resends_lost = 8;

}  // namespace


bool tcp_rack::on_transmit(seq_num start, seq_num end, uint64_t now,
                           bool retransmission) noexcept {
    if (!(start < end)) return true;
    bool resends_lost = false;
    if (retransmission) {
        // The octets' earlier transmissions are replaced by this one.
        for (std::size_t i = 0; i < n_; ++i) {
            record &r = at(i);
            if ((r.flags & f_done) != 0) continue;
            const seq_num r_end = r.start + static_cast<int32_t>(r.len);
            if (r.start < end && start < r_end) {
                // The original stays known gone through further resends.
                resends_lost = resends_lost || (r.flags & (f_lost | f_resends_lost)) != 0;
                finish(r);
            }
        }
    }
    // RACK_sent_after (§6.2) breaks a tie in transmission time by sequence
    // number: right for a burst of new data, wrong for a segment sent in the
    // same tick of `now` after a higher one (a retransmission after new
    // data, as one poll handles a burst of ACKs). The delivery of the higher
    // one would make it look sent before, and with a zero reordering window
    // (recovery) lost at once. Such a segment is stamped 1 ns after the one
    // before it in the ring (which is in transmission order), so that
    // stamps and RACK_sent_after agree with the order of transmission.
    uint64_t xmit = now;
    if (n_ > 0) {
        const record &last = at(n_ - 1);
        if (!sent_after(now, end, last.xmit, last.start + static_cast<int32_t>(last.len))) {
            xmit = last.xmit + 1;
        }
    }
    if (ring_ == nullptr) {
        ring_ = static_cast<record *>(pool_->take());
        head_ = n_ = 0;
        if (ring_ == nullptr) {
            ++unrecorded_;
            return false;
        }
    }
    if (n_ == capacity) compact();
    if (n_ == capacity || distance(start, end) >= (1u << 24)) {
        ++unrecorded_;
        return false;
    }
    record &r = ring_[(head_ + n_) % capacity];
    r.start = start;
    r.len = distance(start, end);
    r.flags = static_cast<uint8_t>((retransmission ? f_retransmitted : 0) |
                                   (resends_lost ? f_resends_lost : 0));
    r.xmit = xmit;
    ++n_;
    if (retransmission) ++nrtx_;
    return true;
}

void tcp_rack::finish(record &r) noexcept {
    if ((r.flags & f_lost) != 0) --nlost_;
    if ((r.flags & (f_retransmitted | f_done)) == f_retransmitted) --nrtx_;
    r.flags = static_cast<uint8_t>((r.flags & ~f_lost) | f_done);
}

void tcp_rack::trim() noexcept {
    while (n_ > 0 && (ring_[head_].flags & f_done) != 0) {
        head_ = (head_ + 1) % capacity;
        --n_;
    }
    if (n_ == 0 && ring_ != nullptr) {
        pool_->give(ring_);
        ring_ = nullptr;
        head_ = 0;
    }
}

void tcp_rack::compact() noexcept {
    std::size_t w = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        const record r = at(i);
        if ((r.flags & f_done) == 0) ring_[(head_ + w++) % capacity] = r;
    }
    n_ = w;
}

void tcp_rack::on_ack(seq_num una, const tcp_sack_scoreboard &sb, uint64_t now) noexcept {
    // Without SACKed data or retransmissions the records are in sequence
    // order and only a cumulative ACK delivers: a prefix of them, so the
    // walk stops at the first one still outstanding (no loss: O(acked)).
    const bool prefix_only = sb.empty() && nrtx_ == 0;
    for (std::size_t i = 0; i < n_; ++i) {
        record &r = at(i);
        if ((r.flags & f_done) != 0) continue;
        const seq_num end = r.start + static_cast<int32_t>(r.len);
        const bool delivered = end <= una || (sb.is_sacked(r.start) && sb.skip_sacked(r.start) >= end);
        if (!delivered) {
            if (prefix_only) break;
            continue;
        }
        // Step 2: the RTT of this delivery, unless it may answer an earlier
        // transmission of a retransmitted segment (shorter than the path's
        // minimum: the ACK was for the original).
        const uint64_t rtt = now >= r.xmit ? now - r.xmit : 0;
        const bool retransmitted = (r.flags & f_retransmitted) != 0;
        if (!retransmitted || rtt >= min_rtt_) {
            if (!retransmitted) min_rtt_ = std::min(min_rtt_, rtt);
            rack_rtt_ = rtt;
            if (!have_rack_ || sent_after(r.xmit, end, rack_xmit_, rack_end_)) {
                rack_xmit_ = r.xmit;
                rack_end_ = end;
                have_rack_ = true;
            }
        }
        // Step 3: a segment delivered below one delivered earlier, never
        // retransmitted, was reordered.
        if (have_fack_ && end < fack_ && !retransmitted) reord_ = true;
        if (!have_fack_ || end > fack_) {
            fack_ = end;
            have_fack_ = true;
        }
        finish(r);
    }
    trim();
}

bool tcp_rack::update_reo_wnd(seq_num una, seq_num snd_nxt, bool dsack,
                              bool exiting_recovery) noexcept {
    // Step 4: "If RACK.dsack_round is not None AND SND.UNA >=
    // RACK.dsack_round: RACK.dsack_round = None".
    if (have_dsack_round_ && una >= dsack_round_) have_dsack_round_ = false;
    // "Grow the reordering window per round that sees DSACK. Reset the
    // window after 16 DSACK-free recoveries".
    if (!have_dsack_round_ && dsack) {
        have_dsack_round_ = true;
        dsack_round_ = snd_nxt;
        const bool grew = reo_wnd_mult_ < UINT8_MAX;
        if (grew) ++reo_wnd_mult_;
        reo_wnd_persist_ = 16;
        return grew;
    }
    // "Else if exiting Fast or RTO recovery: RACK.reo_wnd_persist -= 1; If
    // RACK.reo_wnd_persist <= 0: RACK.reo_wnd_mult = 1".
    if (exiting_recovery) {
        if (reo_wnd_persist_ > 0) --reo_wnd_persist_;
        if (reo_wnd_persist_ == 0) reo_wnd_mult_ = 1;
    }
    return false;
}

uint32_t tcp_rack::detect_loss(uint64_t now, uint64_t srtt_ns, bool in_recovery,
                               uint32_t dup_acks) noexcept {
    reo_at_ = never;
    if (!have_rack_ || n_ == 0) return 0;
    // Step 4: RACK.reo_wnd = min(RACK.reo_wnd_mult * RACK.min_RTT / 4, SRTT),
    // or 0 while no reordering was seen and the sender is recovering or past
    // DupThresh.
    uint64_t reo_wnd = 0;
    if (reord_ || (!in_recovery && dup_acks < tcp_sack_scoreboard::dup_thresh)) {
        const uint64_t scaled = min_rtt_ == UINT64_MAX ? 0 : min_rtt_ * reo_wnd_mult_ / 4;
        reo_wnd = srtt_ns != 0 ? std::min(scaled, srtt_ns) : scaled;
    }
    // Step 5.
    uint32_t newly = 0;
    uint64_t wait = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        record &r = at(i);
        // The ring is in transmission order: past RACK.xmit_ts, nothing
        // later can have been sent before the delivered segment.
        if (r.xmit > rack_xmit_) break;
        if ((r.flags & (f_done | f_lost)) != 0) continue;
        const seq_num end = r.start + static_cast<int32_t>(r.len);
        if (!sent_after(rack_xmit_, rack_end_, r.xmit, end)) continue;
        const uint64_t due = r.xmit + rack_rtt_ + reo_wnd;
        if (due <= now) {
            r.flags = static_cast<uint8_t>(r.flags | f_lost);
            ++nlost_;
            newly += r.len;
        } else {
            wait = std::max(wait, due - now);
        }
    }
    if (wait != 0) reo_at_ = now + wait;
    return newly;
}

bool tcp_rack::next_lost(seq_num una, const tcp_sack_scoreboard &sb, seq_num &start,
                         seq_num &end) const noexcept {
    bool found = false;
    for (std::size_t i = 0; i < n_ && nlost_ != 0; ++i) {
        const record &r = at(i);
        if ((r.flags & f_lost) == 0 || (r.flags & f_done) != 0) continue;
        const seq_num r_end = r.start + static_cast<int32_t>(r.len);
        if (r_end <= una) continue;
        seq_num s = sb.skip_sacked(seq_max(r.start, una));
        if (!(s < r_end)) continue;
        const seq_num e = s + static_cast<int32_t>(sb.unsacked_run(s, distance(s, r_end)));
        if (!(s < e)) continue;
        if (!found || s < start) {
            start = s;
            end = e;
            found = true;
        }
    }
    return found;
}

uint32_t tcp_rack::lost_in_pipe(seq_num una, const tcp_sack_scoreboard &sb, seq_num high_rxt,
                                uint32_t smss) const noexcept {
    if (nlost_ == 0 && nrtx_ == 0) return 0;  // f_resends_lost marks retransmissions only
    uint32_t n = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        const record &r = at(i);
        if ((r.flags & f_done) != 0) continue;
        const bool lost = (r.flags & f_lost) != 0;
        if (!lost && (r.flags & f_resends_lost) == 0) continue;
        const seq_num r_end = r.start + static_cast<int32_t>(r.len);
        for (seq_num s = seq_max(r.start, una); s < r_end;) {
            s = sb.skip_sacked(s);
            if (!(s < r_end)) break;
            const uint32_t run = sb.unsacked_run(s, distance(s, r_end));
            // SetPipe: one for an octet not IsLost (the original
            // transmission), one more below HighRxt (the retransmission).
            // A lost record's latest transmission is gone: both go. A
            // resend of a segment RACK found lost: the original is gone
            // (as if IsLost), the resend is still in the network.
            const uint32_t not_lost = sb.is_lost(s, smss) ? 0u : 1u;
            const uint32_t per = lost ? not_lost + (s < high_rxt ? 1u : 0u) : not_lost;
            n += run * per;
            s += static_cast<int32_t>(run);
        }
    }
    return n;
}

void tcp_rack::clear() noexcept {
    if (ring_ != nullptr) pool_->give(ring_);
    ring_ = nullptr;
    head_ = n_ = nlost_ = nrtx_ = 0;
    reo_at_ = never;
}

uint64_t tcp_rack::pto(uint64_t srtt_ns, uint32_t flight, uint32_t smss, uint64_t rto_ns) noexcept {
    if (srtt_ns == 0) return std::min<uint64_t>(1'000'000'000, rto_ns);
    uint64_t t = 2 * srtt_ns;
    // One segment's ACK may be delayed by up to WCDelAckT (§7.2); a longer
    // flight's last ACK may wait for the peer's timer too, so it gets the
    // allowance Linux gives it (TCP_TIMEOUT_MIN), not a bare 2 * SRTT that
    // a LAN's tens of microseconds would make fire on every delayed ACK.
    t += flight <= smss ? worst_case_delayed_ack_ns : min_probe_allowance_ns;
    return std::min(t, rto_ns);
}

}  // namespace ferry::net
