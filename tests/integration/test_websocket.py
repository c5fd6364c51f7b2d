"""WebSocket through ferry (issue 18 item 2; RFC 9110 §7.8, RFC 6455;
docs/OPERATIONS.md "WebSocket and other upgrades"): ferry on 2 lcores
(net_tap), a real WebSocket server (python3-websockets, ws_origin.py) on the
tap's kernel side, real WebSocket clients in the namespace.

(a) 8 clients at once (both lcores): a text and a binary message, a
    fragmented message, a 1 MiB message each way, a ping answered by a pong,
    200 messages streamed back to back; then half close the connection from
    their side (close handshake, code 1000) and half ask the server to close
    it (code 4000 "bye"): every step as sent.
(b) An origin that dies mid-stream: the client sees the connection end
    without a close frame (1006) instead of hanging, and ferry goes on
    serving (a new WebSocket works).
(c) Telemetry: tunnels_opened = tunnels_closed = the connections made,
    bytes both ways over 8 MiB, nothing declined; the access log has one
    record per tunnel with status 101.
(d) An Upgrade request the origin does not accept (a plain HTTP origin)
    gets its ordinary answer (upgrades_declined), and h2c is ignored.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     require_root, stop_pid, tap_port_toml, wait_for)

WS_PORT, DYING_PORT, PY_PORT = 9100, 9101, 9000
WS_ORIGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ws_origin.py")


def config(log_path):
    def up(name, port):
        return (f'[[upstream]]\nname = "{name}"\n  [[upstream.server]]\n'
                f'  address = "{PEER_ADDR}:{port}"\n\n')
    return (f'[http]\naccess_log = "{log_path}"\n\n'
            f'[[listener]]\nname = "web"\nport = 8080\ndefault_upstream = "ws"\n\n'
            f'[[route]]\npath_prefix = "/dying/"\nupstream = "dying"\n\n'
            f'[[route]]\npath_prefix = "/http/"\nupstream = "py"\n\n'
            + up("ws", WS_PORT) + up("dying", DYING_PORT) + up("py", PY_PORT) + tap_port_toml())


CLIENT = f"""
import asyncio, json, os, websockets
URL = "ws://{FERRY_ADDR}:8080"

async def one(i):
    r = {{}}
    async with websockets.connect(URL + "/chat", max_size=None, ping_interval=None,
                                  open_timeout=20, close_timeout=20) as ws:
        await ws.send("hello %d" % i)
        r["text"] = await ws.recv() == "hello %d" % i
        b = bytes(range(256)) * 4
        await ws.send(b)
        r["binary"] = await ws.recv() == b
        await ws.send(["frag1-", "frag2-", "frag3"])
        r["fragmented"] = await ws.recv() == "frag1-frag2-frag3"
        big = os.urandom(1 << 20)
        await ws.send(big)
        r["mib"] = await ws.recv() == big
        pong = await ws.ping(b"p%d" % i)
        await asyncio.wait_for(pong, 10)
        r["pong"] = True
        await ws.send("stream 200")
        got = [await ws.recv() for _ in range(201)]
        r["stream"] = got == ["s%d" % k for k in range(200)] + ["done"]
        if i % 2 == 0:
            await ws.close()
            r["closed"] = (ws.close_code, ws.close_reason) == (1000, "")
        else:
            await ws.send("close-me")
            try:
                await ws.recv()
                r["closed"] = False
            except websockets.ConnectionClosed:
                r["closed"] = (ws.close_code, ws.close_reason) == (4000, "bye")
    return r

async def dying():
    async with websockets.connect(URL + "/dying/x", ping_interval=None, open_timeout=20) as ws:
        await ws.send("stream 50")
        first = [await ws.recv() for _ in range(10)]
        await ws.send("die")
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 15)
        except websockets.ConnectionClosedError:
            return first == ["s%d" % k for k in range(10)] and ws.close_code == 1006
        except asyncio.TimeoutError:
            return "hung"

async def main():
    rs = await asyncio.gather(*[one(i) for i in range(8)])
    print(json.dumps({{"clients": rs}}), flush=True)
    print(json.dumps({{"dying": await dying()}}), flush=True)
    r = await one(8)
    print(json.dumps({{"after": r}}), flush=True)

asyncio.run(main())
"""


def main():
    require_root()
    log_path = os.path.join(tempfile.mkdtemp(prefix="ferry-ws-"), "access.log")
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config(log_path)) as f:
        ws = ns.popen([sys.executable, WS_ORIGIN, PEER_ADDR, str(WS_PORT)],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        dy = ns.popen([sys.executable, WS_ORIGIN, PEER_ADDR, str(DYING_PORT)],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            check(ws.stdout.readline().strip() == "listening" and
                  dy.stdout.readline().strip() == "listening", "two WebSocket origins listening")
            r = ns.run([sys.executable, "-c", CLIENT], timeout=180, check=False)
            out = {}
            for line in r.stdout.splitlines():
                if line.startswith("{"):
                    out.update(json.loads(line))
            check(r.returncode == 0 and len(out.get("clients", [])) == 8,
                  f"the clients ran ({r.returncode}): {r.stdout[-2000:]}")
            steps = ("text", "binary", "fragmented", "mib", "pong", "stream", "closed")
            for i, c in enumerate(out["clients"]):
                bad = [s for s in steps if c.get(s) is not True]
                check(not bad, f"client {i}: {', '.join(bad) or 'every step'} as sent")
            check(True, "(a) 8 clients: text, binary, fragmented and 1 MiB messages echoed, "
                  "a ping answered, 200 streamed; 4 closed by the client (1000), 4 by the "
                  "server (4000 bye)")
            check(out.get("dying") is True,
                  f"(b) the origin died mid-stream: the client saw 1006, not a hang ({out.get('dying')})")
            after = out.get("after", {})
            check(all(after.get(s) is True for s in steps),
                  f"(b) a new WebSocket after that works: {after}")
            # Both sides' closes travel through ferry's TCP: wait for the last.
            hall = wait_for(lambda: f.telemetry("/ferry/http"),
                            lambda h: h["sum"]["tunnels_closed"] >= 10, timeout=20)
            h = hall["sum"]
            per = {k: v["tunnels_opened"] for k, v in hall.items()
                   if k.startswith("lcore") and isinstance(v, dict) and "tunnels_opened" in v}
            check(len(per) == 2 and all(n > 0 for n in per.values()),
                  f"(c) tunnels on both lcores: {per}")
            check(h["tunnels_opened"] == 10 and h["tunnels_closed"] == 10,
                  f"(c) tunnels opened {h['tunnels_opened']}, closed {h['tunnels_closed']} (10)")
            mib9 = 9 << 20
            check(h["tunnel_bytes_up"] > mib9 and h["tunnel_bytes_down"] > mib9
                  and h["upgrades_declined"] == 0 and h["upgrades_refused"] == 0,
                  f"(c) tunnel bytes up {h['tunnel_bytes_up']}, down {h['tunnel_bytes_down']} "
                  f"(> 9 MiB each), declined {h['upgrades_declined']}")
            with PyOrigin(ns, PEER_ADDR, PY_PORT):
                code = ns.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                               "20", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                               f"http://{FERRY_ADDR}:8080/http/a"], check=False).stdout.strip()
                h2c = ns.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                              "--max-time", "20", "--http2",
                              f"http://{FERRY_ADDR}:8080/http/b"], check=False).stdout.strip()
            h = f.telemetry("/ferry/http")["sum"]
            check(code == "200" and h["upgrades_declined"] == 1,
                  f"(d) an upgrade a plain origin ignores gets its answer ({code}), "
                  f"upgrades_declined {h['upgrades_declined']}")
            check(h2c == "200" and h["upgrades_ignored"] == 1,
                  f"(d) curl --http2 (Upgrade: h2c) answered over HTTP/1.1 ({h2c}), "
                  f"upgrades_ignored {h['upgrades_ignored']}")
        finally:
            stop_pid(ws)
            if dy.poll() is None:
                stop_pid(dy)
    with open(log_path) as fh:
        lines = fh.read().splitlines()
    switched = [l for l in lines if '" 101 ' in l]
    check(len(switched) == 10, f"(c) the access log has a 101 record per tunnel ({len(switched)} "
          f"of {len(lines)} lines)")
    print("PASS")


if __name__ == "__main__":
    main()
