#!/usr/bin/env python3
"""A paced HTTP/1.1 load: a fixed offered rate, not as fast as possible.

wrk offers "as much as the system takes"; to see how a proxy's CPU follows the
load (an idle ferry in conditional mode should sleep, one in poll mode spins)
the load has to be offered at chosen rates. This sends GET requests on a pool
of keep-alive connections at `rate` requests per second for `duration`
seconds (an open-loop schedule: request i is due at start + i / rate; a due
request waits for a free connection and the wait counts in its latency), and
prints one JSON line:

  {"offered_rps", "conns", "sent", "completed", "achieved_rps", "late", "errors",
   "p50_us", "p99_us", "max_us"}

late = requests sent more than 1 ms after they were due (every connection
was busy). Usage:
  paced.py HOST PORT PATH RATE DURATION_S [--conns N]
"""

import argparse
import json
import selectors
import socket
import sys
import time


class Conn:
    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.req = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        self.buf = b""
        self.t_sent = None  # due time of the request in flight, or None

    def send(self, due):
        self.sock.sendall(self.req)  # tiny: fits the empty send buffer
        self.t_sent = due

    def feed(self, data):
        """Returns True when a whole response is in; raises ValueError on garbage."""
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = self.buf[:end].decode("latin-1").split("\r\n")
        if not head[0].startswith("HTTP/1.1 "):
            raise ValueError("bad status line " + head[0][:40])
        status = int(head[0].split()[1])
        length = 0
        for h in head[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        if len(self.buf) < end + 4 + length:
            return False
        self.buf = self.buf[end + 4 + length:]
        if status >= 400:
            raise ValueError(f"status {status}")
        return True


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100.0))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("path")
    ap.add_argument("rate", type=float)
    ap.add_argument("duration", type=float)
    ap.add_argument("--conns", type=int, default=16)
    a = ap.parse_args()

    out = {"offered_rps": a.rate, "conns": a.conns, "sent": 0, "completed": 0, "late": 0, "errors": 0}
    lat = []
    if a.rate <= 0:  # idle: offer nothing, just let the time pass
        time.sleep(a.duration)
        out.update(achieved_rps=0.0, p50_us=None, p99_us=None, max_us=None)
        print(json.dumps(out), flush=True)
        return 0
    sel = selectors.DefaultSelector()
    conns = [Conn(a.host, a.port, a.path) for _ in range(a.conns)]
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
    free = list(conns)
    start = time.monotonic()
    end = start + a.duration
    i = 0  # next request index; due at start + i / rate
    while True:
        now = time.monotonic()
        while now < end and start + i / a.rate <= now:
            due = start + i / a.rate
            if not free:
                break  # it stays due; sent as soon as a connection frees
            c = free.pop()
            c.send(due)
            if now - due > 0.001:
                out["late"] += 1
            out["sent"] += 1
            i += 1
        if now >= end and len(free) == len(conns):
            break
        if now >= end + 5:  # answers that never came count as errors
            out["errors"] += len(conns) - len(free)
            break
        wait = max(0.0, min(start + i / a.rate, end + 5) - time.monotonic()) if free else 0.05
        for key, _ in sel.select(timeout=min(wait, 0.05)):
            c = key.data
            try:
                data = c.sock.recv(65536)
                if not data:
                    raise ValueError("closed by the peer")
                if c.feed(data):
                    lat.append(time.monotonic() - c.t_sent)
                    out["completed"] += 1
                    c.t_sent = None
                    free.append(c)
            except (ValueError, OSError):
                out["errors"] += 1
                sel.unregister(c.sock)
                if c in free:
                    free.remove(c)
                c.sock.close()
                try:
                    n = Conn(a.host, a.port, a.path)
                except OSError:
                    continue
                sel.register(n.sock, selectors.EVENT_READ, n)
                conns[conns.index(c)] = n
                free.append(n)
    took = time.monotonic() - start
    out["achieved_rps"] = round(out["completed"] / min(took, a.duration), 1)
    out["p50_us"] = round(pct(lat, 50) * 1e6) if lat else None
    out["p99_us"] = round(pct(lat, 99) * 1e6) if lat else None
    out["max_us"] = round(max(lat) * 1e6) if lat else None
    for c in conns:
        c.sock.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
