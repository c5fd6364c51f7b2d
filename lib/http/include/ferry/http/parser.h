// HTTP/1.1 message parsing: request and response heads (incremental, over one
// growing contiguous buffer) and body delimiting (over arbitrary slices).
//
// Read first: RFC 9112 §2.2 (message parsing: CRLF, bare CR/LF, empty lines
// before the request-line, whitespace after the start-line), §3 (request-line,
// §3.2 target forms and Host), §4 (status-line), §5 (field lines, §5.1 no
// whitespace before the colon, §5.2 obs-fold), §6 (body: §6.1 Transfer-Encoding,
// §6.2 Content-Length, §6.3 message body length), §7 (chunked: §7.1 chunk-size,
// §7.1.1 extensions, §7.1.2 trailers), §9.3 (persistence), §11.2 (request
// smuggling); RFC 9110 §5 (fields: §5.1 names, §5.3 field order and lists,
// §5.5 values, §5.6.1 lists, §5.6.2 tokens), §7.2 (Host), §7.6.1 (Connection),
// §8.6 (Content-Length), §10.1.1 (Expect).
//
// Nothing here allocates, reads a clock or throws. Parsed text is returned as
// views into the caller's buffer; header fields fill a caller-owned array.
//
// Strictness: ferry sits in front of origins whose parsers it does not know,
// so every message two parsers could frame differently is rejected rather
// than repaired (RFC 9112 §11.2). The choices, all fixed (no knobs):
//
//   Line ends       CRLF only. A bare LF anywhere in a head (and in chunked
//                   framing) is `bare_lf`; a CR that is not followed by LF is
//                   invalid where it stands (in a field value `bad_header_value`,
//                   in the request-line `bad_target` / `bad_version`, in chunk
//                   framing `bare_cr`). RFC 9112 §2.2 allows either rejecting or
//                   replacing; we reject.
//   Empty lines     Requests: any number of CRLF-only lines before the
//                   request-line are skipped (RFC 9112 §2.2 SHOULD ignore at
//                   least one) and count toward max_head_bytes and `consumed`.
//                   Responses: none (`bad_status_line`).
//   Whitespace      A line that starts with SP/HTAB after the start-line is
//                   `obs_fold` (RFC 9112 §5.2 and §2.2: a server MUST reject or
//                   replace; a proxy MUST reject with 502 or replace). SP/HTAB in a
//                   field name, in particular before the colon, is
//                   `header_name_whitespace` (RFC 9112 §5.1 MUST reject with 400).
//   Request-line    method SP request-target SP HTTP-version with single SPs
//                   (RFC 9112 §3: no whitespace-splitting leniency). Methods are
//                   case-sensitive tokens ("get" is method::other). Target forms
//                   (RFC 9112 §3.2): origin-form; absolute-form with scheme http or
//                   https, a non-empty host and no userinfo (RFC 9110 §4.2.1,
//                   §4.2.4); authority-form host:port only for, and required by,
//                   CONNECT; asterisk-form only for OPTIONS. Target bytes: VCHAR
//                   except "#", and "%" must start a valid pct-encoding; we
//                   deliberately accept the VCHARs RFC 3986 excludes (" < > \ ^ `
//                   { | }) because clients send them and they cannot change framing.
//   Version         "HTTP/1.0" and "HTTP/1.1" only. Any other well-formed
//                   HTTP-version (HTTP/0.9, HTTP/1.2, HTTP/2.0) is
//                   `version_not_supported` (505): deliberately stricter than RFC 9110
//                   §2.5's "process 1.2 as 1.1", since no HTTP/1.2 exists.
//                   Malformed ("http/1.1", "HTTP/1.10") or missing is `bad_version`.
//   Host            HTTP/1.1 requests need exactly one Host line; any request
//                   with two is `multiple_host` (RFC 9112 §3.2 MUST 400). The value
//                   must be a valid uri-host [":" port] or empty (RFC 9110 §7.2),
//                   else `bad_host`. An absolute-form request still needs Host
//                   in HTTP/1.1; its target's authority wins (RFC 9112 §3.2.2),
//                   which the serializer applies.
//   Content-Length  1*DIGIT, at most 2^63-1. Several lines, or the list form
//                   "5, 5", are accepted when every value is the same number (RFC
//                   9110 §8.6 allows rejecting or collapsing; we collapse), else
//                   `duplicate_cl_differs`. Empty list elements, signs, spaces
//                   inside, hex: `bad_content_length`.
//   Transfer-Encoding
//                   A comma list of codings over all TE lines in order (RFC 9110
//                   §5.3). Each coding must be a bare token: transfer parameters
//                   are not accepted (no registered coding has any). "chunked"
//                   anywhere but last, or twice: `bad_transfer_encoding` (RFC 9112
//                   §7 MUST NOT apply chunked more than once; §6.1). No coding at
//                   all (empty value): `bad_transfer_encoding`.
//                   Requests: a coding that is not in the IANA registry (chunked,
//                   gzip, deflate, compress, x-gzip, x-compress) is
//                   `unknown_transfer_coding` (501, RFC 9112 §6.1 SHOULD); that
//                   includes "identity" (removed from the registry by RFC 7230), so
//                   "identity, chunked" is rejected. A known final coding that is
//                   not chunked is `bad_transfer_encoding` (RFC 9112 §6.3 item 4,
//                   MUST 400). Codings are case-insensitive ("Chunked" is chunked).
//                   Responses: any token is accepted (we forward the body
//                   unchanged); chunked last frames it chunked, otherwise the body
//                   runs until close (RFC 9112 §6.3 item 4).
//                   TE in an HTTP/1.0 message: `te_in_http10` (RFC 9112 §6.1: treat
//                   the framing as faulty).
//   TE and CL       Both in one message (request or response): `te_and_cl`, 400.
//                   RFC 9112 §6.1 lets a server reject or let TE win; we reject
//                   (the CL.TE / TE.CL smuggling shapes). Checked in every
//                   response, even those that cannot have a body.
//   Limits          `limits` below. A head is only looked at up to
//                   max_head_bytes: a head not complete within them is
//                   `head_too_large` (431). A start line longer than
//                   max_request_line (without its CRLF) is `request_line_too_long`
//                   (414) / `status_line_too_long`, reported as soon as the limit
//                   is passed even before the line ends. More field lines than
//                   min(max_headers, storage size) is `too_many_headers` (431).
//
// Results do not depend on how the bytes arrive: whole, byte by byte, or split
// anywhere, a head gives the same result (status, consumed, error, offset) and
// the same fields (the unit tests check every split).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace ferry::http {

// RFC 9110 §9: the methods ferry recognises; anything else (including other
// spellings, since methods are case-sensitive) is `other`, see method_text.
enum class method : uint8_t {
    get,
    head,
    post,
    put,
    delete_,
    connect,
    options,
    trace,
    patch,
    other
};

// "GET", "HEAD", ...; "" for method::other.
[[nodiscard]] std::string_view name(method m) noexcept;

// One field line. Views into the caller's buffer; the value has its leading
// and trailing OWS removed (RFC 9112 §5). Names keep their case.
struct header {
    std::string_view name;
    std::string_view value;
};

// How the body of a message is delimited (RFC 9112 §6.3).
enum class body_kind : uint8_t {
    none,            // no body: the message ends with its head
    content_length,  // exactly content_length bytes (which may be 0)
    chunked,         // the chunked coding (RFC 9112 §7.1), ending with the trailer section
    until_close,     // responses only: everything until the server closes
};

[[nodiscard]] std::string_view name(body_kind k) noexcept;

// One value per reason a message is rejected; name() gives a stable
// snake_case name for counters, status_for() the status to answer a REQUEST
// with. (For a bad response from an upstream the proxy answers 502 whatever
// the reason.)
enum class parse_error : uint8_t {
    none = 0,
    // Start line.
    bad_method_token,       // 400 method empty or not a token (leading SP, CTL, "(" ...)
    bad_target,             // 400 request-target: bad byte, bad form for the method, bad %XX
    bad_version,            // 400 HTTP-version malformed or missing
    version_not_supported,  // 505 well-formed, but not HTTP/1.0 or HTTP/1.1
    request_line_too_long,  // 414 request-line longer than limits::max_request_line
    bad_status_line,        // 400 status-code not 3 digits in 100..599, bad SP, CTL in reason,
                            //     or a response starting with an empty line
    status_line_too_long,   // 400 status-line longer than limits::max_request_line
    // Line structure.
    bare_lf,   // 400 LF not preceded by CR (head, chunk framing, trailers)
    bare_cr,   // 400 CR not followed by LF (chunk framing, end of trailers)
    obs_fold,  // 400 a field line (or a line after the start line) begins with SP/HTAB
    // Field lines.
    bad_header_name,         // 400 field name empty, not a token, or no colon
    header_name_whitespace,  // 400 SP/HTAB in a field name, e.g. "Host : x"
    bad_header_value,        // 400 NUL, CR, or another CTL in a field value
    too_many_headers,        // 431 more field lines than allowed
    head_too_large,          // 431 head not complete within limits::max_head_bytes
    // Framing (RFC 9112 §6).
    te_and_cl,                // 400 Transfer-Encoding and Content-Length both present
    duplicate_cl_differs,     // 400 Content-Length values that are not all the same
    bad_content_length,       // 400 Content-Length not 1*DIGIT (per element) or > 2^63-1
    bad_transfer_encoding,    // 400 chunked twice or not last, empty, parameters, non-token,
                              //     or (requests) a final coding other than chunked
    unknown_transfer_coding,  // 501 (requests) a transfer coding ferry does not know
    te_in_http10,             // 400 Transfer-Encoding in an HTTP/1.0 message
    // Request semantics.
    missing_host,   // 400 HTTP/1.1 request without Host
    multiple_host,  // 400 more than one Host line
    bad_host,       // 400 Host value not uri-host [":" port]
    // Body (body_framer).
    bad_chunk_size,        // 400 chunk-size empty, not hex ("0x", "-1", " 5"), > 2^63-1
    chunk_line_too_long,   // 400 chunk-size line (with extensions) > max_chunk_size_line
    bad_chunk_extension,   // 400 chunk-ext not ; name [= token / quoted-string]
    bad_chunk_terminator,  // 400 chunk-data not followed by CRLF (size lied)
    trailers_too_large,    // 431 trailer section > limits::max_trailer_bytes
};

// Stable snake_case name ("bad_target", ...); "unknown" for a value outside the enum.
[[nodiscard]] std::string_view name(parse_error e) noexcept;
// The status code a server answers a request rejected for `e` with: 400, or
// 414 request_line_too_long, 431 head_too_large / too_many_headers /
// trailers_too_large, 501 unknown_transfer_coding, 505 version_not_supported.
// 500 for parse_error::none (a caller bug).
[[nodiscard]] uint16_t status_for(parse_error e) noexcept;

struct limits {
    // Whole head: empty lines before the request-line, start line, field
    // lines, final CRLF. Also the size the proxy's head buffer needs.
    uint32_t max_head_bytes = 8192;
    // Request-line or status-line, without its CRLF.
    uint32_t max_request_line = 4096;
    // Field lines of one head (also bounded by the storage span).
    uint16_t max_headers = 64;
    // chunk-size line without its CRLF: size digits, BWS and extensions.
    uint32_t max_chunk_size_line = 64;
    // Trailer section after the last chunk, including its final CRLF.
    uint32_t max_trailer_bytes = 4096;
};

// Request-target forms (RFC 9112 §3.2).
enum class target_form : uint8_t {
    origin,     // "/path?query"
    absolute,   // "http://host:port/path?query"
    authority,  // "host:port" (CONNECT)
    asterisk,   // "*" (OPTIONS)
};

[[nodiscard]] std::string_view name(target_form f) noexcept;

// Connection options seen in Connection fields (RFC 9110 §7.6.1), as bits of
// request::connection / response::connection.
namespace connection_option {
inline constexpr uint8_t close = 0x01;
inline constexpr uint8_t keep_alive = 0x02;
inline constexpr uint8_t upgrade = 0x04;
// Some other option: it names a field the serializer must drop.
inline constexpr uint8_t other = 0x08;
}  // namespace connection_option

// A parsed request head. Every view points into the buffer given to
// parse_request(); valid while that buffer is. Fields are only meaningful
// once parse_request() returned done.
struct request {
    method m = method::other;
    std::string_view method_text;  // the method token as received
    std::string_view target;       // the request-target as received
    target_form form = target_form::origin;
    // The target to send to an origin server (RFC 9112 §3.2.1): the target
    // itself for origin-, authority- and asterisk-form; for absolute-form its
    // path and query, "" when the URI has no path (send "/"), or starting with
    // "?" when it has a query but no path (send "/" before it).
    std::string_view origin_form;
    // absolute-form: the URI's authority (host[:port]); authority-form: the
    // target; else "".
    std::string_view authority;
    uint8_t version_minor = 1;         // 0 or 1
    std::span<header> headers;         // the filled prefix of the caller's storage, in order
    body_kind body = body_kind::none;  // none, content_length or chunked
    uint64_t content_length = 0;       // when body == content_length
    // RFC 9112 §9.3: HTTP/1.1 unless "close"; HTTP/1.0 only with "keep-alive"
    // and no "close".
    bool keep_alive = false;
    // Expect: 100-continue in an HTTP/1.1 request (an HTTP/1.0 one's is
    // ignored, RFC 9110 §10.1.1 MUST).
    bool expect_continue = false;
    // An Expect value other than 100-continue (RFC 9110 §10.1.1: MAY answer 417).
    bool expect_other = false;
    bool has_host = false;
    std::string_view host;  // the Host value, OWS-trimmed ("" if absent or empty)
    // An Upgrade field and an "upgrade" connection option (RFC 9110 §7.8).
    bool upgrade = false;
    uint8_t connection = 0;  // connection_option bits
};

// A parsed response head; views into the buffer given to parse_response().
struct response {
    uint16_t status = 0;        // 100..599
    std::string_view reason;    // may be empty
    uint8_t version_minor = 1;  // 0 or 1
    std::span<header> headers;
    body_kind body = body_kind::none;
    uint64_t content_length = 0;  // the Content-Length value if one was present (even when
                                  // body is none, e.g. HEAD or 304)
    // RFC 9112 §9.3 as for requests, and false when the body runs until close.
    bool keep_alive = false;
    bool upgrade = false;
    uint8_t connection = 0;
};

// What the response parser needs to know about the request it answers
// (RFC 9112 §6.3 items 1-2).
struct request_info {
    bool head = false;     // answer to HEAD: never a body
    bool connect = false;  // answer to CONNECT: a 2xx has no body (the tunnel starts)

    [[nodiscard]] static request_info of(const request &r) noexcept {
        return {r.m == method::head, r.m == method::connect};
    }
};

struct parse_result {
    enum class status : uint8_t {
        done,       // the head is complete and valid
        need_more,  // call again with more bytes
        error,      // invalid: see err and offset; the parser stays in error
    };
    status st = status::need_more;
    // done: bytes of the head including its final CRLF (and, for requests,
    // the empty lines skipped before it); the body or next message starts
    // there. 0 otherwise.
    uint32_t consumed = 0;
    parse_error err = parse_error::none;  // error only
    // error only: offset in the buffer of the offending byte (for a limit, the
    // first byte past it; for a missing field, the start of the final empty
    // line; for a bad field value, the value's first byte or the bad byte).
    uint32_t offset = 0;
};

[[nodiscard]] std::string_view name(parse_result::status s) noexcept;

// The state of one head being parsed. Default-constructed (or reset()) for
// each new message.
//
// Contract of parse_request()/parse_response() with a head_parser:
//   - Call with the same buffer every time, grown at the end: same data()
//     pointer, the first bytes unchanged. The parser then looks at each byte
//     once (total work O(n) however the bytes arrive). If data() moved or the
//     buffer shrank, it starts over from byte 0 (correct, only slower).
//   - Pass the same `out` and `storage` every time: fields are filled as their
//     lines complete. Read `out` only after done.
//   - Bytes past max_head_bytes are never looked at.
//   - Once done or error, further calls return the same result and touch nothing.
//   - One parser parses one kind: do not mix request and response calls
//     without reset().
class head_parser {
public:
    enum class phase : uint8_t { start_line, fields, done, failed };

    void reset() noexcept { *this = head_parser{}; }
    [[nodiscard]] phase current_phase() const noexcept { return ph_; }

private:
    friend struct head_engine;

    phase ph_ = phase::start_line;
    const char *base_ = nullptr;  // the buffer of the previous calls
    uint32_t line_start_ = 0;     // offset of the line being assembled
    uint32_t scan_ = 0;           // bytes before this were searched for LF
    uint16_t nfields_ = 0;
    uint8_t hosts_ = 0;
    uint8_t conn_ = 0;
    bool cl_seen_ = false;
    bool te_seen_ = false;
    bool te_any_ = false;  // at least one coding in the TE lines
    bool te_chunked_last_ = false;
    bool upgrade_field_ = false;
    uint32_t te_offset_ = 0;  // the first TE value, for the error offset
    uint64_t cl_ = 0;
    parse_result result_{};  // once done or failed
};

[[nodiscard]] std::string_view name(head_parser::phase p) noexcept;

// Parses a request head from buf[0, buf.size()).
// Returns done (out fully set, out.headers = storage.first(n), consumed = head
// length), need_more (head not complete yet and no error so far), or error
// (err, offset; answer status_for(err) and close the connection: after a
// framing error the stream cannot be resynchronised, RFC 9112 §6.3, §11.2).
// Field lines beyond min(lim.max_headers, storage.size()) are too_many_headers.
[[nodiscard]] parse_result parse_request(head_parser &st, std::string_view buf, request &out,
                                         std::span<header> storage,
                                         const limits &lim = {}) noexcept;

// Parses a response head; `req` says whether it answers HEAD or CONNECT.
// Framing per RFC 9112 §6.3: answers to HEAD, 1xx, 204 and 304 have no body
// (whatever their fields say, though TE/CL are still validated); a 2xx to
// CONNECT has none; then Transfer-Encoding (chunked last: chunked, else until
// close); then Content-Length; else until close. A 1xx (e.g. 100 Continue) is
// a complete message: the final response follows it, parse it with a fresh
// parser. Returns as parse_request().
[[nodiscard]] parse_result parse_response(head_parser &st, std::string_view buf, request_info req,
                                          response &out, std::span<header> storage,
                                          const limits &lim = {}) noexcept;

// Finds where a body ends, over arbitrary slices of the byte stream that
// follows a head (one mbuf segment at a time), without copying or buffering.
// feed() only delimits and validates. feed_run() also separates payload from
// framing, so that a proxy forwards the payload bytes and framing it derives
// itself, never the framing bytes it received (a chunked body re-framed in
// one canonical form: see feed_run). Chunked bodies are checked against RFC 9112 §7.1 in full:
//   chunked-body = *chunk last-chunk trailer-section CRLF
//   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   chunk-size   = 1*HEXDIG                         (at most 2^63-1)
//   chunk-ext    = *( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )
// with whitespace only where the grammar has BWS ("5 \r\n", "5;a \r\n" are
// rejected), trailer fields checked like header field lines (no obs-fold, no
// whitespace before the colon, no CTL in values), CRLF only. Limits:
// max_chunk_size_line, max_trailer_bytes.
class body_framer {
public:
    // The states up to ext_after_value are the chunk-size line (the framer
    // relies on that order).
    enum class state : uint8_t {
        size,             // chunk-size digits
        size_ws,          // BWS after the size: only ";" may follow
        ext_name_ws,      // after ";": BWS, then the extension name
        ext_name,         // in the name: token, "=", ";", BWS or the CR
        ext_after_name,   // BWS after the name: "=" or ";" (not the CR)
        ext_value_ws,     // after "=": BWS, then a token or a quoted-string
        ext_value,        // in a token value
        ext_quoted,       // in a quoted-string value
        ext_quoted_pair,  // after a backslash in a quoted-string
        ext_quoted_end,   // after the closing quote: ";", BWS or the CR
        ext_after_value,  // BWS after a value: ";" only
        size_lf,          // the CR of the chunk-size line seen, LF expected
        data,             // chunk-data (or a Content-Length / until-close body)
        data_cr,          // the CR after chunk-data expected
        data_lf,          // the LF after chunk-data expected
        trailer_start,    // start of a trailer line or of the final CRLF
        trailer_name,
        trailer_value,
        trailer_lf,  // the CR of a trailer line seen, LF expected
        final_lf,    // the CR of the final empty line seen, LF expected
        done,
        failed,
    };

    struct feed_result {
        // Bytes of this slice that belong to the body. Less than the slice
        // when the body ended inside it (the rest is the next message) or on
        // error (then it is the offset of the offending byte in the slice).
        uint32_t consumed = 0;
        bool done = false;   // the body is complete (never together with error)
        bool error = false;  // the framing is invalid: err says why; close the connection
        parse_error err = parse_error::none;
        // feed_run() only. data: the consumed bytes are payload (forward
        // them); else they are framing (drop them). out: canonical framing
        // to send before whatever comes next (valid until the next call).
        bool data = false;
        std::string_view out;
    };

    body_framer() noexcept { reset(body_kind::none, 0, {}); }

    // Starts a new body. none, and content_length with 0 bytes, are done at
    // once (feed() then returns consumed 0, done). until_close never ends: the
    // proxy ends it at EOF.
    void reset(body_kind kind, uint64_t content_length, const limits &lim) noexcept;

    // Consumes the body bytes at the start of `slice` (at most 2^32-1 bytes).
    // Returns consumed/done/error as documented on feed_result. After done or
    // an error, returns the same flags with consumed 0.
    [[nodiscard]] feed_result feed(std::string_view slice) noexcept;

    // Like feed(), but consumes one run at most: payload bytes only
    // (data = true) or framing bytes only (data = false). A framing run ends
    // where payload begins, so a caller alternates. For content_length and
    // until_close every byte is payload. For chunked, the framing ferry sends
    // instead of the received one comes in `out`, in one canonical form:
    //   chunk      = lower-case hex size without leading zeros CRLF data CRLF
    //   last chunk = "0" CRLF, and no trailer fields: CRLF
    // no chunk extensions, no trailer section (RFC 9110 §6.5.1 lets a
    // recipient that removes the chunked coding discard trailer fields;
    // trailer_fields() counts them). Each chunk's CRLF is sent with the next
    // size line (or the last chunk), so out is "[CRLF] size CRLF" when a
    // chunk's data starts and "[CRLF] 0 CRLF CRLF" when the body ends. Mixing
    // feed() and feed_run() on one body is not supported.
    [[nodiscard]] feed_result feed_run(std::string_view slice) noexcept;
    // Trailer field lines seen in a chunked body so far.
    [[nodiscard]] uint32_t trailer_fields() const noexcept { return trailer_fields_; }

    [[nodiscard]] body_kind kind() const noexcept { return kind_; }
    [[nodiscard]] state current_state() const noexcept { return st_; }
    [[nodiscard]] bool done() const noexcept { return st_ == state::done; }
    [[nodiscard]] bool failed() const noexcept { return st_ == state::failed; }
    // Payload bytes seen so far (chunk-data only for chunked; every byte
    // otherwise): what a body size limit applies to.
    [[nodiscard]] uint64_t payload_bytes() const noexcept { return payload_; }
    // Every body byte consumed so far, framing included.
    [[nodiscard]] uint64_t wire_bytes() const noexcept { return wire_; }
    // For content_length: bytes still to come. For chunked: bytes of the
    // current chunk-data still to come.
    [[nodiscard]] uint64_t remaining() const noexcept { return remaining_; }

private:
    [[nodiscard]] feed_result fail(uint32_t at, parse_error e) noexcept;
    [[nodiscard]] feed_result feed_chunked(std::string_view slice, bool runs) noexcept;
    std::string_view emit_size(uint64_t size) noexcept;
    // Takes up to len payload bytes of the remaining_ ones; returns how many.
    uint32_t take_payload(uint32_t len) noexcept;

    body_kind kind_ = body_kind::none;
    state st_ = state::done;
    parse_error err_ = parse_error::none;
    uint8_t size_digits_ = 0;   // significant hex digits of the current chunk-size
    uint32_t line_len_ = 0;     // bytes of the current chunk-size line so far
    uint32_t trailer_len_ = 0;  // bytes of the trailer section so far
    uint32_t max_line_ = 0;
    uint32_t max_trailer_ = 0;
    uint64_t remaining_ = 0;
    uint64_t payload_ = 0;
    uint64_t wire_ = 0;
    uint32_t trailer_fields_ = 0;
    bool chunk_out_ = false;  // feed_run emitted a chunk-size line (its CRLF is owed)
    char out_[24] = {};       // "\r\n" + 16 hex digits + "\r\n", or the last chunk
};

[[nodiscard]] std::string_view name(body_framer::state s) noexcept;

}  // namespace ferry::http
