// Per-lcore event counters.
//
// A counter is written by exactly one thread (its lcore) and read by any other
// (the telemetry thread). The writer does a relaxed load + relaxed store, which
// compiles to a plain add on x86 (no lock prefix, no fence); the reader does a
// relaxed load. That makes the cross-thread read race-free in the C++ memory
// model without costing the data path anything.
//
// Counter blocks are plain structs built from an X-macro list that also yields
// the telemetry names and help text (Envoy's ALL_*_STATS pattern):
//
//   #define FERRY_FOO_COUNTERS(X) X(rx_frames, "frames received") ...
//   struct alignas(64) foo_counters { FERRY_FOO_COUNTERS(FERRY_COUNTER_MEMBER) };
//   #define FERRY_FOO_FIELD(n, h) FERRY_COUNTER_FIELD(foo_counters, n, h)
//   inline constexpr ferry::counter_field<foo_counters> foo_fields[] = {
//       FERRY_FOO_COUNTERS(FERRY_FOO_FIELD)};
#pragma once

#include <atomic>
#include <cstdint>

namespace ferry {

class counter {
public:
    // Owner thread only.
    void inc(uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    // Owner thread only: for gauges that also go down.
    void dec(uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    // Owner thread only.
    void set(uint64_t n) noexcept { v_.store(n, std::memory_order_relaxed); }
    // Any thread.
    [[nodiscard]] uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> v_{0};
};

static_assert(sizeof(counter) == sizeof(uint64_t));

// Describes one counter of a counter block S for telemetry export.
template <class S>
struct counter_field {
    const char *name;
    const char *help;
    counter S::*member;
};

}  // namespace ferry

#define FERRY_COUNTER_MEMBER(name, help) ::ferry::counter name;
#define FERRY_COUNTER_FIELD(S, name, help) ::ferry::counter_field<S>{#name, help, &S::name},
