// Response heads: status-line (RFC 9112 §4), framing (§6.3), persistence
// (§9.3). Fed every way, like the requests.
#include <string>
#include <vector>

#include "cases.h"

namespace ferry::http::test {
namespace {

using namespace std::string_literals;

const request_info get_req{};
const request_info head_req{true, false};
const request_info connect_req{false, true};

// "HTTP/1.1 200 OK\r\n": 17 bytes.
const std::string S = "HTTP/1.1 200 OK\r\n";

std::vector<resp_case> valid_responses() {
    return {
        {"content_length",
         S + "Content-Length: 5\r\n\r\nhello",
         get_req,
         {.consumed = 38,
          .status = 200,
          .reason = "OK",
          .version_minor = 1,
          .body = body_kind::content_length,
          .content_length = 5,
          .keep_alive = true,
          .fields = field_list{{"Content-Length", "5"}}}},
        {"chunked",
         S + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         get_req,
         {.consumed = 47, .body = body_kind::chunked, .keep_alive = true}},
        {"no_framing_until_close",
         S + "\r\n",
         get_req,
         {.body = body_kind::until_close, .keep_alive = false}},
        {"no_framing_http10_keep_alive_still_closes",
         "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
         get_req,
         {.body = body_kind::until_close, .keep_alive = false}},
        {"204_no_body",
         "HTTP/1.1 204 No Content\r\n\r\n",
         get_req,
         {.status = 204, .body = body_kind::none, .keep_alive = true}},
        {"204_content_length_ignored",
         "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.body = body_kind::none}},
        {"304_content_length_kept_as_info",
         "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n",
         get_req,
         {.body = body_kind::none, .content_length = 100, .keep_alive = true}},
        {"304_chunked_ignored",
         "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
         get_req,
         {.body = body_kind::none}},
        {"head_content_length",
         S + "Content-Length: 100\r\n\r\n",
         head_req,
         {.body = body_kind::none, .content_length = 100, .keep_alive = true}},
        {"head_chunked",
         S + "Transfer-Encoding: chunked\r\n\r\n",
         head_req,
         {.body = body_kind::none}},
        {"head_no_framing_keeps_alive",
         S + "\r\n",
         head_req,
         {.body = body_kind::none, .keep_alive = true}},
        {"100_continue_then_final",
         "HTTP/1.1 100 Continue\r\n\r\n" + S + "Content-Length: 0\r\n\r\n",
         get_req,
         {.consumed = 25, .status = 100, .reason = "Continue", .body = body_kind::none}},
        {"101_switching",
         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
         get_req,
         {.status = 101, .body = body_kind::none, .upgrade = true}},
        {"connect_2xx_tunnel",
         "HTTP/1.1 200 Connection established\r\n\r\n",
         connect_req,
         {.body = body_kind::none, .keep_alive = true}},
        {"connect_407_has_body",
         "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 3\r\n\r\n",
         connect_req,
         {.body = body_kind::content_length, .content_length = 3}},
        {"http10_close",
         "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
         get_req,
         {.version_minor = 0, .body = body_kind::content_length, .keep_alive = false}},
        {"http10_keep_alive",
         "HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: Keep-Alive\r\n\r\n",
         get_req,
         {.version_minor = 0, .keep_alive = true}},
        {"http11_close",
         S + "Content-Length: 1\r\nConnection: close\r\n\r\n",
         get_req,
         {.keep_alive = false}},
        {"reason_empty", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", get_req, {.reason = ""}},
        {"reason_missing",
         "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.status = 200, .reason = ""}},
        {"reason_spaces_kept",
         "HTTP/1.1 404 Not  Found \r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.status = 404, .reason = "Not  Found "}},
        {"reason_obs_text_tab",
         "HTTP/1.1 200 \xc3\x89t\t\xe9\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.reason = "\xc3\x89t\t\xe9"}},
        {"status_100_bounds",
         "HTTP/1.1 599 x\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.status = 599}},
        {"te_gzip_until_close",
         S + "Transfer-Encoding: gzip\r\n\r\n",
         get_req,
         {.body = body_kind::until_close, .keep_alive = false}},
        {"te_unknown_until_close",
         S + "Transfer-Encoding: foo\r\n\r\n",
         get_req,
         {.body = body_kind::until_close}},
        {"te_gzip_chunked",
         S + "Transfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n\r\n",
         get_req,
         {.body = body_kind::chunked, .keep_alive = true}},
        {"cl_duplicate_same",
         S + "Content-Length: 7\r\nContent-Length: 7, 7\r\n\r\n",
         get_req,
         {.body = body_kind::content_length, .content_length = 7}},
        {"host_fields_not_checked",
         S + "Host: a b\r\nHost: c\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.body = body_kind::content_length}},
        {"expect_not_checked",
         S + "Expect: 100-continue\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {}},
        {"fields_in_order",
         S + "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n",
         get_req,
         {.fields =
              field_list{{"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}, {"Content-Length", "0"}}}},
        {"incomplete", S + "Content-Length: 1\r\n", get_req, {.st = need_more}},
        {"incomplete_status_line", "HTTP/1.1 2", get_req, {.st = need_more}},
    };
}

limits small(uint32_t head, uint32_t line = 4096, uint16_t fields = 64) {
    limits l;
    l.max_head_bytes = head;
    l.max_request_line = line;
    l.max_headers = fields;
    return l;
}

std::vector<resp_case> invalid_responses() {
    const auto bsl = parse_error::bad_status_line;
    return {
        {"leading_empty_line",
         "\r\n" + S + "\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 0}},
        {"status_two_digits",
         "HTTP/1.1 20 OK\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 11}},
        {"status_four_digits",
         "HTTP/1.1 2000 OK\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 12}},
        {"status_099", "HTTP/1.1 099 x\r\n\r\n", get_req, {.st = error, .err = bsl, .offset = 9}},
        {"status_600", "HTTP/1.1 600 x\r\n\r\n", get_req, {.st = error, .err = bsl, .offset = 9}},
        {"status_sign", "HTTP/1.1 +20 x\r\n\r\n", get_req, {.st = error, .err = bsl, .offset = 9}},
        {"status_no_space_before_reason",
         "HTTP/1.1 200OK\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 12}},
        {"double_space",
         "HTTP/1.1  200 OK\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 9}},
        {"version_only", "HTTP/1.1\r\n\r\n", get_req, {.st = error, .err = bsl, .offset = 8}},
        {"version_http2",
         "HTTP/2 200 OK\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_version, .offset = 0}},
        {"version_1_2",
         "HTTP/1.2 200 OK\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::version_not_supported, .offset = 0}},
        {"version_lower_case",
         "http/1.1 200 OK\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_version, .offset = 0}},
        {"not_http",
         "hello\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_version, .offset = 0}},
        {"reason_ctl",
         "HTTP/1.1 200 O\x01K\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 14}},
        {"reason_bare_cr",
         "HTTP/1.1 200 O\rK\r\n\r\n",
         get_req,
         {.st = error, .err = bsl, .offset = 14}},
        {"reason_nul",
         "HTTP/1.1 200 O\0K\r\n\r\n"s,
         get_req,
         {.st = error, .err = bsl, .offset = 14}},
        {"status_line_too_long",
         "HTTP/1.1 200 A very long reason\r\n\r\n",
         get_req,
         {.st = error,
          .err = parse_error::status_line_too_long,
          .offset = 20,
          .lim = small(8192, 20)}},
        {"status_line_too_long_unterminated",
         "HTTP/1.1 200 A very long reason",
         get_req,
         {.st = error,
          .err = parse_error::status_line_too_long,
          .offset = 20,
          .lim = small(8192, 20)}},
        {"bare_lf_status_line",
         "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bare_lf, .offset = 15}},
        {"bare_lf_end",
         S + "Content-Length: 0\r\n\n",
         get_req,
         {.st = error, .err = parse_error::bare_lf, .offset = 36}},
        {"obs_fold",
         S + "X: a\r\n b\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::obs_fold, .offset = 23}},
        {"name_whitespace",
         S + "Content-Length : 0\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::header_name_whitespace, .offset = 31}},
        {"value_nul",
         S + "X: \0\r\n\r\n"s,
         get_req,
         {.st = error, .err = parse_error::bad_header_value, .offset = 20}},
        {"te_and_cl",
         S + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::te_and_cl, .offset = 36}},
        {"te_and_cl_in_304",
         "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::te_and_cl, .at = "Content-Length"}},
        {"te_and_cl_head",
         S + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
         head_req,
         {.st = error, .err = parse_error::te_and_cl, .at = "Content-Length"}},
        {"te_chunked_twice",
         S + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_transfer_encoding, .offset = 64}},
        {"te_chunked_not_last",
         S + "Transfer-Encoding: chunked, gzip\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_transfer_encoding, .at = "gzip"}},
        {"te_http10",
         "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::te_in_http10, .offset = 17}},
        {"te_empty",
         S + "Transfer-Encoding: \r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_transfer_encoding, .offset = 36}},
        {"te_parameter",
         S + "Transfer-Encoding: gzip;q=1\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_transfer_encoding, .offset = 36}},
        {"cl_differs",
         S + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::duplicate_cl_differs, .at = "6"}},
        {"cl_bad",
         S + "Content-Length: 5a\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_content_length, .at = "a\r"}},
        {"cl_bad_in_204",
         "HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::bad_content_length, .at = "x"}},
        {"too_many_headers",
         S + "A: 1\r\nB: 2\r\n\r\n",
         get_req,
         {.st = error,
          .err = parse_error::too_many_headers,
          .offset = 23,
          .lim = small(8192, 4096, 1)}},
        {"head_too_large",
         S + "X: " + std::string(100, 'x') + "\r\n\r\n",
         get_req,
         {.st = error, .err = parse_error::head_too_large, .offset = 50, .lim = small(50)}},
    };
}

class response_valid : public testing::TestWithParam<resp_case> {};
TEST_P(response_valid, parses) {
    check_response(GetParam());
}
INSTANTIATE_TEST_SUITE_P(http, response_valid, testing::ValuesIn(valid_responses()),
                         case_name<resp_case>);

class response_invalid : public testing::TestWithParam<resp_case> {};
TEST_P(response_invalid, rejects) {
    check_response(GetParam());
}
INSTANTIATE_TEST_SUITE_P(http, response_invalid, testing::ValuesIn(invalid_responses()),
                         case_name<resp_case>);

// A 1xx is a message of its own: the final response follows with a fresh parser.
TEST(response, interim_then_final) {
    const std::string in =
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    head_parser p;
    response r;
    header storage[8];
    parse_result res = parse_response(p, in, get_req, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(r.status, 100);
    const std::string_view rest = std::string_view(in).substr(res.consumed);
    p.reset();
    res = parse_response(p, rest, get_req, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(r.status, 201);
    EXPECT_EQ(r.body, body_kind::content_length);
    EXPECT_EQ(rest.substr(res.consumed), "ok");
}

TEST(response, request_info_of) {
    request q;
    q.m = method::head;
    EXPECT_TRUE(request_info::of(q).head);
    EXPECT_FALSE(request_info::of(q).connect);
    q.m = method::connect;
    EXPECT_TRUE(request_info::of(q).connect);
}

}  // namespace
}  // namespace ferry::http::test
