// The per-lcore reactor (DESIGN.md, "The reactor iteration"):
//
//   poll every poller (rx queues -> stack -> callbacks; inbound rings)
//   run expired timers
//   flush: every flusher in registration order (tx bursts first, then one ring
//          enqueue burst per peer followed by that peer's doorbell check)
//   idle accounting: nothing to do for idle_threshold -> try to sleep
//
// Before the first sleep of an idle gap every poller's before_sleep() runs
// (and the flushers after it, if it did anything): what a timer would wake
// the lcore for soon goes now, while it is awake.
//
// Sleeping (consumer side of doorbell.h): store sleeping = 1, fence, re-check
// every poller with pending() (which must not lose work), the nearest timer and
// the stop flag; anything there -> sleeping = 0, keep polling (counted as an
// aborted sleep). Otherwise arm rx interrupts, epoll_wait on the rx interrupt
// fds + the doorbell eventfd with the nearest deadline as timeout (tickless),
// and on return: sleeping = 0, disarm, drain the doorbell, attribute the wakeup
// (doorbell, rx interrupt, timer).
//
// A reactor with a poller that has no interrupt fd (e.g. net_af_packet queues)
// cannot sleep until work comes: can_sleep() is false and telemetry says so.
// In wakeup_mode::adaptive it may still take timed naps (can_nap(): every such
// poller has pending()): the same protocol, so a peer's doorbell still wakes
// it at once, with the epoll timeout bounded by settings::nap_budget_ns, the
// latency a packet waiting on such a queue may gain.
//
// How long "idle" must last before a sleep is tried: idle_threshold_ns in the
// fixed modes; in wakeup_mode::adaptive the lcore's own spin window
// (spin_window.h), chosen from the gaps it has seen against the price of a
// sleep: its thread CPU (sampled every few sleeps, first measured when run()
// starts) plus settings::latency_weight_pct times its latency (the lateness
// of its timer wakeups). It keeps two: one for gaps that begin while a
// poller expects work (a request is out to an origin: its answer is a round
// trip away) and one for the others (the next request is the clients' to
// send), so a lcore can learn to spin while it waits on an origin and to
// sleep at once when it waits on the world. It spins at most once per gap:
// a sleep or nap that ends with nothing to do is followed by another.
#pragma once

#include <atomic>
#include <cstdint>

#include "ferry/base/counter.h"
#include "ferry/base/wakeup_defaults.h"
#include "ferry/reactor/doorbell.h"
#include "ferry/reactor/spin_policy.h"
#include "ferry/reactor/timer_wheel.h"

namespace ferry::reactor {

#define FERRY_REACTOR_COUNTERS(X)                                                      \
    X(polls, "loop iterations")                                                        \
    X(busy_polls, "iterations that found work")                                        \
    X(sleep_attempts, "times the idle threshold passed and the lcore tried to sleep")  \
    X(sleep_aborts, "sleep attempts cancelled by the pre-sleep re-check")              \
    X(sleeps, "times the lcore slept in epoll_wait")                                   \
    X(sleep_ns, "nanoseconds spent asleep")                                            \
    X(wakeups_doorbell, "wakeups by a peer's doorbell")                                \
    X(doorbell_wakes_timed, "doorbell wake-ups timed from the ringer's stamp (adaptive learns a sleep's latency from them)") \
    X(doorbell_wake_ns, "ns from a peer's doorbell write to this lcore running, summed over doorbell_wakes_timed") \
    X(wakeups_rx, "wakeups by an rx interrupt")                                        \
    X(wakeups_timer, "wakeups by the sleep timeout (a timer was due)")                 \
    X(wakeups_other, "wakeups by a signal (EINTR)")                                    \
    X(naps, "adaptive: timed naps (a poller without rx interrupts: nap_budget_us at most)") \
    X(wakeups_nap, "naps that ran their length out (the rx queues are then polled)")    \
    X(timers_fired, "timer callbacks run")                                             \
    X(msgs_in, "messages dequeued from inbound rings")                                 \
    X(msgs_out, "messages enqueued to peers' rings")                                   \
    X(enqueue_bursts, "ring enqueue bursts (one per peer per flush at most)")          \
    X(doorbells_rung, "doorbell writes to a sleeping peer (one syscall each)")         \
    X(doorbells_suppressed, "flushes to a polling peer: no syscall needed")            \
    X(doorbell_errors, "doorbell writes that failed")                                  \
    X(ring_full, "enqueue bursts that left messages behind (backpressure)")             \
    X(adaptive_gaps, "adaptive: idle gaps that ended with work")                       \
    X(adaptive_spins_paid, "adaptive: gaps that ended while spinning (no sleep needed)") \
    X(adaptive_sleeps_short, "adaptive: sleeps through a gap shorter than a sleep's price (a spin would have been cheaper)") \
    X(adaptive_sleeps_long, "adaptive: sleeps through a gap longer than a sleep's price (the sleep paid)") \
    X(adaptive_gaps_capped, "adaptive: gaps after which the window was cut to the fixed modes' CPU on the same gaps") \
    X(pre_sleep_work, "items done just before a sleep, so no timer wakes the lcore for them (delayed ACKs sent early)") \
    X(spin_yields, "sched_yield calls while spinning idle (spin_yield_us): another thread runnable on this CPU may run")

struct alignas(64) reactor_counters {
    FERRY_REACTOR_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_REACTOR_FIELD(n, h) FERRY_COUNTER_FIELD(reactor_counters, n, h)
inline constexpr counter_field<reactor_counters> reactor_counter_fields[] = {
    FERRY_REACTOR_COUNTERS(FERRY_REACTOR_FIELD)};

// Process-wide settings every reactor reads each iteration; written only by
// the control path (telemetry), which then wakes every sleeper so the change
// takes effect at once. Read-mostly: its own cache line.
// The defaults (and why they are what they are): ferry/base/wakeup_defaults.h,
// shared with the config's [ferry] keys.
struct alignas(64) settings {
    std::atomic<wakeup_mode> mode{wakeup_mode::adaptive};
    std::atomic<uint64_t> idle_threshold_ns{uint64_t{wakeup_defaults::idle_threshold_us} * 1000};
    // adaptive on ports without rx interrupts: the longest timed nap; 0: no naps.
    std::atomic<uint64_t> nap_budget_ns{uint64_t{wakeup_defaults::nap_budget_us} * 1000};
    // adaptive: what a ns of wake-up latency is worth in ns of CPU, in percent
    // (spin_window.h). The two windows' CPU together is bounded by what
    // idle_threshold_ns would spend on the same gaps (spin_policy.h).
    std::atomic<uint32_t> latency_weight_pct{wakeup_defaults::latency_weight_pct};
    // The same for gaps that began with work in flight (a poller's expecting()).
    std::atomic<uint32_t> busy_latency_weight_pct{wakeup_defaults::busy_latency_weight_pct};
    // Every mode: a lcore spinning with nothing to do calls sched_yield()
    // this often, so that another thread runnable on its CPU runs now; with
    // none, the call returns at once. 0: never.
    std::atomic<uint64_t> spin_yield_ns{uint64_t{wakeup_defaults::spin_yield_us} * 1000};
};

// A source of work. Plain function pointers (no virtual calls, no allocation).
struct poller {
    // Does one bounded batch of work; returns the number of items handled.
    uint32_t (*poll)(void *ctx, uint64_t now) = nullptr;
    // True if poll() would find work now. Must not lose work (an rx poller
    // receives into a stash that the next poll() consumes). Called only in the
    // pre-sleep re-check, after the fence.
    bool (*pending)(void *ctx) = nullptr;
    // Earliest time (ns) poll() must run even without input; nullptr or
    // UINT64_MAX: none.
    uint64_t (*deadline)(void *ctx) = nullptr;
    // Around a sleep: enable / disable the source's interrupt (e.g.
    // rte_eth_dev_rx_intr_enable). Optional.
    void (*arm)(void *ctx) = nullptr;
    void (*disarm)(void *ctx) = nullptr;
    // True while the source has work in flight whose continuation should come
    // soon (the proxy: a request sent upstream, its answer not yet in).
    // Optional; the adaptive policy learns gaps that begin with it apart from
    // the others.
    bool (*expecting)(void *ctx) = nullptr;
    // The lcore is about to sleep (once per idle gap, before the sleep
    // protocol): do now what a timer would wake it for soon and may be done
    // early (the TCP layer: a delayed ACK no data will carry). Returns the
    // work done; the flushers then run before the sleep. Optional.
    uint32_t (*before_sleep)(void *ctx, uint64_t now) = nullptr;
    void *ctx = nullptr;
    // Event fd that becomes readable when work arrives while asleep (an rx
    // queue's interrupt fd, registered edge-triggered), -1 if the source has
    // no wake fd and must be polled (the reactor then never sleeps), or
    // no_wake_fd_needed for sources woken by the doorbell (inbound rings).
    int wake_fd = -1;
    static constexpr int no_wake_fd_needed = -2;
};

// Runs at the end of every iteration, in registration order.
struct flusher {
    void (*flush)(void *ctx, uint64_t now) = nullptr;
    void *ctx = nullptr;
};

class reactor {
public:
    static constexpr unsigned max_pollers = 32;
    static constexpr unsigned max_flushers = 8;

    // `now` in ns. Creates the epoll set and the doorbell eventfd; ok() says
    // whether that worked.
    reactor(settings &s, reactor_counters &c, uint64_t now) noexcept;
    ~reactor();
    reactor(const reactor &) = delete;
    reactor &operator=(const reactor &) = delete;

    [[nodiscard]] bool ok() const noexcept { return epfd_ >= 0 && bell_.fd >= 0; }

    // Registration, before run(). False: table full or epoll_ctl failed.
    [[nodiscard]] bool add_poller(const poller &p) noexcept;
    [[nodiscard]] bool add_flusher(const flusher &f) noexcept;

    [[nodiscard]] timer_wheel &timers() noexcept { return wheel_; }
    // This lcore's doorbell; producers on other lcores notify() it.
    [[nodiscard]] doorbell &bell() noexcept { return bell_; }
    // False when some poller has no wake fd: the lcore must keep polling.
    [[nodiscard]] bool can_sleep() const noexcept { return can_sleep_; }
    // False when some poller has neither a wake fd nor pending(): not even
    // timed naps are safe.
    [[nodiscard]] bool can_nap() const noexcept { return can_nap_; }
    // True while asleep or in the pre-sleep re-check (any thread may ask).
    [[nodiscard]] bool asleep() const noexcept {
        return bell_.sleeping.load(std::memory_order_relaxed) != 0;
    }

    // True once the pre-sleep re-check found nothing: the lcore is in (or
    // about to enter) its epoll wait, so anything that arrives now wakes it
    // rather than aborting the sleep. Any thread (tests wait on it).
    [[nodiscard]] bool committed_to_sleep() const noexcept {
        return asleep_since_.load(std::memory_order_relaxed) != 0;
    }

    // How long the current sleep has lasted at `now` (0 when awake); sleep_ns
    // counts only finished sleeps. Any thread.
    [[nodiscard]] uint64_t current_sleep_ns(uint64_t now) const noexcept {
        const uint64_t since = asleep_since_.load(std::memory_order_relaxed);
        return since != 0 && now > since ? now - since : 0;
    }

    // Loops until `stop` is set. The thread that sets `stop` must then ring
    // every reactor's doorbell (ring()) so sleepers see it.
    void run(const std::atomic<bool> &stop) noexcept;

    // One iteration at `now`: poll, timers, flush. Returns the work done.
    uint32_t run_once(uint64_t now) noexcept;

    // The sleep protocol; returns true if it slept (false: aborted, or the
    // mode or the pollers forbid sleeping). `stop` is part of the re-check.
    bool try_sleep(uint64_t now, const std::atomic<bool> &stop) noexcept;

    // Monotonic ns from the TSC.
    [[nodiscard]] static uint64_t now_ns() noexcept;

    // The adaptive policy's state: window (of gaps that began with nothing
    // expected, and of gaps that began with work in flight), limit and wake
    // cost in ns. Any thread (telemetry).
    [[nodiscard]] uint64_t spin_window_ns() const noexcept {
        return spin_window_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t busy_spin_window_ns() const noexcept {
        return busy_window_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t busy_spin_limit_ns() const noexcept {
        return busy_limit_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t spin_limit_ns() const noexcept {
        return spin_limit_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t wake_cost_ns() const noexcept {
        return wake_cost_ns_.load(std::memory_order_relaxed);
    }
    // The thread CPU a sleep/wake round trip costs (S), and the price of one
    // sleep in the idle and the busy window (C: S plus the weighted latency),
    // and the nap length each would take now.
    [[nodiscard]] uint64_t sleep_cpu_ns() const noexcept {
        return sleep_cpu_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t sleep_price_ns() const noexcept {
        return sleep_price_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t busy_sleep_price_ns() const noexcept {
        return busy_price_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t nap_ns() const noexcept { return nap_ns_.load(std::memory_order_relaxed); }
    [[nodiscard]] uint64_t busy_nap_ns() const noexcept {
        return busy_nap_ns_.load(std::memory_order_relaxed);
    }
    // A few short sleeps on this machine now: their median lateness (the
    // first L) and median thread CPU (the first S); about 0.2 ms to measure.
    struct wake_sample {
        uint64_t late_ns = 0, cpu_ns = 0;
    };
    [[nodiscard]] static wake_sample measure_wake_cost() noexcept;
    // Feeds the end of an idle gap to the adaptive policy (run() does;
    // public for tests that drive the loop by hand).
    void end_gap(uint64_t gap_ns, bool slept, bool expected = false) noexcept;

private:
    [[nodiscard]] uint64_t nearest_deadline() const noexcept;
    [[nodiscard]] bool anything_pending(uint64_t now, const std::atomic<bool> &stop) const noexcept;

    settings &settings_;
    reactor_counters &c_;
    timer_wheel wheel_;
    doorbell bell_;
    int epfd_ = -1;
    bool can_sleep_ = true;
    bool can_nap_ = true;
    // A producer took our sleeping flag (exchange) while we aborted a sleep:
    // its doorbell write is coming or came; drain it before the next sleep so
    // it does not cause a spurious wakeup.
    bool doorbell_owed_ = false;
    // The pollers' before_sleep() ran since the last work: a sleep that
    // ends with nothing to do is not preceded by it again.
    bool prepared_ = false;
    uint64_t last_busy_ = 0;
    uint64_t last_yield_ = 0;  // the last idle spin's sched_yield (spin_yield_ns)
    // The adaptive policy, and the gap in progress (run()).
    // Two windows: gaps that began with work in flight (a poller's
    // expecting()) have their own histogram, learned apart from idle ones
    // (an origin's answer time is not the clients' think time).
    spin_policy policy_{spin_window::min_limit_ns / 2};
    bool gap_open_ = false, slept_in_gap_ = false, gap_expected_ = false;
    uint64_t gap_start_ = 0;
    std::atomic<uint64_t> spin_window_ns_{0}, busy_window_ns_{0}, spin_limit_ns_{0},
        busy_limit_ns_{0}, wake_cost_ns_{0}, sleep_cpu_ns_{0}, sleep_price_ns_{0},
        busy_price_ns_{0}, nap_ns_{0}, busy_nap_ns_{0};
    [[nodiscard]] bool expecting() const noexcept;
    // Hands the settings' latency weight, nap budget and idle threshold (the
    // CPU bound) to both windows.
    void sync_policy() noexcept;
    void publish_window() noexcept;
    // Start of the sleep in progress (0: awake), for telemetry.
    std::atomic<uint64_t> asleep_since_{0};
    unsigned npollers_ = 0, nflushers_ = 0;
    poller pollers_[max_pollers];
    flusher flushers_[max_flushers];
};

}  // namespace ferry::reactor
