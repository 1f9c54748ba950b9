#!/usr/bin/env bash
# The browser test: renders HTML reports with MPLAN and checks each one in
# headless chromium (test_viewer.mjs): a graph (with its drawing), a
# lifetime table, a minimalloc CSV and a model without any activation. Screenshots are kept as artefacts
# in DIR/artifacts/.
# usage: run.sh MPLAN SOURCE_DIR DIR   (DIR prepared by setup.sh)
set -u
mplan=$1
src=$2
dir=$3
out=$dir/artifacts
mkdir -p "$out"
fail=0
check() { # MODEL NAME GRAPH [HOVER [PLANNING FLAGS...]]
  local model=$1 name=$2 graph=$3 hover=${4:-}
  [ "${model#/}" = "$model" ] && model=$src/$1
  shift 3
  [ $# -gt 0 ] && shift
  "$mplan" plan "$model" -o "$out/$name.plan.json" "$@" >/dev/null &&
    "$mplan" report "$model" --html "$out/$name.html" "$@" >/dev/null || {
    echo "FAIL: mplan could not report $1"
    fail=1
    return
  }
  echo "== $name"
  node "$dir/test_viewer.mjs" --html "$out/$name.html" --plan "$out/$name.plan.json" \
    --out "$out" --name "$name" --graph "$graph" ${hover:+--hover "$hover"} || fail=1
}
check models/mobilenet_v2.json mobilenet_v2 yes b2_expand_out
check models/seed_example.json seed_example yes conv_y
check tests/data/input.12.csv input12 yes
check tests/data/all_resident.json all_resident yes w1 # no activation: no peak
# Graph passes and the memory-aware order (issue 9): the passes table.
check models/resnet50.json resnet50_passes yes s1b1_c_out --passes all --order memory
# A memory order cut short (RandWire seed 2 at 64 states a level): the
# line says it is not proven and names the bound every order has.
python3 "$src/tests/bench/gen_cells.py" "$out" --randwire 1 --darts 0 --seed 2 >/dev/null
check "$out/randwire_2.json" randwire_cut yes conv1_1_out --order memory --order-states 64
# Concat slices: the buffer 'a' holds b at +2048 and the Concat's output c.
check tests/data/passes/concat.json concat_passes yes a --passes all
# In place into a slice: the buffer b0 holds b1 at +512 and n1 written
# over it (hover lands on the buffer's rectangle).
check tests/data/passes/concat_add.json concat_add_passes yes b0 --passes all --order memory
# Patches (tile): the tile line and the grid of the 4 x 2 patches; with
# --what-if, the table of the lower bounds under the other settings.
check models/mobilenet_v2.json mobilenet_v2_tile yes b5_expand_out --passes all,tile --what-if
# A patching that joins a skip too: the tile line names it.
check tests/data/passes/tile_skip.json tile_skip yes p1 --passes all,tile
# Names as long as real exporters write them (tf2onnx joins the ops a
# tensor passed through: M-LSD's run to 200 characters and more): every
# table, caption and line wraps inside a name, and the page keeps the
# window's width (the fusions' op column and the drill-down's names and
# captions made M-LSD's report 1,898 px wide, QDQ M-LSD's 3,476).
# long_names SRC OUT: SRC with every tensor and op name made long
long_names() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
long = lambda n: "Model_with_alpha/" * 12 + n + "/Conv2D_Relu6_FusedBatchNormV3:0"
ren = {t["name"]: long(t["name"]) for t in d["tensors"]}
for t in d["tensors"]:
    t["name"] = ren[t["name"]]
for o in d["ops"]:
    o["name"] = long(o["name"])
    o["inputs"] = [ren.get(i, i) for i in o["inputs"]]
    o["outputs"] = [ren.get(i, i) for i in o["outputs"]]
d["outputs"] = [ren.get(i, i) for i in d["outputs"]]
json.dump(d, open(sys.argv[2], "w"))
PY
}
long_names "$src/tests/data/passes/convnet.json" "$out/long_names.json"
check "$out/long_names.json" long_names yes "" --passes all,tile --order memory
# and a verification's events, their tensors, ops and details as long
# (an early free injected on a small float network's Conv output)
long_names "$src/tests/data/tiny_net.json" "$out/long_verify.json"
c=$(python3 -c 'import json,sys; print([t["name"] for t in json.load(open(sys.argv[1]))["tensors"] if t["name"].endswith("/c/Conv2D_Relu6_FusedBatchNormV3:0")][0])' "$out/long_verify.json")
"$mplan" verify "$out/long_verify.json" --paranoid --inject "early-free:$c" \
  --html "$out/long_verify.html" >/dev/null
echo "== long_verify"
node "$dir/test_viewer.mjs" --html "$out/long_verify.html" --plan none \
  --out "$out" --name long_verify --events 2 || fail=1
# --what-if with a strategy that does not reuse: what auto and the exact
# search would place instead.
check models/seed_example.json seed_linear yes conv_y --strategy linear --what-if
exit $fail
