"""The access log end to end ([http] access_log, docs/OPERATIONS.md "Access log"):
ferry on 2 lcores (net_tap, steering program) in a private namespace, the Python
origin (tests/integration/origin.py) on the tap's kernel side.

(a) combined format: requests of every kind, each tagged by its target (GET, HEAD,
    POST with a body, a 404 on a listener without routes, a 502 from a dead
    upstream, a 400 smuggling attempt, a pipelined pair, requests to a shared
    pool handed across lcores, a client that resets before its response, a
    response timeout on a local and on a shared connection: to=response), then
    a wrk burst; SIGTERM. Every line matches a strict regex; lines = requests +
    requests_rejected of /ferry/http = access_log_records, none dropped; each
    tagged request has exactly one line with the expected status and fields; the
    wrk lines cover wrk's request count; escaping of '"' and '\\'.
(b) json format: a second ferry; every line is a JSON object with exactly the
    documented keys in order; statuses, body bytes, truncation, cross_core,
    aborted; SIGHUP reopens the file (the old file keeps the lines before it,
    the new one gets the later ones, none lost).
(c) an access_log path that cannot be opened: exit 1 naming the path and the
    errno text.
"""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check, curl, ferry_binary,  # noqa: E402
                     log_events, raw_exchange, require_root, status_of, wait_for)

PY_PORT, DEAD_PORT = 9000, 9004
WRK_S = int(os.environ.get("FERRY_ALOG_WRK_S", "3"))


METRICS = "127.0.0.1:9181"


def config(log_path, fmt):
    return f"""
[admin]
metrics_address = "{METRICS}"

[tcp]
max_connections = 4096
time_wait_ms = 1000

[http]
client_idle_timeout_ms = 5000
access_log = "{log_path}"
access_log_format = "{fmt}"

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[listener]]
name = "bare"
port = 8081

[[route]]
listener = "web"
path_prefix = "/dead"
upstream = "dead"

[[route]]
listener = "web"
path_prefix = "/shared/"
upstream = "pys"

[[route]]
listener = "web"
path_prefix = "/slow"
upstream = "slow"

[[upstream]]
name = "py"
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "pys"
pool = "shared"
shared_connections = 4
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[route]]
listener = "bare"
path_prefix = "/slow"
upstream = "slows"

[[upstream]]
name = "slow"
response_timeout_ms = 1500
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "slows"
pool = "shared"
response_timeout_ms = 1500
max_fails = 0
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "dead"
max_fails = 0
  [[upstream.server]]
  address = "{PEER_ADDR}:{DEAD_PORT}"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
mbufs = 65536
"""


# The combined format, strictly: nginx's combined, then ferry's fields.
Q = r'(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\x[0-9A-F]{2})*'  # a quoted field's contents
IP = r'\d{1,3}(?:\.\d{1,3}){3}'
COMBINED = re.compile(
    rf'^(?P<client>{IP}) - - \[(?P<time>\d{{2}}/[A-Z][a-z]{{2}}/\d{{4}}:\d{{2}}:\d{{2}}:\d{{2}} '
    rf'[+-]\d{{4}})\] "(?P<request>{Q})" (?P<status>\d{{3}}) (?P<bytes>\d+) '
    rf'"(?P<referer>{Q})" "(?P<ua>{Q})" rt=(?P<rt>\d+\.\d{{3}}) '
    rf'uct=(?P<uct>\d+\.\d{{3}}|-) urt=(?P<urt>\d+\.\d{{3}}|-) up=(?P<up>[a-z0-9_]+|-) '
    rf'us=(?P<us>{IP}:\d{{1,5}}|-) lc=(?P<lc>\d+) xc=(?P<xc>[01]) ab=(?P<ab>[01]) '
    rf'to=(?P<to>-|header|body|connect|write|response|read|total) '
    rf'reason=(?P<reason>-|[a-z_]+)$')

JSON_KEYS = ["time", "timestamp", "client", "client_port", "request", "method", "target",
             "version", "host", "referer", "user_agent", "status", "bytes_sent",
             "request_body_bytes", "request_time", "upstream", "upstream_addr",
             "upstream_connect_time", "upstream_header_time", "lcore", "cross_core", "aborted",
             "timeout", "reason", "parsed", "truncated"]


ROUTE_SAMPLE = re.compile(r'^ferry_http_route_responses_total\{listener="([^"]*)",'
                          r'route="([^"]*)",class="([1-5]xx)"\} (\d+)$')


def route_counts(ns):
    """ferry_http_route_responses_total from /metrics: {(listener, route, class): n}."""
    r = ns.run(["curl", "-s", "--max-time", "20", f"http://{METRICS}/metrics"], check=False,
               timeout=30)
    out = {}
    for ln in r.stdout.splitlines():
        m = ROUTE_SAMPLE.match(ln)
        if m:
            out[m.group(1), m.group(2), m.group(3)] = int(m.group(4))
    return out


def settle(f):
    """Waits until every client connection is closed; returns /ferry/http's sum."""
    deadline = time.monotonic() + 30
    while True:
        http = f.telemetry("/ferry/http")
        if http["active_connections"] == 0 or time.monotonic() > deadline:
            return http["sum"]
        time.sleep(0.2)


def read_lines(path):
    with open(path, "rb") as fh:
        data = fh.read()
    check(data == b"" or data.endswith(b"\n"), f"{path}: ends with a newline")
    return data.decode("ascii").splitlines()  # non-ASCII would raise: every byte is escaped


def count_lines(path):
    with open(path, "rb") as fh:
        return fh.read().count(b"\n")


def only(lines, pred, what):
    got = [x for x in lines if pred(x)]
    check(len(got) == 1, f"exactly one line for {what} (got {len(got)})")
    return got[0]


def send_mix(ns, base, tag):
    """The tagged requests of both phases. Returns the expected status per tag."""
    want = {}
    for i in range(3):
        t = f"/hello?id={tag}-get{i}"
        check(status_of(ns, base + t, "-e", "http://ref.example/a?b=1") == "200", f"GET {t}")
        want[t] = 200
    t = f"/gen/100?id={tag}-head"
    r = curl(ns, "-I", base + t)
    check(r.stdout.startswith("HTTP/1.1 200"), f"HEAD {t}")
    want[t] = 200
    t = f"/sha?id={tag}-post"
    r = curl(ns, "--data-binary", "x" * 1000, base + t)
    check(r.stdout.strip().endswith(" 1000"), f"POST {t}: {r.stdout.strip()}")
    want[t] = 200
    t = f"/nothing?id={tag}-404"
    check(status_of(ns, f"http://{FERRY_ADDR}:8081{t}") == "404", f"404 {t} (no route)")
    want[t] = 404
    t = f"/dead?id={tag}-502"
    check(status_of(ns, base + t) == "502", f"502 {t} (dead upstream)")
    want[t] = 502
    t = f"/sha?id={tag}-smuggle"
    out = raw_exchange(ns, f"POST {t} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode())
    check(out.startswith(b"HTTP/1.1 400"), f"smuggling request rejected: {out[:20]!r}")
    want[t] = 400
    p1, p2 = f"/p1?id={tag}-pipe", f"/p2?id={tag}-pipe"
    out = raw_exchange(ns, f"GET {p1} HTTP/1.1\r\nHost: x\r\n\r\nGET {p2} HTTP/1.1\r\nHost: x\r\n"
                           "Connection: close\r\n\r\n".encode())
    check(out.count(b"HTTP/1.1 200") == 2, "pipelined pair answered")
    want[p1] = want[p2] = 200
    for i in range(12):
        t = f"/shared/x{i}?id={tag}-shared"
        check(status_of(ns, base + t) == "200", f"GET {t} (shared pool)")
        want[t] = 200
    t = f"/slow?id={tag}-gone"
    raw_exchange(ns, f"GET {t} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), reset_after=0.5)
    want[t] = 499
    # The origin answers /slow after 30 s: response_timeout_ms (1.5 s) ends
    # it, on a local connection and on a shared one (possibly another lcore's).
    t = f"/slow?id={tag}-timeout"
    check(status_of(ns, base + t) == "504", f"504 {t} (response timeout)")
    want[t] = 504
    t = f"/slow?id={tag}-xtimeout"
    check(status_of(ns, f"http://{FERRY_ADDR}:8081{t}") == "504", f"504 {t} (shared pool)")
    want[t] = 504
    return want


def phase_combined(tmp):
    log = os.path.join(tmp, "access.log")
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config(log, "combined")) as f, \
            PyOrigin(ns, PEER_ADDR, PY_PORT):
        ns.run(["ip", "link", "set", "ferry0", "txqueuelen", "10000"])
        base = f"http://{FERRY_ADDR}:8080"
        t_begin = time.time()
        want = send_mix(ns, base, "c")
        ua_t = "/hello?id=c-escape"
        check(status_of(ns, base + ua_t, "-A", 'agent "quoted" \\back') == "200",
              "GET with a quoting user agent")
        want[ua_t] = 200
        r = ns.run(["wrk", "-t", "2", "-c", "20", "-d", f"{WRK_S}s", "--timeout", "5s",
                    "-H", "User-Agent: wrk-burst", f"{base}/hello?id=wrk"],
                   check=False, timeout=WRK_S + 60)
        print("  " + r.stdout.replace("\n", "\n  "))
        m = re.search(r"(\d+) requests in", r.stdout)
        check(r.returncode == 0 and m is not None and "Non-2xx" not in r.stdout,
              "wrk burst: all 2xx")
        wrk_requests = int(m.group(1))
        s = settle(f)
        rr = route_counts(ns)
        t_end = time.time()
        print(f"  /ferry/http: requests {s['requests']} rejected {s['requests_rejected']} "
              f"access_log_records {s['access_log_records']} dropped {s['access_log_dropped']}")
    check(f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")

    lines = read_lines(log)
    bad = [x for x in lines if not COMBINED.match(x)]
    check(not bad, f"every line matches the strict combined regex ({len(lines)} lines; "
                   f"first bad: {bad[:1]})")
    expected = s["requests"] + s["requests_rejected"]
    check(len(lines) == expected,
          f"one line per request: {len(lines)} lines = requests + rejected {expected}")
    check(s["access_log_records"] == len(lines) and s["access_log_dropped"] == 0,
          f"access_log_records {s['access_log_records']} = lines, none dropped")
    recs = [COMBINED.match(x).groupdict() for x in lines]

    def target(rq):
        parts = rq["request"].split(" ")
        return parts[1] if len(parts) == 3 else None

    for t, st in want.items():
        rq = only(recs, lambda x: target(x) == t, t)
        check(int(rq["status"]) == st, f"{t}: status {rq['status']} (want {st})")
    # ferry_http_route_responses_total (issue 19): by class, the access log's
    # lines less the heads that never parsed (rejected: 400, not routed);
    # by route, what send_mix sent there (the shared pool's hand-overs too).
    by_class = {c: sum(n for k, n in rr.items() if k[2] == c) for c in ("2xx", "4xx", "5xx")}
    in_log = {c: sum(1 for x in recs if x["status"][0] == c[0]) for c in by_class}
    in_log["4xx"] -= s["requests_rejected"]
    check(by_class == in_log, f"route counts by class {by_class} = the log's parsed lines {in_log}")
    check(rr.get(("web", "/shared/", "2xx")) == 12 and rr.get(("web", "/dead", "5xx")) == 1
          and rr.get(("bare", "none", "4xx")) == 1 and rr.get(("web", "default", "2xx"), 0) > 0,
          "route counts: 12 on web /shared/ (handed across too), the 502 on /dead, the 404 on "
          f"bare's none: {sorted((k, n) for k, n in rr.items() if n)}")
    get0 = only(recs, lambda x: target(x) == "/hello?id=c-get0", "GET")
    check(get0["request"] == "GET /hello?id=c-get0 HTTP/1.1" and get0["up"] == "py"
          and get0["us"] == f"{PEER_ADDR}:{PY_PORT}" and get0["uct"] != "-" and get0["urt"] != "-"
          and get0["ab"] == "0" and get0["referer"] == "http://ref.example/a?b=1"
          and get0["ua"].startswith("curl/") and get0["client"] == PEER_ADDR
          and int(get0["bytes"]) > 100,
          f"GET line fields: {lines[recs.index(get0)]}")
    head = only(recs, lambda x: target(x) == "/gen/100?id=c-head", "HEAD")
    check(head["request"].startswith("HEAD ") and int(head["bytes"]) < 400,
          f"HEAD: head bytes only ({head['bytes']})")
    nf = only(recs, lambda x: target(x) == "/nothing?id=c-404", "404")
    check(nf["up"] == "-" and nf["us"] == "-" and nf["uct"] == "-" and nf["urt"] == "-",
          "404: no upstream, no upstream times")
    dead = only(recs, lambda x: target(x) == "/dead?id=c-502", "502")
    check(dead["up"] == "dead" and dead["us"] == f"{PEER_ADDR}:{DEAD_PORT}" and dead["urt"] == "-",
          "502: the dead upstream and server named, no response time")
    sm = only(recs, lambda x: target(x) == "/sha?id=c-smuggle", "400")
    check(sm["request"] == "POST /sha?id=c-smuggle HTTP/1.1" and sm["up"] == "-",
          "rejected head: its raw first line as the request")
    gone = only(recs, lambda x: target(x) == "/slow?id=c-gone", "client gone")
    check(gone["ab"] == "1" and gone["up"] == "slow" and gone["urt"] == "-"
          and float(gone["rt"]) >= 0.4 and gone["to"] == "-",
          f"client reset before the response: 499 ab=1 to=- (rt {gone['rt']})")
    for t in ("/slow?id=c-timeout", "/slow?id=c-xtimeout"):
        to = only(recs, lambda x: target(x) == t, t)
        check(to["to"] == "response" and to["urt"] == "-" and float(to["rt"]) >= 1.4,
              f"{t}: 504 to=response (rt {to['rt']}, xc={to['xc']})")
    check(all(x["to"] == "-" for x in recs if x["status"] == "200"), "200 lines: to=-")
    # Termination reasons (issue 19): one per failed request, "-" otherwise.
    for t, why in (("/dead?id=c-502", "upstream_connect_refused"), ("/nothing?id=c-404", "no_route"),
                   ("/sha?id=c-smuggle", "bad_request"), ("/slow?id=c-gone", "client_aborted"),
                   ("/slow?id=c-timeout", "upstream_timeout"),
                   ("/slow?id=c-xtimeout", "upstream_timeout")):
        rq = only(recs, lambda x: target(x) == t, t)
        check(rq["reason"] == why, f"{t}: reason={rq['reason']} (want {why})")
    check(all(x["reason"] == "-" for x in recs if x["status"] == "200" and x["ab"] == "0"),
          "complete 200 lines: reason=-")
    shared = [x for x in recs if x["request"].startswith("GET /shared/")]
    xc = sorted({x["xc"] for x in shared})
    check(len(shared) == 12 and xc == ["0", "1"] and all(x["up"] == "pys" for x in shared)
          and all(x["urt"] != "-" for x in shared),
          f"shared pool: handed across lcores (xc=1) and not (xc=0): {xc}")
    check(len({x["lc"] for x in recs}) == 2, f"both lcores log: {sorted({x['lc'] for x in recs})}")
    esc = only(recs, lambda x: target(x) == ua_t, "user agent escaping")
    check(esc["ua"] == r"agent \x22quoted\x22 \x5Cback", f"escaped user agent: {esc['ua']}")
    wrk_lines = [x for x in recs if x["ua"] == "wrk-burst"]
    ok = [x for x in wrk_lines if x["status"] == "200" and x["ab"] == "0"]
    check(wrk_requests <= len(wrk_lines) <= wrk_requests + 20 and len(ok) >= wrk_requests,
          f"wrk: {wrk_requests} requests completed, {len(wrk_lines)} lines ({len(ok)} complete "
          f"200s; the rest were in flight when wrk stopped)")
    first = time.mktime(time.strptime(recs[0]["time"][:20], "%d/%b/%Y:%H:%M:%S"))
    last = time.mktime(time.strptime(recs[-1]["time"][:20], "%d/%b/%Y:%H:%M:%S"))
    check(t_begin - 2 <= first <= t_end + 1 and t_begin - 2 <= last <= t_end + 1,
          "line times are wall-clock times of the run")


def phase_json(tmp):
    log = os.path.join(tmp, "access.json")
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config(log, "json")) as f, PyOrigin(ns, PEER_ADDR, PY_PORT):
        base = f"http://{FERRY_ADDR}:8080"
        want = send_mix(ns, base, "j")
        long_t = "/hello?id=j-long&pad=" + "a" * 600
        check(status_of(ns, base + long_t, "-A", "u" * 300) == "200", "a long target")
        # Everything so far is in the file within a few writer ticks.
        s = settle(f)
        n_before = s["requests"] + s["requests_rejected"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and count_lines(log) < n_before:
            time.sleep(0.1)
        os.rename(log, log + ".1")
        f.proc.send_signal(signal.SIGHUP)
        def app_events(what):
            return [fl for _, _, w, fl in log_events(f.log_text(), "ferry.app") if w == what]
        reopened = wait_for(lambda: app_events("access log reopened"), bool, timeout=10)
        check(reopened == [{"path": log}] and os.path.exists(log),
              f"SIGHUP reopened the log: {reopened}")
        for i in range(3):
            check(status_of(ns, f"{base}/hello?id=j-after{i}") == "200", "GET after SIGHUP")
        s = settle(f)
    check(f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")
    opened, closed = app_events("access log opened"), app_events("access log closed")
    check(len(opened) == 1 and opened[0]["path"] == log and opened[0]["format"] == "json"
          and int(opened[0]["ring_records"]) > 0, f"the log's opening logged: {opened}")
    check(len(closed) == 1 and closed[0]["lost"] == "0"
          and int(closed[0]["lines"]) == count_lines(log) + count_lines(log + ".1"),
          f"its closing logged with the lines written: {closed}")

    old, new = read_lines(log + ".1"), read_lines(log)
    check(len(old) == n_before and len(new) == 3,
          f"rotation: {len(old)} lines before SIGHUP, {len(new)} after")
    lines = old + new
    check(len(lines) == s["requests"] + s["requests_rejected"] == s["access_log_records"]
          and s["access_log_dropped"] == 0,
          f"one line per request: {len(lines)} = requests + rejected = access_log_records")
    recs = [json.loads(x) for x in lines]  # raises on a line that is not JSON
    bad = [x for x, o in zip(lines, recs) if not isinstance(o, dict) or list(o) != JSON_KEYS]
    check(not bad, f"{len(recs)} lines: valid JSON objects, the documented keys in order "
                   f"(first bad: {bad[:1]})")
    for t, st in want.items():
        o = only(recs, lambda x: x["target"] == t or (not x["parsed"] and t in x["request"]), t)
        check(o["status"] == st, f"{t}: status {o['status']} (want {st})")
    post = only(recs, lambda x: x["target"] == "/sha?id=j-post", "POST")
    check(post["method"] == "POST" and post["request_body_bytes"] == 1000
          and post["upstream"] == "py" and isinstance(post["upstream_header_time"], float),
          f"POST: body bytes {post['request_body_bytes']}")
    nf = only(recs, lambda x: x["target"] == "/nothing?id=j-404", "404")
    check(nf["upstream"] is None and nf["upstream_addr"] is None
          and nf["upstream_connect_time"] is None and nf["upstream_header_time"] is None,
          "404: nulls")
    sm = only(recs, lambda x: not x["parsed"], "the rejected head")
    check(sm["request"] == "POST /sha?id=j-smuggle HTTP/1.1" and sm["method"] == ""
          and sm["status"] == 400, "rejected head: raw request line, parsed false")
    lg = only(recs, lambda x: x["target"].startswith("/hello?id=j-long"), "long target")
    check(len(lg["target"]) == 512 and len(lg["user_agent"]) == 256 and lg["truncated"],
          "target cut to 512 bytes, user agent to 256, truncated true")
    gone = only(recs, lambda x: x["target"] == "/slow?id=j-gone", "client gone")
    check(gone["status"] == 499 and gone["aborted"] and gone["timeout"] is None
          and gone["reason"] == "client_aborted",
          "client gone: 499, aborted, no timeout, reason client_aborted")
    dead = only(recs, lambda x: x["target"] == "/dead?id=j-502", "502")
    check(dead["reason"] == "upstream_connect_refused", f"502: reason {dead['reason']}")
    check(all(o["reason"] is None for o in recs if o["status"] == 200 and not o["aborted"]),
          "complete 200s: reason null")
    for t in ("/slow?id=j-timeout", "/slow?id=j-xtimeout"):
        to = only(recs, lambda x: x["target"] == t, t)
        check(to["status"] == 504 and to["timeout"] == "response", f"{t}: 504, timeout response")
    shared = [o for o in recs if o["target"].startswith("/shared/")]
    check({o["cross_core"] for o in shared} == {True, False}, "cross_core both ways")
    ok = [o for o in recs if o["status"] == 200]
    check(all(o["bytes_sent"] > 0 and o["client"] == PEER_ADDR and o["client_port"] > 0
              and o["version"] == "HTTP/1.1" and o["lcore"] in (0, 1) for o in ok),
          "200 lines: bytes, client, port, version, lcore")


def phase_open_failure(tmp):
    bad = os.path.join(tmp, "no-such-dir", "access.log")
    with Netns() as ns:
        cfg = os.path.join(tmp, "bad.toml")
        with open(cfg, "w") as fh:
            fh.write(config(bad, "combined"))
        r = ns.run([ferry_binary(), "-l", "0", "--no-huge", "-m", "512", "--no-pci",
                    "--file-prefix", ns.name, "--", "--config", cfg], check=False, timeout=60)
        check(r.returncode == 1 and f"access_log {bad}: cannot open: No such file or directory"
              in r.stdout, f"unopenable access_log: exit {r.returncode}, {r.stdout.strip()!r}")


def main():
    require_root()
    tmp = tempfile.mkdtemp(prefix="ferry-alog-")
    t0 = time.monotonic()
    phase_combined(tmp)
    phase_json(tmp)
    phase_open_failure(tmp)
    print(f"access log test: {time.monotonic() - t0:.1f} s")
    shutil.rmtree(tmp, ignore_errors=True)  # kept when a check failed, for a look
    return 0


if __name__ == "__main__":
    sys.exit(main())
