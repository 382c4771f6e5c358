#!/usr/bin/env bash
# Runs every test of Zibby Studio: the core, the zstudio CLI, the test agent, the UI's unit tests,
# the desktop app end-to-end in a real window (Xvfb + tauri-driver + WebKitWebDriver), and the
# Debian package (built, installed with dpkg, the installed app driven, removed: needs root or sudo).
# Installs what it needs first (scripts/setup.sh). Each step's duration is printed in a table at
# the end (scripts/steps.sh), and cargo's build timings are kept in target/cargo-timings/.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS_TITLE="scripts/run-tests.sh"
source scripts/steps.sh
# The test servers' virtual environments (about 2 min of downloads and unpacking, Arize Phoenix
# most of it; about 1 s when they are all there) are installed beside the builds below and
# waited for before the tests run (under .ci/run too: one way for both).
step "set-up (scripts/setup.sh, the test servers beside)" env ZIBBY_STUDIO_SERVERS_LATER=1 bash scripts/setup.sh
export ZIBBY_STUDIO_SETUP_DONE=1
servers_title="the test servers' set-up (scripts/setup-servers.sh)"
step_beside "$servers_title" bash scripts/setup-servers.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"


# Every test binary built first (cargo's timings kept), then run in three lanes at once: the app's
# main end-to-end binary, its other tests with zstudio's, and the other crates'
# (scripts/test-lanes.sh says why). xvfb-run gives the
# end-to-end tests a display, dbus-run-session a session bus (a second launch finds the running app
# through it); they fail, never skip, without either.
#
# ZIBBY_STUDIO_LINT=1 (CI sets it): the same build is clippy's, with its warnings as errors, as
# `cargo clippy --workspace --all-targets -- -D warnings` would say them, without clippy's own
# second build of the whole dependency graph (about 5 min on 2 cores). Clippy's driver compiles the
# workspace's own crates (cargo's RUSTC_WORKSPACE_WRAPPER, which is how `cargo clippy` runs it;
# dependencies are compiled by rustc as before); the benches are built too (as tests), so every
# target is linted. The variables stay set for the steps below, so the lanes and the package reuse
# this build.
build_every_test() {
  cargo test --workspace --locked --no-run --timings || return
  if [ "${ZIBBY_STUDIO_LINT:-}" = 1 ]; then
    cargo test --workspace --locked --no-run --benches
  fi
}
# CLIPPY_ARGS is clippy's own interface to its driver, not a documented one: were it ever not
# read, clippy's lints would be warnings again and the build would pass. So a probe with a lint
# (`v.len() == 0`) must be refused under the same variables first.
lint_gate_holds() {
  local probe said rc=0
  probe=$(mktemp -d)
  printf 'fn main() {\n    let v: Vec<u8> = Vec::new();\n    if v.len() == 0 {}\n}\n' >"$probe/probe.rs"
  said=$("$RUSTC_WORKSPACE_WRAPPER" rustc --edition 2021 --crate-type bin --emit=metadata \
    -o "$probe/probe.rmeta" "$probe/probe.rs" 2>&1) || rc=$?
  rm -rf "$probe"
  if [ "$rc" -eq 0 ] || ! grep -q "len_zero" <<<"$said"; then
    echo "error: clippy's driver did not refuse a lint with CLIPPY_ARGS=-D warnings (exit $rc): the lint gate would not hold" >&2
    echo "$said" >&2
    return 1
  fi
}
build_title="cargo test --workspace --no-run (build every test)"
if [ "${ZIBBY_STUDIO_LINT:-}" = 1 ]; then
  export RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  step "clippy's driver refuses a lint (the gate holds)" lint_gate_holds
  build_title="cargo test --workspace --no-run, benches too (every test built; clippy -D warnings)"
fi
# The UI's checks need nothing the build makes (setup.sh built ui/dist): they run beside it.
ui_title="ui: npm run lint, npm run format:check, npm test"
step_beside "$ui_title" bash -c 'cd ui && npm run lint && npm run format:check && npm test'
build_rc=0
step "$build_title" build_every_test || build_rc=$?
step_join "$ui_title"
[ "$build_rc" -eq 0 ] || exit "$build_rc"
step_join "$servers_title"
# With ZIBBY_STUDIO_LINT=1, the crates' docs are checked too (rustdoc's warnings as errors: their
# maps of the lanes and the protocol, no broken or private links), beside the lanes and the package,
# whose time is much of it waiting (a window drawing, sshd, moto). In a target directory of its
# own, so that no lane's `cargo test` waits for its lock: rustdoc reads the dependencies in check
# mode, which the test build does not make (about 2 min of CPU).
doc_title="cargo doc (studio-protocol, studio-core), warnings as errors"
if [ "${ZIBBY_STUDIO_LINT:-}" = 1 ]; then
  step_beside "$doc_title" env RUSTDOCFLAGS="-D warnings" CARGO_TARGET_DIR="$PWD/target/rustdoc" \
    cargo doc --no-deps --locked -p studio-protocol -p studio-core
fi
step "cargo test --workspace (the app end-to-end under Xvfb, beside the rest)" bash scripts/test-lanes.sh

# Built from the debug builds the tests made (scripts/package-deb.sh says why): about 2 min, where
# the package's two release builds took about 14.
step "the Debian package: build (scripts/package-deb.sh --debug)" bash scripts/package-deb.sh --debug
deb=$(ls -t target/debug/bundle/deb/zibby-studio_*.deb | head -n 1)
if [ "$(id -u)" -eq 0 ]; then
  step "the Debian package: install, drive the installed app, remove" bash scripts/test-package.sh "$deb"
else
  step "the Debian package: install, drive the installed app, remove" sudo bash scripts/test-package.sh "$deb"
fi
if [ "${ZIBBY_STUDIO_LINT:-}" = 1 ]; then
  step_join "$doc_title"
fi
