"""Readiness and the drain grace (issue 19, docs/OPERATIONS.md "Stopping"): ferry
on 2 lcores (net_tap) with [admin] metrics_address and [http] drain_grace_ms =
2000, the Python origin on the tap's kernel side.

Before SIGTERM /healthz answers 200 "ok". A request that takes 8 s is in flight
when SIGTERM comes. From then on /healthz answers 503 "draining" (counted as
healthz_draining); during the grace, new connections are still accepted and
served (drain_grace_accepted); after it, new connections are refused while the
slow request drains, and /healthz still says draining; the slow request
completes with 200; ferry exits 0.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     require_root, status_of, wait_for)

PY_PORT = 9000
METRICS = "127.0.0.1:9180"
GRACE_MS = 2000
# The request in flight at SIGTERM: it must outlast the grace and the checks
# after it (a refused connection may take its 2 s connect timeout to say so).
SLOW_MS = 8000

CONFIG = f"""
[admin]
metrics_address = "{METRICS}"

[http]
drain_grace_ms = {GRACE_MS}
drain_timeout_ms = 8000

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[upstream]]
name = "py"
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "{FERRY_ADDR}/24"
"""


def healthz(ns):
    """(status, body) of GET /healthz on the admin listener."""
    r = ns.run(["curl", "-s", "-i", "--max-time", "10", f"http://{METRICS}/healthz"],
               check=False, timeout=20)
    # Text mode turns CRLF into LF; the body holds no CR.
    head, _, body = r.stdout.partition("\n\n")
    m = re.match(r"HTTP/1\.1 (\d{3}) ", head)
    return (int(m.group(1)) if m else None), body


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=CONFIG) as f, \
            PyOrigin(ns, PEER_ADDR, PY_PORT):
        base = f"http://{FERRY_ADDR}:8080"
        check(status_of(ns, f"{base}/hello") == "200", "a request before SIGTERM")
        st, body = healthz(ns)
        check(st == 200 and body == "ok\n", f"/healthz before SIGTERM: 200 ok ({st}, {body!r})")
        slow = ns.popen(["curl", "-s", "-o", "-", "-w", " %{http_code}", "--max-time", "30",
                         f"{base}/delay/{SLOW_MS}"], stdout=subprocess.PIPE, text=True)
        # The slow request is out to the origin: ferry counted it.
        wait_for(lambda: f.telemetry("/ferry/http")["sum"]["requests"], lambda n: n >= 2)
        t0 = time.monotonic()
        f.proc.send_signal(signal.SIGTERM)
        st, body = wait_for(lambda: healthz(ns), lambda v: v[0] == 503, timeout=5)
        check(st == 503 and body == "draining\n",
              f"/healthz right after SIGTERM: 503 draining ({st}, {body!r})")
        served = 0
        while time.monotonic() - t0 < GRACE_MS / 1000 - 0.7:
            code = status_of(ns, f"{base}/hello?grace={served}", "-H", "Connection: close",
                             timeout=10)
            check(code == "200", f"a new connection during the grace is served ({code})")
            served += 1
            time.sleep(0.2)
        check(served >= 2, f"{served} new connections served during the {GRACE_MS} ms grace")
        h = f.telemetry("/ferry/http")["sum"]
        check(h["drain_grace_accepted"] >= served,
              f"drain_grace_accepted {h['drain_grace_accepted']} >= {served}")
        # Past the grace: the drain refuses new connections; the slow request holds it.
        code = wait_for(lambda: status_of(ns, f"{base}/hello?late", "-H", "Connection: close",
                                          "--connect-timeout", "2", timeout=10),
                        lambda c: c == "000", timeout=10, interval=0.2)
        check(code == "000", f"a new connection after the grace is refused ({code})")
        st, body = healthz(ns)
        check(st == 503 and body == "draining\n",
              f"/healthz while the slow request drains: 503 draining ({st}, {body!r})")
        x = f.telemetry("/ferry/exporter")
        check(x["healthz_draining"] >= 2, f"/ferry/exporter healthz_draining {x['healthz_draining']}")
        out, _ = slow.communicate(timeout=30)
        check(out.endswith(" 200") and out.startswith("delayed"),
              f"the request in flight at SIGTERM completed: {out!r}")
        f.proc.wait(timeout=20)
        f.exit_code = f.proc.returncode
        check(f.exit_code == 0, f"ferry exited 0 ({f.exit_code})")


if __name__ == "__main__":
    main()
