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

# The S3-compatible test server of the bucket tests (crates/test-servers, `moto`): moto's server in
# a virtual environment of its own, at .venv/moto (or $ZIBBY_MOTO_VENV), version pinned.
MOTO_VERSION=5.2.5
moto_venv="${ZIBBY_MOTO_VENV:-$PWD/.venv/moto}"
if ! "$moto_venv/bin/moto_server" --help >/dev/null 2>&1 \
   || [ "$("$moto_venv/bin/python" -c 'import moto; print(moto.__version__)' 2>/dev/null)" != "$MOTO_VERSION" ]; then
  say "moto: installing moto[server]==$MOTO_VERSION into $moto_venv"
  python3 -m venv "$moto_venv"
  "$moto_venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
fi

# The official Python MCP client the `zstudio mcp` tests drive it with (crates/cli/tests/mcp_client,
# run by crates/cli/tests/serve/mcp_python.rs): the SDK `mcp` in a virtual environment of its own, at
# .venv/mcp (or $ZIBBY_MCP_VENV), version pinned.
MCP_VERSION=2.3.0
mcp_venv="${ZIBBY_MCP_VENV:-$PWD/.venv/mcp}"
if [ "$("$mcp_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$MCP_VERSION" ]; then
  say "mcp: installing mcp==$MCP_VERSION into $mcp_venv"
  python3 -m venv "$mcp_venv"
  "$mcp_venv/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION"
fi

# The OpenTelemetry backend of the trace tests (crates/test-servers, `phoenix`; crates/cli/tests/cli/
# otlp_phoenix.rs): Arize Phoenix in a virtual environment of its own, at .venv/phoenix (or
# $ZIBBY_PHOENIX_VENV), version pinned. About 2 minutes and 860 MB.
PHOENIX_VERSION=20.26.1
phoenix_venv="${ZIBBY_PHOENIX_VENV:-$PWD/.venv/phoenix}"
if [ "$("$phoenix_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))' 2>/dev/null)" != "$PHOENIX_VERSION" ]; then
  say "phoenix: installing arize-phoenix==$PHOENIX_VERSION into $phoenix_venv"
  python3 -m venv "$phoenix_venv"
  "$phoenix_venv/bin/pip" install -q --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION"
fi

# The Azure and Cloud Storage emulators of the az:// and gs:// tests (crates/test-servers,
# `emulators`), versions pinned: gcp-storage-emulator and Azure's Python client (the tests'
# uploader) in the same venv, Azurite's blob service from npm into .venv/azurite (or
# $ZIBBY_AZURITE_DIR). Each is started by the tests on 127.0.0.1, never as a service.
GCS_EMULATOR_VERSION=2026.7.19
AZURE_BLOB_VERSION=12.31.1
AZURITE_VERSION=3.37.0
if [ "$("$moto_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("gcp-storage-emulator"), m.version("azure-storage-blob"))' 2>/dev/null)" \
     != "$GCS_EMULATOR_VERSION $AZURE_BLOB_VERSION" ]; then
  say "emulators: installing gcp-storage-emulator==$GCS_EMULATOR_VERSION, azure-storage-blob==$AZURE_BLOB_VERSION into $moto_venv"
  "$moto_venv/bin/pip" install -q --disable-pip-version-check \
    "gcp-storage-emulator==$GCS_EMULATOR_VERSION" "azure-storage-blob==$AZURE_BLOB_VERSION"
fi
azurite_dir="${ZIBBY_AZURITE_DIR:-$PWD/.venv/azurite}"
if [ "$(node -p "require('$azurite_dir/node_modules/azurite/package.json').version" 2>/dev/null)" != "$AZURITE_VERSION" ]; then
  say "emulators: installing azurite@$AZURITE_VERSION into $azurite_dir"
  mkdir -p "$azurite_dir"
  npm install --prefix "$azurite_dir" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION"
fi

say "ui: npm ci && npm run build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build)
