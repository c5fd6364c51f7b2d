// Scripted exchanges through the proxy (bed.h) beyond a plain GET: request
// and response bodies in every framing, pipelining, 1xx, connections that
// end mid-message on either side, retries, passive health (timeouts:
// timeout_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"

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

TEST(Flow, UpstreamResetMidBodyResetsTheClient) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    peer_conn &o = *bed.origin();
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("partial"));
    bed.reset(o);
    // A truncated response must not look complete: the client is reset.
    EXPECT_TRUE(bed.conn(cl).closed);
    EXPECT_EQ(bed.conn(cl).reason, net::tcp_close_reason::reset);
    EXPECT_EQ(bed.ctr().client_aborted.get(), 1u);
    finish(bed, {cl});
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
    opt.toml = bed_config("", "max_fails = 2\nfail_timeout_ms = 5000\nretries = 0\n");
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
                              "fail_timeout_ms = 60000\n");
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
