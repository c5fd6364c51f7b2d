"""Runtime server state (issue 19, docs/OPERATIONS.md "Server state at run
time"): ferry on 2 lcores (net_tap), upstream "py" of two Python origins
(ports 9000 and 9001) balanced round robin, a third request path /whoami that
answers with the origin's port.

(a) Both ready: requests go to both.
(b) /ferry/server,py/0,drain: every request goes to 9001, on both lcores;
    /ferry/server and /ferry/upstreams say admin drain; the log says
      server state set upstream=py server=10.77.0.2:9000 state=drain was=ready
    maint likewise; ready again: both serve.
(c) weight=3 on py/1 (by its address): 3 of every 4 requests go to it.
(d) Both drained: 503 at once, even with when_all_down = "try" (the operator
    said no), and ferry keeps serving when one is ready again.
(e) Refused settings answer an error and the allowed values, and change
    nothing: an unknown server, an unknown state, a weight out of range.
(f) The changes are counted (admin_changes) and exported
    (ferry_upstream_server_ready, ferry_upstream_admin_changes_total).
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     curl, log_events, proxy_toml, require_root, status_of, tap_port_toml,
                     wait_for)

PORTS = (9000, 9001)

CONFIG = ('[admin]\nmetrics_address = "127.0.0.1:9180"\n\n'
          + proxy_toml([f"{PEER_ADDR}:{p}" for p in PORTS],
                       upstream_options='balance = "round_robin"\nwhen_all_down = "try"\n')
          + tap_port_toml())


def served_by(ns, n):
    """n requests on fresh connections (spread over the lcores); the ports
    that answered, counted."""
    c = collections.Counter()
    for _ in range(n):
        r = curl(ns, "-w", " %{http_code}", f"http://{FERRY_ADDR}:8080/whoami")
        body, _, code = r.stdout.strip().rpartition(" ")
        c[int(body) if code == "200" and body.isdigit() else code] += 1
    return c


def main():
    require_root()
    with Netns() as ns:
        with Ferry(ns, lcores="0-1", config=CONFIG) as f, \
                PyOrigin(ns, PEER_ADDR, PORTS[0]), PyOrigin(ns, PEER_ADDR, PORTS[1]):
            c = served_by(ns, 8)
            print(f"  both ready: {dict(c)}")
            check(c[PORTS[0]] > 0 and c[PORTS[1]] > 0 and sum(c.values()) == 8,
                  "(a) both servers answer")
            all_servers = f.telemetry("/ferry/server")
            check(all_servers["py/0"]["admin"] == "ready" and all_servers["py/1"]["admin"] == "ready",
                  "/ferry/server lists both as ready")

            for state in ("drain", "maint"):
                r = f.telemetry(f"/ferry/server,py/0,{state}")
                check(r["py/0"]["admin"] == state, f"(b) /ferry/server,py/0,{state} answers {state}")
                c = served_by(ns, 8)
                print(f"  py/0 {state}: {dict(c)}")
                check(c == {PORTS[1]: 8}, f"(b) py/0 in {state}: every request to {PORTS[1]}")
                u = f.telemetry("/ferry/upstreams")["py/0"]
                check(u["admin"] == state and u["state"] == "up",
                      f"(b) /ferry/upstreams: admin {state}, not down")
            def changes(text):
                return [(fl["state"], fl["was"]) for lvl, _, w, fl
                        in log_events(text, "ferry.telemetry") if w == "server state set"
                        and lvl == "NOTICE" and fl["upstream"] == "py"
                        and fl["server"] == f"{PEER_ADDR}:{PORTS[0]}" and len(fl) == 4]
            got = changes(wait_for(f.log_text, lambda t: len(changes(t)) >= 2, timeout=5))
            check(got == [("drain", "ready"), ("maint", "drain")],
                  f"(b) each change logged, key=value: {got}")
            f.telemetry("/ferry/server,py/0,ready")
            c = served_by(ns, 8)
            check(c[PORTS[0]] > 0 and c[PORTS[1]] > 0, f"(b) ready again: both answer {dict(c)}")

            r = f.telemetry(f"/ferry/server,py/{PEER_ADDR}:{PORTS[1]},weight=3")
            check(r["py/1"]["weight"] == 3 and r["py/1"]["config_weight"] == 1,
                  "(c) weight=3 by address: weight 3, configured 1")
            # Smooth weighted round robin per lcore: on each, any run of
            # picks is within one of 3 in 4; two lcores, within two.
            c = served_by(ns, 32)
            print(f"  py/1 weight 3: {dict(c)}")
            check(22 <= c[PORTS[1]] <= 26 and c[PORTS[0]] + c[PORTS[1]] == 32,
                  "(c) 3 of every 4 requests to py/1 (+-1 per lcore)")
            f.telemetry("/ferry/server,py/1,weight=1")
            w = [fl for _, _, wh, fl in log_events(f.log_text(), "ferry.telemetry")
                 if wh == "server weight set"]
            check([(x["server"], x["weight"], x["was"]) for x in w]
                  == [(f"{PEER_ADDR}:{PORTS[1]}", "3", "1"), (f"{PEER_ADDR}:{PORTS[1]}", "1", "3")],
                  f"(c) the weight changes logged: {w}")

            f.telemetry("/ferry/server,py/0,drain")
            f.telemetry("/ferry/server,py/1,drain")
            codes = [status_of(ns, f"http://{FERRY_ADDR}:8080/whoami") for _ in range(4)]
            check(codes == ["503"] * 4, f"(d) both drained: 503 despite when_all_down = try {codes}")
            f.telemetry("/ferry/server,py/1,ready")
            c = served_by(ns, 4)
            check(c == {PORTS[1]: 4}, f"(d) py/1 ready again serves {dict(c)}")

            before = f.telemetry("/ferry/server")
            for cmd, what in (("/ferry/server,py/7,drain", "no such server"),
                              ("/ferry/server,nope/0,drain", "no such server"),
                              ("/ferry/server,py/0,asleep", "unknown server state"),
                              ("/ferry/server,py/0,weight=0", "not a weight in range"),
                              ("/ferry/server,py/0,weight=x", "not a weight in range")):
                r = f.telemetry(cmd)
                check(isinstance(r, dict) and what in r.get("error", "") and r.get("allowed"),
                      f"(e) {cmd}: {r.get('error')!r}, allowed {r.get('allowed')!r}")
            check(f.telemetry("/ferry/server") == before, "(e) refused settings changed nothing")

            s = f.telemetry("/ferry/server")
            # py/0: drain, maint, ready, drain; py/1: weight 3, weight 1, drain, ready.
            check(s["py/0"]["admin_changes"] == 4 and s["py/1"]["admin_changes"] == 4,
                  f"(f) changes counted: {s['py/0']['admin_changes']}, {s['py/1']['admin_changes']}")
            body = ns.run(["curl", "-s", "--max-time", "20", "http://127.0.0.1:9180/metrics"],
                          check=False, timeout=30).stdout
            s0 = f'upstream="py",server="{PEER_ADDR}:{PORTS[0]}"'
            s1 = f'upstream="py",server="{PEER_ADDR}:{PORTS[1]}"'
            for line in (f"ferry_upstream_server_ready{{{s0}}} 0",
                         f"ferry_upstream_server_ready{{{s1}}} 1",
                         f"ferry_upstream_admin_changes_total{{{s0}}} 4",
                         f"ferry_upstream_server_weight{{{s1}}} 1"):
                check(line in body.splitlines(), f"(f) /metrics: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
