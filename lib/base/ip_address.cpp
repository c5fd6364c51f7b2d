#include "ferry/base/ip_address.h"

namespace ferry {

std::size_t ip_address::format(std::span<char, text_max> out) const noexcept {
    if (is_v6()) return format_ipv6(b_, out);
    std::size_t n = 0;
    for (std::size_t i = 12; i < 16; ++i) {
        if (i != 12) out[n++] = '.';
        const unsigned v = b_[i];
        if (v >= 100) out[n++] = static_cast<char>('0' + v / 100);
        if (v >= 10) out[n++] = static_cast<char>('0' + v / 10 % 10);
        out[n++] = static_cast<char>('0' + v % 10);
    }
    return n;
}

std::size_t ip_address::format_endpoint(uint16_t port,
                                        std::span<char, endpoint_text_max> out) const noexcept {
    std::size_t n = 0;
    const bool v6 = is_v6();
    if (v6) out[n++] = '[';
    n += format(out.subspan(n).first<text_max>());
    if (v6) out[n++] = ']';
    out[n++] = ':';
    char digits[5];
    std::size_t k = 0;
    do {
        digits[k++] = static_cast<char>('0' + port % 10);
        port = static_cast<uint16_t>(port / 10);
    } while (port != 0);
    while (k != 0) out[n++] = digits[--k];
    return n;
}

std::string ip_address::to_string() const {
    std::array<char, text_max> buf;
    return std::string(buf.data(), format(buf));
}

std::string ip_address::endpoint_string(uint16_t port) const {
    std::array<char, endpoint_text_max> buf;
    return std::string(buf.data(), format_endpoint(port, buf));
}

}  // namespace ferry
