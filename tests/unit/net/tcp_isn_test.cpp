#include "ferry/net/tcp_isn.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <set>

#include "ferry/net/tcp_siphash.h"

namespace ferry::net {

// Internal linkage: other test files print seq_num the same way.
static void PrintTo(seq_num s, std::ostream *os) {
    *os << "seq " << s.value();
}

namespace {

constexpr std::array<uint8_t, 16> paper_key_bytes{0, 1, 2,  3,  4,  5,  6,  7,
                                                  8, 9, 10, 11, 12, 13, 14, 15};
constexpr siphash_key paper_key = siphash_key::from_bytes(paper_key_bytes);

// SipHash-2-4 with key 00 01 .. 0f over the messages (empty), 00, 00 01, ...,
// 00 01 .. 3e: the 64 outputs of the SipHash paper's Appendix A / the
// reference implementation's vectors, as little-endian 64-bit integers.
constexpr uint64_t paper_vectors[64] = {
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
    0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137,
    0x93f5f5799a932462, 0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
    0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee, 0xa129ca6149be45e5,
    0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
    0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8,
    0xb8ad50c6f649af94, 0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad,
    0xde4daaaca71dc9a5, 0xa6a2506687956571, 0xad87a3535c49ef28, 0x32d892fad841c342,
    0x7127512f72f27cce, 0xa7f32346f95978e3, 0x12e0b01abb051238, 0x15e034d40fa197ae,
    0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d, 0x9abfd8766a33735c,
    0x0e3ea96b5304a7d0, 0xad0c42d6fc585992, 0x187306c89bc215a9, 0xd4a60abcf3792b95,
    0xf935451de4f21df2, 0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
    0xe612a3cb9ecba951, 0xc766e62cfcadaf96, 0xee64435a9752fe72, 0xa192d576b245165a,
    0x0a8787bf8ecb74b2, 0x81b3e73d20b49b6f, 0x7fa8220ba3b2ecea, 0x245731c13ca42499,
    0xb78dbfaf3a8d83bd, 0xea1ad565322a1a0b, 0x60e61c23a3795013, 0x6606d7e446282b93,
    0x6ca4ecb15c5f91e1, 0x9f626da15c9625f3, 0xe51b38608ef25f57, 0x958a324ceb064572,
};

constexpr std::array<uint8_t, 64> paper_message = [] {
    std::array<uint8_t, 64> m{};
    for (std::size_t i = 0; i < m.size(); ++i) {
        m[i] = static_cast<uint8_t>(i);
    }
    return m;
}();

class SipHashPaperVectors : public testing::TestWithParam<std::size_t> {};

TEST_P(SipHashPaperVectors, MatchesAppendix) {
    const std::size_t len = GetParam();
    EXPECT_EQ(siphash24(paper_key, std::span(paper_message).first(len)), paper_vectors[len])
        << "length " << len;
}

// Every length 0..63: each residue mod 8 of the final block, 0..7 full blocks.
INSTANTIATE_TEST_SUITE_P(AllLengths, SipHashPaperVectors, testing::Range<std::size_t>(0, 64));

// The paper's worked example (15-byte message) and the key layout, at compile time.
static_assert(paper_key.k0 == 0x0706050403020100 && paper_key.k1 == 0x0f0e0d0c0b0a0908);
static_assert(siphash24(paper_key, std::span(paper_message).first(15)) == 0xa129ca6149be45e5);

TEST(SipHash, KeyMatters) {
    siphash_key other = paper_key;
    other.k1 ^= 1;
    EXPECT_NE(siphash24(other, std::span(paper_message).first(15)), paper_vectors[15]);
}

const tcp_tuple tuple{ipv4_addr::from_octets(10, 0, 0, 1), ipv4_addr::from_octets(10, 0, 0, 2), 80,
                      40000};

TEST(TcpIsn, ClockTicksEveryFourMicroseconds) {
    EXPECT_EQ(tcp_isn_generator::clock(0), 0u);
    EXPECT_EQ(tcp_isn_generator::clock(3999), 0u);
    EXPECT_EQ(tcp_isn_generator::clock(4000), 1u);
    EXPECT_EQ(tcp_isn_generator::clock(1'000'000'000), 250'000u);
    // Wraps modulo 2^32 (every 2^32 * 4 us, about 4.77 hours).
    EXPECT_EQ(tcp_isn_generator::clock(4000ull << 32), 0u);
    EXPECT_EQ(tcp_isn_generator::clock((4000ull << 32) + 8000), 2u);
}

// F is SipHash-2-4 over local addr, local port, remote addr, remote port
// (big-endian), low 32 bits. The literal came from an independent Python
// SipHash checked against the paper vectors.
TEST(TcpIsn, OffsetIsSipHashOfTheTuple) {
    const tcp_isn_generator g(paper_key);
    const std::array<uint8_t, 12> in{10, 0, 0, 1, 0, 80, 10, 0, 0, 2, 0x9c, 0x40};
    EXPECT_EQ(g.offset(tuple), static_cast<uint32_t>(siphash24(paper_key, in)));
    EXPECT_EQ(g.offset(tuple), 0xc3f3ffdeu);
    EXPECT_EQ(g.isn(tuple, 0), seq_num(0xc3f3ffde));
}

TEST(TcpIsn, IsnIsClockPlusOffset) {
    const tcp_isn_generator g(paper_key);
    const seq_num base = g.isn(tuple, 0);
    EXPECT_EQ(g.isn(tuple, 4000), base + 1);
    EXPECT_EQ(g.isn(tuple, 1'000'000'000), base + 250'000);
    // Across the clock wrap the ISN keeps moving forward in sequence space.
    const uint64_t near_wrap = (4000ull << 32) - 4000;
    EXPECT_EQ(g.isn(tuple, near_wrap + 8000) - g.isn(tuple, near_wrap), 2);
}

TEST(TcpIsn, EveryInputChangesTheOffset) {
    const tcp_isn_generator g(paper_key);
    tcp_tuple swapped{tuple.remote_addr, tuple.local_addr, tuple.remote_port, tuple.local_port};
    tcp_tuple other_port = tuple;
    other_port.remote_port = 40001;
    tcp_tuple other_addr = tuple;
    other_addr.remote_addr = ipv4_addr::from_octets(10, 0, 0, 3);
    tcp_tuple other_local = tuple;
    other_local.local_port = 81;
    siphash_key k = paper_key;
    k.k0 += 1;
    std::set<uint32_t> seen{g.offset(tuple),       g.offset(swapped),
                            g.offset(other_port),  g.offset(other_addr),
                            g.offset(other_local), tcp_isn_generator(k).offset(tuple)};
    EXPECT_EQ(seen.size(), 6u);
}

// RFC 7323 §5.4 offsets: the addresses and the key decide, the ports do not
// (every connection between two hosts, on any lcore, shares one clock).
TEST(TcpTsOffset, AddressesAndKeyDecidePortsDoNot) {
    const uint32_t a = tcp_ts_offset(paper_key, tuple.local_addr, tuple.remote_addr);
    EXPECT_EQ(a, tcp_ts_offset(paper_key, tuple.local_addr, tuple.remote_addr));
    siphash_key k = paper_key;
    k.k1 += 1;
    std::set<uint32_t> seen{a, tcp_ts_offset(paper_key, tuple.remote_addr, tuple.local_addr),
                            tcp_ts_offset(paper_key, tuple.local_addr,
                                          ipv4_addr::from_octets(10, 0, 0, 3)),
                            tcp_ts_offset(k, tuple.local_addr, tuple.remote_addr)};
    EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace ferry::net
