"""ferry on net_af_packet (a veth inside the test namespace): the profile
brings the port up with one queue pair per lcore, ping is answered, and since
af_packet has no rx interrupts the lcores never sleep and say so."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, Ferry, Netns, check, require_root  # noqa: E402

CONFIG = """\
[ferry]
wakeup_mode = "conditional"

[[port]]
name = "veth0"
profile = "net_af_packet"
iface = "fpa0"
address = "10.77.0.1/24"
mbufs = 16384
"""


def main():
    require_root()
    with Netns("a") as ns:
        # ferry takes fpa0 with af_packet; the kernel keeps fpa1 with the peer address.
        ns.run(["ip", "link", "add", "fpa0", "type", "veth", "peer", "name", "fpa1"])
        ns.run(["ip", "link", "set", "fpa0", "up"])
        with Ferry(ns, lcores="0-1", config=CONFIG, peer_iface="fpa1") as f:
            port = f.port("veth0")
            check(port["driver"] == "net_af_packet", f"driver is net_af_packet ({port['driver']})")
            check(port["queues"] == 2 and port["cap_rx_interrupts"] == 0,
                  "2 queue pairs, no rx interrupts")
            r = ns.run(["ping", "-c", "10", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
            print(r.stdout)
            check("10 packets transmitted, 10 received" in r.stdout, "ping over af_packet: 10 replies")
            time.sleep(0.5)
            lc = f.telemetry("/ferry/lcores")
            for name, v in lc.items():
                check(v["can_sleep"] == 0 and v["mode"] == "poll" and v["sleeps"] == 0,
                      f"{name}: polls (af_packet has no rx interrupts), never slept")
            check(f.port("veth0")["icmp_echo_replied"] >= 10, "echo replies counted")
            check(f.stop() == 0, "exit 0 on SIGTERM")
    print("test_af_packet: all checks passed")


if __name__ == "__main__":
    main()
