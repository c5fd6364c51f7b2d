// ferry's /ferry/* commands on DPDK's telemetry socket (docs/OPERATIONS.md
// "Telemetry"): versions, config, ports, net, tcp, lcores, http, upstreams,
// rings, exporter, and the writable wakeup_mode and idle_threshold_us.
//
// The commands read the process_view published last (view.h). DPDK calls
// them on its telemetry thread, which never runs a worker, and offers no way
// to unregister a command: before the app frees what the view points to it
// withdraws the view (publish(nullptr)); commands then answer an error.
#pragma once

#include "ferry/telemetry/view.h"

namespace ferry::telemetry {

// Makes `v` (nullptr: none) what the commands read. Returns once no command
// reads the previous view any more, so the caller may free it then.
// Thread-safe; `v` must stay valid until the next publish().
void publish(const process_view *v) noexcept;

// Registers every /ferry/* command with DPDK (once per process, before or
// after publish()). Returns how many DPDK refused (each is logged).
unsigned register_commands() noexcept;

}  // namespace ferry::telemetry
