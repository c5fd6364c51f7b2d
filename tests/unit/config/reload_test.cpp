// lib/config reload.h: what a reload may change in place, what needs a
// restart (each refusal at the new file's item, with its key), the change
// list the log shows, and the hash.
#include <gtest/gtest.h>

#include <string>

#include "ferry/config/reload.h"

namespace ferry::config {
namespace {

// Two ports, a listener, two routes and two upstreams of two servers each.
// Every test edits one line of it with `with()`.
constexpr std::string_view base = R"([ferry]
workers = 2
wakeup_mode = "conditional"

[[port]]
name = "a"
profile = "net_tap"
iface = "fa0"
address = "10.77.0.1/24"

[[port]]
name = "b"
profile = "net_tap"
iface = "fb0"
address = "10.78.0.1/24"

[http]
client_idle_timeout_ms = 60000
max_header_bytes = 8192

[[listener]]
name = "web"
port = 80

[[route]]
path_prefix = "/api/"
upstream = "api"
[route.response_headers]
set = { "X-Gen" = "1" }

[[route]]
path_prefix = "/"
upstream = "app"

[[upstream]]
name = "api"
[[upstream.server]]
address = "10.77.0.2:8080"
[[upstream.server]]
address = "10.77.0.3:8080"

[[upstream]]
name = "app"
[[upstream.server]]
address = "10.78.0.2:8080"
weight = 1
[[upstream.server]]
address = "10.78.0.3:8080"
)";

// base with `from` replaced by `to` (which must be there once).
std::string with(std::string_view from, std::string_view to) {
    std::string s(base);
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(s.find(from, at + 1), std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
}

// `from` (there) replaced by `to` in t.
void swap(std::string &t, std::string_view from, std::string_view to) {
    const size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
}

ferry_config load(const std::string &text) {
    auto r = parse(text, "ferry.toml");
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? std::move(r.value()) : ferry_config{};
}

std::vector<std::string> refusals(const std::string &next_text) {
    std::vector<std::string> out;
    for (const error &e : reload_refusals(load(std::string(base)), load(next_text)))
        out.push_back(e.to_string());
    return out;
}

// How a shared pool picks its connections is read per request: a reload
// changes it in place.
TEST(ConfigReload, SharedPickChangesInPlace) {
    const std::string shared = with("name = \"app\"\n[[upstream.server]]",
                                    "name = \"app\"\npool = \"shared\"\n[[upstream.server]]");
    std::string own = shared;
    swap(own, "pool = \"shared\"\n", "pool = \"shared\"\nshared_pick = \"own_idle_first\"\n");
    const ferry_config a = load(shared), b = load(own);
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(reload_changes(a, b),
              std::vector<std::string>{"upstream[1].shared_pick: \"round_robin\" -> \"own_idle_first\""});
}

TEST(ConfigReload, TheSameFileChangesNothing) {
    const ferry_config a = load(std::string(base)), b = load(std::string(base));
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_TRUE(reload_changes(a, b).empty());
}

TEST(ConfigReload, ValuesChangeInPlace) {
    struct edit {
        std::string_view from, to, change;
    };
    const edit edits[] = {
        {"wakeup_mode = \"conditional\"", "wakeup_mode = \"adaptive\"",
         "ferry.wakeup_mode: \"conditional\" -> \"adaptive\""},
        {"wakeup_mode = \"conditional\"", "wakeup_mode = \"conditional\"\nspin_yield_us = 0",
         "ferry.spin_yield_us: 20 -> 0"},
        {"client_idle_timeout_ms = 60000", "client_idle_timeout_ms = 5000",
         "http.client_idle_timeout_ms: 60000 -> 5000"},
        {"path_prefix = \"/api/\"", "path_prefix = \"/v2/\"",
         "route[0].path_prefix: \"/api/\" -> \"/v2/\""},
        {"upstream = \"app\"", "upstream = \"api\"", "route[1].upstream: \"app\" -> \"api\""},
        {"set = { \"X-Gen\" = \"1\" }", "set = { \"X-Gen\" = \"2\" }",
         "route[0].response_headers: [set X-Gen: 1] -> [set X-Gen: 2]"},
        {"weight = 1", "weight = 5", "upstream[1].server[0].weight: 1 -> 5"},
        {"name = \"app\"\n[[upstream.server]]", "name = \"app\"\nbalance = \"least_conn\"\n[[upstream.server]]",
         "upstream[1].balance: \"round_robin\" -> \"least_conn\""},
    };
    for (const edit &e : edits) {
        SCOPED_TRACE(std::string(e.to));
        const ferry_config a = load(std::string(base)), b = load(with(e.from, e.to));
        EXPECT_TRUE(reload_refusals(a, b).empty());
        EXPECT_EQ(reload_changes(a, b), std::vector<std::string>{std::string(e.change)});
    }
}

TEST(ConfigReload, WhatNeedsARestartIsRefusedAtItsItem) {
    // Each refusal names the file (and the item's line when it has a table)
    // and the key, and says the running configuration is kept.
    struct edit {
        std::string_view from, to, starts;
    };
    const edit edits[] = {
        {"workers = 2", "workers = 3", "ferry.toml: key 'ferry.workers': the number of workers changed"},
        {"address = \"10.78.0.1/24\"", "address = \"10.78.0.9/24\"",
         "ferry.toml:11:1: key 'port[1]': port 'b' changed"},
        {"max_header_bytes = 8192", "max_header_bytes = 16384",
         "ferry.toml: key 'http.max_header_bytes': max_header_bytes changed"},
    };
    for (const edit &e : edits) {
        SCOPED_TRACE(std::string(e.to));
        const std::vector<std::string> r = refusals(with(e.from, e.to));
        ASSERT_EQ(r.size(), 1u);
        EXPECT_EQ(r[0].rfind(e.starts, 0), 0u) << r[0];
        EXPECT_NE(r[0].find("the running configuration is kept"), std::string::npos) << r[0];
    }
}

TEST(ConfigReload, AddingOrRemovingItemsIsRefused) {
    // A third route (allowed: no shared pool), a server fewer (allowed: a
    // local pool), a [tcp] change (refused).
    std::string t = with("[[upstream]]\nname = \"api\"",
                         "[[route]]\npath_prefix = \"/new/\"\nupstream = \"api\"\n\n"
                         "[[upstream]]\nname = \"api\"");
    const size_t s = t.find("[[upstream.server]]\naddress = \"10.78.0.3:8080\"\n");
    ASSERT_NE(s, std::string::npos);
    t.erase(s);
    t += "\n[tcp]\ncongestion_control = \"bbr\"\n";
    const std::vector<std::string> r = refusals(t);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].find("key 'tcp': [tcp] changed"), std::string::npos) << r[0];
}

// The servers of next, as "address:port@slot", after carry_slots.
std::string slots_of(const ferry_config &next, size_t u) {
    std::string out;
    for (const server_config &s : next.upstreams[u].servers)
        out += (out.empty() ? "" : " ") + format_endpoint(s.addr, s.port) + "@" +
               std::to_string(s.slot);
    return out;
}

TEST(ConfigReload, ALocalPoolsServersMayBeAddedRemovedAndReordered) {
    // 'api' gets a third server first, loses 10.77.0.3 and keeps 10.77.0.2:
    // each kept server keeps its slot, the new one takes the next.
    const ferry_config a = load(std::string(base));
    EXPECT_EQ(slots_of(a, 0), "10.77.0.2:8080@0 10.77.0.3:8080@1");
    EXPECT_EQ(a.upstreams[0].slot_capacity, 2u + server_slot_headroom);
    std::string t = with("address = \"10.77.0.3:8080\"", "address = \"10.77.0.2:8080\"");
    const std::string_view first = "address = \"10.77.0.2:8080\"";
    t.replace(t.find(first), first.size(), "address = \"10.77.0.9:8080\"");
    ferry_config b = load(t);
    EXPECT_TRUE(carry_slots(a, b).empty());
    EXPECT_EQ(slots_of(b, 0), "10.77.0.9:8080@2 10.77.0.2:8080@0");
    EXPECT_EQ(slots_of(b, 1), "10.78.0.2:8080@0 10.78.0.3:8080@1");
    ASSERT_EQ(b.upstreams[0].slots.size(), 3u);
    EXPECT_EQ(b.upstreams[0].slots[1], (server_endpoint{a.upstreams[0].servers[1].addr, 8080}));
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(reload_changes(a, b),
              (std::vector<std::string>{"upstream[0].server[1] removed: 10.77.0.3:8080",
                                        "upstream[0].server[0] added: 10.77.0.9:8080",
                                        "upstream[0].server[0] is now server[1]: 10.77.0.2:8080"}));
    // The removed address comes back, in a third generation: its old slot.
    ferry_config c = load(std::string(base));
    EXPECT_TRUE(carry_slots(b, c).empty());
    EXPECT_EQ(slots_of(c, 0), "10.77.0.2:8080@0 10.77.0.3:8080@1");
    EXPECT_EQ(c.upstreams[0].slots.size(), 3u);  // 10.77.0.9's slot is kept
}

TEST(ConfigReload, ServerSlotsUpToTheCapacity) {
    // Each generation a new address for 'api''s second server: the 64 slots
    // of headroom last 64 reloads, the 65th is refused at its server.
    ferry_config run = load(std::string(base));
    for (unsigned i = 0; i < server_slot_headroom; ++i) {
        ferry_config next = load(with("address = \"10.77.0.3:8080\"",
                                      "address = \"10.77.0.3:" + std::to_string(9000 + i) + "\""));
        ASSERT_TRUE(carry_slots(run, next).empty()) << i;
        EXPECT_EQ(next.upstreams[0].servers[1].slot, 2 + i);
        run = std::move(next);
    }
    ferry_config last = load(with("address = \"10.77.0.3:8080\"", "address = \"10.77.0.3:7000\""));
    const std::vector<error> r = carry_slots(run, last);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].to_string().rfind("ferry.toml:39:1: key 'upstream[0].server[1]': server "
                                     "10.77.0.3:7000 of 'api' would be its server address number 67",
                                     0),
              0u)
        << r[0].to_string();
    EXPECT_NE(r[0].to_string().find("needs a restart"), std::string::npos);
}

// The listeners of next, as "name:port@slot".
std::string listeners_of(const ferry_config &c) {
    std::string out;
    for (const listener_config &l : c.listeners)
        out += (out.empty() ? "" : " ") + l.name + ":" + std::to_string(l.port) + "@" +
               std::to_string(l.slot);
    return out;
}

TEST(ConfigReload, ListenersMayBeAddedRemovedAndMoved) {
    // 'admin' added in front on 8081, 'web' moved to port 81: each kept
    // listener keeps its slot (its counters), the new one takes the next.
    const ferry_config a = load(std::string(base));
    EXPECT_EQ(listeners_of(a), "web:80@0");
    EXPECT_EQ(a.listener_slot_capacity, 1u + listener_slot_headroom);
    ferry_config b = load(with("[[listener]]\nname = \"web\"\nport = 80",
                               "[[listener]]\nname = \"admin\"\nport = 8081\n\n"
                               "[[listener]]\nname = \"web\"\nport = 81"));
    EXPECT_TRUE(carry_slots(a, b).empty());
    EXPECT_EQ(listeners_of(b), "admin:8081@1 web:81@0");
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(reload_changes(a, b),
              (std::vector<std::string>{"listener[0] added: 'admin' on port 8081",
                                        "listener[0] is now listener[1]: 'web'",
                                        "listener[1].port: 80 -> 81"}));
    // 'web' removed (routes that named it would not validate: none here);
    // then back, in its old slot.
    std::string t = with("[[listener]]\nname = \"web\"\nport = 80",
                         "[[listener]]\nname = \"admin\"\nport = 8081");
    ferry_config c = load(t);
    EXPECT_TRUE(carry_slots(b, c).empty());
    EXPECT_EQ(listeners_of(c), "admin:8081@1");
    EXPECT_EQ(reload_changes(b, c),
              (std::vector<std::string>{"listener[1] removed: 'web'"}));
    ferry_config d = load(std::string(base));
    EXPECT_TRUE(carry_slots(c, d).empty());
    EXPECT_EQ(listeners_of(d), "web:80@0");
    EXPECT_EQ(d.listener_slots, (std::vector<std::string>{"web", "admin"}));
}

TEST(ConfigReload, ListenerSlotsUpToTheCapacityAndNotFromNone) {
    ferry_config run = load(std::string(base));
    for (unsigned i = 0; i < listener_slot_headroom; ++i) {
        ferry_config next =
            load(with("name = \"web\"", "name = \"web" + std::to_string(i) + "\""));
        ASSERT_TRUE(carry_slots(run, next).empty()) << i;
        EXPECT_EQ(next.listeners[0].slot, 1 + i);
        run = std::move(next);
    }
    ferry_config last = load(with("name = \"web\"", "name = \"web99\""));
    const std::vector<error> r = carry_slots(run, last);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].to_string().rfind("ferry.toml:21:1: key 'listener[0]': listener 'web99' would "
                                     "be listener name number 18",
                                     0),
              0u)
        << r[0].to_string();
    // A ferry that started without listeners runs no proxy: none to add to.
    std::string none(base);
    none.erase(none.find("[[listener]]"), none.find("[[route]]") - none.find("[[listener]]"));
    const ferry_config n = load(none);
    ASSERT_TRUE(n.listeners.empty());
    const std::vector<error> r2 = reload_refusals(n, load(std::string(base)));
    ASSERT_EQ(r2.size(), 1u);
    EXPECT_NE(r2[0].to_string().find("key 'listener': ferry started without a [[listener]]"),
              std::string::npos)
        << r2[0].to_string();
}

TEST(ConfigReload, ASharedPoolsServersMayChangeAndKeepTheirSlots) {
    // A shared pool's connections are laid out by server slot: a server
    // replaced by another takes a new slot; one that stays keeps its own.
    const std::string shared_base = with("name = \"app\"\n[[upstream.server]]",
                                         "name = \"app\"\npool = \"shared\"\n[[upstream.server]]");
    const ferry_config a = load(shared_base);
    EXPECT_EQ(slots_of(a, 1), "10.78.0.2:8080@0 10.78.0.3:8080@1");
    std::string t = shared_base;
    swap(t, "10.78.0.3:8080", "10.78.0.4:8080");
    ferry_config b = load(t);
    ASSERT_TRUE(carry_slots(a, b).empty());
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(slots_of(b, 1), "10.78.0.2:8080@0 10.78.0.4:8080@2");
    // Its pool and connection count still need a restart.
    std::string u = shared_base;
    swap(u, "pool = \"shared\"", "pool = \"shared\"\nshared_connections = 3");
    ferry_config c = load(u);
    ASSERT_TRUE(carry_slots(a, c).empty());
    const std::vector<error> r = reload_refusals(a, c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].to_string().find("changed its pool (pool, shared_connections)"),
              std::string::npos)
        << r[0].to_string();
}

// The upstreams of `c` by slot: "name(servers)", "-name" for a retired one.
std::string upstreams_of(const ferry_config &c) {
    std::string out;
    for (const upstream_config &u : c.upstreams)
        out += (out.empty() ? "" : " ") + (u.retired ? "-" + u.name : u.name) + "(" +
               std::to_string(u.servers.size()) + ")";
    return out;
}

TEST(ConfigReload, UpstreamsMayBeAddedRemovedAndRenamed) {
    // 'api' is renamed 'edge' (one server fewer) and made the listener's
    // default: 'api' keeps its slot as a retired placeholder (its servers'
    // slots and last values, for requests in flight), 'edge' takes the next
    // slot, and every route and listener names its upstream by slot.
    const ferry_config a = load(std::string(base));
    EXPECT_EQ(upstreams_of(a), "api(2) app(2)");
    EXPECT_EQ(a.upstream_slot_capacity, 2u + upstream_slot_headroom);
    std::string t = with("[[upstream]]\nname = \"api\"\n[[upstream.server]]\naddress = \"10.77.0.2:8080\"\n",
                         "[[upstream]]\nname = \"edge\"\nretries = 3\n");
    swap(t, "upstream = \"api\"", "upstream = \"edge\"");
    swap(t, "port = 80\n", "port = 80\ndefault_upstream = \"edge\"\n");
    ferry_config b = load(t);
    ASSERT_EQ(upstreams_of(b), "edge(1) app(2)");  // the file's order
    EXPECT_TRUE(carry_slots(a, b).empty());
    EXPECT_EQ(upstreams_of(b), "-api(0) app(2) edge(1)");
    EXPECT_EQ(b.upstreams[0].slots, a.upstreams[0].slots);
    EXPECT_EQ(b.upstreams[0].response_timeout_ms, a.upstreams[0].response_timeout_ms);
    EXPECT_EQ(b.routes[0].upstream_index, 2);
    EXPECT_EQ(b.routes[1].upstream_index, 1);
    EXPECT_EQ(b.listeners[0].default_upstream_index, 2);
    EXPECT_EQ(b.upstreams[2].slot_capacity, added_upstream_server_slots);
    EXPECT_EQ(slots_of(b, 2), "10.77.0.3:8080@0");
    EXPECT_EQ(b.upstreams[2].retries, 3u);
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(reload_changes(a, b),
              (std::vector<std::string>{"listener[0].default_upstream: \"\" -> \"edge\"",
                                        "route[0].upstream: \"api\" -> \"edge\"",
                                        "upstream[0] removed: 'api'",
                                        "upstream[2] added: 'edge' with 1 server"}));
    // Back to the start: 'api' in its old slot with its old server slots,
    // 'edge' retired in its own.
    ferry_config c = load(std::string(base));
    EXPECT_TRUE(carry_slots(b, c).empty());
    EXPECT_EQ(upstreams_of(c), "api(2) app(2) -edge(0)");
    EXPECT_EQ(slots_of(c, 0), "10.77.0.2:8080@0 10.77.0.3:8080@1");
    EXPECT_EQ(c.routes[0].upstream_index, 0);
    EXPECT_EQ(c.routes[1].upstream_index, 1);
    EXPECT_TRUE(reload_refusals(b, c).empty());
    EXPECT_EQ(reload_changes(b, c),
              (std::vector<std::string>{"listener[0].default_upstream: \"edge\" -> \"\"",
                                        "route[0].upstream: \"edge\" -> \"api\"",
                                        "upstream[0] added: 'api' with 2 servers",
                                        "upstream[2] removed: 'edge'"}));
    // The same again changes nothing; a placeholder stays one.
    ferry_config d = load(std::string(base));
    EXPECT_TRUE(carry_slots(c, d).empty());
    EXPECT_EQ(upstreams_of(d), "api(2) app(2) -edge(0)");
    EXPECT_TRUE(reload_changes(c, d).empty());
}

TEST(ConfigReload, UpstreamSlotsAndAnAddedUpstreamsServersUpToTheCapacity) {
    // Each generation renames 'app': a new name takes a new slot, up to the
    // headroom; the next is refused at its upstream.
    ferry_config run = load(std::string(base));
    for (unsigned i = 0; i < upstream_slot_headroom; ++i) {
        const std::string name = "app" + std::to_string(i);
        std::string t = with("name = \"app\"", "name = \"" + name + "\"");
        swap(t, "upstream = \"app\"", "upstream = \"" + name + "\"");
        ferry_config next = load(t);
        ASSERT_TRUE(carry_slots(run, next).empty()) << i;
        ASSERT_EQ(next.upstreams.size(), 3u + i);
        EXPECT_EQ(next.upstreams.back().name, name);
        EXPECT_EQ(next.routes[1].upstream_index, static_cast<int>(2 + i));
        run = std::move(next);
    }
    std::string t = with("name = \"app\"", "name = \"app99\"");
    swap(t, "upstream = \"app\"", "upstream = \"app99\"");
    ferry_config last = load(t);
    const std::vector<error> r = carry_slots(run, last);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].to_string().rfind("ferry.toml:42:1: key 'upstream[1]': upstream 'app99' would "
                                     "be upstream name number 19 since ferry started, more than "
                                     "the 18 it has room for",
                                     0),
              0u)
        << r[0].to_string();
    // An added upstream has added_upstream_server_slots server slots.
    std::string servers;
    for (unsigned i = 0; i <= added_upstream_server_slots; ++i)
        servers += "[[upstream.server]]\naddress = \"10.77.0." + std::to_string(10 + i) + ":80\"\n";
    ferry_config big = load(std::string(base) + "\n[[upstream]]\nname = \"big\"\n" + servers);
    const std::vector<error> r2 = carry_slots(load(std::string(base)), big);
    ASSERT_EQ(r2.size(), 1u);
    EXPECT_NE(r2[0].to_string().find("server 10.77.0.42:80 of 'big' would be its server address "
                                     "number 33 since a reload added it, more than the 32"),
              std::string::npos)
        << r2[0].to_string();
}

// base, plus an upstream 'more' with a shared pool.
std::string plain_with_shared_more() {
    return std::string(base) + "\n[[upstream]]\nname = \"more\"\npool = \"shared\"\n"
                               "[[upstream.server]]\naddress = \"10.77.0.7:80\"\n";
}

TEST(ConfigReload, ASharedPoolUpstreamMayBeAddedRemovedAndRenamed) {
    const std::string shared_base = with("name = \"app\"\n[[upstream.server]]",
                                         "name = \"app\"\npool = \"shared\"\n[[upstream.server]]");
    // 'app' (shared) renamed: removed (a retired placeholder keeps its slot
    // and pool) and added in a slot of its own.
    std::string t = shared_base;
    swap(t, "name = \"app\"", "name = \"ap2\"");
    swap(t, "upstream = \"app\"", "upstream = \"ap2\"");
    const ferry_config a = load(shared_base);
    ferry_config b = load(t);
    ASSERT_TRUE(carry_slots(a, b).empty());
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(upstreams_of(b), "api(2) -app(0) ap2(2)");
    EXPECT_EQ(b.upstreams[1].pool, pool_mode::shared);
    // 'app' back, with the pool it had: its old slot.
    ferry_config c = load(shared_base);
    ASSERT_TRUE(carry_slots(b, c).empty());
    EXPECT_TRUE(reload_refusals(b, c).empty());
    // Back with another pool, or another number of connections: a restart
    // (each worker laid out its slot's connections).
    std::string local = shared_base;
    swap(local, "pool = \"shared\"\n", "");
    ferry_config d = load(local);
    ASSERT_TRUE(carry_slots(b, d).empty());
    std::vector<std::string> r;
    for (const error &e : reload_refusals(b, d)) r.push_back(e.to_string());
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].find("key 'upstream[1].pool': upstream 'app' comes back with another pool "
                        "(pool, shared_connections) than it had: needs a restart"),
              std::string::npos)
        << r[0];
    // A ferry that started without a shared pool gets none by reload.
    const ferry_config plain = load(std::string(base));
    ferry_config e = load(plain_with_shared_more());
    ASSERT_TRUE(carry_slots(plain, e).empty());
    r.clear();
    for (const error &x : reload_refusals(plain, e)) r.push_back(x.to_string());
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].find("upstream 'more' is added with a shared pool to a ferry that started "
                        "without one: needs a restart"),
              std::string::npos)
        << r[0];
}

TEST(ConfigReload, RoutesMayBeAddedRemovedAndReordered) {
    // A new route first, /api/ moved to second, "/" removed.
    const std::string next = with(R"([[route]]
path_prefix = "/api/"
upstream = "api"
[route.response_headers]
set = { "X-Gen" = "1" }

[[route]]
path_prefix = "/"
upstream = "app"
)", R"([[route]]
path_prefix = "/new/"
upstream = "app"

[[route]]
path_prefix = "/api/"
upstream = "api"
[route.response_headers]
set = { "X-Gen" = "1" }
)");
    const ferry_config a = load(std::string(base)), b = load(next);
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(route_map(a, b), (std::vector<int>{1, -1}));
    EXPECT_EQ(reload_changes(a, b),
              (std::vector<std::string>{"route[0] is now route[1]: /api/ -> api",
                                        "route[1] removed: / -> app",
                                        "route[0] added: /new/ -> app"}));
    // A route edited in place keeps its position (and its requests).
    const ferry_config c = load(with("path_prefix = \"/\"\n", "path_prefix = \"/v2/\"\n"));
    EXPECT_EQ(route_map(a, c), (std::vector<int>{0, 1}));
}

// The routes' ids, in order, after carry_slots.
std::vector<uint32_t> route_ids(const ferry_config &c) {
    std::vector<uint32_t> ids;
    for (const route_config &r : c.routes) ids.push_back(r.id);
    return ids;
}

TEST(ConfigReload, RoutesKeepTheirIdsAndMayChangeWithASharedPool) {
    // A request handed to another lcore's shared connection carries its
    // route's id: routes may be added, removed and reordered with a shared
    // pool too, and each keeps its id; a new one takes the next unused.
    const std::string shared_base = with("name = \"app\"\n[[upstream.server]]",
                                         "name = \"app\"\npool = \"shared\"\n[[upstream.server]]");
    const ferry_config a = load(shared_base);
    EXPECT_EQ(route_ids(a), (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(a.route_ids, 2u);
    std::string t = shared_base;
    t.insert(t.find("[[route]]"), "[[route]]\npath_prefix = \"/new/\"\nupstream = \"app\"\n\n");
    ferry_config b = load(t);
    ASSERT_TRUE(carry_slots(a, b).empty());
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(route_ids(b), (std::vector<uint32_t>{2, 0, 1}));
    EXPECT_EQ(b.route_ids, 3u);
    // The first route removed, /new/ kept: ids are not reused.
    std::string u = t;
    const size_t api = u.find("[[route]]", u.find("[[route]]") + 1);
    u.erase(api, u.find("[[route]]", api + 1) - api);
    ferry_config c = load(u);
    ASSERT_TRUE(carry_slots(b, c).empty());
    EXPECT_TRUE(reload_refusals(b, c).empty());
    ASSERT_EQ(c.routes.size(), 2u);
    EXPECT_EQ(route_ids(c), (std::vector<uint32_t>{2, 1}));
    std::string v = u;
    v.insert(v.find("[[route]]"), "[[route]]\npath_prefix = \"/newer/\"\nupstream = \"app\"\n\n");
    ferry_config d = load(v);
    ASSERT_TRUE(carry_slots(c, d).empty());
    EXPECT_EQ(route_ids(d), (std::vector<uint32_t>{3, 2, 1}));
    // Past max_routes ids since start: a restart.
    ferry_config run = c;
    run.route_ids = static_cast<uint32_t>(max_routes);
    ferry_config last = load(v);
    const std::vector<error> r = carry_slots(run, last);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].to_string().find("more than the 2046 it has room for: needs a restart"),
              std::string::npos)
        << r[0].to_string();
}

TEST(ConfigReload, RoutesUpToTheCapacity) {
    const ferry_config a = load(std::string(base));
    ferry_config b = a;
    b.routes.push_back(b.routes.back());
    b.routes.back().path_prefix = "/more/";
    EXPECT_TRUE(reload_refusals(a, b, route_capacity(2)).empty());
    const std::vector<error> r = reload_refusals(a, b, 2);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].to_string().find("3 [[route]]s, more than the 2 this ferry has room for"),
              std::string::npos)
        << r[0].to_string();
    EXPECT_EQ(route_capacity(2), 66u);
    EXPECT_EQ(route_capacity(max_routes), max_routes);
}

TEST(ConfigReload, TheAccessLogFormatChangesThePathNeedsARestart) {
    const std::string_view http = "[http]\n";
    const std::string logged = with(http, "[http]\naccess_log = \"/tmp/a.log\"\n");
    const ferry_config a = load(logged);
    std::string json = logged;
    swap(json, "access_log = \"/tmp/a.log\"\n",
         "access_log = \"/tmp/a.log\"\naccess_log_format = \"json\"\n");
    ferry_config b = load(json);
    EXPECT_TRUE(reload_refusals(a, b).empty());
    EXPECT_EQ(reload_changes(a, b),
              (std::vector<std::string>{"http.access_log_format: \"combined\" -> \"json\""}));
    ferry_config c = load(with(http, "[http]\naccess_log = \"/tmp/b.log\"\n"));
    const std::vector<error> r = reload_refusals(a, c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].to_string().find("key 'http.access_log': access_log changed: needs a restart"),
              std::string::npos)
        << r[0].to_string();
}

TEST(ConfigReload, ChangeListIsCapped) {
    const ferry_config a = load(std::string(base));
    ferry_config b = a;
    b.http.client_idle_timeout_ms = 1;
    b.http.client_body_timeout_ms = 2;
    b.http.client_header_timeout_ms = 3;
    const std::vector<std::string> c = reload_changes(a, b, 2);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[2], "... and 1 more");
}

TEST(ConfigReload, HashIsFnv1a64) {
    EXPECT_EQ(config_hash(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(config_hash("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_NE(config_hash(base), config_hash(with("workers = 2", "workers = 3")));
}

}  // namespace
}  // namespace ferry::config
