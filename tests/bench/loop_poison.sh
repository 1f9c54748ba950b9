#!/usr/bin/env bash
# What poison mode costs in a Loop: the instructions mp_rt_run executes
# (callgrind, counting inside it only) when `mplan verify` runs
# tests/data/loop_rows.onnx.bin, a Loop whose scan output gains a row of
# 24 bytes a trip, at n and 4n trips, with and without --poison.
# Deterministic: counts, no timing. Poison mode checksums every tensor a
# trip writes; the scan output has n rows, so hashing it whole on every
# trip makes the run quadratic (4n trips: about 16 times n's count),
# and hashing only the row a trip adds keeps it linear (about 4 times).
#
# usage: loop_poison.sh SOURCE_DIR BUILD_DIR [N] [--check]
#   --check (the ctest bench_loop_poison): fail unless the poison run of
#   4n trips takes at most 5 times the instructions of n trips.
set -euo pipefail
src=${1:?usage: loop_poison.sh SOURCE_DIR BUILD_DIR [N] [--check]}
build=${2:?usage: loop_poison.sh SOURCE_DIR BUILD_DIR [N] [--check]}
n=${3:-2000}
check=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # TRIPS [--poison]: instructions inside mp_rt_run
  valgrind --tool=callgrind --toggle-collect=mp_rt_run \
    --callgrind-out-file="$tmp/cg" "$build/mplan" verify \
    "$src/tests/data/loop_rows.onnx.bin" --value "n=$1" ${2:+"$2"} \
    >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
  grep -q "verified: no event" "$tmp/out" || { cat "$tmp/out"; exit 1; }
  callgrind_annotate "$tmp/cg" 2>/dev/null |
    awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
status=0
printf '| %-8s | %14s | %14s | %7s |\n' mode "n=$n" "n=$((4 * n))" ratio
printf '|----------|----------------|----------------|---------|\n'
for mode in plain poison; do
  flag=""
  [ $mode = poison ] && flag=--poison
  a=$(count "$n" $flag)
  b=$(count $((4 * n)) $flag)
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
  printf '| %-8s | %14s | %14s | %6sx |\n' $mode "$a" "$b" "$ratio"
  if [ "$check" = --check ] && [ $mode = poison ] &&
    awk -v r="$ratio" 'BEGIN { exit !(r > 5) }'; then
    echo "poison: 4x the trips take ${ratio}x the instructions (> 5x: not linear)"
    status=1
  fi
done
exit $status
