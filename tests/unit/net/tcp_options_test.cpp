#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ferry/net/tcp.h"
#include "test_util.h"

namespace ferry::net {

namespace {

using test::PrintTo;

using namespace test;

tcp_options opts(const std::function<void(tcp_options &)> &f) {
    tcp_options o;
    f(o);
    return o;
}

tcp_sack_block block(uint32_t l, uint32_t r) {
    return {seq_num(l), seq_num(r)};
}

struct parse_case {
    const char *name;
    bytes input;
    tcp_option_error expected;
    tcp_options options{};  // what parse leaves in `out`
};

class TcpOptionsParse : public testing::TestWithParam<parse_case> {};

TEST_P(TcpOptionsParse, ParsesOrRejects) {
    const auto &c = GetParam();
    tcp_options out;
    out.mss = 9999;  // parse starts from scratch
    out.sack_count = 3;
    const tcp_option_error e = tcp_options::parse(c.input, out);
    EXPECT_EQ(e, c.expected) << name(e);
    EXPECT_EQ(out, c.options);
}

const bytes ts_value{0x01, 0x02, 0x03, 0x04, 0xa0, 0xb0, 0xc0, 0xd0};

bytes sack_option(std::size_t blocks) {
    bytes b{5, static_cast<uint8_t>(2 + 8 * blocks)};
    for (std::size_t i = 0; i < blocks; ++i) {
        const uint32_t l = 1000 * static_cast<uint32_t>(i + 1);
        for (uint32_t v : {l, l + 100}) {
            b.insert(b.end(), {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
                               static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)});
        }
    }
    return b;
}

tcp_options sack_blocks(std::size_t n) {
    tcp_options o;
    o.sack_count = static_cast<uint8_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
        const uint32_t l = 1000 * static_cast<uint32_t>(i + 1);
        o.sack[i] = block(l, l + 100);
    }
    return o;
}

INSTANTIATE_TEST_SUITE_P(
    Table, TcpOptionsParse,
    testing::Values(
        parse_case{"empty", {}, tcp_option_error::none},
        parse_case{"nops", {1, 1, 1, 1}, tcp_option_error::none},
        parse_case{"eol_ends_list", {0, 0xff, 0x00, 0x07}, tcp_option_error::none},
        parse_case{
            "mss", {2, 4, 0x05, 0xb4}, tcp_option_error::none, opts([](auto &o) { o.mss = 1460; })},
        // RFC 9293 §3.2 MUST-64: options need not start on a word boundary.
        parse_case{
            "mss_unaligned", {1, 2, 4, 0x02, 0x18, 0}, tcp_option_error::none, opts([](auto &o) {
                o.mss = 536;
            })},
        parse_case{"mss_zero_kept_raw", {2, 4, 0, 0}, tcp_option_error::none, opts([](auto &o) {
                       o.mss = 0;
                   })},
        parse_case{"mss_len_3", {2, 3, 5, 1}, tcp_option_error::bad_size},
        parse_case{"mss_len_5", {2, 5, 5, 0xb4, 0}, tcp_option_error::bad_size},
        parse_case{"wscale_0", {3, 3, 0}, tcp_option_error::none, opts([](auto &o) {
                       o.window_shift = 0;
                   })},
        parse_case{"wscale_14", {3, 3, 14}, tcp_option_error::none, opts([](auto &o) {
                       o.window_shift = 14;
                   })},
        // RFC 7323 §2.3: larger shifts are used as 14.
        parse_case{"wscale_15_clamped", {3, 3, 15}, tcp_option_error::none, opts([](auto &o) {
                       o.window_shift = 14;
                       o.window_shift_clamped = true;
                   })},
        parse_case{"wscale_255_clamped", {3, 3, 255}, tcp_option_error::none, opts([](auto &o) {
                       o.window_shift = 14;
                       o.window_shift_clamped = true;
                   })},
        parse_case{"wscale_len_4", {3, 4, 7, 0}, tcp_option_error::bad_size},
        parse_case{"sack_permitted", {4, 2}, tcp_option_error::none, opts([](auto &o) {
                       o.sack_permitted = true;
                   })},
        parse_case{"sack_permitted_len_3", {4, 3, 0}, tcp_option_error::bad_size},
        parse_case{"timestamps", concat({{8, 10}, ts_value}), tcp_option_error::none,
                   opts([](auto &o) {
                       o.timestamps = tcp_timestamps{0x01020304, 0xa0b0c0d0};
                   })},
        parse_case{"timestamps_len_9", {8, 9, 0, 0, 0, 0, 0, 0, 0}, tcp_option_error::bad_size},
        parse_case{"sack_1", sack_option(1), tcp_option_error::none, sack_blocks(1)},
        parse_case{"sack_2", sack_option(2), tcp_option_error::none, sack_blocks(2)},
        parse_case{"sack_3", sack_option(3), tcp_option_error::none, sack_blocks(3)},
        parse_case{"sack_4", sack_option(4), tcp_option_error::none, sack_blocks(4)},
        parse_case{"sack_5_blocks", sack_option(5), tcp_option_error::bad_size},
        parse_case{"sack_no_blocks", {5, 2}, tcp_option_error::bad_size},
        parse_case{"sack_len_11", concat({{5, 11}, bytes(9, 0)}), tcp_option_error::bad_size},
        // RFC 9293 §3.1 MUST-6: unknown kinds are skipped by their length.
        parse_case{"unknown_kind_skipped",
                   {30, 4, 0xaa, 0xbb, 2, 4, 0x05, 0xb4},
                   tcp_option_error::none,
                   opts([](auto &o) { o.mss = 1460; })},
        parse_case{"unknown_kind_len_2", {0xfd, 2, 4, 2}, tcp_option_error::none, opts([](auto &o) {
                       o.sack_permitted = true;
                   })},
        // RFC 9293 §3.1 MUST-7: illegal lengths.
        parse_case{"unknown_len_0", {0xfe, 0, 1, 1}, tcp_option_error::bad_length},
        parse_case{"timestamps_len_1", concat({{8, 1}, ts_value}), tcp_option_error::bad_length},
        parse_case{"kind_without_length", {1, 1, 1, 2}, tcp_option_error::overrun},
        parse_case{"mss_past_end", {2, 4, 0x05}, tcp_option_error::overrun},
        parse_case{"unknown_past_end", {34, 10, 0, 0}, tcp_option_error::overrun},
        parse_case{"duplicate_last_wins",
                   {2, 4, 0x05, 0xb4, 2, 4, 0x02, 0x18},
                   tcp_option_error::none,
                   opts([](auto &o) { o.mss = 536; })},
        parse_case{"duplicate_wscale_unclamps",
                   {3, 3, 20, 3, 3, 2},
                   tcp_option_error::none,
                   opts([](auto &o) { o.window_shift = 2; })},
        // On error, what came before the bad option stays.
        parse_case{"error_keeps_prefix",
                   {2, 4, 0x05, 0xb4, 3, 2},
                   tcp_option_error::bad_size,
                   opts([](auto &o) { o.mss = 1460; })}),
    [](const auto &info) { return std::string(info.param.name); });

struct emit_case {
    const char *name;
    tcp_options options;
    bytes expected;
    std::size_t sack_emitted = 0;
};

class TcpOptionsEmit : public testing::TestWithParam<emit_case> {};

TEST_P(TcpOptionsEmit, WritesLinuxLayout) {
    const auto &c = GetParam();
    EXPECT_EQ(c.options.emit_len(), c.expected.size());
    EXPECT_EQ(c.options.emit_len() % 4, 0u);
    EXPECT_LE(c.options.emit_len(), tcp_options::max_len);
    EXPECT_EQ(c.options.sack_blocks_emitted(), c.sack_emitted);
    bytes out(tcp_options::max_len, 0xee);
    EXPECT_EQ(c.options.emit(out), c.expected.size());
    EXPECT_EQ(hex(std::span(out).first(c.expected.size())), hex(c.expected));
    // Nothing written past emit_len().
    for (std::size_t i = c.expected.size(); i < out.size(); ++i) {
        EXPECT_EQ(out[i], 0xee) << i;
    }
    // And it reads back as what was written (less the SACK blocks dropped and
    // with the shift as emitted).
    tcp_options back;
    ASSERT_EQ(tcp_options::parse(std::span(out).first(c.expected.size()), back),
              tcp_option_error::none);
    tcp_options want = c.options;
    want.sack_count = static_cast<uint8_t>(c.sack_emitted);
    for (std::size_t i = c.sack_emitted; i < tcp_options::max_sack_blocks; ++i) {
        want.sack[i] = {};
    }
    if (want.window_shift && *want.window_shift > 14) {
        want.window_shift = 14;  // emitted clamped, so read back as a plain 14
    }
    EXPECT_EQ(back, want);
}

tcp_options with_ts(tcp_options o) {
    o.timestamps = tcp_timestamps{0x01020304, 0xa0b0c0d0};
    return o;
}

INSTANTIATE_TEST_SUITE_P(
    Table, TcpOptionsEmit,
    testing::Values(
        emit_case{"none", {}, {}},
        emit_case{"mss", opts([](auto &o) { o.mss = 1460; }), {2, 4, 0x05, 0xb4}},
        emit_case{"sack_permitted", opts([](auto &o) { o.sack_permitted = true; }), {1, 1, 4, 2}},
        emit_case{"timestamps", with_ts({}), concat({{1, 1, 8, 10}, ts_value})},
        emit_case{"timestamps_sack_permitted",
                  with_ts(opts([](auto &o) { o.sack_permitted = true; })),
                  concat({{4, 2, 8, 10}, ts_value})},
        emit_case{"wscale", opts([](auto &o) { o.window_shift = 7; }), {1, 3, 3, 7}},
        emit_case{
            "wscale_clamped_on_emit", opts([](auto &o) { o.window_shift = 20; }), {1, 3, 3, 14}},
        // Linux's SYN: 20 bytes.
        emit_case{"linux_syn", with_ts(opts([](auto &o) {
                      o.mss = 1460;
                      o.sack_permitted = true;
                      o.window_shift = 7;
                  })),
                  concat({{2, 4, 0x05, 0xb4, 4, 2, 8, 10}, ts_value, {1, 3, 3, 7}})},
        emit_case{"syn_without_ts",
                  opts([](auto &o) {
                      o.mss = 1460;
                      o.sack_permitted = true;
                      o.window_shift = 7;
                  }),
                  {2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7}},
        emit_case{"sack_1", sack_blocks(1), concat({{1, 1}, sack_option(1)}), 1},
        emit_case{"sack_4_without_ts", sack_blocks(4), concat({{1, 1}, sack_option(4)}), 4},
        // RFC 2018 §3: with timestamps only three blocks fit.
        emit_case{"sack_4_with_ts_keeps_3", with_ts(sack_blocks(4)),
                  concat({{1, 1, 8, 10}, ts_value, {1, 1}, sack_option(3)}), 3},
        emit_case{
            "sack_beside_syn_options_keeps_2", with_ts([] {
                tcp_options o = sack_blocks(3);
                o.mss = 1460;
                o.window_shift = 7;
                return o;
            }()),
            concat({{2, 4, 0x05, 0xb4, 1, 1, 8, 10}, ts_value, {1, 3, 3, 7, 1, 1}, sack_option(2)}),
            2}),
    [](const auto &info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ferry::net
