"""Hostile TCP input against the real binary (ferry on 1 lcore, net_tap, a
private namespace): crafted frames from the kernel side of the tap, each
dropped or answered as RFC 9293 / RFC 5961 / RFC 4987 say and counted under
its own name, while legitimate connections keep working.

(a) malformed segments to the echo listener, 5 of each: bad checksum, data
    offset past the packet, data offset < 5, an option length that overruns
    the header, SYN+RST, SYN+FIN; and a SYN to a closed port (RST sent)
(b) blind attacks on an established connection (RFC 5961), with the
    connection's sequence numbers sniffed from the wire: an out-of-window RST
    (ignored), an in-window RST that is not exact (challenge ACK), a SYN
    (challenge ACK), an ACK for data never sent (ACK, dropped); the echo
    still works after each, nothing reset
(c) a SYN flood from 1000 ports past a 16-entry SYN backlog (the kernel's RSTs
    to ferry's SYN-ACKs are dropped by nftables, so the backlog stays full):
    counted, answered with SYN cookies, and 20 legitimate connections made
    during the flood complete through a validated cookie and echo
"""

import ctypes
import os
import random
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from frames import csum, frame, ipv4  # noqa: E402
from testbed import (FERRY_ADDR, PEER_ADDR, TAP_IFACE, Ferry, Netns, check,  # noqa: E402
                     require_root)

ECHO, CLOSED = 7, 4444
BACKLOG = 16
FLOOD_PORTS = (50000, 50999)
CONFIG = f"""
[tcp]
syn_backlog = {BACKLOG}
[tcp_test]
echo_port = {ECHO}

[[port]]
name = "tap0"
profile = "net_tap"
iface = "{TAP_IFACE}"
address = "{FERRY_ADDR}/24"
"""

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def tcp(sport, dport, seq, ack, flags, payload=b"", options=b"", doff=None, window=65535,
        bad_cksum=False, src=PEER_ADDR, dst=FERRY_ADDR):
    """A TCP segment with a correct checksum unless bad_cksum; doff overrides
    the data offset field (in 32-bit words) without changing the bytes."""
    hlen = 20 + len(options)
    off = (hlen // 4) if doff is None else doff
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      off << 4, flags, window, 0, 0) + options
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack(
        "!BBH", 0, 6, len(hdr) + len(payload))
    c = csum(pseudo + hdr + payload)
    if bad_cksum:
        c ^= 0x5A5A
    return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload


class in_netns:
    """Runs the block in the namespace's network stack (this process's sockets
    created inside belong to it; /var/run paths, hence telemetry, still work)."""

    CLONE_NEWNET = 0x40000000

    def __init__(self, name):
        self.name = name
        self.libc = ctypes.CDLL(None, use_errno=True)

    def __enter__(self):
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        fd = os.open(f"/var/run/netns/{self.name}", os.O_RDONLY)
        try:
            if self.libc.setns(fd, self.CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        self.libc.setns(self.home, self.CLONE_NEWNET)
        os.close(self.home)
        return False


class Wire:
    """An AF_PACKET socket on the kernel side of the tap: sends crafted frames
    to ferry and sees ferry's frames."""

    def __init__(self, ferry_mac, my_mac):
        self.ferry_mac, self.my_mac = ferry_mac, my_mac
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        self.s.bind((TAP_IFACE, 0))

    def send(self, segment):
        self.s.send(frame(self.ferry_mac, self.my_mac, ipv4(segment, PEER_ADDR, FERRY_ADDR,
                                                            proto=6)))

    def ferry_segments(self, timeout):
        """TCP segments from ferry seen within timeout: (sport, dport, seq, ack, flags, len)."""
        out, end = [], time.monotonic() + timeout
        mac = bytes(int(x, 16) for x in self.ferry_mac.split(":"))
        while True:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.s], [], [], left)[0]:
                return out
            f = self.s.recv(65536)
            if f[6:12] != mac or f[12:14] != b"\x08\x00" or f[23] != 6:
                continue
            ihl = (f[14] & 0x0F) * 4
            total = struct.unpack("!H", f[16:18])[0]
            t = f[14 + ihl:14 + total]
            sport, dport, seq, ack, off, flags = struct.unpack("!HHIIBB", t[:14])
            out.append((sport, dport, seq, ack, flags, len(t) - (off >> 4) * 4))

    def close(self):
        self.s.close()


def wait_delta(get, before, want, timeout=5):
    """Polls get() until it reaches before + want; returns the delta seen."""
    end = time.monotonic() + timeout
    while True:
        d = get() - before
        if d >= want or time.monotonic() > end:
            return d
        time.sleep(0.05)


def echo_once(sock, data):
    sock.sendall(data)
    got = b""
    while len(got) < len(data):
        b = sock.recv(65536)
        if not b:
            raise ConnectionError("closed")
        got += b
    return got == data


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0", config=CONFIG) as f:
        # No timestamps (crafted segments carry none, RFC 7323 would drop
        # them), and kernel ports away from the flood's range.
        ns.run(["sysctl", "-qw", "net.ipv4.tcp_timestamps=0"])
        ns.run(["sysctl", "-qw", "net.ipv4.ip_local_port_range=30000 39999"])
        mac = f.port()["mac"].lower()
        peer_mac = f.peer_mac()  # read here: /sys stays the test's own inside in_netns

        def net(k):
            return f.port()[k]

        def tcpc(k):
            return f.telemetry("/ferry/tcp")["sum"][k]

        with in_netns(ns.name):
            w = Wire(mac, peer_mac)
            # ARP first, so ferry knows where to answer.
            s = socket.create_connection((FERRY_ADDR, ECHO), timeout=5)
            check(echo_once(s, b"warm-up"), "echo works before the attack")
            s.close()

            # (a)
            n = 5
            cases = [
                ("bad checksum", lambda p: tcp(p, ECHO, 1, 0, SYN, bad_cksum=True),
                 "tcp_drop_bad_checksum"),
                ("data offset past the packet", lambda p: tcp(p, ECHO, 1, 0, SYN, doff=15),
                 "tcp_drop_malformed"),
                ("data offset < 5", lambda p: tcp(p, ECHO, 1, 0, SYN, doff=3),
                 "tcp_drop_malformed"),
                ("option length past the header",
                 lambda p: tcp(p, ECHO, 1, 0, SYN, options=bytes([2, 40, 5, 0xB4])),
                 "tcp_drop_bad_options"),
                ("SYN+RST", lambda p: tcp(p, ECHO, 1, 0, SYN | RST), "tcp_drop_listen_other"),
                ("SYN+FIN", lambda p: tcp(p, ECHO, 1, 0, SYN | FIN), "tcp_drop_syn_fin"),
                ("SYN to a closed port", lambda p: tcp(p, CLOSED, 1, 0, SYN),
                 "tcp_rst_sent_no_flow"),
            ]
            for what, make, counter in cases:
                opened = net("conn_opened")
                before = net(counter)
                for i in range(n):
                    w.send(make(41000 + i))
                wait_delta(lambda: net(counter), before, n)
                time.sleep(0.1)  # and no more than n arrive later
                d = net(counter) - before
                check(d == n, f"{what}: {counter} +{d} (sent {n})")
                check(net("conn_opened") == opened, f"{what}: no connection opened")
            seen = w.ferry_segments(0.5)
            resets = [x for x in seen if x[1] in range(41000, 41000 + n)]
            check(all(x[0] == CLOSED and x[4] == RST | ACK for x in resets) and len(resets) == n,
                  f"only the closed port's SYNs were answered, each by RST+ACK ({len(resets)})")

            # (b)
            s = socket.create_connection((FERRY_ADDR, ECHO), timeout=5)
            sport = s.getsockname()[1]
            w.ferry_segments(0.2)  # drain
            check(echo_once(s, b"x"), "echo on the connection under attack")
            segs = [x for x in w.ferry_segments(0.5) if x[1] == sport and x[5] == 1]
            check(len(segs) >= 1, "ferry's echo segment seen on the wire")
            _, _, fseq, kseq, _, _ = segs[0]
            ferry_nxt = fseq + 1  # ferry sent 1 byte at fseq; kseq = ferry's RCV.NXT
            # Each segment is built from the sequence numbers as they are when
            # it is sent: every echo below moves both sides on by len(msg).
            attacks = [
                ("out-of-window RST", lambda k, fn: tcp(sport, ECHO, k + 0x40000000, 0, RST),
                 "resets_ignored"),
                ("in-window RST, not exact", lambda k, fn: tcp(sport, ECHO, k + 1000, 0, RST),
                 "challenge_acks"),
                ("SYN on an established connection",
                 lambda k, fn: tcp(sport, ECHO, k + 1000, 0, SYN), "challenge_acks"),
                ("ACK for data never sent",
                 lambda k, fn: tcp(sport, ECHO, k, fn + 1_000_000, ACK), "rcv_ack_too_new"),
            ]
            resets0 = tcpc("resets_received")
            msg = b"still here"
            for what, make, counter in attacks:
                before = tcpc(counter)
                w.send(make(kseq, ferry_nxt))
                d = wait_delta(lambda: tcpc(counter), before, 1)
                check(d == 1, f"{what}: {counter} +{d}")
                check(echo_once(s, msg), f"{what}: the connection still echoes")
                kseq, ferry_nxt = kseq + len(msg), ferry_nxt + len(msg)
            check(tcpc("resets_received") == resets0, "no connection was reset")
            s.close()

            # (c)
            ns.run(["nft", "add", "table", "inet", "hostile"])
            ns.run(["nft", "add", "chain", "inet", "hostile", "out",
                    "{ type filter hook output priority 0; }"])
            ns.run(["nft", "add", "rule", "inet", "hostile", "out", "ip", "daddr", FERRY_ADDR,
                    "tcp", "sport", f"{FLOOD_PORTS[0]}-{FLOOD_PORTS[1]}", "drop"])
            full0, sent0 = net("listen_backlog_full"), net("syn_cookies_sent")
            valid0 = net("syn_cookies_validated")
            rng = random.Random(7)
            ports = list(range(FLOOD_PORTS[0], FLOOD_PORTS[1] + 1))
            for i in range(0, len(ports), 50):
                for p in ports[i:i + 50]:
                    w.send(tcp(p, ECHO, rng.getrandbits(32), 0, SYN))
                time.sleep(0.005)
            flood = len(ports)
            wait_delta(lambda: net("listen_backlog_full"), full0, flood - BACKLOG, timeout=5)
            full = net("listen_backlog_full") - full0
            cookies = net("syn_cookies_sent") - sent0
            print(f"  flood: {flood} SYNs, backlog full {full}, cookies sent {cookies}, "
                  f"passive opens so far {f.telemetry('/ferry/tcp')['sum']['conn_opened_passive']}")
            check(full >= (flood - BACKLOG) * 9 // 10,
                  f"SYNs past the backlog counted: {full} of {flood - BACKLOG}")
            check(cookies == full, f"each answered with a SYN cookie: {cookies}")
            good = 0
            for i in range(20):
                try:
                    c = socket.create_connection((FERRY_ADDR, ECHO), timeout=5)
                    good += echo_once(c, b"legit %d" % i)
                    c.close()
                except OSError as e:
                    print(f"  legitimate connection {i}: {e}")
            valid = net("syn_cookies_validated") - valid0
            check(good == 20, f"legitimate connections during the flood: {good}/20 echoed")
            check(valid >= 1, f"and they came in through validated cookies: {valid}")
            ns.run(["nft", "delete", "table", "inet", "hostile"])
            w.close()

        check(f.telemetry("/ferry/tcp")["sum"]["resets_received"] == 0,
              "ferry never reset a connection on forged input")
        code = f.stop()
        check(code == 0, f"ferry exited 0 (got {code})")
    print("test_tcp_hostile: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
