#include "ferry/net/tcp_cc.h"

#include <algorithm>
#include <cmath>

namespace ferry::net {

namespace {

constexpr double ns_per_s = 1e9;

// max(x, 2*SMSS): the floor RFC 5681 eq. 4 and RFC 9438 §4.6 put on ssthresh.
uint32_t at_least_two_segments(uint64_t x, uint32_t smss) noexcept {
    return static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(x, 2ull * smss), tcp_cc::max_cwnd));
}

// §4.6: ssthresh = flight_size * β_cubic, in integers (β = 7/10) so that the
// result does not hang on the rounding of 0.7.
uint64_t cubic_ssthresh(uint32_t flight_size) noexcept {
    static_assert(cc_cubic::beta == 0.7);
    return uint64_t{flight_size} * 7 / 10;
}

}  // namespace

// ---- NewReno -------------------------------------------------------------

void cc_new_reno::on_congestion_avoidance(cc_window &w, const cc_ack &a) noexcept {
    // RFC 3465 §2.1: "bytes_acked ... When bytes_acked becomes greater than or
    // equal to the value of the congestion window, bytes_acked is reduced by
    // the value of cwnd. Next, cwnd is incremented by a full-sized segment".
    bytes_acked_ += a.bytes_acked;
    if (bytes_acked_ >= w.cwnd) {
        bytes_acked_ -= w.cwnd;
        w.cwnd = std::min(w.cwnd + w.smss, tcp_cc::max_cwnd);
        // One SMSS per ACK (RFC 3465 §2.1); what a stretch ACK covering
        // several windows leaves over carries to the next ACK, but never more
        // than one window less a byte.
        bytes_acked_ = std::min(bytes_acked_, w.cwnd - 1);
    }
}

void cc_new_reno::on_congestion_event(cc_window &w, uint32_t flight_size) noexcept {
    w.ssthresh = at_least_two_segments(flight_size / 2, w.smss);
    bytes_acked_ = 0;
}

void cc_new_reno::on_timeout(cc_window &w, uint32_t flight_size, bool repeated) noexcept {
    if (!repeated) {
        w.ssthresh = at_least_two_segments(flight_size / 2, w.smss);
    }
    bytes_acked_ = 0;
}

// ---- CUBIC ---------------------------------------------------------------

double cc_cubic::w_cubic(double t, uint32_t smss) const noexcept {
    const double d = t - k_;
    return c * smss * d * d * d + w_max_;
}

void cc_cubic::start_epoch(const cc_window &w, uint64_t now_ns) noexcept {
    epoch_valid_ = true;
    epoch_start_ns_ = now_ns;
    last_ack_ns_ = now_ns;
    cwnd_epoch_ = w.cwnd;
    // §4.3: "W_est is set equal to cwnd_epoch at the start of the congestion
    // avoidance stage."
    w_est_ = w.cwnd;
    carry_ = 0;
    if (k_zero_) {
        // §4.8 (after a timeout) and §4.10 (no congestion event yet): K = 0,
        // W_max = the cwnd at the beginning of this stage; cwnd_prior = cwnd
        // when leaving the first slow start.
        k_zero_ = false;
        w_max_ = w.cwnd;
        k_ = 0;
        if (cwnd_prior_ == 0) {
            cwnd_prior_ = w.cwnd;
        }
        return;
    }
    // Eq. 2: K = cubic_root((W_max - cwnd_epoch) / C), in segments. A W_max
    // below cwnd_epoch gives a negative K: W_cubic(0) is still cwnd_epoch.
    k_ = std::cbrt((w_max_ - w.cwnd) / (c * w.smss));
}

void cc_cubic::on_congestion_avoidance(cc_window &w, const cc_ack &a) noexcept {
    if (!epoch_valid_) {
        start_epoch(w, a.now_ns);
    }
    last_ack_ns_ = a.now_ns;
    const double cwnd = w.cwnd;
    const double acked = a.bytes_acked;
    const double t = static_cast<double>(a.now_ns - epoch_start_ns_) / ns_per_s;

    // §4.3, eq. 4: W_est += α_cubic * segments_acked / cwnd (in bytes: times
    // SMSS). α_cubic becomes 1 once W_est reaches cwnd_prior.
    const double a_cubic = w_est_ >= cwnd_prior_ ? 1.0 : alpha;
    w_est_ += a_cubic * w.smss * acked / cwnd;

    if (w_cubic(t, w.smss) < w_est_) {
        // Reno-friendly region: "cwnd SHOULD be set to W_est". Never a
        // decrease: growth toward W_cubic(t + RTT) may already have passed it.
        w.cwnd =
            std::max(w.cwnd, static_cast<uint32_t>(std::min<double>(w_est_, tcp_cc::max_cwnd)));
        carry_ = 0;
        return;
    }
    // §4.2 target, then §4.4 (concave) / §4.5 (convex): cwnd grows by
    // (target - cwnd) / cwnd per segment acknowledged.
    const double rtt = static_cast<double>(a.srtt_ns) / ns_per_s;
    const double target = std::clamp(w_cubic(t + rtt, w.smss), cwnd, 1.5 * cwnd);
    const double grow = (target - cwnd) * acked / cwnd + carry_;
    const double whole = std::floor(grow);
    carry_ = grow - whole;
    w.cwnd = static_cast<uint32_t>(std::min<double>(cwnd + whole, tcp_cc::max_cwnd));
}

void cc_cubic::on_congestion_event(cc_window &w, uint32_t flight_size) noexcept {
    const double cwnd = w.cwnd;
    // §4.7 fast convergence: a flow whose saturation point fell releases more.
    w_max_ = fast_convergence_ && cwnd < w_max_ ? cwnd * (1.0 + beta) / 2.0 : cwnd;
    cwnd_prior_ = cwnd;
    w.ssthresh = at_least_two_segments(cubic_ssthresh(flight_size), w.smss);
    epoch_valid_ = false;
    k_zero_ = false;
}

void cc_cubic::on_timeout(cc_window &w, uint32_t flight_size, bool repeated) noexcept {
    if (!repeated) {
        cwnd_prior_ = w.cwnd;
        w.ssthresh = at_least_two_segments(cubic_ssthresh(flight_size), w.smss);
    }
    epoch_valid_ = false;
    k_zero_ = true;
}

void cc_cubic::on_app_limited(uint64_t now_ns) noexcept {
    if (epoch_valid_ && now_ns > last_ack_ns_) {
        epoch_start_ns_ += now_ns - last_ack_ns_;
    }
    last_ack_ns_ = now_ns;
}

// ---- shared: slow start and NewReno fast recovery --------------------------

namespace {

using algorithm_state = std::variant<cc_new_reno, cc_cubic, cc_bbr>;

algorithm_state make_algorithm(const cc_config &c) noexcept {
    switch (c.algorithm) {
        case cc_algorithm::cubic:
            return algorithm_state(std::in_place_type<cc_cubic>, c.fast_convergence);
        case cc_algorithm::bbr:
            return algorithm_state(std::in_place_type<cc_bbr>);
        case cc_algorithm::new_reno:
            break;
    }
    return algorithm_state(std::in_place_type<cc_new_reno>);
}

}  // namespace

tcp_cc::tcp_cc(const cc_config &c, seq_num iss) noexcept : recover_(iss), algo_(make_algorithm(c)) {
    w_.smss = std::max<uint32_t>(c.smss, 1);
    w_.ssthresh = c.initial_ssthresh;
    set_cwnd(c.initial_window_segments != 0 ? uint64_t{c.initial_window_segments} * w_.smss
                                            : rfc5681_initial_window(w_.smss));
}

void tcp_cc::set_cwnd(uint64_t bytes) noexcept {
    w_.cwnd = static_cast<uint32_t>(std::min<uint64_t>(bytes, max_cwnd));
}

cc_action tcp_cc::on_ack(const cc_ack &a) noexcept {
    dup_acks_ = 0;
    if (in_recovery_) {
        if (a.ack > recover_) {
            // Full acknowledgment: deflate, option (1), which avoids a burst.
            set_cwnd(std::min<uint64_t>(w_.ssthresh, std::max(a.flight_size, w_.smss) + w_.smss));
            in_recovery_ = false;
            sack_recovery_ = false;
            return cc_action::none;
        }
        if (sack_recovery_) {
            // RFC 6675 §5 (B)-(C): cwnd stays at ssthresh; the TCB sends
            // while cwnd - pipe >= SMSS.
            return cc_action::none;
        }
        // Partial acknowledgment: "partial window deflation". Never below one
        // segment, so the retransmission asked for may go.
        uint64_t cwnd = w_.cwnd > a.bytes_acked ? w_.cwnd - a.bytes_acked : 0;
        if (a.bytes_acked >= w_.smss) {
            cwnd += w_.smss;
        }
        set_cwnd(std::max<uint64_t>(cwnd, w_.smss));
        const bool first = !partial_seen_;
        partial_seen_ = true;
        return first ? cc_action::retransmit_restart_timer : cc_action::retransmit;
    }
    if (std::holds_alternative<cc_bbr>(algo_)) {
        after_rto_ = false;
        return cc_action::none;  // the window is the model's: on_delivery()
    }
    if (!a.cwnd_limited) {
        if (auto *cubic = std::get_if<cc_cubic>(&algo_)) {
            cubic->on_app_limited(a.now_ns);
        }
        return cc_action::none;
    }
    if (w_.cwnd < w_.ssthresh) {
        const uint32_t limit = after_rto_ ? w_.smss : 2 * w_.smss;
        set_cwnd(uint64_t{w_.cwnd} + std::min(a.bytes_acked, limit));
        return cc_action::none;
    }
    after_rto_ = false;
    if (auto *cubic = std::get_if<cc_cubic>(&algo_)) {
        cubic->on_congestion_avoidance(w_, a);
    } else if (auto *reno = std::get_if<cc_new_reno>(&algo_)) {
        reno->on_congestion_avoidance(w_, a);
    }
    return cc_action::none;
}

cc_action tcp_cc::on_dup_ack(seq_num ack, seq_num snd_max, uint32_t flight_size) noexcept {
    if (in_recovery_ && sack_recovery_) {
        return cc_action::none;  // no inflation: RFC 6675 counts pipe instead
    }
    if (in_recovery_) {
        // RFC 5681 §3.2 step 4: each further duplicate means a segment left
        // the network; inflate.
        set_cwnd(uint64_t{w_.cwnd} + w_.smss);
        return cc_action::none;
    }
    if (++dup_acks_ != dup_ack_threshold || !(ack > recover_)) {
        return cc_action::none;
    }
    recover_ = snd_max - 1;
    std::visit([&](auto &algo) { algo.on_congestion_event(w_, flight_size); }, algo_);
    set_cwnd(uint64_t{w_.ssthresh} + 3ull * w_.smss);
    in_recovery_ = true;
    partial_seen_ = false;
    sack_recovery_ = false;
    return cc_action::fast_retransmit;
}

bool tcp_cc::on_sack_recovery(seq_num snd_una, seq_num snd_max, uint32_t flight_size) noexcept {
    if (in_recovery_ || !(snd_una > recover_)) {
        return false;
    }
    recover_ = snd_max - 1;
    std::visit([&](auto &algo) { algo.on_congestion_event(w_, flight_size); }, algo_);
    set_cwnd(w_.ssthresh);
    dup_acks_ = 0;
    in_recovery_ = true;
    partial_seen_ = false;
    sack_recovery_ = true;
    return true;
}

void tcp_cc::on_rto(seq_num snd_max, uint32_t flight_size, bool repeated) noexcept {
    std::visit([&](auto &algo) { algo.on_timeout(w_, flight_size, repeated); }, algo_);
    set_cwnd(w_.smss);
    recover_ = snd_max - 1;
    in_recovery_ = false;
    sack_recovery_ = false;
    dup_acks_ = 0;
    after_rto_ = true;
}

uint8_t tcp_cc::on_delivery(const cc_delivery &d) noexcept {
    auto *bbr = std::get_if<cc_bbr>(&algo_);
    return bbr != nullptr ? bbr->on_delivery(w_, d, in_recovery_) : 0;
}

void tcp_cc::on_rtt(uint64_t rtt_ns, uint64_t now_ns) noexcept {
    if (auto *bbr = std::get_if<cc_bbr>(&algo_)) {
        bbr->on_rtt(rtt_ns, now_ns);
    }
}

void tcp_cc::undo(uint32_t prior_cwnd, uint32_t prior_ssthresh, seq_num recover) noexcept {
    set_cwnd(std::max(w_.cwnd, prior_cwnd));
    w_.ssthresh = std::max(w_.ssthresh, prior_ssthresh);
    recover_ = recover;
    in_recovery_ = false;
    sack_recovery_ = false;
    partial_seen_ = false;
    dup_acks_ = 0;
    after_rto_ = false;  // an undone timeout has no slow start of its own
}

}  // namespace ferry::net
