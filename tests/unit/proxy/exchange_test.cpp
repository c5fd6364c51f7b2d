// Scripted exchanges through the proxy (bed.h): a client and an origin on the
// peer side, bytes in, exact bytes and counters out. Heads are fed split at
// every byte offset, each piece in its own poll (issue 13, bug 0: a request
// head arriving in two reads was forwarded with an empty method and target).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view get_req =
    "GET /a/b?c=d HTTP/1.1\r\nHost: example.test\r\nUser-Agent: bed/1\r\n"
    "Accept: */*\r\nX-Long: 0123456789abcdef0123456789abcdef\r\n\r\n";
constexpr std::string_view ok_resp =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
    "X-Origin: o1\r\n\r\nhello";

// Splits `s` at byte k into two sends with a full pump between them.
void send_split(proxy_bed &bed, peer_conn &c, std::string_view s, size_t k) {
    bed.send(c, s.substr(0, k));
    bed.send(c, s.substr(k));
}

struct exchange_result {
    std::string forwarded;  // what the origin received
    std::string response;   // what the client received
};

// One request through a fresh bed: the client's head split at `req_split`
// (0 = whole), the origin's response split at `resp_split` (0 = whole).
exchange_result one_exchange(std::string_view req, std::string_view resp, size_t req_split,
                             size_t resp_split) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    if (req_split == 0)
        bed.send(cl, req);
    else
        send_split(bed, bed.conn(cl), req, req_split);
    exchange_result r;
    peer_conn *o = bed.origin();
    if (o == nullptr) {
        r.response = bed.conn(cl).rx;
        return r;
    }
    r.forwarded = o->rx;
    if (resp_split == 0)
        bed.send(*o, resp);
    else
        send_split(bed, *o, resp, resp_split);
    r.response = bed.conn(cl).rx;
    bed.close(cl);
    bed.advance(200 * ms);
    return r;
}

TEST(Exchange, GetKeepAliveReusesTheOriginConnection) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    for (int i = 0; i < 3; ++i) {
        bed.send(cl, get_req);
        ASSERT_EQ(bed.origin_count(), 1u);
        peer_conn &o = *bed.origin();
        EXPECT_TRUE(o.rx.starts_with("GET /a/b?c=d HTTP/1.1\r\n")) << o.rx;
        EXPECT_TRUE(o.rx.ends_with("\r\n\r\n")) << o.rx;
        o.rx.clear();
        bed.send(o, ok_resp);
        const std::string &got = bed.conn(cl).rx;
        EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
        EXPECT_TRUE(got.ends_with("\r\n\r\nhello")) << got;
        bed.conn(cl).rx.clear();
    }
    EXPECT_EQ(bed.ctr().requests.get(), 3u);
    EXPECT_EQ(bed.ctr().responses_2xx.get(), 3u);
    EXPECT_EQ(bed.ctr().upstream_reused.get(), 2u);
    bed.close(cl);
    bed.advance(200 * ms);
    EXPECT_EQ(bed.ctr().client_closed.get(), 1u);
}

// Bug 0: every split of the request head, each piece in its own poll, is
// forwarded exactly as the unsplit head is.
TEST(Exchange, RequestHeadSplitAtEveryOffset) {
    const exchange_result whole = one_exchange(get_req, ok_resp, 0, 0);
    ASSERT_TRUE(whole.forwarded.starts_with("GET /a/b?c=d HTTP/1.1\r\n")) << whole.forwarded;
    ASSERT_TRUE(whole.response.ends_with("hello")) << whole.response;
    for (size_t k = 1; k < get_req.size(); ++k) {
        const exchange_result r = one_exchange(get_req, ok_resp, k, 0);
        ASSERT_EQ(r.forwarded, whole.forwarded) << "request split at " << k;
        ASSERT_EQ(r.response, whole.response) << "request split at " << k;
    }
}

// The same for the response head from the origin.
TEST(Exchange, ResponseHeadSplitAtEveryOffset) {
    const exchange_result whole = one_exchange(get_req, ok_resp, 0, 0);
    for (size_t k = 1; k < ok_resp.size(); ++k) {
        const exchange_result r = one_exchange(get_req, ok_resp, 0, k);
        ASSERT_EQ(r.forwarded, whole.forwarded) << "response split at " << k;
        ASSERT_EQ(r.response, whole.response) << "response split at " << k;
    }
}

// The reactor's hint (wakeup_mode adaptive): an exchange is in flight from
// the request's dispatch until its response is through, not before, not after.
TEST(Memory, AnExchangeIsInFlightFromDispatchToTheEndOfItsResponse) {
    proxy_bed bed;
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());
    const size_t cl = bed.connect();
    bed.send(cl, "GET /p HTTP/1.1\r\nHo");
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());  // a head being read: the client's turn
    bed.send(cl, "st: h\r\n\r\n");
    EXPECT_TRUE(bed.proxy().exchanges_in_flight());
    peer_conn &o = *bed.origin();
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel");
    EXPECT_TRUE(bed.proxy().exchanges_in_flight());  // the body is not all through
    bed.send(o, "lo");
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());
    finish(bed, {cl});
}

// The same with a shared pool on one worker (perf/bench's sweep with one
// lcore): the request waits on the worker's own shared connection.
TEST(Memory, AnExchangeOnASharedPoolIsInFlightUntilItsResponseIsThrough) {
    bed_options o;
    o.toml = bed_config("", "pool = \"shared\"\nshared_connections = 1\n");
    proxy_bed bed(o);
    const size_t cl = bed.connect();
    bed.send(cl, "GET /p HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_TRUE(bed.proxy().exchanges_in_flight());
    peer_conn &o1 = *bed.origin();
    bed.send(o1, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel");
    EXPECT_TRUE(bed.proxy().exchanges_in_flight());
    bed.send(o1, "lo");
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello"));
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());
    bed.send(cl, "GET /p HTTP/1.1\r\nHost: h\r\n\r\n");  // the second, on the kept connection
    EXPECT_TRUE(bed.proxy().exchanges_in_flight());
    bed.send(o1, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("ok"));
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());
    finish(bed, {cl});
}

// exchanges_in_flight() reads a running count kept where requests start and
// end; the bed checks it against a recount after every poll round, and these
// tests after every step of exchanges that end every way: answered, kept
// alive, cut by either side, timed out, retried, handed to another worker
// and answered or abandoned there.
void expect_count(proxy_bed &bed, const char *step, bool in_flight) {
    const worker_proxy &px = bed.proxy();
    EXPECT_TRUE(bed.check_exchange_count()) << step;
    EXPECT_EQ(px.exchanges_count(), px.exchanges_recount()) << step;
    EXPECT_EQ(px.exchanges_in_flight(), in_flight) << step;
}

// The origin connection holding an unanswered request (the last one).
peer_conn *asked_origin(proxy_bed &bed) {
    peer_conn *org = nullptr;
    for (size_t k = 0; k < bed.origin_count(); ++k)
        if (!bed.origin(k)->closed && !bed.origin(k)->rx.empty()) org = bed.origin(k);
    return org;
}

TEST(Exchange, TheRunningCountOfExchangesEqualsARecountAtEveryStep) {
    // Two servers in turn; :8081 refuses, so a request there is retried on
    // :8080.
    bed_options o;
    o.toml = bed_config("", "max_fails = 0\nretries = 1\nresponse_timeout_ms = 2000\n",
                        "\n  [[upstream.server]]\n  address = \"10.0.0.2:8081\"\n");
    proxy_bed bed(o);
    expect_count(bed, "start", false);
    const size_t cl = bed.connect();
    expect_count(bed, "connected", false);
    for (int i = 0; i < 4; ++i) {  // kept alive, on each server in turn
        bed.send(cl, "GET /p HTTP/1.1\r\nHo");
        expect_count(bed, "half a head", false);
        bed.send(cl, "st: h\r\n\r\n");
        expect_count(bed, "dispatched", true);
        peer_conn *org = asked_origin(bed);
        ASSERT_NE(org, nullptr) << "request " << i;
        org->rx.clear();
        bed.send(*org, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel");
        expect_count(bed, "half a body", true);
        bed.send(*org, "lo");
        expect_count(bed, "answered", false);
        EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << i;
    }
    EXPECT_GE(bed.ctr().requests_retried.get(), 1u);
    // More clients, each request ending another way (a POST sent to :8081
    // is answered 502 at once: a request with a body is not replayed).
    int ended[4] = {}, refused = 0;
    for (int i = 0; i < 12; ++i) {
        const size_t c = bed.connect();
        const bool post = i % 2 == 1;
        bed.send(c, post ? "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n01234"
                         : simple_get);
        if (bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) {  // refused, with a body: no retry
            expect_count(bed, "refused", false);
            ++refused;
            bed.close(c);
            expect_count(bed, "closed", false);
            continue;
        }
        expect_count(bed, "sent", true);
        if (post) {
            bed.send(c, "56789");
            expect_count(bed, "body through", true);
        }
        peer_conn *org = asked_origin(bed);
        ASSERT_NE(org, nullptr) << "client " << i;
        org->rx.clear();
        ++ended[i / 3];
        switch (i / 3) {
            case 0:  // the origin resets mid-response
                bed.send(*org, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe");
                expect_count(bed, "half a body", true);
                bed.reset(*org);
                expect_count(bed, "origin reset", false);
                break;
            case 1:  // the client goes away before the answer
                bed.reset(bed.conn(c));
                expect_count(bed, "client reset", false);
                break;
            case 2:  // no answer in time: 504
                bed.advance(2500 * ms, 100 * ms);
                expect_count(bed, "timed out", false);
                EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 504 ")) << bed.conn(c).rx;
                break;
            default:  // answered, kept alive
                bed.send(*org, ok5);
                expect_count(bed, "answered", false);
                break;
        }
        if (!bed.conn(c).closed) bed.close(c);
        expect_count(bed, "closed", false);
    }
    EXPECT_GE(refused, 1);
    for (int k = 0; k < 4; ++k) EXPECT_GE(ended[k], 1) << "ending " << k;
    finish(bed, {cl});
    expect_count(bed, "all closed", false);
    EXPECT_EQ(bed.proxy().exchanges_count(), 0u);
}

// The same with a shared pool whose second connection worker 1 owns:
// requests alternate between worker 0's connection and a hand-off.
TEST(Exchange, TheRunningCountOfExchangesHandedToAnotherWorkerEqualsARecount) {
    taking_peer peer;
    const bed_options o = two_workers_shared(peer);
    {
        proxy_bed bed(o);
        const size_t cl = bed.connect();
        for (int i = 0; i < 6; ++i) {
            const size_t handed = peer.got.size();
            bed.send(cl, simple_get);
            expect_count(bed, "dispatched", true);
            if (peer.got.size() == handed) {  // worker 0's connection
                peer_conn *org = asked_origin(bed);
                ASSERT_NE(org, nullptr) << "request " << i;
                org->rx.clear();
                bed.send(*org, ok5);
                expect_count(bed, "answered here", false);
                continue;
            }
            // Handed over: worker 1 answers it (a 502), or its client goes.
            EXPECT_GE(bed.proxy().exchanges_count(), 2u);  // the server's and the hand-off
            if (i % 4 == 1) {
                const xcore::message *head = peer.last_head();
                ASSERT_NE(head, nullptr);
                xcore::message err = resp_error_for(*head, 502);
                bed.proxy().on_message(1, err, bed.now());
                expect_count(bed, "answered by worker 1", false);
                bed.pump();
                expect_count(bed, "502 sent", false);
                EXPECT_NE(bed.conn(cl).rx.find("HTTP/1.1 502 "), std::string::npos);
            } else {
                bed.reset(bed.conn(cl));
                expect_count(bed, "abandoned", false);
                break;
            }
        }
        EXPECT_GE(bed.ctr().xcore_requests_out.get(), 2u);
        peer.drop();  // before the bed counts mbufs
        finish(bed, {cl});
        expect_count(bed, "all closed", false);
    }
}

// shared_pick: with round_robin a worker's consecutive requests take the
// server's connections in turn, worker 1's every other time (handed over);
// with own_idle_first they stay on worker 0's own connection while it is
// idle, and only a request that finds it busy goes round robin.
namespace {
constexpr std::string_view ok2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// Worker 1 answers the request handed to it with a 502.
void answer_from_worker_1(proxy_bed &bed, const taking_peer &peer) {
    const xcore::message *head = peer.last_head();
    ASSERT_NE(head, nullptr);
    xcore::message err = resp_error_for(*head, 502);
    bed.proxy().on_message(1, err, bed.now());
    bed.pump();
}
}  // namespace

TEST(SharedPick, RoundRobinHandsEveryOtherRequestToTheOtherWorker) {
    taking_peer peer;
    const bed_options o = two_workers_shared(peer);
    {
        proxy_bed bed(o);
        const size_t cl = bed.connect();
        bed.send(cl, simple_get);  // k = 0: worker 0's own
        ASSERT_TRUE(peer.got.empty());
        bed.send(*bed.origin(), ok2);
        ASSERT_TRUE(bed.conn(cl).rx.ends_with("ok"));
        bed.send(cl, simple_get);  // k = 1: worker 1's, though worker 0's is idle
        EXPECT_EQ(bed.ctr().xcore_requests_out.get(), 1u);
        answer_from_worker_1(bed, peer);
        EXPECT_NE(bed.conn(cl).rx.find("HTTP/1.1 502 "), std::string::npos);
        EXPECT_EQ(bed.ctr().shared_own_idle.get(), 0u);
        peer.drop();
        finish(bed, {cl});
    }
}

TEST(SharedPick, OwnIdleFirstKeepsRequestsOnTheWorkersIdleConnectionAndHandsOverWhenItIsBusy) {
    taking_peer peer;
    const bed_options o = two_workers_shared(peer, "shared_pick = \"own_idle_first\"\n");
    {
        proxy_bed bed(o);
        const size_t cl = bed.connect();
        bed.send(cl, simple_get);  // none open yet: round robin, k = 0 (worker 0's)
        ASSERT_TRUE(peer.got.empty());
        ASSERT_EQ(bed.origin_count(), 1u);
        peer_conn &org = *bed.origin();
        bed.send(org, ok2);
        ASSERT_TRUE(bed.conn(cl).rx.ends_with("ok"));
        for (int i = 0; i < 4; ++i) {
            org.rx.clear();
            bed.send(cl, simple_get);
            EXPECT_TRUE(peer.got.empty()) << i;
            EXPECT_NE(org.rx.find("GET /p "), std::string::npos) << "the same connection " << i;
            bed.send(org, ok2);
            expect_count(bed, "answered here", false);
        }
        EXPECT_EQ(bed.origin_count(), 1u);
        EXPECT_EQ(bed.ctr().shared_own_idle.get(), 4u);
        EXPECT_EQ(bed.ctr().xcore_requests_out.get(), 0u);
        // The own connection busy: the next request goes round robin, to
        // k = 1 (worker 1's).
        const size_t cl2 = bed.connect();
        bed.send(cl, simple_get);
        bed.send(cl2, simple_get);
        EXPECT_EQ(bed.ctr().shared_own_idle.get(), 5u);
        EXPECT_EQ(bed.ctr().xcore_requests_out.get(), 1u);
        answer_from_worker_1(bed, peer);
        EXPECT_NE(bed.conn(cl2).rx.find("HTTP/1.1 502 "), std::string::npos);
        bed.send(org, ok2);
        expect_count(bed, "both answered", false);
        peer.drop();
        finish(bed, {cl, cl2});
    }
}

}  // namespace
}  // namespace ferry::proxy::test
