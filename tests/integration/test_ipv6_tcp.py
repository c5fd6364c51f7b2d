"""TCP over IPv6 end to end (issue 18: curl, wrk, the main HTTP cases and the
TCP interop test over IPv6). ferry's tap port has `address6 = "fd00:77::1/64"`
beside its IPv4 address; the kernel side of the tap gets fd00:77::2/64 (IPv6
switched back on for the tap: the testbed turns it off in its namespaces).
Unique local addresses only, in namespaces the test creates and deletes.

(a) `tcp`: ferry on 1 lcore runs the [tcp_test] services. A 1 MiB echo over
    IPv4 first (the same port's baseline), then over IPv6: 1 MiB echoed
    (sha256 equal), 1 MiB to discard (ferry reads it all, then closes), 1 MiB
    from source (byte k = k mod 251, sha256 equal); then a 1 MiB echo under 2%
    loss both ways, as test_tcp2 does for IPv4 (an inet table on the kernel's
    INPUT hook drops what ferry sends, a netdev egress hook on the tap what
    the kernel sends), matched on ip6 addresses: the rules' counters show they
    hit IPv6 segments, /ferry/tcp's retransmits grow, the data stays intact.
    Every connection closes, no bad checksum, ferry exits 0.
(b) `http`: ferry on 2 lcores proxies to origin.py (over IPv4, as in the other
    proxy tests), with a combined access log. An IPv4 GET on the same port
    (dual stack) before and after; with curl -g -6: a GET answered 200 with
    the origin's body, which echoes the request's headers: X-Forwarded-For is
    fd00:77::2; a 1 MiB download and a 1 MiB POST, sha256 equal; wrk -t1 -c8
    -d2s: no socket error, no non-2xx. After SIGTERM (exit 0) the access log
    names fd00:77::2 as the client of every IPv6 request (wrk's too) and
    10.77.0.2 for the IPv4 ones. An upstream whose server is IPv6
    ([fd00:77::2]:9006, origin.py bound there) answers an IPv4 and an IPv6
    client through a route. With `gateway6` = the kernel side, a client on
    another prefix (fd00:78::5) is answered through it.
(c) `packet`: the same stack on net_ferry_packet (a veth, the peer's TSO and
    GSO on): TCPv6 GSO frames from the kernel are cut into segments, ferry's
    own segments leave as TCPv6 GSO frames, 4 x 1 MiB echo and a 4 MiB
    download over IPv6 arrive intact.
argv: `tcp`, `http` or `packet` runs those parts only (all by default). Every transfer is
bounded in time (socket timeouts, curl --max-time, the client's deadline).
"""

import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (ECHO_PORT, ECHO_SOURCE_CLIENT_PY, FERRY_ADDR, PEER_ADDR,  # noqa: E402
                     SOURCE_PORT, TAP_IFACE, Ferry, Netns, PyOrigin, check, curl,
                     echo_source_toml, proxy_toml, require_root, tap_port_toml, wait_for)

OURS6, PEER6, FAR6 = "fd00:77::1", "fd00:77::2", "fd00:78::5"
ECHO, DISCARD, SOURCE = 7, 9, 19
MIB = 1 << 20
PY_PORT, PY6_PORT = 9000, 9006
PATTERN_MIB = (bytes(range(251)) * (MIB // 251 + 1))[:MIB]  # byte k = k mod 251
DROP = "meta random & 65535 < 1311 counter drop"  # about 2%
NFT_LOSS = f"""
table inet loss6 {{
  chain in {{
    type filter hook input priority 0;
    ip6 saddr {OURS6} tcp sport {ECHO} {DROP}
  }}
}}
table netdev loss6 {{
  chain out {{
    type filter hook egress device "{TAP_IFACE}" priority 0;
    ip6 daddr {OURS6} tcp dport {ECHO} {DROP}
  }}
}}
"""


def port_toml(mbufs):
    return tap_port_toml() + f'address6 = "{OURS6}/64"\nmbufs = {mbufs}\n'


def peer_ipv6(ns):
    """PEER6 on the tap's kernel side (IPv6 on again for the tap only)."""
    ns.run(["sysctl", "-qw", f"net.ipv6.conf.{TAP_IFACE}.disable_ipv6=0"])
    ns.run(["ip", "-6", "addr", "add", f"{PEER6}/64", "dev", TAP_IFACE, "nodad"])


def v6_counters(f):
    return {k: v for k, v in f.port().items() if k.startswith(("ipv6_", "nd_"))}


def nft_dropped(ns):
    """Packets dropped by NFT_LOSS: (ferry -> kernel, kernel -> ferry)."""
    got = {}
    for item in json.loads(ns.run(["nft", "-j", "list", "ruleset"]).stdout)["nftables"]:
        rule = item.get("rule")
        if rule and rule["table"] == "loss6":
            got[rule["family"]] = sum(e["counter"]["packets"] for e in rule["expr"] if "counter" in e)
    return got.get("inet", 0), got.get("netdev", 0)


def client(step, addr, seconds):
    """Runs inside the namespace: one transfer of `step` to addr, done within seconds."""
    end = time.monotonic() + seconds
    port = {"echo": ECHO, "lossy": ECHO, "discard": DISCARD, "source": SOURCE}[step]
    try:
        s = socket.create_connection((addr, port), timeout=10)
    except OSError as e:
        check(False, f"{step}: connect to [{addr}]:{port} failed: {e!r}")
    s.settimeout(seconds)
    data, got, err = os.urandom(MIB), bytearray(), []

    def send():
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            err.append(repr(e))

    w = threading.Thread(target=send, daemon=True)
    if step != "source":
        w.start()
    while time.monotonic() < end:
        s.settimeout(max(0.1, end - time.monotonic()))  # the reads too end by the deadline
        b = s.recv(1 << 16)
        if not b:
            break
        got += b
    s.close()
    if step != "source":
        w.join(max(0.1, end - time.monotonic()))
        check(not err and not w.is_alive(), f"{step}: 1 MiB sent, then FIN ({err})")
    t = seconds - (end - time.monotonic())
    if step == "discard":
        check(len(got) == 0, f"discard: nothing came back, then EOF ({t:.2f} s)")
        return 0
    want = PATTERN_MIB if step == "source" else data
    check(len(got) == MIB and hashlib.sha256(got).digest() == hashlib.sha256(want).digest(),
          f"{step}: {len(got)} of {MIB} bytes back over [{addr}], sha256 equal ({t:.2f} s)")
    return 0


def part_tcp():
    cfg = (f"[tcp]\ntime_wait_ms = 500\n[tcp_test]\necho_port = {ECHO}\ndiscard_port = {DISCARD}\n"
           f"source_port = {SOURCE}\nsource_bytes = {MIB}\n\n" + port_toml(32768))
    with Netns() as ns, Ferry(ns, lcores="0", config=cfg) as f:
        peer_ipv6(ns)

        def step(name, addr, seconds=40):
            r = ns.run([sys.executable, os.path.abspath(__file__), "client", name, addr,
                        str(seconds)], check=False, timeout=seconds + 30)
            print(r.stdout.rstrip())
            check(r.returncode == 0, f"client step '{name}' to [{addr}]: exit {r.returncode}"
                  + ("" if r.returncode == 0 else f"; ferry's IPv6 counters: {v6_counters(f)}"))

        step("echo", FERRY_ADDR)
        for name in ("echo", "discard", "source"):
            step(name, OURS6)
        rtx0 = f.telemetry("/ferry/tcp")["sum"]
        ns.run(["nft", "-f", "-"], input=NFT_LOSS)
        try:
            step("lossy", OURS6, 60)
            to_kernel, to_ferry = nft_dropped(ns)
        finally:
            ns.run(["nft", "delete", "table", "inet", "loss6"], check=False)
            ns.run(["nft", "delete", "table", "netdev", "loss6"], check=False)
        t = f.telemetry("/ferry/tcp")["sum"]
        rtx = t["retransmits"] - rtx0["retransmits"]
        print(f"  nftables dropped {to_kernel} IPv6 segments from ferry, {to_ferry} to ferry; "
              f"tcp: retransmits {rtx}, fast {t.get('fast_retransmits', 0) - rtx0.get('fast_retransmits', 0)}"
              f", rto {t.get('rto_fired', 0) - rtx0.get('rto_fired', 0)}")
        check(to_kernel > 0 and to_ferry > 0, f"the loss rules hit IPv6 both ways: {to_kernel}, {to_ferry}")
        check(rtx > 0, f"ferry retransmitted what the kernel lost: {rtx}")
        p = wait_for(f.port, lambda p: p["conn_opened"] == p["conn_closed"], timeout=20)
        print(f"  port: conn_opened {p['conn_opened']} conn_closed {p['conn_closed']}; "
              f"IPv6: {v6_counters(f)}")
        check(p["conn_opened"] >= 5 and p["conn_opened"] == p["conn_closed"],
              f"every connection closed: {p['conn_opened']} == {p['conn_closed']}")
        check(p["tcp_drop_bad_checksum"] == 0, "no bad TCP checksum")
    check(f.exit_code == 0, f"ferry exited 0 (got {f.exit_code})")


def part_http(tmp):
    log = os.path.join(tmp, "access.log")
    cfg = (f"[tcp]\nmax_connections = 1024\ntime_wait_ms = 1000\n\n[http]\n"
           f'client_idle_timeout_ms = 5000\naccess_log = "{log}"\naccess_log_format = "combined"\n\n'
           + proxy_toml([f"{PEER_ADDR}:{PY_PORT}"])
           + f'[[route]]\npath_prefix = "/to6/"\nupstream = "py6"\n\n'
           + f'[[upstream]]\nname = "py6"\n  [[upstream.server]]\n  address = "[{PEER6}]:{PY6_PORT}"\n\n'
           + port_toml(65536) + f'gateway6 = "{PEER6}"\n')
    base4, base6 = f"http://{FERRY_ADDR}:8080", f"http://[{OURS6}]:8080"
    with Netns() as ns, Ferry(ns, lcores="0-1", config=cfg) as f, PyOrigin(ns, PEER_ADDR, PY_PORT):
        peer_ipv6(ns)

        def get4(tag):
            r = curl(ns, "-i", f"{base4}/hello?id={tag}", timeout=30)
            check(r.stdout.startswith("HTTP/1.1 200") and f"X-Forwarded-For: {PEER_ADDR}\n" in r.stdout,
                  f"IPv4 GET on the same port: 200, X-Forwarded-For {PEER_ADDR} ({tag})")

        get4("v4-before")
        # An off-link client (fd00:78::5, another prefix): ferry answers it
        # through its gateway6, here the kernel side of the tap, which owns
        # that address too.
        ns.run(["ip", "-6", "addr", "add", f"{FAR6}/64", "dev", TAP_IFACE, "nodad"])
        r = curl(ns, "-g", "-6", "-i", "--interface", FAR6, f"{base6}/hello?id=v6-far", timeout=30)
        check(r.stdout.startswith("HTTP/1.1 200") and f"X-Forwarded-For: {FAR6}\n" in r.stdout,
              f"an off-link client {FAR6} through gateway6: {r.stdout[:15]!r}"
              + ("" if r.stdout else f"; {v6_counters(f)}"))
        # An IPv6 upstream server (origin.py on fd00:77::2), from an IPv4 and an IPv6 client.
        with PyOrigin(ns, PEER6, PY6_PORT):
            for tag, base in (("v4-to6", base4), ("v6-to6", base6)):
                r = curl(ns, "-g", "-i", f"{base}/to6/hello?id={tag}", timeout=30)
                check(r.stdout.startswith("HTTP/1.1 200") and f"GET /to6/hello?id={tag}\n" in r.stdout,
                      f"{tag}: a server at [{PEER6}]:{PY6_PORT} answered 200 "
                      f"({r.stdout[:15]!r}; {v6_counters(f) if not r.stdout else ''})")
            ups = f.telemetry("/ferry/upstreams")
            print(f"  /ferry/upstreams py6: {json.dumps(ups.get('py6', ups))[:300]}")
        r = curl(ns, "-g", "-6", "-i", "--connect-timeout", "5", f"{base6}/hello?id=v6-get", timeout=30)
        head, _, body = r.stdout.partition("\n\n")  # text mode: \r\n read as \n
        ok = head.startswith("HTTP/1.1 200")
        check(ok, f"curl -6 GET {base6}/hello: {head[:15]!r} (curl exit {r.returncode})"
              + ("" if ok else f"; ferry's IPv6 counters: {v6_counters(f)}"))
        check(body.startswith("GET /hello?id=v6-get\n"), f"the origin's answer: {body[:40]!r}")
        check(f"X-Forwarded-For: {PEER6}\n" in body and "Via: 1.1 ferry" in body,
              f"the origin saw X-Forwarded-For {PEER6} and Via")

        dl = os.path.join(tmp, "dl.bin")
        r = curl(ns, "-g", "-6", "-o", dl, "-w", "%{http_code}", f"{base6}/gen/{MIB}?id=v6-dl",
                 timeout=60)
        with open(dl, "rb") as fh:
            got = fh.read()
        check(r.stdout.strip() == "200" and len(got) == MIB
              and hashlib.sha256(got).digest() == hashlib.sha256(PATTERN_MIB).digest(),
              f"1 MiB download over IPv6: status {r.stdout.strip()}, {len(got)} bytes, sha256 equal")
        up = os.path.join(tmp, "up.bin")
        with open(up, "wb") as fh:
            fh.write(os.urandom(MIB))
        with open(up, "rb") as fh:
            want = hashlib.sha256(fh.read()).hexdigest()
        r = curl(ns, "-g", "-6", "--data-binary", f"@{up}", f"{base6}/sha?id=v6-up", timeout=60)
        check(r.stdout.split() == [want, str(MIB)], f"1 MiB POST over IPv6: sha256 equal ({r.stdout.strip()})")

        before = f.port()
        r = ns.run(["wrk", "-t1", "-c8", "-d2s", "--timeout", "5s", "-H", "User-Agent: wrk-v6",
                    f"{base6}/hello?id=wrk"], check=False, timeout=60)
        print("  " + r.stdout.rstrip().replace("\n", "\n  "))
        m = re.search(r"(\d+) requests in", r.stdout)
        errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", r.stdout)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
        wrk_requests = int(m.group(1)) if m else 0
        check(r.returncode == 0 and wrk_requests > 0, f"wrk over IPv6: {wrk_requests} requests")
        check(errs is None or all(int(x) == 0 for x in errs.groups()),
              f"wrk: no socket errors ({errs.group(0) if errs else 'none reported'})")
        check(non2xx is None or int(non2xx.group(1)) == 0,
              f"wrk: no non-2xx ({non2xx.group(0) if non2xx else 'none reported'})")
        # The tap's steering program hashes IPv6 TCP frames as ferry does, so
        # the segments of wrk's flows arrive on their owner's queue: about
        # none is handed over (when all IPv6 went to queue 0, every segment
        # of a flow lcore 1 owns was).
        p = f.port()
        seg, out = p["tcp_rx"] - before["tcp_rx"], p["tcp_handoff_out"] - before["tcp_handoff_out"]
        print(f"  hand-offs during wrk: {out} of {seg} segments")
        check(p.get("steering") == "tap-ebpf", f"steering: {p.get('steering')}")
        check(seg > 0 and out / seg < 0.01, f"IPv6 segments arrive on their owner's queue: "
              f"{out} of {seg} handed over (< 1%)")
        get4("v4-after")
        http = wait_for(lambda: f.telemetry("/ferry/http"), lambda h: h["active_connections"] == 0,
                        timeout=30)
        print(f"  /ferry/http: requests {http['sum']['requests']}, access_log_records "
              f"{http['sum']['access_log_records']}; IPv6: {v6_counters(f)}")
    check(f.exit_code == 0, f"ferry exited 0 after SIGTERM (got {f.exit_code})")

    with open(log) as fh:
        lines = fh.read().splitlines()
    line_re = re.compile(r'^(\S+) - - \[[^]]+\] "(\S+) (\S+) HTTP/1\.1" (\d{3}) ')
    recs = [line_re.match(x) for x in lines]
    check(all(recs), f"{len(lines)} access log lines, each with client, request, status")
    by_tag = {}
    for rec in recs:
        tag = rec.group(3).partition("id=")[2]
        by_tag.setdefault(tag, []).append((rec.group(1), rec.group(4)))
    print(f"  first IPv6 line: {next((x for x in lines if 'id=v6-get' in x), None)}")
    for tag, client_addr in (("v4-before", PEER_ADDR), ("v6-far", FAR6), ("v4-to6", PEER_ADDR),
                             ("v6-to6", PEER6),
                             ("v6-get", PEER6), ("v6-dl", PEER6),
                             ("v6-up", PEER6), ("v4-after", PEER_ADDR)):
        check(by_tag.get(tag) == [(client_addr, "200")],
              f"access log: one line for {tag}, client {client_addr}, 200 ({by_tag.get(tag)})")
    wrk_lines = by_tag.get("wrk", [])
    check(len(wrk_lines) >= wrk_requests and all(c == PEER6 for c, _ in wrk_lines),
          f"access log: {len(wrk_lines)} wrk lines (>= {wrk_requests}), every client {PEER6}")


def part_packet():
    """(c) net_ferry_packet on a veth whose peer keeps TSO and GSO on: the
    kernel's TCPv6 GSO frames are cut into segments (packet_rx_gso_frames),
    none is refused (packet_rx_truncated), 4 x 1 MiB echo and a 4 MiB
    download over IPv6 intact."""
    cfg = echo_source_toml(4 * MIB) + (
        f'[[port]]\nname = "pk0"\nprofile = "net_ferry_packet"\niface = "fpk0"\n'
        f'address = "{FERRY_ADDR}/24"\naddress6 = "{OURS6}/64"\nmbufs = 32768\n')
    with Netns("k") as ns:
        ns.run(["ip", "link", "add", "fpk0", "type", "veth", "peer", "name", "fpk1"])
        ns.run(["ip", "link", "set", "fpk0", "up"])
        with Ferry(ns, lcores="0-1", config=cfg, peer_iface="fpk1") as f:
            ns.run(["sysctl", "-qw", "net.ipv6.conf.fpk1.disable_ipv6=0"])
            ns.run(["ip", "-6", "addr", "add", f"{PEER6}/64", "dev", "fpk1", "nodad"])
            r = ns.run([sys.executable, "-c", ECHO_SOURCE_CLIENT_PY, OURS6, str(ECHO_PORT),
                        str(SOURCE_PORT), str(MIB), "4", str(4 * MIB)], check=False, timeout=120)
            p = f.port("pk0")
            print("  net_ferry_packet over IPv6:", r.stdout.strip()[-200:],
                  {k: p[k] for k in ("packet_rx_gso_frames", "packet_rx_gso_segments",
                                     "packet_tx_gso_frames", "packet_rx_truncated",
                                     "tcp_drop_bad_checksum")})
            check("echo_ok=4 errors=[]" in r.stdout and f"source_bytes={4 * MIB}" in r.stdout,
                  "net_ferry_packet: 4 x 1 MiB echo and 4 MiB from source over IPv6, intact")
            check(p["packet_rx_gso_frames"] > 0 and p["packet_rx_truncated"] == 0,
                  f"the peer's TCPv6 GSO frames were cut, none refused "
                  f"({p['packet_rx_gso_frames']} frames, {p['packet_rx_truncated']} truncated)")
            check(p["tcp_drop_bad_checksum"] == 0, "no bad checksum")
            check(p["packet_tx_gso_frames"] > 0,
                  f"ferry sent its IPv6 segments as TCPv6 GSO frames ({p['packet_tx_gso_frames']})")
    check(f.exit_code == 0, f"ferry exited 0 (got {f.exit_code})")


def main():
    require_root()
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        return client(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    parts = sys.argv[1:] or ["tcp", "http", "packet"]
    if not set(parts) <= {"tcp", "http", "packet"}:
        print(f"usage: {sys.argv[0]} [tcp] [http] [packet]")
        return 2
    tmp = tempfile.mkdtemp(prefix="ferry-ipv6tcp-")
    t0 = time.monotonic()
    if "tcp" in parts:
        part_tcp()
    if "http" in parts:
        part_http(tmp)
    if "packet" in parts:
        part_packet()
    shutil.rmtree(tmp, ignore_errors=True)  # kept when a check failed, for a look
    print(f"IPv6 TCP test: {time.monotonic() - t0:.1f} s")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
