#!/usr/bin/env bash
# What the tile pass's patches cost and save (docs/tile.md): for each
# model, the activation lower bound with --passes all and with all,tile,
# the Conv MACs the pass says it recomputes, and the instructions the
# host runner executes for one inference of each plan, counted by
# callgrind (repeatable, unlike time on a shared machine), as a ratio.
# Also checks that both runs give the same output bytes.
#
# usage: tile_cost.sh BUILD_DIR SOURCE_DIR [MODEL.json...]
#   (default: MobileNetV1, MobileNetV2 and ResNet-50 from models/)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=("$src/models/mobilenet_v1.json" \
  "$src/models/mobilenet_v2.json" "$src/models/resnet50.json")
command -v valgrind >/dev/null || { echo "tile_cost.sh: needs valgrind" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mplan=$build/mplan
runner=$build/mplan-runner

lb() { # MODEL PASSES: the activation lower bound
  "$mplan" plan "$1" --passes "$2" --json | python3 -c \
    "import json,sys; print(json.load(sys.stdin)['summary']['lower_bound_bytes'])"
}
insns() { # BUNDLE OUT: instructions of one run of the runner
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$runner" "$1" \
    --seed 11 --outputs "$2" >/dev/null 2>"$tmp/cg.err"
  grep -E '^summary:' "$tmp/cg.out" | awk '{print $2}'
}

printf '%-22s %12s %12s %8s %10s %16s %16s %8s %5s\n' model "all B" \
  "all,tile B" ratio "MACs" "insns all" "insns all,tile" ratio same
for m in "${models[@]}"; do
  name=$(basename "$m" .json)
  a=$(lb "$m" all)
  t=$(lb "$m" all,tile)
  macs=$("$mplan" plan "$m" --passes all,tile | grep '^  tile ' |
    grep -oE 'Conv MACs \+[0-9.]+%' | grep -oE '\+[0-9.]+%' || echo "-")
  "$mplan" compile "$m" --passes all -o "$tmp/a.mpk" >/dev/null
  "$mplan" compile "$m" --passes all,tile -o "$tmp/t.mpk" >/dev/null
  ia=$(insns "$tmp/a.mpk" "$tmp/a.mpt")
  it=$(insns "$tmp/t.mpk" "$tmp/t.mpt")
  same=no
  cmp -s "$tmp/a.mpt" "$tmp/t.mpt" && same=yes
  printf '%-22s %12s %12s %7.2fx %10s %16s %16s %7.3fx %5s\n' "$name" "$a" "$t" \
    "$(python3 -c "print($a / $t)")" "$macs" "$ia" "$it" \
    "$(python3 -c "print($it / $ia)")" "$same"
done
