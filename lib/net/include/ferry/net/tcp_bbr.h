// BBR congestion control (v1's model): the window from a measured path
// model, not from loss.
//
// Read first: draft-cardwell-iccrg-bbr-congestion-control-00 §3-§4 (the
// model: BtlBw, the windowed maximum of the delivery rate; RTprop, the
// windowed minimum of the round-trip time; the modes STARTUP, DRAIN,
// PROBE_BW and PROBE_RTT; the congestion window as a gain times the
// bandwidth-delay product), and draft-cheng-iccrg-delivery-rate-estimation
// (what "delivered" counts: octets cumulatively ACKed or SACKed).
//
// Why (issue 16): loss-based control (NewReno, CUBIC) reads every loss as
// congestion. On a path that loses 1-3% of segments at random its window
// settles at a few segments (about 1.2 / sqrt(p)) and the sender runs at a
// fraction of the path's rate; Linux with BBR (this VM's default) kept the
// path full through the same loss, 3-8 times ferry's rate with CUBIC.
//
// What this is, and what it leaves out. The model and the modes are BBR v1's.
// ferry has no pacer (a loop iteration sends what the window allows; a pacer
// at 1.25 x cwnd / RTT was tried and made probes and RTOs more frequent on
// the net_ferry_packet bed, see ACK aggregation below), so the
// window does the work pacing does in BBR: the sender is always
// window-limited, and the pacing gain cycle of PROBE_BW (1.25, 0.75, 1 x 6)
// is not applied; a window of cwnd_gain x BDP keeps probing by itself (a
// larger bottleneck rate drains the standing queue, the round trip falls
// and the measured rate rises). DRAIN empties the queue STARTUP built by
// holding the window at one BDP until the flight is down to it.
//
// Delivery-rate samples are taken per round trip, not per ACK: a round
// starts on an ACK and ends on the first ACK by which everything in flight
// at its start has been delivered; its sample is the octets delivered over
// it divided by its length, and the length is at least RTprop (a round of
// compressed ACKs cannot claim a rate faster than its flight over one
// round-trip propagation time). Samples from rounds in which the sender ran
// out of data, or spent in PROBE_RTT, count only if they raise the estimate
// (the rate measured is then the application's or the 4-segment window's,
// not the path's). The maximum over 10 rounds is kept as three samples
// (Kathleen Nichols' windowed-max: the best, and the best of the later
// parts of the window, to take over when it ages out), so that the state
// stays small (sizeof(tcp_conn) is a per-connection cost).
//
// ACK aggregation (Linux's bbr_update_ack_aggregation(), BBR draft -02
// §4.6.4.3 "extra_acked"): a receiver that acknowledges in batches (GRO, an
// application that reads in bursts and ACKs as it reads) delivers a round's
// data in one or two ACKs long after RTprop. A window of 2 x BtlBw x RTprop
// then runs dry between the batches and the sender stalls until the next
// one, or until a tail loss probe when that one ACK is lost. The octets
// delivered beyond what BtlBw explains since an epoch began (an epoch ends
// when the delivery falls back to the rate) are kept as a windowed maximum
// over 5-10 rounds and added to the target window once the pipe was found
// full, capped at 100 ms at BtlBw (and at the window, per sample). Not
// sampled in STARTUP, where BtlBw lags a rate that doubles every round. As
// in Linux, the first ACK of an epoch counts whole: the window keeps one
// ACK's worth of room. On net_ferry_packet at 3% loss (perf/tcp_bench.py,
// ferry-bbr), the window had settled at 4-9 segments (2 x BDP at RTprop)
// while the client's kernel acknowledged each flight in one ACK some 150-450
// us later; 12-57 probes and 0-4 RTOs per run. With the extra: 1-2 probes
// and 0-1 RTOs, as Linux BBR.
//
// Losses: BBR does not cut the window. In SACK recovery tcp_cc keeps
// ssthresh at the window BBR had (PRR then keeps the flight there, sending
// as much as is delivered, and grows it back below), and after a timeout
// the window restarts from one segment and grows by what is delivered, up
// to the model's target. The model is updated on every ACK that delivers
// data, recovery included.
//
// Pure: no clock (time is passed in, in nanoseconds), no allocation.
#pragma once

#include <cstdint>

namespace ferry::net {

struct cc_window;

// An ACK that delivered data, cumulatively or by SACK.
struct cc_delivery {
    uint32_t acked = 0;        // octets this ACK delivered
    uint32_t in_flight = 0;    // octets sent and not yet ACKed or SACKed, after this ACK
    uint64_t now_ns = 0;
    bool app_limited = false;  // nothing was waiting to be sent: the flight was not window-limited
};

enum class bbr_mode : uint8_t {
    startup,    // grow as slow start does until the rate stops growing
    drain,      // empty the queue STARTUP left: window = 1 x BDP
    probe_bw,   // window = cwnd_gain x BDP
    probe_rtt,  // window = 4 segments for 200 ms and a round: refresh RTprop
};

[[nodiscard]] constexpr const char *name(bbr_mode m) noexcept {
    switch (m) {
        case bbr_mode::startup:
            return "startup";
        case bbr_mode::drain:
            return "drain";
        case bbr_mode::probe_bw:
            return "probe_bw";
        case bbr_mode::probe_rtt:
            return "probe_rtt";
    }
    return "unknown";
}

// What on_delivery() changed, for the TCB's counters.
namespace bbr_event {
inline constexpr uint8_t full_pipe = 1;      // STARTUP found the bottleneck (-> DRAIN)
inline constexpr uint8_t probe_rtt = 2;      // entered PROBE_RTT
inline constexpr uint8_t round = 4;          // a round trip ended
inline constexpr uint8_t aggregation = 8;    // batched ACKs raised the ACK-aggregation allowance
}  // namespace bbr_event

class cc_bbr {
public:
    // STARTUP's gain, 2 / ln 2: the smallest that doubles the delivery rate
    // every round (draft §4.3.1.1).
    static constexpr double high_gain = 2.885;
    static constexpr double cwnd_gain = 2.0;           // PROBE_BW (draft §4.3.3)
    static constexpr uint32_t bw_window_rounds = 10;   // BtlBw filter (draft §4.1.1.4)
    static constexpr uint64_t min_rtt_window_ns = 10'000'000'000;  // RTprop filter (§4.1.2.3)
    static constexpr uint64_t probe_rtt_duration_ns = 200'000'000;  // §4.3.4
    static constexpr uint32_t min_cwnd_segments = 4;   // BBRMinPipeCwnd (§4.3.4)
    // Segments added to the target for the ACKs a receiver coalesces and
    // the segments a loop iteration sends together (Linux: 3 TSO goals).
    static constexpr uint32_t quantum_segments = 3;
    // STARTUP ends when three rounds in a row did not raise the rate by 25%.
    static constexpr uint32_t full_bw_rounds = 3;
    static constexpr double full_bw_growth = 1.25;
    // ACK aggregation: each of the two maxima covers this many rounds; the
    // allowance is at most this long at BtlBw (Linux: 5 rounds, 100 ms).
    static constexpr uint32_t extra_acked_window_rounds = 5;
    static constexpr uint64_t extra_acked_max_ns = 100'000'000;
    // An aggregation epoch that delivered this much starts over (Linux's
    // bbr_ack_epoch_acked_reset_thresh), so the excess cannot wrap.
    static constexpr uint32_t ack_epoch_reset_octets = 1u << 20;

    // An ACK that delivered data (d.acked > 0): the round, the rate filter,
    // the mode, and (outside recovery, `recovering` false) the window: in
    // STARTUP and after a timeout it grows by what was delivered while below
    // the target; once the pipe was found full it is min(cwnd + delivered,
    // target); never below 4 segments, in PROBE_RTT never above. Returns
    // bbr_event bits.
    uint8_t on_delivery(cc_window &w, const cc_delivery &d, bool recovering) noexcept;
    // An RTT sample (a segment sent once and ACKed, timed in ns): RTprop is
    // the smallest in the last 10 s; an older one is replaced by the next
    // sample, and the sender then goes to PROBE_RTT on its next delivery.
    void on_rtt(uint64_t rtt_ns, uint64_t now_ns) noexcept;
    // A loss starts recovery: the window is not reduced. ssthresh = cwnd,
    // which PRR (or RFC 6675's cwnd - pipe) then holds the flight to.
    void on_congestion_event(cc_window &w, uint32_t flight_size) noexcept;
    // A timeout: the TCB sets cwnd to one segment; ssthresh = the window
    // before it (the regrowth is BBR's: by what is delivered, to the target).
    void on_timeout(cc_window &w, uint32_t flight_size, bool repeated) noexcept;

    // The model's target window for the current mode, in bytes (0 before
    // there is a rate sample and an RTT sample).
    [[nodiscard]] uint64_t target_cwnd(uint32_t smss) const noexcept;
    // Bandwidth-delay product times `gain`, in bytes (0 without a model).
    [[nodiscard]] uint64_t bdp(double gain) const noexcept;

    [[nodiscard]] bbr_mode mode() const noexcept { return mode_; }
    [[nodiscard]] uint64_t btl_bw() const noexcept;  // bytes per second; 0 before the first round
    [[nodiscard]] uint64_t rt_prop_ns() const noexcept { return min_rtt_ns_; }  // 0 before a sample
    [[nodiscard]] uint32_t delivered() const noexcept { return delivered_; }  // octets, mod 2^32
    [[nodiscard]] bool full_bw_reached() const noexcept { return full_bw_reached_; }
    // The octets a receiver's batched ACKs delivered beyond BtlBw (the
    // maximum of the last 5-10 rounds), and what of it the window adds.
    [[nodiscard]] uint32_t extra_acked() const noexcept;
    [[nodiscard]] uint64_t aggregation_cwnd() const noexcept;
    [[nodiscard]] uint32_t rounds() const noexcept { return round_count_; }

private:
    void end_round(uint64_t now_ns) noexcept;
    void start_round(const cc_delivery &d) noexcept;
    void check_full_pipe() noexcept;
    void update_mode(cc_window &w, const cc_delivery &d, uint8_t &events) noexcept;
    void set_cwnd(cc_window &w, const cc_delivery &d, bool recovering) noexcept;

    void filter_bw(uint32_t bw) noexcept;
    [[nodiscard]] bool update_ack_aggregation(const cc_delivery &d, bool new_round, uint32_t cwnd) noexcept;

    uint64_t round_start_ns_ = 0;
    // The windowed maximum's three samples: the window's best, then the best
    // of its later parts; rates in octets per millisecond (to 34 Tbit/s, in
    // 8 kbit/s steps), each with the round it was measured in (mod 2^16).
    uint32_t best_bw_[3] = {};
    uint16_t best_round_[3] = {};
    uint32_t delivered_ = 0;           // octets delivered (ACKed or SACKed), mod 2^32
    uint32_t round_start_delivered_ = 0;
    uint32_t round_end_delivered_ = 0;  // the round ends when delivered_ reaches this
    uint32_t min_rtt_ns_ = 0;           // RTprop (0: no sample yet)
    uint32_t min_rtt_stamp_ms_ = 0;     // when it was measured, in ms (mod 2^32)
    uint32_t probe_rtt_done_ms_ = 0;    // PROBE_RTT: when it may end (0: flight not down yet)
    uint32_t full_bw_ = 0;              // octets per ms, STARTUP's reference
    uint32_t round_count_ = 0;
    uint32_t probe_rtt_round_ = 0;  // PROBE_RTT lasts until this round too
    uint32_t prior_cwnd_ = 0;       // the window before PROBE_RTT
    // ACK aggregation: the epoch's start and what it delivered; the two
    // maxima of the extra (the current one, extra_acked_[extra_idx_]).
    uint64_t ack_epoch_ns_ = 0;
    uint32_t ack_epoch_acked_ = 0;
    uint32_t extra_acked_[2] = {};
    bbr_mode mode_ = bbr_mode::startup;
    uint8_t full_bw_count_ : 2 = 0;
    bool round_valid_ : 1 = false;
    bool round_app_limited_ : 1 = false;
    bool full_bw_reached_ : 1 = false;
    bool min_rtt_expired_ : 1 = false;  // the last sample replaced an RTprop older than its window
    uint8_t extra_idx_ : 1 = 0;
    uint8_t extra_rounds_ : 3 = 0;  // rounds since the current maximum started
};

}  // namespace ferry::net
