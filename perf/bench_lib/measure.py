"""One measured run: wrk plus the counters around it.

wrk runs with a Lua done() hook that prints exact percentiles (wrk's own
histogram, microseconds) and the error counts as one JSON line, so nothing is
parsed out of wrk's human-readable units.

Counters (deltas over the wrk run):
  proxy CPU        utime+stime of the proxy's processes (/proc/<pid>/stat:
                   the thread group's total), the pid and all its descendants
                   (nginx master + worker)
  proxy ctx sw     voluntary + nonvoluntary context switches summed over every
                   thread (/proc/<pid>/task/*/status; /proc/<pid>/status alone
                   is the main thread only)
  IPIs             /proc/interrupts rows RES and CAL, summed over the CPUs
  system ctx sw    /proc/stat ctxt
  CPU busy         /proc/stat cpuN: busy jiffies per CPU, to see foreign load
  ferry            /ferry/lcores: doorbells_rung, doorbells_suppressed, sleeps
                   summed over its lcores
"""

import json
import os
import subprocess
import time

from . import util

CLK_TCK = os.sysconf("SC_CLK_TCK")

WRK_LUA = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,' ..
    '"write":%d,"timeout":%d,"status":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
    '"p999_us":%d,"mean_us":%.1f,"max_us":%d,"min_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.timeout, e.status, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency.mean, latency.max,
    latency.min))
end
"""


def write_lua(workdir):
    path = os.path.join(workdir, "report.lua")
    with open(path, "w") as f:
        f.write(WRK_LUA)
    return path


def run_wrk(ns, cpu, url, conns, duration_s, lua, timeout_s=2):
    """wrk -t1 in ns on cpu; returns the done() JSON (dict) or raises."""
    args = ["ip", "netns", "exec", ns, "taskset", "-c", str(cpu), "wrk", "-t1",
            f"-c{conns}", f"-d{duration_s}s", f"--timeout={timeout_s}s", "-s", lua, url]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=duration_s + 30)
    for line in r.stdout.splitlines():
        if line.startswith("BENCHJSON "):
            return json.loads(line[len("BENCHJSON "):])
    raise RuntimeError(f"wrk failed ({r.returncode}): {r.stdout.strip()[-500:]}")


# -- /proc ---------------------------------------------------------------
def _read(path):
    with open(path) as f:
        return f.read()


def descendants(pids):
    """pids and all their descendants (scans /proc once)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = _read(f"/proc/{d}/stat")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def proc_cpu_split(pid):
    """(utime, stime) of a process in ticks; (0, 0) once it is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return 0, 0
    f = stat[stat.rindex(")") + 2:].split()
    return int(f[11]), int(f[12])  # fields 14, 15


def proc_cpu_ticks(pid):
    return sum(proc_cpu_split(pid))


def proc_ctx_switches(pid):
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            for line in _read(f"/proc/{pid}/task/{tid}/status").splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def interrupts_per_cpu():
    """{"RES": [n per CPU], "CAL": [n per CPU]} from /proc/interrupts."""
    out = {"RES": [], "CAL": []}
    with open("/proc/interrupts") as f:
        ncpu = len(f.readline().split())
        for line in f:
            parts = line.split()
            if parts and parts[0].rstrip(":") in out:
                out[parts[0].rstrip(":")] = [int(x) if x.isdigit() else 0
                                             for x in parts[1:1 + ncpu]]
    return out


def interrupts():
    """{"RES": n, "CAL": n} summed over CPUs."""
    return {k: sum(v) for k, v in interrupts_per_cpu().items()}


CPU_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def proc_stat_split():
    """{cpuN: {user, nice, system, idle, iowait, irq, softirq, steal}} in ticks."""
    out = {}
    for line in _read("/proc/stat").splitlines():
        parts = line.split()
        if parts[0].startswith("cpu") and parts[0] != "cpu":
            out[parts[0]] = dict(zip(CPU_STAT_FIELDS, map(int, parts[1:9])))
    return out


def proc_stat():
    """(ctxt, {cpuN: busy_ticks}, {cpuN: total_ticks})."""
    ctxt, busy, total = 0, {}, {}
    for line in _read("/proc/stat").splitlines():
        parts = line.split()
        if parts[0] == "ctxt":
            ctxt = int(parts[1])
        elif parts[0].startswith("cpu") and parts[0] != "cpu":
            v = list(map(int, parts[1:]))
            idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
            busy[parts[0]] = sum(v[:8]) - idle
            total[parts[0]] = sum(v[:8])
    return ctxt, busy, total


FERRY_FIELDS = ("doorbells_rung", "doorbells_suppressed", "sleeps")


def ferry_lcores(fp, fields=FERRY_FIELDS):
    """`fields` summed over lcores plus the raw per-lcore dicts; None on failure."""
    try:
        lc = fp.telemetry("/ferry/lcores")
    except Exception:
        return None
    s = {k: 0 for k in fields}
    for v in lc.values():
        if isinstance(v, dict):
            for k in fields:
                s[k] += int(v.get(k, 0))
    return {"sum": s, "lcores": lc}


TCP_FIELDS = ("segs_out", "pure_acks", "quick_acks", "window_updates", "delayed_acks")


def ferry_tcp(fp, fields=TCP_FIELDS):
    """`fields` of /ferry/tcp summed over lcores and ports; None on failure."""
    try:
        s = fp.telemetry("/ferry/tcp")["sum"]
        return {k: int(s.get(k, 0)) for k in fields}
    except Exception:
        return None


def link_packets(ns, devs):
    """rx + tx packets of the devices `devs` in namespace ns, summed (what
    crosses that link both ways, whoever the proxy is)."""
    r = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=10)
    n = 0
    for link in json.loads(r.stdout or "[]"):
        if link.get("ifname") in devs:
            st = link.get("stats64", {})
            n += int(st.get("rx", {}).get("packets", 0)) + int(st.get("tx", {}).get("packets", 0))
    return n


class Snapshot:
    def __init__(self, proxy_pids, origin_pids, ferry=None, legs=None):
        """legs: {name: (ns, devs)}, links whose frames are counted."""
        self.legs = {k: link_packets(ns, devs) for k, (ns, devs) in (legs or {}).items()}
        self.tcp = ferry_tcp(ferry) if ferry is not None else None
        self.t = time.monotonic()
        split = [proc_cpu_split(p) for p in proxy_pids]
        self.proxy_cpu = sum(u + s for u, s in split)
        self.proxy_sys = sum(s for _, s in split)
        self.cpu_split = proc_stat_split()
        self.proxy_cs = sum(proc_ctx_switches(p) for p in proxy_pids)
        self.origin_cpu = sum(proc_cpu_ticks(p) for p in origin_pids)
        self.irq = interrupts()
        self.ctxt, self.busy, self.total = proc_stat()
        self.ferry = ferry_lcores(ferry) if ferry is not None else None


def ipi_delta(a, b):
    """RES+CAL interrupts between two snapshots, and the per-row deltas."""
    ipi = {k: b.irq[k] - a.irq[k] for k in b.irq}
    return ipi["RES"] + ipi["CAL"], ipi


def ferry_delta(a, b):
    """FERRY_FIELDS summed over lcores between two snapshots; None without ferry."""
    if not (a.ferry and b.ferry):
        return None
    return {k: b.ferry["sum"][k] - a.ferry["sum"][k] for k in FERRY_FIELDS}


def per_1k(x, requests):
    return None if x is None or requests <= 0 else x * 1000.0 / requests


def measure(running, topo, conns, path, duration_s, lua):
    """Counters around one wrk run against running.url_base + path."""
    proxy_pids = descendants(running.pids) if running.pids else []
    origin_pids = descendants(topo.origin_pids())
    # The client leg as the client's namespace sees it (to a kernel proxy or
    # to ferry), the origin leg as the origin's does: frames per request.
    legs = {"client": (topo.client, ("cp0", "cf0")), "origin": (topo.origin, ("op0", "of0"))}
    a = Snapshot(proxy_pids, origin_pids, running.ferry, legs)
    w = run_wrk(topo.client, topo.cpu_client, running.url_base + path, conns, duration_s, lua)
    b = Snapshot(proxy_pids, origin_pids, running.ferry, legs)
    wall = b.t - a.t
    req = w["requests"]
    dur = w["duration_us"] / 1e6 if w["duration_us"] else wall
    r = {
        "requests": req,
        "duration_s": round(dur, 3),
        "rps": round(req / dur, 1) if dur > 0 else 0.0,
        "p50_us": w["p50_us"], "p90_us": w["p90_us"], "p99_us": w["p99_us"],
        "p999_us": w["p999_us"], "mean_us": w["mean_us"], "max_us": w["max_us"],
        "bytes": w["bytes"],
        "errors": {k: w[k] for k in ("connect", "read", "write", "timeout", "status")},
        "errors_total": sum(w[k] for k in ("connect", "read", "write", "timeout", "status")),
        "window_s": round(wall, 3),
    }
    ipis, r["ipi"] = ipi_delta(a, b)
    r["ipi_per_1k"] = per_1k(ipis, req)
    # (wrk's count covers its run; the link counters a little more: the
    # connections' handshakes and closes, a few frames per connection.)
    for leg in a.legs:
        r[f"{leg}_frames_per_req"] = (round((b.legs[leg] - a.legs[leg]) / req, 3)
                                      if req > 0 else None)
    if a.tcp and b.tcp and req > 0:
        for k in TCP_FIELDS:
            r[f"ferry_{k}_per_req"] = round((b.tcp[k] - a.tcp[k]) / req, 3)
    r["sys_ctxt_per_1k"] = per_1k(b.ctxt - a.ctxt, req)
    r["cpu_busy_pct"] = {c: round(100.0 * (b.busy[c] - a.busy[c]) / max(1, b.total[c] - a.total[c]), 1)
                         for c in b.busy}
    origin_s = (b.origin_cpu - a.origin_cpu) / CLK_TCK
    r["origin_cpu_s_per_1k"] = per_1k(origin_s, req)
    if proxy_pids:
        cpu_s = (b.proxy_cpu - a.proxy_cpu) / CLK_TCK
        r["proxy_pids"] = proxy_pids
        r["proxy_cpu_s"] = round(cpu_s, 3)
        r["proxy_cpu_pct"] = round(100.0 * cpu_s / wall, 1) if wall > 0 else None
        r["proxy_cpu_s_per_1k"] = per_1k(cpu_s, req)
        r["proxy_ctx_per_1k"] = per_1k(b.proxy_cs - a.proxy_cs, req)
        # Busy time of the proxy's CPU not charged to the proxy: foreign load,
        # or softirq work done there on the proxy's behalf (not in its
        # utime+stime). High values mean the run was disturbed.
        pc = f"cpu{topo.cpu_proxy}"
        if pc in r["cpu_busy_pct"] and r["proxy_cpu_pct"] is not None:
            r["proxy_cpu_other_pct"] = round(r["cpu_busy_pct"][pc] - r["proxy_cpu_pct"], 1)
    else:
        r.update({"proxy_pids": [], "proxy_cpu_s": None, "proxy_cpu_pct": None,
                  "proxy_cpu_s_per_1k": None, "proxy_ctx_per_1k": None})
    d = ferry_delta(a, b)
    if d is not None:
        r["ferry"] = d
        for k in FERRY_FIELDS:
            r[f"{k}_per_1k"] = per_1k(d[k], req)
        r["ferry_lcores_after"] = b.ferry["lcores"]
    return r


PACED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paced.py")


def measure_offered(running, topo, host, port, path, rate, duration_s, conns=16):
    """Counters around one paced run (paced.py: `rate` requests/s offered, 0 =
    idle). CPU and IPIs are per second here: at rate 0 there is no request to
    divide by."""
    proxy_pids = descendants(running.pids)
    a = Snapshot(proxy_pids, [], running.ferry)
    r = util.run(["taskset", "-c", topo.cpu_client, "python3", PACED, host, port, path,
                  rate, duration_s, "--conns", conns], ns=topo.client, check=False,
                 timeout=duration_s + 30)
    b = Snapshot(proxy_pids, [], running.ferry)
    load = None
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            load = json.loads(line)
    if load is None:
        raise RuntimeError(f"paced.py failed ({r.returncode}): {r.stdout.strip()[-500:]}")
    wall = b.t - a.t
    cpu_s = (b.proxy_cpu - a.proxy_cpu) / CLK_TCK
    out = dict(load)
    out["window_s"] = round(wall, 3)
    out["proxy_cpu_pct"] = round(100.0 * cpu_s / wall, 1)
    out["ipi_per_s"] = round(ipi_delta(a, b)[0] / wall, 1)
    d = ferry_delta(a, b)
    if d is not None:
        out["ferry"] = d
        for k in FERRY_FIELDS:
            out[f"{k}_per_s"] = round(d[k] / wall, 1)
        out["lcores"] = sum(1 for v in b.ferry["lcores"].values() if isinstance(v, dict))
        out["proxy_cpu_pct_per_lcore"] = round(out["proxy_cpu_pct"] / max(1, out["lcores"]), 1)
    return out
