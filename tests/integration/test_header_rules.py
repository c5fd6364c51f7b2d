"""A route's header rules end to end (issue 18 item 4, docs/OPERATIONS.md
"Header rules"): ferry on 2 lcores (net_tap, steering program), the Python
origin on the tap's kernel side, which answers an unknown path with the
request's method, target and fields in its body (and sends Server, Date,
Content-Length and Content-Type fields of its own).

Routes:
  /shared/  -> upstream "sh" (pool "shared", one connection: the requests of
               clients on the other lcore are handed over to its owner, which
               applies the response rules there)
  /local/   -> upstream "loc" (pool "local")
  anything else -> the listener's default, "loc", without rules
Both ruled routes: request_headers set X-Env (the client's are dropped), add
X-Tag (beside the client's), remove X-Debug; response_headers set
Cache-Control, add X-Route, remove Server.

(a) Through each route, on 16 connections (both lcores), the origin sees the
    request rules applied and the client sees the response rules applied.
(b) The unruled route forwards the same fields untouched.
(c) Requests were handed across lcores (xcore_requests_out > 0), so the rules
    held on both sides of a hand-off.
(d) --check shows the rules; /ferry/config/routes lists them, and the local
    route's own response_timeout_ms.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     ferry_binary, require_root, tap_port_toml)

PY_PORT = 9000

RULES = """
request_headers.set = { "X-Env" = "prod" }
request_headers.add = { "X-Tag" = "ferry" }
request_headers.remove = ["X-Debug"]
response_headers.set = { "Cache-Control" = "no-store" }
response_headers.add = { "X-Route" = "%s" }
response_headers.remove = ["Server"]
"""


def config():
    server = f'  [[upstream.server]]\n  address = "{PEER_ADDR}:{PY_PORT}"\n'
    return (f'[[listener]]\nname = "web"\nport = 8080\ndefault_upstream = "loc"\n\n'
            f'[[route]]\npath_prefix = "/shared/"\nupstream = "sh"\n{RULES % "shared"}\n'
            f'[[route]]\npath_prefix = "/local/"\nupstream = "loc"\nresponse_timeout_ms = 90000\n'
            f'{RULES % "local"}\n'
            f'[[upstream]]\nname = "sh"\npool = "shared"\nshared_connections = 1\n{server}\n'
            f'[[upstream]]\nname = "loc"\n{server}\n'
            + tap_port_toml())


# Runs in the namespace: 16 connections, one request per path on each; prints
# one JSON object per request: path, status, response fields, body.
CLIENT = f"""
import http.client, json
for i in range(16):
    c = http.client.HTTPConnection("{FERRY_ADDR}", 8080, timeout=20)
    for path in ("/shared/a", "/local/b", "/plain/c"):
        c.putrequest("GET", path + "?i=%d" % i)
        c.putheader("X-Env", "dev")
        c.putheader("X-Debug", "1")
        c.putheader("X-Tag", "client")
        c.endheaders()
        r = c.getresponse()
        body = r.read().decode()
        print(json.dumps({{"path": path, "status": r.status,
                          "fields": [[k.lower(), v] for k, v in r.getheaders()],
                          "body": body}}))
    c.close()
"""


def fields_of_body(body):
    """The request fields the origin saw, lowercased names, in order."""
    lines = body.splitlines()[1:]
    return [(k.strip().lower(), v.strip()) for k, _, v in (x.partition(":") for x in lines) if k]


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config()) as f:
        with PyOrigin(ns, PEER_ADDR, PY_PORT):
            r = ns.run([sys.executable, "-c", CLIENT], timeout=120)
            answers = [json.loads(x) for x in r.stdout.splitlines()]
            check(len(answers) == 48 and all(a["status"] == 200 for a in answers),
                  f"48 requests answered 200 ({len(answers)})")
            for a in answers:
                seen = fields_of_body(a["body"])
                resp = a["fields"]
                names = [k for k, _ in resp]
                ruled = not a["path"].startswith("/plain/")
                if ruled:
                    route = a["path"].split("/")[1]
                    # (a) toward the origin
                    want_req = [v for k, v in seen if k == "x-env"] == ["prod"] \
                        and [v for k, v in seen if k == "x-tag"] == ["client", "ferry"] \
                        and "x-debug" not in [k for k, _ in seen]
                    # (a) toward the client
                    want_resp = "server" not in names \
                        and [v for k, v in resp if k == "cache-control"] == ["no-store"] \
                        and [v for k, v in resp if k == "x-route"] == [route]
                else:
                    # (b) untouched
                    want_req = [v for k, v in seen if k == "x-env"] == ["dev"] \
                        and [v for k, v in seen if k == "x-tag"] == ["client"] \
                        and [v for k, v in seen if k == "x-debug"] == ["1"]
                    want_resp = "server" in names and "x-route" not in names \
                        and "cache-control" not in names
                if not (want_req and want_resp):
                    raise AssertionError(f"{a['path']}: request fields {seen}, response "
                                         f"fields {resp}")
            check(True, "(a) both ruled routes: X-Env set, X-Tag added, X-Debug removed toward "
                  "the origin; Cache-Control set, X-Route added, Server removed toward the client")
            check(True, "(b) the unruled route forwards the same fields untouched")
            h = f.telemetry("/ferry/http")["sum"]
            check(h["xcore_requests_out"] > 0,
                  f"(c) requests were handed across lcores ({h['xcore_requests_out']}): the "
                  "owner of the shared connection applied the response rules")
            routes = f.telemetry("/ferry/config/routes")
            check(routes["0"]["request_headers"] == 'set "X-Env: prod"; add "X-Tag: ferry"; '
                  'remove x-debug' and routes["1"]["response_headers"]
                  == 'set "Cache-Control: no-store"; add "X-Route: local"; remove server'
                  and routes["1"]["timeouts"] == "response 90000 ms" and routes["0"]["timeouts"] == "",
                  f"(d) /ferry/config/routes lists the rules: {routes}")
    # (d) --check shows them.
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ferry-header-rules-{os.getpid()}.toml")
    with open(path, "w") as fh:
        fh.write(config())
    try:
        r = subprocess.run([ferry_binary(), "--", "--check", "-c", path], capture_output=True,
                           text=True, timeout=60)
    finally:
        os.unlink(path)
    check(r.returncode == 0 and '  request headers: set "X-Env: prod"; add "X-Tag: ferry"; '
          'remove x-debug\n' in r.stdout
          and '  response headers: set "Cache-Control: no-store"; add "X-Route: shared"; '
          'remove server\n' in r.stdout, f"(d) --check shows the rules:\n{r.stdout}{r.stderr}")
    print("PASS")


if __name__ == "__main__":
    main()
