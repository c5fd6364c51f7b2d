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
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, Ferry, Netns, check, require_root, status_of  # noqa: E402

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
        rsts = [f.port(p)["tcp_rst_no_flow"] for p in ("tap0", "tap1")]
        check(rsts[0] >= 1 and rsts[1] >= 1,
              f"each port answered the SYN to its closed port with a RST: {rsts}")
    print("test_listen_bind: all checks passed")


if __name__ == "__main__":
    main()
