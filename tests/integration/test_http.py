"""The HTTP reverse proxy end to end: ferry on 2 lcores (net_tap, steering
program) in a private namespace, curl / raw sockets / wrk as clients, a Python
origin (tests/integration/origin.py) and nginx as origins on the tap's kernel
side (10.77.0.2).

(a) GET, HEAD, POST; Via / X-Forwarded-For / X-Forwarded-Proto reach the origin
(b) chunked upload and chunked download, byte-exact, re-framed without the trailer section
(c) 100 MiB both ways with sha256 equal (FERRY_HTTP_BIG_MIB overrides)
(d) pipelined requests answered in order on one connection
(e) keep-alive both sides: the origin sees far fewer connections than requests
(f) an origin that closes keep-alive connections early (nginx keepalive_requests 2):
    every request still answered 200 (retries on a fresh connection)
(g) 502 (nothing listens), 504 (origin too slow), 503 (every server down),
    404 (no route), 400 smuggling attempts rejected and counted by reason
(h) a client that disconnects mid-response: no connection or mbuf left behind
(i) wrk, 400 connections for 10 s: zero errors, no leak afterwards
(j) SIGTERM: graceful, exit 0

Second phase, a new ferry whose upstreams use pool = "shared" (shared_connections
= 4 per server, owned by the 2 lcores alternately; the tap's steering program
spreads the clients over both lcores, so requests are handed across cores both
ways over lib/xcore and their responses handed back):
(k) many clients (new source ports), each several keep-alive requests of every
    kind (GET fixed-length and chunked, POST with sha256, nginx), all byte-exact;
    curl sequences too
(l) a 20 MiB download and upload (twice each), sha256 equal
(m) 502 from a dead shared upstream, 504 from a slow one (handed across or
    not); an origin closing keep-alive connections every 2 requests
(n) clients that disconnect mid-response: the owner aborts the upstream side
    (xcore_aborted), stale hand-back messages are freed and counted
(o) wrk, 100 connections for 5 s: zero errors, and the origin saw only a handful of
    connections (a fixed pool, not one per request)
(p) hand-offs both ways in /ferry/http (xcore_requests_out on one lcore,
    xcore_requests_in on the other), no connection or mbuf left behind
(q) SIGTERM while downloads (some handed across) are in flight: all finish,
    exit 0
This ferry runs with FERRY_XCORE_REFUSE_EVERY=13: every 13th cross-core send
counts as refused by the outbox, so the retry backlog is exercised throughout.
FERRY_HTTP_PHASES=local,shared (default both) selects the phases.
"""

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check, curl,  # noqa: E402
                     raw_exchange, require_root, status_of, stop_pid, wait_for)

HERE = os.path.dirname(os.path.abspath(__file__))
BIG_MIB = int(os.environ.get("FERRY_HTTP_BIG_MIB", "100"))
SHARED_MIB = min(20, BIG_MIB)
PHASES = os.environ.get("FERRY_HTTP_PHASES", "local,shared").split(",")
WRK_S = int(os.environ.get("FERRY_HTTP_WRK_S", "10"))
PY_PORT, NGINX_PORT, NGINX_KA_PORT, SLOW_PORT, DEAD_PORT = 9000, 9001, 9002, 9003, 9004


def config():
    return f"""
[tcp]
max_connections = 4096
time_wait_ms = 1000

[http]
client_idle_timeout_ms = 5000

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[route]]
path_prefix = "/nginx/"
upstream = "nginx"

[[route]]
path_prefix = "/ka/"
upstream = "nginx_ka"

[[route]]
path_prefix = "/slow"
upstream = "slow"

[[route]]
path_prefix = "/dead"
upstream = "dead"

[[route]]
host = "nowhere.example"
upstream = "dead"

[[upstream]]
name = "py"
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "nginx"
max_idle = 64
  [[upstream.server]]
  address = "{PEER_ADDR}:{NGINX_PORT}"

[[upstream]]
name = "nginx_ka"
retries = 1
  [[upstream.server]]
  address = "{PEER_ADDR}:{NGINX_KA_PORT}"

[[upstream]]
name = "slow"
response_timeout_ms = 1000
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "dead"
max_fails = 2
fail_timeout_ms = 60000
when_all_down = "refuse"
  [[upstream.server]]
  address = "{PEER_ADDR}:{DEAD_PORT}"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
mbufs = 65536
"""


class Origins:
    """The Python origin and two nginx servers on PEER_ADDR (exists only while
    ferry's tap does); killed by pid."""

    def __init__(self, ns, tmp):
        self.ns, self.tmp, self.procs = ns, tmp, []

    def __enter__(self):
        py = PyOrigin(self.ns, PEER_ADDR, PY_PORT).__enter__()
        self.procs.append(py.proc)
        www = os.path.join(self.tmp, "www")
        os.makedirs(os.path.join(www, "nginx"), exist_ok=True)
        os.makedirs(os.path.join(www, "ka"), exist_ok=True)
        os.chmod(self.tmp, 0o755)
        os.chmod(www, 0o755)
        for d in ("nginx", "ka"):
            os.chmod(os.path.join(www, d), 0o755)
            with open(os.path.join(www, d, "index.html"), "w") as f:
                f.write("hello from nginx\n")
            os.chmod(os.path.join(www, d, "index.html"), 0o644)
        self.big = os.path.join(www, "nginx", "big.bin")
        block = os.urandom(1 << 20)
        with open(self.big, "wb") as f:
            for i in range(BIG_MIB):
                f.write(block[i % 7:] + block[:i % 7])
        os.chmod(self.big, 0o644)
        self.big2 = os.path.join(www, "nginx", "big2.bin")
        with open(self.big2, "wb") as f:
            for i in range(SHARED_MIB):
                f.write(block[i % 5:] + block[:i % 5])
        os.chmod(self.big2, 0o644)
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
daemon off;
worker_processes 1;
pid {self.tmp}/nginx.pid;
error_log {self.tmp}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000;
  server {{ listen {PEER_ADDR}:{NGINX_PORT}; root {www};
           location = /nginx/status {{ stub_status; }} }}
  server {{ listen {PEER_ADDR}:{NGINX_KA_PORT}; root {www}; keepalive_requests 2;
           location = /ka/status {{ stub_status; }} }}
}}
""")
        ng = self.ns.popen(["nginx", "-c", conf], stdout=subprocess.DEVNULL,
                           stderr=subprocess.STDOUT)
        self.procs.append(ng)
        for _ in range(100):
            r = self.ns.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                             f"http://{PEER_ADDR}:{NGINX_PORT}/nginx/index.html"], check=False)
            if r.stdout == "200":
                break
            time.sleep(0.1)
        check(r.stdout == "200", "nginx origin serving")
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            stop_pid(p)  # our own children, by pid
        return False


def stub_accepts(ns, port, path):
    r = ns.run(["curl", "-s", f"http://{PEER_ADDR}:{port}{path}"], check=False)
    # "Active connections: 1\nserver accepts handled requests\n 5 5 10\n..."
    nums = r.stdout.splitlines()[2].split()
    return int(nums[0]), int(nums[2])


def phase_local(tmp):
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config()) as f, Origins(ns, tmp) as o:
        ns.run(["ip", "link", "set", "ferry0", "txqueuelen", "10000"])
        base = f"http://{FERRY_ADDR}:8080"
        start_in_use = f.port()["mbufs_in_use"]

        # (a)
        r = curl(ns, "-i", f"{base}/hello")
        check(r.stdout.startswith("HTTP/1.1 200"), f"GET through ferry: {r.stdout[:40]!r}")
        check("Via: 1.1 ferry" in r.stdout, "the response carries Via")
        check("X-Forwarded-For: 10.77.0.2" in r.stdout and "Via: 1.1 ferry" in r.stdout.split("\n\n", 1)[1],
              "the origin saw X-Forwarded-For and Via")
        check("X-Forwarded-Proto: http" in r.stdout, "the origin saw X-Forwarded-Proto")
        r = curl(ns, "-I", f"{base}/gen/12345")
        check("200" in r.stdout.splitlines()[0] and "Content-Length: 12345" in r.stdout,
              "HEAD: status and Content-Length, no body")
        r = curl(ns, "--data-binary", "hello world", f"{base}/sha")
        check(r.stdout.split() == [hashlib.sha256(b"hello world").hexdigest(), "11"],
              f"POST body reached the origin intact: {r.stdout.strip()}")

        # (a2) origin.py writes a head and its body apart with Nagle's algorithm
        # on (http.server): the body waits until the head is acknowledged. ferry
        # acknowledges it as soon as it has read it and waits for the body
        # (quick_acks), not at its 40 ms delayed-ACK timeout (issue 17).
        t0 = f.telemetry("/ferry/tcp")["sum"]
        script = ("import http.client, time\n"
                  f"c = http.client.HTTPConnection('{FERRY_ADDR}', 8080, timeout=10)\n"
                  "ts = []\n"
                  "for i in range(20):\n"
                  "    t = time.monotonic(); c.request('GET', '/hello'); c.getresponse().read()\n"
                  "    ts.append(time.monotonic() - t)\n"
                  "print(f'{sorted(ts)[10] * 1000:.2f} (max {max(ts) * 1000:.2f})')\n")
        r = ns.run(["python3", "-c", script], check=False)
        t1 = f.telemetry("/ferry/tcp")["sum"]
        q, d = (t1[k] - t0[k] for k in ("quick_acks", "delayed_acks"))
        print(f"info: 20 keep-alive GETs from the Nagle origin, median {r.stdout.strip()} ms "
              f"(the issue measured 41-43 ms before quick ACKs); {q} quick ACKs")
        # Without quick ACKs each body waits for ferry's delayed-ACK timer.
        # A head and body that arrive together need no quick ACK, so q may be
        # below 20 (18-20 here); the delayed-ACK count is printed, not checked:
        # other connections' timers (the earlier requests') fire in the window.
        check(r.returncode == 0 and q >= 10,
              f"the Nagle origin's heads acknowledged at once ({q} quick ACKs; "
              f"{d} delayed-ACK timeouts on any connection meanwhile)")

        # (b)
        up = os.path.join(tmp, "up.bin")
        with open(up, "wb") as fh:
            fh.write(os.urandom(3 << 20))
        want = hashlib.sha256(open(up, "rb").read()).hexdigest()
        r = curl(ns, "-H", "Transfer-Encoding: chunked", "--data-binary", f"@{up}", f"{base}/sha")
        check(r.stdout.split() == [want, str(3 << 20)], "chunked upload: sha256 equal")
        # ferry re-frames chunked bodies canonically and does not forward the
        # trailer section (the origin sends "X-Trailer: done").
        r = ns.run(["bash", "-c", f"curl -s --raw {base}/gen/1000000?chunked=1 | tail -c 7 | base64"],
                   check=False)
        check(base64.b64decode(r.stdout.strip()) == b"\r\n0\r\n\r\n",
              f"chunked download ends with ferry's last chunk, no trailer ({r.stdout.strip()})")
        r = ns.run(["bash", "-c", f"curl -s {base}/gen/1000000?chunked=1 | sha256sum"],
                   check=False)
        r2 = ns.run(["bash", "-c", f"curl -s http://{PEER_ADDR}:{PY_PORT}/gen/1000000 | sha256sum"],
                    check=False)
        check(r.stdout.split()[0] == r2.stdout.split()[0], "chunked download byte-exact")

        # (c)
        t0 = time.monotonic()
        r = ns.run(["bash", "-c", f"curl -s --max-time 200 {base}/nginx/big.bin | sha256sum"],
                   check=False, timeout=220)
        want = hashlib.sha256(open(o.big, "rb").read()).hexdigest()
        check(r.stdout.split()[0] == want,
              f"{BIG_MIB} MiB download: sha256 equal ({time.monotonic() - t0:.1f} s)")
        t0 = time.monotonic()
        r = curl(ns, "--data-binary", f"@{o.big}", f"{base}/sha", timeout=220)
        check(r.stdout.split() == [want, str(BIG_MIB << 20)],
              f"{BIG_MIB} MiB upload: sha256 equal ({time.monotonic() - t0:.1f} s)")

        # (d)
        reqs = b"".join(b"GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(5))
        reqs += b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_exchange(ns, reqs)
        order = [line.split()[1] for line in out.decode(errors="replace").splitlines()
                 if line.startswith("GET /")]
        check(order == ["/p0", "/p1", "/p2", "/p3", "/p4", "/last"],
              f"pipelined requests answered in order: {order}")

        # (e)
        acc0, req0 = stub_accepts(ns, NGINX_PORT, "/nginx/status")
        urls = [a for _ in range(50) for a in ("-o", "/dev/null", f"{base}/nginx/index.html")]
        r = curl(ns, "-w", "%{http_code} %{num_connects}\n", *urls)
        codes = r.stdout.split()
        connects = sum(int(x) for x in codes[1::2])
        check(codes[0::2] == ["200"] * 50 and connects == 1,
              f"50 requests on one client connection (curl connects: {connects})")
        acc1, req1 = stub_accepts(ns, NGINX_PORT, "/nginx/status")
        check(req1 - req0 >= 50 and acc1 - acc0 <= 4,
              f"keep-alive upstream: origin accepted {acc1 - acc0} connections for "
              f"{req1 - req0} requests")

        # (f)
        urls = [a for _ in range(40) for a in ("-o", "/dev/null", f"{base}/ka/index.html")]
        r = curl(ns, "-w", "%{http_code}\n", *urls)
        codes = r.stdout.split()
        check(codes == ["200"] * 40,
              f"origin closing keep-alive early: 40/40 answered 200 ({codes.count('200')})")

        # (g)
        check(status_of(ns, f"{base}/dead") == "502", "502 when nothing listens")
        check(status_of(ns, f"{base}/slow") == "504", "504 when the origin is too slow")
        status_of(ns, f"{base}/dead")  # second failure: max_fails = 2 marks it down
        check(status_of(ns, f"{base}/dead") == "503", "503 when every server is down")
        ups = f.telemetry("/ferry/upstreams")
        print(f"  upstreams: {json.dumps(ups)}")
        dead = [v for k, v in ups.items() if k.startswith("dead/")][0]
        check(dead["state"] == "down", "the dead server is marked down in /ferry/upstreams")
        smuggle = [
            b"POST /sha HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST /sha HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            b"POST /sha HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nFoo : bar\r\n\r\n",
            b"GET / HTTP/1.1\nHost: x\n\n",
        ]
        for s in smuggle:
            out = raw_exchange(ns, s)
            check(out.startswith(b"HTTP/1.1 400") or out.startswith(b"HTTP/1.1 501"),
                  f"rejected: {s[:60]!r} -> {out[:20]!r}")
        check(status_of(ns, f"{base}/x", "-H", "Host: nowhere.example") in ("502", "503"),
              "host route reaches its upstream")
        http = f.telemetry("/ferry/http")
        reasons = {k: v for k, v in http["rejected_by_reason"].items() if v}
        print(f"  rejected by reason: {reasons}")
        check(reasons.get("te_and_cl", 0) >= 1 and reasons.get("duplicate_cl_differs", 0) >= 1
              and reasons.get("header_name_whitespace", 0) >= 1 and reasons.get("bare_lf", 0) >= 1,
              "rejections counted by reason")

        # (h)
        code = f"""
import socket
s = socket.create_connection(("{FERRY_ADDR}", 8080), timeout=10)
s.sendall(b"GET /nginx/big.bin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
got = 0
while got < (1 << 20):
    got += len(s.recv(65536))
s.close()
print(got)
"""
        for _ in range(3):
            ns.run([sys.executable, "-c", code], timeout=30)

        # (i)
        r = ns.run(["wrk", "-t", "2", "-c", "400", "-d", f"{WRK_S}s", "--timeout", "5s",
                    f"{base}/nginx/index.html"], check=False, timeout=WRK_S + 60)
        print("  " + r.stdout.replace("\n", "\n  "))
        if "Non-2xx" in r.stdout or "Socket errors" in r.stdout:
            # What the proxy answered and why, for the failure report.
            print(f"  http after wrk: {json.dumps(f.telemetry('/ferry/http')['sum'])}")
            print(f"  upstreams after wrk: {json.dumps(f.telemetry('/ferry/upstreams'))}")
            print(f"  port after wrk: {json.dumps(f.port())}")
        check(r.returncode == 0 and "Socket errors" not in r.stdout
              and "Non-2xx" not in r.stdout, "wrk 400 connections: no socket errors, all 2xx")
        rps = [line for line in r.stdout.splitlines() if "Requests/sec" in line]
        print(f"  {rps}")
        # The `nginx` upstream keeps 64 idle connections per lcore for ~200
        # concurrent requests: the surplus is closed and reopened, each close
        # a TIME-WAIT on ferry's side. TIME-WAIT must yield its slot to new
        # connections rather than make them fail (503).
        p = f.port()
        http = f.telemetry("/ferry/http")["sum"]
        print(f"  upstream connects {http['upstream_connects']}, TIME-WAIT slots recycled "
              f"{p['tcp_time_wait_recycled']}, connect no_slot {p['tcp_connect_no_slot']}, "
              f"SYNs without a slot {p['flow_table_full']}")
        check(p["tcp_connect_no_slot"] == 0 and http["upstream_no_connection"] == 0,
              "no upstream connection refused for want of a slot under churn")

        # leaks: every connection closes, every mbuf returns, exactly
        http, p = wait_quiescent(f, start_in_use)
        print(f"  http: {json.dumps(http['sum'])}")
        check(http["active_connections"] == 0, "no client connection left")
        check(p["mbufs_in_use"] == start_in_use,
              f"no mbuf leak: {p['mbufs_in_use']} in use (start {start_in_use})")
    check(f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")


def shared_config():
    return f"""
[tcp]
max_connections = 4096
time_wait_ms = 1000

[http]
client_idle_timeout_ms = 5000

[[listener]]
name = "web"
port = 8080
default_upstream = "py"

[[route]]
path_prefix = "/nginx/"
upstream = "nginx"

[[route]]
path_prefix = "/dead"
upstream = "dead"

[[route]]
path_prefix = "/ka/"
upstream = "nginx_ka"

[[route]]
path_prefix = "/slow"
upstream = "slow"

[[upstream]]
name = "nginx_ka"
pool = "shared"
shared_connections = 4
  [[upstream.server]]
  address = "{PEER_ADDR}:{NGINX_KA_PORT}"

[[upstream]]
name = "slow"
pool = "shared"
shared_connections = 4
response_timeout_ms = 1000
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "py"
pool = "shared"
shared_connections = 4
  [[upstream.server]]
  address = "{PEER_ADDR}:{PY_PORT}"

[[upstream]]
name = "nginx"
pool = "shared"
shared_connections = 4
  [[upstream.server]]
  address = "{PEER_ADDR}:{NGINX_PORT}"

[[upstream]]
name = "dead"
pool = "shared"
shared_connections = 4
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


# Many clients at once (threads), each a new connection (a new source port,
# so the steering program spreads them over the lcores) with several
# keep-alive requests of every kind; every body checked. Prints JSON.
MIXED_CLIENTS = r"""
import hashlib, http.client, json, os, sys, threading
sys.path.insert(0, sys.argv[1])
from origin import pattern
host, nconn, nreq = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
res = {"ok": 0, "bad": [], "errors": []}
lock = threading.Lock()
def one(ci):
    try:
        c = http.client.HTTPConnection(host, 8080, timeout=30)
        for ri in range(nreq):
            kind = (ci + ri) % 5
            if kind == 0:
                n = 1000 + 7919 * ((ci * nreq + ri) % 64)
                c.request("GET", f"/gen/{n}")
                want = pattern(0, n)
            elif kind == 1:
                n = 70000 + 4099 * ((ci + ri) % 16)
                c.request("GET", f"/gen/{n}?chunked=1")
                want = pattern(0, n)
            elif kind == 2:
                body = os.urandom(1000 + 3001 * ((ci + ri) % 40))
                c.request("POST", "/sha", body=body)
                want = f"{hashlib.sha256(body).hexdigest()} {len(body)}\n".encode()
            elif kind == 3:
                c.request("GET", "/nginx/index.html")
                want = b"hello from nginx\n"
            else:
                c.request("GET", f"/echo/{ci}/{ri}")
                want = None
            r = c.getresponse()
            got = r.read()
            good = r.status == 200 and (got == want if want is not None
                                        else got.startswith(f"GET /echo/{ci}/{ri}\n".encode()))
            with lock:
                if good:
                    res["ok"] += 1
                else:
                    res["bad"].append([ci, ri, r.status, len(got)])
        c.close()
    except Exception as e:  # noqa: BLE001
        with lock:
            res["errors"].append(f"{ci}: {e!r}")
threads = [threading.Thread(target=one, args=(i,)) for i in range(nconn)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(res))
"""


def wait_quiescent(f, start_in_use, timeout=30):
    """Waits until no client connection is open and the port's mbufs in use
    are back to start_in_use exactly; returns the last (http, port) seen."""
    def get():
        return f.telemetry("/ferry/http"), f.port()
    return wait_for(get, lambda v: v[0]["active_connections"] == 0
                    and v[1]["mbufs_in_use"] == start_in_use, timeout)


def per_lcore(http):
    return {k: v for k, v in http.items() if k.startswith("lcore")}


def phase_shared(tmp):
    os.environ["FERRY_XCORE_REFUSE_EVERY"] = "13"  # inherited by ferry only
    try:
        with Netns("s") as ns, Ferry(ns, lcores="0-1", config=shared_config()) as f, \
                Origins(ns, tmp) as o:
            code = shared_checks(ns, f, o)
    finally:
        os.environ.pop("FERRY_XCORE_REFUSE_EVERY", None)
    check(code == 0 and f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")


def shared_checks(ns, f, o):
    ns.run(["ip", "link", "set", "ferry0", "txqueuelen", "10000"])
    base = f"http://{FERRY_ADDR}:8080"
    start_in_use = f.port()["mbufs_in_use"]
    t_phase = time.monotonic()

    # (k)
    r = curl(ns, "-i", f"{base}/hello")
    check(r.stdout.startswith("HTTP/1.1 200") and "Via: 1.1 ferry" in r.stdout,
          f"shared pool: GET through ferry: {r.stdout[:40]!r}")
    codes = []
    for i in range(16):  # curl sequences from many client ports
        urls = [a for j in range(4) for a in ("-o", "/dev/null", f"{base}/nginx/index.html"
                                              if j % 2 else f"{base}/seq/{i}/{j}")]
        codes += curl(ns, "-w", "%{http_code}\n", *urls).stdout.split()
    check(codes == ["200"] * 64, f"curl sequences from 16 client ports: "
          f"{codes.count('200')}/64 answered 200")
    r = ns.run([sys.executable, "-c", MIXED_CLIENTS, HERE, FERRY_ADDR, "48", "10"],
               check=False, timeout=120)
    res = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
    check(res.get("ok") == 480 and not res.get("bad") and not res.get("errors"),
          f"48 clients x 10 mixed keep-alive requests, every body exact: "
          f"{res.get('ok')} ok, bad {res.get('bad', [])[:5]}, errors {res.get('errors', [])[:3]}"
          + ("" if res else r.stdout[-2000:]))
    # Pipelined: consecutive requests go to consecutive shared connections,
    # so to alternating owners; the responses still come back in order.
    for _ in range(3):
        reqs = b"".join(b"GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(7))
        reqs += b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_exchange(ns, reqs)
        order = [line.split()[1] for line in out.decode(errors="replace").splitlines()
                 if line.startswith("GET /")]
        check(order == [f"/p{i}" for i in range(7)] + ["/last"],
              f"pipelined requests over both owners answered in order: {order}")
    for _ in range(4):
        r = curl(ns, "-I", f"{base}/gen/12345")
        check("200" in r.stdout.splitlines()[0] and "Content-Length: 12345" in r.stdout,
              "HEAD: status and Content-Length, no body")
    http = f.telemetry("/ferry/http")
    print("  after (k): " + json.dumps({k: {c: v[c] for c in ("requests", "xcore_requests_out",
                                                           "xcore_requests_in")}
                                         for k, v in per_lcore(http).items()}))

    # (l) until one download and one upload went across cores (the
    # client's lcore is the steering program's choice; its next request
    # goes to the next shared connection, owned by the other lcore)
    want = hashlib.sha256(open(o.big2, "rb").read()).hexdigest()

    def handed():
        return f.telemetry("/ferry/http")["sum"]["xcore_requests_out"]

    across = {"download": 0, "upload": 0}
    for rnd in range(6):
        n0 = handed()
        t0 = time.monotonic()
        r = ns.run(["bash", "-c", f"curl -s --max-time 100 {base}/nginx/big2.bin | sha256sum"],
                   check=False, timeout=120)
        x = handed() - n0
        across["download"] += x
        check(r.stdout.split()[0] == want,
              f"{SHARED_MIB} MiB download: sha256 equal ({time.monotonic() - t0:.1f} s, "
              f"{'handed across' if x else 'same lcore'})")
        n0 = handed()
        t0 = time.monotonic()
        r = curl(ns, "--data-binary", f"@{o.big2}", f"{base}/sha", timeout=120)
        x = handed() - n0
        across["upload"] += x
        check(r.stdout.split() == [want, str(SHARED_MIB << 20)],
              f"{SHARED_MIB} MiB upload: sha256 equal ({time.monotonic() - t0:.1f} s, "
              f"{'handed across' if x else 'same lcore'})")
        if rnd >= 1 and across["download"] and across["upload"]:
            break
    check(across["download"] and across["upload"],
          f"big transfers went across cores: {across}")

    # (m)
    codes = [status_of(ns, f"{base}/dead/{i}") for i in range(6)]
    check(codes == ["502"] * 6, f"dead shared upstream: 502 every time: {codes}")
    t0 = time.monotonic()
    procs = [ns.popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                       "20", f"{base}/slow"], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    codes = [pr.communicate(timeout=30)[0] for pr in procs]
    check(codes == ["504"] * 4, f"slow shared upstream: 504 every time: {codes} "
          f"({time.monotonic() - t0:.1f} s)")
    urls = [a for _ in range(40) for a in ("-o", "/dev/null", f"{base}/ka/index.html")]
    codes = curl(ns, "-w", "%{http_code}\n", *urls).stdout.split()
    check(codes == ["200"] * 40,
          f"origin closing keep-alive every 2 requests: 40/40 answered 200 "
          f"({codes.count('200')})")

    # (n)
    before = f.telemetry("/ferry/http")["sum"]
    drop = f"""
import socket
s = socket.create_connection(("{FERRY_ADDR}", 8080), timeout=10)
s.sendall(b"GET /nginx/big2.bin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
got = 0
while got < (1 << 20):
    got += len(s.recv(65536))
s.close()
print(got)
"""
    for _ in range(8):
        ns.run([sys.executable, "-c", drop], timeout=30)
    keys = ("xcore_stale", "xcore_aborted", "client_gone", "upstream_aborted",
            "shared_reconnects")

    def gone():
        after = f.telemetry("/ferry/http")["sum"]
        return {k: after[k] - before[k] for k in keys}
    # The clients are gone; ferry sees their resets on its next polls.
    d = wait_for(gone, lambda d: d["client_gone"] >= 8 and d["upstream_aborted"] >= 8
                 and d["xcore_aborted"] >= 1, timeout=15)
    print(f"  disconnects: {d}")
    check(d["xcore_aborted"] >= 1 and d["client_gone"] >= 8 and d["upstream_aborted"] >= 8,
          "clients gone mid-response: every upstream side aborted, the handed-over ones by "
          "their owner (xcore_aborted), stale hand-back messages freed "
          f"(xcore_stale +{d['xcore_stale']})")
    check(status_of(ns, f"{base}/nginx/index.html") == "200",
          "the shared connections reopen after the aborts")

    # (o)
    acc0, req0 = stub_accepts(ns, NGINX_PORT, "/nginx/status")
    wrk_s = min(5, WRK_S)
    r = ns.run(["wrk", "-t", "2", "-c", "100", "-d", f"{wrk_s}s", "--timeout", "5s",
                f"{base}/nginx/index.html"], check=False, timeout=wrk_s + 60)
    print("  " + r.stdout.replace("\n", "\n  "))
    check(r.returncode == 0 and "Socket errors" not in r.stdout
          and "Non-2xx" not in r.stdout, "shared pool, wrk 100 connections: no socket "
          "errors, all 2xx")
    acc1, req1 = stub_accepts(ns, NGINX_PORT, "/nginx/status")
    check(req1 - req0 >= 1000 and acc1 - acc0 <= 8,
          f"shared pool: the origin accepted {acc1 - acc0} connections for "
          f"{req1 - req0} requests")

    # (p)
    http, p = wait_quiescent(f, start_in_use)
    lc = per_lcore(http)
    print("  http: " + json.dumps(http["sum"]))
    for k, v in lc.items():
        print(f"  {k}: " + json.dumps({c: v[c] for c in v if c.startswith(("xcore", "shared",
                                                                        "requests"))}))
    names = sorted(lc)
    check(len(names) == 2, f"two lcores in /ferry/http: {names}")
    a, b = lc[names[0]], lc[names[1]]
    check(a["xcore_requests_out"] > 0 and b["xcore_requests_in"] > 0,
          f"hand-offs {names[0]} -> {names[1]}: {a['xcore_requests_out']} out, "
          f"{b['xcore_requests_in']} in")
    check(b["xcore_requests_out"] > 0 and a["xcore_requests_in"] > 0,
          f"hand-offs {names[1]} -> {names[0]}: {b['xcore_requests_out']} out, "
          f"{a['xcore_requests_in']} in")
    s = http["sum"]
    check(s["xcore_requests_out"] == s["xcore_requests_in"],
          "every request handed over was received")
    check(s["xcore_msgs_out"] == s["xcore_msgs_in"] > 0, "messages counted both sides")
    check(s["xcore_send_retry"] > 0 and s["shared_queue_full"] == 0,
          f"refused sends kept and retried: {s['xcore_send_retry']}")
    check(http["active_connections"] == 0, "no client connection left")
    check(p["mbufs_in_use"] == start_in_use,
          f"no mbuf leak: {p['mbufs_in_use']} in use (start {start_in_use})")
    ups = f.telemetry("/ferry/upstreams")
    gauges = {k: (v["active"], v["idle"], v["connections"]) for k, v in ups.items()}
    print(f"  upstreams (active, idle, opened): {gauges}")
    check(all(v["pool"] == "shared" and v["active"] == 0 and v["idle"] <= 4 for v in ups.values())
          and 1 <= ups["nginx/0"]["idle"], "shared connections kept idle, none busy, at most 4 "
          "per server")

    # (q) SIGTERM while downloads are in flight (at least one of 4 is
    # handed across: two on one lcore go to different owners): the drain
    # finishes them all.
    n0 = handed()
    n2xx0 = f.telemetry("/ferry/http")["sum"]["responses_2xx"]
    procs = [ns.popen(["bash", "-c", f"curl -s --limit-rate 8M --max-time 60 "
                       f"{base}/nginx/big2.bin | sha256sum"],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(4)]
    # SIGTERM once all four are in flight (their responses have begun).
    wait_for(lambda: f.telemetry("/ferry/http")["sum"]["responses_2xx"],
             lambda n: n >= n2xx0 + 4, timeout=30)
    x = handed() - n0
    t0 = time.monotonic()
    code = f.stop()
    outs = [pr.communicate(timeout=90)[0] for pr in procs]
    check(all(o_.split() and o_.split()[0] == want for o_ in outs),
          f"SIGTERM mid-transfer: 4 downloads ({x} handed across) finished, sha256 equal "
          f"(drain {time.monotonic() - t0:.1f} s)")
    print(f"  shared phase: {time.monotonic() - t_phase:.1f} s")
    return code


def main():
    require_root()
    tmp = tempfile.mkdtemp(prefix="ferry-http-")
    if "local" in PHASES:
        phase_local(tmp)
    if "shared" in PHASES:
        phase_shared(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
