#!/usr/bin/env bash
# Installs the servers and clients the tests start, each in a virtual environment (or npm prefix)
# of its own under .venv/, versions pinned: moto (S3), the official Python MCP client, Arize
# Phoenix (OTLP), gcp-storage-emulator and Azurite. Run by scripts/run-tests.sh (and so .ci/run)
# in the background beside its build, or by scripts/setup.sh without ZIBBY_STUDIO_SERVERS_LATER.
# Safe to run again: it installs only what is missing (about 1 s when all is there). Needs
# python3-venv and Node.js (scripts/setup.sh installs or checks them first).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

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
