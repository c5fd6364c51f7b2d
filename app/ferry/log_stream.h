// The stream rte_log writes to (issue 19, item 8): every line, ferry's and
// DPDK's alike, on stderr as
//   2026-12-05T03:10:00.123456Z INFO lcore=1 ferry.proxy: ...
// UTC time with microseconds, the message's level (rte_log_cur_msg_loglevel),
// and the EAL lcore that logged it ("-" for a thread that is not one: the
// main thread before EAL, the log writers). One write(2) per line, so lines
// of several threads never interleave.
#pragma once

namespace ferry::app {

// Installs the stream (rte_openlog_stream). Before rte_eal_init, so that EAL's
// and the PMDs' start-up lines have it too. False if it could not be made
// (rte_log then keeps its default, stderr without prefixes).
bool install_log_stream();

// One line in the same form from a signal handler (async-signal-safe: no
// stdio, no rte_log): `message` is "ferry.<area>: <event> key=value ...".
void log_from_signal_handler(int level, const char *message) noexcept;

}  // namespace ferry::app
