"""ferry's command line and configuration errors, on the real binary: --help,
--version, bad options (exit 2), bad configs (exit 1, message names
file:line:column and key), --check on good configs. No root or NIC needed:
these paths end before DPDK starts."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from testbed import check, ferry_binary  # noqa: E402

FERRY = ferry_binary()


def ferry(*args):
    r = subprocess.run([FERRY, *args], text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    return r.returncode, r.stdout, r.stderr


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


GOOD = """\
[ferry]
workers = 2
wakeup_mode = "poll"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
"""


def main():
    code, out, _ = ferry("--help")
    check(code == 0 and "usage: ferry [EAL options] -- [ferry options]" in out, "--help prints usage")
    check("--config FILE" in out and "--drivers-dir" in out and "--check" in out,
          "--help documents every option")
    code, out, _ = ferry("-l", "0", "--", "-h")
    check(code == 0 and "usage:" in out, "-h after -- prints usage without starting DPDK")
    code, out, _ = ferry("--version")
    check(code == 0 and out.startswith("ferry ") and "DPDK 22.11" in out and "DPDK DPDK" not in out, f"--version: {out.strip()}")
    code, out, _ = ferry("--print-default-config")
    check(code == 0 and "[[port]]" in out and "net_tap" in out, "--print-default-config")

    code, _, err = ferry("--", "--bogus")
    check(code == 2 and "unknown option '--bogus'" in err, f"unknown option exits 2: {err.strip()}")
    code, _, err = ferry("--", "--config")
    check(code == 2 and "needs a value" in err, "missing option value exits 2")

    code, out, err = ferry("--", "--check")
    check(code == 0 and "configuration OK" in out, f"--check accepts the embedded default {err}")

    # ferry's options before `--` (issue 19, item 5): one line with the fix,
    # exit 2, before EAL sees them (it printed ~100 lines of its usage, took
    # `-c f.toml` for a bad coremask, or ran the demo configuration).
    for args, fixed in ((["--check", "-c", "f.toml"], "ferry -- --check -c f.toml"),
                        (["-c", "/etc/ferry/ferry.toml"], "ferry -- -c /etc/ferry/ferry.toml"),
                        (["-l", "0", "--config=f.toml", "--no-huge", "--", "-d", "x"],
                         "ferry -l 0 --no-huge -- --config=f.toml -d x")):
        code, out, err = ferry(*args)
        lines = err.strip().splitlines()
        check(code == 2 and len(lines) == 1 and "ferry's options go after '--'" in lines[0]
              and lines[0].endswith(fixed) and out == "",
              f"ferry options before '--' are named with the fix: {args} -> {err.strip()}")

    with tempfile.TemporaryDirectory() as tmp:
        good = write(tmp, "good.toml", GOOD)
        code, out, err = ferry("--", "--check", "--config", good)
        check(code == 0 and "configuration OK" in out and "wakeup_mode: poll" in out,
              f"--check accepts a good file {err}")

        cases = [
            ("syntax", "[ferry\nworkers = 2\n", ":1:"),
            ("bad address", GOOD.replace("10.77.0.1/24", "10.77.0.300/24"), ":9:"),
            ("unknown key", GOOD.replace("workers = 2", "wrokers = 2"), "wrokers"),
            ("bad wakeup mode", GOOD.replace('"poll"', '"nap"'), "wakeup_mode"),
            ("unknown profile", GOOD.replace('"net_tap"', '"net_nosuch"'), "profile"),
        ]
        for name, text, needle in cases:
            path = write(tmp, name.replace(" ", "_") + ".toml", text)
            code, out, err = ferry("--", "--check", "--config", path)
            check(code == 1 and path in err and needle in err,
                  f"{name}: exit {code}, message names the file and {needle!r}: {err.strip()}")

        code, _, err = ferry("--", "--check", "--config", os.path.join(tmp, "missing.toml"))
        check(code == 1 and "missing.toml" in err, f"unreadable config: {err.strip()}")

        # Too many queues for the profile: net_tap offers at most 4.
        many = write(tmp, "many.toml", GOOD.replace("workers = 2", "workers = 8"))
        code, _, err = ferry("--", "--check", "--config", many)
        check(code == 1 and "queue" in err, f"8 workers on net_tap rejected: {err.strip()}")

        start_up_causes(tmp)
    print("test_cli: all checks passed")


def hugepages_free():
    """Free hugepages of every size (EAL takes any)."""
    base = "/sys/kernel/mm/hugepages"
    total = 0
    for d in os.listdir(base) if os.path.isdir(base) else []:
        with open(os.path.join(base, d, "free_hugepages")) as f:
            total += int(f.read())
    return total


def start_up_causes(tmp):
    """Issue 19, item 4: the real cause and its fix, where DPDK said
    "Operation not permitted", "Invalid argument" or "Permission denied".
    Every case ends before EAL starts (or EAL fails at once: no hugepages), so
    nothing is created and no traffic is sent; the last one also runs in a
    private network namespace."""
    eal = ["-l", "0", "--no-pci", "--file-prefix", f"fycli-{os.getpid()}"]
    # An af_packet port on an interface that does not exist: --check says so
    # (it said "configuration OK"), and so does a start.
    nosuch = write(tmp, "nosuch.toml", GOOD.replace('"net_tap"', '"net_af_packet"')
                   .replace('"ferry0"', '"fynosuch0"'))
    code, out, err = ferry("--", "--check", "--config", nosuch)
    check(code == 1 and f"{nosuch}:5:1: key 'port[0].iface'" in err
          and "interface 'fynosuch0' does not exist" in err and "configuration OK" not in out,
          f"--check: a missing af_packet interface, with file:line: {err.strip()}")
    code, _, err = ferry(*eal, "--no-huge", "-m", "512", "--", "--config", nosuch)
    check(code == 1 and "interface 'fynosuch0' does not exist" in err and "EAL:" not in err and "rte_dev_probe" not in err,
          f"start: a missing af_packet interface, before EAL: {err.strip()}")
    if os.geteuid() != 0:
        print("skip: the capability and hugepage cases need root")
        return
    # Without CAP_NET_ADMIN (an unprivileged user): the tap cannot be made.
    r = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                        FERRY, *eal, "--no-huge", "-m", "512"], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    check(r.returncode == 1 and "missing CAP_NET_ADMIN (profile net_tap" in r.stderr
          and "run ferry as root" in r.stderr and "EAL:" not in r.stderr and "initialisation" not in r.stderr,
          f"start as nobody: the missing capability is named: {r.stderr.strip()}")
    # No free hugepages and no --no-huge.
    if hugepages_free() != 0:
        print("skip: this machine has free hugepages; the no-hugepage case needs none")
        return
    ns = f"fycli-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        r = subprocess.run(["ip", "netns", "exec", ns, FERRY, *eal], text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    check(r.returncode == 1 and "no free hugepages" in r.stderr and "--no-huge -m 512" in r.stderr
          and "EAL:" not in r.stderr and "initialisation" not in r.stderr,
          f"start without hugepages: the cause and --no-huge are named: {r.stderr.strip()}")


if __name__ == "__main__":
    main()
