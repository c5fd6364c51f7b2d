// The send and receive queues of one TCP connection (tcp_conn.h), over mbufs.
//
// Read first: RFC 9293 §3.8.6.2 (window management and the buffer behind the
// window), RFC 9293 §3.10.7.4 seventh step ("process the segment text"; data
// "may be held for later processing" when it is out of order), RFC 2018 §4
// (which blocks a receiver reports, first the most recent).
//
// Both queues hold references (mbuf chains), never copies: the send queue
// keeps what the application gave until the peer acknowledges it, the receive
// queue keeps the received chains until the application takes them. Storage
// is fixed-size (arrays inside the object): nothing is allocated per segment.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ferry/net/tcp.h"
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

    explicit tcp_send_queue(uint32_t limit_bytes) noexcept : limit_(limit_bytes) {}
    ~tcp_send_queue() { clear(); }
    tcp_send_queue(const tcp_send_queue &) = delete;
    tcp_send_queue &operator=(const tcp_send_queue &) = delete;

    // Takes the whole chain when fewer than limit bytes are queued and a ring
    // slot is free (a soft limit, as Linux's sk_sndbuf: one chain may overrun
    // it). Returns the bytes taken (the chain's pkt_len), or 0 when full or the
    // chain is empty: the caller keeps the chain then.
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

private:
    struct entry {
        rte_mbuf *m;
        uint32_t len;
    };
    std::array<entry, capacity> ring_{};
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    uint32_t head_off_ = 0;  // bytes of ring_[head_] already released
    uint32_t bytes_ = 0;
    uint32_t limit_;
};

// Received data: the in-order ring the application reads, and the
// out-of-order store (sorted, non-overlapping) that reassembly drains into it.
class tcp_recv_queue {
public:
    static constexpr std::size_t capacity = 256;     // in-order pieces
    static constexpr std::size_t ooo_capacity = 32;  // out-of-order pieces

    tcp_recv_queue() noexcept = default;
    ~tcp_recv_queue() { clear(); }
    tcp_recv_queue(const tcp_recv_queue &) = delete;
    tcp_recv_queue &operator=(const tcp_recv_queue &) = delete;

    // Appends in-order data; false (the piece is not taken) when the ring is full.
    [[nodiscard]] bool push(tcp_rx_piece p) noexcept;
    // Moves up to out.size() pieces to the caller, who then owns their chains.
    [[nodiscard]] std::size_t pop(std::span<tcp_rx_piece> out) noexcept;
    [[nodiscard]] uint32_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] bool full() const noexcept { return count_ == capacity; }

    enum class ooo_result : uint8_t { inserted, duplicate, full };
    // Stores data that starts after RCV.NXT: `seq` is its first octet, `fin`
    // whether a FIN follows its last. Overlaps with stored data are trimmed
    // off the new piece (the older copy wins); pieces the new one covers
    // entirely are replaced. duplicate: nothing new (piece freed); full: no
    // slot (piece freed).
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
    [[nodiscard]] std::size_t ooo_count() const noexcept { return ooo_count_; }

    void clear_ooo() noexcept;
    void clear() noexcept;

private:
    struct ooo_entry {
        seq_num seq;
        tcp_rx_piece p;
    };
    std::array<tcp_rx_piece, capacity> ring_{};
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    uint32_t bytes_ = 0;
    std::array<ooo_entry, ooo_capacity> ooo_{};
    std::size_t ooo_count_ = 0;
    seq_num last_seq_;  // first octet of the most recently stored piece
    seq_num ooo_fin_;
    bool ooo_fin_valid_ = false;
};

}  // namespace ferry::net
