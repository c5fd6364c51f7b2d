// TCP sequence numbers: 32-bit serial arithmetic and the receive-window tests.
//
// Read first: RFC 9293 §3.4 ("Sequence Numbers": all arithmetic is modulo 2^32,
// the comparisons, SEG.LEN), RFC 9293 §3.10.7.4 "SEGMENT ARRIVES", first check
// (the four-case acceptability table), RFC 1982 §3.1-§3.2 (serial number
// addition and comparison with SERIAL_BITS = 32).
//
// Comparison is RFC 1982 §3.2 with one choice made explicit: for two numbers
// exactly 2^31 apart RFC 1982 leaves the order undefined; here both a < b and
// b < a then hold (the sign of the 32-bit difference, as in Linux before()).
// TCP never compares numbers that far apart: windows are below 2^30
// (RFC 7323 §2.3) and PAWS/the acceptability test keep old segments out.
#pragma once

#include <cstdint>

namespace ferry::net {

class seq_num {
public:
    constexpr seq_num() noexcept = default;
    constexpr explicit seq_num(uint32_t v) noexcept : v_(v) {}

    [[nodiscard]] constexpr uint32_t value() const noexcept { return v_; }

    // RFC 1982 §3.1 addition, modulo 2^32; a negative n steps backwards.
    constexpr seq_num &operator+=(int32_t n) noexcept {
        v_ += static_cast<uint32_t>(n);
        return *this;
    }
    constexpr seq_num &operator-=(int32_t n) noexcept {
        v_ -= static_cast<uint32_t>(n);
        return *this;
    }
    [[nodiscard]] friend constexpr seq_num operator+(seq_num a, int32_t n) noexcept {
        return a += n;
    }
    [[nodiscard]] friend constexpr seq_num operator-(seq_num a, int32_t n) noexcept {
        return a -= n;
    }
    // Signed distance a - b: positive when a is after b. Meaningful while the
    // two are less than 2^31 apart (see the file comment).
    [[nodiscard]] friend constexpr int32_t operator-(seq_num a, seq_num b) noexcept {
        return static_cast<int32_t>(a.v_ - b.v_);
    }

    [[nodiscard]] friend constexpr bool operator==(seq_num, seq_num) noexcept = default;
    [[nodiscard]] friend constexpr bool operator<(seq_num a, seq_num b) noexcept {
        return a - b < 0;
    }
    [[nodiscard]] friend constexpr bool operator>(seq_num a, seq_num b) noexcept {
        return b - a < 0;
    }
    [[nodiscard]] friend constexpr bool operator<=(seq_num a, seq_num b) noexcept {
        return !(a > b);
    }
    [[nodiscard]] friend constexpr bool operator>=(seq_num a, seq_num b) noexcept {
        return !(a < b);
    }

private:
    uint32_t v_ = 0;
};

// Octets from `from` forward to `to`, modulo 2^32 (always >= 0): the number of
// sequence numbers in [from, to).
[[nodiscard]] constexpr uint32_t distance(seq_num from, seq_num to) noexcept {
    return to.value() - from.value();
}

[[nodiscard]] constexpr seq_num seq_max(seq_num a, seq_num b) noexcept {
    return a < b ? b : a;
}
[[nodiscard]] constexpr seq_num seq_min(seq_num a, seq_num b) noexcept {
    return a < b ? a : b;
}

// left <= seq < left + size, in sequence space (RFC 9293 §3.4 writes it
// "RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND"). Exact across the wrap for any size
// up to 2^32 - 1; an empty window (size 0) contains nothing.
[[nodiscard]] constexpr bool in_window(seq_num seq, seq_num left, uint32_t size) noexcept {
    return distance(left, seq) < size;
}

// The acceptability test of RFC 9293 §3.10.7.4, first check ("check sequence
// number"), for a segment occupying seg_len sequence numbers from seg_seq
// (SEG.LEN: data octets plus one each for SYN and FIN):
//
//   SEG.LEN  RCV.WND  acceptable when
//   0        0        SEG.SEQ = RCV.NXT
//   0        >0       RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND
//   >0       0        never
//   >0       >0       RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND
//                     or RCV.NXT =< SEG.SEQ+SEG.LEN-1 < RCV.NXT+RCV.WND
//
// The caller still owes the RFC's special allowance for a zero window ("valid
// ACKs, URGs, and RSTs" are processed even when the segment is not acceptable).
[[nodiscard]] constexpr bool segment_acceptable(seq_num seg_seq, uint32_t seg_len, seq_num rcv_nxt,
                                                uint32_t rcv_wnd) noexcept {
    if (seg_len == 0) {
        return rcv_wnd == 0 ? seg_seq == rcv_nxt : in_window(seg_seq, rcv_nxt, rcv_wnd);
    }
    if (rcv_wnd == 0) {
        return false;
    }
    return in_window(seg_seq, rcv_nxt, rcv_wnd) ||
           in_window(seg_seq + static_cast<int32_t>(seg_len - 1), rcv_nxt, rcv_wnd);
}

// SND.UNA < SEG.ACK =< SND.NXT: the ACK acknowledges something not yet
// acknowledged and nothing not yet sent (RFC 9293 §3.10.7.4, fifth check,
// ESTABLISHED: "If SND.UNA < SEG.ACK =< SND.NXT, then set SND.UNA <- SEG.ACK").
[[nodiscard]] constexpr bool ack_advances(seq_num ack, seq_num snd_una, seq_num snd_nxt) noexcept {
    return snd_una < ack && ack <= snd_nxt;
}

}  // namespace ferry::net
