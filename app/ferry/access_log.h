// The access log's writer ([http] access_log, docs/OPERATIONS.md "Access log").
//
// Every worker's proxy writes one lib/proxy access_record per request into its
// own SPSC ring (ferry/proxy/access_log.h) and never waits: a full ring drops
// the record and counts it (access_log_dropped in /ferry/http and /metrics).
// ONE DPDK control thread, never a worker lcore, drains every ring each
// flush_interval_ms, formats the lines (combined or JSON) and write()s them in
// batches to a file opened O_APPEND at start-up. stop() wakes it through an
// eventfd; it drains every ring before it exits, so a SIGTERM loses no line
// of a request that ended before the workers stopped.
//
// SIGHUP (request_reopen) makes the thread reopen the path at its next tick,
// for logrotate's create + postrotate scheme; copytruncate works as well since
// every write appends.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drain_thread.h"
#include "ferry/base/name_table.h"
#include "ferry/base/result.h"
#include "ferry/config/config.h"
#include "ferry/proxy/access_log.h"

namespace ferry::app {

// What formatting a record needs besides the record: the upstreams' names
// by slot (config.h ferry_config::upstreams; the reloader names a slot a
// reload adds before a record can name it), a server's address comes in the
// record.
struct access_log_names {
    const name_table *upstreams = nullptr;
    // Upstream slot u's name, "" when unknown.
    [[nodiscard]] std::string_view upstream(int u) const noexcept {
        return upstreams != nullptr && u >= 0 ? (*upstreams)[size_t(u)] : std::string_view();
    }
};

// Appends one line (ending in '\n') for `r` in the given format; `lcore` is
// the producer's EAL lcore id, `realtime_offset_ns` = CLOCK_REALTIME minus
// reactor::now_ns() (both in ns). The formats are exact and documented in
// docs/OPERATIONS.md "Access log". Any thread; pure.
void format_access_line(std::string &out, config::log_format format, const proxy::access_record &r,
                        unsigned lcore, int64_t realtime_offset_ns, const access_log_names &names);

class access_log_writer {
public:
    // Records per lcore ring (about 1.25 KiB each: 10 MiB per lcore).
    static constexpr uint32_t ring_records = 8192;
    // How often the thread drains the rings.
    static constexpr int flush_interval_ms = 50;
    // Lines are written when this many bytes are pending, and at each tick's end.
    static constexpr size_t write_batch = 256 * 1024;

    // Opens cfg.http.access_log (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
    // 0644). `upstreams` names the upstreams by slot (it must outlive the
    // writer). Error text naming the path and the errno text.
    static result<std::unique_ptr<access_log_writer>, std::string> open(
        const config::ferry_config &cfg, const name_table &upstreams);

    // stop().
    ~access_log_writer();
    access_log_writer(const access_log_writer &) = delete;
    access_log_writer &operator=(const access_log_writer &) = delete;

    // A new ring for the worker on EAL lcore `lcore`, owned by the writer (it
    // must outlive the proxy it is given to). Before start() only.
    proxy::access_log_sink *add_sink(unsigned lcore);
    // Starts the thread. Error text, or "" on success.
    std::string start();
    // Wakes the thread, which drains every ring, writes and exits; joins it
    // and closes the file. Call once the producers are done (the workers
    // stopped, the proxies destroyed). Idempotent.
    void stop() noexcept;

    // Async-signal-safe: the thread reopens the file at its next tick.
    static void request_reopen() noexcept;

    [[nodiscard]] const std::string &path() const noexcept { return path_; }
    // The line format: a reload may change it (reloader::init's target);
    // records the thread formats from then on take it. Any thread.
    [[nodiscard]] std::atomic<config::log_format> &format() noexcept { return format_; }

private:
    access_log_writer(const config::ferry_config &cfg, const name_table &upstreams, int fd);

    // One tick of the writer thread: a reopen if SIGHUP asked, then drain().
    void tick() noexcept;
    // Formats and writes everything the rings hold now.
    void drain() noexcept;
    void write_out() noexcept;
    void reopen() noexcept;

    std::string path_;
    std::atomic<config::log_format> format_;
    access_log_names names_;
    int fd_ = -1;
    std::vector<std::unique_ptr<proxy::access_log_sink>> sinks_;
    std::string buf_;             // formatted, not yet written (the thread's)
    uint64_t pending_lines_ = 0;  // lines in buf_
    uint64_t lines_ = 0;          // written
    uint64_t lost_ = 0;           // lines a failed write() lost
    int64_t last_warn_s_ = 0;
    drain_thread thread_;
};

}  // namespace ferry::app
