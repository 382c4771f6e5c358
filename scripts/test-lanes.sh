#!/usr/bin/env bash
# Runs the workspace's test binaries, once built (`cargo test --workspace --no-run`), in two lanes
# at once: the app's (its window end to end, under Xvfb) and every other crate's. Much of each
# lane's time is waiting (a window drawing, sshd, moto, a run of the test agent), so the two
# together take nearer the longer lane's time than the sum of both (CONTRIBUTING.md, "CI and where
# its time goes"). Each lane runs under its own Xvfb display and session bus, as `cargo test
# --workspace` ran under one before; each line it prints is prefixed with its lane, and the lanes'
# results are summed up when both have ended. Fails when either lane fails.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# `lane NAME CARGO-TEST-ARGS...`: one `cargo test` in the background, its output prefixed and kept;
# every test binary of the lane runs even after one failed (`--no-fail-fast`), so one run says
# every failure.
lane() {
  local name=$1
  shift
  (
    set -o pipefail
    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test --locked --no-fail-fast "$@" 2>&1 |
      tee "$logs/$name.log" | sed -u "s/^/[$name] /"
  ) &
}

lane window -p zibby-studio
window=$!
# The app enables the core's `ts` feature (its IPC types): asked for here too, every crate is
# built as `cargo test --workspace --no-run` built it, and nothing is compiled again (nor a
# binary the window's tests run, such as target/debug/zstudio, replaced while they run).
lane crates --workspace --exclude zibby-studio --features studio-core/ts
crates=$!

wait "$window"
window_status=$?
wait "$crates"
crates_status=$?

echo
echo "the test lanes' results:"
for name in window crates; do
  grep -E "^(\s+Running|\s+Doc-tests|test result:)|^failures:$|^    [a-z_:]+$" "$logs/$name.log" |
    sed "s/^/[$name] /"
done
echo "window lane: exit $window_status; crates lane: exit $crates_status"
[ "$window_status" -eq 0 ] && [ "$crates_status" -eq 0 ]
