// The TCP state machine. See tcp_conn.h for the RFCs and the choices made.
#include "ferry/net/tcp_conn.h"

#include <algorithm>
#include <array>

namespace ferry::net {

namespace {

constexpr uint32_t ts_option_len = 12;  // 10 bytes, NOP-padded (RFC 7323 Appendix A)

// RFC 6675 §2: "DupThresh ... the number of duplicate ACKs required to trigger
// a retransmission ... historically been 3" — the same 3 as RFC 5681's.
static_assert(tcp_sack_scoreboard::dup_thresh == tcp_cc::dup_ack_threshold);

// The shift that lets a 16-bit field carry `buf` (RFC 7323 §2.3: at most 14).
[[nodiscard]] uint8_t wscale_for(uint32_t buf) noexcept {
    uint8_t s = 0;
    while (s < tcp_options::max_window_shift && (buf >> s) > 0xffff) {
        ++s;
    }
    return s;
}

}  // namespace

tcp_conn::tcp_conn(const tcp_conn_config &cfg, const tcp_tuple &tuple, seq_num iss,
                   tcp_emit_fn emit, void *emit_ctx, tcp_counters &counters) noexcept
    : cfg_(cfg),
      tuple_(tuple),
      emit_(emit),
      emit_ctx_(emit_ctx),
      ctr_(counters),
      rtt_(cfg.rtt),
      cc_(cfg.cc, iss),
      rack_(cfg.blocks),
      sq_(cfg.snd_buf, cfg.blocks),
      rq_(cfg.blocks) {
    snd_.iss = iss;
    snd_.una = iss;
    snd_.nxt = iss;
    snd_.max = iss;
    snd_data_ = iss + 1;
    rcv_.wscale = cfg_.window_scaling ? wscale_for(cfg_.rcv_buf) : 0;
}

// ---------------------------------------------------------------------------
// State changes

void tcp_conn::set_state(tcp_state s, uint64_t now) noexcept {
    (void)now;
    if (s == state_) {
        return;
    }
    const tcp_state from = state_;
    state_ = s;
    ctr_.state_transitions.inc();
    if (trace_ != nullptr) {
        trace_(trace_ctx_, from, s);
    }
    switch (s) {
        case tcp_state::established:
            ctr_.conn_established.inc();
            break;
        case tcp_state::time_wait:
            ctr_.time_wait_entered.inc();
            break;
        case tcp_state::closed:
            ctr_.conn_closed.inc();
            break;
        default:
            break;
    }
}

void tcp_conn::enter_closed(tcp_close_reason why, uint64_t now) noexcept {
    close_reason_ = why;
    set_state(tcp_state::closed, now);
    events_ |= tcp_event::closed;
    rtx_at_ = persist_at_ = delack_at_ = tw_at_ = ka_at_ = pto_at_ = never;
    sq_.clear();
    rq_.clear_ooo();
    rack_.clear();
    if (why != tcp_close_reason::normal) {
        // RFC 9293 §3.10.7.4 second step: "all segment queues should be flushed".
        rq_.clear();
    }
}

void tcp_conn::enter_established(uint64_t now) noexcept {
    set_state(tcp_state::established, now);
    events_ |= tcp_event::connected | tcp_event::writable;
    // The congestion window starts from the effective MSS, known only now.
    cc_config c = cfg_.cc;
    c.smss = snd_mss_;
    cc_ = tcp_cc(c, snd_.iss);
    if (syn_retransmitted_) {
        rtt_.on_established_after_syn_timeout();
    }
    restart_keepalive(now);
    if (fin_queued_) {  // close() in SYN-RECEIVED: "queue for processing after entering
                        // ESTABLISHED"
        set_state(tcp_state::fin_wait_1, now);
    }
}

// ---------------------------------------------------------------------------
// User calls

bool tcp_conn::open_active(uint64_t now) noexcept {
    if (state_ != tcp_state::closed || close_reason_ != tcp_close_reason::none) {
        return false;
    }
    ctr_.conn_opened_active.inc();
    set_state(tcp_state::syn_sent, now);
    send_syn(now);
    snd_.nxt = snd_.iss + 1;
    snd_.max = snd_.nxt;
    arm_rtx(now);
    return true;
}

bool tcp_conn::open_passive(const tcp_repr &syn, uint64_t now) noexcept {
    if (state_ != tcp_state::closed || close_reason_ != tcp_close_reason::none ||
        !syn.has(tcp_flag::syn) || syn.has(tcp_flag::ack) || syn.has(tcp_flag::rst)) {
        return false;
    }
    ctr_.conn_opened_passive.inc();
    // RFC 9293 §3.10.7.2 LISTEN, third check: "Set RCV.NXT to SEG.SEQ+1, IRS is
    // set to SEG.SEQ ... ISS should be selected and a SYN segment sent of the
    // form: <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK>. SND.NXT is set to ISS+1 and
    // SND.UNA to ISS. The connection state should be changed to SYN-RECEIVED."
    rcv_.irs = syn.seq;
    rcv_.nxt = syn.seq + 1;
    peer_ts_ = syn.options.timestamps.has_value();
    peer_sack_ = syn.options.sack_permitted;
    peer_wscale_ = syn.options.window_shift.has_value();
    take_syn_options(syn.options, now);
    snd_.wnd = syn.window;  // a SYN's window is never scaled (RFC 7323 §2.2)
    snd_.max_wnd = snd_.wnd;
    snd_.wl1 = syn.seq;
    snd_.wl2 = snd_.iss;
    set_state(tcp_state::syn_received, now);
    send_syn(now);
    snd_.nxt = snd_.iss + 1;
    snd_.max = snd_.nxt;
    arm_rtx(now);
    return true;
}

uint32_t tcp_conn::send(rte_mbuf *chain, uint64_t now) noexcept {
    switch (state_) {
        case tcp_state::established:
        case tcp_state::close_wait:
        case tcp_state::syn_sent:
        case tcp_state::syn_received:
            break;
        default:
            return 0;
    }
    if (fin_queued_) {
        return 0;
    }
    const uint32_t n = sq_.push(chain);
    if (n == 0) {
        if (chain != nullptr && chain->pkt_len != 0) {
            ctr_.snd_queue_full.inc();
        }
        return 0;
    }
    output_soon(now);
    return n;
}

void tcp_conn::output_soon(uint64_t now) noexcept {
    if (cfg_.defer_output) {
        output_owed_ = true;
    } else {
        output(now);
    }
}

void tcp_conn::quick_ack(uint64_t now) noexcept {
    if (delack_at_ == never || ack_now_ || !synchronized(state_)) {
        return;
    }
    ctr_.quick_acks.inc();
    ack_now_ = true;
    output_soon(now);
}

bool tcp_conn::ack_before_idle(uint64_t now) noexcept {
    if (delack_at_ == never || delack_fate_ == 0 || !synchronized(state_)) {
        return false;
    }
    ctr_.idle_acks.inc();
    idle_ack_deadline_ = std::max<uint16_t>(static_cast<uint16_t>(delack_at_ >> 22), 1);
    send_ack(now);
    return true;
}

void tcp_conn::flush_output(uint64_t now) noexcept {
    if (output_owed_) {
        output(now);  // clears it
    }
}

std::size_t tcp_conn::recv(std::span<tcp_rx_piece> out, uint64_t now) noexcept {
    const uint32_t before = rcv_wnd();
    const std::size_t n = rq_.pop(out);
    if (n == 0 || !synchronized(state_)) {
        return n;
    }
    // A window update when reading opened the window enough to matter
    // (RFC 9293 §3.8.6.2.2 receiver SWS avoidance: offer_window() only moves
    // the right edge by min(RCV.BUFF/2, MSS) or more), to a peer that is
    // sending (its last segment full-sized, or a gap filled) whether or not
    // it seems near the edge: suppressing those (Linux's doubling rule, or
    // the room past the highest octet seen) stalled lossy transfers until an
    // RTO in TcpConnSackLink's simulation (issue 17). A peer whose last
    // segment was short (a keep-alive response, a request) learns of the
    // window with the next segment, unless the window it knows is less than
    // half the new one (tcp_cleanup_rbuf's rule): its own pure update was
    // ~0.15 frames per request on a keep-alive origin leg.
    const uint32_t offer = offer_window();
    switch (state_) {
        case tcp_state::established:
        case tcp_state::fin_wait_1:
        case tcp_state::fin_wait_2:
            if (offer > before && (peer_streaming_ || uint64_t{before} * 2 <= offer)) {
                ctr_.window_updates.inc();
                ack_now_ = true;
                output_soon(now);
            }
            break;
        default:
            break;
    }
    return n;
}

void tcp_conn::close(uint64_t now) noexcept {
    switch (state_) {
        case tcp_state::syn_sent:
            // RFC 9293 §3.10.4: "Delete the TCB and return "error: closing"
            // responses to any queued SENDs".
            enter_closed(tcp_close_reason::normal, now);
            return;
        case tcp_state::syn_received:
            fin_queued_ = true;  // sent once ESTABLISHED (our SYN is not acked yet)
            return;
        case tcp_state::established:
            fin_queued_ = true;
            set_state(tcp_state::fin_wait_1, now);
            output_soon(now);
            return;
        case tcp_state::close_wait:
            fin_queued_ = true;
            set_state(tcp_state::last_ack, now);
            output_soon(now);
            return;
        default:
            return;
    }
}

void tcp_conn::abort(uint64_t now) noexcept {
    switch (state_) {
        case tcp_state::syn_received:
        case tcp_state::established:
        case tcp_state::fin_wait_1:
        case tcp_state::fin_wait_2:
        case tcp_state::close_wait:
            // RFC 9293 §3.10.5: "Send a reset segment: <SEQ=SND.NXT><CTL=RST>"
            // (SND.MAX: the highest, see send_ack()).
            send_rst(snd_.max, now);
            break;
        default:
            break;
    }
    if (state_ != tcp_state::closed) {
        ctr_.conn_aborted.inc();
        enter_closed(tcp_close_reason::aborted, now);
    } else if (rq_.bytes() != 0) {
        // Closed in order with data still unread (tcp_layer keeps such a
        // connection readable): the application gives up on it.
        rq_.clear();
        close_reason_ = tcp_close_reason::aborted;
    }
}

// ---------------------------------------------------------------------------
// SEGMENT ARRIVES

void tcp_conn::input(const tcp_repr &h, rte_mbuf *payload, uint32_t payload_off,
                     uint64_t now) noexcept {
    ctr_.segs_in.inc();
    switch (state_) {
        case tcp_state::closed:
        case tcp_state::listen:
            ctr_.rcv_in_closed.inc();
            rte_pktmbuf_free(payload);
            return;
        case tcp_state::syn_sent:
            rte_pktmbuf_free(payload);  // data on a SYN-ACK is not taken (see the header)
            input_syn_sent(h, now);
            return;
        default:
            input_synchronized(h, payload, payload_off, now);
            return;
    }
}

// RFC 9293 §3.10.7.3 "If the state is SYN-SENT then".
void tcp_conn::input_syn_sent(const tcp_repr &h, uint64_t now) noexcept {
    // "First, check the ACK bit: If the ACK bit is set, If SEG.ACK =< ISS or
    // SEG.ACK > SND.NXT, send a reset (unless the RST bit is set, if so drop
    // the segment and return) <SEQ=SEG.ACK><CTL=RST> and discard the segment."
    const bool ack = h.has(tcp_flag::ack);
    if (ack && (h.ack <= snd_.iss || h.ack > snd_.nxt)) {
        ctr_.rcv_bad_ack_syn_sent.inc();
        if (!h.has(tcp_flag::rst)) {
            send_rst(h.ack, now);
        }
        return;
    }
    // "Second, check the RST bit: If the RST bit is set, ... If the ACK was
    // acceptable, then signal to the user "error: connection reset", drop the
    // segment, enter CLOSED state ... Otherwise (no ACK), drop the segment and
    // return." (RFC 5961 §3.2 for SYN-SENT: the ACK acceptability is the check.)
    if (h.has(tcp_flag::rst)) {
        if (ack) {
            ctr_.resets_received.inc();
            enter_closed(tcp_close_reason::refused, now);
        } else {
            ctr_.resets_ignored.inc();
        }
        return;
    }
    // "Third, check the security": no compartments here.
    // "Fourth, check the SYN bit: This step should be reached only if the ACK
    // is ok, or there is no ACK, and the segment did not contain a RST."
    if (!h.has(tcp_flag::syn)) {
        // "Fifth, if neither of the SYN or RST bits is set, then drop the
        // segment and return."
        return;
    }
    // "RCV.NXT is set to SEG.SEQ+1, IRS is set to SEG.SEQ. SND.UNA should be
    // advanced to equal SEG.ACK (if there is an ACK)".
    rcv_.irs = h.seq;
    rcv_.nxt = h.seq + 1;
    rcv_.adv = rcv_.nxt;  // our SYN's window was offered before RCV.NXT was known
    peer_ts_ = h.options.timestamps.has_value();
    peer_sack_ = h.options.sack_permitted;
    peer_wscale_ = h.options.window_shift.has_value();
    take_syn_options(h.options, now);
    snd_.wnd = h.window;  // unscaled in a SYN
    snd_.max_wnd = snd_.wnd;
    snd_.wl1 = h.seq;
    snd_.wl2 = h.ack;
    if (ack) {
        snd_.una = h.ack;
        // An RTT sample for the SYN if it was sent once (Karn).
        if (ts_ok_ && h.options.timestamps->tsecr != 0) {
            rtt_.on_sample(uint64_t{ts_clock(now) - h.options.timestamps->tsecr} * 1'000'000);
        } else if (!syn_retransmitted_) {
            rtt_.on_sample(now - rtt_sent_at_);
        }
    }
    // "If SND.UNA > ISS (our SYN has been ACKed), change the connection state
    // to ESTABLISHED, form an ACK segment <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>
    // and send it."
    if (snd_.una > snd_.iss) {
        rtx_at_ = never;
        retries_ = 0;
        enter_established(now);
        send_ack(now);
        output(now);  // data the application queued while connecting
        return;
    }
    // "Otherwise, enter SYN-RECEIVED, form a SYN,ACK segment
    // <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK> and send it." (simultaneous open)
    set_state(tcp_state::syn_received, now);
    send_syn(now);
    arm_rtx(now);
}

// RFC 9293 §3.10.7.4 "Otherwise" (SYN-RECEIVED and the synchronized states).
void tcp_conn::input_synchronized(const tcp_repr &h, rte_mbuf *payload, uint32_t payload_off,
                                  uint64_t now) noexcept {
    const bool rst = h.has(tcp_flag::rst);

    // SYN-RECEIVED and the peer retransmitted its SYN: our SYN-ACK was lost.
    if (state_ == tcp_state::syn_received && h.has(tcp_flag::syn) && !h.has(tcp_flag::ack) &&
        !rst && h.seq == rcv_.irs) {
        rte_pktmbuf_free(payload);
        ctr_.syn_retransmits.inc();
        send_syn(now);
        return;
    }

    // RFC 7323 §5.3 R1 (before the acceptability test): "If there is a
    // Timestamps option in the arriving segment, SEG.TSval < TS.Recent,
    // TS.Recent is valid ..., and if the RST bit is not set, then treat the
    // arriving segment as not acceptable: Send an acknowledgment in reply as
    // specified in RFC 793 page 69 and drop the segment."
    if (ts_ok_ && h.options.timestamps && !rst &&
        static_cast<int32_t>(h.options.timestamps->tsval - ts_recent_) < 0 &&
        now - ts_recent_at_ <= paws_idle_ns) {
        ctr_.paws_rejects.inc();
        rte_pktmbuf_free(payload);
        send_ack(now);
        return;
    }

    // "First, check sequence number": the four-case acceptability test.
    const uint32_t wnd = rcv_wnd();
    // One leniency, as Linux's tcp_sequence(): a segment without data at
    // exactly RCV.NXT + RCV.WND. A peer that filled our window sends its
    // pure ACKs from there (SND.NXT at our right edge); were they refused
    // while its data is lost, each end would only answer the other's ACKs.
    const bool at_right_edge =
        h.seg_len() == 0 && wnd > 0 && !rst && h.seq == rcv_.nxt + static_cast<int32_t>(wnd);
    if (!at_right_edge && !segment_acceptable(h.seq, h.seg_len(), rcv_.nxt, wnd)) {
        // "If an incoming segment is not acceptable, an acknowledgment should
        // be sent in reply (unless the RST bit is set, if so drop the segment
        // and return)". RFC 9293 also keeps processing "valid ACKs" with a
        // zero window: a zero-window probe still updates SND.UNA/SND.WND.
        rte_pktmbuf_free(payload);
        if (rst) {
            ctr_.resets_ignored.inc();
            return;
        }
        ctr_.rcv_unacceptable.inc();
        if (const seq_num d = h.seq + (h.has(tcp_flag::syn) ? 1 : 0);
            h.payload_len > 0 && d + static_cast<int32_t>(h.payload_len) <= rcv_.nxt)
            note_duplicate(d, d + static_cast<int32_t>(h.payload_len));
        if (state_ == tcp_state::time_wait && h.has(tcp_flag::fin)) {
            // A retransmitted FIN (RCV.NXT is past it): "Acknowledge it, and
            // restart the 2 MSL timeout" (fifth step, TIME-WAIT).
            tw_at_ = now + cfg_.time_wait_ns;
        }
        if (wnd == 0 && h.seq == rcv_.nxt && h.has(tcp_flag::ack) &&
            state_ != tcp_state::syn_received) {
            (void)process_ack(h, now);
            if (state_ == tcp_state::closed) {
                return;
            }
        }
        if (h.seg_len() == 0) {
            // An out-of-window pure ACK is answered at most once per
            // oow_ack_interval (Linux's tcp_invalid_ratelimit): two ends that
            // disagree about the window must not trade ACKs at line rate.
            if (oow_acked_ && now - last_oow_ack_at_ < cfg_.oow_ack_interval_ns) {
                ctr_.rcv_oow_ack_limited.inc();
                return;
            }
            oow_acked_ = true;
            last_oow_ack_at_ = now;
        }
        send_ack(now);
        return;
    }
    restart_keepalive(now);
    // RFC 7323 §4.3 (2): TS.Recent from a segment that is acceptable and
    // covers Last.ACK.sent.
    update_ts_recent(h, now);

    // "In the following it is assumed that the segment is the idealized
    // segment that begins at RCV.NXT and does not exceed the window."
    seq_num seq = h.seq;
    uint32_t off = payload_off;
    uint32_t len = h.payload_len;
    bool syn = h.has(tcp_flag::syn);
    bool fin = h.has(tcp_flag::fin);
    if (seq < rcv_.nxt) {
        uint32_t cut = distance(seq, rcv_.nxt);
        if (syn) {
            syn = false;  // the SYN is before RCV.NXT
            --cut;
        }
        cut = std::min(cut, len);
        if (cut > 0) note_duplicate(rcv_.nxt - static_cast<int32_t>(cut), rcv_.nxt);
        off += cut;
        len -= cut;
        seq = rcv_.nxt;
    }
    if (len > 0 && distance(rcv_.nxt, seq) + len > wnd) {
        len = wnd - distance(rcv_.nxt, seq);
        fin = false;  // beyond the window
    }

    // "Second, check the RST bit": RFC 5961 §3.2: "1) If the RST bit is set
    // and the sequence number is outside the current receive window, silently
    // drop the segment. 2) If the RST bit is set and the sequence number
    // exactly matches the next expected sequence number (RCV.NXT), then TCP
    // MUST reset the connection. 3) If the RST bit is set and the sequence
    // number does not exactly match the next expected sequence value, yet is
    // within the current receive window, TCP MUST send an acknowledgment
    // (challenge ACK)".
    if (rst) {
        rte_pktmbuf_free(payload);
        if (state_ == tcp_state::time_wait) {
            // RFC 1337 §3 (TIME-WAIT assassination): RFC 9293 would close
            // here, but the exchange already completed in order, and a RST
            // answering a late duplicate (the peer has no TCB any more) must
            // neither cut TIME-WAIT short nor turn an orderly end into a
            // reset for the application. Ignored, as on BSD.
            ctr_.resets_ignored.inc();
            return;
        }
        if (h.seq != rcv_.nxt) {
            send_challenge_ack(now);
            return;
        }
        ctr_.resets_received.inc();
        // SYN-RECEIVED from a passive open: "return this connection to LISTEN"
        // — the listener is the stack's, so this TCB just closes.
        enter_closed(
            state_ == tcp_state::syn_received ? tcp_close_reason::refused : tcp_close_reason::reset,
            now);
        return;
    }

    // "Third, check security": no compartments here.

    // "Fourth, check the SYN bit": RFC 5961 §4.2: "If the SYN bit is set,
    // irrespective of the sequence number, TCP MUST send an ACK (also referred
    // to as challenge ACK) to the remote peer ... After sending the
    // acknowledgment, TCP MUST drop the unacceptable segment".
    if (syn) {
        rte_pktmbuf_free(payload);
        send_challenge_ack(now);
        return;
    }

    // "Fifth, check the ACK field: if the ACK bit is off, drop the segment and return".
    if (!h.has(tcp_flag::ack)) {
        ctr_.rcv_no_ack.inc();
        rte_pktmbuf_free(payload);
        return;
    }
    if (state_ == tcp_state::syn_received) {
        // "If SND.UNA < SEG.ACK =< SND.NXT, then enter ESTABLISHED state and
        // continue processing ... If the segment acknowledgment is not
        // acceptable, form a reset segment <SEQ=SEG.ACK><CTL=RST> and send it."
        if (!ack_advances(h.ack, snd_.una, snd_.nxt)) {
            ctr_.rcv_bad_ack_syn_rcvd.inc();
            rte_pktmbuf_free(payload);
            send_rst(h.ack, now);
            return;
        }
        // "set the variables: SND.WND <- SEG.WND, SND.WL1 <- SEG.SEQ, SND.WL2 <- SEG.ACK"
        snd_.wnd = uint32_t{h.window} << snd_.wscale;
        snd_.max_wnd = std::max(snd_.max_wnd, snd_.wnd);
        snd_.wl1 = h.seq;
        snd_.wl2 = h.ack;
        if (!syn_retransmitted_ && !(ts_ok_ && h.options.timestamps)) {
            rtt_.on_sample(now - rtt_sent_at_);
        }
        enter_established(now);
    }
    if (!process_ack(h, now)) {
        rte_pktmbuf_free(payload);
        return;
    }

    // "Sixth, check the URG bit": urgent data is not supported (ignored).

    // "Seventh, process the segment text" and "Eighth, check the FIN bit".
    process_text(seq, payload, off, len, fin, now);
    if (dupack_now_) {
        dupack_now_ = false;
        output(now);
    } else {
        output_soon(now);
    }
}

bool tcp_conn::process_ack(const tcp_repr &h, uint64_t now) noexcept {
    // RFC 5961 §5.2: "the ACK value is acceptable only if it is in the range
    // of ((SND.UNA - MAX.SND.WND) =< SEG.ACK =< SND.NXT). All incoming segments
    // whose ACK value doesn't satisfy the above condition MUST be discarded
    // and an ACK sent back." (SND.MAX stands for SND.NXT: see the header.)
    if (h.ack > snd_.max) {
        ctr_.rcv_ack_too_new.inc();
        send_ack(now);
        return false;
    }
    if (h.ack < snd_.una - static_cast<int32_t>(snd_.max_wnd)) {
        ctr_.rcv_ack_too_old.inc();
        send_ack(now);
        return false;
    }
    const uint32_t seg_wnd = uint32_t{h.window} << snd_.wscale;

    const bool advanced = ack_advances(h.ack, snd_.una, snd_.max);
    if (advanced) {
        // "If SND.UNA < SEG.ACK =< SND.NXT, then set SND.UNA <- SEG.ACK. Any
        // segments on the retransmission queue that are thereby entirely
        // acknowledged are removed."
        const seq_num sq_end = snd_data_ + static_cast<int32_t>(sq_.bytes());
        const seq_num data_acked_to = seq_min(h.ack, sq_end);
        uint32_t bytes_acked = 0;  // data octets (not SYN or FIN), for tcp_cc
        if (data_acked_to > snd_data_) {
            const uint32_t n = distance(snd_data_, data_acked_to);
            sq_.release(n);
            bytes_acked = n;
            snd_data_ = data_acked_to;
            events_ |= tcp_event::writable;
        }
        snd_.una = h.ack;
        if (snd_.nxt < snd_.una) {
            snd_.nxt = snd_.una;
        }
        sack_sb_.ack_to(snd_.una);
        // RTT sample: the timed segment if it was sent once (Karn, RFC 6298
        // §3), measured in nanoseconds. The timestamp echo (RFC 7323 §4),
        // which retransmissions do not confuse, only where that has nothing
        // to give: no sample yet, or after a timeout, until a new timed
        // segment is answered. Its clock ticks in milliseconds: on a LAN
        // path of 50-100 us its samples are 0 or 1 ms, and an SRTT of
        // 0.3-1.2 ms made of them (so it was until 2026-12-05) stretched
        // every probe timeout (2 * SRTT) and the RACK and CUBIC arithmetic
        // built on it.
        if (rtt_timing_ && h.ack > rtt_seq_) {
            rtt_.on_sample(now - rtt_sent_at_);
            cc_.on_rtt(now - rtt_sent_at_, now);
            rtt_timing_ = false;
        } else if (ts_ok_ && h.options.timestamps && h.options.timestamps->tsecr != 0 &&
                   (!rtt_.has_sample() || retries_ > 0)) {
            const uint32_t flight = distance(snd_.una, snd_.max);
            const uint32_t expected =
                std::max<uint32_t>(1, (flight + 2u * snd_mss_ - 1) / (2u * snd_mss_));
            rtt_.on_sample(uint64_t{ts_clock(now) - h.options.timestamps->tsecr} * 1'000'000,
                           expected);
        }
        retries_ = 0;
        // persist_backoff_ stays: an ACK that takes a probe's octet while
        // the window stays zero must not restart the probes' exponential
        // backoff (RFC 9293 §3.8.6.1); the window opening resets it below.
        limited_tx_ = 0;
        const cc_action a = cc_.on_ack(cc_ack{.ack = h.ack,
                                              .bytes_acked = bytes_acked,
                                              .flight_size = distance(snd_.una, snd_.max),
                                              .now_ns = now,
                                              .srtt_ns = rtt_.srtt_ns(),
                                              .cwnd_limited = true});
        // RFC 6298 §5.2: "When all outstanding data has been acknowledged,
        // turn off the retransmission timer." §5.3: "When an ACK is received
        // that acknowledges new data, restart the retransmission timer".
        rtx_at_ = snd_.una == snd_.max ? never : now + rtt_.rto_ns();
        if (a != cc_action::none) {
            retransmit_head(now);  // NewReno only: SACK recovery asks for none
        }
        if (!sack_ok_ && bytes_acked > 0) {
            note_delivery(bytes_acked, now);  // with SACK: sack_on_ack()
        }
    }
    // RFC 5681 §2 DUPLICATE ACKNOWLEDGMENT: (a) outstanding data, (b) no
    // data, (c) neither SYN nor FIN, (d) SEG.ACK == SND.UNA, (e) the window
    // is unchanged. (A zero window makes probes' answers, not dups.)
    const bool dup = !advanced && h.ack == snd_.una && snd_.una != snd_.max && h.payload_len == 0 &&
                     !h.has(tcp_flag::syn) && !h.has(tcp_flag::fin) && seg_wnd == snd_.wnd &&
                     snd_.wnd != 0;
    if (sack_ok_) {
        // RFC 6675 §5 with the segment's SACK blocks; D-SACK, PRR: all in
        // tcp_conn_recovery.cpp.
        sack_on_ack(h, advanced, dup, now);
    } else if (dup) {
        ctr_.dup_acks.inc();
        const cc_action a = cc_.on_dup_ack(h.ack, snd_.max, distance(snd_.una, snd_.max));
        if (a == cc_action::fast_retransmit) {
            ctr_.fast_retransmits.inc();
            limited_tx_ = 0;
            retransmit_head(now);
        } else if (!cc_.in_recovery() && cc_.dup_acks() < tcp_cc::dup_ack_threshold) {
            // RFC 3042 Limited Transmit: on each of the first two duplicates
            // one new segment may go, "provided ... the amount of outstanding
            // data would remain less than or equal to the congestion window
            // plus 2*SMSS"; cwnd itself is unchanged.
            limited_tx_ = cc_.dup_acks() * uint32_t{snd_mss_};
        }
    }

    // "If SND.UNA =< SEG.ACK =< SND.NXT, the send window should be updated.
    // If (SND.WL1 < SEG.SEQ or (SND.WL1 = SEG.SEQ and SND.WL2 =< SEG.ACK)),
    // set SND.WND <- SEG.WND, set SND.WL1 <- SEG.SEQ, and set SND.WL2 <- SEG.ACK."
    if (h.ack >= snd_.una && (snd_.wl1 < h.seq || (snd_.wl1 == h.seq && snd_.wl2 <= h.ack))) {
        snd_.wnd = seg_wnd;
        snd_.max_wnd = std::max(snd_.max_wnd, seg_wnd);
        snd_.wl1 = h.seq;
        snd_.wl2 = h.ack;
        if (snd_.wnd != 0) {
            persist_at_ = never;
            persist_backoff_ = 0;
        }
    }

    // The state-specific part of the fifth step.
    switch (state_) {
        case tcp_state::fin_wait_1:
            // "In addition to the processing for the ESTABLISHED state, if the
            // FIN segment is now acknowledged, then enter FIN-WAIT-2".
            if (fin_acked()) {
                set_state(tcp_state::fin_wait_2, now);
            }
            break;
        case tcp_state::closing:
            // "if the ACK acknowledges our FIN, then enter the TIME-WAIT state;
            // otherwise, ignore the segment."
            if (fin_acked()) {
                set_state(tcp_state::time_wait, now);
                rtx_at_ = persist_at_ = delack_at_ = ka_at_ = never;
                tw_at_ = now + cfg_.time_wait_ns;
            }
            break;
        case tcp_state::last_ack:
            // "The only thing that can arrive in this state is an
            // acknowledgment of our FIN. If our FIN is now acknowledged, delete
            // the TCB, enter the CLOSED state, and return."
            if (fin_acked()) {
                enter_closed(tcp_close_reason::normal, now);
                return false;
            }
            break;
        case tcp_state::time_wait:
            // "The only thing that can arrive in this state is a
            // retransmission of the remote FIN. Acknowledge it, and restart
            // the 2 MSL timeout." (done at the eighth step)
            break;
        default:
            break;
    }
    return true;
}

void tcp_conn::process_text(seq_num seq, rte_mbuf *payload, uint32_t off, uint32_t len, bool fin,
                            uint64_t now) noexcept {
    // "Seventh, process the segment text: ESTABLISHED, FIN-WAIT-1, FIN-WAIT-2
    // STATE: ... Once the TCP endpoint takes responsibility for the data, it
    // advances RCV.NXT over the data accepted". Other states: "This should
    // not occur since a FIN has been received from the remote side. Ignore
    // the segment text."
    const bool take_text = state_ == tcp_state::established || state_ == tcp_state::fin_wait_1 ||
                           state_ == tcp_state::fin_wait_2;
    if (!take_text || len == 0) {
        rte_pktmbuf_free(payload);
        payload = nullptr;
        len = 0;
    }
    if (len > 0 || (fin && seq != rcv_.nxt)) {
        if (seq == rcv_.nxt) {
            if (!rq_.push(tcp_rx_piece{payload, off, len})) {
                ctr_.rcv_drop_queue_full.inc();
                rte_pktmbuf_free(payload);
                ack_now_ = true;
                return;
            }
            const bool had_ooo = !rq_.ooo_empty();
            rcv_.nxt += static_cast<int32_t>(len);
            bool ooo_fin = false;
            if (had_ooo) {
                rcv_.nxt = rq_.drain(rcv_.nxt, ooo_fin);
                fin = fin || ooo_fin;
            }
            events_ |= tcp_event::readable;
            // Full-sized: no more than its options (timestamps, SACK blocks)
            // short of the MSS we send with (the link's, both ways).
            peer_streaming_ = had_ooo || len + 40 >= snd_mss_;
            // RFC 5681 §4.2: "an immediate ACK SHOULD be generated when a
            // segment arrives that fills in all or part of a gap".
            ack_received_data(had_ooo, now);
            dupack_now_ = had_ooo;
        } else {
            // Out of order: keep it for reassembly (RFC 9293 §3.10.7.4
            // seventh step allows it; RFC 5681 §4.2: "A TCP receiver SHOULD
            // send an immediate duplicate ACK when an out-of-order segment
            // arrives").
            if (payload == nullptr && !fin) {
                return;
            }
            switch (rq_.insert_ooo(seq, tcp_rx_piece{payload, off, len}, fin)) {
                case tcp_recv_queue::ooo_result::inserted:
                    ctr_.ooo_segments.inc();
                    break;
                case tcp_recv_queue::ooo_result::duplicate:
                    ctr_.ooo_duplicate.inc();
                    note_duplicate(seq, seq + static_cast<int32_t>(len));
                    break;
                case tcp_recv_queue::ooo_result::full:
                    ctr_.ooo_drop_full.inc();
                    break;
            }
            ack_now_ = true;
            dupack_now_ = true;
            return;
        }
    } else {
        rte_pktmbuf_free(payload);
    }

    // "Eighth, check the FIN bit".
    if (fin) {
        process_fin(now);
    }
}

void tcp_conn::process_fin(uint64_t now) noexcept {
    // "If the FIN bit is set, signal the user "connection closing" ..., advance
    // RCV.NXT over the FIN, and send an acknowledgment for the FIN."
    rcv_.nxt += 1;
    ack_now_ = true;
    events_ |= tcp_event::peer_fin | tcp_event::readable;
    switch (state_) {
        case tcp_state::syn_received:
        case tcp_state::established:
            // "Enter the CLOSE-WAIT state."
            set_state(tcp_state::close_wait, now);
            break;
        case tcp_state::fin_wait_1:
            // "If our FIN has been ACKed (perhaps in this segment), then enter
            // TIME-WAIT, start the time-wait timer, turn off the other timers;
            // otherwise, enter the CLOSING state."
            if (fin_acked()) {
                set_state(tcp_state::time_wait, now);
                rtx_at_ = persist_at_ = ka_at_ = never;
                tw_at_ = now + cfg_.time_wait_ns;
            } else {
                set_state(tcp_state::closing, now);
            }
            break;
        case tcp_state::fin_wait_2:
            // "Enter the TIME-WAIT state. Start the time-wait timer, turn off
            // the other timers."
            set_state(tcp_state::time_wait, now);
            rtx_at_ = persist_at_ = ka_at_ = never;
            tw_at_ = now + cfg_.time_wait_ns;
            break;
        case tcp_state::time_wait:
            // "Remain in the TIME-WAIT state. Restart the 2 MSL time-wait timeout."
            rcv_.nxt -= 1;  // a retransmitted FIN: RCV.NXT is already past it
            tw_at_ = now + cfg_.time_wait_ns;
            break;
        default:
            // CLOSE-WAIT, CLOSING, LAST-ACK: "Remain in the ... state."
            rcv_.nxt -= 1;
            break;
    }
}

void tcp_conn::ack_received_data(bool immediately, uint64_t now) noexcept {
    ++segs_unacked_;
    // RFC 5681 §4.2: "an ACK SHOULD be generated for at least every second
    // full-sized segment, and MUST be generated within 500 ms of the arrival
    // of the first unacknowledged packet."
    if (immediately || !cfg_.delayed_ack || segs_unacked_ >= 2) {
        ack_now_ = true;
    } else if (delack_at_ == never) {
        delack_at_ = now + cfg_.delayed_ack_ns;
    }
}

void tcp_conn::take_syn_options(const tcp_options &o, uint64_t now) noexcept {
    // RFC 9293 §3.7.1: without an MSS option the send MSS is 536 (IPv4).
    // A tiny one gets a floor (Linux's tcp_min_snd_mss: 48) before the
    // options come out of it: segments of a few bytes would cost a peer (or
    // an attacker) nothing and ferry a segment each.
    uint32_t mss = o.mss.value_or(default_mss);
    mss = std::max<uint32_t>(std::min<uint32_t>(mss, cfg_.mss), min_snd_mss);
    // RFC 7323 §2.2: scaling is on only when both SYNs carry the option.
    if (cfg_.window_scaling && o.window_shift) {
        snd_.wscale = *o.window_shift;
    } else {
        snd_.wscale = 0;
        rcv_.wscale = 0;
    }
    ts_ok_ = cfg_.timestamps && o.timestamps.has_value();
    if (ts_ok_) {
        ts_recent_ = o.timestamps->tsval;
        ts_recent_at_ = now;
        // RFC 9293 §3.7.1: the option bytes come out of the segment's data.
        mss -= ts_option_len;
    }
    sack_ok_ = cfg_.sack && o.sack_permitted;
    snd_mss_ = static_cast<uint16_t>(mss);  // 48 - 12 at the least, never wrapped
}

void tcp_conn::update_ts_recent(const tcp_repr &h, uint64_t now) noexcept {
    // RFC 7323 §4.3 (2): "If SEG.TSval >= TS.Recent and SEG.SEQ =< Last.ACK.sent
    // then SEG.TSval is copied to TS.Recent; otherwise, it is ignored."
    if (!ts_ok_ || !h.options.timestamps) {
        return;
    }
    // RFC 7323 §5.5: a TS.Recent idle for more than 24 days is invalid.
    const bool stale = now - ts_recent_at_ > paws_idle_ns;
    if ((stale || static_cast<int32_t>(h.options.timestamps->tsval - ts_recent_) >= 0) &&
        h.seq <= last_ack_sent_) {
        ts_recent_ = h.options.timestamps->tsval;
        ts_recent_at_ = now;
    }
}

// ---------------------------------------------------------------------------
// Output

uint32_t tcp_conn::offer_window() const noexcept {
    const uint32_t used = rq_.bytes();
    uint32_t free_space = cfg_.rcv_buf > used ? cfg_.rcv_buf - used : 0;
    free_space = std::min<uint32_t>(free_space, uint32_t{0xffff} << rcv_.wscale);
    free_space = (free_space >> rcv_.wscale) << rcv_.wscale;
    const uint32_t current = rcv_wnd();
    // RFC 9293 §3.8.6.2.2: keep RCV.NXT + RCV.WND fixed until the window can
    // move right by min(Fr * RCV.BUFF, Eff.snd.MSS), Fr = 1/2. The right
    // edge never moves left (§3.8.6: shrinking the window is discouraged).
    const uint32_t step = std::min<uint32_t>(cfg_.rcv_buf / 2, cfg_.mss);
    if (free_space >= current + step) {
        return free_space;
    }
    return current;
}

uint16_t tcp_conn::window_field(bool syn) noexcept {
    if (syn) {
        // RFC 7323 §2.2: "The window field in a segment where the SYN bit is
        // set (i.e., a <SYN> or <SYN,ACK>) MUST NOT be scaled."
        const uint32_t w = std::min<uint32_t>(cfg_.rcv_buf, 0xffff);
        rcv_.adv = rcv_.nxt + static_cast<int32_t>(w);
        return static_cast<uint16_t>(w);
    }
    const uint32_t w = offer_window();
    rcv_.adv = rcv_.nxt + static_cast<int32_t>(w);
    return static_cast<uint16_t>(w >> rcv_.wscale);
}

void tcp_conn::fill_options(tcp_options &o, bool syn, uint64_t now) const noexcept {
    if (syn) {
        o.mss = cfg_.mss;
        const bool answer =
            state_ == tcp_state::syn_received;  // SYN-ACK: only what the peer offered
        if (cfg_.window_scaling && (!answer || peer_wscale_)) {
            o.window_shift = rcv_.wscale;
        }
        if (cfg_.sack && (!answer || peer_sack_)) {
            o.sack_permitted = true;
        }
        if (cfg_.timestamps && (!answer || peer_ts_)) {
            o.timestamps = tcp_timestamps{ts_clock(now), answer ? ts_recent_ : 0};
        }
        return;
    }
    if (ts_ok_) {
        o.timestamps = tcp_timestamps{ts_clock(now), ts_recent_};
    }
    fill_sack(o, ts_ok_ ? 3 : tcp_options::max_sack_blocks);
}

uint32_t tcp_conn::emit_segment(uint8_t flags, seq_num seq, uint32_t off, uint32_t len,
                                uint64_t now) noexcept {
    tcp_repr r;
    r.src_port = tuple_.local_port;
    r.dst_port = tuple_.remote_port;
    r.seq = seq;
    r.flags = flags;
    const bool syn = (flags & tcp_flag::syn) != 0;
    if ((flags & tcp_flag::rst) == 0) {
        fill_options(r.options, syn, now);
        r.window = window_field(syn);
        if (dsack_owed_ && r.options.sack_count > 0) {
            dsack_owed_ = false;
            ctr_.dsacks_sent.inc();
        }
    }
    if ((flags & tcp_flag::ack) != 0) {
        if (len > 0) {
            // Data that carries a delayed ACK, or that came before the
            // deadline of one sent ahead for a sleep: this connection's ACKs
            // ride on its data. Data after that deadline: the timer would
            // have sent it.
            if (delack_at_ != never && delack_fate_ > 0) {
                --delack_fate_;
            }
            if (idle_ack_deadline_ != 0) {
                const auto now_units = static_cast<uint16_t>(now >> 22);
                if (static_cast<int16_t>(static_cast<uint16_t>(now_units - idle_ack_deadline_)) < 0) {
                    ctr_.idle_acks_early.inc();
                    if (delack_fate_ > 0) {
                        --delack_fate_;
                    }
                } else if (delack_fate_ < 3) {
                    ++delack_fate_;
                }
                idle_ack_deadline_ = 0;
            }
        }
        r.ack = rcv_.nxt;
        last_ack_sent_ = rcv_.nxt;
        ack_now_ = false;
        segs_unacked_ = 0;
        delack_at_ = never;
    }
    std::array<tcp_payload_ref, max_payload_refs> refs;
    std::size_t nrefs = 0;
    if (len > 0) {
        // SACK blocks take room from the data (the MSS was set without them).
        const uint32_t extra = r.options.sack_count > 0 ? 4 + 8u * r.options.sack_count : 0;
        if (extra > 0 && len + extra > snd_mss_) {
            len = snd_mss_ > extra ? snd_mss_ - extra : 1;
            r.flags &= static_cast<uint8_t>(~tcp_flag::fin);
        }
        const uint32_t got = sq_.gather(off, len, refs, nrefs);
        if (got < len) {
            len = got;
            r.flags &= static_cast<uint8_t>(~tcp_flag::fin);
        }
    }
    r.payload_len = len;
    if (len > 0 && sack_ok_ && cfg_.rack && !syn &&
        !rack_.on_transmit(seq, seq + static_cast<int32_t>(len), now, seq < snd_.max)) {
        ctr_.rack_unrecorded.inc();  // RFC 8985 records (tcp_rack.h)
    }
    ctr_.segs_out.inc();
    if (len == 0 && r.flags == tcp_flag::ack) {
        ctr_.pure_acks.inc();
    }
    emit_(emit_ctx_, r, tcp_payload{std::span<const tcp_payload_ref>(refs.data(), nrefs), len});
    return len;
}

void tcp_conn::send_syn(uint64_t now) noexcept {
    const uint8_t flags =
        state_ == tcp_state::syn_received ? tcp_flag::syn | tcp_flag::ack : tcp_flag::syn;
    rtt_sent_at_ = now;
    (void)emit_segment(flags, snd_.iss, 0, 0, now);
}

void tcp_conn::send_ack(uint64_t now) noexcept {
    // <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, with SND.MAX for SND.NXT: after an
    // RTO SND.NXT goes back, and a pure ACK from below the peer's RCV.NXT
    // would be "not acceptable" there — its ACK field ignored, an ACK sent
    // back, and two such ends would trade ACKs forever. But never past the
    // peer's window (SND.UNA + SND.WND; Linux's tcp_acceptable_seq()): a
    // zero-window probe's octet is, and a peer with a closed window drops
    // a segment starting there, its ACK field unread. Were both windows
    // closed on data the other had not acknowledged, neither end would move.
    const seq_num edge = snd_.una + static_cast<int32_t>(snd_.wnd);
    const bool past = synchronized(state_) && snd_.max > edge;  // SND.WND known
    (void)emit_segment(tcp_flag::ack, past ? edge : snd_.max, 0, 0, now);
}

void tcp_conn::send_challenge_ack(uint64_t now) noexcept {
    ctr_.challenge_acks.inc();
    send_ack(now);
}

void tcp_conn::send_rst(seq_num seq, uint64_t now) noexcept {
    ctr_.resets_sent.inc();
    (void)emit_segment(tcp_flag::rst, seq, 0, 0, now);
}

void tcp_conn::output(uint64_t now) noexcept {
    output_owed_ = false;
    switch (state_) {
        case tcp_state::established:
        case tcp_state::close_wait:
        case tcp_state::fin_wait_1:
        case tcp_state::closing:
        case tcp_state::last_ack:
            break;
        default:
            if (ack_now_ && synchronized(state_)) {
                send_ack(now);
            }
            return;
    }
    bool sent = false;
    // RFC 6675 §5: in SACK recovery, and on DupAcks before it (step 3), what
    // is in flight is pipe (SetPipe), and "(C) If cwnd - pipe >= 1 SMSS, the
    // sender SHOULD transmit one or more segments": NextSeg's rule (1) (a
    // lost hole), else (2) (new data), else (3) (a hole not yet lost), one
    // segment at a time, "(C.4) ... incrementing pipe by the number of octets
    // transmitted", until "(C.5)" cwnd - pipe < 1 SMSS.
    const bool pipe_mode = sack_pipe_mode();
    const bool recovering = pipe_mode && cc_.in_sack_recovery();
    uint64_t pipe = pipe_mode ? send_pipe() : 0;
    // In recovery with PRR (RFC 6937) the limit is pipe + sndcnt as of the last ACK.
    const uint64_t cwnd = recovering && cfg_.prr ? prr_.cwnd() : cc_.cwnd();
    seq_num hole_start;
    seq_num hole_end;
    for (;;) {
        if (pipe_mode) {
            if (pipe + snd_mss_ > cwnd) {
                break;
            }
            // RACK's lost segments first (RFC 8985 §6.2 step 5), among them
            // retransmissions that were lost, which NextSeg cannot name.
            if (recovering && rack_.any_lost() &&
                rack_.next_lost(snd_.una, sack_sb_, hole_start, hole_end)) {
                hole_end = seq_min(hole_end, hole_start + static_cast<int32_t>(snd_mss_));
                const uint32_t n = sack_retransmit(hole_start, hole_end, now);
                if (n == 0) {
                    break;
                }
                ctr_.rack_retransmits.inc();
                pipe += n;
                sent = true;
                continue;
            }
            if (recovering && sack_sb_.next_hole(snd_.una, rxt_high_, true, snd_mss_, snd_mss_,
                                                 hole_start, hole_end)) {
                const uint32_t n = sack_retransmit(hole_start, hole_end, now);
                if (n == 0) {
                    break;
                }
                pipe += n;
                sent = true;
                continue;
            }
        } else if (sack_ok_ && snd_.nxt < snd_.max && !sack_sb_.empty()) {
            // Going back after an RTO: what the peer SACKed since is not sent again.
            snd_.nxt = seq_min(sack_sb_.skip_sacked(snd_.nxt), snd_.max);
        }
        const uint32_t off = snd_.nxt >= snd_data_ ? distance(snd_data_, snd_.nxt) : 0;
        const uint32_t avail = sq_.bytes() > off ? sq_.bytes() - off : 0;
        uint32_t in_flight = distance(snd_.una, snd_.nxt);
        uint32_t room = 0;
        if (pipe_mode) {
            // Rule (2): previously unsent data, "and the receiver's advertised
            // window allows".
            const uint32_t rwnd_room = snd_.wnd > in_flight ? snd_.wnd - in_flight : 0;
            room = static_cast<uint32_t>(std::min<uint64_t>(rwnd_room, cwnd - pipe));
        } else {
            if (snd_.nxt < snd_.max) {
                // Going back: what the peer SACKed (and was skipped) is not
                // in the network.
                in_flight -= sack_sb_.sacked_below(snd_.nxt);
            }
            const uint32_t wnd = std::min(snd_.wnd, cc_.cwnd() + limited_tx_);
            room = wnd > in_flight ? wnd - in_flight : 0;
        }
        uint32_t len = std::min({avail, room, uint32_t{snd_mss_}});
        if (len > 0 && snd_.nxt < snd_.max) {
            len = sack_sb_.unsacked_run(snd_.nxt, len);  // (empty without SACK)
        } else if (len < snd_mss_ && len < avail && in_flight > 0) {
            // Sender-side SWS avoidance (RFC 9293 §3.8.6.2.1): new data that
            // the window (cwnd, a byte count, or the peer's) cuts short of a
            // full segment waits for the ACK that is on its way, as Linux's
            // tcp_snd_wnd_test() and its cwnd in whole packets have it; a
            // tail of a few hundred octets per window was a frame for
            // little, and, never full-sized, it did not count toward the
            // peer's ACK-every-second-segment.
            ctr_.sws_held.inc();
            len = 0;
        }
        // The FIN goes with the last data, or alone once all data is out
        // (it takes no window space).
        const bool fin = fin_queued_ && off + len == sq_.bytes() && snd_.nxt <= fin_seq() &&
                         (len > 0 || snd_.nxt == fin_seq());
        if (len == 0 && !fin) {
            if (recovering && sack_sb_.next_hole(snd_.una, rxt_high_, false, snd_mss_, snd_mss_,
                                                 hole_start, hole_end)) {
                // Rule (3): "an unSACKed sequence number 'S3' that meets the
                // criteria for detecting loss given in steps (1.a) and (1.b)".
                const uint32_t n = sack_retransmit(hole_start, hole_end, now);
                if (n == 0) {
                    break;
                }
                pipe += n;
                sent = true;
                continue;
            }
            break;
        }
        uint8_t flags = tcp_flag::ack;
        if (fin) {
            flags |= tcp_flag::fin;
        }
        if (len > 0 && off + len == sq_.bytes()) {
            flags |= tcp_flag::psh;
        }
        const bool retransmission = snd_.nxt < snd_.max;
        len = emit_segment(flags, snd_.nxt, off, len, now);
        const bool fin_sent = fin && off + len == sq_.bytes();
        if (!retransmission && len > 0) {
            pto_restart_ = true;  // RFC 8985 §7.2: new data restarts the PTO
        }
        if (retransmission) {
            ctr_.retransmits.inc();
        } else if (!rtt_timing_ && len > 0) {
            rtt_timing_ = true;
            rtt_seq_ = snd_.nxt;
            rtt_sent_at_ = now;
        }
        snd_.nxt += static_cast<int32_t>(len + (fin_sent ? 1 : 0));
        snd_.max = seq_max(snd_.max, snd_.nxt);
        pipe += len + (fin_sent ? 1 : 0);  // (C.4), when pipe_mode
        if (rtx_at_ == never) {
            arm_rtx(now);  // RFC 6298 §5.1
        }
        sent = true;
        if (fin_sent) {
            break;
        }
    }
    if (!sent && ack_now_) {
        send_ack(now);
    }
    // Zero window with data waiting and nothing in flight: the persist timer
    // (RFC 9293 §3.8.6.1) probes until the window opens.
    const uint32_t off = snd_.nxt >= snd_data_ ? distance(snd_data_, snd_.nxt) : 0;
    if (snd_.wnd == 0 && sq_.bytes() > off && snd_.una == snd_.max && persist_at_ == never) {
        persist_at_ = now + std::min(rtt_.rto_ns() << persist_backoff_, cfg_.persist_max_ns);
    }
    arm_pto(now);
}

// ---------------------------------------------------------------------------
// Timers

uint64_t tcp_conn::next_deadline() const noexcept {
    // The RACK reordering timer and the loss probe only while data is out.
    const uint64_t loss = snd_.una != snd_.max ? std::min(pto_at_, rack_.deadline()) : never;
    return std::min({rtx_at_, persist_at_, delack_at_, tw_at_, ka_at_, loss});
}

void tcp_conn::on_timer(uint64_t now) noexcept {
    if (tw_at_ <= now) {
        // RFC 9293 §3.10.8: "If the time-wait timeout expires on a
        // connection, delete the TCB, enter the CLOSED state, and return."
        tw_at_ = never;
        enter_closed(tcp_close_reason::normal, now);
        return;
    }
    if (rtx_at_ <= now) {
        on_rto(now);
        if (state_ == tcp_state::closed) {
            return;
        }
    }
    if (snd_.una != snd_.max && rack_.deadline() <= now) {
        on_rack_timer(now);
    }
    if (snd_.una != snd_.max && pto_at_ <= now) {
        on_pto(now);
    }
    if (persist_at_ <= now) {
        on_persist(now);
    }
    if (delack_at_ <= now) {
        delack_at_ = never;
        if (synchronized(state_)) {
            ctr_.delayed_acks.inc();
            if (delack_fate_ < 3) {
                ++delack_fate_;
            }
            send_ack(now);
        }
    }
    if (ka_at_ <= now) {
        on_keepalive(now);
    }
}

void tcp_conn::on_rto(uint64_t now) noexcept {
    rtx_at_ = never;
    ctr_.rto_fired.inc();
    if (state_ == tcp_state::syn_sent || state_ == tcp_state::syn_received) {
        if (++retries_ > cfg_.max_syn_retries) {
            ctr_.conn_timed_out.inc();
            enter_closed(tcp_close_reason::timed_out, now);
            return;
        }
        // RFC 6298 §5.5 backoff; §5.7 applies at ESTABLISHED.
        rtt_.backoff();
        syn_retransmitted_ = true;
        ctr_.syn_retransmits.inc();
        ctr_.retransmits.inc();
        send_syn(now);
        arm_rtx(now);
        return;
    }
    if (snd_.una == snd_.max) {
        return;  // nothing outstanding
    }
    if (++retries_ > cfg_.max_retransmits) {
        ctr_.conn_timed_out.inc();
        enter_closed(tcp_close_reason::timed_out, now);
        return;
    }
    recovery_on_rto();  // RFC 6675 §5.1, RFC 8985 §6.3, RFC 5682 (tcp_conn_recovery.cpp)
    // RFC 5681 §3.1: loss window; RFC 6298 §5.4-§5.6: retransmit the earliest
    // segment, back off, restart the timer.
    cc_.on_rto(snd_.max, distance(snd_.una, snd_.max), retries_ > 1);
    rtt_.backoff();
    rtt_timing_ = false;
    limited_tx_ = 0;
    snd_.nxt = snd_.una;  // go back (see the header)
    output(now);
    arm_rtx(now);
}

void tcp_conn::on_persist(uint64_t now) noexcept {
    persist_at_ = never;
    const uint32_t off = snd_.una >= snd_data_ ? distance(snd_data_, snd_.una) : 0;
    if (snd_.wnd != 0 || sq_.bytes() <= off || !synchronized(state_)) {
        return;
    }
    // RFC 9293 §3.8.6.1: "The sending TCP peer must regularly transmit at
    // least one octet of new data (if available) ... even if the send window
    // is zero". One octet at SND.UNA, beyond the window; SND.NXT stays, SND.MAX
    // covers it so that its ACK is taken.
    ctr_.zero_window_probes.inc();
    (void)emit_segment(tcp_flag::ack, snd_.una, off, 1, now);
    snd_.max = seq_max(snd_.max, snd_.una + 1);
    if (persist_backoff_ < 16) {
        ++persist_backoff_;
    }
    persist_at_ = now + std::min(rtt_.rto_ns() << persist_backoff_, cfg_.persist_max_ns);
}

void tcp_conn::restart_keepalive(uint64_t now) noexcept {
    ka_probes_ = 0;
    if (cfg_.keepalive && (state_ == tcp_state::established || state_ == tcp_state::close_wait ||
                           state_ == tcp_state::fin_wait_2)) {
        ka_at_ = now + cfg_.keepalive_idle_ns;
    } else {
        ka_at_ = never;
    }
}

void tcp_conn::on_keepalive(uint64_t now) noexcept {
    ka_at_ = never;
    if (!cfg_.keepalive || (state_ != tcp_state::established && state_ != tcp_state::close_wait &&
                            state_ != tcp_state::fin_wait_2)) {
        return;
    }
    if (ka_probes_ >= cfg_.keepalive_probes) {
        ctr_.keepalive_timeouts.inc();
        ctr_.conn_timed_out.inc();
        enter_closed(tcp_close_reason::timed_out, now);
        return;
    }
    // RFC 1122 §4.2.3.6: "SEG.SEQ = SND.NXT-1", no data.
    ++ka_probes_;
    ctr_.keepalives.inc();
    (void)emit_segment(tcp_flag::ack, snd_.una - 1, 0, 0, now);
    ka_at_ = now + cfg_.keepalive_interval_ns;
}

bool tcp_conn::time_wait_takes_syn(const tcp_repr &h) const noexcept {
    if (state_ != tcp_state::time_wait) {
        return false;
    }
    const bool ts = ts_ok_ && h.options.timestamps.has_value();
    const int32_t age = ts ? static_cast<int32_t>(h.options.timestamps->tsval - ts_recent_) : 0;
    if (ts && age < 0) {
        return false;  // PAWS: an old duplicate
    }
    return h.seq > rcv_.nxt || (ts && age > 0);
}

}  // namespace ferry::net
