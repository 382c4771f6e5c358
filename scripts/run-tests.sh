#!/usr/bin/env bash
# Runs every test of Zibby Studio: the core, the zstudio CLI, the test agent, the UI's unit tests,
# the desktop app end-to-end in a real window (Xvfb + tauri-driver + WebKitWebDriver), and the
# Debian package (built, installed with dpkg, the installed app driven, removed: needs root or sudo).
# Installs what it needs first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export ZIBBY_STUDIO_SETUP_DONE=1
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if grep -q '"test"' ui/package.json; then
  printf '\033[1m==> ui: npm run lint, npm run format:check, npm test\033[0m\n'
  (cd ui && npm run lint && npm run format:check && npm test)
fi

printf '\033[1m==> cargo test --workspace (the app end-to-end under Xvfb)\033[0m\n'
# xvfb-run gives the end-to-end tests a display, dbus-run-session a session bus (a second launch
# finds the running app through it); they fail, never skip, without either.
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test --workspace --locked

printf '\033[1m==> the Debian package: build, install, drive the installed app, remove\033[0m\n'
bash scripts/package-deb.sh
deb=$(ls -t target/release/bundle/deb/zibby-studio_*.deb | head -n 1)
if [ "$(id -u)" -eq 0 ]; then
  bash scripts/test-package.sh "$deb"
else
  sudo bash scripts/test-package.sh "$deb"
fi
