// The access log's writer thread and its two line formats (access_log.h).
// Formats: nginx's "combined" (http://nginx.org/en/docs/http/ngx_http_log_module.html)
// with its escaping of '"', '\' and bytes outside 0x20..0x7e as \xHH, followed
// by ferry's fields; and one JSON object per line (RFC 8259; every byte that
// is not printable ASCII is written as \u00XX, so a line is valid UTF-8 and
// valid JSON whatever the client sent). Exact layouts: docs/OPERATIONS.md.
#include "access_log.h"

#include <array>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/reactor/reactor.h"

extern int ferry_logtype_app;

namespace ferry::app {
namespace {

std::atomic<bool> reopen_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

constexpr char hex_digits[] = "0123456789ABCDEF";

std::string errno_text(int e) {
    char buf[128];
    // GNU strerror_r returns the message (maybe not in buf).
    return strerror_r(e, buf, sizeof buf);
}

void append_u64(std::string &out, uint64_t v) {
    char b[24];
    const int n = std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(v));
    out.append(b, static_cast<size_t>(n));
}

// Seconds with millisecond precision: "0.012".
void append_seconds(std::string &out, uint64_t ns) {
    const uint64_t ms = ns / 1'000'000u;
    char b[32];
    const int n =
        std::snprintf(b, sizeof b, "%llu.%03llu", static_cast<unsigned long long>(ms / 1000),
                      static_cast<unsigned long long>(ms % 1000));
    out.append(b, static_cast<size_t>(n));
}

void append_addr(std::string &out, const net::ip_addr &a) {
    std::array<char, net::ip_addr::text_max> b;
    out.append(b.data(), a.format(b));
}

// nginx's log escaping (ngx_http_log_escape): '"', '\' and every byte outside
// 0x20..0x7e become \xHH. Empty -> "-".
void append_clf(std::string &out, std::string_view v) {
    if (v.empty()) {
        out += '-';
        return;
    }
    for (char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
            out += "\\x";
            out += hex_digits[c >> 4];
            out += hex_digits[c & 15];
        } else {
            out += ch;
        }
    }
}

// A JSON string's contents (RFC 8259 §7): '"' and '\' escaped, every other
// byte outside 0x20..0x7e as \u00XX (a byte is read as Latin-1: the line stays
// valid UTF-8 whatever the client sent).
void append_json_chars(std::string &out, std::string_view v) {
    for (char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20 || c > 0x7e) {
            out += "\\u00";
            out += hex_digits[c >> 4];
            out += hex_digits[c & 15];
        } else {
            out += ch;
        }
    }
}

void append_json_string(std::string &out, std::string_view v) {
    out += '"';
    append_json_chars(out, v);
    out += '"';
}

std::string_view view(const char *p, size_t n) {
    return {p, n};
}

// Local time of `sec` as strftime `fmt`, cached per second (one thread only:
// the writer's; format_access_line's callers in tests are single-threaded too).
struct time_cache {
    int64_t sec = INT64_MIN;
    char text[64] = {};
    size_t len = 0;
};

std::string_view local_time(time_cache &tc, int64_t sec, const char *fmt, bool colon_zone) {
    if (sec != tc.sec) {
        tc.sec = sec;
        const time_t t = static_cast<time_t>(sec);
        tm parts{};
        localtime_r(&t, &parts);
        tc.len = strftime(tc.text, sizeof tc.text, fmt, &parts);
        if (colon_zone && tc.len >= 5 && tc.len + 1 < sizeof tc.text) {
            // "+0100" -> "+01:00" (ISO 8601 / RFC 3339).
            std::memmove(tc.text + tc.len - 1, tc.text + tc.len - 2, 2);
            tc.text[tc.len - 2] = ':';
            ++tc.len;
        }
    }
    return {tc.text, tc.len};
}

thread_local time_cache clf_time, iso_time;

}  // namespace

void format_access_line(std::string &out, config::log_format format, const proxy::access_record &r,
                        unsigned lcore, int64_t realtime_offset_ns, const access_log_names &names) {
    using rec = proxy::access_record;
    const int64_t wall_ns = static_cast<int64_t>(r.t_start) + realtime_offset_ns;
    const int64_t sec = wall_ns >= 0 ? wall_ns / 1'000'000'000 : 0;
    const uint64_t msec =
        wall_ns >= 0 ? static_cast<uint64_t>(wall_ns % 1'000'000'000) / 1'000'000 : 0;
    const uint64_t rt = r.t_end >= r.t_start ? r.t_end - r.t_start : 0;
    const bool parsed = r.flags & rec::f_parsed;
    const std::string_view method = view(r.method, r.method_len);
    const std::string_view target = view(r.target, r.target_len);
    const char *version = r.version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
    const std::string_view up_name = names.upstream(r.upstream);
    const bool has_up = !up_name.empty();
    // The server's address comes in the record: a reload may have added it.
    const bool has_srv = has_up && r.server >= 0;
    std::array<char, ip_address::endpoint_text_max> srv_buf;
    const std::string_view srv =
        has_srv ? std::string_view(srv_buf.data(), r.server_addr.format_endpoint(r.server_port,
                                                                                 srv_buf))
                : std::string_view("-");

    if (format == config::log_format::combined) {
        // %h - - [%d/%b/%Y:%H:%M:%S %z] "%r" %s %b "%{Referer}i" "%{User-agent}i"
        append_addr(out, r.client_addr);
        out += " - - [";
        out += local_time(clf_time, sec, "%d/%b/%Y:%H:%M:%S %z", false);
        out += "] \"";
        if (parsed) {
            append_clf(out, method);
            out += ' ';
            append_clf(out, target);
            out += ' ';
            out += version;
        } else {
            append_clf(out, target);  // the raw first line, or "-"
        }
        char b[8];
        std::snprintf(b, sizeof b, "%03u", unsigned(r.status % 1000));
        out += "\" ";
        out += b;
        out += ' ';
        append_u64(out, r.bytes_sent);
        out += " \"";
        append_clf(out, view(r.referer, r.referer_len));
        out += "\" \"";
        append_clf(out, view(r.user_agent, r.user_agent_len));
        out += "\" rt=";
        append_seconds(out, rt);
        out += " uct=";
        if (r.uct_ns == rec::no_time)
            out += '-';
        else
            append_seconds(out, r.uct_ns);
        out += " urt=";
        if (r.urt_ns == rec::no_time)
            out += '-';
        else
            append_seconds(out, r.urt_ns);
        out += " up=";
        out += has_up ? up_name : "-";
        out += " us=";
        out += srv;
        out += " lc=";
        append_u64(out, lcore);
        out += (r.flags & rec::f_crossed) ? " xc=1" : " xc=0";
        out += (r.flags & rec::f_aborted) ? " ab=1" : " ab=0";
        out += " to=";
        out += name(r.timeout);
        out += " reason=";
        out += name(r.reason);
        out += '\n';
        return;
    }

    // JSON: one object per line, fields always in this order.
    char ms3[8];
    std::snprintf(ms3, sizeof ms3, ".%03llu", static_cast<unsigned long long>(msec));
    const std::string_view iso = local_time(iso_time, sec, "%Y-%m-%dT%H:%M:%S%z", true);
    out += "{\"time\":\"";
    // iso = "YYYY-MM-DDTHH:MM:SS+hh:mm": milliseconds go before the zone.
    const size_t cut = std::min<size_t>(iso.size(), 19);
    out += iso.substr(0, cut);
    out += ms3;
    out += iso.substr(cut);
    out += "\",\"timestamp\":";
    append_u64(out, static_cast<uint64_t>(sec));
    out += ms3;
    out += ",\"client\":\"";
    append_addr(out, r.client_addr);
    out += "\",\"client_port\":";
    append_u64(out, r.client_port);
    out += ",\"request\":\"";
    if (parsed) {
        append_json_chars(out, method);
        out += ' ';
        append_json_chars(out, target);
        out += ' ';
        out += version;
    } else {
        append_json_chars(out, target);
    }
    out += "\",\"method\":";
    append_json_string(out, parsed ? method : std::string_view());
    out += ",\"target\":";
    append_json_string(out, parsed ? target : std::string_view());
    out += ",\"version\":";
    append_json_string(out, parsed ? std::string_view(version) : std::string_view());
    out += ",\"host\":";
    append_json_string(out, view(r.host, r.host_len));
    out += ",\"referer\":";
    append_json_string(out, view(r.referer, r.referer_len));
    out += ",\"user_agent\":";
    append_json_string(out, view(r.user_agent, r.user_agent_len));
    out += ",\"status\":";
    append_u64(out, r.status);
    out += ",\"bytes_sent\":";
    append_u64(out, r.bytes_sent);
    out += ",\"request_body_bytes\":";
    append_u64(out, r.body_bytes);
    out += ",\"request_time\":";
    append_seconds(out, rt);
    out += ",\"upstream\":";
    if (has_up)
        append_json_string(out, up_name);
    else
        out += "null";
    out += ",\"upstream_addr\":";
    if (has_srv)
        append_json_string(out, srv);
    else
        out += "null";
    out += ",\"upstream_connect_time\":";
    if (r.uct_ns == rec::no_time)
        out += "null";
    else
        append_seconds(out, r.uct_ns);
    out += ",\"upstream_header_time\":";
    if (r.urt_ns == rec::no_time)
        out += "null";
    else
        append_seconds(out, r.urt_ns);
    out += ",\"lcore\":";
    append_u64(out, lcore);
    out += (r.flags & rec::f_crossed) ? ",\"cross_core\":true" : ",\"cross_core\":false";
    out += (r.flags & rec::f_aborted) ? ",\"aborted\":true" : ",\"aborted\":false";
    out += ",\"timeout\":";
    if (r.timeout == proxy::timeout_kind::none) {
        out += "null";
    } else {
        out += '"';
        out += name(r.timeout);
        out += '"';
    }
    out += ",\"reason\":";
    if (r.reason == proxy::term_reason::none) {
        out += "null";
    } else {
        out += '"';
        out += name(r.reason);
        out += '"';
    }
    out += parsed ? ",\"parsed\":true" : ",\"parsed\":false";
    out += (r.flags & rec::f_truncated) ? ",\"truncated\":true}\n" : ",\"truncated\":false}\n";
}

// ---------------------------------------------------------------- writer

namespace {

int open_log(const std::string &path) {
    int fd;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

int64_t realtime_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t monotonic_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

}  // namespace

access_log_writer::access_log_writer(const config::ferry_config &cfg, const name_table &upstreams,
                                     int fd)
    : path_(cfg.http.access_log),
      format_(cfg.http.access_log_format),
      names_{&upstreams},
      fd_(fd) {
    buf_.reserve(write_batch + 64 * 1024);
}

result<std::unique_ptr<access_log_writer>, std::string> access_log_writer::open(
    const config::ferry_config &cfg, const name_table &upstreams) {
    const std::string &path = cfg.http.access_log;
    const int fd = open_log(path);
    if (fd < 0)
        return unexpected{"[http] access_log " + path + ": cannot open: " + errno_text(errno)};
    std::unique_ptr<access_log_writer> w(new access_log_writer(cfg, upstreams, fd));  // closes fd
    if (std::string e = w->thread_.init(); !e.empty())
        return unexpected{"[http] access_log " + path + ": eventfd: " + e};
    return w;
}

access_log_writer::~access_log_writer() {
    stop();
}

proxy::access_log_sink *access_log_writer::add_sink(unsigned lcore) {
    sinks_.push_back(std::make_unique<proxy::access_log_sink>(ring_records, lcore));
    return sinks_.back().get();
}

std::string access_log_writer::start() {
    // A DPDK control thread on the control CPUs (drain_thread.h).
    const std::string e = thread_.start(
        "ferry-alog", flush_interval_ms,
        [](void *self, bool) noexcept { static_cast<access_log_writer *>(self)->tick(); }, this);
    if (!e.empty()) return "[http] access_log " + path_ + ": cannot start the writer thread: " + e;
    FERRY_LOG(INFO, ferry_logtype_app, "app", "%s",
              logfmt("access log opened")
                  .kv("path", path_)
                  .kv("format", config::to_string(format_.load(std::memory_order_relaxed)))
                  .kv("ring_records", sinks_.empty() ? 0u : sinks_[0]->capacity())
                  .c_str());
    return "";
}

void access_log_writer::stop() noexcept {
    if (thread_.running()) {
        thread_.stop();
        FERRY_LOG(INFO, ferry_logtype_app, "app", "%s",
                  logfmt("access log closed")
                      .kv("path", path_)
                      .kv("lines", lines_)
                      .kv("lost", lost_)
                      .c_str());
    }
    if (fd_ >= 0)
        close(fd_);
    fd_ = -1;
}

void access_log_writer::request_reopen() noexcept {
    reopen_requested.store(true, std::memory_order_relaxed);
}

void access_log_writer::tick() noexcept {
    if (reopen_requested.exchange(false, std::memory_order_relaxed))
        reopen();
    drain();  // the last tick (after stop()) takes every record
}

void access_log_writer::drain() noexcept {
    const int64_t offset = realtime_ns() - static_cast<int64_t>(reactor::reactor::now_ns());
    const config::log_format format = format_.load(std::memory_order_relaxed);
    // Small batches, so that slots go back to a busy producer early.
    constexpr uint32_t batch = 256;
    for (auto &s : sinks_) {
        const unsigned lcore = s->lcore();
        // At most one ring's worth per tick and lcore: a producer that keeps
        // the ring full cannot hold the others back.
        for (uint32_t done = 0; done < s->capacity();) {
            const uint32_t n = s->consume(batch, [&](const proxy::access_record &r) {
                format_access_line(buf_, format, r, lcore, offset, names_);
                ++pending_lines_;
            });
            if (n == 0)
                break;
            done += n;
            if (buf_.size() >= write_batch)
                write_out();
        }
    }
    write_out();
}

void access_log_writer::write_out() noexcept {
    size_t off = 0;
    while (off < buf_.size()) {
        const ssize_t n = write(fd_, buf_.data() + off, buf_.size() - off);
        if (n > 0) {
            off += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        // Disk full, I/O error, a file system gone read-only: the batch is
        // lost (a line may be cut). Warn at most every 10 s.
        const int e = n < 0 ? errno : ENOSPC;
        lost_ += pending_lines_;
        const int64_t now = monotonic_s();
        if (now - last_warn_s_ >= 10) {
            last_warn_s_ = now;
            FERRY_LOG(WARNING, ferry_logtype_app, "app", "%s",
                      logfmt("access log write failed")
                          .kv("path", path_)
                          .kv("error", errno_text(e))
                          .kv("lost", lost_)
                          .c_str());
        }
        buf_.clear();
        pending_lines_ = 0;
        return;
    }
    lines_ += pending_lines_;
    pending_lines_ = 0;
    buf_.clear();
}

void access_log_writer::reopen() noexcept {
    write_out();  // what is formatted belongs to the old file
    const int fd = open_log(path_);
    if (fd < 0) {
        // Lines keep going to the old file.
        FERRY_LOG(WARNING, ferry_logtype_app, "app", "%s",
                  logfmt("access log reopen failed")
                      .kv("path", path_)
                      .kv("error", errno_text(errno))
                      .kv("writing_to", "the old file")
                      .c_str());
        return;
    }
    close(fd_);
    fd_ = fd;
    FERRY_LOG(INFO, ferry_logtype_app, "app", "%s", logfmt("access log reopened").kv("path", path_).c_str());
}

}  // namespace ferry::app
