#include "log_stream.h"

#include <rte_lcore.h>
#include <rte_log.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace ferry::app {
namespace {

const char *level_name(int level) {
    switch (level) {
        case RTE_LOG_EMERG: return "EMERG";
        case RTE_LOG_ALERT: return "ALERT";
        case RTE_LOG_CRIT: return "CRIT";
        case RTE_LOG_ERR: return "ERROR";
        case RTE_LOG_WARNING: return "WARN";
        case RTE_LOG_NOTICE: return "NOTICE";
        case RTE_LOG_INFO: return "INFO";
        case RTE_LOG_DEBUG: return "DEBUG";
        default: return "LOG";
    }
}

// Appends to a fixed buffer without the C library's formatting, so that a
// signal handler may use it (log_from_signal_handler): write(2) and
// clock_gettime(2) are async-signal-safe, snprintf and gmtime_r are not.
struct line_buf {
    char *p;
    size_t cap, n = 0;
    void put(const char *s) {
        while (*s != '\0' && n < cap) p[n++] = *s++;
    }
    // `v` in at least `width` digits.
    void num(unsigned long long v, int width) {
        char d[24];
        int k = 0;
        do {
            d[k++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (k < width && k < 24) d[k++] = '0';
        while (k > 0 && n < cap) p[n++] = d[--k];
    }
};

// The prefix for `level` (RTE_LOG_*) at `unix_ns` on `lcore` (or -1), without
// the trailing space: "2026-12-05T03:10:00.123456Z INFO lcore=1". The civil
// date from the day count is Howard Hinnant's days_to_civil.
size_t format_log_prefix(char *buf, size_t size, long long unix_ns, int level, int lcore) {
    line_buf b{buf, size};
    const long long secs = unix_ns / 1000000000LL;
    const long long days = secs / 86400, sod = secs % 86400;
    const long long z = days + 719468;
    const long long era = z / 146097;
    const long long doe = z - era * 146097;
    const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const long long mp = (5 * doy + 2) / 153;
    const long long day = doy - (153 * mp + 2) / 5 + 1;
    const long long month = mp < 10 ? mp + 3 : mp - 9;
    const long long year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    b.num(static_cast<unsigned long long>(year), 4);
    b.put("-");
    b.num(static_cast<unsigned long long>(month), 2);
    b.put("-");
    b.num(static_cast<unsigned long long>(day), 2);
    b.put("T");
    b.num(static_cast<unsigned long long>(sod / 3600), 2);
    b.put(":");
    b.num(static_cast<unsigned long long>(sod / 60 % 60), 2);
    b.put(":");
    b.num(static_cast<unsigned long long>(sod % 60), 2);
    b.put(".");
    b.num(static_cast<unsigned long long>(unix_ns % 1000000000LL / 1000), 6);
    b.put("Z ");
    b.put(level_name(level));
    b.put(" lcore=");
    if (lcore < 0)
        b.put("-");
    else
        b.num(static_cast<unsigned long long>(lcore), 1);
    return b.n;
}

long long unix_now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Whether the next byte this thread writes starts a line.
thread_local bool at_line_start = true;

// DPDK lines that look like failures and are what ferry asks for: logged at
// INFO with the reason. Matched by a fragment of the message.
struct expected_line {
    const char *fragment;
    const char *why;
};
constexpr expected_line expected_lines[] = {
    {"All rt-signals are in use",
     "ferry holds the realtime signals so that net_tap reads its queues without them"},
    {"No Rx trigger signal available",
     "ferry holds the realtime signals so that net_tap reads its queues without them"},
    {"Specified qdisc kind is unknown",
     "the kernel has no multiq qdisc (sch_multiq); ferry does not use rte_flow on a tap"},
    {"Could not add multiq qdisc", "no sch_multiq; ferry does not use rte_flow on a tap"},
    {"failed to create multiq qdisc", "no sch_multiq; ferry does not use rte_flow on a tap"},
    {"Disabling rte flow support", "ferry steers tap flows with its eBPF program, not rte_flow"},
    {"No legacy callbacks, legacy socket not created",
     "ferry serves the telemetry socket (v2), not the legacy one"},
};

const expected_line *find_expected(const char *p, size_t n) {
    for (const expected_line &e : expected_lines)
        if (memmem(p, n, e.fragment, std::strlen(e.fragment)) != nullptr) return &e;
    return nullptr;
}

ssize_t write_all(const char *p, size_t n) {
    size_t done = 0;
    while (done < n) {
        const ssize_t w = ::write(STDERR_FILENO, p + done, n - done);
        if (w < 0) return -1;
        done += static_cast<size_t>(w);
    }
    return static_cast<ssize_t>(n);
}

ssize_t cookie_write(void *, const char *buf, size_t size) {
    // rte_vlog() formats into the FILE and flushes: a whole message per call
    // (the FILE's buffer is larger than any line ferry logs; a longer one
    // arrives in pieces and only its first gets the prefix).
    size_t off = 0;
    while (off < size) {
        const char *nl = static_cast<const char *>(std::memchr(buf + off, '\n', size - off));
        const size_t end = nl ? static_cast<size_t>(nl - buf) + 1 : size;
        if (at_line_start && end - off == 1 && nl != nullptr) {
            off = end;  // the empty line a PMD's own "\n" before rte_log's leaves
            continue;
        }
        const expected_line *exp = at_line_start ? find_expected(buf + off, end - off) : nullptr;
        char line[1024];
        size_t n = 0;
        if (at_line_start) {
            const unsigned lc = rte_lcore_id();
            n = format_log_prefix(
                line, sizeof line - 1, unix_now_ns(),
                exp != nullptr ? static_cast<int>(RTE_LOG_INFO) : rte_log_cur_msg_loglevel(),
                lc == LCORE_ID_ANY ? -1 : static_cast<int>(lc));
            line[n++] = ' ';
        }
        size_t body = end - off;
        if (exp != nullptr && nl != nullptr) {
            // "<message> (expected: <why>)\n"
            const int k = std::snprintf(line + n, sizeof line - n, "%.*s (expected: %s)\n",
                                        static_cast<int>(body - 1), buf + off, exp->why);
            if (k > 0 && n + static_cast<size_t>(k) < sizeof line) {
                if (write_all(line, n + static_cast<size_t>(k)) < 0) return -1;
                at_line_start = true;
                off = end;
                continue;
            }
        }
        if (n + body <= sizeof line) {
            std::memcpy(line + n, buf + off, body);
            if (write_all(line, n + body) < 0) return -1;
        } else if (write_all(line, n) < 0 || write_all(buf + off, body) < 0) {
            return -1;
        }
        at_line_start = nl != nullptr;
        off = end;
    }
    return static_cast<ssize_t>(size);
}

}  // namespace

void log_from_signal_handler(int level, const char *message) noexcept {
    const int saved = errno;
    char line[512];
    const unsigned lc = rte_lcore_id();
    line_buf b{line, sizeof line - 1};
    b.n = format_log_prefix(line, sizeof line - 1, unix_now_ns(), level,
                            lc == LCORE_ID_ANY ? -1 : static_cast<int>(lc));
    b.put(" ");
    b.put(message);
    line[b.n++] = '\n';
    (void)write_all(line, b.n);
    errno = saved;
}

bool install_log_stream() {
    cookie_io_functions_t io{};
    io.write = cookie_write;
    FILE *f = fopencookie(nullptr, "w", io);
    if (f == nullptr) return false;
    // Fully buffered: rte_vlog() flushes after each message.
    std::setvbuf(f, nullptr, _IOFBF, 4096);
    return rte_openlog_stream(f) == 0;
}

}  // namespace ferry::app
