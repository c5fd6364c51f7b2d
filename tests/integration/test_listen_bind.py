"""Listeners bound to one port (issue 19, item 9): ferry on 2 lcores with two
net_tap ports, tap0 (10.77.0.1, the public side) and tap1 (10.78.0.1, the
origin-facing side), both in this test's namespace. Listener "public" (port
8080) is bound with `on = "tap0"`, listener "inside" (port 9090) with
`address = "10.78.0.1"`. Each answers on its own port (404: no upstream) and
its port number is closed on the other one (the SYN gets a RST, curl says
000). Before, every listener listened on every port: a proxy for the
internet also listened on its origin-facing network.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, Ferry, Netns, check, log_events, require_root,  # noqa: E402
                     status_of)

INSIDE_ADDR = "10.78.0.1"
INSIDE_PEER = "10.78.0.2"

CONFIG = f"""
[[listener]]
name = "public"
port = 8080
on = "tap0"

[[listener]]
name = "inside"
port = 9090
address = "{INSIDE_ADDR}"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "{FERRY_ADDR}/24"

[[port]]
name = "tap1"
profile = "net_tap"
iface = "ferry1"
address = "{INSIDE_ADDR}/24"
"""


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=CONFIG) as f:
        ns.run(["ip", "addr", "add", f"{INSIDE_PEER}/24", "dev", "ferry1"])
        ns.run(["ip", "link", "set", "ferry1", "up"])

        def code(addr, port):
            return status_of(ns, f"http://{addr}:{port}/", "--connect-timeout", "5", timeout=20)

        check(code(FERRY_ADDR, 8080) == "404", "listener 'public' answers on tap0")
        check(code(INSIDE_ADDR, 9090) == "404", "listener 'inside' answers on tap1")
        check(code(INSIDE_ADDR, 8080) == "000", "port 8080 is closed on tap1 ('public' is on tap0)")
        check(code(FERRY_ADDR, 9090) == "000", "port 9090 is closed on tap0 ('inside' is on tap1)")
        # Item 8: every log line has time, level and lcore, EAL's too, and
        # the ready line lists the listeners and where they listen.
        prefix = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (INFO|NOTICE|WARN|ERROR|DEBUG) lcore=(\d+|-) "
        lines = [x for x in f.log_text().splitlines() if x.strip()]
        bare = [x for x in lines if not re.match(prefix, x)]
        check(not bare, f"every log line has time, level and lcore: {bare[:3]}")
        ready = [x for x in lines if "ferry.app: ready " in x]
        check(len(ready) == 1 and re.match(
            prefix + r"ferry\.app: ready ports=tap0@10\.77\.0\.1,tap1@10\.78\.0\.1 workers=2 "
            r"wakeup_mode=\S+ listeners=public:8080@tap0,inside:9090@tap1 config=\S+$", ready[0]),
              f"the ready line: {ready}")
        # Every line ferry writes itself (ferry.<area>) is an event in logfmt:
        # `<words> key=value ...`; log_events raises on any other.
        ours = {m.group(1) for m in (re.search(r" (ferry\.[a-z_]+): ", x) for x in lines) if m}
        check({"ferry.app", "ferry.port"} <= ours, f"areas seen: {sorted(ours)}")
        for area in ours:
            ev = log_events(f.log_text(), area)
            check(len(ev) == sum(f" {area}: " in x for x in lines),
                  f"{area}: all {len(ev)} lines are key=value events")
        started = [fl for _, _, w, fl in log_events(f.log_text(), "ferry.port") if w == "port started"]
        check([x["port"] for x in started] == ["tap0", "tap1"]
              and all(x["driver"] == "net_tap" and x["rx_interrupts"] == "yes" for x in started),
              f"each port's start is one event: {[x.get('port') for x in started]}")
        check(any(re.match(prefix + "EAL: ", x) for x in lines), "EAL's lines carry the prefix")
        # The tap PMD's expected complaints (rt-signals ferry holds, no multiq
        # qdisc, no rte_flow) are INFO with the reason, not WARN/ERROR.
        noise = [x for x in lines if "rt-signals" in x or "multiq" in x or "rte flow" in x]
        check(all(" INFO " in x and "(expected: " in x for x in noise),
              f"expected PMD lines are explained: {[x for x in noise if '(expected' not in x][:2]}")
        rsts = [f.port(p)["tcp_rst_no_flow"] for p in ("tap0", "tap1")]
        check(rsts[0] >= 1 and rsts[1] >= 1,
              f"each port answered the SYN to its closed port with a RST: {rsts}")
    print("test_listen_bind: all checks passed")


if __name__ == "__main__":
    main()
