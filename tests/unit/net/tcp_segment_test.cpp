#include "ferry/net/tcp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <set>
#include <string>

#include "test_util.h"

namespace ferry::net {

// Internal linkage: other test files print seq_num the same way.
static void PrintTo(seq_num s, std::ostream *os) { *os << "seq " << s.value(); }

namespace {

using test::PrintTo;

using namespace test;

const ipv4_addr client = ipv4_addr::from_octets(10, 0, 0, 2);
const ipv4_addr server = ipv4_addr::from_octets(10, 0, 0, 1);

// Segments whose checksums and options tcpdump 4.99 decoded and called
// "correct" (written as raw-IP pcap, read with tcpdump -vv):
//   10.0.0.2.40000 > 10.0.0.1.80: Flags [S], cksum 0x2fca (correct),
//     seq 305419896, win 64240,
//     options [mss 1460,sackOK,TS val 16909060 ecr 0,nop,wscale 7], length 0
const bytes syn_segment{0x9c, 0x40, 0x00, 0x50, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00,
                        0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0, 0x2f, 0xca, 0x00, 0x00,
                        0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x01, 0x02,
                        0x03, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07};
//   10.0.0.2.40000 > 10.0.0.1.80: Flags [P.], cksum 0x302d (correct),
//     seq 305419897:305419902, ack 2596069105, win 502,
//     options [nop,nop,TS val 16909209 ecr 2695938256,nop,nop,sack 1 {...}], length 5
const bytes data_segment{0x9c, 0x40, 0x00, 0x50, 0x12, 0x34, 0x56, 0x79, 0x9a, 0xbc, 0xde, 0xf1,
                         0xb0, 0x18, 0x01, 0xf6, 0x30, 0x2d, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a,
                         0x01, 0x02, 0x03, 0x99, 0xa0, 0xb0, 0xc0, 0xd0, 0x01, 0x01, 0x05, 0x0a,
                         0x12, 0x34, 0x56, 0x90, 0x12, 0x34, 0x56, 0xa0, 'h',  'e',  'l',  'l',
                         'o'};
//   10.0.0.1.80 > 10.0.0.2.40000: Flags [F.], cksum 0x968d (correct),
//     seq 4294967294, ack 305419904, win 65535, length 0
const bytes fin_segment{0x00, 0x50, 0x9c, 0x40, 0xff, 0xff, 0xff, 0xfe, 0x12, 0x34,
                        0x56, 0x80, 0x50, 0x11, 0xff, 0xff, 0x96, 0x8d, 0x00, 0x00};

// The pseudo-header of RFC 9293 §3.1 as bytes, for the reference checksum.
bytes pseudo_header(ipv4_addr src, ipv4_addr dst, std::size_t len) {
    bytes b(12, 0);
    src.write(std::span(b).subspan<0, 4>());
    dst.write(std::span(b).subspan<4, 4>());
    b[9] = 6;
    put16(b, 10, static_cast<uint16_t>(len));
    return b;
}

uint16_t ref_tcp_checksum(ipv4_addr src, ipv4_addr dst, bytes seg) {
    seg[16] = 0;
    seg[17] = 0;
    return ref_checksum(concat({pseudo_header(src, dst, seg.size()), seg}));
}

TEST(TcpSegment, ParsesSyn) {
    bytes b = syn_segment;
    tcp_segment s(b);
    ASSERT_EQ(s.check(), tcp_error::none);
    EXPECT_EQ(s.src_port(), 40000);
    EXPECT_EQ(s.dst_port(), 80);
    EXPECT_EQ(s.seq_number(), seq_num(0x12345678));
    EXPECT_EQ(s.ack_number(), seq_num(0));
    EXPECT_EQ(s.data_offset(), 10);
    EXPECT_EQ(s.header_len(), 40u);
    EXPECT_EQ(s.flags(), tcp_flag::syn);
    EXPECT_TRUE(s.syn());
    EXPECT_FALSE(s.ack() || s.fin() || s.rst() || s.psh() || s.urg() || s.ece() || s.cwr());
    EXPECT_EQ(s.window(), 64240);
    EXPECT_EQ(s.checksum(), 0x2fca);
    EXPECT_EQ(s.urgent_ptr(), 0);
    EXPECT_EQ(s.options().size(), 20u);
    EXPECT_EQ(s.payload().size(), 0u);
    EXPECT_EQ(s.payload_len(), 0u);
    EXPECT_TRUE(s.verify_checksum(client, server));

    tcp_repr r;
    tcp_option_error why = tcp_option_error::bad_size;
    ASSERT_EQ(tcp_repr::parse(s, r, &why), tcp_error::none);
    EXPECT_EQ(why, tcp_option_error::none);
    EXPECT_EQ(r.src_port, 40000);
    EXPECT_EQ(r.seq, seq_num(0x12345678));
    EXPECT_EQ(r.flags, tcp_flag::syn);
    EXPECT_EQ(r.seg_len(), 1u);  // the SYN occupies one sequence number
    EXPECT_EQ(r.options.mss, 1460);
    EXPECT_TRUE(r.options.sack_permitted);
    EXPECT_EQ(r.options.window_shift, 7);
    EXPECT_FALSE(r.options.window_shift_clamped);
    ASSERT_TRUE(r.options.timestamps.has_value());
    EXPECT_EQ(r.options.timestamps->tsval, 0x01020304u);
    EXPECT_EQ(r.options.timestamps->tsecr, 0u);
    EXPECT_EQ(r.options.sack_count, 0);
}

TEST(TcpSegment, ParsesDataWithSack) {
    bytes b = data_segment;
    tcp_segment s(b);
    ASSERT_EQ(s.check(), tcp_error::none);
    EXPECT_TRUE(s.verify_checksum(client, server));
    EXPECT_EQ(s.flags(), tcp_flag::psh | tcp_flag::ack);
    EXPECT_EQ(s.header_len(), 44u);
    EXPECT_EQ(std::string(s.payload().begin(), s.payload().end()), "hello");
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(s, r), tcp_error::none);
    EXPECT_EQ(r.ack, seq_num(0x9abcdef1));
    EXPECT_EQ(r.window, 502);
    EXPECT_EQ(r.payload_len, 5u);
    EXPECT_EQ(r.seg_len(), 5u);
    EXPECT_EQ(r.options.timestamps, (tcp_timestamps{0x01020399, 0xa0b0c0d0}));
    ASSERT_EQ(r.options.sack_count, 1);
    EXPECT_EQ(r.options.sack_blocks()[0],
              (tcp_sack_block{seq_num(0x12345690), seq_num(0x123456a0)}));
    EXPECT_FALSE(r.options.mss.has_value());
}

TEST(TcpSegment, ParsesFin) {
    bytes b = fin_segment;
    tcp_segment s(b);
    ASSERT_EQ(s.check(), tcp_error::none);
    EXPECT_TRUE(s.verify_checksum(server, client));
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(s, r), tcp_error::none);
    EXPECT_EQ(r.seq, seq_num(0xfffffffe));
    EXPECT_EQ(r.flags, tcp_flag::fin | tcp_flag::ack);
    EXPECT_EQ(r.seg_len(), 1u);
    EXPECT_EQ(r.options, tcp_options{});
}

TEST(TcpSegment, ChecksumFailsOnAnyFlippedBitAndWrongAddresses) {
    for (std::size_t i = 0; i < data_segment.size(); ++i) {
        bytes b = data_segment;
        b[i] ^= 0x01;
        EXPECT_FALSE(tcp_segment(b).verify_checksum(client, server)) << "byte " << i;
    }
    bytes b = data_segment;
    EXPECT_FALSE(tcp_segment(b).verify_checksum(client, ipv4_addr::from_octets(10, 0, 0, 3)));
}

TEST(TcpSegment, FillChecksumMatchesReference) {
    for (const bytes *fixture : {&syn_segment, &data_segment}) {
        bytes b = *fixture;
        tcp_segment s(b);
        s.set_checksum(0xdead);
        s.fill_checksum(client, server);
        EXPECT_EQ(s.checksum(), ref_tcp_checksum(client, server, *fixture));
        EXPECT_EQ(b, *fixture);
    }
}

TEST(TcpSegment, PseudoHeaderSumIsTheOffloadSeed) {
    // What a NIC with tx checksum offload wants in the field: the folded
    // (not inverted) pseudo-header sum.
    const bytes ph = pseudo_header(client, server, 49);
    const uint16_t ref_fold = static_cast<uint16_t>(~ref_checksum(ph));
    EXPECT_EQ(tcp_pseudo_header(client, server, 49).fold(), ref_fold);
    EXPECT_EQ(tcp_pseudo_header(client, server, 49).fold(), 0x143a);  // 0a00+0002+0a00+0001+0006+0031
}

// A segment whose data continues in a second mbuf: the view holds the header
// and the first data bytes; the caller sums the rest.
TEST(TcpSegment, SegmentedDataIsVerifiedPiecewise) {
    bytes b = data_segment;
    const std::span<uint8_t> first = std::span(b).first(47);  // header + "hel"
    tcp_segment s(first, b.size());
    ASSERT_EQ(s.check(), tcp_error::none);
    EXPECT_EQ(s.payload().size(), 3u);
    EXPECT_EQ(s.payload_len(), 5u);
    EXPECT_EQ(s.segment_bytes(), b.size());
    EXPECT_FALSE(s.verify_checksum(client, server));  // not contiguous
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(s, r), tcp_error::none);
    EXPECT_EQ(r.payload_len, 5u);
    // Odd-length pieces, summed as one stream after the pseudo-header.
    internet_checksum c = tcp_pseudo_header(client, server, static_cast<uint16_t>(b.size()));
    c.add(first);
    c.add(std::span(b).subspan(47));
    EXPECT_EQ(c.fold(), 0xffff);
    // A segment_bytes below the span is raised to the span.
    EXPECT_EQ(tcp_segment(first, 10).segment_bytes(), 47u);
}

struct check_case {
    const char *name;
    bytes segment;
    tcp_error expected;  // from tcp_repr::parse; check() agrees except on bad_options
};

bytes with_offset(bytes b, uint8_t words) {
    b[12] = static_cast<uint8_t>((words << 4) | (b[12] & 0x0f));
    return b;
}

class TcpCheck : public testing::TestWithParam<check_case> {};

TEST_P(TcpCheck, ChecksStructure) {
    auto c = GetParam();
    tcp_segment s(c.segment);
    const tcp_error structural =
        c.expected == tcp_error::bad_options ? tcp_error::none : c.expected;
    EXPECT_EQ(s.check(), structural) << name(s.check());
    EXPECT_EQ(tcp_segment::new_checked(c.segment).has_value(), structural == tcp_error::none);
    tcp_repr r;
    EXPECT_EQ(tcp_repr::parse(s, r), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, TcpCheck,
    testing::Values(check_case{"syn", syn_segment, tcp_error::none},
                    check_case{"fin_20_bytes", fin_segment, tcp_error::none},
                    check_case{"empty", bytes{}, tcp_error::truncated},
                    check_case{"19_bytes", bytes(fin_segment.begin(), fin_segment.end() - 1),
                               tcp_error::truncated},
                    check_case{"offset_0", with_offset(fin_segment, 0), tcp_error::bad_data_offset},
                    check_case{"offset_4", with_offset(fin_segment, 4), tcp_error::bad_data_offset},
                    check_case{"offset_6_in_20", with_offset(fin_segment, 6), tcp_error::truncated},
                    check_case{"offset_15_in_40", with_offset(syn_segment, 15),
                               tcp_error::truncated},
                    // Offset 5 on the SYN: the options become data; still valid.
                    check_case{"offset_5_options_as_data", with_offset(syn_segment, 5),
                               tcp_error::none},
                    // Reserved bits are ignored on receipt (RFC 9293 §3.1).
                    check_case{"reserved_bits_set",
                               [] {
                                   bytes b = fin_segment;
                                   b[12] |= 0x0f;
                                   return b;
                               }(),
                               tcp_error::none},
                    check_case{"option_length_zero",
                               [] {
                                   bytes b = syn_segment;
                                   b[21] = 0;  // MSS length
                                   return b;
                               }(),
                               tcp_error::bad_options}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(TcpSegment, TruncatedAtEveryLength) {
    for (std::size_t len = 0; len < syn_segment.size(); ++len) {
        bytes b(syn_segment.begin(), syn_segment.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(tcp_segment(b).check(), tcp_error::truncated) << "len " << len;
    }
}

TEST(TcpRepr, BadOptionsSayWhy) {
    // syn_segment options: MSS at 20, SACK-permitted + TS at 24, NOP at 36,
    // window scale (kind 37, length 38, shift 39).
    struct {
        uint8_t ws_len;
        tcp_option_error why;
    } const cases[] = {{4, tcp_option_error::overrun},
                       {1, tcp_option_error::bad_length},
                       {0, tcp_option_error::bad_length},
                       {2, tcp_option_error::bad_size},
                       {3, tcp_option_error::none}};
    for (const auto &c : cases) {
        bytes b = syn_segment;
        b[38] = c.ws_len;
        tcp_repr r;
        tcp_option_error why = tcp_option_error::bad_size;
        EXPECT_EQ(tcp_repr::parse(tcp_segment(b), r, &why),
                  c.why == tcp_option_error::none ? tcp_error::none : tcp_error::bad_options);
        EXPECT_EQ(why, c.why) << "length " << int{c.ws_len} << ": " << name(why);
    }
    // EOL where the NOP was: the window scale after it is padding.
    bytes b = syn_segment;
    b[36] = 0;
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(tcp_segment(b), r), tcp_error::none);
    EXPECT_FALSE(r.options.window_shift.has_value());
    EXPECT_EQ(r.options.mss, 1460);
}

// RFC 9293 §3.2 MUST-65, RFC 7323 §2.2, RFC 2018 §2: SYN-only options on a
// segment without SYN are ignored; RFC 7323 §3.2: TSecr without ACK is ignored.
TEST(TcpRepr, IgnoresWhatTheRfcsSayToIgnore) {
    bytes b = syn_segment;
    b[13] = tcp_flag::ack;
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(tcp_segment(b), r), tcp_error::none);
    EXPECT_FALSE(r.options.mss.has_value());
    EXPECT_FALSE(r.options.window_shift.has_value());
    EXPECT_FALSE(r.options.sack_permitted);
    ASSERT_TRUE(r.options.timestamps.has_value());
    EXPECT_EQ(r.options.timestamps->tsval, 0x01020304u);

    bytes d = data_segment;
    d[13] = tcp_flag::psh;  // no ACK: the TSecr 0xa0b0c0d0 is not to be used
    ASSERT_EQ(tcp_repr::parse(tcp_segment(d), r), tcp_error::none);
    EXPECT_EQ(r.options.timestamps, (tcp_timestamps{0x01020399, 0}));
    EXPECT_EQ(r.options.sack_count, 1);  // SACK blocks are not SYN-only
}

struct emit_case {
    const char *name;
    const bytes *fixture;
    ipv4_addr src;
    ipv4_addr dst;
};

class TcpEmit : public testing::TestWithParam<emit_case> {};

// parse -> emit reproduces the tcpdump-checked bytes exactly: the header, the
// Linux option layout and the checksum.
TEST_P(TcpEmit, RoundTripsFixture) {
    const auto &c = GetParam();
    bytes in = *c.fixture;
    tcp_repr r;
    ASSERT_EQ(tcp_repr::parse(tcp_segment(in), r), tcp_error::none);
    EXPECT_EQ(r.header_len(), tcp_segment(in).header_len());
    EXPECT_EQ(r.buffer_len(), in.size());

    // Contiguous: the data is already in place after the header.
    bytes out(in.size(), 0xee);
    std::memcpy(out.data() + r.header_len(), in.data() + r.header_len(), r.payload_len);
    tcp_segment s(out);
    r.emit(s, c.src, c.dst);
    EXPECT_EQ(hex(out), hex(in));

    // Gathered: header-only buffer, payload sum given in odd pieces.
    bytes hdr(r.header_len(), 0xee);
    internet_checksum payload;
    for (std::size_t i = 0; i < r.payload_len; ++i) {
        payload.add(std::span(in).subspan(r.header_len() + i, 1));
    }
    tcp_segment hs(hdr);
    r.emit(hs, c.src, c.dst, payload);
    EXPECT_EQ(hex(hdr), hex(std::span(in).first(r.header_len())));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TcpEmit,
                         testing::Values(emit_case{"syn", &syn_segment, client, server},
                                         emit_case{"data", &data_segment, client, server},
                                         emit_case{"fin", &fin_segment, server, client}),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(TcpRepr, EmitClearsReservedBitsAndFillsChecksum) {
    tcp_repr r;
    r.src_port = 80;
    r.dst_port = 1234;
    r.seq = seq_num(1);
    r.ack = seq_num(2);
    r.flags = tcp_flag::rst | tcp_flag::ack;
    r.window = 0;
    bytes out(20, 0xff);
    tcp_segment s(out);
    r.emit(s, server, client);
    EXPECT_EQ(out[12], 0x50);
    EXPECT_EQ(s.urgent_ptr(), 0);
    EXPECT_TRUE(s.verify_checksum(server, client));
    EXPECT_EQ(s.checksum(), ref_tcp_checksum(server, client, out));
    tcp_repr back;
    ASSERT_EQ(tcp_repr::parse(s, back), tcp_error::none);
    EXPECT_EQ(back, r);
}

TEST(TcpNames, EveryReasonHasAName) {
    std::set<std::string> names;
    for (tcp_error e : {tcp_error::none, tcp_error::truncated, tcp_error::bad_data_offset,
                        tcp_error::bad_options}) {
        EXPECT_STRNE(name(e), "unknown");
        names.insert(name(e));
    }
    for (tcp_option_error e : {tcp_option_error::none, tcp_option_error::bad_length,
                               tcp_option_error::overrun, tcp_option_error::bad_size}) {
        EXPECT_STRNE(name(e), "unknown");
        names.insert(std::string("opt_") + name(e));
    }
    EXPECT_EQ(names.size(), 8u);
    EXPECT_STREQ(name(static_cast<tcp_error>(200)), "unknown");
}

}  // namespace
}  // namespace ferry::net
