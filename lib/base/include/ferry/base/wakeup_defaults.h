// The wakeup settings' defaults, in one place: the config's [ferry] keys
// (config.h: what a config without them gets) and the reactor's run-time
// settings (reactor.h: what a reactor built without a config, as in the unit
// tests, starts with) both take them from here. docs/OPERATIONS.md section 3
// says what each does; the reasons for the values are below.
#pragma once

#include <cstdint>

namespace ferry::wakeup_defaults {

// conditional/always: no work this long -> try to sleep; adaptive: the CPU
// bound of its two spin windows (spin_policy.h).
inline constexpr uint32_t idle_threshold_us = 200;
// adaptive on ports without rx interrupts: the longest timed nap; 0: no naps.
inline constexpr uint32_t nap_budget_us = 100;
// adaptive: what 1 us of wake-up latency is worth in us of CPU, in percent
// (spin_window.h). 1000, equal to the busy weight: the ten-round offered-load
// sweeps' choice (perf/results/2026-12-07-issue14-ten-rounds.md).
inline constexpr uint32_t latency_weight_pct = 1000;
// The same for gaps that began with work in flight (a request waiting on an
// upstream or another worker): 1000, so that the answer usually finds the
// lcore spinning and a request costs at most one wake-up per lcore (issue
// 14), where 25 slept through a 150 us origin and woke twice per request,
// and 400 still did at 100 req/s.
inline constexpr uint32_t busy_latency_weight_pct = 1000;
// Every mode: a lcore spinning with nothing to do yields its CPU this often
// (a shared CPU's client or origin runs now, not when the spinner's time
// slice ends); 0: never.
inline constexpr uint32_t spin_yield_us = 20;

}  // namespace ferry::wakeup_defaults
