#!/usr/bin/env bash
# The tile pass (analyzer/passes/tile.c): a CNN's first stage patch by
# patch (bands of output rows, split into columns too), joined by Concats.
#  - MobileNetV1/V2 and ResNet-50: --passes all,tile lowers the lower
#    bound well below --passes all, and gives the outputs of --passes none
#    bit for bit (seeded inputs and weights); MobileNetV2's rewritten plans
#    verify clean in paranoid mode with red zones, in the memory order and
#    with the NPU preset's regions, where the patches keep every activation in
#    its 512 KiB SRAM (without them 1.2 MB spill to DRAM).
#  - 40 seeded random stems (tests/cli/rnd_stem.py: asymmetric pads,
#    strides, dilation, grouped Convs, pooling, residual Adds, NHWC
#    inputs, channels padded by a Concat; f32 and int8): the same outputs
#    with the tile pass as without, and most of
#    them tiled.
#  - 12 more in QDQ form (rnd_stem.py qdq): the same outputs with the tile
#    pass, alone or with every pass, and most of them tiled; a QDQ stem
#    whose residual Add reads a crop of a DequantizeLinear's output
#    (tile_qdq_skip.json): its bound with every pass, its outputs.
#  - A stage whose patches join a second tensor read after it (a skip,
#    tile_skip.json): its bound, its outputs, paranoid verify, and with
#    RV64=1 its outputs under QEMU; 24 seeded random stems with skips
#    (rnd_stem.py SEED OUT DT skip; 8 of them QDQ): the same outputs.
#  - "all" holds no tile; "all,tile" adds it; bad lists exit 2.
#  - With RV64=1, the tiled MobileNetV2 and two f32 stems run on the RVV
#    kernels under qemu-riscv64 with the outputs of --passes none.
#  - PP-OCRv4 det (from the ONNX cache): its first ranked patching is
#    dropped after every pass, its second kept (manager.c invariant 13),
#    with the same outputs, on the host and (RV64=1) on the RVV kernels
#    under qemu-riscv64 at VLEN 256.
#  - BlazeFace (from the ONNX cache, when fetched): a TensorFlow export
#    whose stage starts with the NHWC input's Transpose and pads channels
#    with a ConstantOfShape's zeros joined by a Concat; in patches its
#    bound falls, with the same outputs.
# usage: test_tile.sh MPLAN MPLAN_RUNNER SOURCE_DIR [RV64 [ONNX_CACHE]]
set -u
mplan=$1
runner=$2
src=$3
rv64=${4:-0}
cache=${5:-}
. "$(dirname "$0")/lib.sh"

py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
lb() { # MODEL ARGS...: the activation lower bound
  "$mplan" plan "$@" --json | python3 -c \
    "import json,sys; print(json.load(sys.stdin)['summary']['lower_bound_bytes'])"
}

for m in mobilenet_v1 mobilenet_v2 resnet50; do
  model=$src/models/$m.json
  a=$(lb "$model" --passes all)
  t=$(lb "$model" --passes all,tile)
  # MCUNetV2's point: the first stage's activations dominate, and in bands
  # the bound falls (MobileNetV2's to under a quarter: its 112x112 maps)
  q=1
  [ "$m" = mobilenet_v2 ] && q=4
  if [ -n "$t" ] && [ -n "$a" ] && [ "$t" -lt "$a" ] && [ $((t * q)) -le "$a" ]; then
    ok
  else
    bad "$m: --passes all,tile bound $t B against all's $a B (wanted under 1/$q)"
  fi
  "$mplan" plan "$model" --passes tile >"$tmp/out" 2>&1
  if grep -Eq '^  tile .* patches [0-9]+; [0-9]+ x [0-9]+ of [0-9]+ ops up to' "$tmp/out"; then
    ok
  else
    bad "$m: no tile row with its patches: $(grep ' tile ' "$tmp/out")"
  fi
  # (in file order: MobileNetV2's plan in the memory order runs below,
  # verified in paranoid mode against a no-reuse run)
  outputs "$model" "$m.none" --passes none || continue
  outputs "$model" "$m.tile" --passes all,tile || continue
  if cmp -s "$tmp/$m.none.mpt" "$tmp/$m.tile.mpt"; then
    ok
  else
    bad "$m: outputs with --passes all,tile differ from --passes none"
  fi
done

# seed 000 section 7's case: the NPU preset's 512 KiB SRAM does not hold
# MobileNetV2's activations (1.2 MB spill to DRAM); in patches they all fit
"$mplan" plan "$src/models/mobilenet_v2.json" --backend npu --passes all >"$tmp/out" 2>&1
if grep -Eq '^            dram .*activations [1-9][0-9,]* B \([0-9]+ spilled' "$tmp/out"; then
  ok
else
  bad "npu without tile: no spill to dram: $(grep dram "$tmp/out")"
fi
"$mplan" plan "$src/models/mobilenet_v2.json" --backend npu --passes all,tile >"$tmp/out" 2>&1
if grep -Eq '^            dram .*activations 0 B$' "$tmp/out" &&
  grep -Eq '^regions     sram .*activations [0-9,]+ B$' "$tmp/out"; then
  ok
else
  bad "npu with tile: $(grep -E 'sram|dram' "$tmp/out" | tr '\n' ' ')"
fi
verify "$src/models/mobilenet_v2.json" --passes all,tile --order memory
# the patches side by side: the memory order runs the two largest (239,120
# B at their peak op) first and second, and the branch bound proves that
# optimal (schedule_memory.c invariant 11); file order 254,800 B
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all,tile --order memory \
  --json >"$tmp/m2m.json"
s=$(py "$tmp/m2m.json" "(d['summary']['lower_bound_bytes'], d['schedule']['optimal'], d['schedule']['branch_bound_segments'], [c['peak_bytes'] for c in d['schedule']['candidates'] if c['name'] == 'file'])")
[ "$s" = "(242256, True, 1, [254800])" ] && ok ||
  bad "mobilenet_v2 all,tile memory: (bound, optimal, branch-bound segments, file) = $s"
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all,tile --order memory >"$tmp/out" 2>&1
grep -Eq '^schedule    memory: 1 segment \(largest [0-9]+ ops\), 0 met the step bound, 1 the branch bound, .*; optimal for this graph$' "$tmp/out" &&
  ok || bad "mobilenet_v2 all,tile memory: $(grep '^schedule' "$tmp/out")"
# explain says it under its header
"$mplan" explain "$src/models/mobilenet_v2.json" --passes all,tile --order memory \
  --no-what-if --no-map >"$tmp/out" 2>&1
grep -qx "memory order 242,256 B (236.58 KiB), 1.052x lower than file (254,800 B); optimal: of 1 segment, 0 met the step bound, 1 the branch bound, 0 were searched to the end" "$tmp/out" &&
  ok || bad "explain mobilenet_v2 all,tile memory: $(sed -n 5p "$tmp/out")"
verify "$src/models/mobilenet_v2.json" --passes all,tile --backend npu

# explain says what the patches (and the other settings) would give: the
# figure plan gives for --passes all,tile, with the patches it chose
t=$(lb "$src/models/mobilenet_v2.json" --passes all,tile)
tf=$(python3 -c "print(f'{$t:,}')")
"$mplan" explain "$src/models/mobilenet_v2.json" --no-map >"$tmp/out" 2>&1
if grep -q '^What else lowers the bound' "$tmp/out" &&
  grep -Eq "^  --passes all,tile +$tf B  \(-[0-9.]+%\)  patches [0-9]+ x [0-9]+ of [0-9]+ ops up to 'b4_project_out'" "$tmp/out" &&
  grep -Eq '^  --passes all +1,404,928 B' "$tmp/out" &&
  [ "$(grep -c '^  --' "$tmp/out")" = 5 ]; then
  ok
else
  bad "explain what-if: $(sed -n '/^What else/,$p' "$tmp/out" | tr '\n' '|')"
fi
"$mplan" explain "$src/models/mobilenet_v2.json" --no-map --passes all,tile >"$tmp/out" 2>&1
# the settings asked for are not offered again, nor one twice
if [ "$(grep -c '^  --' "$tmp/out")" = 3 ] && ! grep -Eq '^  --passes all,tile +[0-9]' "$tmp/out" &&
  [ "$(grep '^  --' "$tmp/out" | awk '{print $1, $2, $3, $4}' | sort | uniq -d)" = "" ]; then
  ok
else
  bad "explain --passes all,tile what-if: $(grep '^  --' "$tmp/out" | tr '\n' '|')"
fi
"$mplan" explain "$src/models/mobilenet_v2.json" --no-map --no-what-if >"$tmp/out" 2>&1
if grep -q 'What else' "$tmp/out"; then bad "--no-what-if printed it"; else ok; fi
"$mplan" plan "$src/models/mobilenet_v2.json" --json >"$tmp/p.json"
"$mplan" explain "$tmp/p.json" --no-map >"$tmp/out" 2>&1
if grep -q 'What else' "$tmp/out"; then bad "explain PLAN.json printed a what-if"; else ok; fi

# --what-if puts the same figures in the plan JSON, the SQLite history
# and the summary: the all,tile row is what plan gives for all,tile
rm -f "$tmp/wi.db"
"$mplan" plan "$src/models/mobilenet_v2.json" --what-if -o "$tmp/wi.json" \
  --sqlite "$tmp/wi.db" >"$tmp/out" 2>&1
why=$(python3 - "$tmp/wi.json" "$tmp/wi.db" "$t" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
rows = sqlite3.connect(sys.argv[2]).execute(
    "SELECT setting, passes, order_name, lower_bound_bytes, tile_outcome, "
    "tile_bands, tile_columns FROM what_if ORDER BY seq").fetchall()
w = d.get("what_if", [])
bad = []
if len(w) != 5 or len(rows) != 5:
    bad.append("%d rows in JSON, %d in SQLite" % (len(w), len(rows)))
for j, r in zip(w, rows):
    t = j.get("tile") or {}
    if (j["setting"], j["passes"], j["order"], j["lower_bound_bytes"],
            t.get("outcome"), t.get("bands"), t.get("columns")) != r:
        bad.append("%s against %s" % (j, r))
tile = [j for j in w if j["setting"] == "--passes all,tile"]
if not tile or tile[0]["lower_bound_bytes"] != int(sys.argv[3]) or \
        tile[0]["tile"]["outcome"] != "kept" or tile[0]["order"] != "file":
    bad.append("all,tile row %s, plan gives %s" % (tile, sys.argv[3]))
print("; ".join(bad))
PY
)
if [ -z "$why" ] && grep -Eq "^  --passes all,tile +$tf B" "$tmp/out"; then
  ok
else
  bad "plan --what-if: $why $(grep -c '^  --' "$tmp/out") lines"
fi

# a strategy that does not reuse: what auto and the exact search would
# place instead (both at the lower bound), in the text, JSON and SQLite;
# with auto the text says no strategy places lower
rm -f "$tmp/wi.db"
"$mplan" plan "$src/models/mobilenet_v2.json" --strategy linear --what-if \
  -o "$tmp/wi.json" --sqlite "$tmp/wi.db" >"$tmp/out" 2>&1
why=$(python3 - "$tmp/wi.json" "$tmp/wi.db" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
lb = d["summary"]["lower_bound_bytes"]
w = [r for r in d["what_if"] if r.get("strategy")]
rows = sqlite3.connect(sys.argv[2]).execute(
    "SELECT strategy, activation_arena_bytes FROM what_if WHERE strategy "
    "IS NOT NULL ORDER BY seq").fetchall()
bad = []
if [r["strategy"] for r in w] != ["auto", "exact"]:
    bad.append("strategies %s" % [r["strategy"] for r in w])
if any(r["activation_arena_bytes"] != lb for r in w):
    bad.append("arenas %s, lower bound %d" % (w, lb))
if rows != [(r["strategy"], r["activation_arena_bytes"]) for r in w]:
    bad.append("SQLite %s" % rows)
if d["summary"]["activation_peak_bytes"] <= lb:
    bad.append("linear at the lower bound?")
print("; ".join(bad))
PY
)
if [ -z "$why" ] && grep -q '^What another strategy places' "$tmp/out" &&
  [ "$(grep -c 'at the lower bound$' "$tmp/out")" = 2 ]; then
  ok
else
  bad "plan --strategy linear --what-if: $why $(sed -n '/^What another/,$p' "$tmp/out" | tr '\n' '|')"
fi
"$mplan" explain "$src/models/mobilenet_v2.json" --no-map >"$tmp/out" 2>&1
if grep -q '^No strategy places the activations lower' "$tmp/out" &&
  ! grep -q '^What another strategy' "$tmp/out"; then
  ok
else
  bad "explain at the lower bound: $(tail -3 "$tmp/out" | tr '\n' '|')"
fi

# explain says which patch the peak step computes
"$mplan" explain "$src/models/mobilenet_v2.json" --passes all,tile --no-map --no-what-if >"$tmp/out" 2>&1
if grep -A1 '^Peak ' "$tmp/out" | grep -Eq "^  step [0-9]+ 'b2_expand.t2x1' \(Conv\), patch \(2, 1\) of op 'b2_expand'$"; then
  ok
else
  bad "explain's peak step: $(grep -A1 '^Peak ' "$tmp/out" | tr '\n' '|')"
fi

# mplan diff says what each tensor of the patches is, from every source a
# snapshot is made from: two plans, the plan against a model, a baseline,
# runs of a report database (and the other way round: vanished)
"$mplan" plan "$src/models/mobilenet_v2.json" -o "$tmp/d0.json" >/dev/null
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all,tile -o "$tmp/d1.json" >/dev/null
"$mplan" check "$src/models/mobilenet_v2.json" --passes all,tile \
  --baseline "$tmp/d1.bl.json" --update-baseline >/dev/null
rm -f "$tmp/d.db"
"$mplan" report "$src/models/mobilenet_v2.json" --sqlite "$tmp/d.db" >/dev/null
"$mplan" report "$src/models/mobilenet_v2.json" --passes all,tile --sqlite "$tmp/d.db" >/dev/null
want="  (patch (1, 1) of op 'b2_expand', pass 'tile')"
for b in "$tmp/d1.json" "$tmp/d1.bl.json" "$tmp/d.db:2"; do
  a=$tmp/d0.json
  case $b in *.db:2) a=$tmp/d.db:1 ;; esac
  if "$mplan" diff "$a" "$b" >"$tmp/out" 2>&1 &&
    grep 'appeared  b2_expand_out.t1x1 ' "$tmp/out" | grep -qF "$want"; then
    ok
  else
    bad "diff $(basename "$a") $(basename "$b"): $(grep -E 'appeared|error' "$tmp/out" | head -2)"
  fi
done
if "$mplan" diff "$tmp/d1.json" "$src/models/mobilenet_v2.json" >"$tmp/out" 2>&1 &&
  grep 'vanished  b2_expand_out.t1x1 ' "$tmp/out" | grep -qF "$want" &&
  "$mplan" diff "$tmp/d0.json" "$tmp/d1.json" --json >"$tmp/d.json" &&
  [ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=[t['patch'] for t in d['tensors']['changed'] if t.get('patch')]; print(len(p) > 80 and any(x.startswith('band 1 of ') for x in p) and any(x.startswith('the part of ') for x in p))" "$tmp/d.json")" = True ]; then
  ok
else
  bad "diff with the patches on the old side, or its JSON: $(grep -E 'vanished' "$tmp/out" | head -1)"
fi

# the choice is in every report: the plan JSON's passes.tile and each
# patch op's execution[].patch agree with the SQLite tile and tile_op
# rows (tests/cli/tile_rec.py); a graph with nothing to gain says so
rec() { # OUTCOME MODEL ARGS...
  local want=$1 model=$2
  shift 2
  rm -f "$tmp/rec.db"
  if ! "$mplan" plan "$model" -o "$tmp/rec.json" --sqlite "$tmp/rec.db" "$@" >/dev/null 2>"$tmp/err"; then
    bad "$model $*: $(cat "$tmp/err")"
    return
  fi
  local why
  why=$(python3 "$src/tests/cli/tile_rec.py" "$tmp/rec.json" "$tmp/rec.db" "$want" 2>&1)
  if [ -z "$why" ]; then ok; else bad "$model $* (record): $why"; fi
}
rec kept "$src/models/mobilenet_v2.json" --passes all,tile
rec kept "$src/tests/data/passes/tile_stem.json" --passes tile
rec "no gain" "$src/tests/data/passes/tile_late.json" --passes tile
# a patching that joins a second tensor (an export): the JSON and SQLite
# name it, and its joins are the only ones besides the cut's
rec kept "$src/tests/data/passes/tile_skip.json" --passes all,tile
[ "$(py "$tmp/rec.json" "d['passes']['tile']['exports']")" = "['p1']" ] && ok ||
  bad "tile_skip.json: exports $(py "$tmp/rec.json" "d['passes']['tile'].get('exports')")"
# tiled, then dropped: after every pass the bound is the same without
rec dropped "$src/tests/data/passes/tile_stem.json" --passes all,tile
det=$cache/ocr/ch_PP-OCRv4_det_infer.onnx
if [ -n "$cache" ] && [ -f "$det" ]; then
  # the first ranked patching is dropped after every pass (a fusion
  # across its cut no longer applies: 1,048,576 B against 786,432 B
  # without), the second ranked, the best after every pass in file order,
  # is kept (manager.c invariant 13), with the outputs of --passes none.
  # The ranking keeps one cut per last Conv (tile.c): it was the fifth of
  # 12, behind cuts that only moved past ops after the first's Conv
  rec kept "$det" --passes all,tile --shape x=1x3x128x128
  run 0 plan "$det" --shape x=1x3x128x128 --passes all,tile --order memory -o "$tmp/det.json" &&
    has "$tmp/out" "lower bound 532,992 B" &&
    has "$tmp/out" "after every pass in file order, patching 2 of 8 ranked 571392 B, the first 1048576 B; in the order planned 532992 against 1048576 B: built it; kept: 532992 B after every pass, 786432 B without the patches"
  [ "$(py "$tmp/det.json" "tuple(d['passes']['tile'][k] for k in ('ranked', 'picked', 'built', 'lower_bound_picked_file', 'lower_bound_first_file', 'lower_bound_with'))")" = "(8, 1, 1, 571392, 1048576, 532992)" ] && ok ||
    bad "det: passes.tile does not name the second ranked patching"
  outputs "$det" det.none --shape x=1x3x128x128 --passes none || true
  outputs "$det" det.tile --shape x=1x3x128x128 --passes all,tile --order memory || true
  if [ -s "$tmp/det.tile.mpt" ] && cmp -s "$tmp/det.none.mpt" "$tmp/det.tile.mpt"; then
    ok
  else
    bad "det: outputs with --passes all,tile differ from --passes none"
  fi
fi

bf=$cache/blazeface/face_detection_front_128x128_barracuda.onnx
if [ -n "$cache" ] && [ -f "$bf" ]; then
  a=$(lb "$bf" --passes all)
  outputs "$bf" bf.none --passes none || true
  # compiled with the memory order, whose plan (--plan) says more below
  outputs "$bf" bf.tile --passes all,tile --order memory --plan "$tmp/bf.m.json" || true
  if [ -s "$tmp/bf.tile.mpt" ] && cmp -s "$tmp/bf.none.mpt" "$tmp/bf.tile.mpt"; then
    ok
  else
    bad "blazeface: outputs with --passes all,tile differ from --passes none"
  fi
  # under --order memory the final order comes from a round of manager.c
  # invariant 9 (a depthwise Conv's output kept apart), measured after
  # the last pass: its search has its share of the work (invariant 5),
  # not the single unit that was left once the pass before took the rest
  t=$(py "$tmp/bf.m.json" "d['summary']['lower_bound_bytes']")
  if [ -n "$t" ] && [ "$t" -lt "$a" ] &&
    [ "$(py "$tmp/bf.m.json" "d['schedule']['work_budget'] > 10000000")" = True ]; then
    ok
  else
    bad "blazeface: --passes all,tile --order memory bound $t B against all's $a B, or its search had no work"
  fi
  # each patch fills its own crop of the zeros that pad channels (tile.c
  # invariant 4: 2 fills x 4 patches, no input), and no op reads a whole
  # fill; the first ranked cut (deeper: +24% MACs) is 469,968 B after
  # every pass, the second 450,560 B, which meets the step bound
  [ "$(py "$tmp/bf.m.json" "(d['summary']['lower_bound_bytes'], d['schedule']['bound_bytes'], d['schedule']['optimal'], d['passes']['tile']['picked'], d['passes']['tile']['lower_bound_first_file'], sum(1 for e in d['execution'] if e['type'] == 'ConstantOfShape' and e.get('patch') and not e['inputs']), sum(1 for e in d['execution'] for i in e['inputs'] if i.endswith(('/Pad_pad', '/Pad_1_pad'))))")" = "(450560, 450560, True, 1, 469968, 8, 0)" ] && ok ||
    bad "blazeface: --passes all,tile --order memory is not the proven 450,560 B from per-patch fills"
fi

# same_outputs MODEL WHAT ARGS...: compiled with ARGS, the outputs of
# --passes none (WHAT names the case when they differ); 1 if either
# does not compile or run
same_outputs() {
  local m=$1 what=$2
  shift 2
  outputs "$m" so.none --passes none || return 1
  outputs "$m" so.x "$@" || return 1
  if cmp -s "$tmp/so.none.mpt" "$tmp/so.x.mpt"; then
    ok
  else
    bad "$what: outputs with $* differ from --passes none"
  fi
}

# random stems: same outputs, and the pass really tiles most of them
tiled=0
cols=0
tin=0
padc=0
for s in $(seq 1 40); do
  dt=f32
  [ $((s % 2)) = 0 ] && dt=i8
  python3 "$src/tests/cli/rnd_stem.py" "$s" "$tmp/st.json" "$dt"
  same_outputs "$tmp/st.json" "rnd_stem.py $s $dt" --passes tile || continue
  "$mplan" plan "$tmp/st.json" --passes tile >"$tmp/out" 2>&1
  grep -q ' patches [0-9]' "$tmp/out" && tiled=$((tiled + 1))
  grep -Eq ' patches [0-9]+; [0-9]+ x [2-9]' "$tmp/out" && cols=$((cols + 1))
  if grep -q ' patches [0-9]' "$tmp/out"; then
    grep -q '"Transpose"' "$tmp/st.json" && tin=$((tin + 1))
    grep -q '"ConstantOfShape"' "$tmp/st.json" && padc=$((padc + 1))
  fi
done
# tiled stems that start with an NHWC input's Transpose, or pad channels
if [ "$tin" -ge 3 ] && [ "$padc" -ge 3 ]; then
  ok
else
  bad "tiled stems: $tin with a Transpose input, $padc with padded channels"
fi
if [ "$tiled" -ge 25 ]; then ok; else bad "only $tiled of 40 stems tiled"; fi
# some in patches of columns too, not only bands of rows
if [ "$cols" -ge 3 ]; then ok; else bad "only $cols of 40 stems split into columns"; fi

# The stems below are compiled in the memory order with a small search
# budget: any order gives the same outputs, and the default budget's
# search of a stem's patches (one segment of 8 to 24 patches) took 3 to 6
# s a stem, several times that under ASan
stem_work=2000000

# random stems in QDQ form: the pairs (per tensor and per channel) and
# the weights' DequantizeLinears are part of the stage, and an NHWC input
# quantized before its Transpose too; the same outputs with the tile pass
# alone (odd seeds) and with every pass (even: absorb then takes the pairs
# into the copies)
tiled=0
tin=0
for s in $(seq 41 52); do
  python3 "$src/tests/cli/rnd_stem.py" "$s" "$tmp/st.json" qdq
  p=tile
  [ $((s % 2)) = 0 ] && p=all,tile
  same_outputs "$tmp/st.json" "rnd_stem.py $s qdq" --passes $p \
    --order memory --order-work $stem_work || continue
  "$mplan" plan "$tmp/st.json" --passes tile >"$tmp/out" 2>&1
  if grep -q ' patches [0-9]' "$tmp/out"; then
    tiled=$((tiled + 1))
    grep -q '"Transpose"' "$tmp/st.json" && tin=$((tin + 1))
  fi
done
if [ "$tiled" -ge 7 ] && [ "$tin" -ge 2 ]; then
  ok
else
  bad "qdq stems: $tiled of 12 tiled, $tin of them quantized NHWC before the Transpose"
fi

# random stems whose tail also reads one or two of their tensors (skips):
# cuts after a skip join it from the patches too (an export); the same
# outputs with the tile pass, and with every pass for the QDQ ones
tiled=0
exp=0
for s in $(seq 1 16) $(seq 41 48); do
  dt=f32
  [ $((s % 2)) = 0 ] && dt=i8
  p=tile
  [ "$s" -gt 40 ] && dt=qdq && [ $((s % 2)) = 0 ] && p=all,tile
  python3 "$src/tests/cli/rnd_stem.py" "$s" "$tmp/st.json" "$dt" skip
  same_outputs "$tmp/st.json" "rnd_stem.py $s $dt skip" --passes $p \
    --order memory --order-work $stem_work || continue
  "$mplan" plan "$tmp/st.json" --passes tile >"$tmp/out" 2>&1
  grep -q ' patches [0-9]' "$tmp/out" && tiled=$((tiled + 1))
  grep -q 'also joins' "$tmp/out" && exp=$((exp + 1))
done
if [ "$tiled" -ge 10 ] && [ "$exp" -ge 6 ]; then
  ok
else
  bad "skip stems: $tiled of 24 tiled, $exp of them joining an export"
fi

# same_tiled MODEL ORDER: the outputs of --passes none with tile and with
# all,tile in ORDER, and all,tile verifies clean
same_tiled() {
  local p
  for p in tile all,tile; do
    same_outputs "$1" "$(basename "$1")" --passes $p --order "$2"
  done
  verify "$1" --passes all,tile --order "$2"
}

# a residual Add reading less of a DequantizeLinear's output than the
# patch holds: its part is the DequantizeLinear of a Slice of the 8-bit
# input, so absorb still hands the Add and the Conv the integers (a Slice
# of the f32 output kept it whole: 25,168 B, and the patches were
# dropped); the outputs of --passes none
qs=$src/tests/data/passes/tile_qdq_skip.json
run 0 plan "$qs" --passes all,tile --order memory &&
  has "$tmp/out" "lower bound 8,624 B" &&
  has "$tmp/out" "patches 8; 4 x 2 of 16 ops up to 'c3q' (16 x 16)" &&
  has "$tmp/out" "kept: 8624 B after every pass, 20480 B without the patches"
same_tiled "$qs" memory

# a stage that leaves a second tensor to later ops (a skip a pool reads
# after the stage): its parts are joined from the patches as well as T's,
# and the stage can go on past it: 40,976 B -> 16,576 B (without the
# join, the last cut is the skip itself and nothing lowers the bound);
# its outputs in file order (the memory order's search of its 8 patches
# takes 35 s under ASan)
sk=$src/tests/data/passes/tile_skip.json
run 0 plan "$sk" --passes all,tile --order memory &&
  has "$tmp/out" "lower bound 16,576 B" &&
  has "$tmp/out" "patches 8; 4 x 2 of 5 ops up to 'p2' (16 x 16)" &&
  has "$tmp/out" "also joins 'p1'; kept: 16576 B after every pass, 40976 B without the patches"
run 0 plan "$sk" --passes all,tile && has "$tmp/out" "lower bound 20,480 B"
# explain's what-if names the export with the patches
run 0 explain "$sk" --no-map &&
  has "$tmp/out" "  --passes all,tile                          20,480 B  (-58.3%)  patches 4 x 2 of 5 ops up to 'p2' (16 x 16), Conv MACs +11.2%; also joins 'p1'"
same_tiled "$sk" file

# channels padded by a ConstantOfShape's zeros: each patch fills its own
# crop (tile.c invariant 4; test_passes checks the graph), a fill of no
# input that compile lowers and the runtime runs: the outputs of
# --passes none, and a clean verify
pd=$src/tests/data/passes/tile_pad.json
run 0 plan "$pd" --passes tile &&
  has "$tmp/out" "patches 10; 5 x 2 of 6 ops up to 'c3' (32 x 16)"
same_tiled "$pd" file

# the pass list: all leaves tile out; all,tile adds it
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all >"$tmp/out" 2>&1
if grep -q '^passes .*tile' "$tmp/out"; then bad "--passes all ran tile"; else ok; fi
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all,tile >"$tmp/out" 2>&1
if grep -q '^passes      fold, eliminate, tile, accumulate' "$tmp/out"; then
  ok
else
  bad "--passes all,tile: $(grep '^passes' "$tmp/out")"
fi
"$mplan" plan "$src/models/mobilenet_v2.json" --passes all,fuse >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
  grep -q "pass 'fuse' is listed twice ('all' holds it)" "$tmp/err" &&
  [ ! -s "$tmp/out" ]; then
  ok
else
  bad "--passes all,fuse: exit $rc, $(cat "$tmp/err")"
fi

if [ "$rv64" = 1 ]; then
  rv64_same "$src/models/mobilenet_v2.json" 128 all,tile
  python3 "$src/tests/cli/rnd_stem.py" 3 "$tmp/st3.json" f32
  rv64_same "$tmp/st3.json" 256 all,tile
  python3 "$src/tests/cli/rnd_stem.py" 8 "$tmp/st8.json" i8
  rv64_same "$tmp/st8.json" 512 all,tile
  verify "$src/models/mobilenet_v2.json" --passes all,tile --target rv64 \
    --vlen 256
  rv64_same "$qs" 128 all,tile --order memory
  rv64_same "$sk" 256 all,tile
  rv64_same "$pd" 128 tile
  # PP-OCRv4 det in its kept patches (13 s a run under QEMU at 128 x 128)
  if [ -n "$cache" ] && [ -f "$det" ]; then
    rv64_same "$det" 256 all,tile --shape x=1x3x128x128 --order memory
  fi
fi

echo "tile cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
