"""In-process configuration reload under load (issue 18 item 1, docs/OPERATIONS.md
"Reloading the configuration"): ferry on 2 lcores (net_tap), three Python
origins on the tap's kernel side, an open-loop client (h2load --h1 --rps) on
10 connections (200 requests a second) through every reload.

20 reloads, by SIGHUP and /ferry/reload in turn, each one writing a new file:
  - valid ones change the /a/ route's response rule (X-Gen: <n>), its path
    prefix (/a/ or /a2/, which the default route catches otherwise), a
    server weight and a timeout, and the upstream's servers (two of the three
    origins, a different two each time: one removed, one added, under load):
    after each one a request sees X-Gen: <n> and the route's new prefix, and
    requests reach only the new servers;
  - reloads 15-17 add a route in front of it (/extra/, X-Extra: yes), which
    moves it to the second position under load, a listener on port 8081, and
    an upstream 'x' with a shared pool (one server, 9000) that both lead to;
    reload 18 removes all three (8081 then refuses connections,
    /ferry/upstreams lists no x);
  - reload 19 renames the upstream 'u' to 'v' under load (u removed, v
    added: its requests in flight finish, new ones go to v);
  - a route /sh/ (X-Sh: <n>) leads to an upstream with a shared pool whose
    two connections per server belong one to each worker (so about half
    its requests are handed over), part of the load; its servers change
    with every reload as u's do, and /extra/ moves its route in 15 and back
    in 18: a hand-over carries the route's id, every /sh/ answer after each
    reload has the new rule, and only the new servers answer;
  - reload 8 is invalid (a TOML syntax error): refused with file:line, logged
    and reported, nothing applied (X-Gen stays, the generation too);
  - reload 13 changes [tcp] (needs a restart): refused with its key, nothing
    applied;
  - reload 20 also switches the access log to JSON: the next request's line
    is a JSON object.
Then: the client saw 0 failed and 0 errored requests (no reset, no refused
connection) and only 2xx; the access log names the added and the renamed
upstream; the counters say 18 applied, 1 invalid, 1 refused;
each worker took 18 configurations over (/ferry/http reconfigured); the
config hash in /ferry/config is the last applied file's; the Prometheus-style
totals are in /ferry/reload's answer.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import (FERRY_ADDR, PEER_ADDR, Ferry, Netns, PyOrigin, check,  # noqa: E402
                     ferry_binary, require_root, tap_port_toml)

PORTS = (9000, 9001, 9002)
# The access log (set from the start: a reload cannot change it), to see a
# server a reload added named in its records.
ACCESS_LOG = os.path.join(tempfile.mkdtemp(prefix="ferry-reload-"), "access.log")
RELOADS = 20
INVALID, REFUSED = 8, 13  # by /ferry/reload and by SIGHUP


def server_ports(gen):
    """Generation gen's servers: every origin but PORTS[gen % 3]."""
    return [p for p in PORTS if p != PORTS[gen % len(PORTS)]]


def upstream_name(gen):
    """The main upstream's name: 'u', renamed 'v' by reload 19."""
    return "v" if gen >= 19 else "u"


def config(gen, prefix="/a/", weight=1, tcp="", extra=False):
    up = upstream_name(gen)
    servers = "".join(f'  [[upstream.server]]\n  address = "{PEER_ADDR}:{p}"\n'
                      f'  weight = {weight if i == 0 else 1}\n'
                      for i, p in enumerate(server_ports(gen)))
    # A route added in front of the /a/ route, a listener and the upstream
    # 'x' they lead to (reloads 15-17), then removed.
    front = ('[[route]]\npath_prefix = "/extra/"\nupstream = "x"\n'
             'response_headers.set = { "X-Extra" = "yes" }\n\n') if extra else ""
    alt = '[[listener]]\nname = "alt"\nport = 8081\ndefault_upstream = "x"\n\n' if extra else ""
    # x has a shared pool: added (15) and removed (18) by reload as a
    # local one is.
    x = (f'[[upstream]]\nname = "x"\npool = "shared"\nshared_connections = 2\n'
         f'  [[upstream.server]]\n  address = "{PEER_ADDR}:{PORTS[0]}"\n\n'
         if extra else "")
    # A shared pool (two connections, one per worker: half its requests are
    # handed to the other worker) behind the last route, which moves when
    # /extra/ comes and goes: the hand-overs carry the route's id.
    # Its servers change with every reload as u's do (shared connections
    # are laid out by server slot).
    sh = (f'[[upstream]]\nname = "sh"\npool = "shared"\nshared_connections = 2\n'
          + "".join(f'  [[upstream.server]]\n  address = "{PEER_ADDR}:{p}"\n'
                    for p in server_ports(gen)) + "\n")
    # The last reload switches the access log to JSON lines.
    fmt = 'access_log_format = "json"\n' if gen == RELOADS else ""
    return (f'[http]\naccess_log = "{ACCESS_LOG}"\n{fmt}\n'
            f'[[listener]]\nname = "web"\nport = 8080\ndefault_upstream = "{up}"\n\n' + alt +
            front +
            f'[[route]]\npath_prefix = "{prefix}"\nupstream = "{up}"\n'
            f'response_timeout_ms = {30000 + gen}\n'
            f'response_headers.set = {{ "X-Gen" = "{gen}" }}\n\n'
            f'[[route]]\npath_prefix = "/sh/"\nupstream = "sh"\n'
            f'response_headers.set = {{ "X-Sh" = "{gen}" }}\n\n'
            f'[[upstream]]\nname = "{up}"\n{servers}\n' + x + sh
            + tcp + tap_port_toml())


def write(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # as an editor or a deploy tool would


def head_of(ns, path):
    """The response head of GET path (status line and fields), lowercased names."""
    r = ns.run(["curl", "-s", "-D", "-", "-o", "/dev/null", "--max-time", "10",
                f"http://{FERRY_ADDR}:8080{path}"], check=False, timeout=20)
    return r.stdout


def gen_of(head):
    m = re.search(r"^x-gen: (\d+)\r?$", head, re.I | re.M)
    return int(m.group(1)) if m else None


def wait_for(cond, what, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1", config=config(0)) as f, \
            PyOrigin(ns, PEER_ADDR, PORTS[0]), PyOrigin(ns, PEER_ADDR, PORTS[1]), \
            PyOrigin(ns, PEER_ADDR, PORTS[2]):
        path = os.path.join(f.tmp, "ferry.toml")
        check(gen_of(head_of(ns, "/a/x")) == 0, "before any reload: X-Gen: 0 on /a/")
        # Open loop: 10 connections x 20 req/s for long enough to cover the reloads.
        load = ns.popen(["h2load", "--h1", "-c", "10", "--rps", "20", "-D", "25",
                         f"http://{FERRY_ADDR}:8080/a/load", f"http://{FERRY_ADDR}:8080/sh/load"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(0.5)  # the load is running before the first reload (not a wait on state)
            applied, applied_gen, applied_prefix = 0, 0, "/a/"
            for n in range(1, RELOADS + 1):
                prefix = "/a/" if n % 2 == 0 else "/a2/"
                if n == INVALID:
                    text = config(n, prefix) + "\n[http\n"  # a broken table header
                    bad_line = text.count("\n")
                elif n == REFUSED:
                    text = config(n, prefix, tcp='[tcp]\ncongestion_control = "bbr"\n\n')
                else:
                    text = config(n, prefix, weight=1 + n % 3, extra=15 <= n <= 17)
                write(path, text)
                logged = f.log_text().count("ferry.app: reload ")
                r = None
                if n % 2 == 0:
                    r = f.telemetry("/ferry/reload")
                else:
                    f.proc.send_signal(signal.SIGHUP)
                # Every reload, whatever its result, logs one line.
                wait_for(lambda: f.log_text().count("ferry.app: reload ") > logged,
                         f"reload {n}'s log line")
                if n in (INVALID, REFUSED):
                    line = f.log_text().splitlines()
                    said = [x for x in line if "reload refused" in x][-1]
                    if n == INVALID:
                        at = re.search(re.escape(path) + r":(\d+):", said)
                        check(at is not None and int(at.group(1)) in (bad_line, bad_line + 1)
                              and "result=invalid" in said,
                              f"reload {n}: the invalid file is refused with file:line ({said})")
                    else:
                        check("key 'tcp'" in said and "needs a restart" in said
                              and "result=refused" in said,
                              f"reload {n}: a [tcp] change is refused ({said})")
                    if r is not None:
                        check(r["result"] in ("invalid", "refused") and r["errors"],
                              f"reload {n}: /ferry/reload says {r['result']}: {r['errors']}")
                    # Nothing applied: the last applied file still serves.
                    check(gen_of(head_of(ns, applied_prefix + "x")) == applied_gen,
                          f"reload {n}: the running configuration kept serving")
                    continue
                applied += 1
                applied_gen, applied_prefix = n, prefix
                if r is not None:
                    check(r["result"] == "applied" and r["config_generation"] == applied,
                          f"reload {n}: /ferry/reload applied generation {r['config_generation']}")
                wait_for(lambda: f.telemetry("/ferry/config")["config_generation"] == applied,
                         f"generation {applied}")
                # The new rules and route, seen by the next request (both
                # workers take it before their next poll: a request on any
                # connection sees it).
                seen = [gen_of(head_of(ns, prefix + "x")) for _ in range(4)]
                check(seen == [n] * 4, f"reload {n}: {prefix} answers with X-Gen: {n} ({seen})")
                # The shared pool's route, wherever it is now: its rule on
                # both workers' connections (the owner of a handed-over
                # request finds the route by its id).
                sh_seen = [re.search(r"^x-sh: (\d+)\r?$", head_of(ns, "/sh/x"), re.I | re.M)
                           for _ in range(6)]
                sh_seen = [int(m.group(1)) if m else None for m in sh_seen]
                check(sh_seen == [n] * 6, f"reload {n}: /sh/ answers with X-Sh: {n} ({sh_seen})")
                if n >= 14:
                    extra = re.search(r"^x-extra: yes\r?$", head_of(ns, "/extra/x"), re.I | re.M)
                    check((extra is not None) == (15 <= n <= 17),
                          f"reload {n}: the route added by reload 15 and removed by 18 "
                          f"{'answers' if extra else 'is gone'}")
                    r8081 = ns.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                    "--max-time", "10", f"http://{FERRY_ADDR}:8081/whoami"],
                                   check=False, timeout=20)
                    if 15 <= n <= 17:
                        check(r8081.returncode == 0 and r8081.stdout == "200",
                              f"reload {n}: the listener added on 8081 answers "
                              f"({r8081.returncode}, {r8081.stdout})")
                        x = ns.run(["curl", "-s", "--max-time", "10",
                                    f"http://{FERRY_ADDR}:8081/whoami"], check=False, timeout=20)
                        check(x.stdout == str(PORTS[0]),
                              f"reload {n}: 8081 leads to the added upstream x, whose server "
                              f"is {PORTS[0]}: {x.stdout!r}")
                    else:
                        check(r8081.returncode == 7,  # curl: failed to connect
                              f"reload {n}: the listener on 8081 is gone: connection refused "
                              f"(curl exit {r8081.returncode})")
                # The servers: the new two in /ferry/upstreams, and only they
                # answer (the removed one's idle connections closed).
                ups = f.telemetry("/ferry/upstreams")
                want = {f"{upstream_name(n)}/{i}": f"{PEER_ADDR}:{p}"
                        for i, p in enumerate(server_ports(n))}
                want.update({f"sh/{i}": f"{PEER_ADDR}:{p}"
                             for i, p in enumerate(server_ports(n))})
                if 15 <= n <= 17:
                    want["x/0"] = f"{PEER_ADDR}:{PORTS[0]}"
                check({k: v["server"] for k, v in ups.items()} == want,
                      f"reload {n}: /ferry/upstreams lists {want}: "
                      f"{ {k: v['server'] for k, v in ups.items()} }")
                who = {int(ns.run(["curl", "-s", "--max-time", "10",
                                   f"http://{FERRY_ADDR}:8080/whoami"], check=False,
                                  timeout=20).stdout or 0) for _ in range(8)}
                check(who <= set(server_ports(n)),
                      f"reload {n}: requests reach only {server_ports(n)}: {sorted(who)}")
                sh_who = {int(ns.run(["curl", "-s", "--max-time", "10",
                                      f"http://{FERRY_ADDR}:8080/sh/whoami"], check=False,
                                     timeout=20).stdout or 0) for _ in range(8)}
                check(sh_who <= set(server_ports(n)),
                      f"reload {n}: the shared pool's requests reach only {server_ports(n)}: "
                      f"{sorted(sh_who)}")
                other = "/a2/x" if prefix == "/a/" else "/a/x"
                check(gen_of(head_of(ns, other)) is None,
                      f"reload {n}: {other} no longer matches the route (default upstream)")
                if n == RELOADS:
                    # The access log's format changed with the file: the
                    # next request's line is a JSON object.
                    tag = f"/a/json-after-{n}"
                    head_of(ns, tag)

                    def json_line():
                        with open(ACCESS_LOG) as log:
                            for line in log:
                                if tag in line and line.startswith("{"):
                                    return json.loads(line)
                        return None
                    rec = wait_for(json_line, "a JSON access-log line after the format changed")
                    check(tag in rec["request"],
                          f"reload {n}: access_log_format json applies: {rec['request']!r}")
            out, _ = load.communicate(timeout=60)
        finally:
            if load.poll() is None:
                load.kill()
                load.wait()
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                      r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
        check(m is not None, f"h2load finished:\n{out[-800:]}")
        total, _, done, ok, failed, errored, timeouts = map(int, m.groups())
        codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
        check(failed == 0 and errored == 0 and timeouts == 0 and done == total and total > 2000,
              f"open-loop client through {RELOADS} reloads: {total} requests, {ok} succeeded, "
              f"{failed} failed, {errored} errored, {timeouts} timed out")
        check(codes is not None and int(codes.group(2)) == int(codes.group(3)) ==
              int(codes.group(4)) == 0, f"only 2xx: {codes.group(0) if codes else out[-400:]}")
        r = f.telemetry("/ferry/reload")  # the same file again: unchanged
        check(r["result"] == "unchanged" and r["applied"] == RELOADS - 2 and r["invalid"] == 1
              and r["refused"] == 1 and r["unchanged"] == 1,
              f"/ferry/reload counts 18 applied, 1 invalid, 1 refused, 1 unchanged: {r}")
        c = f.telemetry("/ferry/config")
        check(c["config_generation"] == RELOADS - 2 and c["config_hash"] == r["config_hash"],
              f"/ferry/config: generation {c['config_generation']}, hash {c['config_hash']}")
        # Replaced configurations are freed once no worker runs them: the one
        # in force is all that is left of 18 (both workers are past it).
        check(c["configs_alive"] == 1, f"/ferry/config: {c['configs_alive']} reloaded "
              "configuration(s) in memory after 18 reloads")
        whole = f.telemetry("/ferry/http")
        check(whole["configurations_held"] == 1,
              "no worker keeps a replaced configuration once its requests are done: "
              f"{whole['configurations_held']}")
        check(whole["sum"]["xcore_requests_out"] > 0,
              f"requests were handed to the shared pool's other worker: "
              f"{whole['sum']['xcore_requests_out']}")
        http = {k: v for k, v in whole.items() if k.startswith("lcore")}
        per_lcore = {k: v["reconfigured"] for k, v in http.items()}
        check(sorted(per_lcore.values()) == [RELOADS - 2] * 2,
              f"each worker took {RELOADS - 2} configurations over: {per_lcore}")
        # Each applied file removed one server of u (and added another); 18
        # also x's, 19 both of u's (v has its own): 20; and one of sh's
        # every time: 18 more.
        removed = {k: v["servers_removed"] for k, v in http.items()}
        want_removed = RELOADS + (RELOADS - 2)
        check(sorted(removed.values()) == [want_removed] * 2,
              f"each worker saw {want_removed} servers removed: {removed}")
        check("ferry.app: reload applied " in f.log_text(), "reloads are logged")
        # 9000 was no server at start (slot 2 from reload 1): the access log
        # names it by its address, as the others.
        with open(ACCESS_LOG) as log:
            lines = log.readlines()
        named = {p: sum(f" us={PEER_ADDR}:{p} " in line for line in lines) for p in PORTS}
        check(all(n > 0 for n in named.values()),
              f"the access log names every server, the one reload 1 added too: {named}")
        ups_named = {u: sum(f" up={u} " in line for line in lines) for u in ("u", "v", "x")}
        check(all(n > 0 for n in ups_named.values()),
              f"the access log names every upstream, those reloads added too: {ups_named}")
        check(not any(" up= " in line for line in lines),
              "no line with an empty upstream name (a slot the log writer could not name)")

        # ferry --check --running: what a reload of another file would do,
        # asked of the running ferry; nothing applied.
        other = os.path.join(f.tmp, "other.toml")
        def ask(text):
            write(other, text)
            return ns.run([ferry_binary(), "--", "--check", "--config", other, "--running",
                           f.prefix], check=False, timeout=60)
        r = ask(config(99, "/a/", weight=3))
        check(r.returncode == 0 and "would apply:" in r.stdout
              and '  route[0].response_headers: [set X-Gen: 20] -> [set X-Gen: 99]' in r.stdout,
              f"--check --running: a valid file would apply, with its changes:\n{r.stdout}")
        r = ask(config(99, "/a/", tcp='[tcp]\ncongestion_control = "bbr"\n\n'))
        check(r.returncode == 1 and "would be refused:" in r.stdout
              and f"  {other}: key 'tcp': [tcp] changed" in r.stdout,
              f"--check --running: a [tcp] change would be refused:\n{r.stdout}")
        r = ask(config(20, "/a/", weight=3))
        check(r.returncode == 0 and "would change nothing" in r.stdout,
              f"--check --running: the running file's twin changes nothing:\n{r.stdout}")
        c = f.telemetry("/ferry/config")
        check(c["config_generation"] == RELOADS - 2 and gen_of(head_of(ns, "/a/x")) == 20,
              "--check --running applied nothing")
        r = ns.run([ferry_binary(), "--", "--check", "--config", other, "--running", "nobody"],
                   check=False, timeout=60)
        check(r.returncode == 1 and "no ferry answers" in r.stdout,
              f"--check --running with no such ferry: {r.stdout.strip()[-300:]}")
    shutil.rmtree(os.path.dirname(ACCESS_LOG), ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
