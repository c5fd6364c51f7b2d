// Canonical framing (issue 15, finding 1): ferry forwards framing it derived
// itself, never the framing bytes it received. A message whose framing ferry
// accepts although it is not canonical (Content-Length repeated as a list or
// in several lines, "Chunked", chunk-size with leading zeros or upper case,
// chunk extensions, trailers) reaches the next hop with exactly one
// Content-Length carrying the parsed value, or with "Transfer-Encoding:
// chunked" and a body ferry re-framed: lower-case hex sizes without leading
// zeros, no extensions, no trailer section. A strict next hop that rejected
// the received form would otherwise answer with an error, and the responses
// on a keep-alive connection would then belong to the wrong requests.
//
// Each case is fed whole and split at every byte offset (each piece in its
// own poll), so the copy path (body bytes that came with the head) and the
// mbuf path (the body pump) both produce the same canonical bytes.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bed.h"

namespace ferry::proxy::test {
namespace {

constexpr std::string_view ok_resp =
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

size_t count_of(std::string_view hay, std::string_view needle) {
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string_view::npos;
         at = hay.find(needle, at + 1))
        ++n;
    return n;
}

std::string head_of(std::string_view msg) {
    const size_t e = msg.find("\r\n\r\n");
    return e == std::string_view::npos ? std::string(msg) : std::string(msg.substr(0, e + 4));
}

struct seen {
    std::string forwarded;  // what the origin received
    std::string response;   // what the client received
    uint64_t trailers_dropped = 0;
};

// One exchange on a fresh bed; the request split at `req_split` and the
// response at `resp_split` (0: whole), each piece in its own poll.
seen exchange(std::string_view req, std::string_view resp, size_t req_split = 0,
              size_t resp_split = 0) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    if (req_split == 0) {
        bed.send(cl, req);
    } else {
        bed.send(cl, req.substr(0, req_split));
        bed.send(cl, req.substr(req_split));
    }
    seen s;
    peer_conn *o = bed.origin();
    if (o != nullptr) {
        s.forwarded = o->rx;
        if (resp_split == 0) {
            bed.send(*o, resp);
        } else {
            bed.send(*o, resp.substr(0, resp_split));
            bed.send(*o, resp.substr(resp_split));
        }
    }
    s.response = bed.conn(cl).rx;
    s.trailers_dropped = bed.ctr().trailers_dropped.get();
    bed.close(cl);
    bed.advance(200 * ms);
    return s;
}

// Every split of `req` forwards exactly `want_head_has` (each once), no
// field in `want_absent`, and the body `want_body`.
void expect_request_canonical(std::string_view req, std::string_view want_field,
                              std::initializer_list<std::string_view> want_absent,
                              std::string_view want_body) {
    for (size_t k = 0; k < req.size(); ++k) {
        const seen s = exchange(req, ok_resp, k, 0);
        const std::string h = head_of(s.forwarded);
        ASSERT_EQ(count_of(h, want_field), 1u) << "split " << k << ":\n" << s.forwarded;
        for (std::string_view a : want_absent)
            ASSERT_EQ(h.find(a), std::string::npos) << "split " << k << ": " << a << "\n" << h;
        ASSERT_EQ(body_of(s.forwarded), want_body) << "split " << k;
        ASSERT_EQ(s.response.substr(0, 17), "HTTP/1.1 200 OK\r\n") << "split " << k;
    }
}

TEST(Framing, ContentLengthListIsForwardedAsOneField) {
    expect_request_canonical(
        "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\nhello",
        "\r\nContent-Length: 5\r\n", {"5, 5", "content-length"}, "hello");
}

TEST(Framing, RepeatedContentLengthLinesAreForwardedAsOneField) {
    expect_request_canonical(
        "POST /u HTTP/1.1\r\nHost: h\r\ncontent-length: 5\r\nX-A: 1\r\n"
        "Content-Length:  5 \r\n\r\nhello",
        "\r\nContent-Length: 5\r\n", {"content-length", "Content-Length:  5"}, "hello");
}

TEST(Framing, ChunkedRequestIsReframed) {
    // Upper-case coding name, leading zeros, upper-case hex, extensions (a
    // quoted one with a CRLF-looking escape), a trailer section.
    expect_request_canonical(
        "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\nTrailer: X-T\r\n\r\n"
        "005;a=b\r\nhello\r\n0A;q=\"x\\\"y\"\r\n0123456789\r\n1 ; z\r\n!\r\n"
        "000;end=1\r\nX-T: v\r\n\r\n",
        "\r\nTransfer-Encoding: chunked\r\n", {"Chunked", "Trailer", "X-T"},
        "5\r\nhello\r\na\r\n0123456789\r\n1\r\n!\r\n0\r\n\r\n");
}

TEST(Framing, EmptyChunkedRequestIsReframed) {
    expect_request_canonical(
        "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n00\r\n\r\n",
        "\r\nTransfer-Encoding: chunked\r\n", {}, "0\r\n\r\n");
}

TEST(Framing, ChunkedResponseIsReframedAndItsTrailersCounted) {
    constexpr std::string_view req = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    constexpr std::string_view resp =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\nTrailer: X-Sum\r\n\r\n"
        "3;x=y\r\nabc\r\n00010\r\n0123456789abcdef\r\n0\r\nX-Sum: 1\r\n\r\n";
    for (size_t k = 0; k < resp.size(); ++k) {
        const seen s = exchange(req, resp, 0, k);
        const std::string h = head_of(s.response);
        ASSERT_EQ(count_of(h, "\r\nTransfer-Encoding: chunked\r\n"), 1u) << k << "\n" << h;
        ASSERT_EQ(h.find("CHUNKED"), std::string::npos) << k;
        ASSERT_EQ(h.find("Trailer"), std::string::npos) << k;
        ASSERT_EQ(body_of(s.response), "3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n")
            << "split " << k;
        ASSERT_EQ(s.trailers_dropped, 1u) << k;
    }
}

TEST(Framing, ContentLengthListInAResponseIsOneField) {
    constexpr std::string_view req = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    constexpr std::string_view resp =
        "HTTP/1.1 200 OK\r\nContent-Length: 3,3\r\nContent-Length: 3\r\n\r\nabc";
    const seen s = exchange(req, resp);
    const std::string h = head_of(s.response);
    EXPECT_EQ(count_of(h, "Content-Length"), 1u) << h;
    EXPECT_EQ(count_of(h, "\r\nContent-Length: 3\r\n"), 1u) << h;
    EXPECT_EQ(body_of(s.response), "abc");
}

// A HEAD answer keeps the length it announces, in one field.
TEST(Framing, HeadResponseKeepsOneContentLength) {
    constexpr std::string_view req = "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n";
    constexpr std::string_view resp = "HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n";
    const seen s = exchange(req, resp);
    EXPECT_EQ(count_of(s.response, "\r\nContent-Length: 7\r\n"), 1u) << s.response;
    EXPECT_EQ(s.response.find("7, 7"), std::string::npos) << s.response;
}

// An HTTP/1.0 client cannot receive chunked coding (RFC 9112 §6.1): ferry
// asks the origin in HTTP/1.0, and if it chunks anyway the client gets the
// payload alone, delimited by the close.
TEST(Framing, ChunkedResponseToAnHttp10ClientIsDechunked) {
    constexpr std::string_view req = "GET / HTTP/1.0\r\nHost: h\r\n\r\n";
    constexpr std::string_view resp =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;e\r\nde\r\n0\r\n\r\n";
    for (size_t k = 0; k < resp.size(); ++k) {
        const seen s = exchange(req, resp, 0, k);
        const std::string h = head_of(s.response);
        ASSERT_EQ(h.find("Transfer-Encoding"), std::string::npos) << k << "\n" << h;
        ASSERT_NE(h.find("\r\nConnection: close\r\n"), std::string::npos) << k << "\n" << h;
        ASSERT_EQ(body_of(s.response), "abcde") << "split " << k;
    }
}

// The desync this prevents: two pipelined requests, the first with a
// repeated Content-Length. The origin sees two well-formed requests, each
// with one Content-Length, and the client gets both answers in order.
TEST(Framing, PipelinedRequestsAfterARepeatedLengthStayInStep) {
    proxy_bed bed;
    const size_t cl = bed.connect();
    bed.send(cl,
             "POST /1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
             "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
    peer_conn *o = bed.origin();
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(count_of(o->rx, "Content-Length"), 1u) << o->rx;
    EXPECT_TRUE(o->rx.ends_with("\r\n\r\nabc")) << o->rx;
    o->rx.clear();
    bed.send(*o, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(o->rx.starts_with("GET /2 HTTP/1.1\r\n")) << o->rx;
    bed.send(*o, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    const std::string &got = bed.conn(cl).rx;
    const size_t a = got.find("201 Created"), b = got.find("202 Accepted");
    EXPECT_NE(a, std::string::npos) << got;
    EXPECT_NE(b, std::string::npos) << got;
    EXPECT_LT(a, b);
    bed.close(cl);
    bed.advance(200 * ms);
}

}  // namespace
}  // namespace ferry::proxy::test
