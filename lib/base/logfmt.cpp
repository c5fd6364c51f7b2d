#include "ferry/base/logfmt.h"

#include <cstdio>

namespace ferry {

std::string logfmt::quote(std::string_view v) {
    bool bare = !v.empty();
    for (const char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
            bare = false;
            break;
        }
    }
    if (bare) return std::string(v);
    std::string out = "\"";
    for (const char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < ' ' || c == 0x7f) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += ch;
        }
    }
    out += '"';
    return out;
}

logfmt &logfmt::kv(std::string_view key, std::string_view value) {
    s_ += ' ';
    s_ += key;
    s_ += '=';
    s_ += quote(value);
    return *this;
}

logfmt &logfmt::kv_uint(std::string_view key, unsigned long long value) {
    return kv(key, std::string_view(std::to_string(value)));
}

logfmt &logfmt::kv(std::string_view key, double value, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return kv(key, std::string_view(buf));
}

}  // namespace ferry
