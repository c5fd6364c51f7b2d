// Writing heads to forward (and small error responses), into caller-provided
// buffers, without allocating.
//
// Read first: RFC 9110 §7.6.1 (Connection and hop-by-hop fields), §7.6.3
// (Via), §7.2 (Host); RFC 9112 §3.2.1-§3.2.2 (the target sent to an origin,
// and the Host of an absolute-form request), §9.3 (persistence). The
// X-Forwarded-For / X-Forwarded-Proto fields are the de-facto convention
// (RFC 7239 §7.5 describes them).
//
// Framing is never forwarded as received: the parser accepts some framing
// that is not canonical (Content-Length repeated, in one line as a list or in
// several lines; coding names in any case), and a next hop that reads it
// differently would delimit the body differently (a smuggling vector). So
// the received Content-Length, Transfer-Encoding and Trailer lines are
// dropped and ferry writes its own, where the first of them was:
//   Content-Length: <the parsed value>       (one line, if any was received)
//   Transfer-Encoding: <codings, lower case, ", "-joined>  (if any was received)
// and no Trailer (the proxy re-frames chunked bodies without their trailer
// section: body_framer::feed_run). They are written even when a Connection
// field names them (dropping a framing field named in Connection would change
// how the next hop delimits the body). Host is never dropped either.
//
// Every function returns the number of bytes written, or 0 when the output
// does not fit in `out` (nothing is written past out.size(); what was written
// inside it is then unspecified).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ferry/http/parser.h"

namespace ferry::http {

// An operator's rules for the fields of a forwarded head (a route's
// request_headers / response_headers, docs/OPERATIONS.md "Header rules"),
// applied to the end-to-end fields only: the configuration refuses rules for
// the framing, hop-by-hop and Host fields and those ferry writes itself (Via,
// X-Forwarded-*), so no rule can change how a message is delimited.
//   remove: received fields of these names (any case) are not forwarded
//   set:    received fields of these names are not forwarded; each is written
//           once with the rule's value
//   add:    written as well, after the received fields (a list field grows)
struct header_edit {
    std::span<const std::string_view> remove;
    std::span<const header> set;
    std::span<const header> add;
    // Whether a received field `name` is dropped by remove or set.
    [[nodiscard]] bool drops(std::string_view name) const noexcept;
};

// What the proxy adds when it forwards a head.
struct forward_info {
    // The downstream client's address as text ("192.0.2.7"), appended to
    // X-Forwarded-For; "" adds nothing (existing values are still forwarded).
    std::string_view client_addr;
    // Connection: keep-alive (true) or close (false) towards the next hop.
    bool keep_alive = true;
    // Our pseudonym in Via (RFC 9110 §7.6.3 received-by).
    std::string_view via_name = "ferry";
    // X-Forwarded-Proto value (requests). A client-sent X-Forwarded-Proto is
    // dropped: ferry is the edge that knows the protocol.
    std::string_view proto = "http";
    // Host value to send when the request has none (an HTTP/1.0 request
    // without Host, forwarded as HTTP/1.1, which requires one: RFC 9112 §3.2).
    std::string_view default_host;
    // Minor version of the forwarded request-line: 1 by default. 0 makes the
    // origin answer without chunked coding (RFC 9112 §6.1 MUST NOT send TE to
    // an HTTP/1.0 request), for an HTTP/1.0 client whose response must not be
    // chunked.
    uint8_t request_version_minor = 1;
    // Responses: the proxy removes the chunked coding (for an HTTP/1.0
    // client, which cannot receive it; the body then runs until close), so
    // "chunked" is left out of Transfer-Encoding (and the field with it when
    // it was the only coding).
    bool dechunk = false;
    // The route's header rules, if any (nullptr: none).
    const header_edit *edit = nullptr;
    // A protocol upgrade passes this hop (RFC 9110 §7.8): the message's
    // Upgrade fields go on as one line (every received value, in order,
    // ", "-separated) with "Connection: upgrade" in place of keep-alive or
    // close. For an Upgrade request the proxy tunnels, and for the 101 that
    // accepts it; everywhere else Upgrade is hop-by-hop and dropped.
    bool upgrade = false;
};

// True if ferry drops the field `name` when forwarding a message with these
// fields: Connection, Keep-Alive, Proxy-Connection, TE, Upgrade (RFC 9110
// §7.6.1), and any field named as an option in a Connection field of
// `fields` (case-insensitive) — except Transfer-Encoding, Content-Length,
// Trailer and Host, which are always kept (see the top of this file).
[[nodiscard]] bool is_hop_by_hop(std::string_view name, std::span<const header> fields) noexcept;
// True if a field `lower_name` of `fields` lists the token `lower_token` (a
// comma-separated list, RFC 9110 §5.6.1; case-insensitive; both arguments
// lower case), e.g. ("upgrade", "h2c").
[[nodiscard]] bool lists_token(std::span<const header> fields, std::string_view lower_name,
                               std::string_view lower_token) noexcept;
// The same for a parsed message (faster: it skips the Connection scan when no
// Connection field named anything but close / keep-alive / upgrade).
[[nodiscard]] bool is_hop_by_hop(std::string_view name, const request &r) noexcept;
[[nodiscard]] bool is_hop_by_hop(std::string_view name, const response &r) noexcept;

// Writes the head to send upstream for request `r`:
//   <method> SP <target> SP HTTP/1.<fi.request_version_minor> CRLF
//   every field that is not hop-by-hop, in the order received, except
//     X-Forwarded-For (merged below) and X-Forwarded-Proto (replaced), the
//     framing fields, written canonically (top of this file), and Expect:
//     "Expect: 100-continue" once if r.expect_continue, else none (unknown
//     expectations and an HTTP/1.0 one are ignored, RFC 9110 §10.1.1);
//     Host as received, but for an absolute-form target Host is the target's
//     authority (RFC 9112 §3.2.2), and absent Host is fi.default_host
//   the fields of fi.edit (set, then add; received ones it drops are not above)
//   Via: 1.<r.version_minor> <fi.via_name>      (after any received Via lines)
//   X-Forwarded-For: <received values, in order, ", "-joined>, <fi.client_addr>
//   X-Forwarded-Proto: <fi.proto>
//   Connection: keep-alive | close              (fi.keep_alive)
//   CRLF
// <target> is the target as received for origin-, authority- and
// asterisk-form, and origin-form for absolute-form ("/" when the URI has no
// path, RFC 9112 §3.2.1). Returns bytes written, or 0 if `out` is too small.
[[nodiscard]] std::size_t serialize_request_head(const request &r, const forward_info &fi,
                                                 std::span<char> out) noexcept;

// Writes the head to send downstream for response `r`:
//   HTTP/1.1 SP <status> SP <reason as received> CRLF
//   every field that is not hop-by-hop, in order, the framing fields
//     written canonically (top of this file; fi.dechunk)
//   the fields of fi.edit (set, then add; received ones it drops are not above)
//   Via: 1.<r.version_minor> <fi.via_name>
//   Connection: keep-alive | close              (fi.keep_alive; omitted for 1xx)
//   CRLF
// The proxy must pass keep_alive = false when the body runs until close
// (r.body == until_close). Returns bytes written, or 0 if `out` is too small.
[[nodiscard]] std::size_t serialize_response_head(const response &r, const forward_info &fi,
                                                  std::span<char> out) noexcept;

// Writes a complete response that ferry generates itself:
//   HTTP/1.1 <status> <reason> CRLF
//   Content-Type: text/plain CRLF
//   Content-Length: <n> CRLF
//   Connection: close | keep-alive CRLF
//   CRLF
//   <status> <reason> LF
// with the reason phrase of status.h (the body is "<status>\n" for a code
// without one). `status` must be 400..599; otherwise returns 0. Returns
// bytes written, or 0 if `out` is too small. head_only: the answer to a HEAD
// request (RFC 9110 §9.3.2): the same head, no body.
[[nodiscard]] std::size_t serialize_error(uint16_t status, bool close, std::span<char> out,
                                          bool head_only = false) noexcept;

}  // namespace ferry::http
