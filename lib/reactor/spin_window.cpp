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

unsigned spin_window::options(double cost[], double cpu[]) const noexcept {
    const double c = static_cast<double>(price_), s = static_cast<double>(sleep_cpu_);
    const double per = total_ > 0 ? 1.0 / total_ : 0.0;
    // W = 0: every gap costs a sleep.
    double tail = total_, below = 0;
    cost[0] = tail * c * per;
    cpu[0] = tail * s * per;
    unsigned n = 1;
    for (unsigned i = 1; i < nbuckets && edge(i) <= limit_; ++i, ++n) {
        // W = edge(i): bucket i-1's gaps are caught by the spin, the rest
        // cost the spin and a sleep.
        tail -= count_[i - 1];
        below += sum_[i - 1];
        const double w = static_cast<double>(edge(i));
        cost[i] = (below + tail * (w + c)) * per;
        cpu[i] = (below + tail * (w + s)) * per;
    }
    return n;
}

double spin_window::ref_cpu_per_gap() const noexcept {
    return total_ > 0 ? cpu_reference_cost() / total_ : 0.0;
}

unsigned spin_window::cheapest(const double cost[], unsigned n) noexcept {
    unsigned best = 0;
    for (unsigned i = 1; i < n; ++i)
        if (cost[i] < cost[best]) best = i;  // a tie keeps the shorter window
    return best;
}

void spin_window::choose() noexcept {
    ++choices_;
    since_choice_ = 0;
    double cost[nbuckets], cpu[nbuckets];
    force(cheapest(cost, options(cost, cpu)));
}

void spin_window::force(unsigned best_i) noexcept {
    window_ = std::min(edge(best_i), limit_);
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
