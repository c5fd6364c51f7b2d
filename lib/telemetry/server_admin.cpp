// /ferry/server: an operator's say over one upstream server at run time, as
// HAProxy's `set server <backend>/<server> state|weight`:
//
//   /ferry/server                         every server's admin state and weight
//   /ferry/server,<upstream>/<server>     that server's
//   /ferry/server,<upstream>/<server>,ready|drain|maint
//   /ferry/server,<upstream>/<server>,weight=<1..1000>
//
// <server> is its index in the upstream (as /ferry/upstreams names it) or its
// address:port. The state lives in the process-wide server_health word every
// lcore reads when it picks a server (proxy.h server_admin), so a change holds
// for the next request on every lcore without a message. Each change is
// counted (admin_changes) and logged; a refused one changes nothing and says
// why and what is allowed.
#include <rte_telemetry.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "ferry/config/config.h"
#include "read.h"
#include "ferry/base/logfmt.h"
#include "telemetry_log.h"

namespace ferry::telemetry::detail {

namespace {

constexpr uint32_t max_weight = 1000;

struct server_ref {
    size_t upstream = 0;
    size_t server = 0;  // its index in the configuration
    size_t slot = 0;    // its health words' (config.h server_config::slot)
};

// "<upstream>/<index>" or "<upstream>/<a.b.c.d:port>".
bool find_server(const config::ferry_config &cfg, std::string_view name, server_ref &out) {
    const size_t slash = name.find('/');
    if (slash == std::string_view::npos) return false;
    const std::string_view up = name.substr(0, slash), srv = name.substr(slash + 1);
    const auto &ups = cfg.upstreams;
    for (size_t u = 0; u < ups.size(); ++u) {
        if (ups[u].name != up) continue;
        for (size_t s = 0; s < ups[u].servers.size(); ++s) {
            const auto &sc = ups[u].servers[s];
            const std::string addr = config::format_endpoint(sc.addr, sc.port);
            if (srv == std::to_string(s) || srv == addr) {
                out = {u, s, sc.slot};
                return true;
            }
        }
    }
    return false;
}

uint32_t effective_weight(const process_view &v, const config::ferry_config &cfg,
                          const server_ref &r) {
    const uint32_t w =
        v.proxy_shared->health[r.upstream][r.slot].weight.load(std::memory_order_relaxed);
    return w != 0 ? w : cfg.upstreams[r.upstream].servers[r.server].weight;
}

// One server's entry: its address, admin state, weight (and the
// configuration's), changes so far.
int add_server(const process_view &v, const config::ferry_config &cfg, const server_ref &r,
               rte_tel_data *d) {
    const proxy::server_health &h = v.proxy_shared->health[r.upstream][r.slot];
    const auto &sc = cfg.upstreams[r.upstream].servers[r.server];
    rte_tel_data *sd = rte_tel_data_alloc();
    if (sd == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(sd);
    const std::string addr = config::format_endpoint(sc.addr, sc.port);
    rte_tel_data_add_dict_string(sd, "server", addr.c_str());
    rte_tel_data_add_dict_string(sd, "admin", proxy::name(h.admin.load(std::memory_order_relaxed)));
    rte_tel_data_add_dict_u64(sd, "weight", effective_weight(v, cfg, r));
    rte_tel_data_add_dict_u64(sd, "config_weight", sc.weight);
    rte_tel_data_add_dict_u64(sd, "admin_changes", h.admin_changes.load(std::memory_order_relaxed));
    const std::string key = cfg.upstreams[r.upstream].name + "/" + std::to_string(r.server);
    if (rte_tel_data_add_dict_container(d, key.c_str(), sd, 0) != 0) return -ENOSPC;
    return 0;
}

constexpr const char *usage =
    "<upstream>/<index|address:port>[,ready|drain|maint|weight=1..1000]";

}  // namespace

int server_cmd(const process_view &v, const char *params, rte_tel_data *d) {
    if (v.proxy_shared == nullptr) return refused(d, "no [[upstream]] configured", usage);
    const std::string_view p = params != nullptr ? params : "";
    const auto held = v.configuration();  // held while read
    const config::ferry_config &cfg = *held;
    if (p.empty()) {
        rte_tel_data_start_dict(d);
        for (size_t u = 0; u < cfg.upstreams.size(); ++u)
            for (size_t s = 0; s < cfg.upstreams[u].servers.size(); ++s)
                if (int rc = add_server(v, cfg, {u, s, cfg.upstreams[u].servers[s].slot}, d); rc != 0) return rc;
        return 0;
    }
    const size_t comma = p.find(',');
    const std::string_view name = p.substr(0, comma);
    server_ref r;
    if (!find_server(cfg, name, r))
        return refused(d, "no such server (see /ferry/upstreams), nothing changed", usage);
    proxy::server_health &h = v.proxy_shared->health[r.upstream][r.slot];
    if (comma != std::string_view::npos) {
        const std::string_view what = p.substr(comma + 1);
        // The log line's fields: upstream=py server=10.77.0.2:9000.
        const auto &uc = cfg.upstreams[r.upstream];
        const auto &sc = uc.servers[r.server];
        auto line = [&](const char *what) {
            logfmt l(what);
            l.kv("upstream", uc.name)
                .kv("server", config::format_endpoint(sc.addr, sc.port));
            return l;
        };
        if (what.substr(0, 7) == "weight=") {
            if (cfg.upstreams[r.upstream].balance == config::balance_mode::consistent_hash)
                return refused(d,
                               "the upstream balances by consistent_hash, whose ring is built "
                               "from the configured weights; nothing changed",
                               "ready, drain, maint");
            const std::string num(what.substr(7));
            char *end = nullptr;
            const unsigned long w = std::strtoul(num.c_str(), &end, 10);
            if (num.empty() || *end != '\0' || w < 1 || w > max_weight)
                return refused(d, "not a weight in range, nothing changed", "weight=1..1000");
            const uint32_t was = effective_weight(v, cfg, r);
            h.weight.store(static_cast<uint32_t>(w), std::memory_order_relaxed);
            h.admin_changes.fetch_add(1, std::memory_order_relaxed);
            TELEMETRY_LOG(NOTICE, "%s", line("server weight set").kv("weight", w).kv("was", was).c_str());
        } else {
            proxy::server_admin a;
            if (what == "ready")
                a = proxy::server_admin::ready;
            else if (what == "drain")
                a = proxy::server_admin::drain;
            else if (what == "maint")
                a = proxy::server_admin::maint;
            else
                return refused(d, "unknown server state, nothing changed",
                               "ready, drain, maint, weight=1..1000");
            const proxy::server_admin was = h.admin.exchange(a, std::memory_order_relaxed);
            if (was != a) {
                h.admin_changes.fetch_add(1, std::memory_order_relaxed);
                TELEMETRY_LOG(NOTICE, "%s",
                              line("server state set")
                                  .kv("state", proxy::name(a))
                                  .kv("was", proxy::name(was))
                                  .c_str());
            }
        }
    }
    rte_tel_data_start_dict(d);
    return add_server(v, cfg, r, d);
}

}  // namespace ferry::telemetry::detail
