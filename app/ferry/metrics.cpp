// The Prometheus exporter (metrics.h). Format: "Exposition formats", text
// format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats): one
// "# HELP" and one "# TYPE" line per metric family, then every sample of that
// family, contiguous; counters end in _total; label values escape \ " and LF.
#include "metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_version.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "app.h"
#include "ferry/base/log.h"
#include "ferry/http/parser.h"
#include "ferry/http/status.h"
#include "ferry_build_config.h"

extern int ferry_logtype_app;

namespace ferry::app {
namespace {

// ---- Text exposition format 0.0.4 ----

// A label set rendered as `{a="x",b="y"}` (empty: no braces at all).
class labels {
public:
    labels &add(std::string_view name, std::string_view value) {
        s_ += s_.empty() ? "" : ",";
        s_ += name;
        s_ += "=\"";
        // Label values may hold any UTF-8; \, " and LF are escaped.
        for (char c : value) {
            if (c == '\\')
                s_ += "\\\\";
            else if (c == '"')
                s_ += "\\\"";
            else if (c == '\n')
                s_ += "\\n";
            else
                s_ += c;
        }
        s_ += '"';
        return *this;
    }
    labels &add(std::string_view name, uint64_t value) { return add(name, std::to_string(value)); }
    [[nodiscard]] std::string str() const { return s_.empty() ? std::string() : "{" + s_ + "}"; }

private:
    std::string s_;
};

// Appends families and samples. Callers emit each family's samples right
// after family(), which the format requires; names are built from X-macro
// identifiers and fixed strings, so they match [a-zA-Z_:][a-zA-Z0-9_:]*.
class exposition {
public:
    exposition() { out_.reserve(256 * 1024); }

    // type: "counter" (the name must end in _total) or "gauge".
    void family(std::string_view name, std::string_view type, std::string_view help) {
        name_ = name;
        out_ += "# HELP ";
        out_ += name;
        out_ += ' ';
        // HELP text escapes \ and LF (not ").
        for (char c : help) {
            if (c == '\\')
                out_ += "\\\\";
            else if (c == '\n')
                out_ += "\\n";
            else
                out_ += c;
        }
        out_ += "\n# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }
    // A sample of the current family.
    void sample(const std::string &labelset, uint64_t v) {
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof buf, v);
        line(labelset, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
    }
    void sample_seconds(const std::string &labelset, uint64_t ns) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%llu.%09llu",
                      static_cast<unsigned long long>(ns / 1000000000u),
                      static_cast<unsigned long long>(ns % 1000000000u));
        line(labelset, buf);
    }
    [[nodiscard]] std::string take() { return std::move(out_); }

private:
    void line(const std::string &labelset, std::string_view value) {
        out_ += name_;
        out_ += labelset;
        out_ += ' ';
        out_ += value;
        out_ += '\n';
    }
    std::string out_;
    std::string name_;
};

std::string counter_name(std::string_view group, std::string_view field) {
    return "ferry_" + std::string(group) + "_" + std::string(field) + "_total";
}

// One counter family per field of an X-macro table, one sample per block.
template <class S, class Fields>
void counter_group(exposition &e, std::string_view group, const Fields &fields,
                   const std::vector<std::pair<std::string, const S *>> &blocks) {
    for (const auto &f : fields) {
        e.family(counter_name(group, f.name), "counter", f.help);
        for (const auto &[lbl, b] : blocks)
            e.sample(lbl, (b->*(f.member)).get());
    }
}

std::string lcore_label(const worker &w) {
    return labels().add("lcore", w.lcore).str();
}
std::string lcore_port_label(const worker &w, const net::port &p) {
    return labels().add("lcore", w.lcore).add("port", p.spec.name).str();
}

void render_lcores(exposition &e, const app_state &app) {
    std::vector<std::pair<std::string, const reactor::reactor_counters *>> rc;
    std::vector<std::pair<std::string, const net::io_counters *>> io;
    for (const auto &w : app.workers) {
        rc.emplace_back(lcore_label(*w), &w->rc);
        io.emplace_back(lcore_label(*w), &w->io);
    }
    counter_group(e, "reactor", reactor::reactor_counter_fields, rc);
    counter_group(e, "io", net::io_counter_fields, io);
    e.family("ferry_lcore_asleep", "gauge",
             "1 while the worker lcore sleeps (or runs its pre-sleep re-check), else 0");
    for (const auto &w : app.workers)
        e.sample(lcore_label(*w), w->loop->asleep() ? 1 : 0);
    e.family("ferry_lcore_can_sleep", "gauge",
             "1 if the worker may sleep when idle (every queue it polls has rx interrupts)");
    for (const auto &w : app.workers)
        e.sample(lcore_label(*w), w->loop->can_sleep() ? 1 : 0);
}

void render_ports(exposition &e, const app_state &app) {
    struct stat_field {
        const char *name, *help;
        uint64_t rte_eth_stats::*member;
    };
    static constexpr stat_field stats[] = {
        {"ipackets", "packets the port received (ethdev stats)", &rte_eth_stats::ipackets},
        {"opackets", "packets the port sent (ethdev stats)", &rte_eth_stats::opackets},
        {"ibytes", "bytes the port received (ethdev stats)", &rte_eth_stats::ibytes},
        {"obytes", "bytes the port sent (ethdev stats)", &rte_eth_stats::obytes},
        {"imissed", "packets the NIC dropped: no free rx descriptor (ethdev stats)",
         &rte_eth_stats::imissed},
        {"ierrors", "erroneous packets received (ethdev stats)", &rte_eth_stats::ierrors},
        {"oerrors", "packets the port failed to send (ethdev stats)", &rte_eth_stats::oerrors},
        {"rx_nombuf", "rx mbuf allocation failures: the mempool was empty (ethdev stats)",
         &rte_eth_stats::rx_nombuf},
    };
    std::vector<rte_eth_stats> st(app.ports.size());
    std::vector<bool> have(app.ports.size());
    for (size_t i = 0; i < app.ports.size(); ++i)
        have[i] = rte_eth_stats_get(app.ports[i].id, &st[i]) == 0;
    for (const auto &f : stats) {
        e.family(counter_name("port", f.name), "counter", f.help);
        for (size_t i = 0; i < app.ports.size(); ++i)
            if (have[i])
                e.sample(labels().add("port", app.ports[i].spec.name).str(), st[i].*(f.member));
    }
    e.family("ferry_port_mbufs", "gauge", "mbufs in the port's pool ([[port]] mbufs)");
    for (const auto &p : app.ports)
        e.sample(labels().add("port", p.spec.name).str(), p.spec.mbufs);
    e.family("ferry_port_mbufs_available", "gauge", "mbufs of the port's pool free now");
    for (const auto &p : app.ports)
        e.sample(labels().add("port", p.spec.name).str(), rte_mempool_avail_count(p.pool));
    e.family("ferry_port_mbufs_in_use", "gauge",
             "mbufs of the port's pool in use now (queues, connections, in flight)");
    for (const auto &p : app.ports)
        e.sample(labels().add("port", p.spec.name).str(), rte_mempool_in_use_count(p.pool));
}

void render_stack(exposition &e, const app_state &app) {
    std::vector<std::pair<std::string, const net::net_counters *>> nc;
    std::vector<std::pair<std::string, const net::tcp_counters *>> tc;
    std::vector<std::pair<std::string, const net::fault_counters *>> fc;
    for (const auto &w : app.workers)
        for (size_t i = 0; i < app.ports.size(); ++i) {
            const std::string lbl = lcore_port_label(*w, app.ports[i]);
            nc.emplace_back(lbl, w->net_counters[i]);
            if (i < w->tcp_counters.size())
                tc.emplace_back(lbl, w->tcp_counters[i].get());
            if (app.ports[i].spec.fault.enabled() && i < w->queues.size())
                fc.emplace_back(lbl, &w->queues[i]->io->faults());
        }
    counter_group(e, "net", net::net_counter_fields, nc);
    counter_group(e, "tcp", net::tcp_counter_fields, tc);
    // Only with [port.fault] on some port: a test setting.
    if (!fc.empty())
        counter_group(e, "fault", net::fault_counter_fields, fc);
}

void render_http(exposition &e, const app_state &app) {
    std::vector<std::pair<std::string, const proxy::http_counters *>> hc;
    for (const auto &w : app.workers)
        if (w->proxy)
            hc.emplace_back(lcore_label(*w), &w->proxy->counters());
    if (hc.empty())
        return;  // no [[listener]]: no proxy
    counter_group(e, "http", proxy::http_counter_fields, hc);
    e.family("ferry_http_rejected_total", "counter",
             "requests rejected by the parser, by reason (answered 400/413/414/431/501/505 "
             "and closed)");
    for (const auto &w : app.workers) {
        if (!w->proxy)
            continue;
        const proxy::http_counters &c = w->proxy->counters();
        for (uint8_t r = 1; r < 64; ++r) {
            const std::string_view n = http::name(static_cast<http::parse_error>(r));
            if (n == "unknown")
                break;
            e.sample(labels().add("lcore", w->lcore).add("reason", n).str(),
                     c.rejected_by_reason[r].get());
        }
    }
    e.family("ferry_http_active_connections", "gauge",
             "client connections open now (accepted minus closed)");
    for (const auto &[lbl, c] : hc) {
        // Closed first, and clamped: a gauge must never wrap to 2^64 because a
        // connection came and went between the two loads.
        const uint64_t closed = c->client_closed.get(), accepted = c->client_accepted.get();
        e.sample(lbl, accepted > closed ? accepted - closed : 0);
    }
}

void render_upstreams(exposition &e, const app_state &app) {
    if (!app.proxy_shared)
        return;
    const auto &ups = app.cfg.upstreams;
    struct srv {
        std::string lbl;
        size_t u, s;
    };
    std::vector<srv> all;
    for (size_t u = 0; u < ups.size(); ++u)
        for (size_t s = 0; s < ups[u].servers.size(); ++s) {
            const auto &sv = ups[u].servers[s];
            all.push_back(
                {labels()
                     .add("upstream", ups[u].name)
                     .add("server", config::format_ipv4(sv.addr) + ":" + std::to_string(sv.port))
                     .str(),
                 u, s});
        }
    if (all.empty())
        return;
    // The lcores' server_counters summed, as /ferry/upstreams shows them.
    auto sum = [&](const srv &x, ferry::counter proxy::server_counters::*m) {
        uint64_t v = 0;
        for (const auto &w : app.workers)
            if (w->proxy)
                v += (w->proxy->server(x.u, x.s).*m).get();
        return v;
    };
    const uint64_t now = reactor::reactor::now_ns();
    e.family("ferry_upstream_server_up", "gauge",
             "1 if the server is up, 0 while health checks hold it down");
    for (const auto &x : all) {
        const uint64_t down =
            app.proxy_shared->health[x.u][x.s].down_until.load(std::memory_order_relaxed);
        e.sample(x.lbl, down != 0 && down > now ? 0 : 1);
    }
    e.family("ferry_upstream_server_weight", "gauge", "the server's configured weight");
    for (const auto &x : all)
        e.sample(x.lbl, ups[x.u].servers[x.s].weight);
    e.family("ferry_upstream_marked_down_total", "counter", "times the server was marked down");
    for (const auto &x : all)
        e.sample(x.lbl,
                 app.proxy_shared->health[x.u][x.s].marked_down.load(std::memory_order_relaxed));
    struct field {
        const char *name, *type, *help;
        ferry::counter proxy::server_counters::*member;
    };
    static constexpr field fields[] = {
        {"ferry_upstream_requests_total", "counter", "requests sent to the server",
         &proxy::server_counters::requests},
        {"ferry_upstream_failures_total", "counter",
         "connect and response failures counted for passive health",
         &proxy::server_counters::failures},
        {"ferry_upstream_connections_total", "counter", "connections opened to the server",
         &proxy::server_counters::connections},
        {"ferry_upstream_responses_total", "counter",
         "response heads received from the server (the latency samples)",
         &proxy::server_counters::responses},
        {"ferry_upstream_active_connections", "gauge",
         "connections to the server busy with a request now", &proxy::server_counters::active},
        {"ferry_upstream_idle_connections", "gauge",
         "idle keep-alive connections to the server now", &proxy::server_counters::idle},
    };
    for (const auto &f : fields) {
        e.family(f.name, f.type, f.help);
        for (const auto &x : all)
            e.sample(x.lbl, sum(x, f.member));
    }
    e.family("ferry_upstream_latency_seconds_total", "counter",
             "sum of request-sent to response-head times; divide by "
             "ferry_upstream_responses_total for the mean");
    for (const auto &x : all)
        e.sample_seconds(x.lbl, sum(x, &proxy::server_counters::latency_ns));
}

void render_rings(exposition &e, const app_state &app) {
    const xcore::mesh *m = app.mesh.get();
    if (m == nullptr)
        return;  // one worker: no rings
    struct pair {
        std::string lbl;
        rte_ring *r;
        unsigned depth;  // read before st: it can only have been lower than that mark
        xcore::outbox::lane_stats st;
    };
    std::vector<pair> all;
    for (const auto &from : app.workers)
        for (const auto &to : app.workers) {
            rte_ring *r = m->ring(from->index, to->index);
            if (r == nullptr || !from->out)
                continue;
            const unsigned depth = rte_ring_count(r);
            all.push_back({labels().add("from", from->lcore).add("to", to->lcore).str(), r, depth,
                           from->out->stats(to->index)});
        }
    e.family("ferry_ring_depth", "gauge", "messages in the cross-core ring from -> to now");
    for (const auto &p : all)
        e.sample(p.lbl, p.depth);
    e.family("ferry_ring_capacity", "gauge", "messages the cross-core ring holds at most");
    for (const auto &p : all)
        e.sample(p.lbl, rte_ring_get_capacity(p.r));
    e.family("ferry_ring_high_water", "gauge",
             "the deepest the ring was right after one of the producer's enqueue bursts");
    for (const auto &p : all)
        e.sample(p.lbl, p.st.high_water);
    e.family("ferry_ring_full_total", "counter",
             "enqueue bursts into this ring that left messages behind (backpressure)");
    for (const auto &p : all)
        e.sample(p.lbl, p.st.ring_full);
}

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

// Answers one request head parsed by lib/http's parser (the one parser in
// the tree: CRLF only, a Host in HTTP/1.1, the rest of its strictness). No
// body is read: none of our paths takes one.
response answer(const http::request &req, const app_state &app) {
    const std::string_view target = req.origin_form.empty() ? req.target : req.origin_form;
    const std::string_view path = target.substr(0, target.find('?'));
    const bool known = path == "/metrics" || path == "/healthz";
    if (!known)
        return error_response(404, "Not Found");
    if (req.m != http::method::get && req.m != http::method::head) {
        response r = error_response(405, "Method Not Allowed");
        r.allow = true;
        return r;
    }
    response r;
    r.head_only = req.m == http::method::head;
    if (path == "/healthz") {
        r.body = "ok\n";
    } else {
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = render_metrics(app);
    }
    return r;
}

// A request the parser rejected: the status it maps to (400, 414, 431, 501, 505).
response rejected(http::parse_error e) {
    const uint16_t status = http::status_for(e);
    response r;
    r.status = status;
    r.reason = http::reason_phrase(status).data();  // static NUL-terminated strings
    r.body = std::string(http::reason_phrase(status)) + "\n";
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

std::string render_metrics(const app_state &app) {
    exposition e;
    e.family("ferry_build_info", "gauge", "always 1; the labels say which ferry and DPDK run");
    e.sample(labels().add("version", FERRY_VERSION).add("dpdk", rte_version()).str(), 1);
    e.family("ferry_workers", "gauge", "worker lcores");
    e.sample("", app.workers.size());
    render_lcores(e, app);
    render_ports(e, app);
    render_stack(e, app);
    render_http(e, app);
    render_upstreams(e, app);
    render_rings(e, app);
    return e.take();
}

result<std::unique_ptr<metrics_server>, std::string> metrics_server::start(const app_state &app,
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
    std::unique_ptr<metrics_server> s(new metrics_server(app, fd, wfd));
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
                                          &metrics_server::thread_main, s.get());
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0)
        return fail("cannot start the thread", -rc);
    s->running_ = true;
    FERRY_LOG(INFO, ferry_logtype_app, "app", "metrics on http://%s/metrics", where.c_str());
    return s;
}

metrics_server::~metrics_server() {
    stop();
}

void metrics_server::stop() noexcept {
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

void *metrics_server::thread_main(void *self) noexcept {
    static_cast<metrics_server *>(self)->run();
    return nullptr;
}

int metrics_server::wait_for(int fd, short events, int64_t deadline_ms) noexcept {
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

void metrics_server::run() noexcept {
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

bool metrics_server::serve(int fd) noexcept {
    char buf[max_head];
    size_t len = 0;
    const int64_t read_deadline = now_ms() + read_timeout_ms;
    std::string out;
    // The incremental parser keeps its state, the request and its fields
    // across reads of one head.
    http::head_parser hp;
    http::request req;
    http::header fields[max_fields];
    http::limits lim;
    lim.max_head_bytes = max_head;
    lim.max_headers = max_fields;
    while (out.empty()) {
        if (len == sizeof buf) {  // the parser says head_too_large first; a guard
            out = serialize(rejected(http::parse_error::head_too_large));
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
        const auto r = http::parse_request(hp, std::string_view(buf, len), req, fields, lim);
        if (r.st == http::parse_result::status::error)
            out = serialize(rejected(r.err));
        else if (r.st == http::parse_result::status::done)
            out = serialize(answer(req, app_));
    }

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

}  // namespace ferry::app
