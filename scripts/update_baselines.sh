#!/usr/bin/env bash
# Refreshes the committed baselines of the project's own gate (baselines/)
# after a deliberate change of the planner or of a bundled model: builds
# mplan, rewrites every baseline (all or none), and shows what changed.
# Review `git diff baselines/` (one tensor a line) and commit it with the
# change that caused it.
# usage: scripts/update_baselines.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j2 --target mplan >/dev/null
./scripts/gate.sh "$build/mplan" --update-baseline
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git --no-pager diff --stat -- baselines/
fi
