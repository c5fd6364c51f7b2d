"""Medians, ratios and the markdown of a bench document (see perf/bench)."""

import statistics

FERRY_SYSTEMS = ("ferry-local", "ferry-shared", "ferry-relay")

# (key in a run, how to aggregate) for the summary rows.
METRICS = ["rps", "p50_us", "p90_us", "p99_us", "p999_us", "proxy_cpu_s_per_1k",
           "proxy_cpu_pct", "proxy_cpu_other_pct", "ipi_per_1k", "proxy_ctx_per_1k",
           "sys_ctxt_per_1k", "origin_cpu_s_per_1k", "doorbells_rung_per_1k",
           "doorbells_suppressed_per_1k", "sleeps_per_1k", "client_frames_per_req",
           "origin_frames_per_req", "ferry_pure_acks_per_req"]


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs, keys):
    """Groups the successful runs by the tuple of `keys`; one row per group with
    medians of METRICS, min/max req/s, summed errors and the run count."""
    groups = {}
    for r in runs:
        if r.get("error"):
            continue
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    rows = []
    for gk, rs in groups.items():
        row = dict(zip(keys, gk))
        row["n"] = len(rs)
        for m in METRICS:
            row[m] = _median(r.get(m) for r in rs)
        row["rps_min"] = min(r["rps"] for r in rs)
        row["rps_max"] = max(r["rps"] for r in rs)
        row["errors_total"] = sum(r["errors_total"] for r in rs)
        row["requests_total"] = sum(r["requests"] for r in rs)
        rows.append(row)
    return rows


def ratios(summary, systems):
    """ferry / peer for every ferry system that ran, per (body, conns)."""
    out = []
    idx = {(r["body"], r["conns"], r["system"]): r for r in summary}
    for (body, conns, sysname), f in idx.items():
        if sysname not in FERRY_SYSTEMS:
            continue
        peers = [s for s in systems if s not in FERRY_SYSTEMS]
        if sysname == "ferry-local":
            peers.append("ferry-shared")  # local vs shared pool
        for peer in peers:
            p = idx.get((body, conns, peer))
            if not p:
                continue
            out.append({
                "body": body, "conns": conns, "ferry": sysname, "peer": peer,
                "rps": _ratio(f["rps"], p["rps"]),
                "p99": _ratio(f["p99_us"], p["p99_us"]),
                "cpu_per_req": _ratio(f["proxy_cpu_s_per_1k"], p["proxy_cpu_s_per_1k"]),
            })
    return out


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


# -- formatting ------------------------------------------------------------
def _f(x, digits=1, scale=1.0):
    if x is None:
        return "–"
    return f"{x * scale:,.{digits}f}"


def _x(r):
    return "–" if r is None else f"{r:.2f}x"


def _ms(us):
    return "–" if us is None else f"{us / 1000.0:.2f}"


def _k(x):
    return "–" if x is None else f"{x / 1000.0:.1f}k"


def _reason_line(name, st):
    if st["status"] == "skipped":
        return f"- **{name}**: {st['reason_short']}" + (
            f" — {st['reason']}" if st.get("reason") and st["reason"] != st["reason_short"] else "")
    if st["status"] == "failed":
        return f"- **{name}**: FAILED — {st.get('reason', '')}"
    return f"- **{name}**: {st['label']}"


def header_lines(doc):
    h, p = doc["host"], doc["params"]
    lines = [
        f"- date: {doc['started']} (elapsed {doc.get('elapsed_s', 0):.0f} s); host: "
        f"{h['kernel']}, {h['cpus']} CPUs; git {doc['git'].get('rev', '?')}"
        + (" (dirty tree)" if doc["git"].get("dirty") else ""),
        f"- load: wrk -t1, {p['duration_s']} s per run after a {p['warmup_s']} s warm-up, "
        f"{p['rounds']} round(s), " +
        (f"modes in the order {', '.join(p['modes'])} per round" if "modes" in p else
         f"systems interleaved per round in the order {', '.join(p['systems'])}"),
        f"- pinning: wrk + origin nginx on CPU {doc['topology']['cpus']['wrk']}, "
        + (f"ferry on CPUs {p['ferry_cpus']}" if "ferry_cpus" in p else
           f"proxy on CPU {doc['topology']['cpus']['proxy']}")
        + "; origin: nginx 1 worker, access_log off",
    ]
    if p.get("ferry_ports") and "modes" not in p:
        lines.append(f"- ferry: {p['ferry_ports']} ports, EAL -l {p.get('ferry_lcores', '?')}, "
                     f"binary {p.get('ferry_bin', '?')} ({doc.get('ferry_build', {}).get('status', '?')})")
    return lines


def noise_lines(doc):
    """A warning when the proxy's CPU was busy with work not charged to the proxy
    (foreign load) for a large part of the kernel proxies' runs."""
    others = [r.get("proxy_cpu_other_pct") for r in doc["runs"]
              if not r.get("error") and r.get("system") in ("haproxy", "nginx")]
    others = [x for x in others if x is not None]
    if not others:
        return []
    med = statistics.median(others)
    if med < 25:
        return []
    return ["", f"**Noisy machine**: during the kernel proxies' runs their CPU was busy with "
            f"work not charged to them for a median {med:.0f}% of the time (softirq on their "
            f"behalf accounts for some; more means foreign load). Treat absolute numbers with "
            f"care; ratios within one run are still comparable."]


def markdown_matrix(doc):
    out = ["# ferry proxy benchmark", ""]
    out += header_lines(doc)
    out += ["", "## Systems", ""]
    for name in doc["params"]["systems"]:
        out.append(_reason_line(name, doc["systems"][name]))
    out += ["", "Medians over the rounds; req/s also min–max. CPU, IPIs and context switches "
            "per 1k requests (CPU ms/1k = µs per request). IPIs: /proc/interrupts RES+CAL, "
            "all CPUs. 'other %': busy time of the proxy's CPU not charged to the proxy "
            "(softirq on its behalf, or foreign load).", ""]
    summ = doc["summary"]
    for body in doc["params"]["bodies"]:
        for conns in doc["params"]["conns"]:
            rows = [r for r in summ if r["body"] == body and r["conns"] == conns]
            out.append(f"### body {body} ({doc['topology']['bodies'][body]['bytes']} B at "
                       f"{doc['topology']['bodies'][body]['path']}), {conns} connections")
            out.append("")
            out.append("| system | req/s | min–max | p50 ms | p90 ms | p99 ms | errors | "
                       "CPU ms/1k | CPU % | other % | IPIs/1k | proxy cs/1k | sys cs/1k | "
                       "doorbells rung/suppr. per 1k | sleeps/1k | frames/req client leg | "
                       "frames/req origin leg | runs |")
            out.append("|" + "---|" * 18)
            for name in doc["params"]["systems"]:
                st = doc["systems"][name]
                r = next((x for x in rows if x["system"] == name), None)
                if r is None:
                    nfail = sum(1 for x in doc["runs"] if x.get("error") and x["system"] == name
                                and x["body"] == body and x["conns"] == conns)
                    why = (st["reason_short"] if st["status"] != "ok" else
                           f"all {nfail} runs failed (see Failed runs)" if nfail else "not run")
                    out.append(f"| {name} | {why} |" + " |" * 16)
                    continue
                db = "–"
                if r["doorbells_rung_per_1k"] is not None:
                    db = f"{_f(r['doorbells_rung_per_1k'])} / {_f(r['doorbells_suppressed_per_1k'])}"
                out.append(
                    f"| {name} | {_f(r['rps'], 0)} | {_k(r['rps_min'])}–{_k(r['rps_max'])} | "
                    f"{_ms(r['p50_us'])} | {_ms(r['p90_us'])} | {_ms(r['p99_us'])} | "
                    f"{r['errors_total']} | {_f(r['proxy_cpu_s_per_1k'], 1, 1000)} | "
                    f"{_f(r['proxy_cpu_pct'], 0)} | {_f(r['proxy_cpu_other_pct'], 0)} | "
                    f"{_f(r['ipi_per_1k'])} | {_f(r['proxy_ctx_per_1k'])} | "
                    f"{_f(r['sys_ctxt_per_1k'])} | {db} | {_f(r['sleeps_per_1k'])} | "
                    f"{_f(r['client_frames_per_req'], 2)} | {_f(r['origin_frames_per_req'], 2)} | "
                    f"{r['n']} |")
            out.append("")
    out += ["## ferry vs peers", "",
            "Ratios of medians, ferry / peer: req/s above 1 and p99, CPU per request below 1 "
            "favour ferry.", ""]
    ferry_names = [s for s in doc["params"]["systems"] if s in FERRY_SYSTEMS]
    if not ferry_names:
        out.append("(no ferry system selected)")
    for fname in ferry_names:
        st = doc["systems"][fname]
        if st["status"] != "ok":
            out.append(f"- {fname} — {st['reason_short']}")
            continue
        rs = [x for x in doc["ratios"] if x["ferry"] == fname]
        if not rs:
            out.append(f"- {fname}: no successful runs to compare")
            continue
        out.append(f"#### {fname}")
        out.append("")
        out.append("| body | conns | vs | req/s | p99 | CPU/req |")
        out.append("|---|---|---|---|---|---|")
        for x in sorted(rs, key=lambda x: (x["body"], x["conns"], x["peer"])):
            out.append(f"| {x['body']} | {x['conns']} | {x['peer']} | {_x(x['rps'])} | "
                       f"{_x(x['p99'])} | {_x(x['cpu_per_req'])} |")
        out.append("")
    out += cpu_at_lines(doc)
    out += noise_lines(doc)
    failed = [r for r in doc["runs"] if r.get("error")]
    if failed:
        out += ["", "## Failed runs", ""]
        for r in failed:
            out.append(f"- round {r['round']} {r['body']} c={r['conns']} {r['system']}: {r['error']}")
    if doc.get("truncated"):
        out += ["", f"**Stopped early**: {doc['truncated']}"]
    out.append("")
    return "\n".join(out)


def cpu_summary(runs):
    """Medians per (body, system) of the fixed-load runs, and ferry / haproxy."""
    groups = {}
    for r in runs:
        if not r.get("error") and r.get("cpu_us_per_req") is not None:
            groups.setdefault((r["body"], r["system"]), []).append(r)
    rows = []
    for (body, name), rs in sorted(groups.items()):
        rows.append({"body": body, "system": name, "n": len(rs),
                     "cpu_us_per_req": _median(r["cpu_us_per_req"] for r in rs),
                     "cpu_pct": _median(r["cpu_pct"] for r in rs),
                     "achieved_rps": _median(r["achieved_rps"] for r in rs),
                     "p99_us": _median(r["p99_us"] for r in rs),
                     "errors": sum(r["errors"] for r in rs),
                     "wakeup_mode": rs[0].get("wakeup_mode")})
    idx = {(r["body"], r["system"]): r for r in rows}
    for r in rows:
        h = idx.get((r["body"], "haproxy"))
        r["vs_haproxy"] = _ratio(r["cpu_us_per_req"], h["cpu_us_per_req"]) if h else None
    return rows


def cpu_at_lines(doc):
    rows = doc.get("cpu_summary")
    if not rows:
        return []
    rate = doc["params"].get("cpu_at")
    out = ["", f"## Proxy CPU per request at {rate:g} req/s offered", "",
           "An open-loop client (perf/openloop, constant rate) below saturation: the proxy's "
           "utime+stime from /proc over the window, per completed request. ferry runs in "
           "the wakeup mode in the table (set at run time, --cpu-mode), whatever the "
           "saturation runs use: a polling core costs 100% at any load. Medians over the "
           "rounds.", "",
           "| body | system | CPU µs/req | vs haproxy | CPU % | achieved req/s | p99 ms | "
           "errors | ferry mode | runs |", "|" + "---|" * 10]
    for r in rows:
        out.append(f"| {r['body']} | {r['system']} | {_f(r['cpu_us_per_req'], 1)} | "
                   f"{_x(r['vs_haproxy'])} | {_f(r['cpu_pct'], 1)} | "
                   f"{_f(r['achieved_rps'], 0)} | {_ms(r['p99_us'])} | {r['errors']} | "
                   f"{r['wakeup_mode'] or '–'} | {r['n']} |")
    return out + [""]


def offered_lines(doc):
    """The CPU-vs-offered-load sweep of a wakeup report (paced load, per second)."""
    pts = doc.get("offered") or []
    if not pts:
        return []
    p = doc["params"]
    out = ["", "## CPU against offered load", "",
           f"Paced requests (perf/bench_lib/paced.py, {pts[0].get('conns', 16)} keep-alive "
           "connections, "
           f"{p.get('offered_duration_s', '?'):g} s per point; 0 = idle), one point per mode "
           "and rate, the mode switched at run time. CPU is ferry's utime+stime over the "
           "window (100% = one CPU), also divided by its lcores; sleeps, doorbells and kernel "
           "IPIs (all CPUs) per second.", "",
           "| mode | offered req/s | done req/s | p50 ms | p99 ms | errors | ferry CPU % | "
           "CPU % per lcore | sleeps/s | doorbells rung/s | suppressed/s | IPIs/s |",
           "|" + "---|" * 12]
    for r in pts:
        if r.get("error"):
            out.append(f"| {r['mode']} | {_f(r['offered_rps'], 0)} | error: {r['error'][:80]} |"
                       + " |" * 9)
            continue
        out.append(
            f"| {r['mode']} | {_f(r['offered_rps'], 0)} | {_f(r['achieved_rps'], 0)} | "
            f"{_ms(r.get('p50_us'))} | {_ms(r.get('p99_us'))} | {r['errors']} | "
            f"{_f(r['proxy_cpu_pct'], 1)} | {_f(r.get('proxy_cpu_pct_per_lcore'), 1)} | "
            f"{_f(r.get('sleeps_per_s'), 0)} | {_f(r.get('doorbells_rung_per_s'), 0)} | "
            f"{_f(r.get('doorbells_suppressed_per_s'), 0)} | {_f(r['ipi_per_s'], 0)} |")
    return out


def markdown_wakeup(doc):
    p = doc["params"]
    out = ["# ferry wakeup-mode report", ""]
    out += header_lines(doc)
    out.append(f"- one ferry process ({p['wakeup_app']}, {p['ferry_ports']} ports, EAL -l "
               f"{p['ferry_lcores']}, taskset {p['ferry_cpus']}), {p['conns'][0]} connections, body "
               f"{p['bodies'][0]}; the mode switched at run time with /ferry/wakeup_mode,<mode>")
    st = doc["systems"].get("ferry", {})
    if st.get("status") != "ok":
        out += ["", f"ferry: {st.get('reason_short', 'not run')}"
                + (f" — {st['reason']}" if st.get("reason") else ""), ""]
        return "\n".join(out)
    out += ["", "Medians over the rounds, per 1k requests unless said otherwise.", "",
            "| mode | req/s | p50 ms | p99 ms | errors | doorbells rung | doorbells suppressed | "
            "sleeps | kernel IPIs | ferry CPU ms | ferry CPU % | ferry cs | sys cs | runs |",
            "|" + "---|" * 14]
    for mode in p["modes"]:
        r = next((x for x in doc["summary"] if x["mode"] == mode), None)
        if r is None:
            out.append(f"| {mode} | no successful run |" + " |" * 12)
            continue
        out.append(
            f"| {mode} | {_f(r['rps'], 0)} | {_ms(r['p50_us'])} | {_ms(r['p99_us'])} | "
            f"{r['errors_total']} | {_f(r['doorbells_rung_per_1k'], 2)} | "
            f"{_f(r['doorbells_suppressed_per_1k'], 2)} | {_f(r['sleeps_per_1k'], 2)} | "
            f"{_f(r['ipi_per_1k'], 2)} | {_f(r['proxy_cpu_s_per_1k'], 1, 1000)} | "
            f"{_f(r['proxy_cpu_pct'], 0)} | {_f(r['proxy_ctx_per_1k'], 1)} | "
            f"{_f(r['sys_ctxt_per_1k'], 1)} | {r['n']} |")
    out += offered_lines(doc)
    out += noise_lines(doc)
    can_sleep = doc.get("ferry_can_sleep")
    if can_sleep is not None and not can_sleep:
        out += ["", "Note: ferry's lcores report can_sleep=0 (ports without rx interrupts, e.g. "
                "af_packet): they poll in every mode, so only the doorbell counts can differ."]
    failed = [r for r in doc["runs"] if r.get("error")]
    if failed:
        out += ["", "## Failed runs", ""]
        for r in failed:
            out.append(f"- round {r['round']} {r['mode']}: {r['error']}")
    out.append("")
    return "\n".join(out)
