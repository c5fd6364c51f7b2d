#include "ferry/net/neighbor.h"

#include <algorithm>
#include <bit>

namespace ferry::net {

namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) noexcept {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

neighbor_table::neighbor_table(const neighbor_config &cfg)
    : cfg_(cfg), capacity_(std::clamp<uint32_t>(cfg.capacity, 1, max_capacity)) {
    // Load factor <= 1/2; max_capacity keeps the slot count within 32-bit hashing.
    const uint64_t nslots = std::bit_ceil(uint64_t{capacity_} * 2);
    slot_mask_ = static_cast<uint32_t>(nslots - 1);
    slot_shift_ = 32 - static_cast<uint32_t>(std::countr_zero(nslots));
    entries_ = std::make_unique<entry[]>(capacity_);
    slots_ = std::make_unique<uint32_t[]>(nslots);  // value-initialised: all empty
    free_ = std::make_unique<uint32_t[]>(capacity_);
    // Pop order 0, 1, 2, ... (cosmetic: keeps entries dense at the front).
    for (uint32_t i = 0; i < capacity_; ++i) {
        free_[i] = capacity_ - 1 - i;
    }
    nfree_ = capacity_;
}

uint64_t neighbor_table::expiry(const entry &e) const noexcept {
    return saturating_add(e.confirmed_ns, cfg_.timeout_ns);
}

uint32_t neighbor_table::home_slot(ip_addr ip) const noexcept {
    // Fibonacci hashing: the top bits of a multiplicative hash, so addresses of
    // one subnet (differing in the low bits) spread over the whole index.
    const uint32_t h = ip.fold() * 0x9e3779b1u;
    return (h >> slot_shift_) & slot_mask_;
}

uint32_t neighbor_table::find_slot(ip_addr ip) const noexcept {
    for (uint32_t s = home_slot(ip);; s = (s + 1) & slot_mask_) {
        const uint32_t v = slots_[s];
        if (v == 0) {
            return npos;
        }
        if (entries_[v - 1].ip == ip) {
            return s;
        }
    }
}

uint32_t neighbor_table::find(ip_addr ip) const noexcept {
    const uint32_t s = find_slot(ip);
    return s == npos ? npos : slots_[s] - 1;
}

uint32_t neighbor_table::alloc(ip_addr ip, uint64_t now_ns, bool evict_live,
                               bool &evicted) noexcept {
    evicted = false;
    if (nfree_ == 0) {
        // Reclaim the entry expired the longest, else (if allowed) the least
        // recently confirmed one. Incomplete entries hold packets and live at
        // most retry_ns * max_tries: they are never evicted.
        uint32_t victim = npos;
        uint64_t oldest = UINT64_MAX;
        bool victim_expired = false;
        for (uint32_t i = 0; i < capacity_; ++i) {
            const entry &e = entries_[i];
            if (e.state != neighbor_state::reachable) {
                continue;
            }
            const bool exp = now_ns >= expiry(e);
            if ((exp && !victim_expired) || (exp == victim_expired && e.confirmed_ns < oldest)) {
                victim = i;
                oldest = e.confirmed_ns;
                victim_expired = exp;
            }
        }
        if (victim == npos || (!victim_expired && !evict_live)) {
            return npos;
        }
        remove(victim);
        evicted = true;
    }
    const uint32_t idx = free_[--nfree_];
    entry &e = entries_[idx];
    e = entry{};
    e.ip = ip;
    uint32_t s = home_slot(ip);
    while (slots_[s] != 0) {
        s = (s + 1) & slot_mask_;
    }
    slots_[s] = idx + 1;
    ++size_;
    return idx;
}

void neighbor_table::remove(uint32_t idx) noexcept {
    entry &e = entries_[idx];
    uint32_t hole = find_slot(e.ip);
    // Backward-shift deletion (Knuth 6.4 Algorithm R): move later members of the
    // probe run into the hole unless their home lies cyclically in (hole, j].
    for (uint32_t j = (hole + 1) & slot_mask_; slots_[j] != 0; j = (j + 1) & slot_mask_) {
        const uint32_t home = home_slot(entries_[slots_[j] - 1].ip);
        const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            slots_[hole] = slots_[j];
            hole = j;
        }
    }
    slots_[hole] = 0;
    // The pending array is left as is: poll() hands it out after removal.
    e.state = neighbor_state::free;
    e.npending = 0;
    free_[nfree_++] = idx;
    --size_;
}

std::optional<mac_addr> neighbor_table::lookup(ip_addr ip, uint64_t now_ns) const noexcept {
    const uint32_t idx = find(ip);
    if (idx == npos) {
        return std::nullopt;
    }
    const entry &e = entries_[idx];
    if (e.state != neighbor_state::reachable || now_ns >= expiry(e)) {
        return std::nullopt;
    }
    return e.mac;
}

neighbor_table::learn_result neighbor_table::learn(ip_addr ip, mac_addr mac, uint64_t now_ns,
                                                   bool target_is_us) noexcept {
    learn_result r;
    uint32_t idx = find(ip);
    if (idx != npos) {
        // RFC 826: "If the pair <protocol type, sender protocol address> is
        // already in my translation table, update the sender hardware address
        // field of the entry with the new information in the packet".
        entry &e = entries_[idx];
        r.status = e.state == neighbor_state::incomplete ? learn_status::resolved
                   : e.mac == mac                        ? learn_status::refreshed
                                                         : learn_status::updated;
        r.released = std::span<rte_mbuf *const>(e.pending.data(), e.npending);
        e.npending = 0;
    } else {
        // "?Am I the target protocol address? Yes: If Merge_flag is false, add
        // the triplet ... to the translation table."
        if (!target_is_us) {
            r.status = learn_status::ignored;
            return r;
        }
        idx = alloc(ip, now_ns, /*evict_live=*/false, r.evicted);
        if (idx == npos) {
            r.status = learn_status::table_full;
            return r;
        }
        r.status = learn_status::inserted;
    }
    entry &e = entries_[idx];
    e.mac = mac;
    e.state = neighbor_state::reachable;
    e.tries = 0;
    e.confirmed_ns = now_ns;
    note_deadline(expiry(e));
    const uint64_t since = e.shared_ns == never ? never : now_ns - e.shared_ns;
    switch (r.status) {
        case learn_status::inserted:
        case learn_status::resolved:
            r.share = true;
            break;
        case learn_status::updated:
            r.share = since >= cfg_.share_change_ns;
            break;
        case learn_status::refreshed:
            r.share = since >= (cfg_.share_refresh_ns != 0 ? cfg_.share_refresh_ns
                                                           : cfg_.timeout_ns / 2);
            break;
        default:
            break;
    }
    if (r.share) e.shared_ns = now_ns;
    return r;
}

neighbor_table::resolve_result neighbor_table::resolve(ip_addr ip, rte_mbuf *pkt,
                                                       uint64_t now_ns) noexcept {
    resolve_result r;
    uint32_t idx = find(ip);
    if (idx != npos) {
        entry &e = entries_[idx];
        if (e.state == neighbor_state::reachable) {
            if (now_ns < expiry(e)) {
                r.status = resolve_status::reachable;
                r.mac = e.mac;
                return r;
            }
            // Expired and not yet reaped by poll(): resolve it again in place.
            e.state = neighbor_state::incomplete;
            e.tries = 1;
            e.npending = 0;
            e.next_retry_ns = saturating_add(now_ns, cfg_.retry_ns);
            note_deadline(e.next_retry_ns);
            r.status = resolve_status::queued_new;
        } else {
            r.status = resolve_status::queued;
        }
    } else {
        idx = alloc(ip, now_ns, /*evict_live=*/true, r.evicted);
        if (idx == npos) {
            r.status = resolve_status::table_full;
            return r;
        }
        entry &e = entries_[idx];
        e.state = neighbor_state::incomplete;
        e.tries = 1;  // the caller sends the first request now
        e.next_retry_ns = saturating_add(now_ns, cfg_.retry_ns);
        note_deadline(e.next_retry_ns);
        r.status = resolve_status::queued_new;
    }
    if (pkt != nullptr) {
        entry &e = entries_[idx];
        if (e.npending == max_pending) {
            // RFC 1122 §2.3.2.2: keep the latest; the oldest goes back to the caller.
            r.displaced = e.pending[0];
            std::copy(e.pending.begin() + 1, e.pending.end(), e.pending.begin());
            --e.npending;
        }
        e.pending[e.npending++] = pkt;
    }
    return r;
}

bool neighbor_table::confirm(ip_addr ip, uint64_t now_ns) noexcept {
    const uint32_t idx = find(ip);
    if (idx == npos || entries_[idx].state != neighbor_state::reachable) {
        return false;
    }
    entries_[idx].confirmed_ns = now_ns;
    return true;
}

bool neighbor_table::poll_entry(uint32_t idx, uint64_t now_ns, neighbor_event &ev) noexcept {
    entry &e = entries_[idx];
    switch (e.state) {
        case neighbor_state::free:
            return false;
        case neighbor_state::incomplete:
            if (now_ns < e.next_retry_ns) {
                note_deadline(e.next_retry_ns);
                return false;
            }
            if (e.tries < cfg_.max_tries) {
                ++e.tries;
                e.next_retry_ns = saturating_add(now_ns, cfg_.retry_ns);
                note_deadline(e.next_retry_ns);
                ev = neighbor_event{neighbor_event::kind::solicit, e.ip, e.tries, {}};
                return true;
            }
            // remove() leaves the pending array intact for the callback.
            ev = neighbor_event{neighbor_event::kind::failed, e.ip, e.tries,
                                std::span<rte_mbuf *const>(e.pending.data(), e.npending)};
            remove(idx);
            return true;
        case neighbor_state::reachable: {
            const uint64_t t = expiry(e);
            if (now_ns < t) {
                note_deadline(t);
                return false;
            }
            ev = neighbor_event{neighbor_event::kind::expired, e.ip, 0, {}};
            remove(idx);
            return true;
        }
    }
    return false;
}

neighbor_state neighbor_table::state(ip_addr ip) const noexcept {
    const uint32_t idx = find(ip);
    return idx == npos ? neighbor_state::free : entries_[idx].state;
}

std::size_t neighbor_table::pending_count(ip_addr ip) const noexcept {
    const uint32_t idx = find(ip);
    return idx == npos ? 0 : entries_[idx].npending;
}

}  // namespace ferry::net
