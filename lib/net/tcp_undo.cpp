// D-SACK detection (RFC 2883) and the undo of a spurious recovery (RFC 3708).
// See tcp_undo.h.
#include "ferry/net/tcp_undo.h"

namespace ferry::net {

bool is_dsack(std::span<const tcp_sack_block> blocks, seq_num ack) noexcept {
    if (blocks.empty() || !(blocks[0].left < blocks[0].right)) {
        return false;
    }
    const tcp_sack_block &first = blocks[0];
    // RFC 2883 §4: "the first block ... should specify the contiguous block of
    // data containing the duplicate segment": below the cumulative ACK when
    // the duplicate was already acknowledged, else covered by the second
    // block (the rest of the receiver's out-of-order data around it).
    if (first.left < ack) {
        return true;
    }
    return blocks.size() > 1 && blocks[1].left <= first.left && first.right <= blocks[1].right;
}

void tcp_undo::start(seq_num una, uint32_t prior_cwnd, uint32_t prior_ssthresh) noexcept {
    frto_step_ = 0;
    active_ = true;
    marker_ = una;
    high_ = una;
    retransmitted_ = 0;
    reported_ = 0;
    prior_cwnd_ = prior_cwnd;
    prior_ssthresh_ = prior_ssthresh;
    have_last_ = false;
}

void tcp_undo::on_retransmit(seq_num start, seq_num end) noexcept {
    if (!active_ || !(start < end)) {
        return;
    }
    retransmitted_ += distance(start, end);
    high_ = seq_max(high_, end);
}

bool tcp_undo::on_dsack(seq_num left, seq_num right) noexcept {
    if (!active_ || retransmitted_ == 0 || !(left < right)) {
        return false;
    }
    const tcp_sack_block b{left, right};
    if (have_last_ && b == last_) {
        return false;  // the same report again: a duplicated ACK
    }
    last_ = b;
    have_last_ = true;
    // Only the part inside what the episode resent: [marker, high).
    const seq_num l = seq_max(left, marker_);
    const seq_num r = seq_min(right, high_);
    if (!(l < r)) {
        return false;
    }
    reported_ += distance(l, r);
    if (reported_ < retransmitted_) {
        return false;
    }
    active_ = false;
    return true;
}

void tcp_undo::frto_start(seq_num una, seq_num recovery_point, uint32_t prior_cwnd,
                          uint32_t prior_ssthresh) noexcept {
    start(una, prior_cwnd, prior_ssthresh);
    frto_point_ = recovery_point;
    frto_step_ = 2;
}

tcp_undo::frto_action tcp_undo::frto_on_ack(seq_num una, bool advanced,
                                            bool sacked_below_point) noexcept {
    if (frto_step_ == 2) {
        // Step 2: the first ACK after the RTO. Advancing SND.UNA without
        // covering RecoveryPoint: new data goes (2b) and step 3 follows. A
        // duplicate ACK, or everything acknowledged: the conventional
        // recovery (nothing to tell apart).
        if (advanced && una < frto_point_) {
            frto_step_ = 3;
            return frto_action::send_new;
        }
        frto_step_ = 0;
        return frto_action::none;
    }
    if (frto_step_ == 3) {
        frto_step_ = 0;
        // Step 3: an acknowledgment of data below RecoveryPoint that was not
        // resent after the RTO (cumulatively, past the one resent segment the
        // first ACK covered, or by SACK) means the originals arrived: the
        // timeout was spurious. The two new segments are above RecoveryPoint:
        // SACKing them alone tells nothing (a lost window SACKs them too).
        if (advanced || sacked_below_point) {
            active_ = false;
            return frto_action::spurious;
        }
        return frto_action::go_back;
    }
    return frto_action::none;
}

}  // namespace ferry::net
