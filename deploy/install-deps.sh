#!/usr/bin/env bash
# Installs every Debian 12 package ferry needs to build, test, benchmark and
# run its demo. Idempotent; run as root. Used by deploy/quickstart.sh and
# tests/run.sh, so a fresh machine needs nothing installed by hand.
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config
  libdpdk-dev dpdk dpdk-dev libnuma-dev libbpf-dev
  libtomlplusplus-dev libgtest-dev libgmock-dev libbenchmark-dev
  # test bed: namespaces, clients, origin, model checker
  iproute2 iputils-ping iputils-arping nftables procps
  python3 python3-websockets curl wrk nginx-light haproxy spin
  # promtool (test_observability lints the /metrics output with it)
  prometheus
  # open-loop load for the wakeup sweep (perf/bench --wakeup-sweep): h2load
  nghttp2-client
  # benchmark plots (perf/plot.py)
  python3-matplotlib
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
