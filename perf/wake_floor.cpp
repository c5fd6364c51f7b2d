// The machine's floor for waking a sleeping thread, without ferry: one thread
// blocks in epoll_wait on an eventfd (as a sleeping ferry worker does), another
// on a different CPU writes the eventfd after an idle gap, and the time from
// the write to the sleeper running again is recorded. Gaps long enough for the
// sleeper's CPU to go idle (halt) show what the kernel and, in a VM, the
// hypervisor add to every wakeup; xcore_bench's wake_latency is this plus the
// reactor's own path, so compare the two in the same run.
//
//   build/perf/wake_floor [--gap-us 1000] [--samples 2000] [--cpus 0,1]
//
// Prints one JSON line per gap: gap_us, samples, wake_p50_ns, wake_p90_ns,
// wake_p99_ns, wake_max_ns.
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

struct result {
    unsigned gap_us;
    std::vector<uint64_t> lat;
};

result run(unsigned gap_us, unsigned samples, int cpu_sleeper, int cpu_waker) {
    const int efd = eventfd(0, EFD_NONBLOCK);
    const int ep = epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = efd;
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    std::atomic<uint64_t> sent_at{0};
    std::atomic<unsigned> done{0};
    result r{gap_us, {}};
    r.lat.reserve(samples);
    std::thread sleeper([&] {
        pin(cpu_sleeper);
        while (done.load() < samples) {
            epoll_event out;
            const int n = epoll_wait(ep, &out, 1, 1000);
            const uint64_t t = now_ns();
            if (n != 1) continue;
            uint64_t v;
            (void)!read(efd, &v, sizeof v);
            r.lat.push_back(t - sent_at.load(std::memory_order_acquire));
            done.fetch_add(1);
        }
    });
    pin(cpu_waker);
    for (unsigned i = 0; i < samples; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
        const unsigned before = done.load();
        sent_at.store(now_ns(), std::memory_order_release);
        const uint64_t one = 1;
        (void)!write(efd, &one, sizeof one);
        while (done.load() == before) std::this_thread::yield();
    }
    sleeper.join();
    close(ep);
    close(efd);
    return r;
}

uint64_t pct(std::vector<uint64_t> &v, double p) {
    if (v.empty()) return 0;
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * double(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k];
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<unsigned> gaps = {50, 200, 1000, 10000};
    unsigned samples = 2000;
    int c0 = 0, c1 = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--gap-us") gaps = {static_cast<unsigned>(std::atoi(argv[i + 1]))};
        else if (a == "--samples") samples = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (a == "--cpus") std::sscanf(argv[i + 1], "%d,%d", &c0, &c1);
    }
    for (unsigned g : gaps) {
        // Fewer samples for long gaps: the run stays within seconds.
        const unsigned n = g >= 10000 ? std::min(samples, 300u) : samples;
        result r = run(g, n, c1, c0);
        std::printf("{\"gap_us\": %u, \"samples\": %zu, \"wake_p50_ns\": %llu, \"wake_p90_ns\": %llu, "
                    "\"wake_p99_ns\": %llu, \"wake_max_ns\": %llu}\n",
                    g, r.lat.size(), (unsigned long long)pct(r.lat, 0.5),
                    (unsigned long long)pct(r.lat, 0.9), (unsigned long long)pct(r.lat, 0.99),
                    (unsigned long long)pct(r.lat, 1.0));
        std::fflush(stdout);
    }
    return 0;
}
