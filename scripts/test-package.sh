#!/usr/bin/env bash
# Installs the .deb from scripts/package-deb.sh, checks what it installed, drives the INSTALLED app
# through WebDriver under Xvfb, then removes the package and checks it is gone.
#
#   scripts/test-package.sh PATH.deb
#
# Needs root (dpkg -i), xvfb-run, tauri-driver and WebKitWebDriver (what scripts/setup.sh installs),
# and Node/npm (selenium-webdriver from tests/package/package.json). Skips nothing: any failure is a
# non-zero exit. The package is removed at the end even when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
step() { printf '\033[1m==> %s\033[0m\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

deb=${1:-}
[ -n "$deb" ] && [ -f "$deb" ] || fail "usage: scripts/test-package.sh PATH.deb (no such file: '${deb}')"
deb=$(realpath "$deb")
[ "$(id -u)" = 0 ] || fail "run as root: dpkg -i needs it"
version=$(dpkg-deb -f "$deb" Version)
package=$(dpkg-deb -f "$deb" Package)
[ "$package" = zibby-studio ] || fail "the package is named '$package', not zibby-studio"
if dpkg -s zibby-studio >/dev/null 2>&1; then
  fail "zibby-studio is installed already; remove it first (dpkg -r zibby-studio)"
fi

work=$(mktemp -d)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    echo "(removing the package after a failure)" >&2
    dpkg -r zibby-studio >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step "dpkg -i $deb"
installed=1
if ! dpkg -i "$deb"; then
  step "apt-get -f install (missing dependencies)"
  apt-get install -f -y --no-install-recommends
fi
[ "$(dpkg-query -W -f '${Status}' zibby-studio)" = "install ok installed" ] || fail "zibby-studio is not installed"

step "versions"
for program in zibby-studio zstudio; do
  [ -x "/usr/bin/$program" ] || fail "/usr/bin/$program is missing"
  said=$("/usr/bin/$program" --version)
  echo "/usr/bin/$program --version: $said"
  [ "$said" = "$program $version" ] || fail "/usr/bin/$program --version says '$said', not '$program $version'"
done

step "zstudio is static (the server a remote workspace uploads to any x86_64 Linux host)"
linked=$(ldd /usr/bin/zstudio 2>&1 || true)
grep -Eq 'statically linked|not a dynamic executable' <<<"$linked" ||
  fail "/usr/bin/zstudio is linked dynamically: $linked"
built=$(env -i /usr/bin/zstudio build-info) || fail "/usr/bin/zstudio build-info failed in an empty environment"
echo "$built"
grep -q '"platform":"Linux x86_64"' <<<"$built" || grep -q '"platform":"Linux aarch64"' <<<"$built" ||
  fail "/usr/bin/zstudio build-info: $built"

step "desktop entry and icons"
desktop=$(dpkg -L zibby-studio | grep '^/usr/share/applications/.*\.desktop$' || true)
[ "$(printf '%s\n' "$desktop" | grep -c .)" = 1 ] || fail "want one desktop entry, found: '${desktop}'"
[ -f "$desktop" ] || fail "$desktop is missing"
cat "$desktop"
exec_line=$(grep '^Exec=' "$desktop") || fail "$desktop has no Exec line"
exec_program=$(sed 's/^Exec=//; s/ .*//' <<<"$exec_line")
[ "$exec_program" = zibby-studio ] || [ "$exec_program" = /usr/bin/zibby-studio ] ||
  fail "$desktop: '$exec_line' does not start zibby-studio"
grep -qx 'Type=Application' "$desktop" || fail "$desktop: no Type=Application"
grep -qx 'Icon=zibby-studio' "$desktop" || fail "$desktop: no Icon=zibby-studio"
grep -q '^MimeType=.*x-scheme-handler/zibby-studio' "$desktop" ||
  fail "$desktop: the zibby-studio:// scheme is not registered (no MimeType x-scheme-handler/zibby-studio)"
grep -q '^Exec=.*%[uU]' "$desktop" || fail "$desktop: '$exec_line' passes no link (%u) to the app"
for size in 16x16 32x32 64x64 128x128 256x256 512x512; do
  icon=/usr/share/icons/hicolor/$size/apps/zibby-studio.png
  [ -f "$icon" ] || fail "$icon is missing"
  file "$icon" | grep -q "PNG image data, ${size/x/ x }, 8-bit/color RGBA" || fail "$icon: $(file -b "$icon")"
done
echo "ok: icons in 16..512 px"

step "the installed app under Xvfb, through tauri-driver"
(cd tests/package && npm ci --no-audit --no-fund --loglevel=error)
workspace="$work/workspace"
session=1795952463309_yeej
mkdir -p "$workspace/.zibby/output/sessions"
cp -r "tests/fixtures/zibby-captures/head-bb10e85-01-hello-world-plain/cwd/.zibby/output/sessions/$session" \
  "$workspace/.zibby/output/sessions/"
# The app's own store goes under XDG_DATA_HOME, here in $work; the first run records the workspace
# there, so the link run after it opens it without asking (a link to an unknown folder asks).
XDG_DATA_HOME="$work/data" xvfb-run -a -s "-screen 0 1280x800x24" \
  node tests/package/check-installed-app.mjs /usr/bin/zibby-studio "$workspace" "$session"
# A zibby-studio:// link, as the desktop entry starts the app for one (its store: the usual file,
# here in $work/data).
XDG_DATA_HOME="$work/data" xvfb-run -a -s "-screen 0 1280x800x24" \
  node tests/package/check-installed-app.mjs /usr/bin/zibby-studio "$workspace" "$session" --link

step "dpkg -r zibby-studio"
dpkg -r zibby-studio
installed=0
[ ! -e /usr/bin/zibby-studio ] || fail "/usr/bin/zibby-studio is still there after dpkg -r"
[ ! -e /usr/bin/zstudio ] || fail "/usr/bin/zstudio is still there after dpkg -r"
[ ! -e "$desktop" ] || fail "$desktop is still there after dpkg -r"
echo "ok: package $deb installs, runs and uninstalls"
