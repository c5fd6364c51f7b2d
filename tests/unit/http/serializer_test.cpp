// The serializer: hop-by-hop removal (RFC 9110 §7.6.1), Via (§7.6.3),
// X-Forwarded-For/-Proto, Host for absolute-form (RFC 9112 §3.2.2), error
// responses, and output buffers that are too small.
#include <deque>
#include <string>
#include <vector>

#include "ferry/http/serializer.h"
#include "ferry/http/status.h"
#include "test_support.h"

namespace ferry::http::test {
namespace {

// Keeps parsed inputs alive for the whole test binary (the views point into them).
const std::string &keep(std::string s) {
    static std::deque<std::string> kept;
    return kept.emplace_back(std::move(s));
}

// Parses a request head (which must be valid) into `storage`.
request parse_req(std::string in_, std::vector<header> &storage) {
    const std::string &in = keep(std::move(in_));
    head_parser p;
    request r;
    storage.resize(64);
    const parse_result res = parse_request(p, in, r, storage);
    EXPECT_EQ(res.st, parse_result::status::done) << dump_result(res);
    return r;
}

response parse_resp(std::string in_, std::vector<header> &storage, request_info info = {}) {
    const std::string &in = keep(std::move(in_));
    head_parser p;
    response r;
    storage.resize(64);
    const parse_result res = parse_response(p, in, info, r, storage);
    EXPECT_EQ(res.st, parse_result::status::done) << dump_result(res);
    return r;
}

std::string ser_req(const request &r, const forward_info &fi) {
    std::string out(16384, '\0');
    const std::size_t n = serialize_request_head(r, fi, out);
    EXPECT_GT(n, 0u);
    out.resize(n);
    return out;
}

std::string ser_resp(const response &r, const forward_info &fi) {
    std::string out(16384, '\0');
    const std::size_t n = serialize_response_head(r, fi, out);
    EXPECT_GT(n, 0u);
    out.resize(n);
    return out;
}

TEST(serializer, request_basic) {
    std::vector<header> st;
    const std::string in = "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n";
    const request r = parse_req(in, st);
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    EXPECT_EQ(ser_req(r, fi),
              "GET /a?b HTTP/1.1\r\n"
              "Host: example.com\r\n"
              "Accept: */*\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-For: 192.0.2.7\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    fi.keep_alive = false;
    fi.via_name = "edge-1";
    fi.proto = "https";
    EXPECT_EQ(ser_req(r, fi),
              "GET /a?b HTTP/1.1\r\n"
              "Host: example.com\r\n"
              "Accept: */*\r\n"
              "Via: 1.1 edge-1\r\n"
              "X-Forwarded-For: 192.0.2.7\r\n"
              "X-Forwarded-Proto: https\r\n"
              "Connection: close\r\n"
              "\r\n");
}

TEST(serializer, request_drops_hop_by_hop_and_connection_named_fields) {
    std::vector<header> st;
    const std::string in =
        "POST /u HTTP/1.1\r\n"
        "Host: a\r\n"
        "Connection: keep-alive, X-Secret , x-other\r\n"
        "Keep-Alive: timeout=5\r\n"
        "Proxy-Connection: keep-alive\r\n"
        "TE: trailers\r\n"
        "Upgrade: h2c\r\n"
        "X-Secret: s\r\n"
        "X-OTHER: o\r\n"
        "Trailer: X-Checksum\r\n"
        "Transfer-Encoding: chunked\r\n"
        "X-Kept: k\r\n"
        "\r\n";
    const request r = parse_req(in, st);
    forward_info fi;
    EXPECT_EQ(ser_req(r, fi),
              "POST /u HTTP/1.1\r\n"
              "Host: a\r\n"
              "Transfer-Encoding: chunked\r\n"
              "X-Kept: k\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
}

// A tunnelled upgrade (forward_info::upgrade): the Upgrade values go on as
// one line with Connection: upgrade, the other hop-by-hop fields are still
// dropped; the 101 that accepts it carries the same pair. Without the flag
// Upgrade is dropped like any hop-by-hop field.
TEST(serializer, lists_token_reads_every_line_of_a_list_field) {
    std::vector<header> st;
    const request r = parse_req(
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n"
        "UPGRADE: foo ,  H2C\t, bar\r\nX-H2c: h2c\r\n\r\n",
        st);
    EXPECT_TRUE(lists_token(r.headers, "upgrade", "h2c"));
    EXPECT_TRUE(lists_token(r.headers, "upgrade", "websocket"));
    EXPECT_FALSE(lists_token(r.headers, "upgrade", "h2"));
    EXPECT_FALSE(lists_token(r.headers, "connection", "h2c"));
}

TEST(serializer, upgrade_goes_on_as_one_line_with_connection_upgrade) {
    std::vector<header> st, st2, st3;
    const request r = parse_req(
        "GET /chat HTTP/1.1\r\n"
        "Host: a\r\n"
        "Connection: keep-alive, Upgrade, X-Hop\r\n"
        "Upgrade: websocket\r\n"
        "X-Hop: 1\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Upgrade: x-other/2\r\n"
        "Sec-WebSocket-Version: 13\r\n"
        "\r\n",
        st);
    ASSERT_TRUE(r.upgrade);
    forward_info fi;
    fi.upgrade = true;
    const std::string out = ser_req(r, fi);
    EXPECT_EQ(out,
              "GET /chat HTTP/1.1\r\n"
              "Host: a\r\n"
              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              "Sec-WebSocket-Version: 13\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Upgrade: websocket, x-other/2\r\n"
              "Connection: upgrade\r\n"
              "\r\n");
    EXPECT_TRUE(parse_req(out, st2).upgrade);  // the next hop sees the upgrade
    fi.upgrade = false;
    EXPECT_EQ(ser_req(r, fi).find("pgrade"), std::string::npos);

    const request_info ri;
    const response resp = parse_resp(
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        "\r\n",
        st3, ri);
    forward_info rf;
    rf.upgrade = true;
    EXPECT_EQ(ser_resp(resp, rf),
              "HTTP/1.1 101 Switching Protocols\r\n"
              "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
              "Via: 1.1 ferry\r\n"
              "Upgrade: websocket\r\n"
              "Connection: upgrade\r\n"
              "\r\n");
}

// Naming a framing field in Connection must not change the framing the next
// hop sees: Transfer-Encoding, Content-Length, Trailer and Host stay.
TEST(serializer, framing_fields_survive_connection_naming_them) {
    std::vector<header> st;
    const std::string in =
        "POST /u HTTP/1.1\r\n"
        "Host: a\r\n"
        "Connection: Content-Length, Host, Trailer, X-Forwarded-For\r\n"
        "Content-Length: 5\r\n"
        "X-Forwarded-For: 198.51.100.1\r\n"
        "\r\n";
    const request r = parse_req(in, st);
    EXPECT_FALSE(is_hop_by_hop("Content-Length", r));
    EXPECT_FALSE(is_hop_by_hop("host", r));
    EXPECT_TRUE(is_hop_by_hop("x-forwarded-for", r));
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    EXPECT_EQ(ser_req(r, fi),
              "POST /u HTTP/1.1\r\n"
              "Host: a\r\n"
              "Content-Length: 5\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-For: 192.0.2.7\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    const std::string in2 =
        "POST /u HTTP/1.1\r\nHost: a\r\nConnection: transfer-encoding\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
    const request r2 = parse_req(in2, st);
    EXPECT_FALSE(is_hop_by_hop("Transfer-Encoding", r2));
    EXPECT_NE(ser_req(r2, fi).find("Transfer-Encoding: chunked\r\n"), std::string::npos);
}

TEST(serializer, is_hop_by_hop_table) {
    const header fields[] = {{"Connection", "close"}, {"connection", " ,X-A,  x-b ,"}};
    // "close" is an option, not a field, but a field of that name would go too.
    for (const char *n :
         {"Connection", "KEEP-ALIVE", "proxy-connection", "TE", "upgrade", "x-a", "X-B", "close"})
        EXPECT_TRUE(is_hop_by_hop(n, fields)) << n;
    for (const char *n : {"Transfer-Encoding", "Content-Length", "Trailer", "Host", "X-C", "X-",
                          "x-a2", "Via", "Proxy-Authorization"})
        EXPECT_FALSE(is_hop_by_hop(n, fields)) << n;
    EXPECT_FALSE(is_hop_by_hop("x-a", std::span<const header>{}));
}

TEST(serializer, via_and_xff_append) {
    std::vector<header> st;
    const std::string in =
        "GET / HTTP/1.0\r\n"
        "Host: a\r\n"
        "Via: 1.1 cdn\r\n"
        "X-Forwarded-For: 203.0.113.1\r\n"
        "X-Forwarded-Proto: https\r\n"
        "X-Forwarded-For: 203.0.113.2, 203.0.113.3\r\n"
        "X-Forwarded-For:\r\n"
        "\r\n";
    const request r = parse_req(in, st);
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    EXPECT_EQ(ser_req(r, fi),
              "GET / HTTP/1.1\r\n"
              "Host: a\r\n"
              "Via: 1.1 cdn\r\n"
              "Via: 1.0 ferry\r\n"
              "X-Forwarded-For: 203.0.113.1, 203.0.113.2, 203.0.113.3, 192.0.2.7\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    // No client address: the received chain is still forwarded.
    fi.client_addr = "";
    EXPECT_NE(ser_req(r, fi).find("X-Forwarded-For: 203.0.113.1, 203.0.113.2, 203.0.113.3\r\n"),
              std::string::npos);
}

TEST(serializer, absolute_form_becomes_origin_form_with_host_from_target) {
    std::vector<header> st;
    const request r =
        parse_req("GET http://good.example:8080/p?q HTTP/1.1\r\nHost: evil.example\r\n\r\n", st);
    forward_info fi;
    const std::string out = ser_req(r, fi);
    EXPECT_EQ(out.substr(0, out.find("\r\n")), "GET /p?q HTTP/1.1");
    EXPECT_NE(out.find("\r\nHost: good.example:8080\r\n"), std::string::npos);
    EXPECT_EQ(out.find("evil"), std::string::npos);

    const request r2 = parse_req("GET http://h.example HTTP/1.1\r\nHost: h.example\r\n\r\n", st);
    EXPECT_EQ(ser_req(r2, fi).substr(0, 16), "GET / HTTP/1.1\r\n");
    const request r3 =
        parse_req("GET http://h.example?x=1 HTTP/1.1\r\nHost: h.example\r\n\r\n", st);
    EXPECT_EQ(ser_req(r3, fi).substr(0, 22), "GET /?x=1 HTTP/1.1\r\nHo");
    // HTTP/1.0 absolute-form without Host: Host from the target.
    const request r4 = parse_req("GET http://h.example/ HTTP/1.0\r\n\r\n", st);
    EXPECT_NE(ser_req(r4, fi).find("\r\nHost: h.example\r\n"), std::string::npos);
}

TEST(serializer, http10_without_host_gets_default_host) {
    std::vector<header> st;
    const request r = parse_req("GET / HTTP/1.0\r\n\r\n", st);
    forward_info fi;
    fi.default_host = "backend.internal";
    fi.request_version_minor = 0;
    EXPECT_EQ(ser_req(r, fi),
              "GET / HTTP/1.0\r\n"
              "Host: backend.internal\r\n"
              "Via: 1.0 ferry\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
}

TEST(serializer, asterisk_and_authority_forms_as_received) {
    std::vector<header> st;
    const request r = parse_req("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", st);
    EXPECT_EQ(ser_req(r, {}).substr(0, 20), "OPTIONS * HTTP/1.1\r\n");
    const request c =
        parse_req("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", st);
    EXPECT_EQ(ser_req(c, {}).substr(0, 32), "CONNECT a.example:443 HTTP/1.1\r\n");
}

TEST(serializer, response_basic) {
    std::vector<header> st;
    const response r = parse_resp(
        "HTTP/1.0 200 Fine\r\n"
        "Content-Length: 3\r\n"
        "Connection: keep-alive, X-Internal\r\n"
        "Keep-Alive: timeout=5\r\n"
        "X-Internal: secret\r\n"
        "Set-Cookie: a=1\r\n"
        "Set-Cookie: b=2\r\n"
        "\r\n",
        st);
    forward_info fi;
    EXPECT_EQ(ser_resp(r, fi),
              "HTTP/1.1 200 Fine\r\n"
              "Content-Length: 3\r\n"
              "Set-Cookie: a=1\r\n"
              "Set-Cookie: b=2\r\n"
              "Via: 1.0 ferry\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    fi.keep_alive = false;
    EXPECT_NE(ser_resp(r, fi).find("\r\nConnection: close\r\n\r\n"), std::string::npos);
}

TEST(serializer, response_chunked_keeps_framing_drops_trailer_and_empty_reason) {
    std::vector<header> st;
    const response r =
        parse_resp("HTTP/1.1 404\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n", st);
    EXPECT_EQ(ser_resp(r, {}),
              "HTTP/1.1 404 \r\n"
              "Transfer-Encoding: chunked\r\n"
              "Via: 1.1 ferry\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
}

TEST(serializer, interim_response_has_no_connection_field) {
    std::vector<header> st;
    const response r = parse_resp("HTTP/1.1 100 Continue\r\n\r\n", st);
    EXPECT_EQ(ser_resp(r, {}), "HTTP/1.1 100 Continue\r\nVia: 1.1 ferry\r\n\r\n");
}

TEST(serializer, error_responses) {
    std::string out(512, '\0');
    std::size_t n = serialize_error(400, true, out);
    EXPECT_EQ(out.substr(0, n),
              "HTTP/1.1 400 Bad Request\r\n"
              "Content-Type: text/plain\r\n"
              "Content-Length: 16\r\n"
              "Connection: close\r\n"
              "\r\n"
              "400 Bad Request\n");
    n = serialize_error(503, false, out);
    EXPECT_EQ(out.substr(0, n),
              "HTTP/1.1 503 Service Unavailable\r\n"
              "Content-Type: text/plain\r\n"
              "Content-Length: 24\r\n"
              "Connection: keep-alive\r\n"
              "\r\n"
              "503 Service Unavailable\n");
    n = serialize_error(599, true, out);
    EXPECT_EQ(out.substr(0, n),
              "HTTP/1.1 599 \r\n"
              "Content-Type: text/plain\r\n"
              "Content-Length: 4\r\n"
              "Connection: close\r\n"
              "\r\n"
              "599\n");
    // To a HEAD request: the same head, no body.
    n = serialize_error(503, false, out, true);
    EXPECT_EQ(out.substr(0, n),
              "HTTP/1.1 503 Service Unavailable\r\n"
              "Content-Type: text/plain\r\n"
              "Content-Length: 24\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    EXPECT_EQ(serialize_error(200, true, out), 0u);
    EXPECT_EQ(serialize_error(399, true, out), 0u);
    EXPECT_EQ(serialize_error(600, true, out), 0u);
    // Every status status_for() can return is a valid error and parses back.
    for (const uint16_t s : {400, 414, 431, 501, 505, 502, 504, 413}) {
        n = serialize_error(s, true, out);
        ASSERT_GT(n, 0u) << s;
        std::vector<header> st;
        const response r = parse_resp(out.substr(0, n), st);
        EXPECT_EQ(r.status, s);
        EXPECT_EQ(r.reason, reason_phrase(s));
        EXPECT_EQ(r.body, body_kind::content_length);
        EXPECT_FALSE(r.keep_alive);
    }
}

// Every output size below the needed one fails (returns 0) and writes
// nothing past the span; the exact size succeeds. The span is placed against
// a guard page, and a canary guards the same check without one.
template <class F>
void check_every_size(F &&serialize, const std::string &want) {
    static guarded_buffer guard(1 << 16);
    for (std::size_t size = 0; size <= want.size(); ++size) {
        // Against the guard page: a write past the span faults.
        std::string_view slot = guard.place(std::string(size, '\x55'));
        std::span<char> out(const_cast<char *>(slot.data()), size);
        const std::size_t n = serialize(out);
        if (size < want.size()) {
            EXPECT_EQ(n, 0u) << "size " << size;
        } else {
            EXPECT_EQ(n, want.size());
            EXPECT_EQ(std::string_view(out.data(), n), want);
        }
        // With a canary after the span.
        std::string buf(size + 16, '\x55');
        const std::size_t m = serialize(std::span<char>(buf.data(), size));
        EXPECT_EQ(m, size < want.size() ? 0u : want.size());
        EXPECT_EQ(buf.substr(size), std::string(16, '\x55'))
            << "wrote past the span at size " << size;
    }
}

TEST(serializer, output_too_small_at_every_size) {
    std::vector<header> st;
    const request r = parse_req(
        "POST /x HTTP/1.1\r\nHost: a\r\nConnection: x-a\r\nX-A: 1\r\nX-Forwarded-For: 1.2.3.4\r\n"
        "Content-Length: 0\r\n\r\n",
        st);
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    const std::string want_req = ser_req(r, fi);
    check_every_size([&](std::span<char> out) { return serialize_request_head(r, fi, out); },
                     want_req);

    std::vector<header> st2;
    const response p = parse_resp("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: y\r\n\r\n", st2);
    const std::string want_resp = ser_resp(p, fi);
    check_every_size([&](std::span<char> out) { return serialize_response_head(p, fi, out); },
                     want_resp);

    std::string e(256, '\0');
    const std::size_t n = serialize_error(431, true, e);
    e.resize(n);
    check_every_size([&](std::span<char> out) { return serialize_error(431, true, out); }, e);
}

// What the proxy forwards parses back to the same message framing: the
// serializer cannot introduce a desync.
TEST(serializer, round_trip_preserves_framing) {
    const char *inputs[] = {
        "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nConnection: close\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\nTE: trailers\r\n\r\n",
        "GET http://x.example/p HTTP/1.1\r\nHost: y\r\nUpgrade: websocket\r\nConnection: "
        "upgrade\r\n\r\n",
        "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5, 5\r\n\r\n",
    };
    for (const char *in : inputs) {
        std::vector<header> st, st2;
        const request r = parse_req(in, st);
        forward_info fi;
        fi.client_addr = "192.0.2.7";
        fi.default_host = "b";
        const std::string out = ser_req(r, fi);
        const request back = parse_req(out, st2);
        EXPECT_EQ(back.body, r.body) << in;
        EXPECT_EQ(back.content_length, r.content_length) << in;
        EXPECT_EQ(back.m, r.m);
        EXPECT_TRUE(back.keep_alive);
        EXPECT_FALSE(back.upgrade);
        EXPECT_EQ(back.expect_continue, r.expect_continue);
    }
}

// Framing fields go out canonical (serializer.h): one Content-Length with
// the parsed value, the codings lower case in one Transfer-Encoding line, no
// Trailer; where the first received framing line was.
TEST(serializer, content_length_repeated_goes_out_once_with_the_parsed_value) {
    std::vector<header> st;
    const request r = parse_req(
        "POST /u HTTP/1.1\r\ncontent-length: 005, 5\r\nHost: a\r\nContent-Length:5\r\n\r\n", st);
    ASSERT_EQ(r.content_length, 5u);
    EXPECT_EQ(ser_req(r, {}),
              "POST /u HTTP/1.1\r\n"
              "Content-Length: 5\r\n"
              "Host: a\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
}

TEST(serializer, transfer_codings_go_out_lower_case_in_one_line) {
    std::vector<header> st;
    const request r = parse_req(
        "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: GZip\r\nX: 1\r\n"
        "transfer-encoding: Chunked\r\n\r\n", st);
    ASSERT_EQ(r.body, body_kind::chunked);
    const std::string out = ser_req(r, {});
    EXPECT_NE(out.find("\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\nX: 1\r\n"),
              std::string::npos) << out;
    EXPECT_EQ(out.find("GZip"), std::string::npos) << out;
    EXPECT_EQ(out.find("transfer-encoding"), std::string::npos) << out;
}

TEST(serializer, response_framing_canonical_and_dechunked) {
    std::vector<header> st;
    const response r = parse_resp(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\nTrailer: X-Sum\r\n\r\n", st);
    EXPECT_EQ(ser_resp(r, {}),
              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nVia: 1.1 ferry\r\n"
              "Connection: keep-alive\r\n\r\n");
    forward_info fi;
    fi.dechunk = true;
    fi.keep_alive = false;
    EXPECT_EQ(ser_resp(r, fi), "HTTP/1.1 200 OK\r\nVia: 1.1 ferry\r\nConnection: close\r\n\r\n");
    std::vector<header> st2;
    const response h = parse_resp("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n", st2,
                                  request_info{true, false});
    EXPECT_EQ(ser_resp(h, {}),
              "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nVia: 1.1 ferry\r\n"
              "Connection: keep-alive\r\n\r\n");
}

TEST(serializer, expect_goes_out_as_one_canonical_100_continue_or_not_at_all) {
    std::vector<header> st;
    const request r = parse_req(
        "PUT /u HTTP/1.1\r\nHost: a\r\nExpect: 100-CONTINUE, x-custom\r\n"
        "Content-Length: 1\r\nexpect: 100-continue\r\n\r\n", st);
    ASSERT_TRUE(r.expect_continue);
    std::string out = ser_req(r, {});
    EXPECT_NE(out.find("\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n"),
              std::string::npos) << out;
    EXPECT_EQ(out.find("CONTINUE"), std::string::npos) << out;
    EXPECT_EQ(out.find("x-custom"), std::string::npos) << out;
    EXPECT_EQ(out.find("expect:"), std::string::npos) << out;
    // HTTP/1.0: ignored, not forwarded.
    std::vector<header> st2;
    const request r10 =
        parse_req("GET / HTTP/1.0\r\nExpect: 100-continue\r\nX: 1\r\n\r\n", st2);
    out = ser_req(r10, {});
    EXPECT_EQ(out.find("Expect"), std::string::npos) << out;
}

}  // namespace
}  // namespace ferry::http::test

namespace ferry::http::test {
namespace {

// Issue 18 item 4: a route's header rules. remove and set drop the received
// fields of their names (any case, every line); set writes its value once and
// add writes beside what came, after the received fields; framing, Host and
// ferry's own fields are untouched.
TEST(serializer, header_rules_on_a_forwarded_request) {
    std::vector<header> st;
    const request r = parse_req(
        "POST /api HTTP/1.1\r\nHost: a.example\r\nX-Debug: 1\r\nx-env: dev\r\n"
        "Accept: */*\r\nX-ENV: test\r\nX-Tag: from-client\r\nContent-Length: 2\r\n\r\n",
        st);
    const std::string_view remove[] = {"x-debug"};
    const header set[] = {{"X-Env", "prod"}};
    const header add[] = {{"X-Tag", "ferry"}};
    const header_edit e{remove, set, add};
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    fi.edit = &e;
    EXPECT_EQ(ser_req(r, fi),
              "POST /api HTTP/1.1\r\n"
              "Host: a.example\r\n"
              "Accept: */*\r\n"
              "X-Tag: from-client\r\n"
              "Content-Length: 2\r\n"
              "X-Env: prod\r\n"
              "X-Tag: ferry\r\n"
              "Via: 1.1 ferry\r\n"
              "X-Forwarded-For: 192.0.2.7\r\n"
              "X-Forwarded-Proto: http\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
}

TEST(serializer, header_rules_on_a_forwarded_response) {
    std::vector<header> st;
    const response r = parse_resp(
        "HTTP/1.1 200 OK\r\nServer: origin/1.0\r\nCache-Control: public\r\n"
        "Transfer-Encoding: chunked\r\nSet-Cookie: a=1\r\n\r\n",
        st);
    const std::string_view remove[] = {"Server"};
    const header set[] = {{"Cache-Control", "no-store"}};
    const header add[] = {{"Set-Cookie", "b=2"}};
    const header_edit e{remove, set, add};
    forward_info fi;
    fi.edit = &e;
    EXPECT_EQ(ser_resp(r, fi),
              "HTTP/1.1 200 OK\r\n"
              "Transfer-Encoding: chunked\r\n"
              "Set-Cookie: a=1\r\n"
              "Cache-Control: no-store\r\n"
              "Set-Cookie: b=2\r\n"
              "Via: 1.1 ferry\r\n"
              "Connection: keep-alive\r\n"
              "\r\n");
    EXPECT_TRUE(e.drops("SERVER"));
    EXPECT_TRUE(e.drops("cache-control"));
    EXPECT_FALSE(e.drops("Set-Cookie"));
}

}  // namespace
}  // namespace ferry::http::test
