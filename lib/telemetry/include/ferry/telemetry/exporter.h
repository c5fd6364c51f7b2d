// The Prometheus exporter of [admin] metrics_address (docs/OPERATIONS.md
// "Metrics"): a kernel TCP socket served by one control thread that answers
// GET /metrics with render_metrics() (metrics.h) and GET /healthz with "ok"
// (200), or "draining" (503) once SIGTERM came (process_view::draining).
//
// The thread is a DPDK control thread, never a worker lcore, and it reads
// only what the telemetry thread reads: per-lcore counters with relaxed
// atomic loads, health words, ring tails, ethdev stats and mempool counts. A
// scrape therefore never takes a lock a worker holds nor writes a line a
// worker owns. It serves one client at a time with a deadline on every read
// and write, so a stuck client delays the next scrape by at most a few
// seconds and never blocks shutdown (an eventfd wakes every wait). What it
// answers is admin_request.h's (lib/http's strict parser); what it did is
// counted in an exporter_counters block (/ferry/exporter,
// ferry_exporter_*_total).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ferry/base/counter.h"
#include "ferry/base/result.h"
#include "ferry/telemetry/view.h"

namespace ferry::telemetry {

// Written by the exporter's thread only, read by any.
#define FERRY_EXPORTER_COUNTERS(X)                                                               \
    X(connections, "client connections accepted by the [admin] listener")                       \
    X(reads, "reads that returned request bytes (a head may take several)")                      \
    X(requests, "valid request heads answered (200, 404 or 405)")                                \
    X(scrapes, "GET and HEAD /metrics answered 200")                                             \
    X(rejected, "requests the HTTP parser rejected (answered 400, 414, 431, 501 or 505)")        \
    X(read_timeouts, "clients answered 408: no whole request head within the read timeout")      \
    X(closed_early, "clients that closed or reset before sending a whole request head")          \
    X(write_failed, "responses not sent in full: the client reset or read too slowly")           \
    X(healthz_draining, "GET /healthz answered 503 draining: SIGTERM came (drain_grace_ms, drain)") \
    X(scrape_allocations, "heap allocations made while rendering /metrics: the first scrape's only (buffers kept after it)")

struct alignas(64) exporter_counters {
    FERRY_EXPORTER_COUNTERS(FERRY_COUNTER_MEMBER)
};
#define FERRY_EXPORTER_FIELD(n, h) FERRY_COUNTER_FIELD(exporter_counters, n, h)
inline constexpr counter_field<exporter_counters> exporter_counter_fields[] = {
    FERRY_EXPORTER_COUNTERS(FERRY_EXPORTER_FIELD)};

class exporter {
public:
    // Time limits per client: the whole request head (at most
    // admin_request::max_head bytes), the whole response.
    static constexpr int read_timeout_ms = 2000;
    static constexpr int write_timeout_ms = 5000;

    // Binds addr:port (IPv4, host byte order; 0 = every address) in the
    // calling thread's network namespace, listens, and starts the serving
    // thread. The thread reads `view` from its first request on and counts
    // into `counters`, until stop(): both must stay valid (view.h) until
    // then. Error text naming the address and the errno text when the
    // socket, bind, listen, eventfd or the thread fail.
    static result<std::unique_ptr<exporter>, std::string> start(const process_view &view,
                                                                exporter_counters &counters,
                                                                uint32_t addr, uint16_t port);

    // stop().
    ~exporter();
    exporter(const exporter &) = delete;
    exporter &operator=(const exporter &) = delete;

    // Wakes the thread (the eventfd is in every poll() it makes), joins it and
    // closes the sockets. A request in progress is abandoned. Idempotent.
    void stop() noexcept;

private:
    exporter(const process_view &view, exporter_counters &counters, int listen_fd,
             int wake_fd) noexcept
        : view_(view), ctr_(counters), listen_fd_(listen_fd), wake_fd_(wake_fd) {}

    static void *thread_main(void *self) noexcept;
    void run() noexcept;
    // Reads one request from `fd`, answers it. False when stop() woke us.
    bool serve(int fd) noexcept;
    // 1: `fd` has `events`; 0: `deadline_ms` (CLOCK_MONOTONIC) passed; -1: stop.
    int wait_for(int fd, short events, int64_t deadline_ms) noexcept;

    // Sends all of `data` before `deadline_ms`: 1 sent, 0 gave up on the client
    // (counted in write_failed), -1 stop.
    int send_all(int fd, std::string_view data, int64_t deadline_ms, int flags) noexcept;

    const process_view &view_;
    exporter_counters &ctr_;
    // The scrape's text, kept between scrapes: its capacity stays, so a scrape
    // after the first allocates nothing (render_metrics).
    std::string metrics_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;
    pthread_t thread_{};
    bool running_ = false;  // thread_ is joinable (control path only)
    std::atomic<bool> stopping_{false};
};

}  // namespace ferry::telemetry
