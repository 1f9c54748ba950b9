#!/usr/bin/env bash
# Every test: set up, build, run the suite; then again under AddressSanitizer
# and UndefinedBehaviorSanitizer. The format check is one of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)
for variant in build build-asan; do
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  [ "$variant" = build-asan ] && flags=(-DCMAKE_BUILD_TYPE=Debug -DMPLAN_SANITIZE=ON)
  echo "== $variant"
  cmake -S . -B "$variant" "${flags[@]}" >/dev/null
  cmake --build "$variant" -j"$jobs" >/dev/null
  (cd "$variant" && ctest --output-on-failure -j"$jobs")
done
echo "all tests passed (plain and ASan+UBSan)"
