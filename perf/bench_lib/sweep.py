"""The wakeup sweep (issue 14): CPU and latency against offered load, per wakeup mode.

  sudo perf/bench --wakeup-sweep [--quick]

For each group (ferry's lcores x its port kind) one ferry process is started
(the HTTP proxy, shared upstream pool: with 2 lcores every request crosses
cores). For each round and each offered load the modes run interleaved (the
order rotates per round), the mode switched at run time with
/ferry/wakeup_mode. The offered load is open loop: perf/openloop (default)
sends requests evenly spaced at the rate and times each from when it was due;
with --sweep-client h2load it is h2load --h1 --rps at rate/100 connections of
100 req/s each (its --rps is per connection and its connections start
together, so it sends bursts of rate/100 requests every 10 ms). The
saturation point is h2load closed-loop on 50 connections. Then the same rate
goes once straight to the origin (no proxy) so the kernel IPIs the proxy adds
can be told from those the client and the origin cause anyway.

Per run one JSON line: mode, lcores, port, offered_rps, achieved_rps, round,
cpu_pct_per_lcore (ferry's utime+stime from /proc over the window / lcores),
p50_us, p99_us, p999_us (h2load's per-request log), errors, doorbells_per_1k,
doorbell_wake_us (the mean wait of a hand-off for the sleeping lcore it woke,
from the ringer's stamp), wakeups_per_s (sleeps + timed naps that ended), ipis_added_per_1k (RES+CAL
from /proc/interrupts, ferry's run minus the no-proxy run at the same rate),
wake_floor_p99_us (perf/wake_floor, this round: the machine's cost of waking
a sleeping thread), and the ferry counters behind them; per_request: each
lcore's wakeups by cause (doorbell, rx, timer, nap) and ferry's TCP segments
in and out, pure ACKs and delayed ACKs, per request (what woke whom: a
peer's lone ACK wakes a sleeping lcore as a request does).

On af_packet and af_xdp the queues have no rx interrupts, but ferry's lcores
sleep on the queues' AF_PACKET or AF_XDP sockets (cap_rx_wake_sockets): all
modes are measured. af_xdp takes one queue per veth, so only 1 lcore there.
A ferry whose lcores cannot sleep (can_sleep 0 in /ferry/lcores) runs only
poll and adaptive (timed naps): conditional and always would be poll there.
"""

import json
import math
import os
import statistics
import subprocess
import time

from . import measure as M
from . import systems as S
from . import topo as T
from . import util

MODES_TAP = ["always", "conditional", "poll", "adaptive"]
MODES_NAP = ["poll", "adaptive"]
# The run-time settings a mode may change; a mode that names none runs with
# the value ferry started with (its defaults: ferry/base/wakeup_defaults.h),
# read from ferry once per group, not restated here.
TUNED_SETTINGS = ("latency_weight_pct", "busy_latency_weight_pct", "spin_yield_us")


def split_yield(m):
    """'conditional@y0' -> ('conditional', 0): the mode with spin_yield_us set;
    'adaptive:25' -> ('adaptive:25', None)."""
    head, sep, n = m.rpartition("@y")
    if sep and n.isdigit():
        return head, int(n)
    return m, None


def mode_yield(m):
    """'adaptive@y0' -> 0 (spin_yield_us); None when not given."""
    return split_yield(m)[1]


def base_mode(m):
    """'adaptive:25' -> 'adaptive'; 'poll@y0' -> 'poll'."""
    return split_yield(m)[0].split(":", 1)[0]


def _weights(m):
    """'adaptive:25' -> (25, None); 'adaptive:25/1000' -> (25, 1000); None if not so."""
    m = split_yield(m)[0]
    if ":" not in m or base_mode(m) != "adaptive":
        return None
    parts = m.split(":", 1)[1].split("/")
    try:
        ws = [int(p) for p in parts]
    except ValueError:
        return None
    if len(ws) > 2 or not all(0 <= w <= 10000 for w in ws):
        return None
    return ws[0], (ws[1] if len(ws) == 2 else None)


def mode_weight(m):
    """'adaptive:25[/B]' -> 25 (latency_weight_pct); None for a plain mode or a bad weight."""
    w = _weights(m)
    return None if w is None else w[0]


def mode_busy_weight(m):
    """'adaptive:A/1000' -> 1000 (busy_latency_weight_pct); None when not given."""
    w = _weights(m)
    return None if w is None else w[1]


def get_setting(fp, key):
    """/ferry/<key>'s current value (an integer)."""
    r = fp.telemetry(f"/ferry/{key}")
    if not isinstance(r.get(key), int):
        raise RuntimeError(f"{key} reply {r}")
    return r[key]


def set_setting(fp, key, value):
    """Sets /ferry/<key> to value at run time; returns value, raises unless ferry echoes it."""
    r = fp.telemetry(f"/ferry/{key},{value}")
    if r.get(key) != value:
        raise RuntimeError(f"{key} reply {r}")
    return value


def mode_order(modes):
    """Table and plot order: the fixed modes, adaptive and its weighted runs by weight."""
    def key(m):
        b = base_mode(m)
        return (MODES_TAP.index(b) if b in MODES_TAP else len(MODES_TAP),
                mode_weight(m) if mode_weight(m) is not None else -1,
                mode_busy_weight(m) if mode_busy_weight(m) is not None else -1,
                mode_yield(m) if mode_yield(m) is not None else -1)
    return sorted(set(modes), key=key)
POINTS = [0, 100, 1000, 4000, 10000, 20000, "sat"]
PER_CONN_RPS = 100   # h2load --rps is per connection; ~125/conn is its ceiling here
SAT_CONNS = 50
LCORE_FIELDS = ("doorbells_rung", "doorbells_suppressed", "sleeps", "naps", "wakeups_nap",
                "wakeups_doorbell", "wakeups_rx", "wakeups_timer", "msgs_out",
                "adaptive_gaps", "adaptive_spins_paid", "adaptive_sleeps_short",
                "adaptive_sleeps_long", "adaptive_gaps_capped", "tx_short_bursts", "tx_drop_stuck", "spin_yields",
                "pre_sleep_work", "doorbell_wakes_timed", "doorbell_wake_ns")

WAKE_FIELDS = ("wakeups_doorbell", "wakeups_rx", "wakeups_timer", "naps")
# Where wakeups come from: the segments ferry got and sent (a peer's lone ACK
# wakes a sleeping core as a request does), per request in "diag".
DIAG_TCP_FIELDS = ("segs_in", "segs_out", "pure_acks", "delayed_acks", "quick_acks",
                   "idle_acks", "idle_acks_early", "retransmits", "rto_fired", "tlp_probes")


# Port kinds without rx interrupts (their lcores sleep on the queues' sockets,
# or nap): the af_packet bars apply to both.
NO_IRQ_PORTS = ("af_packet", "af_xdp", "ferry_packet")


def parse_points(s):
    out = []
    for x in s.split(","):
        x = x.strip()
        if x in ("sat", "saturation"):
            out.append("sat")
        elif x in ("idle",):
            out.append(0)
        elif x:
            v = int(float(x))
            if v < 0:
                raise ValueError(x)
            out.append(v)
    return out


# -- the load ------------------------------------------------------------------
def h2load_args(url, rate, duration_s, warmup_s, log_path):
    if rate == "sat":
        conns, rps = SAT_CONNS, None
    else:
        conns = max(1, math.ceil(rate / PER_CONN_RPS))
        rps = rate / conns
    args = ["h2load", "--h1", "-t", "1", "-c", str(conns), "-D", str(duration_s),
            "--warm-up-time", f"{warmup_s}s", "--log-file", log_path]
    if rps is not None:
        args += ["--rps", f"{rps:g}"]
    return args + [url], conns


def read_log(path, duration_s):
    """(latencies in us of the 2xx responses, non-2xx count) from h2load's --log-file."""
    lat, bad = [], 0
    try:
        with open(path) as f:
            for line in f:
                p = line.split("\t")
                if len(p) < 3:
                    continue
                status, us = int(p[1]), int(p[2])
                if 200 <= status < 300:
                    lat.append(us)
                else:
                    bad += 1
    except OSError:
        pass
    return lat, bad


def pct(sorted_xs, q):
    if not sorted_xs:
        return None
    i = min(len(sorted_xs) - 1, max(0, math.ceil(q * len(sorted_xs)) - 1))
    return sorted_xs[i]


def h2load_errors(text):
    """failed + errored + timeout from h2load's "requests:" line."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("requests:"):
            n = {}
            for part in line[len("requests:"):].split(","):
                w = part.split()
                if len(w) >= 2 and w[0].isdigit():
                    n[w[1]] = int(w[0])
            return n.get("failed", 0) + n.get("errored", 0) + n.get("timeout", 0), n
    return None, {}


def ipis_per_cpu():
    """RES+CAL interrupts per CPU: which CPU was woken (ferry's, or the
    client's and origin's)."""
    irq = M.interrupts_per_cpu()
    return [r + c for r, c in zip(irq["RES"], irq["CAL"])]


POLICY_FIELDS = ("spin_window_ns", "busy_spin_window_ns", "spin_limit_ns", "busy_spin_limit_ns",
                 "wake_cost_ns", "sleep_cpu_ns", "sleep_price_ns", "busy_sleep_price_ns", "nap_ns",
                 "busy_nap_ns")


def lcore_sums(fp):
    """LCORE_FIELDS summed over lcores, and the adaptive policy's state per lcore."""
    got = M.ferry_lcores(fp, LCORE_FIELDS)
    if got is None:
        return None
    s = got["sum"]
    s["policy"] = {name: {k: v.get(k) for k in POLICY_FIELDS}
                   for name, v in got["lcores"].items() if isinstance(v, dict)}
    s["wakeups_by_lcore"] = {name: {k: int(v.get(k, 0)) for k in WAKE_FIELDS}
                             for name, v in got["lcores"].items() if isinstance(v, dict)}
    s["tcp"] = M.ferry_tcp(fp, DIAG_TCP_FIELDS)
    return s


def snapshot(pids, fp):
    """The counters one_load compares: /proc, ferry's lcores, IPIs per CPU."""
    return M.Snapshot(pids, [], None), fp and lcore_sums(fp), ipis_per_cpu()


def openloop_args(exe, url, rate, duration_s, warmup_s):
    hostport, _, path = url.split("//", 1)[1].partition("/")
    host, _, port = hostport.partition(":")
    return [exe, host, port or "80", "/" + path, f"{rate:g}", str(duration_s),
            "--warmup", str(warmup_s)]


def start_hops(topo, seconds):
    """perf/bench_lib/hops.py on ferry's veths for `seconds` (on the client's
    CPU: it wakes for every data frame)."""
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hops.py")
    return subprocess.Popen(["ip", "netns", "exec", topo.proxy, "taskset", "-c",
                             topo.cpu_client, "python3", exe, "--seconds", f"{seconds:.2f}",
                             "--listen-port", str(T.PROXY_PORT)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish_hops(p):
    text, _ = p.communicate(timeout=60)
    res = next((json.loads(l) for l in text.splitlines() if l.startswith("{")), None)
    return res if res is not None else {"error": text.strip()[-300:]}


def one_load(topo, url, rate, duration_s, warmup_s, pids, fp, tag, openloop=None, hops=False):
    """One load run; counters over the main window only (after h2load's
    connections and warm-up, before its teardown). `hops`: also where the
    time of a request goes between ferry's two veths (hops.py), as "hops"."""
    # A mode's label may hold a '/' (adaptive:A/B): not a directory.
    log = os.path.join(topo.work, "h2load-" + tag.replace("/", "_") + ".log")
    if os.path.exists(log):
        os.unlink(log)
    a = b = None
    out = {}
    if rate == 0:
        a = snapshot(pids, fp)
        time.sleep(duration_s)
        b = snapshot(pids, fp)
        out.update(achieved_rps=0.0, requests=0, errors=0, p50_us=None, p99_us=None,
                   p999_us=None, conns=0)
    else:
        use_ol = openloop is not None and rate != "sat"
        if use_ol:
            args, conns = openloop_args(openloop, url, rate, duration_s, warmup_s), None
        else:
            args, conns = h2load_args(url, rate, duration_s, warmup_s, log)
        full = ["ip", "netns", "exec", topo.client, "taskset", "-c", topo.cpu_client] + args
        p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        try:
            # h2load connects, warms up, then measures for duration_s: take the
            # counters over that window (timed here: a benchmark, not a test).
            time.sleep(warmup_s + 0.3)
            a = snapshot(pids, fp)
            hp = start_hops(topo, duration_s - 0.6) if hops and rate != "sat" else None
            time.sleep(duration_s - 0.6)
            b = snapshot(pids, fp)
            if hp is not None:
                out["hops"] = finish_hops(hp)
            text, _ = p.communicate(timeout=duration_s + warmup_s + 60)
        except BaseException:
            p.kill()
            p.wait()
            raise
        if use_ol:
            res = next((json.loads(l) for l in text.splitlines() if l.startswith("{")), None)
            if res is None:
                raise RuntimeError(f"openloop failed ({p.returncode}): {text.strip()[-400:]}")
            out.update(achieved_rps=res["achieved_rps"], requests=res["completed"],
                       errors=res["errors"] + max(0, res["sent"] - res["completed"]),
                       p50_us=res["p50_us"], p99_us=res["p99_us"], p999_us=res["p999_us"],
                       conns=res["conns"], late=res["late"], client="openloop",
                       error_kinds={k: res.get(k) for k in ("err_connect", "err_response",
                                                            "err_closed")})
            if res["errors"]:
                out["openloop_log"] = [l for l in text.splitlines()
                                       if l.startswith("openloop:")][:5]
        else:
            lat, bad = read_log(log, duration_s)
            lat.sort()
            errs, req = h2load_errors(text)
            if errs is None:
                raise RuntimeError(f"h2load failed ({p.returncode}): {text.strip()[-400:]}")
            out.update(achieved_rps=round(len(lat) / duration_s, 1), requests=len(lat),
                       errors=errs + bad, p50_us=pct(lat, 0.50), p99_us=pct(lat, 0.99),
                       p999_us=pct(lat, 0.999), conns=conns, h2load_requests=req,
                       client="h2load")
            if rate == "sat" or errs or bad:
                out["h2load_tail"] = text.strip()[-600:]
    wall = b[0].t - a[0].t
    out["window_s"] = round(wall, 3)
    with open("/proc/loadavg") as f:  # 1-minute load: other work on the machine shows here
        out["loadavg_1m"] = float(f.read().split()[0])
    out["ipi_per_s"] = round(M.ipi_delta(a[0], b[0])[0] / wall, 1)
    out["ipi_per_s_by_cpu"] = [round((y - x) / wall, 1) for x, y in zip(a[2], b[2])]
    if pids:
        out["cpu_s"] = round((b[0].proxy_cpu - a[0].proxy_cpu) / M.CLK_TCK, 3)
        out["cpu_pct"] = round(100.0 * out["cpu_s"] / wall, 1)
        # how that CPU splits: ferry's own system time (syscalls: tap writes,
        # af_packet sends, epoll), and per CPU what /proc/stat charged to
        # softirq (the kernel's packet work, often not in ferry's stime) and
        # to steal (the hypervisor ran someone else: a noisy host)
        out["cpu_sys_pct"] = round(100.0 * (b[0].proxy_sys - a[0].proxy_sys)
                                   / M.CLK_TCK / wall, 1)
        out["cpu_split_pct"] = {
            c: {k: round(100.0 * (b[0].cpu_split[c][k] - a[0].cpu_split[c][k])
                         / M.CLK_TCK / wall, 1)
                for k in ("user", "system", "softirq", "steal", "idle")}
            for c in b[0].cpu_split if c in a[0].cpu_split}
    if fp is not None and a[1] and b[1]:
        d = {k: b[1][k] - a[1][k] for k in LCORE_FIELDS}
        out["ferry"] = d
        out["policy_after"] = b[1]["policy"]
        req = max(1.0, out["achieved_rps"] * wall)
        diag = {f"{name}_{k}": round((v[k] - a[1]["wakeups_by_lcore"][name][k]) / req, 3)
                for name, v in b[1]["wakeups_by_lcore"].items() for k in WAKE_FIELDS
                if name in a[1]["wakeups_by_lcore"]}
        if a[1]["tcp"] and b[1]["tcp"]:
            diag.update({k: round((b[1]["tcp"][k] - a[1]["tcp"][k]) / req, 3)
                         for k in DIAG_TCP_FIELDS})
        out["per_request"] = diag
        out["wakeups_per_s"] = round((d["sleeps"] + d["naps"]) / wall, 1)
        # requests in the window, from the achieved rate (h2load's count covers
        # its whole main duration, the counters this window)
        req_w = out["achieved_rps"] * wall
        out["doorbells_per_1k"] = M.per_1k(d["doorbells_rung"], req_w)
        timed = d.get("doorbell_wakes_timed", 0)
        out["doorbell_wake_us"] = (round(d["doorbell_wake_ns"] / timed / 1000.0, 1)
                                   if timed else None)
        out["wakeups_per_1k"] = M.per_1k(d["sleeps"] + d["naps"], req_w)
    return out


def wake_floor(build, topo):
    """perf/wake_floor at a 1 ms gap: the p99 of waking a sleeping thread, in us."""
    exe = os.path.join(build, "perf", "wake_floor")
    if not os.access(exe, os.X_OK):
        return None
    c0, c1 = (topo.cpu_proxy, topo.cpu_client)
    r = util.run([exe, "--gap-us", "1000", "--samples", "1000", "--cpus", f"{c0},{c1}"],
                 check=False, timeout=120)
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            return round(json.loads(line)["wake_p99_ns"] / 1000.0, 1)
    return None


# -- the sweep -----------------------------------------------------------------
def groups(a):
    out = []
    for port in a.sweep_ports:
        for n in a.sweep_lcores:
            out.append((n, port))
    return out


def util_cpus(spec):
    """'1' -> ['1'], '0-1' -> ['0', '1'], '0,2' -> ['0', '2']."""
    out = []
    for part in str(spec).split(","):
        lo, _, hi = part.partition("-")
        out += [str(c) for c in range(int(lo), int(hi or lo) + 1)]
    return out


def ferry_cpus(topo, nlcores):
    """EAL -l and taskset list: 1 lcore on the proxy CPU, 2 on both."""
    if nlcores == 1:
        return topo.cpu_proxy
    return "0-1" if topo.cpu_proxy != topo.cpu_client else "0"


def run(a, build, out_path, log=print):
    """Runs the sweep, writing JSON lines to out_path as it goes; returns the records."""
    recs = []
    with T.Topology(ferry_ports=a.sweep_ports) as topo, open(out_path, "w") as jf:
        def emit(rec):
            recs.append(rec)
            jf.write(json.dumps(rec, sort_keys=False) + "\n")
            jf.flush()

        meta = {"kind": "wakeup-sweep-meta", "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "rounds": a.rounds, "duration_s": a.duration, "warmup_s": a.sweep_warmup,
                "points": a.sweep_points, "ports": a.sweep_ports, "lcores": a.sweep_lcores,
                "per_conn_rps": PER_CONN_RPS, "sat_conns": SAT_CONNS, "quick": a.quick,
                "client": a.sweep_client,
                "haproxy": bool(a.sweep_haproxy),
                "idle_threshold_us": a.sweep_idle_threshold_us or 200,
                "pool": a.sweep_pool,
                "ferry_bin": a.ferry_bin, "build": build, "topology": topo.describe(),
                "host": {"kernel": os.uname().release, "cpus": os.cpu_count(),
                         "loadavg_at_start": open("/proc/loadavg").read().split()[:3]}}
        emit(meta)
        direct_url = f"http://{T.DIRECT_ORIGIN_IP}/"
        ol = None
        if a.sweep_client == "openloop":
            ol = os.path.join(a.build, "perf", "openloop")
            if not os.access(ol, os.X_OK):
                raise RuntimeError(f"no {ol}: build it (ninja -C {a.build} perf/openloop)")
        url = f"http://{T.FERRY_IP}:{T.PROXY_PORT}/"
        t0 = time.monotonic()
        extra_runs = 2 if a.sweep_haproxy else 1
        plan_n = len(groups(a)) * a.rounds * len(a.sweep_points) * (len(a.sweep_modes) + extra_runs)
        i = 0
        for nl, port in groups(a):
            cpus = ferry_cpus(topo, nl)
            pool = "shared" if a.sweep_pool == "shared-own" else a.sweep_pool
            cfg = S.ferry_config("http", port, pool, wakeup_mode="conditional")
            if a.sweep_pool == "shared-own":
                cfg = cfg.replace('pool = "shared"\n',
                                  'pool = "shared"\nshared_pick = "own_idle_first"\n')
                assert "own_idle_first" in cfg
            if a.sweep_idle_threshold_us:
                # the fixed modes' spin before sleeping (default 200 us)
                cfg = cfg.replace('wakeup_mode = "conditional"\n', 'wakeup_mode = "conditional"\n'
                                  f'idle_threshold_us = {a.sweep_idle_threshold_us}\n')
            try:
                fp = S.FerryProc(topo, a.ferry_bin, cfg, lcores=cpus, cpus=cpus, ports=port)
            except S.Skip as e:
                log(f"sweep: ferry -l {cpus} on {port}: not started: {e}")
                emit({"kind": "skipped", "lcores": nl, "port": port, "reason": str(e)[:300]})
                continue
            hp = None
            try:
                ok = util.wait_until(lambda: topo.probe(topo.client, url, timeout=2) is not None,
                                     max(30.0, a.probe_timeout), 0.1)
                if not ok:
                    raise RuntimeError(f"no answer through ferry on {port}")
                lc = fp.telemetry("/ferry/lcores")
                nlc = sum(1 for v in lc.values() if isinstance(v, dict))
                can_sleep = all(int(v.get("can_sleep", 0)) for v in lc.values()
                                if isinstance(v, dict))
                modes = modes_for(can_sleep, a)
                emit({"kind": "group", "lcores": nlc, "port": port, "can_sleep": can_sleep,
                      "modes": modes})
                pids = M.descendants([fp.pid])
                started = {k: get_setting(fp, k) for k in TUNED_SETTINGS}
                if a.sweep_haproxy:
                    # HAProxy on ferry's first CPU (ferry sleeps meanwhile,
                    # conditional): what a kernel proxy costs at the same rate.
                    hp = S.Haproxy(topo, a)
                    hp_url = hp.start().url_base + "/"
                for rnd in range(a.rounds):
                    wf = wake_floor(a.build, topo)
                    for pt in a.sweep_points:
                        rot = rnd % len(modes)
                        order = modes[rot:] + modes[:rot]
                        got = []
                        for mode in order:
                            i += 1
                            rec = {"mode": mode, "lcores": nlc, "port": port,
                                   "offered_rps": pt if pt != "sat" else "saturation",
                                   "round": rnd, "wake_floor_p99_us": wf}
                            try:
                                set_setting(fp, "wakeup_mode", base_mode(mode))
                                w = mode_weight(mode)
                                w = started["latency_weight_pct"] if w is None else w
                                rec["latency_weight_pct"] = set_setting(fp, "latency_weight_pct", w)
                                b = mode_busy_weight(mode)
                                b = started["busy_latency_weight_pct"] if b is None else b
                                rec["busy_latency_weight_pct"] = set_setting(
                                    fp, "busy_latency_weight_pct", b)
                                y = mode_yield(mode)
                                rec["spin_yield_us"] = set_setting(
                                    fp, "spin_yield_us", started["spin_yield_us"] if y is None else y)
                                time.sleep(0.3)  # the previous run's connections close
                                rec.update(one_load(topo, url, pt, a.duration, a.sweep_warmup,
                                                    pids, fp, f"{nl}-{port}-{mode}", ol,
                                                    hops=a.sweep_hops))
                                rec["cpu_pct_per_lcore"] = round(rec.get("cpu_pct", 0) / nlc, 1)
                            except (RuntimeError, subprocess.SubprocessError, OSError,
                                    ValueError) as e:
                                rec["error"] = str(e)[:300]
                            got.append(rec)
                            log(progress(i, plan_n, t0, rec))
                        # the same rate without the proxy, for the IPIs it adds
                        i += 1
                        ok_runs = [g for g in got if "error" not in g]
                        rate = pt
                        if pt == "sat":
                            rate = (int(statistics.median(g["achieved_rps"] for g in ok_runs))
                                    if ok_runs else 0)
                        base = {"mode": "no-proxy", "lcores": nlc, "port": port,
                                "offered_rps": pt if pt != "sat" else "saturation",
                                "baseline_rate": rate, "round": rnd}
                        try:
                            fp.telemetry("/ferry/wakeup_mode,conditional")
                            time.sleep(0.3)
                            base.update(one_load(topo, direct_url, rate, a.duration,
                                                 a.sweep_warmup, [], None, "direct", ol))
                        except (RuntimeError, subprocess.SubprocessError, OSError,
                                ValueError) as e:
                            base["error"] = str(e)[:300]
                        log(progress(i, plan_n, t0, base))
                        if hp is not None:
                            i += 1
                            hrec = {"mode": "haproxy", "lcores": nlc, "port": port,
                                    "offered_rps": pt if pt != "sat" else "saturation",
                                    "baseline_rate": rate, "round": rnd}
                            try:
                                time.sleep(0.3)
                                hrec.update(one_load(topo, hp_url, rate, a.duration,
                                                     a.sweep_warmup, [hp.proc.pid], None,
                                                     "haproxy", ol))
                                # one HAProxy thread: its CPU is one core's share
                                hrec["cpu_pct_per_lcore"] = hrec.get("cpu_pct")
                            except (RuntimeError, subprocess.SubprocessError, OSError,
                                    ValueError) as e:
                                hrec["error"] = str(e)[:300]
                            log(progress(i, plan_n, t0, hrec))
                            got.append(hrec)
                        fcpus = [int(x) for x in util_cpus(cpus)]
                        for g in got:
                            g["ipis_added_per_s"] = (round(g["ipi_per_s"] - base["ipi_per_s"], 1)
                                                     if "ipi_per_s" in g and "ipi_per_s" in base
                                                     else None)
                            # Those on ferry's CPUs alone: the kernel waking
                            # ferry's lcores (the rest wakes the client and
                            # the origin for ferry's packets, as it would for
                            # any proxy on another CPU).
                            gb, bb = g.get("ipi_per_s_by_cpu"), base.get("ipi_per_s_by_cpu")
                            g["ipis_ferry_cpus_added_per_1k"] = (
                                M.per_1k(sum(gb[c] - bb[c] for c in fcpus if c < len(gb)),
                                         g["achieved_rps"])
                                if gb and bb and g.get("achieved_rps") else None)
                            g["ipis_added_per_1k"] = (
                                M.per_1k(g["ipis_added_per_s"], g["achieved_rps"])
                                if g["ipis_added_per_s"] is not None else None)
                            emit(g)
                        emit(base)
            except (RuntimeError, OSError) as e:
                log(f"sweep: ferry -l {cpus} on {port}: {e}")
                emit({"kind": "failed", "lcores": nl, "port": port, "reason": str(e)[:300],
                      "ferry_log_tail": fp.proc.log_text()[-2000:]})
            finally:
                if hp is not None:
                    hp.stop()
                fp.stop()
    return recs


def modes_for(can_sleep, a):
    return [m for m in a.sweep_modes if base_mode(m) in (MODES_TAP if can_sleep else MODES_NAP)]


def progress(i, n, t0, r):
    el = int(time.monotonic() - t0)
    head = (f"[{i:3d}/{n} {el // 60}:{el % 60:02d}] {r['port']:<9} {r['lcores']} lc "
            f"{str(r['offered_rps']):>10} {r['mode']:<11}")
    if "error" in r:
        return f"{head} error: {r['error'][:160]}"
    s = f"{head} {r['achieved_rps']:>9,.0f} done"
    if r.get("p99_us") is not None:
        s += f"  p50 {r['p50_us']:>6} p99 {r['p99_us']:>6} p99.9 {r['p999_us']:>6} us"
    if "cpu_pct_per_lcore" in r:
        s += f"  cpu {r['cpu_pct_per_lcore']:5.1f}%/lc (sys {r.get('cpu_sys_pct', 0):.0f}%)"
    if "wakeups_per_s" in r:
        s += f"  wakeups {r['wakeups_per_s']:,.0f}/s  doorbells {r['ferry']['doorbells_rung']}"
    s += f"  ipi {r['ipi_per_s']:,.0f}/s  err {r['errors']}"
    return s


# -- the report ----------------------------------------------------------------
def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(recs):
    """{(lcores, port, offered, mode): medians} over the rounds."""
    cells = {}
    for r in recs:
        if "mode" not in r or "error" in r:
            continue
        cells.setdefault((r["lcores"], r["port"], r["offered_rps"], r["mode"]), []).append(r)
    out = {}
    for k, rs in cells.items():
        out[k] = {f: _med([r.get(f) for r in rs]) for f in
                  ("achieved_rps", "cpu_pct_per_lcore", "p50_us", "p99_us", "p999_us",
                   "doorbells_per_1k", "doorbell_wake_us", "wakeups_per_s", "wakeups_per_1k",
                   "ipi_per_s",
                   "ipis_added_per_1k", "ipis_added_per_s", "wake_floor_p99_us",
                   "ipis_ferry_cpus_added_per_1k")}
        out[k]["errors"] = sum(r.get("errors", 0) for r in rs)
        out[k]["n"] = len(rs)
    return out


def point_order(p):
    return (1, 0) if p == "saturation" else (0, p)


def checks(sm, nap_budget_us=100):
    """The issue's bars for adaptive, per (lcores, port, point): a list of
    (where, bar, measured, met)."""
    res = []
    for (nl, port, pt, mode), c in sorted(sm.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                     point_order(kv[0][2]))):
        if base_mode(mode) != "adaptive":
            continue
        g = lambda m, f: (sm.get((nl, port, pt, m)) or {}).get(f)  # noqa: E731
        where = f"{port} {nl} lc {pt}" + ("" if mode == "adaptive" else f" {mode}")
        cpu = c["cpu_pct_per_lcore"]
        best = [x for x in (g("conditional", "cpu_pct_per_lcore"),
                            g("always", "cpu_pct_per_lcore")) if x is not None]
        if pt == "saturation":
            # The rate is not fixed there: compare CPU per request.
            per = {m: (g(m, "cpu_pct_per_lcore") / g(m, "achieved_rps") * 1e4
                       if g(m, "cpu_pct_per_lcore") is not None and g(m, "achieved_rps") else None)
                   for m in (mode, "conditional", "always")}
            bp = [per[m] for m in ("conditional", "always") if per[m] is not None]
            if bp and per[mode] is not None:
                res.append((where, "CPU per request <= 1.1 x min(conditional, always)",
                            f"{per[mode]:.1f} vs {min(bp):.1f} us of CPU per request",
                            per[mode] <= 1.1 * min(bp)))
        elif best and cpu is not None:
            # 1.1x, with a floor of 0.2% of a core (the /proc tick is 1% of a
            # core over 1 s, 0.1% over 10 s)
            lim = max(1.1 * min(best), min(best) + 0.2)
            res.append((where, "CPU/lcore <= 1.1 x min(conditional, always)",
                        f"{cpu:.1f}% vs {min(best):.1f}% (limit {lim:.1f})", cpu <= lim))
        if port in NO_IRQ_PORTS and pt != "saturation" and pt <= 1000 and cpu is not None:
            res.append((where, f"{port} CPU/lcore < 25% at <= 1k req/s", f"{cpu:.1f}%",
                        cpu < 25.0))
        if pt == 0:
            w = c["wakeups_per_s"]
            res.append((where, "idle: ~0% CPU, no periodic wakeups",
                        f"{cpu:.1f}%, {w} wakeups/s", cpu is not None and cpu <= 1.0
                        and w is not None and w <= 1.0))
            continue
        pp, p99 = g("poll", "p99_us"), c["p99_us"]
        if p99 is not None and pp is not None:
            if pt == "saturation" or pt >= 4000:
                res.append((where, "p99 <= 1.2 x poll p99", f"{p99} vs {pp} us "
                            f"(limit {1.2 * pp:.0f})", p99 <= 1.2 * pp))
            else:
                wf = c["wake_floor_p99_us"] or 0
                extra = max(wf, nap_budget_us) if port in NO_IRQ_PORTS else wf
                res.append((where, "p99 <= poll p99 + one wake (wake floor p99"
                            + (" or nap budget" if port in NO_IRQ_PORTS else "") + ")",
                            f"{p99} vs {pp} + {extra:g} us", p99 <= pp + extra))
        wk = c.get("wakeups_per_1k")
        if wk is not None and pt != "saturation" and pt < 4000:
            res.append((where, f"wakeups <= {nl} per request ({nl} x 1000 / 1k req)",
                        f"{wk:.0f}", wk <= nl * 1000.0))
        fi = c.get("ipis_ferry_cpus_added_per_1k")
        if fi is not None:
            lim = 5.0 if (pt == "saturation" or pt >= 10000) else nl * 1000.0
            res.append((where, f"IPIs on ferry's CPUs added <= {lim:g} / 1k req", f"{fi:.1f}",
                        fi <= lim))
        ia = c["ipis_added_per_1k"]
        if ia is not None:
            if pt == "saturation" or pt >= 10000:
                res.append((where, "IPIs added <= 5 / 1k req", f"{ia:.1f}", ia <= 5.0))
            else:
                res.append((where, f"IPIs added <= {nl} x 1000 / 1k req", f"{ia:.0f}",
                            ia <= nl * 1000.0))
            ih = g("haproxy", "ipis_added_per_1k")
            if ih is not None:
                # A kernel proxy on the same CPU at the same rate: the IPIs
                # any proxy on its own CPU adds (mostly the client and the
                # origin woken for its packets).
                res.append((where, "(info) IPIs added by HAProxy at the same rate / 1k req",
                            f"{ih:.0f} (ferry's CPUs: HAProxy "
                            f"{_n(g('haproxy', 'ipis_ferry_cpus_added_per_1k'), 0)}, "
                            f"ferry {_n(fi, 0)})", True))
            ip = g("poll", "ipis_added_per_1k")
            if ip is not None:
                # What the wakeup policy adds over a core that never sleeps:
                # the rest is the kernel waking the client and the origin for
                # packets a proxy on another CPU sent (poll pays it too).
                res.append((where, "(info) IPIs added over poll's / 1k req", f"{ia - ip:.1f}",
                            True))
    return res


def _n(x, d=1):
    return "-" if x is None else f"{x:,.{d}f}"


def markdown(recs, path):
    meta = next((r for r in recs if r.get("kind") == "wakeup-sweep-meta"), {})
    sm = summarize(recs)
    out = ["# ferry wakeup sweep (issue 14)", "",
           f"- {os.path.basename(path)}; started {meta.get('started')}; "
           f"{meta.get('rounds')} round(s) of {meta.get('duration_s')} s per point "
           f"(+{meta.get('warmup_s')} s warm-up); offered load: "
           + ("perf/openloop, evenly spaced, latency from the due time"
              if meta.get("client") == "openloop" else
              f"h2load --h1 --rps, {meta.get('per_conn_rps')} req/s per connection")
           + "; saturation: "
           f"{meta.get('sat_conns')} connections closed-loop",
           f"- host: {meta.get('host')}", "",
           "Medians over the rounds. CPU is ferry's utime+stime from /proc per lcore; "
           "IPIs added are RES+CAL per 1k requests over those of the no-proxy run at the "
           "same rate; wakeups are sleeps and timed naps.", ""]
    for r in recs:
        if r.get("kind") in ("skipped", "failed"):
            out.append(f"- {r['port']} {r['lcores']} lcore(s): {r['kind']}: {r['reason']}")
    grp = sorted({(k[0], k[1]) for k in sm})
    for nl, port in grp:
        out += ["", f"## {port}, {nl} lcore(s)", "",
                "| offered | mode | done req/s | CPU %/lcore | p50 us | p99 us | p99.9 us | "
                "errors | doorbells /1k | doorbell wake us | wakeups /s | IPIs /s | "
                "IPIs added /1k | IPIs added on ferry's CPUs /1k |",
                "|" + "---|" * 14]
        pts = sorted({k[2] for k in sm if k[:2] == (nl, port)}, key=point_order)
        for pt in pts:
            for mode in [m for m in mode_order(k[3] for k in sm)
                         if m not in ("haproxy", "no-proxy")] + ["haproxy", "no-proxy"]:
                c = sm.get((nl, port, pt, mode))
                if c is None:
                    continue
                out.append(f"| {pt} | {mode} | {_n(c['achieved_rps'], 0)} | "
                           f"{_n(c['cpu_pct_per_lcore'])} | {_n(c['p50_us'], 0)} | "
                           f"{_n(c['p99_us'], 0)} | {_n(c['p999_us'], 0)} | {c['errors']} | "
                           f"{_n(c['doorbells_per_1k'], 2)} | {_n(c['doorbell_wake_us'])} | "
                           f"{_n(c['wakeups_per_s'], 0)} | "
                           f"{_n(c['ipi_per_s'], 0)} | {_n(c['ipis_added_per_1k'], 1)} | "
                           f"{_n(c['ipis_ferry_cpus_added_per_1k'], 1)} |")
        wf = _med([c["wake_floor_p99_us"] for k, c in sm.items() if k[:2] == (nl, port)])
        out.append(f"\nwake floor p99 (perf/wake_floor, 1 ms gaps): {_n(wf)} us")
    cs = checks(sm)
    out += ["", "## The issue's bars for adaptive", "",
            f"{sum(1 for c in cs if c[3])} of {len(cs)} met.", "",
            "| where | bar | measured | met |", "|---|---|---|---|"]
    for where, bar, val, ok in cs:
        out.append(f"| {where} | {bar} | {val} | {'yes' if ok else '**no**'} |")
    return "\n".join(out) + "\n"


def plot(recs, stem):
    """Two PNGs: CPU per lcore and p99 against offered load, one line per mode,
    one panel per (port, lcores). Returns the paths written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    sm = summarize(recs)
    grp = sorted({(k[0], k[1]) for k in sm})
    if not grp:
        return []
    paths = []
    for field, ylabel, suffix, logy in (("cpu_pct_per_lcore", "CPU % per lcore", "cpu", False),
                                        ("p99_us", "p99 latency (us)", "p99", True)):
        fig, axes = plt.subplots(1, len(grp), figsize=(5 * len(grp), 4), squeeze=False)
        for ax, (nl, port) in zip(axes[0], grp):
            for mode in [m for m in mode_order(k[3] for k in sm)
                         if m not in ("haproxy", "no-proxy")] + ["haproxy", "no-proxy"]:
                pts = sorted((k[2], c) for k, c in sm.items()
                             if k[:2] == (nl, port) and k[3] == mode and k[2] != "saturation")
                xs = [max(p, 10) for p, c in pts if c[field] is not None]
                ys = [c[field] for p, c in pts if c[field] is not None]
                if field == "cpu_pct_per_lcore" and mode == "no-proxy":
                    continue
                if xs:
                    ax.plot(xs, ys, marker="o", label=mode)
            ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.set_xlabel("offered req/s (idle plotted at 10)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{port}, {nl} lcore(s)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize="small")
        fig.tight_layout()
        p = f"{stem}-{suffix}.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    return paths
