#!/usr/bin/env bash
# Coverage-guided fuzzing of the whole pipeline (tests/fuzz/fuzz_model.c):
# load an ONNX model or graph JSON, every pass with the memory order, plan,
# validate, and for small models verify (compile, poison-mode run, compare
# with the no-reuse run), under libFuzzer + ASan + UBSan.
#
# usage: scripts/fuzz.sh [SECONDS] [JOBS]    (default 600 s, 1 job)
#
# Builds build-fuzz/ with clang-19 (-DMPLAN_FUZZ=ON -DMPLAN_SANITIZE=ON),
# seeds from the ONNX node tests and the other model tests of
# libonnx-testdata (build/onnx-cache/node and backend, if fetched), the
# generated ones of build/onnx-extra (old opsets among them), the
# committed test models and tests/fuzz/corpus/, keeps the corpus it grows
# in build-fuzz/fuzz-corpus and writes any finding to
# build-fuzz/fuzz-findings/. A finding's file, copied into
# tests/fuzz/corpus/ once fixed, is replayed by ctest fuzz_replay.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
jobs=${2:-1}
out=$src/build-fuzz
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER=clang-19 -DMPLAN_FUZZ=ON \
  -DMPLAN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out" -j"$(nproc)" --target fuzz_model >/dev/null
seeds=$out/fuzz-seeds
mkdir -p "$seeds" "$out/fuzz-corpus" "$out/fuzz-findings"
for d in "$src"/build/onnx-cache/node/*/ "$src"/build/onnx-cache/backend/*/ \
  "$src"/build/onnx-extra/*/; do
  [ -f "$d/model.onnx" ] || continue
  [ "$(stat -c %s "$d/model.onnx")" -le 65536 ] || continue
  cp "$d/model.onnx" "$seeds/$(basename "$d").onnx"
done
cp "$src"/models/*.json "$src"/tests/data/*.json "$src"/tests/data/*.onnx.bin \
  "$src"/tests/data/passes/*.json "$src"/tests/data/passes/*.onnx.bin \
  "$src"/tests/fuzz/corpus/* "$seeds"/ 2>/dev/null || true
cd "$out"
args=(-max_len=65536 -timeout=30 -rss_limit_mb=6000
  -max_total_time="$secs" -print_final_stats=1
  -artifact_prefix="$out/fuzz-findings/")
if [ "$jobs" -gt 1 ]; then args+=(-fork="$jobs" -ignore_crashes=1); fi
set +e
"$out/tests/fuzz_model" "${args[@]}" "$out/fuzz-corpus" "$seeds"
rc=$?
set -e
# crashes, leaks, timeouts and out-of-memory inputs are findings; a
# slow-unit file (the slowest input so far, above 10 s) is not
n=$(find "$out/fuzz-findings" -type f \( -name 'crash-*' -o -name 'leak-*' \
  -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
slow=$(find "$out/fuzz-findings" -type f -name 'slow-unit-*' | wc -l)
echo "fuzz.sh: libFuzzer exit $rc; $n finding(s) in $out/fuzz-findings" \
  "($slow slow unit(s), not findings)"
[ "$rc" -eq 0 ] && [ "$n" -eq 0 ]
