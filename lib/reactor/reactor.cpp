#include "ferry/reactor/reactor.h"

#include <rte_cycles.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ferry::reactor {
namespace {

constexpr uint64_t doorbell_tag = UINT64_MAX;

// TSC -> ns as one 64x64->128 multiply and a shift (no division per call):
// mult = 2^32 * 1e9 / hz, computed once.
struct tsc_clock {
    uint64_t mult = 0;
    tsc_clock() noexcept {
        const uint64_t hz = rte_get_tsc_hz();
        if (hz != 0) mult = static_cast<uint64_t>((static_cast<unsigned __int128>(1'000'000'000u) << 32) / hz);
    }
};

void drain(int fd) noexcept {
    uint64_t v;
    // Non-blocking eventfd: one read resets the counter; EAGAIN when empty.
    while (read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
    }
}

}  // namespace

const char *name(wakeup_mode m) noexcept {
    switch (m) {
        case wakeup_mode::conditional: return "conditional";
        case wakeup_mode::always: return "always";
        case wakeup_mode::poll: return "poll";
        case wakeup_mode::adaptive: return "adaptive";
    }
    return "?";
}

bool parse_wakeup_mode(const char *s, wakeup_mode &out) noexcept {
    for (wakeup_mode m : {wakeup_mode::conditional, wakeup_mode::always, wakeup_mode::poll,
                          wakeup_mode::adaptive})
        if (s != nullptr && std::strcmp(s, name(m)) == 0) {
            out = m;
            return true;
        }
    return false;
}

bool ring(const doorbell &d) noexcept {
    const uint64_t one = 1;
    return write(d.fd, &one, sizeof one) == static_cast<ssize_t>(sizeof one);
}

bool ring_sleeper(doorbell &d) noexcept {
    d.rung_at.store(reactor::now_ns(), std::memory_order_release);
    return ring(d);
}

uint64_t reactor::now_ns() noexcept {
    // Constructed on first use: after rte_eal_init, which calibrates the TSC.
    static const tsc_clock clock;
    if (clock.mult != 0)
        return static_cast<uint64_t>(
            (static_cast<unsigned __int128>(rte_get_tsc_cycles()) * clock.mult) >> 32);
    timespec ts;  // no EAL (unit tests): the vDSO clock
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

reactor::reactor(settings &s, reactor_counters &c, uint64_t now) noexcept
    : settings_(s), c_(c), wheel_(now), last_busy_(now) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    bell_.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epfd_ >= 0 && bell_.fd >= 0) {
        // Level-triggered: a ring that lands between the re-check and
        // epoll_wait leaves the eventfd readable, so epoll_wait returns at once.
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = doorbell_tag;
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, bell_.fd, &ev) != 0) {
            close(bell_.fd);
            bell_.fd = -1;
        }
    }
}

reactor::~reactor() {
    if (bell_.fd >= 0) close(bell_.fd);
    if (epfd_ >= 0) close(epfd_);
}

bool reactor::add_poller(const poller &p) noexcept {
    if (npollers_ == max_pollers || p.poll == nullptr) return false;
    if (p.wake_fd >= 0) {
        // Edge-triggered like DPDK's own rx interrupt registration: the
        // re-check after the fence covers anything that arrived before.
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLET;
        ev.data.u64 = npollers_;
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, p.wake_fd, &ev) != 0) return false;
    } else if (p.wake_fd == -1) {
        can_sleep_ = false;
        if (p.pending == nullptr) can_nap_ = false;
    }
    pollers_[npollers_++] = p;
    return true;
}

bool reactor::add_flusher(const flusher &f) noexcept {
    if (nflushers_ == max_flushers || f.flush == nullptr) return false;
    flushers_[nflushers_++] = f;
    return true;
}

uint32_t reactor::run_once(uint64_t now) noexcept {
    c_.polls.inc();
    uint32_t work = 0;
    for (unsigned i = 0; i < npollers_; ++i) work += pollers_[i].poll(pollers_[i].ctx, now);
    if (wheel_.next_deadline() <= now) {
        const size_t fired = wheel_.advance(now);
        c_.timers_fired.inc(fired);
        work += static_cast<uint32_t>(fired);
    }
    for (unsigned i = 0; i < nflushers_; ++i) flushers_[i].flush(flushers_[i].ctx, now);
    if (work != 0) {
        c_.busy_polls.inc();
        last_busy_ = now;
        prepared_ = false;
    }
    return work;
}

namespace {
// This thread's CPU time (ns): a syscall, so sampled, not read per sleep.
uint64_t thread_cpu_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}
// One sleep in this many has its thread CPU measured (an S sample).
constexpr uint64_t sleep_cpu_sample_every = 8;
}  // namespace

reactor::wake_sample reactor::measure_wake_cost() noexcept {
    uint64_t late[5], cpu[5];
    for (unsigned i = 0; i < 5; ++i) {
        const uint64_t c0 = thread_cpu_ns();
        const uint64_t t0 = now_ns();
        timespec ts{0, 20'000};
        nanosleep(&ts, nullptr);
        const uint64_t t1 = now_ns();
        late[i] = t1 - t0 > 20'000 ? t1 - t0 - 20'000 : 0;
        cpu[i] = thread_cpu_ns() - c0;
    }
    std::sort(late, late + 5);
    std::sort(cpu, cpu + 5);
    return {late[2], cpu[2]};
}

void reactor::sync_policy() noexcept {
    const uint32_t w = settings_.latency_weight_pct.load(std::memory_order_relaxed);
    const uint32_t wb = settings_.busy_latency_weight_pct.load(std::memory_order_relaxed);
    const uint64_t nap = can_sleep_ ? 0 : settings_.nap_budget_ns.load(std::memory_order_relaxed);
    // The fixed modes' threshold bounds the windows' CPU (spin_window.h).
    const uint64_t ref = settings_.idle_threshold_ns.load(std::memory_order_relaxed);
    // Both windows' naps and bounds are always set together: one tells what
    // they hold.
    if (w == policy_.idle().latency_weight_pct() && wb == policy_.busy().latency_weight_pct() &&
        nap == policy_.idle().nap_budget() && ref == policy_.idle().cpu_reference())
        return;
    policy_.set(w, wb, nap, ref);
    publish_window();
}

void reactor::publish_window() noexcept {
    const spin_window &sw = policy_.idle(), &sb = policy_.busy();
    spin_window_ns_.store(sw.window(), std::memory_order_relaxed);
    busy_window_ns_.store(sb.window(), std::memory_order_relaxed);
    spin_limit_ns_.store(sw.limit(), std::memory_order_relaxed);
    busy_limit_ns_.store(sb.limit(), std::memory_order_relaxed);
    wake_cost_ns_.store(sw.wake_cost(), std::memory_order_relaxed);
    sleep_cpu_ns_.store(sw.sleep_cpu(), std::memory_order_relaxed);
    sleep_price_ns_.store(sw.price(), std::memory_order_relaxed);
    busy_price_ns_.store(sb.price(), std::memory_order_relaxed);
    nap_ns_.store(sw.nap(), std::memory_order_relaxed);
    busy_nap_ns_.store(sb.nap(), std::memory_order_relaxed);
}

bool reactor::expecting() const noexcept {
    for (unsigned i = 0; i < npollers_; ++i)
        if (pollers_[i].expecting != nullptr && pollers_[i].expecting(pollers_[i].ctx)) return true;
    return false;
}

void reactor::end_gap(uint64_t gap_ns, bool slept, bool expected) noexcept {
    c_.adaptive_gaps.inc();
    sync_policy();
    // A sleeping lcore learns of the work a wake-up after it came: on_gap
    // takes a sleep's latency off such a gap, so it is recorded as long as
    // the work really kept the lcore waiting.
    switch (policy_.on_gap(gap_ns, slept, expected)) {
        case spin_window::verdict::spun: c_.adaptive_spins_paid.inc(); break;
        case spin_window::verdict::short_sleep: c_.adaptive_sleeps_short.inc(); break;
        case spin_window::verdict::long_sleep: c_.adaptive_sleeps_long.inc(); break;
    }
    if (policy_.capped()) c_.adaptive_gaps_capped.inc();
    publish_window();
}

void reactor::run(const std::atomic<bool> &stop) noexcept {
    // Timed sleeps (a timer's deadline, a nap) end when asked, not up to the
    // default 50 us of timer slack later: that slack would be a latency no
    // policy chose, and would pass for the cost of waking (measured below and
    // learned from late timer wakeups) and inflate every spin window.
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (can_sleep_ || can_nap_) {
        const wake_sample w = measure_wake_cost();
        policy_ = spin_policy(w.late_ns, w.cpu_ns);
        sync_policy();
    }
    publish_window();
    last_busy_ = now_ns();
    gap_open_ = slept_in_gap_ = false;
    while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t now = now_ns();
        const wakeup_mode mode = settings_.mode.load(std::memory_order_relaxed);
        if (run_once(now) != 0) {
            // The gap since the last work ended: the adaptive policy learns
            // from it.
            if (gap_open_ && mode == wakeup_mode::adaptive)
                end_gap(now - gap_start_, slept_in_gap_, gap_expected_);
            gap_open_ = slept_in_gap_ = false;
            continue;
        }
        if (!gap_open_) {
            gap_open_ = true;
            gap_start_ = last_busy_;
            gap_expected_ = mode == wakeup_mode::adaptive && expecting();
        }
        // Spinning idle: let whatever else is runnable on this CPU run (a
        // shared CPU's client or origin, woken by what this lcore sent,
        // would otherwise wait for the spinner's time slice to end: ms).
        const uint64_t yield_every = settings_.spin_yield_ns.load(std::memory_order_relaxed);
        if (yield_every != 0 && now - std::max(last_busy_, last_yield_) >= yield_every) {
            last_yield_ = now;
            c_.spin_yields.inc();
            (void)sched_yield();
        }
        // adaptive spins once per gap: after a sleep or nap that found
        // nothing, the gap is already longer than the window, and the
        // cheapest way through the rest of it is another sleep.
        const uint64_t threshold =
            mode != wakeup_mode::adaptive ? settings_.idle_threshold_ns.load(std::memory_order_relaxed)
            : slept_in_gap_               ? 0
                                          : policy_.of(gap_expected_).window();
        if (now - last_busy_ < threshold) continue;
        if (try_sleep(now, stop)) slept_in_gap_ = true;
    }
}

uint64_t reactor::nearest_deadline() const noexcept {
    uint64_t d = wheel_.next_deadline();
    for (unsigned i = 0; i < npollers_; ++i)
        if (pollers_[i].deadline != nullptr) {
            const uint64_t pd = pollers_[i].deadline(pollers_[i].ctx);
            if (pd < d) d = pd;
        }
    return d;
}

bool reactor::anything_pending(uint64_t now, const std::atomic<bool> &stop) const noexcept {
    if (stop.load(std::memory_order_relaxed)) return true;
    if (settings_.mode.load(std::memory_order_relaxed) == wakeup_mode::poll) return true;
    for (unsigned i = 0; i < npollers_; ++i)
        if (pollers_[i].pending != nullptr && pollers_[i].pending(pollers_[i].ctx)) return true;
    return nearest_deadline() <= now;
}

bool reactor::try_sleep(uint64_t now, const std::atomic<bool> &stop) noexcept {
    const wakeup_mode mode = settings_.mode.load(std::memory_order_relaxed);
    if (!ok() || mode == wakeup_mode::poll) return false;
    // A poller without rx interrupts: only a timed nap, in adaptive mode, as
    // long as the window of the gap in progress says (within the budget).
    uint64_t nap = can_sleep_ ? 0 : settings_.nap_budget_ns.load(std::memory_order_relaxed);
    if (!can_sleep_ && (mode != wakeup_mode::adaptive || !can_nap_ || nap == 0)) return false;
    if (nap != 0) {
        sync_policy();
        nap = std::min(nap, std::max<uint64_t>(policy_.of(gap_expected_).nap(), 1));
    }
    if (!prepared_) {
        prepared_ = true;
        uint32_t done = 0;
        for (unsigned i = 0; i < npollers_; ++i)
            if (pollers_[i].before_sleep != nullptr)
                done += pollers_[i].before_sleep(pollers_[i].ctx, now);
        if (done != 0) {
            c_.pre_sleep_work.inc(done);
            for (unsigned i = 0; i < nflushers_; ++i) flushers_[i].flush(flushers_[i].ctx, now);
        }
    }
    c_.sleep_attempts.inc();
    // Every few sleeps, the thread CPU of the whole round trip (arming,
    // re-check, epoll, wake, disarm): what a sleep costs besides latency.
    const bool sample_cpu = c_.sleeps.get() % sleep_cpu_sample_every == 0;
    const uint64_t cpu0 = sample_cpu ? thread_cpu_ns() : 0;
    if (doorbell_owed_) {
        drain(bell_.fd);
        doorbell_owed_ = false;
    }
    // Interrupts are armed before the flag and the re-check: a packet that
    // arrived before arming is seen by the re-check, one after it fires the fd.
    for (unsigned i = 0; i < npollers_; ++i)
        if (pollers_[i].arm != nullptr) pollers_[i].arm(pollers_[i].ctx);

    // S1, F1 of doorbell.h: announce, then look at everything once more.
    bell_.sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool slept = false;
    if (anything_pending(now, stop)) {
        // If a producer already took the flag (exchange -> 0) it rings us;
        // drain that before the next sleep instead of waking needlessly.
        if (bell_.sleeping.exchange(0, std::memory_order_acq_rel) == 0) doorbell_owed_ = true;
        c_.sleep_aborts.inc();
    } else {
        uint64_t deadline = nearest_deadline();
        bool napping = false;
        if (nap != 0 && (deadline == timer_wheel::no_deadline || deadline > now + nap)) {
            deadline = now + nap;
            napping = true;
        }
        if (nap != 0) c_.naps.inc();
        asleep_since_.store(now, std::memory_order_relaxed);
        epoll_event evs[max_pollers + 1];
        int n;
        if (deadline == timer_wheel::no_deadline) {
            n = epoll_wait(epfd_, evs, max_pollers + 1, -1);
        } else {
            const uint64_t ns = deadline > now ? deadline - now : 0;
            // Tickless: sleep exactly until the nearest deadline (ns precision).
            timespec ts{static_cast<time_t>(ns / 1'000'000'000u),
                        static_cast<long>(ns % 1'000'000'000u)};
            n = epoll_pwait2(epfd_, evs, max_pollers + 1, &ts, nullptr);
            if (n < 0 && errno == ENOSYS)  // kernels before 5.11: ms resolution, rounded up
                n = epoll_wait(epfd_, evs, max_pollers + 1, static_cast<int>((ns + 999'999) / 1'000'000));
        }
        const uint64_t woke = now_ns();
        asleep_since_.store(0, std::memory_order_relaxed);
        c_.sleeps.inc();
        c_.sleep_ns.inc(woke - now);
        bool by_bell = false, by_rx = false;
        for (int i = 0; i < n; ++i) {
            if (evs[i].data.u64 == doorbell_tag)
                by_bell = true;
            else
                by_rx = true;
        }
        if (by_bell) c_.wakeups_doorbell.inc();
        if (by_rx) c_.wakeups_rx.inc();
        if (n == 0 && napping) c_.wakeups_nap.inc();
        if (n == 0 && !napping) c_.wakeups_timer.inc();
        if (n == 0) {
            // How late the timer woke us: what a sleep costs in latency.
            if (deadline != timer_wheel::no_deadline && woke > deadline) {
                policy_.on_wake_late(woke - deadline);
                publish_window();
            }
        }
        if (by_bell) {
            // How long the peer that rang waited for us: the same cost, as a
            // hand-off to this lcore sees it. A stamp older than this attempt
            // is left from an aborted one (its ring drained since, or about
            // to be) and says nothing about this sleep.
            const uint64_t at = bell_.rung_at.exchange(0, std::memory_order_acq_rel);
            if (at >= now && woke > at) {
                c_.doorbell_wakes_timed.inc();
                c_.doorbell_wake_ns.inc(woke - at);
                policy_.on_wake_late(woke - at);
                publish_window();
            }
        }
        if (n < 0) c_.wakeups_other.inc();
        if (bell_.sleeping.exchange(0, std::memory_order_acq_rel) == 0 && !by_bell)
            doorbell_owed_ = true;  // taken, but the write has not landed yet
        if (by_bell) drain(bell_.fd);
        last_busy_ = woke;
        slept = true;
    }
    for (unsigned i = 0; i < npollers_; ++i)
        if (pollers_[i].disarm != nullptr) pollers_[i].disarm(pollers_[i].ctx);
    if (slept && sample_cpu) {
        const uint64_t cpu = thread_cpu_ns() - cpu0;
        policy_.on_sleep_cpu(cpu);
        publish_window();
    }
    return slept;
}

}  // namespace ferry::reactor
