"""ferry-ctl (issue 19, docs/OPERATIONS.md "ferry-ctl"): the tables a person
reads, from a running ferry's telemetry socket. ferry on 2 lcores (net_tap),
upstream "py" with the Python origin on 9000 and nothing on 9001.

(a) status: version, workers, the port, HTTP totals, servers up/down.
(b) upstreams: one line per server with its health and admin state.
(c) lcores: one line per worker; config: listeners and upstreams.
(d) server py/0 drain: set, shown; a refused state: exit 1 and the reason.
(e) --json gives the JSON as read; a ferry that is not there: exit 1 with the
    socket's path; a usage error: exit 2.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     proxy_toml, require_root, status_of, tap_port_toml, wait_for)

CTL = os.path.join(os.path.dirname(__file__), "..", "..", "app", "ferry-ctl", "ferry-ctl")

CONFIG = proxy_toml([f"{PEER_ADDR}:9000", f"{PEER_ADDR}:9001"],
                    upstream_options='max_fails = 1\nwhen_all_down = "refuse"\n') + tap_port_toml()


def ctl(*args):
    r = subprocess.run([sys.executable, CTL, *args], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def line_with(text, *words):
    return next((ln for ln in text.splitlines() if all(w in ln.split() for w in words)), None)


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=CONFIG) as f, \
            PyOrigin(ns, PEER_ADDR, 9000):
        p = ["--prefix", f.prefix]
        # Requests until 9001 (refusing) is marked down and 9000 has served.
        codes = [status_of(ns, f"http://{FERRY_ADDR}:8080/x") for _ in range(6)]
        up = wait_for(lambda: f.telemetry("/ferry/upstreams"),
                      lambda u: u["py/1"]["state"] == "down" and u["py/0"]["requests"] > 0)
        check(up["py/1"]["state"] == "down", f"py/1 marked down ({codes})")

        rc, out, err = ctl(*p, "status")
        print(out)
        check(rc == 0 and out.startswith("ferry ") and "workers 2" in out, "(a) status: version, workers")
        check(line_with(out, "tap0", "net_tap") is not None, "(a) status: the port's line")
        check("http: " in out and "upstream servers: 2, 1 up; down: py/1" in out,
              "(a) status: HTTP totals, servers up and down")

        rc, out, err = ctl(*p, "upstreams")
        print(out)
        check(rc == 0 and out.split()[:4] == ["SERVER", "ADDRESS", "STATE", "ADMIN"],
              "(b) upstreams: the header")
        check(line_with(out, "py/0", f"{PEER_ADDR}:9000", "up", "ready") is not None
              and line_with(out, "py/1", f"{PEER_ADDR}:9001", "down", "ready") is not None,
              "(b) upstreams: a line per server, health and admin state")

        rc, out, err = ctl(*p, "lcores")
        print(out)
        check(rc == 0 and line_with(out, "0", "adaptive") is not None
              and line_with(out, "1", "adaptive") is not None and len(out.splitlines()) == 3,
              "(c) lcores: one line per worker")
        rc, out, err = ctl(*p, "config")
        check(rc == 0 and line_with(out, "web", "8080") is not None
              and line_with(out, "py", "round_robin") is not None, "(c) config: listeners, upstreams")

        rc, out, err = ctl(*p, "server", "py/0", "drain")
        print(out)
        check(rc == 0 and line_with(out, "py/0", "drain") is not None, "(d) server py/0 drain: set")
        rc, out, err = ctl(*p, "upstreams")
        check(line_with(out, "py/0", "up", "drain") is not None, "(d) upstreams shows it drained")
        rc, out, err = ctl(*p, "server", "py/0", "nap")
        check(rc == 1 and "unknown server state" in err and "allowed" in err,
              f"(d) a refused state: exit 1, {err.strip()!r}")

        rc, out, err = ctl(*p, "--json", "upstreams")
        check(rc == 0 and json.loads(out)["py/0"]["admin"] == "drain", "(e) --json: the JSON read")
        rc, out, err = ctl("--prefix", "ferry-ctl-nobody", "status")
        check(rc == 1 and "/var/run/dpdk/ferry-ctl-nobody/dpdk_telemetry.v2" in err,
              f"(e) nobody there: exit 1, {err.strip()!r}")
        rc, out, err = ctl(*p, "lcores", "extra")
        check(rc == 2, "(e) a usage error: exit 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
