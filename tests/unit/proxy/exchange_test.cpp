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

}  // namespace
}  // namespace ferry::proxy::test
