#!/usr/bin/env bash
# ferry quickstart, on a fresh Debian 12 machine as root:
#   installs the packages, builds into build/, creates a private network
#   namespace with a demo origin (nginx on 10.77.0.2:8080), starts ferry there
#   on its embedded default (a net_tap NIC, 10.77.0.1/24, an HTTP proxy on port
#   80 in front of the origin), proxies a curl and a 10 s wrk run through it,
#   shows the counters, and cleans up.
#
#   deploy/quickstart.sh          run the demo and stop
#   deploy/quickstart.sh --keep   leave ferry running until Ctrl-C
#
# Nothing leaves the namespace: ferry's tap device is born inside it (ferry
# runs under `ip netns exec`) and every client and the origin run inside too.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
keep=0
[ "${1:-}" = "--keep" ] && keep=1

bash deploy/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build

ns=ferry-demo-$$
prefix=ferry-demo-$$
work=$(mktemp -d /tmp/ferry-demo.XXXXXX)
chmod 755 "$work"  # nginx workers (nobody) read the demo page from here
ferry_pid=
nginx_pid=
lcores=0-1
[ "$(nproc)" -ge 2 ] || lcores=0

cleanup() {
  set +e
  [ -n "$ferry_pid" ] && kill -TERM "$ferry_pid" 2>/dev/null && wait "$ferry_pid"
  [ -n "$nginx_pid" ] && kill -TERM "$nginx_pid" 2>/dev/null && wait "$nginx_pid"
  ip netns del "$ns" 2>/dev/null
  rm -rf "/var/run/dpdk/$prefix" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "network namespace $ns"
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1

step "ferry (lcores $lcores) on its embedded default configuration"
build/app/ferry -- --print-default-config | sed 's/^/    /'
ip netns exec "$ns" build/app/ferry -l "$lcores" --no-huge -m 512 --no-pci \
  --file-prefix "$prefix" -- >"$work/ferry.log" 2>&1 &
ferry_pid=$!
for _ in $(seq 300); do
  grep -q "ferry.app: ready " "$work/ferry.log" && break
  kill -0 "$ferry_pid" 2>/dev/null || { cat "$work/ferry.log"; echo "ferry exited"; exit 1; }
  sleep 0.1
done
grep -q "ferry.app: ready " "$work/ferry.log" || { cat "$work/ferry.log"; echo "ferry not ready"; exit 1; }
grep "ferry\." "$work/ferry.log" | sed 's/^/    /'

# The kernel side of ferry's tap is the demo network: it holds the origin.
ip -n "$ns" addr add 10.77.0.2/24 dev ferry0
ip -n "$ns" link set ferry0 up

step "demo origin: nginx on 10.77.0.2:8080 inside the namespace"
mkdir -p "$work/www"
echo "hello from the ferry demo origin" >"$work/www/index.html"
cat >"$work/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  server { listen 10.77.0.2:8080; root $work/www; }
}
NGINX
ip netns exec "$ns" nginx -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
  ip netns exec "$ns" curl -s -o /dev/null http://10.77.0.2:8080/ && break
  sleep 0.1
done
ip netns exec "$ns" curl -s http://10.77.0.2:8080/ | sed 's/^/    /'

step "curl through ferry: http://10.77.0.1/ (proxied to the origin)"
ip netns exec "$ns" curl -s -i --max-time 10 http://10.77.0.1/ | sed 's/^/    /'
code=$(ip netns exec "$ns" curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://10.77.0.1/)
[ "$code" = 200 ] || { echo "quickstart: proxied request answered $code"; exit 1; }

step "wrk through ferry: 10 s, 50 connections"
ip netns exec "$ns" timeout 30 wrk -t 2 -c 50 -d 10s http://10.77.0.1/ | sed 's/^/    /'

step "telemetry: /ferry/http and /ferry/upstreams"
printf '/ferry/http\n/ferry/upstreams\n' | dpdk-telemetry.py -f "$prefix" | sed 's/^/    /'

step "ping ferry (10.77.0.1) from the namespace"
ip netns exec "$ns" ping -c 5 -i 0.2 10.77.0.1 | sed 's/^/    /'

step "ARP: the namespace's neighbour table holds ferry's MAC"
ip -n "$ns" neigh show 10.77.0.1 | sed 's/^/    /'

step "telemetry: dpdk-telemetry.py -f $prefix"
printf '/ferry/version\n/ferry/ports\n/ferry/lcores\n' | dpdk-telemetry.py -f "$prefix" | sed 's/^/    /'

if [ $keep -eq 1 ]; then
  step "ferry keeps running in namespace $ns (telemetry prefix $prefix); Ctrl-C to stop"
  wait "$ferry_pid"
fi

step "stopping ferry (SIGTERM)"
kill -TERM "$ferry_pid"
rc=0; wait "$ferry_pid" || rc=$?
ferry_pid=
echo "    ferry exited with status $rc"
[ $rc -eq 0 ] || exit 1
echo
echo "quickstart: OK"
