#!/usr/bin/env bash
# Builds the Debian package of Zibby Studio with the Tauri bundler, in production mode
# (tauri/custom-protocol): /usr/bin/zibby-studio, its desktop entry, the icon in every size the
# bundle wants (drawn by icons/make_icon.py), and the headless CLI /usr/bin/zstudio beside it.
#
#   scripts/package-deb.sh          # prints the path and size of the .deb on its last line
#   scripts/package-deb.sh --debug  # the same package from debug builds (target/debug/bundle)
#
# --debug is what the test command (scripts/run-tests.sh) packages and installs: it reuses what
# the tests built (about 2 min here, where the two release builds take about 14), and tests the
# package itself (its files, its install, the installed app driven, its removal) as the release
# one would be. A package to give to people is built without it.
#
# Needs what scripts/setup.sh installs (Rust, Node/npm, the WebKitGTK dev packages). The Tauri CLI
# comes from npm (tests/package/package.json, pinned in its package-lock.json). Release builds go
# to ./target (tauri.conf.json maps target/release/zstudio into the package), so a CARGO_TARGET_DIR
# elsewhere is overridden here.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "usage: scripts/package-deb.sh [--debug]" >&2; exit 2 ;;
esac
release=() # cargo's and tauri's flag for the profile
[ "$profile" = release ] && release=(--release)
debug=()
[ "$profile" = debug ] && debug=(--debug)
export CARGO_TARGET_DIR="$repo/target"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }

step "icons (python3 icons/make_icon.py)"
python3 icons/make_icon.py

# Run on its own, it builds the UI; after scripts/setup.sh in the same run (the test command,
# CI: ZIBBY_STUDIO_SETUP_DONE=1), the UI setup.sh built is the one packaged (built once a run).
if [ "${ZIBBY_STUDIO_SETUP_DONE:-}" = 1 ] && [ -f ui/dist/index.html ]; then
  step "UI: ui/dist as scripts/setup.sh built it in this run"
else
  step "UI (ui/: npm ci && npm run build)"
  (cd ui && npm ci --no-audit --no-fund && npm run build)
fi

step "Tauri CLI (tests/package: npm ci)"
(cd tests/package && npm ci --no-audit --no-fund)
tauri="$repo/tests/package/node_modules/.bin/tauri"
"$tauri" --version

# The two release builds below share every crate they have in common (issue 42): the
# workspace-hack crate (cargo hakari, .config/hakari.toml) gives each crate one feature set, so
# the app's build finds zstudio's crates Fresh. Checked first, from cargo's own resolution (no
# build): a crate the two would build with other features means a dependency's features diverged.
step "one feature set for zstudio and the app (cargo tree)"
trees=$(mktemp -d)
features() { cargo tree --locked -e normal,build --prefix none -f '{p} {f}' "$@" >"$trees/raw" && sed 's/ (\*)$//' "$trees/raw" | sort -u; }
features -p zstudio >"$trees/zstudio"
features -p zibby-studio --features tauri/custom-protocol >"$trees/app"
python3 - "$trees/zstudio" "$trees/app" <<'PY'
import collections, sys
def read(path):
    found = collections.defaultdict(set)
    for line in open(path):
        name, version, *features = line.split()
        found[f"{name} {version}"].add(" ".join(features))
    return found
zstudio, app = read(sys.argv[1]), read(sys.argv[2])
diverged = sorted(p for p in zstudio.keys() & app.keys() if zstudio[p] != app[p])
if diverged:
    sys.exit("error: zstudio and the app would build these with other features: " + ", ".join(diverged)
             + ".\nRun `cargo hakari generate && cargo hakari manage-deps` (cargo install --locked"
             + " cargo-hakari) and commit what it changes.")
if not zstudio or not app:
    sys.exit("error: cargo tree listed no crates")
print(f"{len(zstudio.keys() & app.keys())} crates shared, each with one feature set")
PY
rm -rf "$trees"

# zstudio is linked statically (static-pie, the C library inside), so that the same file is the
# server a remote workspace uploads to any x86_64 Linux host, whatever its C library (issue 27);
# only the binary's own link takes the flag, so its crates are the app's release build's.
step "zstudio, static (cargo rustc ${release[*]} -p zstudio -- -C target-feature=+crt-static)"
cargo rustc "${release[@]}" --locked -p zstudio --bin zstudio -- -C target-feature=+crt-static

step "app and .deb (tauri build ${debug[*]} --bundles deb)"
# `tauri build` builds the root package with tauri/custom-protocol (its UI inside), then bundles.
# The root package is not a default member of the workspace, hence `-p zibby-studio`. The
# package's zstudio is the one just built, of the same profile.
files="{\"bundle\":{\"linux\":{\"deb\":{\"files\":{\"/usr/bin/zstudio\":\"target/$profile/zstudio\"}}}}}"
"$tauri" build "${debug[@]}" --bundles deb --config "$files" -- --locked -p zibby-studio

version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' tauri.conf.json)
arch=$(dpkg --print-architecture)
bundled="$CARGO_TARGET_DIR/$profile/bundle/deb/Zibby Studio_${version}_${arch}.deb" # productName_...
deb="$CARGO_TARGET_DIR/$profile/bundle/deb/zibby-studio_${version}_${arch}.deb" # Debian's usual name
mv -f "$bundled" "$deb"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for want in usr/bin/zibby-studio usr/bin/zstudio usr/share/icons/hicolor/32x32/apps/zibby-studio.png; do
  grep -qx "$want" <<<"$contents" || {
    echo "error: $deb has no /$want" >&2
    exit 1
  }
done
size=$(stat -c %s "$deb")
echo "deb: $deb ($size bytes, $(numfmt --to=iec "$size"))"
