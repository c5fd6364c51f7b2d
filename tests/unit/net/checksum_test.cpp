#include "ferry/net/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using test::bytes;
using test::ref_checksum;

struct checksum_case {
    const char *name;
    bytes data;
    uint16_t expected;  // the checksum field value
};

class Checksum : public testing::TestWithParam<checksum_case> {};

TEST_P(Checksum, MatchesKnownValue) {
    const auto &c = GetParam();
    EXPECT_EQ(checksum(c.data), c.expected);
    EXPECT_EQ(ref_checksum(c.data), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, Checksum,
    testing::Values(
        // RFC 1071 §3 numerical example: the sum is 0xddf2, the checksum its complement.
        checksum_case{"rfc1071_example", {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0x220d},
        // A real IPv4 header with its checksum field zeroed.
        checksum_case{"ipv4_header",
                      {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                       0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7},
                      0xb861},
        checksum_case{"odd_length", {0x01, 0x02, 0x03}, static_cast<uint16_t>(~0x0402)},
        checksum_case{"empty", {}, 0xffff}, checksum_case{"all_ones", {0xff, 0xff}, 0x0000},
        checksum_case{"carry", {0xff, 0xff, 0x00, 0x01}, 0xfffe}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Checksum, VerifiesWithFieldFilled) {
    bytes h{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
            0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    EXPECT_TRUE(checksum_ok(h));
    h[15] ^= 0x01;
    EXPECT_FALSE(checksum_ok(h));
}

// Summing in pieces (mbuf segments) gives the same result wherever the cuts are,
// odd offsets included.
TEST(Checksum, PiecesAtEverySplit) {
    std::mt19937 rng(1071);
    bytes data(101);
    for (auto &b : data) {
        b = static_cast<uint8_t>(rng());
    }
    const uint16_t whole = ref_checksum(data);
    for (std::size_t i = 0; i <= data.size(); ++i) {
        for (std::size_t j = i; j <= data.size(); j += 7) {
            internet_checksum c;
            c.add(std::span(data).subspan(0, i));
            c.add(std::span(data).subspan(i, j - i));
            c.add(std::span(data).subspan(j));
            ASSERT_EQ(c.finish(), whole) << "cuts at " << i << " and " << j;
        }
    }
}

TEST(Checksum, LengthsUpToSixtyFour) {
    std::mt19937 rng(42);
    for (std::size_t len = 0; len <= 64; ++len) {
        bytes data(len);
        for (auto &b : data) {
            b = static_cast<uint8_t>(rng());
        }
        ASSERT_EQ(checksum(data), ref_checksum(data)) << "len " << len;
    }
}

// RFC 1624: the incremental update equals a full recomputation, and the
// updated message verifies.
TEST(Checksum, IncrementalUpdateMatchesRecompute) {
    std::mt19937 rng(1624);
    for (int iter = 0; iter < 20000; ++iter) {
        bytes msg(2 * (2 + rng() % 40));
        for (auto &b : msg) {
            b = static_cast<uint8_t>(rng());
        }
        // Bias towards the edge values where one's complement zero matters.
        if (iter % 4 == 0) {
            std::fill(msg.begin(), msg.end(), iter % 8 == 0 ? 0x00 : 0xff);
        }
        msg[0] = msg[1] = 0;  // checksum field at offset 0
        test::put16(msg, 0, ref_checksum(msg));
        const std::size_t at = 2 + 2 * (rng() % (msg.size() / 2 - 1));
        const uint16_t old_word = static_cast<uint16_t>(msg[at] << 8 | msg[at + 1]);
        const uint16_t new_word = iter % 3 == 0 ? static_cast<uint16_t>(iter % 2 ? 0xffff : 0)
                                                : static_cast<uint16_t>(rng());
        const uint16_t old_ck = static_cast<uint16_t>(msg[0] << 8 | msg[1]);
        test::put16(msg, at, new_word);
        const uint16_t updated = checksum_update16(old_ck, old_word, new_word);
        bytes zeroed = msg;
        zeroed[0] = zeroed[1] = 0;
        const uint16_t full = ref_checksum(zeroed);
        // RFC 1624 §3 assumes a non-zero field; all-zero data is outside eqn. 3
        // (see its comment and the all-zero echo test in stack_test.cpp).
        if (std::all_of(zeroed.begin(), zeroed.end(), [](uint8_t b) { return b == 0; })) {
            continue;
        }
        test::put16(msg, 0, updated);
        ASSERT_TRUE(checksum_ok(msg)) << "iter " << iter;
        ASSERT_EQ(updated, full) << "iter " << iter << " old " << old_word << " new " << new_word;
    }
}

TEST(Checksum, AddWordIsPositionIndependent) {
    // A word added out of stream order (the ICMP type/code word) sums the same
    // as in place, even after an odd-length piece.
    const bytes msg{0x08, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a};
    internet_checksum a;
    a.add(std::span(msg).subspan(2));
    a.add_word(0x0800);
    EXPECT_EQ(a.finish(), ref_checksum(msg));
}

TEST(Checksum, IncrementalUpdate32) {
    // An IPv4 header whose source address changes 192.168.0.1 -> 10.1.2.3.
    bytes h{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
            0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    const uint16_t updated = checksum_update32(0xb861, 0xc0a80001, 0x0a010203);
    h[12] = 10, h[13] = 1, h[14] = 2, h[15] = 3;
    h[10] = h[11] = 0;
    EXPECT_EQ(updated, ref_checksum(h));
}

}  // namespace
}  // namespace ferry::net
