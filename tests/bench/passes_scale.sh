#!/usr/bin/env bash
# Scale benchmark of the alias passes (a figure, not a test): chains of K
# DARTS-like blocks with one Concat each (tests/bench/gen_concat_chain.py),
# planned with --passes concat,inplace and --passes all. Every Concat
# placement and every move into a slice is kept only if the lower bound
# does not rise, so each needs the bound; the ratio of the times for 4K
# and K blocks says how that scales (4 linear, 16 quadratic): 4.8 at
# K = 1000 (0.04 and 0.19 s), where it was 22 (1.46 and 32.2 s) before the
# passes kept the bound per step (share.c invariants 3-5). The arena
# is placed by best-fit-size, whose cost is small and linear here, so the
# figure is the passes' (auto's canonical descent is quadratic up to its
# buffer limit and would hide them).
# usage: tests/bench/passes_scale.sh BUILD_DIR [K]
set -eu
build=${1:-build}
k=${2:-1000}
dir=$build/bench-passes
mkdir -p "$dir"
here=$(dirname "$0")
for n in "$k" $((4 * k)); do
  [ -s "$dir/chain.$n.json" ] || python3 "$here/gen_concat_chain.py" "$n" "$dir/chain.$n.json"
done
for passes in concat,inplace all; do
  declare -A secs
  for n in "$k" $((4 * k)); do
    /usr/bin/time -f "%e" -o "$dir/time.txt" \
      "$build/mplan" plan "$dir/chain.$n.json" --passes "$passes" \
      --strategy best-fit-size >"$dir/out.txt"
    secs[$n]=$(cat "$dir/time.txt")
    printf "%6d blocks (%6d ops)  --passes %-15s wall %6.2f s  %s\n" "$n" $((6 * n)) \
      "$passes" "${secs[$n]}" "$(grep -E '^  concat ' "$dir/out.txt" | sed 's/.*  //')"
  done
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'  time ratio 4K/K: {b / max(a, 0.01):.1f} (4 = linear)')" \
    "${secs[$k]}" "${secs[$((4 * k))]}"
done
