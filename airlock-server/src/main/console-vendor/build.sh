#!/bin/sh
# Puts the console's third-party browser code (xterm.js and its fit addon, the exact versions in
# package-lock.json, checked against its integrity hashes by npm) into the jar's console resources.
# Runs `npm ci` only when node_modules does not hold what the lock file says, so that an offline
# build (mvn -o) works once it has run. Usage: build.sh OUTPUT_DIR
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if ! cmp -s package-lock.json node_modules/.airlock-installed-lock 2>/dev/null; then
  command -v npm >/dev/null 2>&1 || { echo "console-vendor: npm is missing: install it (Debian: apt-get install npm) to build the console's terminal" >&2; exit 1; }
  echo "console-vendor: fetching xterm.js with npm ci (the versions package-lock.json pins)" >&2
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2   # its summary too: a build's stdout is Maven's
  cp package-lock.json node_modules/.airlock-installed-lock
fi
mkdir -p "$out"
# Source-map comments point at files not shipped: drop them so the browser asks for nothing missing.
for f in @xterm/xterm/lib/xterm.mjs:xterm.js @xterm/addon-fit/lib/addon-fit.mjs:addon-fit.js; do
  sed '/^\/\/# sourceMappingURL=/d' "node_modules/${f%%:*}" > "$out/${f#*:}"
done
cp node_modules/@xterm/xterm/css/xterm.css "$out/xterm.css"
