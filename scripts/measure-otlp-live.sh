#!/usr/bin/env bash
# Issue 45's CPU target: 80,000 node executions exported live add at most 5 % to the run's CPU
# time in the studio. `zstudio run -- cat FILE` of 80,000 executions (a real child printing
# them, as in measure-hostile.sh), alternately without an endpoint (the baseline) and with
# OTEL_EXPORTER_OTLP_ENDPOINT set to a loopback collector that takes every request (a Python
# sink in its own process: its CPU is not the studio's). The CPU time (user + system) of
# `zstudio run` and its children under /usr/bin/time; the median of each, their ratio, and the
# machine's load. A live run that lost spans says so on stderr: it is counted and printed.
#
#   scripts/measure-otlp-live.sh [target/release] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
runs=${2:-5}
zstudio="$bin/zstudio"
[ -x "$zstudio" ] || {
  echo "error: build it first: cargo build --release -p zstudio" >&2
  exit 1
}
work=$(mktemp -d)
sink_pid=
trap '[ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null; rm -rf "$work"' EXIT
export XDG_DATA_HOME="$work/data"
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT

nodes="$work/nodes.txt"
python3 - "$nodes" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    for i in range(80_000):
        out.write('__WORKFLOW_GRAPH_LOG__{"phase":"node_begin","node":"n%d"}\n┌ n%d\n│ work\n└ done 1ms\n'
                  '__WORKFLOW_GRAPH_LOG__{"phase":"node_end","node":"n%d"}\n' % (i, i, i))
PY

# A collector that takes every request (200, an empty body) and counts the bytes it was sent.
port_file="$work/port"
python3 - "$port_file" "$work/received" <<'PY' &
import http.server, sys
received = [0]
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        received[0] += len(self.rfile.read(int(self.headers["content-length"])))
        with open(sys.argv[2], "w") as f:
            f.write(str(received[0]))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
PY
sink_pid=$!
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$port_file")"

# One run: its CPU seconds (user + system, children included) and wall seconds.
measure() {
  local root="$work/ws-$1-$2"
  mkdir -p "$root"
  /usr/bin/time -o "$work/time" -f "%U %S %e" "${@:3}" "$zstudio" run --db "$work/store-$1-$2.sqlite" \
    -w "$root" -- cat "$nodes" >/dev/null 2>"$work/stderr"
  if grep -q "spans lost" "$work/stderr"; then
    echo "  (run $2 of $1: $(grep "spans lost" "$work/stderr"))" >&2
  fi
  awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$work/time"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/base"
: >"$work/live"
for i in $(seq "$runs"); do
  measure base "$i" env >>"$work/base"
  measure live "$i" env OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" >>"$work/live"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -n -k"$2" "$1" | awk -v k="$2" '{ v[NR] = $k } END { print v[int((NR + 1) / 2)] }'; }
base_cpu=$(median "$work/base" 1)
live_cpu=$(median "$work/live" 1)
echo "baseline CPU s: $(cut -d' ' -f1 "$work/base" | paste -sd' ') (median $base_cpu; wall median $(median "$work/base" 2))"
echo "live CPU s:     $(cut -d' ' -f1 "$work/live" | paste -sd' ') (median $live_cpu; wall median $(median "$work/live" 2))"
echo "collector received $(cat "$work/received" 2>/dev/null || echo 0) bytes in all"
awk -v b="$base_cpu" -v l="$live_cpu" 'BEGIN { printf "live / baseline CPU: %.3fx (%+.1f %%)\n", l / b, (l / b - 1) * 100 }'
