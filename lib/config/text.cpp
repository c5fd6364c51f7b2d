#include "text.h"

#include <algorithm>
#include <vector>

namespace ferry::config::detail {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// Reads exactly `digits` hex digits at s[pos..]; -1 if any is not a hex digit.
int hex_field(std::string_view s, size_t pos, size_t digits) {
    int v = 0;
    for (size_t i = 0; i < digits; ++i) {
        int d = hex_value(s[pos + i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<uint32_t> parse_ipv4(std::string_view s) {
    uint32_t addr = 0;
    size_t pos = 0;
    for (int octet = 0; octet < 4; ++octet) {
        if (octet > 0) {
            if (pos >= s.size() || s[pos] != '.')
                return std::nullopt;
            ++pos;
        }
        size_t start = pos;
        uint32_t v = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 3)
            v = v * 10 + static_cast<uint32_t>(s[pos++] - '0');
        size_t len = pos - start;
        if (len == 0 || v > 255 || (len > 1 && s[start] == '0'))
            return std::nullopt;
        addr = addr << 8 | v;
    }
    if (pos != s.size())
        return std::nullopt;
    return addr;
}

namespace {

// A port: 1..65535, 1..5 decimal digits without leading zeros.
std::optional<uint16_t> parse_port(std::string_view ps) {
    if (ps.empty() || ps.size() > 5 || ps[0] == '0')
        return std::nullopt;
    uint32_t port = 0;
    for (char c : ps) {
        if (c < '0' || c > '9')
            return std::nullopt;
        port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (port > 65535)
        return std::nullopt;
    return static_cast<uint16_t>(port);
}

}  // namespace

std::optional<std::pair<uint32_t, uint16_t>> parse_ipv4_port(std::string_view s) {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    const auto ip = parse_ipv4(s.substr(0, colon));
    const auto port = parse_port(s.substr(colon + 1));
    if (!ip || !port)
        return std::nullopt;
    return std::pair{*ip, *port};
}

std::optional<std::pair<ip_address, uint16_t>> parse_endpoint(std::string_view s) {
    if (s.empty() || s[0] != '[') {
        const auto ep = parse_ipv4_port(s);
        if (!ep) return std::nullopt;
        return std::pair{ip_address::v4(ep->first), ep->second};
    }
    const size_t close = s.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    const auto a = parse_ipv6(s.substr(1, close - 1));
    const auto port = parse_port(s.substr(close + 2));
    if (!a || !port) return std::nullopt;
    return std::pair{ip_address::v6(*a), *port};
}

std::optional<std::string_view> unusable_host_reason6(const ipv6_bytes &a) {
    const ip_address ip = ip_address::v6(a);
    if (ip.is_v4()) return "an IPv4-mapped address: write the IPv4 address";
    if (a[0] == 0xff) return "ff00::/8 is multicast";
    bool zero = true;
    for (size_t i = 0; i < 15; ++i) zero = zero && a[i] == 0;
    if (zero && a[15] == 0) return ":: is unspecified";
    if (zero && a[15] == 1) return "::1 is loopback";
    return std::nullopt;
}

std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view s) {
    if (s.size() != 17)
        return std::nullopt;
    std::array<uint8_t, 6> mac{};
    for (size_t i = 0; i < 6; ++i) {
        if (i > 0 && s[i * 3 - 1] != ':')
            return std::nullopt;
        int v = hex_field(s, i * 3, 2);
        if (v < 0)
            return std::nullopt;
        mac[i] = static_cast<uint8_t>(v);
    }
    return mac;
}

bool is_pci_address(std::string_view s) {
    // dddd:bb:dd.f
    // 0123456789AB
    if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
        return false;
    if (hex_field(s, 0, 4) < 0 || hex_field(s, 5, 2) < 0)
        return false;
    int dev = hex_field(s, 8, 2);
    int fn = hex_field(s, 11, 1);
    return dev >= 0 && dev <= 0x1f && fn >= 0 && fn <= 7;
}

bool is_lower_name(std::string_view s, size_t max_len) {
    if (s.empty() || s.size() > max_len)
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

bool is_iface_name(std::string_view s) {
    if (s.empty() || s.size() > 15 || s == "." || s == "..")
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
    });
}

bool is_host_name(std::string_view s) {
    if (s.empty() || s.size() > 253)
        return false;
    size_t label = 0;
    for (char c : s) {
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok || ++label > 63)
            return false;
    }
    return label != 0;
}

bool is_simple_token(std::string_view s, size_t max_len) {
    if (s.empty() || s.size() > max_len)
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
    });
}

bool is_visible_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

uint32_t prefix_mask(uint8_t prefix_len) {
    return prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
}

std::optional<std::string_view> unusable_host_reason(uint32_t addr) {
    uint32_t first = addr >> 24;
    if (first == 0)
        return "0.0.0.0/8 is 'this network'";
    if (first == 127)
        return "127.0.0.0/8 is loopback";
    if (first >= 224 && first < 240)
        return "224.0.0.0/4 is multicast";
    if (first >= 240)
        return "240.0.0.0/4 is reserved";
    return std::nullopt;
}

std::string_view nearest(std::string_view word, std::span<const std::string_view> candidates) {
    std::string_view best;
    size_t best_d = 3;
    for (std::string_view c : candidates) {
        size_t d = edit_distance(word, c);
        if (d < best_d && d < word.size()) {
            best = c;
            best_d = d;
        }
    }
    return best;
}

std::string join_alternatives(std::span<const std::string_view> items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += i + 1 == items.size() ? " or " : ", ";
        out += items[i];
    }
    return out;
}

}  // namespace ferry::config::detail
