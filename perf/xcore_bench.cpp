// Cross-core hand-off under the three wakeup modes (DESIGN.md, "The doorbell
// protocol"): one producer lcore feeding one consumer lcore through lib/xcore,
// the consumer a real reactor running reactor::run(). For every mode in
// {always, conditional, poll} and offered load in {idle, 1k, 10k, 100k, 1M
// msgs/s, saturation} it runs --duration-ms (2000) and prints ONE JSON object
// per line:
//
//   mode, load, offered_rate (msgs/s, null at saturation), achieved_rate,
//   messages, doorbells (written), doorbells_suppressed, doorbells_per_1k_msgs,
//   consumer_sleeps, consumer_cpu_pct (the consumer thread's CPU time over the
//   window), producer_cpu_pct, others_cpu_pct (CPU time everything else used
//   on the two CPUs over the window, % of one CPU, from /proc/stat at 10 ms
//   resolution: a run with others_cpu_pct well above 0 shared its CPUs and
//   its latencies show it), wake_latency_p50/p99_ns (send -> receipt of the
//   first message after each sleep), handoff_latency_p50/p99/max_ns (every
//   message), lost, reordered (both must be 0), ring_full.
//
// The producer models a source that yields `--batch` (1) messages per reactor
// iteration: it sends, flushes (one enqueue burst, one doorbell check) and
// paces itself on the TSC against the schedule t0 + k / rate; waits longer
// than ~80 us are slept (nanosleep, 1 ns timer slack), the rest spun, so at
// low rates the producer's CPU stays out of the way of the consumer's. At
// saturation it sends as fast as the mode and the ring let it. Producer and
// consumer are pinned to two different CPUs (the first two allowed, or
// --cpus A,B).
//
//   xcore_bench [--duration-ms N] [--modes always,conditional,poll]
//               [--rates 0,1000,10000,100000,1000000,sat] [--batch N]
//               [--idle-us N] [--ring N] [--cpus A,B]
//
// Numbers from a shared VM are noisy; compare modes within one run.
#include <pthread.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memory.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ferry/reactor/reactor.h"
#include "ferry/xcore/inbox.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/message.h"
#include "ferry/xcore/outbox.h"
#include "test_eal.h"

namespace {

using ferry::reactor::reactor;
using ferry::reactor::reactor_counters;
using ferry::reactor::wakeup_mode;
using ferry::xcore::message;

// Log-linear histogram: exact below 64 ns, then 32 buckets per power of two
// (about 3 % resolution). Written by one thread, read after it stopped.
struct histogram {
    static constexpr unsigned sub_bits = 5, sub = 1u << sub_bits;
    uint64_t counts[64 * sub] = {};
    uint64_t total = 0, max = 0;

    static unsigned index(uint64_t v) noexcept {
        if (v < 2 * sub)
            return static_cast<unsigned>(v);
        const unsigned msb = 63 - static_cast<unsigned>(__builtin_clzll(v));
        const unsigned shift = msb - sub_bits;
        return (shift + 1) * sub + static_cast<unsigned>((v >> shift) - sub);
    }
    static uint64_t lower(unsigned i) noexcept {
        if (i < 2 * sub)
            return i;
        const unsigned shift = i / sub - 1;
        return (uint64_t(i % sub) + sub) << shift;
    }
    void add(uint64_t v) noexcept {
        ++counts[index(v)];
        ++total;
        max = std::max(max, v);
    }
    // The value below which a fraction q of the samples lie (bucket middle).
    uint64_t quantile(double q) const noexcept {
        if (total == 0)
            return 0;
        const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * double(total) + 0.5));
        uint64_t seen = 0;
        for (unsigned i = 0; i < 64 * sub; ++i) {
            seen += counts[i];
            if (seen >= rank)
                return i < 2 * sub ? i : lower(i) + (lower(i + 1) - lower(i)) / 2;
        }
        return max;
    }
};

struct consumer_state {
    const reactor_counters *c = nullptr;
    uint64_t last_sleeps = 0;
    uint32_t expected = 0;
    uint64_t lost = 0, reordered = 0;
    std::atomic<uint64_t> received{0};
    histogram handoff, wake;

    static void on(void *ctx, unsigned, std::span<message> msgs, uint64_t) noexcept {
        auto &s = *static_cast<consumer_state *>(ctx);
        const uint64_t t = reactor::now_ns();
        for (const message &m : msgs) {
            if (m.arg != s.expected) {
                if (m.arg > s.expected)
                    s.lost += m.arg - s.expected;
                else
                    ++s.reordered;
            }
            s.expected = m.arg + 1;
            s.handoff.add(t > m.handle ? t - m.handle : 0);
        }
        const uint64_t sleeps = s.c->sleeps.get();
        if (sleeps != s.last_sleeps) {
            s.last_sleeps = sleeps;
            s.wake.add(t > msgs[0].handle ? t - msgs[0].handle : 0);
        }
        s.received.store(s.received.load(std::memory_order_relaxed) + msgs.size(),
                         std::memory_order_relaxed);
    }
};

struct options {
    uint64_t duration_ms = 2000;
    std::vector<wakeup_mode> modes = {wakeup_mode::always, wakeup_mode::conditional,
                                      wakeup_mode::poll};
    std::vector<uint64_t> rates = {0, 1'000, 10'000, 100'000, 1'000'000, UINT64_MAX};
    unsigned batch = 1;
    uint64_t idle_us = 0;  // 0: the reactor's default
    unsigned ring = 1024;
    int cpus[2] = {-1, -1};
};

constexpr uint64_t saturation = UINT64_MAX;

void pin(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

uint64_t thread_cpu_ns(clockid_t id) {
    timespec ts;
    clock_gettime(id, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Busy time (all but idle and iowait) of two CPUs from /proc/stat, in ns.
uint64_t cpus_busy_ns(const int cpus[2]) {
    uint64_t busy = 0;
    if (FILE *f = std::fopen("/proc/stat", "r")) {
        char line[512];
        while (std::fgets(line, sizeof line, f) != nullptr) {
            int cpu;
            unsigned long long v[8] = {};
            if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
                            &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
                continue;
            if (cpu != cpus[0] && cpu != cpus[1])
                continue;
            busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        }
        std::fclose(f);
    }
    return busy * (1'000'000'000u / static_cast<uint64_t>(sysconf(_SC_CLK_TCK)));
}

// Waits until now_ns() >= t: sleeps while more than 80 us remain, spins the
// rest (a sleep wakes up late by tens of microseconds on a VM).
void wait_until(uint64_t t) {
    for (;;) {
        const uint64_t now = reactor::now_ns();
        if (now >= t)
            return;
        const uint64_t left = t - now;
        if (left <= 80'000)
            continue;
        const uint64_t nap = left - 60'000;
        timespec ts{static_cast<time_t>(nap / 1'000'000'000u),
                    static_cast<long>(nap % 1'000'000'000u)};
        nanosleep(&ts, nullptr);
    }
}

std::string load_name(uint64_t rate) {
    if (rate == saturation)
        return "sat";
    if (rate == 0)
        return "idle";
    if (rate >= 1'000'000 && rate % 1'000'000 == 0)
        return std::to_string(rate / 1'000'000) + "M";
    if (rate >= 1'000 && rate % 1'000 == 0)
        return std::to_string(rate / 1'000) + "k";
    return std::to_string(rate);
}

std::string ns_or_null(const histogram &h, double q) {
    return h.total == 0 ? "null" : std::to_string(h.quantile(q));
}

void run_one(ferry::xcore::mesh &m, const options &o, wakeup_mode mode, uint64_t rate) {
    ferry::reactor::settings s;
    s.mode = mode;
    if (o.idle_us != 0)
        s.idle_threshold_ns = o.idle_us * 1000;
    reactor_counters pc, cc;
    reactor consumer(s, cc, reactor::now_ns());
    if (!consumer.ok()) {
        std::fprintf(stderr, "reactor: epoll/eventfd failed\n");
        std::exit(1);
    }
    auto state = std::make_unique<consumer_state>();
    state->c = &cc;
    ferry::xcore::inbox in(m, 1, cc, &consumer_state::on, state.get(), 32);
    if (!consumer.add_poller(in.as_poller()))
        std::exit(1);
    ferry::reactor::doorbell *bells[2] = {nullptr, &consumer.bell()};

    std::atomic<bool> stop{false};
    std::thread cthread([&] {
        if (o.cpus[1] >= 0)
            pin(o.cpus[1]);
        consumer.run(stop);
    });
    clockid_t ccpu;
    pthread_getcpuclockid(cthread.native_handle(), &ccpu);

    uint64_t sent = 0, window_ns = 0, producer_cpu = 0, consumer_cpu = 0, busy_ns = 0;
    reactor_counters c0;  // consumer counters at the window's start
    std::thread pthread_([&] {
        if (o.cpus[0] >= 0)
            pin(o.cpus[0]);
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        ferry::xcore::outbox out(m, 0, pc, bells, s);
        // Let the consumer settle (and, if it may, fall asleep) first.
        wait_until(reactor::now_ns() + 50'000'000);
        for (const auto &f : ferry::reactor::reactor_counter_fields)
            (c0.*f.member).set((cc.*f.member).get());
        const uint64_t busy0 = cpus_busy_ns(o.cpus);
        const uint64_t cpu0 = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
        const uint64_t ccpu0 = thread_cpu_ns(ccpu);
        const uint64_t t0 = reactor::now_ns();
        const uint64_t end = t0 + o.duration_ms * 1'000'000;
        const double ns_per_msg = rate == saturation || rate == 0 ? 0 : 1e9 / double(rate);
        uint32_t seq = 0;
        for (;;) {
            const uint64_t now = reactor::now_ns();
            if (now >= end)
                break;
            if (rate == 0) {
                wait_until(end);
                continue;
            }
            uint64_t due = o.batch;
            if (rate != saturation) {
                // Messages k = 0, 1, ... are due at t0 + k * ns_per_msg.
                const uint64_t until_now = uint64_t(double(now - t0) / ns_per_msg) + 1;
                due = until_now > sent ? until_now - sent : 0;
            }
            const uint64_t n = std::min<uint64_t>({due, o.batch, out.room(1)});
            for (uint64_t i = 0; i < n; ++i) {
                message msg;
                msg.handle = now;
                msg.arg = seq++;
                (void)out.send(1, msg);  // room() said it fits
            }
            sent += n;
            out.flush(now);
            if (due == 0)
                wait_until(t0 + uint64_t(double(sent) * ns_per_msg));
        }
        consumer_cpu = thread_cpu_ns(ccpu) - ccpu0;
        producer_cpu = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        window_ns = reactor::now_ns() - t0;
        busy_ns = cpus_busy_ns(o.cpus) - busy0;
        while (out.queued(1) != 0)
            out.flush(reactor::now_ns());
    });
    pthread_.join();

    // Drain: everything sent must arrive (else it is lost).
    const uint64_t give_up = reactor::now_ns() + 2'000'000'000;
    while (state->received.load(std::memory_order_relaxed) < sent && reactor::now_ns() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(true);
    (void)ferry::reactor::ring(consumer.bell());
    cthread.join();

    const uint64_t received = state->received.load();
    const uint64_t lost = state->lost + (sent > received ? sent - received : 0);
    const uint64_t rung = pc.doorbells_rung.get();
    const uint64_t sleeps = cc.sleeps.get() - c0.sleeps.get();
    const double secs = double(window_ns) / 1e9;
    std::printf(
        "{\"mode\":\"%s\",\"load\":\"%s\",\"offered_rate\":%s,\"achieved_rate\":%.0f,"
        "\"duration_ms\":%.0f,\"batch\":%u,\"idle_threshold_us\":%.0f,"
        "\"messages\":%" PRIu64 ",\"doorbells\":%" PRIu64 ",\"doorbells_suppressed\":%" PRIu64
        ",\"doorbell_errors\":%" PRIu64
        ",\"doorbells_per_1k_msgs\":%.3f"
        ",\"consumer_sleeps\":%" PRIu64 ",\"consumer_wakeups_doorbell\":%" PRIu64
        ",\"consumer_cpu_pct\":%.2f,\"producer_cpu_pct\":%.2f,\"others_cpu_pct\":%.0f"
        ",\"wake_samples\":%" PRIu64
        ",\"wake_latency_p50_ns\":%s,\"wake_latency_p99_ns\":%s"
        ",\"handoff_latency_p50_ns\":%s,\"handoff_latency_p99_ns\":%s"
        ",\"handoff_latency_max_ns\":%s,\"ring_full\":%" PRIu64 ",\"lost\":%" PRIu64
        ",\"reordered\":%" PRIu64 "}\n",
        ferry::reactor::name(mode), load_name(rate).c_str(),
        rate == saturation ? "null" : std::to_string(rate).c_str(),
        secs > 0 ? double(sent) / secs : 0.0, double(window_ns) / 1e6, o.batch,
        double(s.idle_threshold_ns.load()) / 1e3, received, rung, pc.doorbells_suppressed.get(),
        pc.doorbell_errors.get(), received ? 1000.0 * double(rung) / double(received) : 0.0, sleeps,
        cc.wakeups_doorbell.get() - c0.wakeups_doorbell.get(),
        window_ns ? 100.0 * double(consumer_cpu) / double(window_ns) : 0.0,
        window_ns ? 100.0 * double(producer_cpu) / double(window_ns) : 0.0,
        window_ns ? std::max(0.0, 100.0 * (double(busy_ns) - double(producer_cpu + consumer_cpu)) /
                                      double(window_ns))
                  : 0.0,
        state->wake.total, ns_or_null(state->wake, 0.50).c_str(),
        ns_or_null(state->wake, 0.99).c_str(), ns_or_null(state->handoff, 0.50).c_str(),
        ns_or_null(state->handoff, 0.99).c_str(),
        state->handoff.total ? std::to_string(state->handoff.max).c_str() : "null",
        pc.ring_full.get(), lost, state->reordered);
    std::fflush(stdout);
}

std::vector<std::string> split(const char *s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            if (!cur.empty())
                out.push_back(cur);
            cur.clear();
            if (*p == '\0')
                break;
        } else {
            cur += *p;
        }
    }
    return out;
}

[[noreturn]] void usage(const char *argv0) {
    std::fprintf(stderr,
                 "usage: %s [--duration-ms N] [--modes always,conditional,poll]\n"
                 "          [--rates 0,1000,10000,100000,1000000,sat] [--batch N]\n"
                 "          [--idle-us N] [--ring N] [--cpus A,B]\n",
                 argv0);
    std::exit(2);
}

bool parse(int argc, char **argv, options &o) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            return false;
        const char *v = argv[++i];
        if (std::strcmp(a, "--duration-ms") == 0) {
            o.duration_ms = std::strtoull(v, nullptr, 10);
        } else if (std::strcmp(a, "--modes") == 0) {
            o.modes.clear();
            for (const std::string &m : split(v)) {
                wakeup_mode w;
                if (!ferry::reactor::parse_wakeup_mode(m.c_str(), w))
                    return false;
                o.modes.push_back(w);
            }
        } else if (std::strcmp(a, "--rates") == 0) {
            o.rates.clear();
            for (const std::string &r : split(v))
                o.rates.push_back(r == "sat" ? saturation : std::strtoull(r.c_str(), nullptr, 10));
        } else if (std::strcmp(a, "--batch") == 0) {
            o.batch = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        } else if (std::strcmp(a, "--idle-us") == 0) {
            o.idle_us = std::strtoull(v, nullptr, 10);
        } else if (std::strcmp(a, "--ring") == 0) {
            o.ring = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        } else if (std::strcmp(a, "--cpus") == 0) {
            const auto c = split(v);
            if (c.size() != 2)
                return false;
            o.cpus[0] = std::atoi(c[0].c_str());
            o.cpus[1] = std::atoi(c[1].c_str());
        } else {
            return false;
        }
    }
    return o.duration_ms != 0 && o.batch != 0 && o.ring != 0 && !o.modes.empty() &&
           !o.rates.empty();
}

}  // namespace

int main(int argc, char **argv) {
    options o;
    if (!parse(argc, argv, o))
        usage(argv[0]);
    if (o.cpus[0] < 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int i = 0, n = 0; i < CPU_SETSIZE && n < 2; ++i)
                if (CPU_ISSET(i, &set))
                    o.cpus[n++] = i;
        if (o.cpus[1] < 0) {
            std::fprintf(stderr, "xcore_bench: needs two CPUs (got one); results would mislead\n");
            return 1;
        }
    }

    // EAL for the rings and the TSC clock: no hugepages, no devices. The main
    // lcore is the producer's CPU; the worker threads pin themselves.
    if (!ferry::test::eal_start(argv[0], "ferry-xcore-bench", 64, o.cpus[0])) return 1;
    int rc = 0;
    {
        auto m = ferry::xcore::mesh::create(2, o.ring, SOCKET_ID_ANY, "xbench");
        if (!m.ok()) {
            std::fprintf(stderr, "%s\n", m.error().c_str());
            rc = 1;
        } else {
            for (wakeup_mode mode : o.modes)
                for (uint64_t rate : o.rates)
                    run_one(*m.value(), o, mode, rate);
        }
    }
    ferry::test::eal_stop();
    return rc;
}
