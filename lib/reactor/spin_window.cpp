#include "ferry/reactor/spin_window.h"

#include <algorithm>

namespace ferry::reactor {

spin_window::spin_window(uint64_t wake_cost_ns, uint32_t limit_factor,
                         uint32_t shrink_shift) noexcept
    : factor_(std::max<uint32_t>(limit_factor, 1)),
      shrink_shift_(std::clamp<uint32_t>(shrink_shift, 1, 8)) {
    set_cost(wake_cost_ns);
}

void spin_window::set_cost(uint64_t c) noexcept {
    wake_cost_ = c;
    limit_ = std::clamp<uint64_t>(uint64_t{factor_} * c, min_limit_ns, max_limit_ns);
    window_ = std::min(window_, limit_);
}

spin_window::verdict spin_window::on_gap(uint64_t gap_ns, bool slept) noexcept {
    if (!slept) return verdict::spun;
    if (gap_ns <= limit_) {
        window_ = std::min(limit_, std::max(grow_start_ns, 2 * window_));
        return verdict::short_sleep;
    }
    window_ -= window_ >> shrink_shift_;
    if (window_ < grow_start_ns) window_ = 0;
    return verdict::long_sleep;
}

void spin_window::on_wake_late(uint64_t late_ns) noexcept {
    // EWMA, 1/8 new: one odd wakeup (a preempted vCPU) moves it little.
    late_ns = std::min(late_ns, max_limit_ns);
    set_cost(wake_cost_ - wake_cost_ / 8 + late_ns / 8);
}

}  // namespace ferry::reactor
