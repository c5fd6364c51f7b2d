"""Upstream health in the logs (issue 19, docs/OPERATIONS.md "Event log"): ferry
on 2 lcores (net_tap) with active health checks every 200 ms and an access log,
the Python origin on the tap's kernel side.

(a) With the origin up, 10+ probes: none failed, none reset (ferry's TCP sent no
    RST, upstream_aborted stays 0: a probe ends with a FIN, upstream_closed).
(b) The origin is killed: requests get 502 (connect refused) until the server is
    marked down, then 503; ferry's log says
      ferry.events: server down upstream=py server=10.77.0.2:9000 cause="connect refused" checks=3
    (or failures=3: whichever failed three times in a row first)
    once; the access log's lines say reason=upstream_connect_refused for the 502s
    and reason=no_healthy_server for the 503s.
(c) The origin comes back: the next passing probe logs
      ferry.events: server up upstream=py server=10.77.0.2:9000 down_seconds=<s>
    and requests are answered 200 again. /ferry/events counts the lines (none
    suppressed), /ferry/http the events the lcores handed over.
"""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     log_events, require_root, status_of, wait_for)

PY_PORT = 9000


def config(log):
    return f"""
[http]
access_log = "{log}"

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[upstream]]
name = "py"
retries = 0
max_fails = 3
fail_timeout_ms = 60000
when_all_down = "refuse"
health_check_path = "/health"
health_check_interval_ms = 200
health_check_timeout_ms = 500
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "{FERRY_ADDR}/24"
"""


SERVER = {"upstream": "py", "server": f"{PEER_ADDR}:{PY_PORT}"}


def events(text, what):
    """The `what` events ("server down") of the py server in ferry's log, each
    line parsed strictly as logfmt (a line in another form fails the test)."""
    return [(lvl, fields) for lvl, _, w, fields in log_events(text, "ferry.events")
            if w == what and all(fields.get(k) == v for k, v in SERVER.items())]


def main():
    require_root()
    with Netns() as ns, tempfile.TemporaryDirectory(prefix="ferry-health-log-") as tmp:
        log = os.path.join(tmp, "access.log")
        with Ferry(ns, lcores="0-1", config=config(log)) as f:
            base = f"http://{FERRY_ADDR}:8080"
            with PyOrigin(ns, PEER_ADDR, PY_PORT):
                check(status_of(ns, f"{base}/hello?id=first") == "200", "a request, origin up")

                def counts():
                    h = f.telemetry("/ferry/http")["sum"]
                    return h, f.telemetry("/ferry/tcp")["sum"]["resets_sent"]
                # From here on the origin answers: probes that ran before it
                # listened (ferry probes from start-up) are refused and not
                # what this checks. Every probe started before the baseline
                # has ended once as many closed as were started.
                h0, rst0 = wait_for(counts, lambda v: v[0]["upstream_closed"]
                                    + v[0]["health_check_failed"] >= v[0]["health_checks"])
                h, rst = wait_for(counts, lambda v: v[0]["health_checks"] >= h0["health_checks"] + 12
                                  and v[0]["upstream_closed"] + v[0]["health_check_failed"]
                                  >= v[0]["health_checks"], timeout=20)
                d = {k: h[k] - h0[k] for k in ("health_checks", "health_check_failed",
                                                "upstream_aborted", "upstream_closed")}
                print(f"  since the origin is up: probes {d['health_checks']} failed "
                      f"{d['health_check_failed']} upstream_aborted {d['upstream_aborted']} "
                      f"upstream_closed {d['upstream_closed']} resets_sent {rst - rst0}")
                check(d["health_checks"] >= 12 and d["health_check_failed"] == 0,
                      "12+ probes, none failed")
                check(d["upstream_aborted"] == 0 and rst == rst0,
                      "no probe reset (upstream_aborted 0, resets_sent 0)")
                check(d["upstream_closed"] >= d["health_checks"],
                      f"probes closed with a FIN (upstream_closed {d['upstream_closed']})")
            # The origin is gone (killed by its pid).
            codes = []
            for i in range(10):
                codes.append(status_of(ns, f"{base}/hello?id=dead{i}", timeout=10))
                time.sleep(0.1)
            print(f"  answers with the origin dead: {codes}")
            check(set(codes) <= {"502", "503"} and codes[0] == "502" and codes[-1] == "503",
                  "502 (refused) until marked down, then 503")
            text = wait_for(f.log_text, lambda t: events(t, "server down"), timeout=5)
            downs = events(text, "server down")
            print("  " + "\n  ".join(x for x in text.splitlines() if "ferry.events" in x))
            # checks=3 (3 probes in a row) or failures=3 (3 requests), whichever
            # came first.
            check(len(downs) == 1 and downs[0][0] == "WARN"
                  and downs[0][1]["cause"] == "connect refused"
                  and downs[0][1].get("checks", downs[0][1].get("failures")) == "3"
                  and len(downs[0][1]) == 4,
                  f"one down line (WARN, cause=\"connect refused\", 3 in a row): {downs}")
            u = f.telemetry("/ferry/upstreams")["py/0"]
            check(u["state"] == "down", f"/ferry/upstreams: down ({u['state']})")
            # More failing probes: no more lines.
            n0 = f.telemetry("/ferry/http")["sum"]["health_check_failed"]
            wait_for(lambda: f.telemetry("/ferry/http")["sum"]["health_check_failed"],
                     lambda n: n >= n0 + 4)
            check(len(events(f.log_text(), "server down")) == 1, "a server that stays dead: one line")
            with PyOrigin(ns, PEER_ADDR, PY_PORT):
                text = wait_for(f.log_text, lambda t: events(t, "server up"), timeout=10)
                ups = events(text, "server up")
                check(len(ups) == 1 and ups[0][0] == "NOTICE"
                      and re.fullmatch(r"\d+\.\d", ups[0][1].get("down_seconds", "")),
                      f"one up line (NOTICE, down_seconds=<s>): {ups}")
                check(status_of(ns, f"{base}/hello?id=back") == "200", "served again")
                ev = f.telemetry("/ferry/events")
                hs = f.telemetry("/ferry/http")["sum"]
                print(f"  /ferry/events {ev}; events_written {hs['events_written']} "
                      f"dropped {hs['events_dropped']}")
                check(ev["lines"] >= 2 and ev["suppressed"] == 0 and ev["server_down"] == 1
                      and ev["server_up"] == 1, "/ferry/events: lines, none suppressed")
                check(hs["events_written"] == 2 and hs["events_dropped"] == 0,
                      "events_written 2, none dropped")
        check(f.exit_code == 0, f"ferry exited 0 ({f.exit_code})")
        with open(log) as fh:
            lines = fh.read().splitlines()
        dead = [x for x in lines if "id=dead" in x]
        check(len(dead) == 10, f"10 access-log lines of the dead phase ({len(dead)})")
        for x in dead:
            st = x.split('" ')[1].split(" ")[0]
            want = {"502": "reason=upstream_connect_refused",
                    "503": "reason=no_healthy_server"}[st]
            check(x.endswith(want), f"{st}: {want} ({x[-60:]})")
        ok = [x for x in lines if "id=first" in x or "id=back" in x]
        check(len(ok) == 2 and all(x.endswith(" reason=-") for x in ok), "200 lines: reason=-")



if __name__ == "__main__":
    main()
