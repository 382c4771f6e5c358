#!/usr/bin/env bash
# Builds Zibby Studio and opens it on WORKSPACE, or on a demo workspace filled the first time with
# sessions the studio itself ran (`zstudio run` of the test agent's `demo` mode, into the store the
# app opens: its default, or $ZIBBY_STUDIO_DB), and an agent to run (`demo`: Run, watch, Stop).
# Installs what it needs first (scripts/setup.sh; not the test servers, which the app never needs).
#
#   scripts/open-studio.sh [WORKSPACE]
set -euo pipefail
cd "$(dirname "$0")/.."
ZIBBY_STUDIO_SERVERS_LATER=1 bash scripts/setup.sh
export ZIBBY_STUDIO_SETUP_DONE=1
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

workspace=${1:-}
if [ -z "$workspace" ]; then
  workspace=demo-workspace
  # Idempotent: demo sessions only into an empty workspace, the agent `demo` (.zibby/studio.toml)
  # only where there is no agents file yet (so an older demo workspace gets it too). fill-demo
  # runs the demo through the zstudio built beside it.
  printf '\033[1m==> %s: demo sessions and the agent `demo`\033[0m\n' "$workspace"
  cargo build --quiet --locked -p zstudio
  cargo run --quiet --locked -p zibby-test-agent -- fill-demo "$workspace"
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "error: no display: run this from a desktop session (or under xvfb-run to try it headless)" >&2
  exit 1
fi
printf '\033[1m==> cargo run -p zibby-studio -- %s\033[0m\n' "$workspace"
exec cargo run --locked -p zibby-studio -- "$workspace"
