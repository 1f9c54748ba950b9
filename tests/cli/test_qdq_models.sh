#!/usr/bin/env bash
# Real networks in QDQ form: BlazeFace front (opset 12), PP-OCRv4 det
# (opset 11, at 1x3x160x160) and M-LSD tiny (opset 11, 320 x 320) from
# the ONNX cache, rewritten by
# tests/cli/qdq_model.py as static quantizers lay a model out (every
# Conv's, MatMul's and Gemm's activation QuantizeLinear'd and
# DequantizeLinear'd, uint8 per tensor; its weight int8 with a
# DequantizeLinear, per tensor below opset 13). With every pass, the
# absorb pass folds both DequantizeLinears into each Conv that reads the
# activation (the input widened a band of output rows at a time, the
# weight a panel of channels; a pair shared by two or three Convs into
# each of them: 5 more Convs in BlazeFace, 6 in det), and the fuse pass
# ends each
# Conv's chain in the QuantizeLinear that reads it (its f32 output never
# stored whole: BlazeFace's bound 950,272 -> 655,360 B; 13 depthwise
# Convs written over their 8-bit inputs, 602,112 B, two stride-2 ones kept
# apart since the bound is lower without them): the lower bounds
# below, the outputs those of the unrewritten graph bit for bit, on the
# host and under QEMU. (tests/ort/test_ort.sh compares the same models with ONNX
# Runtime.)
# usage: test_qdq_models.sh MPLAN RUNNER SOURCE_DIR RV64 CACHE
set -u
mplan=$1 runner=$2 src=$3 rv64=${4:-0} cache=${5:-}
. "$(dirname "$0")/lib.sh"
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

bf=$cache/blazeface/face_detection_front_128x128_barracuda.onnx
det=$cache/ocr/ch_PP-OCRv4_det_infer.onnx
if [ -z "$cache" ] || [ ! -f "$bf" ] || [ ! -f "$det" ]; then
  echo "test_qdq_models: the ONNX cache is not fetched" >&2
  exit 1
fi
python3 "$src/tests/cli/qdq_model.py" "$bf" "$tmp/bf.onnx" >"$tmp/out" &&
  has "$tmp/out" "opset 12, 34 activations and 37 weights quantized (weights per tensor)"
python3 "$src/tests/cli/qdq_model.py" "$det" "$tmp/det.onnx" >"$tmp/out" &&
  has "$tmp/out" "opset 11, 59 activations and 62 weights quantized (weights per tensor)"
# PP-OCR cls is opset 9, before QuantizeLinear: refused, no file written
if python3 "$src/tests/cli/qdq_model.py" "$cache/ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx" \
  "$tmp/cls.onnx" 2>"$tmp/err"; then
  bad "qdq_model.py took an opset 9 model"
else
  has "$tmp/err" "opset 9 has no QuantizeLinear (10 or later)"
  [ ! -e "$tmp/cls.onnx" ] && ok || bad "qdq_model.py wrote a file for an opset 9 model"
fi

# qdq_pair MODEL LABEL NONE ALL PAIRS [ARGS]: lower bounds with --passes
# none and all, how many ops took both DequantizeLinears, and the outputs
# of both plans bit for bit the same
qdq_pair() {
  local model=$1 label=$2 none=$3 all=$4 pairs=$5
  shift 5
  run 0 plan "$model" "$@" --passes none --order memory && has "$tmp/out" "lower bound $none B"
  run 0 plan "$model" "$@" --passes all --order memory -o "$tmp/$label.json" &&
    has "$tmp/out" "lower bound $all B" && has "$tmp/out" "validated: no two live buffers share a byte"
  [ "$(py "$tmp/$label.json" "sum(1 for e in d['execution'] if e.get('prologue') == 'DequantizeLinear:0,DequantizeLinear:1')")" = "$pairs" ] && ok ||
    bad "$label: not $pairs ops with both DequantizeLinears"
  outputs "$model" "$label.none" "$@" --passes none || return
  outputs "$model" "$label.all" "$@" --passes all --order memory || return
  if cmp -s "$tmp/$label.none.mpt" "$tmp/$label.all.mpt"; then
    ok
  else
    bad "$label: outputs with --passes all differ from --passes none"
  fi
}
qdq_pair "$tmp/bf.onnx" bf 1,376,256 602,112 37
# qdq_tile LABEL BOUND PATCHES ARGS...: the model qdq_pair planned as
# LABEL, with --passes all,tile in the memory order: lower bound BOUND,
# the tile row's PATCHES, and the outputs of --passes none. The outputs
# in QDQ_TILE_ORDER (memory by default: then the plan checked is the one
# compile --plan writes for the bundle, searched once)
# Under the sanitizers (MPLAN_SANITIZED, set by CMake) the figures
# that only a separate memory-order plan of M-LSD checks are left to the
# plain build: the same search code runs under ASan on the other models,
# and those two plans took 95 s there
figures=1
[ -n "${MPLAN_SANITIZED:-}" ] && figures=0
qdq_tile() {
  local label=$1 bound=$2 patches=$3 order=${QDQ_TILE_ORDER:-memory}
  shift 3
  local keep=()
  if [ "$order" = memory ]; then
    keep=(--plan "$tmp/$label.tile.json")
  elif [ "$figures" = 1 ]; then
    run 0 plan "$@" --passes all,tile --order memory &&
      has "$tmp/out" "lower bound $bound B" && has "$tmp/out" "$patches"
  fi
  outputs "$@" "$label.tile" --passes all,tile --order "$order" "${keep[@]}" || return
  if [ "$order" = memory ]; then
    [ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['summary']['lower_bound_bytes'], any(sys.argv[2] in (r.get('detail') or '') for r in d['passes']['rows']))" "$tmp/$label.tile.json" "$patches")" = "${bound//,/} True" ] &&
      ok || bad "$label: with --passes all,tile not $bound B and '$patches'"
  fi
  if cmp -s "$tmp/$label.none.mpt" "$tmp/$label.tile.mpt"; then
    ok
  else
    bad "$label: outputs with --passes all,tile differ from --passes none"
  fi
}
# BlazeFace's stage in patches: the input quantized while NHWC (eliminate
# rule 10 put its QuantizeLinear before the Transpose), the pairs and the
# weights' DequantizeLinears copied or run once, and each patch filling
# its own crop of the zeros that pad channels (tile.c invariant 4): 8
# fills of no input, and no op reads a whole fill. With one fill read
# through a Slice per patch, 65,536 + 16,384 B of zeros stayed live
# across the patches: 359,888 B, not proven (at most 2.17% above a bound
# of 352,256 B); now the order is proven optimal
qdq_tile bf 352,256 "patches 4; 2 x 2 of 41 ops up to 'StatefulPartitionedCall/functional_1/re_lu_2/Relu:0'" "$tmp/bf.onnx"
[ "$(py "$tmp/bf.tile.json" "(d['schedule']['optimal'], sum(1 for e in d['execution'] if e['type'] == 'ConstantOfShape' and e.get('patch') and not e['inputs']), sum(1 for e in d['execution'] for i in e['inputs'] if i.endswith(('/Pad_pad', '/Pad_1_pad'))))")" = "(True, 8, 0)" ] && ok ||
  bad "bf: in patches not proven optimal, or the zeros not filled per patch"
run 0 plan "$tmp/bf.onnx" --passes all --order memory &&
  has "$tmp/out" "depthwise Conv 13, fused epilogue 7; 2 smaller outputs kept apart from their input"
qdq_pair "$tmp/det.onnx" det 2,457,600 818,400 62 --shape x=1x3x160x160
# --full, as later quantizers lay a model out: the outputs quantized too,
# and the activations of Add, Mul, Concat, the pools and activations,
# Resize, Reshape and Transpose. Every Conv (and ConvTranspose) ends in
# its QuantizeLinear, and so does every elementwise op and pool between
# two pairs (Add, Mul, Div, Relu, Clip, HardSigmoid; MaxPool and
# GlobalAveragePool; a Concat of two, BlazeFace's channel Pad): it reads
# its 8-bit inputs, widens a tile, a plane or a block at a time (absorb
# rule 9) and quantizes it (fuse condition 7), so a Conv and a residual
# Add, or an SE gate's pool, Mul and Add, share a pair (rule 8). A move
# between two pairs of one scale and zero point (every pair here: 0.05,
# 128), a Transpose, Reshape, MaxPool, nearest Resize or Concat, reads and
# writes the 8-bit values instead (eliminate rule 8): BlazeFace 19 of them
# (11 its channel pads, whose ConstantOfShape of f32 zeros becomes one of
# the zero point: 311,296 -> 212,992 B), det 7 (its six Resizes and its
# Concat of four). det's head also takes
# its pairs: its three BatchNormalizations (rule 9, a tile of a channel at
# a time) and its two ConvTransposes (rule 10, a band of output rows at a
# time). A Conv's and an elementwise op's chain goes on through the
# pairs after it (fuse condition 8): BlazeFace's Convs take their
# residual Add of the dequantized skip (Add(DequantizeLinear)) and its
# Relu (16) and write over the skip; det's Convs their folded affine and
# HardSwish x * Clip(x + 3, 0, 6) / 6 with the next affine, one op of 25
# entries whose Mul@8 closes the diamond (24), so x and the Add's 8-bit
# result are never live together. BlazeFace 1,032,192 B and det
# 1,843,200 B before rule 9, 393,216 and 799,808 B before the moves, det
# 768,000 B before its head; before the chains 327,680 and 409,600 B.
# Three of det's FPN Resizes feed an Add between pairs, which reads the
# small 8-bit map replicated instead (absorb rule 11): 339,008 ->
# 319,808 B; the other three feed its Concat and stay. The Concat's fourth
# slice is an SE block's Mul written over its Conv's output, which the
# Conv writes while its 150 KiB input is live: kept out of the slice
# (manager.c invariant 9), 319,808 -> 307,200 B.
python3 "$src/tests/cli/qdq_model.py" "$bf" "$tmp/bff.onnx" --full >"$tmp/out" &&
  has "$tmp/out" "opset 12, 90 activations (--full) and 37 weights quantized (weights per tensor)"
python3 "$src/tests/cli/qdq_model.py" "$det" "$tmp/detf.onnx" --full >"$tmp/out" &&
  has "$tmp/out" "opset 11, 330 activations (--full) and 62 weights quantized (weights per tensor)"
run 0 plan "$tmp/bff.onnx" --passes all --order memory && has "$tmp/out" "QDQ pair around a move 19"
run 0 plan "$tmp/detf.onnx" --shape x=1x3x160x160 --passes all --order memory &&
  has "$tmp/out" "QDQ pair around a move 7"
qdq_pair "$tmp/bff.onnx" bff 1,376,256 212,992 37
# in patches: a residual Add reads a crop of a DequantizeLinear's output,
# which the tile pass makes the DequantizeLinear of a Slice of the 8-bit
# input, so absorb still hands every copy the integers (a Slice of the f32
# output kept it whole: 277,328 B after every pass, and the patches were
# dropped)
qdq_tile bff 112,640 "patches 4; 2 x 2 of 58 ops up to 'StatefulPartitionedCall/functional_1/re_lu_2/Relu:0_qdq_q' (32 x 32)" "$tmp/bff.onnx"
qdq_pair "$tmp/detf.onnx" detf 2,457,600 307,200 65 --shape x=1x3x160x160
[ "$(py "$tmp/detf.json" "sorted((e['type'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['type'] in ('BatchNormalization', 'ConvTranspose'))")" = "[('BatchNormalization', 'DequantizeLinear:0', 'QuantizeLinear'), ('BatchNormalization', 'DequantizeLinear:0', 'QuantizeLinear'), ('BatchNormalization', 'DequantizeLinear:0', 'QuantizeLinear'), ('ConvTranspose', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Add,QuantizeLinear'), ('ConvTranspose', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Add,QuantizeLinear,DequantizeLinear,Sigmoid')]" ] && ok ||
  bad "detf: the head's BatchNormalizations and ConvTransposes do not take their pairs"
[ "$(py "$tmp/detf.json" "sorted(set((e['type'], e['epilogue']) for e in d['execution'] if '@' in (e.get('epilogue') or '')))")" = "[('Conv', 'QuantizeLinear,DequantizeLinear,Mul,QuantizeLinear,DequantizeLinear,Add,QuantizeLinear,DequantizeLinear,Add,QuantizeLinear,DequantizeLinear,Clip,QuantizeLinear,DequantizeLinear,Mul@8,QuantizeLinear,DequantizeLinear,Div,QuantizeLinear,DequantizeLinear,Mul,QuantizeLinear,DequantizeLinear,Add,QuantizeLinear')]" ] &&
  [ "$(py "$tmp/detf.json" "sum(1 for e in d['execution'] if '@' in (e.get('epilogue') or ''))")" = 24 ] && ok ||
  bad "detf: not 24 HardSwish chains through their pairs"
[ "$(py "$tmp/detf.json" "sum(1 for e in d['execution'] if e['type'] == 'Resize')")" = 3 ] && ok ||
  bad "detf: not 3 Resizes left (of 6)"
[ "$(py "$tmp/bff.json" "sum(1 for e in d['execution'] if e['type'] == 'Conv' and e.get('epilogue') == 'QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear,DequantizeLinear,Relu,QuantizeLinear')")" = 16 ] && ok ||
  bad "bff: not 16 Convs chained through their pairs to the residual Add and the Relu"
# the Convs whose epilogue ends in their QuantizeLinear, and the
# elementwise ops that do (their chain through pairs, or alone)
for pair in bf:17:0 det:41:0 bff:37:0 detf:63:28; do
  set -- ${pair//:/ }
  [ "$(py "$tmp/$1.json" "sum(1 for e in d['execution'] if (e.get('epilogue') or '').endswith('QuantizeLinear') and e['type'] in ('Conv', 'ConvTranspose'))")" = "$2" ] &&
    ok || bad "$1: not $2 Convs ending in a QuantizeLinear"
  [ "$(py "$tmp/$1.json" "sum(1 for e in d['execution'] if (e.get('epilogue') or '').endswith('QuantizeLinear') and (e.get('prologue') or '').startswith('DequantizeLinear') and e['type'] not in ('Conv', 'ConvTranspose', 'Gemm', 'MatMul'))")" = "$3" ] &&
    ok || bad "$1: not $3 elementwise ops between a DequantizeLinear and a QuantizeLinear"
done
# M-LSD tiny (a TensorFlow MobileNetV2 at 320 x 320, from the ONNX cache):
# each of its three stride-2 depthwise Convs reads a Pad of zeros (a row
# and a column at the end) through the pair of the Pad's output.
# Eliminate rule 9 moves that pair before the Pad and folds the Pad into
# the Conv's pads (Q(0) = z and DQ(z) = +0, the zeros a Conv pads with),
# so the padded f32 map never exists: 19,784,128 -> 3,276,800 B; and the
# input's NHWC -> NCHW Transpose goes before its normalization (rule 11),
# so the first Conv's QuantizeLinear reads the normalized map (written
# over the transposed input) and the Transpose's f32 output and input are
# never live together: 3,072,000 B. In the
# --full layout the moved pair meets the pair before the Pad, of the same
# scale and zero point, and neither is needed: 2,867,200 B.
# With its biases int32 (--int32-bias, as ONNX Runtime's quantizer writes
# them) the same: fold gives the biases their values, which rule 9 needs
# (none may be -0), and 3,072,000 B again.
ml=$cache/mlsd/mlsd_320x320_tiny.onnx
if [ -f "$ml" ]; then
  python3 "$src/tests/cli/qdq_model.py" "$ml" "$tmp/ml.onnx" >"$tmp/out" &&
    has "$tmp/out" "opset 11, 39 activations and 41 weights quantized (weights per tensor)"
  python3 "$src/tests/cli/qdq_model.py" "$ml" "$tmp/mlf.onnx" --full >"$tmp/out" &&
    has "$tmp/out" "opset 11, 98 activations (--full) and 41 weights quantized (weights per tensor)"
  run 0 plan "$tmp/ml.onnx" --passes all --order memory && has "$tmp/out" "Pad into Conv (through a QDQ pair) 3" &&
    has "$tmp/out" "Transpose before elementwise ops 1"
  run 0 plan "$tmp/mlf.onnx" --passes all --order memory && has "$tmp/out" "Pad into Conv (through a QDQ pair) 3" &&
    has "$tmp/out" "QDQ pair around a move 8"
  qdq_pair "$tmp/ml.onnx" ml 19,784,128 3,072,000 41
  qdq_pair "$tmp/mlf.onnx" mlf 19,784,128 2,867,200 41
  # in patches: 3 bands up to the second block's projection (default
  # layout), up to its residual Add's pair (--full: there the input is
  # scaled and quantized while NHWC, before its Transpose)
  # (the outputs of ml and mlf in file order, where mlf builds the same
  # patching and ml the first ranked, 4 x 2 with two exports: the memory
  # order's searches take over a minute under ASan; their figures in the
  # plain build only)
  QDQ_TILE_ORDER=file qdq_tile ml 2,457,600 "patches 3; 3 x 1 of 31 ops up to 'Conv__227:0' (80 x 80)" "$tmp/ml.onnx"
  # Its drawing in patches: with dot's original ranking Graphviz 2.42
  # (Debian 12) could not lay it out with the fusion clusters ("trouble
  # in init_rank", "Pshortestpath failed", then a double free in
  # gvFreeLayout that aborted mplan with status 134). With newrank it
  # does; and a layout runs in a child process, tried again without the
  # clusters if it fails (dot.c invariant 8; test_reports kills the
  # child): status 0, nothing on stderr, every op drawn, and the title
  # says the fusions are not boxed whenever no cluster was drawn.
  run 0 plan "$tmp/ml.onnx" --passes all,tile --svg "$tmp/ml.svg" -o "$tmp/ml.plan.json" &&
    [ ! -s "$tmp/err" ] && ok || bad "ml --svg: stderr: $(head -3 "$tmp/err")"
  [ "$(python3 - "$tmp/ml.svg" "$tmp/ml.plan.json" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
svg, plan = sys.argv[1:]
ET.parse(svg)  # well-formed
text = open(svg).read()
plan = json.load(open(plan))
drawn = all(">%s<" % e["op"] in text for e in plan["execution"])
clusters = text.count('<g id="clust')
print(drawn, clusters > 0 or "fusions not boxed" in text)
PY
)" = "True True" ] && ok || bad "ml --svg: not every op drawn, or no cluster without saying so"
  # (--full: its three bilinear Resizes widen and quantize a plane at a
  # time, absorb rule 9 and fuse condition 7)
  # --full: a stage past the decoder's two skips, 4 x 3 up to 20 x 20,
  # whose patches also join two tensors read later (the decoder's 1x1
  # Conv of block_2_add, which the stage takes in, quantized, and
  # block_5_add's dequantized output): the first ranked patching (with
  # a cut per Conv ranked, tile.c; with cuts after the same Conv ranked
  # too it was the second of 9, the first 2,764,800 B after every pass).
  # Before a stage could join more than T it stopped at the first skip:
  # 1,126,400 B
  QDQ_TILE_ORDER=file qdq_tile mlf 844,800 "patches 12; 4 x 3 of 150 ops up to 'Conv__257:0_qdq_d' (20 x 20)" "$tmp/mlf.onnx"
  if [ "$figures" = 1 ]; then
    has "$tmp/out" "kept: 844800 B after every pass, 2867200 B without the patches"
    has "$tmp/out" "Resize 3"
  fi
  python3 "$src/tests/cli/qdq_model.py" "$ml" "$tmp/mlb.onnx" --int32-bias >"$tmp/out" &&
    has "$tmp/out" "opset 11, 39 activations and 41 weights quantized (weights per tensor), 41 biases int32"
  run 0 plan "$tmp/mlb.onnx" --passes all --order memory && has "$tmp/out" "Pad into Conv (through a QDQ pair) 3"
  qdq_pair "$tmp/mlb.onnx" mlb 19,784,128 3,072,000 41
  verify "$tmp/mlf.onnx" --passes all --order memory
else
  bad "the ONNX cache has no M-LSD ($ml)"
fi
verify "$tmp/bf.onnx" --passes all --order memory
verify "$tmp/bff.onnx" --passes all --order memory
# BlazeFace's largest workspace: a Conv whose fused residual Add writes
# over its operand, its quantized input widened a band at a time (before
# this it was widened whole, 428,864 B)
run 0 compile "$tmp/bf.onnx" --passes all --order memory -o "$tmp/bf.mpk" &&
  has "$tmp/out" "workspace 158,208 B (154.50 KiB)"
if [ "$rv64" = 1 ]; then
  rv64_same "$tmp/bf.onnx" 128 all --order memory
  rv64_same "$tmp/bff.onnx" 256 all --order memory
fi
echo "test_qdq_models: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
