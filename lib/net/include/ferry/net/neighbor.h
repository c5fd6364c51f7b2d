// The neighbor cache of one interface on one lcore: IPv4 addresses resolved
// by ARP and IPv6 addresses by Neighbor Discovery (RFC 4861 §7.2) share it
// (ip_addr.h keeps the families apart; the merge rules below are ARP's, and
// the stack applies ND's own before it calls learn()).
//
// Read first: RFC 826 "Packet Reception" (the merge algorithm: update an
// existing entry from any ARP packet, add a new one only when we are the
// target), RFC 1122 §2.3.2.1 (entries must time out; retransmit requests at
// most once per second per address) and §2.3.2.2 (queue at least one packet per
// unresolved address, "SHOULD" keep the latest).
//
// Pure: time is passed in, no clock is read, no packet is sent or freed here.
// Packets waiting for resolution are held as opaque `rte_mbuf *` that the table
// never dereferences; they are always handed back to the caller (released on
// resolution, or given up after the last retry).
//
// Storage (entries, a free list and an open-addressing index) is allocated once
// at construction; no member allocates afterwards.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "ferry/net/ip_addr.h"

struct rte_mbuf;

namespace ferry::net {

struct neighbor_config {
    uint32_t capacity = 256;
    uint64_t timeout_ns = 60'000'000'000;  // a reachable entry lives this long unconfirmed
    uint64_t retry_ns = 1'000'000'000;     // between ARP requests for one address
    uint32_t max_tries = 3;                // requests per resolution, the first included
    // Sharing bindings with the other lcores (learn_result::share): a change
    // at most once per share_change_ns per address, an unchanged binding at
    // most once per share_refresh_ns (0 = timeout_ns / 2).
    uint64_t share_change_ns = 100'000'000;
    uint64_t share_refresh_ns = 0;
};

enum class neighbor_state : uint8_t {
    free = 0,
    incomplete,  // ARP request sent, no answer yet; packets may be waiting
    reachable,   // hardware address known and not expired
};

[[nodiscard]] constexpr const char *name(neighbor_state s) noexcept {
    switch (s) {
        case neighbor_state::free:
            return "free";
        case neighbor_state::incomplete:
            return "incomplete";
        case neighbor_state::reachable:
            return "reachable";
    }
    return "unknown";
}

// What poll() reports.
struct neighbor_event {
    enum class kind : uint8_t {
        solicit,  // resend the ARP request for `ip` (this is request number `tries`)
        failed,   // gave up after `tries` requests: the caller owns `pending` now and frees them
        expired,  // a reachable entry timed out and was removed
    };
    kind what = kind::solicit;
    ip_addr ip;
    uint32_t tries = 0;
    std::span<rte_mbuf *const> pending;
};

class neighbor_table {
public:
    // Packets queued per unresolved address. RFC 1122 §2.3.2.2 asks for at
    // least one; a burst of SYN-ACKs to one new peer (or through one gateway)
    // needs many more (Linux queues ~200 KB per address, unres_qlen_bytes).
    static constexpr std::size_t max_pending = 64;
    // Larger capacities are clamped (as is 0, to 1).
    static constexpr uint32_t max_capacity = 1u << 24;

    explicit neighbor_table(const neighbor_config &cfg);
    neighbor_table(const neighbor_table &) = delete;
    neighbor_table &operator=(const neighbor_table &) = delete;

    // The hardware address of a reachable, unexpired entry.
    [[nodiscard]] std::optional<mac_addr> lookup(ip_addr ip, uint64_t now_ns) const noexcept;

    enum class learn_status : uint8_t {
        updated,     // reachable entry existed with another address: address and timer set
        refreshed,   // reachable entry existed with this address: timer refreshed only
        resolved,    // incomplete entry existed: now reachable, `released` holds its packets
        inserted,    // no entry, we are the target: added (RFC 826)
        ignored,     // no entry and not the target: RFC 826 does not add one
        table_full,  // would have been inserted, but nothing free or expired to reclaim
    };
    struct learn_result {
        learn_status status = learn_status::ignored;
        bool evicted = false;  // the insertion reclaimed an expired entry
        // The binding should go to the other lcores now: it is new (inserted,
        // resolved), or changed (updated) and was not shared in the last
        // share_change_ns, or unchanged (refreshed) and not shared in the last
        // share_refresh_ns (so their entries do not expire while ours is
        // confirmed). Otherwise a re-share would be a flood, not news.
        bool share = false;
        // Packets that were waiting for this address, oldest first. The caller
        // owns them now (addresses them and sends them). Valid until the next
        // non-const call on the table.
        std::span<rte_mbuf *const> released;
    };
    // The RFC 826 merge for <ip, mac> taken from an ARP packet's sender fields;
    // `target_is_us` is "Am I the target protocol address?". An unsolicited
    // insertion only reclaims expired entries, so a flood of ARP requests
    // cannot push out live ones.
    [[nodiscard]] learn_result learn(ip_addr ip, mac_addr mac, uint64_t now_ns,
                                     bool target_is_us) noexcept;

    enum class resolve_status : uint8_t {
        reachable,   // known: `mac` is set, the packet was NOT taken
        queued_new,  // new incomplete entry, packet taken: send the first ARP request now
        queued,      // resolution already in progress, packet taken
        table_full,  // no entry free, expired or reachable to evict: packet NOT taken
    };
    struct resolve_result {
        resolve_status status = resolve_status::table_full;
        bool evicted = false;  // a new entry reclaimed an expired or the least recently
                               // confirmed reachable entry
        mac_addr mac;          // when reachable
        // queued with a full queue: the oldest waiting packet, given back to the
        // caller to free (RFC 1122 §2.3.2.2 keeps the latest). Otherwise null.
        rte_mbuf *displaced = nullptr;
    };
    // Looks `ip` up and, when it is not reachable, queues `pkt` (if not null)
    // until the address resolves. An expired entry is resolved again.
    [[nodiscard]] resolve_result resolve(ip_addr ip, rte_mbuf *pkt, uint64_t now_ns) noexcept;

    // Upper-layer advice that the neighbor is alive (RFC 1122 §2.3.2.1, e.g. TCP
    // forward progress): restarts a reachable entry's timer. False if none.
    bool confirm(ip_addr ip, uint64_t now_ns) noexcept;

    // Runs due retries and expiries, calling on_event(const neighbor_event &)
    // for each. The callback must not call non-const members of this table.
    template <class F>
    void poll(uint64_t now_ns, F &&on_event) noexcept {
        if (now_ns < deadline_) {
            return;
        }
        deadline_ = UINT64_MAX;
        neighbor_event ev;
        for (uint32_t i = 0; i < capacity_; ++i) {
            if (poll_entry(i, now_ns, ev)) {
                on_event(static_cast<const neighbor_event &>(ev));
            }
        }
    }

    // The earliest time poll() has work, UINT64_MAX if none. Never later than
    // the true deadline; it may be earlier after an entry was refreshed, and
    // the next poll() then recomputes it exactly.
    [[nodiscard]] uint64_t next_deadline() const noexcept { return deadline_; }

    // Empties the table, calling on_pending(rte_mbuf *) for every queued packet
    // (for instance from the owner's destructor, to free them).
    template <class F>
    void clear(F &&on_pending) noexcept {
        for (uint32_t i = 0; i < capacity_; ++i) {
            entry &e = entries_[i];
            for (uint8_t k = 0; k < e.npending; ++k) {
                on_pending(e.pending[k]);
            }
            if (e.state != neighbor_state::free) {
                remove(i);
            }
        }
        deadline_ = UINT64_MAX;
    }

    [[nodiscard]] neighbor_state state(ip_addr ip) const noexcept;
    [[nodiscard]] std::size_t pending_count(ip_addr ip) const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
    [[nodiscard]] const neighbor_config &config() const noexcept { return cfg_; }

    // Calls f(ip_addr, mac_addr, neighbor_state) for every entry in use (telemetry).
    template <class F>
    void for_each(F &&f) const {
        for (uint32_t i = 0; i < capacity_; ++i) {
            const entry &e = entries_[i];
            if (e.state != neighbor_state::free) {
                f(e.ip, e.mac, e.state);
            }
        }
    }

private:
    struct entry {
        ip_addr ip;
        mac_addr mac;
        neighbor_state state = neighbor_state::free;
        uint8_t npending = 0;
        uint32_t tries = 0;          // incomplete: requests sent so far
        uint64_t confirmed_ns = 0;   // reachable: last confirmation
        uint64_t next_retry_ns = 0;  // incomplete: when to send the next request or give up
        uint64_t shared_ns = never;  // when learn() last said share (never: not yet)
        std::array<rte_mbuf *, max_pending> pending{};
    };
    static constexpr uint32_t npos = UINT32_MAX;
    static constexpr uint64_t never = UINT64_MAX;

    [[nodiscard]] uint64_t expiry(const entry &e) const noexcept;
    [[nodiscard]] uint32_t home_slot(ip_addr ip) const noexcept;
    [[nodiscard]] uint32_t find_slot(ip_addr ip) const noexcept;
    [[nodiscard]] uint32_t find(ip_addr ip) const noexcept;
    // A free entry, reclaiming an expired one or, if `evict_live`, the least
    // recently confirmed reachable one when none is free. npos when full.
    [[nodiscard]] uint32_t alloc(ip_addr ip, uint64_t now_ns, bool evict_live,
                                 bool &evicted) noexcept;
    void remove(uint32_t idx) noexcept;
    void note_deadline(uint64_t t) noexcept {
        if (t < deadline_) {
            deadline_ = t;
        }
    }
    bool poll_entry(uint32_t idx, uint64_t now_ns, neighbor_event &ev) noexcept;

    neighbor_config cfg_;
    uint32_t capacity_;
    uint32_t slot_mask_;
    uint32_t slot_shift_;
    std::unique_ptr<entry[]> entries_;
    // Open addressing with linear probing; value = entry index + 1, 0 = empty.
    // At least twice as many slots as entries, so probes stay short.
    std::unique_ptr<uint32_t[]> slots_;
    std::unique_ptr<uint32_t[]> free_;  // stack of free entry indices
    uint32_t nfree_;
    uint32_t size_ = 0;
    uint64_t deadline_ = UINT64_MAX;
};

}  // namespace ferry::net
