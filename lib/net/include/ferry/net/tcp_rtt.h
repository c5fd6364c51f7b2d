// Round-trip time estimation and the retransmission timeout.
//
// Read first: RFC 6298 §2 (SRTT, RTTVAR, RTO and their bounds), §3 (Karn's
// algorithm), §5 (timer management: backoff in 5.5, the 3-second rule in
// 5.7); RFC 7323 §4 (RTT measurement with timestamps) and Appendix G (the
// per-sample gains when every segment yields a sample).
//
// Time is in nanoseconds and passed in; nothing here reads a clock.
//
// Karn's algorithm (RFC 6298 §3) is the caller's: "RTT samples MUST NOT be
// made using segments that were retransmitted (and thus for which it is
// ambiguous whether the reply was for the first instance of the packet or a
// later instance)" — unless the sample comes from the TSecr of a timestamp
// option, which names the transmission it answers (RFC 7323 §4). The backed-off
// RTO then stays until the next valid sample (RFC 6298 §5.5 and the note after
// §5.7), which on_sample() collapses.
#pragma once

#include <cstdint>

namespace ferry::net {

struct rtt_config {
    uint64_t initial_rto_ns = 1'000'000'000;  // RFC 6298 §2.1: 1 second
    // RFC 6298 §2.4 says 1 s (SHOULD); 200 ms is Linux's TCP_RTO_MIN, the
    // value a LAN-side proxy needs to recover from loss in useful time.
    uint64_t min_rto_ns = 200'000'000;
    // RFC 6298 §2.5: a maximum "MAY be placed on RTO provided it is at least 60
    // seconds"; 120 s is Linux's TCP_RTO_MAX.
    uint64_t max_rto_ns = 120'000'000'000;
    // G, the clock granularity (RFC 6298 §2, §4): the RTO is at least SRTT + G.
    uint64_t granularity_ns = 1'000'000;
};

class rtt_estimator {
public:
    // RFC 6298 §2: alpha = 1/8, beta = 1/4, K = 4.
    static constexpr uint64_t alpha_shift = 3;
    static constexpr uint64_t beta_shift = 2;
    static constexpr uint64_t k = 4;
    // RFC 6298 §5.7.
    static constexpr uint64_t syn_timeout_rto_ns = 3'000'000'000;

    explicit rtt_estimator(const rtt_config &c = {}) noexcept;

    // Takes the RTT measurement `rtt_ns` (RFC 6298 §2.2 for the first, §2.3
    // for later ones) and recomputes RTO <- SRTT + max(G, K*RTTVAR), bounded by
    // min_rto and max_rto (§2.4, §2.5); any backoff is dropped.
    // `expected_samples` > 1 applies RFC 7323 Appendix G for timestamp samples
    // taken on every ACK: alpha' = alpha / ExpectedSamples, beta' = beta /
    // ExpectedSamples, with ExpectedSamples = ceil(FlightSize / (2*SMSS)).
    // Integer arithmetic: each step truncates by less than 1 ns.
    void on_sample(uint64_t rtt_ns, uint32_t expected_samples = 1) noexcept;

    // The retransmission timer expired: RTO <- RTO * 2, at most max_rto
    // (RFC 6298 §5.5).
    void backoff() noexcept;

    // RFC 6298 §5.7: "If the timer expires awaiting the ACK of a SYN segment
    // and the TCP implementation is using an RTO less than 3 seconds, the RTO
    // MUST be re-initialized to 3 seconds when data transmission begins".
    // Call when the handshake completes after a SYN or SYN-ACK was
    // retransmitted. Applied only while there is no RTT sample (as Linux does):
    // a sample, which the timestamp echo can give even then, is better.
    void on_established_after_syn_timeout() noexcept;

    [[nodiscard]] uint64_t rto_ns() const noexcept { return rto_; }
    [[nodiscard]] uint64_t srtt_ns() const noexcept { return srtt_; }
    [[nodiscard]] uint64_t rttvar_ns() const noexcept { return rttvar_; }
    [[nodiscard]] bool has_sample() const noexcept { return has_sample_; }
    // Backoffs since the last sample.
    [[nodiscard]] uint32_t backoffs() const noexcept { return backoffs_; }

private:
    [[nodiscard]] uint64_t bounded(uint64_t rto) const noexcept;

    rtt_config cfg_;
    uint64_t srtt_ = 0;
    uint64_t rttvar_ = 0;
    uint64_t rto_;
    uint32_t backoffs_ = 0;
    bool has_sample_ = false;
};

}  // namespace ferry::net
