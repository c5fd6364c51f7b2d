"""Proxied bulk download through packet loss (issue 16: "proxied 1 GiB download
through 1% loss: ferry >= HAProxy's rate").

The matrix's topology (topo.py) with one more file at the origin, /big (a
sparse file of --download-mib MiB: the origin nginx sends it from the page
cache), and random loss on the client's namespace: nftables drops that
percentage of the TCP frames entering and leaving it, both ways, whatever
the proxy (there is no netem here; loss.py, the same injector as
perf/tcp_bench.py), and with it TSO and GSO off on the kernel's devices of
that leg, so that every sender puts wire frames on it and loses one in 1/p of
them (a 64 KiB GSO packet would otherwise count as one frame).
So the proxy's sending TCP recovers from loss on the client leg; the origin
leg is clean. Each system (ferry, HAProxy, direct) is started fresh per run,
interleaved round by round; curl in the client namespace downloads /big once
and reports bytes and seconds. For ferry the run also records its TCP
recovery counters (RTOs, fast retransmits, TLPs, RACK, undos) from
/ferry/tcp, and for every system the client namespace's drop count.
"""

import json
import os
import statistics
import subprocess

from . import loss as L
from . import systems as S
from . import topo as T
from . import util

SYSTEMS = ["ferry-local", "haproxy", "direct"]
TCP_RECOVERY = ("rto_fired", "retransmits", "fast_retransmits", "tlp_probes", "rack_lost",
                "prr_episodes", "dsack_undos", "frto_undos", "segs_out")


# The kernel's devices on the lossy client leg: the client's own, HAProxy's
# client-facing veth, the origin's direct veth, and ferry's fc0 (net_ferry_packet
# hands it GSO frames: the kernel cuts them there, as it cuts its own).
KERNEL_CLIENT_LEG = (("client", "cp0"), ("client", "co0"), ("client", "cf0"),
                     ("proxy", "pc0"), ("origin", "oc0"), ("proxy", "fc0"))


def add_loss(topo, pct):
    """Drops pct % of the TCP frames entering and leaving the client's
    namespace; every kernel sender on that leg sends wire frames (loss.py)."""
    if pct <= 0:
        return
    for ns, dev in KERNEL_CLIENT_LEG:
        L.segmentation_off(getattr(topo, ns), dev)
    util.run(["nft", "-f", "-"], ns=topo.client, input=L.rules(pct))


def loss_drops(ns):
    """Frames the loss rules dropped so far (both chains), or None."""
    r = util.run(["nft", "-j", "list", "table", "inet", "benchloss"], ns=ns, check=False)
    if r.returncode != 0:
        return None
    n = 0
    for item in json.loads(r.stdout).get("nftables", []):
        for e in item.get("rule", {}).get("expr", []):
            if "counter" in e:
                n += int(e["counter"]["packets"])
    return n


def make_big(topo, mib):
    path = os.path.join(topo.work, "www", "big")
    with open(path, "wb") as f:
        f.truncate(mib << 20)  # sparse: zeros from the page cache
    os.chmod(path, 0o644)
    return "/big"


def curl(topo, url, timeout):
    r = subprocess.run(["ip", "netns", "exec", topo.client, "taskset", "-c", topo.cpu_client,
                        "curl", "-s", "-o", "/dev/null", "--max-time", str(timeout), "-w",
                        "%{http_code} %{size_download} %{time_total}", url],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout + 30)
    parts = r.stdout.split()
    if r.returncode != 0 or len(parts) != 3:
        raise RuntimeError(f"curl failed ({r.returncode}): {r.stdout.strip()[-200:]}")
    return int(parts[0]), int(parts[1]), float(parts[2])


def ferry_recovery(fp):
    try:
        s = fp.telemetry("/ferry/tcp")["sum"]
        ports = fp.telemetry("/ferry/ports")
    except Exception:
        return None
    r = {k: int(s.get(k, 0)) for k in TCP_RECOVERY}
    # net_ferry_packet's own counters (packet_io.h), frames the kernel dropped
    # on a full rx ring (kernel_ring_drops), the stack's TCP drops
    # (tcp_drop_mem_pressure: payloads dropped while the pool ran low) and
    # frames never sent for want of an mbuf (tx_alloc_fail), both ports summed.
    for p in ports.values():
        for k, v in p.items():
            if k.startswith(("packet_", "tcp_drop_", "tx_alloc_fail", "kernel_ring_drops")):
                r[k] = r.get(k, 0) + int(v)
    return r


def one(sysobj, topo, a, path):
    running = sysobj.start()
    try:
        before = ferry_recovery(running.ferry) if running.ferry else None
        drops0 = loss_drops(topo.client)
        code, size, secs = curl(topo, running.url_base + path, a.download_timeout)
        drops1 = loss_drops(topo.client)
        after = ferry_recovery(running.ferry) if running.ferry else None
    finally:
        sysobj.stop()
    want = a.download_mib << 20
    rec = {"http_code": code, "bytes": size, "seconds": round(secs, 3),
           "mb_s": round(size / secs / 1e6, 1) if secs > 0 else None,
           "ok": code == 200 and size == want}
    if drops0 is not None and drops1 is not None:
        rec["segments_dropped"] = drops1 - drops0
    if before and after:
        rec["ferry_tcp"] = {k: after[k] - before[k] for k in after}
    return rec


def run(a, build, log=print):
    """The runs, interleaved; returns the document (params, runs, summary)."""
    doc = {"kind": "download", "params": {
        "systems": a.download_systems, "mib": a.download_mib, "loss_pct": a.loss,
        "rounds": a.rounds, "ferry_ports": a.ferry_ports,
        "ferry_cc": getattr(a, "ferry_cc", None) or "cubic (ferry's default)",
        "kernel_cc": getattr(a, "kernel_cc", None) or "the host's"}, "runs": []}
    with T.Topology(ferry_ports=[a.ferry_ports], kernel_cc=getattr(a, "kernel_cc", None)) as topo:
        doc["topology"] = topo.describe()
        path = make_big(topo, a.download_mib)
        add_loss(topo, a.loss)
        sysobjs = {n: S.make(n, topo, a) for n in a.download_systems}
        for rnd in range(a.rounds):
            for name, so in sysobjs.items():
                if so.is_ferry and build.get("status") == "failed":
                    continue
                rec = {"round": rnd, "system": name}
                try:
                    rec.update(one(so, topo, a, path))
                except (S.Skip, RuntimeError, subprocess.SubprocessError, OSError) as e:
                    rec["error"] = str(e).strip()[:300] or repr(e)
                doc["runs"].append(rec)
                extra = ""
                if rec.get("ferry_tcp"):
                    t = rec["ferry_tcp"]
                    extra = (f"  rto {t['rto_fired']} rtx {t['retransmits']} "
                             f"tlp {t['tlp_probes']} undo {t['dsack_undos'] + t['frto_undos']}")
                log(f"r{rnd + 1} {name:<12} " + (rec.get("error") or
                    f"{rec['mb_s']:>7} MB/s  {rec['seconds']:>7} s  dropped "
                    f"{rec.get('segments_dropped')}  ok {rec['ok']}{extra}"))
        util.stop_all()
    summ = {}
    for name in a.download_systems:
        ok = [r for r in doc["runs"] if r["system"] == name and r.get("ok")]
        if ok:
            summ[name] = {"mb_s": statistics.median(r["mb_s"] for r in ok), "runs": len(ok)}
            ft = [r["ferry_tcp"] for r in ok if r.get("ferry_tcp")]
            if ft:
                summ[name]["rto_fired"] = statistics.median(t["rto_fired"] for t in ft)
                lost = statistics.median(r.get("segments_dropped") or 0 for r in ok)
                summ[name]["rto_per_1k_dropped"] = (
                    round(1000.0 * summ[name]["rto_fired"] / lost, 2) if lost else None)
    doc["summary"] = summ
    h = summ.get("haproxy", {}).get("mb_s")
    for name, s in summ.items():
        s["vs_haproxy"] = round(s["mb_s"] / h, 3) if h else None
    return doc


def markdown(doc):
    p = doc["params"]
    out = [f"# Proxied download through loss: {p['mib']} MiB, {p['loss_pct']}% of TCP "
           f"segments dropped each way on the client leg", "",
           f"ferry's ports: {p['ferry_ports']}; ferry's congestion control: "
           f"{p.get('ferry_cc', 'cubic')}; the kernel endpoints' (HAProxy's, the origin's, "
           f"the client's): {p.get('kernel_cc') or 'the host'}; "
           f"{p['rounds']} rounds, systems interleaved; "
           "medians of the runs that delivered every byte.", "",
           "| system | MB/s | vs haproxy | ferry RTOs | ferry RTOs per 1k dropped segments "
           "(both ways) | runs |", "|---|---|---|---|---|---|"]
    for name in p["systems"]:
        s = doc["summary"].get(name)
        if not s:
            out.append(f"| {name} | no complete run | | | | 0 |")
            continue
        vs = "–" if s.get("vs_haproxy") is None else f"{s['vs_haproxy']:.2f}x"
        out.append(f"| {name} | {s['mb_s']:.1f} | {vs} | {s.get('rto_fired', '–')} | "
                   f"{s.get('rto_per_1k_dropped', '–')} | {s['runs']} |")
    bad = [r for r in doc["runs"] if r.get("error") or not r.get("ok")]
    if bad:
        out += ["", "Failed or short runs:", ""]
        out += [f"- r{r['round'] + 1} {r['system']}: {r.get('error') or r}" for r in bad]
    return "\n".join(out) + "\n"
