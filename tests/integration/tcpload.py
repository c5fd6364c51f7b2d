"""TCP load for the integration tests and perf/: run inside a test namespace.

  tcpload.py echo ADDR PORT --conns N --bytes B [--timeout S]
      N parallel connections to an echo service; each sends B bytes (a
      per-connection stream), half-closes, and reads everything back. Prints
      one JSON object: per-connection sha256 equality, bytes, the longest time
      any connection went without progress (max_stall_s), elapsed, Gbit/s.
  tcpload.py churn ADDR PORT --conns N [--parallel K] [--timeout S]
      N short connections, K at a time: connect, send 64 bytes, read them
      back from an echo service, close. Prints counts of ok / errors, conn/s.
  tcpload.py server ADDR PORT
      A kernel echo server (one thread per connection) for relay targets;
      runs until killed.

Single-threaded non-blocking I/O (selectors) for echo, so 64 streams cost one
core of Python at most; every loop is bounded by --timeout.
"""

import argparse
import hashlib
import json
import os
import selectors
import socket
import sys
import threading
import time

CHUNK = 1 << 16
POOL = os.urandom(1 << 20)  # the streams are windows into this pool


def stream_chunk(conn_id, off, n):
    """Bytes [off, off + n) of connection conn_id's stream (n <= CHUNK)."""
    start = (off + conn_id * 7919) % len(POOL)
    b = POOL[start:start + n]
    if len(b) < n:
        b += POOL[:n - len(b)]
    return b


# The congestion control of every socket made here (--cc), or None for the
# namespace's default (the host's: bbr on some machines, cubic on Debian's).
CC = None


def tcp_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if CC:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CC.encode())
    return s


class Conn:
    def __init__(self, i, addr, port, nbytes):
        self.i = i
        self.nbytes = nbytes
        self.sent = 0
        self.got = 0
        self.tx_hash = hashlib.sha256()
        self.rx_hash = hashlib.sha256()
        self.pending = b""
        self.eof = False
        self.shut = False
        self.error = None
        self.last = time.monotonic()
        self.max_stall = 0.0
        self.s = tcp_socket()
        self.s.setblocking(False)
        self.s.connect_ex((addr, port))

    def progress(self):
        now = time.monotonic()
        self.max_stall = max(self.max_stall, now - self.last)
        self.last = now


def run_echo(addr, port, conns, nbytes, timeout):
    sel = selectors.DefaultSelector()
    cs = [Conn(i, addr, port, nbytes) for i in range(conns)]
    for c in cs:
        sel.register(c.s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    t0 = time.monotonic()
    end = t0 + timeout
    live = len(cs)
    while live and time.monotonic() < end:
        for key, ev in sel.select(timeout=0.5):
            c = key.data
            try:
                if ev & selectors.EVENT_WRITE and not c.shut:
                    if not c.pending and c.sent < c.nbytes:
                        n = min(CHUNK, c.nbytes - c.sent)
                        c.pending = stream_chunk(c.i, c.sent, n)
                        c.tx_hash.update(c.pending)
                        c.sent += n
                    if c.pending:
                        k = c.s.send(c.pending)
                        c.pending = c.pending[k:]
                        if k:
                            c.progress()
                    if not c.pending and c.sent >= c.nbytes:
                        c.s.shutdown(socket.SHUT_WR)
                        c.shut = True
                        sel.modify(c.s, selectors.EVENT_READ, c)
                if ev & selectors.EVENT_READ:
                    b = c.s.recv(1 << 18)
                    if b:
                        c.rx_hash.update(b)
                        c.got += len(b)
                        c.progress()
                    else:
                        c.eof = True
                        sel.unregister(c.s)
                        c.s.close()
                        live -= 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                c.error = f"{type(e).__name__}: {e}"
                sel.unregister(c.s)
                c.s.close()
                live -= 1
    elapsed = time.monotonic() - t0
    for c in cs:
        if not c.eof and c.error is None:
            c.error = "timeout"
            c.s.close()
    total = sum(c.got for c in cs)
    return {
        "conns": conns,
        "bytes_per_conn": nbytes,
        "ok": sum(1 for c in cs if c.error is None and c.got == nbytes
                  and c.rx_hash.digest() == c.tx_hash.digest()),
        "errors": [f"conn {c.i}: {c.error}" for c in cs if c.error][:10],
        "mismatched": [c.i for c in cs if c.error is None and
                       (c.got != nbytes or c.rx_hash.digest() != c.tx_hash.digest())][:10],
        "received": total,
        "max_stall_s": round(max(c.max_stall for c in cs), 3),
        "elapsed_s": round(elapsed, 3),
        "gbit_s_each_way": round(total * 8 / elapsed / 1e9, 3),
    }


def run_churn(addr, port, conns, parallel, timeout):
    lock = threading.Lock()
    counts = {"ok": 0, "errors": 0, "mismatched": 0}
    first_errors = []
    next_id = [0]
    end = time.monotonic() + timeout
    msg = b"x" * 64

    def worker():
        while time.monotonic() < end:
            with lock:
                if next_id[0] >= conns:
                    return
                next_id[0] += 1
            try:
                with socket.create_connection((addr, port), timeout=10) as s:
                    s.sendall(msg)
                    got = b""
                    while len(got) < len(msg):
                        b = s.recv(256)
                        if not b:
                            break
                        got += b
                    ok = got == msg
                with lock:
                    counts["ok" if ok else "mismatched"] += 1
            except OSError as e:
                with lock:
                    counts["errors"] += 1
                    if len(first_errors) < 10:
                        first_errors.append(f"{type(e).__name__}: {e}")

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(max(1, end - time.monotonic() + 15))
    elapsed = time.monotonic() - t0
    counts.update({"conns": conns, "first_errors": first_errors,
                   "elapsed_s": round(elapsed, 3),
                   "conn_per_s": round(counts["ok"] / elapsed, 1)})
    return counts


def run_server(addr, port):
    srv = tcp_socket()  # accepted sockets inherit its congestion control
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(1024)

    def serve(c):
        with c:
            while True:
                try:
                    b = c.recv(1 << 18)
                except OSError:
                    return
                if not b:
                    try:
                        c.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                try:
                    c.sendall(b)
                except OSError:
                    return

    print("listening", flush=True)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["echo", "churn", "server"])
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--cc", help="congestion control of the sockets (TCP_CONGESTION)")
    a = ap.parse_args()
    global CC
    CC = a.cc
    if a.mode == "server":
        run_server(a.addr, a.port)
        return 0
    if a.mode == "echo":
        r = run_echo(a.addr, a.port, a.conns, a.bytes, a.timeout)
    else:
        r = run_churn(a.addr, a.port, a.conns, a.parallel, a.timeout)
    print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
