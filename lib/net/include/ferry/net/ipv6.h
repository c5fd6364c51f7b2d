// IPv6 addresses, the fixed IPv6 header, the walk through the extension
// headers, ICMPv6's checksum and the two Neighbor Discovery messages a host
// must answer and send (issue 18 item 3: with iface_config::addr6 the stack
// answers solicitations and echo requests, resolves its peers' addresses,
// carries TCP, behind extension headers too, and sends the Parameter
// Problems the walk calls for). Text forms come from
// ferry/base/ipv6_text.h, which the configuration shares.
//
// Read first: RFC 8200 §3 (header format), §4 (extension headers: §4.2
// options and their action bits, §4.3 hop-by-hop, §4.4 routing, §4.5
// fragment, §4.6 destination options, §4.7 no next header) and §8.1
// (upper-layer checksums), RFC 6946 §4 (atomic fragments), RFC 4291 §2.2
// (text forms), §2.5.6 (link-local), §2.7 (multicast) and §2.7.1
// (solicited-node), RFC 4193 (unique local, fc00::/7), RFC 5952 §4 (the
// canonical text form), RFC 4443 §2.1 (ICMPv6 message format), §2.4 (when
// an error must, and must not, be sent; its rate limit) and §3.4
// (Parameter Problem), RFC 4861
// §4.3, §4.4, §4.6.1 (Neighbor Solicitation / Advertisement and the
// link-layer address options) and §7.1.1, §7.1.2 (what a node must check
// before it acts on them), RFC 2464 §7 (multicast to Ethernet: 33:33 and
// the address's last 32 bits).
//
//   0       4               12      16              24              31
//   |version| traffic class |            flow label                  |
//   |         payload length         |  next header  |   hop limit   |
//   |                 source address (128 bits)                      |
//   |              destination address (128 bits)                    |
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/base/ipv6_text.h"
#include "ferry/net/addr.h"
#include "ferry/net/checksum.h"

namespace ferry::net {

class ipv6_addr {
public:
    static constexpr std::size_t size = 16;

    constexpr ipv6_addr() noexcept = default;
    constexpr explicit ipv6_addr(const std::array<uint8_t, size> &b) noexcept : b_(b) {}
    [[nodiscard]] static constexpr ipv6_addr from_bytes(std::span<const uint8_t, size> b) noexcept {
        ipv6_addr a;
        for (std::size_t i = 0; i < size; ++i) a.b_[i] = b[i];
        return a;
    }
    // RFC 4291 §2.2 forms 1 and 2: eight groups of 1-4 hex digits separated
    // by ':', one run of zero groups replaced by "::" (at most once); either
    // case. Form 3 (a dotted IPv4 tail), zone indices ("%eth0") and a prefix
    // length are not addresses here: nullopt, as for anything else.
    [[nodiscard]] static std::optional<ipv6_addr> parse(std::string_view s) noexcept;
    // "a/len" with len 0..128; the address is kept as written (host bits too).
    [[nodiscard]] static std::optional<std::pair<ipv6_addr, uint8_t>> parse_prefix(
        std::string_view s) noexcept;

    [[nodiscard]] constexpr const std::array<uint8_t, size> &bytes() const noexcept { return b_; }
    constexpr void write(std::span<uint8_t, size> out) const noexcept {
        for (std::size_t i = 0; i < size; ++i) out[i] = b_[i];
    }

    // ::
    [[nodiscard]] constexpr bool is_unspecified() const noexcept { return *this == ipv6_addr{}; }
    // ::1
    [[nodiscard]] constexpr bool is_loopback() const noexcept {
        for (std::size_t i = 0; i + 1 < size; ++i)
            if (b_[i] != 0) return false;
        return b_[15] == 1;
    }
    // ff00::/8
    [[nodiscard]] constexpr bool is_multicast() const noexcept { return b_[0] == 0xff; }
    // fe80::/10
    [[nodiscard]] constexpr bool is_link_local() const noexcept { return ipv6_is_link_local(b_); }
    // fc00::/7 (RFC 4193)
    [[nodiscard]] constexpr bool is_unique_local() const noexcept { return (b_[0] & 0xfe) == 0xfc; }
    // ::ffff:0:0/96, an IPv4 address in IPv6 form: never on the wire as a
    // source or destination here (RFC 4291 §2.5.5.2 is for APIs).
    [[nodiscard]] constexpr bool is_ipv4_mapped() const noexcept {
        for (std::size_t i = 0; i < 10; ++i)
            if (b_[i] != 0) return false;
        return b_[10] == 0xff && b_[11] == 0xff;
    }
    // Whether the first `prefix_len` bits equal `net`'s (lengths above 128
    // count as 128).
    [[nodiscard]] constexpr bool in_subnet(const ipv6_addr &net, uint8_t prefix_len) const noexcept {
        return ipv6_in_prefix(b_, net.b_, prefix_len);
    }
    // RFC 4291 §2.7.1: ff02::1:ff00:0/104 plus the address's low 24 bits, the
    // group a Neighbor Solicitation for this address is sent to.
    [[nodiscard]] constexpr ipv6_addr solicited_node() const noexcept {
        return ipv6_addr({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, b_[13], b_[14], b_[15]});
    }
    // ff02::1, all nodes on the link.
    [[nodiscard]] static constexpr ipv6_addr all_nodes() noexcept {
        return ipv6_addr({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
    }
    // The canonical text form, RFC 5952 §4: lower case, no leading zeros,
    // the longest run of two or more zero groups (the first of equal ones)
    // as "::". Control path only (allocates).
    [[nodiscard]] std::string to_string() const;

    friend constexpr auto operator<=>(const ipv6_addr &, const ipv6_addr &) noexcept = default;

private:
    std::array<uint8_t, size> b_{};
};

// RFC 2464 §7: an IPv6 multicast address maps to 33:33 plus its last 32 bits.
[[nodiscard]] constexpr mac_addr multicast_mac(const ipv6_addr &group) noexcept {
    const auto &b = group.bytes();
    return mac_addr({0x33, 0x33, b[12], b[13], b[14], b[15]});
}

enum class ipv6_error : uint8_t {
    none = 0,
    truncated,    // shorter than the 40-byte header, or than header + payload length
    bad_version,  // version field != 6
};

[[nodiscard]] constexpr const char *name(ipv6_error e) noexcept {
    switch (e) {
        case ipv6_error::none: return "none";
        case ipv6_error::truncated: return "truncated";
        case ipv6_error::bad_version: return "bad_version";
    }
    return "unknown";
}

// Next-header values ferry knows (IANA "Assigned Internet Protocol Numbers").
enum class ipv6_next : uint8_t {
    hop_by_hop = 0,
    tcp = 6,
    udp = 17,
    routing = 43,
    fragment = 44,
    icmpv6 = 58,
    no_next = 59,
    destination = 60,
};

// The fixed header, parsed or to be emitted. `payload_len` counts what
// follows the fixed header (extension headers included); bytes past it
// (Ethernet padding) are not the datagram's.
struct ipv6_repr {
    static constexpr std::size_t header_len = 40;
    uint8_t traffic_class = 0;
    uint32_t flow_label = 0;  // 20 bits
    uint16_t payload_len = 0;
    uint8_t next_header = 0;
    uint8_t hop_limit = 64;
    ipv6_addr src, dst;

    // `buf` holds at least the fixed header; `total` is how many bytes of
    // the datagram there are in all (a frame in several segments), buf's
    // size when left out.
    [[nodiscard]] static ipv6_error parse(std::span<const uint8_t> buf, ipv6_repr &out,
                                          std::size_t total = SIZE_MAX) noexcept;
    // Writes the 40-byte header at the front of `out` (which must hold it).
    void emit(std::span<uint8_t> out) const noexcept;
};

// Adds what ICMPv6, TCP and UDP over IPv6 checksum besides their own bytes
// (RFC 8200 §8.1): source, destination, the upper-layer packet's length (32
// bits) and next header. Add it first, then the upper-layer packet (its
// checksum field zero), then finish().
void add_ipv6_pseudo_header(internet_checksum &c, const ipv6_addr &src, const ipv6_addr &dst,
                            uint32_t upper_len, uint8_t next_header) noexcept;

// ICMPv6 (RFC 4443) types ferry handles.
enum class icmpv6_type : uint8_t {
    dest_unreachable = 1,
    packet_too_big = 2,
    time_exceeded = 3,
    parameter_problem = 4,
    echo_request = 128,
    echo_reply = 129,
    router_solicitation = 133,
    router_advertisement = 134,
    neighbor_solicitation = 135,
    neighbor_advertisement = 136,
    redirect = 137,
};

// The checksum field value for an ICMPv6 message `msg` (its checksum field
// is ignored: treated as zero) between `src` and `dst`.
[[nodiscard]] uint16_t icmpv6_checksum(const ipv6_addr &src, const ipv6_addr &dst,
                                       std::span<const uint8_t> msg) noexcept;
// Whether `msg`'s checksum field is right.
[[nodiscard]] bool icmpv6_checksum_ok(const ipv6_addr &src, const ipv6_addr &dst,
                                      std::span<const uint8_t> msg) noexcept;

// RFC 4443 §3.4: the codes of a Parameter Problem message.
enum class icmpv6_param_code : uint8_t {
    header_field = 0,  // erroneous header field encountered
    next_header = 1,   // unrecognized Next Header type encountered
    option = 2,        // unrecognized IPv6 option encountered
};

// ---------------------------------------------------------------- extension headers
// RFC 8200 §4: a destination node processes the headers between the fixed
// header and the upper-layer header strictly in the order they come.
// walk_ipv6_ext() does that for a host: hop-by-hop (first only, §4.3) and
// destination options (§4.6) by their TLV options (§4.2), a routing header
// (§4.4: ferry recognizes no routing type, so Segments Left 0 is skipped
// and anything else is an error), a fragment header (§4.5: only an atomic
// fragment, offset 0 and M 0, goes on, RFC 6946 §4; a real fragment stops
// the walk: no reassembly yet), No Next Header (§4.7). Any other value is
// the upper layer, for the caller to recognize or to answer with a
// Parameter Problem code 1 at next_header_at.

// What the walk found. Each verdict but `upper` means: discard the datagram.
enum class ipv6_ext_verdict : uint8_t {
    upper,                 // reached `next_header` (no extension header) at `offset`
    no_next,               // Next Header 59 (§4.7): nothing follows
    fragment,              // a Fragment header (§4.5) of a real fragment
    malformed,             // a header, or an option in one, runs past the payload length
    beyond,                // a header runs past the bytes given (the frame's first segment)
    unknown_option,        // an option whose type is not Pad1/PadN, action bits 01-11 (§4.2)
    routing,               // a routing header with Segments Left != 0 (§4.4)
    misplaced_hop_by_hop,  // Next Header 0 after an extension header (§4.3)
};

[[nodiscard]] constexpr const char *name(ipv6_ext_verdict v) noexcept {
    switch (v) {
        case ipv6_ext_verdict::upper: return "upper";
        case ipv6_ext_verdict::no_next: return "no_next";
        case ipv6_ext_verdict::fragment: return "fragment";
        case ipv6_ext_verdict::malformed: return "malformed";
        case ipv6_ext_verdict::beyond: return "beyond";
        case ipv6_ext_verdict::unknown_option: return "unknown_option";
        case ipv6_ext_verdict::routing: return "routing";
        case ipv6_ext_verdict::misplaced_hop_by_hop: return "misplaced_hop_by_hop";
    }
    return "unknown";
}

struct ipv6_ext_walk {
    ipv6_ext_verdict verdict = ipv6_ext_verdict::upper;
    // upper: the upper-layer protocol and where its header starts, counted
    // from the fixed header's first byte (40 without extension headers);
    // fragment: where the Fragment header starts.
    uint8_t next_header = 0;
    uint32_t offset = ipv6_repr::header_len;
    // upper: where the Next Header field naming it is (6 without extension
    // headers), the pointer of a Parameter Problem code 1 (RFC 8200 §4);
    // fragment: the field naming the Fragment header.
    uint32_t next_header_at = 6;
    // Whether RFC 8200 asks for a Parameter Problem (unknown_option with
    // action bits 10 or 11, routing, misplaced_hop_by_hop), with its code
    // and pointer: the offset of the octet in error from the fixed header's
    // first byte (RFC 4443 §3.4): the option type, the Routing Type (§4.4:
    // "pointing to the unrecognized Routing Type"), the Next Header field.
    bool answer = false;
    icmpv6_param_code code = icmpv6_param_code::header_field;
    uint32_t pointer = 0;
    // answer: the error may go to a datagram sent to a group (an option
    // whose action bits are 10; RFC 4443 §2.4(e.3) exception 2, §4.2 "11":
    // "only if the packet's Destination Address was not a multicast address").
    bool multicast_ok = false;
    // answer: what follows is an ICMPv6 error message or redirect, which no
    // error may answer (RFC 4443 §2.4(e.1), (e.2)); also true when the rest of
    // the chain cannot be skipped to find out (the safe side of a MUST NOT).
    bool about_icmpv6_error = false;

    // upper: the upper-layer packet's length, the payload length less the
    // extension headers (RFC 8200 §8.1, "Upper-Layer Packet Length").
    [[nodiscard]] uint16_t upper_len(const ipv6_repr &ip) const noexcept {
        return static_cast<uint16_t>(ipv6_repr::header_len + ip.payload_len - offset);
    }
};

// Walks the extension headers of the datagram whose fixed header `ip` was
// parsed from `dgram` (its first bytes: the frame's first segment from the
// IPv6 header on; bytes past 40 + payload_len are padding, never read).
// Never reads past dgram or the payload; never allocates.
[[nodiscard]] ipv6_ext_walk walk_ipv6_ext(std::span<const uint8_t> dgram,
                                          const ipv6_repr &ip) noexcept;

enum class nd_error : uint8_t {
    none = 0,
    not_nd,          // not a Neighbor Solicitation or Advertisement
    bad_hop_limit,   // IP hop limit != 255: it did not come from the link (§7.1.1)
    bad_code,        // ICMP code != 0
    truncated,       // shorter than 24 bytes, or an option runs past the end
    bad_checksum,
    bad_option,      // an option of length 0 (§4.6: MUST be silently discarded)
    multicast_target,
    // §7.1.1: from :: (duplicate address detection) but not to a
    // solicited-node group, or with a source link-layer address option.
    bad_dad,
    // §7.1.2: a solicited advertisement to a multicast destination.
    solicited_to_multicast,
};

[[nodiscard]] constexpr const char *name(nd_error e) noexcept {
    switch (e) {
        case nd_error::none: return "none";
        case nd_error::not_nd: return "not_nd";
        case nd_error::bad_hop_limit: return "bad_hop_limit";
        case nd_error::bad_code: return "bad_code";
        case nd_error::truncated: return "truncated";
        case nd_error::bad_checksum: return "bad_checksum";
        case nd_error::bad_option: return "bad_option";
        case nd_error::multicast_target: return "multicast_target";
        case nd_error::bad_dad: return "bad_dad";
        case nd_error::solicited_to_multicast: return "solicited_to_multicast";
    }
    return "unknown";
}

// A Neighbor Solicitation (type 135) or Advertisement (136), parsed and
// validated (RFC 4861 §7.1.1 / §7.1.2), or to be emitted. Options other than
// the link-layer addresses are skipped, as §4.6 says.
struct nd_repr {
    icmpv6_type type = icmpv6_type::neighbor_solicitation;
    ipv6_addr target;
    // NA flags (§4.4): from a router, in answer to a solicitation, override
    // the cache entry.
    bool router = false, solicited = false, override_ = false;
    // The source (NS) or target (NA) link-layer address option, if present.
    std::optional<mac_addr> lladdr;

    // `ip` is the datagram's header (addresses, hop limit), `msg` the ICMPv6
    // message (the IPv6 payload, no extension headers).
    [[nodiscard]] static nd_error parse(const ipv6_repr &ip, std::span<const uint8_t> msg,
                                        nd_repr &out) noexcept;
    // The message's length: 24 bytes, plus 8 with a link-layer address option.
    [[nodiscard]] std::size_t len() const noexcept { return 24 + (lladdr ? 8 : 0); }
    // Writes the message (len() bytes) with its checksum for src -> dst.
    void emit(const ipv6_addr &src, const ipv6_addr &dst, std::span<uint8_t> out) const noexcept;
};

}  // namespace ferry::net
