// Request heads: a table of valid and invalid inputs (RFC 9112 §2-§3, §5,
// §9.3; RFC 9110 §7.2, §10.1.1). Every row is parsed whole against a guard
// page, byte by byte, and split at every offset (test_support.h).
#include <chrono>
#include <string>
#include <vector>

#include "cases.h"

namespace ferry::http::test {
namespace {

using namespace std::string_literals;

// A valid request-line and Host: 25 bytes.
const std::string H = "GET / HTTP/1.1\r\nHost: a\r\n";

limits small(uint32_t head, uint32_t line = 4096, uint16_t fields = 64) {
    limits l;
    l.max_head_bytes = head;
    l.max_request_line = line;
    l.max_headers = fields;
    return l;
}

std::vector<req_case> valid_requests() {
    return {
        {"minimal",
         "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
         {.m = method::get,
          .method_text = "GET",
          .target = "/",
          .form = target_form::origin,
          .origin_form = "/",
          .authority = "",
          .version_minor = 1,
          .body = body_kind::none,
          .keep_alive = true,
          .expect_continue = false,
          .has_host = true,
          .host = "example.com",
          .upgrade = false,
          .connection = 0,
          .fields = field_list{{"Host", "example.com"}}}},
        {"http10_no_host",
         "GET /x HTTP/1.0\r\n\r\n",
         {.version_minor = 0,
          .keep_alive = false,
          .has_host = false,
          .host = "",
          .fields = field_list{}}},
        {"http10_keep_alive",
         "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
         {.version_minor = 0, .keep_alive = true, .connection = connection_option::keep_alive}},
        {"http10_keep_alive_and_close",
         "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
         {.keep_alive = false, .connection = 3}},
        {"http11_close",
         H + "Connection: close\r\n\r\n",
         {.keep_alive = false, .connection = connection_option::close}},
        {"connection_list_case_ows",
         H + "Connection: Keep-Alive ,, CLOSE\t\r\n\r\n",
         {.keep_alive = false, .connection = 3}},
        {"connection_other_option",
         H + "Connection: x-secret\r\n\r\n",
         {.keep_alive = true, .connection = connection_option::other}},
        {"post_content_length",
         "POST /submit HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world",
         {.consumed = 54,
          .m = method::post,
          .body = body_kind::content_length,
          .content_length = 11}},
        {"post_chunked",
         H + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
         {.consumed = 55, .body = body_kind::chunked}},
        {"te_gzip_chunked",
         H + "Transfer-Encoding: gzip, chunked\r\n\r\n",
         {.body = body_kind::chunked}},
        {"te_all_known_codings",
         H + "Transfer-Encoding: deflate, compress, x-gzip, x-compress, GZIP, chunked\r\n\r\n",
         {.body = body_kind::chunked}},
        {"te_mixed_case", H + "Transfer-Encoding: ChUnKeD\r\n\r\n", {.body = body_kind::chunked}},
        {"te_tab_ows", H + "Transfer-Encoding:\tchunked\t\r\n\r\n", {.body = body_kind::chunked}},
        {"te_no_space", H + "Transfer-Encoding:chunked\r\n\r\n", {.body = body_kind::chunked}},
        {"te_two_lines",
         H + "Transfer-Encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n",
         {.body = body_kind::chunked}},
        {"te_empty_elements",
         H + "Transfer-Encoding: , chunked,\r\n\r\n",
         {.body = body_kind::chunked}},
        {"cl_duplicate_lines_same",
         H + "Content-Length: 5\r\ncontent-length: 5\r\n\r\n",
         {.body = body_kind::content_length, .content_length = 5}},
        {"cl_list_same",
         H + "Content-Length: 5, 5,5\r\n\r\n",
         {.body = body_kind::content_length, .content_length = 5}},
        {"cl_leading_zeros", H + "Content-Length: 007\r\n\r\n", {.content_length = 7}},
        {"cl_zero",
         H + "Content-Length: 0\r\n\r\n",
         {.body = body_kind::content_length, .content_length = 0}},
        {"cl_max",
         H + "Content-Length: 9223372036854775807\r\n\r\n",
         {.content_length = 9223372036854775807ull}},
        {"cl_ows", H + "Content-Length: \t 42 \t\r\n\r\n", {.content_length = 42}},
        {"leading_empty_line",
         "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.target = "/", .host = "a"}},
        {"leading_empty_lines",
         "\r\n\r\n\r\nPUT /p HTTP/1.1\r\nHost: a\r\n\r\n",
         {.m = method::put, .target = "/p"}},
        {"absolute_form",
         "GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n",
         {.target = "http://example.com:8080/a/b?c=d",
          .form = target_form::absolute,
          .origin_form = "/a/b?c=d",
          .authority = "example.com:8080",
          .host = "other"}},
        {"absolute_form_no_path",
         "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
         {.form = target_form::absolute, .origin_form = "", .authority = "example.com"}},
        {"absolute_form_https_query_only",
         "GET HTTPS://Example.com?q=1 HTTP/1.1\r\nHost: x\r\n\r\n",
         {.form = target_form::absolute, .origin_form = "?q=1", .authority = "Example.com"}},
        {"absolute_form_ipv6",
         "GET http://[::1]:80/ HTTP/1.1\r\nHost: x\r\n\r\n",
         {.form = target_form::absolute, .origin_form = "/", .authority = "[::1]:80"}},
        {"absolute_form_http10_no_host",
         "GET http://a.example/x HTTP/1.0\r\n\r\n",
         {.form = target_form::absolute, .authority = "a.example", .has_host = false}},
        {"options_asterisk",
         "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
         {.m = method::options, .target = "*", .form = target_form::asterisk}},
        {"options_origin", "OPTIONS /x HTTP/1.1\r\nHost: a\r\n\r\n", {.form = target_form::origin}},
        {"connect_authority",
         "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
         {.m = method::connect,
          .form = target_form::authority,
          .authority = "example.com:443",
          .body = body_kind::none}},
        {"connect_ipv6",
         "CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n",
         {.form = target_form::authority, .authority = "[2001:db8::1]:443"}},
        {"expect_continue",
         "PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\nabc",
         {.consumed = 69, .expect_continue = true, .expect_other = false}},
        {"expect_continue_http10_ignored",
         "PUT /f HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
         {.expect_continue = false, .expect_other = false}},
        {"expect_other",
         H + "Expect: something\r\n\r\n",
         {.expect_continue = false, .expect_other = true}},
        {"host_port",
         "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
         {.host = "example.com:8080"}},
        {"host_ipv6",
         "GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n",
         {.host = "[2001:db8::1]:8080"}},
        {"host_ipv4", "GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", {.host = "192.0.2.1"}},
        {"host_empty", "GET / HTTP/1.1\r\nHost:\r\n\r\n", {.has_host = true, .host = ""}},
        {"host_pct_and_subdelims",
         "GET / HTTP/1.1\r\nHost:  ex%41mple-_~!$&'()*+,;=.com \r\n\r\n",
         {.host = "ex%41mple-_~!$&'()*+,;=.com"}},
        {"host_lower_case_name",
         "GET / HTTP/1.1\r\nhOsT: a\r\n\r\n",
         {.has_host = true, .host = "a"}},
        {"upgrade_websocket",
         H + "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
         {.upgrade = true, .connection = connection_option::upgrade}},
        {"upgrade_field_only", H + "Upgrade: websocket\r\n\r\n", {.upgrade = false}},
        {"value_ows_trimmed",
         H + "X-A:   spaced  value \t\r\n\r\n",
         {.fields = field_list{{"Host", "a"}, {"X-A", "spaced  value"}}}},
        {"value_empty",
         H + "X-Empty:\r\nX-Blank:   \r\n\r\n",
         {.fields = field_list{{"Host", "a"}, {"X-Empty", ""}, {"X-Blank", ""}}}},
        {"value_obs_text",
         H + "X-Bin: caf\xc3\xa9 \x80\xff\r\n\r\n",
         {.fields = field_list{{"Host", "a"}, {"X-Bin", "caf\xc3\xa9 \x80\xff"}}}},
        {"name_all_tchars",
         H + "!#$%&'*+-.^_`|~09azAZ: v\r\n\r\n",
         {.fields = field_list{{"Host", "a"}, {"!#$%&'*+-.^_`|~09azAZ", "v"}}}},
        {"fields_in_order",
         H + "B: 2\r\nA: 1\r\nB: 3\r\n\r\n",
         {.fields = field_list{{"Host", "a"}, {"B", "2"}, {"A", "1"}, {"B", "3"}}}},
        {"method_other",
         "PROPFIND /x HTTP/1.1\r\nHost: a\r\n\r\n",
         {.m = method::other, .method_text = "PROPFIND"}},
        {"method_case_sensitive",
         "get / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.m = method::other, .method_text = "get"}},
        {"method_head", "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", {.m = method::head}},
        {"method_delete", "DELETE / HTTP/1.1\r\nHost: a\r\n\r\n", {.m = method::delete_}},
        {"method_patch", "PATCH / HTTP/1.1\r\nHost: a\r\n\r\n", {.m = method::patch}},
        {"method_trace", "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", {.m = method::trace}},
        {"method_all_tchars",
         "!#$%&'*+-.^_`|~09azAZ / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.m = method::other}},
        {"pipelined",
         H + "\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
         {.consumed = 27, .target = "/"}},
        {"target_lenient_vchars",
         "GET /a|b{c}^`\"<>\\~!$&'()*+,;=:@?x=/? HTTP/1.1\r\nHost: a\r\n\r\n",
         {.target = "/a|b{c}^`\"<>\\~!$&'()*+,;=:@?x=/?"}},
        {"target_pct",
         "GET /a%2Fb%e9?%41 HTTP/1.1\r\nHost: a\r\n\r\n",
         {.target = "/a%2Fb%e9?%41"}},
        {"headers_at_limit", H + "A: 1\r\nB: 2\r\n\r\n", {.lim = small(8192, 4096, 3)}},
        {"storage_at_limit", H + "A: 1\r\nB: 2\r\n\r\n", {.storage = 3}},
        {"head_at_limit", H + "\r\n", {.lim = small(27)}},
        {"request_line_at_limit",
         "GET /abcdefgh HTTP/1.1\r\nHost: a\r\n\r\n",
         {.lim = small(8192, 22)}},
        {"incomplete_head", H, {.st = need_more}},
        {"incomplete_final_cr", H + "\r", {.st = need_more}},
        {"incomplete_request_line", "GET / HTTP/1.1", {.st = need_more}},
        {"empty", "", {.st = need_more}},
        {"only_empty_lines", "\r\n\r\n\r\n", {.st = need_more}},
        {"big_head_default_limits",
         H + "X-Big: " + std::string(7000, 'x') + "\r\n\r\n",
         {.body = body_kind::none}},
    };
}

std::vector<req_case> invalid_requests() {
    const parse_error e_lf = parse_error::bare_lf;
    return {
        {"bare_lf_request_line",
         "GET / HTTP/1.1\nHost: a\r\n\r\n",
         {.st = error, .err = e_lf, .offset = 14}},
        {"bare_lf_field",
         "GET / HTTP/1.1\r\nHost: a\n\r\n",
         {.st = error, .err = e_lf, .offset = 23}},
        {"bare_lf_final", H + "\n", {.st = error, .err = e_lf, .offset = 25}},
        {"bare_lf_leading",
         "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = e_lf, .offset = 0}},
        {"lf_injection_in_value",
         H + "X: a\nTransfer-Encoding: chunked\r\n\r\n",
         {.st = error, .err = e_lf, .offset = 29}},
        {"obs_fold",
         H + "X-Long: a\r\n b\r\n\r\n",
         {.st = error, .err = parse_error::obs_fold, .offset = 36}},
        {"obs_fold_tab",
         H + "X-Long: a\r\n\tb\r\n\r\n",
         {.st = error, .err = parse_error::obs_fold, .offset = 36}},
        {"whitespace_line_after_request_line",
         "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
         {.st = error, .err = parse_error::obs_fold, .offset = 16}},
        {"leading_space",
         " GET / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_method_token, .offset = 0}},
        {"leading_whitespace_line",
         " \r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_method_token, .offset = 0}},
        {"method_bad_char",
         "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_method_token, .offset = 2}},
        {"method_tab",
         "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_method_token, .offset = 3}},
        {"method_nul",
         "GE\0T / HTTP/1.1\r\nHost: a\r\n\r\n"s,
         {.st = error, .err = parse_error::bad_method_token, .offset = 2}},
        {"double_space_before_target",
         "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"double_space_before_version",
         "GET /  HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 5}},
        {"trailing_space_after_version",
         "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 15}},
        {"space_in_target",
         "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 6}},
        {"tab_separator",
         "GET /\tHTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 14}},
        {"missing_version",
         "GET /\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 5}},
        {"method_only", "GET\r\n\r\n", {.st = error, .err = parse_error::bad_version, .offset = 3}},
        {"empty_target",
         "GET  HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"fragment",
         "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "#"}},
        {"bad_pct",
         "GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "z"}},
        {"bad_pct_second_digit",
         "GET /a%4z HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "z"}},
        {"pct_cut_short",
         "GET /a% HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "%"}},
        {"target_ctl",
         "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 6}},
        {"target_nul",
         "GET /a\0 HTTP/1.1\r\nHost: a\r\n\r\n"s,
         {.st = error, .err = parse_error::bad_target, .offset = 6}},
        {"target_del",
         "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 6}},
        {"target_obs_text",
         "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 5}},
        {"target_bare_cr",
         "GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 6}},
        {"target_relative",
         "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"asterisk_not_options",
         "GET * HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"asterisk_with_path",
         "OPTIONS */x HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 8}},
        {"connect_origin_form",
         "CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 8}},
        {"connect_no_port",
         "CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 19}},
        {"connect_empty_port",
         "CONNECT example.com: HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 20}},
        {"connect_absolute_form",
         "CONNECT http://a:1/ HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 13}},
        {"authority_form_not_connect",
         "GET example.com:80 HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"absolute_userinfo",
         "GET http://user@host/ HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "@"}},
        {"absolute_empty_host",
         "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 11}},
        {"absolute_other_scheme",
         "GET ftp://host/ HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .offset = 4}},
        {"absolute_bad_port",
         "GET http://host:8x/ HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "x/"}},
        {"absolute_fragment",
         "GET http://host/a#b HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_target, .at = "#"}},
        {"version_lower_case",
         "GET / http/1.1\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 6}},
        {"version_1_2",
         "GET / HTTP/1.2\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::version_not_supported, .offset = 6}},
        {"version_2_0",
         "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::version_not_supported, .offset = 6}},
        {"version_0_9",
         "GET / HTTP/0.9\r\n\r\n",
         {.st = error, .err = parse_error::version_not_supported, .offset = 6}},
        {"h2_preface",
         "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
         {.st = error, .err = parse_error::version_not_supported, .offset = 6}},
        {"version_1_10",
         "GET / HTTP/1.10\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 6}},
        {"version_no_dot",
         "GET / HTTP/11\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 6}},
        {"version_bare_cr",
         "GET / HTTP/1.1\rX\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 6}},
        {"version_cr_cr",
         "GET / HTTP/1.1\r\r\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bad_version, .offset = 6}},
        {"request_line_too_long",
         "GET /abcdefghi HTTP/1.1\r\nHost: a\r\n\r\n",
         {.st = error,
          .err = parse_error::request_line_too_long,
          .offset = 22,
          .lim = small(8192, 22)}},
        {"request_line_too_long_unterminated",
         "GET /abcdefghijklmnopqrstuvwxyz",
         {.st = error,
          .err = parse_error::request_line_too_long,
          .offset = 22,
          .lim = small(8192, 22)}},
        {"request_line_too_long_bad_method_first",
         "G(T /abcdefghijklmnopqrstuvwxyz HTTP/1.1\r\n\r\n",
         {.st = error,
          .err = parse_error::request_line_too_long,
          .offset = 22,
          .lim = small(8192, 22)}},
        {"request_line_too_long_after_empty_lines",
         "\r\n\r\nGET /abcdefghijklmnopqrstuvwxyz",
         {.st = error,
          .err = parse_error::request_line_too_long,
          .offset = 26,
          .lim = small(8192, 22)}},
        // The limit is checked before the line end: a line one byte over the
        // limit that ends in a bare LF is a bare LF, two bytes over is too
        // long (a shorter buffer would already have seen max + 2 bytes).
        {"request_line_limit_then_bare_lf",
         "GET /abcdefghi HTTP/1.1\nHost: a\r\n\r\n",
         {.st = error, .err = parse_error::bare_lf, .offset = 23, .lim = small(8192, 22)}},
        {"request_line_too_long_then_bare_lf",
         "GET /abcdefghij HTTP/1.1\nHost: a\r\n\r\n",
         {.st = error,
          .err = parse_error::request_line_too_long,
          .offset = 22,
          .lim = small(8192, 22)}},
        {"request_line_limit_cr_pending",
         "GET /abcdefgh HTTP/1.1\r",
         {.st = need_more, .lim = small(8192, 22)}},
        {"no_colon",
         H + "Hosta\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_name, .offset = 30}},
        {"empty_name",
         H + ": x\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_name, .offset = 25}},
        {"space_before_colon",
         "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
         {.st = error, .err = parse_error::header_name_whitespace, .offset = 20}},
        {"tab_before_colon",
         "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n",
         {.st = error, .err = parse_error::header_name_whitespace, .offset = 20}},
        {"space_in_name",
         H + "X Y: z\r\n\r\n",
         {.st = error, .err = parse_error::header_name_whitespace, .offset = 26}},
        {"name_bad_char",
         H + "X(Y: z\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_name, .offset = 26}},
        {"name_bare_cr",
         H + "X\rY: z\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_name, .offset = 26}},
        {"name_obs_text",
         H + "X\xc3\xa9: z\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_name, .offset = 26}},
        {"value_nul",
         H + "X: a\0b\r\n\r\n"s,
         {.st = error, .err = parse_error::bad_header_value, .offset = 29}},
        {"value_bare_cr",
         H + "X: a\rb\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 29}},
        {"value_cr_before_crlf",
         "GET / HTTP/1.1\r\nHost: a\r\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 23}},
        {"value_del",
         H + "X: \x7f\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 28}},
        {"value_vt",
         H + "X: \x0b\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 28}},
        {"value_esc",
         H + "X: a\x1b[0m\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 29}},
        {"too_many_headers",
         H + "A: 1\r\nB: 2\r\nC: 3\r\n\r\n",
         {.st = error,
          .err = parse_error::too_many_headers,
          .offset = 37,
          .lim = small(8192, 4096, 3)}},
        {"storage_too_small",
         H + "A: 1\r\n\r\n",
         {.st = error, .err = parse_error::too_many_headers, .offset = 25, .storage = 1}},
        {"head_too_large_unterminated",
         H + "X: " + std::string(100, 'x'),
         {.st = error, .err = parse_error::head_too_large, .offset = 64, .lim = small(64)}},
        {"head_too_large_terminated",
         H + "X: " + std::string(100, 'x') + "\r\n\r\n",
         {.st = error, .err = parse_error::head_too_large, .offset = 64, .lim = small(64)}},
        {"head_one_byte_too_large",
         H + "\r\n",
         {.st = error, .err = parse_error::head_too_large, .offset = 26, .lim = small(26)}},
        {"head_too_large_only_empty_lines",
         std::string(40, '\r'),
         {.st = error, .err = parse_error::head_too_large, .offset = 32, .lim = small(32, 64)}},
        {"head_limit_error_inside_wins",
         H + "X: a\0b"s + std::string(100, 'x') + "\r\n\r\n",
         {.st = error, .err = parse_error::head_too_large, .offset = 64, .lim = small(64)}},
        {"head_limit_error_before_wins",
         H + "X: a\0b\r\n"s + std::string(100, 'x') + "\r\n\r\n",
         {.st = error, .err = parse_error::bad_header_value, .offset = 29, .lim = small(64)}},
        {"missing_host",
         "GET / HTTP/1.1\r\n\r\n",
         {.st = error, .err = parse_error::missing_host, .offset = 16}},
        {"missing_host_absolute_form",
         "GET http://a/ HTTP/1.1\r\n\r\n",
         {.st = error, .err = parse_error::missing_host, .offset = 24}},
        {"multiple_host",
         H + "Host: a\r\n\r\n",
         {.st = error, .err = parse_error::multiple_host, .offset = 25}},
        {"multiple_host_differing",
         H + "host: b\r\n\r\n",
         {.st = error, .err = parse_error::multiple_host, .offset = 25}},
        {"multiple_host_http10",
         "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
         {.st = error, .err = parse_error::multiple_host, .offset = 25}},
        {"host_space",
         "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 23}},
        {"host_slash",
         "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 23}},
        {"host_userinfo",
         "GET / HTTP/1.1\r\nHost: u@h\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 23}},
        {"host_bad_port",
         "GET / HTTP/1.1\r\nHost: a:x\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 24}},
        {"host_port_too_big",
         "GET / HTTP/1.1\r\nHost: a:65536\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 24}},
        {"host_port_too_long",
         "GET / HTTP/1.1\r\nHost: a:000080\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 29}},
        {"host_ipv6_unclosed",
         "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 26}},
        {"host_ipv6_empty",
         "GET / HTTP/1.1\r\nHost: []\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 23}},
        {"host_bad_pct",
         "GET / HTTP/1.1\r\nHost: a%g1\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 24}},
        {"host_list",
         "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n",
         {.st = error, .err = parse_error::bad_host, .offset = 24}},
    };
}

class request_valid : public testing::TestWithParam<req_case> {};
TEST_P(request_valid, parses) {
    check_request(GetParam());
}
INSTANTIATE_TEST_SUITE_P(http, request_valid, testing::ValuesIn(valid_requests()),
                         case_name<req_case>);

class request_invalid : public testing::TestWithParam<req_case> {};
TEST_P(request_invalid, rejects) {
    check_request(GetParam());
}
INSTANTIATE_TEST_SUITE_P(http, request_invalid, testing::ValuesIn(invalid_requests()),
                         case_name<req_case>);

// A head arriving in a buffer that is full (the proxy's buffer is
// max_head_bytes): bytes past the limit are never looked at, so a complete
// head followed by anything is still done.
TEST(request, bytes_past_the_limit_are_ignored) {
    const std::string in = H + "\r\n" + std::string(100, '\n');
    limits l;
    l.max_head_bytes = 27;
    head_parser p;
    request r;
    header storage[4];
    const parse_result res = parse_request(p, in, r, storage, l);
    EXPECT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(res.consumed, 27u);
}

// One parser serves one head; reset() starts the next (pipelining).
TEST(request, reset_parses_the_next_pipelined_request) {
    const std::string in = H + "\r\nPOST /2 HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n";
    head_parser p;
    request r;
    header storage[8];
    parse_result res = parse_request(p, in, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(p.current_phase(), head_parser::phase::done);
    const std::string_view rest = std::string_view(in).substr(res.consumed);
    p.reset();
    EXPECT_EQ(p.current_phase(), head_parser::phase::start_line);
    res = parse_request(p, rest, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(r.m, method::post);
    EXPECT_EQ(r.host, "b");
    EXPECT_EQ(res.consumed, rest.size());
}

// The incremental parser looks at each byte a bounded number of times, so a
// head that arrives one byte per call costs O(n), not O(n^2). With a 60 KB
// head, a parser that rescanned from the start on every call would do ~2e9
// byte steps (seconds); a linear one takes milliseconds.
TEST(request, byte_by_byte_is_linear) {
    std::string in = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 500; ++i)
        in += "X-Field-" + std::to_string(i) + ": " + std::string(100, 'v') + "\r\n";
    in += "\r\n";
    ASSERT_LT(in.size(), 65535u);
    std::vector<char> buf(in.begin(), in.end());
    head_parser p;
    request r;
    std::vector<header> storage(600);
    limits l;
    l.max_head_bytes = 65535;
    l.max_headers = 600;
    const auto t0 = std::chrono::steady_clock::now();
    parse_result res{};
    for (std::size_t k = 1; k <= buf.size(); ++k)
        res = parse_request(p, {buf.data(), k}, r, storage, l);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(res.consumed, in.size());
    EXPECT_EQ(r.headers.size(), 501u);
    EXPECT_LT(secs, 0.25) << "byte-by-byte parse of " << in.size() << " bytes";
}

TEST(request, names) {
    EXPECT_EQ(name(method::delete_), "DELETE");
    EXPECT_EQ(name(method::other), "");
    EXPECT_EQ(name(body_kind::until_close), "until_close");
    EXPECT_EQ(name(target_form::authority), "authority");
    EXPECT_EQ(name(head_parser::phase::fields), "fields");
    EXPECT_EQ(name(parse_result::status::need_more), "need_more");
}

TEST(parse_error, every_value_has_a_name_and_a_status) {
    for (int i = 0; i <= static_cast<int>(parse_error::trailers_too_large); ++i) {
        const auto e = static_cast<parse_error>(i);
        EXPECT_NE(name(e), "unknown") << i;
        const uint16_t s = status_for(e);
        EXPECT_TRUE(s == 400 || s == 414 || s == 431 || s == 501 || s == 505 ||
                    (e == parse_error::none && s == 500))
            << name(e);
    }
    EXPECT_EQ(status_for(parse_error::request_line_too_long), 414);
    EXPECT_EQ(status_for(parse_error::head_too_large), 431);
    EXPECT_EQ(status_for(parse_error::too_many_headers), 431);
    EXPECT_EQ(status_for(parse_error::unknown_transfer_coding), 501);
    EXPECT_EQ(status_for(parse_error::version_not_supported), 505);
    EXPECT_EQ(status_for(parse_error::bad_version), 400);
    EXPECT_EQ(status_for(parse_error::te_and_cl), 400);
    EXPECT_EQ(name(static_cast<parse_error>(200)), "unknown");
}

}  // namespace
}  // namespace ferry::http::test
