#!/usr/bin/env bash
# The fault-injection mutation set (tests/test_mutations.c) on the host and
# on rv64 (the riscv64 runner with the RVV kernels under qemu-riscv64) at
# VLEN 128, 256 and 512: every mutation must be found with the same first
# event (kind, culprit op, victim tensor) on every target. ctest runs VLEN
# 256 only (test_mutations_rv64); this runs all three (about 3.5 minutes).
# usage: tests/bench/rv64_mutations.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: rv64_mutations.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
bash "$src/scripts/fetch_models.sh" "$build/onnx-cache" >/dev/null
time "$build/tests/test_mutations" "$src" "$build/onnx-cache" 128 256 512
