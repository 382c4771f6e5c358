#!/usr/bin/env bash
# Installs what building, running and testing Zibby Studio needs on Debian 12 (bookworm):
# the WebKitGTK/GTK stack Tauri v2 links against, Xvfb and WebKitWebDriver for the end-to-end
# tests, tauri-driver, and the UI's npm packages; then builds the UI into ui/dist.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# A script that already ran the set-up in this process tree says so, and it is not run twice.
if [ "${ZIBBY_STUDIO_SETUP_DONE:-}" = 1 ]; then exit 0; fi

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

APT_PACKAGES=(
  build-essential pkg-config curl file libssl-dev
  libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev
  xvfb xauth webkit2gtk-driver imagemagick fonts-dejavu-core
  python3
  # dbus-run-session: the end-to-end tests' session bus (one window per store goes through it)
  dbus-daemon
  # a notification daemon: the end-to-end test of the app's desktop notifications reads what it showed
  dunst
  # the remote-workspace tests' OpenSSH server (started by the tests on 127.0.0.1 only, never as a
  # service) and the relay they freeze to stall a link
  openssh-server socat
  # the bucket tests' S3-compatible server (moto) lives in a virtual environment
  python3-venv
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q
  # No package may start a service (openssh-server would listen on port 22 of every address):
  # the tests start their own servers on loopback. policy-rc.d is Debian's switch for that.
  policy_added=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
  if [ -n "$policy_added" ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "error: no Rust toolchain: install one with rustup (https://rustup.rs), then run this again" >&2
  exit 1
}
# Vite 7 and ESLint 10 need Node.js 20.19 or newer.
node_ok=$(node -p 'const [a, b] = process.versions.node.split(".").map(Number); a > 20 || (a === 20 && b >= 19)' 2>/dev/null || echo false)
if [ "$node_ok" != "true" ]; then
  echo "error: the UI build needs Node.js 20.19 or newer (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
if ! command -v tauri-driver >/dev/null 2>&1; then
  say "cargo: installing tauri-driver 2.1.0"
  cargo install tauri-driver --locked --version 2.1.0
fi

# The test servers' virtual environments and packages (moto, the MCP client, Arize Phoenix, the
# Azure and Cloud Storage emulators): scripts/setup-servers.sh. Not here with
# ZIBBY_STUDIO_SERVERS_LATER=1: scripts/run-tests.sh (.ci/run through it) installs them in the
# background beside its build, waiting for them before the tests; scripts/open-studio.sh needs none.
if [ "${ZIBBY_STUDIO_SERVERS_LATER:-}" != 1 ]; then
  bash scripts/setup-servers.sh
fi

say "ui: npm ci && npm run build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build)
