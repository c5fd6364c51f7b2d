// The adaptive wakeup policy (wakeup_mode::adaptive): how long an idle lcore
// spins before it sleeps, chosen per lcore by pricing a spin and a sleep in
// the same unit, CPU time, against the idle gaps it has seen.
//
// A gap is the time from the last work to the next. Spinning through a gap
// of g costs g of CPU and adds no latency. Sleeping costs the CPU of a
// sleep/wake round trip (S: the thread's CPU time across one, sampled) and
// adds its latency to whatever ends the gap (L: how late the lcore's timer
// wakeups come and how long a peer's doorbell took to get it running, a
// running median of both; a timed nap of length N adds N/2 on top). The
// operator's latency weight λ (latency_weight_pct / 100) says how many ns of
// CPU one ns of that latency is worth, so one sleep is priced
//     C = S + λ · (L [+ N/2])
// and spinning for a window W, then sleeping, costs for a gap g
//     g            if g <= W  (the spin caught the work)
//     W + C        otherwise.
// The window chosen is the W that minimizes the mean of that cost over the
// recent gaps: a small histogram (log-spaced buckets, each with its count
// and the sum of its gaps, halved every few hundred gaps so that old load
// fades). It is the ski-rental choice made with the distribution known: when
// gaps are short against C it spins through them, when they are long, or
// spread like arrivals from independent clients (memoryless: a spin never
// makes the rest of the wait shorter), it sleeps at once. Unlike
// cpuidle-haltpoll's grow/shrink rule, which the first version of this
// policy used, it spins through a gap only when that is cheaper than the
// wake-up it saves at the configured price, so a lcore that sleeps at once
// uses no more CPU per request than a proxy that always sleeps (HAProxy).
//
// A window's CPU alone (sum of min(g, W) plus S per gap past W) and what
// the fixed modes would have spent on the same gaps (their idle threshold
// T: sum of min(g, T) plus S per gap past T) are kept too: spin_policy.h
// bounds a lcore's two windows by the latter.
//
// A nap (a port without rx interrupts) lasts N = sqrt(2·S·R/λ), the length
// that balances the naps' CPU (S per nap over the R the gap still has to run,
// on average) against their latency (λ·N/2), within [min_nap_ns, the
// configured budget].
//
// Pure logic (no clock, no syscalls): the reactor feeds it.
#pragma once

#include <cstdint>

namespace ferry::reactor {

class spin_window {
public:
    static constexpr unsigned nbuckets = 24;
    // No window past this (and none past 4 C: a spin that long never pays
    // for the sleep it saves unless nearly every gap ends just before it).
    static constexpr uint64_t max_limit_ns = 2'000'000;
    static constexpr uint64_t min_limit_ns = 20'000;
    static constexpr uint64_t min_nap_ns = 10'000;
    // The gaps a histogram remembers: every time its count reaches this, all
    // counts and sums are halved.
    static constexpr uint32_t history = 512;
    // Bucket i covers [edge(i), edge(i+1)): 0, 1, 1.5, 2, 3, 4, 6, ... us up
    // to 2,048 us; the last bucket has no upper edge.
    [[nodiscard]] static constexpr uint64_t edge(unsigned i) noexcept {
        if (i == 0) return 0;
        const uint64_t base = uint64_t{1000} << ((i - 1) / 2);
        return (i - 1) % 2 == 0 ? base : base + base / 2;
    }

    // `wake_cost_ns` (L) and `sleep_cpu_ns` (S): the first estimates, until
    // samples come; `latency_weight_pct`: λ in percent.
    explicit spin_window(uint64_t wake_cost_ns, uint64_t sleep_cpu_ns = 5'000,
                         uint32_t latency_weight_pct = 100) noexcept;

    enum class verdict : uint8_t {
        spun,         // the gap ended while spinning
        short_sleep,  // slept, but the gap was shorter than C: a spin would have been cheaper
        long_sleep,   // slept through a gap longer than C: the sleep paid
    };
    // An idle gap ended (work came) `gap_ns` after it began; `slept`: the
    // lcore slept in it, and then learned of the work a sleep's latency
    // after it came: that much (L, plus N/2 for a nap) is taken off before
    // the gap is recorded.
    verdict on_gap(uint64_t gap_ns, bool slept) noexcept;
    // A timer wakeup came `late_ns` after its deadline, or a doorbell woke
    // the lcore `late_ns` after it was rung: an L sample.
    void on_wake_late(uint64_t late_ns) noexcept;
    // One sleep/wake round trip took `cpu_ns` of the thread's CPU: an S sample.
    void on_sleep_cpu(uint64_t cpu_ns) noexcept;
    // λ in percent (0: latency is free, sleep whenever a spin costs more
    // than S; 10000: a ns of latency is worth 100 ns of CPU).
    void set_latency_weight(uint32_t pct) noexcept;
    // The longest nap (a port without rx interrupts); 0: sleeps end by
    // interrupt or doorbell, no nap.
    void set_nap_budget(uint64_t ns) noexcept;
    // The fixed modes' idle threshold T whose CPU on the same gaps is kept
    // (cpu_reference_cost); the gaps remembered are counted afresh.
    void set_cpu_reference(uint64_t threshold_ns) noexcept;
    // Every window the policy may choose now, edge(0), edge(1), ... up to the
    // limit: its mean cost per remembered gap at the weighted price and its
    // mean CPU per gap. Returns how many (at least 1: W = 0).
    unsigned options(double cost[nbuckets], double cpu[nbuckets]) const noexcept;
    // Takes window edge(i) (and the nap for it) over the weighted choice,
    // until the next choice (choices() counts them).
    void force(unsigned i) noexcept;
    // The cheapest of n options' costs (a tie keeps the shorter window).
    [[nodiscard]] static unsigned cheapest(const double cost[], unsigned n) noexcept;
    [[nodiscard]] uint32_t choices() const noexcept { return choices_; }

    [[nodiscard]] uint64_t window() const noexcept { return window_; }
    // The longest window the policy would choose now.
    [[nodiscard]] uint64_t limit() const noexcept { return limit_; }
    [[nodiscard]] uint64_t wake_cost() const noexcept { return wake_cost_; }
    [[nodiscard]] uint64_t sleep_cpu() const noexcept { return sleep_cpu_; }
    // C, in ns of CPU.
    [[nodiscard]] uint64_t price() const noexcept { return price_; }
    // The latency a sleep adds: L, plus half a nap when napping.
    [[nodiscard]] uint64_t sleep_latency() const noexcept;
    // The nap length to take now (the budget until gaps are known; 0 with no
    // budget).
    [[nodiscard]] uint64_t nap() const noexcept { return nap_; }
    [[nodiscard]] uint32_t latency_weight_pct() const noexcept { return weight_pct_; }
    [[nodiscard]] uint64_t nap_budget() const noexcept { return nap_budget_; }
    [[nodiscard]] uint64_t cpu_reference() const noexcept { return ref_threshold_; }
    // The CPU (ns) the remembered gaps cost, or would have cost, with the
    // window in force now, and with the fixed modes' threshold; the latter
    // per remembered gap (0 with none).
    [[nodiscard]] double cpu_now() const noexcept;
    [[nodiscard]] double cpu_reference_cost() const noexcept;
    [[nodiscard]] double ref_cpu_per_gap() const noexcept;
    // Gaps in the histogram now (after halvings), for telemetry and tests.
    [[nodiscard]] double remembered() const noexcept { return total_; }

private:
    void reprice() noexcept;
    void choose() noexcept;
    uint64_t window_ = 0;
    uint64_t limit_ = 0;
    uint64_t wake_cost_ = 0;
    uint64_t sleep_cpu_ = 0;
    uint64_t price_ = 0;
    uint64_t nap_budget_ = 0;
    uint64_t nap_ = 0;
    uint64_t ref_threshold_ = 0;
    uint32_t weight_pct_ = 100;
    uint32_t since_choice_ = 0;
    uint32_t choices_ = 0;
    double total_ = 0;
    double count_[nbuckets] = {};
    double sum_[nbuckets] = {};
    // The fixed modes on the same gaps: the sum of min(g, T), and the gaps
    // past T (each a sleep); halved with the histogram.
    double ref_spin_ = 0;
    double ref_sleeps_ = 0;
};

}  // namespace ferry::reactor
