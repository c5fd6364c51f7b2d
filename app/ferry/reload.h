// In-process configuration reload (issue 18; docs/OPERATIONS.md "Reloading the
// configuration"): SIGHUP and /ferry/reload re-read the configuration file,
// validate it completely (the same errors, with file:line:column, as --check),
// refuse what needs a restart (config/reload.h: the ports, workers, TCP and
// pool sizes, a shared pool's upstream and servers),
// and swap the rest in on every worker at a safe point: between two
// iterations of its loop, where the proxy's poller takes the new generation
// (worker_proxy::reconfigure). A refused or invalid file changes nothing; the
// configuration in force keeps serving.
//
// A configuration lives as long as someone holds it (shared_ptr): the
// reloader holds the one in force, each worker the one its proxy runs (it
// lets the older go at its safe point), a telemetry command or a scrape the
// one it reads. So at most workers + readers + 1 are alive, however many
// reloads there were.
//
// Threads: reload() runs on the telemetry thread (/ferry/reload) or on the
// reload thread (SIGHUP), one at a time (a mutex); workers read the
// generation and the configuration pointer once per loop iteration.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drain_thread.h"
#include "ferry/base/name_table.h"
#include "ferry/config/config.h"
#include "ferry/reactor/reactor.h"
#include "ferry/telemetry/view.h"

namespace ferry::app {

class reloader {
public:
    // `initial` is the configuration ferry started with (it must outlive
    // this), read from `path` ("" for the embedded default: nothing to
    // re-read); the text there now gives the first hash.
    // `settings` get the file's wakeup settings when a reload changes them
    // (a value the file does not change keeps what telemetry set);
    // `wake_all` rings every worker after a swap, so sleepers take it at once;
    // `upstream_names` (the log writers' table, may be null) gets the name of
    // each upstream slot a reload adds, before the swap.
    void init(const config::ferry_config &initial, std::string path, reactor::settings &settings,
              void (*wake_all)() noexcept, name_table *upstream_names = nullptr);
    // The access log writer's line format (null: no access log), set when a
    // reload changes [http] access_log_format.
    void set_access_log_format(std::atomic<config::log_format> *format) noexcept {
        access_log_format_ = format;
    }

    // Re-reads the file and applies it if it can; `out` says what happened.
    // With `check`, nothing is applied, counted or logged: `out` says what a
    // reload of `path` ("": the configured file) would do (would_apply).
    void reload(telemetry::reload_report &out, bool check = false, const std::string &path = "");

    // The reload thread, which reloads when request_from_signal() asked.
    std::string start();
    void stop() noexcept;
    // Async-signal-safe: a flag and a write(2) to the thread's eventfd.
    void request_from_signal() noexcept;

    // The configuration in force, held for as long as the caller keeps it.
    [[nodiscard]] std::shared_ptr<const config::ferry_config> snapshot() const;
    // Bumped after each swap (release): a worker that sees a new value takes
    // snapshot() (which is that generation's or a newer one).
    [[nodiscard]] uint64_t generation() const noexcept {
        return counters_.generation.load(std::memory_order_acquire);
    }
    [[nodiscard]] const telemetry::reload_counters &counters() const noexcept { return counters_; }

private:
    static void tick(void *self, bool last) noexcept;

    reactor::settings *settings_ = nullptr;
    void (*wake_all_)() noexcept = nullptr;
    name_table *upstream_names_ = nullptr;
    std::atomic<config::log_format> *access_log_format_ = nullptr;
    std::mutex mu_;  // one reload at a time
    std::string path_;
    size_t route_capacity_ = 0;  // the proxies' room for routes (config/reload.h)
    mutable std::mutex active_mu_;  // guards active_ (held for a copy, never while parsing)
    std::shared_ptr<const config::ferry_config> active_;
    telemetry::reload_counters counters_;
    std::atomic<bool> signalled_{false};
    drain_thread thread_;
};

}  // namespace ferry::app
