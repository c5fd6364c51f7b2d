// ferry's memory bound (docs/OPERATIONS.md "Memory"): everything ferry
// allocates is allocated at start-up, sized by the configuration, so the most
// it can ever hold is known once it is ready. memory_plan adds up what it
// allocated; the bound is that plus a fixed allowance for what is not counted
// piece by piece (thread stacks, the allocator's own overhead, log buffers).
#pragma once

#include <cstdint>

#include "ferry/telemetry/view.h"

namespace ferry::app {

struct app_state;

// Bytes allocated from DPDK's heap on every socket (mbuf pools, rings, queues).
uint64_t dpdk_heap_bytes() noexcept;

// The plan of a ready process: base_rss is the resident size measured right
// after EAL initialisation (the program, its libraries, DPDK's own state),
// before ferry allocated anything.
telemetry::memory_plan plan_memory(const app_state &app, uint64_t base_rss,
                                   uint64_t dpdk_heap_at_base) noexcept;

}  // namespace ferry::app
