// IP fragment reassembly for datagrams addressed to us, IPv4 and IPv6 (one
// table per family and stack).
//
// Read first: RFC 791 §3.2 (the reassembly procedure, "Fragmentation and
// Reassembly"), RFC 815 (holes), RFC 1122 §3.3.2 (a host MUST reassemble, with
// a timeout of 60-120 s recommended; Linux uses 30 s), RFC 1858 (tiny and
// overlapping fragment attacks), RFC 5722 (overlapping fragments: the whole
// datagram is discarded; Linux applies it to IPv4 too since 4.19) and RFC
// 8200 §4.5 (IPv6: the Fragment header, the unfragmentable part, 60 s).
//
// A datagram is identified by (source, destination, protocol, identification)
// (RFC 791; IPv6 by source, destination and identification: the protocol is
// 0). Its fragments are kept as the frames they arrived in (no copy), in order
// of offset; when the last fragment has come (MF clear: the length is known)
// and the fragments cover it without a gap, they are chained into one frame:
// the first fragment's Ethernet and IP headers (for IPv6 its unfragmentable
// part, without the Fragment header), then every fragment's payload. The
// IPv4 input() rewrites that frame's header to say what an unfragmented
// datagram would (total length, MF and offset clear, checksum); for IPv6 the
// caller does (the payload length and the Next Header that named the
// Fragment header, which `tag` carries), so the stack goes on with it as with
// any datagram.
//
// Dropped, and the datagram with them (counted by reason): a fragment that
// overlaps one already held without being an exact duplicate (RFC 5722); a
// fragment but the last whose payload is not a multiple of 8 bytes; one that
// ends past 65535 bytes or past the end the last fragment set; a first
// fragment with less than min_first_payload bytes (RFC 1858: the transport
// header must be in it). An exact duplicate is dropped alone.
//
// Bounded: at most max_datagrams in progress and max_frames held (mbufs); a
// fragment past either bound evicts the oldest datagram in progress first (a
// sender that never completes cannot hold the table). A datagram not complete
// within timeout_ns is dropped by poll(). Everything held is freed by the
// destructor.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>

#include "ferry/net/ip_addr.h"
#include "ferry/net/ipv4.h"

namespace ferry::net {

// One fragment as the table sees it, whatever the IP version.
struct fragment_desc {
    ip_addr src, dst;
    uint32_t ident = 0;
    uint8_t protocol = 0;  // IPv4's protocol field; 0 for IPv6
    uint32_t offset = 0;   // of its payload in the datagram's, bytes
    uint32_t len = 0;      // its payload bytes
    bool more = false;     // MF / M: not the last
    // The frame's bytes before the payload that the whole datagram keeps
    // (Ethernet and IP headers; IPv6: without the Fragment header), and
    // where the payload starts (keep, or keep + 8 past IPv6's Fragment
    // header). Both within the frame's first segment.
    uint32_t keep = 0, skip = 0;
    // What the datagram's 65535-byte length counts besides the payload: the
    // IPv4 header; IPv6's unfragmentable extension headers.
    uint32_t length_base = 0;
    uint32_t tag = 0;  // the caller's, kept from the first fragment (result::tag)
};

struct reassembly_config {
    uint32_t max_datagrams = 64;            // in progress at once (at most table_capacity)
    uint32_t max_frames = 512;              // fragments held at once, over all datagrams
    uint64_t timeout_ns = 30'000'000'000;   // Linux's ipfrag_time
};

class ip_reassembly {
public:
    static constexpr uint32_t table_capacity = 64;  // 64 KiB of fragment records
    static constexpr uint32_t max_fragments = 64;       // per datagram
    static constexpr uint32_t min_first_payload = 64;   // RFC 1858: a whole TCP header and more

    enum class outcome : uint8_t {
        held,         // kept: the datagram is not complete yet
        complete,     // `frame` is the whole datagram (the fragment's frame among its parts)
        duplicate,    // an exact duplicate of a held fragment: freed
        overlap,      // overlaps a held fragment: freed with the whole datagram (RFC 5722)
        bad,          // length not a multiple of 8, past the end, past 65535, inconsistent end
        tiny,         // a first fragment too short to hold the transport header (RFC 1858)
        too_many,     // more than max_fragments for one datagram: freed with it
    };
    struct result {
        outcome what = outcome::held;
        rte_mbuf *frame = nullptr;  // complete: the reassembled frame (the caller's now)
        uint32_t freed = 0;         // fragments freed with this call (the new one included)
        uint32_t evicted = 0;       // datagrams evicted to make room
        // complete: the payload bytes (without the kept headers), and the
        // first fragment's fragment_desc::tag.
        uint32_t total = 0;
        uint32_t tag = 0;
    };

    explicit ip_reassembly(const reassembly_config &cfg = {}) noexcept;
    ~ip_reassembly();
    ip_reassembly(const ip_reassembly &) = delete;
    ip_reassembly &operator=(const ip_reassembly &) = delete;

    // Takes the fragment frame `m` (ownership passes: it is held, freed or
    // part of the result), described by `f`. A complete frame's headers are
    // the first fragment's as they came: the caller rewrites them.
    result input(rte_mbuf *m, const fragment_desc &f, uint64_t now_ns) noexcept;
    // An IPv4 fragment: l3_off: where its IP header starts in the frame; ip:
    // its parsed header (ip.is_fragment()); hlen: its IP header length. A
    // complete frame's header is rewritten as an unfragmented datagram's.
    result input(rte_mbuf *m, uint32_t l3_off, const ipv4_repr &ip, uint32_t hlen,
                 uint64_t now_ns) noexcept;

    // Drops the datagrams whose time ran out; returns how many (their
    // fragments are freed).
    uint32_t poll(uint64_t now_ns) noexcept;
    [[nodiscard]] uint64_t next_deadline() const noexcept;

    [[nodiscard]] uint32_t datagrams() const noexcept { return ndatagrams_; }
    [[nodiscard]] uint32_t frames_held() const noexcept { return nframes_; }

private:
    struct fragment {
        rte_mbuf *m = nullptr;
        uint16_t off = 0;   // payload offset in the datagram, bytes
        uint16_t len = 0;   // payload bytes
        uint16_t skip = 0;  // bytes of the frame before the payload
        uint16_t keep = 0;  // of those, the headers the datagram keeps (fragment_desc)
    };
    struct datagram {
        bool used = false;
        ip_addr src, dst;
        uint32_t ident = 0;
        uint8_t protocol = 0;
        uint32_t tag = 0;        // the first fragment's fragment_desc::tag
        uint64_t deadline = 0;
        uint64_t born = 0;       // order of arrival, for eviction
        uint32_t total = 0;      // payload length once the last fragment came, else 0
        bool have_last = false;
        uint32_t have = 0;       // payload bytes held
        uint32_t n = 0;
        std::array<fragment, max_fragments> frags;
    };

    datagram *find(const fragment_desc &f) noexcept;
    datagram *create(const fragment_desc &f, uint64_t now_ns, result &r) noexcept;
    uint32_t release(datagram &d) noexcept;  // frees its fragments; returns how many
    void evict_oldest(result &r) noexcept;
    rte_mbuf *assemble(datagram &d) noexcept;

    reassembly_config cfg_;
    std::array<datagram, table_capacity> table_;
    uint32_t ndatagrams_ = 0;
    uint32_t nframes_ = 0;
    uint64_t births_ = 0;
};

}  // namespace ferry::net
