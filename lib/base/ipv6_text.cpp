#include "ferry/base/ipv6_text.h"

#include <cstdio>

namespace ferry {
namespace {

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Groups "g:g:...:g" (1-4 hex digits each) into out; the count, or -1. An
// empty string is zero groups.
int parse_groups(std::string_view s, uint16_t *out, int max) noexcept {
    if (s.empty()) return 0;
    int n = 0;
    size_t i = 0;
    while (true) {
        if (n == max) return -1;
        unsigned v = 0, digits = 0;
        while (i < s.size() && s[i] != ':') {
            const int d = hex_digit(s[i]);
            if (d < 0 || ++digits > 4) return -1;
            v = v * 16 + static_cast<unsigned>(d);
            ++i;
        }
        if (digits == 0) return -1;  // an empty group (":::" or a stray ':')
        out[n++] = static_cast<uint16_t>(v);
        if (i == s.size()) return n;
        ++i;  // ':'
        if (i == s.size()) return -1;  // a trailing ':'
    }
}

void store16(uint8_t *p, uint16_t v) noexcept {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

}  // namespace

std::optional<ipv6_bytes> parse_ipv6(std::string_view s) noexcept {
    uint16_t head[8], tail[8];
    int nh, nt = 0;
    const size_t gap = s.find("::");
    if (gap == std::string_view::npos) {
        nh = parse_groups(s, head, 8);
        if (nh != 8) return std::nullopt;
    } else {
        if (s.find("::", gap + 1) != std::string_view::npos) return std::nullopt;
        nh = parse_groups(s.substr(0, gap), head, 7);
        nt = parse_groups(s.substr(gap + 2), tail, 7);
        // "::" stands for at least one zero group.
        if (nh < 0 || nt < 0 || nh + nt > 7) return std::nullopt;
    }
    ipv6_bytes b{};
    for (int i = 0; i < nh; ++i) store16(b.data() + 2 * i, head[i]);
    for (int i = 0; i < nt; ++i) store16(b.data() + 2 * (8 - nt + i), tail[i]);
    return b;
}

std::optional<std::pair<ipv6_bytes, uint8_t>> parse_ipv6_prefix(std::string_view s) noexcept {
    const size_t slash = s.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const auto a = parse_ipv6(s.substr(0, slash));
    const std::string_view len = s.substr(slash + 1);
    if (!a || len.empty() || len.size() > 3 || (len.size() > 1 && len[0] == '0'))
        return std::nullopt;
    unsigned v = 0;
    for (char c : len) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > 128) return std::nullopt;
    return std::pair{*a, static_cast<uint8_t>(v)};
}

std::size_t format_ipv6(const ipv6_bytes &a, std::span<char, ipv6_text_max> out) noexcept {
    uint16_t g[8];
    for (int i = 0; i < 8; ++i) g[i] = static_cast<uint16_t>(a[2 * i] << 8 | a[2 * i + 1]);
    // The longest run of zero groups, 2 or more, the first of equal ones.
    int best = -1, best_len = 1;
    for (int i = 0; i < 8;) {
        if (g[i] != 0) {
            ++i;
            continue;
        }
        int j = i;
        while (j < 8 && g[j] == 0) ++j;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j;
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::size_t n = 0;
    for (int i = 0; i < 8; ++i) {
        if (i == best) {
            out[n++] = ':';
            out[n++] = ':';
            i += best_len - 1;
            continue;
        }
        if (n != 0 && out[n - 1] != ':') out[n++] = ':';
        bool lead = true;
        for (int shift = 12; shift >= 0; shift -= 4) {
            const unsigned d = (g[i] >> shift) & 0xf;
            if (lead && d == 0 && shift != 0) continue;
            lead = false;
            out[n++] = hex[d];
        }
    }
    return n;  // at most 8 * 4 + 7 = 39
}

std::string format_ipv6(const ipv6_bytes &a) {
    std::array<char, ipv6_text_max> buf;
    return std::string(buf.data(), format_ipv6(a, buf));
}

}  // namespace ferry
