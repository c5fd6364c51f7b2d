// Fault injection on one port's frames: drop, duplicate and reorder, on receive
// and on transmit. For tests and benchmarks only.
//
// Why it exists: our machines have no tc netem (TESTBED.md "Loss, reordering,
// bad packets"). Loss from ferry toward the kernel can be made with nftables,
// but loss toward ferry, reordering and duplication in either direction can
// only be made here. The model is smoltcp's phy::FaultInjector.
//
// Where it sits: one injector per (lcore, port), like the stack. The worker
// passes each rx burst through rx() right after rte_eth_rx_burst and each tx
// batch through tx() right before rte_eth_tx_burst. A port whose [port.fault]
// probabilities are all zero gets no injector at all (fault_injector::enabled),
// so the feature costs nothing when off.
//
// What happens to a frame, decided in this order, each decision a fresh draw
// from a seeded splitmix64 stream (drawn only if its probability is non-zero,
// so a run repeats exactly for the same params, seed and input):
//   drop:      the frame is freed.
//   reorder:   the frame is taken out of the burst and held, if one of the
//              max_held slots is free (else it passes, reorder_no_slot).
//   duplicate: a deep copy (rte_pktmbuf_copy: the stack rewrites frames in
//              place, so a second reference would not do) goes right after the
//              frame, if the array has room (else dup_no_room) and the pool an
//              mbuf (else dup_no_mbuf).
// A held frame comes back at the next call that brings frames, placed after
// them, so it arrives behind frames that were sent after it; when calls bring
// none, at the first call at or after hold_ns past the call that held it.
// next_deadline() tells the reactor when that is, so it does not sleep past a
// held frame.
//
// Single-threaded; reads no clock (now comes in) and calls no NIC function.
// Every probability is an integer threshold: the data path uses no floating
// point, allocates nothing, and touches the mempool only for duplicates.
#pragma once

#include <array>
#include <cstdint>

#include "ferry/base/counter.h"

struct rte_mbuf;
struct rte_mempool;

// clang-format off
#define FERRY_FAULT_COUNTERS(X)                                                                  \
    X(rx_dropped,      "received frames dropped by the fault injector")                          \
    X(rx_duplicated,   "received frames duplicated by the fault injector (a copy follows them)") \
    X(rx_reordered,    "received frames held back by the fault injector and delivered after later ones") \
    X(tx_dropped,      "frames to send dropped by the fault injector")                           \
    X(tx_duplicated,   "frames to send duplicated by the fault injector (a copy follows them)")  \
    X(tx_reordered,    "frames to send held back by the fault injector and sent after later ones") \
    X(dup_no_mbuf,     "duplicates not made: the mbuf pool was empty")                           \
    X(dup_no_room,     "duplicates not made: no room left in the burst array")                   \
    X(reorder_no_slot, "reorders not made: every hold slot was taken")                           \
    X(held_discarded,  "held frames freed when the injector was destroyed")
// clang-format on

namespace ferry::net {

struct alignas(64) fault_counters {
    FERRY_FAULT_COUNTERS(FERRY_COUNTER_MEMBER)
};

#define FERRY_FAULT_COUNTER_FIELD(name, help) FERRY_COUNTER_FIELD(fault_counters, name, help)
inline constexpr ferry::counter_field<fault_counters> fault_counter_fields[] = {
    FERRY_FAULT_COUNTERS(FERRY_FAULT_COUNTER_FIELD)};
#undef FERRY_FAULT_COUNTER_FIELD

enum class fault_direction : uint8_t { rx, tx };

struct fault_params {
    // Probabilities are thresholds out of 2^32: a frame is hit when a uniform
    // 32-bit draw is below the threshold. 0 = never, `always` = every frame;
    // 64 bits wide so that certainty is representable.
    static constexpr uint64_t always = uint64_t{1} << 32;

    uint64_t rx_drop = 0, rx_duplicate = 0, rx_reorder = 0;
    uint64_t tx_drop = 0, tx_duplicate = 0, tx_reorder = 0;
    uint64_t hold_ns = 1'000'000;  // the longest a held frame waits when no frames come
    uint64_t seed = 0;             // used as given; any value (0 too) is a valid stream
};

// A probability as a threshold: p * 2^32 rounded to nearest; p <= 0 or NaN -> 0,
// p >= 1 -> fault_params::always. Control path.
[[nodiscard]] uint64_t fault_threshold(double p) noexcept;

// What a port's faults should be, as the configuration says it ([port.fault]:
// the app fills it): probabilities as doubles, the longest hold, the seed.
struct fault_spec {
    double rx_drop = 0, rx_duplicate = 0, rx_reorder = 0;
    double tx_drop = 0, tx_duplicate = 0, tx_reorder = 0;
    uint32_t reorder_hold_us = 1000;
    uint64_t seed = 0;
    // Any probability above 0 (else the app builds no injector).
    [[nodiscard]] bool enabled() const noexcept {
        return rx_drop > 0 || rx_duplicate > 0 || rx_reorder > 0 || tx_drop > 0 ||
               tx_duplicate > 0 || tx_reorder > 0;
    }
};

// The params of the injector for port `port_index` on one lcore: thresholds of
// the spec's probabilities, hold_ns = reorder_hold_us * 1000, and a seed mixed
// (splitmix64) from spec.seed, port_index and `lcore` (the lcore id, or any
// number that tells the port's lcores apart), so every (lcore, port) draws its
// own stream and a run with the same config repeats. Control path.
[[nodiscard]] fault_params fault_params_of(const fault_spec &spec, uint32_t port_index,
                                           uint32_t lcore) noexcept;

class fault_injector {
public:
    // Frames held at once, per direction. Small: reordering needs only a few
    // frames out of place, and a full set of slots just skips reorders.
    static constexpr uint16_t max_held = 8;
    // Room a caller leaves in its burst array beyond the frames it passes (cap
    // >= n + release_room) so that releasing held frames never has to wait.
    // Duplicates need room too; they are skipped when there is none.
    static constexpr uint16_t release_room = max_held;

    // True if any probability is non-zero. The app builds an injector only then.
    [[nodiscard]] static bool enabled(const fault_params &p) noexcept;

    // `pool` supplies the duplicates (the port's pool); `counters` must outlive
    // the injector.
    fault_injector(const fault_params &p, rte_mempool *pool, fault_counters &counters) noexcept;
    // Frees the frames still held (counted in held_discarded); call
    // release_all() first to pass them on instead.
    ~fault_injector();
    fault_injector(const fault_injector &) = delete;
    fault_injector &operator=(const fault_injector &) = delete;

    // Applies the rx faults in place to pkts[0, n), a burst just received;
    // the array has room for `cap` frames (n <= cap; a smaller cap is taken
    // as n). Dropped frames are freed, frames to reorder are taken out and
    // held, duplicates are inserted right after their original, and frames
    // held earlier are appended after this burst's frames. Order of what
    // remains is otherwise kept. Returns the new count (<= cap): the caller
    // owns pkts[0, return). Frames held earlier come back when n > 0 (all of
    // them, as far as cap - n allows, oldest first) or, when n == 0, those
    // whose hold time is over (as far as cap allows). Call with n == 0 when
    // next_deadline() has passed even if the NIC had nothing.
    [[nodiscard]] uint16_t rx(rte_mbuf **pkts, uint16_t n, uint16_t cap, uint64_t now_ns) noexcept;
    // The same with the tx probabilities, for a batch about to be transmitted.
    // pkts must be an array the caller owns (not the stack's tx_pending(): it
    // may grow and shrink); the caller transmits pkts[0, return).
    [[nodiscard]] uint16_t tx(rte_mbuf **pkts, uint16_t n, uint16_t cap, uint64_t now_ns) noexcept;

    // Hands every frame held in direction d to the caller, oldest first, at
    // most `cap` of them; the rest stay held. Returns how many were written
    // to out[0, return). For shutdown: rx frames to the stack or freed, tx
    // frames transmitted or freed.
    [[nodiscard]] uint16_t release_all(fault_direction d, rte_mbuf **out, uint16_t cap) noexcept;

    // When a held frame's hold time is over (the earliest of them), UINT64_MAX
    // if nothing is held: the direction's rx()/tx() must be called by then.
    [[nodiscard]] uint64_t next_deadline(fault_direction d) const noexcept;
    // The earlier of both directions.
    [[nodiscard]] uint64_t next_deadline() const noexcept;
    [[nodiscard]] bool holding(fault_direction d) const noexcept;
    [[nodiscard]] bool holding() const noexcept;

    [[nodiscard]] const fault_params &params() const noexcept { return params_; }

private:
    struct held_frame {
        rte_mbuf *m;
        uint64_t since_ns;  // when it was taken out
    };
    // One direction: its thresholds, held frames (oldest first) and counters.
    struct lane {
        uint64_t drop, duplicate, reorder;
        ferry::counter &dropped, &duplicated, &reordered;
        std::array<held_frame, max_held> held{};
        uint16_t held_n = 0;
    };

    [[nodiscard]] uint16_t apply(lane &l, rte_mbuf **pkts, uint16_t n, uint16_t cap,
                                 uint64_t now_ns) noexcept;
    // Moves the held frames this call releases (all if `all`, else those whose
    // hold time is over at now_ns), at most `room`, into out; the rest stay.
    uint16_t take_released(lane &l, bool all, uint64_t now_ns, rte_mbuf **out,
                           uint16_t room) noexcept;
    [[nodiscard]] uint64_t deadline_of(const lane &l) const noexcept;
    // True with probability threshold / 2^32; draws only for a non-zero threshold.
    [[nodiscard]] bool hit(uint64_t threshold) noexcept;
    void discard(lane &l) noexcept;

    fault_params params_;
    rte_mempool *pool_;
    fault_counters &ctr_;
    uint64_t rng_;  // splitmix64 state
    lane rx_;
    lane tx_;
};

}  // namespace ferry::net
