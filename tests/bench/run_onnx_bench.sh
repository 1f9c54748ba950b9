#!/usr/bin/env bash
# Benchmarks import + shape inference + plan of the 10.8 MB PP-OCRv4 rec
# model (issue 4: target <= 1 s on the project machine). Builds first.
# usage: tests/bench/run_onnx_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
runs=${2:-9}
cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j2 --target bench_onnx >/dev/null
./scripts/fetch_models.sh "$build/onnx-cache" >/dev/null
"$build/tests/bench_onnx" "$build/onnx-cache/ocr/ch_PP-OCRv4_rec_infer.onnx" \
  x=1x3x48x320 "$runs"
