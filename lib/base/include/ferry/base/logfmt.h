// key=value fields for log lines (logfmt, as Loki, Vector and `grep key=` read
// them): every event ferry logs is `<what happened> key=value key=value ...`
// (docs/OPERATIONS.md "Log lines"). A value is written bare when it holds no
// space, quote, '=' or control character, and in double quotes otherwise, with
// '"' and '\' escaped and control characters as \n, \t or \xHH.
// Control path only: it allocates.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

namespace ferry {

class logfmt {
public:
    // The line starts with the event's words: "server down".
    explicit logfmt(std::string_view what) : s_(what) {}

    logfmt &kv(std::string_view key, std::string_view value);
    logfmt &kv(std::string_view key, const char *value) { return kv(key, std::string_view(value)); }
    logfmt &kv(std::string_view key, const std::string &value) {
        return kv(key, std::string_view(value));
    }
    template <std::unsigned_integral T>
        requires(!std::same_as<T, bool> && !std::same_as<T, char>)
    logfmt &kv(std::string_view key, T value) {
        return kv_uint(key, static_cast<unsigned long long>(value));
    }
    // Fixed-point with `decimals` digits after the point ("1.5").
    logfmt &kv(std::string_view key, double value, int decimals);

    [[nodiscard]] const std::string &str() const noexcept { return s_; }
    [[nodiscard]] const char *c_str() const noexcept { return s_.c_str(); }

    // `value` as it is written after "key=".
    [[nodiscard]] static std::string quote(std::string_view value);

private:
    logfmt &kv_uint(std::string_view key, unsigned long long value);
    std::string s_;
};

}  // namespace ferry
