"""Observability end to end: ferry on 2 lcores (net_tap) in a private namespace
with [admin] metrics_address = 127.0.0.1:9180 (a kernel socket inside that
namespace), the Python origin (tests/integration/origin.py) behind a
[[listener]] on 8080, a few requests through it, then:

(a) every /ferry/* telemetry command, as listed by "/", answers JSON of the
    documented shape: types, required keys, one entry per lcore (and port),
    sums that add up, and the request count
(b) GET /metrics, scraped with curl inside the namespace, passes a strict
    parser of the Prometheus text format 0.0.4 (name and label syntax, label
    value escaping, HELP and TYPE before a family's contiguous samples,
    counters named *_total, numeric values, no duplicate series); every
    telemetry counter group is there with the right labels, and
    sum(ferry_http_requests_total) equals the requests sent
(c) /healthz answers 200 "ok", /nope 404, HEAD and POST; requests are parsed
    by lib/http's strict parser: a malformed one gets the proxy's status for
    its reason (a bare LF 400, HTTP/2.0 505, a head over 8 KiB 431), a head
    that arrives in two writes 200; /ferry/exporter and ferry_exporter_*_total
    count what the listener did; a client that connects and sends nothing does
    not block the next scrape for longer than the read timeout
(d) SIGTERM while a client is stuck mid-request: exit 0 at once (an eventfd
    wakes the exporter's thread, which is joined before the ports close)
(e) a metrics address that is already taken: exit 1 naming it and the errno text
"""

import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, check, raw_exchange,  # noqa: E402
                     log_events, require_root, wait_for)

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN = os.path.join(HERE, "origin.py")
PY_PORT = 9000
METRICS = "127.0.0.1:9180"
METRICS_HOST, METRICS_PORT = METRICS.split(":")
LCORES = (0, 1)
PORT = "tap0"


def config(metrics=METRICS):
    return f"""
[admin]
metrics_address = "{metrics}"

[http]
client_idle_timeout_ms = 5000
# No graceful drain at SIGTERM: (d) times the exporter's shutdown, not the
# proxy's (idle upstream connections may hold a drain up to its timeout).
drain_timeout_ms = 0

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[upstream]]
name = "py"
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[port]]
name = "{PORT}"
profile = "net_tap"
iface = "ferry0"
address = "{FERRY_ADDR}/24"
"""


# ---------------------------------------------------------------------------
# A strict parser of the Prometheus text exposition format 0.0.4
# (prometheus.io/docs/instrumenting/exposition_formats). Stricter than the
# format where ferry's output has no business being loose: no blank lines, no
# free comments, HELP then TYPE before every family, no timestamps, no
# whitespace variations.

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class ParseError(Exception):
    pass


def _unescape(s, allowed, where):
    """Resolves backslash escapes; `allowed` maps the escaped char to its value."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or s[i + 1] not in allowed:
                raise ParseError(f"{where}: bad escape in {s!r}")
            out.append(allowed[s[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _parse_labels(line, i, where):
    """Parses `{a="x",b="y"}` starting at line[i] == '{'; returns (dict, next index)."""
    assert line[i] == "{"
    i += 1
    labels = {}
    if i < len(line) and line[i] == "}":
        raise ParseError(f"{where}: empty label set '{{}}' (leave the braces out)")
    while True:
        m = LABEL_NAME.match(line, i)
        if not m:
            raise ParseError(f"{where}: bad label name at column {i + 1}: {line!r}")
        name = m.group(0)
        if name.startswith("__"):
            raise ParseError(f"{where}: label name {name!r} is reserved")
        i = m.end()
        if line[i:i + 2] != '="':
            raise ParseError(f"{where}: expected '=\"' after label {name!r}: {line!r}")
        i += 2
        j, raw = i, []
        while True:
            if j >= len(line):
                raise ParseError(f"{where}: unterminated label value: {line!r}")
            c = line[j]
            if c == "\\":
                if j + 1 >= len(line) or line[j + 1] not in '\\"n':
                    raise ParseError(f"{where}: bad escape in label value: {line!r}")
                raw.append(line[j:j + 2])
                j += 2
                continue
            if c == '"':
                break
            raw.append(c)
            j += 1
        value = _unescape("".join(raw), {"\\": "\\", '"': '"', "n": "\n"}, where)
        if name in labels:
            raise ParseError(f"{where}: label {name!r} twice")
        labels[name] = value
        i = j + 1
        if i < len(line) and line[i] == ",":
            i += 1
            continue
        if i < len(line) and line[i] == "}":
            return labels, i + 1
        raise ParseError(f"{where}: expected ',' or '}}' at column {i + 1}: {line!r}")


def _parse_value(s, where):
    if s in ("NaN", "+Inf", "-Inf"):
        return float(s)
    if not FLOAT.fullmatch(s):
        raise ParseError(f"{where}: value {s!r} is not a number")
    return float(s)


def parse_prometheus(text):
    """Returns {family name: {"type", "help", "samples": {frozenset(labels): value}}}."""
    if not text:
        raise ParseError("empty exposition")
    if not text.endswith("\n"):
        raise ParseError("the exposition does not end with a line feed")
    families = {}
    current = None      # the family whose samples may follow now
    closed = set()      # families whose samples are over (must stay contiguous)
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {n}"
        if line == "":
            raise ParseError(f"{where}: blank line")
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) ([^ ]+) (.+)", line)
            if not m:
                raise ParseError(f"{where}: not a HELP or TYPE line: {line!r}")
            kind, name, rest = m.groups()
            if not METRIC_NAME.fullmatch(name):
                raise ParseError(f"{where}: bad metric name {name!r}")
            if kind == "HELP":
                if name in families:
                    raise ParseError(f"{where}: second HELP for {name}")
                if current is not None:
                    closed.add(current)
                families[name] = {"help": _unescape(rest, {"\\": "\\", "n": "\n"}, where),
                                  "type": None, "samples": {}}
                current = name
            else:
                if name != current or families[name]["type"] is not None:
                    raise ParseError(f"{where}: TYPE {name} not right after its HELP")
                if rest not in TYPES:
                    raise ParseError(f"{where}: unknown type {rest!r}")
                if rest == "counter" and not name.endswith("_total"):
                    raise ParseError(f"{where}: counter {name} does not end in _total")
                if rest == "gauge" and name.endswith("_total"):
                    raise ParseError(f"{where}: gauge {name} ends in _total")
                if rest == "summary":
                    raise ParseError(f"{where}: ferry exports no {rest} ({name})")
                if rest == "histogram" and name.endswith(("_total", "_bucket", "_sum", "_count")):
                    raise ParseError(f"{where}: histogram {name} has a reserved suffix")
                families[name]["type"] = rest
            continue
        m = METRIC_NAME.match(line)
        if not m:
            raise ParseError(f"{where}: no metric name: {line!r}")
        name, i = m.group(0), m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = _parse_labels(line, i, where)
        if line[i:i + 1] != " ":
            raise ParseError(f"{where}: expected one space before the value: {line!r}")
        rest = line[i + 1:]
        if " " in rest:
            raise ParseError(f"{where}: timestamp or trailing text after the value: {line!r}")
        value = _parse_value(rest, where)
        # A histogram's series: <family>_bucket (with le), _sum, _count.
        series = name
        for suffix in ("_bucket", "_sum", "_count"):
            stem = name[:-len(suffix)]
            if name.endswith(suffix) and families.get(stem, {}).get("type") == "histogram":
                series, name = suffix, stem
                break
        if families.get(name, {}).get("type") == "histogram":
            if series == name:
                raise ParseError(f"{where}: histogram {name} sample without _bucket/_sum/_count")
            if (series == "_bucket") != ("le" in labels):
                raise ParseError(f"{where}: le on a {series} series of {name}")
            labels = dict(labels, __series=series)
        if name in closed or (name in families and name != current):
            raise ParseError(f"{where}: samples of {name} are not contiguous")
        if name not in families or families[name]["type"] is None:
            raise ParseError(f"{where}: sample of {name} before its HELP and TYPE")
        fam = families[name]
        key = frozenset(labels.items())
        if key in fam["samples"]:
            raise ParseError(f"{where}: duplicate series {name}{labels}")
        if fam["type"] == "counter" and not (value >= 0 and value != float("inf")):
            raise ParseError(f"{where}: counter {name} = {value}")
        fam["samples"][key] = value
    for name, fam in families.items():
        if fam["type"] == "histogram":
            check_histogram(name, fam)
    return families


def check_histogram(name, fam):
    """Per label set: buckets in le order, cumulative, +Inf among them and
    equal to _count; a _sum."""
    sets = {}
    for key, value in fam["samples"].items():
        d = dict(key)
        series = d.pop("__series")
        le = d.pop("le", None)
        s = sets.setdefault(frozenset(d.items()), {"buckets": [], "sum": None, "count": None})
        if series == "_bucket":
            s["buckets"].append((_parse_value(le, name), value))
        else:
            s[series[1:]] = value
    for labels, s in sets.items():
        les = [le for le, _ in s["buckets"]]
        counts = [c for _, c in sorted(s["buckets"])]
        if not les or les[-1] != float("inf") or les != sorted(les):
            raise ParseError(f"histogram {name}{dict(labels)}: buckets not in le order up to +Inf")
        if any(b < a for a, b in zip(counts, counts[1:])):
            raise ParseError(f"histogram {name}{dict(labels)}: buckets not cumulative")
        if s["count"] is None or s["sum"] is None or s["count"] != counts[-1]:
            raise ParseError(f"histogram {name}{dict(labels)}: _count is not the +Inf bucket")


def self_test_parser():
    """The parser must reject what it claims to reject."""
    good = ('# HELP a_total x \\\\ y\\n\n# TYPE a_total counter\n'
            'a_total{l="q\\"\\\\\\n",m="2"} 3\na_total 4e3\n'
            '# HELP g g\n# TYPE g gauge\ng -1.5\ng{x="NaN"} NaN\n')
    fams = parse_prometheus(good + '# HELP h x\n# TYPE h histogram\nh_bucket{le="0.5"} 1\n'
                            'h_bucket{le="+Inf"} 2\nh_sum 0.75\nh_count 2\n')
    check(fams["a_total"]["samples"][frozenset({("l", 'q"\\\n'), ("m", "2")})] == 3
          and fams["a_total"]["help"] == "x \\ y\n",
          "parser self-test: escapes in labels and HELP are decoded")
    bad = {
        "no final LF": "# HELP a_total x\n# TYPE a_total counter\na_total 1",
        "counter without _total": "# HELP a x\n# TYPE a counter\na 1\n",
        "sample before TYPE": "# HELP a_total x\na_total 1\n",
        "no HELP": "# TYPE a_total counter\na_total 1\n",
        "bad name": "# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
        "bad label name": '# HELP a x\n# TYPE a gauge\na{1l="x"} 1\n',
        "unquoted label": "# HELP a x\n# TYPE a gauge\na{l=x} 1\n",
        "bad escape": '# HELP a x\n# TYPE a gauge\na{l="\\t"} 1\n',
        "raw quote": '# HELP a x\n# TYPE a gauge\na{l="""} 1\n',
        "value not a number": "# HELP a x\n# TYPE a gauge\na one\n",
        "duplicate series": '# HELP a x\n# TYPE a gauge\na{l="1"} 1\na{l="1"} 2\n',
        "duplicate label": '# HELP a x\n# TYPE a gauge\na{l="1",l="2"} 1\n',
        "not contiguous": ("# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\n"
                           "b 1\na{l=\"2\"} 2\n"),
        "timestamp": "# HELP a x\n# TYPE a gauge\na 1 1700000000\n",
        "blank line": "# HELP a x\n# TYPE a gauge\n\na 1\n",
        "negative counter": "# HELP a_total x\n# TYPE a_total counter\na_total -1\n",
        "gauge with _total": "# HELP a_total x\n# TYPE a_total gauge\na_total 1\n",
        "histogram not cumulative": ('# HELP h x\n# TYPE h histogram\nh_bucket{le="1"} 2\n'
                                     'h_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'),
        "histogram without +Inf": ('# HELP h x\n# TYPE h histogram\nh_bucket{le="1"} 1\n'
                                   'h_sum 1\nh_count 1\n'),
        "histogram count not +Inf": ('# HELP h x\n# TYPE h histogram\nh_bucket{le="+Inf"} 2\n'
                                     'h_sum 1\nh_count 1\n'),
        "histogram bucket without le": ('# HELP h x\n# TYPE h histogram\nh_bucket 1\n'
                                        'h_sum 1\nh_count 1\n'),
    }
    for what, text in bad.items():
        try:
            parse_prometheus(text)
        except ParseError:
            continue
        raise AssertionError(f"parser self-test: accepted {what}: {text!r}")
    print(f"ok: parser self-test rejects {len(bad)} malformed expositions")


# ---------------------------------------------------------------------------
# Telemetry shapes.

def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_counter_dict(d, what, required=()):
    check(isinstance(d, dict) and d and all(is_uint(v) for v in d.values()),
          f"{what}: a dict of non-negative integers ({len(d) if isinstance(d, dict) else d})")
    missing = [k for k in required if k not in d]
    check(not missing, f"{what}: has {', '.join(required)}" + (f" (missing {missing})" if missing else ""))


def check_keys(d, spec, what):
    """spec: {key: type or predicate}."""
    check(isinstance(d, dict), f"{what} is a dict")
    for k, t in spec.items():
        check(k in d, f"{what} has '{k}'")
        v = d[k]
        ok = t(v) if callable(t) and not isinstance(t, type) else isinstance(v, t)
        check(ok, f"{what}.{k} = {v!r} has the right type")


EXPORTER_COUNTERS = ("connections", "reads", "requests", "scrapes", "rejected", "read_timeouts",
                     "closed_early", "write_failed", "healthz_draining", "scrape_allocations")


def exporter(f):
    return f.telemetry("/ferry/exporter")


def lcore_keys(suffix=""):
    return {f"lcore{c}{suffix}" for c in LCORES}


def stable(f, cmd, sum_check, tries=5):
    """A command whose per-lcore blocks must add up to its sum: counters may
    move between the two reads under traffic, so ask again a few times."""
    for _ in range(tries):
        d = f.telemetry(cmd)
        if sum_check(d):
            return d, True
        time.sleep(0.2)
    return d, False


def check_telemetry(f, requests_sent, rejected_sent):
    listed = f.telemetry("/")
    check(isinstance(listed, list) and all(isinstance(c, str) for c in listed),
          f"'/' lists the commands ({len(listed)})")
    expected = {"/ferry/version", "/ferry/config", "/ferry/ports", "/ferry/net", "/ferry/tcp",
                "/ferry/lcores", "/ferry/wakeup_mode", "/ferry/idle_threshold_us",
                "/ferry/latency_weight_pct", "/ferry/busy_latency_weight_pct",
                "/ferry/spin_yield_us", "/ferry/http", "/ferry/upstreams", "/ferry/rings", "/ferry/exporter",
                "/ferry/events", "/ferry/config/ports", "/ferry/config/listeners",
                "/ferry/config/routes", "/ferry/config/upstreams", "/ferry/reload"}
    ferry_cmds = {c for c in listed if c.startswith("/ferry/")}
    check(expected <= ferry_cmds, f"'/' lists every ferry command (missing {expected - ferry_cmds})")
    out = {}
    for cmd in sorted(ferry_cmds):
        out[cmd] = f.telemetry(cmd)
        check(isinstance(out[cmd], dict), f"{cmd} answers a JSON object")
    for cmd in sorted(ferry_cmds - expected):
        print(f"note: {cmd} is not known to this test; checked only for a JSON object")

    check_keys(out["/ferry/version"], {"version": str, "dpdk": str}, "/ferry/version")
    check(re.fullmatch(r"\d+\.\d+\.\d+", out["/ferry/version"]["version"]) is not None,
          "/ferry/version: version is x.y.z")

    # The same file again (test_reload covers the rest).
    check(out["/ferry/reload"].get("result") == "unchanged"
          and out["/ferry/reload"].get("config_generation") == 0,
          f"/ferry/reload of the unchanged file: {out['/ferry/reload']}")
    c = out["/ferry/config"]
    check_keys(c, {"source": str, "drivers_dir": str, "workers": is_uint, "wakeup_mode": str,
                   "idle_threshold_us": is_uint, "latency_weight_pct": is_uint,
                   "busy_latency_weight_pct": is_uint, "nap_budget_us": is_uint,
                   "spin_yield_us": is_uint, "neighbor_timeout_s": is_uint, "ports": is_uint,
                   "metrics_address": str}, "/ferry/config")
    check(c["workers"] == len(LCORES) and c["ports"] == 1, "/ferry/config: 2 workers, 1 port")
    check(c["metrics_address"] == METRICS, f"/ferry/config: metrics_address {c['metrics_address']}")
    check(c["source"].endswith("ferry.toml"), "/ferry/config: source is the config file")
    # The whole configuration, part by part (issue 19, item 6).
    cp = out["/ferry/config/ports"]
    check(set(cp) == {PORT} and cp[PORT]["profile"] == "net_tap"
          and cp[PORT]["address"] == f"{FERRY_ADDR}/24" and cp[PORT]["iface"] == "ferry0",
          f"/ferry/config/ports: {cp}")
    cl = out["/ferry/config/listeners"]
    check(cl == {"web": {"port": 8080, "on": "*", "address": "", "max_connections": 0,
                         "default_upstream": "py"}}, f"/ferry/config/listeners: {cl}")
    check(out["/ferry/config/routes"] == {}, f"/ferry/config/routes: {out['/ferry/config/routes']}")
    cu = out["/ferry/config/upstreams"]
    check(set(cu) == {"py"} and cu["py"]["servers"] == f"{PEER_ADDR}:{PY_PORT} weight 1"
          and cu["py"]["balance"] == "round_robin" and cu["py"]["pool"] == "local"
          and cu["py"]["connect_timeout_ms"] == 5000 and cu["py"]["health_check_path"] == "",
          f"/ferry/config/upstreams: {cu}")

    p = out["/ferry/ports"]
    check(set(p) == {PORT}, f"/ferry/ports: one entry per port ({set(p)})")
    p = p[PORT]
    check_keys(p, {"port_id": is_uint, "device": str, "driver": str, "profile": str,
                   "iface": str, "mac": lambda v: re.fullmatch(r"([0-9A-F]{2}:){5}[0-9A-F]{2}", v.upper()) is not None,
                   "address": lambda v: v == f"{FERRY_ADDR}/24", "mtu": is_uint,
                   "queues": lambda v: v == len(LCORES), "rx_desc": is_uint, "tx_desc": is_uint,
                   "mbufs": is_uint, "mbufs_available": is_uint, "mbufs_in_use": is_uint,
                   "steering": str, "fault_injection": lambda v: v == 0,
                   "cap_rx_interrupts": lambda v: v in (0, 1), "cap_rss": lambda v: v in (0, 1),
                   "offloads": str, "ipackets": is_uint, "opackets": is_uint,
                   "ibytes": is_uint, "obytes": is_uint, "imissed": is_uint,
                   "ierrors": is_uint, "oerrors": is_uint, "rx_nombuf": is_uint,
                   "eth_rx": is_uint, "tcp_rx": is_uint}, "/ferry/ports.tap0")
    check(p["ipackets"] > 0 and p["opackets"] > 0, "/ferry/ports: the port moved packets")

    net = out["/ferry/net"]
    check(set(net) == lcore_keys(f"/{PORT}"), f"/ferry/net: one block per lcore and port ({set(net)})")
    names = None
    for k, d in net.items():
        check_counter_dict(d, f"/ferry/net.{k}", ("eth_rx", "arp_rx", "ipv4_rx", "tcp_rx",
                                                  "tx_frames"))
        names = names or set(d)
        check(set(d) == names, f"/ferry/net.{k}: same counters as the other lcores")
    check(sum(d["tcp_rx"] for d in net.values()) > 0, "/ferry/net: TCP segments were received")

    def tcp_adds_up(d):
        blocks = [d[k] for k in d if k != "sum"]
        return all(d["sum"][n] == sum(b[n] for b in blocks) for n in d["sum"])
    tcp, ok = stable(f, "/ferry/tcp", tcp_adds_up)
    check(set(tcp) == lcore_keys(f"/{PORT}") | {"sum"}, "/ferry/tcp: per lcore and port, and sum")
    for k, d in tcp.items():
        check_counter_dict(d, f"/ferry/tcp.{k}", ("conn_opened_passive", "conn_established",
                                                  "segs_in", "segs_out", "retransmits"))
        check(set(d) == set(tcp["sum"]), f"/ferry/tcp.{k}: same counters as sum")
    check(ok, "/ferry/tcp: sum is the sum of the lcores")
    check(tcp["sum"]["conn_established"] >= requests_sent, "/ferry/tcp: connections established")

    lc = out["/ferry/lcores"]
    check(set(lc) == lcore_keys(), f"/ferry/lcores: one entry per worker ({set(lc)})")
    for k, d in lc.items():
        check_keys(d, {"lcore": lambda v, k=k: f"lcore{v}" == k, "queue": is_uint, "socket": int,
                       "mode": lambda v: v in ("conditional", "always", "poll", "adaptive"),
                       "can_sleep": lambda v: v in (0, 1), "can_nap": lambda v: v in (0, 1),
                       "spin_window_ns": is_uint, "busy_spin_window_ns": is_uint,
                       "spin_limit_ns": is_uint, "busy_spin_limit_ns": is_uint,
                       "wake_cost_ns": is_uint, "sleep_cpu_ns": is_uint,
                       "sleep_price_ns": is_uint, "busy_sleep_price_ns": is_uint,
                       "nap_ns": is_uint, "busy_nap_ns": is_uint,
                       "state": lambda v: v in ("asleep", "running"),
                       "busy_permille": lambda v: is_uint(v) and v <= 1000,
                       "polls": is_uint, "busy_polls": is_uint, "sleeps": is_uint,
                       "msgs_in": is_uint, "msgs_out": is_uint, "ring_full": is_uint,
                       "current_sleep_ns": is_uint, "rx_packets": is_uint,
                       "tx_packets": is_uint}, f"/ferry/lcores.{k}")
        check(d["polls"] >= d["busy_polls"], f"/ferry/lcores.{k}: busy_polls <= polls")
    check(sorted(d["queue"] for d in lc.values()) == list(range(len(LCORES))),
          "/ferry/lcores: each worker owns one queue")

    check(out["/ferry/wakeup_mode"] == {"wakeup_mode": "adaptive"}, "/ferry/wakeup_mode: the default")
    check(out["/ferry/idle_threshold_us"] == {"idle_threshold_us": 200}, "/ferry/idle_threshold_us")
    check(out["/ferry/latency_weight_pct"] == {"latency_weight_pct": 1000},
          "/ferry/latency_weight_pct: the default")
    check(out["/ferry/busy_latency_weight_pct"] == {"busy_latency_weight_pct": 1000},
          "/ferry/busy_latency_weight_pct: the default")
    check(out["/ferry/spin_yield_us"] == {"spin_yield_us": 20}, "/ferry/spin_yield_us: the default")

    def http_adds_up(d):
        blocks = [d[k] for k in lcore_keys()]
        return all(d["sum"][n] == sum(b[n] for b in blocks) for n in d["sum"])
    h, ok = stable(f, "/ferry/http", http_adds_up)
    check(set(h) == lcore_keys() | {"sum", "rejected_by_reason", "active_connections",
                                    "configurations_held"},
          f"/ferry/http: per lcore, sum, rejected_by_reason, active_connections ({set(h)})")
    check(h["configurations_held"] == 1, f"one configuration held: {h['configurations_held']}")
    for k in lcore_keys() | {"sum"}:
        check_counter_dict(h[k], f"/ferry/http.{k}", ("requests", "requests_rejected",
                                                      "responses_2xx", "client_accepted",
                                                      "client_closed", "upstream_connects"))
        check(set(h[k]) == set(h["sum"]), f"/ferry/http.{k}: same counters as sum")
    check(ok, "/ferry/http: sum is the sum of the lcores")
    check_counter_dict(h["rejected_by_reason"], "/ferry/http.rejected_by_reason",
                       ("te_and_cl", "bare_lf", "bad_method_token"))
    check(is_uint(h["active_connections"]), "/ferry/http: active_connections")
    check(h["sum"]["requests"] == requests_sent,
          f"/ferry/http: requests = {h['sum']['requests']}, sent {requests_sent}")
    check(h["sum"]["requests_rejected"] == rejected_sent
          and sum(h["rejected_by_reason"].values()) == rejected_sent
          and h["rejected_by_reason"]["te_and_cl"] == rejected_sent,
          "/ferry/http: the smuggling attempt is counted under te_and_cl")

    u = out["/ferry/upstreams"]
    check(set(u) == {"py/0"}, f"/ferry/upstreams: one entry per server ({set(u)})")
    check_keys(u["py/0"], {"server": lambda v: v == f"{PEER_ADDR}:{PY_PORT}",
                           "state": lambda v: v == "up", "pool": lambda v: v == "local",
                           "weight": lambda v: v == 1, "active": is_uint, "idle": is_uint,
                           "connections": is_uint, "requests": is_uint, "failures": is_uint,
                           "marked_down": is_uint, "responses": is_uint,
                           "latency_avg_us": is_uint}, "/ferry/upstreams.py/0")
    check(u["py/0"]["requests"] == requests_sent and u["py/0"]["responses"] == requests_sent,
          "/ferry/upstreams: every request went to the one server and was answered")

    r = out["/ferry/rings"]
    pairs = {f"lcore{a}/lcore{b}" for a in LCORES for b in LCORES if a != b}
    check(set(r) == pairs, f"/ferry/rings: one entry per ordered worker pair ({set(r)})")
    for k, d in r.items():
        a, b = (int(x[5:]) for x in k.split("/"))
        check_keys(d, {"from_lcore": lambda v, a=a: v == a, "to_lcore": lambda v, b=b: v == b,
                       "depth": is_uint, "capacity": lambda v: is_uint(v) and v > 0,
                       "high_water": is_uint, "ring_full": is_uint}, f"/ferry/rings.{k}")
        check(d["depth"] <= d["high_water"] <= d["capacity"],
              f"/ferry/rings.{k}: depth {d['depth']} <= high_water {d['high_water']} <= "
              f"capacity {d['capacity']}")
    ev = out["/ferry/events"]
    check(isinstance(ev, dict) and set(ev) == {"lines", "suppressed", "server_down", "server_up"}
          and all(is_uint(v) for v in ev.values()),
          f"/ferry/events: lines, suppressed, server_down, server_up ({ev})")
    x = out["/ferry/exporter"]
    check_counter_dict(x, "/ferry/exporter", EXPORTER_COUNTERS)
    check(set(x) == set(EXPORTER_COUNTERS), f"/ferry/exporter: exactly its counters ({set(x)})")
    check(x["connections"] >= 1 and x["requests"] >= 1,
          f"/ferry/exporter: the /healthz request was counted ({x})")

    sent = sum(d["msgs_out"] for d in lc.values())
    if sent:
        check(max(d["high_water"] for d in r.values()) >= 1,
              f"/ferry/rings: {sent} cross-core messages left a high-water mark")
    check(sum(d["ring_full"] for d in r.values()) <= sum(d["ring_full"] for d in f.telemetry(
        "/ferry/lcores").values()), "/ferry/rings: ring_full per pair within the lcores' total")
    return out


# ---------------------------------------------------------------------------
# The scrape.

# Sends a request head in two writes (the second cut in a field name), the
# second only once the test says so; prints the response as hex.
SPLIT_CLIENT = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
print("sent", flush=True)
sys.stdin.readline()
s.sendall(b"st: x\r\n\r\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.hex())
"""


def check_split_head(ns, f):
    """A head whose second part is sent only after the exporter read the first:
    the parser resumes with the request line it already parsed (same request
    object and field storage across reads) and answers 200."""
    x0 = exporter(f)
    p = ns.popen([sys.executable, "-c", SPLIT_CLIENT, METRICS_HOST, METRICS_PORT],
                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(p.stdout.readline().strip() == "sent", "split head: the first part is sent")
        check(wait_for(lambda: exporter(f)["reads"] > x0["reads"], bool, timeout=30),
              "the exporter read the first part of the head")
        p.stdin.write("\n")
        p.stdin.flush()
        out, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()  # our own child, by pid
            p.wait(10)
    got = bytes.fromhex(out.strip() or "")
    check(got.startswith(b"HTTP/1.1 200 ") and got.endswith(b"\r\n\r\nok\n"),
          f"a head in two writes, the second after the first was read: 200 ok ({got[:30]!r})")
    x1 = exporter(f)
    check(x1["reads"] - x0["reads"] == 2 and x1["requests"] - x0["requests"] == 1
          and x1["rejected"] == x0["rejected"],
          f"/ferry/exporter: two reads, one request ({x0} -> {x1})")

def curl(ns, *args, timeout=30):
    return ns.run(["curl", "-s", "--max-time", str(timeout - 5), *args], check=False,
                  timeout=timeout)


def scrape(ns, path="/metrics", *extra):
    """(status, headers dict (lower-case names), body) of one request with curl."""
    r = ns.run(["curl", "-s", "-i", "--max-time", "20", *extra, f"http://{METRICS}{path}"],
               check=False, timeout=30)
    # Text mode turns CRLF into LF; ferry's bodies hold no CR.
    head, _, body = r.stdout.partition("\n\n")
    lines = head.split("\n")
    m = re.match(r"HTTP/1\.1 (\d{3}) ", lines[0]) if lines else None
    if not m:
        return None, {}, r.stdout
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(m.group(1)), headers, body


def samples(fams, name):
    if name not in fams:
        raise AssertionError(f"metrics: {name} is not exported")
    return {tuple(sorted(k)): v for k, v in fams[name]["samples"].items()}


def check_metrics(ns, fams, tel, requests_sent, rejected_sent):
    lc = [str(c) for c in LCORES]
    check(all(n.startswith("ferry_") for n in fams), "metrics: every name starts with ferry_")
    empty = [n for n, fam in fams.items() if not fam["samples"]]
    check(not empty, f"metrics: all {len(fams)} families have samples (empty: {empty})")

    def by(name, **want):
        """The value of the one series of `name` whose labels include `want`."""
        hits = [v for k, v in samples(fams, name).items()
                if all(dict(k).get(a) == b for a, b in want.items())]
        check(len(hits) == 1, f"metrics: one series {name}{want}")
        return hits[0]

    def group(prefix, names, label_sets, tel_blocks):
        """Every telemetry counter of a group is a counter family with exactly the
        expected series, each at least the telemetry value (telemetry was read
        first; counters only grow)."""
        def metric(n):
            # Nanosecond counters are exported in seconds (Prometheus base units).
            return (f"{prefix}{n[:-3]}_seconds_total", 1e-9) if n.endswith("_ns") \
                else (f"{prefix}{n}_total", 1)
        missing = [n for n in names if metric(n)[0] not in fams]
        check(not missing, f"metrics: every counter of the group as {prefix}*_total ({len(names)})"
              + (f" (missing {missing})" if missing else ""))
        for n in names:
            name, scale = metric(n)
            fam = fams[name]
            if fam["type"] != "counter":
                raise AssertionError(f"{name} is a {fam['type']}, not a counter")
            s = samples(fams, name)
            if set(s) != label_sets:
                raise AssertionError(f"{name}: series {sorted(s)}, want {sorted(label_sets)}")
            for labels, block in tel_blocks.items():
                if s[labels] < block[n] * scale * (1 - 1e-9):
                    raise AssertionError(f"{name}{dict(labels)} = {s[labels]} < "
                                         f"telemetry {block[n]} x {scale}")
        print(f"ok: {prefix}*_total: {len(names)} counters x {len(label_sets)} series, "
              f"each >= its telemetry value")

    per_lcore_port = {(("lcore", c), ("port", PORT)) for c in lc}
    per_lcore = {(("lcore", c),) for c in lc}
    net_names = set(tel["/ferry/net"][f"lcore0/{PORT}"])
    group("ferry_net_", net_names, per_lcore_port,
          {(("lcore", k[5:].split("/")[0]), ("port", PORT)): b for k, b in tel["/ferry/net"].items()})
    tcp_names = set(tel["/ferry/tcp"]["sum"])
    group("ferry_tcp_", tcp_names, per_lcore_port,
          {(("lcore", k[5:].split("/")[0]), ("port", PORT)): b
           for k, b in tel["/ferry/tcp"].items() if k != "sum"})
    http_names = set(tel["/ferry/http"]["sum"])
    # Status classes and generated codes are labels of one family each
    # (issue 19, item 7), not names.
    # So are the timeouts' kinds; timeouts_upstream (the sum of the five upstream
    # kinds) keeps a family of its own, so that a sum() counts each timeout once.
    split = {n for n in http_names
             if re.fullmatch(r"responses_[1-5]xx|generated_\d{3}|timeouts_[a-z]+", n)
             and n != "timeouts_upstream"}
    check(len(split) >= 9, f"telemetry: /ferry/http has the status classes and codes ({sorted(split)})")
    group("ferry_http_", http_names - split, per_lcore,
          {(("lcore", k[5:]),): tel["/ferry/http"][k] for k in lcore_keys()})
    stale = [n for n in fams if re.fullmatch(
        r"ferry_http_(responses_[1-5]xx|generated_\d{3}|timeouts_(?!upstream_)[a-z]+)_total", n)]
    check(not stale, f"metrics: no per-status names left ({stale})")
    for fam_name, label, pre in (("ferry_http_responses_total", "class", "responses_"),
                                 ("ferry_http_generated_responses_total", "code", "generated_"),
                                 ("ferry_http_timeouts_total", "kind", "timeouts_")):
        s = samples(fams, fam_name)
        want = {tuple(sorted({("lcore", c), (label, n[len(pre):])})) for c in lc
                for n in split if n.startswith(pre)}
        check(fams[fam_name]["type"] == "counter" and set(s) == want,
              f"{fam_name}: a series per lcore and {label} ({len(want)})")
        low = [(k, n) for k in lcore_keys() for n in split if n.startswith(pre)
               and s[tuple(sorted({("lcore", k[5:]), (label, n[len(pre):])}))]
               < tel["/ferry/http"][k][n]]
        check(not low, f"{fam_name}: every series >= its telemetry value (below: {low})")
    ok2xx = sum(v for k, v in samples(fams, "ferry_http_responses_total").items()
                if dict(k)["class"] == "2xx")
    check(ok2xx >= requests_sent - rejected_sent,
          f"sum(ferry_http_responses_total{{class=\"2xx\"}}) = {ok2xx:g}")
    # /ferry/lcores mixes reactor and io counters with non-counters.
    non_counters = {"lcore", "queue", "socket", "mode", "can_sleep", "state", "busy_permille",
                    "current_sleep_ns", "can_nap", "spin_window_ns", "busy_spin_window_ns",
                    "spin_limit_ns", "busy_spin_limit_ns", "wake_cost_ns", "sleep_cpu_ns",
                    "sleep_price_ns", "busy_sleep_price_ns", "nap_ns", "busy_nap_ns"}
    lcore_counters = set(tel["/ferry/lcores"]["lcore0"]) - non_counters
    io_names = {"rx_packets", "rx_bursts", "tx_packets", "tx_short_bursts", "tx_drop_stuck",
                "mem_pressure"}
    check(io_names <= lcore_counters, "telemetry: /ferry/lcores has the io counters")
    group("ferry_io_", io_names, per_lcore,
          {(("lcore", k[5:]),): b for k, b in tel["/ferry/lcores"].items()})
    group("ferry_reactor_", lcore_counters - io_names, per_lcore,
          {(("lcore", k[5:]),): b for k, b in tel["/ferry/lcores"].items()})
    for g in ("ferry_lcore_asleep", "ferry_lcore_can_sleep"):
        s = samples(fams, g)
        check(set(s) == per_lcore and all(v in (0, 1) for v in s.values())
              and fams[g]["type"] == "gauge", f"{g}: a 0/1 gauge per lcore")
    for g in ("ferry_lcore_spin_window_seconds", "ferry_lcore_wake_cost_seconds",
              "ferry_lcore_sleep_price_seconds"):
        s = samples(fams, g)
        check(set(s) == per_lcore and fams[g]["type"] == "gauge", f"{g}: a gauge per lcore")
    check(all(0 < v < 0.1 for v in samples(fams, "ferry_lcore_wake_cost_seconds").values()),
          "ferry_lcore_wake_cost_seconds: measured at start on every lcore, in seconds")
    check(not [n for n in fams if n.endswith("_ns") or n.endswith("_ns_total")],
          "metrics: no nanosecond names (seconds, the Prometheus base unit)")
    start = samples(fams, "ferry_start_time_seconds")
    check(len(start) == 1 and time.time() - 3600 < list(start.values())[0] <= time.time() + 1,
          f"ferry_start_time_seconds: when ferry started ({start})")

    # HTTP: requests, rejections by reason, the gauge.
    req = sum(samples(fams, "ferry_http_requests_total").values())
    check(req == requests_sent, f"sum(ferry_http_requests_total) = {req:g}, sent {requests_sent}")
    rej = samples(fams, "ferry_http_rejected_total")
    reasons = set(tel["/ferry/http"]["rejected_by_reason"])
    check({frozenset(dict(k)) for k in rej} == {frozenset({"lcore", "reason"})}
          and {dict(k)["reason"] for k in rej} == reasons
          and len(rej) == len(reasons) * len(LCORES),
          f"ferry_http_rejected_total: one series per lcore and reason ({len(reasons)} reasons)")
    te_cl = sum(v for k, v in rej.items() if dict(k)["reason"] == "te_and_cl")
    check(te_cl == rejected_sent and sum(rej.values()) == rejected_sent,
          f"ferry_http_rejected_total{{reason=\"te_and_cl\"}} summed = {te_cl:g}")
    act = samples(fams, "ferry_http_active_connections")
    check(set(act) == per_lcore and fams["ferry_http_active_connections"]["type"] == "gauge",
          "ferry_http_active_connections: a gauge per lcore")

    # Upstream servers.
    srv = {("server", f"{PEER_ADDR}:{PY_PORT}"), ("upstream", "py")}
    for name, want in (("ferry_upstream_server_up", 1), ("ferry_upstream_requests_total", requests_sent),
                       ("ferry_upstream_responses_total", requests_sent),
                       ("ferry_upstream_failures_total", 0), ("ferry_upstream_marked_down_total", 0),
                       ("ferry_upstream_server_weight", 1)):
        s = samples(fams, name)
        check(set(s) == {tuple(sorted(srv))} and s[tuple(sorted(srv))] == want,
              f"{name}{{upstream=\"py\",server=\"{PEER_ADDR}:{PY_PORT}\"}} = {want}")
    for name in ("ferry_upstream_connections_total", "ferry_upstream_latency_seconds_total",
                 "ferry_upstream_active_connections", "ferry_upstream_idle_connections"):
        s = samples(fams, name)
        check(set(s) == {tuple(sorted(srv))}, f"{name}: one series per server")
    check(by("ferry_upstream_latency_seconds_total", upstream="py") > 0,
          "ferry_upstream_latency_seconds_total > 0 after answered requests")

    # Latency histograms (the parser checked their shape: le order,
    # cumulative, _count = +Inf).
    def hist(name):
        check(fams.get(name, {}).get("type") == "histogram", f"{name}: a histogram")
        out = {}
        for k, v in fams[name]["samples"].items():
            d = dict(k)
            series, le = d.pop("__series"), d.pop("le", None)
            out[(series, le, tuple(sorted(d.items())))] = v
        return out
    h = hist("ferry_http_request_duration_seconds")
    check(h[("_count", None, ())] == requests_sent and h[("_sum", None, ())] > 0
          and len([k for k in h if k[0] == "_bucket"]) == 15,
          f"ferry_http_request_duration_seconds: {requests_sent} requests in 15 buckets "
          f"(0.0005 .. 10, +Inf), sum {h[('_sum', None, ())]:g} s")
    # Answers by listener, route and class: no [[route]] here, so the
    # listener's default and "none" (nothing routed), five classes each.
    rr = {tuple(sorted((a, b) for a, b in k)): v
          for k, v in samples(fams, "ferry_http_route_responses_total").items()}
    routes = {dict(k)["route"] for k in rr}
    by_route = {r: sum(v for k, v in rr.items() if dict(k)["route"] == r) for r in routes}
    check(len(rr) == 10 and routes == {"default", "none"}
          and {dict(k)["listener"] for k in rr} == {"web"}
          and {dict(k)["class"] for k in rr} == {"1xx", "2xx", "3xx", "4xx", "5xx"}
          and by_route["default"] == requests_sent and by_route["none"] == 0,
          f"ferry_http_route_responses_total{{listener,route,class}}: {requests_sent} answers "
          f"on route default, none elsewhere ({by_route})")
    # Per listener: one series each for "web", accepted >= telemetry's sum
    # (scraped after it), none refused, none open after the load.
    web = (("listener", "web"),)
    acc = samples(fams, "ferry_http_listener_connections_total")
    check(set(acc) == {web} and acc[web] >= tel["/ferry/http"]["sum"]["client_accepted"] > 0
          and samples(fams, "ferry_http_listener_refused_total") == {web: 0}
          and fams["ferry_http_listener_active_connections"]["type"] == "gauge",
          f"ferry_http_listener_*{{listener}}: web accepted {acc.get(web)}, refused 0")
    h = hist("ferry_upstream_response_seconds")
    key = tuple(sorted(srv))
    check(h[("_count", None, key)] == requests_sent
          and h[("_bucket", "+Inf", key)] == requests_sent
          and abs(h[("_sum", None, key)] - by("ferry_upstream_latency_seconds_total", upstream="py"))
          < 1e-6,
          "ferry_upstream_response_seconds{upstream,server}: one sample per response, its _sum "
          "the latency counter's")

    # Ports.
    port_names = ["ipackets", "opackets", "ibytes", "obytes", "imissed", "ierrors", "oerrors",
                  "rx_nombuf"]
    for n in port_names:
        s = samples(fams, f"ferry_port_{n}_total")
        t = tel["/ferry/ports"][PORT][n]
        if set(s) != {(("port", PORT),)} or s[(("port", PORT),)] < t:
            raise AssertionError(f"ferry_port_{n}_total: {s}, telemetry {t}")
    print(f"ok: ferry_port_*_total: {len(port_names)} ethdev stats per port, >= telemetry")
    for g in ("ferry_port_mbufs", "ferry_port_mbufs_available", "ferry_port_mbufs_in_use"):
        s = samples(fams, g)
        check(set(s) == {(("port", PORT),)} and fams[g]["type"] == "gauge", f"{g}: a gauge per port")
    check(by("ferry_port_mbufs_available", port=PORT) + by("ferry_port_mbufs_in_use", port=PORT)
          <= by("ferry_port_mbufs", port=PORT) + 0.5,
          "ferry_port_mbufs_available + ferry_port_mbufs_in_use <= ferry_port_mbufs")

    # Rings.
    pairs = {tuple(sorted({("from", a), ("to", b)})) for a in lc for b in lc if a != b}
    for name, typ in (("ferry_ring_depth", "gauge"), ("ferry_ring_capacity", "gauge"),
                      ("ferry_ring_high_water", "gauge"), ("ferry_ring_full_total", "counter")):
        s = samples(fams, name)
        check(set(s) == pairs and fams[name]["type"] == typ, f"{name}: a {typ} per ordered pair")
    for k, d in tel["/ferry/rings"].items():
        a, b = (x[5:] for x in k.split("/"))
        key = tuple(sorted({("from", a), ("to", b)}))
        check(samples(fams, "ferry_ring_capacity")[key] == d["capacity"]
              and samples(fams, "ferry_ring_high_water")[key] >= d["high_water"],
              f"ferry_ring_*{{from=\"{a}\",to=\"{b}\"}} agree with /ferry/rings")

    info = samples(fams, "ferry_build_info")
    check(len(info) == 1 and list(info.values())[0] == 1
          and dict(list(info)[0])["version"] == tel["/ferry/version"]["version"],
          "ferry_build_info{version,dpdk} 1")
    check(by("ferry_workers") == len(LCORES), "ferry_workers = 2")

    # The exporter's own counters, one unlabelled series each.
    group("ferry_exporter_", set(EXPORTER_COUNTERS), {()}, {(): tel["/ferry/exporter"]})
    check(by("ferry_exporter_scrapes_total") >= 1, "ferry_exporter_scrapes_total counts this scrape")


def check_documented(tel):
    """Every counter telemetry shows is named in docs/OPERATIONS.md (issue 19: the
    docs list every counter with its meaning): as `name`, or in the docs' short
    form after a sibling, `ipv4_drop_truncated`, `_bad_version`."""
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                            "OPERATIONS.md")).read()
    quoted = set(re.findall(r"`([a-z0-9_]+)`", doc))

    def documented(n):
        if n in quoted:
            return True
        parts = n.split("_")
        for i in range(1, len(parts)):
            head, tail = "_".join(parts[:i]), "_".join(parts[i:])
            if "_" + tail in quoted and any(q.startswith(head + "_") for q in quoted):
                return True
        return False
    names = {"/ferry/net": set(tel["/ferry/net"][f"lcore0/{PORT}"]),
             "/ferry/tcp": set(tel["/ferry/tcp"]["sum"]),
             "/ferry/http": {n for n in tel["/ferry/http"]["sum"]
                             if not re.fullmatch(r"responses_[1-5]xx|generated_\d{3}", n)},
             "/ferry/lcores": set(tel["/ferry/lcores"]["lcore0"])}
    for cmd, ns in names.items():
        missing = sorted(n for n in ns if not documented(n))
        check(not missing, f"docs/OPERATIONS.md names every {cmd} counter ({len(ns)})"
              + (f": missing {missing}" if missing else ""))


def check_promtool(body):
    """Prometheus's own linter on the scrape (issue 19): names, units, suffixes,
    HELP and TYPE as the naming guide has them. deploy/install-deps.sh installs
    Debian's prometheus package, which carries promtool."""
    promtool = shutil.which("promtool")
    check(promtool is not None, "promtool is installed (deploy/install-deps.sh: prometheus)")
    r = subprocess.run([promtool, "check", "metrics"], input=body, text=True,
                       capture_output=True, timeout=60)
    problems = (r.stdout + r.stderr).strip()
    check(r.returncode == 0 and not problems,
          f"promtool check metrics: exit {r.returncode}" + (f"\n{problems}" if problems else ""))


def main():
    require_root()
    self_test_parser()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config()) as f:
        up = [fl for _, _, w, fl in log_events(f.log_text(), "ferry.telemetry")
              if w == "metrics listening"]
        check(up == [{"url": "http://127.0.0.1:9180/metrics"}],
              f"ferry logs the metrics listener: {up}")
        origin = ns.popen([sys.executable, ORIGIN, PEER_ADDR, str(PY_PORT)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            check(origin.stdout.readline().strip() == "listening", "python origin listening")
            base = f"http://{FERRY_ADDR}:8080"

            # /healthz first: the listener answers before any traffic.
            st, hd, body = scrape(ns, "/healthz")
            check(st == 200 and body == "ok\n", f"/healthz: 200 ok ({st}, {body!r})")

            # Requests through the proxy: five single ones, one keep-alive pair.
            sent = 0
            for i in range(5):
                r = curl(ns, "-o", "/dev/null", "-w", "%{http_code}", f"{base}/hello/{i}")
                check(r.stdout == "200", f"GET /hello/{i} through ferry: {r.stdout}")
                sent += 1
            r = curl(ns, "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code}\n",
                     f"{base}/a", f"{base}/b")
            check(r.stdout.split() == ["200", "200"], f"two requests on one connection: {r.stdout.split()}")
            sent += 2
            # A smuggling attempt (Transfer-Encoding with Content-Length): 400, counted
            # by reason, not as a request.
            code = f"""
import socket
s = socket.create_connection(("{FERRY_ADDR}", 8080), timeout=10)
s.sendall(b"POST /x HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n")
print(s.recv(100).split(b"\\r\\n")[0].decode())
"""
            r = ns.run([sys.executable, "-c", code], check=False, timeout=20)
            check(r.stdout.strip() == "HTTP/1.1 400 Bad Request", f"smuggling attempt: {r.stdout.strip()}")
            rejected = 1
            # The proxy counts a request when its head arrives and closes the
            # client connection after the response: wait for every close, so
            # no counter moves while (a) reads them.
            check(wait_for(lambda: f.telemetry("/ferry/http")["active_connections"] == 0,
                           bool, timeout=30),
                  "every client connection closed")

            # (a)
            tel = check_telemetry(f, sent, rejected)
            check_documented(tel)

            # (b)
            st, hd, body = scrape(ns)
            check(st == 200, f"GET /metrics: {st}")
            check(hd.get("content-type") == "text/plain; version=0.0.4; charset=utf-8",
                  f"Content-Type: {hd.get('content-type')}")
            check(hd.get("connection") == "close", "Connection: close")
            check(int(hd.get("content-length", -1)) == len(body.encode()),
                  f"Content-Length matches the body ({len(body)} bytes)")
            fams = parse_prometheus(body)
            nseries = sum(len(x["samples"]) for x in fams.values())
            check(True, f"the scrape parses strictly: {len(fams)} families, {nseries} series")
            check_metrics(ns, fams, tel, sent, rejected)
            check_promtool(body)
            # Item 7: a scrape after the first allocates nothing (the exporter
            # counts the heap allocations its thread makes while rendering).
            a0 = exporter(f)["scrape_allocations"]
            for i in range(3):
                curl(ns, "-o", "/dev/null", f"{base}/hello/more{i}")  # counters move
                check(scrape(ns)[0] == 200, "another scrape")
            a1 = exporter(f)["scrape_allocations"]
            check(a0 > 0 and a1 == a0, f"scrapes after the first allocate nothing "
                  f"(scrape_allocations {a0} after the first ones, {a1} after 3 more)")
            sent += 3

            # (c)
            st, _, body = scrape(ns, "/nope")
            check(st == 404, f"/nope: {st}")
            st, hd, body = scrape(ns, "/metrics", "-I")
            check(st == 200 and body == "" and int(hd["content-length"]) > 1000,
                  f"HEAD /metrics: 200, Content-Length {hd.get('content-length')}, no body")
            st, hd, _ = scrape(ns, "/metrics", "-X", "POST", "-d", "x")
            check(st == 405 and hd.get("allow") == "GET, HEAD", f"POST /metrics: {st}, Allow")
            st, _, body = scrape(ns, "/metrics?x=1")
            check(st == 200 and "ferry_build_info" in body, "a query string is ignored")
            x0 = exporter(f)
            bad = (("no version", b"GET /metrics\r\n\r\n", b"400"),
                   ("HTTP/2.0", b"GET /metrics HTTP/2.0\r\n\r\n", b"505"),
                   ("absolute form without Host", b"GET http://x/metrics HTTP/1.1\r\n\r\n", b"400"),
                   ("no Host in HTTP/1.1", b"GET /metrics HTTP/1.1\r\n\r\n", b"400"),
                   ("field without colon", b"GET /metrics HTTP/1.1\r\nHost\r\n\r\n", b"400"),
                   ("head over 8 KiB", b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000, b"431"),
                   # lib/http's parser takes CRLF only (the lenient copy the
                   # exporter had took a bare LF).
                   ("bare-LF HTTP/1.0 request", b"GET /healthz HTTP/1.0\n\n", b"400"),
                   ("bare LF after a field", b"GET /healthz HTTP/1.1\r\nHost: x\n\r\n", b"400"))
            for what, payload, status in bad:
                got = raw_exchange(ns, payload, host=METRICS_HOST, port=METRICS_PORT)
                check(got.startswith(b"HTTP/1.1 " + status + b" "), f"{what}: {status.decode()} "
                      f"({got[:40]!r})")
            x1 = exporter(f)
            check(x1["rejected"] - x0["rejected"] == len(bad)
                  and x1["requests"] == x0["requests"] and x1["scrapes"] == x0["scrapes"],
                  f"/ferry/exporter: {len(bad)} more rejected, no request or scrape ({x0} -> {x1})")
            got = raw_exchange(ns, b"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                               host=METRICS_HOST, port=METRICS_PORT)
            check(got.startswith(b"HTTP/1.1 200 ") and got.endswith(b"\r\n\r\nok\n"),
                  "absolute-form request with Host: 200 ok")
            check_split_head(ns, f)
            # A client that connects and says nothing: the next scrape waits at most
            # the read timeout (2 s), and the silent client gets 408.
            c0 = exporter(f)["connections"]
            silent = ns.popen([sys.executable, "-c", f"""
import socket, sys
s = socket.create_connection(("127.0.0.1", {METRICS.split(':')[1]}))
s.settimeout(15)
sys.stdout.write(s.recv(100).split(b"\\r\\n")[0].decode())
"""], stdout=subprocess.PIPE, text=True)
            # The exporter serves one client at a time: once it accepted the
            # silent one, the scrape below waits behind it.
            check(wait_for(lambda: exporter(f)["connections"] > c0, bool, timeout=30),
                  "the exporter accepted the silent client")
            t0 = time.monotonic()
            st, _, body = scrape(ns, "/healthz")
            waited = time.monotonic() - t0
            check(st == 200 and waited < 4.5, f"a silent client delays /healthz by {waited:.1f} s only")
            out, _ = silent.communicate(timeout=20)
            check(out == "HTTP/1.1 408 Request Timeout", f"the silent client got {out!r}")
            x2 = exporter(f)
            check(x2["read_timeouts"] == x1["read_timeouts"] + 1, f"/ferry/exporter: one read "
                  f"timeout ({x1['read_timeouts']} -> {x2['read_timeouts']})")

            # The proxy's counters did not move because of the admin socket.
            h = f.telemetry("/ferry/http")
            check(h["sum"]["requests"] == sent, "admin requests are not proxy requests")
            # (d) SIGTERM while a silent client holds the exporter in its read wait
            # (2 s timeout): the eventfd wakes the thread, ferry exits 0 at once.
            silent = ns.popen([sys.executable, "-c", f"""
import socket, time
s = socket.create_connection(("127.0.0.1", {METRICS.split(':')[1]}))
print("connected", flush=True)
time.sleep(30)
"""], stdout=subprocess.PIPE, text=True)
            try:
                check(silent.stdout.readline().strip() == "connected", "a silent client is connected")
                c0 = x2["connections"]
                check(wait_for(lambda: exporter(f)["connections"] > c0, bool, timeout=30),
                      "the exporter accepted the silent client")
                t0 = time.monotonic()
                rc = f.stop()
                took = time.monotonic() - t0
                check(rc == 0 and took < 1.5,
                      f"SIGTERM with a client mid-request: exit {rc} in {took:.2f} s (the exporter "
                      "does not wait out its read timeout)")
            finally:
                silent.kill()  # our own child, by pid
                silent.wait(10)
        finally:
            origin.terminate()  # our own child, by pid
            origin.wait(10)

    # (e) The address is taken: fatal, exit 1, the message names it.
    with Netns() as ns:
        holder = ns.popen([sys.executable, "-c", f"""
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", {METRICS.split(':')[1]}))
s.listen()
print("bound", flush=True)
time.sleep(120)
"""], stdout=subprocess.PIPE, text=True)
        try:
            check(holder.stdout.readline().strip() == "bound", "another process holds 127.0.0.1:9180")
            f = Ferry(ns, lcores="0-1", config=config())
            try:
                f.__enter__()
                f.__exit__(None, None, None)
                raise AssertionError("ferry started although the metrics address was taken")
            except RuntimeError:
                pass
            log = f.log_text()
            f.__exit__(None, None, None)
            check(f.exit_code == 1, f"exit code {f.exit_code}")
            check("[admin] metrics_address 127.0.0.1:9180: cannot bind: Address already in use"
                  in log, "the error names the address and the errno text")
        finally:
            holder.terminate()
            holder.wait(10)
    print("PASS")


if __name__ == "__main__":
    main()
