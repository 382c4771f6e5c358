#!/usr/bin/env bash
# Rewrites ui/src/generated/ipc.ts, the window's TypeScript types, from the Rust types that cross
# IPC (src-tauri/src/ipc_types.rs). Run it after changing one of them, then commit the file.
set -euo pipefail
cd "$(dirname "$0")/.."
UPDATE_IPC_TYPES=1 cargo test -p zibby-studio --lib --locked ipc_types -- --quiet
echo "ui/src/generated/ipc.ts regenerated"
