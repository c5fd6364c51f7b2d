// SYN cookies: answer a SYN without keeping state, and rebuild the connection
// from the ACK that completes the handshake.
//
// Read first: RFC 4987 §3.6 ("SYN Cookies"), then Linux
// net/ipv4/syncookies.c, whose encoding this follows.
//
// The cookie is the ISN of our SYN-ACK. For client address/port ca:cp, our
// address/port sa:sp, the client's ISN cisn, a time slot counter `count`
// (64-second units) and the index `m` of the MSS in mss_table:
//
//   cookie = H0 + cisn + (count << 24) + ((H1(count) + m) mod 2^24)
//
//   H0        = SipHash-2-4(k0, ca | sa | cp | sp | 0)              (low 32 bits)
//   H1(count) = SipHash-2-4(k1, ca | sa | cp | sp | count | cisn)   (low 32 bits)
//
//   bits 31..24: count mod 256, the slot the cookie was made in
//   bits 23..0 : H1(count) + m, authenticating the tuple, the slot, the
//                client's ISN and m
//   (both halves shifted by H0 + cisn, so that the cookie looks random)
//
// One departure from Linux: Linux hashes only the tuple and the slot into H1
// and merely adds cisn, so an ACK whose SEG.SEQ is off by one or two still
// decodes, with a shifted MSS index. Hashing cisn into H1 as well makes a
// cookie valid for exactly the SYN it answered.
//
// The ACK that completes the handshake carries SEG.SEQ = cisn + 1 and
// SEG.ACK = cookie + 1. decode() strips H0 + cisn, reads the slot from the top
// byte, accepts it only if it is the current or the previous slot (so a cookie
// lives 64 to 128 s), and recovers m = (rest - H1(slot)) mod 2^24; m must index
// the table. A forged cookie passes with probability 4 / 2^24 per try. The
// index itself is only range-checked (as in Linux): the client that got the
// cookie can move it to another table entry by changing the low two bits,
// which gains it nothing it could not have asked for in its SYN.
//
// What the SYN-ACK cannot remember — the client's window scale, SACK-permitted
// and ECN — travels, when the client offered timestamps, in the low 6 bits of
// our TSval, which the client echoes in TSecr (RFC 7323 §3.2):
//
//   bits 3..0: the client's window shift 0..14, or 15 for "no window scaling"
//   bit  4   : SACK permitted
//   bit  5   : ECN
//
// Without timestamps those options are lost (the connection runs without
// them), as in Linux. Timestamps-ok itself is implied by the ACK carrying a
// timestamp option. Our own receive window shift is not stored: the caller
// derives it from configuration again.
//
// The keys are drawn once by the caller from a good random source.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "ferry/net/tcp_seq.h"
#include "ferry/net/tcp_siphash.h"
#include "ferry/net/tcp_tuple.h"

namespace ferry::net {

enum class syncookie_error : uint8_t {
    none = 0,
    expired,     // slot is neither the current nor the previous one
    bad_cookie,  // the hash does not verify (forged, tampered, wrong tuple or client ISN)
};

[[nodiscard]] constexpr const char *name(syncookie_error e) noexcept {
    switch (e) {
        case syncookie_error::none:
            return "none";
        case syncookie_error::expired:
            return "expired";
        case syncookie_error::bad_cookie:
            return "bad_cookie";
    }
    return "unknown";
}

// The options that ride in the TSval low bits.
struct syncookie_options {
    std::optional<uint8_t> window_shift;  // the client's window scale (RFC 7323 §2.2), 0..14
    bool sack_ok = false;                 // the client sent SACK-permitted (RFC 2018 §2)
    bool ecn_ok = false;                  // ECN negotiated on the SYN (RFC 3168 §6.1.1)

    friend constexpr bool operator==(const syncookie_options &,
                                     const syncookie_options &) noexcept = default;
};

class tcp_syncookies {
public:
    // MSS values a cookie can carry (Linux's IPv4 msstab: 1440 and 1452 are
    // common PPPoE and tunnel values, 1460 is Ethernet, 536 the RFC 9293
    // §3.7.1 default).
    static constexpr std::array<uint16_t, 4> mss_table{536, 1300, 1440, 1460};
    static constexpr uint64_t slot_ns = 64'000'000'000;  // one count per 64 s
    static constexpr uint32_t max_age_slots = 2;         // current and previous slot
    static constexpr uint32_t ts_option_bits = 6;
    static constexpr uint32_t ts_wscale_mask = 0x0f;  // 15 = no window scaling
    static constexpr uint32_t ts_sack_bit = 1u << 4;
    static constexpr uint32_t ts_ecn_bit = 1u << 5;

    tcp_syncookies(const siphash_key &k0, const siphash_key &k1) noexcept : k0_(k0), k1_(k1) {}

    // The largest table index whose MSS does not exceed the client's MSS;
    // index 0 (536) when it is smaller than every entry.
    [[nodiscard]] static constexpr uint8_t mss_index(uint16_t client_mss) noexcept {
        auto i = static_cast<uint8_t>(mss_table.size() - 1);
        while (i > 0 && mss_table[i] > client_mss) {
            --i;
        }
        return i;
    }
    [[nodiscard]] static constexpr uint32_t time_slot(uint64_t now_ns) noexcept {
        return static_cast<uint32_t>(now_ns / slot_ns);
    }

    // The ISN for the SYN-ACK answering a SYN on `t` (local = us) with
    // SEG.SEQ = client_isn and MSS option client_mss (536 when absent). The
    // connection will use mss_table[mss_index(client_mss)].
    [[nodiscard]] seq_num encode(const tcp_tuple &t, seq_num client_isn, uint16_t client_mss,
                                 uint64_t now_ns) const noexcept;

    // Validates the ACK completing the handshake: client_isn = SEG.SEQ - 1,
    // cookie = SEG.ACK - 1. On none, `mss` is the MSS the cookie carried;
    // otherwise it is left alone. Returns expired or bad_cookie as above.
    [[nodiscard]] syncookie_error decode(const tcp_tuple &t, seq_num client_isn, seq_num cookie,
                                         uint64_t now_ns, uint16_t &mss) const noexcept;

    // Our SYN-ACK's TSval: ts_now with its low 6 bits replaced by the options,
    // moved one step (64 ticks) back if that made it larger than ts_now, so it
    // never runs ahead of the timestamps that follow (Linux
    // cookie_init_timestamp). A window shift above 14 is stored as 14.
    [[nodiscard]] static constexpr uint32_t encode_tsval(uint32_t ts_now,
                                                         const syncookie_options &o) noexcept {
        uint32_t bits = o.window_shift ? (*o.window_shift > 14 ? 14u : uint32_t{*o.window_shift})
                                       : ts_wscale_mask;
        bits |= o.sack_ok ? ts_sack_bit : 0;
        bits |= o.ecn_ok ? ts_ecn_bit : 0;
        uint32_t ts = (ts_now >> ts_option_bits << ts_option_bits) | bits;
        if (ts > ts_now) {
            ts -= 1u << ts_option_bits;  // modulo 2^32: still "before" ts_now
        }
        return ts;
    }
    // The options back from the TSecr of the completing ACK.
    [[nodiscard]] static constexpr syncookie_options decode_tsecr(uint32_t tsecr) noexcept {
        syncookie_options o;
        const uint32_t ws = tsecr & ts_wscale_mask;
        if (ws != ts_wscale_mask) {
            o.window_shift = static_cast<uint8_t>(ws);
        }
        o.sack_ok = (tsecr & ts_sack_bit) != 0;
        o.ecn_ok = (tsecr & ts_ecn_bit) != 0;
        return o;
    }

private:
    [[nodiscard]] static uint32_t hash(const siphash_key &k, const tcp_tuple &t, uint32_t count,
                                       seq_num client_isn) noexcept;

    siphash_key k0_;
    siphash_key k1_;
};

}  // namespace ferry::net
