#!/usr/bin/env bash
# Issue 45's CPU target, for one build: scripts/measure-otlp-live.py's pairs (a baseline run and a
# live run of 80,000 node executions each) of DIR's zstudio. To compare builds, call the Python
# script with several (NAME=ZSTUDIO each): their pairs are alternated.
#
#   scripts/measure-otlp-live.sh [target/release] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/measure-otlp-live.py "${2:-5}" "build=${1:-target/release}/zstudio"
