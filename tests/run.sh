#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): installs what is needed,
# builds a normal and an ASan+UBSan build, runs every suite in both, prints a
# summary line, and exits non-zero if anything failed. Run as root on Debian 12.
#
#   FERRY_JOBS=N   ninja parallelism (default: nproc)
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

bash deploy/install-deps.sh || exit 1

jobs=${FERRY_JOBS:-$(nproc)}
start=$(date +%s)
status=0

build() {  # dir, meson options...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" || return 1
  fi
  ninja -C "$dir" -j "$jobs" || return 1
}

# suite runner: dir, suite, extra meson test args...
passed=0; failed=0; skipped=0
run_suite() {
  local dir=$1 suite=$2; shift 2
  echo "=== $(basename "$dir"): suite $suite ($(( $(date +%s) - start )) s elapsed)"
  meson test -C "$dir" --suite "$suite" --print-errorlogs --no-rebuild "$@"
  local rc=$?
  # Count per-test outcomes from meson's JSON log of this run.
  local counts
  counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
  read -r p f s <<<"$counts"
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  [ $rc -eq 0 ] || status=1
}

if ! build build --buildtype=debugoptimized; then
  echo "BUILD FAILED: build"; exit 1
fi
run_suite build unit
run_suite build model
run_suite build fuzz-smoke
run_suite build integration --num-processes 1

# ASan+UBSan: unit, fuzz-smoke and integration (the model suite does not depend on the build).
if ! build build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dperf=false; then
  echo "BUILD FAILED: build-asan"; exit 1
fi
run_suite build-asan unit
run_suite build-asan fuzz-smoke
# Under ASan everything runs several times slower: the same integration tests
# with smaller volumes (the normal build above runs the full ones).
export FERRY_TCP2_BIG_MIB=128 FERRY_TCP2_CHURN=10000 FERRY_HTTP_BIG_MIB=20 FERRY_HTTP_WRK_S=5
run_suite build-asan integration --num-processes 1

echo "tests/run.sh finished in $(( $(date +%s) - start )) s"
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
exit $status
