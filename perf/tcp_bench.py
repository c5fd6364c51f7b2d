#!/usr/bin/env python3
"""TCP through ferry vs the kernel, same run (run by hand as root, never in CI).

  sudo python3 perf/tcp_bench.py [--build build] [--rounds 3] [--lcores 0-1]
                                 [--conns 8] [--mib 32] [--churn 3000]

Systems, interleaved round by round (A B A B ...) so drift is shared:
  ferry   kernel client -> net_tap -> ferry's [tcp_test] echo service
  kernel  kernel client -> veth -> a kernel echo server (tcpload.py server) in
          another namespace: the kernel-to-kernel baseline
Each round measures bulk echo throughput (N connections x M MiB each way,
sha256-checked) and connection churn (open, 64 bytes echoed, close). Prints
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

LOAD = os.path.join(ROOT, "tests", "integration", "tcpload.py")
ECHO = 7
CONFIG = f"""
[tcp]
max_connections = 8192
time_wait_ms = 1000
[tcp_test]
echo_port = {ECHO}
[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
mbufs = 65536
"""


def tcpload(ns, *args, timeout=300):
    r = ns.run([sys.executable, LOAD, *map(str, args), "--timeout", str(timeout - 10)],
               check=False, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"tcpload failed: {r.stdout} {r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(ns, addr, a):
    bulk = tcpload(ns, "echo", addr, ECHO, "--conns", a.conns, "--bytes", a.mib << 20)
    churn = tcpload(ns, "churn", addr, ECHO, "--conns", a.churn, "--parallel", 8)
    ok = bulk["ok"] == a.conns and churn["ok"] == a.churn
    return {"gbit_s": bulk["gbit_s_each_way"], "conn_s": churn["conn_per_s"],
            "max_stall_s": bulk["max_stall_s"], "ok": ok}


def run_ferry(a):
    os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, a.build, "app", "ferry"))
    with Netns("b") as ns, Ferry(ns, lcores=a.lcores, config=CONFIG) as f:
        # The tap's kernel-side queue (tun's ring) drops when the box is busy;
        # a real NIC has its own rings: give the tap a comparable one.
        ns.run(["ip", "link", "set", "ferry0", "txqueuelen", "10000"])
        r = measure(ns, FERRY_ADDR, a)
        r["handoffs"] = f.port()["tcp_handoff_out"]
        return r


def run_kernel(a):
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
            server = subprocess.Popen(["ip", "netns", "exec", srv, sys.executable, LOAD, "server",
                                       "10.78.0.2", str(ECHO)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                server.stdout.readline()  # "listening"
                return measure(ns, "10.78.0.2", a)
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
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("tcp_bench: needs root (network namespaces)")
        return 1
    res = {"ferry": [], "kernel": []}
    for rnd in range(a.rounds):
        for name, fn in (("ferry", run_ferry), ("kernel", run_kernel)):
            t0 = time.monotonic()
            r = fn(a)
            r.update({"system": name, "round": rnd, "elapsed_s": round(time.monotonic() - t0, 1)})
            res[name].append(r)
            print(json.dumps(r), flush=True)
    med = {k: {m: statistics.median(x[m] for x in v) for m in ("gbit_s", "conn_s")}
           for k, v in res.items()}
    summary = {
        "summary": True, "rounds": a.rounds, "conns": a.conns, "mib_each": a.mib,
        "ferry_lcores": a.lcores,
        "ferry_gbit_s": med["ferry"]["gbit_s"], "kernel_gbit_s": med["kernel"]["gbit_s"],
        "ratio_gbit": round(med["ferry"]["gbit_s"] / max(1e-9, med["kernel"]["gbit_s"]), 3),
        "ferry_conn_s": med["ferry"]["conn_s"], "kernel_conn_s": med["kernel"]["conn_s"],
        "ratio_conn": round(med["ferry"]["conn_s"] / max(1e-9, med["kernel"]["conn_s"]), 3),
        "all_ok": all(x["ok"] for v in res.values() for x in v),
    }
    print(json.dumps(summary), flush=True)
    return 0 if summary["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
