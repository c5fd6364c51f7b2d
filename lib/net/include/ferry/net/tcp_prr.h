// Proportional Rate Reduction (RFC 6937) for a sender in SACK-based fast
// recovery: how much may be sent on each ACK while the flight comes down from
// what it was when the loss was found to the ssthresh the congestion control
// chose.
//
// Read first: RFC 6937 §2 (DeliveredData), §3 (the algorithm: proportional
// while pipe > ssthresh, a reduction bound below it; this is PRR-SSRB, the
// bound §6 recommends deploying), §3.1 (the examples the scripted tests
// follow), §4 (properties: the flight ends at ssthresh). RFC 9937, which
// obsoletes RFC 6937 with the same core, states the sending limit as
// cwnd = pipe + sndcnt and the exit as cwnd = ssthresh; both are used here.
//
// Why (issue 16): RFC 6675 alone sends while cwnd - pipe >= SMSS with cwnd
// already at ssthresh: after a single loss it stays silent for half a round
// trip, then sends at the old rate; after a burst of losses (pipe far below
// ssthresh) it sends ssthresh - pipe at once. PRR spreads the reduction over
// the round trip (ssthresh / RecoverFS of what is delivered, e.g. one segment
// for every two delivered with ssthresh = FlightSize / 2), and below ssthresh
// grows the flight back by at most one segment more than was delivered per
// ACK (slow start), so that the losses are repaired by the ACK clock, not by
// a burst.
//
// The caller (tcp_conn) keeps the state machine and the scoreboard: it passes
// SND.UNA and the SACKed octets of every ACK to delivered() (so that the ACK
// that starts recovery has its DeliveredData), calls start() when recovery
// begins and on_ack() on each ACK of it, sends while pipe + SMSS <= cwnd(),
// reports retransmissions with on_retransmit() (new data is counted by how
// far SND.MAX moved), and stops it when recovery ends. Pure: no clock, no
// allocation.
#pragma once

#include <cstdint>

#include "ferry/net/tcp_seq.h"

namespace ferry::net {

class tcp_prr {
public:
    // RFC 6937 §2 DeliveredData of an ACK: "the change in snd.una, plus the
    // (signed) change in SACKd", from SND.UNA and the octets the scoreboard
    // holds as SACKed, both after the ACK. To be called on every ACK, in
    // recovery or not. The first call only takes the starting point (0); a
    // net fall (the scoreboard cleared by an RTO, a peer reneging on SACKed
    // data) counts 0, never negative.
    [[nodiscard]] uint32_t delivered(seq_num una, uint32_t sacked) noexcept;

    // RFC 6937 §3, "At the beginning of recovery": prr_delivered = 0,
    // prr_out = 0, RecoverFS = `recover_fs` (snd.nxt - snd.una, the
    // FlightSize when recovery begins). What is sent above `snd_max` (SND.MAX
    // now) from here on counts in prr_out.
    void start(uint32_t recover_fs, seq_num snd_max) noexcept;
    // Recovery ended (the full ACK, an RTO, an undo).
    void stop() noexcept { active_ = false; }
    [[nodiscard]] bool active() const noexcept { return active_; }

    // RFC 6937 §3, "On every ACK during recovery": prr_delivered +=
    // `delivered` (this ACK's DeliveredData), then with `pipe` (RFC 6675's,
    // after the ACK) and the congestion control's `ssthresh`:
    //   pipe > ssthresh: sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
    //   otherwise (PRR-SSRB): sndcnt = MIN(ssthresh - pipe,
    //                              MAX(prr_delivered - prr_out, DeliveredData) + MSS)
    // never below 0. New data sent since the last call (SND.MAX moved to
    // `snd_max`) joins prr_out first. The sending limit becomes cwnd() =
    // pipe + sndcnt. Returns sndcnt. Precondition: active().
    uint32_t on_ack(uint32_t delivered, uint32_t pipe, uint32_t ssthresh, uint32_t smss,
                    seq_num snd_max) noexcept;
    // "On any data transmission or retransmission: prr_out += (data sent)"
    // for a retransmission of `octets` (new data is counted through SND.MAX).
    void on_retransmit(uint32_t octets) noexcept {
        if (active_) {
            out_ += octets;
        }
    }

    // The sending limit from the last on_ack(): pipe + sndcnt.
    [[nodiscard]] uint32_t cwnd() const noexcept { return cwnd_; }
    [[nodiscard]] uint32_t prr_delivered() const noexcept { return delivered_; }
    // As of the last on_ack() or on_retransmit().
    [[nodiscard]] uint32_t prr_out() const noexcept { return out_; }
    [[nodiscard]] uint32_t recover_fs() const noexcept { return recover_fs_; }

private:
    // DeliveredData's reference point (the previous ACK).
    seq_num una_;
    uint32_t sacked_ = 0;
    bool have_ref_ = false;
    bool active_ = false;
    // The episode (RFC 6937 §3).
    uint32_t recover_fs_ = 0;
    uint32_t delivered_ = 0;  // prr_delivered
    uint32_t out_ = 0;        // prr_out
    uint32_t cwnd_ = 0;       // pipe + sndcnt at the last ACK
    seq_num high_;            // SND.MAX as of the last count of new data
};

}  // namespace ferry::net
