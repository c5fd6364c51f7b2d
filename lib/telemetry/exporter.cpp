// The Prometheus exporter's socket side (exporter.h); what it answers is
// admin_request.h's.
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
#include <cstring>
#include <span>
#include <string>

#include "ferry/base/alloc_count.h"
#include "ferry/base/logfmt.h"
#include "ferry/http/status.h"
#include "ferry/telemetry/admin_request.h"
#include "ferry/telemetry/metrics.h"
#include "telemetry_log.h"

namespace ferry::telemetry {
namespace {

int64_t now_ms() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string errno_text(int e) {
    return std::strerror(e);
}

}  // namespace

result<std::unique_ptr<exporter>, std::string> exporter::start(const process_view &view,
                                                               exporter_counters &counters,
                                                               uint32_t addr, uint16_t port) {
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
    std::unique_ptr<exporter> s(new exporter(view, counters, fd, wfd));
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
    TELEMETRY_LOG(INFO, "%s",
                  logfmt("metrics listening").kv("url", "http://" + where + "/metrics").c_str());
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
        ctr_.connections.inc();
        const bool go_on = serve(c);
        close(c);
        if (!go_on)
            return;
    }
}

int exporter::send_all(int fd, std::string_view data, int64_t deadline_ms, int flags) noexcept {
    size_t sent = 0;
    while (sent < data.size()) {
        // MSG_NOSIGNAL: a client gone mid-response is EPIPE here, not a
        // SIGPIPE that would end the process.
        const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | flags);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            ctr_.write_failed.inc();  // reset, gone
            return 0;
        }
        const int w = wait_for(fd, POLLOUT, deadline_ms);
        if (w < 0)
            return -1;
        if (w == 0) {
            ctr_.write_failed.inc();  // too slow a reader: give up on it
            return 0;
        }
    }
    return 1;
}

bool exporter::serve(int fd) noexcept {
    // Per connection: the parser's state, the request it fills and its field
    // storage live as long as this one head (admin_request.h).
    admin_request req;
    admin_reply reply;
    const int64_t read_deadline = now_ms() + read_timeout_ms;
    for (;;) {
        const int w = wait_for(fd, POLLIN, read_deadline);
        if (w < 0)
            return false;
        if (w == 0) {
            ctr_.read_timeouts.inc();
            reply.status = 408;
            break;
        }
        const std::span<char> room = req.room();  // never empty while need_more
        const ssize_t n = recv(fd, room.data(), room.size(), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0) {
            ctr_.closed_early.inc();  // closed or reset before a whole head
            return true;
        }
        ctr_.reads.inc();
        const http::parse_result::status st = req.received(static_cast<size_t>(n));
        if (st == http::parse_result::status::need_more)
            continue;
        reply = req.reply();
        if (st == http::parse_result::status::error) {
            ctr_.rejected.inc();
            TELEMETRY_LOG(DEBUG, "%s",
                          logfmt("metrics request rejected")
                              .kv("reason", http::name(req.error()))
                              .kv("status", unsigned(reply.status))
                              .c_str());
        } else {
            ctr_.requests.inc();
            if (reply.status == 200 && reply.what == admin_reply::body::metrics)
                ctr_.scrapes.inc();
        }
        break;
    }
    std::string_view body;
    char text[64];
    switch (reply.what) {
        case admin_reply::body::metrics: {
            const uint64_t a0 = thread_allocations();
            render_metrics(view_, metrics_);
            // Room to grow (counters gain digits): later scrapes fit.
            if (metrics_.capacity() < metrics_.size() + metrics_.size() / 2)
                metrics_.reserve(metrics_.size() * 2);
            ctr_.scrape_allocations.inc(thread_allocations() - a0);
            body = metrics_;
            break;
        }
        case admin_reply::body::healthz:
            // Readiness: unready from the stop request on, so a balancer in
            // front stops sending new connections during drain_grace_ms.
            if (reply.status == 200 && view_.draining != nullptr &&
                view_.draining->load(std::memory_order_relaxed)) {
                ctr_.healthz_draining.inc();
                reply.status = 503;
                body = "draining\n";
            } else {
                body = "ok\n";
            }
            break;
        case admin_reply::body::status_text: {
            const std::string_view reason = http::reason_phrase(reply.status);
            const size_t n = std::min(reason.size(), sizeof text - 1);
            std::copy_n(reason.data(), n, text);
            text[n] = '\n';
            body = std::string_view(text, n + 1);
            break;
        }
    }
    // The head, then the body (MSG_MORE: one segment when both fit).
    char head[320];
    const size_t head_len = serialize_head(reply, body.size(), head, sizeof head);
    const int64_t write_deadline = now_ms() + write_timeout_ms;
    int w = send_all(fd, std::string_view(head, head_len), write_deadline,
                     reply.head_only || body.empty() ? 0 : MSG_MORE);
    if (w > 0 && !reply.head_only) w = send_all(fd, body, write_deadline, 0);
    if (w < 0)
        return false;
    if (w == 0)
        return true;
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
        char sink[4096];
        const ssize_t n = recv(fd, sink, sizeof sink, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
    }
    return true;
}

}  // namespace ferry::telemetry
