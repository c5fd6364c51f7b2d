// ferry's commands on DPDK's telemetry socket (/var/run/dpdk/<prefix>/dpdk_telemetry.v2;
// `dpdk-telemetry.py -f <prefix>` works unchanged).
//
// The building blocks of ferry's commands (commands.h): registration under
// /ferry/ and counter blocks described by ferry::counter_field lists.
// Callbacks run on DPDK's telemetry thread, never on a worker; they read
// per-lcore counters with relaxed atomic loads (ferry/base/counter.h), so a
// read never stalls or races a worker.
//
// DPDK 22.11 limits that shape every command's output: one level of container
// nesting, 256 entries per dict, 512 per array, 16 KiB of JSON per reply,
// command names of at most 56 characters from [A-Za-z0-9_/] starting with '/'.
#pragma once

#include <rte_telemetry.h>

#include <cstdint>
#include <span>

#include "ferry/base/counter.h"

namespace ferry::telemetry {

// DPDK's callback type: returns 0 or a negative errno; `params` is the text
// after the first comma of the request (nullptr or "" when absent).
using handler = telemetry_cb;

// Registers `cmd` (must start with "/ferry/"). Returns false when DPDK
// refuses it (bad name, table full, telemetry disabled); the caller logs.
[[nodiscard]] bool register_command(const char *cmd, handler fn, const char *help) noexcept;

// Adds every counter of `block` to the started dict `d` under its X-macro name.
// `fields` is any range of counter_field<S> (the X-macro's array).
template <class S, class Fields>
void add_counters(rte_tel_data *d, const S &block, const Fields &fields) {
    for (const auto &f : fields) rte_tel_data_add_dict_u64(d, f.name, (block.*(f.member)).get());
}

// Adds the counters as a nested dict named `name` under the started dict `d`.
// Returns false when the container could not be allocated.
template <class S, class Fields>
bool add_counter_dict(rte_tel_data *d, const char *name, const S &block, const Fields &fields) {
    rte_tel_data *c = rte_tel_data_alloc();
    if (c == nullptr) return false;
    rte_tel_data_start_dict(c);
    add_counters(c, block, fields);
    return rte_tel_data_add_dict_container(d, name, c, 0) == 0;
}

// Sums the counter `f` over `blocks` (e.g. one block per lcore).
template <class S>
uint64_t sum(std::span<const S *const> blocks, counter S::*member) {
    uint64_t total = 0;
    for (const S *b : blocks)
        if (b != nullptr) total += (b->*member).get();
    return total;
}

}  // namespace ferry::telemetry
