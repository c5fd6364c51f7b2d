#include "ferry/reactor/spin_policy.h"

#include <initializer_list>

namespace ferry::reactor {

namespace {
// Over the fixed modes' CPU by this much at most: a pair that costs what
// they do (every gap caught by both) is not lost to rounding in the sums.
constexpr double slack = 1.01;

// The cheapest option whose CPU fits in `room` (a tie keeps the shorter
// window); with none, the one with the least CPU.
unsigned cheapest_within(const double cost[], const double cpu[], unsigned n, double room) noexcept {
    unsigned best = n, least = 0;
    for (unsigned i = 0; i < n; ++i) {
        if (cpu[i] < cpu[least]) least = i;
        if (cpu[i] <= room && (best == n || cost[i] < cost[best])) best = i;
    }
    return best != n ? best : least;
}
}  // namespace

double spin_policy::busy_share() const noexcept {
    const double n = n_idle_ + n_busy_;
    return n > 0 ? n_busy_ / n : 0.0;
}

double spin_policy::cpu_per_gap() const noexcept {
    const double b = busy_share();
    const double ni = idle_.remembered(), nb = busy_.remembered();
    return (1 - b) * (ni > 0 ? idle_.cpu_now() / ni : 0) + b * (nb > 0 ? busy_.cpu_now() / nb : 0);
}

double spin_policy::ref_cpu_per_gap() const noexcept {
    const double b = busy_share();
    return (1 - b) * idle_.ref_cpu_per_gap() + b * busy_.ref_cpu_per_gap();
}

void spin_policy::bound() noexcept {
    double ci[spin_window::nbuckets], ui[spin_window::nbuckets];
    double cb[spin_window::nbuckets], ub[spin_window::nbuckets];
    const unsigned ni = idle_.options(ci, ui), nb = busy_.options(cb, ub);
    capped_ = false;
    if (idle_.cpu_reference() == 0 || idle_.nap_budget() != 0 || n_idle_ + n_busy_ <= 0) {
        // Unbounded: each window its weighted choice (undoing a bound).
        busy_.force(spin_window::cheapest(cb, nb));
        idle_.force(spin_window::cheapest(ci, ni));
        return;
    }
    const double b = busy_share(), a = 1 - b;
    const double budget = slack * ref_cpu_per_gap();
    // Per-gap CPU scaled to the lcore's mix: a window's share of the budget.
    for (unsigned i = 0; i < ni; ++i) ui[i] *= a;
    for (unsigned j = 0; j < nb; ++j) ub[j] *= b;
    double idle_least = ui[0];
    for (unsigned i = 1; i < ni; ++i) idle_least = ui[i] < idle_least ? ui[i] : idle_least;
    const unsigned j = cheapest_within(cb, ub, nb, budget - idle_least);
    const unsigned i = cheapest_within(ci, ui, ni, budget - ub[j]);
    capped_ = j < spin_window::cheapest(cb, nb) || i < spin_window::cheapest(ci, ni);
    busy_.force(j);
    idle_.force(i);
}

spin_window::verdict spin_policy::on_gap(uint64_t gap_ns, bool slept, bool expected) noexcept {
    (expected ? n_busy_ : n_idle_) += 1;
    if (n_idle_ + n_busy_ >= 2.0 * spin_window::history) {
        n_idle_ /= 2;
        n_busy_ /= 2;
    }
    const uint32_t before = idle_.choices() + busy_.choices();
    const spin_window::verdict v = (expected ? busy_ : idle_).on_gap(gap_ns, slept);
    // The bound is redone whenever a window chose again (every few gaps, or
    // after a sleep): a choice in between would undo it.
    if (idle_.choices() + busy_.choices() != before) bound();
    return v;
}

void spin_policy::on_wake_late(uint64_t late_ns) noexcept {
    idle_.on_wake_late(late_ns);
    busy_.on_wake_late(late_ns);
}

void spin_policy::on_sleep_cpu(uint64_t cpu_ns) noexcept {
    idle_.on_sleep_cpu(cpu_ns);
    busy_.on_sleep_cpu(cpu_ns);
}

void spin_policy::set(uint32_t weight_pct, uint32_t busy_weight_pct, uint64_t nap_budget_ns,
                      uint64_t threshold_ns) noexcept {
    const uint32_t before = idle_.choices() + busy_.choices();
    const bool ref_changed = threshold_ns != idle_.cpu_reference();
    idle_.set_latency_weight(weight_pct);
    busy_.set_latency_weight(busy_weight_pct);
    for (spin_window *w : {&idle_, &busy_}) {
        w->set_nap_budget(nap_budget_ns);
        w->set_cpu_reference(threshold_ns);
    }
    if (ref_changed || idle_.choices() + busy_.choices() != before) bound();
}

}  // namespace ferry::reactor
