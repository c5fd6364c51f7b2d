#!/usr/bin/python3
"""Where a proxied request's time goes, from the frames on ferry's two veths.

Run in the proxy namespace while a load runs through ferry:

  ip netns exec <proxy ns> perf/bench_lib/hops.py --client-if fc0 --origin-if fo0 \
      --listen-port 8080 --seconds 10

Two packet sockets (SO_TIMESTAMPNS: the kernel's time for each frame, taken
when the frame reaches the interface or leaves through it, not when this
script reads it) see every TCP frame that carries data. Per request:

  t1  the client's request reaches ferry's client-side veth
  t2  ferry's request to the origin leaves its origin-side veth
  t3  the origin's response reaches the origin-side veth
  t4  ferry's response leaves toward the client

so ferry_in = t2 - t1 (ferry woke, read, parsed, forwarded), origin = t3 - t2
(the origin's kernel and nginx, woken or not), ferry_out = t4 - t3, through =
t4 - t1. What the client measures on top (its send and its wake for the
response) is not here. Prints one JSON line: counts, p50/p99/p999/max of each
part, and the parts' medians over the slowest 1% of `through` (who made the
slow ones slow). Requests are matched first-in first-out (a client request to
the first origin request that leaves after it): exact when requests do not
overlap, as at the low rates this is for.
"""

import argparse
import json
import select
import socket
import struct
import time

SO_TIMESTAMPNS = 35
ETH_P_ALL = 3


def open_sock(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((iface, 0))
    s.setblocking(False)
    return s


def parse(pkt):
    """(sport, dport, payload length) of an IPv4 TCP frame, else None."""
    if len(pkt) < 54 or pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
        return None
    ihl = (pkt[14] & 15) * 4
    t = 14 + ihl
    sp, dp = struct.unpack("!HH", pkt[t:t + 4])
    thl = (pkt[t + 12] >> 4) * 4
    plen = struct.unpack("!H", pkt[16:18])[0] - ihl - thl
    return sp, dp, plen


def capture(client_if, origin_if, seconds):
    """[(t_ns, leg 'c'|'o', outgoing, sport, dport, plen, read lag ns)] for data frames."""
    socks = {open_sock(client_if): "c", open_sock(origin_if): "o"}
    out = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select(list(socks), [], [], min(left, 0.5))
        for s in r:
            while True:
                try:
                    pkt, anc, _, addr = s.recvmsg(2048, socket.CMSG_SPACE(16))
                except BlockingIOError:
                    break
                p = parse(pkt)
                if p is None or p[2] <= 0:
                    continue
                t = None
                for lvl, typ, data in anc:
                    if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS and len(data) >= 16:
                        sec, nsec = struct.unpack("qq", data[:16])
                        t = sec * 1_000_000_000 + nsec
                now = time.time_ns()
                if t is None:
                    t = now
                out.append((t, socks[s], addr[2] == socket.PACKET_OUTGOING) + p + (now - t,))
    return out


def exchanges(frames, leg, server_port, request_outgoing):
    """[(t_request, t_response)] on one leg: a request starts with the first
    data frame toward the server after the previous response began; its
    response with the server's first data frame after it."""
    open_req, done = {}, []
    for t, lg, outgoing, sp, dp, _, _ in frames:
        if lg != leg:
            continue
        if dp == server_port and outgoing == request_outgoing:
            open_req.setdefault(sp, t)
        elif sp == server_port and outgoing != request_outgoing:
            t0 = open_req.pop(dp, None)
            if t0 is not None:
                done.append((t0, t))
    done.sort()
    return done


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] / 1000.0, 1)


def analyse(frames, listen_port, origin_port):
    frames.sort()
    cli = exchanges(frames, "c", listen_port, False)   # the client's frames come in
    org = exchanges(frames, "o", origin_port, True)    # ferry's requests go out
    rows, j = [], 0
    used = [False] * len(org)
    for t1, t4 in cli:
        while j < len(org) and org[j][0] < t1:
            j += 1
        k = j
        while k < len(org) and org[k][0] <= t4 and (used[k] or org[k][1] > t4):
            k += 1
        if k >= len(org) or org[k][0] > t4:
            continue
        used[k] = True
        t2, t3 = org[k]
        rows.append({"ferry_in": t2 - t1, "origin": t3 - t2, "ferry_out": t4 - t3,
                     "through": t4 - t1})
    res = {"client_exchanges": len(cli), "origin_exchanges": len(org), "matched": len(rows),
           # how long after its stamp this script read a frame (0: no kernel stamp)
           "read_lag_us": {w: pct([f[6] for f in frames if f[2] == o], 0.5)
                           for w, o in (("in", False), ("out", True))}}
    parts = ("ferry_in", "origin", "ferry_out", "through")
    for p in parts:
        xs = [r[p] for r in rows]
        res[p] = {"p50_us": pct(xs, 0.5), "p99_us": pct(xs, 0.99), "p999_us": pct(xs, 0.999),
                  "max_us": pct(xs, 1.0)}
    slow = sorted(rows, key=lambda r: r["through"])[-max(1, len(rows) // 100):] if rows else []
    res["slowest_1pct"] = {p: pct([r[p] for r in slow], 0.5) for p in parts}
    res["slowest_1pct"]["n"] = len(slow)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--client-if", default="fc0")
    ap.add_argument("--origin-if", default="fo0")
    ap.add_argument("--listen-port", type=int, default=8080)
    ap.add_argument("--origin-port", type=int, default=80)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    frames = capture(a.client_if, a.origin_if, a.seconds)
    print(json.dumps(analyse(frames, a.listen_port, a.origin_port)), flush=True)


if __name__ == "__main__":
    main()
