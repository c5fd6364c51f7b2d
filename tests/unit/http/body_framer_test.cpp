// body_framer: Content-Length, chunked (with trailers) and until-close bodies
// fed whole, byte by byte and at every split (RFC 9112 §6.3, §7.1).
#include <string>

#include "test_support.h"

namespace ferry::http::test {
namespace {

TEST(body_framer, content_length_exact) {
    EXPECT_EQ(frame_every_way(body_kind::content_length, 5, "hello"), "done at=5 payload=5");
}

TEST(body_framer, content_length_stops_at_the_end) {
    EXPECT_EQ(frame_every_way(body_kind::content_length, 5, "helloGET / HTTP/1.1\r\n\r\n"),
              "done at=5 payload=5");
}

TEST(body_framer, content_length_short) {
    EXPECT_EQ(frame_every_way(body_kind::content_length, 10, "hello"), "more at=5 payload=5");
    body_framer f;
    f.reset(body_kind::content_length, 10, {});
    (void)f.feed("hello");
    EXPECT_EQ(f.remaining(), 5u);
    EXPECT_EQ(f.current_state(), body_framer::state::data);
}

TEST(body_framer, content_length_zero_and_none_are_done_at_once) {
    for (const body_kind k : {body_kind::none, body_kind::content_length}) {
        body_framer f;
        f.reset(k, 0, {});
        EXPECT_TRUE(f.done());
        const auto r = f.feed("GET / HTTP/1.1\r\n");
        EXPECT_TRUE(r.done);
        EXPECT_FALSE(r.error);
        EXPECT_EQ(r.consumed, 0u);
        EXPECT_EQ(frame_every_way(k, 0, "next"), "done at=0 payload=0");
    }
}

TEST(body_framer, content_length_large_value_counts_down) {
    body_framer f;
    f.reset(body_kind::content_length, 9223372036854775807ull, {});
    const std::string chunk(4096, 'x');
    for (int i = 0; i < 10; ++i) {
        const auto r = f.feed(chunk);
        EXPECT_EQ(r.consumed, 4096u);
        EXPECT_FALSE(r.done);
    }
    EXPECT_EQ(f.payload_bytes(), 40960u);
    EXPECT_EQ(f.remaining(), 9223372036854775807ull - 40960);
}

TEST(body_framer, until_close_takes_everything_and_never_ends) {
    EXPECT_EQ(frame_every_way(body_kind::until_close, 0, "anything\r\n0\r\n\r\n"),
              "more at=15 payload=15");
    body_framer f;
    f.reset(body_kind::until_close, 0, {});
    EXPECT_FALSE(f.feed("").done);
    EXPECT_FALSE(f.done());
}

// A chunked body with extensions and trailers, fed every way.
TEST(body_framer, chunked_with_trailers_every_split) {
    const std::string body =
        "4;name=value\r\nWiki\r\n"
        "5\r\npedia\r\n"
        "E;q=\"a \\\" b\"\r\n in\r\n\r\nchunks.\r\n"
        "0\r\n"
        "Expires: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
        "X-Checksum: abc\r\n"
        "\r\n";
    const std::string want = "done at=" + std::to_string(body.size()) + " payload=23";
    EXPECT_EQ(frame_every_way(body_kind::chunked, 0, body), want);
    // And followed by a pipelined request.
    EXPECT_EQ(frame_every_way(body_kind::chunked, 0, body + "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
              want);
}

TEST(body_framer, chunked_byte_by_byte_states) {
    const std::string body = "3;x=\"y\"\r\nabc\r\n0\r\nT: v\r\n\r\n";
    const body_framer::state want[] = {
        body_framer::state::size,            // 3
        body_framer::state::ext_name_ws,     // ;
        body_framer::state::ext_name,        // x
        body_framer::state::ext_value_ws,    // =
        body_framer::state::ext_quoted,      // "
        body_framer::state::ext_quoted,      // y
        body_framer::state::ext_quoted_end,  // "
        body_framer::state::size_lf,         // CR
        body_framer::state::data,            // LF
        body_framer::state::data,            // a
        body_framer::state::data,            // b
        body_framer::state::data_cr,         // c
        body_framer::state::data_lf,         // CR
        body_framer::state::size,            // LF
        body_framer::state::size,            // 0
        body_framer::state::size_lf,         // CR
        body_framer::state::trailer_start,   // LF
        body_framer::state::trailer_name,    // T
        body_framer::state::trailer_value,   // :
        body_framer::state::trailer_value,   // SP
        body_framer::state::trailer_value,   // v
        body_framer::state::trailer_lf,      // CR
        body_framer::state::trailer_start,   // LF
        body_framer::state::final_lf,        // CR
        body_framer::state::done,            // LF
    };
    ASSERT_EQ(sizeof want / sizeof want[0], body.size());
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    for (std::size_t i = 0; i < body.size(); ++i) {
        const auto r = f.feed(body.substr(i, 1));
        EXPECT_EQ(r.consumed, 1u) << i;
        EXPECT_EQ(name(f.current_state()), name(want[i])) << "after byte " << i;
    }
    EXPECT_EQ(f.payload_bytes(), 3u);
    EXPECT_EQ(f.wire_bytes(), body.size());
}

TEST(body_framer, error_is_sticky) {
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    auto r = f.feed("zz");
    EXPECT_TRUE(r.error);
    EXPECT_FALSE(r.done);
    EXPECT_EQ(r.err, parse_error::bad_chunk_size);
    EXPECT_EQ(r.consumed, 0u);
    EXPECT_TRUE(f.failed());
    r = f.feed("5\r\nhello\r\n0\r\n\r\n");
    EXPECT_TRUE(r.error);
    EXPECT_EQ(r.err, parse_error::bad_chunk_size);
    EXPECT_EQ(r.consumed, 0u);
    EXPECT_EQ(name(f.current_state()), "failed");
}

TEST(body_framer, reset_reuses_the_framer) {
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    (void)f.feed("zz");
    ASSERT_TRUE(f.failed());
    f.reset(body_kind::chunked, 0, {});
    const auto r = f.feed("1\r\nx\r\n0\r\n\r\n");
    EXPECT_TRUE(r.done);
    EXPECT_EQ(f.kind(), body_kind::chunked);
    EXPECT_EQ(f.payload_bytes(), 1u);
}

// Large chunk-data is skipped in bulk across slices; the payload count is
// what a body size limit sees.
TEST(body_framer, chunked_large_chunks_across_slices) {
    std::string body;
    for (int i = 0; i < 4; ++i)
        body += "1000\r\n" + std::string(4096, 'a' + i) + "\r\n";
    body += "0\r\n\r\n";
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    std::size_t off = 0;
    body_framer::feed_result r{};
    while (off < body.size() && !r.done) {
        const std::size_t n =
            std::min<std::size_t>(1500, body.size() - off);  // one MTU-ish segment
        r = f.feed(std::string_view(body).substr(off, n));
        ASSERT_FALSE(r.error);
        off += r.consumed;
    }
    EXPECT_TRUE(r.done);
    EXPECT_EQ(off, body.size());
    EXPECT_EQ(f.payload_bytes(), 4u * 4096);
}

TEST(body_framer, state_names) {
    EXPECT_EQ(name(body_framer::state::ext_quoted_pair), "ext_quoted_pair");
    EXPECT_EQ(name(body_framer::state::final_lf), "final_lf");
    EXPECT_EQ(name(static_cast<body_framer::state>(200)), "unknown");
}

// feed_run: payload and ferry's canonical framing, never the received
// framing bytes. `in` fed whole, byte by byte and split at every offset
// gives the same output.
std::string reframe(std::string_view in, size_t split, bool byte_by_byte, uint32_t *trailers) {
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    std::string out;
    auto feed_all = [&](std::string_view s) {
        while (!s.empty() && !f.done() && !f.failed()) {
            const auto r = f.feed_run(s);
            EXPECT_FALSE(r.error) << name(r.err);
            if (r.data) out += s.substr(0, r.consumed);
            out += r.out;
            s.remove_prefix(r.consumed);
            if (r.consumed == 0) break;
        }
    };
    if (byte_by_byte) {
        for (char c : in) feed_all(std::string_view(&c, 1));
    } else {
        feed_all(in.substr(0, split));
        feed_all(in.substr(split));
    }
    EXPECT_TRUE(f.done());
    if (trailers != nullptr) *trailers = f.trailer_fields();
    return out;
}

TEST(body_framer, feed_run_reframes_chunked_canonically) {
    const std::string in =
        "0005;a=b\r\nhello\r\nA;q=\"x\\\"y\"\r\n0123456789\r\n1 ; z\r\n!\r\n"
        "000;end=1\r\nX-T: v\r\nX-U: w\r\n\r\n";
    const std::string want = "5\r\nhello\r\na\r\n0123456789\r\n1\r\n!\r\n0\r\n\r\n";
    uint32_t trailers = 0;
    EXPECT_EQ(reframe(in, 0, true, &trailers), want);
    EXPECT_EQ(trailers, 2u);
    for (size_t k = 0; k <= in.size(); ++k) EXPECT_EQ(reframe(in, k, false, nullptr), want) << k;
}

TEST(body_framer, feed_run_large_chunk_sizes_and_an_empty_body) {
    EXPECT_EQ(reframe("0\r\n\r\n", 0, true, nullptr), "0\r\n\r\n");
    EXPECT_EQ(reframe("00000\r\n\r\n", 3, false, nullptr), "0\r\n\r\n");
    std::string big(0x1F0, 'x');
    EXPECT_EQ(reframe("01F0\r\n" + big + "\r\n0\r\n\r\n", 2, false, nullptr),
              "1f0\r\n" + big + "\r\n0\r\n\r\n");
}

TEST(body_framer, feed_run_runs_are_payload_or_framing_never_both) {
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    auto r = f.feed_run("3;x\r\nabc\r\n0\r\n\r\nNEXT");
    EXPECT_FALSE(r.data);
    EXPECT_EQ(r.consumed, 5u);
    EXPECT_EQ(r.out, "3\r\n");
    r = f.feed_run("abc\r\n0\r\n\r\nNEXT");
    EXPECT_TRUE(r.data);
    EXPECT_EQ(r.consumed, 3u);
    EXPECT_TRUE(r.out.empty());
    r = f.feed_run("\r\n0\r\n\r\nNEXT");
    EXPECT_FALSE(r.data);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(r.consumed, 7u);  // "NEXT" is the next message
    EXPECT_EQ(r.out, "\r\n0\r\n\r\n");
    EXPECT_EQ(f.payload_bytes(), 3u);
}

TEST(body_framer, feed_run_content_length_is_all_payload) {
    body_framer f;
    f.reset(body_kind::content_length, 4, {});
    const auto r = f.feed_run("abcdef");
    EXPECT_TRUE(r.data);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(r.consumed, 4u);
    EXPECT_TRUE(r.out.empty());
}

TEST(body_framer, feed_run_errors_like_feed) {
    body_framer f;
    f.reset(body_kind::chunked, 0, {});
    auto r = f.feed_run("5\r\nhel");
    r = f.feed_run("hel");
    r = f.feed_run("lo!!");  // the size lied
    r = f.feed_run("!!");
    EXPECT_TRUE(r.error);
    EXPECT_EQ(r.err, parse_error::bad_chunk_terminator);
}

}  // namespace
}  // namespace ferry::http::test
