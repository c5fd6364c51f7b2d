#include "ferry/net/fault.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ferry/base/compiler.h"

namespace ferry::net {

namespace {

// splitmix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro):
// one add and two multiplies per draw, and every state, 0 included, is a
// full-period stream. Plenty for coin flips in a test tool.
constexpr uint64_t splitmix_step = 0x9e3779b97f4a7c15;

constexpr uint64_t splitmix_mix(uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
}

constexpr uint64_t add_saturating(uint64_t a, uint64_t b) noexcept {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

uint64_t fault_threshold(double p) noexcept {
    if (!(p > 0.0)) {  // NaN too
        return 0;
    }
    if (p >= 1.0) {
        return fault_params::always;
    }
    // p * 2^32 < 2^32 here, and rounding cannot reach `always` unless p is
    // within 2^-33 of 1, where the difference is immaterial.
    return static_cast<uint64_t>(std::llround(std::ldexp(p, 32)));
}

fault_params fault_params_of(const fault_spec &cfg, uint32_t port_index,
                             uint32_t lcore) noexcept {
    fault_params p;
    p.rx_drop = fault_threshold(cfg.rx_drop);
    p.rx_duplicate = fault_threshold(cfg.rx_duplicate);
    p.rx_reorder = fault_threshold(cfg.rx_reorder);
    p.tx_drop = fault_threshold(cfg.tx_drop);
    p.tx_duplicate = fault_threshold(cfg.tx_duplicate);
    p.tx_reorder = fault_threshold(cfg.tx_reorder);
    p.hold_ns = uint64_t{cfg.reorder_hold_us} * 1000;
    // Two rounds of mixing so that seeds differing in one bit, and adjacent
    // (port, lcore) pairs, give unrelated streams.
    const uint64_t where = uint64_t{port_index} << 32 | lcore;
    p.seed = splitmix_mix(splitmix_mix(cfg.seed + splitmix_step) ^ where);
    return p;
}

bool fault_injector::enabled(const fault_params &p) noexcept {
    return (p.rx_drop | p.rx_duplicate | p.rx_reorder | p.tx_drop | p.tx_duplicate |
            p.tx_reorder) != 0;
}

fault_injector::fault_injector(const fault_params &p, rte_mempool *pool,
                               fault_counters &counters) noexcept
    : params_(p),
      pool_(pool),
      ctr_(counters),
      rng_(p.seed),
      rx_{p.rx_drop,           p.rx_duplicate,         p.rx_reorder,
          counters.rx_dropped, counters.rx_duplicated, counters.rx_reordered},
      tx_{p.tx_drop,           p.tx_duplicate,         p.tx_reorder,
          counters.tx_dropped, counters.tx_duplicated, counters.tx_reordered} {}

fault_injector::~fault_injector() {
    discard(rx_);
    discard(tx_);
}

void fault_injector::discard(lane &l) noexcept {
    for (uint16_t k = 0; k < l.held_n; ++k) {
        rte_pktmbuf_free(l.held[k].m);
    }
    ctr_.held_discarded.inc(l.held_n);
    l.held_n = 0;
}

bool fault_injector::hit(uint64_t threshold) noexcept {
    if (threshold == 0) {
        return false;
    }
    rng_ += splitmix_step;
    return (splitmix_mix(rng_) >> 32) < threshold;
}

uint16_t fault_injector::rx(rte_mbuf **pkts, uint16_t n, uint16_t cap, uint64_t now_ns) noexcept {
    return apply(rx_, pkts, n, cap, now_ns);
}

uint16_t fault_injector::tx(rte_mbuf **pkts, uint16_t n, uint16_t cap, uint64_t now_ns) noexcept {
    return apply(tx_, pkts, n, cap, now_ns);
}

uint16_t fault_injector::take_released(lane &l, bool all, uint64_t now_ns, rte_mbuf **out,
                                       uint16_t room) noexcept {
    uint16_t r = 0;
    uint16_t keep = 0;
    for (uint16_t k = 0; k < l.held_n; ++k) {
        const held_frame h = l.held[k];
        const bool due = all || add_saturating(h.since_ns, params_.hold_ns) <= now_ns;
        if (due && r < room) {
            out[r++] = h.m;
        } else {
            l.held[keep++] = h;
        }
    }
    l.held_n = keep;
    return r;
}

uint16_t fault_injector::apply(lane &l, rte_mbuf **pkts, uint16_t n, uint16_t cap,
                               uint64_t now_ns) noexcept {
    cap = std::max(cap, n);
    // Frames held by earlier calls leave first: their slots are then free for
    // this burst's frames. They are placed after the burst at the end, so
    // room for them is set aside now and duplicates may not take it.
    rte_mbuf *released[max_held];
    const uint16_t r = l.held_n == 0 ? 0 : take_released(l, n != 0, now_ns, released, cap - n);

    // pkts[0, w) are kept, pkts[i, end) not yet looked at, w <= i, and
    // w + (end - i) + r <= cap throughout.
    uint16_t w = 0;
    uint16_t i = 0;
    uint16_t end = n;
    while (i < end) {
        rte_mbuf *m = pkts[i++];
        if (hit(l.drop)) {
            rte_pktmbuf_free(m);
            l.dropped.inc();
            continue;
        }
        if (hit(l.reorder)) {
            if (l.held_n < max_held) {
                l.held[l.held_n++] = held_frame{m, now_ns};
                l.reordered.inc();
                continue;
            }
            ctr_.reorder_no_slot.inc();
        }
        pkts[w++] = m;
        if (FERRY_LIKELY(!hit(l.duplicate))) {
            continue;
        }
        if (w + 1u + (end - i) + r > cap) {
            ctr_.dup_no_room.inc();
            continue;
        }
        rte_mbuf *c = rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX);
        if (c == nullptr) {
            ctr_.dup_no_mbuf.inc();
            continue;
        }
        if (w == i) {
            // No gap before the unread frames: move them up one (rare: a hit,
            // and nothing dropped or held so far in this burst).
            std::memmove(pkts + i + 1, pkts + i, (end - i) * sizeof *pkts);
            ++i;
            ++end;
        }
        pkts[w++] = c;
        l.duplicated.inc();
    }
    if (r != 0) {
        std::memcpy(pkts + w, released, r * sizeof *pkts);
    }
    return static_cast<uint16_t>(w + r);
}

uint16_t fault_injector::release_all(fault_direction d, rte_mbuf **out, uint16_t cap) noexcept {
    lane &l = d == fault_direction::rx ? rx_ : tx_;
    return take_released(l, true, 0, out, cap);
}

uint64_t fault_injector::deadline_of(const lane &l) const noexcept {
    uint64_t t = UINT64_MAX;
    for (uint16_t k = 0; k < l.held_n; ++k) {
        t = std::min(t, add_saturating(l.held[k].since_ns, params_.hold_ns));
    }
    return t;
}

uint64_t fault_injector::next_deadline(fault_direction d) const noexcept {
    return deadline_of(d == fault_direction::rx ? rx_ : tx_);
}

uint64_t fault_injector::next_deadline() const noexcept {
    return std::min(deadline_of(rx_), deadline_of(tx_));
}

bool fault_injector::holding(fault_direction d) const noexcept {
    return (d == fault_direction::rx ? rx_ : tx_).held_n != 0;
}

bool fault_injector::holding() const noexcept {
    return rx_.held_n != 0 || tx_.held_n != 0;
}

}  // namespace ferry::net
