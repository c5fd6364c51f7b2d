// How many heap allocations (operator new) the calling thread has made: the
// exporter counts those of its scrapes with it (ferry_exporter_scrape_allocations_total),
// so that "a scrape allocates nothing" is a number a test reads, not a claim.
// alloc_count.cpp replaces the global operator new and delete (malloc and free
// underneath, plus one thread-local increment); it is linked into a program
// that calls thread_allocations().
#pragma once

#include <cstdint>

namespace ferry {

[[nodiscard]] uint64_t thread_allocations() noexcept;

}  // namespace ferry
