#!/usr/bin/env bash
# The fast inner loop: every test of the default members (protocol, core, args, CLI, test agent,
# test servers) that needs no window, no sshd and no emulator. What it leaves out is the list
# below, by test binary, and it says so as it starts; a new test binary runs here unless it is
# added to that list. CI runs everything (scripts/run-tests.sh); so should you before a change
# lands. Needs a Rust toolchain and python3 (to read `cargo metadata`): no WebKit, no apt
# package, no virtual environment of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# package:test-binary, each with why it is left out.
LEFT_OUT=(
  "studio-core:bucket"     # moto, Azurite and the GCS emulator (Python and Node servers)
  "zstudio:cloud"          # moto
  "zstudio:remote"         # the loopback sshd and socat
  "test-servers:sshd_ends" # the loopback sshd
)
# package:test-binary:test-name, tests left out of a binary that runs (`cargo test -- --skip`).
LEFT_OUT_TESTS=(
  "zstudio:serve:mcp_python" # the official Python MCP client, in .venv/mcp (scripts/setup.sh)
  "zstudio:cli:otlp_phoenix" # Arize Phoenix's server, in .venv/phoenix (scripts/setup.sh)
  "studio-core:it:otlp_window" # the same Phoenix
)
# Also left out: the app's end-to-end tests (a window under Xvfb; the root package is no default
# member) and the doc tests (each example compiled on its own: slow); `cargo test --workspace` in
# scripts/run-tests.sh runs both.

printf '\033[1m==> left out (CI runs them): %s, the app end to end, the doc tests\033[0m\n' \
  "${LEFT_OUT[*]} ${LEFT_OUT_TESTS[*]}"
skips=()
for test in "${LEFT_OUT_TESTS[@]}"; do skips+=(--skip "${test##*:}"); done

# Each default member with its library, binaries and test binaries, less the ones left out.
mapfile -t invocations < <(cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
left_out = set(sys.argv[1:])
meta = json.load(sys.stdin)
defaults = set(meta["workspace_default_members"])
for package in meta["packages"]:
    if package["id"] not in defaults:
        continue
    args = ["-p", package["name"]]
    kinds = {kind for target in package["targets"] for kind in target["kind"]}
    if "lib" in kinds:
        args.append("--lib")
    if "bin" in kinds:
        args.append("--bins")
    for target in package["targets"]:
        if "test" in target["kind"] and package["name"] + ":" + target["name"] not in left_out:
            args += ["--test", target["name"]]
    print(" ".join(args))
' "${LEFT_OUT[@]}")

# Built first, as the processes the tests start: the core's example writer (its store tests), the
# test agent and `zstudio` (the run keeper), which the core's tests find beside their binary.
cargo build --locked -p studio-core --examples
cargo build --locked -p zibby-test-agent -p zstudio --bins
start=$SECONDS
for args in "${invocations[@]}"; do
  printf '\033[1m==> cargo test %s\033[0m\n' "$args"
  # shellcheck disable=SC2086 # the arguments are words
  cargo test --locked $args -- "${skips[@]}"
done
printf '\033[1m==> fast loop done in %d s (left out: %s)\033[0m\n' $((SECONDS - start)) "${LEFT_OUT[*]} ${LEFT_OUT_TESTS[*]}"
