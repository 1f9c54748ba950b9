#!/usr/bin/env bash
# ConvInteger on the host: the instructions mp_k_conv_integer executes
# (callgrind, counting inside it only) with k_conv.c compiled as the build
# compiles it on a GCC host (-ftree-vectorize -fvect-cost-model=dynamic,
# CMakeLists.txt) against plain -O2, on four shapes of 64x64 uint8 maps,
# and the output hashes of both, which must agree (integer sums wrap, so
# vectorising changes no bit). Deterministic: fixed data, counts, no
# timing.
#
# usage: conv_integer_host.sh SOURCE_DIR BUILD_DIR [--check]
#   --check (the ctest bench_conv_integer_host): also fail unless the 3x3
#   convolution needs at least 1.5x fewer instructions vectorised.
set -euo pipefail
src=${1:?usage: conv_integer_host.sh SOURCE_DIR BUILD_DIR [--check]}
build=${2:?usage: conv_integer_host.sh SOURCE_DIR BUILD_DIR [--check]}
check=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in plain vec; do
  flags=""
  [ "$v" = vec ] && flags="-ftree-vectorize -fvect-cost-model=dynamic"
  # shellcheck disable=SC2086
  gcc -O2 -ffp-contract=off -std=c11 $flags -I"$src/include" \
    -c "$src/kernels/k_conv.c" -o "$tmp/k_conv_$v.o"
  gcc -O2 -std=c11 -I"$src/include" "$src/tests/bench/bench_conv_integer.c" \
    "$tmp/k_conv_$v.o" "$build/libmp_kernels.a" -lm -o "$tmp/bench_$v"
done
count() { # VARIANT SHAPE: instructions inside mp_k_conv_integer
  valgrind --tool=callgrind --toggle-collect=mp_k_conv_integer \
    --callgrind-out-file="$tmp/cg" "$tmp/bench_$1" "$2" >"$tmp/hash_$1" 2>/dev/null
  callgrind_annotate "$tmp/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
status=0
printf '| %-8s | %14s | %14s | %6s | %s |\n' shape "-O2" "vectorised" ratio "same bits"
printf '|----------|----------------|----------------|--------|-----------|\n'
for shape in conv3x3 conv1x1 stride2 dw3x3; do
  a=$(count plain $shape)
  b=$(count vec $shape)
  same=yes
  cmp -s "$tmp/hash_plain" "$tmp/hash_vec" || { same=NO; status=1; }
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
  printf '| %-8s | %14s | %14s | %5sx | %-9s |\n' $shape "$a" "$b" \
    "$ratio" $same
  if [ "$check" = --check ] && [ $shape = conv3x3 ] &&
    awk -v r="$ratio" 'BEGIN { exit !(r < 1.5) }'; then
    echo "conv3x3: vectorised needs only ${ratio}x fewer instructions (< 1.5x)"
    status=1
  fi
done
exit $status
