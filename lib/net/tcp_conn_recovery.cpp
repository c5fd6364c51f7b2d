// tcp_conn's loss recovery as a sender: RFC 6675 SACK-based recovery (the
// scoreboard's updates, DupAcks and the entry into recovery, the hole
// retransmissions), RACK-TLP (RFC 8985: the per-segment records of
// tcp_rack.h, lost marks, the reordering timer, the tail loss probe), the
// sending rate in recovery (PRR, RFC 6937: tcp_prr.h), D-SACK (RFC 2883) and
// the undo of a spurious recovery (RFC 3708) or timeout (F-RTO, RFC 5682; both
// tcp_undo.h), and NewReno's head retransmission. The RFC 9293 state machine
// calls in here (tcp_conn.cpp); output() asks what to retransmit and how much
// may go.
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

void tcp_conn::note_delivery(uint32_t n, uint64_t now) noexcept {
    const uint32_t outstanding = distance(snd_.una, snd_.max);
    const uint32_t sacked = sack_sb_.sacked_bytes();
    const uint32_t sent = snd_.max >= snd_data_ ? distance(snd_data_, snd_.max) : 0;
    const uint8_t ev =
        cc_.on_delivery(cc_delivery{.acked = n,
                                    .in_flight = outstanding > sacked ? outstanding - sacked : 0,
                                    .now_ns = now,
                                    .app_limited = sq_.bytes() <= sent});
    if ((ev & bbr_event::full_pipe) != 0) {
        ctr_.bbr_full_pipe.inc();
    }
    if ((ev & bbr_event::probe_rtt) != 0) {
        ctr_.bbr_probe_rtt.inc();
    }
    if ((ev & bbr_event::aggregation) != 0) {
        ctr_.bbr_ack_aggregation.inc();
    }
}

void tcp_conn::sack_on_ack(const tcp_repr &h, bool advanced, bool dup, uint64_t now) noexcept {
    // RFC 6675 §5: "Upon the receipt of any ACK containing SACK information,
    // the scoreboard MUST be updated via the Update () routine".
    const seq_num frto_point = undo_.frto_recovery_point();
    const bool frto = undo_.frto_pending();
    const uint32_t below_before = frto ? sack_sb_.sacked_below(frto_point) : 0;
    const uint32_t newly_sacked = take_sack_blocks(h);
    // RFC 6937 §2 DeliveredData, taken on every ACK: the one that starts a
    // recovery is that recovery's first.
    const uint32_t delivered = prr_.delivered(snd_.una, sack_sb_.sacked_bytes());
    // tcp_cc::on_ack() ended the recovery on a full ACK ("the cumulative ACK
    // covers RecoveryPoint"). Paced by PRR, it ends with cwnd = ssthresh
    // (tcp_cc::exit_recovery_at_ssthresh()), not RFC 6582's deflation.
    const bool exiting = prr_.active() && !cc_.in_sack_recovery();
    if (exiting) {
        prr_.stop();
        if (cfg_.prr) {
            cc_.exit_recovery_at_ssthresh();
        }
    }
    if (delivered > 0) {
        note_delivery(delivered, now);
    }
    const bool dsack = take_dsack(h, exiting);
    if (frto) {
        frto_on_ack(advanced, sack_sb_.sacked_below(frto_point) > below_before);
    }
    // An ACK that SACKs new octets is a DupAck (§2) whatever else it does;
    // a duplicate whose only news is a D-SACK is not (as Linux's tcp_ack()
    // does not count one): it reports a segment that arrived twice, no loss.
    dup = (dup && !dsack) || newly_sacked > 0;
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
    const bool recovering = cc_.in_sack_recovery();
    rack_.on_ack(snd_.una, sack_sb_, now);
    rack_detect(now, delivered);
    if (recovering) {
        // In recovery: (B) the scoreboard is updated; PRR's sndcnt for this
        // ACK (RFC 6937 §3), then output() re-runs SetPipe and (C), RACK's
        // lost segments first. An ACK that delivers nothing (a window update,
        // a D-SACK alone) leaves PRR's limit as it was: PRR-SSRB would let
        // it send a segment for nothing (RFC 9937 and Linux's
        // tcp_cwnd_reduction() skip such ACKs).
        if (delivered > 0) {
            prr_on_ack(delivered);
        }
        return;
    }
    if (!dup || cc_.in_recovery()) {
        return;  // (or RACK's loss began a recovery just now)
    }
    // "(1) If DupAcks >= DupThresh, go to step (4). (2) If DupAcks < DupThresh
    // but IsLost (HighACK + 1) returns true ... go to step (4)." Otherwise
    // "(3)": output() sends new data while cwnd - pipe >= 1 SMSS. Not while
    // going back after an RTO (SND.NXT < SND.MAX): that goes on.
    if (sack_dupacks_ < tcp_sack_scoreboard::dup_thresh && !sack_sb_.is_lost(snd_.una, snd_mss_)) {
        return;
    }
    (void)enter_sack_recovery(now, delivered);
}

bool tcp_conn::take_dsack(const tcp_repr &h, bool exiting) noexcept {
    const std::span<const tcp_sack_block> blocks = h.options.sack_blocks();
    const bool dsack = is_dsack(blocks, h.ack);
    bool probe = false;
    if (dsack) {
        ctr_.dsacks_received.inc();
        const tcp_sack_block &b = blocks[0];
        if (undo_.on_dsack(b.left, b.right)) {
            // RFC 3708: every retransmission of the episode arrived as a
            // duplicate, so nothing was lost: the window goes back to what it
            // was before the recovery (Linux's tcp_try_undo_dsack()), which
            // ends if it still runs.
            ctr_.dsack_undos.inc();
            cc_.undo(undo_.prior_cwnd(), undo_.prior_ssthresh(), undo_.marker() - 1);
            prr_.stop();
        }
        // A duplicate of the tail loss probe's segment says that the probe
        // was not needed, not that segments were reordered: it does not grow
        // the reordering window (as Linux's tcp_dsack_seen()).
        probe = tlp_out_ && b.right == tlp_end_;
    }
    // RFC 8985 §6.2 step 4, on every ACK.
    if (rack_.update_reo_wnd(snd_.una, snd_.nxt, dsack && !probe, exiting)) {
        ctr_.reo_wnd_grown.inc();
    }
    return dsack;
}

void tcp_conn::prr_on_ack(uint32_t delivered) noexcept {
    if (cfg_.prr && prr_.active()) {
        (void)prr_.on_ack(delivered, send_pipe(), cc_.ssthresh(), snd_mss_, snd_.max);
    }
}

uint32_t tcp_conn::send_pipe() const noexcept {
    uint32_t pipe = sack_pipe();
    if (cc_.in_sack_recovery()) {
        // What RACK knows is lost is not in the network (RFC 8985 §9.2):
        // segments marked lost, and the originals of those already resent
        // (not only while some are left to resend, or pipe would jump back
        // up by the originals once the last one went).
        pipe -= std::min(pipe, rack_.lost_in_pipe(snd_.una, sack_sb_, rxt_high_, snd_mss_));
    }
    return pipe;
}

void tcp_conn::frto_on_ack(bool advanced, bool sacked_below) noexcept {
    switch (undo_.frto_on_ack(snd_.una, advanced, sacked_below)) {
        case tcp_undo::frto_action::send_new: {
            // RFC 5682 §3 step 2b: "up to two new (previously unsent)
            // segments" instead of the rest of the go-back, cwnd aside
            // (limited_tx_ is what may go beyond it). Without new data to
            // send, or the window to send it in, the conventional recovery
            // goes on.
            const uint32_t off = distance(snd_data_, snd_.max);
            const uint32_t avail = sq_.bytes() > off ? sq_.bytes() - off : 0;
            const uint32_t in_flight = distance(snd_.una, snd_.max);
            if (avail == 0 || snd_.wnd <= in_flight) {
                undo_.frto_cancel();
                return;
            }
            snd_.nxt = snd_.max;
            const uint32_t want = in_flight + 2u * snd_mss_;
            limited_tx_ = want > cc_.cwnd() ? want - cc_.cwnd() : 0;
            return;
        }
        case tcp_undo::frto_action::go_back:
            // Step 3b: the timeout was real; the unacknowledged data goes
            // again from SND.UNA (what is SACKed skipped), in slow start.
            snd_.nxt = snd_.una;
            limited_tx_ = 0;
            return;
        case tcp_undo::frto_action::spurious:
            // Step 3a: nothing was lost. The response is undone as a
            // spurious recovery's (RFC 4015's restoring response, Linux's
            // tcp_try_undo_loss()); the segments not resent are in flight.
            ctr_.frto_undos.inc();
            cc_.undo(undo_.prior_cwnd(), undo_.prior_ssthresh(), snd_.una - 1);
            limited_tx_ = 0;
            return;
        case tcp_undo::frto_action::none:
            return;
    }
}

void tcp_conn::recovery_on_rto() noexcept {
    // RFC 6675 §5.1: recovery ends (tcp_cc) and no new one starts before the
    // cumulative ACK reaches SND.MAX. The SACK information "may be kept", but
    // the peer may have reneged on it (RFC 2018 §8): cleared, and the ranges
    // SACKed from here on are what the go-back skips.
    sack_sb_.clear();
    sack_dupacks_ = 0;
    rxt_high_ = snd_.una;
    // RFC 8985 §6.3: everything outstanding goes again; so do its records.
    rack_.clear();
    pto_at_ = never;
    tlp_out_ = false;
    // No PRR outside fast recovery; the go-back resends what a recovery
    // resent, so its D-SACKs could no longer tell a spurious recovery.
    prr_.stop();
    // RFC 5682 §3 step 1: F-RTO for the first timeout of a flight outside
    // any recovery ("If RecoveryPoint is larger than or equal to SND.UNA, do
    // not enter step 2"), with the window the timeout is about to cut.
    if (sack_ok_ && cfg_.frto && retries_ == 1 && snd_.una > cc_.recover()) {
        undo_.frto_start(snd_.una, snd_.max, cc_.cwnd(), cc_.ssthresh());
    } else {
        undo_.cancel();
    }
}

bool tcp_conn::enter_sack_recovery(uint64_t now, uint32_t delivered) noexcept {
    if (snd_.nxt != snd_.max) {
        return false;  // going back after an RTO
    }
    const uint32_t prior_cwnd = cc_.cwnd();
    const uint32_t prior_ssthresh = cc_.ssthresh();
    const uint32_t flight = distance(snd_.una, snd_.max);
    // "(4.1) RecoveryPoint = HighData ... (4.2) ssthresh = cwnd = (FlightSize
    // / 2)" (tcp_cc, by the algorithm). False: an RTO or the previous
    // episode's RecoveryPoint is not yet acknowledged (§5.1).
    if (!cc_.on_sack_recovery(snd_.una, snd_.max, flight)) {
        return false;
    }
    ctr_.sack_recovery_episodes.inc();
    ctr_.fast_retransmits.inc();
    limited_tx_ = 0;
    // What the episode that just ended resent may still be on its way: this
    // one begins on the ACK that took SND.UNA past that one's RecoveryPoint,
    // often with the holes it resent above it. With RACK, which marks a lost
    // retransmission lost (tcp_rack.h), HighRxt carries over, so that (4.3)
    // and NextSeg's rule (1) pass over the copies in flight. (Until
    // 2026-12-05 HighRxt restarted at SND.UNA and both resent them at once:
    // on a lossy bottleneck with BBR's window, five of six retransmissions
    // were spurious, and about half with CUBIC's on the af_packet bed.)
    const bool carried = cfg_.rack && rxt_high_ > snd_.una;
    if (!carried) {
        rxt_high_ = snd_.una;
    }
    // The episode D-SACKs may show to have been spurious (tcp_undo.h).
    undo_.start(snd_.una, prior_cwnd, prior_ssthresh);
    // RFC 6937 §3 "At the beginning of recovery": RecoverFS = snd.nxt -
    // snd.una; the ACK that got here is the first of the recovery, its
    // sndcnt taken before the (4.3) retransmission, which it pays for (in
    // prr_out). That retransmission goes even when sndcnt is 0, as RFC 9937
    // and Linux's tcp_cwnd_reduction() force the fast retransmit.
    prr_.start(flight, snd_.max);
    if (cfg_.prr) {
        ctr_.prr_episodes.inc();
    }
    prr_on_ack(delivered);
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
    if (carried && start < rxt_high_ && !rack_lost) {
        ctr_.rxt_in_flight_kept.inc();  // resent by the last episode; RACK watches that copy
        return true;
    }
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
        prr_.on_retransmit(sent);  // RFC 6937 §3: prr_out
        undo_.on_retransmit(start, start + static_cast<int32_t>(sent));
    }
    return sent;
}

uint32_t tcp_conn::sack_pipe() const noexcept {
    return sack_sb_.pipe(snd_.una, snd_.max, cc_.in_sack_recovery() ? rxt_high_ : snd_.una,
                         snd_mss_);
}

// ---------------------------------------------------------------------------
// RACK-TLP (RFC 8985)

void tcp_conn::rack_detect(uint64_t now, uint32_t delivered) noexcept {
    const uint32_t lost = rack_.detect_loss(now, rtt_.srtt_ns(), cc_.in_recovery(), sack_dupacks_);
    if (lost == 0) {
        return;
    }
    ctr_.rack_lost.inc(lost);
    // RFC 8985 §6.2 step 5 / RFC 6675 §5: a loss found starts recovery, as
    // DupThresh DupAcks would have.
    if (!cc_.in_recovery()) {
        (void)enter_sack_recovery(now, delivered);
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
    if (cfg_.tlp_new_data && !cc_.in_recovery() && avail > 0 && room > 0) {
        // §7.3: "If a previously unsent segment exists AND the receive window
        // allows new data to be sent: transmit that new segment" (cwnd aside;
        // only with tlp_new_data: see tcp_conn_config).
        const uint32_t len = emit_segment(tcp_flag::ack, snd_.max, off,
                                          std::min({avail, room, uint32_t{snd_mss_}}), now);
        snd_.nxt = snd_.max = snd_.max + static_cast<int32_t>(len);
        tlp_end_ = snd_.max;
    } else {
        // "Otherwise, retransmit the last segment" (outside recovery; always
        // without tlp_new_data, so that the peer answers at once); in
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

// ---- D-SACK as a receiver (RFC 2883) ----

void tcp_conn::note_duplicate(seq_num left, seq_num right) noexcept {
    // §4: "each duplicate contiguous sequence of data received is reported in
    // at most one D-SACK block", the first of the ACK that answers it; a
    // later duplicate replaces one not yet reported. Without SACK the peer
    // would not understand it.
    if (!sack_ok_ || !cfg_.dsack || !(left < right)) return;
    dsack_ = tcp_sack_block{left, right};
    dsack_owed_ = true;
    ack_now_ = true;  // its sender learns now that the retransmission was not needed
}

void tcp_conn::fill_sack(tcp_options &o, std::size_t room) const noexcept {
    if (!sack_ok_ || room == 0 || (!dsack_owed_ && rq_.ooo_empty())) return;
    std::size_t n = 0;
    if (dsack_owed_) o.sack[n++] = dsack_;
    // §4: the block that holds a duplicate of out-of-order data comes next:
    // the queue puts the block of the segment it received last first.
    n += rq_.sack_blocks(std::span(o.sack).subspan(n, room - n));
    o.sack_count = static_cast<uint8_t>(n);
}

}  // namespace ferry::net
