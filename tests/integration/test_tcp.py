"""The TCP layer end to end: ferry on 1 lcore (net_tap in a private netns) runs
the [tcp_test] services; kernel sockets in the same namespace talk to them.

(a) echo: 1 MiB of random bytes comes back byte-exact (sha256)
(b) 16 parallel connections x 4 MiB to discard and 16 x 4 MiB from source,
    byte counts exact, the source stream verified (byte k = k mod 251)
(c) a closed port answers RST (ConnectionRefusedError)
(d) counters add up: every connection opened was closed, no bad checksums
(e) 2% loss toward the kernel (nftables on its INPUT hook) during an echo
    transfer: still byte-exact, retransmissions counted
"""

import hashlib
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, Ferry, Netns, check, require_root  # noqa: E402

ECHO, DISCARD, SOURCE = 7, 9, 19
MIB = 1 << 20
SOURCE_BYTES = 4 * MIB

CONFIG = f"""
[tcp]
time_wait_ms = 500
[tcp_test]
echo_port = {ECHO}
discard_port = {DISCARD}
source_port = {SOURCE}
source_bytes = {SOURCE_BYTES}

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
mbufs = 32768
"""

PATTERN = bytes(i % 251 for i in range(251)) * 40


def connect(port, timeout=20):
    s = socket.create_connection((FERRY_ADDR, port), timeout=timeout)
    return s


def echo_roundtrip(nbytes, deadline_s):
    """Sends nbytes of random data to echo, reads them back; returns (sent, got) digests."""
    data = os.urandom(nbytes)
    got = bytearray()
    s = connect(ECHO)
    s.settimeout(deadline_s)
    err = []

    def writer():
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            err.append(e)

    t = threading.Thread(target=writer)
    t.start()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        b = s.recv(1 << 16)
        if not b:
            break
        got += b
    t.join(deadline_s)
    s.close()
    if err:
        raise err[0]
    return hashlib.sha256(data).hexdigest(), hashlib.sha256(bytes(got)).hexdigest(), len(got)


def run_in_netns(ns, code):
    """Runs a Python client inside the namespace (sockets must be created there)."""
    return ns.run([sys.executable, "-c", code], timeout=120)


def main():
    require_root()
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        return client(sys.argv[2])
    with Netns() as ns, Ferry(ns, lcores="0", config=CONFIG) as f:
        me = os.path.abspath(__file__)

        def client_step(name):
            r = ns.run([sys.executable, me, "client", name], check=False, timeout=120)
            print(r.stdout)
            check(r.returncode == 0, f"client step '{name}' passed")

        client_step("echo")
        client_step("parallel")
        client_step("refused")

        # (d) Everything closes (TIME-WAIT is 500 ms here).
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            p = f.port()
            if p["conn_opened"] == p["conn_closed"]:
                break
            time.sleep(0.2)
        p = f.port()
        tcp = f.telemetry("/ferry/tcp")
        print({k: v for k, v in p.items() if k.startswith(("tcp", "conn", "syn", "flow", "listen"))})
        print(tcp["sum"])
        check(p["conn_opened"] >= 1 + 32, f"connections opened: {p['conn_opened']}")
        check(p["conn_opened"] == p["conn_closed"],
              f"opened == closed: {p['conn_opened']} == {p['conn_closed']}")
        check(p["tcp_drop_bad_checksum"] == 0, "no bad checksums")
        check(p["tcp_rst_sent_no_flow"] >= 1, "the RST for the closed port is counted")
        check(tcp["sum"]["conn_established"] == tcp["sum"]["conn_opened_passive"],
              "every passive open reached ESTABLISHED")
        check(tcp["sum"]["conn_closed"] == p["conn_closed"], "tcp and net counters agree")
        check("lcore0/tap0" in tcp, "/ferry/tcp lists lcore0/tap0")

        # (e) 2% loss on the kernel's INPUT hook: ferry must retransmit.
        rtx_before = tcp["sum"]["retransmits"]
        ns.run(["nft", "add", "table", "inet", "loss"])
        ns.run(["nft", "add", "chain", "inet", "loss", "in",
                "{ type filter hook input priority 0; }"])
        ns.run(["nft", "add", "rule", "inet", "loss", "in", "tcp", "sport", str(ECHO),
                "meta", "random", "&", "65535", "<", "1311", "drop"])
        try:
            client_step("lossy")
        finally:
            ns.run(["nft", "delete", "table", "inet", "loss"], check=False)
        rtx = f.telemetry("/ferry/tcp")["sum"]["retransmits"] - rtx_before
        check(rtx > 0, f"retransmissions under loss: {rtx}")
        check(f.port()["tcp_drop_bad_checksum"] == 0, "still no bad checksums")
    check(f.exit_code == 0, f"ferry exited 0 (got {f.exit_code})")
    return 0


def client(step):
    if step == "echo":
        a, b, n = echo_roundtrip(MIB, 40)
        check(n == MIB, f"echo: got {n} of {MIB} bytes back")
        check(a == b, "echo: sha256 of what came back equals what was sent")
    elif step == "lossy":
        a, b, n = echo_roundtrip(MIB, 50)
        check(n == MIB and a == b, f"echo under 2% loss: {n} bytes, sha256 equal")
    elif step == "refused":
        try:
            socket.create_connection((FERRY_ADDR, 4242), timeout=5).close()
            check(False, "connect to a closed port must fail")
        except ConnectionRefusedError:
            check(True, "closed port: ConnectionRefusedError (RST)")
    elif step == "parallel":
        results = {}
        end = time.monotonic() + 50

        def discard(i):
            s = connect(DISCARD)
            chunk = os.urandom(64 * 1024)
            sent = 0
            while sent < SOURCE_BYTES and time.monotonic() < end:
                s.sendall(chunk)
                sent += len(chunk)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(max(1, end - time.monotonic()))
            rest = s.recv(1)  # EOF once ferry closed its side
            s.close()
            results[("d", i)] = (sent, rest)

        def source(i):
            s = connect(SOURCE)
            s.settimeout(max(1, end - time.monotonic()))
            got = 0
            ok = True
            while time.monotonic() < end:
                b = s.recv(1 << 16)
                if not b:
                    break
                off = got % 251
                if b != (PATTERN[off:] + PATTERN * (len(b) // len(PATTERN) + 2))[:len(b)]:
                    ok = False
                got += len(b)
            s.close()
            results[("s", i)] = (got, ok)

        threads = [threading.Thread(target=discard, args=(i,)) for i in range(16)]
        threads += [threading.Thread(target=source, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1, end - time.monotonic() + 5))
        d = [results.get(("d", i)) for i in range(16)]
        s = [results.get(("s", i)) for i in range(16)]
        check(all(x is not None and x[0] == SOURCE_BYTES and x[1] == b"" for x in d),
              f"discard: 16 x {SOURCE_BYTES} bytes sent, each closed by ferry: {d}")
        check(all(x is not None and x[0] == SOURCE_BYTES for x in s),
              f"source: 16 x {SOURCE_BYTES} bytes received then EOF: {[x and x[0] for x in s]}")
        check(all(x[1] for x in s), "source: every stream is k mod 251")
    return 0


if __name__ == "__main__":
    sys.exit(main())
