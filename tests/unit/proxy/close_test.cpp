// How ferry ends upstream connections that did nothing wrong (issue 19): an
// active health check, once answered, and a connection whose origin said
// Connection: close end with a FIN, never a reset, and are not counted as
// upstream_aborted; a connection out of step with its origin (bytes past the
// response) is still reset. The wire log (bed.h frames()) shows the flags.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"
#include "ferry/net/tcp.h"

namespace ferry::proxy::test {
namespace {

// Segments ferry sent on the origin leg with `flag` set.
size_t origin_leg_with(const proxy_bed &bed, uint8_t flag) {
    size_t n = 0;
    for (const wire_seg &s : bed.frames())
        if (s.from_ferry && s.sport != 80 && s.dport != 80 && (s.flags & flag)) ++n;
    return n;
}

// 15 probes, each answered 200 with Connection: close and closed by the
// origin as nginx does: 15 FINs from ferry, no reset, no abort.
TEST(UpstreamClose, AnsweredHealthChecksEndWithAFinNotAReset) {
    bed_options opt;
    opt.toml = bed_config("", "health_check_path = \"/hc\"\nhealth_check_interval_ms = 100\n"
                              "health_check_timeout_ms = 500\n");
    proxy_bed bed(opt);
    size_t answered = 0;
    for (int step = 0; step < 200 && answered < 15; ++step) {
        bed.advance(10 * ms, 10 * ms);
        for (size_t i = 0; bed.origin(i) != nullptr; ++i) {
            peer_conn &o = *bed.origin(i);
            if (o.closed || !o.rx.ends_with("\r\n\r\n")) continue;
            o.rx += "#";  // answered
            bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            bed.close(o);
            ++answered;
        }
    }
    bed.advance(50 * ms, 10 * ms);  // the last closes go through; no check times out yet
    ASSERT_EQ(answered, 15u);
    EXPECT_GE(bed.ctr().health_checks.get(), 15u);
    EXPECT_EQ(bed.ctr().health_check_failed.get(), 0u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    EXPECT_GE(bed.ctr().upstream_closed.get(), 15u);
    EXPECT_EQ(origin_leg_with(bed, net::tcp_flag::rst), 0u);
    EXPECT_GE(origin_leg_with(bed, net::tcp_flag::fin), 15u);
    for (size_t i = 0; i < answered; ++i) {
        EXPECT_TRUE(bed.origin(i)->fin) << "probe " << i << " got no FIN";
        EXPECT_EQ(bed.origin(i)->reason, net::tcp_close_reason::normal) << "probe " << i;
    }
}

// The origin keeps the probe's connection open after its answer (it ignored
// Connection: close): ferry still closes it with a FIN.
TEST(UpstreamClose, AHealthCheckTheOriginKeepsOpenIsClosedWithAFin) {
    bed_options opt;
    opt.toml = bed_config("", "health_check_path = \"/hc\"\nhealth_check_interval_ms = 1000\n"
                              "health_check_timeout_ms = 500\n");
    proxy_bed bed(opt);
    bed.advance(150 * ms, 10 * ms);
    ASSERT_EQ(bed.origin_count(), 1u);
    peer_conn &o = *bed.origin(0);
    bed.send(o, "HTTP/1.1 204 No Content\r\n\r\n");
    EXPECT_TRUE(o.fin);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    bed.close(o);
    bed.advance(500 * ms, 100 * ms);
    EXPECT_TRUE(o.closed);
    EXPECT_EQ(o.reason, net::tcp_close_reason::normal);
    EXPECT_EQ(origin_leg_with(bed, net::tcp_flag::rst), 0u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
}

// A response with Connection: close (nginx's keepalive_requests-th, or an
// HTTP/1.0 origin): the connection cannot be reused, and ferry closes it
// with a FIN. Before, it was reset and counted as upstream_aborted in a
// clean load run.
TEST(UpstreamClose, AConnectionCloseResponseEndsTheUpstreamWithAFin) {
    proxy_bed bed;
    const size_t c = bed.connect();
    bed.send(c, simple_get);
    ASSERT_EQ(bed.origin_count(), 1u);
    peer_conn &o = *bed.origin(0);
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    EXPECT_TRUE(bed.conn(c).rx.ends_with("hello")) << bed.conn(c).rx;
    EXPECT_TRUE(o.fin);
    bed.close(o);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    EXPECT_EQ(bed.ctr().upstream_closed.get(), 1u);
    EXPECT_EQ(origin_leg_with(bed, net::tcp_flag::rst), 0u);
    finish(bed, {c});
}

// Bytes past a keep-alive response: ferry cannot tell what they are, the
// connection is out of step and is reset (upstream_aborted).
TEST(UpstreamClose, BytesPastAResponseStillResetTheUpstream) {
    proxy_bed bed;
    const size_t c = bed.connect();
    bed.send(c, simple_get);
    ASSERT_EQ(bed.origin_count(), 1u);
    peer_conn &o = *bed.origin(0);
    bed.send(o, std::string(ok5) + "junk");
    EXPECT_TRUE(bed.conn(c).rx.ends_with("hello")) << bed.conn(c).rx;
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 1u);
    EXPECT_GE(origin_leg_with(bed, net::tcp_flag::rst), 1u);
    finish(bed, {c});
}

}  // namespace
}  // namespace ferry::proxy::test
