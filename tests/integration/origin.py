"""A small HTTP/1.1 origin for the proxy tests (run inside a test namespace).

  origin.py ADDR PORT

  GET  /gen/<n>[?chunked=1]  n bytes of the pattern (byte k = k mod 251), with
                             Content-Length, or chunked in 64 KiB chunks
  POST /sha  (or PUT)        reads the body (Content-Length or chunked) and
                             answers "<sha256 hex> <length>"
  GET  /slow                 answers after 30 s (for response timeouts)
  GET  /delay/<ms>           answers "delayed" after <ms> milliseconds
  GET  /health               200 "ok"
  GET  /count                how many connections this origin accepted so far
  anything else              200 with the method and path echoed
Keep-alive (HTTP/1.1); one thread per connection; runs until killed.
"""

import hashlib
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

PATTERN = bytes(i % 251 for i in range(251)) * 512  # 128511 bytes
accepted = 0
lock = threading.Lock()


def pattern(off, n):
    start = off % 251
    out = bytearray()
    while len(out) < n:
        out += PATTERN[start:start + (n - len(out))]
        start = 0
    return bytes(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        global accepted
        with lock:
            accepted += 1
        super().setup()

    def reply(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self, h):
        te = self.headers.get("Transfer-Encoding", "")
        n = 0
        if "chunked" in te.lower():
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    b = self.rfile.read(min(left, 1 << 16))
                    if not b:
                        raise ConnectionError("eof in chunk")
                    h.update(b)
                    left -= len(b)
                    n += len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                b = self.rfile.read(min(left, 1 << 16))
                if not b:
                    raise ConnectionError("eof in body")
                h.update(b)
                left -= len(b)
                n += len(b)
        return n

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path.startswith("/gen/"):
            n = int(path[5:])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if "chunked=1" in query:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if self.command == "HEAD":
                    return
                off = 0
                while off < n:
                    k = min(1 << 16, n - off)
                    self.wfile.write(b"%x\r\n" % k + pattern(off, k) + b"\r\n")
                    off += k
                self.wfile.write(b"0\r\nX-Trailer: done\r\n\r\n")
            else:
                self.send_header("Content-Length", str(n))
                self.end_headers()
                if self.command == "HEAD":
                    return
                off = 0
                while off < n:
                    k = min(1 << 20, n - off)
                    self.wfile.write(pattern(off, k))
                    off += k
        elif path == "/slow":
            time.sleep(30)
            self.reply(200, b"late\n")
        elif path.startswith("/delay/"):
            time.sleep(int(path[7:]) / 1000)
            self.reply(200, b"delayed\n")
        elif path == "/health":
            self.reply(200, b"ok\n")
        elif path == "/count":
            self.reply(200, str(accepted).encode())
        elif path == "/whoami" or path.endswith("/whoami"):  # under a route's prefix too
            self.reply(200, str(self.server.server_address[1]).encode())
        else:
            hdrs = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            self.reply(200, f"{self.command} {self.path}\n{hdrs}".encode())

    do_HEAD = do_GET

    def do_POST(self):
        h = hashlib.sha256()
        n = self.read_body(h)
        self.reply(200, f"{h.hexdigest()} {n}\n".encode())

    do_PUT = do_POST


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    srv = (Server6 if ":" in sys.argv[1] else Server)((sys.argv[1], int(sys.argv[2])), Handler)
    print("listening", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
