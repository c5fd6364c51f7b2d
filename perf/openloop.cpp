// An open-loop HTTP/1.1 load: requests due at a constant rate, evenly spaced.
//
// h2load's --rps is per connection and its connections start together, so
// at N connections it sends bursts of N requests every 1/rps seconds (100
// requests every 10 ms at 10k req/s): what it measures is how fast a burst
// drains, not the latency of a steady load. Here request k is due at
// start + k / rate, whatever happened before (open loop); it goes out on an
// idle keep-alive connection at once, or waits for one (counted as late),
// and its latency runs from when it was due, so a stall is not hidden by the
// requests it held back (no coordinated omission).
//
//   openloop HOST PORT PATH RATE DURATION_S [--conns N] [--warmup S]
//
// One thread, epoll with ns timeouts (epoll_pwait2), TCP_NODELAY, one
// request in flight per connection, responses framed by Content-Length.
// Prints one JSON line: offered_rps, conns, sent, completed, achieved_rps,
// late, errors, p50_us, p90_us, p99_us, p999_us, max_us (measured requests:
// those due after the warm-up).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

namespace {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

struct conn {
    int fd = -1;
    bool busy = false;
    bool connected = false;
    uint64_t due = 0;  // when the request in flight was due
    std::string in;
};

struct load {
    sockaddr_in addr{};
    std::string req;
    int ep = -1;
    std::vector<conn> conns;
    // Idle connections, oldest first: requests go round-robin over all of
    // them. (Most recently freed first would leave the others without a
    // request from their open on, and a server's header timeout then ends
    // them with a 408, as ferry and nginx both do.)
    std::deque<unsigned> idle;
    uint64_t errors = 0;
    // Of them: connect failures, responses that were not a framed 2xx, and
    // connections closed or reset with a request in flight.
    uint64_t err_connect = 0, err_response = 0, err_closed = 0;

    bool open(unsigned i) {
        conn &c = conns[i];
        c = conn{};
        c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c.fd < 0) return false;
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c.fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 &&
            errno != EINPROGRESS) {
            ::close(c.fd);
            c.fd = -1;
            return false;
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
        ev.data.u32 = i;
        return epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) == 0;
    }

    void fail(unsigned i) {
        ++errors;
        if (conns[i].fd >= 0) ::close(conns[i].fd);
        conns[i].fd = -1;
        open(i);  // reconnect; it joins the idle list once connected
    }
};

// A whole response at the front of `in`: its length, 0 if incomplete, -1 if
// it cannot be framed or is not a 2xx.
long response_len(const std::string &in) {
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) return 0;
    if (in.compare(0, 9, "HTTP/1.1 ") != 0 || in.size() < 12 || in[9] != '2') return -1;
    size_t pos = 0;
    long len = -1;
    while ((pos = in.find("\r\n", pos)) != std::string::npos && pos < end) {
        pos += 2;
        if (strncasecmp(in.c_str() + pos, "content-length:", 15) == 0) {
            len = std::strtol(in.c_str() + pos + 15, nullptr, 10);
            break;
        }
    }
    if (len < 0) return -1;
    const size_t total = end + 4 + static_cast<size_t>(len);
    return in.size() >= total ? static_cast<long>(total) : 0;
}

uint64_t pct(const std::vector<uint64_t> &s, double q) {
    if (s.empty()) return 0;
    size_t i = static_cast<size_t>(q * static_cast<double>(s.size()) + 0.999999);
    i = std::min(s.size(), std::max<size_t>(1, i)) - 1;
    return s[i];
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: openloop HOST PORT PATH RATE DURATION_S [--conns N] [--warmup S]\n");
        return 2;
    }
    load L;
    L.addr.sin_family = AF_INET;
    L.addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
    if (inet_pton(AF_INET, argv[1], &L.addr.sin_addr) != 1) {
        std::fprintf(stderr, "openloop: bad IPv4 address %s\n", argv[1]);
        return 2;
    }
    L.req = std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: " + argv[1] + "\r\n\r\n";
    const double rate = std::atof(argv[4]);
    const double duration = std::atof(argv[5]);
    double warmup = 1.0;
    unsigned nconns = 0;
    for (int i = 6; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--conns") == 0) nconns = static_cast<unsigned>(std::atoi(argv[i + 1]));
        if (std::strcmp(argv[i], "--warmup") == 0) warmup = std::atof(argv[i + 1]);
    }
    if (rate <= 0 || duration <= 0) {
        std::fprintf(stderr, "openloop: RATE and DURATION_S must be > 0\n");
        return 2;
    }
    // Enough connections that a response time of 20 ms at this rate still
    // finds one idle: rate x 20 ms, at least 4.
    if (nconns == 0) nconns = std::max(4u, static_cast<unsigned>(rate * 0.02) + 1);
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    L.conns.resize(nconns);
    for (unsigned i = 0; i < nconns; ++i)
        if (!L.open(i)) ++L.errors;

    const uint64_t interval = static_cast<uint64_t>(1e9 / rate);
    const uint64_t t0 = now_ns() + 200'000'000;  // 200 ms to connect
    const uint64_t t_measure = t0 + static_cast<uint64_t>(warmup * 1e9);
    const uint64_t t_end = t_measure + static_cast<uint64_t>(duration * 1e9);
    uint64_t next_due = t0, sent = 0, late = 0, completed = 0;
    std::deque<uint64_t> waiting;  // due times of requests without an idle connection
    std::vector<uint64_t> lat;
    lat.reserve(static_cast<size_t>(rate * duration * 1.1) + 16);
    std::vector<epoll_event> evs(256);

    auto send_on = [&](unsigned i, uint64_t due) {
        conn &c = L.conns[i];
        const ssize_t n = ::send(c.fd, L.req.data(), L.req.size(), MSG_NOSIGNAL);
        if (n != static_cast<ssize_t>(L.req.size())) {  // tiny: fits an empty send buffer
            L.fail(i);
            return;
        }
        c.busy = true;
        c.due = due;
        if (due >= t_measure) ++sent;
    };

    for (;;) {
        uint64_t now = now_ns();
        // Everything due by now: onto an idle connection, or wait for one.
        while (next_due <= now && next_due < t_end) {
            if (!L.idle.empty()) {
                const unsigned i = L.idle.front();
                L.idle.pop_front();
                send_on(i, next_due);
            } else {
                waiting.push_back(next_due);
                if (next_due >= t_measure) ++late;
            }
            next_due += interval;
        }
        if (next_due >= t_end && waiting.empty() &&
            std::none_of(L.conns.begin(), L.conns.end(), [](const conn &c) { return c.busy; }))
            break;
        if (now > t_end + 5'000'000'000u) break;  // responses that never come: give up
        const uint64_t wait = next_due < t_end ? (next_due > now ? next_due - now : 0) : 100'000'000;
        timespec ts{static_cast<time_t>(wait / 1'000'000'000u), static_cast<long>(wait % 1'000'000'000u)};
        const int n = epoll_pwait2(L.ep, evs.data(), static_cast<int>(evs.size()), &ts, nullptr);
        now = now_ns();
        for (int k = 0; k < n; ++k) {
            const unsigned i = evs[k].data.u32;
            conn &c = L.conns[i];
            if (c.fd < 0) continue;
            if (!c.connected) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0 || (evs[k].events & (EPOLLERR | EPOLLHUP))) {
                    ++L.err_connect;
                    L.fail(i);
                    continue;
                }
                if (!(evs[k].events & EPOLLOUT)) continue;
                c.connected = true;
                epoll_event ev{};
                ev.events = EPOLLIN | EPOLLRDHUP;
                ev.data.u32 = i;
                epoll_ctl(L.ep, EPOLL_CTL_MOD, c.fd, &ev);
                if (!waiting.empty()) {
                    send_on(i, waiting.front());
                    waiting.pop_front();
                } else {
                    L.idle.push_back(i);
                }
                continue;
            }
            char buf[16384];
            bool dead = false;
            for (;;) {
                const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
                if (r > 0) {
                    c.in.append(buf, static_cast<size_t>(r));
                    continue;
                }
                if (r == 0 || (errno != EAGAIN && errno != EINTR)) dead = true;
                break;
            }
            const long len = c.busy ? response_len(c.in) : (c.in.empty() ? 0 : -1);
            if (len < 0) {
                ++L.err_response;
                if (std::getenv("OPENLOOP_DEBUG"))
                    std::fprintf(stderr, "openloop: bad response: %.200s\n", c.in.c_str());
                L.fail(i);
                continue;
            }
            if (len > 0) {
                c.in.erase(0, static_cast<size_t>(len));
                c.busy = false;
                if (c.due >= t_measure && c.due < t_end) {
                    lat.push_back((now - c.due) / 1000);
                    ++completed;
                }
                if (!waiting.empty()) {
                    send_on(i, waiting.front());
                    waiting.pop_front();
                } else {
                    L.idle.push_back(i);
                }
            }
            if (dead) {
                if (c.busy) {
                    ++L.err_closed;
                    L.fail(i);
                } else {  // closed while idle: reopen without counting an error
                    L.idle.erase(std::remove(L.idle.begin(), L.idle.end(), i), L.idle.end());
                    ::close(c.fd);
                    c.fd = -1;
                    L.open(i);
                }
            }
        }
    }
    std::sort(lat.begin(), lat.end());
    std::printf("{\"offered_rps\": %g, \"conns\": %u, \"sent\": %llu, \"completed\": %llu, "
                "\"achieved_rps\": %.1f, \"late\": %llu, \"errors\": %llu, \"p50_us\": %llu, "
                "\"p90_us\": %llu, \"p99_us\": %llu, \"p999_us\": %llu, \"max_us\": %llu, "
                "\"err_connect\": %llu, \"err_response\": %llu, \"err_closed\": %llu}\n",
                rate, nconns, static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(completed), static_cast<double>(completed) / duration,
                static_cast<unsigned long long>(late), static_cast<unsigned long long>(L.errors),
                static_cast<unsigned long long>(pct(lat, 0.50)), static_cast<unsigned long long>(pct(lat, 0.90)),
                static_cast<unsigned long long>(pct(lat, 0.99)), static_cast<unsigned long long>(pct(lat, 0.999)),
                static_cast<unsigned long long>(lat.empty() ? 0 : lat.back()),
                static_cast<unsigned long long>(L.err_connect), static_cast<unsigned long long>(L.err_response),
                static_cast<unsigned long long>(L.err_closed));
    for (auto &c : L.conns)
        if (c.fd >= 0) ::close(c.fd);
    ::close(L.ep);
    return 0;
}
