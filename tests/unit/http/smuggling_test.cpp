// Request smuggling corpus (RFC 9112 §11.2, §6.1, §6.3): heads that two
// parsers could frame differently, and chunked bodies with the tricks that
// desynchronised real proxies (CL.TE, TE.CL, TE.TE obfuscations, chunk-size
// and chunk-extension games, bare CR/LF). Each has one expected verdict, and
// is fed every way (whole against a guard page, byte by byte, at every split).
#include <string>
#include <vector>

#include "cases.h"

namespace ferry::http::test {
namespace {

using namespace std::string_literals;

// "POST / HTTP/1.1\r\nHost: a\r\n": 26 bytes.
const std::string P = "POST / HTTP/1.1\r\nHost: a\r\n";

req_expect rejects(parse_error e, std::string at) {
    req_expect x;
    x.st = error;
    x.err = e;
    x.at = std::move(at);
    return x;
}

req_expect framed(body_kind k, uint64_t cl = 0, std::optional<uint32_t> consumed = {}) {
    req_expect x;
    x.body = k;
    if (k == body_kind::content_length)
        x.content_length = cl;
    x.consumed = consumed;
    return x;
}

std::vector<req_case> smuggling_heads() {
    using pe = parse_error;
    return {
        // CL.TE and TE.CL: both framings present. Rejected whichever comes first.
        {"cl_te", P + "Content-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED",
         rejects(pe::te_and_cl, "Transfer-Encoding")},
        {"te_cl",
         P + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
         rejects(pe::te_and_cl, "Content-Length")},
        {"te_cl_with_obfuscated_te", P + "Transfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\n",
         rejects(pe::unknown_transfer_coding, "xchunked")},
        {"cl_te_zero", P + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
         rejects(pe::te_and_cl, "Transfer-Encoding")},
        // TE.TE: obfuscated Transfer-Encoding that one parser honours and another ignores.
        {"te_xchunked", P + "Transfer-Encoding: xchunked\r\n\r\n",
         rejects(pe::unknown_transfer_coding, "xchunked")},
        {"te_chunked_then_garbage_line",
         P + "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "x\r")},
        {"te_garbage_then_chunked_line",
         P + "Transfer-Encoding: x\r\nTransfer-Encoding: chunked\r\n\r\n",
         rejects(pe::unknown_transfer_coding, "x\r")},
        {"te_space_before_colon", P + "Transfer-Encoding : chunked\r\n\r\n",
         rejects(pe::header_name_whitespace, " :")},
        {"te_tab_before_colon", P + "Transfer-Encoding\t: chunked\r\n\r\n",
         rejects(pe::header_name_whitespace, "\t:")},
        {"te_tab_ows_is_valid", P + "Transfer-Encoding:\tchunked\r\n\r\n",
         framed(body_kind::chunked)},
        {"te_trailing_ows_is_valid", P + "Transfer-Encoding: chunked \t \r\n\r\n",
         framed(body_kind::chunked)},
        {"te_mixed_case_is_valid", P + "transfer-ENCODING: Chunked\r\n\r\n",
         framed(body_kind::chunked)},
        {"te_upper_case_is_valid", P + "TRANSFER-ENCODING: CHUNKED\r\n\r\n",
         framed(body_kind::chunked)},
        {"te_chunked_identity", P + "Transfer-Encoding: chunked, identity\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "identity")},
        // "identity" left the registry with RFC 7230: unknown, so 501 (not a
        // silently ignored coding in front of chunked).
        {"te_identity_chunked", P + "Transfer-Encoding: identity, chunked\r\n\r\n",
         rejects(pe::unknown_transfer_coding, "identity")},
        {"te_identity_only", P + "Transfer-Encoding: identity\r\n\r\n",
         rejects(pe::unknown_transfer_coding, "identity")},
        {"te_gzip_only", P + "Transfer-Encoding: gzip\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "gzip")},
        {"te_chunked_twice_one_line", P + "Transfer-Encoding: chunked, chunked\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "chunked\r")},
        {"te_chunked_twice_two_lines",
         P + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "chunked\r\n\r\n")},
        {"te_obs_fold_value", P + "Transfer-Encoding:\r\n chunked\r\n\r\n",
         rejects(pe::obs_fold, " chunked")},
        {"te_obs_fold_continuation", P + "Transfer-Encoding: gzip\r\n , chunked\r\n\r\n",
         rejects(pe::obs_fold, " , chunked")},
        {"te_line_starts_with_space", P + " Transfer-Encoding: chunked\r\n\r\n",
         rejects(pe::obs_fold, " Transfer")},
        {"te_vertical_tab",
         P + "Transfer-Encoding:\x0b"
             "chunked\r\n\r\n",
         rejects(pe::bad_header_value, "\x0b")},
        {"te_form_feed",
         P + "Transfer-Encoding: \x0c"
             "chunked\r\n\r\n",
         rejects(pe::bad_header_value, "\x0c")},
        {"te_nul", P + "Transfer-Encoding: chunked\0\r\n\r\n"s,
         rejects(pe::bad_header_value, "\0"s)},
        {"te_bare_cr_end", P + "Transfer-Encoding: chunked\r\r\n\r\n",
         rejects(pe::bad_header_value, "\r\r")},
        {"te_lf_in_name", P + "Transfer-Encoding\n: chunked\r\n\r\n", rejects(pe::bare_lf, "\n:")},
        {"te_quoted", P + "Transfer-Encoding: \"chunked\"\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "\"chunked")},
        {"te_parameter", P + "Transfer-Encoding: chunked;foo=bar\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "chunked;")},
        {"te_parameter_space", P + "Transfer-Encoding: chunked ; q=1\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "chunked ;")},
        {"te_empty", P + "Transfer-Encoding:\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "\r\n\r\n")},
        {"te_only_commas", P + "Transfer-Encoding: , ,\r\n\r\n",
         rejects(pe::bad_transfer_encoding, ", ,")},
        {"te_http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
         rejects(pe::te_in_http10, "Transfer")},
        {"te_http10_with_cl",
         "POST / HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         rejects(pe::te_and_cl, "Transfer")},
        // A look-alike field name is just another field: framed by CL alone.
        {"te_underscore_is_another_field",
         P + "Transfer_Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
         framed(body_kind::content_length, 5)},
        {"te_trailing_dash_is_another_field", P + "Transfer-Encoding-: chunked\r\n\r\n",
         framed(body_kind::none)},
        {"te_obs_text_is_not_chunked", P + "Transfer-Encoding: chunked\xc2\xa0\r\n\r\n",
         rejects(pe::bad_transfer_encoding, "chunked\xc2")},
        // Content-Length games.
        {"cl_differs", P + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
         rejects(pe::duplicate_cl_differs, "6")},
        {"cl_list_differs", P + "Content-Length: 5, 6\r\n\r\n",
         rejects(pe::duplicate_cl_differs, "6")},
        {"cl_identical_lines", P + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
         framed(body_kind::content_length, 5)},
        {"cl_identical_list", P + "Content-Length: 5,5 , 5\r\n\r\n",
         framed(body_kind::content_length, 5)},
        {"cl_zero_padded_same_value", P + "Content-Length: 5\r\nContent-Length: 05\r\n\r\n",
         framed(body_kind::content_length, 5)},
        {"cl_plus", P + "Content-Length: +5\r\n\r\n", rejects(pe::bad_content_length, "+")},
        {"cl_minus", P + "Content-Length: -5\r\n\r\n", rejects(pe::bad_content_length, "-5")},
        {"cl_space_inside", P + "Content-Length: 1 0\r\n\r\n",
         rejects(pe::bad_content_length, " 0")},
        {"cl_hex", P + "Content-Length: 0x10\r\n\r\n", rejects(pe::bad_content_length, "x")},
        {"cl_decimal_point", P + "Content-Length: 5.0\r\n\r\n",
         rejects(pe::bad_content_length, ".0\r")},
        {"cl_empty", P + "Content-Length:\r\n\r\n", rejects(pe::bad_content_length, "\r\n\r\n")},
        {"cl_trailing_comma", P + "Content-Length: 5,\r\n\r\n",
         rejects(pe::bad_content_length, "\r\n\r\n")},
        {"cl_leading_comma", P + "Content-Length: ,5\r\n\r\n",
         rejects(pe::bad_content_length, ",5")},
        {"cl_overflow", P + "Content-Length: 99999999999999999999\r\n\r\n",
         rejects(pe::bad_content_length, "99\r")},
        {"cl_2_pow_63", P + "Content-Length: 9223372036854775808\r\n\r\n",
         rejects(pe::bad_content_length, "8\r")},
        {"cl_2_pow_64_wraps_to_zero", P + "Content-Length: 18446744073709551616\r\n\r\n",
         rejects(pe::bad_content_length, "6\r")},
        {"cl_space_before_colon", P + "Content-Length : 5\r\n\r\n",
         rejects(pe::header_name_whitespace, " :")},
        {"cl_obs_fold", P + "Content-Length: 5\r\n 0\r\n\r\n", rejects(pe::obs_fold, " 0")},
        // Injection into the head.
        {"lf_injection", P + "X: a\nContent-Length: 5\r\n\r\n", rejects(pe::bare_lf, "\nContent")},
        {"cr_injection", P + "X: a\rContent-Length: 5\r\n\r\n",
         rejects(pe::bad_header_value, "\rContent")},
        {"nul_in_value", P + "X: a\0b\r\n\r\n"s, rejects(pe::bad_header_value, "\0"s)},
        {"bare_cr_line", P + "\rX: 1\r\n\r\n", rejects(pe::bad_header_name, "\rX")},
        {"bare_cr_in_request_line", "POST /a\r HTTP/1.1\r\nHost: a\r\n\r\n",
         rejects(pe::bad_target, "\r ")},
        {"request_line_extra_spaces", "POST  /  HTTP/1.1\r\nHost: a\r\n\r\n",
         rejects(pe::bad_target, " /")},
        {"request_line_http_in_target", "POST /x HTTP/1.1 HTTP/1.1\r\nHost: a\r\n\r\n",
         rejects(pe::bad_target, " HTTP/1.1 ")},
        {"absolute_form_host_mismatch",
         "GET http://good.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
         [] {
             req_expect x;
             x.form = target_form::absolute;
             x.authority = "good.example";
             x.host = "evil.example";
             return x;
         }()},
        {"two_hosts", P + "Host: b\r\n\r\n", rejects(pe::multiple_host, "Host: b")},
        {"host_with_path", "GET / HTTP/1.1\r\nHost: a/../b\r\n\r\n", rejects(pe::bad_host, "/../")},
        // Pipelined request hidden in a CL body is just body: consumed stops at the head.
        {"cl_body_holds_a_request",
         P + "Content-Length: 28\r\n\r\nGET /admin HTTP/1.1\r\nHost: a\r\n\r\n",
         framed(body_kind::content_length, 28, 48)},
    };
}

class smuggling_head : public testing::TestWithParam<req_case> {};
TEST_P(smuggling_head, verdict) {
    check_request(GetParam());
}
INSTANTIATE_TEST_SUITE_P(http, smuggling_head, testing::ValuesIn(smuggling_heads()),
                         case_name<req_case>);

struct body_case {
    std::string name;
    std::string input;
    std::string want;  // framer_outcome text
    limits lim{};
};

std::ostream &operator<<(std::ostream &os, const body_case &c) {
    return os << c.name;
}

limits chunk_limits(uint32_t line, uint32_t trailer = 4096) {
    limits l;
    l.max_chunk_size_line = line;
    l.max_trailer_bytes = trailer;
    return l;
}

std::vector<body_case> chunked_bodies() {
    return {
        // Valid framings.
        {"simple", "5\r\nhello\r\n0\r\n\r\n", "done at=15 payload=5"},
        {"two_chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "done at=26 payload=11"},
        {"upper_hex", "A\r\n0123456789\r\n0\r\n\r\n", "done at=20 payload=10"},
        {"leading_zeros", "0000000005\r\nhello\r\n000\r\n\r\n", "done at=26 payload=5"},
        {"data_holds_crlf_and_last_chunk", "6\r\n0\r\n\r\nX\r\n0\r\n\r\n", "done at=16 payload=6"},
        {"extensions", "5;a=b;c;d=\"q\\\"x\"\r\nhello\r\n0;e=\"\"\r\n\r\n", "done at=35 payload=5"},
        {"extension_bws", "5 ;\ta = b ; c\r\nhello\r\n0\r\n\r\n", "done at=27 payload=5"},
        {"extension_obs_text_quoted", "5;a=\"\xe9\t \"\r\nhello\r\n0\r\n\r\n",
         "done at=23 payload=5"},
        {"trailers", "0\r\nX-T: v\r\nY:\r\n\r\n", "done at=17 payload=0"},
        {"trailer_obs_text", "0\r\nX: \xff\r\n\r\n", "done at=11 payload=0"},
        {"pipelined_request_after", "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
         "done at=15 payload=5"},
        {"max_size", "7fffffffffffffff\r\n", "more at=18 payload=0"},
        {"incomplete", "5\r\nhel", "more at=6 payload=3"},
        {"incomplete_trailer", "0\r\nX: 1\r\n", "more at=9 payload=0"},
        {"empty", "", "more at=0 payload=0"},
        // chunk-size tricks.
        {"size_0x", "0x5\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=1"},
        {"size_negative", "-1\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=0"},
        {"size_plus", "+5\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=0"},
        {"size_leading_space", " 5\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=0"},
        {"size_leading_tab", "\t5\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=0"},
        {"size_trailing_space", "5 \r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=2"},
        {"size_empty", "\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=0"},
        {"size_not_hex", "5g\r\nhello\r\n0\r\n\r\n", "error bad_chunk_size at=1"},
        {"size_overflow", "FFFFFFFFFFFFFFFFF\r\n", "error bad_chunk_size at=15"},
        {"size_2_pow_63", "8000000000000000\r\n", "error bad_chunk_size at=15"},
        {"size_2_pow_64_wraps", "10000000000000000\r\n", "error bad_chunk_size at=16"},
        {"size_huge_leading_zeros_over_line_limit", std::string(70, '0') + "5\r\n",
         "error chunk_line_too_long at=64"},
        {"size_bare_lf", "5\nhello\r\n0\r\n\r\n", "error bare_lf at=1"},
        {"size_bare_cr", "5\rhello\r\n0\r\n\r\n", "error bare_cr at=2"},
        {"data_bare_lf", "5\r\nhello\n0\r\n\r\n", "error bare_lf at=8"},
        {"data_too_long", "5\r\nhelloX\r\n0\r\n\r\n", "error bad_chunk_terminator at=8"},
        {"data_missing_crlf", "5\r\nhello0\r\n\r\n", "error bad_chunk_terminator at=8"},
        {"data_cr_not_lf", "5\r\nhello\rX0\r\n\r\n", "error bare_cr at=9"},
        {"last_chunk_bare_lf", "0\n\r\n", "error bare_lf at=1"},
        {"final_bare_lf", "0\r\n\n", "error bare_lf at=3"},
        {"final_bare_cr", "0\r\n\rX", "error bare_cr at=4"},
        // chunk-ext tricks.
        {"ext_bare_cr", "5;a\rb\r\nhello\r\n0\r\n\r\n", "error bare_cr at=4"},
        {"ext_bare_lf", "5;a\nhello\r\n0\r\n\r\n", "error bare_lf at=3"},
        {"ext_lf_in_value", "5;a=b\nhello\r\n0\r\n\r\n", "error bare_lf at=5"},
        {"ext_cr_in_quoted", "5;a=\"x\r\n\"\r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=6"},
        {"ext_lf_in_quoted", "5;a=\"x\n\"\r\nhello\r\n0\r\n\r\n", "error bare_lf at=6"},
        {"ext_cr_in_quoted_pair", "5;a=\"x\\\r\"\r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=7"},
        {"ext_unterminated_quote", "5;a=\"x\r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=6"},
        {"ext_empty", "5;\r\nhello\r\n0\r\n\r\n", "error bad_chunk_extension at=2"},
        {"ext_no_name", "5;=x\r\nhello\r\n0\r\n\r\n", "error bad_chunk_extension at=2"},
        {"ext_empty_value", "5;a=\r\nhello\r\n0\r\n\r\n", "error bad_chunk_extension at=4"},
        {"ext_trailing_bws_after_name", "5;a \r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=4"},
        {"ext_trailing_bws_after_value", "5;a=b \r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=6"},
        {"ext_bad_char", "5;a@b\r\nhello\r\n0\r\n\r\n", "error bad_chunk_extension at=3"},
        {"ext_nul", "5;a\0\r\nhello\r\n0\r\n\r\n"s, "error bad_chunk_extension at=3"},
        {"ext_after_quote_garbage", "5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
         "error bad_chunk_extension at=7"},
        {"ext_too_long", "5;" + std::string(70, 'a') + "\r\nhello\r\n0\r\n\r\n",
         "error chunk_line_too_long at=64"},
        {"ext_at_line_limit", "5;" + std::string(62, 'a') + "\r\nhello\r\n0\r\n\r\n",
         "done at=78 payload=5"},
        {"ext_one_over_line_limit", "5;" + std::string(63, 'a') + "\r\nhello\r\n0\r\n\r\n",
         "error chunk_line_too_long at=64"},
        {"line_limit_small", "12345\r\n", "error chunk_line_too_long at=4", chunk_limits(4)},
        {"line_limit_small_ok", "1234\r\n", "more at=6 payload=0", chunk_limits(4)},
        // Trailer tricks.
        {"trailer_name_whitespace", "0\r\nX-T : v\r\n\r\n", "error header_name_whitespace at=6"},
        {"trailer_obs_fold", "0\r\nX: a\r\n b\r\n\r\n", "error obs_fold at=9"},
        {"trailer_nul", "0\r\nX: a\0\r\n\r\n"s, "error bad_header_value at=7"},
        {"trailer_bare_lf", "0\r\nX: a\nY: b\r\n\r\n", "error bare_lf at=7"},
        {"trailer_bare_cr", "0\r\nX: a\rb\r\n\r\n", "error bad_header_value at=8"},
        {"trailer_no_colon", "0\r\nX\r\n\r\n", "error bad_header_name at=4"},
        {"trailer_empty_name", "0\r\n: v\r\n\r\n", "error bad_header_name at=3"},
        {"trailer_name_bad_char", "0\r\nX(: v\r\n\r\n", "error bad_header_name at=4"},
        {"trailer_name_lf", "0\r\nX\n: v\r\n\r\n", "error bare_lf at=4"},
        {"trailers_at_limit", "0\r\nX: 1\r\n\r\n", "done at=11 payload=0", chunk_limits(64, 8)},
        {"trailers_too_large", "0\r\nX: 12\r\n\r\n", "error trailers_too_large at=11",
         chunk_limits(64, 8)},
        {"trailers_too_large_unterminated", "0\r\n" + std::string(20, 'X'),
         "error trailers_too_large at=11", chunk_limits(64, 8)},
    };
}

class smuggling_chunked : public testing::TestWithParam<body_case> {};
TEST_P(smuggling_chunked, verdict) {
    const body_case &c = GetParam();
    EXPECT_EQ(frame_every_way(body_kind::chunked, 0, c.input, c.lim), c.want);
}
INSTANTIATE_TEST_SUITE_P(http, smuggling_chunked, testing::ValuesIn(chunked_bodies()),
                         case_name<body_case>);

// The CL.TE desync end to end: a front end that honoured Content-Length and a
// back end that honoured chunked would disagree on where the next request
// starts. ferry refuses the head, so the body is never interpreted at all.
TEST(smuggling, cl_te_never_reaches_a_body) {
    const std::string in = P + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG";
    head_parser p;
    request r;
    header storage[16];
    const parse_result res = parse_request(p, in, r, storage);
    ASSERT_EQ(res.st, parse_result::status::error);
    EXPECT_EQ(res.err, parse_error::te_and_cl);
    EXPECT_EQ(status_for(res.err), 400);
}

// A chunked body followed by a pipelined request: the framer stops exactly at
// the end of the body, and the next head parses from there.
TEST(smuggling, chunked_then_pipelined_request) {
    const std::string in = P + "Transfer-Encoding: chunked\r\n\r\n" + "3\r\nabc\r\n0\r\n\r\n" +
                           "GET /next HTTP/1.1\r\nHost: a\r\n\r\n";
    head_parser p;
    request r;
    header storage[16];
    parse_result res = parse_request(p, in, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    ASSERT_EQ(r.body, body_kind::chunked);
    body_framer f;
    f.reset(r.body, r.content_length, {});
    const std::string_view body = std::string_view(in).substr(res.consumed);
    const auto fr = f.feed(body);
    ASSERT_TRUE(fr.done);
    EXPECT_EQ(f.payload_bytes(), 3u);
    const std::string_view next = body.substr(fr.consumed);
    p.reset();
    res = parse_request(p, next, r, storage);
    ASSERT_EQ(res.st, parse_result::status::done);
    EXPECT_EQ(r.target, "/next");
}

}  // namespace
}  // namespace ferry::http::test
