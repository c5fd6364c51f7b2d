// The proxy's head buffers (worker_proxy::head_buffers(), issue 15): held
// while a head is read, whatever the reads' sizes, given back when it is
// dispatched; and the clients' share of them capped by [http]
// client_head_buffers, past which a new head is answered 503.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

// A request head and a response head split in two reads at every byte
// offset, each piece in its own poll: whatever the split, the buffer is held
// from the first piece on, the head is forwarded exactly as the unsplit one
// was, and the buffer goes back once the head is dispatched.
TEST(HeadBuffers, AHeadSplitAtEveryOffsetKeepsItsBufferAndGivesItBack) {
    proxy_bed bed;
    const block_pool &heads = bed.proxy().head_buffers();
    const std::string req = "GET /split HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n";
    const std::string resp = "HTTP/1.1 200 OK\r\nX-B: 2\r\nContent-Length: 5\r\n\r\nhello";
    // Unsplit: what ferry forwards and answers.
    const size_t c0 = bed.connect();
    bed.send(c0, req);
    peer_conn &o = *bed.origin();
    const std::string fwd = o.rx;
    ASSERT_TRUE(fwd.starts_with("GET /split HTTP/1.1\r\n")) << fwd;
    o.rx.clear();
    bed.send(o, resp);
    const std::string answer = bed.conn(c0).rx;
    ASSERT_TRUE(answer.ends_with("hello")) << answer;
    ASSERT_EQ(heads.in_use(), 0u);
    bed.close(c0);
    const size_t resp_head = resp.find("\r\n\r\n") + 4;
    for (size_t k = 1; k < req.size(); ++k) {
        SCOPED_TRACE("split at " + std::to_string(k));
        const size_t cl = bed.connect();
        bed.send(cl, std::string_view(req).substr(0, k));
        EXPECT_EQ(heads.in_use(), 1u);
        EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 1u);
        EXPECT_EQ(o.rx, "");
        bed.send(cl, std::string_view(req).substr(k));
        EXPECT_EQ(o.rx, fwd);
        EXPECT_EQ(heads.in_use(), 0u);
        o.rx.clear();
        // The response head split at k too (within the head; the body whole).
        const size_t r = std::min(k, resp_head - 1);
        bed.send(o, std::string_view(resp).substr(0, r));
        EXPECT_EQ(heads.in_use(), 1u);
        EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 0u);
        bed.send(o, std::string_view(resp).substr(r));
        EXPECT_EQ(bed.conn(cl).rx, answer);
        EXPECT_EQ(heads.in_use(), 0u);
        bed.close(cl);
    }
    EXPECT_EQ(bed.origin_count(), 1u);  // one upstream connection, reused throughout
    EXPECT_EQ(bed.ctr().requests.get(), req.size());
    EXPECT_LE(heads.touched(), 2u);
    EXPECT_EQ(bed.ctr().head_buffers_exhausted.get(), 0u);
    bed.advance(2000 * ms, 100 * ms);
}

// A head one byte per read: one buffer held all along, given back at the end.
TEST(HeadBuffers, AHeadOneByteAPollHoldsOneBuffer) {
    proxy_bed bed;
    const block_pool &heads = bed.proxy().head_buffers();
    const std::string req = "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
    const size_t cl = bed.connect();
    const size_t head = req.size() - 3;
    for (size_t i = 0; i + 1 < head; ++i) {
        bed.send(cl, std::string_view(req).substr(i, 1));
        EXPECT_EQ(heads.in_use(), 1u) << "after byte " << i;
    }
    bed.send(cl, std::string_view(req).substr(head - 1, 1));
    peer_conn &o = *bed.origin();
    EXPECT_TRUE(o.rx.ends_with("\r\n\r\n")) << o.rx;
    EXPECT_EQ(heads.in_use(), 0u);  // the head dispatched, no body byte buffered
    bed.send(cl, "abc");
    EXPECT_TRUE(o.rx.ends_with("\r\n\r\nabc")) << o.rx;
    bed.send(o, ok5);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("hello")) << bed.conn(cl).rx;
    EXPECT_EQ(heads.in_use(), 0u);
    EXPECT_EQ(heads.touched(), 1u);  // the client's, given back, then the upstream connection's
    finish(bed, {cl});
}

// [http] client_head_buffers: past it a new request head is answered 503
// and counted; the connections that hold one go on, a response head still
// finds a buffer, and a buffer given back serves the next client.
TEST(HeadBuffers, PastClientHeadBuffersTheNextHeadIsAnswered503) {
    bed_options opt;
    opt.toml = bed_config("client_head_buffers = 2\n");
    proxy_bed bed(opt);
    const block_pool &heads = bed.proxy().head_buffers();
    EXPECT_EQ(bed.proxy().client_head_buffers(), 2u);
    EXPECT_EQ(heads.capacity(), 2u + 64u);  // the clients' two, one per upstream connection slot
    const std::string_view part = "GET /p HTTP/1.1\r\nHo";
    const std::string_view rest = "st: h\r\n\r\n";
    const size_t a = bed.connect(), b = bed.connect(), c = bed.connect();
    bed.send(a, part);
    bed.send(b, part);
    EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 2u);
    EXPECT_EQ(bed.ctr().head_buffers_exhausted.get(), 0u);
    bed.send(c, part);
    EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 503 ")) << bed.conn(c).rx;
    EXPECT_TRUE(bed.conn(c).fin);
    EXPECT_EQ(bed.ctr().head_buffers_exhausted.get(), 1u);
    EXPECT_EQ(bed.ctr().responses_5xx.get(), 1u);
    // a's head completes: forwarded, its buffer given back.
    bed.send(a, rest);
    peer_conn &o = *bed.origin();
    EXPECT_EQ(o.rx.find("GET /p HTTP/1.1\r\n"), 0u) << o.rx;
    EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 1u);
    // A new client takes it.
    const size_t d = bed.connect();
    bed.send(d, part);
    EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 2u);
    EXPECT_EQ(bed.ctr().head_buffers_exhausted.get(), 1u);
    // With the clients' buffers all held, a response head in two reads
    // still has one.
    o.rx.clear();
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-");
    EXPECT_EQ(heads.in_use(), 3u);
    bed.send(o, "Length: 5\r\n\r\nhello");
    EXPECT_TRUE(bed.conn(a).rx.ends_with("hello")) << bed.conn(a).rx;
    // b and d complete and are served, on whichever upstream connections.
    bed.send(b, rest);
    bed.send(d, rest);
    size_t answered = 0;
    for (size_t i = 0; bed.origin(i) != nullptr; ++i) {
        peer_conn &oi = *bed.origin(i);
        while (oi.rx.find("\r\n\r\n") != std::string::npos) {
            oi.rx.erase(0, oi.rx.find("\r\n\r\n") + 4);
            bed.send(oi, ok5);
            ++answered;
        }
    }
    EXPECT_EQ(answered, 2u);
    EXPECT_TRUE(bed.conn(b).rx.ends_with("hello")) << bed.conn(b).rx;
    EXPECT_TRUE(bed.conn(d).rx.ends_with("hello")) << bed.conn(d).rx;
    EXPECT_EQ(bed.ctr().head_buffers_exhausted.get(), 1u);
    EXPECT_EQ(bed.proxy().client_head_buffers_in_use(), 0u);
    EXPECT_EQ(heads.in_use(), 0u);
    finish(bed, {a, b, d});
}

}  // namespace
}  // namespace ferry::proxy::test
