"""Commands, owned processes and cleanup.

Every process the harness starts is registered here and ended by its pid
(SIGTERM, SIGKILL after a timeout); nothing is ever killed by name. SIGTERM and
SIGINT become SystemExit so the `finally` blocks (processes, namespaces,
/var/run/dpdk/<prefix>) always run.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

_owned = []  # Proc objects still running


def _to_exit(signum, frame):
    raise SystemExit(f"terminated by signal {signum}")


def install_signal_handlers():
    signal.signal(signal.SIGTERM, _to_exit)
    signal.signal(signal.SIGINT, _to_exit)
    signal.signal(signal.SIGHUP, _to_exit)


def run(args, check=True, timeout=60, ns=None, **kw):
    """Runs a command (inside namespace ns if given); returns CompletedProcess
    with stdout+stderr as text."""
    if ns is not None:
        args = ["ip", "netns", "exec", ns] + list(args)
    return subprocess.run(list(map(str, args)), check=check, timeout=timeout, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


class Proc:
    """A long-running process we started; .pid is the real program's pid
    (`ip netns exec` and `taskset` exec their command, so no wrapper stays)."""

    def __init__(self, name, args, ns=None, cpus=None, log_path=None, env=None):
        self.name = name
        full = list(map(str, args))
        if cpus is not None:
            full = ["taskset", "-c", str(cpus)] + full
        if ns is not None:
            full = ["ip", "netns", "exec", ns] + full
        self.args = full
        self.log_path = log_path
        self._log = open(log_path, "w") if log_path else subprocess.DEVNULL
        self.popen = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=self._log,
                                      stderr=subprocess.STDOUT, env=env)
        self.pid = self.popen.pid
        _owned.append(self)

    def alive(self):
        return self.popen.poll() is None

    def stop(self, timeout=20):
        """SIGTERM by pid, SIGKILL after timeout; returns the exit code."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self in _owned:
            _owned.remove(self)
        if self._log is not subprocess.DEVNULL:
            self._log.close()
            self._log = subprocess.DEVNULL
        return self.popen.returncode

    def log_text(self):
        if not self.log_path:
            return ""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def stop_all():
    for p in list(reversed(_owned)):
        try:
            p.stop(timeout=10)
        except Exception as e:  # keep cleaning up
            print(f"bench: stopping {p.name} (pid {p.pid}): {e}", file=sys.stderr)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# Namespaces are named like tests/integration/testbed.py's (fy<letter>-<pid>-<n>),
# so either harness removes what a dead run of the other left behind.
NS_RE = re.compile(r"(fy[a-z]-(\d+)-\d+)")


def reap_stale_namespaces():
    out = run(["ip", "netns", "list"], check=False).stdout
    for line in out.splitlines():
        m = NS_RE.match(line)
        if m and not pid_alive(int(m.group(2))):
            run(["ip", "netns", "del", m.group(1)], check=False)
            shutil.rmtree(f"/var/run/dpdk/{m.group(1)}", ignore_errors=True)


def wait_until(pred, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
