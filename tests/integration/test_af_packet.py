"""ferry on net_af_packet (a veth inside the test namespace).

(a) The profile brings the port up with one queue pair per lcore and the
    default ring size (ring_frames = 4096 -> devargs framecnt=4096), and
    /ferry/ports finds the PMD's two AF_PACKET sockets and their mapped
    rings, which /ferry/memory counts in the bound. af_packet has no rx
    interrupts, but each queue's socket is readable while its ring holds a
    frame: the lcores sleep on those sockets (cap_rx_wake_sockets,
    can_sleep) and every ping, 50 ms apart, wakes the lcore it lands on
    (wakeups_rx) and is answered. Before, the lcores could only poll.

(b) Ring drops are visible (issue 16): a port with 32-frame rings, ferry
    stopped (SIGSTOP, by pid), a burst of frames from the veth peer that
    overflows the rings, ferry continued: /ferry/ports' kernel_ring_drops and
    the metric ferry_port_kernel_ring_drops_total count what the kernel
    dropped, and every frame of the burst is either received by ferry or
    counted as dropped. Deterministic: while ferry is stopped nothing drains
    the rings, so they hold at most 2 x 32 frames of the burst, and the test
    continues ferry only once a socket of its own on ferry's interface (which
    the kernel serves after ferry's sockets, in the same pass) has seen every
    frame.
"""

import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, Ferry, Netns, check, log_events, require_root, wait_for  # noqa: E402

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

METRICS = "127.0.0.1:9180"
RING_FRAMES = 32
QUEUES = 2
FRAME_SZ = 2048  # the PMD's default framesz
BURST = 1000
ETHERTYPE = 0x88B5  # IEEE 802 local experimental: ferry counts it eth_drop_unknown_ethertype

SMALL_RING_CONFIG = CONFIG + f"ring_frames = {RING_FRAMES}\n" + f"""
[admin]
metrics_address = "{METRICS}"
"""

# Run in the namespace: sends BURST frames from fpa1 to ferry's MAC on fpa0
# and returns once a packet socket of its own on fpa0 has seen all of them
# (PACKET_STATISTICS counts what it queued and what it dropped alike).
BURST_PY = """
import socket, struct, sys, time
dst, src, n, etype = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 16)
seen = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(etype))
seen.bind(("fpa0", etype))
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
tx.bind(("fpa1", 0))
for i in range(n):
    tx.send(dst + src + struct.pack("!HI", etype, i) + bytes(46))
total, deadline = 0, time.monotonic() + 20
while total < n and time.monotonic() < deadline:
    packets, drops = struct.unpack("II", seen.getsockopt(263, 6, 8))  # PACKET_STATISTICS
    total += packets  # packets already includes drops; each read resets the kernel's count
    if total < n:
        time.sleep(0.001)
print(total)
"""


def threads_stopped(pid):
    """True when every thread of pid is in the stopped state (T)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            # "tid (comm) S ...": the state follows the last ')'.
            if f.read().rsplit(")", 1)[1].split()[0] != "T":
                return False
    return True


def metric(ns, name, port):
    r = ns.run(["curl", "-s", "--max-time", "10", f"http://{METRICS}/metrics"], check=False,
               timeout=20)
    m = re.search(rf'^{name}{{port="{port}"}} (\d+)$', r.stdout, re.M)
    return int(m.group(1)) if m else None


def default_rings():
    with Netns("a") as ns:
        # ferry takes fpa0 with af_packet; the kernel keeps fpa1 with the peer address.
        ns.run(["ip", "link", "add", "fpa0", "type", "veth", "peer", "name", "fpa1"])
        ns.run(["ip", "link", "set", "fpa0", "up"])
        with Ferry(ns, lcores="0-1", config=CONFIG, peer_iface="fpa1") as f:
            port = f.port("veth0")
            check(port["driver"] == "net_af_packet", f"driver is net_af_packet ({port['driver']})")
            check(port["queues"] == 2 and port["cap_rx_interrupts"] == 0,
                  "2 queue pairs, no rx interrupts")
            check(port["cap_rx_wake_sockets"] == 1,
                  "but the lcores can sleep on the queues' AF_PACKET sockets")
            lc = f.telemetry("/ferry/lcores")
            for name, v in lc.items():
                check(v["can_sleep"] == 1 and v["mode"] == "conditional",
                      f"{name}: can sleep, in conditional mode ({v['can_sleep']}, {v['mode']})")
            slept = wait_for(lambda: f.telemetry("/ferry/lcores"),
                             lambda lc: all(v["state"] == "asleep" for v in lc.values()))
            check(all(v["state"] == "asleep" for v in slept.values()), "idle lcores sleep")
            rx_before = sum(v["wakeups_rx"] for v in f.telemetry("/ferry/lcores").values())
            check(port["devargs"] == "iface=fpa0,qpairs=2,framecnt=4096",
                  f"the profile's ring_frames in devargs ({port['devargs']})")
            ring_bytes = 2 * 4096 * FRAME_SZ * 2  # rx + tx ring, per queue pair
            check(port["kernel_ring_sockets"] == 2 and port["kernel_ring_bytes"] == ring_bytes,
                  f"2 AF_PACKET sockets, {ring_bytes >> 20} MiB of rings "
                  f"({port['kernel_ring_sockets']}, {port['kernel_ring_bytes']})")
            ev = [(w, fl) for _, _, w, fl in log_events(f.log_text(), "ferry.port")]
            check(("kernel rings mapped", {"port": "veth0", "sockets": "2", "ring_mib": "32.0"}) in ev
                  and not any(w == "kernel ring counts read on demand" for w, _ in ev),
                  "the rings are logged, and read periodically")
            mem = f.telemetry("/ferry/memory")
            check(mem["kernel_ring_bytes"] == ring_bytes,
                  f"/ferry/memory counts the rings ({mem['kernel_ring_bytes']})")
            if os.environ.get("FERRY_SANITIZE", "none") in ("", "none"):
                # The rings are resident (mapped by the PMD): without them in the bound,
                # 32 MiB would be unaccounted for.
                check(mem["rss_peak_bytes"] <= mem["bound_bytes"],
                      f"resident peak {mem['rss_peak_bytes'] >> 20} MiB within the bound "
                      f"{mem['bound_bytes'] >> 20} MiB")
            r = ns.run(["ping", "-c", "10", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
            print(r.stdout)
            check("10 packets transmitted, 10 received" in r.stdout, "ping over af_packet: 10 replies")
            rx_woken = sum(v["wakeups_rx"] for v in f.telemetry("/ferry/lcores").values())
            # 50 ms between pings: far past the idle threshold (200 us), so
            # the lcore sleeps before each one and its socket wakes it.
            check(rx_woken - rx_before >= 5,
                  f"the pings woke sleeping lcores through their sockets ({rx_woken - rx_before})")
            port = f.port("veth0")
            check(port["icmp_echo_replied"] >= 10, "echo replies counted")
            check(port["kernel_ring_packets"] >= 10 and port["kernel_ring_drops"] == 0,
                  f"the kernel handed the pings to the rings and dropped none "
                  f"({port['kernel_ring_packets']}, {port['kernel_ring_drops']})")
            check(f.stop() == 0, "exit 0 on SIGTERM")


def ring_drops():
    with Netns("a") as ns:
        ns.run(["ip", "link", "add", "fpa0", "type", "veth", "peer", "name", "fpa1"])
        ns.run(["ip", "link", "set", "fpa0", "up"])
        with Ferry(ns, lcores="0-1", config=SMALL_RING_CONFIG, peer_iface="fpa1") as f:
            port = f.port("veth0")
            check(port["devargs"] == f"iface=fpa0,qpairs=2,framecnt={RING_FRAMES}",
                  f"the port's ring_frames in devargs ({port['devargs']})")
            check(port["kernel_ring_bytes"] == QUEUES * 2 * RING_FRAMES * FRAME_SZ,
                  f"rings of {RING_FRAMES} frames ({port['kernel_ring_bytes']} bytes)")
            before = port
            pid = f.proc.pid
            with open(f"/proc/{pid}/comm") as c:
                check(c.read().strip() == "ferry", f"pid {pid} is ferry")
            os.kill(pid, signal.SIGSTOP)
            try:
                check(wait_for(lambda: threads_stopped(pid), bool), "ferry stopped")
                peer = f.peer_mac().replace(":", "")
                r = ns.run([sys.executable, "-c", BURST_PY, port["mac"].replace(":", ""), peer,
                            str(BURST), f"{ETHERTYPE:x}"], timeout=60)
                check(int(r.stdout) >= BURST,
                      f"the burst passed ferry's interface: {r.stdout.strip()} of {BURST} frames")
            finally:
                os.kill(pid, signal.SIGCONT)

            cap = QUEUES * RING_FRAMES  # what the stopped rings can hold

            def delta(p, key):
                return p[key] - before[key]

            def done(p):
                return (delta(p, "eth_drop_unknown_ethertype") + delta(p, "kernel_ring_drops")
                        >= BURST)

            after = wait_for(lambda: f.port("veth0"), done)
            received = delta(after, "eth_drop_unknown_ethertype")
            drops = delta(after, "kernel_ring_drops")
            print(f"burst of {BURST}: ferry received {received}, the kernel dropped {drops}")
            check(received + drops >= BURST,
                  "every frame of the burst was received by ferry or counted as a ring drop")
            check(received <= cap, f"the stopped rings held at most {cap} of the burst")
            check(drops >= BURST - cap, f"kernel_ring_drops >= {BURST - cap} ({drops})")
            check(delta(after, "kernel_ring_packets") >= BURST,
                  f"kernel_ring_packets counts the burst ({delta(after, 'kernel_ring_packets')})")
            check(delta(after, "imissed") == 0, "the PMD's imissed saw none of it")
            m = metric(ns, "ferry_port_kernel_ring_drops_total", "veth0")
            check(m is not None and m >= after["kernel_ring_drops"],
                  f"ferry_port_kernel_ring_drops_total ({m}) >= kernel_ring_drops "
                  f"({after['kernel_ring_drops']})")
            check(f.stop() == 0, "exit 0 on SIGTERM")
            dl = [fl for _, _, w, fl in log_events(f.log_text(), "ferry.port") if w == "kernel ring drops"]
            check(len(dl) == 1 and dl[0]["port"] == "veth0"
                  and int(dl[0]["dropped"]) >= after["kernel_ring_drops"] > 0,
                  f"the drops are logged when the port closes: {dl}")


def main():
    require_root()
    default_rings()
    ring_drops()
    print("test_af_packet: all checks passed")


if __name__ == "__main__":
    main()
