"""The benchmark topology: three network namespaces joined by veth pairs.

    client ns (wrk, CPU 0)           proxy ns (proxy, CPU 1)            origin ns (nginx, CPU 0)
    cp0 10.81.1.1  ============  pc0 10.81.1.2   [haproxy, nginx]
                                 po0 10.81.2.1  ============  op0 10.81.2.2
    cf0 10.81.4.1  ============  fc0 (no kernel address: ferry's port "cli",
                                      10.81.4.2, af_packet or bridged tap)
                                 fo0 (ferry's port "org", 10.81.5.2)  ==  of0 10.81.5.1
    co0 10.81.3.1  =========================================================  oc0 10.81.3.2
                                                                              (direct, no proxy)

The kernel proxies listen on 10.81.1.2:8080 and reach the origin at
10.81.2.2:80. ferry owns two veths of its own, so the proxy namespace's kernel
never sees (or answers) its traffic: fc0/fo0 carry no kernel address and IPv6
is off. Their far ends (cf0, of0) have tx checksum offload turned off: a veth
peer otherwise hands af_packet frames with an unfilled TCP checksum
(drivers-config/net_af_packet.toml, caveats); unless every ferry port of the run
is net_ferry_packet, which takes those and GSO frames: then they keep it. The kernel-to-kernel veths keep
their offloads (that is how a kernel proxy really runs).

With --ferry-ports tap ferry's ports are net_tap devices ft0/ft1 born in the
proxy namespace; the harness bridges ft0 with fc0 and ft1 with fo0 after ferry
is ready, so the addresses and the path of the packets stay the same.

Nothing is routed anywhere else: the namespaces have no default route and all
traffic stays between them.
"""

import os
import shutil
import sys
import tempfile

from . import util

CLIENT_IP = "10.81.1.1"
PROXY_IP = "10.81.1.2"       # kernel proxies listen here
PROXY_UP_IP = "10.81.2.1"
ORIGIN_IP = "10.81.2.2"      # origin as the kernel proxies see it
DIRECT_CLIENT_IP = "10.81.3.1"
DIRECT_ORIGIN_IP = "10.81.3.2"
FERRY_CLIENT_SIDE_PEER = "10.81.4.1"  # cf0 in the client ns
FERRY_IP = "10.81.4.2"                # ferry's listener
FERRY_UP_IP = "10.81.5.2"             # ferry's upstream-side address
FERRY_ORIGIN_IP = "10.81.5.1"         # origin as ferry sees it (of0)
PROXY_PORT = 8080

ORIGIN_SMALL_BODY = b"ok\n"      # 3 bytes, served at /
ORIGIN_4K_BODY = bytes((i * 7 + 13) % 94 + 33 for i in range(4096))  # /4k
BODIES = {"3b": "/", "4k": "/4k"}


def cpus():
    """(client+origin CPU, proxy CPU). With one CPU everything shares CPU 0."""
    n = os.cpu_count() or 1
    return ("0", "1") if n >= 2 else ("0", "0")


ORIGIN_CONF = """\
daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid {work}/origin.pid;
error_log {work}/origin-error.log warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  server {{
    listen 80 backlog=4096 reuseport;
    root {work}/www;
    location = / {{ try_files /index.html =404; }}
  }}
}}
"""


# Legacy ethtool "set" commands through SIOCETHTOOL (struct ethtool_value with
# data 0: the feature off), for machines without ethtool (it is not in
# deploy/install-deps.sh). argv: the device, then the commands in hex. A set
# the kernel refuses is fine when the feature already reads off (its "get" is
# the set command minus one): a veth whose peer runs an XDP program (af_xdp)
# has its segmentation forced off and refuses to be told so.
_ETHTOOL_OFF_PY = r"""
import array, fcntl, socket, struct, sys
def ioctl(s, cmd):
    val = array.array("B", struct.pack("II", cmd, 0))
    ifr = struct.pack("16sP", sys.argv[1].encode(), val.buffer_info()[0]).ljust(40, b"\0")
    fcntl.ioctl(s.fileno(), 0x8946, ifr)
    return struct.unpack("II", val.tobytes())[1]
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    for cmd in sys.argv[2:]:
        try:
            ioctl(s, int(cmd, 16))
        except OSError:
            if ioctl(s, int(cmd, 16) - 1) != 0:
                raise
"""
ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO = 0x17, 0x1f, 0x24
_ETHTOOL_K = {ETHTOOL_STXCSUM: "tx", ETHTOOL_STSO: "tso", ETHTOOL_SGSO: "gso"}


def ethtool_off(ns, dev, cmds):
    """`ethtool -K dev <feature> off` for each ETHTOOL_S* command in cmds, in
    namespace ns (a name; None: this one)."""
    if shutil.which("ethtool"):
        util.run(["ethtool", "-K", dev] + [w for c in cmds for w in (_ETHTOOL_K[c], "off")],
                 ns=ns)
    else:
        util.run([sys.executable, "-c", _ETHTOOL_OFF_PY, dev] + [hex(c) for c in cmds], ns=ns)


def tx_checksum_off(ns, dev):
    ethtool_off(ns, dev, [ETHTOOL_STXCSUM])


class Topology:
    def __init__(self, keep_workdir=False, ferry_ports=("af_packet",), kernel_cc=None):
        # ferry's port kinds in this run: with only net_ferry_packet ports
        # (which take a veth's unfilled checksums and GSO frames), cf0 and of0
        # keep their offloads, as the kernel proxies' veths do.
        self.peers_offload = all(p == "ferry_packet" for p in ferry_ports)
        pid = os.getpid()
        self.client = f"fyc-{pid}-1"
        self.proxy = f"fyp-{pid}-2"
        self.origin = f"fyo-{pid}-3"
        self.cpu_client, self.cpu_proxy = cpus()
        self.work = tempfile.mkdtemp(prefix="ferry-bench-")
        os.chmod(self.work, 0o755)  # origin nginx workers (nobody) read www/
        self.keep_workdir = keep_workdir
        self.origin_proc = None
        self._made = []
        # The kernel endpoints' congestion control (HAProxy's, nginx's, the
        # origin's, the client's), set per namespace before any socket opens
        # (a listener's accepted sockets keep the default of its creation).
        # None: the host's.
        self.kernel_cc = kernel_cc

    # -- lifecycle ----------------------------------------------------
    def __enter__(self):
        util.reap_stale_namespaces()
        try:
            self._build()
            self._start_origin()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.origin_proc is not None:
            self.origin_proc.stop()
            self.origin_proc = None
        for ns in reversed(self._made):
            util.run(["ip", "netns", "del", ns], check=False)
        self._made = []
        if not self.keep_workdir:
            shutil.rmtree(self.work, ignore_errors=True)
        return False

    def _ns(self, name):
        util.run(["ip", "netns", "add", name])
        self._made.append(name)
        util.run(["ip", "link", "set", "lo", "up"], ns=name)
        util.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], ns=name, check=False)
        util.run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], ns=name, check=False)
        # Room for 200 connections x a few runs of TIME_WAIT and fast reuse.
        util.run(["sysctl", "-qw", "net.ipv4.ip_local_port_range=10000 60999"], ns=name,
                 check=False)
        util.run(["sysctl", "-qw", "net.ipv4.tcp_tw_reuse=1"], ns=name, check=False)
        if self.kernel_cc:
            r = util.run(["sysctl", "-qw", f"net.ipv4.tcp_congestion_control={self.kernel_cc}"],
                         ns=name, check=False)
            if r.returncode != 0:
                # Only the initial namespace may pick a restricted algorithm.
                raise RuntimeError(
                    f"--kernel-cc {self.kernel_cc}: a namespace may only take an algorithm in "
                    "net.ipv4.tcp_allowed_congestion_control (Debian's default allows cubic; "
                    "a host defaulting to bbr may need it added there)")

    def _veth(self, ns_a, a, addr_a, ns_b, b, addr_b):
        util.run(["ip", "-n", ns_a, "link", "add", a, "type", "veth", "peer", "name", b,
                  "netns", ns_b])
        for ns, dev, addr in ((ns_a, a, addr_a), (ns_b, b, addr_b)):
            if addr:
                util.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            util.run(["ip", "-n", ns, "link", "set", dev, "up"])

    def _build(self):
        for ns in (self.client, self.proxy, self.origin):
            self._ns(ns)
        self._veth(self.client, "cp0", CLIENT_IP, self.proxy, "pc0", PROXY_IP)
        self._veth(self.proxy, "po0", PROXY_UP_IP, self.origin, "op0", ORIGIN_IP)
        self._veth(self.client, "co0", DIRECT_CLIENT_IP, self.origin, "oc0", DIRECT_ORIGIN_IP)
        self._veth(self.client, "cf0", FERRY_CLIENT_SIDE_PEER, self.proxy, "fc0", None)
        self._veth(self.proxy, "fo0", None, self.origin, "of0", FERRY_ORIGIN_IP)
        if not self.peers_offload:
            for ns, dev in ((self.client, "cf0"), (self.origin, "of0")):
                tx_checksum_off(ns, dev)
        # Only for the opt-in ferry-relay system (see systems.py): the client
        # namespace routes between ferry's client-side subnet and the direct
        # link to the origin. Local traffic of the other systems is unaffected.
        util.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], ns=self.client)
        util.run(["ip", "route", "add", "10.81.4.0/24", "via", DIRECT_CLIENT_IP], ns=self.origin)

    def _start_origin(self):
        www = os.path.join(self.work, "www")
        os.makedirs(www)
        with open(os.path.join(www, "index.html"), "wb") as f:
            f.write(ORIGIN_SMALL_BODY)
        with open(os.path.join(www, "4k"), "wb") as f:
            f.write(ORIGIN_4K_BODY)
        for p in (www, os.path.join(www, "index.html"), os.path.join(www, "4k")):
            os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
        conf = os.path.join(self.work, "origin.conf")
        with open(conf, "w") as f:
            f.write(ORIGIN_CONF.format(work=self.work))
        self.origin_proc = util.Proc(
            "origin nginx", ["nginx", "-c", conf, "-e", os.path.join(self.work, "origin-error.log")],
            ns=self.origin, cpus=self.cpu_client, log_path=os.path.join(self.work, "origin.log"))
        for ip in (DIRECT_ORIGIN_IP,):
            ok = util.wait_until(lambda: self.probe(self.client, f"http://{ip}/") == ORIGIN_SMALL_BODY, 10)
            if not ok:
                raise RuntimeError("origin nginx not answering:\n" + self.origin_proc.log_text())

    # -- helpers ------------------------------------------------------
    def probe(self, ns, url, timeout=3):
        """One GET with curl inside ns; the body (bytes) or None."""
        import subprocess
        try:
            r = subprocess.run(["ip", "netns", "exec", ns, "curl", "-sf", "--max-time",
                                str(timeout), "-o", "-", url],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            return None
        return r.stdout if r.returncode == 0 else None

    def origin_pids(self):
        return [self.origin_proc.pid] if self.origin_proc else []

    def describe(self):
        return {
            "namespaces": {"client": self.client, "proxy": self.proxy, "origin": self.origin},
            "cpus": {"wrk": self.cpu_client, "origin": self.cpu_client, "proxy": self.cpu_proxy},
            "kernel_proxy_listen": f"{PROXY_IP}:{PROXY_PORT}",
            "kernel_proxy_upstream": f"{ORIGIN_IP}:80",
            "ferry_listen": f"{FERRY_IP}:{PROXY_PORT}",
            "ferry_upstream": f"{FERRY_ORIGIN_IP}:80",
            "direct": f"{DIRECT_ORIGIN_IP}:80",
            "bodies": {k: {"path": v, "bytes": len(ORIGIN_SMALL_BODY if k == "3b" else ORIGIN_4K_BODY)}
                       for k, v in BODIES.items()},
            "links": "veth pairs; ferry's far ends (cf0, of0) with "
                     + ("their offloads (ferry_packet ports)" if self.peers_offload
                        else "tx checksum offload off"),
        }

    # -- ferry on net_tap: bridge its taps onto its veths ---------------
    def bridge_taps(self, pairs):
        """pairs: [(bridge, veth, tap)] in the proxy ns, after ferry created the taps.

        net_tap gives ferry the kernel-side tap's MAC: the bridge would take
        that address as its own port's (a permanent local fdb entry) and keep
        frames for ferry to itself. So the kernel side gets another MAC first.
        """
        for i, (br, veth, tap) in enumerate(pairs):
            util.run(["ip", "-n", self.proxy, "link", "set", tap, "address",
                      f"02:81:00:00:00:{i + 1:02x}"])
            util.run(["ip", "-n", self.proxy, "link", "add", "name", br, "type", "bridge",
                      "stp_state", "0", "forward_delay", "0"])
            for dev in (veth, tap):
                util.run(["ip", "-n", self.proxy, "link", "set", dev, "master", br])
                util.run(["ip", "-n", self.proxy, "link", "set", dev, "up"])
            util.run(["ip", "-n", self.proxy, "link", "set", br, "up"])
        # ferry's gratuitous ARP went out before the bridge existed: a client
        # or origin that knew an earlier ferry (another group of the same
        # run: each net_tap gets a new MAC) would keep sending to that MAC,
        # which the bridge floods and ferry drops, until its neighbour entry
        # expires. They ask again instead.
        for ns in (self.client, self.origin):
            util.run(["ip", "-n", ns, "neigh", "flush", "all"], check=False)

    def unbridge(self, bridges):
        for br in bridges:
            util.run(["ip", "-n", self.proxy, "link", "del", br], check=False)
