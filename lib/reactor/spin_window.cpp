#include "ferry/reactor/spin_window.h"

#include <algorithm>
#include <cmath>

namespace ferry::reactor {

namespace {
// Gaps past a second are all "very long": capped so the sums stay exact enough.
constexpr uint64_t gap_cap_ns = 1'000'000'000;
// Between two choices a lcore records this many gaps it spun through (a
// sleep makes a choice at once: it is rare and was the expensive case).
constexpr uint32_t choose_every = 16;
}  // namespace

spin_window::spin_window(uint64_t wake_cost_ns, uint64_t sleep_cpu_ns,
                         uint32_t latency_weight_pct) noexcept
    : wake_cost_(std::min(wake_cost_ns, max_limit_ns)),
      sleep_cpu_(std::min(sleep_cpu_ns, max_limit_ns)),
      weight_pct_(latency_weight_pct) {
    reprice();
}

uint64_t spin_window::sleep_latency() const noexcept {
    return wake_cost_ + (nap_budget_ != 0 ? nap_ / 2 : 0);
}

void spin_window::reprice() noexcept {
    price_ = sleep_cpu_ + uint64_t{weight_pct_} * sleep_latency() / 100;
    limit_ = std::clamp<uint64_t>(4 * price_, min_limit_ns, max_limit_ns);
    window_ = std::min(window_, limit_);
}

void spin_window::set_latency_weight(uint32_t pct) noexcept {
    if (pct == weight_pct_) return;
    weight_pct_ = pct;
    reprice();
    choose();
}

void spin_window::set_nap_budget(uint64_t ns) noexcept {
    if (ns == nap_budget_) return;
    nap_budget_ = ns;
    nap_ = std::min(nap_ == 0 ? ns : nap_, ns);
    reprice();
    choose();
}

void spin_window::set_cpu_reference(uint64_t threshold_ns) noexcept {
    if (threshold_ns == ref_threshold_) return;
    ref_threshold_ = threshold_ns;
    // The gaps remembered, counted afresh against the new threshold from
    // the histogram (a bucket that straddles it counts as its mean gap).
    ref_spin_ = ref_sleeps_ = 0;
    const double t = static_cast<double>(threshold_ns);
    for (unsigned i = 0; i < nbuckets; ++i) {
        if (count_[i] <= 0) continue;
        if (sum_[i] / count_[i] <= t) {
            ref_spin_ += sum_[i];
        } else {
            ref_spin_ += count_[i] * t;
            ref_sleeps_ += count_[i];
        }
    }
    choose();
}

double spin_window::cpu_reference_cost() const noexcept {
    return ref_spin_ + ref_sleeps_ * static_cast<double>(sleep_cpu_);
}

double spin_window::cpu_now() const noexcept {
    double below = 0, tail = total_;
    for (unsigned i = 0; i < nbuckets && edge(i + 1) <= window_; ++i) {
        below += sum_[i];
        tail -= count_[i];
    }
    return below + tail * static_cast<double>(window_ + sleep_cpu_);
}

void spin_window::choose() noexcept {
    since_choice_ = 0;
    const double c = static_cast<double>(price_), s = static_cast<double>(sleep_cpu_);
    // The CPU bound (none while napping: the fixed modes never sleep there).
    const bool bounded = ref_threshold_ != 0 && nap_budget_ == 0;
    // 1% over, so that a window that costs what the threshold does (every
    // gap caught by both) is not lost to rounding in the sums.
    const double budget = cpu_reference_cost() * 1.01;
    // W = 0: every gap costs a sleep. `best`: the cheapest at the weighted
    // price; `fit`: the cheapest within the bound, or failing any, the
    // cheapest in CPU.
    double tail = total_, below = 0, best = tail * c;
    unsigned best_i = 0, fit_i = 0;
    double fit = best, fit_cpu = tail * s;
    bool fits = !bounded || fit_cpu <= budget;
    for (unsigned i = 1; i < nbuckets && edge(i) <= limit_; ++i) {
        // W = edge(i): bucket i-1's gaps are caught by the spin, the rest
        // cost the spin and a sleep.
        tail -= count_[i - 1];
        below += sum_[i - 1];
        const double w = static_cast<double>(edge(i));
        const double cost = below + tail * (w + c);
        if (cost < best) {  // a tie keeps the shorter window
            best = cost;
            best_i = i;
        }
        if (!bounded) continue;
        const double cpu = below + tail * (w + s);
        if (cpu <= budget ? (!fits || cost < fit) : (!fits && cpu < fit_cpu)) {
            fits = fits || cpu <= budget;
            fit = cost;
            fit_cpu = cpu;
            fit_i = i;
        }
    }
    if (!bounded) fit_i = best_i;
    capped_ = fit_i < best_i;
    window_ = edge(fit_i);
    best_i = fit_i;

    if (nap_budget_ == 0) return;
    // The nap length for what is left of a gap that outlasts the window.
    double tail_n = 0, tail_sum = 0;
    for (unsigned i = best_i; i < nbuckets; ++i) {
        tail_n += count_[i];
        tail_sum += sum_[i];
    }
    uint64_t nap = nap_budget_;
    if (tail_n > 0 && weight_pct_ != 0) {
        const double rest = std::max(0.0, tail_sum / tail_n - static_cast<double>(window_));
        const double lambda = weight_pct_ / 100.0;
        const double n = std::sqrt(2.0 * static_cast<double>(sleep_cpu_) * rest / lambda);
        nap = static_cast<uint64_t>(std::min(n, static_cast<double>(nap_budget_)));
    }
    nap_ = std::max(nap, std::min(min_nap_ns, nap_budget_));
    reprice();
}

spin_window::verdict spin_window::on_gap(uint64_t gap_ns, bool slept) noexcept {
    if (slept) {
        const uint64_t late = sleep_latency();
        gap_ns = gap_ns > late ? gap_ns - late : 0;
    }
    const verdict v = !slept                ? verdict::spun
                      : gap_ns <= price_ ? verdict::short_sleep
                                         : verdict::long_sleep;
    unsigned b = nbuckets - 1;
    while (b > 0 && gap_ns < edge(b)) --b;
    count_[b] += 1;
    sum_[b] += static_cast<double>(std::min(gap_ns, gap_cap_ns));
    total_ += 1;
    ref_spin_ += static_cast<double>(std::min(gap_ns, ref_threshold_));
    if (gap_ns > ref_threshold_) ref_sleeps_ += 1;
    if (total_ >= history) {
        for (unsigned i = 0; i < nbuckets; ++i) {
            count_[i] /= 2;
            sum_[i] /= 2;
        }
        total_ /= 2;
        ref_spin_ /= 2;
        ref_sleeps_ /= 2;
    }
    if (slept || ++since_choice_ >= choose_every) choose();
    return v;
}

namespace {
// EWMA, 1/8 new, of samples clamped to twice the estimate (plus 10 us, so a
// small one can still grow): an odd sample (a preempted vCPU, a timer that
// fired behind another process on a shared CPU) moves it by an eighth at
// most, while a lasting change is followed at up to 12.5% per sample.
uint64_t ewma(uint64_t est, uint64_t sample) noexcept {
    sample = std::min({sample, 2 * est + 10'000, spin_window::max_limit_ns});
    return est - est / 8 + sample / 8;
}
}  // namespace

void spin_window::on_wake_late(uint64_t late_ns) noexcept {
    // A running median, not a mean: this VM's wake-ups have a tail of
    // milliseconds (a vCPU the host runs late), and a mean of them, even of
    // clamped samples, drifted from 35 to 180 us over a few minutes at 4k
    // req/s and took the lcore from sleeping to spinning half the time. Each
    // sample moves the estimate a sixteenth of itself (at least 0.5 us)
    // toward it, so it settles where half the samples lie above and half
    // below.
    const uint64_t step = std::max<uint64_t>(wake_cost_ / 16, 500);
    late_ns = std::min(late_ns, max_limit_ns);
    if (late_ns > wake_cost_)
        wake_cost_ += std::min(step, late_ns - wake_cost_);
    else
        wake_cost_ -= std::min(step, wake_cost_ - late_ns);
    reprice();
}

void spin_window::on_sleep_cpu(uint64_t cpu_ns) noexcept {
    sleep_cpu_ = ewma(sleep_cpu_, cpu_ns);
    reprice();
}

}  // namespace ferry::reactor
