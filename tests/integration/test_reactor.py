"""The reactor on a real port: an idle ferry sleeps (adaptive, the default) instead
of burning its cores, wakes on rx interrupts to answer ping, and the wakeup
mode and idle threshold switch at run time through telemetry."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from testbed import FERRY_ADDR, Ferry, Netns, check, require_root, wait_for  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of every thread of pid, from /proc (seconds)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def lcore_states(f):
    return {k: (v["mode"], v["state"]) for k, v in f.telemetry("/ferry/lcores").items()}


def totals(f):
    lc = f.telemetry("/ferry/lcores")
    keys = ("sleeps", "sleep_ns", "polls", "wakeups_rx", "rx_packets", "spin_yields")
    t = {k: sum(v[k] for v in lc.values()) for k in keys}
    # sleep_ns counts finished sleeps; add the ones in progress.
    t["sleep_ns"] += sum(v["current_sleep_ns"] for v in lc.values())
    return t, lc


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1") as f:
        pid = f.proc.pid
        # Settled once both lcores sleep (start-up work done).
        wait_for(lambda: lcore_states(f),
                 lambda st: len(st) == 2 and all(s == "asleep" for _, s in st.values()))
        _, lc = totals(f)
        for name, v in lc.items():
            check(v["mode"] == "adaptive" and v["can_sleep"] == 1,
                  f"{name}: adaptive mode (the default), can sleep (rx interrupts on net_tap)")
        t0, lc0 = totals(f)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(2.0)
        t1, lc1 = totals(f)
        c1, w1 = cpu_seconds(pid), time.monotonic()
        cpu_pct = 100.0 * (c1 - c0) / (w1 - w0)
        asleep_frac = (t1["sleep_ns"] - t0["sleep_ns"]) / (2 * (w1 - w0) * 1e9)
        idle_polls = t1["polls"] - t0["polls"]
        idle_wakes = sum(lc1[k][w] - lc0[k][w] for k in lc1
                         for w in ("wakeups_rx", "wakeups_doorbell", "wakeups_timer"))
        print(f"idle: ferry used {cpu_pct:.1f}% CPU over {w1 - w0:.1f} s with 2 workers "
              f"(informational: CPU time is no assertion on a shared machine); lcores asleep "
              f"{100 * asleep_frac:.1f}% of the time, {idle_polls} polls, {idle_wakes} wakeups")
        # Counts, not timings: a polling lcore makes ~10^6 polls a second; a
        # sleeping one polls only after a wakeup (a few polls each).
        check(idle_polls < 1000 and idle_polls <= 20 * (idle_wakes + 2),
              f"idle lcores do not poll: {idle_polls} polls for {idle_wakes} wakeups in 2 s")
        check(asleep_frac > 0.8, f"idle lcores spend most of the time asleep ({asleep_frac:.2f})")
        check(all(v["state"] == "asleep" for v in lc1.values()), "both lcores report asleep")

        r = ns.run(["ping", "-c", "20", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        check("20 packets transmitted, 20 received" in r.stdout, "ping answered by sleeping ferry")
        t2, _ = totals(f)
        check(t2["wakeups_rx"] - t1["wakeups_rx"] >= 1,
              f"rx interrupts woke the lcores ({t2['wakeups_rx'] - t1['wakeups_rx']} wakeups)")

        # Runtime switch to poll: no more sleeps, CPU goes up.
        check(f.telemetry("/ferry/wakeup_mode,poll")["wakeup_mode"] == "poll", "mode set to poll")
        # Each lcore leaves its sleep at its next wakeup (rings on the switch).
        wait_for(lambda: lcore_states(f),
                 lambda st: all(m == "poll" and s == "running" for m, s in st.values()))
        p0, _ = totals(f)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(1.5)
        p1, lc = totals(f)
        c1, w1 = cpu_seconds(pid), time.monotonic()
        poll_pct = 100.0 * (c1 - c0) / (w1 - w0)
        print(f"poll mode: ferry used {poll_pct:.1f}% CPU")
        check(p1["sleeps"] == p0["sleeps"], "poll mode: no sleeps")
        check(p1["polls"] - p0["polls"] > 10 * (t1["polls"] - t0["polls"]) + 1000,
              f"poll mode: lcores spin ({p1['polls'] - p0['polls']} polls vs "
              f"{t1['polls'] - t0['polls']} while idle in adaptive mode)")
        check(all(v["mode"] == "poll" and v["state"] == "running" for v in lc.values()),
              "lcores report poll mode, running")
        r = ns.run(["ping", "-c", "5", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        check("5 packets transmitted, 5 received" in r.stdout, "ping answered in poll mode")

        # Spinning with nothing to do, a lcore gives its CPU to whatever else
        # is runnable there every spin_yield_us (default 20): sched_yield
        # calls, counted; at 0 they stop.
        check(p1["spin_yields"] - p0["spin_yields"] > 0,
              f"poll mode: idle lcores yield their CPUs ({p1['spin_yields'] - p0['spin_yields']} "
              f"sched_yield calls in {p1['polls'] - p0['polls']} polls)")
        check(f.telemetry("/ferry/spin_yield_us") == {"spin_yield_us": 20},
              "spin_yield_us: the default 20")
        check(f.telemetry("/ferry/spin_yield_us,0") == {"spin_yield_us": 0}, "spin_yield_us set to 0")
        for bad in ("1000001", "x", "-1"):
            r = f.telemetry(f"/ferry/spin_yield_us,{bad}")
            check(r is not None and r.get("allowed") == "0..1000000" and
                  f.telemetry("/ferry/config")["spin_yield_us"] == 0,
                  f"spin_yield_us {bad!r} refused with the range: {r}")
        # Every lcore has run many iterations since the change before the
        # first reading, and many more before the second.
        y0 = wait_for(lambda: totals(f)[0], lambda t: t["polls"] - p1["polls"] > 20000)
        y1 = wait_for(lambda: totals(f)[0], lambda t: t["polls"] - y0["polls"] > 200000)
        check(y1["spin_yields"] == y0["spin_yields"],
              f"spin_yield_us 0: no sched_yield in {y1['polls'] - y0['polls']} idle polls "
              f"({y1['spin_yields'] - y0['spin_yields']})")
        check(f.telemetry("/ferry/spin_yield_us,20") == {"spin_yield_us": 20},
              "spin_yield_us back to 20")

        # And back: sleeping resumes.
        check(f.telemetry("/ferry/wakeup_mode,conditional")["wakeup_mode"] == "conditional",
              "mode set back to conditional")
        st = wait_for(lambda: lcore_states(f),
                      lambda st: all(m == "conditional" and s == "asleep" for m, s in st.values()))
        check(all(s == "asleep" for _, s in st.values()), f"lcores asleep again: {st}")

        # adaptive: the same sleeping when idle, and the lcores show the
        # policy's state (a wake cost measured at start-up, a spin limit).
        check(f.telemetry("/ferry/wakeup_mode,adaptive")["wakeup_mode"] == "adaptive",
              "mode set to adaptive")
        st = wait_for(lambda: lcore_states(f),
                      lambda st: all(m == "adaptive" and s == "asleep" for m, s in st.values()))
        check(all(m == "adaptive" and s == "asleep" for m, s in st.values()),
              f"adaptive: idle lcores asleep: {st}")
        r = ns.run(["ping", "-c", "5", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        check("5 packets transmitted, 5 received" in r.stdout, "ping answered in adaptive mode")
        lc = f.telemetry("/ferry/lcores")
        shown = {k: (v["wake_cost_ns"], v["sleep_cpu_ns"], v["sleep_price_ns"], v["spin_limit_ns"],
                     v["spin_window_ns"], v["adaptive_gaps"])
                 for k, v in lc.items()}
        check(all(v["wake_cost_ns"] > 0 and v["sleep_cpu_ns"] > 0 and
                  v["sleep_price_ns"] >= v["sleep_cpu_ns"] and v["spin_limit_ns"] >= 20000 and
                  v["spin_window_ns"] <= v["spin_limit_ns"] for v in lc.values()),
              f"adaptive: every lcore shows a wake cost, a sleep's CPU and price, a spin limit "
              f"and its window: {shown}")
        # The latency weight: set at run time, it reprices every lcore's
        # sleep (0: a sleep costs its CPU alone); out of range is refused.
        check(f.telemetry("/ferry/latency_weight_pct")["latency_weight_pct"] == 1000,
              "latency weight: the default 1000")
        check(f.telemetry("/ferry/latency_weight_pct,0")["latency_weight_pct"] == 0,
              "latency weight set to 0")
        r = ns.run(["ping", "-c", "3", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        lc = wait_for(lambda: f.telemetry("/ferry/lcores"),
                      lambda lc: any(v["sleep_price_ns"] == v["sleep_cpu_ns"] for v in lc.values()))
        check(any(v["sleep_price_ns"] == v["sleep_cpu_ns"] for v in lc.values()),
              f"latency weight 0: the pinged lcore prices a sleep at its CPU alone: "
              f"{ {k: (v['sleep_cpu_ns'], v['sleep_price_ns']) for k, v in lc.items()} }")
        for bad in ("10001", "x", "-1"):
            r = f.telemetry(f"/ferry/latency_weight_pct,{bad}")
            check(r is not None and r.get("allowed") == "0..10000" and
                  f.telemetry("/ferry/latency_weight_pct")["latency_weight_pct"] == 0,
                  f"latency weight {bad!r} refused with the range: {r}")
        check(f.telemetry("/ferry/config")["latency_weight_pct"] == 0,
              "/ferry/config shows the live latency weight")
        # The busy window's weight: its own setting, the same range.
        check(f.telemetry("/ferry/busy_latency_weight_pct")["busy_latency_weight_pct"] == 1000,
              "busy latency weight: the default 1000")
        check(f.telemetry("/ferry/busy_latency_weight_pct,50")["busy_latency_weight_pct"] == 50,
              "busy latency weight set to 50")
        r = f.telemetry("/ferry/busy_latency_weight_pct,10001")
        check(r is not None and r.get("allowed") == "0..10000" and
              f.telemetry("/ferry/config")["busy_latency_weight_pct"] == 50 and
              f.telemetry("/ferry/config")["latency_weight_pct"] == 0,
              f"busy latency weight 10001 refused; /ferry/config shows both live weights: {r}")
        check(sum(v["adaptive_gaps"] for v in lc.values()) > 0,
              f"adaptive: the pings' lcore learned from the gaps between them: {shown}")

        check(f.telemetry("/ferry/wakeup_mode,always")["wakeup_mode"] == "always", "mode always")
        r = f.telemetry("/ferry/wakeup_mode,bogus")
        check(r is not None and "error" in r and "adaptive" in r.get("allowed", "") and
              f.telemetry("/ferry/wakeup_mode")["wakeup_mode"] == "always",
              f"an unknown mode is refused with the allowed values: {r}")
        check(f.telemetry("/ferry/wakeup_mode")["wakeup_mode"] == "always", "refusal changed nothing")

        check(f.telemetry("/ferry/idle_threshold_us,500")["idle_threshold_us"] == 500,
              "idle threshold set to 500 us")
        for bad in ("0", "x"):
            r = f.telemetry(f"/ferry/idle_threshold_us,{bad}")
            check(r is not None and r.get("allowed") == "1..1000000" and
                  f.telemetry("/ferry/idle_threshold_us")["idle_threshold_us"] == 500,
                  f"idle threshold {bad!r} refused with the range: {r}")
        cfg = f.telemetry("/ferry/config")
        check(cfg["idle_threshold_us"] == 500 and cfg["wakeup_mode"] == "always",
              "/ferry/config shows the live settings")

        # A sleeping ferry still stops promptly on SIGTERM.
        t = time.monotonic()
        code = f.stop()
        check(code == 0, f"SIGTERM while asleep: exit 0 after {time.monotonic() - t:.2f} s")
    print("test_reactor: all checks passed")


if __name__ == "__main__":
    main()
