// /ferry/* telemetry commands. They run on DPDK's telemetry thread and only
// read: configuration fixed at start-up, per-lcore counters (relaxed atomic
// loads), ethdev stats and mempool counts (both safe from any thread).
#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_version.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "app.h"
#include "ferry/base/log.h"
#include "ferry/telemetry/telemetry.h"
#include "ferry_build_config.h"

extern int ferry_logtype_app;

namespace ferry::app {
namespace {

int cmd_version(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "version", FERRY_VERSION);
    rte_tel_data_add_dict_string(d, "dpdk", rte_version());
    return 0;
}

int cmd_ports(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (size_t i = 0; i < the_app->ports.size(); ++i) {
        const net::port &p = the_app->ports[i];
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
        rte_tel_data_add_dict_int(c, "fault_injection", p.spec.fault.enabled());
        if (p.spec.fault.enabled()) {
            // Summed over the lcores serving the port.
            for (const auto &f : net::fault_counter_fields) {
                uint64_t v = 0;
                for (const auto &w : the_app->workers)
                    if (i < w->queues.size()) v += (w->queues[i]->io->faults().*(f.member)).get();
                rte_tel_data_add_dict_u64(c, ("fault_" + std::string(f.name)).c_str(), v);
            }
        }
        // Capabilities as probed at start (0/1), and what is enabled.
        rte_tel_data_add_dict_int(c, "cap_rx_interrupts", p.caps.rx_interrupts);
        rte_tel_data_add_dict_int(c, "cap_rss", p.caps.rss);
        rte_tel_data_add_dict_int(c, "cap_rx_ipv4_cksum", p.caps.rx_ipv4_cksum);
        rte_tel_data_add_dict_int(c, "cap_rx_tcp_cksum", p.caps.rx_tcp_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_ipv4_cksum", p.caps.tx_ipv4_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_tcp_cksum", p.caps.tx_tcp_cksum);
        rte_tel_data_add_dict_int(c, "cap_tx_multi_segs", p.caps.tx_multi_segs);
        rte_tel_data_add_dict_string(c, "offloads",
                                     net::offload_names(p.rx_offloads, p.tx_offloads).c_str());
        rte_eth_stats st{};
        if (rte_eth_stats_get(p.id, &st) == 0) {
            rte_tel_data_add_dict_u64(c, "ipackets", st.ipackets);
            rte_tel_data_add_dict_u64(c, "opackets", st.opackets);
            rte_tel_data_add_dict_u64(c, "ibytes", st.ibytes);
            rte_tel_data_add_dict_u64(c, "obytes", st.obytes);
            rte_tel_data_add_dict_u64(c, "imissed", st.imissed);
            rte_tel_data_add_dict_u64(c, "ierrors", st.ierrors);
            rte_tel_data_add_dict_u64(c, "oerrors", st.oerrors);
            rte_tel_data_add_dict_u64(c, "rx_nombuf", st.rx_nombuf);
        }
        // The stack's counters for this port, summed over its lcores.
        for (const auto &f : net::net_counter_fields) {
            uint64_t total = 0;
            for (const auto &w : the_app->workers) total += (w->net_counters[i]->*(f.member)).get();
            rte_tel_data_add_dict_u64(c, f.name, total);
        }
        if (rte_tel_data_add_dict_container(d, p.spec.name.c_str(), c, 0) != 0) return -ENOSPC;
    }
    return 0;
}

int cmd_net(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const auto &w : the_app->workers)
        for (size_t i = 0; i < the_app->ports.size(); ++i) {
            const std::string key =
                "lcore" + std::to_string(w->lcore) + "/" + the_app->ports[i].spec.name;
            if (!telemetry::add_counter_dict(d, key.c_str(), *w->net_counters[i],
                                             net::net_counter_fields))
                return -ENOMEM;
        }
    return 0;
}

// Per lcore and port the tcp_counters block, and their sum under "sum".
int cmd_tcp(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    net::tcp_counters sum{};
    for (const auto &w : the_app->workers)
        for (size_t i = 0; i < w->tcp_counters.size(); ++i) {
            const net::tcp_counters &c = *w->tcp_counters[i];
            for (const auto &f : net::tcp_counter_fields)
                (sum.*(f.member)).inc((c.*(f.member)).get());
            const std::string key =
                "lcore" + std::to_string(w->lcore) + "/" + the_app->ports[i].spec.name;
            if (!telemetry::add_counter_dict(d, key.c_str(), c, net::tcp_counter_fields))
                return -ENOMEM;
        }
    if (!telemetry::add_counter_dict(d, "sum", sum, net::tcp_counter_fields))
        return -ENOMEM;
    return 0;
}

// Per lcore the proxy's counters, their sum, and rejections by reason.
int cmd_http(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    proxy::http_counters sum{};
    for (const auto &w : the_app->workers) {
        if (!w->proxy) continue;
        const proxy::http_counters &c = w->proxy->counters();
        for (const auto &f : proxy::http_counter_fields) (sum.*(f.member)).inc((c.*(f.member)).get());
        for (size_t r = 0; r < 64; ++r) sum.rejected_by_reason[r].inc(c.rejected_by_reason[r].get());
        const std::string key = "lcore" + std::to_string(w->lcore);
        if (!telemetry::add_counter_dict(d, key.c_str(), c, proxy::http_counter_fields))
            return -ENOMEM;
    }
    if (!telemetry::add_counter_dict(d, "sum", sum, proxy::http_counter_fields)) return -ENOMEM;
    rte_tel_data *r = rte_tel_data_alloc();
    if (r == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(r);
    for (uint8_t e = 1; e < 64; ++e) {
        const std::string_view n = http::name(static_cast<http::parse_error>(e));
        if (n == "unknown") break;
        rte_tel_data_add_dict_u64(r, std::string(n).c_str(), sum.rejected_by_reason[e].get());
    }
    if (rte_tel_data_add_dict_container(d, "rejected_by_reason", r, 0) != 0) return -ENOSPC;
    // Client connections open now (accepted minus closed).
    rte_tel_data_add_dict_u64(d, "active_connections",
                              sum.client_accepted.get() - sum.client_closed.get());
    return 0;
}

// Per upstream, per server: health and the lcores' counters summed.
int cmd_upstreams(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    if (!the_app->proxy_shared) return 0;
    const uint64_t now = reactor::reactor::now_ns();
    const auto &cfg = the_app->cfg;
    for (size_t u = 0; u < cfg.upstreams.size(); ++u) {
        const auto &uc = cfg.upstreams[u];
        for (size_t s = 0; s < uc.servers.size(); ++s) {
            const auto &sv = uc.servers[s];
            const auto &h = the_app->proxy_shared->health[u][s];
            uint64_t req = 0, fail = 0, act = 0, idle = 0, conns = 0, lat = 0, resp = 0;
            for (const auto &w : the_app->workers) {
                if (!w->proxy) continue;
                const auto &c = w->proxy->server(u, s);
                req += c.requests.get();
                fail += c.failures.get();
                act += c.active.get();
                idle += c.idle.get();
                conns += c.connections.get();
                lat += c.latency_ns.get();
                resp += c.responses.get();
            }
            rte_tel_data *sd = rte_tel_data_alloc();
            if (sd == nullptr) return -ENOMEM;
            rte_tel_data_start_dict(sd);
            const uint64_t down = h.down_until.load(std::memory_order_relaxed);
            const std::string where = config::format_ipv4(sv.addr) + ":" + std::to_string(sv.port);
            rte_tel_data_add_dict_string(sd, "server", where.c_str());
            rte_tel_data_add_dict_string(sd, "state", down != 0 && down > now ? "down" : "up");
            rte_tel_data_add_dict_string(sd, "pool",
                                         uc.pool == config::pool_mode::local ? "local" : "shared");
            rte_tel_data_add_dict_u64(sd, "weight", sv.weight);
            rte_tel_data_add_dict_u64(sd, "active", act);
            rte_tel_data_add_dict_u64(sd, "idle", idle);
            rte_tel_data_add_dict_u64(sd, "connections", conns);
            rte_tel_data_add_dict_u64(sd, "requests", req);
            rte_tel_data_add_dict_u64(sd, "failures", fail);
            rte_tel_data_add_dict_u64(sd, "marked_down", h.marked_down.load(std::memory_order_relaxed));
            rte_tel_data_add_dict_u64(sd, "responses", resp);
            rte_tel_data_add_dict_u64(sd, "latency_avg_us", resp ? lat / resp / 1000 : 0);
            // One level of nesting (what DPDK 22.11's telemetry can print):
            // "<upstream>/<address:port>".
            // "<upstream>/<index>": DPDK's telemetry allows only [A-Za-z0-9_/]
            // in names; the address is a value.
            const std::string key = uc.name + "/" + std::to_string(s);
            if (rte_tel_data_add_dict_container(d, key.c_str(), sd, 0) != 0) return -ENOSPC;
        }
    }
    return 0;
}

// Per ordered worker pair "lcore<from>/lcore<to>": the cross-core ring's depth
// now (rte_ring_count: a snapshot of its two tails, safe from any thread, as
// DPDK's own /ring/info does), capacity, the producer's high-water mark and
// its ring_full events (relaxed loads of the outbox's lane stats). Empty with
// one worker (no rings).
int cmd_rings(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    const xcore::mesh *m = the_app->mesh.get();
    if (m == nullptr) return 0;
    for (const auto &from : the_app->workers)
        for (const auto &to : the_app->workers) {
            rte_ring *r = m->ring(from->index, to->index);
            if (r == nullptr || !from->out) continue;
            // Depth first: it can only have been lower than the mark read after it.
            const unsigned depth = rte_ring_count(r);
            const xcore::outbox::lane_stats st = from->out->stats(to->index);
            rte_tel_data *c = rte_tel_data_alloc();
            if (c == nullptr) return -ENOMEM;
            rte_tel_data_start_dict(c);
            rte_tel_data_add_dict_int(c, "from_lcore", static_cast<int>(from->lcore));
            rte_tel_data_add_dict_int(c, "to_lcore", static_cast<int>(to->lcore));
            rte_tel_data_add_dict_u64(c, "depth", depth);
            rte_tel_data_add_dict_u64(c, "capacity", rte_ring_get_capacity(r));
            rte_tel_data_add_dict_u64(c, "high_water", st.high_water);
            rte_tel_data_add_dict_u64(c, "ring_full", st.ring_full);
            const std::string key =
                "lcore" + std::to_string(from->lcore) + "/lcore" + std::to_string(to->lcore);
            if (rte_tel_data_add_dict_container(d, key.c_str(), c, 0) != 0) return -ENOSPC;
        }
    return 0;
}

int cmd_lcores(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    const auto mode = the_app->settings.mode.load(std::memory_order_relaxed);
    for (const auto &w : the_app->workers) {
        rte_tel_data *c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        rte_tel_data_add_dict_int(c, "lcore", static_cast<int>(w->lcore));
        rte_tel_data_add_dict_int(c, "queue", w->index);
        rte_tel_data_add_dict_int(c, "socket", static_cast<int>(rte_lcore_to_socket_id(w->lcore)));
        // The mode this lcore really runs in: a queue without rx interrupts
        // (af_packet) forces polling whatever the process-wide mode says.
        const bool can_sleep = w->loop->can_sleep();
        rte_tel_data_add_dict_string(c, "mode", can_sleep ? reactor::name(mode) : "poll");
        rte_tel_data_add_dict_int(c, "can_sleep", can_sleep);
        rte_tel_data_add_dict_string(c, "state", w->loop->asleep() ? "asleep" : "running");
        const uint64_t polls = w->rc.polls.get(), busy = w->rc.busy_polls.get();
        rte_tel_data_add_dict_u64(c, "busy_permille", polls ? busy * 1000 / polls : 0);
        telemetry::add_counters(c, w->rc, reactor::reactor_counter_fields);
        rte_tel_data_add_dict_u64(c, "current_sleep_ns",
                                  w->loop->current_sleep_ns(reactor::reactor::now_ns()));
        telemetry::add_counters(c, w->io, net::io_counter_fields);
        const std::string key = "lcore" + std::to_string(w->lcore);
        if (rte_tel_data_add_dict_container(d, key.c_str(), c, 0) != 0) return -ENOSPC;
    }
    return 0;
}

// Read: /ferry/wakeup_mode. Write: /ferry/wakeup_mode,<conditional|always|poll>.
// Every worker is woken so a sleeper re-reads the mode at once.
int cmd_wakeup_mode(const char *, const char *params, rte_tel_data *d) {
    if (params != nullptr && *params != '\0') {
        reactor::wakeup_mode m;
        if (!reactor::parse_wakeup_mode(params, m)) return -EINVAL;
        the_app->settings.mode.store(m, std::memory_order_relaxed);
        wake_all_workers();
        FERRY_LOG(NOTICE, ferry_logtype_app, "app", "wakeup mode set to %s", reactor::name(m));
    }
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "wakeup_mode",
                                 reactor::name(the_app->settings.mode.load(std::memory_order_relaxed)));
    return 0;
}

// Read: /ferry/idle_threshold_us. Write: /ferry/idle_threshold_us,<1..1000000>.
int cmd_idle_threshold(const char *, const char *params, rte_tel_data *d) {
    if (params != nullptr && *params != '\0') {
        char *end = nullptr;
        const unsigned long v = std::strtoul(params, &end, 10);
        if (end == params || *end != '\0' || v < 1 || v > 1'000'000) return -EINVAL;
        the_app->settings.idle_threshold_ns.store(uint64_t(v) * 1000u, std::memory_order_relaxed);
        wake_all_workers();
    }
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "idle_threshold_us",
                              the_app->settings.idle_threshold_ns.load(std::memory_order_relaxed) / 1000u);
    return 0;
}

int cmd_config(const char *, const char *, rte_tel_data *d) {
    const config::ferry_config &cfg = the_app->cfg;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "source", cfg.source.c_str());
    rte_tel_data_add_dict_string(d, "drivers_dir", the_app->drivers_dir.c_str());
    rte_tel_data_add_dict_int(d, "workers", static_cast<int>(the_app->workers.size()));
    // The live values (telemetry can change both at run time).
    rte_tel_data_add_dict_string(d, "wakeup_mode",
                                 reactor::name(the_app->settings.mode.load(std::memory_order_relaxed)));
    rte_tel_data_add_dict_u64(d, "idle_threshold_us",
                              the_app->settings.idle_threshold_ns.load(std::memory_order_relaxed) / 1000u);
    rte_tel_data_add_dict_u64(d, "neighbor_timeout_s", cfg.neighbor_timeout_s);
    rte_tel_data_add_dict_int(d, "ports", static_cast<int>(cfg.ports.size()));
    // [admin]: "" when there is no metrics listener.
    const std::string metrics =
        cfg.admin.addr ? config::format_ipv4(*cfg.admin.addr) + ":" + std::to_string(cfg.admin.port)
                       : "";
    rte_tel_data_add_dict_string(d, "metrics_address", metrics.c_str());
    return 0;
}

struct command {
    const char *name;
    telemetry::handler fn;
    const char *help;
};

constexpr command commands[] = {
    {"/ferry/version", cmd_version, "ferry and DPDK versions. Takes no parameters."},
    {"/ferry/ports", cmd_ports,
     "Per port: device, mac, address, queues, capabilities (cap_*), ethdev stats, stack "
     "counters."},
    {"/ferry/net", cmd_net,
     "Per lcore and port: Ethernet/ARP/IPv4/ICMP counters, drops by reason."},
    {"/ferry/tcp", cmd_tcp,
     "Per lcore and port, and summed: TCP connection counters (states, retransmits, resets)."},
    {"/ferry/lcores", cmd_lcores,
     "Per worker lcore: queue, mode, state, sleeps, wakeups by cause, doorbells, loop and I/O "
     "counters."},
    {"/ferry/wakeup_mode", cmd_wakeup_mode,
     "Read, or set with ,<conditional|always|poll>: when workers sleep and peers ring."},
    {"/ferry/idle_threshold_us", cmd_idle_threshold,
     "Read, or set with ,<us>: idle time before a worker tries to sleep."},
    {"/ferry/config", cmd_config, "The effective configuration."},
    {"/ferry/http", cmd_http,
     "HTTP proxy per lcore and summed: requests, responses by class, rejections by reason."},
    {"/ferry/upstreams", cmd_upstreams,
     "Per <upstream>/<n>: server, state, pool, active/idle connections, requests, failures, latency."},
    {"/ferry/rings", cmd_rings,
     "Per lcore<from>/lcore<to>: the cross-core ring's depth, capacity, high-water mark, "
     "ring_full events."},
};

}  // namespace

void register_telemetry() {
    for (const auto &c : commands)
        if (!telemetry::register_command(c.name, c.fn, c.help))
            FERRY_LOG(WARNING, ferry_logtype_app, "app", "telemetry command %s not registered",
                      c.name);
}

}  // namespace ferry::app
