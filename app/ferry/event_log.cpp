// The event log's writer thread (event_log.h).
#include "event_log.h"

#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/reactor/reactor.h"

RTE_LOG_REGISTER(ferry_logtype_events, ferry.events, INFO);

namespace ferry::app {

event_log_writer::event_log_writer(const config::ferry_config &cfg, proxy::shared_state &shared,
                                   const name_table &upstreams)
    : names_{&upstreams}, shared_(shared) {
    // One dense index per server slot of every upstream slot, those a reload
    // may add included (config.h upstream_capacity); a slot's name is its
    // address, from the config now and from its events later (an event
    // carries it).
    size_t n = 0;
    for (size_t u = 0; u < config::upstream_capacity(cfg); ++u) {
        const size_t cap = config::server_capacity(cfg, u);
        base_.push_back(n);
        caps_.push_back(cap);
        for (size_t s = 0; s < cap; ++s) {
            upstream_of_.push_back(static_cast<uint16_t>(u));
            const config::upstream_config *uc = u < cfg.upstreams.size() ? &cfg.upstreams[u] : nullptr;
            server_names_.push_back(uc != nullptr && s < uc->slots.size()
                                        ? config::format_endpoint(uc->slots[s].addr, uc->slots[s].port)
                                        : "");
        }
        n += cap;
    }
    down_since_.assign(n, 0);
    limiter_ = std::make_unique<proxy::event_limiter>(n, burst, window_ns);
}

event_log_writer::~event_log_writer() { stop(); }

proxy::event_sink *event_log_writer::add_sink() {
    sinks_.push_back(std::make_unique<proxy::event_sink>(ring_events));
    return sinks_.back().get();
}

std::string event_log_writer::start() {
    const std::string e = thread_.start(
        "ferry-events", tick_ms,
        [](void *self, bool) noexcept { static_cast<event_log_writer *>(self)->drain(); }, this);
    return e.empty() ? e : "event log: cannot start the writer thread: " + e;
}

void event_log_writer::stop() noexcept { thread_.stop(); }

void event_log_writer::drain() noexcept {
    proxy::event_log_counters &c = shared_.events;
    // Windows that ended with changes unlogged: say how many, and the state
    // the last of them left.
    limiter_->summaries(reactor::reactor::now_ns(), [&](size_t i, uint64_t n, bool down) {
        const logfmt l = logfmt("server changes not logged")
                             .kv("upstream", names_.upstream(upstream_of_[i]))
                             .kv("server", server_names_[i])
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
    if (e.upstream >= base_.size() || e.server >= caps_[e.upstream]) return;
    const size_t k = key(e.upstream, e.server);
    std::string &name = server_names_[k];
    if (name.empty()) name = config::format_endpoint(e.addr, e.port);  // a server a reload added
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
    l.kv("upstream", names_.upstream(e.upstream)).kv("server", name);
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
