#!/usr/bin/env bash
# Peak memory and time of `zstudio` on hostile workspaces (issue 14): each case is built in a
# temporary folder with real links, FIFOs and files, run once under /usr/bin/time, and printed as
# a Markdown table row. The figures are recorded in docs/benchmarks.md.
#
#   scripts/measure-hostile.sh [target/release]   # where zstudio and zibby-test-agent are
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
zstudio="$bin/zstudio"
agent=${AGENT:-"$(realpath "$bin")/zibby-test-agent"}
[ -x "$zstudio" ] && [ -x "$agent" ] || {
  echo "error: build them first: cargo build --release -p zstudio -p zibby-test-agent" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_DATA_HOME="$work/data"

# A workspace with 1,000 ordinary sessions, and one more made hostile by "$@".
workspace() {
  local root="$work/$1"
  local sessions="$root/.zibby/output/sessions"
  mkdir -p "$sessions"
  for i in $(seq 1000 1999); do
    mkdir -p "$sessions/1777678254${i}_ok/plan"
    printf '{"success": true}' >"$sessions/1777678254${i}_ok/result.json"
  done
  mkdir -p "$sessions/1777678253000_bad"
  echo "$root"
}

measure() {
  local what=$1
  shift
  # Each case gets at most $LIMIT seconds and 4 GB of address space (an older studio needs both).
  local code=0
  (ulimit -v 4000000 && /usr/bin/time -o "$work/time" -f "%e %M" timeout -s KILL "${LIMIT:-30}" "$@" \
    <"${STDIN:-/dev/null}" >/dev/null 2>"$work/stderr") || code=$?
  local status seconds kib
  status=$(head -c 160 "$work/stderr" | tr '\n' ' ' | sed "s|$work/[a-z]*/||g")
  [ "$code" = 137 ] && status="killed at the ${LIMIT:-30} s limit"
  grep -q "memory allocation\|out of memory" "$work/stderr" && status="out of memory at the 4 GB limit"
  read -r seconds kib <<<"$(tail -n 1 "$work/time")"
  printf '| %s | %s s | %s MiB | %s |\n' "$what" "$seconds" "$((kib / 1024))" "${status:-ok}"
}

echo "| hostile input | time | peak RSS | what zstudio said |"
echo "|---|---|---|---|"

root=$(workspace zero)
ln -s /dev/zero "$root/.zibby/output/sessions/1777678253000_bad/result.json"
measure 'result.json → /dev/zero, 1,000 other sessions: `sessions`' "$zstudio" sessions --memory -w "$root"

root=$(workspace fifo)
mkfifo "$root/.zibby/output/sessions/1777678253000_bad/.session-info.json"
mkfifo "$root/.zibby/output/sessions/1777678253000_bad/events.json"
measure '.session-info.json and events.json as FIFOs: `sessions`' "$zstudio" sessions --memory -w "$root"
measure 'the same session: `show`' "$zstudio" show 1777678253000_bad -w "$root"

root=$(workspace usr)
ln -s /usr "$root/.zibby/output/sessions/1777678253000_bad/usr"
ln -s /usr "$root/.zibby/output/sessions/1777678253000_bad/nodes"
measure 'links to /usr inside a session: `sessions`' "$zstudio" sessions --memory -w "$root"

root=$(workspace wide)
mkdir -p "$root/.zibby/output/sessions/1777678253000_bad/many"
(cd "$root/.zibby/output/sessions/1777678253000_bad" && seq 1 100000 | sed 's/^/n/' | xargs mkdir -p)
measure 'a session folder with 100,000 folders: `sessions`' "$zstudio" sessions --memory -w "$root"

root=$(workspace linked)
mv "$root/.zibby/output/sessions" "$work/elsewhere"
ln -s "$work/elsewhere" "$root/.zibby/output/sessions"
measure 'the sessions folder a link out: `sessions`' "$zstudio" sessions --memory -w "$root"

root=$(workspace toml)
ln -s /dev/zero "$root/.zibby/studio.toml"
measure '.zibby/studio.toml → /dev/zero: `run --agent`' "$zstudio" run --memory -w "$root" --agent any

root=$(workspace longline)
measure 'a 300 MB output line: `run`' "$zstudio" run --memory -w "$root" -- "$agent" --nodes one:10 --long-line-mb 300

# 80,000 node executions: through a run (a real child printing them) against `parse` of the same.
nodes="$work/nodes.txt"
python3 - "$nodes" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    for i in range(80_000):
        out.write('__WORKFLOW_GRAPH_LOG__{"phase":"node_begin","node":"n%d"}\n┌ n%d\n│ work\n└ done 1ms\n'
                  '__WORKFLOW_GRAPH_LOG__{"phase":"node_end","node":"n%d"}\n' % (i, i, i))
PY
root=$(workspace nodes)
STDIN="$nodes" measure '80,000 node executions: `parse`' "$zstudio" parse
measure '80,000 node executions: `run -- cat`' "$zstudio" run --memory -w "$root" -- cat "$nodes"
