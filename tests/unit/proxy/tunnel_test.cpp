// Protocol upgrades through the proxy (tunnel.cpp): an Upgrade request goes
// on with its Upgrade field, a 101 turns the pair into a byte tunnel with
// half-close both ways, a reset from either side resets the other, the idle
// timeout closes both; upgrades ferry does not tunnel are ignored (h2c,
// HTTP/1.0) or refused (CONNECT, a body), and a 101 nobody asked for is 502.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view ws_req =
    "GET /chat HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
constexpr std::string_view ws_101 =
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

// The bytes after the first head in s.
std::string after_head(const std::string &s) { return body_of(s); }

// A client whose upgrade the origin accepted, with `first` sent right after
// the 101 head. Returns the client's index; the origin is bed.origin().
size_t open_tunnel(proxy_bed &bed, std::string_view first = "") {
    const size_t cl = bed.connect();
    bed.send(cl, ws_req);
    EXPECT_EQ(bed.origin_count(), 1u);
    peer_conn &o = *bed.origin();
    EXPECT_NE(o.rx.find("\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"), std::string::npos)
        << o.rx;
    EXPECT_NE(o.rx.find("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"), std::string::npos);
    EXPECT_EQ(o.rx.find("keep-alive"), std::string::npos) << o.rx;
    bed.send(o, std::string(ws_101) + std::string(first));
    const std::string &got = bed.conn(cl).rx;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << got;
    EXPECT_NE(got.find("\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"), std::string::npos)
        << got;
    EXPECT_NE(got.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos);
    return cl;
}

// What each side received in one scripted tunnel: the upgrade request and the
// 101 (with the origin's first bytes behind it) split at byte k (0 = whole),
// each piece in its own poll; then a message each way and both sides close.
// fail_at: the proxy's fail_at-th mbuf allocation fails (0 = none).
struct tunnel_run {
    std::string to_origin, to_client;
    uint64_t no_buffer = 0, opened = 0, closed = 0;
    bool both_ended = false;
};
tunnel_run script(size_t k, uint32_t fail_at = 0) {
    bed_options opt;
    // No replay on a second connection the script would not answer.
    opt.toml = bed_config("", "retries = 0\n");
    opt.px.fail_alloc_at = fail_at;
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    auto send_split = [&](peer_conn &c, std::string_view s) {
        const size_t at = k % s.size();
        if (at != 0) bed.send(c, s.substr(0, at));
        bed.send(c, s.substr(at));
    };
    send_split(bed.conn(cl), ws_req);
    tunnel_run r;
    if (peer_conn *o = bed.origin(); o != nullptr) {
        send_split(*o, std::string(ws_101) + "first");
        bed.send(bed.conn(cl), "up-message");
        bed.send(*o, "down-message");
        bed.close(bed.conn(cl));
        bed.close(*o);
    }
    bed.advance(2000 * ms, 100 * ms);
    if (peer_conn *o = bed.origin(); o != nullptr) r.to_origin = o->rx;
    r.to_client = bed.conn(cl).rx;
    r.no_buffer = bed.ctr().no_buffer.get();
    r.opened = bed.ctr().tunnels_opened.get();
    r.closed = bed.ctr().tunnels_closed.get();
    r.both_ended = bed.conn(cl).closed && (bed.origin() == nullptr || bed.origin()->closed);
    return r;
}

TEST(Tunnel, HeadsSplitAtEveryOffsetOpenTheSameTunnel) {
    const tunnel_run whole = script(0);
    ASSERT_TRUE(whole.to_client.ends_with("\r\n\r\nfirstdown-message")) << whole.to_client;
    ASSERT_TRUE(whole.to_origin.ends_with("\r\n\r\nup-message")) << whole.to_origin;
    ASSERT_EQ(whole.closed, 1u);
    for (size_t k = 1; k < ws_101.size() + 5; ++k) {
        SCOPED_TRACE("split at " + std::to_string(k));
        const tunnel_run r = script(k);
        EXPECT_EQ(r.to_client, whole.to_client);
        EXPECT_EQ(r.to_origin, whole.to_origin);
        EXPECT_EQ(r.opened, 1u);
        EXPECT_EQ(r.closed, 1u);
        EXPECT_TRUE(r.both_ended);
    }
}

// Every mbuf allocation of a tunnel's life failing in turn: the tunnel
// either carries every byte, or ends with a counted no_buffer, both sides
// closed or reset, and what each side got is a prefix of what it should
// have (nothing skipped); the bed checks that no mbuf leaked.
TEST(Tunnel, EveryAllocationOfATunnelFailsCleanly) {
    const tunnel_run base = script(0);
    ASSERT_EQ(base.no_buffer, 0u);
    uint32_t failed_runs = 0;
    for (uint32_t k = 1; k < 60; ++k) {
        SCOPED_TRACE("allocation " + std::to_string(k) + " fails");
        const tunnel_run r = script(0, k);
        EXPECT_TRUE(r.both_ended);
        EXPECT_EQ(r.opened, r.closed);
        if (r.no_buffer == 0) {
            EXPECT_EQ(r.to_client, base.to_client);
            EXPECT_EQ(r.to_origin, base.to_origin);
            continue;
        }
        ++failed_runs;
        EXPECT_TRUE(base.to_origin.starts_with(r.to_origin)) << r.to_origin;
        if (r.opened == 0) {  // before the tunnel: a generated answer (503, 502)
            EXPECT_TRUE(r.to_client.starts_with("HTTP/1.1 50")) << r.to_client;
            continue;
        }
        EXPECT_TRUE(base.to_client.starts_with(r.to_client)) << r.to_client;
    }
    EXPECT_GT(failed_runs, 2u);  // the heads and the tunnel's first bytes at least
}

TEST(Tunnel, BytesGoBothWaysAndEachSideClosesItsDirection) {
    access_log_sink sink(16, 0);
    proxy_bed bed;
    bed.proxy().set_access_log(&sink);
    const size_t cl = open_tunnel(bed, "hi from origin");
    peer_conn &o = *bed.origin();
    peer_conn &c = bed.conn(cl);
    EXPECT_EQ(after_head(c.rx), "hi from origin");
    EXPECT_EQ(bed.ctr().tunnels_opened.get(), 1u);
    EXPECT_EQ(bed.ctr().responses_1xx.get(), 1u);
    // An open tunnel is no exchange waiting for an answer (the adaptive
    // wakeup's hint), though its server counts it busy.
    EXPECT_FALSE(bed.proxy().exchanges_in_flight());
    EXPECT_EQ(bed.proxy().exchanges_count(), 1u);

    const size_t head_up = o.rx.size();
    bed.send(c, "frame one");
    EXPECT_EQ(o.rx.substr(head_up), "frame one");
    // A large message each way: zero-copy chains and backpressure.
    const std::string big_down(300 * 1024, 'd'), big_up(200 * 1024, 'u');
    bed.send(o, big_down);
    bed.send(c, big_up);
    bed.advance(100 * ms);
    EXPECT_EQ(after_head(c.rx), "hi from origin" + big_down);
    EXPECT_EQ(o.rx.substr(head_up), "frame one" + big_up);

    // The client closes its direction: the origin sees the FIN and can still
    // send; then it closes too and the tunnel ends.
    bed.close(c);
    EXPECT_TRUE(o.fin);
    EXPECT_FALSE(c.fin);
    bed.send(o, "last words");
    EXPECT_TRUE(c.rx.ends_with("last words"));
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 0u);
    bed.close(o);
    bed.advance(1000 * ms);
    EXPECT_TRUE(c.fin);
    EXPECT_TRUE(c.closed);
    EXPECT_TRUE(o.closed);
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
    EXPECT_EQ(bed.ctr().tunnel_bytes_up.get(), 9u + big_up.size());
    EXPECT_EQ(bed.ctr().tunnel_bytes_down.get(), 14u + big_down.size() + 10u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
    EXPECT_EQ(bed.ctr().client_aborted.get(), 0u);
    EXPECT_EQ(bed.proxy().exchanges_count(), 0u);
    const auto recs = drain(sink);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].status, 101);
    EXPECT_EQ(recs[0].body_bytes, 9u + big_up.size());
    EXPECT_GT(recs[0].bytes_sent, big_down.size());
    EXPECT_FALSE(recs[0].flags & access_record::f_aborted);
}

// A client that stops reading holds the origin back: ferry reads from the
// origin only what it can queue toward the client, so what is in flight is
// bounded by the TCP windows and queues on the way (not by what the origin
// has to send), and every byte arrives in order once the client reads again.
TEST(Tunnel, AClientThatStopsReadingHoldsTheOriginBack) {
    proxy_bed bed;
    const size_t cl = open_tunnel(bed);
    peer_conn &o = *bed.origin();
    peer_conn &c = bed.conn(cl);
    const size_t head_down = c.rx.size();
    c.paused = true;
    std::string stream(8 << 20, '\0');
    for (size_t i = 0; i < stream.size(); ++i) stream[i] = char('a' + (i * 7 + i / 4096) % 26);
    size_t queued = 0;
    for (int idle = 0; idle < 20 && queued < stream.size();) {
        const size_t k = bed.send_some(o, std::string_view(stream).substr(queued));
        queued += k;
        idle = k == 0 ? idle + 1 : 0;
        bed.advance(20 * ms, 5 * ms);  // window probes, retransmission timers
    }
    // The client's window, ferry's queues toward it, ferry's window toward
    // the origin and the origin's send queue: 256 KiB each here (tcp_conn
    // defaults), a few chains in ferry's out queue; never the 8 MiB.
    EXPECT_LT(queued, size_t(2) << 20);
    EXPECT_GT(queued, size_t(256) << 10);
    EXPECT_EQ(bed.ctr().no_buffer.get(), 0u);
    // Reading again, everything comes, in order, then the rest of the stream.
    while (queued < stream.size()) {
        bed.resume(c);
        queued += bed.send_some(o, std::string_view(stream).substr(queued));
        bed.advance(5 * ms, 5 * ms);
    }
    for (int i = 0; i < 50 && c.rx.size() - head_down < stream.size(); ++i) {
        bed.resume(c);
        bed.advance(10 * ms, 5 * ms);
    }
    EXPECT_TRUE(c.rx.substr(head_down) == stream) << c.rx.size() - head_down << " of " << stream.size();
    EXPECT_EQ(bed.ctr().tunnel_bytes_down.get(), stream.size());
    bed.close(o);
    bed.close(c);
    finish(bed, {cl});
}

// The client half-closes and stops reading; the origin sends its last
// bytes and closes. Its connection is then fully closed (both FINs done)
// while ferry still holds some of those bytes, waiting for room toward the
// client: they must still reach the client, then its FIN (issue 18: once,
// they were dropped with the upstream connection).
TEST(Tunnel, BytesHeldWhenTheOriginsConnectionClosesStillReachTheClient) {
    for (const bool origin_side : {true, false}) {
        proxy_bed bed;
        const size_t cl = open_tunnel(bed);
        peer_conn &o = *bed.origin();
        peer_conn &c = bed.conn(cl);
        peer_conn &sender = origin_side ? o : c;
        peer_conn &reader = origin_side ? c : o;
        const size_t head = reader.rx.size();
        bed.close(reader);  // the reader's direction ends first
        EXPECT_TRUE(sender.fin);
        reader.paused = true;
        std::string stream(700 * 1024, '\0');
        for (size_t i = 0; i < stream.size(); ++i) stream[i] = char('A' + (i * 13 + i / 1000) % 26);
        size_t queued = 0;
        for (int idle = 0; idle < 10 && queued < stream.size();) {
            const size_t k = bed.send_some(sender, std::string_view(stream).substr(queued));
            queued += k;
            idle = k == 0 ? idle + 1 : 0;
            bed.advance(20 * ms, 5 * ms);
        }
        stream.resize(queued);
        bed.close(sender);
        bed.advance(200 * ms, 10 * ms);
        // A slow reader: ferry's queue toward it stays full, so the last
        // bytes are read from the sender's connection while they cannot go
        // on yet, and that connection then closes.
        for (int i = 0; i < 20000 && !reader.fin; ++i) {
            bed.read_some(reader, 2);
            bed.advance(1 * ms, 1 * ms);
        }
        bed.resume(reader);
        EXPECT_TRUE(reader.fin) << origin_side;
        EXPECT_EQ(reader.rx.size() - head, stream.size()) << origin_side;
        EXPECT_TRUE(reader.rx.substr(head) == stream) << origin_side;
        bed.advance(2000 * ms, 100 * ms);
        EXPECT_TRUE(c.closed && o.closed) << origin_side;
        EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u) << origin_side;
        EXPECT_EQ(bed.proxy().open_connections(), 0u) << origin_side;
    }
}

TEST(Tunnel, TheOriginClosingFirstIsPassedOnAndTheClientMayStillSend) {
    proxy_bed bed;
    const size_t cl = open_tunnel(bed);
    peer_conn &o = *bed.origin();
    peer_conn &c = bed.conn(cl);
    const size_t head_up = o.rx.size();
    bed.close(o);
    EXPECT_TRUE(c.fin);
    bed.send(c, "after your fin");
    EXPECT_EQ(o.rx.substr(head_up), "after your fin");
    bed.close(c);
    bed.advance(1000 * ms);
    EXPECT_TRUE(o.closed);
    EXPECT_TRUE(c.closed);
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
    EXPECT_EQ(bed.ctr().upstream_aborted.get(), 0u);
}

TEST(Tunnel, AResetOnEitherSideResetsTheOther) {
    for (const bool origin_resets : {true, false}) {
        access_log_sink sink(16, 0);
        proxy_bed bed;
        bed.proxy().set_access_log(&sink);
        const size_t cl = open_tunnel(bed, "x");
        peer_conn &o = *bed.origin();
        peer_conn &c = bed.conn(cl);
        bed.reset(origin_resets ? o : c);
        bed.advance(100 * ms);
        EXPECT_TRUE(c.closed) << origin_resets;
        EXPECT_TRUE(o.closed) << origin_resets;
        EXPECT_FALSE(origin_resets ? c.fin : o.fin) << "a reset, not a FIN";
        EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
        EXPECT_EQ(bed.proxy().exchanges_count(), 0u);
        const auto recs = drain(sink);
        ASSERT_EQ(recs.size(), 1u);
        EXPECT_EQ(recs[0].status, 101);
        EXPECT_TRUE(recs[0].flags & access_record::f_aborted);
    }
}

TEST(Tunnel, NeitherSideSendingForTheIdleTimeoutClosesBoth) {
    bed_options opt;
    opt.toml = bed_config("tunnel_idle_timeout_ms = 1000\n");
    proxy_bed bed(opt);
    const size_t cl = open_tunnel(bed);
    peer_conn &o = *bed.origin();
    peer_conn &c = bed.conn(cl);
    // Traffic one way only keeps it open.
    for (int i = 0; i < 4; ++i) {
        bed.advance(700 * ms, 100 * ms);
        bed.send(o, "tick");
    }
    EXPECT_FALSE(c.fin);
    EXPECT_EQ(bed.ctr().timeouts_tunnel.get(), 0u);
    bed.advance(1100 * ms, 100 * ms);
    EXPECT_EQ(bed.ctr().timeouts_tunnel.get(), 1u);
    EXPECT_TRUE(c.fin);
    EXPECT_TRUE(o.fin);
    EXPECT_EQ(after_head(c.rx), "ticktickticktick");
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
    finish(bed, {cl});
}

TEST(Tunnel, AnUpgradeTheOriginDeclinesGoesOnAsPlainHttp) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl, ws_req);
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 OK\r\n")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().upgrades_declined.get(), 1u);
    EXPECT_EQ(bed.ctr().tunnels_opened.get(), 0u);
    // The connection stays HTTP: the next request is answered.
    bed.conn(cl).rx.clear();
    bed.origin()->rx.clear();
    bed.send(cl, simple_get);
    EXPECT_TRUE(bed.origin()->rx.starts_with("GET /p HTTP/1.1\r\n")) << bed.origin()->rx;
    bed.send(*bed.origin(), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 OK\r\n"));
    finish(bed, {cl});
}

TEST(Tunnel, H2cAndHttp10UpgradesAreIgnoredConnectAndABodyAre501) {
    {
        proxy_bed bed;
        const size_t cl = bed.connect();
        bed.send(cl,
                 "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                 "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n");
        ASSERT_EQ(bed.origin_count(), 1u);
        const std::string &fwd = bed.origin()->rx;
        EXPECT_EQ(fwd.find("pgrade"), std::string::npos) << fwd;
        EXPECT_EQ(fwd.find("HTTP2-Settings"), std::string::npos) << fwd;
        bed.send(*bed.origin(), ok5);
        EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 OK\r\n"));
        bed.send(cl, "GET / HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
        EXPECT_EQ(bed.ctr().upgrades_ignored.get(), 2u);
        finish(bed, {cl});
    }
    for (std::string_view req :
         {std::string_view("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"),
          std::string_view("POST /chat HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n"
                           "Upgrade: websocket\r\nContent-Length: 2\r\n\r\nab")}) {
        proxy_bed bed;
        const size_t cl = bed.connect();
        bed.send(cl, req);
        EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 501 ")) << bed.conn(cl).rx;
        EXPECT_EQ(bed.origin_count(), 0u);
        EXPECT_EQ(bed.ctr().upgrades_refused.get(), 1u);
        finish(bed, {cl});
    }
}

TEST(Tunnel, A101NobodyAskedForIs502) {
    bed_options opt;
    opt.toml = bed_config("", "retries = 0\n");  // else a GET is replayed once
    proxy_bed bed(opt);
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    bed.send(*bed.origin(), ws_101);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(cl).rx;
    EXPECT_EQ(bed.ctr().tunnels_opened.get(), 0u);
    finish(bed, {cl});
    // Nor a 101 without Upgrade to an upgrade request.
    proxy_bed bed2(opt);
    const size_t cl2 = bed2.connect();
    bed2.send(cl2, ws_req);
    bed2.send(*bed2.origin(), "HTTP/1.1 101 Switching Protocols\r\n\r\n");
    EXPECT_TRUE(bed2.conn(cl2).rx.starts_with("HTTP/1.1 502 ")) << bed2.conn(cl2).rx;
    finish(bed2, {cl2});
}

// SIGTERM's drain lets an open tunnel run (its connections count as open)
// until the drain timeout, whose abort resets both sides and ends it once.
TEST(Tunnel, ADrainLetsATunnelRunUntilItsTimeoutResetsIt) {
    proxy_bed bed;
    const size_t cl = open_tunnel(bed);
    peer_conn &o = *bed.origin();
    peer_conn &c = bed.conn(cl);
    bed.proxy().begin_drain(bed.now());
    bed.pump();
    const size_t head_up = o.rx.size();
    bed.send(c, "during the drain");
    EXPECT_EQ(o.rx.substr(head_up), "during the drain");
    EXPECT_EQ(bed.proxy().open_connections(), 2u);
    bed.proxy().abort_all(bed.now());
    bed.advance(100 * ms);
    EXPECT_TRUE(c.closed);
    EXPECT_TRUE(o.closed);
    EXPECT_FALSE(c.fin);
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
    EXPECT_EQ(bed.proxy().open_connections(), 0u);
    EXPECT_EQ(bed.proxy().exchanges_count(), 0u);
}

TEST(Tunnel, ASharedPoolUpstreamTunnelsOnAConnectionOfItsOwn) {
    bed_options opt;
    opt.toml = bed_config("", "pool = \"shared\"\nshared_connections = 1\n");
    proxy_bed bed(opt);
    const size_t ws = open_tunnel(bed);
    // A plain request meanwhile gets the shared connection, not the tunnel's.
    const size_t cl = bed.connect();
    bed.send(cl, simple_get);
    ASSERT_EQ(bed.origin_count(), 2u);
    EXPECT_TRUE(bed.origin(1)->rx.starts_with("GET /p HTTP/1.1\r\n"));
    bed.send(*bed.origin(1), ok5);
    EXPECT_TRUE(bed.conn(cl).rx.starts_with("HTTP/1.1 200 OK\r\n"));
    const size_t head_up = bed.origin(0)->rx.size();
    bed.send(ws, "still here");
    EXPECT_EQ(bed.origin(0)->rx.substr(head_up), "still here");
    bed.close(*bed.origin(0));
    finish(bed, {ws, cl});
    EXPECT_EQ(bed.ctr().tunnels_closed.get(), 1u);
}

}  // namespace
}  // namespace ferry::proxy::test
