"""Foundation acceptance: ferry on 2 lcores in a private namespace answers ping
and ARP, drops malformed frames with the right counter, keeps answering, shows
its commands on the telemetry socket, and exits 0 on SIGTERM."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import frames  # noqa: E402
from testbed import (wait_for, FERRY_ADDR, TAP_IFACE, Ferry, Netns, check, require_root,  # noqa: E402
                     log_events, run)

HERE = os.path.dirname(os.path.abspath(__file__))


def net_totals(f):
    return f.port()


def main():
    require_root()
    with Netns() as ns, Ferry(ns, lcores="0-1") as f:
        port = f.port()
        check(port["queues"] == 2, "ferry runs 2 queue pairs (2 lcores): %s" % port["queues"])
        lcores = f.telemetry("/ferry/lcores")
        check(len(lcores) == 2, f"/ferry/lcores lists 2 workers: {sorted(lcores)}")
        mac = port["mac"].lower()

        r = ns.run(["ping", "-c", "20", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        print(r.stdout)
        check("20 packets transmitted, 20 received" in r.stdout, "ping -c 20: 20 replies")

        r = ns.run(["arping", "-c", "3", "-w", "5", "-I", TAP_IFACE, FERRY_ADDR], check=False)
        print(r.stdout)
        check(r.returncode == 0 and "Received 3 response" in r.stdout, "arping: 3 replies")
        check(mac.upper() in r.stdout.upper(), f"arping replies come from ferry's MAC {mac}")
        neigh = ns.run(["ip", "neigh", "show", FERRY_ADDR]).stdout
        check(mac in neigh.lower(), f"kernel ARP cache has ferry's MAC: {neigh.strip()}")

        port = f.port()
        check(port["arp_requests_answered"] >= 3, "ARP requests answered are counted")
        check(port["icmp_echo_replied"] >= 20, "echo replies are counted")
        check(port["neigh_learned"] >= 1, "ferry learned the kernel's MAC from its ARP request")

        # Malformed frames: each kind is dropped and counted under its own name.
        inject = os.path.join(HERE, "frames.py")
        n = 7
        for kind, (_, counter) in frames.KINDS.items():
            if kind == "good_echo":
                continue
            before = f.port()[counter]
            ns.run([sys.executable, inject, TAP_IFACE, mac, kind, str(n)])
            deadline = time.monotonic() + 5
            after = before
            while time.monotonic() < deadline:
                after = f.port()[counter]
                if after - before >= n:
                    break
                time.sleep(0.05)
            check(after - before == n, f"{kind}: {counter} grew by {after - before}, expected {n}")

        # A well-formed echo built the same way gets its reply counted.
        before = f.port()["icmp_echo_replied"]
        ns.run([sys.executable, inject, TAP_IFACE, mac, "good_echo", "5"])
        time.sleep(0.3)
        check(f.port()["icmp_echo_replied"] - before == 5, "crafted good echo requests answered")

        # Fragments (RFC 1122 §3.3.2): on net_tap nothing reassembles for
        # ferry; each echo of 1000 bytes in three fragments gets one reply.
        before = f.port()
        ns.run([sys.executable, inject, TAP_IFACE, mac, "fragmented_echo", "4"])
        after = wait_for(f.port, lambda p: p["icmp_echo_replied"] - before["icmp_echo_replied"] >= 4,
                         timeout=5)
        check(after["ipv4_frag_rx"] - before["ipv4_frag_rx"] == 12 and
              after["ipv4_frag_reassembled"] - before["ipv4_frag_reassembled"] == 4 and
              after["icmp_echo_replied"] - before["icmp_echo_replied"] == 4,
              "fragmented echo requests reassembled and answered (12 fragments, 4 replies)")

        r = ns.run(["ping", "-c", "5", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        check("5 packets transmitted, 5 received" in r.stdout,
              "still answering ping after the malformed frames")

        # dpdk-telemetry.py works unchanged against ferry's socket.
        r = run(["dpdk-telemetry.py", "-f", f.prefix], input="/\n/ferry/ports\n", check=False)
        check("/ferry/ports" in r.stdout and "/ferry/net" in r.stdout,
              "dpdk-telemetry.py lists /ferry/* commands")
        check('"cap_rx_interrupts"' in r.stdout, "dpdk-telemetry.py shows /ferry/ports capabilities")

        # SIGHUP reloads the configuration; on the embedded default there is
        # no file to re-read: refused and logged, and it must not end ferry
        # (its default action would, dropping every connection).
        f.proc.send_signal(signal.SIGHUP)
        def hup():
            return [(lvl, fl) for lvl, _, w, fl in log_events(f.log_text(), "ferry.app")
                    if w == "reload refused"]
        ok = wait_for(hup, bool, timeout=10)
        check(len(ok) == 1 and ok[0][0] == "ERROR" and ok[0][1]["result"] == "refused"
              and "embedded default" in ok[0][1]["error"] and f.proc.poll() is None,
              f"SIGHUP on the embedded default: the reload is refused and logged with time, "
              f"level and lcore, ferry runs on: {ok}")
        r = ns.run(["ping", "-c", "3", "-i", "0.05", "-W", "2", FERRY_ADDR], check=False)
        check("3 packets transmitted, 3 received" in r.stdout, "still answering ping after SIGHUP")

        code = f.stop()
        check(code == 0, f"ferry exits 0 on SIGTERM (got {code})")
        log = f.log_text()
        check("All rt-signals are in use" in log,
              "net_tap found no free realtime signal (the rx signal fix is active)")
    print("test_ping: all checks passed")


if __name__ == "__main__":
    main()
