// mbuf chains as byte strings: build one from bytes, cut one down to a
// range, take the front of a received piece, append, copy out. The one place
// these live (the proxy, the TCP test services and the stack used to carry
// their own copies).
//
// Every function keeps the chain's invariants: head->nb_segs counts the
// segments, head->pkt_len sums their data_len, the last segment's next is
// null. Functions that may fail say what they freed; none allocates except
// chain_from (a copy) and piece_take_front (one clone, when it splits).
#pragma once

#include <cstdint>

#include "ferry/net/checksum.h"
#include "ferry/net/tcp_conn_queues.h"

struct rte_mbuf;
struct rte_mempool;

namespace ferry::net {

// A new chain holding a copy of data[0, len), in as many mbufs of `pool` as
// it takes. Null (nothing allocated) when the pool runs dry, or when len is 0.
[[nodiscard]] rte_mbuf *chain_from(rte_mempool *pool, const char *data, uint32_t len) noexcept;

// Keeps exactly the bytes [off, off + len) of chain m and frees the segments
// before and after them. Returns the new head (a segment of m), or null when
// the range is not inside the chain or len is 0 (then all of m is freed).
[[nodiscard]] rte_mbuf *chain_cut(rte_mbuf *m, uint32_t off, uint32_t len) noexcept;

// Shortens m to its first len bytes (0 < len), freeing the segments past
// them. Nothing happens when len >= pkt_len.
void chain_truncate(rte_mbuf *m, uint32_t len) noexcept;

// Appends tail to head (ownership of tail moves). False when the segment
// count would overflow (nb_segs is 16 bits): nothing changed, the caller
// still owns tail.
[[nodiscard]] bool chain_append(rte_mbuf *head, rte_mbuf *tail) noexcept;

// The one's complement sum (RFC 1071) of `len` bytes from byte `off` of the
// chain; bytes past its end are not there to sum (the caller checked the
// length against pkt_len).
[[nodiscard]] internet_checksum chain_sum(const rte_mbuf *m, uint32_t off, uint32_t len) noexcept;

// Copies up to n bytes of the piece's range into dst; returns how many.
uint32_t piece_copy_out(const tcp_rx_piece &p, char *dst, uint32_t n) noexcept;

// The first n bytes of piece p as a chain of their own, zero-copy: when n
// covers the piece, its chain (cut to the range; `whole` set, p emptied),
// else a clone from `pool` cut to the first n bytes while p keeps the rest.
// Null when the clone could not be allocated (p unchanged) or the range was
// bad (p's chain freed, p emptied, `whole` set).
[[nodiscard]] rte_mbuf *piece_take_front(tcp_rx_piece &p, uint32_t n, rte_mempool *pool,
                                         bool &whole) noexcept;

}  // namespace ferry::net
