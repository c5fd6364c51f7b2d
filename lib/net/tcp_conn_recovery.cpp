// tcp_conn's loss recovery as a sender: RFC 6675 SACK-based recovery (the
// scoreboard's updates, DupAcks and the entry into recovery, the hole
// retransmissions), RACK-TLP (RFC 8985: the per-segment records of
// tcp_rack.h, lost marks, the reordering timer, the tail loss probe) and
// NewReno's head retransmission. The RFC 9293 state machine calls in here
// (tcp_conn.cpp); output() asks what to retransmit.
#include <algorithm>

#include "ferry/net/tcp_conn.h"

namespace ferry::net {

uint32_t tcp_conn::take_sack_blocks(const tcp_repr &h) noexcept {
    uint32_t newly = 0;
    const uint32_t outstanding = distance(snd_.una, snd_.max);
    for (const tcp_sack_block &b : h.options.sack_blocks()) {
        ctr_.sack_blocks_received.inc();
        // Only octets we sent and the peer has not acknowledged cumulatively
        // can be SACKed, and not SND.UNA itself (the peer's RCV.NXT): SND.UNA
        // < left < right <= SND.MAX. A block ending at or below SND.UNA is a
        // D-SACK (RFC 2883 §4) or left over from an older ACK; one holding
        // SND.UNA says the peer dropped data it had (its RCV.NXT never stops
        // at or inside data it holds): nothing for the scoreboard either.
        const int32_t left = b.left - snd_.una;
        const int32_t right = b.right - snd_.una;
        if (left <= 0 || right <= left || static_cast<uint32_t>(right) > outstanding) {
            ctr_.sack_blocks_invalid.inc();
            continue;
        }
        bool overflow = false;
        newly += sack_sb_.add(b.left, b.right, overflow);
        if (overflow) {
            ctr_.sack_scoreboard_overflow.inc();
        }
    }
    return newly;
}

void tcp_conn::sack_on_ack(bool advanced, bool dup, uint64_t now) noexcept {
    // RFC 6675 §5: "If the incoming ACK is a cumulative acknowledgment, the
    // TCP MUST reset DupAcks to zero."
    if (advanced) {
        sack_dupacks_ = 0;
        // RFC 8985 §7.2: the probe's flight is answered; a new PTO may be armed.
        if (tlp_out_ && snd_.una >= tlp_end_) {
            tlp_out_ = false;
        }
        pto_restart_ = true;
    }
    // RFC 8985 §6.2 steps 2-5 on every ACK: RACK may find losses (a lost
    // retransmission, a loss with fewer than DupThresh segments after it)
    // that DupAcks cannot.
    if (dup) {
        ctr_.dup_acks.inc();
        if (!cc_.in_recovery()) {
            // "If the incoming ACK is a duplicate acknowledgment ... and the
            // TCP is not currently in loss recovery, the TCP MUST increase
            // DupAcks by one".
            ++sack_dupacks_;
        }
    }
    rack_.on_ack(snd_.una, sack_sb_, now);
    rack_detect(now);
    if (!dup || cc_.in_recovery()) {
        // In recovery: (B) the scoreboard is updated; output() re-runs
        // SetPipe and (C), RACK's lost segments first.
        return;
    }
    // "(1) If DupAcks >= DupThresh, go to step (4). (2) If DupAcks < DupThresh
    // but IsLost (HighACK + 1) returns true ... go to step (4)." Otherwise
    // "(3)": output() sends new data while cwnd - pipe >= 1 SMSS. Not while
    // going back after an RTO (SND.NXT < SND.MAX): that goes on.
    if (sack_dupacks_ < tcp_sack_scoreboard::dup_thresh && !sack_sb_.is_lost(snd_.una, snd_mss_)) {
        return;
    }
    (void)enter_sack_recovery(now);
}

bool tcp_conn::enter_sack_recovery(uint64_t now) noexcept {
    if (snd_.nxt != snd_.max) {
        return false;  // going back after an RTO
    }
    // "(4.1) RecoveryPoint = HighData ... (4.2) ssthresh = cwnd = (FlightSize
    // / 2)" (tcp_cc, by the algorithm). False: an RTO or the previous
    // episode's RecoveryPoint is not yet acknowledged (§5.1).
    if (!cc_.on_sack_recovery(snd_.una, snd_.max, distance(snd_.una, snd_.max))) {
        return false;
    }
    ctr_.sack_recovery_episodes.inc();
    ctr_.fast_retransmits.inc();
    limited_tx_ = 0;
    rxt_high_ = snd_.una;
    // "(4.3) Retransmit the first data segment presumed dropped -- the
    // segment starting with sequence number HighACK + 1. To prevent repeated
    // retransmission of the same data or a premature rto, set HighRxt to the
    // highest sequence number in the retransmitted segment." Up to the first
    // SACKed octet only. (4.4) SetPipe and (4.5) step (C) are output()'s.
    seq_num start;
    seq_num end;
    first_hole(start, end);
    // When RACK's mark began this recovery (rack_detect()), that hole is a
    // segment RACK found lost: counted in rack_retransmits as output()'s
    // resends of RACK's lost segments are. Asked before the retransmission,
    // whose record supersedes the lost one.
    seq_num lost_start;
    seq_num lost_end;
    const bool rack_lost = rack_.any_lost() &&
                           rack_.next_lost(snd_.una, sack_sb_, lost_start, lost_end) &&
                           lost_start == start;
    if (start < end && sack_retransmit(start, end, now) > 0 && rack_lost) {
        ctr_.rack_retransmits.inc();
    }
    return true;
}

void tcp_conn::first_hole(seq_num &start, seq_num &end) const noexcept {
    start = sack_sb_.skip_sacked(snd_.una);  // SND.UNA itself: never SACKed
    end = start + static_cast<int32_t>(std::min<uint32_t>(
                      sack_sb_.unsacked_run(start, distance(start, snd_.max)), snd_mss_));
}

uint32_t tcp_conn::sack_retransmit(seq_num start, seq_num end, uint64_t now, bool hole) noexcept {
    if (start < snd_data_) {
        return 0;  // not data (our SYN): never in a hole once ESTABLISHED
    }
    const uint32_t off = distance(snd_data_, start);
    const uint32_t data = sq_.bytes() > off ? std::min(distance(start, end), sq_.bytes() - off) : 0;
    // The FIN goes along when the range covers it.
    const bool fin =
        fin_queued_ && off + data == sq_.bytes() && snd_.max > fin_seq() && end > fin_seq();
    if (data == 0 && !fin) {
        return 0;
    }
    ctr_.retransmits.inc();
    if (hole) {
        ctr_.sack_retransmits.inc();
    }
    if (rtt_timing_ && rtt_seq_ >= start && rtt_seq_ < start + static_cast<int32_t>(data)) {
        rtt_timing_ = false;  // Karn: the timed segment was resent
    }
    const uint8_t flags = tcp_flag::ack | (fin ? tcp_flag::fin : 0);
    const uint32_t len = emit_segment(flags, start, off, data, now);
    const uint32_t sent = len + (fin && len == data ? 1 : 0);
    // "(C.2) If any of the data octets sent in (C.1) are below HighData,
    // HighRxt MUST be set to the highest sequence number of the retransmitted
    // segment".
    rxt_high_ = seq_max(rxt_high_, start + static_cast<int32_t>(sent));
    if (rtx_at_ == never) {
        arm_rtx(now);
    }
    if (cc_.in_recovery()) {
        pto_restart_ = true;  // arm_pto(): a probe if this one is lost and nothing follows
    }
    return sent;
}

uint32_t tcp_conn::sack_pipe() const noexcept {
    return sack_sb_.pipe(snd_.una, snd_.max, cc_.in_sack_recovery() ? rxt_high_ : snd_.una,
                         snd_mss_);
}

// ---------------------------------------------------------------------------
// RACK-TLP (RFC 8985)

void tcp_conn::rack_detect(uint64_t now) noexcept {
    const uint32_t lost = rack_.detect_loss(now, rtt_.srtt_ns(), cc_.in_recovery(), sack_dupacks_);
    if (lost == 0) {
        return;
    }
    ctr_.rack_lost.inc(lost);
    // RFC 8985 §6.2 step 5 / RFC 6675 §5: a loss found starts recovery, as
    // DupThresh DupAcks would have.
    if (!cc_.in_recovery()) {
        (void)enter_sack_recovery(now);
    }
}

void tcp_conn::on_rack_timer(uint64_t now) noexcept {
    // RFC 8985 §6.3: the reordering window of a segment passed.
    rack_.disarm();
    rack_detect(now);
    output(now);
}

void tcp_conn::arm_pto(uint64_t now) noexcept {
    // RFC 8985 §7.2: (re)start the PTO after new data went out or an ACK
    // advanced SND.UNA, with data outstanding and no probe unanswered.
    // RFC 8985 arms it only outside recovery; here also in recovery when
    // nothing more can be sent and no reordering timer runs, where a lost
    // retransmission has no later delivery to reveal it (the send queue, and
    // so the flight, is held at SND.UNA by the hole) and would otherwise
    // wait for the RTO.
    if (!pto_restart_ || !sack_ok_ || !cfg_.rack || !synchronized(state_)) {
        return;
    }
    pto_restart_ = false;
    pto_at_ = never;
    if (snd_.una == snd_.max || tlp_out_ || snd_.nxt != snd_.max || rack_.deadline() != never) {
        return;
    }
    if (!cc_.in_recovery() && !sack_sb_.empty()) {
        return;  // §7.2: SACKed data: RACK's timer and DupAcks cover it
    }
    const uint64_t at = now + tcp_rack::pto(rtt_.srtt_ns(), distance(snd_.una, snd_.max),
                                            snd_mss_, rtt_.rto_ns());
    if (at < rtx_at_) {
        pto_at_ = at;
    }
}

void tcp_conn::on_pto(uint64_t now) noexcept {
    pto_at_ = never;
    if (snd_.una == snd_.max || !synchronized(state_)) {
        return;
    }
    ctr_.tlp_probes.inc();
    tlp_out_ = true;
    tlp_end_ = snd_.max;
    const uint32_t off = distance(snd_data_, snd_.max);
    const uint32_t avail = sq_.bytes() > off ? sq_.bytes() - off : 0;
    const uint32_t in_flight = distance(snd_.una, snd_.max);
    const uint32_t room = snd_.wnd > in_flight ? snd_.wnd - in_flight : 0;
    if (!cc_.in_recovery() && avail > 0 && room > 0) {
        // §7.3: "If a previously unsent segment exists AND the receive window
        // allows new data to be sent: transmit that new segment" (cwnd aside).
        const uint32_t len = emit_segment(tcp_flag::ack, snd_.max, off,
                                          std::min({avail, room, uint32_t{snd_mss_}}), now);
        snd_.nxt = snd_.max = snd_.max + static_cast<int32_t>(len);
        tlp_end_ = snd_.max;
    } else {
        // "Otherwise, retransmit the last segment" (outside recovery); in
        // recovery the first outstanding octets instead, the retransmission
        // that nothing else can show lost.
        seq_num start = snd_.una;
        seq_num end = snd_.max;
        if (!cc_.in_recovery()) {
            const seq_num data_end = fin_queued_ && snd_.max > fin_seq() ? fin_seq() : snd_.max;
            start = seq_max(snd_.una, data_end - static_cast<int32_t>(snd_mss_));
        } else {
            first_hole(start, end);
        }
        if (start < end) {
            (void)sack_retransmit(start, end, now, false);
        }
    }
    // §7.3: "the sender MUST ... rearm the RTO timer".
    arm_rtx(now);
}

void tcp_conn::retransmit_head(uint64_t now) noexcept {
    // The first unacknowledged segment, SND.NXT unchanged.
    const uint32_t off = snd_.una >= snd_data_ ? distance(snd_data_, snd_.una) : 0;
    const uint32_t avail = sq_.bytes() > off ? sq_.bytes() - off : 0;
    const uint32_t len = std::min<uint32_t>(avail, snd_mss_);
    const bool fin = fin_queued_ && off + len == sq_.bytes() && snd_.max > fin_seq();
    if (len == 0 && !fin) {
        return;
    }
    ctr_.retransmits.inc();
    if (rtt_timing_ && rtt_seq_ < snd_.una + static_cast<int32_t>(len)) {
        rtt_timing_ = false;  // Karn: the timed segment was resent
    }
    uint8_t flags = tcp_flag::ack | (fin ? tcp_flag::fin : 0);
    (void)emit_segment(flags, snd_.una, off, len, now);
}

}  // namespace ferry::net
