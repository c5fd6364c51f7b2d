"""IPv6, the first layer (issue 18 item 3, docs/OPERATIONS.md "What a growing
counter means"): ferry on 2 lcores with `address6 = "fd00:77::1/64"` on its tap
port; the kernel side gets fd00:77::2/64. The kernel's own neighbour discovery
finds ferry (its Neighbor Solicitation to ff02::1:ff00:1 is answered with
ferry's MAC) and `ping -6` gets every reply; the counters say so; a port
without address6 keeps dropping IPv6 as an unknown EtherType. Addresses from
fd00::/8 (unique local) only, in a namespace the test creates and deletes."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (TAP_IFACE, Ferry, Netns, check, require_root,  # noqa: E402
                     tap_port_toml, wait_for)

OURS6, PEER6 = "fd00:77::1", "fd00:77::2"


def config(address6):
    port = tap_port_toml()
    if address6:
        # ICMPv6 errors: 1 a second, 3 at once, per lcore (RFC 4443 §2.4(f)).
        port += (f'address6 = "{address6}/64"\n'
                 'icmp6_errors_per_s = 1\nicmp6_error_burst = 3\n')
    return port


UDP_BURST = """
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
t = time.monotonic()
for port in range(20000, 20020):
    s.sendto(b"x", (sys.argv[1], port))
print(time.monotonic() - t)
"""


def peer_ipv6(ns):
    """The tap's kernel side gets PEER6 (the testbed turns IPv6 off in its
    namespaces to keep other tests' counters quiet: on again for this one)."""
    ns.run(["sysctl", "-qw", f"net.ipv6.conf.{TAP_IFACE}.disable_ipv6=0"])
    ns.run(["ip", "-6", "addr", "add", f"{PEER6}/64", "dev", TAP_IFACE, "nodad"])


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config(OURS6)) as f:
        peer_ipv6(ns)
        mac = f.port()["mac"].lower()
        check(f.telemetry("/ferry/config/ports")["tap0"]["address6"] == f"{OURS6}/64",
              "/ferry/config/ports shows address6")
        r = ns.run(["ping", "-6", "-c", "20", "-i", "0.05", "-W", "2", OURS6], check=False)
        print(r.stdout)
        check("20 packets transmitted, 20 received" in r.stdout, "ping -6 -c 20: 20 replies")
        neigh = ns.run(["ip", "-6", "neigh", "show", OURS6]).stdout
        check(mac in neigh.lower(),
              f"the kernel's neighbour cache has ferry's MAC for {OURS6}: {neigh.strip()}")
        p = f.port()
        shown = {k: p[k] for k in ("ipv6_rx", "nd_rx", "nd_advertised", "icmpv6_echo_replied",
                                   "ipv6_drop_malformed", "nd_drop_invalid",
                                   "icmpv6_drop_bad_checksum")}
        print("counters:", shown)
        check(p["nd_advertised"] >= 1 and p["icmpv6_echo_replied"] >= 20,
              f"a solicitation answered and 20 echo replies counted: {shown}")
        check(p["nd_dad_sent"] >= 1 and p["nd_conflict"] == 0,
              f"duplicate address detection probed {OURS6} at start, no conflict "
              f"({p['nd_dad_sent']}, {p['nd_conflict']})")
        check(p["nd_drop_invalid"] == 0 and p["icmpv6_drop_bad_checksum"] == 0
              and p["ipv6_drop_malformed"] == 0,
              f"nothing the kernel sent was malformed: {shown}")
        # Fragments (RFC 8200 §4.5): a route MTU of 1280 makes the kernel cut
        # a 1448-byte echo request in two; ferry puts it together and answers
        # in one 1488-byte frame (its MTU is 1500). A 2048-byte request is
        # put together too, but its reply would need fragments ferry does not
        # send: no reply, counted.
        ns.run(["ip", "-6", "route", "add", f"{OURS6}/128", "dev", TAP_IFACE, "mtu", "1280"])
        before = f.port()
        r = ns.run(["ping", "-6", "-c", "5", "-i", "0.05", "-W", "2", "-s", "1400", OURS6],
                   check=False)
        print(r.stdout)
        check("5 packets transmitted, 5 received" in r.stdout,
              "ping -6 -s 1400 over a 1280-byte route MTU: 5 replies")
        r = ns.run(["ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "-s", "2000", OURS6],
                   check=False)
        check(" 0 received" in r.stdout, "ping -6 -s 2000: no reply (it would need fragments)")
        p = f.port()
        grew = {k: p[k] - before[k] for k in ("ipv6_frag_rx", "ipv6_frag_reassembled",
                                              "icmpv6_drop_oversize")}
        print("fragments:", grew)
        check(grew["ipv6_frag_rx"] == 5 * 2 + 2 * 2 and grew["ipv6_frag_reassembled"] == 7
              and grew["icmpv6_drop_oversize"] == 2,
              f"14 fragments in, 7 datagrams reassembled, 2 replies too large: {grew}")
        drops = {k: v for k, v in p.items() if k.startswith("ipv6_frag_drop") and v}
        check(not drops, f"no fragment dropped: {drops}")
        # 20 UDP datagrams (ferry has no UDP: each asks for a Parameter
        # Problem, RFC 8200 §4) at once: the configured bucket lets 3 per
        # lcore out plus 1 a second, and counts the rest.
        ports = f.telemetry("/ferry/config/ports")["tap0"]
        check(ports["icmp6_errors_per_s"] == 1 and ports["icmp6_error_burst"] == 3,
              f"/ferry/config/ports shows the ICMPv6 error rate: {ports}")
        before = f.port()
        r = ns.run(["python3", "-c", UDP_BURST, OURS6])
        took = float(r.stdout.strip())
        p = wait_for(f.port, lambda q: q["icmpv6_param_problem_sent"]
                     + q["icmpv6_error_rate_limited"] - before["icmpv6_param_problem_sent"]
                     - before["icmpv6_error_rate_limited"] >= 20, timeout=10)
        sent = p["icmpv6_param_problem_sent"] - before["icmpv6_param_problem_sent"]
        limited = p["icmpv6_error_rate_limited"] - before["icmpv6_error_rate_limited"]
        most = 2 * (3 + int(took) + 1)
        check(sent + limited == 20 and 3 <= sent <= most,
              f"20 datagrams: {sent} errors sent (3..{most} in {took:.3f} s), {limited} "
              "rate-limited")
        # IPv4 on the same port still works.
        r = ns.run(["ping", "-c", "3", "-i", "0.05", "-W", "2", "10.77.0.1"], check=False)
        check("3 packets transmitted, 3 received" in r.stdout, "IPv4 ping beside it")
    with Netns() as ns, Ferry(ns, lcores="0", config=config(None)) as f:
        peer_ipv6(ns)
        r = ns.run(["ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", OURS6], check=False)
        check(r.returncode != 0, "without address6 ferry does not answer ping -6")
        p = f.port()
        check(p["ipv6_rx"] == 0 and p["nd_advertised"] == 0
              and p["eth_drop_unknown_ethertype"] + p["eth_drop_multicast"] >= 1,
              f"... and drops IPv6 as before: {p['eth_drop_unknown_ethertype']} unknown "
              f"EtherType, {p['eth_drop_multicast']} multicast")
    print("PASS")


if __name__ == "__main__":
    main()
