#pragma once

#define FERRY_LIKELY(x) __builtin_expect(!!(x), 1)
#define FERRY_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace ferry {
// Destructive-interference size: fields another core writes live on their own line.
inline constexpr unsigned cache_line = 64;
}  // namespace ferry
