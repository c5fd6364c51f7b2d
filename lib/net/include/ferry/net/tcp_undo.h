// Undoing a congestion response that was not needed: the receiver's D-SACK
// blocks (RFC 2883) tell the sender that a retransmission reached a receiver
// that already had the data. When every retransmission of a recovery
// episode is reported so, nothing of that flight was lost (the "loss" was
// reordering or a delay) and the cwnd reduction was spurious: cwnd and
// ssthresh go back to what they were before it.
//
// The second detector is F-RTO (RFC 5682 §3, the SACK-enhanced algorithm),
// for a retransmission timeout: once the first ACK after the RTO's
// retransmission advances SND.UNA, two new segments go instead of more of the
// go-back; if the next ACK acknowledges data that was never resent, the
// originals were delivered and the timeout was spurious (a delay, not a
// loss), and the window goes back to what it was before the RTO.
//
// Read first: RFC 2883 §4 (a D-SACK block is the first block of the SACK
// option and covers the duplicate: below the cumulative ACK, or inside the
// second block), RFC 3708 (detecting spurious retransmissions with D-SACK:
// every retransmission of the episode reported duplicate); the response is
// Linux's tcp_try_undo_dsack() / tcp_undo_cwnd_reduction(), which restores
// the window as the Eifel response (RFC 4015) does; RFC 5682 §3 (F-RTO's
// steps with SACK; Linux's tcp_process_loss()). RFC 8985
// §6.2 step 4 (RACK's reordering window grows on a D-SACK) lives with the
// RACK variables in tcp_rack.h.
//
// Why (issue 16): a segment delayed past RACK's reordering window, or behind
// three DupAcks, is retransmitted and halves the window although nothing was
// lost. Linux peers report such duplicates with D-SACK; without undo ferry
// keeps the halved window and recovers it over many round trips (CUBIC) for
// every reordering event.
//
// What counts: the octets retransmitted in the episode (each transmission,
// so that a hole resent twice needs both copies reported) against the
// octets D-SACKed inside the range the episode retransmitted (a duplicate
// the network made of a segment never resent is outside it, mostly; a
// duplicate of a retransmission the network made is indistinguishable from
// a spurious retransmission: a limit of D-SACK itself). The same D-SACK block on
// two consecutive ACKs counts once (a duplicated ACK).
//
// The caller (tcp_conn) starts an episode when SACK recovery begins (with
// cwnd and ssthresh from before it), reports the episode's retransmissions
// and every D-SACK block, and on a true from on_dsack() restores the
// window through tcp_cc::undo(). An episode stays open after its recovery
// ends (a D-SACK follows the ACK that ended it by a round trip at least),
// until the next one starts or an RTO cancels it. For F-RTO it starts the
// episode at the timeout and reports the ACKs after it. Pure: no clock, no
// allocation.
#pragma once

#include <cstdint>
#include <span>

#include "ferry/net/tcp.h"
#include "ferry/net/tcp_seq.h"

namespace ferry::net {

// RFC 2883 §4: whether the first block of an ACK's SACK option (`blocks`) is
// a D-SACK: it starts below the ACK's cumulative acknowledgment `ack`, or it
// lies inside the second block (a duplicate above the ACK). False for no
// blocks or an empty first block.
[[nodiscard]] bool is_dsack(std::span<const tcp_sack_block> blocks, seq_num ack) noexcept;

class tcp_undo {
public:
    // A congestion response began at SND.UNA `una` (SACK recovery entered);
    // `prior_cwnd` and `prior_ssthresh` are the window before it. Replaces
    // any earlier episode.
    void start(seq_num una, uint32_t prior_cwnd, uint32_t prior_ssthresh) noexcept;
    // No undo for the current episode (nor F-RTO).
    void cancel() noexcept {
        active_ = false;
        frto_step_ = 0;
    }
    [[nodiscard]] bool active() const noexcept { return active_; }

    // The octets [start, end) were retransmitted during the episode.
    void on_retransmit(seq_num start, seq_num end) noexcept;
    // A D-SACK block [left, right) arrived. Returns true when with it every
    // octet retransmitted in the episode has been reported duplicate: the
    // response was spurious, the caller restores prior_cwnd() and
    // prior_ssthresh(), and the episode ends. False otherwise (no episode,
    // nothing retransmitted yet, not all reported, or the block repeats the
    // previous one).
    [[nodiscard]] bool on_dsack(seq_num left, seq_num right) noexcept;

    // F-RTO (RFC 5682 §3): what the sender does on an ACK after the RTO.
    enum class frto_action : uint8_t {
        none,      // nothing changes (F-RTO is not running, or ended on this ACK)
        send_new,  // step 2: stop going back, send up to two new segments
        go_back,   // step 3, a real loss: the conventional RTO recovery, from SND.UNA
        spurious,  // step 3, a spurious timeout: undo (the episode ends)
    };
    // Step 1: a retransmission timeout outside any recovery (the caller
    // checks: no RecoveryPoint at or above SND.UNA, the first RTO for it) at
    // SND.UNA `una`, with RecoveryPoint = `recovery_point` (SND.MAX) and the
    // window before it. Starts an episode as start() does (nothing counts
    // as resent: the go-back's resends are not the D-SACK undo's) and waits
    // for step 2.
    void frto_start(seq_num una, seq_num recovery_point, uint32_t prior_cwnd,
                    uint32_t prior_ssthresh) noexcept;
    // Steps 2 and 3 for an ACK after the RTO: SND.UNA after it is `una`,
    // `advanced` if it moved, `sacked_below_point` if the ACK SACKed octets
    // below RecoveryPoint that were not SACKed before.
    //  - step 2, the first ACK: advancing SND.UNA short of RecoveryPoint
    //    gives send_new and step 3 next; any other ACK (a duplicate, or one
    //    covering RecoveryPoint) ends F-RTO: none, the conventional recovery
    //    goes on;
    //  - step 3, the next ACK: advancing SND.UNA or SACKing below
    //    RecoveryPoint acknowledges data never resent after the timeout (one
    //    segment was, and the first ACK covered it): spurious. Any other
    //    (the two new segments SACKed above RecoveryPoint, or nothing new):
    //    go_back. F-RTO ends.
    [[nodiscard]] frto_action frto_on_ack(seq_num una, bool advanced,
                                          bool sacked_below_point) noexcept;
    // F-RTO gives up (step 2 with nothing new to send).
    void frto_cancel() noexcept { frto_step_ = 0; }
    [[nodiscard]] bool frto_pending() const noexcept { return frto_step_ != 0; }
    [[nodiscard]] seq_num frto_recovery_point() const noexcept { return frto_point_; }

    [[nodiscard]] seq_num marker() const noexcept { return marker_; }  // SND.UNA at the start
    [[nodiscard]] uint32_t prior_cwnd() const noexcept { return prior_cwnd_; }
    [[nodiscard]] uint32_t prior_ssthresh() const noexcept { return prior_ssthresh_; }
    [[nodiscard]] uint32_t retransmitted() const noexcept { return retransmitted_; }
    [[nodiscard]] uint32_t reported() const noexcept { return reported_; }

private:
    seq_num marker_;  // SND.UNA when the episode began: nothing below it was resent in it
    seq_num high_;    // one past the highest octet retransmitted in the episode
    uint32_t retransmitted_ = 0;
    uint32_t reported_ = 0;
    uint32_t prior_cwnd_ = 0;
    uint32_t prior_ssthresh_ = 0;
    tcp_sack_block last_{};  // the previous D-SACK block (see on_dsack)
    seq_num frto_point_;     // F-RTO's RecoveryPoint
    bool active_ = false;
    bool have_last_ = false;
    uint8_t frto_step_ = 0;  // F-RTO: 0 off, else the step (2, 3) the next ACK runs
};

}  // namespace ferry::net
