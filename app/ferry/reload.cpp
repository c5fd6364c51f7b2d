// In-process configuration reload (reload.h).
#include "reload.h"

#include <chrono>
#include <cstdio>

#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/config/reload.h"

extern int ferry_logtype_app;

#define RELOAD_LOG(level, fmt, ...) FERRY_LOG(level, ferry_logtype_app, "app", fmt, __VA_ARGS__)

namespace ferry::app {
namespace {

uint64_t unix_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

std::string hex(uint64_t h) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
}

}  // namespace

void reloader::init(const config::ferry_config &initial, std::string path,
                    reactor::settings &settings, void (*wake_all)() noexcept,
                    name_table *upstream_names) {
    upstream_names_ = upstream_names;
    path_ = std::move(path);
    route_capacity_ = config::route_capacity(initial.routes.size());
    settings_ = &settings;
    wake_all_ = wake_all;
    // The configuration ferry started with belongs to the app (static).
    active_ = std::shared_ptr<const config::ferry_config>(&initial,
                                                          [](const config::ferry_config *) {});
    std::string text;
    if (path_.empty()) {
        text = config::embedded_default();
    } else if (auto t = config::read_text(path_)) {
        text = std::move(*t);  // unreadable now: the hash of nothing
    }
    counters_.hash.store(config::config_hash(text), std::memory_order_relaxed);
}

std::shared_ptr<const config::ferry_config> reloader::snapshot() const {
    std::lock_guard<std::mutex> g(active_mu_);
    return active_;
}

void reloader::reload(telemetry::reload_report &out, bool check, const std::string &other) {
    std::lock_guard<std::mutex> g(mu_);
    const std::shared_ptr<const config::ferry_config> running = snapshot();
    const config::ferry_config &run = *running;
    const std::string &path = other.empty() ? path_ : other;
    out = {};
    out.source = path.empty() ? run.source : path;
    auto finish = [&](const char *result, std::atomic<uint64_t> &count) {
        out.result = result;
        if (!check) {
            count.fetch_add(1, std::memory_order_relaxed);
            counters_.last_unix_ns.store(unix_ns(), std::memory_order_relaxed);
        }
        out.generation = counters_.generation.load(std::memory_order_relaxed);
        out.hash = counters_.hash.load(std::memory_order_relaxed);
    };
    auto refuse = [&](const char *result, std::atomic<uint64_t> &count) {
        finish(result, count);
        if (check) {
            // Telemetry cuts strings at 127 bytes: the file's path, which the
            // asker knows, goes (":12:1: key ...").
            for (std::string &e : out.errors)
                if (e.starts_with(path)) e.erase(0, path.size());
            return;
        }
        for (const std::string &e : out.errors)
            RELOAD_LOG(ERR, "%s",
                       logfmt("reload refused")
                           .kv("result", result)
                           .kv("error", e)
                           .kv("kept_generation", out.generation)
                           .c_str());
    };
    if (path.empty()) {
        out.errors.push_back(
            "ferry runs on its embedded default configuration: there is no file to re-read "
            "(start it with --config FILE)");
        refuse("refused", counters_.refused);
        return;
    }
    auto read = config::read_text(path);
    if (!read) {
        out.errors.push_back(path + ": " + read.error());
        refuse("invalid", counters_.invalid);
        return;
    }
    const std::string &text = *read;
    auto parsed = config::parse(text, path);
    if (!parsed) {
        out.errors.push_back(parsed.error().to_string());
        refuse("invalid", counters_.invalid);
        return;
    }
    // Listeners keep their state by name, servers by address: each gets its slot.
    for (const config::error &e : config::carry_slots(run, parsed.value()))
        out.errors.push_back(e.to_string());
    // Counted while alive (reload_counters::alive): the last holder frees it.
    counters_.alive.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<const config::ferry_config> next(
        new config::ferry_config(std::move(parsed.value())),
        [alive = &counters_.alive](const config::ferry_config *c) {
            delete c;
            alive->fetch_sub(1, std::memory_order_relaxed);
        });
    for (const config::error &e : config::reload_refusals(run, *next, route_capacity_))
        out.errors.push_back(e.to_string());
    if (!out.errors.empty()) {
        refuse("refused", counters_.refused);
        return;
    }
    out.changes = config::reload_changes(run, *next);
    const uint64_t hash = config::config_hash(text);
    if (check) {
        finish(out.changes.empty() ? "unchanged" : "would_apply", counters_.unchanged);
        return;
    }
    if (out.changes.empty()) {
        // Nothing a worker would do differently; the text may differ (a
        // comment): its hash is the one in force from now on.
        counters_.hash.store(hash, std::memory_order_relaxed);
        finish("unchanged", counters_.unchanged);
        RELOAD_LOG(INFO, "%s",
                   logfmt("reload unchanged")
                       .kv("config", path)
                       .kv("hash", hex(hash))
                       .kv("generation", out.generation)
                       .c_str());
        return;
    }
    // The wakeup settings the file changes; what it leaves as it was keeps
    // what telemetry may have set since.
    if (next->wakeup != run.wakeup)
        settings_->mode.store(static_cast<reactor::wakeup_mode>(next->wakeup),
                              std::memory_order_relaxed);
    if (next->idle_threshold_us != run.idle_threshold_us)
        settings_->idle_threshold_ns.store(uint64_t(next->idle_threshold_us) * 1000u,
                                           std::memory_order_relaxed);
    if (next->nap_budget_us != run.nap_budget_us)
        settings_->nap_budget_ns.store(uint64_t(next->nap_budget_us) * 1000u,
                                       std::memory_order_relaxed);
    if (next->latency_weight_pct != run.latency_weight_pct)
        settings_->latency_weight_pct.store(next->latency_weight_pct, std::memory_order_relaxed);
    if (next->busy_latency_weight_pct != run.busy_latency_weight_pct)
        settings_->busy_latency_weight_pct.store(next->busy_latency_weight_pct,
                                                 std::memory_order_relaxed);
    if (next->spin_yield_us != run.spin_yield_us)
        settings_->spin_yield_ns.store(uint64_t(next->spin_yield_us) * 1000u,
                                       std::memory_order_relaxed);
    if (access_log_format_ != nullptr &&
        next->http.access_log_format != run.http.access_log_format)
        access_log_format_->store(next->http.access_log_format, std::memory_order_relaxed);
    // The names of upstream slots this reload adds, before any record can
    // name them (name_table.h).
    if (upstream_names_ != nullptr)
        for (size_t u = 0; u < next->upstreams.size(); ++u)
            (void)upstream_names_->name(u, next->upstreams[u].name);
    // Publish: the configuration first, then its generation, which workers
    // compare with theirs once per loop iteration (acquire), then wake them.
    {
        std::lock_guard<std::mutex> a(active_mu_);
        active_ = std::move(next);
    }
    counters_.hash.store(hash, std::memory_order_relaxed);
    counters_.generation.fetch_add(1, std::memory_order_release);
    if (wake_all_ != nullptr) wake_all_();
    finish("applied", counters_.applied);
    std::string summary;
    for (const std::string &c : out.changes) summary += (summary.empty() ? "" : "; ") + c;
    RELOAD_LOG(NOTICE, "%s",
               logfmt("reload applied")
                   .kv("config", path)
                   .kv("hash", hex(hash))
                   .kv("generation", out.generation)
                   .kv("changes", summary)
                   .c_str());
}

std::string reloader::start() {
    // Waits for SIGHUP's requests; a tick every second only checks the flag.
    return thread_.start("ferry-reload", 1000, &reloader::tick, this);
}

void reloader::stop() noexcept { thread_.stop(); }

void reloader::request_from_signal() noexcept {
    signalled_.store(true, std::memory_order_relaxed);
    thread_.wake();
}

void reloader::tick(void *self, bool last) noexcept {
    auto &r = *static_cast<reloader *>(self);
    if (last || !r.signalled_.exchange(false, std::memory_order_relaxed)) return;
    telemetry::reload_report report;
    r.reload(report);
}

}  // namespace ferry::app
