// Congestion control: NewReno, CUBIC and BBR as one closed set (no virtual
// calls).
//
// Read first: RFC 5681 §3.1 (slow start, congestion avoidance, IW eq. 3,
// ssthresh eq. 4, the loss window), §3.2 (fast retransmit / fast recovery);
// RFC 6582 §3.2 (NewReno: `recover`, full and partial ACKs); RFC 3465 §2
// (byte counting, the limit L); RFC 9438 §4 (CUBIC); RFC 6928 (IW 10).
//
// tcp_cc owns what both algorithms share: cwnd and ssthresh in bytes, slow
// start, the duplicate-ACK count and NewReno's fast recovery (RFC 9438 §4.2:
// CUBIC "does not make any changes to the TCP Fast Recovery and Fast
// Retransmit algorithms"). What differs — growth in congestion avoidance and
// the response to a congestion event or a timeout — lives in cc_new_reno or
// cc_cubic, held in a std::variant.
//
// The caller (the TCB) classifies ACKs: a new ACK advances SND.UNA, a
// duplicate is one that RFC 5681 §2 defines (a)-(e). It also owns Limited
// Transmit (RFC 3042) on the first two duplicates, the retransmissions this
// code asks for, and the timers. Time is passed in, in nanoseconds.
//
// With SACK (RFC 6675) the TCB keeps the scoreboard, counts DupAcks and
// chooses what to retransmit itself; it starts recovery with
// on_sack_recovery() and tcp_cc only sets the windows: ssthresh by the
// algorithm, cwnd = ssthresh for the whole episode (no inflation: the TCB's
// pipe estimate does the accounting, and PRR, tcp_prr.h, paces the sending),
// the same exit on a full ACK (or cwnd = ssthresh after PRR,
// exit_recovery_at_ssthresh()). undo() restores the window of a congestion
// response found spurious (tcp_undo.h).
//
// BBR (tcp_bbr.h) sets the window from its path model instead: it sees every
// ACK that delivers data (on_delivery(), SACKed octets included) and every
// RTT sample (on_rtt()); slow start and congestion avoidance above are not
// used, and a loss does not lower ssthresh below the window it had.
#pragma once

#include <cstdint>
#include <variant>

#include "ferry/net/tcp_bbr.h"
#include "ferry/net/tcp_seq.h"

namespace ferry::net {

enum class cc_algorithm : uint8_t {
    new_reno,
    cubic,
    bbr,
};

[[nodiscard]] constexpr const char *name(cc_algorithm a) noexcept {
    switch (a) {
        case cc_algorithm::new_reno:
            return "new_reno";
        case cc_algorithm::cubic:
            return "cubic";
        case cc_algorithm::bbr:
            return "bbr";
    }
    return "unknown";
}

// What the sender must do after an ACK.
enum class cc_action : uint8_t {
    none = 0,
    // Third duplicate ACK: retransmit the segment at SND.UNA now (RFC 5681
    // §3.2 step 3). The retransmission timer is left alone.
    fast_retransmit,
    // First partial ACK in recovery: retransmit the first unacknowledged
    // segment and restart the retransmission timer (RFC 6582 §3.2 step 3, §4
    // "Impatient" variant).
    retransmit_restart_timer,
    // Later partial ACK: retransmit the first unacknowledged segment.
    retransmit,
};

[[nodiscard]] constexpr const char *name(cc_action a) noexcept {
    switch (a) {
        case cc_action::none:
            return "none";
        case cc_action::fast_retransmit:
            return "fast_retransmit";
        case cc_action::retransmit_restart_timer:
            return "retransmit_restart_timer";
        case cc_action::retransmit:
            return "retransmit";
    }
    return "unknown";
}

struct cc_config {
    cc_algorithm algorithm = cc_algorithm::cubic;
    uint32_t smss = 1460;  // sender MSS, bytes
    // Initial window in segments; 0 picks RFC 5681 §3.1 eq. 3 (2 to 4
    // segments by SMSS). RFC 6928 (Linux's default) is 10.
    uint32_t initial_window_segments = 0;
    // RFC 5681 §3.1: "SHOULD be set arbitrarily high"; lower to start in
    // congestion avoidance (a cached path value).
    uint32_t initial_ssthresh = 0xffffffff;
    bool fast_convergence = true;  // CUBIC, RFC 9438 §4.7
};

// One new ACK (one that advanced SND.UNA).
struct cc_ack {
    seq_num ack;               // SEG.ACK
    uint32_t bytes_acked = 0;  // by how much SND.UNA advanced
    uint32_t flight_size = 0;  // bytes outstanding after this ACK (RFC 5681 §2 FlightSize)
    uint64_t now_ns = 0;
    uint64_t srtt_ns = 0;  // RFC 6298 SRTT (CUBIC's target looks one RTT ahead); 0 if none yet
    // The flight was limited by cwnd (not by the application or the peer's
    // window). When false the window does not grow (RFC 9438 §5.8; RFC 7661).
    bool cwnd_limited = true;
};

// The shared window state, in bytes.
struct cc_window {
    uint32_t cwnd = 0;
    uint32_t ssthresh = 0;
    uint32_t smss = 0;
};

// NewReno growth and reduction (RFC 5681 §3.1).
class cc_new_reno {
public:
    // Congestion avoidance with byte counting (RFC 3465 §2.1, RFC 5681 §3.1):
    // bytes_acked accumulates; each time it reaches cwnd, cwnd grows by SMSS.
    void on_congestion_avoidance(cc_window &w, const cc_ack &a) noexcept;
    // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2*SMSS).
    void on_congestion_event(cc_window &w, uint32_t flight_size) noexcept;
    // The same on a timeout, unless `repeated` (the segment was already
    // retransmitted by the timer: "the value of ssthresh is held constant").
    void on_timeout(cc_window &w, uint32_t flight_size, bool repeated) noexcept;
    void on_app_limited(uint64_t) noexcept {}

    [[nodiscard]] uint32_t bytes_acked() const noexcept { return bytes_acked_; }

private:
    uint32_t bytes_acked_ = 0;
};

// CUBIC (RFC 9438 §4). Windows are kept in bytes: the RFC's segment formulas
// scaled by SMSS, as its §4.1 allows.
class cc_cubic {
public:
    static constexpr double beta = 0.7;  // β_cubic, §4.6
    static constexpr double c = 0.4;     // C, §5.1
    // α_cubic = 3 * (1 - β) / (1 + β), §4.3.
    static constexpr double alpha = 3.0 * (1.0 - beta) / (1.0 + beta);

    explicit cc_cubic(bool fast_convergence) noexcept : fast_convergence_(fast_convergence) {}

    // §4.2-§4.5: a new ACK in congestion avoidance. Starts the epoch on the
    // first one after slow start or a congestion event.
    void on_congestion_avoidance(cc_window &w, const cc_ack &a) noexcept;
    // §4.6 and §4.7: W_max (with fast convergence), cwnd_prior, and
    // ssthresh = max(flight_size * β, 2*SMSS).
    void on_congestion_event(cc_window &w, uint32_t flight_size) noexcept;
    // §4.8: ssthresh as in §4.6 (held if `repeated`), and the next epoch
    // starts with K = 0 and W_max = cwnd_epoch.
    void on_timeout(cc_window &w, uint32_t flight_size, bool repeated) noexcept;
    // An ACK while application-limited: the time since the previous ACK is
    // left out of t (§4.2: "t ... MUST NOT include periods during which cwnd
    // has not been updated due to application-limited behavior").
    void on_app_limited(uint64_t now_ns) noexcept;

    // W_cubic(t) in bytes, eq. 1: C * (t - K)^3 + W_max, t in seconds since
    // the epoch.
    [[nodiscard]] double w_cubic(double t, uint32_t smss) const noexcept;

    [[nodiscard]] bool in_epoch() const noexcept { return epoch_valid_; }
    [[nodiscard]] uint64_t epoch_start_ns() const noexcept { return epoch_start_ns_; }
    [[nodiscard]] double w_max() const noexcept { return w_max_; }            // bytes
    [[nodiscard]] double k() const noexcept { return k_; }                    // seconds, eq. 2
    [[nodiscard]] double w_est() const noexcept { return w_est_; }            // bytes, §4.3
    [[nodiscard]] double cwnd_prior() const noexcept { return cwnd_prior_; }  // bytes
    [[nodiscard]] uint32_t cwnd_epoch() const noexcept { return cwnd_epoch_; }

private:
    void start_epoch(const cc_window &w, uint64_t now_ns) noexcept;

    bool fast_convergence_;
    bool epoch_valid_ = false;
    // The next epoch takes W_max = cwnd_epoch and K = 0: set at start (no
    // congestion event yet, §4.10) and after a timeout (§4.8).
    bool k_zero_ = true;
    uint64_t epoch_start_ns_ = 0;
    uint64_t last_ack_ns_ = 0;
    uint32_t cwnd_epoch_ = 0;
    double w_max_ = 0;
    double k_ = 0;
    double w_est_ = 0;
    double cwnd_prior_ = 0;
    double carry_ = 0;  // fraction of a byte of growth not yet applied to cwnd
};

class tcp_cc {
public:
    static constexpr uint32_t dup_ack_threshold = 3;  // RFC 5681 §3.2
    // No window beyond what the scaled receive window can offer (RFC 7323 §2.3).
    static constexpr uint32_t max_cwnd = 1u << 30;

    // `iss`: our initial sequence number, where RFC 6582 §3.2 step 1 starts
    // `recover`.
    tcp_cc(const cc_config &c, seq_num iss) noexcept;

    // RFC 5681 §3.1 eq. 3: the initial window for a given SMSS.
    [[nodiscard]] static constexpr uint32_t rfc5681_initial_window(uint32_t smss) noexcept {
        return smss > 2190 ? 2 * smss : smss > 1095 ? 3 * smss : 4 * smss;
    }

    // A new ACK. In fast recovery (RFC 6582 §3.2 step 3): a full ACK
    // (SEG.ACK > recover) sets cwnd = min(ssthresh, max(FlightSize, SMSS) +
    // SMSS) and ends recovery; a partial one deflates cwnd by the bytes acked,
    // adds back SMSS if at least SMSS was acked, and asks for a
    // retransmission. Otherwise: slow start while cwnd < ssthresh, cwnd +=
    // min(bytes_acked, L) with L = 2*SMSS (RFC 3465 §2.2), or 1*SMSS in the slow
    // start after a timeout (RFC 3465 §2.3); then the algorithm's congestion
    // avoidance. Returns none, retransmit_restart_timer or retransmit.
    [[nodiscard]] cc_action on_ack(const cc_ack &a) noexcept;

    // A duplicate ACK (RFC 5681 §2). In recovery, cwnd += SMSS (RFC 5681 §3.2
    // step 4). Otherwise the third one starts fast retransmit if SEG.ACK >
    // recover (RFC 6582 §3.2 step 2; older ACKs are left over from an earlier
    // episode): recover = snd_max - 1, the algorithm sets ssthresh, cwnd =
    // ssthresh + 3*SMSS (RFC 5681 §3.2 step 3), and the result is
    // fast_retransmit. `snd_max`: one past the highest sequence number sent.
    [[nodiscard]] cc_action on_dup_ack(seq_num ack, seq_num snd_max, uint32_t flight_size) noexcept;

    // RFC 6675 §5 step (4): the TCB saw DupThresh duplicates or IsLost(HighACK
    // + 1) and starts SACK-based loss recovery. Unless already in recovery or
    // `snd_una` <= recover (RFC 6675 §5.1: no new episode before the
    // cumulative ACK reaches the RecoveryPoint of a timeout or of the previous
    // episode — the check of RFC 6582 §3.2 step 2): recover = snd_max - 1
    // (step 4.1, RecoveryPoint = HighData), the algorithm sets ssthresh from
    // `flight_size` and cwnd = ssthresh (step 4.2). Returns whether recovery
    // began. In this recovery on_ack() leaves cwnd alone on partial ACKs and
    // never asks for a retransmission (NextSeg chooses them); a full ACK ends
    // it as in NewReno; on_dup_ack() does nothing.
    [[nodiscard]] bool on_sack_recovery(seq_num snd_una, seq_num snd_max,
                                        uint32_t flight_size) noexcept;

    // The retransmission timer expired (RFC 5681 §3.1: cwnd = loss window =
    // 1 SMSS; ssthresh from the algorithm unless `repeated`). Ends any fast
    // recovery and sets recover = snd_max - 1 (RFC 6582 §3.2 step 4).
    void on_rto(seq_num snd_max, uint32_t flight_size, bool repeated) noexcept;

    // A SACK recovery paced by PRR (RFC 6937, tcp_prr.h) just ended on a full
    // ACK: cwnd = ssthresh, in place of on_ack()'s min(ssthresh, FlightSize +
    // SMSS). PRR brought the flight to ssthresh (RFC 6937 §4); RFC 9937 and
    // Linux's tcp_end_cwnd_reduction() end the episode so.
    void exit_recovery_at_ssthresh() noexcept { set_cwnd(w_.ssthresh); }
    // The last congestion response was spurious (tcp_undo.h: D-SACK, RFC
    // 3708; F-RTO, RFC 5682): cwnd = max(cwnd, `prior_cwnd`), ssthresh =
    // max(ssthresh, `prior_ssthresh`) (Linux's tcp_undo_cwnd_reduction()),
    // any recovery (or the slow start after a timeout) ends, and recover =
    // `recover` (below SND.UNA: a real loss may start a new episode at once).
    // The algorithm's own state (CUBIC's W_max and epoch, NewReno's byte
    // count) stays as the event left it, as in Linux.
    void undo(uint32_t prior_cwnd, uint32_t prior_ssthresh, seq_num recover) noexcept;

    // Every ACK that delivered data (cumulatively or by SACK), after
    // on_ack() or the SACK processing: BBR's model and window (bbr_event
    // bits); nothing for the loss-based algorithms.
    uint8_t on_delivery(const cc_delivery &d) noexcept;
    // An RTT sample of a segment sent once (BBR's RTprop).
    void on_rtt(uint64_t rtt_ns, uint64_t now_ns) noexcept;

    [[nodiscard]] uint32_t cwnd() const noexcept { return w_.cwnd; }
    [[nodiscard]] uint32_t ssthresh() const noexcept { return w_.ssthresh; }
    [[nodiscard]] uint32_t smss() const noexcept { return w_.smss; }
    [[nodiscard]] bool in_slow_start() const noexcept { return w_.cwnd < w_.ssthresh; }
    [[nodiscard]] bool in_recovery() const noexcept { return in_recovery_; }
    // In a recovery started by on_sack_recovery().
    [[nodiscard]] bool in_sack_recovery() const noexcept { return in_recovery_ && sack_recovery_; }
    [[nodiscard]] uint32_t dup_acks() const noexcept { return dup_acks_; }
    [[nodiscard]] seq_num recover() const noexcept { return recover_; }
    [[nodiscard]] cc_algorithm algorithm() const noexcept {
        return std::holds_alternative<cc_cubic>(algo_)  ? cc_algorithm::cubic
               : std::holds_alternative<cc_bbr>(algo_) ? cc_algorithm::bbr
                                                        : cc_algorithm::new_reno;
    }
    // The algorithm's own state, for telemetry and tests; null for the other one.
    [[nodiscard]] const cc_cubic *cubic() const noexcept { return std::get_if<cc_cubic>(&algo_); }
    [[nodiscard]] const cc_new_reno *new_reno() const noexcept {
        return std::get_if<cc_new_reno>(&algo_);
    }
    [[nodiscard]] const cc_bbr *bbr() const noexcept { return std::get_if<cc_bbr>(&algo_); }

private:
    void set_cwnd(uint64_t bytes) noexcept;

    cc_window w_;
    seq_num recover_;
    uint32_t dup_acks_ = 0;
    bool in_recovery_ = false;
    bool partial_seen_ = false;   // a partial ACK arrived in this recovery
    bool sack_recovery_ = false;  // this recovery is RFC 6675's (on_sack_recovery)
    bool after_rto_ = false;      // in the slow start that follows a timeout
    std::variant<cc_new_reno, cc_cubic, cc_bbr> algo_;
};

}  // namespace ferry::net
