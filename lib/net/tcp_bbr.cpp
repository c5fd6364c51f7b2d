#include "ferry/net/tcp_bbr.h"

#include <algorithm>
#include <limits>

#include "ferry/net/tcp_cc.h"

namespace ferry::net {

namespace {

constexpr uint64_t ns_per_ms = 1'000'000;
constexpr uint32_t min_rtt_window_ms = cc_bbr::min_rtt_window_ns / ns_per_ms;
constexpr uint32_t probe_rtt_duration_ms = cc_bbr::probe_rtt_duration_ns / ns_per_ms;

uint32_t to_ms(uint64_t ns) noexcept {
    return static_cast<uint32_t>(ns / ns_per_ms);
}

// a is later than b, on counters that wrap (milliseconds, octets).
bool after(uint32_t a, uint32_t b) noexcept {
    return static_cast<int32_t>(a - b) > 0;
}

}  // namespace

uint64_t cc_bbr::btl_bw() const noexcept {
    return uint64_t{best_bw_[0]} * 1000;
}

uint64_t cc_bbr::bdp(double gain) const noexcept {
    if (best_bw_[0] == 0 || min_rtt_ns_ == 0) {
        return 0;
    }
    // octets/ms x ns / 1e6
    return static_cast<uint64_t>(gain * static_cast<double>(best_bw_[0]) *
                                 static_cast<double>(min_rtt_ns_) / 1e6);
}

uint64_t cc_bbr::target_cwnd(uint32_t smss) const noexcept {
    double gain = cwnd_gain;
    switch (mode_) {
        case bbr_mode::startup:
            gain = high_gain;
            break;
        case bbr_mode::drain:
            gain = 1.0;
            break;
        case bbr_mode::probe_bw:
        case bbr_mode::probe_rtt:
            break;
    }
    const uint64_t b = bdp(gain);
    return b == 0 ? 0 : b + uint64_t{quantum_segments} * smss + aggregation_cwnd();
}

uint32_t cc_bbr::extra_acked() const noexcept {
    return std::max(extra_acked_[0], extra_acked_[1]);
}

uint64_t cc_bbr::aggregation_cwnd() const noexcept {
    if (!full_bw_reached_) {
        return 0;
    }
    // octets/ms x ns / 1e6
    const uint64_t cap = uint64_t{best_bw_[0]} * extra_acked_max_ns / ns_per_ms;
    return std::min<uint64_t>(extra_acked(), cap);
}

bool cc_bbr::update_ack_aggregation(const cc_delivery &d, bool new_round,
                                    uint32_t cwnd) noexcept {
    if (mode_ == bbr_mode::startup) {
        return false;  // BtlBw lags a rate that doubles each round: every ACK would look extra
    }
    if (new_round && ++extra_rounds_ >= extra_acked_window_rounds) {
        extra_rounds_ = 0;
        extra_idx_ ^= 1;
        extra_acked_[extra_idx_] = 0;
    }
    // What BtlBw would have delivered since the epoch began.
    const uint64_t elapsed = d.now_ns > ack_epoch_ns_ ? d.now_ns - ack_epoch_ns_ : 0;
    uint64_t expected = uint64_t{best_bw_[0]} * elapsed / ns_per_ms;
    // The delivery fell back to the rate (or the epoch is long): a new one.
    if (ack_epoch_acked_ <= expected || ack_epoch_acked_ + d.acked >= ack_epoch_reset_octets) {
        ack_epoch_acked_ = 0;
        ack_epoch_ns_ = d.now_ns;
        expected = 0;
    }
    ack_epoch_acked_ += d.acked;
    const uint64_t extra = ack_epoch_acked_ - std::min<uint64_t>(expected, ack_epoch_acked_);
    const uint32_t e = static_cast<uint32_t>(std::min<uint64_t>(extra, cwnd));
    const uint32_t before = extra_acked();
    extra_acked_[extra_idx_] = std::max(extra_acked_[extra_idx_], e);
    return e > before;
}

void cc_bbr::on_rtt(uint64_t rtt_ns, uint64_t now_ns) noexcept {
    if (rtt_ns == 0) {
        return;
    }
    const uint32_t rtt = static_cast<uint32_t>(
        std::min<uint64_t>(rtt_ns, std::numeric_limits<uint32_t>::max()));
    const uint32_t now = to_ms(now_ns);
    const bool expired = min_rtt_ns_ != 0 && after(now, min_rtt_stamp_ms_ + min_rtt_window_ms);
    if (min_rtt_ns_ == 0 || rtt <= min_rtt_ns_ || expired) {
        min_rtt_ns_ = rtt;
        min_rtt_stamp_ms_ = now;
        min_rtt_expired_ = min_rtt_expired_ || expired;
    }
}

// The windowed maximum over bw_window_rounds rounds, in three samples: the
// best of the window, the best since a quarter of it, the best since half
// of it. A sample at least as good as the best restarts all three; when the
// best ages out the next takes over; the later ones are refreshed once
// their part of the window has passed, so that a younger sample is there to
// take over.
void cc_bbr::filter_bw(uint32_t bw) noexcept {
    const uint16_t round = static_cast<uint16_t>(round_count_);
    auto age = [round](uint16_t r) { return static_cast<uint16_t>(round - r); };
    auto set = [this](int i, uint32_t b, uint16_t r) {
        best_bw_[i] = b;
        best_round_[i] = r;
    };
    auto shift = [this, &set]() {  // the best aged out: the next takes over
        set(0, best_bw_[1], best_round_[1]);
        set(1, best_bw_[2], best_round_[2]);
    };
    constexpr uint16_t window = bw_window_rounds;
    if (bw >= best_bw_[0] || age(best_round_[2]) > window) {
        set(0, bw, round);
        set(1, bw, round);
        set(2, bw, round);
        return;
    }
    if (bw >= best_bw_[1]) {
        set(1, bw, round);
        set(2, bw, round);
    } else if (bw >= best_bw_[2]) {
        set(2, bw, round);
    }
    if (age(best_round_[0]) > window) {
        shift();
        set(2, bw, round);
        if (age(best_round_[0]) > window) {
            shift();
        }
    } else if (best_round_[1] == best_round_[0] && age(best_round_[0]) > window / 4) {
        set(1, bw, round);
        set(2, bw, round);
    } else if (best_round_[2] == best_round_[1] && age(best_round_[0]) > window / 2) {
        set(2, bw, round);
    }
}

void cc_bbr::start_round(const cc_delivery &d) noexcept {
    round_valid_ = true;
    round_start_ns_ = d.now_ns;
    round_start_delivered_ = delivered_;
    // Everything in flight now is delivered one round trip later (what is
    // lost in it makes the round end a little later, not early).
    round_end_delivered_ = delivered_ + std::max<uint32_t>(d.in_flight, 1);
    round_app_limited_ = d.app_limited;
}

void cc_bbr::end_round(uint64_t now_ns) noexcept {
    // The length is at least RTprop: ACKs that arrive together (a receiver's
    // batch, a stretch ACK) would otherwise claim a rate the flight cannot have.
    ++round_count_;
    const uint64_t elapsed = std::max<uint64_t>(now_ns - round_start_ns_, min_rtt_ns_);
    if (elapsed == 0) {
        return;
    }
    const double per_ms = static_cast<double>(delivered_ - round_start_delivered_) * 1e6 /
                          static_cast<double>(elapsed);
    const uint32_t sample = static_cast<uint32_t>(
        std::min<double>(per_ms, std::numeric_limits<uint32_t>::max()));
    // An application-limited round measured the application, not the path:
    // it counts only if it raises the estimate. So does a round of PROBE_RTT,
    // whose 4-segment window measures itself (as Linux's bbr_update_min_rtt()
    // marks those rounds application-limited).
    const bool limited = round_app_limited_ || mode_ == bbr_mode::probe_rtt;
    if (!limited || sample >= best_bw_[0]) {
        filter_bw(sample);
    }
    if (!limited) {
        check_full_pipe();
    }
}

void cc_bbr::check_full_pipe() noexcept {
    if (full_bw_reached_) {
        return;
    }
    const uint32_t bw = best_bw_[0];
    if (static_cast<double>(bw) >= static_cast<double>(full_bw_) * full_bw_growth) {
        full_bw_ = bw;
        full_bw_count_ = 0;
        return;
    }
    if (++full_bw_count_ >= full_bw_rounds) {
        full_bw_reached_ = true;
    }
}

void cc_bbr::update_mode(cc_window &w, const cc_delivery &d, uint8_t &events) noexcept {
    if (mode_ == bbr_mode::startup && full_bw_reached_) {
        mode_ = bbr_mode::drain;
        events |= bbr_event::full_pipe;
    }
    // (The drain window is one BDP and the quantum: the flight that fits in it.)
    if (mode_ == bbr_mode::drain && d.in_flight <= target_cwnd(w.smss)) {
        mode_ = bbr_mode::probe_bw;
    }
    const uint32_t now = to_ms(d.now_ns);
    const bool stale = min_rtt_ns_ != 0 && after(now, min_rtt_stamp_ms_ + min_rtt_window_ms);
    if (mode_ != bbr_mode::probe_rtt && (min_rtt_expired_ || stale)) {
        mode_ = bbr_mode::probe_rtt;
        prior_cwnd_ = w.cwnd;
        probe_rtt_done_ms_ = 0;
        events |= bbr_event::probe_rtt;
    }
    min_rtt_expired_ = false;
    if (mode_ != bbr_mode::probe_rtt) {
        return;
    }
    const uint64_t floor = uint64_t{min_cwnd_segments} * w.smss;
    if (probe_rtt_done_ms_ == 0) {
        if (d.in_flight <= floor) {
            // The flight is down: hold it there for 200 ms and one round.
            probe_rtt_done_ms_ = std::max<uint32_t>(now + probe_rtt_duration_ms, 1);
            probe_rtt_round_ = round_count_ + 1;
        }
        return;
    }
    if (!after(probe_rtt_done_ms_, now) && !after(probe_rtt_round_, round_count_)) {
        min_rtt_stamp_ms_ = now;  // what was measured in it is RTprop for 10 s more
        w.cwnd = std::max(w.cwnd, prior_cwnd_);
        mode_ = full_bw_reached_ ? bbr_mode::probe_bw : bbr_mode::startup;
        probe_rtt_done_ms_ = 0;
    }
}

void cc_bbr::set_cwnd(cc_window &w, const cc_delivery &d, bool recovering) noexcept {
    const uint64_t floor = uint64_t{min_cwnd_segments} * w.smss;
    if (!recovering) {
        const uint64_t target = target_cwnd(w.smss);
        uint64_t cwnd = w.cwnd;
        if (target == 0) {
            cwnd += d.acked;  // no model yet: slow start
        } else if (full_bw_reached_) {
            cwnd = std::min(cwnd + d.acked, target);
        } else if (cwnd < target) {
            cwnd += d.acked;
        }
        cwnd = std::max(cwnd, floor);
        w.cwnd = static_cast<uint32_t>(std::min<uint64_t>(cwnd, tcp_cc::max_cwnd));
    }
    if (mode_ == bbr_mode::probe_rtt) {
        w.cwnd = static_cast<uint32_t>(std::min<uint64_t>(w.cwnd, floor));
        w.ssthresh = std::min(w.ssthresh, w.cwnd);
    }
}

uint8_t cc_bbr::on_delivery(cc_window &w, const cc_delivery &d, bool recovering) noexcept {
    uint8_t events = 0;
    delivered_ += d.acked;
    if (!round_valid_) {
        start_round(d);
    } else if (!after(round_end_delivered_, delivered_)) {
        end_round(d.now_ns);
        start_round(d);
        events |= bbr_event::round;
    } else {
        round_app_limited_ = round_app_limited_ || d.app_limited;
    }
    update_mode(w, d, events);
    if (update_ack_aggregation(d, (events & bbr_event::round) != 0, w.cwnd)) {
        events |= bbr_event::aggregation;
    }
    set_cwnd(w, d, recovering);
    return events;
}

void cc_bbr::on_congestion_event(cc_window &w, uint32_t) noexcept {
    w.ssthresh = std::max(w.cwnd, 2 * w.smss);
}

void cc_bbr::on_timeout(cc_window &w, uint32_t, bool repeated) noexcept {
    if (!repeated) {
        w.ssthresh = std::max(w.cwnd, 2 * w.smss);
    }
}

}  // namespace ferry::net
