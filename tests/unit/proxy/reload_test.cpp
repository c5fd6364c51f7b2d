// worker_proxy::reconfigure (issue 18): a reloaded configuration of the same
// shape takes over between two polls: new header rules, a route's new match,
// active health checks started, while a request in flight and the idle
// upstream connection carry on (no reset, no new connection).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

#include "bed.h"
#include "ferry/config/reload.h"
#include "ferry/proxy/balance.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view ok_resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// A route for /a/ whose responses get X-Gen: `gen`; `upstream_lines` go into
// the upstream (health checks).
std::string route_text(std::string_view gen, std::string_view prefix = "/a/") {
    return "\n[[route]]\npath_prefix = \"" + std::string(prefix) +
           "\"\nupstream = \"o\"\n[route.response_headers]\nset = { \"X-Gen\" = \"" +
           std::string(gen) + "\" }\n";
}

std::string config_gen(std::string_view gen, std::string_view prefix = "/a/",
                       std::string_view upstream_lines = "") {
    return bed_config("", upstream_lines, route_text(gen, prefix));
}

config::ferry_config parsed(const std::string &toml) {
    auto r = config::parse(toml, "next.toml");
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? std::move(*r) : config::ferry_config{};
}

// One GET of `path` on client `cl`, answered by the origin connection `o`;
// returns what the client received (and clears it).
std::string get(proxy_bed &bed, size_t cl, std::string_view path) {
    bed.send(cl, "GET " + std::string(path) + " HTTP/1.1\r\nHost: h\r\n\r\n");
    peer_conn *o = bed.origin(bed.origin_count() - 1);
    EXPECT_NE(o, nullptr);
    if (o == nullptr) return "";
    o->rx.clear();
    bed.send(*o, ok_resp);
    std::string got = bed.conn(cl).rx;
    bed.conn(cl).rx.clear();
    return got;
}

TEST(Reload, NewRulesAndRoutesTakeOverBetweenPolls) {
    const config::ferry_config next = parsed(config_gen("2", "/b/"));  // outlives the bed
    bed_options o;
    o.toml = config_gen("1");
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    EXPECT_NE(get(bed, cl, "/a/x").find("\r\nX-Gen: 1\r\n"), std::string::npos);

    bed.proxy().reconfigure(next, bed.now());
    EXPECT_EQ(&bed.proxy().configuration(), &next);
    // /a/ no longer matches the route (default upstream, no rule); /b/ does.
    EXPECT_EQ(get(bed, cl, "/a/x").find("X-Gen"), std::string::npos);
    EXPECT_NE(get(bed, cl, "/b/x").find("\r\nX-Gen: 2\r\n"), std::string::npos);
    EXPECT_EQ(bed.ctr().reconfigured.get(), 1u);
    // One client connection, one origin connection, reused throughout.
    EXPECT_EQ(bed.origin_count(), 1u);
    EXPECT_EQ(bed.ctr().upstream_reused.get(), 2u);
    EXPECT_EQ(bed.ctr().responses_2xx.get(), 3u);
    bed.close(cl);
    bed.advance(200 * ms);
}

TEST(Reload, RequestInFlightFinishes) {
    const config::ferry_config next = parsed(config_gen("2"));
    bed_options o;
    o.toml = config_gen("1");
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /a/x HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(bed.origin_count(), 1u);
    peer_conn &org = *bed.origin();
    ASSERT_TRUE(org.rx.starts_with("GET /a/x HTTP/1.1\r\n")) << org.rx;
    // The reload lands while the origin is still answering.
    bed.proxy().reconfigure(next, bed.now());
    bed.pump();
    bed.send(org, ok_resp);
    const std::string got = bed.conn(cl).rx;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
    EXPECT_TRUE(got.ends_with("\r\n\r\nok")) << got;
    EXPECT_FALSE(bed.conn(cl).closed);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    EXPECT_EQ(bed.ctr().client_aborted.get(), 0u);
    bed.close(cl);
    bed.advance(200 * ms);
}

TEST(Reload, ARouteAddedInFrontLeavesRequestsInFlightUnderTheirConfigurationAndMovesCounts) {
    // /z/ added before /a/: /a/ moves from position 0 to 1. A request of /a/
    // in flight finishes under the configuration it started with (/a/'s
    // rule then: X-Gen 1, not the reload's 7, nor /z/'s); /a/'s counts move
    // with it.
    const std::string front = "\n[[route]]\npath_prefix = \"/z/\"\nupstream = \"o\"\n"
                              "[route.response_headers]\nset = { \"X-Z\" = \"1\" }\n";
    const config::ferry_config next = parsed(bed_config("", "", front + route_text("7")));
    ASSERT_EQ(next.routes.size(), 2u);
    ASSERT_EQ(next.routes[1].path_prefix, "/a/");
    bed_options o;
    o.toml = config_gen("1");
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    EXPECT_NE(get(bed, cl, "/a/x").find("\r\nX-Gen: 1\r\n"), std::string::npos);
    EXPECT_EQ(bed.proxy().route_responses(0, 0, 2), 1u);
    bed.send(cl, "GET /a/y HTTP/1.1\r\nHost: h\r\n\r\n");
    peer_conn &org = *bed.origin();
    bed.proxy().reconfigure(next, bed.now());
    EXPECT_EQ(bed.proxy().route_responses(0, 1, 2), 1u);  // /a/'s count moved to position 1
    EXPECT_EQ(bed.proxy().route_responses(0, 0, 2), 0u);  // /z/ starts from nothing
    bed.send(org, ok_resp);
    const std::string got = bed.conn(cl).rx;
    bed.conn(cl).rx.clear();
    EXPECT_NE(got.find("\r\nX-Gen: 1\r\n"), std::string::npos) << got;  // its start's rule
    EXPECT_EQ(got.find("X-Z"), std::string::npos) << got;
    EXPECT_EQ(bed.proxy().route_responses(0, 1, 2), 2u);
    EXPECT_NE(get(bed, cl, "/a/x").find("\r\nX-Gen: 7\r\n"), std::string::npos);
    EXPECT_NE(get(bed, cl, "/z/x").find("\r\nX-Z: 1\r\n"), std::string::npos);
    EXPECT_EQ(bed.proxy().route_responses(0, 0, 2), 1u);
    bed.close(cl);
    bed.advance(200 * ms);
}

TEST(Reload, RequestsInFlightFinishUnderTheConfigurationTheyStartedWith) {
    // Before: /a/ sets X-Gen 1 and a request body may pause 10 s. The
    // reload removes /a/ (its requests would be nobody's: no rule) and
    // allows 100 ms. A POST of /a/ started before, its body paused for 500
    // ms after the reload, still goes through and gets X-Gen 1; the next
    // request runs under the reload's limits (408 after 100 ms).
    const config::ferry_config next = parsed(bed_config("client_body_timeout_ms = 100\n", "",
                                                        route_text("2", "/b/")));
    bed_options o;
    o.toml = bed_config("client_body_timeout_ms = 10000\n", "", route_text("1"));
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, "POST /a/x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345");
    ASSERT_EQ(bed.origin_count(), 1u);
    peer_conn &org = *bed.origin();
    EXPECT_EQ(bed.proxy().configurations_held(), 1u);
    bed.proxy().reconfigure(next, bed.now());
    EXPECT_EQ(bed.proxy().configurations_held(), 2u) << "the first is kept for the POST";
    bed.send(cl, "67");
    bed.advance(500 * ms);
    EXPECT_EQ(bed.ctr().timeouts_body.get(), 0u);
    bed.send(cl, "890");
    EXPECT_TRUE(org.rx.ends_with("\r\n\r\n1234567890")) << org.rx;
    org.rx.clear();
    bed.send(org, ok_resp);
    std::string got = bed.conn(cl).rx;
    bed.conn(cl).rx.clear();
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
    EXPECT_NE(got.find("\r\nX-Gen: 1\r\n"), std::string::npos) << got;
    // The next request on the same connection: the reload's configuration,
    // and the first one is let go.
    EXPECT_NE(get(bed, cl, "/b/x").find("\r\nX-Gen: 2\r\n"), std::string::npos);
    EXPECT_EQ(bed.proxy().configurations_held(), 1u);
    bed.send(cl, "POST /b/y HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345");
    bed.advance(200 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 408 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_body.get(), 1u);
    bed.close(cl);
    bed.advance(200 * ms);
}

TEST(Reload, AConfigurationIsLetGoWhenItsLastClientCloses) {
    // Three reloads while one request waits for its origin: the two in the
    // middle have no request and go at once; the first goes when the
    // client does (a keep-alive client holds it until its next request).
    const config::ferry_config a = parsed(config_gen("2")), b = parsed(config_gen("3")),
                               c = parsed(config_gen("4"));
    bed_options o;
    o.toml = config_gen("1");
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /a/x HTTP/1.1\r\nHost: h\r\n\r\n");
    for (const config::ferry_config *n : {&a, &b, &c}) bed.proxy().reconfigure(*n, bed.now());
    EXPECT_EQ(bed.proxy().configurations_held(), 2u);
    bed.send(*bed.origin(), ok_resp);
    EXPECT_NE(bed.conn(cl).rx.find("\r\nX-Gen: 1\r\n"), std::string::npos) << bed.conn(cl).rx;
    EXPECT_EQ(bed.proxy().configurations_held(), 2u) << "kept until its next request or close";
    bed.close(cl);
    bed.advance(200 * ms);
    EXPECT_EQ(bed.proxy().configurations_held(), 1u);
    EXPECT_EQ(&bed.proxy().configuration(), &c);
}

// The route id (xf_route) of the last request head handed to worker 1, after
// sending GETs of `path` on fresh clients until one is handed over; -3 if
// none was within 4 tries.
int handed_route(proxy_bed &bed, taking_peer &peer, std::string_view path,
                 std::vector<size_t> &clients) {
    for (int i = 0; i < 4; ++i) {
        const size_t before = peer.got.size();
        const size_t cl = bed.connect();
        clients.push_back(cl);
        bed.send(cl, "GET " + std::string(path) + " HTTP/1.1\r\nHost: h\r\n\r\n");
        for (size_t k = before; k < peer.got.size(); ++k)
            if (peer.got[k].opcode == op_req_head) return route_of_flags(peer.got[k].flags);
    }
    return -3;
}

TEST(Reload, AHandedOverRequestCarriesItsRoutesIdWhichAReloadDoesNotChange) {
    // A shared pool with one connection per worker: requests alternate
    // between worker 0's and a hand-over to worker 1. /a/ is route 0 (id 0);
    // a reload adds /z/ in front: /a/ is at position 1 now, still id 0, and
    // /z/ has id 1. Worker 1 finds the route by id whatever its positions.
    const std::string shared = "pool = \"shared\"\nshared_connections = 2\nmax_fails = 0\n";
    const config::ferry_config first = parsed(bed_config("", shared, route_text("1")));
    config::ferry_config next = parsed(bed_config(
        "", shared, "\n[[route]]\npath_prefix = \"/z/\"\nupstream = \"o\"\n" + route_text("7")));
    ASSERT_TRUE(config::carry_slots(first, next).empty());
    ASSERT_TRUE(config::reload_refusals(first, next).empty());
    ASSERT_EQ(next.routes[1].id, 0u);
    ASSERT_EQ(next.routes[0].id, 1u);
    taking_peer peer;
    bed_options o;
    o.toml = bed_config("", shared, route_text("1"));
    o.workers = 2;
    o.send = &taking_peer::send;
    o.send_ctx = &peer;
    {
        proxy_bed bed(o);
        std::vector<size_t> clients;
        EXPECT_EQ(handed_route(bed, peer, "/a/x", clients), 0);
        bed.proxy().reconfigure(next, bed.now());
        EXPECT_EQ(handed_route(bed, peer, "/a/y", clients), 0) << "/a/'s id, not its position 1";
        EXPECT_EQ(handed_route(bed, peer, "/z/y", clients), 1);
        EXPECT_EQ(handed_route(bed, peer, "/other", clients), route_default);
        for (size_t cl : clients) bed.reset(bed.conn(cl));
        peer.drop();  // before the bed counts mbufs
        bed.advance(200 * ms);
    }
}

TEST(Reload, ASharedPoolsServerReplacedClosesItsIdleConnectionAndTheNewOneServes) {
    // Shared connections are laid out by server slot: :8080 (slot 0) is
    // replaced by :8081 (slot 1). Worker 0's idle connection to :8080
    // closes with the reload; its next request opens one to :8081.
    taking_peer peer;
    const std::string shared = "pool = \"shared\"\nshared_connections = 2\nmax_fails = 0\n";
    const config::ferry_config first = parsed(bed_config("", shared));
    std::string t = bed_config("", shared);
    t.replace(t.find("10.0.0.2:8080"), 13, "10.0.0.2:8081");
    config::ferry_config next = parsed(t);
    ASSERT_TRUE(config::carry_slots(first, next).empty());
    ASSERT_TRUE(config::reload_refusals(first, next).empty());
    ASSERT_EQ(next.upstreams[0].servers[0].slot, 1u);
    bed_options o;
    o.toml = bed_config("", shared);
    o.workers = 2;
    o.send = &taking_peer::send;
    o.send_ctx = &peer;
    o.origin_ports = {8080, 8081};
    {
        proxy_bed bed(o);
        std::vector<size_t> clients;
        // GETs on fresh clients until one takes worker 0's own connection
        // (the others are handed to worker 1 and left there).
        auto local_get = [&]() -> peer_conn * {
            for (int i = 0; i < 4; ++i) {
                const size_t before = bed.origin_count();
                const size_t cl = bed.connect();
                clients.push_back(cl);
                bed.send(cl, simple_get);
                for (size_t k = 0; k < bed.origin_count(); ++k)
                    if (!bed.origin(k)->closed && !bed.origin(k)->rx.empty()) {
                        peer_conn *org = bed.origin(k);
                        org->rx.clear();
                        bed.send(*org, ok5);
                        EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
                        return org;
                    }
                (void)before;
            }
            return nullptr;
        };
        peer_conn *old = local_get();
        ASSERT_NE(old, nullptr);
        EXPECT_EQ(old->port, 8080);
        bed.proxy().reconfigure(next, bed.now());
        bed.pump();
        EXPECT_EQ(bed.ctr().upstream_retired.get(), 1u);
        EXPECT_TRUE(old->fin || old->closed) << "the removed server's idle connection closes";
        peer_conn *fresh = local_get();
        ASSERT_NE(fresh, nullptr);
        EXPECT_EQ(fresh->port, 8081);
        for (size_t cl : clients) bed.reset(bed.conn(cl));
        peer.drop();  // before the bed counts mbufs
        bed.advance(200 * ms);
    }
}

TEST(Reload, ASharedUpstreamAddedServesAndARequestHandedOverForItBeforeThisWorkersReloadWaits) {
    // 'o' is shared (2 connections: worker 0 owns k = 0, worker 1 k = 1),
    // laid out in slots 0..129 (65 server slots x 2). A reload adds 's2'
    // (shared, one server :8081) behind /s2/: its slots follow, from 130.
    // Worker 1 took the reload first and hands worker 0 a request for slot
    // 130 before worker 0 has: it waits, and goes to :8081 when worker 0
    // takes the reload; worker 0's own /s2/ requests are served too.
    taking_peer peer;
    const std::string shared = "pool = \"shared\"\nshared_connections = 2\nmax_fails = 0\n";
    const std::string s2 = "\n[[route]]\npath_prefix = \"/s2/\"\nupstream = \"s2\"\n"
                           "\n[[upstream]]\nname = \"s2\"\npool = \"shared\"\n"
                           "shared_connections = 2\n  [[upstream.server]]\n"
                           "  address = \"10.0.0.2:8081\"\n";
    const config::ferry_config first = parsed(bed_config("", shared));
    config::ferry_config next = parsed(bed_config("", shared, s2));
    ASSERT_TRUE(config::carry_slots(first, next).empty());
    ASSERT_TRUE(config::reload_refusals(first, next).empty());
    ASSERT_EQ(next.upstreams.size(), 2u);
    bed_options o;
    o.toml = bed_config("", shared);
    o.workers = 2;
    o.send = &taking_peer::send;
    o.send_ctx = &peer;
    o.origin_ports = {8080, 8081};
    {
        proxy_bed bed(o);
        // Worker 1's client slot 3 asks for slot 130 (s2's server 0, k 0).
        const std::string head = "GET /s2/x HTTP/1.1\r\nHost: h\r\nVia: 1.1 ferry\r\n\r\n";
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(head.size())), head.data(),
                    head.size());
        xcore::message req{};
        req.mbuf = m;
        req.handle = xcore::conn_handle{1, 7, 3}.pack();
        req.opcode = op_req_head;
        req.flags = xf_end | xf_keep_alive;
        req.arg = 130;
        bed.proxy().on_message(1, req, bed.now());
        bed.pump();
        EXPECT_EQ(bed.ctr().shared_waiting_reload.get(), 1u);
        EXPECT_EQ(bed.origin_count(), 0u) << "nothing opened before the reload";
        bed.proxy().reconfigure(next, bed.now());
        bed.pump();
        ASSERT_EQ(bed.origin_count(), 1u);
        peer_conn &org = *bed.origin(0);
        EXPECT_EQ(org.port, 8081);
        EXPECT_TRUE(org.rx.starts_with("GET /s2/x HTTP/1.1\r\n")) << org.rx;
        org.rx.clear();
        bed.send(org, ok5);
        bool answered = false;
        for (const auto &x : peer.got)
            answered = answered || (x.opcode == op_resp_end && x.handle == req.handle);
        EXPECT_TRUE(answered) << "the response went back to worker 1";
        // Worker 0's own requests for /s2/: on its k = 0 connection.
        const size_t cl = bed.connect();
        bed.send(cl, "GET /s2/y HTTP/1.1\r\nHost: h\r\n\r\n");
        if (!org.rx.empty()) {
            org.rx.clear();
            bed.send(org, ok5);
            EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << bed.conn(cl).rx;
        }
        bed.reset(bed.conn(cl));
        peer.drop();  // before the bed counts mbufs
        bed.advance(200 * ms);
    }
}

TEST(Reload, HealthChecksStartAndStop) {
    const config::ferry_config checks =
        parsed(config_gen("1", "/a/", "health_check_path = \"/health\"\n"));
    const config::ferry_config none = parsed(config_gen("1"));
    bed_options o;
    o.toml = config_gen("1");
    proxy_bed bed(o);
    bed.advance(3000 * ms);
    EXPECT_EQ(bed.ctr().health_checks.get(), 0u);
    bed.proxy().reconfigure(checks, bed.now());
    bed.advance(200 * ms);
    EXPECT_EQ(bed.ctr().health_checks.get(), 1u);
    ASSERT_GE(bed.origin_count(), 1u);
    peer_conn &hc = *bed.origin(bed.origin_count() - 1);
    EXPECT_TRUE(hc.rx.starts_with("GET /health HTTP/1.1\r\n")) << hc.rx;
    bed.send(hc, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    bed.close(hc);
    bed.advance(100 * ms);
    bed.proxy().reconfigure(none, bed.now());
    const uint64_t sent = bed.ctr().health_checks.get();
    bed.advance(5000 * ms);
    EXPECT_EQ(bed.ctr().health_checks.get(), sent);
}

TEST(Reload, ListenersAddedAndRemoved) {
    // 'alt' on port 81 added; then 'web' (port 80) removed: its connection
    // open at the reload goes on being served, a new one is refused (reset),
    // and its counters stay in its slot.
    const std::string alt = "\n[[listener]]\nname = \"alt\"\nport = 81\ndefault_upstream = \"o\"\n";
    const config::ferry_config first = parsed(bed_config());
    config::ferry_config both = parsed(bed_config("", "", alt));
    ASSERT_TRUE(config::carry_slots(first, both).empty());
    std::string only_alt = bed_config("", "", alt);
    const std::string_view web = "\n[[listener]]\nname = \"web\"\nport = 80\ndefault_upstream = \"o\"\n";
    ASSERT_NE(only_alt.find(web), std::string::npos);
    only_alt.erase(only_alt.find(web), web.size());
    config::ferry_config alt_only = parsed(only_alt);
    ASSERT_TRUE(config::carry_slots(both, alt_only).empty());
    ASSERT_EQ(alt_only.listeners.size(), 1u);
    ASSERT_EQ(alt_only.listeners[0].slot, 1);
    bed_options o;
    o.toml = bed_config();
    proxy_bed bed(o);
    const size_t c80 = bed.connect(80);
    EXPECT_FALSE(bed.conn(bed.try_connect(81)).connected);  // nobody listens on 81 yet

    bed.proxy().reconfigure(both, bed.now());
    EXPECT_EQ(bed.ctr().reload_listen.get(), 1u);
    const size_t c81 = bed.connect(81);
    EXPECT_TRUE(get(bed, c81, "/x").ends_with("\r\n\r\nok"));
    EXPECT_EQ(bed.proxy().listener_accepted(1), 1u);

    bed.proxy().reconfigure(alt_only, bed.now());
    EXPECT_EQ(bed.ctr().reload_listen.get(), 2u);
    EXPECT_TRUE(get(bed, c80, "/y").ends_with("\r\n\r\nok"));  // open before: served
    const size_t late = bed.try_connect(80);
    EXPECT_FALSE(bed.conn(late).connected);
    EXPECT_TRUE(bed.conn(late).closed);
    EXPECT_EQ(bed.proxy().listener_accepted(0), 1u);
    EXPECT_EQ(bed.proxy().listener_active(0), 1u);
    // /y took the removed listener's default_upstream, counted in its slot.
    EXPECT_EQ(bed.proxy().route_responses(0, proxy::route_default, 2), 1u);
    EXPECT_EQ(bed.ctr().reload_listen_failed.get(), 0u);
    bed.close(c80);
    bed.close(c81);
    bed.advance(200 * ms);
    EXPECT_EQ(bed.proxy().listener_active(0), 0u);
}

// The bed's configuration with 'o''s one server at 10.0.0.2:`port`.
std::string at_port(std::string_view port) {
    std::string t = bed_config();
    t.replace(t.find("10.0.0.2:8080"), 13, "10.0.0.2:" + std::string(port));
    return t;
}

// The bed's one server 10.0.0.2:8080 (upstream 0, slot 0) is replaced by
// `moved`, whose server is 10.0.0.2:8081 at upstream `nu`, slot `ns`, then
// comes back with `back`. At the first reload one connection to 8080 is idle
// and one serves a request: the idle one closes at once (FIN), the busy one
// when its response is through; new requests go to 8081. At the second,
// 8081's idle connection closes and 8080 goes on with its counts.
void removed_server_drains(const config::ferry_config &moved, const config::ferry_config &back,
                           size_t nu, size_t ns) {
    bed_options o;
    o.toml = bed_config();
    o.origin_ports = {8080, 8081};
    proxy_bed bed(o);

    const size_t c1 = bed.connect(), c2 = bed.connect();
    bed.send(c1, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
    bed.send(c2, "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(bed.origin_count(), 2u);
    peer_conn &idle = *bed.origin(0), &busy = *bed.origin(1);
    ASSERT_EQ(idle.port, 8080);
    ASSERT_EQ(busy.port, 8080);
    ASSERT_TRUE(idle.rx.starts_with("GET /1 ")) << idle.rx;
    bed.send(idle, ok_resp);
    EXPECT_TRUE(bed.conn(c1).rx.ends_with("\r\n\r\nok")) << bed.conn(c1).rx;
    bed.conn(c1).rx.clear();

    bed.proxy().reconfigure(moved, bed.now());
    bed.pump();
    EXPECT_EQ(bed.ctr().servers_removed.get(), 1u);
    EXPECT_EQ(bed.ctr().upstream_retired.get(), 1u);
    EXPECT_TRUE(idle.fin);
    EXPECT_FALSE(busy.fin);
    // The busy one answers its request in full, then closes with a FIN.
    bed.send(busy, ok_resp);
    EXPECT_TRUE(bed.conn(c2).rx.ends_with("\r\n\r\nok")) << bed.conn(c2).rx;
    EXPECT_FALSE(bed.conn(c2).closed);
    EXPECT_TRUE(busy.fin);
    EXPECT_EQ(bed.ctr().upstream_retired.get(), 2u);
    // New requests: the new server, with counters of its own.
    EXPECT_TRUE(get(bed, c1, "/3").ends_with("\r\n\r\nok"));
    ASSERT_EQ(bed.origin_count(), 3u);
    EXPECT_EQ(bed.origin(2)->port, 8081);
    EXPECT_EQ(bed.proxy().server(0, 0).requests.get(), 2u);
    EXPECT_EQ(bed.proxy().server(nu, ns).requests.get(), 1u);
    EXPECT_EQ(bed.proxy().server(0, 0).idle.get(), 0u);
    EXPECT_EQ(bed.proxy().server(0, 0).active.get(), 0u);
    EXPECT_EQ(bed.proxy().server(nu, ns).idle.get(), 1u);

    // 8080 again, in slot 0 of upstream 0: its count goes on from 2; 8081's
    // idle connection closes.
    bed.proxy().reconfigure(back, bed.now());
    bed.pump();
    EXPECT_TRUE(bed.origin(2)->fin);
    EXPECT_EQ(bed.ctr().servers_removed.get(), 2u);
    EXPECT_TRUE(get(bed, c1, "/4").ends_with("\r\n\r\nok"));
    EXPECT_EQ(bed.origin(bed.origin_count() - 1)->port, 8080);
    EXPECT_EQ(bed.proxy().server(0, 0).requests.get(), 3u);
    EXPECT_EQ(bed.proxy().server(nu, ns).idle.get(), 0u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    EXPECT_EQ(bed.ctr().client_aborted.get(), 0u);
    EXPECT_EQ(bed.ctr().responses_2xx.get(), 4u);
    bed.close(c1);
    bed.close(c2);
    bed.advance(200 * ms);
}

TEST(Reload, ARemovedServersConnectionsDrainAndClose) {
    // 'o' moves from 10.0.0.2:8080 to :8081 (slot 1), then back to its old
    // slot (removed_server_drains). The generations outlive the bed; slots carried as the app's reload does.
    const config::ferry_config first = parsed(bed_config());
    config::ferry_config moved = parsed(at_port("8081"));
    ASSERT_TRUE(config::carry_slots(first, moved).empty());
    ASSERT_EQ(moved.upstreams[0].servers[0].slot, 1);
    config::ferry_config back = parsed(bed_config());
    ASSERT_TRUE(config::carry_slots(moved, back).empty());
    ASSERT_EQ(back.upstreams[0].servers[0].slot, 0);
    removed_server_drains(moved, back, 0, 1);
}

// at_port(port) with its upstream named `name` instead of "o".
std::string named(std::string_view name, std::string_view port) {
    std::string t = at_port(port);
    for (size_t at = t.find("\"o\""); at != std::string::npos; at = t.find("\"o\"", at))
        t.replace(at, 3, "\"" + std::string(name) + "\"");
    return t;
}

TEST(Reload, AnUpstreamRemovedDrainsAndOneAddedServes) {
    // 'o' (10.0.0.2:8080) is renamed 'p' (10.0.0.2:8081): 'o' is removed, a
    // retired placeholder in slot 0 whose idle connection closes at once and
    // whose busy one finishes its response; 'p' takes slot 1 and serves the
    // next requests. Then 'o' comes back to slot 0 with its counts, and 'p''s
    // idle connection closes.
    const config::ferry_config first = parsed(bed_config());
    config::ferry_config renamed = parsed(named("p", "8081"));
    ASSERT_TRUE(config::carry_slots(first, renamed).empty());
    ASSERT_EQ(renamed.upstreams.size(), 2u);
    ASSERT_TRUE(renamed.upstreams[0].retired);
    ASSERT_EQ(renamed.listeners[0].default_upstream_index, 1);
    config::ferry_config back = parsed(bed_config());
    ASSERT_TRUE(config::carry_slots(renamed, back).empty());
    ASSERT_TRUE(back.upstreams[1].retired);
    ASSERT_EQ(back.listeners[0].default_upstream_index, 0);
    removed_server_drains(renamed, back, 1, 0);
}

TEST(Reload, ARequestOnARemovedUpstreamWhoseServerFailsIsAnsweredNotLost) {
    // 'o' removed while its origin holds a request; the origin resets it.
    // The retry finds no server in the retired upstream: it goes to the
    // same address once more (as for a removed server), and that
    // connection's failure gets the client a 502, not a hang or a crash.
    const config::ferry_config first = parsed(bed_config());
    config::ferry_config renamed = parsed(named("p", "8081"));
    ASSERT_TRUE(config::carry_slots(first, renamed).empty());
    bed_options o;
    o.toml = bed_config();
    o.origin_ports = {8080, 8081};
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(bed.origin_count(), 1u);
    bed.proxy().reconfigure(renamed, bed.now());
    bed.pump();
    bed.reset(*bed.origin(0));
    for (size_t i = 1; i < bed.origin_count(); ++i) bed.reset(*bed.origin(i));
    bed.advance(100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    // The client stays; its next request goes to 'p'.
    bed.conn(cl).rx.clear();
    ASSERT_FALSE(bed.conn(cl).closed);
    EXPECT_TRUE(get(bed, cl, "/2").ends_with("\r\n\r\nok"));
    EXPECT_EQ(bed.origin(bed.origin_count() - 1)->port, 8081);
    bed.close(cl);
    bed.advance(200 * ms);
}

}  // namespace
}  // namespace ferry::proxy::test
