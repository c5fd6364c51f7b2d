// What ferry puts on the wire per exchange (issue 17): a keep-alive request
// and its response cost one segment each way on each leg when the peers send
// them whole, with ferry's ACKs riding on the data it sends. The bed runs the
// worker's order: frames in, the proxy, then the TCP layer's flush
// (tcp_conn_config::defer_output) before anything leaves.
#include <gtest/gtest.h>

#include <string>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view resp3 = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";

// One exchange on an open client connection and a pooled upstream one.
void exchange(proxy_bed &bed, size_t cl) {
    if (bed.origin() != nullptr) bed.origin()->rx.clear();
    bed.conn(cl).rx.clear();
    bed.send(cl, simple_get);
    ASSERT_NE(bed.origin(), nullptr);
    peer_conn &o = *bed.origin();
    ASSERT_TRUE(o.rx.starts_with("GET /p ")) << o.rx;
    bed.send(o, resp3);
    ASSERT_TRUE(bed.conn(cl).rx.ends_with("\r\n\r\nabc")) << bed.conn(cl).rx;
}

// A client connection with one exchange done (the upstream connection open)
// and the delayed ACKs out of the way.
size_t warm(proxy_bed &bed) {
    const size_t cl = bed.connect();
    exchange(bed, cl);
    bed.advance(100 * ms);
    return cl;
}

TEST(Segments, AKeepAliveExchangeIsOneSegmentEachWayOnEachLeg) {
    proxy_bed bed;
    const size_t cl = warm(bed);
    for (int i = 0; i < 3; ++i) {
        bed.clear_frames();
        exchange(bed, cl);
        // The response head ferry writes and the body it forwards leave in
        // one segment; the ACK of the request rides on it.
        EXPECT_EQ(bed.frames_from_ferry(true, true), 1u) << "exchange " << i;
        EXPECT_EQ(bed.frames_from_ferry(true, false), 0u) << "exchange " << i;
        // The request toward the origin: one segment, and no pure ACK yet
        // (the response's ACK is delayed: it rides on the next request).
        EXPECT_EQ(bed.frames_from_ferry(false, true), 1u) << "exchange " << i;
        EXPECT_EQ(bed.frames_from_ferry(false, false), 0u) << "exchange " << i;
    }
    finish(bed, {cl});
}

// A response whose head and body the origin sends apart still goes out as
// they come (one segment each): coalescing never waits for more.
TEST(Segments, AResponseSentInTwoPiecesGoesOutAsItComes) {
    proxy_bed bed;
    const size_t cl = warm(bed);
    bed.clear_frames();
    peer_conn &o = *bed.origin();
    bed.send(cl, simple_get);
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n");
    EXPECT_EQ(bed.frames_from_ferry(true, true), 1u);
    bed.send(o, "abc");
    EXPECT_EQ(bed.frames_from_ferry(true, true), 2u);
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("\r\n\r\nabc"));
    finish(bed, {cl});
}

// An origin that writes its head and body apart with Nagle's algorithm on
// (Python's http.server) holds the body until the head is acknowledged: the
// ACK goes as soon as ferry has read the head and waits for the body, not 40
// ms later at the delayed-ACK timeout (issue 17: 41-43 ms per response
// through ferry, 1.1 ms direct). The same for a client's request head sent in
// two pieces.
TEST(Segments, APartOfAMessageIsAcknowledgedAtOnce) {
    proxy_bed bed;
    const size_t cl = warm(bed);
    const uint64_t quick0 = bed.ferry_tcp().quick_acks.get();
    const uint64_t delayed0 = bed.ferry_tcp().delayed_acks.get();
    bed.clear_frames();
    peer_conn &o = *bed.origin();
    o.rx.clear();
    bed.send(cl, simple_get);
    bed.send(o, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n");  // no time passes
    EXPECT_EQ(bed.frames_from_ferry(false, false), 1u) << "the head's ACK toward the origin";
    bed.send(o, "abc");
    EXPECT_TRUE(bed.conn(cl).rx.ends_with("\r\n\r\nabc"));

    // A request head in two pieces.
    bed.clear_frames();
    o.rx.clear();
    bed.send(cl, "GET /p HTTP/1.1\r\n");
    EXPECT_EQ(bed.frames_from_ferry(true, false), 1u) << "the first piece's ACK";
    bed.send(cl, "Host: h\r\n\r\n");
    EXPECT_TRUE(o.rx.starts_with("GET /p ")) << o.rx;
    bed.send(o, resp3);
    EXPECT_EQ(bed.ferry_tcp().quick_acks.get() - quick0, 2u);
    EXPECT_EQ(bed.ferry_tcp().delayed_acks.get() - delayed0, 0u);
    finish(bed, {cl});
}

}  // namespace
}  // namespace ferry::proxy::test
