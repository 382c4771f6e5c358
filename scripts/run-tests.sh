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
step "set-up (scripts/setup.sh)" bash scripts/setup.sh
export ZIBBY_STUDIO_SETUP_DONE=1
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if grep -q '"test"' ui/package.json; then
  step "ui: npm run lint, npm run format:check, npm test" \
    bash -c 'cd ui && npm run lint && npm run format:check && npm test'
fi

# Every test binary built first (cargo's timings kept), then run in two lanes at once: the app's
# end-to-end tests beside the other crates' (scripts/test-lanes.sh says why). xvfb-run gives the
# end-to-end tests a display, dbus-run-session a session bus (a second launch finds the running app
# through it); they fail, never skip, without either.
step "cargo test --workspace --no-run (build every test)" cargo test --workspace --locked --no-run --timings
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
