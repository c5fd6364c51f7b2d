// Exponentially distributed gaps (arrivals from independent clients) from a
// fixed LCG: the same numbers every run. For the adaptive policy's tests.
#pragma once

#include <cmath>
#include <cstdint>

namespace ferry::reactor::test {

struct exp_gaps {
    uint64_t state = 12345;
    uint64_t mean_ns;
    uint64_t next() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double((state >> 11) & ((1ull << 53) - 1)) + 0.5) / double(1ull << 53);
        return static_cast<uint64_t>(-std::log(u) * double(mean_ns));
    }
};

}  // namespace ferry::reactor::test
