// The event log's writer thread (event_log.h).
#include "event_log.h"

#include <poll.h>
#include <rte_lcore.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/reactor/reactor.h"

RTE_LOG_REGISTER(ferry_logtype_events, ferry.events, INFO);

namespace ferry::app {

event_log_writer::event_log_writer(const config::ferry_config &cfg, proxy::shared_state &shared)
    : names_(access_log_names::of(cfg)), shared_(shared) {
    size_t n = 0;
    for (size_t u = 0; u < cfg.upstreams.size(); ++u) {
        base_.push_back(n);
        for (size_t s = 0; s < cfg.upstreams[u].servers.size(); ++s)
            who_.emplace_back(static_cast<uint16_t>(u), static_cast<uint16_t>(s));
        n += cfg.upstreams[u].servers.size();
    }
    down_since_.assign(n, 0);
    limiter_ = std::make_unique<proxy::event_limiter>(n, burst, window_ns);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

event_log_writer::~event_log_writer() {
    stop();
    if (wake_fd_ >= 0) close(wake_fd_);
}

proxy::event_sink *event_log_writer::add_sink() {
    sinks_.push_back(std::make_unique<proxy::event_sink>(ring_events));
    return sinks_.back().get();
}

std::string event_log_writer::start() {
    if (wake_fd_ < 0) return "event log: eventfd: " + std::string(std::strerror(errno));
    // As the access log's writer: a control thread; the signals stay with the
    // main thread.
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    const int rc = rte_ctrl_thread_create(&thread_, "ferry-events", nullptr,
                                          &event_log_writer::thread_main, this);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0) return "event log: cannot start the writer thread: " + std::string(std::strerror(-rc));
    running_ = true;
    return "";
}

void event_log_writer::stop() noexcept {
    if (!running_) return;
    stopping_.store(true, std::memory_order_release);
    const uint64_t one = 1;
    while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(thread_, nullptr);
    running_ = false;
}

void *event_log_writer::thread_main(void *self) noexcept {
    static_cast<event_log_writer *>(self)->run();
    return nullptr;
}

void event_log_writer::run() noexcept {
    for (;;) {
        // Read before draining: once stop() is seen the producers are done,
        // so this last drain takes every event.
        const bool last = stopping_.load(std::memory_order_acquire);
        drain();
        if (last) return;
        pollfd p{wake_fd_, POLLIN, 0};
        if (poll(&p, 1, tick_ms) > 0) {
            uint64_t v;
            (void)!read(wake_fd_, &v, sizeof v);
        }
    }
}

void event_log_writer::drain() noexcept {
    proxy::event_log_counters &c = shared_.events;
    // Windows that ended with changes unlogged: say how many, and the state
    // the last of them left.
    limiter_->summaries(reactor::reactor::now_ns(), [&](size_t i, uint64_t n, bool down) {
        const auto [u, s] = who_[i];
        const logfmt l = logfmt("server changes not logged")
                             .kv("upstream", names_.upstreams[u])
                             .kv("server", names_.servers[u][s])
                             .kv("changes", n)
                             .kv("window_seconds", window_ns / 1'000'000'000ull)
                             .kv("reason", "rate limit")
                             .kv("now", down ? "down" : "up");
        FERRY_LOG(WARNING, ferry_logtype_events, "events", "%s", l.c_str());
        c.lines.inc();
    });
    for (auto &sink : sinks_)
        sink->consume(sink->capacity(), [&](const proxy::server_event &e) { line(e); });
}

void event_log_writer::line(const proxy::server_event &e) noexcept {
    proxy::event_log_counters &c = shared_.events;
    if (e.upstream >= base_.size() || e.server >= names_.servers[e.upstream].size()) return;
    const size_t k = key(e.upstream, e.server);
    const bool down = e.what == proxy::server_event::kind::down;
    (down ? c.server_down : c.server_up).inc();
    const uint64_t since = down_since_[k];
    down_since_[k] = down ? e.t_ns : 0;
    if (!limiter_->admit(k, down, e.t_ns)) {
        c.suppressed.inc();
        return;
    }
    c.lines.inc();
    logfmt l(down ? "server down" : "server up");
    l.kv("upstream", names_.upstreams[e.upstream]).kv("server", names_.servers[e.upstream][e.server]);
    if (down) {
        // checks=N: failed health checks in a row; failures=N: failed requests.
        l.kv("cause", proxy::describe_cause(e)).kv(e.check ? "checks" : "failures", e.fails);
        FERRY_LOG(WARNING, ferry_logtype_events, "events", "%s", l.c_str());
    } else {
        if (since != 0 && e.t_ns >= since) l.kv("down_seconds", double(e.t_ns - since) / 1e9, 1);
        FERRY_LOG(NOTICE, ferry_logtype_events, "events", "%s", l.c_str());
    }
}

}  // namespace ferry::app
