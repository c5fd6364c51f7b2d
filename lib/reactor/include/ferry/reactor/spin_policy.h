// A lcore's two adaptive spin windows (spin_window.h) and the CPU bound that
// ties them: the windows of gaps that began with work in flight ("busy": a
// request out to an origin or another worker) and of the others ("idle":
// waiting on clients).
//
// Each window alone is the cheapest at its weighted price. For memoryless
// gaps whose mean is near that price the cheapest by a hair can be a spin up
// to the limit, at far more CPU than the fixed modes spend (issue 14: two
// workers at 4k req/s with an idle weight of 500 spun 82% of a core where
// conditional spent 63%). So the pair is bounded by what the fixed modes
// would spend on the same gaps (spin their idle threshold T, then sleep):
// the lcore's mean CPU per gap, over both kinds mixed as they come, stays
// within 1% of theirs. The bound is on the lcore, not on each window, so a
// window that sleeps at once where the fixed modes spin (the idle one, at
// loads where clients' gaps are long) pays for the other to spin past T (a
// slow origin's answer): at 100 req/s a bound per window put every request
// through a second wake-up. Within the bound the busy window comes first (a
// wake-up while a request waits is latency the request sees; its weight
// says so too): it takes the cheapest window that fits with the idle one at
// its least CPU, and the idle one the cheapest of what is left. On a port
// that naps the fixed modes never sleep, and nothing bounds the pair.
//
// Pure logic, as spin_window.
#pragma once

#include <cstdint>

#include "ferry/reactor/spin_window.h"

namespace ferry::reactor {

class spin_policy {
public:
    explicit spin_policy(uint64_t wake_cost_ns, uint64_t sleep_cpu_ns = 5'000) noexcept
        : idle_(wake_cost_ns, sleep_cpu_ns), busy_(wake_cost_ns, sleep_cpu_ns) {}

    // A gap ended (spin_window::on_gap); `expected`: it began with work in
    // flight.
    spin_window::verdict on_gap(uint64_t gap_ns, bool slept, bool expected) noexcept;
    void on_wake_late(uint64_t late_ns) noexcept;
    void on_sleep_cpu(uint64_t cpu_ns) noexcept;
    // The weights (percent) of each window, the nap budget (0: the lcore can
    // sleep) and the fixed modes' idle threshold (0: unbounded).
    void set(uint32_t weight_pct, uint32_t busy_weight_pct, uint64_t nap_budget_ns,
             uint64_t threshold_ns) noexcept;

    [[nodiscard]] const spin_window &idle() const noexcept { return idle_; }
    [[nodiscard]] const spin_window &busy() const noexcept { return busy_; }
    [[nodiscard]] const spin_window &of(bool expected) const noexcept {
        return expected ? busy_ : idle_;
    }
    // The last choice was cut short by the bound: a window is shorter than
    // its weighted price alone would take.
    [[nodiscard]] bool capped() const noexcept { return capped_; }
    // Of the gaps remembered, the share that began with work in flight.
    [[nodiscard]] double busy_share() const noexcept;
    // Mean CPU (ns) per gap with the windows in force, and the fixed modes'
    // on the same gaps.
    [[nodiscard]] double cpu_per_gap() const noexcept;
    [[nodiscard]] double ref_cpu_per_gap() const noexcept;

private:
    void bound() noexcept;
    spin_window idle_, busy_;
    // Gaps of each kind, halved together when their sum reaches twice a
    // window's history: the mix the bound weighs the windows by.
    double n_idle_ = 0, n_busy_ = 0;
    bool capped_ = false;
};

}  // namespace ferry::reactor
