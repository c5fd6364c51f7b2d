// What one cross-core round trip costs, by mechanism: the floor under the
// doorbell protocol's choices (DESIGN.md, "The doorbell protocol"). Two
// threads pinned to two CPUs (the first two this process may use, or
// FERRY_PINGPONG_CPUS=A,B) bounce one token; each benchmark iteration is one
// round trip, so Google Benchmark's "Time" column is ns per round trip
// (wall clock: UseRealTime, since in the blocking case the waiting is the
// point).
//
//   bm_flag_store_spin   one shared cache line; each side stores the next
//                        value and spins on loads (what a polling core pays
//                        to see another core's write: two line transfers)
//   bm_flag_cas_spin     the same, each hand-off a locked CMPXCHG (spin on
//                        loads, then CAS)
//   bm_rte_ring          a pair of SPSC rte_rings, one 8-byte object per trip,
//                        both sides polling (the xcore path without batching)
//   bm_eventfd_epoll     a pair of eventfds, each side blocked in epoll_wait
//                        (the doorbell path: write + wakeup + reschedule)
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <rte_errno.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test_eal.h"

namespace {

int g_cpu[2] = {-1, -1};

void pin(int cpu) {
    if (cpu < 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

// Runs `partner` on a thread pinned to the second CPU for the duration of
// one benchmark run; the benchmark thread itself is pinned to the first.
template <class F>
struct partner_thread {
    std::thread t;
    explicit partner_thread(F f)
        : t([f]() mutable {
              pin(g_cpu[1]);
              f();
          }) {}
    ~partner_thread() { t.join(); }
};

struct alignas(64) line {
    std::atomic<uint64_t> v{0};
};

void bm_flag_store_spin(benchmark::State &state) {
    pin(g_cpu[0]);
    line flag;
    // Odd values are pings (written by us), even values pongs.
    partner_thread p([&flag] {
        uint64_t seen = 0;
        for (;;) {
            uint64_t v;
            while ((v = flag.v.load(std::memory_order_acquire)) == seen)
                rte_pause();
            if (v == UINT64_MAX)
                return;
            seen = v + 1;
            flag.v.store(seen, std::memory_order_release);
        }
    });
    uint64_t x = 0;
    for (auto _ : state) {
        flag.v.store(x + 1, std::memory_order_release);
        while (flag.v.load(std::memory_order_acquire) != x + 2)
            rte_pause();
        x += 2;
    }
    flag.v.store(UINT64_MAX, std::memory_order_release);
}

void bm_flag_cas_spin(benchmark::State &state) {
    pin(g_cpu[0]);
    line flag;  // 0: token with us, 1: with the partner, 2: stop
    partner_thread p([&flag] {
        for (;;) {
            // Test, then test-and-set: spinning on the CAS itself would keep
            // pulling the line exclusive and slow the other side down.
            uint64_t v;
            while ((v = flag.v.load(std::memory_order_acquire)) != 1) {
                if (v == 2)
                    return;
                rte_pause();
            }
            uint64_t expect = 1;
            (void)flag.v.compare_exchange_strong(expect, 0, std::memory_order_acq_rel);
        }
    });
    for (auto _ : state) {
        uint64_t expect = 0;
        // Hand over, then wait for it to come back.
        (void)flag.v.compare_exchange_strong(expect, 1, std::memory_order_acq_rel);
        while (flag.v.load(std::memory_order_acquire) != 0)
            rte_pause();
    }
    flag.v.store(2, std::memory_order_release);
}

void bm_rte_ring(benchmark::State &state) {
    pin(g_cpu[0]);
    static int seq = 0;
    const std::string a = "pp_a" + std::to_string(seq), b = "pp_b" + std::to_string(seq++);
    rte_ring *ping = rte_ring_create(a.c_str(), 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring *pong = rte_ring_create(b.c_str(), 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ping == nullptr || pong == nullptr) {
        state.SkipWithError(rte_strerror(rte_errno));
        rte_ring_free(ping);
        rte_ring_free(pong);
        return;
    }
    {
        partner_thread p([ping, pong] {
            for (;;) {
                void *obj;
                while (rte_ring_sc_dequeue(ping, &obj) != 0)
                    rte_pause();
                if (obj == nullptr)
                    return;
                while (rte_ring_sp_enqueue(pong, obj) != 0)
                    rte_pause();
            }
        });
        uintptr_t token = 1;
        for (auto _ : state) {
            while (rte_ring_sp_enqueue(ping, reinterpret_cast<void *>(token)) != 0)
                rte_pause();
            void *obj;
            while (rte_ring_sc_dequeue(pong, &obj) != 0)
                rte_pause();
            benchmark::DoNotOptimize(obj);
        }
        while (rte_ring_sp_enqueue(ping, nullptr) != 0)
            rte_pause();
    }
    rte_ring_free(ping);
    rte_ring_free(pong);
}

// Blocks in epoll_wait until `fd` is readable, then consumes it.
void wait_fd(int ep, int fd) {
    epoll_event ev;
    while (epoll_wait(ep, &ev, 1, -1) != 1) {
    }
    uint64_t v;
    (void)!read(fd, &v, sizeof v);
}

void bm_eventfd_epoll(benchmark::State &state) {
    pin(g_cpu[0]);
    const int to_partner = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const int to_us = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const int ep_us = epoll_create1(EPOLL_CLOEXEC), ep_partner = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep_us, EPOLL_CTL_ADD, to_us, &ev);
    epoll_ctl(ep_partner, EPOLL_CTL_ADD, to_partner, &ev);
    std::atomic<bool> stop{false};
    {
        partner_thread p([&] {
            const uint64_t one = 1;
            for (;;) {
                wait_fd(ep_partner, to_partner);
                if (stop.load(std::memory_order_acquire))
                    return;
                (void)!write(to_us, &one, sizeof one);
            }
        });
        const uint64_t one = 1;
        for (auto _ : state) {
            (void)!write(to_partner, &one, sizeof one);
            wait_fd(ep_us, to_us);
        }
        stop.store(true, std::memory_order_release);
        (void)!write(to_partner, &one, sizeof one);
    }
    close(ep_us);
    close(ep_partner);
    close(to_partner);
    close(to_us);
}

BENCHMARK(bm_flag_store_spin)->UseRealTime()->MinTime(1.0);
BENCHMARK(bm_flag_cas_spin)->UseRealTime()->MinTime(1.0);
BENCHMARK(bm_rte_ring)->UseRealTime()->MinTime(1.0);
BENCHMARK(bm_eventfd_epoll)->UseRealTime()->MinTime(1.0);

}  // namespace

int main(int argc, char **argv) {
    if (const char *env = std::getenv("FERRY_PINGPONG_CPUS")) {
        std::sscanf(env, "%d,%d", &g_cpu[0], &g_cpu[1]);
    } else {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int i = 0, n = 0; i < CPU_SETSIZE && n < 2; ++i)
                if (CPU_ISSET(i, &set))
                    g_cpu[n++] = i;
    }
    if (g_cpu[0] < 0 || g_cpu[1] < 0) {
        std::fprintf(stderr, "pingpong_bench: needs two CPUs\n");
        return 1;
    }
    // The EAL only for rte_ring's memory; no hugepages, no devices.
    if (!ferry::test::eal_start(argv[0], "ferry-pingpong", 64, g_cpu[0])) return 1;
    std::printf("pingpong: CPUs %d <-> %d; Time = ns per round trip\n", g_cpu[0], g_cpu[1]);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    ferry::test::eal_stop();
    return 0;
}
