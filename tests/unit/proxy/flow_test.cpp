// Scripted exchanges through the proxy (bed.h) beyond a plain GET: request
// and response bodies in every framing, pipelining, 1xx, connections that
// end mid-message on either side, retries, passive health (timeouts:
// timeout_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"
#include "ferry/proxy/balance.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view get_req = simple_get;

TEST(Flow, PipelinedRequestsAreAnsweredInOrder) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, std::string(get_req) + "GET /q HTTP/1.1\r\nHost: h\r\n\r\n");
    peer_conn &o = *bed.origin();
    // One request at a time toward the origin: the second waits.
    EXPECT_TRUE(o.rx.starts_with("GET /p ")) << o.rx;
    EXPECT_EQ(o.rx.find("GET /q"), std::string::npos);
    o.rx.clear();
    bed.send(o, ok5);
    EXPECT_TRUE(o.rx.starts_with("GET /q ")) << o.rx;
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye");
    const std::string &got = bed.conn(cl).rx;
    const size_t second = got.find("HTTP/1.1 200", 1);
    ASSERT_NE(second, std::string::npos) << got;
    EXPECT_TRUE(got.substr(0, second).ends_with("hello"));
    EXPECT_TRUE(got.ends_with("bye"));
    EXPECT_EQ(bed.ctr().requests.get(), 2u);
    finish(bed, {cl});
}

TEST(Flow, ContentLengthBodiesBothWaysInManyPieces) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    std::string body;
    for (int i = 0; i < 200000; ++i) body += static_cast<char>('a' + i % 26);
    bed.send(cl, "PUT /u HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n");
    for (size_t off = 0; off < body.size(); off += 33333) bed.send(cl, body.substr(off, 33333));
    peer_conn &o = *bed.origin();
    EXPECT_EQ(body_of(o.rx), body);
    bed.send(o, "HTTP/1.1 201 Created\r\nContent-Length: 200000\r\n\r\n");
    for (size_t off = 0; off < body.size(); off += 50000) bed.send(o, body.substr(off, 50000));
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 201 Created\r\n"));
    EXPECT_EQ(body_of(bed.conn(cl).rx), body);
    finish(bed, {cl});
}

// Chunked bodies go through re-framed (framing_test.cpp has the cases):
// extensions and the trailer section are not forwarded.
TEST(Flow, ChunkedBodiesWithTrailersAreForwardedReframed) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    const std::string chunked = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n";
    const std::string canonical = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    bed.send(cl, "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (size_t k = 0; k < chunked.size(); k += 7) bed.send(cl, chunked.substr(k, 7));
    peer_conn &o = *bed.origin();
    EXPECT_NE(o.rx.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << o.rx;
    EXPECT_EQ(body_of(o.rx), canonical);
    bed.send(o, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked);
    EXPECT_EQ(body_of(bed.conn(cl).rx), canonical);
    EXPECT_EQ(bed.ctr().chunked_reframed.get(), 2u);
    EXPECT_EQ(bed.ctr().trailers_dropped.get(), 2u);
    // The connection stays usable: the framing ended exactly.
    bed.conn(cl).rx.clear();
    o.rx.clear();
    bed.send(cl, get_req);
    EXPECT_TRUE(o.rx.starts_with("GET /p ")) << o.rx;
    bed.send(o, ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    EXPECT_EQ(bed.origin_count(), 1u);
    finish(bed, {cl});
}

TEST(Flow, InterimResponsesGoThroughBeforeTheFinalOne) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    peer_conn &o = *bed.origin();
    bed.send(o, "HTTP/1.1 100 Continue\r\n\r\n");
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 100 Continue\r\n")) << bed.conn(cl).rx;
    bed.send(cl, "data");
    EXPECT_TRUE(o.rx.ends_with("\r\n\r\ndata")) << o.rx;
    bed.send(o, ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    EXPECT_EQ(bed.ctr().responses_1xx.get(), 1u);
    EXPECT_EQ(bed.ctr().responses_2xx.get(), 1u);
    finish(bed, {cl});
}

// The origin resets mid-body: the response is cut. Its Content-Length (or
// a missing last chunk) shows the cut, so the client gets what came and a
// FIN, which TCP delivers reliably (a lost reset left a client waiting
// for ever in perf/soak). Without framing (until the close) only a reset
// shows it.
TEST(Flow, UpstreamResetMidBodyClosesAFramedResponseShort) {
    for (std::string_view resp : {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial",
                                  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "64\r\npartial"}) {
        proxy_bed bed;
        const size_t cl = bed.connect();
        bed.send(cl, get_req);
        peer_conn &o = *bed.origin();
        bed.send(o, resp);
        EXPECT_TRUE(bed.conn(cl).rx.ends_with("partial")) << bed.conn(cl).rx;
        bed.reset(o);
        EXPECT_TRUE(bed.conn(cl).fin) << resp;
        EXPECT_NE(bed.conn(cl).reason, net::tcp_close_reason::reset);
        EXPECT_TRUE(bed.conn(cl).rx.ends_with("partial"));
        EXPECT_EQ(bed.ctr().client_aborted.get(), 1u);
        EXPECT_EQ(bed.ctr().client_cut_closed.get(), 1u);
        bed.close(cl);
        EXPECT_TRUE(bed.conn(cl).closed);
        EXPECT_EQ(bed.conn(cl).reason, net::tcp_close_reason::normal);
        finish(bed, {cl});
    }
}

TEST(Flow, UpstreamResetMidBodyResetsAClientWhoseResponseEndsWithTheClose) {
    // An origin's response delimited by its close, and a chunked one
    // de-chunked for an HTTP/1.0 client (delimited by the close toward it).
    const std::pair<std::string_view, std::string_view> cases[] = {
        {get_req, "HTTP/1.1 200 OK\r\n\r\npartial"},
        {"GET /p HTTP/1.0\r\nHost: h\r\n\r\n",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\npartial"},
    };
    for (const auto &[req, resp] : cases) {
        proxy_bed bed;
        const size_t cl = bed.connect();
        bed.send(cl, req);
        peer_conn &o = *bed.origin();
        bed.send(o, resp);
        EXPECT_TRUE(bed.conn(cl).rx.ends_with("partial")) << bed.conn(cl).rx;
        bed.reset(o);
        EXPECT_TRUE(bed.conn(cl).closed) << resp;
        EXPECT_EQ(bed.conn(cl).reason, net::tcp_close_reason::reset);
        EXPECT_EQ(bed.ctr().client_aborted.get(), 1u);
        EXPECT_EQ(bed.ctr().client_cut_closed.get(), 0u);
        finish(bed, {cl});
    }
}

TEST(Flow, UpstreamClosingBeforeTheHeadIsA502) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    bed.close(*bed.origin());
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().generated_502.get(), 1u);
    finish(bed, {cl});
}

TEST(Flow, IdempotentRequestOnAReusedConnectionIsRetriedOnAFreshOne) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.send(*bed.origin(0), ok5);
    // The origin closes the idle connection just as the next request is sent.
    bed.send(cl, get_req);
    ASSERT_TRUE(bed.origin(0)->rx.ends_with("\r\n\r\n"));
    bed.reset(*bed.origin(0));
    ASSERT_EQ(bed.origin_count(), 2u);
    EXPECT_TRUE(bed.origin(1)->rx.starts_with("GET /p ")) << bed.origin(1)->rx;
    bed.send(*bed.origin(1), ok5);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    EXPECT_EQ(bed.ctr().responses_2xx.get(), 2u);
    finish(bed, {cl});
}

TEST(Flow, ClientGoneMidRequestBodyAbortsTheUpstreamConnection) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nfirst");
    peer_conn &o = *bed.origin();
    EXPECT_TRUE(o.rx.ends_with("first"));
    bed.reset(bed.conn(cl));
    EXPECT_TRUE(o.closed);
    EXPECT_EQ(o.reason, net::tcp_close_reason::reset);
    EXPECT_EQ(bed.ctr().client_gone.get(), 1u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 1u);
    finish(bed, {});
}

TEST(Flow, ServersThatFailMaxFailsTimesAreSkippedUntilFailTimeout) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 2\nfail_timeout_ms = 5000\nretries = 0\n"
                              "when_all_down = \"refuse\"\n");
    proxy_bed bed(opt);
    for (size_t i = 0; i < 2; ++i) {
        const size_t c = bed.connect();
        bed.send(c, get_req);
        ASSERT_EQ(bed.origin_count(), i + 1);
        bed.reset(*bed.origin(i));  // before any response: a failure
        EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(c).rx;
        bed.close(c);
    }
    // Down now: a 503 without trying.
    const size_t c3 = bed.connect();
    bed.send(c3, get_req);
    EXPECT_TRUE(bed.conn(c3).rx.starts_with("HTTP/1.1 503 ")) << bed.conn(c3).rx;
    EXPECT_EQ(bed.origin_count(), 2u);
    EXPECT_EQ(bed.ctr().generated_503.get(), 1u);
    // After fail_timeout it is tried again.
    bed.advance(5100 * ms, 100 * ms);
    const size_t c4 = bed.connect();
    bed.send(c4, get_req);
    ASSERT_EQ(bed.origin_count(), 3u);
    bed.send(*bed.origin(2), ok5);
    EXPECT_TRUE(bed.conn(c4).rx.ends_with("hello"));
    finish(bed, {c4});
}

// A generated 502/503/504/404 keeps the client connection when the request
// was complete (nginx and HAProxy do): the request pipelined behind it is
// served. Before, every generated answer closed, and the pipelined requests
// were lost (perf/soak: 1062 of 6883 requests).
TEST(Flow, AGenerated502KeepsTheConnectionAndThePipelinedRequestIsServed) {
    bed_options opt;
    opt.toml = bed_config("", "retries = 0\nmax_fails = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, std::string(get_req) + "GET /q HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(bed.origin_count(), 1u);
    bed.reset(*bed.origin(0));  // after the request, before any answer: 502
    ASSERT_EQ(bed.origin_count(), 2u);  // the pipelined one went on a new connection
    EXPECT_TRUE(bed.origin(1)->rx.starts_with("GET /q ")) << bed.origin(1)->rx;
    bed.send(*bed.origin(1), ok5);
    EXPECT_EQ(bed.conn(cl).rx,
              "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
              "Connection: keep-alive\r\n\r\n502 Bad Gateway\n" + std::string(ok5.substr(0, 17)) +
                  bed.conn(cl).rx.substr(bed.conn(cl).rx.find("HTTP/1.1 200 ") + 17));
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    EXPECT_FALSE(bed.conn(cl).fin);
    EXPECT_EQ(bed.ctr().errors_kept_alive.get(), 1u);
    EXPECT_EQ(bed.ctr().generated_502.get(), 1u);
    // And the connection serves more.
    bed.send(cl, get_req);
    bed.send(*bed.origin(1), ok5);
    EXPECT_EQ(bed.ctr().requests.get(), 3u);
    finish(bed, {cl});
}

// The answer to a HEAD request has no body, or the client would read it as
// the next response.
TEST(Flow, AKeptAliveErrorToHeadHasNoBody) {
    bed_options opt;
    opt.toml = bed_config("", "retries = 0\nmax_fails = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, "HEAD /p HTTP/1.1\r\nHost: h\r\n\r\n");
    bed.reset(*bed.origin(0));
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("Connection: keep-alive\r\n\r\n")) << bed.conn(cl).rx;
    EXPECT_FALSE(bed.conn(cl).fin);
    finish(bed, {cl});
}

// A request whose body was not read (every server down, "refuse") cannot be
// told from what follows: that answer closes.
TEST(Flow, AnErrorBeforeTheBodyWasReadCloses) {
    bed_options opt;
    opt.toml = bed_config("", "retries = 0\nmax_fails = 1\nfail_timeout_ms = 60000\n"
                              "when_all_down = \"refuse\"\n");
    proxy_bed bed(opt);
    const size_t c1 = bed.connect();
    bed.send(c1, get_req);
    bed.reset(*bed.origin(0));  // one failure: down
    const size_t c2 = bed.connect();
    bed.send(c2, "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n01234");
    EXPECT_TRUE(bed.conn(c2).rx.starts_with("HTTP/1.1 503 ")) << bed.conn(c2).rx;
    EXPECT_NE(bed.conn(c2).rx.find("Connection: close\r\n"), std::string::npos);
    EXPECT_TRUE(bed.conn(c2).fin);
    finish(bed, {c1, c2});
}

// One listener "web", one route (prefix /ok) to upstream "o"; with
// `with_default`, "o" is also the listener's default_upstream.
std::string routed_toml(bool with_default) {
    return std::string("[[listener]]\nname = \"web\"\nport = 80\n") +
           (with_default ? "default_upstream = \"o\"\n" : "") +
           "[[route]]\npath_prefix = \"/ok\"\nupstream = \"o\"\n"
           "[[upstream]]\nname = \"o\"\n  [[upstream.server]]\n  address = \"10.0.0.2:8080\"\n"
           "[[port]]\nname = \"p0\"\nprofile = \"net_tap\"\niface = \"ferry0\"\n"
           "address = \"10.0.0.1/24\"\n";
}

// Every parsed request's answer is counted once by listener, route and class
// (ferry_http_route_responses_total), with no access log: a routed one, one
// the listener's default took, and one refused before routing (CONNECT: 501).
TEST(Flow, AnswersAreCountedByListenerRouteAndClass) {
    bed_options opt;
    opt.toml = routed_toml(true);
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /ok/a HTTP/1.1\r\nHost: h\r\n\r\n");
    peer_conn &o = *bed.origin();
    ASSERT_TRUE(o.rx.starts_with("GET /ok/a ")) << o.rx;
    o.rx.clear();
    bed.send(o, ok5);
    bed.send(cl, "GET /elsewhere HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(o.rx.starts_with("GET /elsewhere ")) << o.rx;
    bed.send(o, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    bed.send(cl, "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n");
    EXPECT_NE(bed.conn(cl).rx.find("HTTP/1.1 501 "), std::string::npos) << bed.conn(cl).rx;
    const worker_proxy &px = bed.proxy();
    uint64_t total = 0;
    for (int route : {0, route_default, route_none})
        for (unsigned cls = 1; cls <= 5; ++cls) total += px.route_responses(0, route, cls);
    EXPECT_EQ(total, 3u);
    EXPECT_EQ(px.route_responses(0, 0, 2), 1u);
    EXPECT_EQ(px.route_responses(0, route_default, 4), 1u);
    EXPECT_EQ(px.route_responses(0, route_none, 5), 1u);
    // The request histogram has all three: a generated answer without an
    // access log was not in it before (its end was the access log's only).
    uint64_t observed = 0;
    for (const auto &b : px.request_latency().in_bucket) observed += b.get();
    EXPECT_EQ(observed, 3u);
    finish(bed, {cl});
}

// Per listener: connections accepted, open now, and reset at its
// max_connections (ferry_http_listener_*).
TEST(Flow, AListenerCountsItsConnectionsAndTheOnesItRefuses) {
    bed_options opt;
    opt.toml = routed_toml(true);
    opt.toml.insert(opt.toml.find("port = 80\n") + 10, "max_connections = 2\n");
    proxy_bed bed(opt);
    const size_t a = bed.connect();
    const size_t b = bed.connect();
    const size_t c = bed.connect();  // the handshake completes; ferry resets it
    EXPECT_TRUE(bed.conn(c).closed);
    const worker_proxy &px = bed.proxy();
    EXPECT_EQ(px.listener_accepted(0), 2u);
    EXPECT_EQ(px.listener_refused(0), 1u);
    EXPECT_EQ(px.listener_active(0), 2u);
    bed.close(a);
    EXPECT_EQ(px.listener_active(0), 1u);
    finish(bed, {b});
}

// 200 pipelined requests that each get a generated 404 (no route): all are
// answered, in order, on the one connection, which stays open.
TEST(Flow, ManyPipelinedGeneratedAnswersAreAllSent) {
    bed_options opt;
    opt.toml = routed_toml(false);
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    std::string reqs;
    for (int i = 0; i < 200; ++i) reqs += "GET /nope HTTP/1.1\r\nHost: h\r\n\r\n";
    for (size_t at = 0; at < reqs.size(); at += 4000) bed.send(cl, reqs.substr(at, 4000));
    const std::string &rx = bed.conn(cl).rx;
    size_t n = 0;
    for (size_t at = rx.find("HTTP/1.1 404 "); at != std::string::npos;
         at = rx.find("HTTP/1.1 404 ", at + 1))
        ++n;
    EXPECT_EQ(n, 200u);
    EXPECT_EQ(bed.ctr().generated_404.get(), 200u);
    EXPECT_FALSE(bed.conn(cl).fin);
    finish(bed, {cl});
}

// when_all_down = "try" (the default): the only server, marked down by two
// failures, is still tried; its answer marks it up at once (no more tries
// counted), long before fail_timeout_ms. This is an origin restarting: 503s
// for the whole fail_timeout_ms were what clients got before.
TEST(Flow, WhenEveryServerIsDownItIsTriedAndAnAnswerMarksItUp) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 2\nfail_timeout_ms = 60000\nretries = 0\n");
    proxy_bed bed(opt);
    for (size_t i = 0; i < 2; ++i) {
        const size_t c = bed.connect();
        bed.send(c, get_req);
        ASSERT_EQ(bed.origin_count(), i + 1);
        bed.reset(*bed.origin(i));
        EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(c).rx;
        bed.close(c);
    }
    EXPECT_EQ(bed.shared().health[0][0].marked_down.load(), 1u);
    // Down, and the only one: tried all the same.
    const size_t c3 = bed.connect();
    bed.send(c3, get_req);
    ASSERT_EQ(bed.origin_count(), 3u);
    EXPECT_EQ(bed.ctr().all_down_tried.get(), 1u);
    bed.send(*bed.origin(2), ok5);
    EXPECT_TRUE(bed.conn(c3).rx.ends_with("hello")) << bed.conn(c3).rx;
    EXPECT_EQ(bed.ctr().generated_503.get(), 0u);
    // The answer marked it up: the next request is an ordinary one.
    bed.send(c3, get_req);
    bed.send(*bed.origin(2), ok5);
    EXPECT_EQ(bed.ctr().all_down_tried.get(), 1u);
    EXPECT_EQ(bed.shared().health[0][0].down_until.load(), 0u);
    finish(bed, {c3});
}

// With two servers, one down: the other serves, nothing is "tried".
TEST(Flow, OneServerDownOfTwoIsLeftOutWithoutTrying) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 1\nfail_timeout_ms = 60000\nretries = 0\n",
                          "\n  [[upstream.server]]\n  address = \"10.0.0.2:8081\"\n");
    opt.origin_ports = {8080, 8081};
    proxy_bed bed(opt);
    const size_t c = bed.connect();
    bed.send(c, get_req);  // round robin: 8080 first
    ASSERT_EQ(bed.origin_count(), 1u);
    bed.reset(*bed.origin(0));
    EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(c).rx;
    bed.close(c);
    for (int i = 0; i < 3; ++i) {
        const size_t ci = bed.connect();
        bed.send(ci, get_req);
        peer_conn &o = *bed.origin(bed.origin_count() - 1);
        EXPECT_EQ(o.port, 8081);
        bed.send(o, ok5);
        EXPECT_TRUE(bed.conn(ci).rx.ends_with("hello")) << bed.conn(ci).rx;
        bed.close(ci);
    }
    EXPECT_EQ(bed.ctr().all_down_tried.get(), 0u);
}

}  // namespace
}  // namespace ferry::proxy::test

namespace ferry::proxy::test {
namespace {

// Active health checks: worker 0 sends the check every interval on a fresh
// connection; a 5xx max_fails times marks the server down (clients get 503
// without a connection being tried), a 2xx marks it up again.
TEST(Health, ActiveChecksMarkAServerDownAndUpAgain) {
    bed_options opt;
    opt.toml = bed_config("", "health_check_path = \"/hc\"\nhealth_check_interval_ms = 1000\n"
                              "health_check_timeout_ms = 500\nmax_fails = 2\n"
                              "fail_timeout_ms = 60000\nwhen_all_down = \"refuse\"\n");
    proxy_bed bed(opt);
    size_t answered = 0;
    auto answer_checks = [&](std::string_view resp) {
        for (size_t i = 0; bed.origin(i) != nullptr; ++i) {
            peer_conn &o = *bed.origin(i);
            if (o.closed || !o.rx.starts_with("GET /hc HTTP/1.1\r\n") || o.rx.ends_with("#"))
                continue;
            EXPECT_NE(o.rx.find("User-Agent: ferry-health-check\r\n"), std::string::npos);
            o.rx += "#";  // answered
            bed.send(o, resp);
            ++answered;
        }
    };
    // Answers every check as it comes, for `steps` steps of 100 ms.
    auto run_checks = [&](int steps, std::string_view resp) {
        for (int i = 0; i < steps; ++i) {
            bed.advance(100 * ms, 100 * ms);
            answer_checks(resp);
        }
    };
    // Two failing checks (at 0.1 s and 1.1 s): down.
    run_checks(15, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(answered, 2u);
    EXPECT_EQ(bed.ctr().health_checks.get(), 2u);
    EXPECT_EQ(bed.ctr().health_check_failed.get(), 2u);
    const size_t before = bed.origin_count();
    const size_t c1 = bed.connect();
    bed.send(c1, get_req);
    EXPECT_TRUE(bed.conn(c1).rx.starts_with("HTTP/1.1 503 ")) << bed.conn(c1).rx;
    EXPECT_EQ(bed.origin_count(), before);  // no connection tried
    // A passing check (at 2.1 s): up again.
    run_checks(8, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(answered, 3u);
    const size_t c2 = bed.connect();
    bed.send(c2, get_req);
    peer_conn *o = bed.origin(bed.origin_count() - 1);
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(o->rx.starts_with("GET /p ")) << o->rx;
    bed.send(*o, ok5);
    EXPECT_TRUE(bed.conn(c2).rx.ends_with("hello"));
    finish(bed, {c1, c2});
}

}  // namespace
}  // namespace ferry::proxy::test
