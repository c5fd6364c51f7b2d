#include "config_dump.h"

#include <cerrno>
#include <string>

namespace ferry::telemetry {
namespace {

// A dict for one item, added to `d` under `name` (rte_tel_data_add_dict_container
// takes it over). Null if it could not be allocated.
rte_tel_data *item(rte_tel_data *d, const std::string &name) {
    rte_tel_data *t = rte_tel_data_alloc();
    if (t == nullptr) return nullptr;
    rte_tel_data_start_dict(t);
    if (rte_tel_data_add_dict_container(d, name.c_str(), t, 0) != 0) {
        rte_tel_data_free(t);
        return nullptr;
    }
    return t;
}

void str(rte_tel_data *t, const char *k, const std::string &v) {
    rte_tel_data_add_dict_string(t, k, v.c_str());
}
void num(rte_tel_data *t, const char *k, uint64_t v) { rte_tel_data_add_dict_u64(t, k, v); }

}  // namespace

int dump_ports(const config::ferry_config &c, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const config::port_config &p : c.ports) {
        rte_tel_data *t = item(d, p.name);
        if (t == nullptr) return -ENOMEM;
        str(t, "profile", p.profile);
        str(t, "address", config::format_ipv4(p.address) + "/" + std::to_string(p.prefix_len));
        str(t, "gateway", p.gateway ? config::format_ipv4(*p.gateway) : "");
        str(t, "address6", p.address6 ? format_ipv6(*p.address6) + "/" +
                                            std::to_string(p.prefix6_len)
                                      : "");
        str(t, "gateway6", p.gateway6 ? format_ipv6(*p.gateway6) : "");
        num(t, "icmp6_errors_per_s", p.icmp6_errors_per_s);
        num(t, "icmp6_error_burst", p.icmp6_error_burst);
        num(t, "router_discovery", p.router_discovery ? 1 : 0);
        str(t, "iface", p.iface);
        str(t, "pci", p.pci);
        num(t, "mtu", p.mtu);
        num(t, "mbufs", p.mbufs);
        num(t, "ring_frames", p.ring_frames);
    }
    return 0;
}

int dump_listeners(const config::ferry_config &c, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const config::listener_config &l : c.listeners) {
        rte_tel_data *t = item(d, l.name);
        if (t == nullptr) return -ENOMEM;
        num(t, "port", l.port);
        // Where it listens: a [[port]] name, or "*" for every port.
        str(t, "on", std::string(config::listener_where(c, l)));
        str(t, "address",
            l.port_index < 0 ? "" : config::format_ipv4(c.ports[l.port_index].address));
        num(t, "max_connections", l.max_connections);
        str(t, "default_upstream", l.default_upstream);
    }
    return 0;
}

int dump_routes(const config::ferry_config &c, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (size_t i = 0; i < c.routes.size(); ++i) {
        const config::route_config &r = c.routes[i];
        rte_tel_data *t = item(d, std::to_string(i));
        if (t == nullptr) return -ENOMEM;
        str(t, "listener", r.listener.empty() ? "*" : r.listener);
        str(t, "host", r.host.empty() ? "*" : (r.host_wildcard ? "*" + r.host : r.host));
        str(t, "path_prefix", r.path_prefix);
        str(t, "upstream", r.upstream);
        str(t, "request_headers", config::describe_header_rules(r.request_headers));
        str(t, "response_headers", config::describe_header_rules(r.response_headers));
        str(t, "timeouts", config::describe_route_timeouts(r));  // "": the upstream's
    }
    return 0;
}

int dump_upstreams(const config::ferry_config &c, rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    for (const config::upstream_config &u : c.upstreams) {
        if (u.retired) continue;  // a reload removed it (config.h)
        rte_tel_data *t = item(d, u.name);
        if (t == nullptr) return -ENOMEM;
        str(t, "balance", std::string(config::to_string(u.balance)));
        if (u.balance == config::balance_mode::consistent_hash)
            str(t, "hash_key", std::string(config::to_string(u.hash_key)));
        str(t, "pool", std::string(config::to_string(u.pool)));
        num(t, u.pool == config::pool_mode::shared ? "shared_connections" : "max_idle",
            u.pool == config::pool_mode::shared ? u.shared_connections : u.max_idle);
        num(t, "connect_timeout_ms", u.connect_timeout_ms);
        num(t, "response_timeout_ms", u.response_timeout_ms);
        num(t, "read_timeout_ms", u.read_timeout_ms);
        num(t, "write_timeout_ms", u.write_timeout_ms);
        num(t, "total_timeout_ms", u.total_timeout_ms);
        num(t, "retries", u.retries);
        num(t, "max_fails", u.max_fails);
        num(t, "fail_timeout_ms", u.fail_timeout_ms);
        str(t, "when_all_down", std::string(config::to_string(u.when_all_down)));
        str(t, "health_check_path", u.health_check_path);
        if (u.health_checks()) {
            num(t, "health_check_interval_ms", u.health_check_interval_ms);
            num(t, "health_check_timeout_ms", u.health_check_timeout_ms);
        }
        // "10.77.0.2:8080 weight 3, 10.77.0.3:8080 weight 1"
        std::string servers;
        for (const config::server_config &s : u.servers)
            servers += (servers.empty() ? "" : ", ") + config::format_endpoint(s.addr, s.port) +
                       " weight " + std::to_string(s.weight);
        str(t, "servers", servers);
    }
    return 0;
}

}  // namespace ferry::telemetry
