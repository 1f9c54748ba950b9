#!/usr/bin/env bash
# What absorbing DequantizeLinear and Cast into their heads costs in
# instructions and buys in bytes: for each quantized test graph, the
# activation lower bound, the largest workspace and the instructions
# mplan-runner executes (callgrind, the whole run: the seeded inputs and
# every op) with --passes none (file order) and with --passes all --order
# memory, and whether both runs give the same output bits. A head widens
# its operands a part at a time (runtime/ops.c: panels, blocks of rows,
# bands of output rows), so some widening is done more than once, and a
# DequantizeLinear shared by several readers (absorb rule 8) is widened by
# each of them (qdq_pool: an SE gate's pool, Mul and Add each widen the
# input; qdq_concat: a depthwise Conv and two Concats); this table is what
# that costs. Deterministic: fixed seeds, counts, no timing.
#
# usage: absorb_cost.sh SOURCE_DIR BUILD_DIR [--check]
#   --check (the ctest bench_absorb_cost): also fail when any output
#   differs, or when qdq_conv.json (Convs of one group, their input
#   widened a band of output rows at a time) needs more than 1.10x the
#   instructions of the unfused graph (1.156x before the bands kept their
#   shared input rows and a one-panel weight was widened once).
set -euo pipefail
src=${1:?usage: absorb_cost.sh SOURCE_DIR BUILD_DIR [--check]}
build=${2:?usage: absorb_cost.sh SOURCE_DIR BUILD_DIR [--check]}
check=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mplan=$build/mplan runner=$build/mplan-runner
count() { # BUNDLE OUTPUTS: instructions of one run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$runner" "$1" \
    --seed 11 --outputs "$2" >/dev/null 2>&1
  callgrind_annotate "$tmp/cg" 2>/dev/null |
    awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
figure() { # FILE PATTERN: the number after PATTERN, commas dropped
  sed -n "s/^$2\([0-9,]*\) B.*/\1/p" "$1" | head -1 | tr -d ,
}
status=0
printf '| %-12s | %11s | %11s | %9s | %13s | %13s | %6s | %s |\n' graph \
  "bound none" "bound all" workspace "instr none" "instr all" ratio "same bits"
printf '|--------------|-------------|-------------|-----------|---------------|---------------|--------|-----------|\n'
for m in qdq_conv qdq_dw qdq_mm qdq_gemm_ta cast_w dq_cnn dq_fc dq_half qdq_tail qdq_ew qdq_pool \
  qdq_concat qdq_bn_convt qdq_chain; do
  model=$src/tests/data/passes/$m.json
  for p in none all; do
    args=(--passes "$p")
    [ "$p" = all ] && args+=(--order memory)
    "$mplan" plan "$model" "${args[@]}" >"$tmp/plan_$p" 2>&1
    "$mplan" compile "$model" "${args[@]}" -o "$tmp/$p.mpk" >"$tmp/compile_$p" 2>&1
  done
  b0=$(figure "$tmp/plan_none" "lower bound ")
  b1=$(figure "$tmp/plan_all" "lower bound ")
  ws=$(figure "$tmp/compile_all" "workspace ")
  n0=$(count "$tmp/none.mpk" "$tmp/none.mpt")
  n1=$(count "$tmp/all.mpk" "$tmp/all.mpt")
  same=yes
  cmp -s "$tmp/none.mpt" "$tmp/all.mpt" || { same=NO; status=1; }
  ratio=$(awk -v a="$n1" -v b="$n0" 'BEGIN { printf "%.3f", a / b }')
  printf '| %-12s | %11s | %11s | %9s | %13s | %13s | %5sx | %-9s |\n' "$m" \
    "$b0" "$b1" "${ws:-0}" "$n0" "$n1" "$ratio" $same
  if [ "$check" = --check ] && [ $m = qdq_conv ] &&
    awk -v r="$ratio" 'BEGIN { exit !(r > 1.10) }'; then
    echo "qdq_conv: the passes need ${ratio}x the instructions (> 1.10x)"
    status=1
  fi
done
exit $status
