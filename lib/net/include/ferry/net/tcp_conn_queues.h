// The send and receive queues of one TCP connection (tcp_conn.h), over mbufs,
// and the sender's SACK scoreboard.
//
// Read first: RFC 9293 §3.8.6.2 (window management and the buffer behind the
// window), RFC 9293 §3.10.7.4 seventh step ("process the segment text"; data
// "may be held for later processing" when it is out of order), RFC 2018 §4
// (which blocks a receiver reports, first the most recent), RFC 6675 §3-§4
// (the scoreboard, IsLost, SetPipe, NextSeg).
//
// Both queues hold references (mbuf chains), never copies: the send queue
// keeps what the application gave until the peer acknowledges it, the receive
// queue keeps the received chains until the application takes them. Storage
// is fixed-size: each ring is one block of a tcp_block_pool, taken when the
// queue gets its first piece and given back when it empties, so a queue that
// holds nothing (an idle connection) holds no ring; nothing is allocated per
// segment.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ferry/net/tcp.h"
#include "ferry/net/tcp_block_pool.h"
#include "ferry/net/tcp_seq.h"

namespace ferry::net {

// A byte range of one mbuf *segment* (not a chain): `len` bytes from
// rte_pktmbuf_mtod(m) + off. What the TCB hands the frame builder.
struct tcp_payload_ref {
    rte_mbuf *m = nullptr;
    uint32_t off = 0;
    uint32_t len = 0;
};

// A byte range of an mbuf *chain*: `len` bytes from offset `off` of the chain's
// data (which may cross segments). The holder owns one reference to the chain.
struct tcp_rx_piece {
    rte_mbuf *m = nullptr;
    uint32_t off = 0;
    uint32_t len = 0;
};

// Application data not yet acknowledged, in sequence order: a ring of chains.
// Byte offset 0 is the first unacknowledged data octet.
class tcp_send_queue {
public:
    static constexpr std::size_t capacity = 256;  // chains

    // `pool` null: tcp_block_pool::heap().
    explicit tcp_send_queue(uint32_t limit_bytes, tcp_block_pool *pool = nullptr) noexcept
        : pool_(pool != nullptr ? pool : &tcp_block_pool::heap()), limit_(limit_bytes) {}
    ~tcp_send_queue() { clear(); }
    tcp_send_queue(const tcp_send_queue &) = delete;
    tcp_send_queue &operator=(const tcp_send_queue &) = delete;

    // Takes the whole chain when fewer than limit bytes are queued and a ring
    // slot is free (a soft limit, as Linux's sk_sndbuf: one chain may overrun
    // it). Returns the bytes taken (the chain's pkt_len), or 0 when full, the
    // chain is empty, or no ring block could be had: the caller keeps the
    // chain then.
    [[nodiscard]] uint32_t push(rte_mbuf *chain) noexcept;
    // Drops the first n bytes (n <= bytes()), freeing every chain fully acked.
    void release(uint32_t n) noexcept;
    // Fills refs with the segments covering [off, off + len) (off + len <=
    // bytes()). Returns the bytes covered: less than len when refs run out.
    [[nodiscard]] uint32_t gather(uint32_t off, uint32_t len, std::span<tcp_payload_ref> refs,
                                  std::size_t &nrefs) const noexcept;
    void clear() noexcept;

    [[nodiscard]] uint32_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] uint32_t space() const noexcept { return bytes_ < limit_ ? limit_ - bytes_ : 0; }
    [[nodiscard]] uint32_t limit() const noexcept { return limit_; }
    [[nodiscard]] std::size_t chains() const noexcept { return count_; }
    // Whether the queue holds a ring block (it does exactly while it holds data).
    [[nodiscard]] bool holds_block() const noexcept { return ring_ != nullptr; }

private:
    struct entry {
        rte_mbuf *m;
        uint32_t len;
    };
    static_assert(capacity * sizeof(entry) <= tcp_block_pool::block_bytes);
    // Empty again: the ring goes back to the pool.
    void drop_ring() noexcept;
    tcp_block_pool *pool_;
    entry *ring_ = nullptr;  // a block of pool_ while count_ != 0
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    uint32_t head_off_ = 0;  // bytes of ring_[head_] already released
    uint32_t bytes_ = 0;
    uint32_t limit_;
};

// The SACK scoreboard of RFC 6675 §3: what the peer reported holding above
// SND.UNA (RFC 2018 blocks), as half-open ranges [left, right) of sequence
// space kept sorted, disjoint and merged (ranges that touch become one). The
// routines take RFC 6675 §2's variables as half-open bounds: `una` is HighACK
// (SND.UNA), `high_data` is HighData + 1 (SND.MAX), `high_rxt` is HighRxt + 1
// (one past the highest octet retransmitted in this recovery).
//
// Bound: `capacity` ranges (8 bytes each, inside the TCB). More separate
// ranges than that means more holes than `capacity` in one window. add() then
// forgets the highest range (which is the new one when it would be the
// highest), and reports it (the TCB counts sack_scoreboard_overflow). Losing a
// range is safe: the octets only look unreceived again, which at worst costs a
// retransmission of data the peer holds (or a later loss verdict for the holes
// under it); nothing is ever taken as received that was not, and the send
// queue is freed by SND.UNA alone (a peer may renege on SACKed data, RFC 2018
// §8).
class tcp_sack_scoreboard {
public:
    static constexpr std::size_t capacity = 32;
    // RFC 6675 §2 DupThresh (tcp_cc::dup_ack_threshold, checked in tcp_conn.cpp).
    static constexpr uint32_t dup_thresh = 3;

    struct range {
        seq_num left;
        seq_num right;
    };

    // Update() (RFC 6675 §4): records [left, right) as SACKed. Precondition:
    // SND.UNA < left < right <= SND.MAX (the caller validates the peer's
    // blocks). Returns the octets that were not SACKed before (0 when
    // the block told nothing new). `overflow` is set when a range had to be
    // forgotten for room (see the class comment).
    [[nodiscard]] uint32_t add(seq_num left, seq_num right, bool &overflow) noexcept;
    // The cumulative ACK moved to `una`: forgets the ranges that start at or
    // below it (covered, or given up by the peer).
    void ack_to(seq_num una) noexcept;
    void clear() noexcept { count_ = 0; }

    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    [[nodiscard]] std::span<const range> ranges() const noexcept {
        return std::span(r_).first(count_);
    }
    // Octets SACKed in all, and below `seq`.
    [[nodiscard]] uint32_t sacked_bytes() const noexcept;
    [[nodiscard]] uint32_t sacked_below(seq_num seq) const noexcept;
    // One past the highest SACKed octet. Precondition: !empty().
    [[nodiscard]] seq_num highest() const noexcept { return r_[count_ - 1].right; }
    [[nodiscard]] bool is_sacked(seq_num seq) const noexcept;
    // IsLost(SeqNum) (RFC 6675 §4) for an octet that is not SACKed: "either
    // DupThresh discontiguous SACKed sequences have arrived above 'SeqNum' or
    // more than (DupThresh - 1) * SMSS bytes with sequence numbers greater
    // than 'SeqNum' have been SACKed". False for a SACKed octet.
    [[nodiscard]] bool is_lost(seq_num seq, uint32_t smss) const noexcept;
    // SetPipe() (RFC 6675 §4): over the octets of [una, high_data) that are
    // not SACKed, one for each that is not lost and one more for each below
    // high_rxt (retransmitted in this recovery). Pass high_rxt = una outside
    // recovery.
    [[nodiscard]] uint32_t pipe(seq_num una, seq_num high_data, seq_num high_rxt,
                                uint32_t smss) const noexcept;
    // NextSeg() rules (1) and (3) (RFC 6675 §4): the smallest octet S2 that
    // is not SACKed, at or above `from` (HighRxt + 1, rule 1.a) and below the
    // highest SACKed octet (1.b); with `lost_only`, IsLost(S2) too (1.c).
    // Sets [start, end) to S2 and what follows it up to the next SACKed octet,
    // at most max_len octets (so no SACKed octet is ever in it). False when
    // there is no such octet.
    [[nodiscard]] bool next_hole(seq_num una, seq_num from, bool lost_only, uint32_t smss,
                                 uint32_t max_len, seq_num &start, seq_num &end) const noexcept;
    // The first octet at or after `seq` that is not SACKed (`seq` itself, or
    // the right edge of the range holding it).
    [[nodiscard]] seq_num skip_sacked(seq_num seq) const noexcept;
    // How many of the `len` octets from `seq` (not SACKed) come before the
    // next SACKed one.
    [[nodiscard]] uint32_t unsacked_run(seq_num seq, uint32_t len) const noexcept;

private:
    // Whether the hole just below range k (k < count_) is lost: IsLost on any
    // of its octets, since every range from k up lies above it.
    [[nodiscard]] bool hole_lost(std::size_t k, uint32_t smss) const noexcept;

    std::array<range, capacity> r_{};
    uint32_t count_ = 0;
};

// Received data: the in-order ring the application reads, and the
// out-of-order store (sorted, non-overlapping) that reassembly drains into it.
//
// The out-of-order store coalesces: a piece that continues (or precedes) a
// stored one is chained onto it (its mbuf chain cut to exactly its data, the
// chains linked), so one entry holds a whole run of consecutive segments and
// ooo_capacity bounds the *ranges* held above RCV.NXT (holes in the sequence),
// not the segments — a window of full-sized segments behind one loss takes
// one entry, not one per segment. A piece whose mbufs are shared (a segment
// with refcnt > 1: its data_off/data_len are not ours to change) is kept as
// an entry of its own, as is any piece when joining would overflow nb_segs.
class tcp_recv_queue {
public:
    static constexpr std::size_t capacity = 256;     // in-order pieces
    static constexpr std::size_t ooo_capacity = 32;  // out-of-order ranges (coalesced pieces)

    // `pool` null: tcp_block_pool::heap().
    explicit tcp_recv_queue(tcp_block_pool *pool = nullptr) noexcept
        : pool_(pool != nullptr ? pool : &tcp_block_pool::heap()) {}
    ~tcp_recv_queue() { clear(); }
    tcp_recv_queue(const tcp_recv_queue &) = delete;
    tcp_recv_queue &operator=(const tcp_recv_queue &) = delete;

    // Appends in-order data; false (the piece is not taken) when the ring is
    // full or no ring block could be had.
    [[nodiscard]] bool push(tcp_rx_piece p) noexcept;
    // Moves up to out.size() pieces to the caller, who then owns their chains.
    [[nodiscard]] std::size_t pop(std::span<tcp_rx_piece> out) noexcept;
    [[nodiscard]] uint32_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] bool full() const noexcept { return count_ == capacity; }

    enum class ooo_result : uint8_t { inserted, duplicate, full };
    // Stores data that starts after RCV.NXT: `seq` is its first octet, `fin`
    // whether a FIN follows its last. Overlaps with stored data are trimmed
    // off the new piece (the older copy wins); pieces the new one covers
    // entirely are replaced; a piece that touches a stored one is chained to
    // it (see the class comment). inserted: stored or chained; duplicate:
    // nothing new (piece freed); full: no slot and nothing to join (piece
    // freed).
    [[nodiscard]] ooo_result insert_ooo(seq_num seq, tcp_rx_piece p, bool fin) noexcept;
    // Moves the stored data that now starts at or before rcv_nxt into the
    // in-order ring. Returns the new RCV.NXT; `fin` is set when the stored FIN
    // is reached (RCV.NXT then still excludes it). Stops early if the ring fills.
    [[nodiscard]] seq_num drain(seq_num rcv_nxt, bool &fin) noexcept;
    // The RFC 2018 §4 blocks, first the one holding the most recently stored
    // data, then the others in sequence order; at most out.size(). Adjacent
    // pieces form one block.
    [[nodiscard]] std::size_t sack_blocks(std::span<tcp_sack_block> out) const noexcept;
    [[nodiscard]] bool ooo_empty() const noexcept { return ooo_count_ == 0 && !ooo_fin_valid_; }
    // Entries in the out-of-order store (separate ranges, or shared pieces).
    [[nodiscard]] std::size_t ooo_count() const noexcept { return ooo_count_; }
    // Ring blocks held (0 when nothing is queued, in order or out of order).
    [[nodiscard]] unsigned blocks_held() const noexcept {
        return (ring_ != nullptr ? 1u : 0u) + (ooo_ != nullptr ? 1u : 0u);
    }

    void clear_ooo() noexcept;
    void clear() noexcept;

private:
    struct ooo_entry {
        seq_num seq;
        tcp_rx_piece p;
        // The chain's last segment when the chain holds exactly p's data
        // (p.off == 0, pkt_len == p.len) and may be joined; null otherwise.
        rte_mbuf *tail = nullptr;
    };
    // Chains b's data after a's (both exact, a just before b). False (nothing
    // done) when the chain would have more than RTE_MBUF_MAX_NB_SEGS segments.
    [[nodiscard]] static bool join(ooo_entry &a, ooo_entry &b) noexcept;
    static_assert(capacity * sizeof(tcp_rx_piece) <= tcp_block_pool::block_bytes);
    static_assert(ooo_capacity * sizeof(ooo_entry) <= tcp_block_pool::block_bytes);
    // A ring block for the in-order ring (true if held or taken now).
    [[nodiscard]] bool have_ring() noexcept;
    // Give the blocks of empty parts back.
    void settle_ring() noexcept;
    void settle_ooo() noexcept;
    tcp_block_pool *pool_;
    tcp_rx_piece *ring_ = nullptr;  // a block of pool_ while count_ != 0
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    uint32_t bytes_ = 0;
    ooo_entry *ooo_ = nullptr;  // a block of pool_ while ooo_count_ != 0
    std::size_t ooo_count_ = 0;
    seq_num last_seq_;  // first octet of the most recently stored data
    seq_num ooo_fin_;
    bool ooo_fin_valid_ = false;
};

}  // namespace ferry::net
