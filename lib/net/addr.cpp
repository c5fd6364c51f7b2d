#include "ferry/net/addr.h"

#include <cstdio>

namespace ferry::net {

namespace {

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

}  // namespace

std::optional<mac_addr> mac_addr::parse(std::string_view s) noexcept {
    // "xx:xx:xx:xx:xx:xx" is exactly 17 characters.
    if (s.size() != 3 * size - 1) {
        return std::nullopt;
    }
    std::array<uint8_t, size> b{};
    for (std::size_t i = 0; i < size; ++i) {
        const std::size_t at = 3 * i;
        const int hi = hex_digit(s[at]);
        const int lo = hex_digit(s[at + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        if (i + 1 < size && s[at + 2] != ':') {
            return std::nullopt;
        }
        b[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return mac_addr(b);
}

std::string mac_addr::to_string() const {
    char buf[3 * size];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b_[0], b_[1], b_[2], b_[3],
                  b_[4], b_[5]);
    return std::string(buf);
}

std::optional<ipv4_addr> ipv4_addr::parse(std::string_view s) noexcept {
    uint32_t v = 0;
    std::size_t pos = 0;
    for (int octet = 0; octet < 4; ++octet) {
        if (octet > 0) {
            if (pos >= s.size() || s[pos] != '.') {
                return std::nullopt;
            }
            ++pos;
        }
        const std::size_t start = pos;
        uint32_t n = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 3) {
            n = n * 10 + static_cast<uint32_t>(s[pos] - '0');
            ++pos;
        }
        const std::size_t digits = pos - start;
        if (digits == 0 || n > 255 || (digits > 1 && s[start] == '0')) {
            return std::nullopt;
        }
        v = v << 8 | n;
    }
    if (pos != s.size()) {
        return std::nullopt;
    }
    return ipv4_addr(v);
}

std::string ipv4_addr::to_string() const {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", v_ >> 24, (v_ >> 16) & 0xff, (v_ >> 8) & 0xff,
                  v_ & 0xff);
    return std::string(buf);
}

}  // namespace ferry::net
