#!/usr/bin/env python3
"""Issue 45's CPU target: 80,000 node executions exported live add at most 5 % to the run's CPU
time in the studio.

    scripts/measure-otlp-live.py RUNS NAME=ZSTUDIO [NAME=ZSTUDIO ...]

Each run is a pair: `zstudio run -- cat FILE` of 80,000 executions (a real child printing them,
as in measure-hostile.sh) without an endpoint (the baseline), then with
OTEL_EXPORTER_OTLP_ENDPOINT at a loopback collector that takes every request (a Python sink in
its own process: its CPU is not the studio's). The builds are alternated pair by pair (their
order reversed every other round), so that a machine's slow spell falls on each alike. The CPU
time is the user + system time of `zstudio run` and its children (the run keeper, `cat`), from
wait4. Printed for each build: the medians of its baselines and of its live runs, their ratio,
and the median of the pairs' own ratios; and the machine's load. A live run that says spans were
lost or events missed is printed too.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

SINK = r'''
import http.server
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
'''


def main():
    if len(sys.argv) < 3 or "=" not in sys.argv[2]:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    builds = [arg.split("=", 1) for arg in sys.argv[2:]]
    for name, zstudio in builds:
        if not os.access(zstudio, os.X_OK):
            sys.exit(f"error: {name}: no zstudio at {zstudio} (cargo build --release -p zstudio)")
    with tempfile.TemporaryDirectory(prefix="otlp-live-") as work:
        nodes = os.path.join(work, "nodes.txt")
        with open(nodes, "w") as out:
            for i in range(80_000):
                out.write(f'__WORKFLOW_GRAPH_LOG__{{"phase":"node_begin","node":"n{i}"}}\n'
                          f'\u250c n{i}\n\u2502 work\n\u2514 done 1ms\n'
                          f'__WORKFLOW_GRAPH_LOG__{{"phase":"node_end","node":"n{i}"}}\n')
        sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
        try:
            endpoint = f"http://127.0.0.1:{int(sink.stdout.readline())}"
            measured = measure(work, nodes, endpoint, builds, rounds)
        finally:
            sink.kill()
    for name, (base, live) in measured.items():
        b, l = statistics.median(base), statistics.median(live)
        pairs = statistics.median(y / x for x, y in zip(base, live))
        print(f"{name}: baseline {b * 1000:.0f} ms ({min(base) * 1000:.0f}-{max(base) * 1000:.0f}), "
              f"live {l * 1000:.0f} ms ({min(live) * 1000:.0f}-{max(live) * 1000:.0f}), "
              f"live / baseline {(l / b - 1) * 100:+.1f} %, the pairs' median {(pairs - 1) * 100:+.1f} %")


def measure(work, nodes, endpoint, builds, rounds):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP_")}
    env["XDG_DATA_HOME"] = os.path.join(work, "data")
    runs = 0

    def cpu_of(zstudio, live):
        nonlocal runs
        runs += 1
        workspace = os.path.join(work, f"ws{runs}")
        os.makedirs(workspace)
        child_env = dict(env, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint) if live else env
        child = subprocess.Popen(
            [zstudio, "run", "--db", os.path.join(work, f"store{runs}.sqlite"), "-w", workspace, "--", "cat", nodes],
            env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        said = child.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"error: {zstudio} run failed: {said}")
        if "spans lost" in said:
            print(f"  (a live run: {said.strip().splitlines()[-1]})", file=sys.stderr)
        return usage.ru_utime + usage.ru_stime

    print(f"load before: {load()}")
    measured = {name: ([], []) for name, _ in builds}
    for r in range(rounds):
        for name, zstudio in (builds if r % 2 == 0 else builds[::-1]):
            measured[name][0].append(cpu_of(zstudio, False))
            measured[name][1].append(cpu_of(zstudio, True))
    print(f"load after: {load()}")
    return measured


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3]) + time.strftime(" (%H:%M:%S)")


if __name__ == "__main__":
    main()
