#!/usr/bin/env python3
"""TCP through ferry vs the kernel, same run (run by hand as root, never in CI).

  sudo python3 perf/tcp_bench.py [--build build] [--rounds 3] [--lcores 0-1]
                                 [--conns 8] [--mib 32] [--churn 3000]
                                 [--loss PCT] [--systems ferry,kernel]
                                 [--port tap|af_packet|af_xdp|ferry_packet]
                                 [--server-cpus LIST|all]

Systems, interleaved round by round (A B A B ...) so drift is shared:
  ferry   kernel client -> net_tap -> ferry's [tcp_test] echo service
          (--port af_packet|af_xdp: a veth pair in the client's namespace,
          ferry on one end with that profile; af_xdp takes one lcore)
  kernel  kernel client -> veth -> a kernel echo server (tcpload.py server) in
          another namespace: the kernel-to-kernel baseline, with the host's
          default congestion control (summary: host_cc). The server runs on
          ferry's cores (--server-cpus, default --lcores): like ferry, one
          lcore's CPU for one lcore; until 2026-12-05 it ran unpinned, on
          every CPU of the machine, against ferry's one
  kernel-cubic, kernel-bbr  the same with that congestion control on both
          kernel ends' sockets (TCP_CONGESTION). ferry runs CUBIC: compare
          the algorithm with kernel-cubic. BBR does not back off on random
          loss at all, and this VM's default is bbr (Debian's is cubic).
  ferry-norack  ferry with [tcp] rack = false (RFC 6675 recovery alone)
  ferry-bbr  ferry with [tcp] congestion_control = "bbr": compare with kernel-bbr
Each round measures bulk echo throughput (N connections x M MiB each way,
sha256-checked) and connection churn (open, 64 bytes echoed, close; --churn 0
skips it). --loss drops that percentage of TCP frames both ways in the
client's namespace (nftables, numgen random: there is no netem here), the
same for every system, with TSO and GSO off on the kernel's devices of that
link: a 64 KiB GSO packet would otherwise be one "frame" to the rule, and the
kernel baseline saw ~1/45 of ferry's loss events (so it was until 2026-12-05;
bench_lib/loss.py). With loss, each run also reports the frames dropped and
the echo server's RTOs per 1k dropped frames (ferry's rto_fired; the kernel
server namespace's TcpExtTCPTimeouts). Prints
one JSON line per measurement and a summary line with medians and the ratio
ferry / kernel. All traffic stays inside namespaces created and deleted here.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from testbed import FERRY_ADDR, Ferry, Netns  # noqa: E402

sys.path.insert(0, HERE)
from bench_lib import loss, topo  # noqa: E402

LOAD = os.path.join(ROOT, "tests", "integration", "tcpload.py")
ECHO = 7
CONFIG = """
[ferry]
wakeup_mode = "{wakeup}"
[tcp]
max_connections = 8192
time_wait_ms = 1000
rack = {rack}
congestion_control = "{cc}"
[tcp_test]
echo_port = {echo}
[[port]]
name = "tap0"
profile = "{profile}"
iface = "{iface}"
address = "10.77.0.1/24"
mbufs = 65536
"""


def tcpload(ns, *args, timeout=300):
    r = ns.run([sys.executable, LOAD, *map(str, args), "--timeout", str(timeout - 10)],
               check=False, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"tcpload failed: {r.stdout} {r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def add_loss(ns, pct, kernel_devs=()):
    """Drops pct % of the TCP frames entering and leaving the client's
    namespace. kernel_devs: (namespace name, device) of the kernel senders on
    that link, whose TSO and GSO go off so they send wire frames
    (bench_lib/loss.py)."""
    if pct > 0:
        for n, dev in kernel_devs:
            loss.segmentation_off(n, dev)
        ns.run(["nft", "-f", "-"], input=loss.rules(pct))


def measure(ns, addr, a, kernel_devs, cc_args=()):
    add_loss(ns, a.loss, kernel_devs)
    bulk = tcpload(ns, "echo", addr, ECHO, "--conns", a.conns, "--bytes", a.mib << 20,
                   *cc_args, timeout=a.timeout)
    r = {"gbit_s": bulk["gbit_s_each_way"], "max_stall_s": bulk["max_stall_s"],
         "ok": bulk["ok"] == a.conns, "conn_s": 0.0}
    if a.churn > 0:
        churn = tcpload(ns, "churn", addr, ECHO, "--conns", a.churn, "--parallel", 8,
                        timeout=a.timeout)
        r["conn_s"] = churn["conn_per_s"]
        r["ok"] = r["ok"] and churn["ok"] == a.churn
    r["frames_dropped"] = dropped(ns) if a.loss > 0 else 0
    return r


def dropped(ns):
    """Frames the loss rules dropped, both ways (their nft counters)."""
    out = ns.run(["nft", "list", "table", "inet", "benchloss"]).stdout
    return sum(int(w[i + 1]) for w in (line.split() for line in out.splitlines())
               for i, x in enumerate(w) if x == "packets")


def kernel_tcpext(ns_name):
    """The TcpExt counters of a namespace (its /proc/net/netstat): TCPTimeouts
    (the RTOs its kernel fired), TCPLossProbes (its tail loss probes), ..."""
    out = subprocess.run(["ip", "netns", "exec", ns_name, "cat", "/proc/net/netstat"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    for names, values in zip(out[::2], out[1::2]):
        if names.startswith("TcpExt:"):
            return {k: int(v) for k, v in zip(names.split()[1:], values.split()[1:])}
    return {}


def rtos_per_1k_lost(r):
    return round(1000.0 * r["rtos"] / r["frames_dropped"], 2) if r["frames_dropped"] else 0.0


def run_ferry(a, rack=True, cc="cubic"):
    os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, a.build, "app", "ferry"))
    tap = a.port == "tap"
    config = CONFIG.format(rack="true" if rack else "false", cc=cc, echo=ECHO, wakeup=a.wakeup_mode,
                           profile=f"net_{a.port}", iface="ferry0" if tap else "fxb0")
    with Netns("b") as ns:
        peer = "ferry0"
        if not tap:
            peer = "fxb1"
            ns.run(["ip", "link", "add", "fxb0", "type", "veth", "peer", "name", peer])
            ns.run(["ip", "link", "set", "fxb0", "up"])
            if a.port == "ferry_packet":
                # It takes unfilled checksums; it cannot take GSO frames.
                loss.segmentation_off(ns.name, peer)
            else:
                # The veth peer would hand ferry frames with an unfilled TCP
                # checksum (the profiles' caveats).
                topo.tx_checksum_off(ns.name, peer)
        with Ferry(ns, lcores=a.lcores, config=config, peer_iface=peer) as f:
            return ferry_measure(ns, f, a, tap)


def ferry_measure(ns, f, a, tap):
    if tap:
        # The tap's kernel-side queue (tun's ring) drops when the box is busy;
        # a real NIC has its own rings: give the tap a comparable one.
        ns.run(["ip", "link", "set", "ferry0", "txqueuelen", "10000"])
    devs = [(ns.name, "ferry0" if tap else "fxb1")]
    if a.port == "ferry_packet":
        # ferry's GSO frames are cut into wire frames before the loss rule,
        # as the kernel senders' are (bench_lib/loss.py).
        devs.append((ns.name, "fxb0"))
    r = measure(ns, FERRY_ADDR, a, devs)
    r["handoffs"] = f.port("tap0")["tcp_handoff_out"]
    tcp = f.telemetry("/ferry/tcp")["sum"]
    for k in ("rto_fired", "retransmits", "tlp_probes", "rack_lost", "dsacks_received",
              "dsack_undos", "sack_recovery_episodes", "segs_out", "rack_unrecorded",
              "sack_scoreboard_overflow", "bbr_full_pipe", "bbr_probe_rtt",
              "bbr_ack_aggregation"):
        r[k] = tcp[k]
    # The echo server's RTOs, as kernel_tcpext() counts the kernel server's.
    r["rtos"] = tcp["rto_fired"]
    r["rtos_per_1k_lost"] = rtos_per_1k_lost(r)
    return r


def host_cc():
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
        return f.read().strip()


def run_kernel(a, cc=None):
    """cc: the congestion control of both kernel ends' sockets (None: the
    host's default, which a namespace inherits: this VM's is bbr, Debian's
    cubic, and bbr shrugs off random loss where cubic and ferry back off)."""
    cc_args = ["--cc", cc] if cc else []
    with Netns("k") as ns:
        # A second namespace for the server, joined by a veth pair.
        srv = ns.name + "s"
        subprocess.run(["ip", "netns", "add", srv], check=True)
        try:
            ns.run(["ip", "link", "add", "kv0", "type", "veth", "peer", "name", "kv1",
                    "netns", srv])
            ns.run(["ip", "addr", "add", "10.78.0.1/24", "dev", "kv0"])
            ns.run(["ip", "link", "set", "kv0", "up"])
            for cmd in (["ip", "addr", "add", "10.78.0.2/24", "dev", "kv1"],
                        ["ip", "link", "set", "kv1", "up"], ["ip", "link", "set", "lo", "up"]):
                subprocess.run(["ip", "netns", "exec", srv] + cmd, check=True)
            pin = ["taskset", "-c", a.server_cpus] if a.server_cpus != "all" else []
            server = subprocess.Popen(["ip", "netns", "exec", srv, *pin, sys.executable, LOAD,
                                       "server", "10.78.0.2", str(ECHO), *cc_args],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                server.stdout.readline()  # "listening"
                r = measure(ns, "10.78.0.2", a, [(ns.name, "kv0"), (srv, "kv1")], cc_args)
                ext = kernel_tcpext(srv)
                r["rtos"] = ext.get("TCPTimeouts", 0)
                r["tlp_probes"] = ext.get("TCPLossProbes", 0)
                r["rtos_per_1k_lost"] = rtos_per_1k_lost(r)
                return r
            finally:
                server.kill()  # our own child, by pid
                server.wait()
        finally:
            subprocess.run(["ip", "netns", "del", srv], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lcores", default="0-1")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--mib", type=int, default=32)
    ap.add_argument("--churn", type=int, default=3000)
    ap.add_argument("--loss", type=float, default=0.0, help="percent of TCP segments dropped each way")
    ap.add_argument("--systems", default="ferry,kernel")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per measurement")
    ap.add_argument("--port", choices=["tap", "af_packet", "af_xdp", "ferry_packet"], default="tap",
                    help="ferry's port (default tap; af_xdp needs --lcores with one lcore)")
    ap.add_argument("--wakeup-mode", default="conditional",
                    help="ferry's [ferry] wakeup_mode (default conditional, as in earlier results; "
                         "the built-in default is adaptive)")
    ap.add_argument("--server-cpus", default=None,
                    help="CPUs the kernel echo server may run on (taskset list; default: "
                         "ferry's --lcores, the same cores; 'all': unpinned)")
    a = ap.parse_args()
    if a.server_cpus is None:
        a.server_cpus = a.lcores
    if os.geteuid() != 0:
        print("tcp_bench: needs root (network namespaces)")
        return 1
    runners = {"ferry": run_ferry, "ferry-norack": lambda x: run_ferry(x, rack=False),
               "ferry-bbr": lambda x: run_ferry(x, cc="bbr"),
               "kernel": run_kernel,
               "kernel-cubic": lambda x: run_kernel(x, "cubic"),
               "kernel-bbr": lambda x: run_kernel(x, "bbr")}
    systems = a.systems.split(",")
    res = {k: [] for k in systems}
    for rnd in range(a.rounds):
        for name in systems:
            fn = runners[name]
            t0 = time.monotonic()
            r = fn(a)
            r.update({"system": name, "round": rnd, "elapsed_s": round(time.monotonic() - t0, 1)})
            res[name].append(r)
            print(json.dumps(r), flush=True)
    med = {k: {m: statistics.median(x[m] for x in v)
               for m in ("gbit_s", "conn_s", "rtos_per_1k_lost")}
           for k, v in res.items()}
    summary = {"summary": True, "rounds": a.rounds, "conns": a.conns, "mib_each": a.mib,
               "loss_pct": a.loss, "ferry_lcores": a.lcores, "ferry_port": a.port,
               "kernel_server_cpus": a.server_cpus, "ferry_wakeup_mode": a.wakeup_mode,
               "all_ok": all(x["ok"] for v in res.values() for x in v)}
    for k in systems:
        summary[f"{k}_gbit_s"] = med[k]["gbit_s"]
        summary[f"{k}_conn_s"] = med[k]["conn_s"]
        summary[f"{k}_rtos_per_1k_lost"] = med[k]["rtos_per_1k_lost"]
    summary["host_cc"] = host_cc()
    for base in (k for k in systems if k.startswith("kernel")):
        for k in systems:
            if not k.startswith("kernel"):
                suffix = "" if base == "kernel" else base[len("kernel"):]
                summary[f"ratio_gbit_{k}{suffix}"] = round(
                    med[k]["gbit_s"] / max(1e-9, med[base]["gbit_s"]), 3)
    print(json.dumps(summary), flush=True)
    return 0 if summary["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
