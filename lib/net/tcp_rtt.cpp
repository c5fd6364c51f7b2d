#include "ferry/net/tcp_rtt.h"

#include <algorithm>

namespace ferry::net {

rtt_estimator::rtt_estimator(const rtt_config &c) noexcept
    : cfg_(c), rto_(bounded(c.initial_rto_ns)) {}

uint64_t rtt_estimator::bounded(uint64_t rto) const noexcept {
    return std::clamp(rto, cfg_.min_rto_ns, std::max(cfg_.min_rto_ns, cfg_.max_rto_ns));
}

void rtt_estimator::on_sample(uint64_t rtt_ns, uint32_t expected_samples) noexcept {
    // Samples are bounded so that the signed arithmetic below cannot overflow.
    const auto r = static_cast<int64_t>(std::min<uint64_t>(rtt_ns, uint64_t{1} << 62));
    if (!has_sample_) {
        // (2.2) SRTT <- R, RTTVAR <- R/2
        srtt_ = static_cast<uint64_t>(r);
        rttvar_ = static_cast<uint64_t>(r / 2);
        has_sample_ = true;
    } else {
        // (2.3) RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|
        //       SRTT   <- (1 - alpha) * SRTT + alpha * R'
        // RTTVAR first: it uses the SRTT from before this sample. Written as
        // x += (target - x) * gain, with gain = 1/4 (1/8) divided by n.
        const int64_t n = std::max<uint32_t>(expected_samples, 1);
        const auto srtt = static_cast<int64_t>(srtt_);
        const auto rttvar = static_cast<int64_t>(rttvar_);
        const int64_t delta = srtt > r ? srtt - r : r - srtt;
        rttvar_ = static_cast<uint64_t>(rttvar + (delta - rttvar) / (n << beta_shift));
        srtt_ = static_cast<uint64_t>(srtt + (r - srtt) / (n << alpha_shift));
    }
    // (2.3) RTO <- SRTT + max(G, K*RTTVAR), then (2.4)/(2.5) bounds.
    rto_ = bounded(srtt_ + std::max(cfg_.granularity_ns, k * rttvar_));
    backoffs_ = 0;
}

void rtt_estimator::backoff() noexcept {
    rto_ = bounded(rto_ > cfg_.max_rto_ns / 2 ? cfg_.max_rto_ns : rto_ * 2);
    ++backoffs_;
}

void rtt_estimator::on_established_after_syn_timeout() noexcept {
    if (!has_sample_ && rto_ < syn_timeout_rto_ns) {
        rto_ = bounded(syn_timeout_rto_ns);
        backoffs_ = 0;
    }
}

}  // namespace ferry::net
