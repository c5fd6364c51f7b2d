// Character classes and small text helpers shared by the parser, the body
// framer and the serializer (private to lib/http).
//
//   tchar       RFC 9110 §5.6.2: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
//               "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
//   field char  RFC 9110 §5.5: field-vchar (VCHAR / obs-text) / SP / HTAB
//   target char the bytes ferry accepts in a request-target: VCHAR except "#" (RFC 9112 §3.2:
//               a fragment is never sent). "%" is checked separately (pct-encoded, RFC 3986 §2.1).
//   reg-name    RFC 3986 §3.2.2: unreserved / sub-delims ("%" separately)
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ferry::http::detail {

inline constexpr uint8_t c_token = 0x01;
inline constexpr uint8_t c_field = 0x02;
inline constexpr uint8_t c_target = 0x04;
inline constexpr uint8_t c_hex = 0x08;
inline constexpr uint8_t c_digit = 0x10;
inline constexpr uint8_t c_regname = 0x20;
inline constexpr uint8_t c_alpha = 0x40;

consteval std::array<uint8_t, 256> make_char_table() {
    std::array<uint8_t, 256> t{};
    for (int c = 0; c < 256; ++c) {
        uint8_t v = 0;
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        const bool digit = c >= '0' && c <= '9';
        if (alpha)
            v |= c_alpha;
        if (digit)
            v |= c_digit;
        if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
            v |= c_hex;
        if (alpha || digit)
            v |= c_token | c_regname;
        // One row per character set.
        // clang-format off
        switch (c) {
            case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
            case '-': case '.': case '^': case '_': case '`': case '|': case '~':
                v |= c_token;
                break;
            default:
                break;
        }
        switch (c) {  // unreserved and sub-delims besides ALPHA / DIGIT
            case '-': case '.': case '_': case '~': case '!': case '$': case '&': case '\'':
            case '(': case ')': case '*': case '+': case ',': case ';': case '=':
                v |= c_regname;
                break;
            default:
                break;
        }
        // clang-format on
        if ((c >= 0x21 && c <= 0x7e) || c >= 0x80 || c == ' ' || c == '\t')
            v |= c_field;
        if (c >= 0x21 && c <= 0x7e && c != '#')
            v |= c_target;
        t[static_cast<std::size_t>(c)] = v;
    }
    return t;
}

inline constexpr std::array<uint8_t, 256> char_table = make_char_table();

[[nodiscard]] constexpr bool has_class(char c, uint8_t cls) noexcept {
    return (char_table[static_cast<uint8_t>(c)] & cls) != 0;
}
[[nodiscard]] constexpr bool is_token_char(char c) noexcept {
    return has_class(c, c_token);
}
[[nodiscard]] constexpr bool is_field_char(char c) noexcept {
    return has_class(c, c_field);
}
[[nodiscard]] constexpr bool is_digit(char c) noexcept {
    return has_class(c, c_digit);
}
[[nodiscard]] constexpr bool is_hex(char c) noexcept {
    return has_class(c, c_hex);
}
// OWS = *( SP / HTAB ) (RFC 9110 §5.6.3).
[[nodiscard]] constexpr bool is_ows(char c) noexcept {
    return c == ' ' || c == '\t';
}

[[nodiscard]] constexpr unsigned hex_value(char c) noexcept {
    return c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>((c | 0x20) - 'a' + 10);
}

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
}

// ASCII case-insensitive equality (field names RFC 9110 §5.1, tokens such as
// transfer codings §7.8 / RFC 9112 §7 and connection options RFC 9110 §7.6.1).
// `lower` must already be lower case.
[[nodiscard]] constexpr bool iequals(std::string_view s, std::string_view lower) noexcept {
    if (s.size() != lower.size())
        return false;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (ascii_lower(s[i]) != lower[i])
            return false;
    return true;
}

// The same when neither side is known to be lower case (an operator's names).
[[nodiscard]] constexpr bool iequals_any(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    return true;
}

[[nodiscard]] constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty())
        return false;
    for (char c : s)
        if (!is_token_char(c))
            return false;
    return true;
}

[[nodiscard]] constexpr std::string_view trim_ows(std::string_view v) noexcept {
    while (!v.empty() && is_ows(v.front()))
        v.remove_prefix(1);
    while (!v.empty() && is_ows(v.back()))
        v.remove_suffix(1);
    return v;
}

// Iterates the elements of a comma-separated list (RFC 9110 §5.6.1), each with
// its OWS trimmed. Empty elements are passed as empty views: callers decide
// (the RFC says a recipient MUST accept and ignore "a reasonable number" of
// them, Content-Length does not allow them). f returns false to stop; returns
// false iff f did.
template <class F>
constexpr bool for_each_list_element(std::string_view v, F &&f) {
    while (true) {
        const std::size_t comma = v.find(',');
        if (!f(trim_ows(v.substr(0, comma))))
            return false;
        if (comma == std::string_view::npos)
            return true;
        v.remove_prefix(comma + 1);
    }
}

// True if the comma-separated list `v` holds the token `lower` (case-insensitive).
[[nodiscard]] constexpr bool list_has_token(std::string_view v, std::string_view lower) noexcept {
    bool found = false;
    for_each_list_element(v, [&](std::string_view e) {
        found = iequals(e, lower);
        return !found;
    });
    return found;
}

}  // namespace ferry::http::detail
