// RACK-TLP loss detection (RFC 8985) for the sender side of a connection:
// per-segment transmit times, the most recently delivered segment's time, a
// reordering window, and the tail loss probe's timeout.
//
// Read first: RFC 8985 §6.1-§6.2 (RACK's per-segment state, the steps run on
// every ACK), §6.3 (the reordering timer), §7 (TLP: when to probe, what to
// send); RFC 6675 for the scoreboard this works with (tcp_conn_queues.h).
//
// Why (issue 16): RFC 6675 alone cannot see that a retransmission was lost,
// nor a loss at the tail of a flight (no segment after it to produce
// duplicate ACKs); both then wait for the retransmission timeout, 200 ms at
// least, thousands of round trips on a LAN. RACK marks a segment lost once a
// segment sent after it has been delivered and the reordering window has
// passed, whether the lost one was an original or a retransmission; TLP
// sends a probe after about two round trips of silence so that the tail's
// loss is reported by an ACK instead of found by the timer.
//
// Records: one per transmitted data segment, in transmission order, in a
// ring that is one block of the connection's tcp_block_pool, held while
// data is outstanding (as the queues' rings are). A retransmission
// supersedes the record of what it resends and gets one of its own. When
// the ring is full a segment goes unrecorded (counted): RACK then never
// marks it lost, and RFC 6675's rules and the timer still cover it.
//
// The caller (tcp_conn) owns the state machine: it reports transmissions and
// ACKs, asks which segments are lost and retransmits them, and runs the
// timers; this class only keeps the records and the RACK variables.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/net/tcp_block_pool.h"
#include "ferry/net/tcp_conn_queues.h"
#include "ferry/net/tcp_seq.h"

namespace ferry::net {

class tcp_rack {
public:
    static constexpr uint64_t never = UINT64_MAX;
    // RFC 8985 §7.2 WCDelAckT: the longest a receiver delays an ACK.
    static constexpr uint64_t worst_case_delayed_ack_ns = 200'000'000;
    // Added to 2 * SRTT for a flight of more than one segment (Linux's TCP_TIMEOUT_MIN).
    static constexpr uint64_t min_probe_allowance_ns = 2'000'000;

    explicit tcp_rack(tcp_block_pool *pool = nullptr) noexcept
        : pool_(pool != nullptr ? pool : &tcp_block_pool::heap()) {}
    ~tcp_rack() { clear(); }
    tcp_rack(const tcp_rack &) = delete;
    tcp_rack &operator=(const tcp_rack &) = delete;

    // Data octets [start, end) went out at `now`. `retransmission`: some of
    // them were sent before; the records of what they resend are superseded.
    // Stamped `now`, or 1 ns after the previous record when it went out in
    // the same tick with a higher sequence (so that RACK_sent_after, which
    // breaks ties by sequence, follows the order of transmission).
    // False when the segment could not be recorded (ring full, no block).
    bool on_transmit(seq_num start, seq_num end, uint64_t now, bool retransmission) noexcept;
    // An ACK arrived (SND.UNA is `una`, `sb` holds what is SACKed, both
    // already updated): RFC 8985 §6.2 steps 2 and 3 for every segment it
    // newly delivers (RACK.xmit_ts, RACK.end_seq, RACK.rtt, RACK.min_RTT,
    // reordering seen). Records of delivered segments are dropped.
    void on_ack(seq_num una, const tcp_sack_scoreboard &sb, uint64_t now) noexcept;
    // Step 4's adaptation of the reordering window, on an ACK before
    // detect_loss(): a D-SACK round ends once SND.UNA (`una`) reaches it; a
    // D-SACK on this ACK (`dsack`) outside a round starts one
    // (RACK.dsack_round = SND.NXT, `snd_nxt`), adds one to RACK.reo_wnd_mult
    // and sets RACK.reo_wnd_persist = 16; "Else if exiting Fast or RTO
    // recovery" (`exiting_recovery`) RACK.reo_wnd_persist drops by one, and
    // at 0 the multiplier is 1 again. Returns whether the multiplier grew.
    bool update_reo_wnd(seq_num una, seq_num snd_nxt, bool dsack, bool exiting_recovery) noexcept;
    // Steps 4 and 5: the reordering window, then every segment sent before
    // the most recently delivered one and outstanding longer than RACK.rtt +
    // the window is marked lost; the others set the reordering timer
    // (deadline()). The window is RACK.reo_wnd_mult * RACK.min_RTT / 4,
    // capped by `srtt_ns`; in recovery, or after `dup_acks` >= 3, it is 0
    // unless reordering was seen. Returns the octets newly marked lost.
    uint32_t detect_loss(uint64_t now, uint64_t srtt_ns, bool in_recovery,
                         uint32_t dup_acks) noexcept;
    // The lowest segment marked lost that is still outstanding: the part of
    // it at or above `una` up to its first SACKed octet. False if none.
    [[nodiscard]] bool next_lost(seq_num una, const tcp_sack_scoreboard &sb, seq_num &start,
                                 seq_num &end) const noexcept;
    // What SetPipe (RFC 6675 §4) counts for transmissions RACK knows are
    // gone: segments marked lost (their latest transmission), and the
    // originals of lost segments already resent (the resend still counts).
    // The caller subtracts it from pipe.
    [[nodiscard]] uint32_t lost_in_pipe(seq_num una, const tcp_sack_scoreboard &sb,
                                        seq_num high_rxt, uint32_t smss) const noexcept;
    // RTO (RFC 8985 §6.3): everything outstanding is sent again from SND.UNA,
    // so the records go; the RACK variables stay.
    void clear() noexcept;

    // The reordering timer: when detect_loss() must run again, or never.
    [[nodiscard]] uint64_t deadline() const noexcept { return reo_at_; }
    void disarm() noexcept { reo_at_ = never; }
    [[nodiscard]] bool any_lost() const noexcept { return nlost_ != 0; }
    [[nodiscard]] bool has_rtt() const noexcept { return have_rack_; }
    [[nodiscard]] uint64_t rack_rtt() const noexcept { return rack_rtt_; }
    [[nodiscard]] uint64_t min_rtt() const noexcept { return min_rtt_; }
    [[nodiscard]] bool reordering_seen() const noexcept { return reord_; }
    [[nodiscard]] uint32_t reo_wnd_mult() const noexcept { return reo_wnd_mult_; }
    [[nodiscard]] uint32_t reo_wnd_persist() const noexcept { return reo_wnd_persist_; }
    [[nodiscard]] std::size_t records() const noexcept { return n_; }
    [[nodiscard]] bool holds_block() const noexcept { return ring_ != nullptr; }
    [[nodiscard]] uint64_t unrecorded() const noexcept { return unrecorded_; }

    // TLP (RFC 8985 §7.2): the probe timeout for a flight of `flight`
    // octets: 2 * SRTT, plus WCDelAckT when the flight is one segment (its
    // ACK may be delayed) or min_probe_allowance otherwise, at most `rto_ns`;
    // 1 s without an RTT sample.
    [[nodiscard]] static uint64_t pto(uint64_t srtt_ns, uint32_t flight, uint32_t smss,
                                      uint64_t rto_ns) noexcept;

private:
    struct record {
        seq_num start;
        uint32_t len : 24;
        uint32_t flags : 8;
        uint64_t xmit;
    };
    static constexpr uint8_t f_retransmitted = 1, f_lost = 2, f_done = 4;  // done: delivered or superseded
    static constexpr std::size_t capacity = tcp_block_pool::block_bytes / sizeof(record);

    [[nodiscard]] record &at(std::size_t i) noexcept { return ring_[(head_ + i) % capacity]; }
    [[nodiscard]] const record &at(std::size_t i) const noexcept {
        return ring_[(head_ + i) % capacity];
    }
    void finish(record &r) noexcept;  // mark done (delivered or superseded)
    void trim() noexcept;             // drop done records at the head; the block when empty
    void compact() noexcept;          // drop every done record (ring full)

    tcp_block_pool *pool_;
    record *ring_ = nullptr;
    std::size_t head_ = 0;
    std::size_t n_ = 0;
    std::size_t nlost_ = 0;  // records marked lost, not done
    std::size_t nrtx_ = 0;   // records of retransmissions, not done
    uint64_t unrecorded_ = 0;
    // RFC 8985 §6.1.
    uint64_t rack_xmit_ = 0;
    uint64_t rack_rtt_ = 0;
    uint64_t min_rtt_ = UINT64_MAX;
    uint64_t reo_at_ = never;
    seq_num rack_end_;
    seq_num fack_;         // highest end of a delivered segment (RACK.fack)
    seq_num dsack_round_;  // RACK.dsack_round, when have_dsack_round_
    bool have_rack_ = false;
    bool have_fack_ = false;
    bool reord_ = false;
    bool have_dsack_round_ = false;
    // Step 4: RACK.reo_wnd_mult ("initialized to 1"), RACK.reo_wnd_persist
    // ("initialized to 16"). The multiplier stops at 255; the window is
    // capped by SRTT long before.
    uint8_t reo_wnd_mult_ = 1;
    uint8_t reo_wnd_persist_ = 16;
};

}  // namespace ferry::net
