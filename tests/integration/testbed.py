"""Test bed for integration tests: the real ferry binary in a private network
namespace.

Every test gets a uniquely named netns (fyt-<pid>-<n>) and a unique EAL
--file-prefix; ferry runs under `ip netns exec`, so its net_tap device is born
inside that namespace and no traffic can leave it. Cleanup always runs (context
manager, SIGTERM from meson's timeout turned into SystemExit): ferry is ended by
its pid, the namespace deleted, /var/run/dpdk/<prefix> removed. Leftovers of a
test process that died hard (SIGKILL) are removed by the next run: namespaces
named after a pid that no longer exists.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77  # meson's "skipped" exit code

FERRY_ADDR = "10.77.0.1"
PEER_ADDR = "10.77.0.2"
TAP_IFACE = "ferry0"

_counter = 0


# Run in a namespace: `conns` parallel connections to the echo service, each
# sending `nbytes` random bytes and reading them back (sha256 compared), then
# one download from the source service; prints
# "echo_ok=<n> errors=[...] source_bytes=<n>". argv: addr echo source nbytes
# conns source_bytes.
ECHO_PORT, SOURCE_PORT = 7, 19


def echo_source_toml(source_bytes):
    """The head of a config for ECHO_SOURCE_CLIENT_PY: conditional wakeup,
    short TIME-WAIT, [tcp_test] echo on ECHO_PORT and a source of
    `source_bytes` on SOURCE_PORT; the test appends its [[port]]."""
    return (f'[ferry]\nwakeup_mode = "conditional"\n\n[tcp]\ntime_wait_ms = 500\n\n'
            f'[tcp_test]\necho_port = {ECHO_PORT}\nsource_port = {SOURCE_PORT}\n'
            f'source_bytes = {source_bytes}\n\n')


ECHO_SOURCE_CLIENT_PY = r"""
import hashlib, os, socket, sys, threading
addr, echo, source, nbytes, conns, source_bytes = sys.argv[1], *map(int, sys.argv[2:])
results, errors = [], []

def one_echo():
    try:
        data = os.urandom(nbytes)
        s = socket.create_connection((addr, echo), timeout=30)
        w = threading.Thread(target=lambda: (s.sendall(data), s.shutdown(socket.SHUT_WR)))
        w.start()
        got = bytearray()
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            got += b
        w.join()
        s.close()
        results.append(hashlib.sha256(data).digest() == hashlib.sha256(got).digest())
    except OSError as e:
        errors.append(repr(e))

ts = [threading.Thread(target=one_echo) for _ in range(conns)]
for t in ts: t.start()
for t in ts: t.join()
s = socket.create_connection((addr, source), timeout=30)
n = 0
while True:
    b = s.recv(1 << 16)
    if not b:
        break
    n += len(b)
s.close()
print(f"echo_ok={sum(results)} errors={errors} source_bytes={n}")
"""


def tap_port_toml(name="tap0", iface=TAP_IFACE, address=FERRY_ADDR):
    """The [[port]] table of a net_tap port most tests run on."""
    return (f'[[port]]\nname = "{name}"\nprofile = "net_tap"\niface = "{iface}"\n'
            f'address = "{address}/24"\n')


def proxy_toml(servers, listener="web", port=8080, upstream="py", upstream_options=""):
    """A [[listener]] on `port` whose default upstream `upstream` has
    `servers` ("addr:port" each), with `upstream_options` (TOML lines) in
    its table."""
    s = "".join(f'  [[upstream.server]]\n  address = "{a}"\n' for a in servers)
    return (f'[[listener]]\nname = "{listener}"\nport = {port}\ndefault_upstream = "{upstream}"\n\n'
            f'[[upstream]]\nname = "{upstream}"\n{upstream_options}{s}\n')


# Legacy ethtool "set" commands (struct ethtool_value through SIOCETHTOOL):
# ethtool is not installed here. ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO.
ETHTOOL_TX, ETHTOOL_TSO, ETHTOOL_GSO = 0x17, 0x1f, 0x24
_ETHTOOL_PY = r"""
import array, fcntl, socket, struct, sys
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    for arg in sys.argv[2:]:
        cmd, on = arg.split("=")
        val = array.array("B", struct.pack("II", int(cmd, 16), int(on)))
        ifr = struct.pack("16sP", sys.argv[1].encode(), val.buffer_info()[0]).ljust(40, b"\0")
        fcntl.ioctl(s.fileno(), 0x8946, ifr)
"""


def ethtool_set(ns, dev, **features):
    """`ethtool -K dev tx|tso|gso on|off` in namespace ns: features maps
    ETHTOOL_* names' suffix (tx, tso, gso) to True/False."""
    cmds = {"tx": ETHTOOL_TX, "tso": ETHTOOL_TSO, "gso": ETHTOOL_GSO}
    ns.run([sys.executable, "-c", _ETHTOOL_PY, dev]
           + [f"{cmds[k]:x}={int(v)}" for k, v in features.items()])


def require_root():
    if os.geteuid() != 0:
        print("SKIP: integration tests need root (network namespaces, DPDK)")
        sys.exit(SKIP)


def _sigterm(signum, frame):
    raise SystemExit(f"terminated by signal {signum}")


signal.signal(signal.SIGTERM, _sigterm)


def run(args, check=True, timeout=60, **kw):
    """Runs a command, returns CompletedProcess with text output."""
    return subprocess.run(args, check=check, timeout=timeout, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reap_stale_namespaces():
    out = run(["ip", "netns", "list"], check=False).stdout
    for line in out.splitlines():
        m = re.match(r"(fy[a-z]-(\d+)-\d+)", line)
        if m and not _pid_alive(int(m.group(2))):
            run(["ip", "netns", "del", m.group(1)], check=False)
            shutil.rmtree(f"/var/run/dpdk/{m.group(1)}", ignore_errors=True)


class Netns:
    """A private network namespace, deleted on exit."""

    def __init__(self, tag="t"):
        global _counter
        _counter += 1
        self.name = f"fy{tag}-{os.getpid()}-{_counter}"

    def __enter__(self):
        reap_stale_namespaces()
        run(["ip", "netns", "add", self.name])
        self.run(["ip", "link", "set", "lo", "up"])
        # No IPv6 chatter (router/neighbour solicitations, MLD) on the tap:
        # counters then show exactly what a test sent.
        self.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        self.run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
        return self

    def run(self, args, check=True, timeout=60, **kw):
        return run(["ip", "netns", "exec", self.name] + list(args), check=check,
                   timeout=timeout, **kw)

    def popen(self, args, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.name] + list(args), **kw)

    def __exit__(self, *exc):
        run(["ip", "netns", "del", self.name], check=False)
        return False


def ferry_binary():
    path = os.environ.get("FERRY_BIN")
    if not path or not os.access(path, os.X_OK):
        print(f"FERRY_BIN not set or not executable: {path!r}")
        sys.exit(1)
    return path


class Ferry:
    """ferry running inside `ns` on a net_tap port.

    lcores: EAL -l list; config: TOML text (None = the embedded default);
    extra_eal: more EAL arguments. The kernel side of the tap gets PEER_ADDR.
    wrapper: a command and its arguments ferry is run under (its pid stays
    ferry's: the wrapper must exec it, as setpriv does).
    """

    def __init__(self, ns, lcores="0-1", config=None, extra_eal=(), extra_args=(),
                 ready_timeout=60, peer_iface=TAP_IFACE, wrapper=()):
        self.ns = ns
        # A command ferry runs under (e.g. setpriv to drop capabilities).
        self.wrapper = list(wrapper)
        self.lcores = lcores
        self.config = config
        self.extra_eal = list(extra_eal)
        self.extra_args = list(extra_args)
        self.ready_timeout = ready_timeout
        # The kernel-side interface that gets PEER_ADDR once ferry is ready
        # (the tap itself, or the far end of a veth ferry's af_packet uses).
        self.peer_iface = peer_iface
        self.prefix = ns.name
        self.proc = None
        self.exit_code = None
        self.tmp = tempfile.mkdtemp(prefix="ferry-test-")
        self.log_path = os.path.join(self.tmp, "ferry.log")

    # -- lifecycle -------------------------------------------------------
    def __enter__(self):
        args = self.wrapper + [ferry_binary(), "-l", self.lcores, "--no-huge", "-m", "512", "--no-pci",
                "--file-prefix", self.prefix] + self.extra_eal + ["--"]
        if self.config is not None:
            cfg = os.path.join(self.tmp, "ferry.toml")
            with open(cfg, "w") as f:
                f.write(self.config)
            args += ["--config", cfg]
        args += self.extra_args
        self.log = open(self.log_path, "w")
        self.proc = self.ns.popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        try:
            self._wait_ready()
            self.ns.run(["ip", "addr", "add", f"{PEER_ADDR}/24", "dev", self.peer_iface])
            self.ns.run(["ip", "link", "set", self.peer_iface, "up"])
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self):
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ferry exited with {self.proc.returncode} before ready:\n"
                                   + self.log_text())
            if "ferry.app: ready " in self.log_text():
                return
            time.sleep(0.1)
        raise RuntimeError("ferry not ready in time:\n" + self.log_text())

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Ends ferry by its pid; returns its exit code (SIGKILL after timeout)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.exit_code = self.proc.returncode
        return self.exit_code

    def __exit__(self, *exc):
        self.stop()
        if hasattr(self, "log"):
            self.log.close()
        if exc[0] is not None:
            sys.stdout.write("---- ferry log ----\n" + self.log_text() + "\n-------------------\n")
        # The log outlives the directory: a test may read what ferry said last.
        self._final_log = self.log_text()
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def log_text(self):
        if getattr(self, "_final_log", None) is not None:
            return self._final_log
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    # -- telemetry -------------------------------------------------------
    def telemetry(self, cmd):
        """Sends one command to DPDK's telemetry socket, returns the JSON value."""
        path = f"/var/run/dpdk/{self.prefix}/dpdk_telemetry.v2"
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(10)
            s.connect(path)
            info = json.loads(s.recv(16384).decode())
            s.send(cmd.encode())
            reply = json.loads(s.recv(info.get("max_output_len", 16384)).decode())
        key = cmd.split(",")[0]
        return reply[key]

    def port(self, name="tap0"):
        return self.telemetry("/ferry/ports")[name]

    def peer_mac(self):
        return self.ns.run(["cat", f"/sys/class/net/{self.peer_iface}/address"]).stdout.strip()


def check(cond, msg):
    """A test assertion that prints what failed and exits non-zero."""
    if not cond:
        raise AssertionError(msg)
    print(f"ok: {msg}")


# -- HTTP helpers shared by the proxy tests ------------------------------------

ORIGIN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "origin.py")


class PyOrigin:
    """origin.py (the scriptable Python HTTP origin) on addr:port inside ns;
    stopped by pid."""

    def __init__(self, ns, addr, port):
        self.ns, self.addr, self.port, self.proc = ns, addr, port, None

    def __enter__(self):
        self.proc = self.ns.popen([sys.executable, ORIGIN_PY, self.addr, str(self.port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(self.proc.stdout.readline().strip() == "listening", "python origin listening")
        return self

    def __exit__(self, *exc):
        stop_pid(self.proc)
        return False


def stop_pid(proc, timeout=10):
    """SIGTERM to our own child, SIGKILL if it lingers."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def curl(ns, *args, timeout=120):
    return ns.run(["curl", "-s", "--max-time", str(timeout - 5), *args], check=False,
                  timeout=timeout)


def status_of(ns, url, *extra, timeout=120):
    return curl(ns, "-o", "/dev/null", "-w", "%{http_code}", *extra, url,
                timeout=timeout).stdout.strip()


def raw_exchange(ns, payload, port=8080, timeout=10, reset_after=None, host=FERRY_ADDR):
    """Sends raw bytes to host:port from inside ns; returns what came back
    until EOF (or the timeout). reset_after: close with RST after that many
    seconds instead of reading."""
    code = f"""
import socket, struct, sys, time
s = socket.create_connection(("{host}", {port}), timeout={timeout})
s.sendall(bytes.fromhex("{payload.hex()}"))
reset = {reset_after!r}
if reset is not None:
    time.sleep(reset)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    sys.exit(0)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
except socket.timeout:
    pass
sys.stdout.write(out.hex())
"""
    r = ns.run([sys.executable, "-c", code], check=False, timeout=timeout + 10)
    if reset_after is not None:
        check(r.returncode == 0, f"client reset after {reset_after} s ({r.stdout.strip()!r})")
        return b""
    return bytes.fromhex(r.stdout.strip() or "")


def wait_for(get, ok, timeout=10.0, interval=0.1):
    """Polls get() until ok(value) or the deadline; returns the last value
    (the caller checks it: a wait on a condition, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    v = get()
    while not ok(v) and time.monotonic() < deadline:
        time.sleep(interval)
        v = get()
    return v


# One log line: "<time> <LEVEL> lcore=<n|-> ferry.<area>: <message>".
_LOG_LINE = re.compile(r"^(\S+Z) ([A-Z]+) lcore=(\S+) (ferry\.[a-z_]+): (.*)$")
_LOGFMT_FIELD = re.compile(r' ([a-z_][a-z0-9_]*)=("(?:[^"\\]|\\.)*"|[^ "=\\]+)')


def _unescape_logfmt(m):
    e = m.group(1)
    return {"n": "\n", "t": "\t"}.get(e) or (chr(int(e[1:], 16)) if len(e) == 3 else e)


def parse_logfmt(message):
    """An event's message, `<words> key=value ...` (docs/OPERATIONS.md "Log lines"),
    as (words, {key: value}); quoted values unescaped. Raises ValueError on
    anything else, so a test that reads events also checks their form."""
    m = re.match(r"^([a-z][a-z0-9_ ]*?)(?= [a-z_][a-z0-9_]*=|$)", message)
    if not m:
        raise ValueError(f"no event words: {message!r}")
    what, rest, fields = m.group(1), message[m.end():], {}
    while rest:
        f = _LOGFMT_FIELD.match(rest)
        if not f:
            raise ValueError(f"not key=value at {rest!r} in {message!r}")
        v = f.group(2)
        if v.startswith('"'):
            v = re.sub(r"\\(x[0-9a-f]{2}|[nt\"\\])", _unescape_logfmt, v[1:-1])
        if f.group(1) in fields:
            raise ValueError(f"{f.group(1)} twice in {message!r}")
        fields[f.group(1)] = v
        rest = rest[f.end():]
    return what, fields


def log_events(text, area):
    """Every line of ferry's log from `area` ("ferry.events"), parsed:
    [(level, lcore, words, fields)]. A line of that area that is not an event
    in logfmt raises ValueError."""
    out = []
    # Whole lines only: the log may be read while ferry writes one.
    for line in text[:text.rfind("\n") + 1].splitlines():
        m = _LOG_LINE.match(line)
        if m and m.group(4) == area:
            out.append((m.group(2), m.group(3)) + parse_logfmt(m.group(5)))
    return out
