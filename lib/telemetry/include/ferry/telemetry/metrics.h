// Every counter /ferry/* shows, in Prometheus's text exposition format 0.0.4
// (names and labels in docs/OPERATIONS.md "Metrics"). The exporter
// (exporter.h) serves it as GET /metrics.
#pragma once

#include <string>
#include <string_view>

#include "ferry/telemetry/view.h"

namespace ferry::telemetry {

// Renders every metric of `v`. Any thread, while `v` is valid (view.h).
[[nodiscard]] std::string render_metrics(const process_view &v);
// The same into `out`, which is cleared first and keeps its capacity: the
// exporter passes the same string every scrape, and a scrape after the first
// allocates nothing (lists of blocks are kept per thread; labels are views
// written straight into `out`; /proc is read with read(2)).
void render_metrics(const process_view &v, std::string &out);

// Appends `text` to `out` with \ and LF escaped, and " too when `quote`:
// label values escape all three, HELP text only the first two (format 0.0.4).
void append_escaped(std::string &out, std::string_view text, bool quote);

}  // namespace ferry::telemetry
