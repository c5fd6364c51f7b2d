"""A WebSocket origin for the tests (python3-websockets, RFC 6455): echoes
every message (text or binary, whole: a fragmented message comes back as one)
and obeys a few text commands:
  "close-me"     the server starts the close handshake (code 4000, "bye")
  "stream <n>"   sends n text messages "s<i>" back to back, then "done"
  "die"          the process exits at once (an origin dying mid-stream: the
                 kernel closes its sockets)
Usage: ws_origin.py ADDR PORT; prints "listening" once it accepts.
"""

import asyncio
import os
import sys

import websockets


async def handler(ws, path=None):
    try:
        async for msg in ws:
            if msg == "close-me":
                await ws.close(code=4000, reason="bye")
                return
            if msg == "die":
                sys.stdout.flush()
                os._exit(3)
            if isinstance(msg, str) and msg.startswith("stream "):
                for i in range(int(msg.split()[1])):
                    await ws.send(f"s{i}")
                await ws.send("done")
                continue
            await ws.send(msg)
    except websockets.ConnectionClosed:
        pass


async def main(addr, port):
    async with websockets.serve(handler, addr, port, max_size=None, ping_interval=None):
        print("listening", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
