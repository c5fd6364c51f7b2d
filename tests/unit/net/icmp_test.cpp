#include "ferry/net/icmp.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using namespace test;

icmp_spec with(void (*f)(icmp_spec &)) {
    icmp_spec s;
    f(s);
    return s;
}

struct icmp_case {
    const char *name;
    bytes message;
    icmp_error expected;
    icmp_type type = icmp_type::echo_request;
};

class IcmpParse : public testing::TestWithParam<icmp_case> {};

TEST_P(IcmpParse, ParsesOrRejects) {
    auto c = GetParam();
    icmpv4_packet p(c.message);
    icmp_echo_repr r;
    const icmp_error e = icmp_echo_repr::parse(p, r);
    EXPECT_EQ(e, c.expected) << name(e);
    if (c.expected == icmp_error::none) {
        EXPECT_EQ(r.type, c.type);
        EXPECT_EQ(r.ident, 0x4242);
        EXPECT_EQ(r.seq, 1);
        EXPECT_EQ(bytes(r.data.begin(), r.data.end()),
                  bytes(c.message.begin() + 8, c.message.end()));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, IcmpParse,
    testing::Values(
        icmp_case{"echo_request", build_icmp({}), icmp_error::none},
        icmp_case{"echo_reply", build_icmp(with([](icmp_spec &s) { s.type = 0; })),
                  icmp_error::none, icmp_type::echo_reply},
        icmp_case{"no_data", build_icmp(with([](icmp_spec &s) { s.data.clear(); })),
                  icmp_error::none},
        icmp_case{"odd_data", build_icmp(with([](icmp_spec &s) { s.data = bytes(57, 0x5a); })),
                  icmp_error::none},
        icmp_case{"bad_checksum", build_icmp(with([](icmp_spec &s) { s.checksum = 0x1234; })),
                  icmp_error::bad_checksum},
        icmp_case{"dest_unreachable", build_icmp(with([](icmp_spec &s) {
                      s.type = 3;
                      s.code = 1;
                  })),
                  icmp_error::unsupported},
        icmp_case{"timestamp", build_icmp(with([](icmp_spec &s) { s.type = 13; })),
                  icmp_error::unsupported},
        icmp_case{"echo_code_1", build_icmp(with([](icmp_spec &s) { s.code = 1; })),
                  icmp_error::unsupported},
        icmp_case{"seven_bytes", bytes{8, 0, 0xf7, 0xff, 0, 0, 0}, icmp_error::truncated},
        icmp_case{"empty", bytes{}, icmp_error::truncated}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Icmp, TruncatedAtEveryLength) {
    const bytes full = build_icmp(with([](icmp_spec &s) { s.data.clear(); }));
    for (std::size_t len = 0; len < full.size(); ++len) {
        bytes b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(icmpv4_packet(b).check(), icmp_error::truncated) << "len " << len;
        EXPECT_FALSE(icmpv4_packet::new_checked(b).has_value());
    }
}

TEST(Icmp, EveryCorruptedBitDetected) {
    const bytes good = build_icmp({});
    for (std::size_t at = 0; at < good.size(); ++at) {
        for (int bit = 0; bit < 8; ++bit) {
            bytes b = good;
            b[at] ^= static_cast<uint8_t>(1 << bit);
            EXPECT_EQ(icmpv4_packet(b).check(), icmp_error::bad_checksum)
                << "byte " << at << " bit " << bit;
        }
    }
}

TEST(Icmp, EmitParseRoundTrip) {
    const bytes data{1, 2, 3, 4, 5};
    const icmp_echo_repr r{icmp_type::echo_reply, 0x4242, 1, data};
    bytes b(r.buffer_len(), 0xee);
    icmpv4_packet p(b);
    r.emit(p);
    EXPECT_EQ(b, build_icmp(with([](icmp_spec &s) {
                  s.type = 0;
                  s.data = {1, 2, 3, 4, 5};
              })));
    icmp_echo_repr back;
    ASSERT_EQ(icmp_echo_repr::parse(p, back), icmp_error::none);
    EXPECT_EQ(back.type, r.type);
    EXPECT_EQ(back.ident, r.ident);
    EXPECT_EQ(back.seq, r.seq);
    EXPECT_EQ(bytes(back.data.begin(), back.data.end()), data);
}

TEST(Icmp, EmitOverItsOwnRequest) {
    // A reply emitted over the request it answers: data aliases the buffer.
    bytes b = build_icmp(with([](icmp_spec &s) { s.data = bytes(33, 0x61); }));
    icmpv4_packet p(b);
    icmp_echo_repr r;
    ASSERT_EQ(icmp_echo_repr::parse(p, r), icmp_error::none);
    r.type = icmp_type::echo_reply;
    r.emit(p);
    EXPECT_EQ(b, build_icmp(with([](icmp_spec &s) {
                  s.type = 0;
                  s.data = bytes(33, 0x61);
              })));
}

TEST(Icmp, ErrorNames) {
    EXPECT_STREQ(name(icmp_error::truncated), "truncated");
    EXPECT_STREQ(name(icmp_error::bad_checksum), "bad_checksum");
    EXPECT_STREQ(name(icmp_error::unsupported), "unsupported");
}

}  // namespace
}  // namespace ferry::net
