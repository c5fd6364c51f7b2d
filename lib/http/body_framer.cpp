// Body delimiting (RFC 9112 §6.3) and the chunked coding (RFC 9112 §7.1),
// one byte-at-a-time state machine for the framing bytes and bulk skips over
// chunk-data, so a slice boundary may fall anywhere without buffering.
#include <algorithm>
#include <limits>

#include "chars.h"
#include "ferry/http/parser.h"

namespace ferry::http {

using namespace detail;

std::string_view name(body_framer::state s) noexcept {
    using st = body_framer::state;
    switch (s) {
        case st::size:
            return "size";
        case st::size_ws:
            return "size_ws";
        case st::ext_name_ws:
            return "ext_name_ws";
        case st::ext_name:
            return "ext_name";
        case st::ext_after_name:
            return "ext_after_name";
        case st::ext_value_ws:
            return "ext_value_ws";
        case st::ext_value:
            return "ext_value";
        case st::ext_quoted:
            return "ext_quoted";
        case st::ext_quoted_pair:
            return "ext_quoted_pair";
        case st::ext_quoted_end:
            return "ext_quoted_end";
        case st::ext_after_value:
            return "ext_after_value";
        case st::size_lf:
            return "size_lf";
        case st::data:
            return "data";
        case st::data_cr:
            return "data_cr";
        case st::data_lf:
            return "data_lf";
        case st::trailer_start:
            return "trailer_start";
        case st::trailer_name:
            return "trailer_name";
        case st::trailer_value:
            return "trailer_value";
        case st::trailer_lf:
            return "trailer_lf";
        case st::final_lf:
            return "final_lf";
        case st::done:
            return "done";
        case st::failed:
            return "failed";
    }
    return "unknown";
}

namespace {
constexpr uint64_t max_chunk = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}  // namespace

void body_framer::reset(body_kind kind, uint64_t content_length, const limits &lim) noexcept {
    kind_ = kind;
    err_ = parse_error::none;
    size_digits_ = 0;
    line_len_ = 0;
    trailer_len_ = 0;
    max_line_ = lim.max_chunk_size_line;
    max_trailer_ = lim.max_trailer_bytes;
    remaining_ = 0;
    payload_ = 0;
    wire_ = 0;
    trailer_fields_ = 0;
    chunk_out_ = false;
    switch (kind) {
        case body_kind::none:
            st_ = state::done;
            break;
        case body_kind::content_length:
            remaining_ = content_length;
            st_ = content_length == 0 ? state::done : state::data;
            break;
        case body_kind::chunked:
            st_ = state::size;
            break;
        case body_kind::until_close:
            st_ = state::data;
            break;
    }
}

body_framer::feed_result body_framer::fail(uint32_t at, parse_error e) noexcept {
    st_ = state::failed;
    err_ = e;
    wire_ += at;
    return {at, false, true, e};
}

uint32_t body_framer::take_payload(uint32_t len) noexcept {
    const uint32_t n = remaining_ < len ? static_cast<uint32_t>(remaining_) : len;
    remaining_ -= n;
    payload_ += n;
    wire_ += n;
    return n;
}

body_framer::feed_result body_framer::feed(std::string_view slice) noexcept {
    if (slice.size() > std::numeric_limits<uint32_t>::max())
        slice = slice.substr(0, std::numeric_limits<uint32_t>::max());
    if (st_ == state::done)
        return {0, true, false, parse_error::none};
    if (st_ == state::failed)
        return {0, false, true, err_};
    const auto len = static_cast<uint32_t>(slice.size());
    switch (kind_) {
        case body_kind::until_close:
            payload_ += len;
            wire_ += len;
            return {len, false, false, parse_error::none};
        case body_kind::content_length: {
            const uint32_t n = take_payload(len);
            if (remaining_ == 0)
                st_ = state::done;
            return {n, st_ == state::done, false, parse_error::none};
        }
        case body_kind::chunked:
            return feed_chunked(slice, false);
        case body_kind::none:
            break;
    }
    return {0, true, false, parse_error::none};
}

body_framer::feed_result body_framer::feed_run(std::string_view slice) noexcept {
    if (kind_ != body_kind::chunked || st_ == state::done || st_ == state::failed) {
        feed_result r = feed(slice);
        r.data = r.consumed != 0;
        return r;
    }
    if (st_ != state::data)
        return feed_chunked(slice, true);
    // chunk-data: payload up to the chunk's end.
    const uint32_t n = take_payload(static_cast<uint32_t>(
        std::min<size_t>(slice.size(), std::numeric_limits<uint32_t>::max())));
    if (remaining_ == 0)
        st_ = state::data_cr;
    feed_result r{n, false, false, parse_error::none};
    r.data = n != 0;
    return r;
}

// "[CRLF] size CRLF" for a chunk of `size` bytes (> 0), or the last chunk
// "[CRLF] 0 CRLF CRLF" for 0; the leading CRLF ends the previous chunk.
std::string_view body_framer::emit_size(uint64_t size) noexcept {
    const bool last = size == 0;
    char *p = out_;
    if (chunk_out_) {
        *p++ = '\r';
        *p++ = '\n';
    }
    char hex[16];
    int n = 0;
    do {
        hex[n++] = "0123456789abcdef"[size & 15];
        size >>= 4;
    } while (size != 0);
    while (n > 0) *p++ = hex[--n];
    *p++ = '\r';
    *p++ = '\n';
    if (last) {  // no trailer section
        *p++ = '\r';
        *p++ = '\n';
    }
    chunk_out_ = true;
    return {out_, static_cast<size_t>(p - out_)};
}

body_framer::feed_result body_framer::feed_chunked(std::string_view slice, bool runs) noexcept {
    const auto len = static_cast<uint32_t>(slice.size());
    uint32_t i = 0;
    while (i < len) {
        const char c = slice[i];
        // Every byte of a chunk-size line before its CR counts against
        // max_chunk_size_line, extensions included (the states up to
        // ext_after_value are the chunk-size line).
        if (st_ <= state::ext_after_value && c != '\r' && ++line_len_ > max_line_)
            return fail(i, parse_error::chunk_line_too_long);
        // Within the chunk-size line a LF is only ever bare (its CR moves to size_lf).
        if (st_ <= state::ext_after_value && c == '\n')
            return fail(i, parse_error::bare_lf);
        switch (st_) {
            // chunk-size = 1*HEXDIG, at most 2^63-1.
            case state::size:
                if (is_hex(c)) {
                    if (remaining_ > (max_chunk >> 4))
                        return fail(i, parse_error::bad_chunk_size);
                    remaining_ = (remaining_ << 4) | hex_value(c);
                    size_digits_ = 1;
                } else if (size_digits_ == 0) {
                    return fail(i, parse_error::bad_chunk_size);  // "", " 5", "-1", "+1"
                } else if (c == '\r') {
                    st_ = state::size_lf;
                } else if (c == ';') {
                    st_ = state::ext_name_ws;
                } else if (is_ows(c)) {
                    st_ = state::size_ws;
                } else {
                    return fail(i, parse_error::bad_chunk_size);  // "0x5", "5g"
                }
                break;
            // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ):
            // whitespace only where the grammar has BWS. "5 \r\n" and "5;a \r\n" are
            // rejected.
            case state::size_ws:
                if (c == ';')
                    st_ = state::ext_name_ws;
                else if (!is_ows(c))
                    return fail(i, parse_error::bad_chunk_size);
                break;
            case state::ext_name_ws:
                if (is_token_char(c))
                    st_ = state::ext_name;
                else if (!is_ows(c))
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            case state::ext_name:
                if (is_token_char(c))
                    break;
                if (c == '\r')
                    st_ = state::size_lf;
                else if (c == ';')
                    st_ = state::ext_name_ws;
                else if (c == '=')
                    st_ = state::ext_value_ws;
                else if (is_ows(c))
                    st_ = state::ext_after_name;
                else
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            case state::ext_after_name:
                if (c == ';')
                    st_ = state::ext_name_ws;
                else if (c == '=')
                    st_ = state::ext_value_ws;
                else if (!is_ows(c))
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            // chunk-ext-val = token / quoted-string (RFC 9110 §5.6.4)
            case state::ext_value_ws:
                if (is_token_char(c))
                    st_ = state::ext_value;
                else if (c == '"')
                    st_ = state::ext_quoted;
                else if (!is_ows(c))
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            case state::ext_value:
            case state::ext_quoted_end:
                if (is_token_char(c) && st_ == state::ext_value)
                    break;
                if (c == '\r')
                    st_ = state::size_lf;
                else if (c == ';')
                    st_ = state::ext_name_ws;
                else if (is_ows(c))
                    st_ = state::ext_after_value;
                else
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            case state::ext_quoted:
                // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
                if (c == '"')
                    st_ = state::ext_quoted_end;
                else if (c == '\\')
                    st_ = state::ext_quoted_pair;
                else if (!is_field_char(c))
                    return fail(i, parse_error::bad_chunk_extension);  // CR, NUL, other CTL
                break;
            case state::ext_quoted_pair:
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                if (!is_field_char(c))
                    return fail(i, parse_error::bad_chunk_extension);
                st_ = state::ext_quoted;
                break;
            case state::ext_after_value:
                if (c == ';')
                    st_ = state::ext_name_ws;
                else if (!is_ows(c))
                    return fail(i, parse_error::bad_chunk_extension);
                break;
            case state::size_lf:
                if (c != '\n')
                    return fail(i, parse_error::bare_cr);
                line_len_ = 0;
                size_digits_ = 0;
                // last-chunk = 1*("0") [ chunk-ext ] CRLF: the trailer section follows.
                st_ = remaining_ == 0 ? state::trailer_start : state::data;
                if (runs && st_ == state::data) {  // the framing run ends here
                    ++i;
                    wire_ += i;
                    feed_result r{i, false, false, parse_error::none};
                    r.out = emit_size(remaining_);
                    return r;
                }
                break;
            case state::data: {
                const uint32_t avail = len - i;
                const uint32_t n = remaining_ < avail ? static_cast<uint32_t>(remaining_) : avail;
                remaining_ -= n;
                payload_ += n;
                i += n;
                if (remaining_ == 0)
                    st_ = state::data_cr;
                continue;  // i already advanced
            }
            // chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
            case state::data_cr:
                if (c == '\r')
                    st_ = state::data_lf;
                else if (c == '\n')
                    return fail(i, parse_error::bare_lf);
                else
                    return fail(i, parse_error::bad_chunk_terminator);  // the size lied
                break;
            case state::data_lf:
                if (c != '\n')
                    return fail(i, parse_error::bare_cr);
                st_ = state::size;
                break;
            // trailer-section = *( field-line CRLF ) and the final CRLF (RFC 9112
            // §7.1.2), each line checked as a header field line (§5).
            case state::trailer_start:
            case state::trailer_name:
            case state::trailer_value:
            case state::trailer_lf:
            case state::final_lf:
                if (++trailer_len_ > max_trailer_)
                    return fail(i, parse_error::trailers_too_large);
                if (c == '\n' && st_ != state::trailer_lf && st_ != state::final_lf)
                    return fail(i, parse_error::bare_lf);
                switch (st_) {
                    case state::trailer_start:
                        if (c == '\r')
                            st_ = state::final_lf;
                        else if (is_ows(c))
                            return fail(i, parse_error::obs_fold);
                        else if (is_token_char(c)) {
                            st_ = state::trailer_name;
                            ++trailer_fields_;
                        }
                        else
                            return fail(i, parse_error::bad_header_name);
                        break;
                    case state::trailer_name:
                        if (c == ':')
                            st_ = state::trailer_value;
                        else if (is_ows(c))
                            return fail(i, parse_error::header_name_whitespace);
                        else if (!is_token_char(c))
                            return fail(i, parse_error::bad_header_name);  // CR: no colon
                        break;
                    case state::trailer_value:
                        if (c == '\r')
                            st_ = state::trailer_lf;
                        else if (!is_field_char(c))
                            return fail(i, parse_error::bad_header_value);
                        break;
                    case state::trailer_lf:
                        // A CR inside a value (not before LF) is a bad value, as in a head.
                        if (c != '\n')
                            return fail(i, parse_error::bad_header_value);
                        st_ = state::trailer_start;
                        break;
                    default:  // final_lf
                        if (c != '\n')
                            return fail(i, parse_error::bare_cr);
                        st_ = state::done;
                        ++i;
                        wire_ += i;
                        feed_result r{i, true, false, parse_error::none};
                        if (runs) r.out = emit_size(0);
                        return r;
                }
                break;
            case state::done:
            case state::failed:
                break;  // not reached: feed() returns before calling here
        }
        ++i;
    }
    wire_ += len;
    return {len, false, false, parse_error::none};
}

}  // namespace ferry::http
