// tcp_undo on its own: which first SACK block is a D-SACK (RFC 2883 §4),
// when an episode's retransmissions have all been reported duplicate (RFC
// 3708), F-RTO's steps (RFC 5682 §3). tcp_conn_prr_script_test.cpp scripts
// both undos in a connection.
#include "ferry/net/tcp_undo.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace ferry::net {
namespace {

constexpr uint32_t base = 1000;
seq_num at(uint32_t k) {  // segment k's first octet (1000 octets each)
    return seq_num(base + 1000 * (k - 1));
}

std::vector<tcp_sack_block> blocks(std::initializer_list<std::pair<uint32_t, uint32_t>> b) {
    std::vector<tcp_sack_block> v;
    for (auto [l, r] : b) {
        v.push_back(tcp_sack_block{seq_num(l), seq_num(r)});
    }
    return v;
}

// RFC 2883 §4: the first block reports the duplicate, below the cumulative
// ACK (a segment received twice before the hole below it was filled) or
// inside the second block (a duplicate of out-of-order data, reported with
// the rest of that data).
TEST(TcpDsack, TheFirstBlockBelowTheAckOrInsideTheSecondIsADsack) {
    EXPECT_TRUE(is_dsack(blocks({{3000, 3500}}), seq_num(4000)));
    EXPECT_TRUE(is_dsack(blocks({{3000, 3500}, {5000, 6000}}), seq_num(4000)));
    EXPECT_TRUE(is_dsack(blocks({{4000, 4500}, {4000, 5500}}), seq_num(3500)));
    EXPECT_TRUE(is_dsack(blocks({{5000, 5500}, {4500, 5500}}), seq_num(4000)));
    EXPECT_TRUE(is_dsack(blocks({{4500, 5500}, {4500, 5500}}), seq_num(4000)));  // the whole block
    // Part of it below the ACK is still a duplicate report.
    EXPECT_TRUE(is_dsack(blocks({{3500, 4500}}), seq_num(4000)));
    // Ordinary SACK information: above the ACK, not inside the second block.
    EXPECT_FALSE(is_dsack(blocks({{5000, 5500}}), seq_num(4000)));
    EXPECT_FALSE(is_dsack(blocks({{6000, 7000}, {4500, 5500}}), seq_num(4000)));
    EXPECT_FALSE(is_dsack(blocks({{5000, 6000}, {4500, 5500}}), seq_num(4000)));  // overlaps only
    EXPECT_FALSE(is_dsack(blocks({{4000, 5000}}), seq_num(4000)));  // starts at the ACK
    // Nothing, or an empty first block.
    EXPECT_FALSE(is_dsack({}, seq_num(4000)));
    EXPECT_FALSE(is_dsack(blocks({{3000, 3000}}), seq_num(4000)));
    // Across the sequence wrap.
    EXPECT_TRUE(is_dsack(blocks({{0xffffff00u, 0xffffff80u}}), seq_num(0x10)));
}

TEST(TcpUndo, EveryRetransmissionReportedDuplicateUndoesOnce) {
    tcp_undo u;
    u.start(at(3), 12000, 0xffffffffu);
    ASSERT_TRUE(u.active());
    EXPECT_EQ(u.marker(), at(3));
    EXPECT_EQ(u.prior_cwnd(), 12000u);
    EXPECT_EQ(u.prior_ssthresh(), 0xffffffffu);
    u.on_retransmit(at(3), at(4));
    u.on_retransmit(at(6), at(7));
    EXPECT_EQ(u.retransmitted(), 2000u);
    EXPECT_FALSE(u.on_dsack(at(3), at(4)));  // one of two
    EXPECT_EQ(u.reported(), 1000u);
    EXPECT_TRUE(u.on_dsack(at(6), at(7)));  // both: spurious
    EXPECT_FALSE(u.active());
    EXPECT_FALSE(u.on_dsack(at(6), at(7)));  // the episode is over
}

// A hole resent twice needs both copies reported: one D-SACK says only that
// one copy was not needed.
TEST(TcpUndo, AHoleResentTwiceNeedsBothCopiesReported) {
    tcp_undo u;
    u.start(at(3), 12000, 20000);
    u.on_retransmit(at(3), at(4));
    u.on_retransmit(at(3), at(4));
    EXPECT_EQ(u.retransmitted(), 2000u);
    EXPECT_FALSE(u.on_dsack(at(3), at(4)));
    EXPECT_TRUE(u.active());
    // A second report of the same block right after is taken for a
    // duplicated ACK, not for the second copy.
    EXPECT_FALSE(u.on_dsack(at(3), at(4)));
    EXPECT_EQ(u.reported(), 1000u);
}

// Only what the episode resent counts: a duplicate below SND.UNA at its
// start (an earlier episode's, or the network's) or above what it resent.
TEST(TcpUndo, DuplicatesOutsideWhatTheEpisodeResentDoNotCount) {
    tcp_undo u;
    u.start(at(5), 12000, 20000);
    EXPECT_FALSE(u.on_dsack(at(5), at(6)));  // nothing resent yet
    EXPECT_EQ(u.reported(), 0u);
    u.on_retransmit(at(5), at(6));
    EXPECT_FALSE(u.on_dsack(at(2), at(3)));  // below the marker
    EXPECT_FALSE(u.on_dsack(at(8), at(9)));  // above what was resent
    EXPECT_EQ(u.reported(), 0u);
    // A block covering more than the retransmission counts its part in it.
    EXPECT_TRUE(u.on_dsack(at(4), at(7)));
    EXPECT_EQ(u.reported(), 1000u);
}

TEST(TcpUndo, CancelAndRestart) {
    tcp_undo u;
    EXPECT_FALSE(u.active());
    EXPECT_FALSE(u.on_dsack(at(1), at(2)));  // no episode
    u.start(at(1), 12000, 20000);
    u.on_retransmit(at(1), at(2));
    u.cancel();
    EXPECT_FALSE(u.on_dsack(at(1), at(2)));
    u.start(at(10), 8000, 9000);
    EXPECT_EQ(u.retransmitted(), 0u);
    EXPECT_EQ(u.reported(), 0u);
    u.on_retransmit(at(10), at(11));
    u.on_retransmit(at(11), at(11));  // empty: nothing
    EXPECT_EQ(u.retransmitted(), 1000u);
    EXPECT_TRUE(u.on_dsack(at(10), at(11)));
    EXPECT_EQ(u.prior_cwnd(), 8000u);
    EXPECT_EQ(u.prior_ssthresh(), 9000u);
}

// F-RTO (RFC 5682 §3): step 2 on the first ACK after the timeout, step 3 on
// the next.
TEST(TcpFrto, AnAckOfDataNeverResentAfterTheNewSegmentsMeansSpurious) {
    using action = tcp_undo::frto_action;
    tcp_undo u;
    u.frto_start(at(1), at(11), 11000, 0xffffffffu);  // RecoveryPoint: 10 segments out
    ASSERT_TRUE(u.frto_pending());
    EXPECT_TRUE(u.active());
    EXPECT_EQ(u.retransmitted(), 0u);
    EXPECT_EQ(u.frto_recovery_point(), at(11));
    EXPECT_EQ(u.frto_on_ack(at(2), true, false), action::send_new);  // the resent 1
    EXPECT_TRUE(u.frto_pending());
    EXPECT_EQ(u.frto_on_ack(at(3), true, false), action::spurious);  // 2: never resent
    EXPECT_FALSE(u.frto_pending());
    EXPECT_FALSE(u.active());
    EXPECT_EQ(u.prior_cwnd(), 11000u);
    EXPECT_EQ(u.frto_on_ack(at(4), true, false), action::none);  // over
    // A SACK below RecoveryPoint tells the same as a cumulative ACK.
    u.frto_start(at(1), at(11), 11000, 20000);
    EXPECT_EQ(u.frto_on_ack(at(2), true, false), action::send_new);
    EXPECT_EQ(u.frto_on_ack(at(2), false, true), action::spurious);
}

TEST(TcpFrto, OnlyTheNewSegmentsSackedMeansARealLoss) {
    using action = tcp_undo::frto_action;
    tcp_undo u;
    u.frto_start(at(1), at(11), 11000, 20000);
    EXPECT_EQ(u.frto_on_ack(at(2), true, false), action::send_new);
    EXPECT_EQ(u.frto_on_ack(at(2), false, false), action::go_back);
    EXPECT_FALSE(u.frto_pending());
    EXPECT_TRUE(u.active());  // the episode stays (a D-SACK could still come)
    EXPECT_EQ(u.frto_on_ack(at(2), false, false), action::none);
}

TEST(TcpFrto, TheFirstAckDecidesWhetherStepThreeRuns) {
    using action = tcp_undo::frto_action;
    tcp_undo u;
    // A duplicate ACK first: the conventional recovery, F-RTO is over.
    u.frto_start(at(1), at(11), 11000, 20000);
    EXPECT_EQ(u.frto_on_ack(at(1), false, true), action::none);
    EXPECT_FALSE(u.frto_pending());
    // Everything acknowledged at once: nothing to tell apart.
    u.frto_start(at(1), at(11), 11000, 20000);
    EXPECT_EQ(u.frto_on_ack(at(11), true, false), action::none);
    EXPECT_FALSE(u.frto_pending());
    // Given up (nothing new to send), or cancelled by another timeout.
    u.frto_start(at(1), at(11), 11000, 20000);
    u.frto_cancel();
    EXPECT_EQ(u.frto_on_ack(at(2), true, false), action::none);
    u.frto_start(at(1), at(11), 11000, 20000);
    u.cancel();
    EXPECT_FALSE(u.frto_pending());
    // A recovery's episode replaces F-RTO's.
    u.frto_start(at(1), at(11), 11000, 20000);
    u.start(at(1), 11000, 20000);
    EXPECT_FALSE(u.frto_pending());
}

}  // namespace
}  // namespace ferry::net
