#!/usr/bin/python3
"""Prints the TCP segments on an interface that touch the given ports: a
stand-in for tcpdump (not installed on these machines), for looking at a stuck
connection while perf/soak runs. Run inside the namespace:

  ip netns exec <ns> perf/bench_lib/tcpsniff.py IFACE PORT [PORT ...] [--seconds 60] [--count 20]

One line per segment: time, direction as the kernel sees it ("out": the
kernel sent it toward ferry; "in": ferry sent it), ports, flags, SEQ, ACK,
window (unscaled), payload length, and the options that matter here
(timestamps TSval/TSecr, SACK blocks).
"""

import argparse
import socket
import struct
import time


def options(b):
    out, i = [], 0
    while i < len(b):
        kind = b[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(b) or b[i + 1] < 2:
            break
        n = b[i + 1]
        if kind == 8 and n == 10:
            out.append("TS=%d/%d" % struct.unpack("!II", b[i + 2:i + 10]))
        elif kind == 5:
            out.append("SACK" + str([struct.unpack("!II", b[j:j + 8]) for j in range(i + 2, i + n, 8)]))
        elif kind == 2 and n == 4:
            out.append("MSS=%d" % struct.unpack("!H", b[i + 2:i + 4]))
        elif kind == 3 and n == 3:
            out.append("WS=%d" % b[i + 2])
        i += n
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("iface")
    ap.add_argument("ports", nargs="+", type=int)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--count", type=int, default=20)
    a = ap.parse_args()
    ports = set(a.ports)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
    s.bind((a.iface, 0))
    s.settimeout(0.5)
    end, n = time.monotonic() + a.seconds, 0
    while time.monotonic() < end and n < a.count:
        try:
            pkt, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if len(pkt) < 54 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
            continue
        ihl = (pkt[14] & 15) * 4
        t = 14 + ihl
        sp, dp, seq, ack, off, flags, win = struct.unpack("!HHIIBBH", pkt[t:t + 16])
        if sp not in ports and dp not in ports:
            continue
        thl = (off >> 4) * 4
        plen = struct.unpack("!H", pkt[16:18])[0] - ihl - thl
        way = "out" if addr[2] == socket.PACKET_OUTGOING else "in"
        fl = "".join(c for bit, c in ((1, "F"), (2, "S"), (4, "R"), (8, "P"), (16, "A")) if flags & bit)
        print(f"{time.time():.3f} {way} {sp}->{dp} {fl} seq={seq} ack={ack} win={win} len={plen} "
              f"{options(pkt[t + 20:t + thl])}", flush=True)
        n += 1


if __name__ == "__main__":
    main()
