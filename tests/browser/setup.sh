#!/usr/bin/env bash
# Installs the pinned playwright-core (package-lock.json) into DIR, the
# build folder's browser/ directory, with npm ci; nothing when the pinned
# version is already there. No browser is downloaded: the tests drive
# Debian's /usr/bin/chromium.
# usage: setup.sh SOURCE_DIR DIR
set -euo pipefail
src=$1/tests/browser
dir=$2
mkdir -p "$dir"
for f in package.json package-lock.json test_viewer.mjs; do
  cmp -s "$src/$f" "$dir/$f" || cp "$src/$f" "$dir/$f"
done
want=$(node -p 'require(process.argv[1]).packages["node_modules/playwright-core"].version' "$dir/package-lock.json")
have=$(node -p 'try { require(process.argv[1]).version } catch (e) { "" }' "$dir/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  echo "browser: installing playwright-core $want into $dir"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
fi
[ -x /usr/bin/chromium ] || { echo "browser: /usr/bin/chromium is missing (scripts/setup.sh installs it)" >&2; exit 1; }
echo "browser: playwright-core $want ready in $dir"
