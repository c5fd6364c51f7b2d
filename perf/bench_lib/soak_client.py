#!/usr/bin/python3
"""The client side of perf/soak: mixed HTTP/1.1 traffic that checks every byte.

  soak_client.py HOST PORT SECONDS [--procs 4] [--seed 1]

Each of --procs processes loops until SECONDS have passed, choosing at random:
  keep-alive GET     GET /gen/<n> on a reused connection (Content-Length or chunked)
  fresh GET          the same on a new connection with "Connection: close"
  pipelined GETs     three GETs written at once, three answers read in order
  upload             POST /sha with a body of n bytes (Content-Length or chunked);
                     the origin answers "<sha256> <length>" of what it received
Sizes n: 3 B to 16 MiB (mostly small). A body is checked against origin.py's
pattern by sha256. Every exchange ends in exactly one outcome:
  ok                  a 200 with the right bytes
  status_<code>       any other status (502/503/504 are ferry's answers while the
                      origin is down; anything else is a failure)
  mismatch            a whole body whose bytes are wrong (must be 0)
  truncated           the connection closed inside a response body (the origin died
                      after its head was forwarded: ferry can only close)
  no_response         the connection closed, or reset, before any response byte
                      on a fresh connection (must be 0), or on a reused one twice
  timeout             no progress for 120 s (must be 0)
  parse_error         bytes that are not HTTP/1.1 (must be 0)
A reused keep-alive connection that is found closed before the request got any
byte back is retried once on a fresh connection, as every HTTP client does
(counted as stale_retries). Prints one JSON object: the outcomes summed over the
processes, requests, bytes received and sent.
"""

import hashlib
import json
import multiprocessing
import os
import random
import socket
import sys
import time

# The origin's body pattern (byte k of a body = k mod 251), from the origin itself.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "integration"))
from origin import pattern  # noqa: E402

SIZES = [(3, 40), (1024, 20), (16 * 1024, 15), (64 * 1024, 10), (1 << 20, 10),
         (4 << 20, 4), (16 << 20, 1)]
OPS = [("keepalive", 45), ("fresh", 20), ("pipeline", 15), ("upload", 20)]
IO_TIMEOUT = 120
OUTCOMES = ("ok", "mismatch", "truncated", "no_response", "timeout", "parse_error",
            "connect_refused")


_sha_cache = {}


def expected_sha(n):
    if n not in _sha_cache:
        h = hashlib.sha256()
        off = 0
        while off < n:
            k = min(1 << 20, n - off)
            h.update(pattern(off, k))
            off += k
        _sha_cache[n] = h.hexdigest()
    return _sha_cache[n]


def pick(rng, table):
    total = sum(w for _, w in table)
    x = rng.uniform(0, total)
    for v, w in table:
        x -= w
        if x <= 0:
            return v
    return table[-1][0]


class Closed(Exception):
    """The peer closed; got_bytes says whether anything of a response came."""

    def __init__(self, got_bytes, in_body=False):
        super().__init__("closed")
        self.got_bytes, self.in_body = got_bytes, in_body


class ParseError(Exception):
    pass


class Body:
    """sha256 of a response body, keeping its first bytes (an upload's answer)."""

    def __init__(self):
        self.h, self.head = hashlib.sha256(), bytearray()

    def update(self, b):
        self.h.update(b)
        if len(self.head) < 256:
            self.head += bytes(b[:256 - len(self.head)])


class Reader:
    def __init__(self, sock):
        self.s, self.buf, self.rx = sock, bytearray(), 0
        self.last_body = b""

    def _more(self, got, in_body=False):
        try:
            b = self.s.recv(1 << 18)
        except socket.timeout:
            raise
        except OSError:
            b = b""
        if not b:
            raise Closed(got or bool(self.buf), in_body)
        self.rx += len(b)
        self.buf += b

    def line(self, got=True, in_body=False):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return out
            if len(self.buf) > 65536:
                raise ParseError("line too long")
            self._more(got, in_body)

    def exact(self, n, h):
        while n:
            if not self.buf:
                self._more(True, True)
            k = min(n, len(self.buf))
            h.update(memoryview(self.buf)[:k])
            del self.buf[:k]
            n -= k

    def response(self, head_req=False):
        """(status, sha256 hex, length, close) of one response."""
        status_line = self.line(got=False)
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ParseError(f"status line {status_line[:60]!r}")
        code = int(parts[1])
        headers = {}
        while True:
            ln = self.line()
            if not ln:
                break
            k, sep, v = ln.partition(b":")
            if not sep:
                raise ParseError(f"header {ln[:60]!r}")
            k = k.strip().lower()
            if k in headers and k in (b"content-length", b"transfer-encoding"):
                raise ParseError(f"repeated {k!r}")
            headers[k] = v.strip()
        close = headers.get(b"connection", b"").lower() == b"close"
        h = Body()
        n = 0
        te = headers.get(b"transfer-encoding")
        if te is not None:
            if te.lower() != b"chunked":
                raise ParseError(f"transfer-encoding {te!r}")
            while True:
                size_line = self.line(in_body=True)
                try:
                    size = int(size_line.split(b";")[0], 16)
                except ValueError:
                    raise ParseError(f"chunk size {size_line[:40]!r}")
                if size == 0:
                    while self.line(in_body=True):
                        pass
                    break
                self.exact(size, h)
                n += size
                if self.line(in_body=True) != b"":
                    raise ParseError("chunk not followed by CRLF")
        elif b"content-length" in headers:
            n = int(headers[b"content-length"])
            self.exact(n, h)
        elif code not in (204, 304) and not (100 <= code < 200):
            # Delimited by close.
            while True:
                try:
                    self._more(True, True)
                except Closed:
                    break
            h.update(self.buf)
            n = len(self.buf)
            self.buf.clear()
            close = True
        self.last_body = bytes(h.head)
        return code, h.h.hexdigest(), n, close


class Conn:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=IO_TIMEOUT)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.r = Reader(self.s)
        self.used = False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def get_request(n, chunked, close):
    q = "?chunked=1" if chunked else ""
    c = "Connection: close\r\n" if close else ""
    return f"GET /gen/{n}{q} HTTP/1.1\r\nHost: soak\r\n{c}\r\n".encode()


def send_upload(sock, n, chunked, rng):
    if chunked:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n")
        off = 0
        while off < n:
            k = min(n - off, rng.choice([1, 100, 4096, 65536, 1 << 20]))
            sock.sendall(b"%x\r\n" % k + pattern(off, k) + b"\r\n")
            off += k
        sock.sendall(b"0\r\n\r\n")
    else:
        sock.sendall(b"POST /sha HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n\r\n" % n)
        off = 0
        while off < n:
            k = min(1 << 20, n - off)
            sock.sendall(pattern(off, k))
            off += k


class Worker:
    def __init__(self, host, port, seed):
        self.host, self.port = host, port
        self.rng = random.Random(seed)
        self.out = {"rx_bytes": 0, "tx_bytes": 0, "stale_retries": 0}
        self.resolved = 0
        self.what, self.t0 = "", time.monotonic()
        self.op, self.last_status = "", 0
        self.ka = None

    def count(self, k, by=1):
        self.out[k] = self.out.get(k, 0) + by

    def exchange(self, conn, send, expect):
        """Sends with send(sock), reads len(expect) responses; expect holds
        (sha, n) pairs, (None, n) for an upload of n bytes whose answer is the
        origin's "<sha256> <n>". self.resolved counts the responses judged.
        Returns False when the connection must not be reused."""
        send(conn.s)
        conn.used = True
        for i, (want_sha, want_n) in enumerate(expect):
            code, sha, n, close = conn.r.response()
            self.resolved += 1
            self.last_status = code
            if code != 200:
                self.count(f"status_{code}")
            elif want_sha is None:
                want = f"{expected_sha(want_n)} {want_n}\n".encode()
                self.count("ok" if conn.r.last_body == want else "mismatch")
            else:
                self.count("ok" if (sha, n) == (want_sha, want_n) else "mismatch")
            if close and i + 1 < len(expect):
                raise Closed(True)  # pipelined requests the close dropped
            if close:
                return False
        return True

    def fail(self, outcome, expect, why=""):
        """The first unresolved request of the exchange ends as outcome, the
        ones pipelined behind it as no_response; detail counts them by
        operation, outcome and cause."""
        left = len(expect) - self.resolved
        if left > 0:
            self.count(outcome)
            self.count("no_response", left - 1)
            d = self.out.setdefault("detail", {})
            key = f"{self.op}/{outcome}/{why}/after_{self.resolved}"
            d[key] = d.get(key, 0) + left

    def one(self):
        op = self.op = pick(self.rng, OPS)
        fresh = op == "fresh"
        if op == "pipeline":
            sizes = [pick(self.rng, SIZES[:4]) for _ in range(3)]
            chunked = [self.rng.random() < 0.3 for _ in sizes]
            payload = b"".join(get_request(n, c, False) for n, c in zip(sizes, chunked))
            send = lambda s: s.sendall(payload)
            expect = [(expected_sha(n), n) for n in sizes]
            self.what = "+".join(f"{n}{'c' if c else ''}" for n, c in zip(sizes, chunked))
        elif op == "upload":
            n = pick(self.rng, SIZES)
            chunked = self.rng.random() < 0.4
            seed = self.rng.random()
            send = lambda s: send_upload(s, n, chunked, random.Random(seed))
            expect = [(None, n)]
            self.what = f"{n}{'c' if chunked else ''}"
        else:
            n = pick(self.rng, SIZES)
            chunked = self.rng.random() < 0.3
            req = get_request(n, chunked, fresh)
            self.what = f"{n}{'c' if chunked else ''}"
            send = lambda s: s.sendall(req)
            expect = [(expected_sha(n), n)]
        rx0 = 0
        for attempt in (0, 1):
            self.resolved = 0
            conn, reused = None, False
            try:
                if fresh or self.ka is None:
                    conn = Conn(self.host, self.port)
                else:
                    conn = self.ka
                reused = conn.used
                rx0 = conn.r.rx
                keep = self.exchange(conn, send, expect)
                self.count("rx_bytes", conn.r.rx - rx0)
                if op == "upload":
                    self.count("tx_bytes", expect[0][1])
                if fresh or not keep:
                    conn.close()
                    if conn is self.ka:
                        self.ka = None
                else:
                    self.ka = conn
                return
            except Closed as e:
                if (not e.got_bytes and self.resolved == 0 and reused and attempt == 0):
                    # A keep-alive connection closed while idle: retry fresh.
                    self.count("stale_retries")
                    if conn is self.ka:
                        self.ka = None
                    conn.close()
                    continue
                self.fail("truncated" if e.in_body else "no_response", expect,
                          ("reused" if reused else "new") + ("/eof" if e.got_bytes else "/eof0")
                          + ("/last" + str(self.last_status) if self.resolved else ""))
            except socket.timeout:
                got = conn.r.rx - rx0 if conn is not None else 0
                self.fail("timeout", expect, ("reused" if reused else "new") + f"/{self.what}"
                          f"/rx{got}/port{conn.s.getsockname()[1] if conn else 0}"
                          f"/t{time.monotonic() - self.t0:.0f}")
            except ParseError as e:
                self.fail("parse_error", expect)
                errs = self.out.setdefault("parse_errors", [])
                if len(errs) < 5:
                    errs.append(str(e)[:100])
            except ConnectionRefusedError:
                self.fail("connect_refused", expect)
            except OSError as e:
                self.fail("no_response", expect, ("reused/" if reused else "new/")
                          + type(e).__name__)
            if conn is self.ka:
                self.ka = None
            if conn:
                conn.close()
            return


def run(args):
    host, port, seconds, seed = args
    w = Worker(host, port, seed)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        w.one()
    if w.ka:
        w.ka.close()
    return w.out


def main():
    host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    procs, seed = 4, 1
    rest = sys.argv[4:]
    for i, a in enumerate(rest):
        if a == "--procs":
            procs = int(rest[i + 1])
        if a == "--seed":
            seed = int(rest[i + 1])
    for n, _ in SIZES:
        expected_sha(n)
    with multiprocessing.Pool(procs) as pool:
        outs = pool.map(run, [(host, port, seconds, seed * 1000 + i) for i in range(procs)])
    total = {}
    for o in outs:
        for k, v in o.items():
            if isinstance(v, list):
                total.setdefault(k, []).extend(v[:5])
            elif isinstance(v, dict):
                t = total.setdefault(k, {})
                for dk, dv in v.items():
                    t[dk] = t.get(dk, 0) + dv
            else:
                total[k] = total.get(k, 0) + v
    total["requests"] = sum(v for k, v in total.items() if k in OUTCOMES or k.startswith("status_"))
    print(json.dumps(total), flush=True)


if __name__ == "__main__":
    main()
