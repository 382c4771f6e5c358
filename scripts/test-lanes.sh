#!/usr/bin/env bash
# Runs the workspace's test binaries, once built (`cargo test --workspace --no-run`), in three
# lanes at once: the app's main end-to-end binary (`e2e_app`, the longest); the app's dialogs with
# most of zstudio's tests (the CLI, its remote lane, its server); and every other crate's (the
# core, its buckets) with the app's notifications and zstudio's cloud tests (there to even the
# lanes: the cli lane was a minute longer than the others). Much of each lane's time is waiting (a
# window drawing, sshd, moto, a run of the test agent), so the lanes together take nearer the
# longest lane's time than the sum (CONTRIBUTING.md, "CI and where its time goes"). Each lane runs
# under its own Xvfb display and session bus, as `cargo test --workspace` ran under one before;
# each line it prints is prefixed with its lane, and the lanes' results are summed up when all
# have ended. Fails when any lane fails, or when the app or zstudio has a test binary no lane names.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The app's and zstudio's test binaries, split between the lanes by name: a new one must be
# named here, or this fails (never a binary left unrun).
app_main_tests=(e2e_app)
app_other_tests=(e2e_dialogs)
app_core_lane_tests=(e2e_notifications)
zstudio_tests=(cli remote serve snapshots)
zstudio_core_lane_tests=(cloud)
# `named PACKAGE NAME...`: fails, saying which, when PACKAGE has a test binary not among NAME.
named() {
  local left
  left=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
package, named = sys.argv[1], set(sys.argv[2:])
found = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == package)
print(" ".join(t["name"] for t in found["targets"] if "test" in t["kind"] and t["name"] not in named))
' "$@") || return
  if [ -n "$left" ]; then
    echo "error: $1's test binaries $left are in no lane: name them in scripts/test-lanes.sh" >&2
    return 1
  fi
}
named zibby-studio "${app_main_tests[@]}" "${app_other_tests[@]}" "${app_core_lane_tests[@]}" || exit 1
named zstudio "${zstudio_tests[@]}" "${zstudio_core_lane_tests[@]}" || exit 1
tests() { printf -- '--test %s ' "$@"; }

# `lane NAME 'CARGO-TEST-ARGS'...`: each argument one `cargo test` (its arguments split on spaces),
# run one after the other under one display and bus, in the background, the output prefixed and
# kept; every test binary runs even after one failed (`--no-fail-fast`, and every `cargo test` of
# the lane), so one run says every failure. The crates' tests build with `--features
# studio-core/ts`, as the workspace's build has it: nothing is compiled again.
# Each `cargo test` of a lane is killed past this many minutes (the longest lane takes about
# seven on CI): a hung test fails the run naming itself, not CI's whole budget (a deadlock once
# held CI for its 90 minutes).
lane_bound=${ZIBBY_STUDIO_LANE_MINUTES:-20}

lane() {
  local name=$1
  shift
  (
    set -o pipefail
    bound=$lane_bound xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
      status=0
      for args in "$@"; do
        # shellcheck disable=SC2086 # each argument is a list of cargo arguments
        timeout -k 30s "${bound}m" cargo test --locked --no-fail-fast $args
        code=$?
        if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
          echo "error: \`cargo test $args\` ran past its ${bound} minutes and was killed: a test hung (the one \"running for over 60 seconds\" above)" >&2
        fi
        [ "$code" -eq 0 ] || status=1
      done
      exit $status
    ' lane "$@" 2>&1 | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
  ) &
}

lane window "-p zibby-studio $(tests "${app_main_tests[@]}")"
window=$!
lane cli "-p zibby-studio --lib --bins $(tests "${app_other_tests[@]}")" \
  "-p zstudio --features studio-core/ts --bins $(tests "${zstudio_tests[@]}")"
cli=$!
lane core "--workspace --exclude zibby-studio --exclude zstudio --features studio-core/ts" \
  "-p zibby-studio $(tests "${app_core_lane_tests[@]}")" \
  "-p zstudio --features studio-core/ts $(tests "${zstudio_core_lane_tests[@]}")"
core=$!

wait "$window"
window_status=$?
wait "$cli"
cli_status=$?
wait "$core"
core_status=$?

echo
echo "the test lanes' results:"
for name in window cli core; do
  grep -E "^(\s+Running|\s+Doc-tests|test result:)|^failures:$|^    [a-z_:]+$" "$logs/$name.log" |
    sed "s/^/[$name] /"
done
echo "window lane: exit $window_status; cli lane: exit $cli_status; core lane: exit $core_status"
[ "$window_status" -eq 0 ] && [ "$cli_status" -eq 0 ] && [ "$core_status" -eq 0 ]
