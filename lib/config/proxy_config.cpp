// [http], [[listener]], [[route]], [[upstream]]: schema in config.h.
#include "proxy_config.h"

#include "header_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "text.h"

namespace ferry::config {

namespace {

constexpr std::string_view balance_names[] = {"round_robin", "least_conn", "consistent_hash"};
constexpr std::string_view hash_key_names[] = {"client_ip", "uri", "host"};
constexpr std::string_view pool_names[] = {"local", "shared"};
constexpr std::string_view shared_pick_names[] = {"round_robin", "own_idle_first"};
constexpr std::string_view log_format_names[] = {"combined", "json"};
constexpr std::string_view all_down_names[] = {"try", "refuse"};

constexpr int64_t max_timeout_ms = 3600000;  // an hour
constexpr size_t max_path_bytes = 1024;
constexpr size_t max_file_path_bytes = 4095;  // PATH_MAX - 1

// access_log: "" (off), or an absolute file path without control characters.
bool is_log_path(std::string_view s) {
    if (s.empty())
        return true;
    if (s.size() > max_file_path_bytes || s[0] != '/' || s.back() == '/')
        return false;
    for (char c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            return false;
    return true;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string cidr_text(uint32_t addr, uint8_t len) {
    return format_ipv4(addr & detail::prefix_mask(len)) + "/" + std::to_string(len);
}

// An IPv6 server must be on a port's IPv6 prefix, link-local, or reachable
// through some port's gateway6 or a router that port's router discovery
// finds, and not a port's own address; why not, if so.
std::optional<std::string> ipv6_server_unreachable(const std::vector<port_config> &ports,
                                                   const ip_address &a) {
    const ipv6_bytes &b = a.bytes();
    bool routed = false;
    for (const port_config &p : ports) {
        routed = routed || p.gateway6.has_value() || (p.address6 && p.router_discovery);
        if (!p.address6) continue;
        if (*p.address6 == b)
            return "server " + a.to_string() + " is the address6 of port '" + p.name +
                   "' (ferry itself)";
        if (ipv6_in_prefix(b, *p.address6, p.prefix6_len) || ipv6_is_link_local(b))
            return std::nullopt;
    }
    if (routed) return std::nullopt;
    return "server " + a.to_string() +
           " is on no port's address6 prefix and no port has a gateway6 or router_discovery";
}

// A route's path_prefix: starts with '/', visible ASCII, no query or fragment.
bool is_path_prefix(std::string_view s) {
    return !s.empty() && s.size() <= max_path_bytes && s[0] == '/' && detail::is_visible_ascii(s) &&
           s.find_first_of("?#") == std::string_view::npos;
}

// health_check_path: a request-target in origin form (a query is fine).
bool is_check_path(std::string_view s) {
    return !s.empty() && s.size() <= max_path_bytes && s[0] == '/' && detail::is_visible_ascii(s) &&
           s.find('#') == std::string_view::npos;
}

// health_check_host: "name" or "name:port".
bool is_host_header(std::string_view s) {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos)
        return detail::is_host_name(s);
    const std::string_view port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port[0] == '0')
        return false;
    uint32_t n = 0;
    for (char c : port) {
        if (c < '0' || c > '9')
            return false;
        n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    return n <= 65535 && detail::is_host_name(s.substr(0, colon));
}

template <class Item>
int index_of(const std::vector<Item> &items, const std::string &name) {
    for (size_t i = 0; i < items.size(); ++i)
        if (items[i].name == name)
            return static_cast<int>(i);
    return -1;
}

// "unknown upstream 'x'" with a suggestion, or a note that there is none to refer to.
template <class Item>
std::string unknown_name(std::string_view what, const std::string &name,
                         const std::vector<Item> &items) {
    std::string msg = "unknown " + std::string(what) + " '" + name + "'";
    if (items.empty())
        return msg + " (there is no [[" + std::string(what) + "]] table)";
    std::vector<std::string_view> names;
    for (const Item &i : items)
        names.push_back(i.name);
    const std::string_view near = detail::nearest(name, names);
    if (!near.empty())
        msg += " (did you mean '" + std::string(near) + "'?)";
    return msg;
}

}  // namespace

namespace detail {

namespace {

// Calls f(table, key path) for each table of an array of tables at n.
template <class F>
std::optional<error> for_each_table(const reader &r, const toml::node &n, const std::string &key,
                                    std::string_view header, F &&f) {
    // [listener] (a single table) instead of [[listener]] is the likely mistake here.
    if (n.is_table())
        return r.at(n, key,
                    "expected an array of tables ([[" + std::string(header) + "]]), got a table");
    auto a = r.array(n, key);
    if (!a)
        return a.error();
    for (size_t i = 0; i < (*a)->size(); ++i) {
        const toml::node &elem = *(*a)->get(i);
        const std::string k = index_key(key, i);
        auto t = r.table(elem, k);
        if (!t)
            return t.error();
        if (auto e = f(**t, k))
            return e;
    }
    return std::nullopt;
}

// A string that must satisfy `valid`; else "<what>, got '<value>'". Records its node.
template <class Valid>
reader::handler checked_string(const reader &r, std::string &out, const toml::node *&node,
                               Valid valid, std::string what) {
    return [&r, &out, &node, valid, what](const toml::node &v,
                                          const std::string &k) -> std::optional<error> {
        auto s = r.string(v, k);
        if (!s)
            return s.error();
        if (!valid(*s))
            return r.at(v, k, what + ", got '" + *s + "'");
        out = std::move(*s);
        node = &v;
        return std::nullopt;
    };
}

bool is_name(std::string_view s) {
    return is_lower_name(s, 32);
}
constexpr std::string_view name_rule = "must be 1..32 characters of [a-z0-9_]";

// One of `names`, stored as the enum value at the same index.
template <class E, size_t N>
reader::handler enum_into(const reader &r, E &out, const toml::node *&node,
                          const std::string_view (&names)[N], std::string what) {
    return [&r, &out, &node, &names, what](const toml::node &v,
                                           const std::string &k) -> std::optional<error> {
        auto s = r.string(v, k);
        if (!s)
            return s.error();
        for (size_t i = 0; i < N; ++i)
            if (*s == names[i]) {
                out = static_cast<E>(i);
                node = &v;
                return std::nullopt;
            }
        return r.at(
            v, k, "unknown " + what + " '" + *s + "' (expected " + join_alternatives(names) + ")");
    };
}

// An integer handler that also records where the value was.
template <class T>
reader::handler noted_integer(const reader &r, T &out, const toml::node *&node, int64_t lo,
                              int64_t hi) {
    return [&r, &out, &node, lo, hi](const toml::node &v,
                                     const std::string &k) -> std::optional<error> {
        auto n = r.integer(v, k, lo, hi);
        if (!n)
            return n.error();
        out = static_cast<T>(*n);
        node = &v;
        return std::nullopt;
    };
}

}  // namespace

std::string proxy_reader::first_at(const toml::node &n) const {
    const source_pos w = r_.pos(n.source());
    return w.file + ":" + std::to_string(w.line) + ":" + std::to_string(w.column);
}

std::optional<error> proxy_reader::read_http(const toml::node &n, const std::string &key) {
    auto t = r_.table(n, key);
    if (!t)
        return t.error();
    http_config &h = cfg_.http;
    const toml::node *via_node = nullptr, *log_node = nullptr, *log_format_node = nullptr;
    const reader::field fields[] = {
        {"client_header_timeout_ms", false,
         r_.integer_into(h.client_header_timeout_ms, 1, max_timeout_ms)},
        {"client_idle_timeout_ms", false,
         r_.integer_into(h.client_idle_timeout_ms, 1, max_timeout_ms)},
        {"client_body_timeout_ms", false,
         r_.integer_into(h.client_body_timeout_ms, 1, max_timeout_ms)},
        {"tunnel_idle_timeout_ms", false, r_.integer_into(h.tunnel_idle_timeout_ms, 1, 86400000)},
        {"max_pending_heads", false, r_.integer_into(h.max_pending_heads, 0, 1048576)},
        {"client_head_buffers", false, r_.integer_into(h.client_head_buffers, 0, 4194304)},
        {"max_requests_per_connection", false,
         r_.integer_into(h.max_requests_per_connection, 0, 1000000000)},
        {"max_header_bytes", false, r_.integer_into(h.max_header_bytes, 256, 65536)},
        {"max_headers", false, r_.integer_into(h.max_headers, 8, 512)},
        {"max_body_bytes", false, r_.integer_into(h.max_body_bytes, 0, int64_t{1} << 62)},
        {"drain_timeout_ms", false, r_.integer_into(h.drain_timeout_ms, 0, 600000)},
        {"drain_grace_ms", false, r_.integer_into(h.drain_grace_ms, 0, 600000)},
        {"via", false,
         checked_string(
             r_, h.via, via_node, [](std::string_view s) { return is_simple_token(s, 32); },
             "must be 1..32 characters of [A-Za-z0-9._-]")},
        {"add_x_forwarded", false, r_.boolean_into(h.add_x_forwarded)},
        {"access_log", false,
         checked_string(r_, h.access_log, log_node, is_log_path,
                        "must be \"\" (off) or an absolute file path (starting with '/', not "
                        "ending with '/', at most 4095 bytes, no control characters)")},
        {"access_log_format", false,
         enum_into(r_, h.access_log_format, log_format_node, log_format_names,
                   "access log format")},
    };
    return r_.walk(**t, key, fields);
}

std::optional<error> proxy_reader::read_listeners(const toml::node &n, const std::string &key) {
    return for_each_table(
        r_, n, key, "listener",
        [this](const toml::table &t, const std::string &k) { return read_listener(t, k); });
}

std::optional<error> proxy_reader::read_listener(const toml::table &t, const std::string &key) {
    listener_config l;
    l.where = r_.pos(t.source());
    listener_nodes nodes;
    const reader::field fields[] = {
        {"name", true,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             if (auto e =
                     checked_string(r_, l.name, nodes.name, is_name, std::string(name_rule))(v, k))
                 return e;
             for (size_t j = 0; j < cfg_.listeners.size(); ++j)
                 if (cfg_.listeners[j].name == l.name)
                     return r_.at(v, k,
                                  "duplicate listener name '" + l.name + "' (first defined at " +
                                      first_at(*listener_nodes_[j].name) + ")");
             return std::nullopt;
         }},
        // Two listeners on one TCP port: finish(), once their ports are known.
        {"port", true, noted_integer(r_, l.port, nodes.port, 1, 65535)},
        {"on", false,
         checked_string(r_, l.on, nodes.on, is_name,
                        "must be a [[port]] name (1..32 characters of [a-z0-9_])")},
        {"address", false,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             auto s = r_.string(v, k);
             if (!s)
                 return s.error();
             nodes.address = &v;
             if (const auto ip6 = parse_ipv6(*s)) {
                 l.address6 = *ip6;
                 return std::nullopt;
             }
             const auto ip = parse_ipv4(*s);
             if (!ip || *ip == 0)
                 return r_.at(v, k,
                              "expected an IPv4 address a.b.c.d or an IPv6 address, got '" + *s +
                                  "'");
             l.address = *ip;
             return std::nullopt;
         }},
        {"max_connections", false, r_.integer_into(l.max_connections, 0, 1 << 20)},
        {"default_upstream", false,
         checked_string(r_, l.default_upstream, nodes.default_upstream, is_name,
                        "must be an [[upstream]] name (1..32 characters of [a-z0-9_])")},
    };
    if (auto e = r_.walk(t, key, fields))
        return e;
    if (cfg_.listeners.size() >= max_listeners)
        return r_.at(t.source(), key, "at most " + std::to_string(max_listeners) + " listeners");
    l.slot = static_cast<uint16_t>(cfg_.listeners.size());
    cfg_.listener_slots.push_back(l.name);
    cfg_.listener_slot_capacity =
        static_cast<uint32_t>(cfg_.listener_slots.size() + listener_slot_headroom);
    cfg_.listeners.push_back(std::move(l));
    listener_nodes_.push_back(nodes);
    return std::nullopt;
}

std::optional<error> proxy_reader::read_routes(const toml::node &n, const std::string &key) {
    return for_each_table(r_, n, key, "route", [this](const toml::table &t, const std::string &k) {
        return read_route(t, k);
    });
}

std::optional<error> proxy_reader::read_route(const toml::table &t, const std::string &key) {
    route_config rt;
    rt.where = r_.pos(t.source());
    route_nodes nodes;
    const toml::node *unused = nullptr;
    const reader::field fields[] = {
        {"listener", false,
         checked_string(r_, rt.listener, nodes.listener, is_name,
                        "must be a [[listener]] name (1..32 characters of [a-z0-9_])")},
        {"host", false,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             auto s = r_.string(v, k);
             if (!s)
                 return s.error();
             const std::string_view h = *s;
             const bool wildcard = h.starts_with("*.");
             const std::string_view name = wildcard ? h.substr(2) : h;
             if (!is_host_name(name)) {
                 if (name.find(':') != std::string_view::npos)
                     return r_.at(v, k,
                                  "must not have a port (the request's Host is compared "
                                  "without its :port), got '" +
                                      *s + "'");
                 return r_.at(v, k,
                              "expected a host name or *.domain (labels of [A-Za-z0-9_-]), "
                              "got '" +
                                  *s + "'");
             }
             rt.host_wildcard = wildcard;
             rt.host = lowercase(wildcard ? h.substr(1) : h);
             return std::nullopt;
         }},
        {"path_prefix", false,
         checked_string(r_, rt.path_prefix, unused, is_path_prefix,
                        "must start with '/' and be at most 1024 bytes of visible ASCII "
                        "without '?' or '#'")},
        {"upstream", true,
         checked_string(r_, rt.upstream, nodes.upstream, is_name,
                        "must be an [[upstream]] name (1..32 characters of [a-z0-9_])")},
        {"request_headers", false,
         [&](const toml::node &v, const std::string &k) {
             return read_header_rules(r_, v, k, false, rt.request_headers);
         }},
        // The upstream's limits (read_upstream).
        {"connect_timeout_ms", false, r_.integer_into(rt.connect_timeout_ms, 1, 600000)},
        {"response_timeout_ms", false, r_.integer_into(rt.response_timeout_ms, 1, max_timeout_ms)},
        {"read_timeout_ms", false, r_.integer_into(rt.read_timeout_ms, 1, max_timeout_ms)},
        {"write_timeout_ms", false, r_.integer_into(rt.write_timeout_ms, 1, max_timeout_ms)},
        {"total_timeout_ms", false, r_.integer_into(rt.total_timeout_ms, 0, max_timeout_ms)},
        {"response_headers", false,
         [&](const toml::node &v, const std::string &k) {
             return read_header_rules(r_, v, k, true, rt.response_headers);
         }},
    };
    if (auto e = r_.walk(t, key, fields))
        return e;
    if (cfg_.routes.size() >= max_routes)
        return r_.at(t.source(), key, "at most " + std::to_string(max_routes) + " routes");
    cfg_.routes.push_back(std::move(rt));
    route_nodes_.push_back(nodes);
    return std::nullopt;
}

std::optional<error> proxy_reader::read_upstreams(const toml::node &n, const std::string &key) {
    return for_each_table(
        r_, n, key, "upstream",
        [this](const toml::table &t, const std::string &k) { return read_upstream(t, k); });
}

std::optional<error> proxy_reader::read_upstream(const toml::table &t, const std::string &key) {
    upstream_config u;
    u.where = r_.pos(t.source());
    std::vector<server_nodes> snodes;
    const toml::node *name_node = nullptr, *hash_key_node = nullptr, *shared_node = nullptr,
                     *max_idle_node = nullptr, *servers_node = nullptr, *pick_node = nullptr,
                     *unused = nullptr;
    const reader::field fields[] = {
        {"name", true,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             if (auto e =
                     checked_string(r_, u.name, name_node, is_name, std::string(name_rule))(v, k))
                 return e;
             for (size_t j = 0; j < cfg_.upstreams.size(); ++j)
                 if (cfg_.upstreams[j].name == u.name)
                     return r_.at(v, k,
                                  "duplicate upstream name '" + u.name + "' (first defined at " +
                                      first_at(*upstream_name_nodes_[j]) + ")");
             return std::nullopt;
         }},
        {"balance", false, enum_into(r_, u.balance, unused, balance_names, "balance mode")},
        {"hash_key", false, enum_into(r_, u.hash_key, hash_key_node, hash_key_names, "hash key")},
        {"pool", false, enum_into(r_, u.pool, unused, pool_names, "pool mode")},
        {"shared_connections", false,
         noted_integer(r_, u.shared_connections, shared_node, 1, 1024)},
        {"shared_pick", false,
         enum_into(r_, u.shared_pick, pick_node, shared_pick_names, "shared_pick mode")},
        {"max_idle", false, noted_integer(r_, u.max_idle, max_idle_node, 0, 65535)},
        {"connect_timeout_ms", false, r_.integer_into(u.connect_timeout_ms, 1, 600000)},
        {"response_timeout_ms", false, r_.integer_into(u.response_timeout_ms, 1, max_timeout_ms)},
        {"read_timeout_ms", false, r_.integer_into(u.read_timeout_ms, 1, max_timeout_ms)},
        {"write_timeout_ms", false, r_.integer_into(u.write_timeout_ms, 1, max_timeout_ms)},
        {"total_timeout_ms", false, r_.integer_into(u.total_timeout_ms, 0, max_timeout_ms)},
        {"retries", false, r_.integer_into(u.retries, 0, 10)},
        {"max_fails", false, r_.integer_into(u.max_fails, 0, 1000)},
        {"fail_timeout_ms", false, r_.integer_into(u.fail_timeout_ms, 1, max_timeout_ms)},
        {"when_all_down", false,
         enum_into(r_, u.when_all_down, unused, all_down_names, "when_all_down mode")},
        {"health_check_path", false,
         checked_string(
             r_, u.health_check_path, unused,
             [](std::string_view s) { return s.empty() || is_check_path(s); },
             "must be \"\" (no checks) or start with '/' and be at most 1024 bytes of visible "
             "ASCII without '#'")},
        {"health_check_interval_ms", false,
         r_.integer_into(u.health_check_interval_ms, 100, max_timeout_ms)},
        {"health_check_timeout_ms", false,
         r_.integer_into(u.health_check_timeout_ms, 1, max_timeout_ms)},
        {"health_check_host", false,
         checked_string(
             r_, u.health_check_host, unused,
             [](std::string_view s) { return s.empty() || is_host_header(s); },
             "must be \"\" (the server's address) or a host name with an optional :port")},
        {"server", false,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             servers_node = &v;
             return for_each_table(r_, v, k, "upstream.server",
                                   [&](const toml::table &st, const std::string &sk) {
                                       return read_server(st, sk, u, snodes);
                                   });
         }},
    };
    if (auto e = r_.walk(t, key, fields))
        return e;

    // Keys that only mean something in another mode: a likely misunderstanding.
    if (hash_key_node && u.balance != balance_mode::consistent_hash)
        return r_.at(*hash_key_node, join_key(key, "hash_key"),
                     "hash_key is only used with balance = \"consistent_hash\" (this upstream's "
                     "balance is \"" +
                         std::string(to_string(u.balance)) + "\")");
    if (shared_node && u.pool != pool_mode::shared)
        return r_.at(*shared_node, join_key(key, "shared_connections"),
                     "shared_connections is only used with pool = \"shared\" (this upstream's "
                     "pool is \"local\")");
    if (pick_node && u.pool != pool_mode::shared)
        return r_.at(*pick_node, join_key(key, "shared_pick"),
                     "shared_pick is only used with pool = \"shared\" (this upstream's "
                     "pool is \"local\")");
    if (max_idle_node && u.pool != pool_mode::local)
        return r_.at(*max_idle_node, join_key(key, "max_idle"),
                     "max_idle is only used with pool = \"local\" (this upstream's pool is "
                     "\"shared\")");
    if (u.servers.empty()) {
        const std::string k = join_key(key, "server");
        const std::string msg = "at least one [[upstream.server]] table is required";
        return servers_node ? r_.at(*servers_node, k, msg) : r_.at(t, k, msg);
    }
    for (size_t i = 0; i < u.servers.size(); ++i) {
        u.servers[i].slot = static_cast<uint16_t>(i);
        u.slots.push_back({u.servers[i].addr, u.servers[i].port});
    }
    u.slot_capacity = static_cast<uint32_t>(
        std::min<size_t>(u.servers.size() + server_slot_headroom, max_server_slots));
    cfg_.upstream_slot_capacity =
        static_cast<uint32_t>(cfg_.upstreams.size() + 1 + upstream_slot_headroom);
    cfg_.upstreams.push_back(std::move(u));
    upstream_name_nodes_.push_back(name_node);
    server_nodes_.push_back(std::move(snodes));
    return std::nullopt;
}

std::optional<error> proxy_reader::read_server(const toml::table &t, const std::string &key,
                                               upstream_config &u,
                                               std::vector<server_nodes> &nodes) {
    server_config s;
    s.where = r_.pos(t.source());
    if (u.servers.size() >= max_servers)
        return r_.at(t.source(), key,
                     "at most " + std::to_string(max_servers) + " servers per upstream");
    server_nodes sn;
    const reader::field fields[] = {
        {"address", true,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             auto text = r_.string(v, k);
             if (!text)
                 return text.error();
             const auto ep = parse_endpoint(*text);
             if (!ep)
                 return r_.at(v, k,
                              "expected a.b.c.d:port or [ipv6]:port, got '" + *text + "'");
             // A bracketed address is IPv6 as written (an IPv4-mapped one is refused).
             const bool bracketed = (*text)[0] == '[';
             if (auto why = bracketed ? unusable_host_reason6(ep->first.bytes())
                                      : unusable_host_reason(ep->first.v4_value()))
                 return r_.at(v, k,
                              ep->first.to_string() + " is not a usable host address (" +
                                  std::string(*why) + ")");
             for (size_t j = 0; j < u.servers.size(); ++j)
                 if (u.servers[j].addr == ep->first && u.servers[j].port == ep->second)
                     return r_.at(v, k,
                                  "duplicate server " + format_endpoint(ep->first, ep->second) +
                                      " (first listed at " + first_at(*nodes[j].address) + ")");
             s.addr = ep->first;
             s.port = ep->second;
             sn.address = &v;
             return std::nullopt;
         }},
        {"weight", false, r_.integer_into(s.weight, 1, 1000)},
    };
    if (auto e = r_.walk(t, key, fields))
        return e;
    u.servers.push_back(std::move(s));
    nodes.push_back(sn);
    return std::nullopt;
}

std::optional<error> proxy_reader::resolve_listener_port(listener_config &l,
                                                        const listener_nodes &nodes,
                                                        const std::string &key) const {
    if (!l.on.empty()) {
        l.port_index = index_of(cfg_.ports, l.on);
        if (l.port_index < 0)
            return r_.at(*nodes.on, join_key(key, "on"), unknown_name("port", l.on, cfg_.ports));
    }
    if (l.address != 0 || l.address6) {
        int at = -1;
        for (size_t i = 0; i < cfg_.ports.size(); ++i)
            if (l.address6 ? cfg_.ports[i].address6 == l.address6
                           : cfg_.ports[i].address == l.address)
                at = static_cast<int>(i);
        std::string ours;
        for (const port_config &p : cfg_.ports) {
            ours += (ours.empty() ? "" : ", ") + format_ipv4(p.address) + " (" + p.name + ")";
            if (p.address6) ours += ", " + format_ipv6(*p.address6) + " (" + p.name + ")";
        }
        const std::string text = l.address6 ? format_ipv6(*l.address6) : format_ipv4(l.address);
        if (at < 0)
            return r_.at(*nodes.address, join_key(key, "address"),
                         text + " is not the address of a [[port]]" +
                             (ours.empty() ? std::string() : ": " + ours));
        if (l.port_index >= 0 && l.port_index != at)
            return r_.at(*nodes.address, join_key(key, "address"),
                         text + " is port '" + cfg_.ports[at].name +
                             "'s address, but 'on' names port '" + l.on + "'");
        l.port_index = at;
    }
    return std::nullopt;
}

std::optional<error> proxy_reader::finish() {
    std::vector<error> errors;

    const tcp_test_config &tt = cfg_.tcp_test;
    const std::pair<uint16_t, std::string_view> test_ports[] = {
        {tt.echo_port, "tcp_test.echo_port"},
        {tt.discard_port, "tcp_test.discard_port"},
        {tt.source_port, "tcp_test.source_port"},
        {tt.relay_port, "tcp_test.relay_port"},
    };
    for (size_t i = 0; i < cfg_.listeners.size(); ++i) {
        listener_config &l = cfg_.listeners[i];
        const listener_nodes &nodes = listener_nodes_[i];
        const std::string key = index_key("listener", i);
        for (const auto &[port, name] : test_ports)
            if (port != 0 && port == l.port)
                errors.push_back(r_.at(
                    *nodes.port, join_key(key, "port"),
                    "port " + std::to_string(port) + " is already used by " + std::string(name)));
        if (auto e = resolve_listener_port(l, nodes, key))
            errors.push_back(std::move(*e));
        for (size_t j = 0; j < i; ++j) {
            const listener_config &o = cfg_.listeners[j];
            if (o.port == l.port &&
                (o.port_index < 0 || l.port_index < 0 || o.port_index == l.port_index))
                errors.push_back(r_.at(
                    *nodes.port, join_key(key, "port"),
                    "port " + std::to_string(l.port) + " is already used by listener '" + o.name +
                        "'" +
                        (o.port_index < 0 || l.port_index < 0
                             ? " (two listeners share a port number only when each is bound "
                               "to a different [[port]] with 'on' or 'address')"
                             : " on the same [[port]]")));
        }
        if (!l.default_upstream.empty()) {
            l.default_upstream_index = index_of(cfg_.upstreams, l.default_upstream);
            if (l.default_upstream_index < 0)
                errors.push_back(
                    r_.at(*nodes.default_upstream, join_key(key, "default_upstream"),
                          unknown_name("upstream", l.default_upstream, cfg_.upstreams)));
        }
    }

    for (size_t i = 0; i < cfg_.routes.size(); ++i) {
        route_config &rt = cfg_.routes[i];
        rt.id = static_cast<uint32_t>(i);  // a reload's carry_slots gives kept routes theirs
        const route_nodes &nodes = route_nodes_[i];
        const std::string key = index_key("route", i);
        if (!rt.listener.empty()) {
            rt.listener_index = index_of(cfg_.listeners, rt.listener);
            if (rt.listener_index < 0)
                errors.push_back(r_.at(*nodes.listener, join_key(key, "listener"),
                                       unknown_name("listener", rt.listener, cfg_.listeners)));
        }
        rt.upstream_index = index_of(cfg_.upstreams, rt.upstream);
        if (rt.upstream_index < 0)
            errors.push_back(r_.at(*nodes.upstream, join_key(key, "upstream"),
                                   unknown_name("upstream", rt.upstream, cfg_.upstreams)));
    }
    cfg_.route_ids = static_cast<uint32_t>(cfg_.routes.size());

    // Every server must be reachable: on a port's subnet, or through some port's gateway.
    const bool any_gateway =
        std::any_of(cfg_.ports.begin(), cfg_.ports.end(),
                    [](const port_config &p) { return p.gateway.has_value(); });
    for (size_t i = 0; i < cfg_.upstreams.size(); ++i) {
        const upstream_config &u = cfg_.upstreams[i];
        for (size_t j = 0; j < u.servers.size(); ++j) {
            const std::string key =
                join_key(index_key(join_key(index_key("upstream", i), "server"), j), "address");
            const toml::node &node = *server_nodes_[i][j].address;
            if (u.servers[j].addr.is_v6()) {
                if (auto why = ipv6_server_unreachable(cfg_.ports, u.servers[j].addr))
                    errors.push_back(r_.at(node, key, *why));
                continue;
            }
            const uint32_t a = u.servers[j].addr.v4_value();
            const std::string ip = format_ipv4(a);
            bool on_subnet = false;
            std::optional<std::string> why;
            for (const port_config &p : cfg_.ports) {
                const uint32_t mask = prefix_mask(p.prefix_len);
                if (a == p.address) {
                    why =
                        "server " + ip + " is the address of port '" + p.name + "' (ferry itself)";
                    break;
                }
                if ((a & mask) != (p.address & mask))
                    continue;
                on_subnet = true;
                // /31 and /32 have no network or broadcast address (as for ports).
                if (p.prefix_len <= 30 && (a & ~mask) == 0)
                    why = "server " + ip + " is the network address of " +
                          cidr_text(p.address, p.prefix_len) + " (port '" + p.name + "')";
                else if (p.prefix_len <= 30 && (a & ~mask) == ~mask)
                    why = "server " + ip + " is the broadcast address of " +
                          cidr_text(p.address, p.prefix_len) + " (port '" + p.name + "')";
                break;
            }
            if (!why && !on_subnet && !any_gateway)
                why = "server " + ip + " is on no port's subnet and no port has a gateway";
            if (why)
                errors.push_back(r_.at(node, key, *why));
        }
    }

    if (errors.empty())
        return std::nullopt;
    return *std::min_element(errors.begin(), errors.end(), [](const error &x, const error &y) {
        return x.where.line != y.where.line ? x.where.line < y.where.line
                                            : x.where.column < y.where.column;
    });
}

}  // namespace detail

std::string_view to_string(balance_mode m) {
    return balance_names[static_cast<size_t>(m)];
}

std::string_view to_string(hash_key_kind k) {
    return hash_key_names[static_cast<size_t>(k)];
}

std::string_view to_string(pool_mode m) {
    return pool_names[static_cast<size_t>(m)];
}

std::string_view to_string(shared_pick_mode m) {
    return shared_pick_names[static_cast<size_t>(m)];
}

std::string_view to_string(log_format f) {
    return log_format_names[static_cast<size_t>(f)];
}

std::string_view to_string(all_down_mode m) {
    return all_down_names[static_cast<size_t>(m)];
}

std::string format_endpoint(const ip_address &addr, uint16_t port) {
    return addr.endpoint_string(port);
}

std::string describe_route_timeouts(const route_config &r) {
    std::string t;
    auto one = [&](const char *name, uint32_t v) {
        if (v == route_config::inherit_timeout) return;
        t += std::string(t.empty() ? "" : ", ") + name + " " +
             (v == 0 ? std::string("off") : std::to_string(v) + " ms");
    };
    one("connect", r.connect_timeout_ms);
    one("response", r.response_timeout_ms);
    one("read", r.read_timeout_ms);
    one("write", r.write_timeout_ms);
    one("total", r.total_timeout_ms);
    return t;
}

std::string_view listener_where(const ferry_config &cfg, const listener_config &l) {
    return l.port_index < 0 ? std::string_view("*") : std::string_view(cfg.ports[l.port_index].name);
}

std::string describe_proxy(const ferry_config &c) {
    auto plural = [](size_t n, std::string_view one) {
        return std::to_string(n) + " " + std::string(one) + (n == 1 ? "" : "s");
    };
    auto ms = [](uint32_t v) { return std::to_string(v) + " ms"; };
    std::string out;
    if (c.listeners.empty()) {
        out += "proxy: off (no [[listener]])";
        if (!c.routes.empty() || !c.upstreams.empty())
            out += "; " + plural(c.routes.size(), "route") + " and " +
                   plural(c.upstreams.size(), "upstream") + " unused";
        return out + "\n";
    }
    out += "proxy: " + plural(c.listeners.size(), "listener") + ", " +
           plural(c.routes.size(), "route") + ", " + plural(c.upstreams.size(), "upstream") + "\n";

    const http_config &h = c.http;
    out += "http: client timeouts header " + ms(h.client_header_timeout_ms) + ", idle " +
           ms(h.client_idle_timeout_ms) + ", body " + ms(h.client_body_timeout_ms) +
           ", tunnel idle " + ms(h.tunnel_idle_timeout_ms) +
           "; max_pending_heads " +
           (h.max_pending_heads ? std::to_string(h.max_pending_heads) : std::string("auto")) +
           ", client_head_buffers " +
           (h.client_head_buffers ? std::to_string(h.client_head_buffers) : std::string("auto")) +
           ", max_requests_per_connection " +
           (h.max_requests_per_connection ? std::to_string(h.max_requests_per_connection)
                                          : std::string("unlimited")) +
           ", max_header_bytes " + std::to_string(h.max_header_bytes) + ", max_headers " +
           std::to_string(h.max_headers) + ", max_body_bytes " +
           (h.max_body_bytes ? std::to_string(h.max_body_bytes) : std::string("unlimited")) +
           ", drain " + ms(h.drain_timeout_ms) +
           (h.drain_grace_ms ? " after a grace of " + ms(h.drain_grace_ms) : std::string()) +
           ", via " + h.via + ", x-forwarded " +
           (h.add_x_forwarded ? "on" : "off") +
           (h.access_log.empty() ? std::string()
                                 : ", access_log " + h.access_log + " (" +
                                       std::string(to_string(h.access_log_format)) + ")") +
           "\n";

    for (const listener_config &l : c.listeners) {
        out += "listener " + l.name + ": port " + std::to_string(l.port) +
               (l.port_index >= 0 ? " on " + c.ports[l.port_index].name + " (" +
                                        format_ipv4(c.ports[l.port_index].address) + ")"
                                  : std::string(" on every port")) +
               ", max_connections " +
               (l.max_connections ? std::to_string(l.max_connections) + " per lcore"
                                  : std::string("[tcp] limit")) +
               ", default upstream " +
               (l.default_upstream.empty() ? std::string("none (404)") : l.default_upstream) + "\n";
    }
    for (size_t i = 0; i < c.routes.size(); ++i) {
        const route_config &r = c.routes[i];
        out += "route " + std::to_string(i) + ": listener " +
               (r.listener.empty() ? std::string("any") : r.listener) + ", host " +
               (r.host.empty() ? std::string("any") : (r.host_wildcard ? "*" : "") + r.host) +
               ", path_prefix " + r.path_prefix + " -> upstream " + r.upstream + "\n";
        if (r.own_timeouts())
            out += "  timeouts (the upstream's otherwise): " + describe_route_timeouts(r) + "\n";
        if (!r.request_headers.empty())
            out += "  request headers: " + describe_header_rules(r.request_headers) + "\n";
        if (!r.response_headers.empty())
            out += "  response headers: " + describe_header_rules(r.response_headers) + "\n";
    }
    for (const upstream_config &u : c.upstreams) {
        out += "upstream " + u.name + ": balance " + std::string(to_string(u.balance));
        if (u.balance == balance_mode::consistent_hash)
            out += " (hash_key " + std::string(to_string(u.hash_key)) + ")";
        out += ", pool " + std::string(to_string(u.pool));
        out += u.pool == pool_mode::shared
                   ? " (shared_connections " + std::to_string(u.shared_connections) +
                         ", shared_pick " + std::string(to_string(u.shared_pick)) + ")"
                   : " (max_idle " + std::to_string(u.max_idle) + ")";
        out += ", timeouts connect " + ms(u.connect_timeout_ms) + ", response " +
               ms(u.response_timeout_ms) + ", read " + ms(u.read_timeout_ms) + ", write " +
               ms(u.write_timeout_ms) + ", total " +
               (u.total_timeout_ms ? ms(u.total_timeout_ms) : std::string("off")) + "; retries " + std::to_string(u.retries) + ", max_fails " +
               (u.max_fails ? std::to_string(u.max_fails) + " (down " + ms(u.fail_timeout_ms) + ")"
                            : std::string("off")) +
               ", when all down " + std::string(to_string(u.when_all_down)) +
               ", health checks ";
        if (u.health_checks()) {
            out +=
                "GET " + u.health_check_path + " every " + ms(u.health_check_interval_ms) +
                ", timeout " + ms(u.health_check_timeout_ms) + ", host " +
                (u.health_check_host.empty() ? std::string("server address") : u.health_check_host);
        } else {
            out += "off";
        }
        out += "\n";
        for (const server_config &s : u.servers)
            out += "  server " + format_endpoint(s.addr, s.port) + " weight " +
                   std::to_string(s.weight) + "\n";
    }
    return out;
}

}  // namespace ferry::config
