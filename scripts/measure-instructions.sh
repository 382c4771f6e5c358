#!/usr/bin/env bash
# Before and after a refactor, in instructions rather than seconds: each workload runs once per
# build under valgrind's cachegrind (no cache simulation), which counts the instructions the
# studio's process executes. The count is the same whatever else the machine is doing, so a
# shared, loaded machine can still say whether a change made the work bigger. Children (the
# keeper, the test agent, `cat`) run natively and are not counted. Prints one Markdown row per
# workload: before, after, after / before.
#
#   scripts/measure-instructions.sh BEFORE_CHECKOUT AFTER_CHECKOUT
#   ONLY="compare nodes" scripts/measure-instructions.sh …   # some of the workloads
#
# Each checkout must hold release builds:
#   cargo build --release -p studio-core --benches && cargo build --release -p zstudio -p zibby-test-agent
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
command -v valgrind >/dev/null || { echo "error: valgrind is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_DATA_HOME="$work/data"

# The newest build of bench NAME in CHECKOUT.
bench() {
  local found
  found=$(ls -t "$1"/target/release/deps/"$2"-* 2>/dev/null | grep -v '\.d$' | head -1)
  [ -x "$found" ] || { echo "error: no release build of bench $2 in $1" >&2; exit 1; }
  echo "$found"
}

# Instructions executed by "$@": its own process, and with TRACE_CHILDREN=yes its children too
# (the compare benchmark runs each case in a process of its own), summed.
instructions() {
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    --trace-children="${TRACE_CHILDREN:-no}" "$@" \
    >/dev/null 2>"$work/valgrind" </dev/null || {
    echo "error: $* failed:" >&2
    tail -20 "$work/valgrind" >&2
    exit 1
  }
  grep -E '^==[0-9]+== I *refs:' "$work/valgrind" | awk '{gsub(",", "", $NF); sum += $NF} END {printf "%d\n", sum}'
}

row() {
  local what=$1 b=$2 a=$3
  printf '| %s | %s | %s | %s |\n' "$what" "$(printf "%'d" "$b")" "$(printf "%'d" "$a")" \
    "$(python3 -c "print(f'{$a / $b:.3f}')")"
}

# The node executions of measure-hostile.sh (20,000 here, not 80,000: valgrind is slow), through
# `run -- cat`.
nodes="$work/nodes.txt"
python3 - "$nodes" <<'PY'
import sys
NODES = 20_000
with open(sys.argv[1], "w") as out:
    for i in range(NODES):
        out.write('__WORKFLOW_GRAPH_LOG__{"phase":"node_begin","node":"n%d"}\n┌ n%d\n│ work\n└ done 1ms\n'
                  '__WORKFLOW_GRAPH_LOG__{"phase":"node_end","node":"n%d"}\n' % (i, i, i))
PY

echo "| workload | before (instructions) | after | after / before |"
echo "|---|---|---|---|"
for spec in \
  "session_listing:BENCH_SESSIONS=2000" \
  "compare:BENCH_MB=10 TRACE_CHILDREN=yes" \
  "protocol_throughput:BENCH_MB=5" \
  "store:BENCH_LINES=50000 BENCH_SESSIONS=2000" \
  "runner:BENCH_MARKERS=500 BENCH_FLOOD_MB=5"; do
  name=${spec%%:*}
  vars=${spec#*:}
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  # Before and after side by side (valgrind runs a process on one core).
  # shellcheck disable=SC2086
  (mkdir -p "$work/b" && cd "$work/b" && export $vars XDG_DATA_HOME=$work/b/data && work=$work/b &&
    instructions "$(bench "$before" "$name")" --bench >count) &
  running_before=$!
  # shellcheck disable=SC2086
  (mkdir -p "$work/a" && cd "$work/a" && export $vars XDG_DATA_HOME=$work/a/data && work=$work/a &&
    instructions "$(bench "$after" "$name")" --bench >count) &
  running_after=$!
  # A side that failed stops the script (its error is on stderr), never a row with no count.
  wait "$running_before" && wait "$running_after"
  row "\`$name\` ($vars)" "$(cat "$work/b/count")" "$(cat "$work/a/count")"
done
if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" nodes "* ]]; then exit 0; fi
for side in before after; do
  root="$work/ws-$side/repo"
  mkdir -p "$root/.zibby/output/sessions"
done
b=$(instructions "$before/target/release/zstudio" run --memory -w "$work/ws-before/repo" -- cat "$nodes")
a=$(instructions "$after/target/release/zstudio" run --memory -w "$work/ws-after/repo" -- cat "$nodes")
row '20,000 node executions: `zstudio run -- cat`' "$b" "$a"
