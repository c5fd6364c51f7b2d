"""ferry on net_ferry_packet, its own AF_PACKET path with virtio-net headers
(lib/net/packet_io.h), on a veth inside the test namespace (issues 16, 17).

(a) The port: a net_ring ethdev over one packet socket per queue pair (2
    lcores: a fanout group), TCP checksum offload both ways, the lcores sleep
    on the sockets and pings wake them.

(b) TCP both ways with the veth's offloads as they come (tx checksumming and
    TSO on on ferry's side; TSO and GSO off on the peer, which keeps its tx
    checksum offload, so its frames reach ferry with unfilled checksums):
    8 echo connections of 1 MiB and a 4 MiB download from the source service
    come back byte for byte (sha256), with no bad checksums. ferry sent its segments as GSO
    frames: far fewer frames than segments, and the peer's interface received
    about as many packets as ferry sent frames (they crossed the veth whole).
    Before, the profile did not exist; net_af_packet sends every segment as
    its own frame and summed every checksum.

(c) The same with tx checksumming, TSO and GSO off on ferry's side: the kernel
    cuts ferry's GSO frames in software into the segments ferry's TCP built
    and sums them (the pseudo-header sum ferry leaves must be right for the
    whole frame); every byte still arrives and the peer counts segments.

    The fanout group runs ferry's steering program (PACKET_FANOUT_EBPF), so
    each flow's segments arrive on the queue of the lcore that owns it: no
    hand-off between lcores. Before, the kernel's flow hash put about half of
    them on the other queue.

(d) A peer that sends GSO frames toward ferry (its TSO and GSO on, as a veth
    comes): a frame larger than a ring frame is read whole from the socket
    (PACKET_COPY_THRESH) and cut into MSS-sized segments for ferry's TCP
    (packet_rx_gso_frames, _segments); echo and source again intact, nothing
    truncated. Before (and on net_af_packet), such frames were cut short and
    the connection stalled.

(f) With exactly the capabilities deploy/ferry.service grants (its
    CapabilityBoundingSet, read from the unit; ferry run under setpriv with
    no others: no CAP_SYS_ADMIN) the steering program loads and the fanout
    group runs it. Before, the unit did not grant CAP_BPF: every flow's
    segments were spread by the kernel's hash under systemd.

(g) The unit's capabilities without CAP_BPF: the steering program cannot be
    loaded, the fanout group falls back to the kernel's flow hash, the port
    says so (`steering = none (<cause>)`) and the log warns once; every
    transfer still arrives whole (segments that land on the other lcore's
    queue are handed over).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (ECHO_PORT, ECHO_SOURCE_CLIENT_PY, FERRY_ADDR, SOURCE_PORT,  # noqa: E402
                     Ferry, Netns, check, echo_source_toml, ethtool_set, require_root, wait_for)

ECHO, SOURCE = ECHO_PORT, SOURCE_PORT
SOURCE_BYTES = 4 << 20
ECHO_BYTES = 1 << 20
CONNS = 8

METRICS = "127.0.0.1:9180"

CONFIG = echo_source_toml(SOURCE_BYTES) + f"""\
[[port]]
name = "pk0"
profile = "net_ferry_packet"
iface = "fpk0"
address = "{FERRY_ADDR}/24"
mbufs = 32768

[admin]
metrics_address = "{METRICS}"
"""


def unit_capabilities():
    """deploy/ferry.service's CapabilityBoundingSet, as setpriv names them."""
    unit = os.path.join(os.path.dirname(__file__), "..", "..", "deploy", "ferry.service")
    with open(unit) as f:
        for line in f:
            if line.startswith("CapabilityBoundingSet="):
                return [c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split()]
    raise RuntimeError("no CapabilityBoundingSet in deploy/ferry.service")


def only_capabilities(caps):
    """A setpriv command that runs ferry (as root) with exactly these capabilities."""
    s = ",".join(["-all"] + ["+" + c for c in caps])
    return ["setpriv", "--bounding-set", s, "--inh-caps", s, "--"]


def handoffs(before, after):
    """(segments handed to another lcore, segments received) between two readings of the port."""
    return (after["tcp_handoff_out"] - before["tcp_handoff_out"], after["tcp_rx"] - before["tcp_rx"])


def check_steered(before, after):
    """Every flow's segments reached the lcore that owns it (at most 1 in 1,000 handed over)."""
    handed, rx = handoffs(before, after)
    check(rx > 1000 and handed <= rx // 1000,
          f"segments arrive on their owner's queue ({handed} of {rx} handed over)")


def peer_rx_packets(ns):
    out = ns.run(["cat", "/sys/class/net/fpk1/statistics/rx_packets"]).stdout
    return int(out)


def transfers(ns, label):
    """(b)/(c): echo and source, checked byte for byte."""
    r = ns.run([sys.executable, "-c", ECHO_SOURCE_CLIENT_PY, FERRY_ADDR, str(ECHO), str(SOURCE),
                str(ECHO_BYTES), str(CONNS), str(SOURCE_BYTES)], check=False, timeout=120)
    print(label, r.stdout.strip())
    check(f"echo_ok={CONNS} errors=[]" in r.stdout,
          f"{label}: {CONNS} echo connections of {ECHO_BYTES >> 20} MiB came back intact")
    check(f"source_bytes={SOURCE_BYTES}" in r.stdout,
          f"{label}: the {SOURCE_BYTES >> 20} MiB download arrived whole")


def main():
    require_root()
    with Netns("k") as ns:
        ns.run(["ip", "link", "add", "fpk0", "type", "veth", "peer", "name", "fpk1"])
        ns.run(["ip", "link", "set", "fpk0", "up"])
        ethtool_set(ns, "fpk1", tso=False, gso=False)
        with Ferry(ns, lcores="0-1", config=CONFIG, peer_iface="fpk1") as f:
            if True:
                # (a) the port
                port = f.port("pk0")
                check(port["driver"] == "net_ferry_packet",
                      f"driver is net_ferry_packet ({port['driver']})")
                check(port["device"].startswith("net_ring"), f"over a net_ring ethdev ({port['device']})")
                check(port["queues"] == 2 and port["cap_rx_wake_sockets"] == 1,
                      "2 queue pairs, lcores can sleep on their sockets")
                check(port["cap_tx_tcp_cksum"] == 1 and port["cap_rx_tcp_cksum"] == 1,
                      f"TCP checksum offload both ways ({port['offloads']})")
                check(port["steering"] == "fanout-ebpf",
                      f"the fanout group runs ferry's steering program ({port['steering']})")
                check(port["kernel_ring_sockets"] == 2 and port["kernel_ring_bytes"] == 2 * 4096 * 2048,
                      f"2 sockets, an 8 MiB rx ring each ({port['kernel_ring_bytes']})")
                slept = wait_for(lambda: f.telemetry("/ferry/lcores"),
                                 lambda lc: all(v["state"] == "asleep" for v in lc.values()))
                check(all(v["state"] == "asleep" for v in slept.values()), "idle lcores sleep")
                rx_before = sum(v["wakeups_rx"] for v in slept.values())
                r = ns.run(["ping", "-c", "10", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
                check("10 packets transmitted, 10 received" in r.stdout, "ping: 10 replies")
                woken = sum(v["wakeups_rx"] for v in f.telemetry("/ferry/lcores").values())
                check(woken - rx_before >= 5, f"the pings woke sleeping lcores ({woken - rx_before})")

                # (b) offloads as they come
                before, peer_before = f.port("pk0"), peer_rx_packets(ns)
                transfers(ns, "veth offloads on")
                p, peer = f.port("pk0"), peer_rx_packets(ns) - peer_before
                frames = p["packet_tx_frames"] - before["packet_tx_frames"]
                segs = p["packet_tx_segments"] - before["packet_tx_segments"]
                print(f"sent {segs} segments in {frames} frames "
                      f"({p['packet_tx_gso_frames']} GSO); the peer received {peer} packets")
                check(p["tcp_drop_bad_checksum"] == 0, "no bad checksums")
                check(p["packet_tx_gso_frames"] > 0 and segs >= 4 * frames,
                      f"segments left as GSO frames ({segs} segments, {frames} frames)")
                check(peer <= frames + 50, f"and crossed the veth whole ({peer} received)")
                check(p["packet_rx_csum_partial"] > 1000,
                      f"the peer's unfilled checksums were taken ({p['packet_rx_csum_partial']})")
                check(p["packet_tx_errors"] == 0 and p["packet_rx_truncated"] == 0,
                      "no frame refused or truncated")
                # Every flow's frames reached the lcore that owns it: the
                # kernel's fanout hash put about half of them on the other
                # queue, to be handed over in software.
                handed, rx = handoffs(before, p)
                owners = [v["conn_opened_passive"] for k, v in f.telemetry("/ferry/tcp").items()
                          if k != "sum"]
                print(f"hand-offs: {handed} of {rx} segments; flows per lcore {owners}")
                check_steered(before, p)
                check(len(owners) == 2 and min(owners) > 0, f"both lcores own flows ({owners})")

                # (c) ferry's side cuts and sums in software
                ethtool_set(ns, "fpk0", tx=False, tso=False, gso=False)
                before, peer_before = f.port("pk0"), peer_rx_packets(ns)
                transfers(ns, "veth offloads off")
                p, peer = f.port("pk0"), peer_rx_packets(ns) - peer_before
                segs = p["packet_tx_segments"] - before["packet_tx_segments"]
                check(p["packet_tx_gso_frames"] > before["packet_tx_gso_frames"],
                      "ferry still sent GSO frames")
                check(peer >= segs - 50, f"the kernel cut them into segments ({peer} received, "
                                         f"{segs} sent)")
                check(p["tcp_drop_bad_checksum"] == 0, "no bad checksums")
                p = wait_for(lambda: f.port("pk0"),
                             lambda q: q["conn_opened"] == q["conn_closed"], timeout=20)
                check(p["conn_opened"] == p["conn_closed"] == 2 * (CONNS + 1),
                      f"every connection closed ({p['conn_opened']}, {p['conn_closed']})")

                # (d) a peer sending GSO frames toward ferry
                ethtool_set(ns, "fpk0", tx=True, tso=True, gso=True)
                ethtool_set(ns, "fpk1", tso=True, gso=True)
                before = f.port("pk0")
                transfers(ns, "peer GSO on")
                p = f.port("pk0")
                frames = p["packet_rx_gso_frames"] - before["packet_rx_gso_frames"]
                segs = p["packet_rx_gso_segments"] - before["packet_rx_gso_segments"]
                print(f"received {frames} GSO frames, cut into {segs} segments")
                check(frames > 50 and segs >= 4 * frames,
                      f"the peer's GSO frames were read whole and cut ({frames}, {segs})")
                check(p["packet_rx_truncated"] == 0 and p["tcp_drop_bad_checksum"] == 0,
                      "nothing truncated, no bad checksums")

                # (e) the port's counters in Prometheus, as /ferry/ports has them (read
                # before and after the scrape: an ARP refresh may send a frame meanwhile)
                p0 = f.port("pk0")
                r = ns.run(["curl", "-s", "--max-time", "10", f"http://{METRICS}/metrics"],
                           check=False, timeout=20)
                p1 = f.port("pk0")
                for name in ("tx_frames", "tx_gso_frames", "rx_gso_segments", "rx_csum_partial"):
                    m = re.search(rf'^ferry_port_packet_{name}_total{{port="pk0"}} (\d+)$',
                                  r.stdout, re.M)
                    key = "packet_" + name
                    check(m is not None and p0[key] <= int(m.group(1)) <= p1[key],
                          f"/metrics: ferry_port_packet_{name}_total "
                          f"{m.group(1) if m else None} ({p0[key]}..{p1[key]})")
            check(f.stop() == 0, "exit 0 on SIGTERM")

        # (f) the systemd unit's capabilities (a new ferry: the peer's
        # address goes again once it is ready)
        caps = unit_capabilities()
        print(f"deploy/ferry.service grants {caps}")
        check("sys_admin" not in caps, "the unit grants no CAP_SYS_ADMIN")
        ns.run(["ip", "addr", "flush", "dev", "fpk1"])
        with Ferry(ns, lcores="0-1", config=CONFIG, peer_iface="fpk1",
                   wrapper=only_capabilities(caps)) as f:
            port = f.port("pk0")
            check(port["steering"] == "fanout-ebpf",
                  f"with the unit's capabilities the fanout group runs ferry's steering program "
                  f"({port['steering']})")
            before = f.port("pk0")
            transfers(ns, "the unit's capabilities")
            p = f.port("pk0")
            check_steered(before, p)
            check(f.stop() == 0, "exit 0 on SIGTERM")

        # (g) the unit's capabilities but CAP_BPF (where the kernel lets
        # anyone load socket filters, the program loads without it: nothing
        # to fall back from)
        with open("/proc/sys/kernel/unprivileged_bpf_disabled") as sysctl:
            unpriv_bpf = sysctl.read().strip() == "0"
        if unpriv_bpf:
            print("skip (g): kernel.unprivileged_bpf_disabled = 0, the steering program "
                  "loads without CAP_BPF")
            print("test_ferry_packet: all checks passed")
            return 0
        ns.run(["ip", "addr", "flush", "dev", "fpk1"])
        with Ferry(ns, lcores="0-1", config=CONFIG, peer_iface="fpk1",
                   wrapper=only_capabilities([c for c in caps if c != "bpf"])) as f:
            port = f.port("pk0")
            check(port["steering"].startswith("none (") and port["steering"].endswith(
                  "needs CAP_BPF or CAP_SYS_ADMIN)") and port["queues"] == 2,
                  f"without CAP_BPF the fanout group uses the kernel's hash ({port['steering']})")
            with open(f.log_path) as lf:
                warned = [ln for ln in lf if "no fanout steering" in ln]
            check(len(warned) == 1 and "pk0" in warned[0],
                  f"one warning names the port ({warned[:1]})")
            before = f.port("pk0")
            transfers(ns, "kernel fanout hash")
            p = f.port("pk0")
            print("hand-offs: %d of %d segments" % handoffs(before, p))
            check(p["tcp_drop_bad_checksum"] == 0 and p["packet_rx_truncated"] == 0,
                  "no bad checksums, nothing truncated")
            check(f.stop() == 0, "exit 0 on SIGTERM")
    print("test_ferry_packet: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
