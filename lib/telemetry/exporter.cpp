// The Prometheus exporter's HTTP side (exporter.h).
#include "ferry/telemetry/exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rte_lcore.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "ferry/telemetry/metrics.h"
#include "telemetry_log.h"

namespace ferry::telemetry {
namespace {

// ---- The HTTP side ----

int64_t now_ms() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

struct response {
    int status = 200;
    const char *reason = "OK";
    const char *content_type = "text/plain; charset=utf-8";
    std::string body;
    bool head_only = false;  // HEAD: headers with the GET's Content-Length, no body
    bool allow = false;      // 405: say which methods are allowed
};

response error_response(int status, const char *reason) {
    response r;
    r.status = status;
    r.reason = reason;
    r.body = std::string(reason) + "\n";
    return r;
}

// The end of the request head (just past the empty line) in `buf`, or npos.
// CRLF CRLF, or a bare LF LF from hand-typed requests (RFC 9112 §2.2 lets a
// recipient accept a bare LF as a line terminator).
size_t head_end(std::string_view buf) {
    constexpr size_t npos = std::string_view::npos;
    const size_t crlf = buf.find("\r\n\r\n");
    const size_t lf = buf.find("\n\n");
    const size_t a = crlf == npos ? npos : crlf + 4, b = lf == npos ? npos : lf + 2;
    return a < b ? a : b;
}

bool is_tchar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Answers one request head (RFC 9112 §3: method SP request-target SP
// HTTP-version). Only origin-form targets; header fields are checked for a
// colon and otherwise ignored (no body is read: none of our paths takes one).
response answer(std::string_view head, const process_view &view) {
    const size_t eol = head.find('\n');
    std::string_view line = head.substr(0, eol);
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos)
        return error_response(400, "Bad Request");
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (method.empty() || target.empty() || target[0] != '/' ||
        (version != "HTTP/1.1" && version != "HTTP/1.0"))
        return error_response(400, "Bad Request");
    for (char c : method)
        if (!is_tchar(c))
            return error_response(400, "Bad Request");
    for (char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
            return error_response(400, "Bad Request");
    // Field lines: name ":" value, up to the empty line.
    std::string_view rest = eol == std::string_view::npos ? "" : head.substr(eol + 1);
    while (!rest.empty()) {
        const size_t e = rest.find('\n');
        std::string_view f = rest.substr(0, e);
        rest = e == std::string_view::npos ? "" : rest.substr(e + 1);
        if (!f.empty() && f.back() == '\r')
            f.remove_suffix(1);
        if (f.empty())
            break;
        const size_t colon = f.find(':');
        if (colon == 0 || colon == std::string_view::npos)
            return error_response(400, "Bad Request");
        for (char c : f.substr(0, colon))
            if (!is_tchar(c))
                return error_response(400, "Bad Request");
    }

    const std::string_view path = target.substr(0, target.find('?'));
    const bool known = path == "/metrics" || path == "/healthz";
    if (!known)
        return error_response(404, "Not Found");
    if (method != "GET" && method != "HEAD") {
        response r = error_response(405, "Method Not Allowed");
        r.allow = true;
        return r;
    }
    response r;
    r.head_only = method == "HEAD";
    if (path == "/healthz") {
        r.body = "ok\n";
    } else {
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = render_metrics(view);
    }
    return r;
}

std::string serialize(const response &r) {
    char head[256];
    const int n = std::snprintf(head, sizeof head,
                                "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                                "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
                                r.status, r.reason, r.content_type, r.body.size(),
                                r.allow ? "Allow: GET, HEAD\r\n" : "");
    std::string out(head, static_cast<size_t>(n));
    if (!r.head_only)
        out += r.body;
    return out;
}

std::string errno_text(int e) {
    return std::strerror(e);
}

}  // namespace

result<std::unique_ptr<exporter>, std::string> exporter::start(const process_view &view,
                                                                           uint32_t addr,
                                                                           uint16_t port) {
    const std::string where = config::format_ipv4(addr) + ":" + std::to_string(port);
    auto fail = [&](const char *what, int e) {
        return unexpected{"[admin] metrics_address " + where + ": " + what + ": " + errno_text(e)};
    };
    // Non-blocking: a client that resets between poll() and accept() must not
    // block the thread in accept().
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail("socket", errno);
    const int one = 1;
    // A restart must not wait for the previous process's TIME-WAITs.
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(addr);
    if (bind(fd, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0) {
        const int e = errno;
        close(fd);
        return fail("cannot bind", e);
    }
    if (listen(fd, 16) != 0) {
        const int e = errno;
        close(fd);
        return fail("cannot listen", e);
    }
    const int wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wfd < 0) {
        const int e = errno;
        close(fd);
        return fail("eventfd", e);
    }
    std::unique_ptr<exporter> s(new exporter(view, fd, wfd));
    // A DPDK control thread rather than a std::thread: the same plain pthread,
    // but pinned to EAL's control CPUs (those of no lcore, when there are any)
    // instead of inheriting the main thread's pinning to the main lcore, whose
    // CPU runs worker 0; and a failure is an error code, not an exception
    // (ferry builds with -fno-exceptions). SIGINT/SIGTERM stay with the main
    // thread: the new thread inherits a mask that blocks them.
    sigset_t stop_set, old;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, &old);
    const int rc = rte_ctrl_thread_create(&s->thread_, "ferry-metrics", nullptr,
                                          &exporter::thread_main, s.get());
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0)
        return fail("cannot start the thread", -rc);
    s->running_ = true;
    TELEMETRY_LOG(INFO, "metrics on http://%s/metrics", where.c_str());
    return s;
}

exporter::~exporter() {
    stop();
}

void exporter::stop() noexcept {
    if (running_) {
        stopping_.store(true, std::memory_order_relaxed);
        // The eventfd is in every poll() of the thread: it returns at once.
        const uint64_t one = 1;
        while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
        }
        pthread_join(thread_, nullptr);
        running_ = false;
    }
    if (listen_fd_ >= 0)
        close(listen_fd_);
    if (wake_fd_ >= 0)
        close(wake_fd_);
    listen_fd_ = wake_fd_ = -1;
}

void *exporter::thread_main(void *self) noexcept {
    static_cast<exporter *>(self)->run();
    return nullptr;
}

int exporter::wait_for(int fd, short events, int64_t deadline_ms) noexcept {
    for (;;) {
        if (stopping_.load(std::memory_order_relaxed))
            return -1;
        int timeout = -1;
        if (deadline_ms >= 0) {
            const int64_t left = deadline_ms - now_ms();
            if (left <= 0)
                return 0;
            timeout = static_cast<int>(left);
        }
        pollfd p[2] = {{fd, events, 0}, {wake_fd_, POLLIN, 0}};
        const int n = poll(p, 2, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (p[1].revents != 0)
            return -1;
        if (p[0].revents != 0)
            return 1;  // ready, or an error the next call reports
    }
}

void exporter::run() noexcept {
    while (!stopping_.load(std::memory_order_relaxed)) {
        if (wait_for(listen_fd_, POLLIN, -1) < 0)
            return;
        const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            // EAGAIN: the client went away already. Out of fds or memory: back
            // off a little instead of spinning on a readable listen socket.
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED && wait_for(-1, 0, now_ms() + 100) < 0)
                return;
            continue;
        }
        const bool go_on = serve(c);
        close(c);
        if (!go_on)
            return;
    }
}

bool exporter::serve(int fd) noexcept {
    char buf[max_head];
    size_t len = 0, end = std::string_view::npos;
    const int64_t read_deadline = now_ms() + read_timeout_ms;
    std::string out;
    while (end == std::string_view::npos) {
        if (len == sizeof buf) {
            out = serialize(error_response(400, "Bad Request"));
            break;
        }
        const int w = wait_for(fd, POLLIN, read_deadline);
        if (w < 0)
            return false;
        if (w == 0) {
            out = serialize(error_response(408, "Request Timeout"));
            break;
        }
        const ssize_t n = recv(fd, buf + len, sizeof buf - len, 0);
        if (n == 0)
            return true;  // closed before a whole request: nothing to answer
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                continue;
            return true;  // reset
        }
        len += static_cast<size_t>(n);
        end = head_end(std::string_view(buf, len));
    }
    if (out.empty())
        out = serialize(answer(std::string_view(buf, end), view_));

    const int64_t write_deadline = now_ms() + write_timeout_ms;
    size_t sent = 0;
    while (sent < out.size()) {
        // MSG_NOSIGNAL: a client gone mid-response is EPIPE here, not a
        // SIGPIPE that would end the process.
        const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return true;
        const int w = wait_for(fd, POLLOUT, write_deadline);
        if (w < 0)
            return false;
        if (w == 0)
            return true;  // too slow a reader: give up on it
    }
    // Connection: close. Half-close and read until the client closes (briefly),
    // so that bytes it sent after the head do not turn our close into a reset
    // that could destroy the response in flight.
    (void)shutdown(fd, SHUT_WR);
    const int64_t linger = now_ms() + 200;
    for (int i = 0; i < 16; ++i) {
        const int w = wait_for(fd, POLLIN, linger);
        if (w < 0)
            return false;
        if (w == 0)
            break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
    }
    return true;
}

}  // namespace ferry::telemetry
