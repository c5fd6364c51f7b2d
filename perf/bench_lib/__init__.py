"""Modules of perf/bench: the proxy benchmark harness (see perf/README.md).

  util     running commands, processes we own (ended by pid), cleanup
  topo     the three network namespaces, the veth pairs, the origin nginx
  systems  the systems under test: direct, haproxy, nginx proxy, ferry
  measure  wrk (exact percentiles through a Lua done() hook) and the
           /proc, /proc/interrupts and telemetry counters around a run
  report   medians, ratios, the markdown tables and the JSON document
"""
