// What an in-process reload may change (reload.h).
#include "ferry/config/reload.h"

#include <algorithm>
#include <optional>
#include <string>

namespace ferry::config {
namespace {

constexpr const char *restart = "needs a restart; the running configuration is kept";
constexpr const char *shared_shape =
    "needs a restart (every lcore lays out a shared pool's connections, and numbers the "
    "requests other lcores hand over, by upstream from start-up); the running configuration "
    "is kept";

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string show(const header_rules &h) {
    std::string out;
    for (const std::string &n : h.remove) out += (out.empty() ? "" : ", ") + ("remove " + n);
    for (const auto &[n, v] : h.set) out += (out.empty() ? "" : ", ") + ("set " + n + ": " + v);
    for (const auto &[n, v] : h.add) out += (out.empty() ? "" : ", ") + ("add " + n + ": " + v);
    return "[" + out + "]";
}

bool same_rules(const header_rules &a, const header_rules &b) {
    return a.remove == b.remove && a.set == b.set && a.add == b.add;
}

// A port as it was opened: everything but where its table is in the file.
bool same_port(port_config a, port_config b) {
    a.where = {};
    b.where = {};
    return a == b;
}

// The change list: "key: old -> new", at most `limit` lines.
class changes {
public:
    explicit changes(size_t limit) : limit_(limit) {}
    template <class T>
    void num(const std::string &key, T a, T b) {
        if (a != b) add(key + ": " + std::to_string(a) + " -> " + std::to_string(b));
    }
    void str(const std::string &key, std::string_view a, std::string_view b) {
        if (a != b) add(key + ": " + quoted(a) + " -> " + quoted(b));
    }
    void add(std::string line) {
        if (lines_.size() < limit_)
            lines_.push_back(std::move(line));
        else
            ++more_;
    }
    std::vector<std::string> done() && {
        if (more_ != 0) lines_.push_back("... and " + std::to_string(more_) + " more");
        return std::move(lines_);
    }

private:
    size_t limit_;
    size_t more_ = 0;
    std::vector<std::string> lines_;
};

bool same_match(const route_config &a, const route_config &b) {
    return a.listener_index == b.listener_index && a.host == b.host &&
           a.host_wildcard == b.host_wildcard && a.path_prefix == b.path_prefix;
}

std::string route_name(const route_config &r) {
    return (r.host_wildcard ? "*" : "") + r.host + r.path_prefix + " -> " + r.upstream;
}

// The position in `servers` of the server at `ep`, or -1.
int find_server(const std::vector<server_config> &servers, const server_config &ep) {
    for (size_t i = 0; i < servers.size(); ++i)
        if (servers[i].addr == ep.addr && servers[i].port == ep.port) return static_cast<int>(i);
    return -1;
}

// The slot of `key` in `slots` (the list of every key since ferry started):
// where it is, else a new one at the end; nullopt when the list is at
// `capacity` and `key` is not in it.
template <class T>
std::optional<uint16_t> slot_of(std::vector<T> &slots, const T &key, uint32_t capacity) {
    auto it = std::find(slots.begin(), slots.end(), key);
    if (it == slots.end()) {
        if (slots.size() >= capacity) return std::nullopt;
        slots.push_back(key);
        it = slots.end() - 1;
    }
    return static_cast<uint16_t>(it - slots.begin());
}

}  // namespace

std::vector<error> carry_slots(const ferry_config &run, ferry_config &next) {
    std::vector<error> out;
    next.listener_slots = run.listener_slots;
    next.listener_slot_capacity = run.listener_slot_capacity;
    for (size_t i = 0; i < next.listeners.size(); ++i) {
        listener_config &l = next.listeners[i];
        const auto slot = slot_of(next.listener_slots, l.name, next.listener_slot_capacity);
        if (!slot) {
            out.push_back(error{
                l.where, "listener[" + std::to_string(i) + "]",
                "listener '" + l.name + "' would be listener name number " +
                    std::to_string(next.listener_slots.size() + 1) +
                    " since ferry started, more than the " +
                    std::to_string(next.listener_slot_capacity) + " it has room for (" +
                    std::to_string(listener_slot_headroom) +
                    " more than it started with): " + restart});
            break;
        }
        l.slot = *slot;
    }
    // Upstreams by name, each to the position of its slot; a retired
    // placeholder where a removed one was.
    // Every name since ferry started is in `running`, by slot.
    std::vector<std::string> names;
    for (const upstream_config &u : run.upstreams) names.push_back(u.name);
    next.upstream_slot_capacity = static_cast<uint32_t>(upstream_capacity(run));
    std::vector<int> slot_of_pos(next.upstreams.size(), -1);
    for (size_t i = 0; i < next.upstreams.size(); ++i) {
        const upstream_config &u = next.upstreams[i];
        const auto slot = slot_of(names, u.name, next.upstream_slot_capacity);
        if (!slot) {
            out.push_back(error{
                u.where, "upstream[" + std::to_string(i) + "]",
                "upstream '" + u.name + "' would be upstream name number " +
                    std::to_string(names.size() + 1) +
                    " since ferry started, more than the " +
                    std::to_string(next.upstream_slot_capacity) + " it has room for (" +
                    std::to_string(upstream_slot_headroom) +
                    " more than it started with): " + restart});
            return out;  // next keeps the file's order; the reload is refused
        }
        slot_of_pos[i] = *slot;
    }
    std::vector<upstream_config> by_slot(names.size());
    std::vector<int> file_pos(by_slot.size(), -1);  // the slot's upstream in the file
    for (size_t i = 0; i < next.upstreams.size(); ++i) {
        by_slot[static_cast<size_t>(slot_of_pos[i])] = std::move(next.upstreams[i]);
        file_pos[static_cast<size_t>(slot_of_pos[i])] = static_cast<int>(i);
    }
    for (size_t k = 0; k < by_slot.size(); ++k) {
        if (file_pos[k] >= 0) continue;
        // Not in `next`: in `running` (live or retired), as every slot is.
        upstream_config &p = by_slot[k];
        p = run.upstreams[k];
        p.servers.clear();
        p.retired = true;
    }
    next.upstreams = std::move(by_slot);
    // Routes: one the reload keeps (route_map: the same match, or edited in
    // place) keeps its id; a new one takes the next.
    next.route_ids = run.route_ids;
    {
        const std::vector<int> map = route_map(run, next);
        std::vector<bool> kept(next.routes.size(), false);
        for (size_t i = 0; i < map.size(); ++i) {
            if (map[i] < 0) continue;
            next.routes[static_cast<size_t>(map[i])].id = run.routes[i].id;
            kept[static_cast<size_t>(map[i])] = true;
        }
        for (size_t j = 0; j < next.routes.size(); ++j) {
            if (kept[j]) continue;
            if (next.route_ids >= max_routes) {
                out.push_back(error{next.routes[j].where, "route[" + std::to_string(j) + "]",
                                    "route " + std::to_string(j) + " would be route number " +
                                        std::to_string(next.route_ids + 1) +
                                        " since ferry started, more than the " +
                                        std::to_string(max_routes) + " it has room for: " +
                                        restart});
                return out;
            }
            next.routes[j].id = next.route_ids++;
        }
    }
    for (listener_config &l : next.listeners)
        if (l.default_upstream_index >= 0)
            l.default_upstream_index = slot_of_pos[static_cast<size_t>(l.default_upstream_index)];
    for (route_config &r : next.routes)
        if (r.upstream_index >= 0)
            r.upstream_index = slot_of_pos[static_cast<size_t>(r.upstream_index)];
    for (size_t u = 0; u < next.upstreams.size(); ++u) {
        upstream_config &b = next.upstreams[u];
        if (b.retired) continue;
        if (u < run.upstreams.size()) {
            // The same name had this slot: its servers keep theirs.
            b.slots = run.upstreams[u].slots;
            b.slot_capacity = run.upstreams[u].slot_capacity;
        } else {
            // Added: the server slots allocated for every added upstream.
            b.slots.clear();
            b.slot_capacity = added_upstream_server_slots;
        }
        const bool added = u >= run.upstreams.size();
        for (size_t i = 0; i < b.servers.size(); ++i) {
            server_config &s = b.servers[i];
            const auto slot = slot_of(b.slots, server_endpoint{s.addr, s.port}, b.slot_capacity);
            if (!slot) {
                out.push_back(error{
                    s.where,
                    "upstream[" + std::to_string(file_pos[u]) + "].server[" + std::to_string(i) + "]",
                    "server " + format_endpoint(s.addr, s.port) + " of '" + b.name +
                        "' would be its server address number " +
                        std::to_string(b.slots.size() + 1) +
                        (added ? " since a reload added it" : " since ferry started") +
                        ", more than the " + std::to_string(b.slot_capacity) +
                        " it has room for (" +
                        (added ? "as every upstream a reload adds"
                               : std::to_string(server_slot_headroom) +
                                     " more than it started with") +
                        "): " + restart});
                break;
            }
            s.slot = *slot;
        }
    }
    return out;
}

std::vector<int> route_map(const ferry_config &run, const ferry_config &next) {
    std::vector<int> map(run.routes.size(), -1);
    std::vector<bool> taken(next.routes.size(), false);
    for (size_t i = 0; i < run.routes.size(); ++i)
        for (size_t j = 0; j < next.routes.size(); ++j)
            if (!taken[j] && same_match(run.routes[i], next.routes[j])) {
                map[i] = static_cast<int>(j);
                taken[j] = true;
                break;
            }
    for (size_t i = 0; i < run.routes.size(); ++i)
        if (map[i] < 0 && i < next.routes.size() && !taken[i]) {
            map[i] = static_cast<int>(i);  // edited in place
            taken[i] = true;
        }
    return map;
}

bool routes_in_place(const std::vector<int> &map, size_t next_routes) {
    if (map.size() != next_routes) return false;
    for (size_t i = 0; i < map.size(); ++i)
        if (map[i] != static_cast<int>(i)) return false;
    return true;
}

std::vector<error> reload_refusals(const ferry_config &run, const ferry_config &next,
                                   size_t route_capacity) {
    std::vector<error> out;
    const source_pos file{next.source, 0, 0};
    auto refuse = [&](const source_pos &where, std::string key, std::string what,
                      const char *why) {
        out.push_back(error{where, std::move(key), what + " " + why});
    };
    if (run.workers != next.workers)
        refuse(file, "ferry.workers", "the number of workers changed:", restart);
    if (run.neighbor_timeout_s != next.neighbor_timeout_s)
        refuse(file, "ferry.neighbor_timeout_s", "the neighbour timeout changed:", restart);
    if (run.ports.size() != next.ports.size()) {
        refuse(file, "port", "the [[port]] list changed:", restart);
    } else {
        for (size_t i = 0; i < next.ports.size(); ++i)
            if (!same_port(run.ports[i], next.ports[i]))
                refuse(next.ports[i].where, "port[" + std::to_string(i) + "]",
                       "port '" + next.ports[i].name + "' changed:", restart);
    }
    if (!(run.tcp == next.tcp)) refuse(file, "tcp", "[tcp] changed:", restart);
    if (!(run.tcp_test == next.tcp_test)) refuse(file, "tcp_test", "[tcp_test] changed:", restart);
    {
        admin_config a = run.admin, b = next.admin;
        a.where = b.where = {};
        if (!(a == b))
            refuse(next.admin.where.line != 0 ? next.admin.where : file, "admin.metrics_address",
                   "the metrics listener changed:", restart);
    }
    // [http] keys that size the head buffers and the pending-head list, or
    // start the access log's writer.
    const http_config &h0 = run.http, &h1 = next.http;
    auto http_fixed = [&](const char *key, bool same) {
        if (!same) refuse(file, std::string("http.") + key, std::string(key) + " changed:", restart);
    };
    http_fixed("max_header_bytes", h0.max_header_bytes == h1.max_header_bytes);
    http_fixed("max_headers", h0.max_headers == h1.max_headers);
    http_fixed("client_head_buffers", h0.client_head_buffers == h1.client_head_buffers);
    http_fixed("max_pending_heads", h0.max_pending_heads == h1.max_pending_heads);
    http_fixed("access_log", h0.access_log == h1.access_log);

    // Listeners may be added, removed, renamed and moved (carry_slots keeps
    // each one's counters by name), but a ferry that started without any runs
    // no proxy to give them to.
    if (run.listeners.empty() && !next.listeners.empty())
        refuse(next.listeners[0].where, "listener",
               "ferry started without a [[listener]], so without the proxy that serves them:",
               restart);
    // Routes may be added, removed and reordered, shared pools or not: a
    // request handed to another lcore carries its route's id (carry_slots).
    if (next.routes.size() > route_capacity) {
        refuse(file, "route",
               std::to_string(next.routes.size()) + " [[route]]s, more than the " +
                   std::to_string(route_capacity) + " this ferry has room for (64 more than it "
                   "started with):",
               restart);
    }
    // Upstreams by name: one may be added, removed or renamed (carry_slots
    // keeps each name's slot; a removed one's stays as a retired
    // placeholder). A name keeps its pool and shared_connections for life
    // (each worker lays out a shared pool's connections for its slot), and
    // an upstream is added with a shared pool only to a ferry that has had
    // one from the start (the cross-core machinery exists then).
    auto live = [](const ferry_config &c, const std::string &name) -> const upstream_config * {
        for (const upstream_config &u : c.upstreams)
            if (!u.retired && u.name == name) return &u;
        return nullptr;
    };
    bool had_shared = false;
    for (const upstream_config &a : run.upstreams) had_shared = had_shared || a.pool == pool_mode::shared;
    for (size_t u = 0; u < next.upstreams.size(); ++u) {
        const upstream_config &b = next.upstreams[u];
        if (b.retired) continue;
        const std::string key = "upstream[" + std::to_string(u) + "]";
        // In `next`'s slot order (carry_slots): the same slot in `run`, if
        // the name had one, retired or not.
        const upstream_config *slot_was = u < run.upstreams.size() &&
                                                  run.upstreams[u].name == b.name
                                              ? &run.upstreams[u]
                                              : nullptr;
        if (slot_was != nullptr && slot_was->retired &&
            (slot_was->pool != b.pool || (b.pool == pool_mode::shared &&
                                          slot_was->shared_connections != b.shared_connections)))
            refuse(b.where, key + ".pool",
                   "upstream '" + b.name + "' comes back with another pool (pool, "
                   "shared_connections) than it had:",
                   shared_shape);
        const upstream_config *was = live(run, b.name);
        if (was == nullptr) {
            if (b.pool == pool_mode::shared && !had_shared)
                refuse(b.where, key + ".pool",
                       "upstream '" + b.name + "' is added with a shared pool to a ferry that "
                       "started without one:",
                       restart);
            continue;  // added: its servers took slots of their own (carry_slots)
        }
        const upstream_config &a = *was;
        if (a.pool != b.pool || (b.pool == pool_mode::shared &&
                                 a.shared_connections != b.shared_connections))
            refuse(b.where, key + ".pool",
                   "upstream '" + b.name + "' changed its pool (pool, shared_connections):",
                   restart);
        // Servers may be added, removed and reordered, local pool or
        // shared (carry_slots keeps each one's state, and a shared pool's
        // connections, by its address's slot).
    }
    return out;
}

std::vector<std::string> reload_changes(const ferry_config &run, const ferry_config &next,
                                        size_t limit) {
    changes c(limit);
    c.str("ferry.wakeup_mode", to_string(run.wakeup), to_string(next.wakeup));
    c.num("ferry.idle_threshold_us", run.idle_threshold_us, next.idle_threshold_us);
    c.num("ferry.nap_budget_us", run.nap_budget_us, next.nap_budget_us);
    c.num("ferry.spin_yield_us", run.spin_yield_us, next.spin_yield_us);
    c.num("ferry.latency_weight_pct", run.latency_weight_pct, next.latency_weight_pct);
    c.num("ferry.busy_latency_weight_pct", run.busy_latency_weight_pct,
          next.busy_latency_weight_pct);
    const http_config &h0 = run.http, &h1 = next.http;
    c.str("http.access_log_format", std::string(to_string(h0.access_log_format)),
          std::string(to_string(h1.access_log_format)));
    c.num("http.client_header_timeout_ms", h0.client_header_timeout_ms, h1.client_header_timeout_ms);
    c.num("http.client_idle_timeout_ms", h0.client_idle_timeout_ms, h1.client_idle_timeout_ms);
    c.num("http.client_body_timeout_ms", h0.client_body_timeout_ms, h1.client_body_timeout_ms);
    c.num("http.tunnel_idle_timeout_ms", h0.tunnel_idle_timeout_ms, h1.tunnel_idle_timeout_ms);
    c.num("http.max_requests_per_connection", h0.max_requests_per_connection,
          h1.max_requests_per_connection);
    c.num("http.max_body_bytes", h0.max_body_bytes, h1.max_body_bytes);
    c.num("http.drain_timeout_ms", h0.drain_timeout_ms, h1.drain_timeout_ms);
    c.num("http.drain_grace_ms", h0.drain_grace_ms, h1.drain_grace_ms);
    c.str("http.via", h0.via, h1.via);
    c.num("http.add_x_forwarded", int(h0.add_x_forwarded), int(h1.add_x_forwarded));
    // Listeners by name: removed, added, moved, and a kept one's values.
    auto find_listener = [](const std::vector<listener_config> &ls, const std::string &name) {
        for (size_t i = 0; i < ls.size(); ++i)
            if (ls[i].name == name) return static_cast<int>(i);
        return -1;
    };
    for (size_t i = 0; i < run.listeners.size(); ++i)
        if (find_listener(next.listeners, run.listeners[i].name) < 0)
            c.add("listener[" + std::to_string(i) + "] removed: '" + run.listeners[i].name + "'");
    for (size_t i = 0; i < next.listeners.size(); ++i) {
        const listener_config &b = next.listeners[i];
        const int was = find_listener(run.listeners, b.name);
        if (was < 0) {
            c.add("listener[" + std::to_string(i) + "] added: '" + b.name + "' on port " +
                  std::to_string(b.port));
            continue;
        }
        if (was != static_cast<int>(i))
            c.add("listener[" + std::to_string(was) + "] is now listener[" + std::to_string(i) +
                  "]: '" + b.name + "'");
        const listener_config &a = run.listeners[static_cast<size_t>(was)];
        const std::string k = "listener[" + std::to_string(i) + "].";
        c.num(k + "port", a.port, b.port);
        c.str(k + "on", a.on, b.on);
        c.str(k + "address", a.address != 0 ? format_ipv4(a.address) : "",
              b.address != 0 ? format_ipv4(b.address) : "");
        c.num(k + "max_connections", a.max_connections, b.max_connections);
        c.str(k + "default_upstream", a.default_upstream, b.default_upstream);
    }
    const std::vector<int> map = route_map(run, next);
    std::vector<bool> kept(next.routes.size(), false);
    for (size_t i = 0; i < map.size(); ++i) {
        if (map[i] < 0) {
            c.add("route[" + std::to_string(i) + "] removed: " + route_name(run.routes[i]));
            continue;
        }
        kept[static_cast<size_t>(map[i])] = true;
        if (map[i] != static_cast<int>(i))
            c.add("route[" + std::to_string(i) + "] is now route[" + std::to_string(map[i]) +
                  "]: " + route_name(run.routes[i]));
    }
    for (size_t j = 0; j < kept.size(); ++j)
        if (!kept[j]) c.add("route[" + std::to_string(j) + "] added: " + route_name(next.routes[j]));
    for (size_t i = 0; i < map.size(); ++i) {
        if (map[i] < 0) continue;
        const route_config &a = run.routes[i], &b = next.routes[static_cast<size_t>(map[i])];
        const std::string k = "route[" + std::to_string(map[i]) + "].";
        c.str(k + "listener", a.listener, b.listener);
        c.str(k + "host", (a.host_wildcard ? "*" : "") + a.host,
              (b.host_wildcard ? "*" : "") + b.host);
        c.str(k + "path_prefix", a.path_prefix, b.path_prefix);
        c.str(k + "upstream", a.upstream, b.upstream);
        if (!same_rules(a.request_headers, b.request_headers))
            c.add(k + "request_headers: " + show(a.request_headers) + " -> " +
                  show(b.request_headers));
        if (!same_rules(a.response_headers, b.response_headers))
            c.add(k + "response_headers: " + show(a.response_headers) + " -> " +
                  show(b.response_headers));
        c.num(k + "connect_timeout_ms", a.connect_timeout_ms, b.connect_timeout_ms);
        c.num(k + "response_timeout_ms", a.response_timeout_ms, b.response_timeout_ms);
        c.num(k + "read_timeout_ms", a.read_timeout_ms, b.read_timeout_ms);
        c.num(k + "write_timeout_ms", a.write_timeout_ms, b.write_timeout_ms);
        c.num(k + "total_timeout_ms", a.total_timeout_ms, b.total_timeout_ms);
    }
    // Upstreams by slot (carry_slots): removed, added, and a kept one's values.
    for (size_t u = 0; u < next.upstreams.size(); ++u) {
        const upstream_config &b = next.upstreams[u];
        const upstream_config *was = u < run.upstreams.size() && !run.upstreams[u].retired
                                         ? &run.upstreams[u]
                                         : nullptr;
        if (b.retired) {
            if (was != nullptr) c.add("upstream[" + std::to_string(u) + "] removed: '" + b.name + "'");
            continue;
        }
        if (was == nullptr) {
            c.add("upstream[" + std::to_string(u) + "] added: '" + b.name + "' with " +
                  std::to_string(b.servers.size()) +
                  (b.servers.size() == 1 ? " server" : " servers"));
            continue;
        }
        const upstream_config &a = *was;
        const std::string k = "upstream[" + std::to_string(u) + "].";
        c.str(k + "balance", to_string(a.balance), to_string(b.balance));
        c.str(k + "hash_key", to_string(a.hash_key), to_string(b.hash_key));
        c.num(k + "max_idle", a.max_idle, b.max_idle);
        c.str(k + "shared_pick", to_string(a.shared_pick), to_string(b.shared_pick));
        c.num(k + "connect_timeout_ms", a.connect_timeout_ms, b.connect_timeout_ms);
        c.num(k + "response_timeout_ms", a.response_timeout_ms, b.response_timeout_ms);
        c.num(k + "read_timeout_ms", a.read_timeout_ms, b.read_timeout_ms);
        c.num(k + "write_timeout_ms", a.write_timeout_ms, b.write_timeout_ms);
        c.num(k + "total_timeout_ms", a.total_timeout_ms, b.total_timeout_ms);
        c.num(k + "retries", a.retries, b.retries);
        c.num(k + "max_fails", a.max_fails, b.max_fails);
        c.num(k + "fail_timeout_ms", a.fail_timeout_ms, b.fail_timeout_ms);
        c.str(k + "when_all_down", to_string(a.when_all_down), to_string(b.when_all_down));
        c.str(k + "health_check_path", a.health_check_path, b.health_check_path);
        c.num(k + "health_check_interval_ms", a.health_check_interval_ms,
              b.health_check_interval_ms);
        c.num(k + "health_check_timeout_ms", a.health_check_timeout_ms, b.health_check_timeout_ms);
        c.str(k + "health_check_host", a.health_check_host, b.health_check_host);
        // Servers by address: removed, added, moved, and a kept one's weight.
        for (size_t s = 0; s < a.servers.size(); ++s)
            if (find_server(b.servers, a.servers[s]) < 0)
                c.add(k + "server[" + std::to_string(s) + "] removed: " +
                      format_endpoint(a.servers[s].addr, a.servers[s].port));
        for (size_t s = 0; s < b.servers.size(); ++s) {
            const server_config &sb = b.servers[s];
            const std::string ep = format_endpoint(sb.addr, sb.port);
            const int was = find_server(a.servers, sb);
            if (was < 0) {
                c.add(k + "server[" + std::to_string(s) + "] added: " + ep);
                continue;
            }
            if (was != static_cast<int>(s))
                c.add(k + "server[" + std::to_string(was) + "] is now server[" +
                      std::to_string(s) + "]: " + ep);
            c.num(k + "server[" + std::to_string(s) + "].weight",
                  a.servers[static_cast<size_t>(was)].weight, sb.weight);
        }
    }
    return std::move(c).done();
}

uint64_t config_hash(std::string_view text) noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char ch : text) {
        h ^= static_cast<unsigned char>(ch);
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace ferry::config
