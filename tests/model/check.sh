#!/bin/sh
# Verifies a Promela model exhaustively with spin and reports the outcome as an exit code.
#
#   check.sh [--expect PROPERTY] MODEL.pml [spin -D flags ...]
#
# Runs `spin -a`, compiles pan.c for a full safety search (assertions and invalid end states,
# no partial-order reduction) and runs it, all in a temporary directory. Exit status:
#   0   verified: the whole state space was searched and no property is violated
#   1   a property is violated; a shortest counterexample (breadth-first search) is replayed
#       on stdout. With --expect, the violated assertion must be `!(PROPERTY)`, so a broken
#       variant registered with should_fail cannot "pass" by failing for an unrelated reason
#   99  the check itself failed (tool error, out of memory, search depth too small, or a
#       violation of another kind than expected): meson reports ERROR even with should_fail
set -u

expect=
if [ "${1:-}" = "--expect" ]; then
    expect=$2
    shift 2
fi
[ $# -ge 1 ] || { echo "usage: $0 [--expect PROPERTY] MODEL.pml [-DNAME ...]" >&2; exit 99; }
model=$1
shift
SPIN=${SPIN:-spin}
CC=${CC:-cc}

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$model" "$tmp/model.pml" || exit 99
cd "$tmp" || exit 99

echo "== $SPIN -a $* $(basename "$model")"
"$SPIN" -a "$@" model.pml >spin.log 2>&1 || { cat spin.log; exit 99; }
# -DSAFETY: safety properties only (assertions, invalid end states); -DNOREDUCE: explore
# every interleaving (the models are small enough, and it leaves no doubt about `timeout`).
"$CC" -O2 -w -DSAFETY -DNOREDUCE -o pan pan.c >cc.log 2>&1 || { cat cc.log; exit 99; }
# -m: search depth limit (the models reach a few hundred); -w22: 4M-slot hash table.
./pan -m100000 -w22 >pan.log 2>&1
cat pan.log

grep -q "errors: [0-9]" pan.log || { echo "check.sh: pan did not finish"; exit 99; }
if grep -qE "depth too small|out of memory" pan.log; then
    echo "check.sh: incomplete search"
    exit 99
fi
if grep -q "errors: 0" pan.log; then
    echo "check.sh: verified"
    exit 0
fi

# Re-run breadth-first: the same state space, but the trail it writes is a shortest
# counterexample, which is the one worth reading. Its verdict is the one reported.
"$CC" -O2 -w -DSAFETY -DNOREDUCE -DBFS -o pan pan.c >cc.log 2>&1 || { cat cc.log; exit 99; }
rm -f model.pml.trail
./pan -m100000 -w22 >bfs.log 2>&1
grep -E "^pan:[0-9]+: " bfs.log
[ -f model.pml.trail ] || { cat bfs.log; echo "check.sh: no counterexample trail"; exit 99; }
echo "== shortest counterexample: $SPIN -t $* (spin -t -p for every step):"
"$SPIN" -t "$@" model.pml 2>&1
violated=$(sed -n 's/^pan:[0-9]*: assertion violated *!(\([A-Za-z_0-9]*\)).*/\1/p' bfs.log | head -n 1)
if grep -qE "^pan:[0-9]+: invalid end state" bfs.log; then
    violated=invalid_end_state
fi
echo "check.sh: violated: ${violated:-unknown}"
if [ -n "$expect" ] && [ "$violated" != "$expect" ]; then
    echo "check.sh: expected a violation of $expect"
    exit 99
fi
exit 1
