// Timeouts on the fake clock (issue 15, finding 2): what operators expect
// from nginx and HAProxy. Client side: the head (408), the body's longest
// gap (408), keep-alive idle. Upstream side: connect, then inactivity while
// the request is sent (write_timeout_ms) and while the response is awaited
// (response_timeout_ms, from the end of the request) and read
// (read_timeout_ms), and optionally a total (total_timeout_ms). Each that
// fires is counted by kind and named in the request's access record.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "bed.h"
#include "ferry/xcore/message.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view get_req = simple_get;

TEST(Timeout, HeadNotCompleteInTimeIsA408) {
    bed_options opt;
    opt.toml = bed_config("client_header_timeout_ms = 3000\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /slow HTTP/1.1\r\nHo");
    bed.advance(2200 * ms);  // the deadline is in the last quarter (header_deadline)
    EXPECT_EQ(bed.conn(cl).rx, "");
    bed.advance(900 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 408 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_header.get(), 1u);
    finish(bed, {cl});
}

// By default 7/8 of the client slots may wait for a head (64 slots here:
// 56); the next trickler evicts the oldest.
TEST(Timeout, ByDefaultSevenEighthsOfTheSlotsMayWaitForAHead) {
    proxy_bed bed;
    std::vector<size_t> slow;
    for (int i = 0; i < 56; ++i) {
        slow.push_back(bed.connect());
        bed.send(slow.back(), "GET /slow HTTP/1.1\r\nHo");
    }
    EXPECT_EQ(bed.ctr().clients_evicted.get(), 0u);
    slow.push_back(bed.connect());
    bed.send(slow.back(), "GET /slow HTTP/1.1\r\nHo");
    EXPECT_EQ(bed.ctr().clients_evicted.get(), 1u);
    EXPECT_TRUE(bed.conn(slow[0]).closed);
    EXPECT_FALSE(bed.conn(slow[1]).closed);
    for (size_t c : slow) bed.close(c);
    bed.advance(12000 * ms, 100 * ms);
}

// Heads begun together get deadlines spread over the timeout's last
// quarter, so that a burst of trickling connections is not cut (and does
// not reconnect) in one instant: none before 3/4 of the timeout, all by the
// timeout, and neither all nor none halfway through that quarter.
TEST(Timeout, HeadDeadlinesBegunTogetherAreSpread) {
    bed_options opt;
    opt.toml = bed_config("client_header_timeout_ms = 4000\nmax_pending_heads = 64\n");
    proxy_bed bed(opt);
    std::vector<size_t> cls;
    for (int i = 0; i < 40; ++i) {
        cls.push_back(bed.connect());
        bed.send(cls.back(), "GET /slow HTTP/1.1\r\nHo");
    }
    bed.advance(2990 * ms, 10 * ms);
    EXPECT_EQ(bed.ctr().timeouts_header.get(), 0u);
    bed.advance(500 * ms, 10 * ms);  // 3/4 + 1/8 of the timeout
    const uint64_t half = bed.ctr().timeouts_header.get();
    EXPECT_GE(half, 8u);
    EXPECT_LE(half, 32u);
    bed.advance(520 * ms, 10 * ms);
    EXPECT_EQ(bed.ctr().timeouts_header.get(), 40u);
    for (size_t c : cls) EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 408 ")) << c;
    bed.advance(2000 * ms, 100 * ms);
}

TEST(Timeout, IdleKeepAliveClientIsClosed) {
    bed_options opt;
    opt.toml = bed_config("client_idle_timeout_ms = 4000\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.send(*bed.origin(), ok5);
    bed.advance(3900 * ms);
    EXPECT_FALSE(bed.conn(cl).fin);
    bed.advance(200 * ms);
    EXPECT_TRUE(bed.conn(cl).fin);  // closed without a response: it sent nothing
    EXPECT_EQ(bed.ctr().timeouts_idle.get(), 1u);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    finish(bed, {cl});
}

TEST(Timeout, StalledRequestBodyIsA408) {
    bed_options opt;
    opt.toml = bed_config("client_body_timeout_ms = 3000\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345");
    bed.advance(3100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 408 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_body.get(), 1u);
    EXPECT_TRUE(bed.origin()->closed);  // the half-sent request cannot go on
    finish(bed, {cl});
}

TEST(Timeout, UpstreamThatDoesNotAnswerIsA504) {
    bed_options opt;
    opt.toml = bed_config("", "response_timeout_ms = 5000\nmax_fails = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.advance(4900 * ms, 100 * ms);
    EXPECT_EQ(bed.conn(cl).rx, "");
    bed.advance(200 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_upstream.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_response.get(), 1u);
    EXPECT_EQ(bed.ctr().generated_504.get(), 1u);
    finish(bed, {cl});
}

// Issue 18 item 4: a route's own response_timeout_ms replaces the upstream's
// for the requests it takes; other requests keep the upstream's.
TEST(Timeout, ARoutesOwnResponseTimeoutReplacesTheUpstreams) {
    bed_options opt;
    opt.toml = bed_config("", "response_timeout_ms = 5000\nmax_fails = 0\n",
                          "\n[[route]]\npath_prefix = \"/report\"\nupstream = \"o\"\n"
                          "response_timeout_ms = 20000\n");
    proxy_bed bed(opt);
    const size_t slow = bed.connect();
    bed.send(slow, "GET /report/q3 HTTP/1.1\r\nHost: h\r\n\r\n");
    const size_t other = bed.connect();
    bed.send(other, get_req);
    bed.advance(5100 * ms, 100 * ms);
    EXPECT_TRUE(bed.conn(other).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(other).rx;
    EXPECT_EQ(bed.conn(slow).rx, "");  // its route waits 20 s
    bed.advance(14800 * ms, 100 * ms);
    EXPECT_EQ(bed.conn(slow).rx, "");
    bed.advance(200 * ms);
    EXPECT_TRUE(bed.conn(slow).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(slow).rx;
    EXPECT_EQ(bed.ctr().timeouts_response.get(), 2u);
    finish(bed, {slow, other});
}

TEST(Timeout, UpstreamThatDoesNotConnectIsA504) {
    bed_options opt;
    opt.toml = bed_config("", "connect_timeout_ms = 1500\nmax_fails = 0\nretries = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.blackhole(true);  // ferry's SYN toward the origin is lost
    bed.send(cl, get_req);
    bed.advance(1200 * ms, 100 * ms);
    bed.blackhole(false);
    EXPECT_EQ(bed.origin_count(), 0u);
    bed.advance(400 * ms, 100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().upstream_connect_failed.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_connect.get(), 1u);
    EXPECT_GT(bed.dropped(), 0u);
    finish(bed, {cl});
}

// The origin vanished after taking a request (a crash or restart whose reset
// was lost: perf/soak stalled a minute on these under 1% loss, and each
// answered 504 after response_timeout_ms). The connection's keep-alive probe
// (upstream_keepalive_ms, 5 s) gets a reset from the peer's host; the GET,
// idempotent and unanswered, is replayed on a fresh connection.
TEST(Timeout, AnOriginThatVanishedIsFoundByAKeepAliveProbe) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    ASSERT_EQ(bed.origin_count(), 1u);
    bed.vanish(*bed.origin(0));
    bed.advance(4900 * ms, 100 * ms);
    EXPECT_EQ(bed.origin_count(), 1u);  // no probe yet: nothing happened
    bed.advance(200 * ms, 100 * ms);
    ASSERT_EQ(bed.origin_count(), 2u) << "the probe's reset, then the replay";
    EXPECT_TRUE(bed.origin(1)->rx.starts_with("GET /p ")) << bed.origin(1)->rx;
    bed.send(*bed.origin(1), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().requests_retried.get(), 1u);
    EXPECT_EQ(bed.ctr().generated_504.get(), 0u);
    finish(bed, {cl});
}

// upstream_keepalive_ms = 0: no probe, the request waits for its response
// timeout (the behaviour before).
TEST(Timeout, WithoutKeepAliveAVanishedOriginCostsTheResponseTimeout) {
    bed_options opt;
    opt.toml = bed_config("", "response_timeout_ms = 20000\n",
                          "\n[tcp]\nupstream_keepalive_ms = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.vanish(*bed.origin(0));
    bed.advance(20100 * ms, 100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.origin_count(), 1u);
    finish(bed, {cl});
}

TEST(Timeout, ResponseBodyStalledPastReadTimeoutCutsTheClientShort) {
    bed_options opt;
    opt.toml = bed_config("", "read_timeout_ms = 3000\nmax_fails = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.send(*bed.origin(), "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345");
    bed.advance(3100 * ms, 100 * ms);
    // Cut short: a FIN before the Content-Length is reached (abort_client).
    EXPECT_TRUE(bed.conn(cl).fin);
    EXPECT_NE(bed.conn(cl).reason, net::tcp_close_reason::reset);
    EXPECT_EQ(bed.ctr().client_cut_closed.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_upstream.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_read.get(), 1u);
    finish(bed, {cl});
}

// Before: response_timeout_ms ran from the start of the request, so an
// upload that took longer got a 504 while its bytes were flowing.
TEST(Timeout, SlowUploadWithBytesFlowingIsNotA504) {
    bed_options opt;
    opt.toml = bed_config("client_body_timeout_ms = 3000\n",
                          "response_timeout_ms = 2000\nwrite_timeout_ms = 2000\nmax_fails = 0\n");
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 8\r\n\r\n");
    for (int i = 0; i < 8; ++i) {
        bed.advance(1000 * ms, 100 * ms);  // 8 s in all, 4x the response timeout
        bed.send(cl, std::string(1, char('a' + i)));
    }
    EXPECT_EQ(bed.conn(cl).rx, "");
    ASSERT_NE(bed.origin(), nullptr);
    EXPECT_EQ(body_of(bed.origin()->rx), "abcdefgh");
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_upstream.get(), 0u);
    finish(bed, {cl});
}

// The response timeout counts from the end of the request.
TEST(Timeout, ResponseTimeoutStartsWhenTheRequestIsSent) {
    bed_options opt;
    opt.toml = bed_config("", "response_timeout_ms = 2000\nmax_fails = 0\n");
    access_log_sink sink(16, 0);  // outlives the bed
    proxy_bed bed(opt);
    bed.proxy().set_access_log(&sink);
    const size_t cl = bed.connect();
    bed.send(cl, "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n");
    for (int i = 0; i < 3; ++i) {
        bed.advance(1500 * ms, 100 * ms);
        bed.send(cl, "x");
    }
    bed.advance(1900 * ms, 100 * ms);
    EXPECT_EQ(bed.conn(cl).rx, "");
    bed.advance(200 * ms, 100 * ms);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_response.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_upstream.get(), 1u);
    const std::vector<access_record> recs = drain(sink);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].status, 504);
    EXPECT_EQ(recs[0].timeout, timeout_kind::response);
    finish(bed, {cl});
}

// Before: connect_timeout_ms defaulted to 2 s, and the first SYN
// retransmission comes at 1 s, the second at 3 s: one lost SYN-ACK (here,
// ferry's first two SYNs lost) was a 504. The default is 5 s now.
TEST(Timeout, TwoLostSynsAreNotA504WithTheDefaults) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.blackhole(true);
    bed.send(cl, get_req);
    bed.advance(2500 * ms, 100 * ms);
    EXPECT_EQ(bed.origin_count(), 0u);
    bed.blackhole(false);
    bed.advance(1500 * ms, 100 * ms);
    ASSERT_EQ(bed.origin_count(), 1u);
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().timeouts_connect.get(), 0u);
    finish(bed, {cl});
}

// An optional bound on the whole exchange, however steadily bytes come.
TEST(Timeout, TotalTimeoutEndsAResponseThatTrickles) {
    bed_options opt;
    opt.toml = bed_config("", "read_timeout_ms = 2000\ntotal_timeout_ms = 3500\nmax_fails = 0\n");
    access_log_sink sink(16, 0);  // outlives the bed
    proxy_bed bed(opt);
    bed.proxy().set_access_log(&sink);
    const size_t cl = bed.connect();
    bed.send(cl, get_req);
    bed.send(*bed.origin(), "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n1");
    for (int i = 0; i < 3; ++i) {
        bed.advance(1000 * ms, 100 * ms);
        bed.send(*bed.origin(), "2");
    }
    EXPECT_FALSE(bed.conn(cl).fin);
    bed.advance(600 * ms, 100 * ms);
    // Cut short: a FIN before the Content-Length is reached (abort_client).
    EXPECT_TRUE(bed.conn(cl).fin);
    EXPECT_NE(bed.conn(cl).reason, net::tcp_close_reason::reset);
    EXPECT_EQ(bed.ctr().client_cut_closed.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_total.get(), 1u);
    EXPECT_EQ(bed.ctr().timeouts_read.get(), 0u);
    const std::vector<access_record> recs = drain(sink);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].timeout, timeout_kind::total);
    EXPECT_TRUE(recs[0].flags & access_record::f_aborted);
    finish(bed, {cl});
}

// A request handed to another worker's shared connection: that worker's
// resp_error carries the timeout kind, and the client's worker logs it.
TEST(Timeout, AHandedOverRequestLogsThePeersTimeoutKind) {
    taking_peer peer;
    const bed_options opt = two_workers_shared(peer);
    access_log_sink sink(16, 0);  // outlives the bed
    {
        proxy_bed bed(opt);
        bed.proxy().set_access_log(&sink);
        // Requests alternate between the slot worker 0 owns and worker 1's.
        const size_t a = bed.connect(), b = bed.connect();
        bed.send(a, get_req);
        bed.send(b, get_req);
        const xcore::message *head = peer.last_head();
        ASSERT_NE(head, nullptr) << "no request went to worker 1";
        xcore::message err =
            resp_error_for(*head, 504u | uint32_t(timeout_kind::response) << 16);
        bed.proxy().on_message(1, err, bed.now());
        bed.pump();
        const size_t handed = bed.conn(a).rx.starts_with("HTTP/1.1 504 ") ? a : b;
        EXPECT_TRUE(bed.conn(handed).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(handed).rx;
        const std::vector<access_record> recs = drain(sink);
        ASSERT_EQ(recs.size(), 1u);
        EXPECT_EQ(recs[0].status, 504);
        EXPECT_EQ(recs[0].timeout, timeout_kind::response);
        EXPECT_TRUE(recs[0].flags & access_record::f_crossed);
            for (auto &m : peer.got) xcore::release(m);  // before the bed counts mbufs
        peer.got.clear();
        bed.close(a);
        bed.close(b);
        bed.advance(2000 * ms, 100 * ms);
    }
}

// Slowloris: connections that trickle their heads hold client slots. Past
// max_pending_heads the one waiting longest is reset; a client that sends
// its head at once is served all along, and a keep-alive client between
// requests is not waiting for a head.
TEST(Timeout, PastMaxPendingHeadsTheOldestTrickleIsReset) {
    bed_options opt;
    opt.toml = bed_config("max_pending_heads = 3\n");
    access_log_sink sink(16, 0);
    proxy_bed bed(opt);
    bed.proxy().set_access_log(&sink);
    // A keep-alive client, idle after one request: not pending.
    const size_t ka = bed.connect();
    bed.send(ka, simple_get);
    bed.send(*bed.origin(), ok5);
    std::vector<size_t> slow;
    for (int i = 0; i < 3; ++i) {
        slow.push_back(bed.connect());
        bed.send(slow.back(), "GET /slow HTTP/1.1\r\nHo");
        bed.advance(100 * ms);
    }
    EXPECT_EQ(bed.ctr().clients_evicted.get(), 0u);
    // A fourth trickler: the first one goes.
    slow.push_back(bed.connect());
    bed.send(slow.back(), "GET /slow HTTP/1.1\r\nHo");
    EXPECT_EQ(bed.ctr().clients_evicted.get(), 1u);
    EXPECT_TRUE(bed.conn(slow[0]).closed);
    EXPECT_EQ(bed.conn(slow[0]).reason, net::tcp_close_reason::reset);
    for (size_t i = 1; i < slow.size(); ++i) EXPECT_FALSE(bed.conn(slow[i]).closed) << i;
    // A legitimate client connects (evicting the next oldest) and is served.
    const size_t legit = bed.connect();
    EXPECT_EQ(bed.ctr().clients_evicted.get(), 2u);
    bed.send(legit, simple_get);
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(legit).rx.ends_with("hello")) << bed.conn(legit).rx;
    // The keep-alive client's next request is served too (it was never
    // pending, so never evicted).
    EXPECT_FALSE(bed.conn(ka).closed);
    bed.conn(ka).rx.clear();
    bed.send(ka, simple_get);
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(ka).rx.ends_with("hello")) << bed.conn(ka).rx;
    // Each eviction is in the access log: the raw first line, 444, aborted.
    size_t evicted_lines = 0;
    for (const access_record &r : drain(sink))
        if (r.status == 444 && (r.flags & access_record::f_aborted) &&
            std::string_view(r.target, r.target_len) == "GET /slow HTTP/1.1")
            ++evicted_lines;
    EXPECT_EQ(evicted_lines, 2u);
    finish(bed, {ka, legit, slow[2], slow[3]});
}

}  // namespace
}  // namespace ferry::proxy::test
