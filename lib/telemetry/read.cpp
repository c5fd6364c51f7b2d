#include "read.h"

#include <fcntl.h>
#include <rte_ring.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ferry::telemetry::detail {

server_totals sum_server(const process_view &v, size_t upstream, size_t server) {
    server_totals t;
    for (const lcore_view &l : v.lcores) {
        if (l.proxy == nullptr) continue;
        const proxy::server_counters &c = l.proxy->server(upstream, server);
        t.requests += c.requests.get();
        t.failures += c.failures.get();
        t.active += c.active.get();
        t.idle += c.idle.get();
        t.connections += c.connections.get();
        t.latency_ns += c.latency_ns.get();
        t.responses += c.responses.get();
    }
    return t;
}

int refused(rte_tel_data *d, const char *why, const char *allowed) {
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "error", why);
    rte_tel_data_add_dict_string(d, "allowed", allowed);
    return 0;
}

bool server_down(const proxy::server_health &h, uint64_t now) noexcept {
    const uint64_t down = h.down_until.load(std::memory_order_relaxed);
    return down != 0 && down > now;
}

uint64_t packet_total(const net::port &p, const counter_field<net::packet_counters> &f) noexcept {
    uint64_t total = 0;
    for (const auto &q : p.packet_queues) total += (q->counters().*(f.member)).get();
    return total;
}

std::string hash_hex(uint64_t h) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
}

void sum_http(const process_view &v, proxy::http_counters &sum) {
    for (const lcore_view &l : v.lcores) {
        if (l.proxy == nullptr) continue;
        const proxy::http_counters &c = l.proxy->counters();
        for (const auto &f : proxy::http_counter_fields) (sum.*(f.member)).inc((c.*(f.member)).get());
        for (size_t r = 0; r < 64; ++r) sum.rejected_by_reason[r].inc(c.rejected_by_reason[r].get());
    }
}

uint64_t active_connections(const proxy::http_counters &c) noexcept {
    const uint64_t closed = c.client_closed.get(), accepted = c.client_accepted.get();
    return accepted > closed ? accepted - closed : 0;
}

std::vector<ring_snapshot> rings(const process_view &v) {
    std::vector<ring_snapshot> out;
    rings(v, out);
    return out;
}

void rings(const process_view &v, std::vector<ring_snapshot> &out) {
    out.clear();
    if (v.mesh == nullptr) return;
    for (const lcore_view &from : v.lcores)
        for (const lcore_view &to : v.lcores) {
            rte_ring *r = v.mesh->ring(from.index, to.index);
            if (r == nullptr || from.out == nullptr) continue;
            ring_snapshot s;
            s.from = &from;
            s.to = &to;
            // rte_ring_count: a snapshot of the ring's two tails, safe from any
            // thread (as DPDK's own /ring/info reads it). Depth first: it can
            // only have been lower than the mark read after it.
            s.depth = rte_ring_count(r);
            s.capacity = rte_ring_get_capacity(r);
            s.lane = from.out->stats(to.index);
            out.push_back(s);
        }
}

}  // namespace ferry::telemetry::detail

namespace ferry::telemetry {

resident read_resident() noexcept {
    // read(2) into the stack, not stdio: a scrape allocates nothing (metrics.h).
    resident r;
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return r;
    char buf[4096];
    size_t n = 0;
    for (ssize_t k; n < sizeof buf - 1 && (k = ::read(fd, buf + n, sizeof buf - 1 - n)) != 0;) {
        if (k < 0) {
            if (errno == EINTR) continue;
            break;
        }
        n += static_cast<size_t>(k);
    }
    ::close(fd);
    buf[n] = '\0';
    auto kib = [&](const char *key) -> uint64_t {
        const char *p = std::strstr(buf, key);
        return p != nullptr ? std::strtoull(p + std::strlen(key), nullptr, 10) * 1024 : 0;
    };
    r.now = kib("\nVmRSS:");
    r.peak = kib("\nVmHWM:");
    return r;
}

}  // namespace ferry::telemetry
