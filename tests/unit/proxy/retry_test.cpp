// When a request is replayed after its upstream connection failed (issue 15:
// "retried on another server only when it is idempotent and nothing of its
// response was sent; never replayed otherwise"). An origin fails at each
// stage of an exchange: it refuses the connection, resets after the request
// head, resets after part of the response head, resets mid-body, or never
// answers. A request without a body is replayed (retries = 1 here) while
// nothing reached the server (any method), or, for an idempotent method,
// while nothing of the response reached the client; on another server when
// one is up. Never after a response/read timeout, never once the response
// began, never a request with a body.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

// Two servers, 10.0.0.2:8080 and :8081, round robin (the first request goes
// to 8080); the origin side listens on `ports`.
bed_options two_servers(std::vector<uint16_t> ports, std::string_view upstream_extra = "") {
    bed_options o;
    o.toml = bed_config("", std::string("max_fails = 0\nretries = 1\n") + std::string(upstream_extra),
                        "\n  [[upstream.server]]\n  address = \"10.0.0.2:8081\"\n");
    o.origin_ports = std::move(ports);
    return o;
}

// Requests the origin side received, over every connection.
size_t requests_seen(proxy_bed &bed) {
    size_t n = 0;
    for (size_t i = 0; i < bed.origin_count(); ++i) {
        const std::string &rx = bed.origin(i)->rx;
        for (size_t at = rx.find(" HTTP/1.1\r\n"); at != std::string::npos;
             at = rx.find(" HTTP/1.1\r\n", at + 1))
            ++n;
    }
    return n;
}

TEST(Retry, ARefusedConnectionIsRetriedOnTheOtherServer) {
    for (std::string_view method : {"GET", "PATCH"}) {  // nothing was sent: any method
        access_log_sink sink(16, 0);
        proxy_bed bed(two_servers({8081}));  // 8080 refuses
        bed.proxy().set_access_log(&sink);
        const size_t cl = bed.connect();
        bed.send(cl, std::string(method) + " /r HTTP/1.1\r\nHost: h\r\n\r\n");
        ASSERT_EQ(bed.origin_count(), 1u) << method;
        EXPECT_EQ(bed.origin()->port, 8081);
        EXPECT_TRUE(bed.origin()->rx.starts_with(std::string(method) + " /r ")) << bed.origin()->rx;
        bed.send(*bed.origin(), ok5);
        EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 ")) << method << bed.conn(cl).rx;
        EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
        EXPECT_EQ(bed.ctr().upstream_connect_failed.get(), 1u);
        EXPECT_EQ(bed.ctr().generated_502.get(), 0u);
        finish(bed, {cl});
        const auto recs = drain(sink);
        ASSERT_EQ(recs.size(), 1u);
        EXPECT_EQ(recs[0].status, 200);
        EXPECT_EQ(recs[0].server, 1) << "the log names the server that answered";
    }
}

TEST(Retry, AnIdempotentRequestResetBeforeAnyResponseIsRetriedElsewhere) {
    proxy_bed bed(two_servers({8080, 8081}));
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    ASSERT_EQ(bed.origin_count(), 1u);
    EXPECT_EQ(bed.origin(0)->port, 8080);
    bed.reset(*bed.origin(0));  // it had the request
    ASSERT_EQ(bed.origin_count(), 2u);
    EXPECT_EQ(bed.origin(1)->port, 8081);
    EXPECT_TRUE(bed.origin(1)->rx.starts_with("GET /p ")) << bed.origin(1)->rx;
    bed.send(*bed.origin(1), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    finish(bed, {cl});
}

TEST(Retry, PartOfAResponseHeadIsNotAResponseYet) {
    proxy_bed bed(two_servers({8080, 8081}));
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    bed.send(*bed.origin(0), "HTTP/1.1 200 OK\r\nContent-");
    bed.reset(*bed.origin(0));
    ASSERT_EQ(bed.origin_count(), 2u);
    bed.send(*bed.origin(1), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 OK\r\n")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.conn(cl).rx.find("Content-HTTP"), std::string::npos);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    finish(bed, {cl});
}

TEST(Retry, ANonIdempotentRequestThatWasSentIsNeverReplayed) {
    proxy_bed bed(two_servers({8080, 8081}));
    const size_t cl = bed.connect();
    bed.send(cl, "PATCH /r HTTP/1.1\r\nHost: h\r\n\r\n");
    bed.reset(*bed.origin(0));
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(requests_seen(bed), 1u);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 0u);
    finish(bed, {cl});
}

TEST(Retry, ARequestWithABodyIsNeverReplayed) {
    proxy_bed bed(two_servers({8081}));  // even when nothing was sent
    const size_t cl = bed.connect();
    bed.send(cl, "PUT /r HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc");
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.origin_count(), 0u);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 0u);
    finish(bed, {cl});
}

TEST(Retry, AResponseThatBeganIsNeverReplayed) {
    proxy_bed bed(two_servers({8080, 8081}));
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    bed.send(*bed.origin(0), "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345");
    bed.reset(*bed.origin(0));
    // Cut short: a FIN before the Content-Length is reached (abort_client).
    EXPECT_TRUE(bed.conn(cl).fin);
    EXPECT_NE(bed.conn(cl).reason, net::tcp_close_reason::reset);
    EXPECT_EQ(bed.ctr().client_cut_closed.get(), 1u);
    EXPECT_EQ(requests_seen(bed), 1u);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 0u);
    finish(bed, {cl});
}

TEST(Retry, AResponseTimeoutIsNotReplayed) {
    proxy_bed bed(two_servers({8080, 8081}, "response_timeout_ms = 1000\n"));
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    bed.advance(1100 * ms, 100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(cl).rx;
    EXPECT_EQ(requests_seen(bed), 1u);
    EXPECT_EQ(bed.ctr().requests_retried.get(), 0u);
    finish(bed, {cl});
}

TEST(Retry, OneServerARefusedConnectionIsRetriedOnceThenA502) {
    bed_options o;
    o.toml = bed_config("", "max_fails = 0\nretries = 1\n");
    o.origin_ports = {};  // the only server refuses
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    EXPECT_EQ(bed.ctr().upstream_connect_failed.get(), 2u);
    finish(bed, {cl});
}

}  // namespace
}  // namespace ferry::proxy::test
