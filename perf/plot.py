#!/usr/bin/python3
"""PNG plots of a perf/bench result (Debian's python3-matplotlib).

  perf/plot.py perf/results/bench-<date>.json [--out DIR]
  perf/plot.py perf/results/wakeup-<date>.json

A matrix result (perf/bench) gives, next to the JSON unless --out:
  <stem>-<body>-rps-p99.png  requests/s (median, min-max bars) and p99 latency
                             vs connections, one line per system
  <stem>-cpu.png             proxy CPU % of a core vs achieved requests/s (each
                             run a point: CPU against the load it carried), CPU
                             ms per 1k requests and kernel IPIs per 1k requests
                             vs connections
A wakeup report (perf/bench --wakeup-report) gives:
  <stem>-wakeup.png          doorbells rung / suppressed, sleeps and kernel IPIs
                             per 1k requests per wakeup mode, and ferry's CPU and
                             requests/s per mode
  <stem>-offered.png         ferry's CPU % per lcore and kernel IPIs/s against
                             the offered (paced) load, one line per mode; idle
                             at 0 (conditional should sit near 0%, poll at 100%)
"""

import argparse
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

STYLE = {  # stable colours per system
    "ferry-local": "#d62728", "ferry-shared": "#ff7f0e", "ferry-relay": "#8c564b",
    "haproxy": "#1f77b4", "nginx": "#2ca02c", "direct": "#7f7f7f",
}


def ok_runs(doc):
    return [r for r in doc["runs"] if not r.get("error")]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def series(runs, system, body, key, conns):
    """(x, median, min, max) per connection count for one system and body."""
    xs, ys, lo, hi = [], [], [], []
    for c in conns:
        v = [r.get(key) for r in runs if r["system"] == system and r["body"] == body
             and r["conns"] == c and r.get(key) is not None]
        if v:
            xs.append(c)
            ys.append(statistics.median(v))
            lo.append(min(v))
            hi.append(max(v))
    return xs, ys, lo, hi


def title_suffix(doc):
    return f"{doc['started'][:16]}, git {doc['git'].get('rev', '?')}"


def label(doc, name):
    st = doc["systems"].get(name, {})
    if st.get("status") != "ok":
        return f"{name} ({st.get('reason_short', 'skipped')})"
    if not any(r["system"] == name for r in ok_runs(doc)):
        return f"{name} (all runs failed)"
    return name


def conns_axis(ax, conns):
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(conns)
    ax.set_xticklabels([str(c) for c in conns])
    ax.set_xlim(min(conns) / 1.4, max(conns) * 1.4)


def nudge(xs, i, n):
    """Spreads the systems a little around each connection count (log x axis)
    so their min-max bars do not hide each other."""
    return [x * (1 + 0.035 * (i - (n - 1) / 2)) for x in xs]


def plot_matrix(doc, stem):
    runs = ok_runs(doc)
    p = doc["params"]
    conns = sorted(p["conns"])
    out = []
    for body in p["bodies"]:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
        nsys = len(p["systems"])
        for i, name in enumerate(p["systems"]):
            col = STYLE.get(name)
            xs, ys, lo, hi = series(runs, name, body, "rps", conns)
            if xs:
                ax1.errorbar(nudge(xs, i, nsys), ys, yerr=[[y - l for y, l in zip(ys, lo)],
                                           [h - y for y, h in zip(ys, hi)]],
                             marker="o", capsize=3, color=col, label=label(doc, name))
            else:
                ax1.plot([], [], color=col, label=label(doc, name))
            xs, ys, _, _ = series(runs, name, body, "p99_us", conns)
            if xs:
                ax2.plot(xs, [y / 1000 for y in ys], marker="o", color=col, label=name)
        ax1.set(xlabel="connections", ylabel="requests/s (median, min-max)",
                title=f"throughput, body {body}")
        ax2.set(xlabel="connections", ylabel="p99 latency (ms, median)",
                title=f"p99 latency, body {body}")
        for ax in (ax1, ax2):
            conns_axis(ax, conns)
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
        ax1.legend(fontsize=8)
        fig.suptitle(f"wrk -> proxy -> nginx origin ({title_suffix(doc)})", fontsize=10)
        fig.tight_layout()
        path = f"{stem}-{body}-rps-p99.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)

    # CPU against the load carried, and the per-request costs.
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.8))
    for name in p["systems"]:
        col = STYLE.get(name)
        pts = [(r["rps"], r["proxy_cpu_pct"]) for r in runs
               if r["system"] == name and r.get("proxy_cpu_pct") is not None]
        if pts:
            ax1.scatter([x for x, _ in pts], [y for _, y in pts], color=col, label=name, s=18)
        for ax, key, scale in ((ax2, "proxy_cpu_s_per_1k", 1000.0), (ax3, "ipi_per_1k", 1.0)):
            for body, ls in zip(p["bodies"], ("-", "--", ":")):
                xs, ys, _, _ = series(runs, name, body, key, conns)
                if xs:
                    ax.plot(xs, [y * scale for y in ys], ls, marker="o", color=col,
                            label=f"{name} {body}")
    ax1.set(xlabel="requests/s carried (each run)", ylabel="proxy CPU (% of one core)",
            title="proxy CPU vs load")
    ax2.set(xlabel="connections", ylabel="proxy CPU ms per 1k requests (= us/request)",
            title="CPU per request")
    ax3.set(xlabel="connections", ylabel="kernel IPIs (RES+CAL) per 1k requests",
            title="IPIs per request")
    for ax in (ax2, ax3):
        conns_axis(ax, conns)
    for ax in (ax1, ax2, ax3):
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    ax1.set_xlim(left=0)
    fig.suptitle(f"proxy cost ({title_suffix(doc)})", fontsize=10)
    fig.tight_layout()
    path = f"{stem}-cpu.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.append(path)
    return out


def plot_wakeup(doc, stem):
    runs = ok_runs(doc)
    modes = doc["params"]["modes"]
    if not runs:
        st = doc["systems"].get("ferry", {})
        print(f"plot: no successful runs ({st.get('reason_short', '')} {st.get('reason', '')})")
        return []

    def m(mode, key, scale=1.0):
        v = med(r.get(key) for r in runs if r["mode"] == mode)
        return 0.0 if v is None else v * scale

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.8))
    keys = [("doorbells_rung_per_1k", "doorbells rung"),
            ("doorbells_suppressed_per_1k", "doorbells suppressed"),
            ("sleeps_per_1k", "sleeps"), ("ipi_per_1k", "kernel IPIs (RES+CAL)")]
    w = 0.8 / len(keys)
    for i, (key, lab) in enumerate(keys):
        xs = [j + (i - (len(keys) - 1) / 2) * w for j in range(len(modes))]
        ax1.bar(xs, [m(mode, key) for mode in modes], w, label=lab)
    ax1.set(ylabel="per 1k requests (median)", title="doorbells, sleeps, IPIs")
    ax2.bar(range(len(modes)), [m(mode, "proxy_cpu_s_per_1k", 1000) for mode in modes],
            color="#d62728")
    ax2.set(ylabel="ferry CPU ms per 1k requests", title="CPU per request")
    ax3.bar(range(len(modes)), [m(mode, "rps") for mode in modes], color="#1f77b4")
    ax3.set(ylabel="requests/s (median)", title="throughput")
    for ax in (ax1, ax2, ax3):
        ax.set_xticks(range(len(modes)))
        ax.set_xticklabels(modes)
        ax.grid(True, axis="y", alpha=0.3)
    ax1.legend(fontsize=8)
    p = doc["params"]
    fig.suptitle(f"ferry wakeup modes: {p['wakeup_app']}, {p['ferry_ports']} ports, -l "
                 f"{p['ferry_lcores']}, {p['conns'][0]} connections ({title_suffix(doc)})",
                 fontsize=10)
    fig.tight_layout()
    path = f"{stem}-wakeup.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path] + plot_offered(doc, stem)


def plot_offered(doc, stem):
    """CPU (per lcore) and kernel IPIs against offered load, one line per mode."""
    pts = [r for r in doc.get("offered") or [] if not r.get("error")]
    if not pts:
        return []
    modes = doc["params"]["modes"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for mode in modes:
        rs = sorted((r for r in pts if r["mode"] == mode), key=lambda r: r["offered_rps"])
        if not rs:
            continue
        xs = [r["offered_rps"] for r in rs]
        ax1.plot(xs, [r.get("proxy_cpu_pct_per_lcore", r["proxy_cpu_pct"]) for r in rs],
                 marker="o", label=mode)
        ax2.plot(xs, [r["ipi_per_s"] for r in rs], marker="o", label=mode)
    ax1.set(xlabel="offered requests/s (0 = idle)", ylabel="ferry CPU % per lcore",
            title="CPU against offered load", ylim=(0, 105))
    ax2.set(xlabel="offered requests/s (0 = idle)", ylabel="kernel IPIs/s (RES+CAL, all CPUs)",
            title="IPIs against offered load")
    top = max(r["offered_rps"] for r in pts)
    for ax in (ax1, ax2):
        ax.set_xscale("symlog", linthresh=100)
        ax.set_xlim(0, max(100.0, top) * 1.5)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    p = doc["params"]
    fig.suptitle(f"ferry wakeup modes under paced load: {p['ferry_ports']} ports, -l "
                 f"{p['ferry_lcores']} ({title_suffix(doc)})", fontsize=10)
    fig.tight_layout()
    path = f"{stem}-offered.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="a perf/bench result file")
    ap.add_argument("--out", default=None, help="directory for the PNGs (default: the JSON's)")
    a = ap.parse_args()
    out_dir = a.out or os.path.dirname(os.path.abspath(a.json))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(a.json))[0])
    if a.json.endswith(".jsonl"):  # perf/bench --wakeup-sweep
        sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
        from bench_lib import sweep
        for p in sweep.plot(sweep.load(a.json), stem):
            print(f"plot: wrote {p}")
        return 0
    with open(a.json) as f:
        doc = json.load(f)
    kind = doc.get("kind")
    if kind == "proxy-matrix":
        paths = plot_matrix(doc, stem)
    elif kind == "wakeup-report":
        paths = plot_wakeup(doc, stem)
    else:
        print(f"plot: {a.json}: unknown kind {kind!r}")
        return 1
    for p in paths:
        print(f"plot: wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
