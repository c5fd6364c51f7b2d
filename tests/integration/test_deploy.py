"""deploy/: the example configurations pass `ferry --check`, deploy/ferry-setup's
--dry-run prints exactly the expected commands for every driver profile and refuses bad
input with a clear message and a non-zero exit, and systemd accepts deploy/ferry.service.
No root, NIC or hugepages needed: nothing here changes the machine (dry-run only)."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from testbed import check, ferry_binary  # noqa: E402

FERRY = ferry_binary()
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(TOP, "deploy")
DRIVERS = os.path.join(TOP, "drivers-config")
SETUP = os.path.join(DEPLOY, "ferry-setup")


def run(args, **kw):
    env = dict(os.environ, FERRY_BIN=FERRY)
    env.pop("FERRY_DRIVERS_DIR", None)
    r = subprocess.run(args, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, env=env, **kw)
    return r.returncode, r.stdout, r.stderr


def setup(*args):
    return run(["bash", SETUP, "--drivers-dir", DRIVERS, *args])


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def port_config(profile, pci=None, iface=None, mbufs=16384, extra=""):
    text = f'[[port]]\nname = "p0"\nprofile = "{profile}"\n'
    if pci:
        text += f'pci = "{pci}"\n'
    if iface:
        text += f'iface = "{iface}"\n'
    return text + f'address = "10.1.0.1/24"\nmbufs = {mbufs}\n' + extra


# 16384 mbufs x 2560 B + 256 MiB = 296 MiB (whole 2M pages).
HUGE_16K = "dpdk-hugepages.py --pagesize 2M --reserve 296M --mount"

# Profile -> (port keys, expected --dry-run output).
PROFILE_CASES = {
    "net_virtio": ({"pci": "0000:00:04.0"},
                   [HUGE_16K, "modprobe vfio-pci",
                    "dpdk-devbind.py --bind=vfio-pci 0000:00:04.0", "udevadm settle"]),
    "net_ixgbe": ({"pci": "0000:03:00.0"},
                  [HUGE_16K, "modprobe vfio-pci",
                   "dpdk-devbind.py --bind=vfio-pci 0000:03:00.0", "udevadm settle"]),
    "net_i40e": ({"pci": "0000:05:00.1"},
                 [HUGE_16K, "modprobe vfio-pci",
                  "dpdk-devbind.py --bind=vfio-pci 0000:05:00.1", "udevadm settle"]),
    "net_ice": ({"pci": "0000:17:00.0"},
                [HUGE_16K, "modprobe vfio-pci",
                 "dpdk-devbind.py --bind=vfio-pci 0000:17:00.0", "udevadm settle"]),
    "net_mlx5": ({"pci": "0000:81:00.0"},
                 [HUGE_16K,
                  "# port p0: 0000:81:00.0 stays on mlx5_core (net_mlx5 is bifurcated, "
                  "binding = none)"]),
    "net_tap": ({"iface": "ferry0"},
                [HUGE_16K, "# port p0: vdev profile net_tap, nothing to bind"]),
    # (an interface that exists: --check looks for it since 2026-12-05)
    "net_af_packet": ({"iface": "lo"},
                      [HUGE_16K, "# port p0: vdev profile net_af_packet, nothing to bind"]),
    "net_af_xdp": ({"iface": "lo"},
                   [HUGE_16K, "# port p0: vdev profile net_af_xdp, nothing to bind"]),
    "net_ferry_packet": ({"iface": "lo"},
                         [HUGE_16K, "# port p0: vdev profile net_ferry_packet, nothing to bind"]),
    "net_memif": ({},
                  [HUGE_16K, "# port p0: vdev profile net_memif, nothing to bind"]),
}

EXAMPLE_CASES = {
    # 2 x 65536 mbufs x 2560 B + 256 MiB = 576 MiB.
    "ferry-2port.toml": ["dpdk-hugepages.py --pagesize 2M --reserve 576M --mount",
                         "modprobe vfio-pci",
                         "dpdk-devbind.py --bind=vfio-pci 0000:03:00.0",
                         "dpdk-devbind.py --bind=vfio-pci 0000:03:00.1",
                         "udevadm settle"],
    # 32768 x 2560 B + 256 MiB = 336 MiB.
    "ferry-1port.toml": ["dpdk-hugepages.py --pagesize 2M --reserve 336M --mount",
                         "modprobe vfio-pci",
                         "dpdk-devbind.py --bind=vfio-pci 0000:00:04.0",
                         "udevadm settle"],
}


def lines(out):
    return out.rstrip("\n").split("\n") if out.strip() else []


def test_examples():
    examples = sorted(glob.glob(os.path.join(DEPLOY, "*.toml")))
    check(len(examples) >= 2, f"deploy/ ships example configs: {examples}")
    for path in examples:
        code, out, err = run([FERRY, "--", "--check", "--config", path,
                              "--drivers-dir", DRIVERS])
        check(code == 0 and "configuration OK" in out,
              f"{os.path.basename(path)} passes ferry --check {err.strip()}")
        name = os.path.basename(path)
        if name in EXAMPLE_CASES:
            code, out, err = setup("--dry-run", "--config", path)
            check(code == 0 and lines(out) == EXAMPLE_CASES[name] and err == "",
                  f"ferry-setup --dry-run {name}: exit {code}\n{out}{err}")
    check(set(EXAMPLE_CASES) <= {os.path.basename(p) for p in examples},
          "every expected example exists")


def test_profiles(tmp):
    shipped = {os.path.basename(p)[:-5] for p in glob.glob(os.path.join(DRIVERS, "*.toml"))}
    check(shipped == set(PROFILE_CASES),
          f"a dry-run case for every shipped profile: {sorted(shipped ^ set(PROFILE_CASES))}")
    for profile, (keys, expected) in PROFILE_CASES.items():
        cfg = write(tmp, f"{profile}.toml", port_config(profile, **keys))
        code, out, err = setup("--dry-run", "--config", cfg)
        check(code == 0 and lines(out) == expected and err == "",
              f"ferry-setup --dry-run, profile {profile}: exit {code}\n{out}{err}")

    # Options that change the hugepage command line.
    cfg = write(tmp, "opts.toml", port_config("net_ixgbe", pci="0000:03:00.0"))
    code, out, err = setup("-n", "-c", cfg, "--pagesize", "1G", "--node", "1",
                           "--user", "nobody")
    uid = subprocess.run(["id", "-u", "nobody"], text=True, stdout=subprocess.PIPE).stdout.strip()
    gid = subprocess.run(["id", "-g", "nobody"], text=True, stdout=subprocess.PIPE).stdout.strip()
    check(code == 0 and lines(out)[:2] == [
        "mkdir -p /run/ferry-hugepages",
        f"dpdk-hugepages.py --pagesize 1G --reserve 1G --node 1 --mount "
        f"--directory /run/ferry-hugepages --user {uid} --group {gid}"],
        f"--pagesize 1G --node 1 --user nobody: {out}{err}")
    code, out, err = setup("-n", "-c", cfg, "--hugepages", "4G")
    check(code == 0 and lines(out)[0] == "dpdk-hugepages.py --pagesize 2M --reserve 4G --mount",
          f"--hugepages 4G: {out}{err}")
    code, out, err = setup("-n", "-c", cfg, "--no-hugepages")
    check(code == 0 and lines(out) == ["modprobe vfio-pci",
                                       "dpdk-devbind.py --bind=vfio-pci 0000:03:00.0",
                                       "udevadm settle"],
          f"--no-hugepages: {out}{err}")
    # Two vfio ports load the module once; a vdev port next to them binds nothing.
    two = port_config("net_i40e", pci="0000:05:00.0") + port_config(
        "net_i40e", pci="0000:05:00.1").replace('"p0"', '"p1"').replace(
        "10.1.0.1/24", "10.2.0.1/24") + port_config("net_tap", iface="t0").replace(
        '"p0"', '"t0"').replace("10.1.0.1/24", "10.3.0.1/24")
    cfg = write(tmp, "three.toml", two)
    code, out, err = setup("-n", "-c", cfg)
    check(code == 0 and lines(out) == [
        # 3 x 16384 x 2560 B + 256 MiB = 376 MiB.
        "dpdk-hugepages.py --pagesize 2M --reserve 376M --mount",
        "modprobe vfio-pci",
        "dpdk-devbind.py --bind=vfio-pci 0000:05:00.0",
        "dpdk-devbind.py --bind=vfio-pci 0000:05:00.1",
        "# port t0: vdev profile net_tap, nothing to bind",
        "udevadm settle"], f"three ports: {out}{err}")


def test_refusals(tmp):
    def refuses(name, args, code_wanted, needles):
        code, out, err = setup(*args)
        check(code == code_wanted and out == "" and all(n in err for n in needles),
              f"{name}: exit {code} (want {code_wanted}), says {needles}: {err.strip()}")

    unknown = write(tmp, "unknown.toml", port_config("net_e1000", pci="0000:03:00.0"))
    refuses("unknown profile", ["-n", "-c", unknown], 1,
            ["does not pass 'ferry --check'", "unknown profile 'net_e1000'", "available:",
             "net_ixgbe", unknown])
    nopci = write(tmp, "nopci.toml", port_config("net_ixgbe"))
    refuses("missing pci address", ["-n", "-c", nopci], 1,
            ["key 'port[0].pci'", "profile 'net_ixgbe' (bus pci) needs 'pci'"])
    badpci = write(tmp, "badpci.toml", port_config("net_ixgbe", pci="03:00.0"))
    refuses("malformed pci address", ["-n", "-c", badpci], 1, ["port[0].pci", "'03:00.0'"])
    vdevpci = write(tmp, "vdevpci.toml", port_config("net_tap", iface="t0",
                                                     pci="0000:03:00.0"))
    refuses("pci on a vdev port", ["-n", "-c", vdevpci], 1, ["'pci' is for pci profiles"])
    syntax = write(tmp, "syntax.toml", "[[port]\n")
    refuses("TOML syntax error", ["-n", "-c", syntax], 1, [syntax + ":1:"])
    refuses("missing config", ["-n", "-c", os.path.join(tmp, "none.toml")], 1,
            ["cannot read configuration", "none.toml"])
    ok = write(tmp, "ok.toml", port_config("net_ixgbe", pci="0000:03:00.0"))
    refuses("unknown option", ["-n", "-c", ok, "--bind"], 2, ["unknown option '--bind'"])
    refuses("option without value", ["-n", "--config"], 2, ["'--config' needs a value"])
    refuses("bad page size", ["-n", "-c", ok, "--pagesize", "4K"], 2, ["2M or 1G", "'4K'"])
    refuses("bad hugepage size", ["-n", "-c", ok, "--hugepages", "lots"], 2, ["'lots'"])
    refuses("bad node", ["-n", "-c", ok, "--node", "x"], 2, ["NUMA node", "'x'"])
    refuses("unknown user", ["-n", "-c", ok, "--user", "no_such_user_ferry"], 1,
            ["no such user 'no_such_user_ferry'"])
    refuses("missing ferry binary", ["-n", "-c", ok, "--ferry", "/nonexistent/ferry"], 1,
            ["'/nonexistent/ferry' not found"])
    code, out, _ = setup("--help")
    check(code == 0 and "--dry-run" in out and "--hugepages" in out, "--help")


def test_unit(tmp):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("skip: systemd-analyze not installed (Debian package systemd): "
              "ferry.service not verified")
        return
    # verify insists that ExecStart= binaries exist: point them at this tree's files;
    # everything else in the unit is checked as shipped.
    with open(os.path.join(DEPLOY, "ferry.service")) as f:
        unit = f.read()
    check("/usr/local/bin/ferry " in unit and "+/usr/local/sbin/ferry-setup " in unit,
          "the unit runs the installed ferry and ferry-setup (as root: '+')")
    for key in ("LimitMEMLOCK=infinity", "Restart=on-failure", "User=ferry",
                "AmbientCapabilities=", "ExecStartPre=+"):
        check(key in unit, f"ferry.service has {key}")
    unit = unit.replace("/usr/local/bin/ferry ", FERRY + " ").replace(
        "/usr/local/sbin/ferry-setup ", SETUP + " ")
    path = write(tmp, "ferry.service", unit)
    r = subprocess.run([analyze, "verify", path], text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    # Only warnings about this unit count (verify also loads unrelated system units).
    mine = [l for l in r.stdout.splitlines() if "ferry.service" in l]
    check(r.returncode == 0 and not mine, f"systemd-analyze verify: exit {r.returncode} {mine}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_examples()
        test_profiles(tmp)
        test_refusals(tmp)
        test_unit(tmp)
    print("all deploy checks passed")


if __name__ == "__main__":
    main()
