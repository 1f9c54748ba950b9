#!/usr/bin/env bash
# Installs everything mplan needs on Debian 12, now and for the capabilities
# that follow (ONNX via protobuf-c, Graphviz, SQLite, the riscv64 cross
# toolchain and QEMU, Chromium for browser tests). Idempotent: packages
# already present are not touched, so a second run takes a second.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3 python3-yaml
  libcjson-dev libsqlite3-dev sqlite3
  libgraphviz-dev graphviz
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev
  clang-19 lld-19 clang-format-19
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross qemu-user
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup: all ${#packages[@]} packages present"
fi

# Node.js 20+ and npm come with the machine image (browser tests and
# reference runs use them); Debian's own are older, so check, don't install.
if command -v node >/dev/null && command -v npm >/dev/null; then
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "setup: node $(node --version) is older than 20, which playwright-core needs" >&2
    exit 1
  fi
else
  # The browser test needs node 20+ and npm (playwright-core is installed
  # into the build folder by the browser_setup test, pinned by
  # tests/browser/package-lock.json); the machine image provides them.
  echo "setup: node/npm not found: the browser test (ctest -L browser) needs node 20+ and npm" >&2
  exit 1
fi
