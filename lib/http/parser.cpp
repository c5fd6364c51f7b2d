// Request and response heads (RFC 9112 §2-§6). The choices are listed at the
// top of ferry/http/parser.h.
//
// Shape: the head is processed one complete line at a time, in order, and only
// once the line's LF is in the buffer. That is what makes the result
// independent of how the bytes arrive: a line either is complete (and gives
// the same verdict whenever it is looked at) or is not (need_more). The only
// verdicts on incomplete lines are the two limits, and both are monotone: once
// a prefix passes them, every longer buffer does too, with the same offset.
#include "ferry/http/parser.h"

#include <cstring>
#include <limits>

#include "chars.h"

namespace ferry::http {

using namespace detail;

std::string_view name(method m) noexcept {
    switch (m) {
        case method::get:
            return "GET";
        case method::head:
            return "HEAD";
        case method::post:
            return "POST";
        case method::put:
            return "PUT";
        case method::delete_:
            return "DELETE";
        case method::connect:
            return "CONNECT";
        case method::options:
            return "OPTIONS";
        case method::trace:
            return "TRACE";
        case method::patch:
            return "PATCH";
        case method::other:
            return "";
    }
    return "";
}

std::string_view name(body_kind k) noexcept {
    switch (k) {
        case body_kind::none:
            return "none";
        case body_kind::content_length:
            return "content_length";
        case body_kind::chunked:
            return "chunked";
        case body_kind::until_close:
            return "until_close";
    }
    return "unknown";
}

std::string_view name(target_form f) noexcept {
    switch (f) {
        case target_form::origin:
            return "origin";
        case target_form::absolute:
            return "absolute";
        case target_form::authority:
            return "authority";
        case target_form::asterisk:
            return "asterisk";
    }
    return "unknown";
}

std::string_view name(parse_result::status s) noexcept {
    switch (s) {
        case parse_result::status::done:
            return "done";
        case parse_result::status::need_more:
            return "need_more";
        case parse_result::status::error:
            return "error";
    }
    return "unknown";
}

std::string_view name(head_parser::phase p) noexcept {
    switch (p) {
        case head_parser::phase::start_line:
            return "start_line";
        case head_parser::phase::fields:
            return "fields";
        case head_parser::phase::done:
            return "done";
        case head_parser::phase::failed:
            return "failed";
    }
    return "unknown";
}

std::string_view name(parse_error e) noexcept {
    switch (e) {
        case parse_error::none:
            return "none";
        case parse_error::bad_method_token:
            return "bad_method_token";
        case parse_error::bad_target:
            return "bad_target";
        case parse_error::bad_version:
            return "bad_version";
        case parse_error::version_not_supported:
            return "version_not_supported";
        case parse_error::request_line_too_long:
            return "request_line_too_long";
        case parse_error::bad_status_line:
            return "bad_status_line";
        case parse_error::status_line_too_long:
            return "status_line_too_long";
        case parse_error::bare_lf:
            return "bare_lf";
        case parse_error::bare_cr:
            return "bare_cr";
        case parse_error::obs_fold:
            return "obs_fold";
        case parse_error::bad_header_name:
            return "bad_header_name";
        case parse_error::header_name_whitespace:
            return "header_name_whitespace";
        case parse_error::bad_header_value:
            return "bad_header_value";
        case parse_error::too_many_headers:
            return "too_many_headers";
        case parse_error::head_too_large:
            return "head_too_large";
        case parse_error::te_and_cl:
            return "te_and_cl";
        case parse_error::duplicate_cl_differs:
            return "duplicate_cl_differs";
        case parse_error::bad_content_length:
            return "bad_content_length";
        case parse_error::bad_transfer_encoding:
            return "bad_transfer_encoding";
        case parse_error::unknown_transfer_coding:
            return "unknown_transfer_coding";
        case parse_error::te_in_http10:
            return "te_in_http10";
        case parse_error::missing_host:
            return "missing_host";
        case parse_error::multiple_host:
            return "multiple_host";
        case parse_error::bad_host:
            return "bad_host";
        case parse_error::bad_chunk_size:
            return "bad_chunk_size";
        case parse_error::chunk_line_too_long:
            return "chunk_line_too_long";
        case parse_error::bad_chunk_extension:
            return "bad_chunk_extension";
        case parse_error::bad_chunk_terminator:
            return "bad_chunk_terminator";
        case parse_error::trailers_too_large:
            return "trailers_too_large";
    }
    return "unknown";
}

uint16_t status_for(parse_error e) noexcept {
    switch (e) {
        case parse_error::none:
            return 500;
        case parse_error::request_line_too_long:
            return 414;  // RFC 9112 §3: a request-target longer than the server parses
        case parse_error::head_too_large:
        case parse_error::too_many_headers:
        case parse_error::trailers_too_large:
            return 431;  // RFC 6585 §5
        case parse_error::unknown_transfer_coding:
            return 501;  // RFC 9112 §6.1
        case parse_error::version_not_supported:
            return 505;  // RFC 9110 §15.6.6
        default:
            return 400;
    }
}

namespace {

constexpr uint64_t max_length = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// RFC 9112 §2.3: HTTP-version = "HTTP" "/" DIGIT "." DIGIT (case-sensitive).
parse_error parse_version(std::string_view v, uint8_t &minor) noexcept {
    if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !is_digit(v[5]) || v[6] != '.' ||
        !is_digit(v[7]))
        return parse_error::bad_version;
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
        return parse_error::version_not_supported;
    minor = static_cast<uint8_t>(v[7] - '0');
    return parse_error::none;
}

method method_of(std::string_view t) noexcept {
    switch (t.size()) {
        case 3:
            if (t == "GET")
                return method::get;
            if (t == "PUT")
                return method::put;
            break;
        case 4:
            if (t == "HEAD")
                return method::head;
            if (t == "POST")
                return method::post;
            break;
        case 5:
            if (t == "TRACE")
                return method::trace;
            if (t == "PATCH")
                return method::patch;
            break;
        case 6:
            if (t == "DELETE")
                return method::delete_;
            break;
        case 7:
            if (t == "CONNECT")
                return method::connect;
            if (t == "OPTIONS")
                return method::options;
            break;
        default:
            break;
    }
    return method::other;
}

constexpr std::size_t ok_pos = std::string_view::npos;

// pct-encoded = "%" HEXDIG HEXDIG (RFC 3986 §2.1). Returns the offset of the
// bad byte or ok_pos.
std::size_t check_pct(std::string_view s, std::size_t i) noexcept {
    for (std::size_t k = 1; k <= 2; ++k) {
        if (i + k >= s.size())
            return i;  // cut short: blame the "%"
        if (!is_hex(s[i + k]))
            return i + k;
    }
    return ok_pos;
}

// Path and query of an origin-form target or an absolute URI (the bytes after
// the authority). Returns the offset of the first bad byte or ok_pos.
std::size_t check_path_query(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (!has_class(c, c_target))
            return i;
        if (c == '%') {
            if (const std::size_t bad = check_pct(s, i); bad != ok_pos)
                return bad;
            i += 2;
        }
    }
    return ok_pos;
}

// authority = uri-host [ ":" port ] without userinfo (RFC 3986 §3.2, RFC 9110
// §4.2.4), uri-host = IP-literal / IPv4address / reg-name. IPv4address is a
// reg-name lexically, so it needs no case of its own. Returns the offset of
// the first bad byte (s.size() for a missing part) or ok_pos.
std::size_t check_authority(std::string_view s, bool require_host, bool require_port) noexcept {
    std::size_t i = 0;
    if (!s.empty() && s[0] == '[') {
        // IP-literal = "[" ( IPv6address / IPvFuture ) "]": checked lexically
        // (hex, ":", ".", and IPvFuture's unreserved / sub-delims).
        i = 1;
        while (i < s.size() && s[i] != ']') {
            if (!has_class(s[i], c_regname) && s[i] != ':')
                return i;
            ++i;
        }
        if (i == s.size())
            return i;  // no "]"
        if (i == 1)
            return i;  // "[]"
        ++i;
    } else {
        while (i < s.size() && s[i] != ':') {
            const char c = s[i];
            if (c == '%') {
                if (const std::size_t bad = check_pct(s, i); bad != ok_pos)
                    return bad;
                i += 3;
                continue;
            }
            if (!has_class(c, c_regname))
                return i;
            ++i;
        }
        if (require_host && i == 0)
            return 0;
    }
    if (i == s.size())
        return require_port ? i : ok_pos;
    if (s[i] != ':')
        return i;
    ++i;
    // port = *DIGIT (RFC 3986 §3.2.3); ferry wants a real one when it has digits.
    const std::size_t port_start = i;
    uint32_t port = 0;
    for (; i < s.size(); ++i) {
        if (!is_digit(s[i]) || i - port_start >= 5)
            return i;
        port = port * 10 + static_cast<uint32_t>(s[i] - '0');
    }
    if (require_port && i == port_start)
        return i;
    if (port > 65535)
        return port_start;
    return ok_pos;
}

// Validates a request-target against its method (RFC 9112 §3.2) and fills
// form, origin_form and authority. Returns the offset of the bad byte or ok_pos.
std::size_t check_target(request &r) noexcept {
    const std::string_view t = r.target;
    r.origin_form = t;
    r.authority = {};
    if (t.empty())
        return 0;
    if (r.m == method::connect) {  // RFC 9112 §3.2.3: authority-form only
        r.form = target_form::authority;
        r.authority = t;
        return check_authority(t, true, true);
    }
    if (t[0] == '/') {  // §3.2.1 origin-form = absolute-path [ "?" query ]
        r.form = target_form::origin;
        return check_path_query(t);
    }
    if (t == "*") {  // §3.2.4: only for a server-wide OPTIONS
        r.form = target_form::asterisk;
        return r.m == method::options ? ok_pos : 0;
    }
    // §3.2.2 absolute-form = absolute-URI; ferry serves "http" and "https"
    // URIs, which have an authority (RFC 9110 §4.2.1-§4.2.2).
    r.form = target_form::absolute;
    std::size_t i = 0;
    if (iequals(t.substr(0, 7), "http://"))
        i = 7;
    else if (iequals(t.substr(0, 8), "https://"))
        i = 8;
    else
        return 0;
    std::size_t end = i;
    while (end < t.size() && t[end] != '/' && t[end] != '?')
        ++end;
    const std::string_view auth = t.substr(i, end - i);
    if (const std::size_t bad = check_authority(auth, true, false); bad != ok_pos)
        return i + bad;
    r.authority = auth;
    r.origin_form = t.substr(end);
    if (const std::size_t bad = check_path_query(r.origin_form); bad != ok_pos)
        return end + bad;
    return ok_pos;
}

// RFC 9110 §8.6: Content-Length = 1*DIGIT, here also the list of identical
// values that §8.6 lets a recipient collapse. Sets `v`; returns none,
// bad_content_length or duplicate_cl_differs, with `bad` the offset in `s`.
parse_error parse_content_length(std::string_view s, uint64_t &v, bool have, std::size_t &bad) {
    parse_error err = parse_error::none;
    std::size_t pos = 0;  // offset in s of the current element (or where it is empty)
    for_each_list_element(s, [&](std::string_view e) {
        // Where e starts in s (for the error offset).
        pos = static_cast<std::size_t>(e.data() - s.data());
        if (e.empty()) {
            err = parse_error::bad_content_length;
            return false;
        }
        uint64_t n = 0;
        for (std::size_t i = 0; i < e.size(); ++i) {
            const uint64_t d = static_cast<uint64_t>(e[i] - '0');
            if (!is_digit(e[i]) || n > (max_length - d) / 10) {
                err = parse_error::bad_content_length;
                pos += i;
                return false;
            }
            n = n * 10 + d;
        }
        if (have && n != v) {
            err = parse_error::duplicate_cl_differs;
            return false;
        }
        v = n;
        have = true;
        return true;
    });
    bad = pos;
    return err;
}

// The transfer codings of the IANA registry that a request may carry before
// "chunked" (RFC 9112 §7; "identity" was removed by RFC 7230).
bool known_coding(std::string_view c) noexcept {
    return iequals(c, "gzip") || iequals(c, "deflate") || iequals(c, "compress") ||
           iequals(c, "x-gzip") || iequals(c, "x-compress");
}

}  // namespace

// The parsing itself, as a friend of head_parser.
struct head_engine {
    struct ctx {
        head_parser &st;
        std::string_view buf;
        bool is_request;
        request_info info;
        request *req;
        response *resp;
        std::span<header> storage;
        const limits &lim;
    };

    static parse_result fail(head_parser &st, parse_error e, std::size_t offset) noexcept {
        st.ph_ = head_parser::phase::failed;
        st.result_ = {parse_result::status::error, 0, e, static_cast<uint32_t>(offset)};
        return st.result_;
    }

    static uint8_t version_minor(const ctx &c) noexcept {
        return c.is_request ? c.req->version_minor : c.resp->version_minor;
    }

    static parse_result run(ctx &c) noexcept {
        head_parser &st = c.st;
        if (st.ph_ == head_parser::phase::done || st.ph_ == head_parser::phase::failed)
            return st.result_;
        const bool fresh = st.ph_ == head_parser::phase::start_line && st.scan_ == 0;
        if (!fresh && (c.buf.data() != st.base_ || c.buf.size() < st.scan_)) {
            // The buffer moved or shrank: the views already stored would
            // dangle. Start again from byte 0.
            st.reset();
        }
        if (st.ph_ == head_parser::phase::start_line && st.scan_ == 0) {
            if (c.is_request)
                *c.req = request{};
            else
                *c.resp = response{};
        }
        st.base_ = c.buf.data();
        const char *p = c.buf.data();
        const std::size_t window =
            c.buf.size() < c.lim.max_head_bytes ? c.buf.size() : c.lim.max_head_bytes;

        while (true) {
            const void *lf =
                st.scan_ < window ? std::memchr(p + st.scan_, '\n', window - st.scan_) : nullptr;
            if (lf == nullptr) {
                st.scan_ = static_cast<uint32_t>(window);
                // The start line is limited before it ends: with max+2 bytes
                // and no LF, the line (without CRLF) is longer than max.
                if (st.ph_ == head_parser::phase::start_line &&
                    window - st.line_start_ >= uint64_t{c.lim.max_request_line} + 2)
                    return fail(st,
                                c.is_request ? parse_error::request_line_too_long
                                             : parse_error::status_line_too_long,
                                st.line_start_ + uint64_t{c.lim.max_request_line});
                if (window >= c.lim.max_head_bytes)
                    return fail(st, parse_error::head_too_large, c.lim.max_head_bytes);
                return {parse_result::status::need_more, 0, parse_error::none, 0};
            }
            const std::size_t lf_off = static_cast<std::size_t>(static_cast<const char *>(lf) - p);
            const std::size_t line_off = st.line_start_;
            st.scan_ = static_cast<uint32_t>(lf_off + 1);
            st.line_start_ = st.scan_;
            // The start-line limit first, with the same test as above: a
            // shorter buffer would already have failed it (even when the line
            // turns out to end in a bare LF), so a longer one must too.
            if (st.ph_ == head_parser::phase::start_line &&
                lf_off - line_off >= uint64_t{c.lim.max_request_line} + 2)
                return fail(st,
                            c.is_request ? parse_error::request_line_too_long
                                         : parse_error::status_line_too_long,
                            line_off + uint64_t{c.lim.max_request_line});
            // RFC 9112 §2.2: lines end with CRLF; a bare LF is rejected.
            if (lf_off == line_off || p[lf_off - 1] != '\r')
                return fail(st, parse_error::bare_lf, lf_off);
            const std::string_view line(p + line_off, lf_off - 1 - line_off);

            if (st.ph_ == head_parser::phase::start_line) {
                if (line.empty()) {
                    // RFC 9112 §2.2: a server SHOULD ignore at least one empty
                    // line before the request-line. Not before a status-line.
                    if (c.is_request)
                        continue;
                    return fail(st, parse_error::bad_status_line, line_off);
                }
                const parse_result r =
                    c.is_request ? request_line(c, line, line_off) : status_line(c, line, line_off);
                if (r.st == parse_result::status::error)
                    return r;
                st.ph_ = head_parser::phase::fields;
                continue;
            }

            // phase::fields
            if (line.empty())
                return finish(c, line_off);
            // RFC 9112 §5.2 obs-fold, and §2.2 whitespace between the
            // start-line and the first field: rejected.
            if (is_ows(line[0]))
                return fail(st, parse_error::obs_fold, line_off);
            const std::size_t max_fields =
                c.storage.size() < c.lim.max_headers ? c.storage.size() : c.lim.max_headers;
            if (st.nfields_ >= max_fields)
                return fail(st, parse_error::too_many_headers, line_off);
            const parse_result r = field_line(c, line, line_off);
            if (r.st == parse_result::status::error)
                return r;
        }
    }

    // RFC 9112 §3: request-line = method SP request-target SP HTTP-version.
    // The method runs to the first SP, the version from the last SP, and the
    // target is what lies between (so a SP inside it is a bad_target).
    static parse_result request_line(ctx &c, std::string_view line, std::size_t off) noexcept {
        request &r = *c.req;
        std::size_t sp1 = 0;
        while (sp1 < line.size() && line[sp1] != ' ') {
            if (!is_token_char(line[sp1]))
                return fail(c.st, parse_error::bad_method_token, off + sp1);
            ++sp1;
        }
        if (sp1 == 0)
            return fail(c.st, parse_error::bad_method_token, off);
        r.method_text = line.substr(0, sp1);
        r.m = method_of(r.method_text);
        const std::size_t sp2 = line.rfind(' ');
        if (sp1 == line.size() || sp2 == sp1)
            return fail(c.st, parse_error::bad_version, off + line.size());
        if (const parse_error e = parse_version(line.substr(sp2 + 1), r.version_minor);
            e != parse_error::none)
            return fail(c.st, e, off + sp2 + 1);
        r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        if (const std::size_t bad = check_target(r); bad != ok_pos)
            return fail(c.st, parse_error::bad_target, off + sp1 + 1 + bad);
        return {};
    }

    // RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ].
    // A missing SP after the code ("HTTP/1.1 200") is accepted: senders omit
    // it and the reason carries nothing (a client SHOULD ignore it).
    static parse_result status_line(ctx &c, std::string_view line, std::size_t off) noexcept {
        response &r = *c.resp;
        const std::size_t sp = line.find(' ');
        if (sp == std::string_view::npos) {
            uint8_t minor = 0;
            const parse_error e = parse_version(line, minor);
            return fail(c.st, e != parse_error::none ? e : parse_error::bad_status_line,
                        off + (e != parse_error::none ? 0 : line.size()));
        }
        if (const parse_error e = parse_version(line.substr(0, sp), r.version_minor);
            e != parse_error::none)
            return fail(c.st, e, off);
        const std::string_view rest = line.substr(sp + 1);
        uint16_t code = 0;
        for (std::size_t i = 0; i < 3; ++i) {
            if (i >= rest.size() || !is_digit(rest[i]))
                return fail(c.st, parse_error::bad_status_line, off + sp + 1 + i);
            code = static_cast<uint16_t>(code * 10 + (rest[i] - '0'));
        }
        if (code < 100 || code > 599)
            return fail(c.st, parse_error::bad_status_line, off + sp + 1);
        if (rest.size() > 3 && rest[3] != ' ')
            return fail(c.st, parse_error::bad_status_line, off + sp + 4);
        const std::string_view reason = rest.size() > 4 ? rest.substr(4) : std::string_view{};
        // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )
        for (std::size_t i = 0; i < reason.size(); ++i)
            if (!is_field_char(reason[i]))
                return fail(c.st, parse_error::bad_status_line, off + sp + 5 + i);
        r.status = code;
        r.reason = reason;
        return {};
    }

    // RFC 9112 §5: field-line = field-name ":" OWS field-value OWS.
    static parse_result field_line(ctx &c, std::string_view line, std::size_t off) noexcept {
        head_parser &st = c.st;
        std::size_t colon = 0;
        for (; colon < line.size() && line[colon] != ':'; ++colon) {
            const char ch = line[colon];
            if (is_token_char(ch))
                continue;
            // §5.1: "No whitespace is allowed between the field name and
            // colon ... MUST reject ... with 400".
            return fail(
                st, is_ows(ch) ? parse_error::header_name_whitespace : parse_error::bad_header_name,
                off + colon);
        }
        if (colon == line.size() || colon == 0)
            return fail(st, parse_error::bad_header_name, off + colon);
        const std::string_view raw = line.substr(colon + 1);
        // §5.5: field-value = *field-content: VCHAR, obs-text, SP, HTAB. NUL,
        // CR, LF and the other CTLs are rejected (RFC 9110 §5.5 MUST).
        for (std::size_t i = 0; i < raw.size(); ++i)
            if (!is_field_char(raw[i]))
                return fail(st, parse_error::bad_header_value, off + colon + 1 + i);
        const header h{line.substr(0, colon), trim_ows(raw)};
        c.storage[st.nfields_++] = h;
        const std::size_t value_off = static_cast<std::size_t>(h.value.data() - c.buf.data());
        return special_field(c, h, off, value_off);
    }

    // The fields that frame the message or decide the connection's fate.
    static parse_result special_field(ctx &c, const header &h, std::size_t line_off,
                                      std::size_t value_off) noexcept {
        head_parser &st = c.st;
        const std::string_view n = h.name;
        switch (n.size()) {
            case 4:  // RFC 9110 §7.2, RFC 9112 §3.2
                if (c.is_request && iequals(n, "host")) {
                    if (++st.hosts_ > 1)
                        return fail(st, parse_error::multiple_host, line_off);
                    if (const std::size_t bad = check_authority(h.value, false, false);
                        bad != ok_pos)
                        return fail(st, parse_error::bad_host, value_off + bad);
                    c.req->has_host = true;
                    c.req->host = h.value;
                }
                break;
            case 6:  // RFC 9110 §10.1.1
                if (c.is_request && iequals(n, "expect")) {
                    // Expect = #expectation; only 100-continue is defined, and
                    // an HTTP/1.0 one MUST be ignored.
                    for_each_list_element(h.value, [&](std::string_view e) {
                        if (iequals(e, "100-continue")) {
                            if (c.req->version_minor >= 1)
                                c.req->expect_continue = true;
                        } else if (!e.empty()) {
                            c.req->expect_other = true;
                        }
                        return true;
                    });
                }
                break;
            case 7:
                if (iequals(n, "upgrade"))
                    st.upgrade_field_ = true;
                break;
            case 10:  // RFC 9110 §7.6.1
                if (iequals(n, "connection")) {
                    for_each_list_element(h.value, [&](std::string_view o) {
                        if (o.empty())
                            return true;
                        if (iequals(o, "close"))
                            st.conn_ |= connection_option::close;
                        else if (iequals(o, "keep-alive"))
                            st.conn_ |= connection_option::keep_alive;
                        else if (iequals(o, "upgrade"))
                            st.conn_ |= connection_option::upgrade;
                        else
                            st.conn_ |= connection_option::other;
                        return true;
                    });
                }
                break;
            case 14:  // RFC 9110 §8.6, RFC 9112 §6.2-§6.3
                if (iequals(n, "content-length")) {
                    if (st.te_seen_)
                        return fail(st, parse_error::te_and_cl, line_off);
                    std::size_t bad = 0;
                    if (const parse_error e =
                            parse_content_length(h.value, st.cl_, st.cl_seen_, bad);
                        e != parse_error::none)
                        return fail(st, e, value_off + bad);
                    st.cl_seen_ = true;
                }
                break;
            case 17:  // RFC 9112 §6.1
                if (iequals(n, "transfer-encoding"))
                    return transfer_encoding(c, h, line_off, value_off);
                break;
            default:
                break;
        }
        return {};
    }

    static parse_result transfer_encoding(ctx &c, const header &h, std::size_t line_off,
                                          std::size_t value_off) noexcept {
        head_parser &st = c.st;
        if (st.cl_seen_)
            return fail(st, parse_error::te_and_cl, line_off);
        // RFC 9112 §6.1: "A server or client that receives an HTTP/1.0 message
        // containing a Transfer-Encoding header field MUST treat the message
        // as if the framing is faulty".
        if (version_minor(c) == 0)
            return fail(st, parse_error::te_in_http10, line_off);
        if (!st.te_seen_)
            st.te_offset_ = static_cast<uint32_t>(value_off);
        st.te_seen_ = true;
        parse_error err = parse_error::none;
        std::size_t bad = 0;
        for_each_list_element(h.value, [&](std::string_view coding) {
            if (coding.empty())
                return true;  // RFC 9110 §5.6.1: ignore empty elements
            bad = static_cast<std::size_t>(coding.data() - h.value.data());
            // transfer-coding = token *( OWS ";" OWS transfer-parameter ):
            // no registered coding has parameters, so ferry takes none.
            if (!is_token(coding)) {
                err = parse_error::bad_transfer_encoding;
                return false;
            }
            st.te_any_ = true;
            // chunked must be the last coding, and appear once (§6.1, §7).
            if (st.te_chunked_last_) {
                err = parse_error::bad_transfer_encoding;
                return false;
            }
            if (iequals(coding, "chunked")) {
                st.te_chunked_last_ = true;
            } else if (c.is_request && !known_coding(coding)) {
                err = parse_error::unknown_transfer_coding;  // §6.1 SHOULD 501
                return false;
            }
            return true;
        });
        if (err != parse_error::none)
            return fail(st, err, value_off + bad);
        return {};
    }

    // The empty line after the fields: decide framing (RFC 9112 §6.3) and
    // persistence (§9.3).
    static parse_result finish(ctx &c, std::size_t empty_line_off) noexcept {
        head_parser &st = c.st;
        const uint32_t consumed = st.scan_;
        if (st.te_seen_ && !st.te_any_)
            return fail(st, parse_error::bad_transfer_encoding, st.te_offset_);
        const std::span<header> fields = c.storage.first(st.nfields_);
        const bool close = (st.conn_ & connection_option::close) != 0;
        if (c.is_request) {
            request &r = *c.req;
            // RFC 9112 §3.2: MUST 400 an HTTP/1.1 request without Host.
            if (r.version_minor >= 1 && st.hosts_ == 0)
                return fail(st, parse_error::missing_host, empty_line_off);
            if (st.te_seen_) {
                // §6.3 item 4: chunked not final in a request: MUST 400.
                if (!st.te_chunked_last_)
                    return fail(st, parse_error::bad_transfer_encoding, st.te_offset_);
                r.body = body_kind::chunked;
            } else if (st.cl_seen_) {
                r.body = body_kind::content_length;  // §6.3 item 6
                r.content_length = st.cl_;
            } else {
                r.body = body_kind::none;  // §6.3 item 7
            }
            r.headers = fields;
            r.connection = st.conn_;
            r.keep_alive = r.version_minor >= 1
                               ? !close
                               : (st.conn_ & connection_option::keep_alive) != 0 && !close;
            r.upgrade = st.upgrade_field_ && (st.conn_ & connection_option::upgrade) != 0;
        } else {
            response &r = *c.resp;
            if (st.cl_seen_)
                r.content_length = st.cl_;
            const unsigned cls = r.status / 100;
            if (c.info.head || cls == 1 || r.status == 204 || r.status == 304)
                r.body = body_kind::none;  // §6.3 item 1
            else if (c.info.connect && cls == 2)
                r.body = body_kind::none;  // §6.3 item 2: the tunnel starts
            else if (st.te_seen_)
                r.body = st.te_chunked_last_ ? body_kind::chunked : body_kind::until_close;
            else if (st.cl_seen_)
                r.body = body_kind::content_length;
            else
                r.body = body_kind::until_close;  // §6.3 item 8
            r.headers = fields;
            r.connection = st.conn_;
            r.keep_alive =
                r.body != body_kind::until_close &&
                (r.version_minor >= 1 ? !close
                                      : (st.conn_ & connection_option::keep_alive) != 0 && !close);
            r.upgrade = st.upgrade_field_ && (st.conn_ & connection_option::upgrade) != 0;
        }
        st.ph_ = head_parser::phase::done;
        st.result_ = {parse_result::status::done, consumed, parse_error::none, 0};
        return st.result_;
    }
};

parse_result parse_request(head_parser &st, std::string_view buf, request &out,
                           std::span<header> storage, const limits &lim) noexcept {
    head_engine::ctx c{st, buf, true, {}, &out, nullptr, storage, lim};
    return head_engine::run(c);
}

parse_result parse_response(head_parser &st, std::string_view buf, request_info req, response &out,
                            std::span<header> storage, const limits &lim) noexcept {
    head_engine::ctx c{st, buf, false, req, nullptr, &out, storage, lim};
    return head_engine::run(c);
}

}  // namespace ferry::http
