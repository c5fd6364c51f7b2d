#!/usr/bin/env python3
"""WebSocket through ferry against a direct connection and HAProxy, same run
(issue 18's WebSocket figure; run by hand as root, never in CI).

  sudo FERRY_BIN=build/app/ferry python3 perf/ws_bench.py [--build build]
      [--rounds 3] [--duration 10] [--conns 1,50] [--bytes 64,16384]
      [--ferry-ports af_packet|af_xdp|ferry_packet|tap] [--systems direct,ferry,haproxy]

perf/bench's topology (perf/bench_lib/topo.py: client, proxy and origin
namespaces, veth pairs, the client and the origin on one CPU, the proxy
alone on the other). The origin is perf/ws_load's WebSocket echo server
(port 9400, beside the topology's nginx), the client perf/ws_load's
closed-loop client: CONNS connections, each sends a BYTES binary message and
waits for its echo before the next. Systems, interleaved per round:
  direct   the client straight to the origin over its own veth
  ferry    ferry's proxy (one lcore, adaptive wakeup), a route /bench to the
           origin: the Upgrade goes on, the 101 turns the pair into a tunnel
  haproxy  HAProxy, one thread, HTTP mode (it tunnels upgrades by itself)
Prints one JSON line per run, then per (conns, bytes) the medians and the
ratios against direct and HAProxy; the JSON lines' path is the last line.
All traffic stays inside the namespaces created (and deleted) here.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_lib import measure, systems, topo as T, util  # noqa: E402

WS_PORT = 9400


class WsFerry(systems.Ferry):
    def __init__(self, topo, args):
        super().__init__(topo, args, "ferry", "http", "local")
        self.label = "ferry (tunnel)"

    def config_text(self):
        cfg = systems.ferry_config("http", self.args.ferry_ports, "local", "adaptive")
        return cfg + (f'\n[[route]]\npath_prefix = "/bench"\nupstream = "ws"\n\n'
                      f'[[upstream]]\nname = "ws"\n  [[upstream.server]]\n'
                      f'  address = "{T.FERRY_ORIGIN_IP}:{WS_PORT}"\n')


class WsHaproxy(systems.Haproxy):
    label = "HAProxy 1 thread (tunnel)"

    def config_text(self):
        text = super().config_text().replace(
            "  default_backend be\n", "  use_backend ws if { path_beg /bench }\n  default_backend be\n")
        return text + f"backend ws\n  timeout tunnel 1h\n  server ws {T.ORIGIN_IP}:{WS_PORT}\n"


def target(name):
    return {"direct": (T.DIRECT_ORIGIN_IP, WS_PORT),
            "ferry": (T.FERRY_IP, T.PROXY_PORT),
            "haproxy": (T.PROXY_IP, T.PROXY_PORT)}[name]


def run_client(args, tp, addr, port, conns, nbytes):
    exe = os.path.join(args.build, "perf", "ws_load")
    r = util.run(["ip", "netns", "exec", tp.client, "taskset", "-c", tp.cpu_client, exe, "client",
                  addr, str(port), str(conns), str(args.duration), str(nbytes), "--warmup", "1"],
                 check=False, timeout=args.duration + 60)
    line = next((l for l in r.stdout.splitlines() if l.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"ws_load client failed ({r.returncode}): {r.stdout[-300:]} {r.stderr[-300:]}")
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--ferry-bin", default=os.environ.get("FERRY_BIN", "build/app/ferry"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--conns", default="1,50")
    ap.add_argument("--bytes", default="64,16384")
    ap.add_argument("--ferry-ports", default="af_packet",
                    choices=["af_packet", "af_xdp", "ferry_packet", "tap"])
    ap.add_argument("--systems", default="direct,ferry,haproxy")
    ap.add_argument("--probe-timeout", type=float, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ws_bench: run as root (namespaces, DPDK)")
    names = args.systems.split(",")
    points = [(int(c), int(b)) for c in args.conns.split(",") for b in args.bytes.split(",")]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_path = os.path.join(args.out, f"ws-bench-{stamp}.jsonl")
    rows = []
    with T.Topology(ferry_ports=[args.ferry_ports]) as tp, open(out_path, "w") as out:
        server = util.Proc("ws origin", [os.path.join(args.build, "perf", "ws_load"), "server",
                                         "0.0.0.0", str(WS_PORT)],
                           ns=tp.origin, cpus=tp.cpu_client,
                           log_path=os.path.join(tp.work, "ws-origin.log"))
        try:
            util.wait_until(lambda: "listening" in server.log_text(), 10)
            for rnd in range(args.rounds):
                for name in names:
                    sysm = {"direct": lambda: systems.Direct(tp, args),
                            "ferry": lambda: WsFerry(tp, args),
                            "haproxy": lambda: WsHaproxy(tp, args)}[name]()
                    sysm.start()
                    try:
                        for conns, nbytes in points:
                            addr, port = target(name)
                            fp = sysm.fp if name == "ferry" else None
                            t0 = measure.ferry_tcp(fp) if fp is not None else None
                            res = run_client(args, tp, addr, port, conns, nbytes)
                            t1 = measure.ferry_tcp(fp) if fp is not None else None
                            if t0 and t1 and res["messages"]:
                                # ferry's segments per message (both legs,
                                # both ways): where its time goes
                                res["ferry_per_msg"] = {k: round((t1[k] - t0[k]) / res["messages"], 2)
                                                        for k in t1}
                            res.update(system=name, round=rnd, ports=args.ferry_ports)
                            if fp is not None:
                                res["tunnels_opened"] = fp.telemetry("/ferry/http")["sum"]["tunnels_opened"]
                            rows.append(res)
                            out.write(json.dumps(res) + "\n")
                            out.flush()
                            print(f"round {rnd} {name:8} conns {conns:3} bytes {nbytes:6}: "
                                  f"{res['msgs_per_s']:>10,.0f} msg/s  p50 {res['p50_us']:>5} "
                                  f"p99 {res['p99_us']:>6} us  errors {res['errors']}", flush=True)
                    finally:
                        sysm.stop()
        finally:
            server.stop()
    print("\nmedians over rounds (ratios: ferry / direct, ferry / haproxy)")
    for conns, nbytes in points:
        med = {}
        for name in names:
            rs = [r for r in rows if r["system"] == name and r["conns"] == conns
                  and r["bytes"] == nbytes]
            if rs:
                med[name] = {k: statistics.median(r[k] for r in rs) for k in ("msgs_per_s", "p99_us")}
        line = f"conns {conns:3} bytes {nbytes:6}: " + "  ".join(
            f"{n} {m['msgs_per_s']:,.0f} msg/s p99 {m['p99_us']:.0f} us" for n, m in med.items())
        if "ferry" in med:
            for base in ("direct", "haproxy"):
                if base in med and med[base]["msgs_per_s"]:
                    line += (f"  | ferry/{base}: {med['ferry']['msgs_per_s'] / med[base]['msgs_per_s']:.2f}x"
                             f" msg/s, p99 {med['ferry']['p99_us'] / max(1, med[base]['p99_us']):.2f}x")
        print(line)
    print(out_path)


if __name__ == "__main__":
    main()
