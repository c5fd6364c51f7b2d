"""ferry on net_af_xdp (a veth inside the test namespace).

(a) The profile brings the port up with an AF_XDP socket on the veth's
    queue 0 (devargs start_queue=0,queue_count=1: the PMD allows one queue on
    a veth, which reports no channels). af_xdp has no rx interrupts, but a
    queue's socket is readable while its rx ring holds a frame: ferry finds
    the socket the rx queue setup opened and the lcore sleeps on it
    (cap_rx_wake_sockets, can_sleep); pings 50 ms apart wake it (wakeups_rx)
    and are answered. Before, the profile did not exist.

(b) TCP over it: 8 parallel echo connections of 256 KiB each and a 4 MiB
    download from the source service come back byte for byte (sha256), with
    no bad checksums; every connection closes.

Skipped (77) when the kernel has no AF_XDP sockets.
"""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (ECHO_PORT, ECHO_SOURCE_CLIENT_PY, FERRY_ADDR, SKIP,  # noqa: E402
                     SOURCE_PORT, Ferry, Netns, check, echo_source_toml, ethtool_set, log_events,
                     require_root, wait_for)

ECHO, SOURCE = ECHO_PORT, SOURCE_PORT
SOURCE_BYTES = 4 << 20
ECHO_BYTES = 256 << 10
CONNS = 8

CONFIG = echo_source_toml(SOURCE_BYTES) + """\
[[port]]
name = "xdp0"
profile = "net_af_xdp"
iface = "fxa0"
address = "10.77.0.1/24"
mbufs = 32768
"""


def af_xdp_supported():
    try:
        socket.socket(44, socket.SOCK_RAW).close()  # AF_XDP
        return True
    except OSError as e:
        print(f"SKIP: no AF_XDP sockets here ({e})")
        return False


def main():
    require_root()
    if not af_xdp_supported():
        return SKIP
    with Netns("x") as ns:
        ns.run(["ip", "link", "add", "fxa0", "type", "veth", "peer", "name", "fxa1"])
        ns.run(["ip", "link", "set", "fxa0", "up"])
        # `ethtool -K fxa1 tx off`: the veth peer would otherwise hand ferry TCP
        # frames with an unfilled checksum (the profile's caveats).
        ethtool_set(ns, "fxa1", tx=False)
        with Ferry(ns, lcores="0", config=CONFIG, peer_iface="fxa1") as f:
            # (a) the port, its sockets, sleeping lcores
            port = f.port("xdp0")
            check(port["driver"] == "net_af_xdp", f"driver is net_af_xdp ({port['driver']})")
            check(port["devargs"] == "iface=fxa0,start_queue=0,queue_count=1",
                  f"one socket on queue 0 ({port['devargs']})")
            check(port["queues"] == 1 and port["cap_rx_interrupts"] == 0,
                  "1 queue pair, no rx interrupts")
            check(port["cap_rx_wake_sockets"] == 1,
                  "but the lcore can sleep on the queue's AF_XDP socket")
            sl = [fl for _, _, w, fl in log_events(f.log_text(), "ferry.app")
                  if w == "lcores sleep on sockets"]
            check(len(sl) == 1 and sl[0]["port"] == "xdp0" and sl[0]["sockets"] == "AF_XDP",
                  f"the start-up log says so: {sl}")
            slept = wait_for(lambda: f.telemetry("/ferry/lcores"),
                             lambda lc: all(v["state"] == "asleep" for v in lc.values()))
            check(all(v["can_sleep"] == 1 for v in slept.values()), "every lcore can sleep")
            check(all(v["state"] == "asleep" for v in slept.values()), "idle lcores sleep")
            rx_before = sum(v["wakeups_rx"] for v in slept.values())
            r = ns.run(["ping", "-c", "10", "-i", "0.05", "-W", "2", "10.77.0.1"], check=False)
            print(r.stdout)
            check("10 packets transmitted, 10 received" in r.stdout, "ping over af_xdp: 10 replies")
            rx_woken = sum(v["wakeups_rx"] for v in f.telemetry("/ferry/lcores").values())
            check(rx_woken - rx_before >= 5,
                  f"the pings woke sleeping lcores through their sockets ({rx_woken - rx_before})")

            # (b) TCP both ways
            r = ns.run([sys.executable, "-c", ECHO_SOURCE_CLIENT_PY, "10.77.0.1", str(ECHO), str(SOURCE),
                        str(ECHO_BYTES), str(CONNS), str(SOURCE_BYTES)], check=False, timeout=120)
            print(r.stdout)
            check(f"echo_ok={CONNS} errors=[]" in r.stdout,
                  f"{CONNS} echo connections of {ECHO_BYTES >> 10} KiB came back intact")
            check(f"source_bytes={SOURCE_BYTES}" in r.stdout,
                  f"the {SOURCE_BYTES >> 20} MiB download arrived whole")
            p = wait_for(lambda: f.port("xdp0"),
                         lambda p: p["conn_opened"] == p["conn_closed"], timeout=20)
            check(p["conn_opened"] == CONNS + 1 and p["conn_opened"] == p["conn_closed"],
                  f"every connection closed ({p['conn_opened']} opened, {p['conn_closed']} closed)")
            check(p["tcp_drop_bad_checksum"] == 0, "no bad checksums")
            check(p["imissed"] == 0 and p["rx_nombuf"] == 0,
                  f"nothing missed ({p['imissed']}, {p['rx_nombuf']})")
            check(f.stop() == 0, "exit 0 on SIGTERM")
    print("test_af_xdp: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
