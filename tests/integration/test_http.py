"""The HTTP reverse proxy end to end: ferry on 2 lcores (net_tap, steering
program) in a private namespace, curl / raw sockets / wrk as clients, a Python
origin (tests/integration/origin.py) and nginx as origins on the tap's kernel
side (10.77.0.2).

(a) GET, HEAD, POST; Via / X-Forwarded-For / X-Forwarded-Proto reach the origin
(b) chunked upload and chunked download (trailers), byte-exact
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
"""

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, PEER_ADDR, Ferry, Netns, check, require_root  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN = os.path.join(HERE, "origin.py")
BIG_MIB = int(os.environ.get("FERRY_HTTP_BIG_MIB", "100"))
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
        py = self.ns.popen([sys.executable, ORIGIN, PEER_ADDR, str(PY_PORT)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(py)
        check(py.stdout.readline().strip() == "listening", "python origin listening")
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
        with open(self.big, "wb") as f:
            block = os.urandom(1 << 20)
            for i in range(BIG_MIB):
                f.write(block[i % 7:] + block[:i % 7])
        os.chmod(self.big, 0o644)
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
            p.terminate()  # our own children, by pid
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return False


def curl(ns, *args, timeout=120):
    r = ns.run(["curl", "-s", "--max-time", str(timeout - 5), *args], check=False,
               timeout=timeout)
    return r


def status_of(ns, url, *extra):
    r = curl(ns, "-o", "/dev/null", "-w", "%{http_code}", *extra, url)
    return r.stdout.strip()


def stub_accepts(ns, port, path):
    r = ns.run(["curl", "-s", f"http://{PEER_ADDR}:{port}{path}"], check=False)
    # "Active connections: 1\nserver accepts handled requests\n 5 5 10\n..."
    nums = r.stdout.splitlines()[2].split()
    return int(nums[0]), int(nums[2])


def raw_exchange(ns, payload_hex, timeout=10):
    """Sends raw bytes from inside the namespace, returns what came back until EOF."""
    code = f"""
import socket, sys
s = socket.create_connection(("{FERRY_ADDR}", 8080), timeout={timeout})
s.sendall(bytes.fromhex("{payload_hex}"))
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
except socket.timeout:
    pass
sys.stdout.write(out.hex())
"""
    r = ns.run([sys.executable, "-c", code], check=False, timeout=timeout + 10)
    return bytes.fromhex(r.stdout.strip() or "")


def main():
    require_root()
    tmp = tempfile.mkdtemp(prefix="ferry-http-")
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

        # (b)
        up = os.path.join(tmp, "up.bin")
        with open(up, "wb") as fh:
            fh.write(os.urandom(3 << 20))
        want = hashlib.sha256(open(up, "rb").read()).hexdigest()
        r = curl(ns, "-H", "Transfer-Encoding: chunked", "--data-binary", f"@{up}", f"{base}/sha")
        check(r.stdout.split() == [want, str(3 << 20)], "chunked upload: sha256 equal")
        r = ns.run(["bash", "-c", f"curl -s --raw {base}/gen/1000000?chunked=1 | tail -c 40"],
                   check=False)
        check("X-Trailer: done" in r.stdout, "chunked download keeps the trailer")
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
        out = raw_exchange(ns, reqs.hex())
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
            out = raw_exchange(ns, s.hex())
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
        check(r.returncode == 0 and "Socket errors" not in r.stdout
              and "Non-2xx" not in r.stdout, "wrk 400 connections: no socket errors, all 2xx")
        rps = [line for line in r.stdout.splitlines() if "Requests/sec" in line]
        print(f"  {rps}")

        # leaks: every connection closes, every mbuf returns
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            http = f.telemetry("/ferry/http")
            p = f.port()
            if http["active_connections"] == 0 and p["mbufs_in_use"] <= start_in_use + 64:
                break
            time.sleep(0.5)
        print(f"  http: {json.dumps(http['sum'])}")
        check(http["active_connections"] == 0, "no client connection left")
        check(p["mbufs_in_use"] <= start_in_use + 64,
              f"no mbuf leak: {p['mbufs_in_use']} in use (start {start_in_use})")
    check(f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
