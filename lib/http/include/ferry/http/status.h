// HTTP status codes and their reason phrases (RFC 9110 section 15), for the
// responses ferry generates itself (400, 413, 414, 431, 502, 503, 504, ...).
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::http {

// Returns the RFC 9110 reason phrase, or "" for an unregistered code (a status
// line may carry an empty reason, RFC 9112 section 4).
[[nodiscard]] std::string_view reason_phrase(uint16_t code) noexcept;

// RFC 9110 15: 1xx informational ... 5xx server error; 0 if out of 100..599.
[[nodiscard]] constexpr unsigned status_class(uint16_t code) noexcept {
    return code >= 100 && code <= 599 ? code / 100 : 0;
}

}  // namespace ferry::http
