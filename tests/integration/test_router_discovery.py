"""Router discovery (RFC 4861 §6.3, issue 18 item 3): ferry on 2 lcores with
`address6 = "fd00:77::1/64"` and no gateway6 proxies to origin.py. The
namespace's kernel plays the router: IPv6 and forwarding on for the tap from
its birth (so the kernel listens to all-routers, ff02::2), a raw ICMPv6
socket that catches ferry's Router Solicitation at start (from fd00:77::1,
hop limit 255, ferry's MAC in a source link-layer address option), and
Router Advertisements written by this test from the tap's link-local
address (the kernel sends none of its own: that is radvd's job).

A client on another prefix (fd00:78::5, also on the kernel side) gets no
answer before the advertisement (ferry has no route: ipv6_drop_no_route);
after one with a lifetime of 300 s, 8 connections from it (spread over both
lcores: the router is shared between them) are answered 200 with
X-Forwarded-For fd00:78::5; an advertisement with lifetime 0 takes the router
away and the client is unanswered again. Unique local and link-local
addresses only, in a namespace the test creates and deletes."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (PEER_ADDR, TAP_IFACE, Ferry, Netns, PyOrigin, check, curl,  # noqa: E402
                     proxy_toml, require_root, tap_port_toml, wait_for)

OURS6, PEER6, FAR6 = "fd00:77::1", "fd00:77::2", "fd00:78::5"
PY_PORT = 9000

# Prints "ready", then the first Router Solicitation seen within 20 s as
# "<source> <hop limit> <message hex>", or "none".
RS_LISTENER = r"""
import select, socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
print("ready", flush=True)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if not select.select([s], [], [], 0.5)[0]:
        continue
    data, anc, _, src = s.recvmsg(2048, socket.CMSG_SPACE(4))
    if data and data[0] == 133:
        hop = next((int.from_bytes(d, sys.byteorder) for lvl, t, d in anc
                    if t == socket.IPV6_HOPLIMIT), -1)
        print(src[0], hop, data.hex(), flush=True)
        sys.exit(0)
print("none", flush=True)
"""

# Sends a Router Advertisement (argv: interface, router lifetime in seconds)
# to all nodes from the interface's link-local address, hop limit 255, with
# its MAC in a source link-layer address option. The kernel fills in the
# ICMPv6 checksum.
RA_SENDER = r"""
import socket, struct, sys
iface, lifetime = sys.argv[1], int(sys.argv[2])
mac = bytes.fromhex(open(f"/sys/class/net/{iface}/address").read().strip().replace(":", ""))
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
idx = socket.if_nametoindex(iface)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
msg = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, lifetime, 0, 0) + bytes([1, 1]) + mac
s.sendto(msg, ("ff02::1", 0, 0, idx))
"""


def main():
    require_root()
    cfg = (proxy_toml([f"{PEER_ADDR}:{PY_PORT}"]) + tap_port_toml()
           + f'address6 = "{OURS6}/64"\n')
    with Netns() as ns:
        # The tap is born with IPv6 (its link-local address at once, no DAD
        # wait) and as a router (it joins ff02::2).
        for key, v in (("disable_ipv6", 0), ("forwarding", 1), ("accept_dad", 0)):
            ns.run(["sysctl", "-qw", f"net.ipv6.conf.default.{key}={v}"])
        listener = ns.popen(["python3", "-c", RS_LISTENER], stdout=subprocess.PIPE, text=True)
        try:
            check(listener.stdout.readline().strip() == "ready", "the RS listener is up")
            with Ferry(ns, lcores="0-1", config=cfg) as f, PyOrigin(ns, PEER_ADDR, PY_PORT):
                seen = listener.stdout.readline().split()
                mac = f.port()["mac"].lower().replace(":", "")
                print(f"  Router Solicitation: {seen}")
                check(len(seen) == 3 and seen[0] == OURS6 and seen[1] == "255",
                      f"ferry solicited routers from {OURS6} with hop limit 255: {seen}")
                rs = seen[2] if len(seen) == 3 else ""
                check(rs[:4] == "8500" and rs[8:16] == "00000000" and rs[16:] == "0101" + mac,
                      f"type 133, code 0, a source link-layer option with ferry's MAC: {rs}")
                p = f.port()
                check(p["nd_rs_sent"] >= 1, f"nd_rs_sent {p['nd_rs_sent']}")

                ns.run(["ip", "-6", "addr", "add", f"{PEER6}/64", "dev", TAP_IFACE, "nodad"])
                ns.run(["ip", "-6", "addr", "add", f"{FAR6}/64", "dev", TAP_IFACE, "nodad"])

                def get_far(tag, timeout):
                    return curl(ns, "-g", "-6", "-i", "--interface", FAR6, "--connect-timeout",
                                str(timeout), f"http://[{OURS6}]:8080/hello?id={tag}",
                                timeout=30)

                before = f.port()["ipv6_drop_no_route"]
                r = get_far("before", 2)
                check(not r.stdout, f"no answer to {FAR6} without a router")
                check(f.port()["ipv6_drop_no_route"] > before, "counted as ipv6_drop_no_route")

                ns.run(["python3", "-c", RA_SENDER, TAP_IFACE, "300"])
                p = wait_for(f.port, lambda q: q["nd_router_added"] >= 2, timeout=10)
                print(f"  after the advertisement: nd_ra_rx {p['nd_ra_rx']}, nd_router_added "
                      f"{p['nd_router_added']}, nd_ra_drop_invalid {p['nd_ra_drop_invalid']}")
                check(p["nd_ra_rx"] >= 1 and p["nd_ra_drop_invalid"] == 0,
                      "the advertisement was taken")
                check(p["nd_router_added"] == 2,
                      f"both lcores have the router (one heard it, one was told): "
                      f"{p['nd_router_added']}")
                for i in range(8):
                    r = get_far(f"far{i}", 10)
                    check(r.stdout.startswith("HTTP/1.1 200")
                          and f"X-Forwarded-For: {FAR6}\n" in r.stdout,
                          f"GET {i} from {FAR6} through the router: {r.stdout[:15]!r}")
                tcp = f.telemetry("/ferry/tcp")
                owners = [v["conn_opened_passive"] for k, v in tcp.items() if k != "sum"]
                print(f"  connections per lcore: {owners}")

                ns.run(["python3", "-c", RA_SENDER, TAP_IFACE, "0"])
                p = wait_for(f.port, lambda q: q["nd_router_removed"] >= 2, timeout=10)
                check(p["nd_router_removed"] == 2,
                      f"lifetime 0: the router is gone on both lcores ({p['nd_router_removed']})")
                r = get_far("after", 2)
                check(not r.stdout, f"no answer to {FAR6} once the router is gone")
            check(f.exit_code == 0, f"ferry exited 0 (got {f.exit_code})")
        finally:
            if listener.poll() is None:
                listener.kill()
            listener.wait()
    print("PASS")


if __name__ == "__main__":
    main()
