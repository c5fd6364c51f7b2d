// /ferry/* telemetry commands (commands.h). They run on DPDK's telemetry
// thread and only read: configuration fixed at start-up, per-lcore counters
// (relaxed atomic loads), ethdev stats and mempool counts (both safe from any
// thread). The two writable commands store the reactor settings and wake
// every worker through the view's callback.
#include "ferry/telemetry/commands.h"

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_version.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ferry/telemetry/exporter.h"
#include "ferry/telemetry/telemetry.h"
#include "ferry_build_config.h"
#include "config_dump.h"
#include "read.h"
#include "ferry/base/logfmt.h"
#include "telemetry_log.h"

namespace ferry::telemetry {
namespace {

// The published view. Commands hold the lock while they read it, publish()
// while it swaps it: a view is never freed under a command (the lock is only
// ever taken by the telemetry thread and the control path, never a worker).
std::mutex view_lock;
const process_view *the_view = nullptr;

// Runs fn(view, d) under the lock; -ENODEV while no view is published.
template <class Fn>
int with_view(rte_tel_data *d, Fn fn) {
    std::lock_guard<std::mutex> g(view_lock);
    if (the_view == nullptr) return -ENODEV;
    return fn(*the_view, d);
}

std::string lcore_key(const lcore_view &l) { return "lcore" + std::to_string(l.lcore); }
std::string lcore_port_key(const lcore_view &l, const net::port &p) {
    return lcore_key(l) + "/" + p.spec.name;
}

int version(const process_view &, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "version", FERRY_VERSION);
    rte_tel_data_add_dict_string(d, "dpdk", rte_version());
    return 0;
}

int ports(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (size_t i = 0; i < v.ports.size(); ++i) {
        const net::port &p = v.ports[i];
        rte_tel_data *c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        char mac[RTE_ETHER_ADDR_FMT_SIZE];
        rte_ether_format_addr(mac, sizeof mac, &p.mac);
        rte_tel_data_add_dict_int(c, "port_id", p.id);
        rte_tel_data_add_dict_string(c, "device", p.dev_name.c_str());
        rte_tel_data_add_dict_string(c, "driver", p.driver_name.c_str());
        rte_tel_data_add_dict_string(c, "profile", p.spec.profile.c_str());
        rte_tel_data_add_dict_string(c, "iface", p.spec.iface.c_str());
        rte_tel_data_add_dict_string(c, "mac", mac);
        const std::string addr =
            config::format_ipv4(p.spec.address) + "/" + std::to_string(unsigned(p.spec.prefix_len));
        rte_tel_data_add_dict_string(c, "address", addr.c_str());
        rte_tel_data_add_dict_int(c, "mtu", p.spec.mtu);
        rte_tel_data_add_dict_int(c, "queues", p.queues);
        rte_tel_data_add_dict_int(c, "rx_desc", p.rx_desc);
        rte_tel_data_add_dict_int(c, "tx_desc", p.tx_desc);
        rte_tel_data_add_dict_u64(c, "mbufs", p.spec.mbufs);
        rte_tel_data_add_dict_u64(c, "mbufs_available", rte_mempool_avail_count(p.pool));
        rte_tel_data_add_dict_u64(c, "mbufs_in_use", rte_mempool_in_use_count(p.pool));
        rte_tel_data_add_dict_string(c, "steering", p.steering.substr(0, 120).c_str());
        // As given to the driver (vdev): what the profile's placeholders became.
        rte_tel_data_add_dict_string(c, "devargs", p.spec.devargs.substr(0, 120).c_str());
        if (p.kernel) {
            // The kernel's rings (net_af_packet): read now, so the drops are current.
            const net::kernel_ring_totals k = p.kernel->read();
            rte_tel_data_add_dict_u64(c, "kernel_ring_sockets", p.kernel->fds().size());
            rte_tel_data_add_dict_u64(c, "kernel_ring_bytes", p.kernel->bytes());
            for (const auto &f : detail::kernel_ring_fields)
                rte_tel_data_add_dict_u64(c, f.name, k.*(f.member));
        }
        if (!p.packet_queues.empty()) {
            // net_ferry_packet's queue pairs (packet_io.h), summed.
            for (const auto &f : net::packet_counter_fields)
                rte_tel_data_add_dict_u64(c, ("packet_" + std::string(f.name)).c_str(),
                                          detail::packet_total(p, f));
        }
        rte_tel_data_add_dict_int(c, "fault_injection", p.spec.fault.enabled());
        if (p.spec.fault.enabled()) {
            // Summed over the lcores serving the port.
            for (const auto &f : net::fault_counter_fields) {
                uint64_t total = 0;
                for (const lcore_view &l : v.lcores)
                    if (i < l.ports.size() && l.ports[i].fault != nullptr)
                        total += (l.ports[i].fault->*(f.member)).get();
                rte_tel_data_add_dict_u64(c, ("fault_" + std::string(f.name)).c_str(), total);
            }
        }
        // Capabilities as probed at start (0/1), and what is enabled.
        rte_tel_data_add_dict_int(c, "cap_rx_interrupts", p.caps.rx_interrupts);
        rte_tel_data_add_dict_int(c, "cap_rx_wake_sockets", p.caps.rx_wake_sockets);
        rte_tel_data_add_dict_int(c, "cap_rss", p.caps.rss);
        rte_tel_data_add_dict_int(c, "cap_rx_ipv4_cksum", p.caps.rx_ipv4_cksum);
        rte_tel_data_add_dict_int(c, "cap_rx_tcp_cksum", p.caps.rx_tcp_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_ipv4_cksum", p.caps.tx_ipv4_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_tcp_cksum", p.caps.tx_tcp_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_multi_segs", p.caps.tx_multi_segs);
        rte_tel_data_add_dict_string(c, "offloads",
                                     net::offload_names(p.rx_offloads, p.tx_offloads).c_str());
        rte_eth_stats st{};
        if (rte_eth_stats_get(p.id, &st) == 0)
            for (const auto &f : detail::eth_stat_fields)
                rte_tel_data_add_dict_u64(c, f.name, st.*(f.member));
        // The stack's counters for this port, summed over its lcores.
        for (const auto &f : net::net_counter_fields) {
            uint64_t total = 0;
            for (const lcore_view &l : v.lcores)
                if (i < l.ports.size()) total += (l.ports[i].net->*(f.member)).get();
            rte_tel_data_add_dict_u64(c, f.name, total);
        }
        if (rte_tel_data_add_dict_container(d, p.spec.name.c_str(), c, 0) != 0) return -ENOSPC;
    }
    return 0;
}

int net_cmd(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const lcore_view &l : v.lcores)
        for (size_t i = 0; i < v.ports.size() && i < l.ports.size(); ++i)
            if (!add_counter_dict(d, lcore_port_key(l, v.ports[i]).c_str(), *l.ports[i].net,
                                  net::net_counter_fields))
                return -ENOMEM;
    return 0;
}

// Per lcore and port the tcp_counters block, and their sum under "sum".
int tcp(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    net::tcp_counters sum{};
    for (const lcore_view &l : v.lcores)
        for (size_t i = 0; i < v.ports.size() && i < l.ports.size(); ++i) {
            const net::tcp_counters *c = l.ports[i].tcp;
            if (c == nullptr) continue;
            for (const auto &f : net::tcp_counter_fields)
                (sum.*(f.member)).inc((c->*(f.member)).get());
            if (!add_counter_dict(d, lcore_port_key(l, v.ports[i]).c_str(), *c,
                                  net::tcp_counter_fields))
                return -ENOMEM;
        }
    if (!add_counter_dict(d, "sum", sum, net::tcp_counter_fields)) return -ENOMEM;
    return 0;
}

// Per lcore the proxy's counters, their sum, and rejections by reason.
int http(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr &&
            !add_counter_dict(d, lcore_key(l).c_str(), l.proxy->counters(), proxy::http_counter_fields))
            return -ENOMEM;
    proxy::http_counters sum{};
    detail::sum_http(v, sum);
    if (!add_counter_dict(d, "sum", sum, proxy::http_counter_fields)) return -ENOMEM;
    rte_tel_data *r = rte_tel_data_alloc();
    if (r == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(r);
    for (uint8_t e = 1; e < 64; ++e) {
        const std::string_view n = http::name(static_cast<http::parse_error>(e));
        if (n == "unknown") break;
        rte_tel_data_add_dict_u64(r, std::string(n).c_str(), sum.rejected_by_reason[e].get());
    }
    if (rte_tel_data_add_dict_container(d, "rejected_by_reason", r, 0) != 0) return -ENOSPC;
    rte_tel_data_add_dict_u64(d, "active_connections", detail::active_connections(sum));
    // Replaced configurations kept for requests in flight (the most any
    // lcore holds, the one in force included).
    uint32_t held = 0;
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) held = std::max(held, l.proxy->configurations_held());
    rte_tel_data_add_dict_u64(d, "configurations_held", held);
    return 0;
}

// Per upstream, per server: health and the lcores' counters summed.
int upstreams(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    if (v.proxy_shared == nullptr) return 0;
    const uint64_t now = reactor::reactor::now_ns();  // the clock of down_until
    const auto cfg = v.configuration();  // held while read
    const auto &ups = cfg->upstreams;
    for (size_t u = 0; u < ups.size(); ++u) {
        const auto &uc = ups[u];
        for (size_t s = 0; s < uc.servers.size(); ++s) {
            const auto &sv = uc.servers[s];
            // Health and counters are kept by slot (config.h server_config).
            const auto &h = v.proxy_shared->health[u][sv.slot];
            const detail::server_totals t = detail::sum_server(v, u, sv.slot);
            rte_tel_data *sd = rte_tel_data_alloc();
            if (sd == nullptr) return -ENOMEM;
            rte_tel_data_start_dict(sd);
            const std::string where = config::format_endpoint(sv.addr, sv.port);
            rte_tel_data_add_dict_string(sd, "server", where.c_str());
            rte_tel_data_add_dict_string(sd, "state", detail::server_down(h, now) ? "down" : "up");
            rte_tel_data_add_dict_string(sd, "admin",
                                         proxy::name(h.admin.load(std::memory_order_relaxed)));
            rte_tel_data_add_dict_string(sd, "pool",
                                         uc.pool == config::pool_mode::local ? "local" : "shared");
            const uint32_t w = h.weight.load(std::memory_order_relaxed);
            rte_tel_data_add_dict_u64(sd, "weight", w != 0 ? w : sv.weight);
            rte_tel_data_add_dict_u64(sd, "active", t.active);
            rte_tel_data_add_dict_u64(sd, "idle", t.idle);
            rte_tel_data_add_dict_u64(sd, "connections", t.connections);
            rte_tel_data_add_dict_u64(sd, "requests", t.requests);
            rte_tel_data_add_dict_u64(sd, "failures", t.failures);
            rte_tel_data_add_dict_u64(sd, "marked_down", h.marked_down.load(std::memory_order_relaxed));
            rte_tel_data_add_dict_u64(sd, "responses", t.responses);
            rte_tel_data_add_dict_u64(sd, "latency_avg_us",
                                      t.responses ? t.latency_ns / t.responses / 1000 : 0);
            // One level of nesting (what DPDK 22.11's telemetry can print), and
            // names only of [A-Za-z0-9_/]: "<upstream>/<index>", the address
            // is a value.
            const std::string key = uc.name + "/" + std::to_string(s);
            if (rte_tel_data_add_dict_container(d, key.c_str(), sd, 0) != 0) return -ENOSPC;
        }
    }
    return 0;
}

// Per ordered worker pair "lcore<from>/lcore<to>": the cross-core ring's depth
// now, capacity, the producer's high-water mark and its ring_full events.
// Empty with one worker (no rings).
int rings(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const detail::ring_snapshot &r : detail::rings(v)) {
        rte_tel_data *c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        rte_tel_data_add_dict_int(c, "from_lcore", static_cast<int>(r.from->lcore));
        rte_tel_data_add_dict_int(c, "to_lcore", static_cast<int>(r.to->lcore));
        rte_tel_data_add_dict_u64(c, "depth", r.depth);
        rte_tel_data_add_dict_u64(c, "capacity", r.capacity);
        rte_tel_data_add_dict_u64(c, "high_water", r.lane.high_water);
        rte_tel_data_add_dict_u64(c, "ring_full", r.lane.ring_full);
        const std::string key = lcore_key(*r.from) + "/" + lcore_key(*r.to);
        if (rte_tel_data_add_dict_container(d, key.c_str(), c, 0) != 0) return -ENOSPC;
    }
    return 0;
}

int lcores(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    const auto mode = v.settings->mode.load(std::memory_order_relaxed);
    for (const lcore_view &l : v.lcores) {
        rte_tel_data *c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        rte_tel_data_add_dict_int(c, "lcore", static_cast<int>(l.lcore));
        rte_tel_data_add_dict_int(c, "queue", l.index);
        rte_tel_data_add_dict_int(c, "socket", static_cast<int>(rte_lcore_to_socket_id(l.lcore)));
        // The mode this lcore really runs in: a queue without rx interrupts
        // (af_packet) forces polling whatever the process-wide mode says,
        // except for adaptive's timed naps.
        const bool can_sleep = l.loop->can_sleep();
        const bool naps = !can_sleep && l.loop->can_nap() && mode == reactor::wakeup_mode::adaptive &&
                          v.settings->nap_budget_ns.load(std::memory_order_relaxed) != 0;
        rte_tel_data_add_dict_string(c, "mode", can_sleep || naps ? reactor::name(mode) : "poll");
        rte_tel_data_add_dict_int(c, "can_sleep", can_sleep);
        rte_tel_data_add_dict_int(c, "can_nap", l.loop->can_nap());
        // The adaptive policy's state (spin_window.h): the spin before a
        // sleep now, its limit, the learned cost of a sleep/wake.
        rte_tel_data_add_dict_u64(c, "spin_window_ns", l.loop->spin_window_ns());
        rte_tel_data_add_dict_u64(c, "busy_spin_window_ns", l.loop->busy_spin_window_ns());
        rte_tel_data_add_dict_u64(c, "spin_limit_ns", l.loop->spin_limit_ns());
        rte_tel_data_add_dict_u64(c, "busy_spin_limit_ns", l.loop->busy_spin_limit_ns());
        rte_tel_data_add_dict_u64(c, "wake_cost_ns", l.loop->wake_cost_ns());
        rte_tel_data_add_dict_u64(c, "sleep_cpu_ns", l.loop->sleep_cpu_ns());
        rte_tel_data_add_dict_u64(c, "sleep_price_ns", l.loop->sleep_price_ns());
        rte_tel_data_add_dict_u64(c, "busy_sleep_price_ns", l.loop->busy_sleep_price_ns());
        rte_tel_data_add_dict_u64(c, "nap_ns", l.loop->nap_ns());
        rte_tel_data_add_dict_u64(c, "busy_nap_ns", l.loop->busy_nap_ns());
        rte_tel_data_add_dict_string(c, "state", l.loop->asleep() ? "asleep" : "running");
        const uint64_t polls = l.reactor->polls.get(), busy = l.reactor->busy_polls.get();
        rte_tel_data_add_dict_u64(c, "busy_permille", polls ? busy * 1000 / polls : 0);
        add_counters(c, *l.reactor, reactor::reactor_counter_fields);
        rte_tel_data_add_dict_u64(c, "current_sleep_ns",
                                  l.loop->current_sleep_ns(reactor::reactor::now_ns()));
        add_counters(c, *l.io, net::io_counter_fields);
        if (rte_tel_data_add_dict_container(d, lcore_key(l).c_str(), c, 0) != 0) return -ENOSPC;
    }
    return 0;
}

using detail::refused;

// Read: /ferry/wakeup_mode. Write: /ferry/wakeup_mode,<conditional|always|poll|adaptive>.
// Every worker is woken so a sleeper re-reads the mode at once.
int wakeup_mode(const process_view &v, const char *params, rte_tel_data *d) {
    if (params != nullptr && *params != '\0') {
        reactor::wakeup_mode m;
        if (!reactor::parse_wakeup_mode(params, m))
            return refused(d, "unknown wakeup mode, nothing changed",
                           "conditional, always, poll, adaptive");
        const reactor::wakeup_mode was = v.settings->mode.exchange(m, std::memory_order_relaxed);
        v.wake_all();
        TELEMETRY_LOG(NOTICE, "%s",
                      logfmt("setting changed")
                          .kv("wakeup_mode", reactor::name(m))
                          .kv("was", reactor::name(was))
                          .c_str());
    }
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "wakeup_mode",
                                 reactor::name(v.settings->mode.load(std::memory_order_relaxed)));
    return 0;
}

// A whole-number setting read and written through telemetry: `key` names it
// in the answer and the log, `a` holds it in `scale` units per unit shown. A
// value that is not a whole number in lo..hi is refused with `why` and
// `allowed` and changes nothing; a change wakes every worker, so a sleeper
// re-reads it at once, and is logged with the value it replaced.
template <class T>
int whole_setting(const process_view &v, const char *params, rte_tel_data *d, std::atomic<T> &a,
                  const char *key, unsigned long lo, unsigned long hi, uint64_t scale,
                  const char *why, const char *allowed) {
    if (params != nullptr && *params != '\0') {
        char *end = nullptr;
        const unsigned long n = std::strtoul(params, &end, 10);
        if (end == params || *end != '\0' || n < lo || n > hi) return refused(d, why, allowed);
        const uint64_t was = a.exchange(static_cast<T>(n * scale), std::memory_order_relaxed);
        v.wake_all();
        TELEMETRY_LOG(NOTICE, "%s",
                      logfmt("setting changed").kv(key, uint64_t{n}).kv("was", was / scale).c_str());
    }
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, key, a.load(std::memory_order_relaxed) / scale);
    return 0;
}

// Read: /ferry/idle_threshold_us. Write: /ferry/idle_threshold_us,<1..1000000>.
int idle_threshold(const process_view &v, const char *params, rte_tel_data *d) {
    return whole_setting(v, params, d, v.settings->idle_threshold_ns, "idle_threshold_us", 1,
                         1'000'000, 1000,
                         "not a whole number of microseconds in range, nothing changed",
                         "1..1000000");
}

// Read: /ferry/latency_weight_pct. Write: /ferry/latency_weight_pct,<0..10000>.
int latency_weight(const process_view &v, const char *params, rte_tel_data *d) {
    return whole_setting(v, params, d, v.settings->latency_weight_pct, "latency_weight_pct", 0,
                         10'000, 1, "not a whole percentage in range, nothing changed",
                         "0..10000");
}

// Read: /ferry/busy_latency_weight_pct. Write: /ferry/busy_latency_weight_pct,<0..10000>.
int busy_latency_weight(const process_view &v, const char *params, rte_tel_data *d) {
    return whole_setting(v, params, d, v.settings->busy_latency_weight_pct,
                         "busy_latency_weight_pct", 0, 10'000, 1,
                         "not a whole percentage in range, nothing changed", "0..10000");
}

// Read: /ferry/spin_yield_us. Write: /ferry/spin_yield_us,<0..1000000>.
int spin_yield(const process_view &v, const char *params, rte_tel_data *d) {
    return whole_setting(v, params, d, v.settings->spin_yield_ns, "spin_yield_us", 0, 1'000'000,
                         1000, "not a whole number of microseconds in range, nothing changed",
                         "0..1000000");
}

int config_cmd(const process_view &v, rte_tel_data *d) {
    const auto held = v.configuration();
    const config::ferry_config &cfg = *held;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "source", cfg.source.c_str());
    rte_tel_data_add_dict_string(d, "drivers_dir", v.drivers_dir.c_str());
    rte_tel_data_add_dict_int(d, "workers", static_cast<int>(v.lcores.size()));
    // The live values (telemetry can change both at run time).
    rte_tel_data_add_dict_string(d, "wakeup_mode",
                                 reactor::name(v.settings->mode.load(std::memory_order_relaxed)));
    rte_tel_data_add_dict_u64(d, "idle_threshold_us",
                              v.settings->idle_threshold_ns.load(std::memory_order_relaxed) / 1000u);
    rte_tel_data_add_dict_u64(d, "latency_weight_pct",
                              v.settings->latency_weight_pct.load(std::memory_order_relaxed));
    rte_tel_data_add_dict_u64(d, "busy_latency_weight_pct",
                              v.settings->busy_latency_weight_pct.load(std::memory_order_relaxed));
    rte_tel_data_add_dict_u64(d, "nap_budget_us",
                              v.settings->nap_budget_ns.load(std::memory_order_relaxed) / 1000u);
    rte_tel_data_add_dict_u64(d, "spin_yield_us",
                              v.settings->spin_yield_ns.load(std::memory_order_relaxed) / 1000u);
    rte_tel_data_add_dict_u64(d, "neighbor_timeout_s", cfg.neighbor_timeout_s);
    rte_tel_data_add_dict_int(d, "ports", static_cast<int>(cfg.ports.size()));
    // [admin]: "" when there is no metrics listener.
    const std::string metrics =
        cfg.admin.addr ? config::format_ipv4(*cfg.admin.addr) + ":" + std::to_string(cfg.admin.port)
                       : "";
    rte_tel_data_add_dict_string(d, "metrics_address", metrics.c_str());
    if (v.reloads != nullptr) {
        rte_tel_data_add_dict_string(
            d, "config_hash",
            detail::hash_hex(v.reloads->hash.load(std::memory_order_relaxed)).c_str());
        rte_tel_data_add_dict_u64(d, "config_generation",
                                  v.reloads->generation.load(std::memory_order_relaxed));
        rte_tel_data_add_dict_u64(d, "configs_alive",
                                  v.reloads->alive.load(std::memory_order_relaxed));
    }
    return 0;
}

// /ferry/reload: re-read the configuration file, validate it, swap it in on
// every worker (docs/OPERATIONS.md "Reloading the configuration"); the answer
// says what happened, the totals so far, and (refused, invalid) why.
// /ferry/reload,check[,<file>]: what a reload of the configured file (or of
// <file>, an absolute path) would do, nothing applied (ferry --check --running).
int reload_cmd(const process_view &v, const char *params, rte_tel_data *d) {
    if (v.reload == nullptr || v.reloads == nullptr)
        return refused(d, "this ferry offers no reload", "");
    const std::string_view p = params != nullptr ? params : "";
    const bool check = p == "check" || p.starts_with("check,");
    if (!p.empty() && !check)
        return refused(d, "unknown reload parameter, nothing done", "check, check,<absolute path>");
    const std::string path = p.starts_with("check,") ? std::string(p.substr(6)) : std::string();
    if (check && !path.empty() && path.front() != '/')
        return refused(d, "the file to check must be an absolute path", "check,<absolute path>");
    reload_report r;
    v.reload(r, check, path);
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "result", r.result.c_str());
    rte_tel_data_add_dict_string(d, "source", r.source.c_str());
    rte_tel_data_add_dict_string(d, "config_hash", detail::hash_hex(r.hash).c_str());
    rte_tel_data_add_dict_u64(d, "config_generation", r.generation);
    const reload_counters &c = *v.reloads;
    rte_tel_data_add_dict_u64(d, "applied", c.applied.load(std::memory_order_relaxed));
    rte_tel_data_add_dict_u64(d, "unchanged", c.unchanged.load(std::memory_order_relaxed));
    rte_tel_data_add_dict_u64(d, "refused", c.refused.load(std::memory_order_relaxed));
    rte_tel_data_add_dict_u64(d, "invalid", c.invalid.load(std::memory_order_relaxed));
    // Long lines are cut at DPDK's string limit; the log has them whole.
    auto list = [d](const char *key, const std::vector<std::string> &lines) {
        rte_tel_data *a = rte_tel_data_alloc();
        if (a == nullptr) return;
        rte_tel_data_start_array(a, RTE_TEL_STRING_VAL);
        for (const std::string &s : lines) (void)rte_tel_data_add_array_string(a, s.c_str());
        if (rte_tel_data_add_dict_container(d, key, a, 0) != 0) rte_tel_data_free(a);
    };
    list("errors", r.errors);
    list("changes", r.changes);
    return 0;
}

// The memory bound and what it is made of, with the resident size now and at
// its peak (docs/OPERATIONS.md "Memory").
int memory_cmd(const process_view &v, rte_tel_data *d) {
    const memory_plan &m = v.memory;
    const resident r = read_resident();
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "bound_bytes", m.bound);
    rte_tel_data_add_dict_u64(d, "rss_bytes", r.now);
    rte_tel_data_add_dict_u64(d, "rss_peak_bytes", r.peak);
    rte_tel_data_add_dict_u64(d, "base_rss_bytes", m.base_rss);
    rte_tel_data_add_dict_u64(d, "dpdk_heap_bytes", m.dpdk_heap);
    rte_tel_data_add_dict_u64(d, "tcp_reserved_bytes", m.tcp_reserved);
    rte_tel_data_add_dict_u64(d, "proxy_reserved_bytes", m.proxy_reserved);
    rte_tel_data_add_dict_u64(d, "kernel_ring_bytes", m.kernel_rings);
    rte_tel_data_add_dict_u64(d, "slack_bytes", m.slack);
    // The TCP queues' ring blocks, over every worker and port: how many exist
    // (address space), are held now, were ever held at once, were ever made
    // resident; a take that found none left.
    uint64_t cap = 0, in_use = 0, peak = 0, touched = 0, exhausted = 0;
    for (const lcore_view &l : v.lcores)
        for (const lcore_port_view &p : l.ports) {
            if (p.blocks == nullptr) continue;
            cap += p.blocks->capacity();
            in_use += p.blocks->in_use();
            peak += p.blocks->peak();
            touched += p.blocks->touched();
            exhausted += p.blocks->exhausted();
        }
    // Connection slots made so far (resident): TCP, proxy clients, upstream
    // connections; each is made the first time it is needed.
    uint64_t tslots = 0, cslots = 0, uslots = 0;
    for (const lcore_view &l : v.lcores) {
        for (const lcore_port_view &p : l.ports)
            if (p.tcp_layer != nullptr) tslots += p.tcp_layer->slots_made();
        if (l.proxy != nullptr) {
            cslots += l.proxy->client_slots_made();
            uslots += l.proxy->upconn_slots_made();
        }
    }
    rte_tel_data_add_dict_u64(d, "tcp_slots_made", tslots);
    rte_tel_data_add_dict_u64(d, "client_slots_made", cslots);
    rte_tel_data_add_dict_u64(d, "upconn_slots_made", uslots);
    rte_tel_data_add_dict_u64(d, "tcp_ring_blocks", cap);
    rte_tel_data_add_dict_u64(d, "tcp_ring_blocks_in_use", in_use);
    rte_tel_data_add_dict_u64(d, "tcp_ring_blocks_peak", peak);
    rte_tel_data_add_dict_u64(d, "tcp_ring_blocks_touched", touched);
    rte_tel_data_add_dict_u64(d, "tcp_ring_blocks_exhausted", exhausted);
    // The proxies' head buffers, likewise (a block each: the bytes and the
    // fields of one head being read).
    uint64_t hcap = 0, hin = 0, hpeak = 0, htouched = 0, hbytes = 0, ccap = 0, cin = 0;
    for (const lcore_view &l : v.lcores) {
        if (l.proxy == nullptr) continue;
        const block_pool &h = l.proxy->head_buffers();
        hcap += h.capacity();
        hin += h.in_use();
        hpeak += h.peak();
        htouched += h.touched();
        hbytes = h.block_size();
        ccap += l.proxy->client_head_buffers();
        cin += l.proxy->client_head_buffers_in_use();
    }
    rte_tel_data_add_dict_u64(d, "head_buffers", hcap);
    rte_tel_data_add_dict_u64(d, "head_buffer_bytes", hbytes);
    rte_tel_data_add_dict_u64(d, "head_buffers_in_use", hin);
    rte_tel_data_add_dict_u64(d, "head_buffers_peak", hpeak);
    rte_tel_data_add_dict_u64(d, "head_buffers_touched", htouched);
    // Of them, what clients may hold ([http] client_head_buffers) and hold.
    rte_tel_data_add_dict_u64(d, "client_head_buffers", ccap);
    rte_tel_data_add_dict_u64(d, "client_head_buffers_in_use", cin);
    return 0;
}

// The [admin] exporter's counters; {} without metrics_address.
int exporter_cmd(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    if (v.exporter != nullptr) add_counters(d, *v.exporter, exporter_counter_fields);
    return 0;
}

// The event log (server down/up lines): what its writer logged and
// suppressed; {} without [[listener]].
int events_cmd(const process_view &v, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    if (v.proxy_shared != nullptr)
        add_counters(d, v.proxy_shared->events, proxy::event_log_counter_fields);
    return 0;
}

// A /ferry/config/<part> command: the configuration the view was built from.
template <int (*Dump)(const config::ferry_config &, rte_tel_data *)>
int config_part(const process_view &v, rte_tel_data *d) {
    const auto cfg = v.configuration();
    return Dump(*cfg, d);
}

// DPDK's callbacks carry no context: one adapter per command, reading the
// published view.
template <int (*Fn)(const process_view &, rte_tel_data *)>
int reader(const char *, const char *, rte_tel_data *d) {
    return with_view(d, Fn);
}
template <int (*Fn)(const process_view &, const char *, rte_tel_data *)>
int writer(const char *, const char *params, rte_tel_data *d) {
    return with_view(d, [params](const process_view &v, rte_tel_data *dd) { return Fn(v, params, dd); });
}

struct command {
    const char *name;
    handler fn;
    const char *help;
};

constexpr command commands[] = {
    {"/ferry/version", reader<version>, "ferry and DPDK versions. Takes no parameters."},
    {"/ferry/ports", reader<ports>,
     "Per port: device, mac, address, queues, capabilities (cap_*), ethdev stats, stack "
     "counters."},
    {"/ferry/net", reader<net_cmd>,
     "Per lcore and port: Ethernet/ARP/IPv4/ICMP counters, drops by reason."},
    {"/ferry/tcp", reader<tcp>,
     "Per lcore and port, and summed: TCP connection counters (states, retransmits, resets)."},
    {"/ferry/lcores", reader<lcores>,
     "Per worker lcore: queue, mode, state, sleeps, wakeups by cause, doorbells, loop and I/O "
     "counters."},
    {"/ferry/wakeup_mode", writer<wakeup_mode>,
     "Read, or set with ,<conditional|always|poll|adaptive>: when workers sleep and peers ring."},
    {"/ferry/idle_threshold_us", writer<idle_threshold>,
     "Read, or set with ,<us>: idle time before a worker tries to sleep."},
    {"/ferry/latency_weight_pct", writer<latency_weight>,
     "Read, or set with ,<0..10000>: adaptive's price of wake-up latency in CPU, percent."},
    {"/ferry/busy_latency_weight_pct", writer<busy_latency_weight>,
     "Read, or set with ,<0..10000>: the same price while a request waits on an upstream."},
    {"/ferry/spin_yield_us", writer<spin_yield>,
     "Read, or set with ,<0..1000000>: how often an idle spinning worker yields its CPU; 0 never."},
    {"/ferry/config", reader<config_cmd>,
     "The effective configuration's scalars; the rest under /ferry/config/<part>."},
    {"/ferry/reload", writer<reload_cmd>,
     "Reload the configuration file as SIGHUP does; with ,check[,<file>] only say what a "
     "reload would do."},
    {"/ferry/config/ports", reader<config_part<dump_ports>>,
     "Per [[port]] name: profile, address(6), gateway(6), icmp6_errors_per_s, icmp6_error_burst, iface, pci, mtu, mbufs, ring_frames."},
    {"/ferry/config/listeners", reader<config_part<dump_listeners>>,
     "Per [[listener]] name: port, where it listens (on, address), max_connections, default_upstream."},
    {"/ferry/config/routes", reader<config_part<dump_routes>>,
     "Per [[route]], in the order tried: listener, host, path_prefix, upstream."},
    {"/ferry/config/upstreams", reader<config_part<dump_upstreams>>,
     "Per [[upstream]] name: balance, pool, timeouts, retries, health checks, servers."},
    {"/ferry/http", reader<http>,
     "HTTP proxy per lcore and summed: requests, responses by class, rejections by reason."},
    {"/ferry/upstreams", reader<upstreams>,
     "Per <upstream>/<n>: server, state, pool, active/idle connections, requests, failures, latency."},
    {"/ferry/server", writer<detail::server_cmd>,
     "Read, or set with ,<upstream>/<index|address:port>,<ready|drain|maint|weight=N>: a "
     "server's admin state and weight at run time."},
    {"/ferry/rings", reader<rings>,
     "Per lcore<from>/lcore<to>: the cross-core ring's depth, capacity, high-water mark, "
     "ring_full events."},
    {"/ferry/memory", reader<memory_cmd>,
     "Resident bytes now and at peak; the bound (base, DPDK heap, TCP, proxy, slack)."},
    {"/ferry/events", reader<events_cmd>,
     "The event log: server down/up lines written, suppressed by the rate limit, events seen."},
    {"/ferry/exporter", reader<exporter_cmd>,
     "The [admin] metrics listener: connections, requests, scrapes, rejected, timeouts."},
};

}  // namespace

void publish(const process_view *v) noexcept {
    std::lock_guard<std::mutex> g(view_lock);
    the_view = v;
}

unsigned register_commands() noexcept {
    unsigned refused = 0;
    for (const auto &c : commands)
        if (!register_command(c.name, c.fn, c.help)) {
            TELEMETRY_LOG(WARNING, "%s",
                          logfmt("telemetry command not registered").kv("command", c.name).c_str());
            ++refused;
        }
    return refused;
}

}  // namespace ferry::telemetry
