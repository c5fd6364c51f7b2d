#include "ferry/net/tcp_syncookie.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <ostream>
#include <random>
#include <string>

#include "test_util.h"

namespace ferry::net {

// Internal linkage: other test files print seq_num the same way.
static void PrintTo(seq_num s, std::ostream *os) {
    *os << "seq " << s.value();
}

namespace {

using test::PrintTo;

siphash_key key_from(uint8_t first) {
    std::array<uint8_t, 16> b{};
    for (std::size_t i = 0; i < b.size(); ++i) {
        b[i] = static_cast<uint8_t>(first + i);
    }
    return siphash_key::from_bytes(b);
}

const tcp_syncookies cookies(key_from(0x00), key_from(0x10));
// Us 10.0.0.1:80, the client 10.0.0.2:40000.
const tcp_tuple tuple{ipv4_addr::from_octets(10, 0, 0, 1), ipv4_addr::from_octets(10, 0, 0, 2), 80,
                      40000};
const seq_num client_isn(0x12345678);
constexpr uint64_t slot = tcp_syncookies::slot_ns;
constexpr uint64_t t0 = 1000 * slot + 5'000'000'000;  // 5 s into slot 1000

TEST(SynCookie, LayoutIsPinned) {
    // Computed by an independent Python SipHash (checked against the paper
    // vectors) with the layout of tcp_syncookie.h: H0 + cisn + (1000 << 24) +
    // ((H1(1000, cisn) + 3) mod 2^24), MSS 1460 being index 3.
    EXPECT_EQ(tcp_syncookies::time_slot(t0), 1000u);
    EXPECT_EQ(cookies.encode(tuple, client_isn, 1460, t0), seq_num(0x56a61534));
}

struct mss_case {
    const char *name;
    uint16_t client_mss;
    uint8_t index;
};

class SynCookieMss : public testing::TestWithParam<mss_case> {};

TEST_P(SynCookieMss, RoundTripsTheTableEntry) {
    const auto &c = GetParam();
    EXPECT_EQ(tcp_syncookies::mss_index(c.client_mss), c.index);
    const seq_num cookie = cookies.encode(tuple, client_isn, c.client_mss, t0);
    uint16_t mss = 0;
    EXPECT_EQ(cookies.decode(tuple, client_isn, cookie, t0, mss), syncookie_error::none);
    EXPECT_EQ(mss, tcp_syncookies::mss_table[c.index]);
    EXPECT_LE(mss, std::max<uint16_t>(c.client_mss, 536));
}

INSTANTIATE_TEST_SUITE_P(Table, SynCookieMss,
                         testing::Values(mss_case{"tiny_gets_536", 100, 0}, mss_case{"536", 536, 0},
                                         mss_case{"1299", 1299, 0}, mss_case{"1300", 1300, 1},
                                         mss_case{"1400", 1400, 1}, mss_case{"1440", 1440, 2},
                                         mss_case{"pppoe_1452", 1452, 2},
                                         mss_case{"ethernet_1460", 1460, 3},
                                         mss_case{"jumbo_8960", 8960, 3},
                                         mss_case{"max", 65535, 3}),
                         [](const auto &info) { return std::string(info.param.name); });

struct age_case {
    const char *name;
    uint64_t encode_at;
    uint64_t decode_at;
    syncookie_error expected;
};

class SynCookieAge : public testing::TestWithParam<age_case> {};

TEST_P(SynCookieAge, CurrentAndPreviousSlotOnly) {
    const auto &c = GetParam();
    const seq_num cookie = cookies.encode(tuple, client_isn, 1460, c.encode_at);
    uint16_t mss = 0;
    EXPECT_EQ(cookies.decode(tuple, client_isn, cookie, c.decode_at, mss), c.expected)
        << name(cookies.decode(tuple, client_isn, cookie, c.decode_at, mss));
    EXPECT_EQ(mss, c.expected == syncookie_error::none ? 1460 : 0);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SynCookieAge,
    testing::Values(
        age_case{"same_instant", t0, t0, syncookie_error::none},
        age_case{"end_of_same_slot", 1000 * slot, 1001 * slot - 1, syncookie_error::none},
        age_case{"next_slot", 1000 * slot, 1001 * slot, syncookie_error::none},
        age_case{"end_of_next_slot", 1000 * slot, 1002 * slot - 1, syncookie_error::none},
        age_case{"two_slots_later", 1001 * slot - 1, 1002 * slot, syncookie_error::expired},
        age_case{"ten_slots_later", t0, t0 + 10 * slot, syncookie_error::expired},
        age_case{"from_the_future", t0 + slot, t0, syncookie_error::expired},
        // The slot travels in 8 bits; crossing 255 -> 256 is fine.
        age_case{"slot_byte_wraps", 255 * slot, 256 * slot, syncookie_error::none},
        // 256 slots later the byte matches again, but H1 was made for the old
        // slot: the hash check catches it.
        age_case{"slot_byte_aliases", 1000 * slot, 1256 * slot, syncookie_error::bad_cookie}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(SynCookie, WrongTupleOrClientIsnIsRejected) {
    const seq_num cookie = cookies.encode(tuple, client_isn, 1460, t0);
    uint16_t mss = 0;
    tcp_tuple t = tuple;
    t.remote_port = 40001;
    EXPECT_NE(cookies.decode(t, client_isn, cookie, t0, mss), syncookie_error::none);
    t = tuple;
    t.remote_addr = ipv4_addr::from_octets(10, 0, 0, 3);
    EXPECT_NE(cookies.decode(t, client_isn, cookie, t0, mss), syncookie_error::none);
    t = tuple;
    t.local_port = 8080;
    EXPECT_NE(cookies.decode(t, client_isn, cookie, t0, mss), syncookie_error::none);
    t = tuple;
    t.local_addr = ipv4_addr::from_octets(10, 0, 0, 9);
    EXPECT_NE(cookies.decode(t, client_isn, cookie, t0, mss), syncookie_error::none);
    // The client ISN is hashed (unlike Linux): near misses do not decode.
    for (int32_t d : {-3, -2, -1, 1, 2, 3}) {
        EXPECT_NE(cookies.decode(tuple, client_isn + d, cookie, t0, mss), syncookie_error::none)
            << d;
    }
    // Other keys.
    const tcp_syncookies other(key_from(0x00), key_from(0x11));
    EXPECT_NE(other.decode(tuple, client_isn, cookie, t0, mss), syncookie_error::none);
    EXPECT_EQ(mss, 0);
}

TEST(SynCookie, EveryFlippedBitIsRejected) {
    const seq_num cookie = cookies.encode(tuple, client_isn, 1460, t0);
    // Bits 2..31: the slot byte or the hash part; nothing survives.
    for (int bit = 2; bit < 32; ++bit) {
        uint16_t mss = 0;
        const seq_num tampered(cookie.value() ^ (1u << bit));
        EXPECT_NE(cookies.decode(tuple, client_isn, tampered, t0, mss), syncookie_error::none)
            << "bit " << bit;
        EXPECT_EQ(mss, 0) << "bit " << bit;
    }
    // Bits 0..1 carry the MSS index, which (as in Linux) is only range-checked:
    // a flip there may land on another table entry, never outside the table.
    for (int bit = 0; bit < 2; ++bit) {
        uint16_t mss = 0;
        const seq_num tampered(cookie.value() ^ (1u << bit));
        if (cookies.decode(tuple, client_isn, tampered, t0, mss) == syncookie_error::none) {
            EXPECT_NE(mss, 1460) << "bit " << bit;
            EXPECT_NE(
                std::find(tcp_syncookies::mss_table.begin(), tcp_syncookies::mss_table.end(), mss),
                tcp_syncookies::mss_table.end());
        }
    }
    // One past the largest index leaves the table.
    uint16_t mss = 0;
    EXPECT_EQ(cookies.decode(tuple, client_isn, cookie + 1, t0, mss), syncookie_error::bad_cookie);
}

TEST(SynCookie, RandomGuessesFail) {
    std::mt19937 rng(12345);
    int accepted = 0;
    for (int i = 0; i < 1 << 16; ++i) {
        uint16_t mss = 0;
        accepted +=
            cookies.decode(tuple, client_isn, seq_num(rng()), t0, mss) == syncookie_error::none;
    }
    // 2 of 256 slot values pass the age test, then 4 of 2^24 hash values:
    // about 2e-6 expected passes in 65536 guesses.
    EXPECT_EQ(accepted, 0);
}

struct ts_case {
    const char *name;
    syncookie_options options;
    uint32_t low_bits;
};

class SynCookieTimestamp : public testing::TestWithParam<ts_case> {};

TEST_P(SynCookieTimestamp, OptionsRideInTheLowBits) {
    const auto &c = GetParam();
    syncookie_options expect = c.options;
    if (expect.window_shift && *expect.window_shift > 14) {
        expect.window_shift = 14;
    }
    for (uint32_t ts_now : {0u, 5u, 63u, 64u, 1000u, 0x12345678u, 0xffffffffu}) {
        const uint32_t ts = tcp_syncookies::encode_tsval(ts_now, c.options);
        EXPECT_EQ(ts & 63, c.low_bits) << ts_now;
        // Not after ts_now and less than 64 ticks before it, in serial order.
        EXPECT_LE(seq_num(ts), seq_num(ts_now)) << ts_now;
        EXPECT_LT(ts_now - ts, 64u) << ts_now;
        EXPECT_EQ(tcp_syncookies::decode_tsecr(ts), expect) << ts_now;
    }
}

syncookie_options so(std::optional<uint8_t> ws, bool sack, bool ecn) {
    syncookie_options o;
    o.window_shift = ws;
    o.sack_ok = sack;
    o.ecn_ok = ecn;
    return o;
}

INSTANTIATE_TEST_SUITE_P(Table, SynCookieTimestamp,
                         testing::Values(ts_case{"nothing", so(std::nullopt, false, false), 0x0f},
                                         ts_case{"wscale_0", so(0, false, false), 0x00},
                                         ts_case{"wscale_7_sack", so(7, true, false), 0x17},
                                         ts_case{"wscale_14_sack_ecn", so(14, true, true), 0x3e},
                                         ts_case{"sack_only", so(std::nullopt, true, false), 0x1f},
                                         ts_case{"ecn_only", so(std::nullopt, false, true), 0x2f},
                                         ts_case{"wscale_15_stored_as_14", so(15, false, false),
                                                 0x0e}),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(SynCookie, ErrorNames) {
    EXPECT_STREQ(name(syncookie_error::none), "none");
    EXPECT_STREQ(name(syncookie_error::expired), "expired");
    EXPECT_STREQ(name(syncookie_error::bad_cookie), "bad_cookie");
}

}  // namespace
}  // namespace ferry::net
