"""The systems under test. Each is started fresh for every run (so an idle,
polling ferry never steals CPU 1 from the others) and stopped by its pid.

  ferry-local   ferry's HTTP proxy, upstream pool "local" (per lcore)
  ferry-shared  the same, pool "shared"
  haproxy       HAProxy, nbthread 1, keep-alive both sides (its defaults)
  nginx         nginx proxy_pass, worker_processes 1, upstream keepalive
  direct        wrk straight to the origin over its own veth: the ceiling
  ferry-base    (opt-in, with --base-bin) ferry-local run from another
                binary, e.g. a release build of an older commit: a before/after
                comparison interleaved in one run (ratios ferry-local / ferry-base)
  ferry-relay   (opt-in) ferry's [tcp_test] L4 relay: not HTTP aware, no
                pooling, and its upstream leg runs through the client
                namespace's kernel router (the relay connects out of the port
                the client came in on). Not comparable: it proves the ferry
                plumbing (ports, telemetry, counters) while the HTTP proxy
                does not exist
"""

import json
import os
import re
import shutil
import socket
import time

from . import topo as T
from . import util

ALL = ["ferry-local", "ferry-shared", "haproxy", "nginx", "direct"]
OPTIONAL = ["ferry-relay", "ferry-base"]
NOT_SERVING = "ferry: not serving HTTP (skipped)"

HAPROXY_CONF = """\
global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend fe
  bind {listen}
  default_backend be
backend be
  server origin {origin} maxconn 8000
"""

NGINX_PROXY_CONF = """\
daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid {work}/nginx-proxy.pid;
error_log {work}/nginx-proxy-error.log warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  upstream origin {{
    server {origin};
    keepalive 512;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
  }}
  server {{
    listen {listen} backlog=4096;
    location / {{
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering on;
    }}
  }}
}}
"""


def ferry_ports_toml(ports, cli_gateway=None):
    """[[port]] tables for ferry's two ports; ports = "af_packet" | "af_xdp" |
    "ferry_packet" | "tap"."""
    if ports in ("af_packet", "af_xdp", "ferry_packet"):
        prof, ifaces = f"net_{ports}", ("fc0", "fo0")
    else:
        prof, ifaces = "net_tap", ("ft0", "ft1")
    out = ""
    for name, iface, addr, gw in (("cli", ifaces[0], T.FERRY_IP, cli_gateway),
                                  ("org", ifaces[1], T.FERRY_UP_IP, None)):
        out += (f'\n[[port]]\nname = "{name}"\nprofile = "{prof}"\niface = "{iface}"\n'
                f'address = "{addr}/24"\n' + (f'gateway = "{gw}"\n' if gw else ""))
    return out


def ferry_config(app, ports, pool="local", wakeup_mode=None, cc=None):
    """app: "http" (the proxy, pool local|shared) or "relay" ([tcp_test] relay);
    cc: [tcp] congestion_control (None: ferry's default)."""
    if wakeup_mode is None:
        # Kept as the matrix has always run, so results stay comparable: the
        # af_packet-like ports polled (before ferry could sleep on their
        # sockets), tap ran the built-in default until 2026-12-07, conditional.
        wakeup_mode = "poll" if ports in ("af_packet", "af_xdp", "ferry_packet") else "conditional"
    head = f'[ferry]\nwakeup_mode = "{wakeup_mode}"\n\n'
    head += "[tcp]\nmax_connections = 1024\ntime_wait_ms = 1000\n"
    if cc:
        head += f'congestion_control = "{cc}"\n'
    if app == "relay":
        # The relay opens its upstream connection on the port the client came
        # in on (one tcp_layer per port), so it reaches the origin through the
        # client namespace's kernel, which routes 10.81.4.0/24 <-> 10.81.3.0/24.
        # discard_port: the app is only built when echo/discard/source is set.
        body = (f"\n[tcp_test]\ndiscard_port = 9\nrelay_port = {T.PROXY_PORT}\n"
                f'relay_to = "{T.DIRECT_ORIGIN_IP}:80"\n')
        return head + body + ferry_ports_toml(ports, cli_gateway=T.FERRY_CLIENT_SIDE_PEER)
    else:
        # Parity with the peers: they keep client connections open for any
        # number of requests and add no X-Forwarded-* headers; nginx keeps
        # 512 idle upstream connections (keepalive 512), HAProxy any number.
        idle = "max_idle = 512\n" if pool == "local" else ""
        body = f"""
[http]
max_requests_per_connection = 0
add_x_forwarded = false
[[listener]]
name = "web"
port = {T.PROXY_PORT}
default_upstream = "origin"
[[upstream]]
name = "origin"
pool = "{pool}"
{idle}  [[upstream.server]]
  address = "{T.FERRY_ORIGIN_IP}:80"
"""
    return head + body + ferry_ports_toml(ports)


class Skip(Exception):
    """The system cannot run here; str() is the reason shown in the report."""


class Running:
    """A started system: where to send load, whose CPU to count."""

    def __init__(self, url_base, pids=(), ferry=None):
        self.url_base = url_base
        self.pids = list(pids)
        self.ferry = ferry  # FerryProc or None


class System:
    name = ""
    label = ""
    is_ferry = False

    def __init__(self, topo, args):
        self.topo = topo
        self.args = args
        self.proc = None

    def config_text(self):
        return ""

    def start(self):
        raise NotImplementedError

    def stop(self):
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def _wait_http(self, url, proc, what, timeout=10):
        ok = util.wait_until(
            lambda: (proc is None or proc.alive()) and
            self.topo.probe(self.topo.client, url, timeout=2) is not None, timeout, 0.05)
        if not ok:
            log = proc.log_text() if proc else ""
            raise RuntimeError(f"{what} not answering at {url}\n{log}")


class Direct(System):
    name, label = "direct", "direct (no proxy)"

    def start(self):
        return Running(f"http://{T.DIRECT_ORIGIN_IP}:80", pids=[])


class Haproxy(System):
    name, label = "haproxy", "HAProxy 1 thread"

    def config_text(self):
        return HAPROXY_CONF.format(listen=f"{T.PROXY_IP}:{T.PROXY_PORT}",
                                   origin=f"{T.ORIGIN_IP}:80")

    def start(self):
        cfg = os.path.join(self.topo.work, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(self.config_text())
        self.proc = util.Proc("haproxy", ["haproxy", "-f", cfg, "-db"], ns=self.topo.proxy,
                              cpus=self.topo.cpu_proxy,
                              log_path=os.path.join(self.topo.work, "haproxy.log"))
        url = f"http://{T.PROXY_IP}:{T.PROXY_PORT}"
        self._wait_http(url + "/", self.proc, "haproxy")
        return Running(url, pids=[self.proc.pid])


class NginxProxy(System):
    name, label = "nginx", "nginx proxy_pass 1 worker"

    def config_text(self):
        return NGINX_PROXY_CONF.format(work=self.topo.work,
                                       listen=f"{T.PROXY_IP}:{T.PROXY_PORT}",
                                       origin=f"{T.ORIGIN_IP}:80")

    def start(self):
        cfg = os.path.join(self.topo.work, "nginx-proxy.conf")
        with open(cfg, "w") as f:
            f.write(self.config_text())
        self.proc = util.Proc("nginx proxy",
                              ["nginx", "-c", cfg, "-e",
                               os.path.join(self.topo.work, "nginx-proxy-error.log")],
                              ns=self.topo.proxy, cpus=self.topo.cpu_proxy,
                              log_path=os.path.join(self.topo.work, "nginx-proxy.log"))
        url = f"http://{T.PROXY_IP}:{T.PROXY_PORT}"
        self._wait_http(url + "/", self.proc, "nginx proxy")
        # master + its worker: the CPU of both counts (measure expands children)
        return Running(url, pids=[self.proc.pid])


_ferry_seq = 0


class FerryProc:
    """One ferry process in the proxy namespace (EAL prefix unique per start)."""

    def __init__(self, topo, binary, config_text, lcores, cpus, ports, ready_timeout=60):
        global _ferry_seq
        _ferry_seq += 1
        self.topo = topo
        self.ports = ports
        self.prefix = f"fyf-{os.getpid()}-{_ferry_seq}"
        self.cfg_path = os.path.join(topo.work, f"ferry-{_ferry_seq}.toml")
        with open(self.cfg_path, "w") as f:
            f.write(config_text)
        self.log_path = os.path.join(topo.work, f"ferry-{_ferry_seq}.log")
        args = [binary, "-l", lcores, "--no-huge", "-m", "512", "--no-pci",
                "--file-prefix", self.prefix, "--", "--config", self.cfg_path]
        self.proc = util.Proc("ferry", args, ns=topo.proxy, cpus=cpus, log_path=self.log_path)
        self.bridges = []
        try:
            self._wait_ready(ready_timeout)
            if ports == "tap":
                self.bridges = ["fbr0", "fbr1"]
                topo.bridge_taps([("fbr0", "fc0", "ft0"), ("fbr1", "fo0", "ft1")])
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.proc.log_text()
            if "ferry.app: ready " in text:
                return
            if not self.proc.alive():
                raise Skip(f"ferry exited ({self.proc.popen.returncode}) before ready: "
                           + first_error(text))
            time.sleep(0.05)
        raise Skip("ferry not ready in time: " + first_error(self.proc.log_text()))

    def stop(self):
        rc = self.proc.stop(timeout=30)
        self.topo.unbridge(self.bridges)
        self.bridges = []
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)
        return rc

    @property
    def pid(self):
        return self.proc.pid

    def telemetry(self, cmd, timeout=5):
        """One command on DPDK's telemetry socket (testbed.py's protocol)."""
        path = f"/var/run/dpdk/{self.prefix}/dpdk_telemetry.v2"
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(timeout)
            s.connect(path)
            info = json.loads(s.recv(16384).decode())
            s.send(cmd.encode())
            reply = json.loads(s.recv(info.get("max_output_len", 16384)).decode())
        return reply[cmd.split(",")[0]]


def first_error(log):
    """The most telling line of a ferry log for a one-line skip reason."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for l in lines:
        if re.search(r"error|unknown|invalid|failed|cannot", l, re.I):
            return l[:300]
    return (lines[-1][:300] if lines else "(empty log)")


class Ferry(System):
    is_ferry = True

    def __init__(self, topo, args, name, app="http", pool="local", binary=None):
        super().__init__(topo, args)
        self.name = name
        self.app = app
        self.pool = pool
        self.binary = binary or args.ferry_bin
        self.label = ("ferry L4 relay ([tcp_test])" if app == "relay"
                      else f"ferry HTTP, pool {pool}")
        if binary is not None:
            self.label += f" (baseline {binary})"
        self.fp = None
        self.skip_reason = None
        self.last_log = ""

    def config_text(self):
        return ferry_config(self.app, self.args.ferry_ports, self.pool,
                            cc=getattr(self.args, "ferry_cc", None))

    def start(self):
        if self.skip_reason:
            raise Skip(self.skip_reason)
        lcores = self.topo.cpu_proxy
        self.fp = FerryProc(self.topo, self.binary, self.config_text(), lcores=lcores,
                            cpus=self.topo.cpu_proxy, ports=self.args.ferry_ports)
        url = f"http://{T.FERRY_IP}:{T.PROXY_PORT}"
        try:
            self._wait_http(url + "/", self.fp.proc, "ferry", timeout=self.args.probe_timeout)
        except RuntimeError:
            raise Skip(NOT_SERVING)
        return Running(url, pids=[self.fp.pid], ferry=self.fp)

    def stop(self):
        if self.fp is not None:
            self.fp.stop()
            self.last_log = self.fp.proc.log_text()
            self.fp = None


def make(name, topo, args):
    return {
        "ferry-local": lambda: Ferry(topo, args, "ferry-local", "http", "local"),
        "ferry-shared": lambda: Ferry(topo, args, "ferry-shared", "http", "shared"),
        "ferry-relay": lambda: Ferry(topo, args, "ferry-relay", "relay"),
        "ferry-base": lambda: Ferry(topo, args, "ferry-base", "http", "local", args.base_bin),
        "haproxy": lambda: Haproxy(topo, args),
        "nginx": lambda: NginxProxy(topo, args),
        "direct": lambda: Direct(topo, args),
    }[name]()
