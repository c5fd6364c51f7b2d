// Initial sequence numbers for active and passive opens.
//
// Read first: RFC 6528 §3 ("Proposed Initial Sequence Number (ISN) Generation
// Algorithm"), RFC 9293 §3.4.1 (why ISNs must not repeat for a connection
// "incarnation" and must be hard to guess).
//
//   ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
//
// M is a timer that ticks every 4 microseconds (RFC 6528 §3, after RFC 793's
// ISN clock); F is SipHash-2-4 (a PRF, as §3 asks) keyed with a secret of 128
// bits, truncated to 32 bits. The key is drawn once by the caller from a good
// random source (RFC 6528 §3: "SHOULD be ... of at least 128 bits") — this code
// reads no entropy and no clock.
//
// `now_ns` should come from a clock that keeps running across process
// restarts (CLOCK_REALTIME, as Linux's secure_tcp_seq uses real time), so that
// a restarted ferry does not reuse the sequence space of its previous life
// with the same key schedule. Linux ticks M every 64 ns instead of 4 us; this
// follows the RFC.
#pragma once

#include <cstdint>

#include "ferry/net/tcp_seq.h"
#include "ferry/net/tcp_siphash.h"
#include "ferry/net/tcp_tuple.h"

namespace ferry::net {

class tcp_isn_generator {
public:
    static constexpr uint64_t tick_ns = 4000;  // M: one tick per 4 us

    explicit tcp_isn_generator(const siphash_key &secret) noexcept : key_(secret) {}

    // M at `now_ns`, modulo 2^32 (wraps every 4.77 hours, as RFC 793's clock).
    [[nodiscard]] static constexpr uint32_t clock(uint64_t now_ns) noexcept {
        return static_cast<uint32_t>(now_ns / tick_ns);
    }

    // F: the low 32 bits of SipHash-2-4 over local address, local port,
    // remote address, remote port, each big-endian (RFC 6528 lists the inputs
    // in this order): 12 bytes over IPv4, 36 over IPv6.
    [[nodiscard]] uint32_t offset(const tcp_tuple &t) const noexcept;

    // The ISN for a connection on `t` opened at `now_ns`: M + F.
    [[nodiscard]] seq_num isn(const tcp_tuple &t, uint64_t now_ns) const noexcept {
        return seq_num(clock(now_ns) + offset(t));
    }

private:
    siphash_key key_;
};

// The timestamp clock's offset for connections between two addresses (RFC
// 7323 §5.4: TSval = clock + a per-connection offset, so that TSval reveals
// no uptime and no connection's clock can be inferred from another's). Keyed
// by the addresses only, as Linux's secure_tcp_ts_off: every incarnation of a
// connection between the same hosts, and every lcore of the process (with one
// key), uses the same offset, so TSval never steps back for a peer (PAWS,
// RFC 7323 §5; TIME-WAIT reuse, RFC 6191).
[[nodiscard]] uint32_t tcp_ts_offset(const siphash_key &key, const ip_addr &local,
                                     const ip_addr &remote) noexcept;

}  // namespace ferry::net
