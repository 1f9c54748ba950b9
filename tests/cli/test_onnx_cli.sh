#!/usr/bin/env bash
# ONNX on the command line: binding dims and shapes, caps and their waste
# report, --value, warnings, unknown ops with and without value_info, and
# (when CACHE holds them) the real models of issue 4 planned and validated.
# usage: test_onnx_cli.sh MPLAN SOURCE_DIR [CACHE]
set -u
mplan=$1
src=$2
cache=${3:-}
. "$(dirname "$0")/lib.sh"
lines() { [ "$(wc -l <"$1")" -eq "$2" ] && ok || bad "$(basename "$1") has $(wc -l <"$1") lines, expected $2"; }
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

cd "$src"
dyn=tests/data/dynamic.onnx.bin
# Unbound dims are named, with the options that bind them.
run 2 plan $dyn && has "$tmp/err" "graph input 'x' [N,3,H,W]: dim 'N' is not bound (use --dim N=VALUE or --shape x=DxDx...)" && lines "$tmp/err" 1
# --shape binds the named dims; shape math (Shape->Gather->Concat->Reshape)
# resolves the rest; the output's own dim HW is bound by inference.
run 0 plan $dyn --shape x=1x3x8x8 -o "$tmp/p.json" && has "$tmp/out" "onnx 'bad', 6 ops, 10 tensors"
[ "$(py "$tmp/p.json" "[b['shape'] for b in d['buffers'] if b['name']=='z'][0]")" = "[N=1,4,HW=64]" ] && ok || bad "z is not [N=1,4,HW=64]"
[ "$(py "$tmp/p.json" "d['summary']['lower_bound_bytes']")" = 2080 ] && ok || bad "dynamic: lower bound is not 2080 (y, flat, target)"
run 0 validate "$tmp/p.json"
# --dim binds the same dims by name: the same plan.
run 0 plan $dyn --dim N=1 --dim H=8 --dim W=8 --json &&
  [ "$(py "$tmp/out" "d['summary']['arena_bytes']")" = "$(py "$tmp/p.json" "d['summary']['arena_bytes']")" ] && ok || bad "--dim and --shape disagree"
# N=2 doubles every activation.
run 0 plan $dyn --dim N=2 --dim H=8 --dim W=8 --json &&
  [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 4128 ] && ok || bad "N=2 does not double the lower bound"
# A cap: planned at the cap, recorded, waste reported at 1/4, 1/2 and 1.
run 0 plan $dyn --dim N=1 --dim H=8 --dim 'W<=16' -o "$tmp/cap.json" &&
  has "$tmp/out" "capped      W<=16; arena at the cap" && has "$tmp/out" "at 0.25 of the cap" && has "$tmp/out" "at 0.5  of the cap"
[ "$(py "$tmp/cap.json" "d['dynamic']['caps']==[{'dim':'W','max':16}] and [p['fraction'] for p in d['dynamic']['waste']]==[0.25,0.5,1] and d['dynamic']['waste'][2]['waste_bytes']==d['summary']['arena_bytes']-d['summary']['resident_bytes']-d['summary']['lower_bound_bytes'] and d['dynamic']['waste'][0]['waste_bytes']>d['dynamic']['waste'][1]['waste_bytes']>0")" = True ] && ok || bad "cap not recorded or waste wrong"
[ "$(py "$tmp/cap.json" "d['summary']['lower_bound_bytes']")" = 4128 ] && ok || bad "the capped plan is not planned at W=16"
run 0 validate "$tmp/cap.json"
# Binding errors: one line, exit 2.
run 2 plan $dyn --shape x=1x3x8 && has "$tmp/err" "--shape x: the input has rank 4, the option gives 3 dims"
run 2 plan $dyn --shape nope=1x3x8x8 && has "$tmp/err" "--shape nope: the graph has no input named 'nope'"
run 2 plan $dyn --shape x=1x3x-1x8 && has "$tmp/err" "mplan plan: --shape 'x=1x3x-1x8': expected INPUT=DxDx... with every D >= 0"
# A dim of 0 is an empty input (ONNX has them): this Conv's window does
# not fit it, one line and exit 2; Trilu of a [3, 0, 5] input verifies.
run 2 plan $dyn --shape x=1x3x0x8 && has "$tmp/err" "op 'conv' (Conv): spatial dim 0: input 0 is smaller than the window 3" && lines "$tmp/err" 1
# 41 ops on empty inputs (tests/cli/gen_empty_ops.py: reductions and
# normalisations over 0 elements, products with an inner dim of 0, Conv
# with no batch or no channels, pooling, LSTM over no step, integer Div
# and Mod, ...) verify in poison mode, with and without every pass.
python3 tests/cli/gen_empty_ops.py "$tmp/empty.onnx" "$tmp/empty_shapes.txt" >/dev/null && ok || bad "gen_empty_ops.py failed"
read -r -a empty_shapes <"$tmp/empty_shapes.txt"
for p in none all; do
  run 0 verify "$tmp/empty.onnx" "${empty_shapes[@]}" --passes $p --order memory && has "$tmp/out" "verified: no event"
done
has "$tmp/out" "41 ops on host"
if [ -n "$cache" ] && [ -f "$cache/node/test_tril_zero/model.onnx" ]; then
  run 0 verify "$cache/node/test_tril_zero/model.onnx" --shape x=3x0x5 && has "$tmp/out" "verified: no event"
  # an empty input's value is known (no element): ReduceSum's empty axes
  # are a constant, reduce all or, with noop_with_empty_axes, nothing
  for t in test_reduce_sum_default_axes_keepdims_example test_reduce_sum_empty_axes_input_noop_example; do
    run 0 verify "$cache/node/$t/model.onnx" --shape axes=0 && has "$tmp/out" "verified: no event"
  done
  run 0 plan "$cache/node/test_tril_zero/model.onnx" --shape x=3x0x5 --json
  [ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sorted(b['size'] for b in d['buffers'] if b['name'] in ('x','y')))" "$tmp/out")" = "[1, 1]" ] && ok || bad "an empty tensor is not a buffer of one byte"
else
  bad "no node tests in '$cache'"
fi
run 2 plan $dyn --shape x=1x3x8x8 --value x=3 && has "$tmp/err" "--value x: the input is not a scalar"
run 2 plan $dyn --shape x=1x3x8x8 --dim Q=3 && has "$tmp/err" "the graph has no dim named 'Q'"
run 2 plan $dyn --dim 'W<=0' && has "$tmp/err" "expected NAME=VALUE with VALUE >= 1 or NAME<=MAX"
run 2 plan tests/data/opset_new.onnx.bin --shape x=1x3x8x8 --strategy nope
# Newer opset: one warning line, then a plan.
run 0 plan tests/data/opset_new.onnx.bin && has "$tmp/err" "mplan: warning: tests/data/opset_new.onnx.bin: opset 99 is newer than the newest this mplan knows (24)" && lines "$tmp/err" 1
# Output shapes that depend on the data (inputs whose values are not
# known): each op planned at its bound with one warning (shape.c
# invariant 7): NonZero of a [2,5,3] mask holds at most 30 indices of 3
# coordinates; Compress keeps at most min(5, 4) slices along axis 1, or
# min(30, 40) elements; Unique at most all 12 (its inverse_indices, one
# per element, is exact and not listed); NonMaxSuppression at most 1
# batch x 3 classes x min(8 boxes, 5). The Transpose after NonZero carries
# the bound ([30,3], 720 B in the plan JSON); compile refuses the ops.
b=tests/data/bounded_ops.onnx.bin
run 0 plan $b -o "$tmp/bound.json" && lines "$tmp/err" 5 &&
  has "$tmp/err" "mplan: warning: $b: op 'nz' (NonZero): its output shape depends on the data; planned at its bound: 'nz' [3,30] i64" &&
  has "$tmp/err" "op 'kept_axis' (Compress): its output shape depends on the data; planned at its bound: 'kept_axis' [2,4,3] f32" &&
  has "$tmp/err" "op 'kept_flat' (Compress): its output shape depends on the data; planned at its bound: 'kept_flat' [30] f32" &&
  has "$tmp/err" "op 'uniq' (Unique): its output shape depends on the data; planned at its bound: 'uniq' [12] i64, 'uniq_idx' [12] i64, 'uniq_cnt' [12] i64" && ! grep -q "'uniq_inv'" "$tmp/err" &&
  has "$tmp/err" "op 'nms' (NonMaxSuppression): its output shape depends on the data; planned at its bound: 'picked' [15,3] i64" &&
  [ "$(py "$tmp/bound.json" "[(b['shape'], b['size']) for b in d['buffers'] if b['name'] == 'nz_t'][0]")" = "('[30,3]', 720)" ] && ok || bad "bounded_ops plan"
run 0 plan $b --passes all --order memory && run 0 validate "$tmp/bound.json" && ok || bad "bounded_ops with passes"
# The runtime runs the planned shapes: the bundle builds, and a run whose
# data selects fewer than the bound stops at the first such op, one line.
run 0 compile $b -o "$tmp/bound.mpk" && [ -s "$tmp/bound.mpk" ] && ok || bad "bounded_ops compile"
run 2 verify $b && lines "$tmp/err" 1 &&
  grep -q "op 'nz' (NonZero) at step [0-9]*: selects [0-9]* nonzero elements where the plan holds 30 (the runtime runs the planned shapes" "$tmp/err" &&
  ok || bad "bounded_ops verify: the count against the bound"
# Loop and Scan run (runtime/ops_loop.c): a for loop, a while loop whose
# count depends on the input, a Scan with a reversed input and output, a
# loop nested in a loop and one of 0 iterations, verified bit for bit in
# paranoid mode; the dfs order puts the Relu the first loop's body reads
# between its enter op and its body, where it runs once.
l=tests/data/loop_ort.onnx.bin
for o in file dfs memory; do
  run 0 verify $l --poison --paranoid --order $o --passes all && has "$tmp/out" "outputs     9 of 9 identical to the no-reuse run" && has "$tmp/out" "verified: no event"
done
# An overlap the plan does not make is found: the scan output 'stacked'
# over the body's 'scaled'.
run 1 verify $l --poison --inject overlap:stacked,scaled && has "$tmp/out" "output 'stacked' differs from the no-reuse run"
# A loop that stops before the count its scan output is planned for.
run 2 verify tests/data/loop_short.onnx.bin && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'short' (Loop) at step 4: stops after 3 iterations where the plan holds 5 (the runtime runs the planned shapes)"
# The training ops (Adagrad on two tensors, Nesterov momentum, Adam,
# BatchNormalization in training mode with its running statistics) run
# in poison mode, with and without the passes; a Momentum mode the schema
# does not name is refused in one line.
t=tests/data/train_ops.onnx.bin
for p in none all; do
  run 0 verify $t --poison --paranoid --passes $p --order memory && has "$tmp/out" "outputs     12 of 12 identical to the no-reuse run" && has "$tmp/out" "verified: no event"
done
run 2 compile tests/data/momentum_mode.onnx.bin -o "$tmp/mm.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'heavy' (ai.onnx.preview.training::Momentum): mode 'heavyball' is neither standard nor nesterov" &&
  [ ! -e "$tmp/mm.mpk" ] && ok || bad "momentum_mode: a bundle was written"
# External data (weights in data/w.bin beside the model; its values run in
# test_onnx_extra_run): the location is resolved from the model's folder,
# whatever the working folder; a location outside that folder, a missing
# or short file and a wrong length are refused in one line, no output.
python3 tests/data/gen_onnx_extra.py "$tmp/ext" >/dev/null &&
  python3 tests/data/gen_onnx_extra.py --external-bad "$tmp/ext" && ok ||
  bad "gen_onnx_extra.py (external data) failed"
run 0 verify "$tmp/ext/test_external_data/model.onnx" --passes all --poison &&
  has "$tmp/out" "verified: no event"
(cd "$tmp/ext/test_external_data/data" && "$mplan" compile ../model.onnx -o "$tmp/ext.mpk" >/dev/null) &&
  [ -s "$tmp/ext.mpk" ] && ok || bad "external data: compile from another folder"
for v in "escape|tensor 'w': external data location '../w.bin' is not a relative path inside the model's folder" \
  "absolute|tensor 'w': external data location '/etc/hostname' is not a relative path inside the model's folder" \
  "missing|tensor 'w': external data $tmp/ext/test_external_data_missing/data/none.bin: cannot open" \
  "short|tensor 'w': external data $tmp/ext/test_external_data_short/data/w.bin: ends at byte 60, before the 48 bytes at offset 16 do" \
  "length|tensor 'b': external data length 12, where its dims and dtype need 16 bytes"; do
  m=$tmp/ext/test_external_data_${v%%|*}/model.onnx
  run 2 plan "$m" -o "$tmp/ext_bad.json" && lines "$tmp/err" 1 &&
    has "$tmp/err" "${v#*|}" && [ ! -e "$tmp/ext_bad.json" ] && ok ||
    bad "external data ${v%%|*}: $(cat "$tmp/err")"
done
# BatchNormalization per activation (spatial=0, before opset 9) plans but
# does not compile: one line, no bundle.
run 0 plan tests/data/bn_spatial0.onnx.bin --passes all
run 2 compile tests/data/bn_spatial0.onnx.bin -o "$tmp/bn.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'bn' (BatchNormalization): spatial=0 (statistics per activation, before opset 9) is not supported" &&
  [ ! -e "$tmp/bn.mpk" ] && ok || bad "bn_spatial0: a bundle was written"
# Opset 23: an Attention whose masked scores go out (qk_matmul_output_mode
# 1) plans but does not compile; a RotaryEmbedding fed a position id
# outside its cache fails the run in one line naming the id.
run 0 plan tests/data/opset23_refused.onnx.bin
run 2 compile tests/data/opset23_refused.onnx.bin -o "$tmp/a23.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'att' (Attention): qk_matmul_output_mode 1 (0 without a softcap, or 3)" &&
  [ ! -e "$tmp/a23.mpk" ] && ok || bad "opset23_refused: a bundle was written"
run 2 verify tests/data/rope_positions.onnx.bin && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'rope' (RotaryEmbedding) at step 0: position id" &&
  has "$tmp/err" "of 'pos' is out of range [0, 2)"
# Opset 21's 4-bit types: sizes are ceil(n / 2) bytes (gen_onnx_extra.py's
# int4_blocked: wq [4,5] int4 10 B, wz [2,5] 5 B, uq [7] uint4 4 B, the
# scalar uz 1 B); an Add of int4 tensors plans but does not compile.
python3 "$src/tests/data/gen_onnx_extra.py" "$tmp/extra" >/dev/null
run 0 plan "$tmp/extra/test_int4_blocked/model.onnx" --json
python3 - "$tmp/out" <<'PY' && ok || bad "int4 sizes"
import json, sys
b = {x["name"]: (x["dtype"], x["size"]) for x in json.load(open(sys.argv[1]))["buffers"]}
want = {"wq": ("i4", 10), "wz": ("i4", 5), "uq": ("u4", 4), "uz": ("u4", 1),
        "xq": ("i4", 15), "ws": ("f32", 40)}
got = {k: b.get(k) for k in want}
sys.exit(0 if got == want else "int4 sizes: %s, want %s" % (got, want))
PY
# the same in graph JSON ("i4": 15 elements are 8 B), and a 4-bit tensor
# of 2^62 elements refused in one line
printf '%s\n' '{"mplan": "graph/1", "name": "g4", "tensors": [' \
  '{"name": "a", "dtype": "i4", "shape": [3, 5], "kind": "input"},' \
  '{"name": "b", "dtype": "u4", "shape": [3, 5], "kind": "output"}],' \
  '"ops": [{"name": "t", "op": "Cast", "inputs": ["a"], "outputs": ["b"], "attrs": {"to": 21}}]}' >"$tmp/g4.json"
run 0 plan "$tmp/g4.json" --json
[ "$(py "$tmp/out" "[(b['name'], b['size']) for b in d['buffers']]")" = "[('a', 8), ('b', 8)]" ] &&
  ok || bad "graph JSON i4/u4 sizes"
sed 's/\[3, 5\], "kind": "input"/[4503599627370496, 1024], "kind": "input"/' "$tmp/g4.json" >"$tmp/g4big.json"
run 2 plan "$tmp/g4big.json" && lines "$tmp/err" 1 &&
  has "$tmp/err" "input 'a' has shape [4503599627370496,1024], beyond the 2^48 elements"
run 0 plan tests/data/int4_add.onnx.bin
run 2 compile tests/data/int4_add.onnx.bin -o "$tmp/i4.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'add' (Add): 'x4' is i4: the runtime computes 4-bit tensors in Cast, QuantizeLinear, DequantizeLinear, Transpose and the reshaping ops only" &&
  [ ! -e "$tmp/i4.mpk" ] && ok || bad "int4_add: a bundle was written"
# Opset 24: a TensorScatter fed a write index that leaves no room for its
# update fails the run in one line naming the index.
run 2 verify tests/data/scatter_index.onnx.bin --value w=3 && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'scatter' (TensorScatter) at step 0: write index 3 of 'w' does not fit 3 rows of 4 (linear)"
run 0 verify tests/data/scatter_index.onnx.bin --value w=1
# An antialiased Resize at 1/64 plans but does not compile (1/32 at least).
run 0 plan tests/data/resize_aa_tiny.onnx.bin
run 2 compile tests/data/resize_aa_tiny.onnx.bin -o "$tmp/aa.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'rs' (Resize): antialias at scale 0.015625 on axis 2 (1/32 at least)" &&
  [ ! -e "$tmp/aa.mpk" ] && ok || bad "resize_aa_tiny: a bundle was written"
# Random ops that plan but cannot run: one line, no bundle.
run 2 compile tests/data/random_bern_int.onnx.bin -o "$tmp/rb.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'b' (Bernoulli): its input 'x' is i32, not a float tensor"
run 2 compile tests/data/random_nan_seed.onnx.bin -o "$tmp/rb.mpk" && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'r' (RandomUniform): seed nan is not finite" &&
  [ ! -e "$tmp/rb.mpk" ] && ok || bad "random_nan_seed: a bundle was written"
# value_info that contradicts inference: a warning names both shapes.
run 0 plan tests/data/mismatch.onnx.bin && has "$tmp/err" "mplan: warning: tests/data/mismatch.onnx.bin: tensor 't': inferred f32 [1,3,8,8], but the model declares f32 [1,3,4,4]; using the inferred shape"
# An unknown op plans when value_info gives its outputs.
run 0 plan tests/data/unknown_op_declared.onnx.bin --json &&
  [ "$(py "$tmp/out" "[b['shape'] for b in d['buffers'] if b['name']=='t'][0]")" = "[1,3,8,8]" ] && ok || bad "declared output not used"
run 0 explain $dyn --shape x=1x3x8x8 && has "$tmp/out" "Lower bound"

# Subgraphs, flattened (seed 001 section 3): the If's branches die before
# the If and so may share bytes; captured x lives until the If and the
# Loop; every Loop body tensor lives until the Loop's step.
ctl=tests/data/control.onnx.bin
run 0 plan $ctl -o "$tmp/ctl.json" && run 0 validate "$tmp/ctl.json"
b() { py "$tmp/ctl.json" "{b['name']: b for b in d['buffers']}['$1']['$2']"; }
step() { py "$tmp/ctl.json" "[e['step'] for e in d['execution'] if e['op']=='$1'][0]"; }
[ "$(b t1 last_use)" -lt "$(b e1 first_use)" ] && [ "$(b t_out last_use)" = "$(step if)" ] &&
  [ "$(b e_out last_use)" = "$(step if)" ] && ok || bad "If branches: then tensors must die before else tensors are born, outputs live to the If"
for t in i c_in y_in c_out y_out s_out; do
  [ "$(b $t last_use)" = "$(step loop)" ] && ok || bad "loop body tensor $t does not live until the Loop"
done
[ "$(b scan shape)" = "[3,1,4]" ] && [ "$(b branch shape)" = "[1,8]" ] && ok || bad "Loop scan output or If upper-bound shape wrong"
# --value specialises the If: the else branch's shape.
run 0 plan $ctl --value cond=0 --json &&
  [ "$(py "$tmp/out" "[b['shape'] for b in d['buffers'] if b['name']=='branch'][0]")" = "[1,4]" ] && ok || bad "--value cond=0 did not pick the else branch"
run 2 plan $ctl --value cond=0.5 && has "$tmp/err" "--value cond: the input is bool; 0.5 is not an integer"
# A known condition runs one branch, and the other is neither inferred nor
# planned: in branch.onnx.bin the else branch of 'rate' (sr == 16000) and
# of the nested 'fits' (known from shapes alone) squeeze an axis of 8.
br=tests/data/branch.onnx.bin
run 0 plan $br --value sr=16000 -o "$tmp/br.json" &&
  has "$tmp/err" "If 'rate': the condition is known (true), so only its then branch is planned; the else branch never runs (1 node left out)" &&
  has "$tmp/err" "If 'rate/then/fits': the condition is known (true), so only its then branch is planned" &&
  lines "$tmp/err" 2 && run 0 validate "$tmp/br.json" &&
  [ "$(py "$tmp/br.json" "sorted(b['name'] for b in d['buffers'] if b['class'] != 'resident')")" = "['f_out', 'is16k', 'r_out', 't16', 't_fits', 't_out', 't_shape', 't_w', 'y']" ] &&
  ok || bad "--value sr=16000: the dead branches are planned, or not reported"
[ "$(py "$tmp/br.json" "len(d['execution'])")" = 9 ] && ok || bad "branch.onnx.bin at 16 kHz: not 9 steps"
# Unknown: the error names the op, the If and the input that decides it.
run 2 plan $br && lines "$tmp/err" 1 &&
  has "$tmp/err" "op 'rate/else/e_sq' (Squeeze): axis 1 has size 8, not 1 (in the else branch of If 'rate', whose condition is not known: --value sr=V picks the branch that runs)" && ok ||
  bad "unknown condition: no hint naming If 'rate' and --value sr"
# Known false: the else branch runs, and its error is a plain one.
run 2 plan $br --value sr=8000 && lines "$tmp/err" 1 && has "$tmp/err" "op 'rate/else/e_sq' (Squeeze): axis 1 has size 8, not 1" &&
  ! grep -q "in the else branch" "$tmp/err" && ok || bad "--value sr=8000: the else branch's own error is not plain"

# A pipeline: encoder then decoder as one problem. The connecting tensor
# lives from the encoder's last op to the decoder's first; encoder
# internals are dead by then and the decoder may overwrite them.
run 0 plan tests/data/pipeline.json -o "$tmp/pl.json" && has "$tmp/out" "pipeline/1 'encoder-decoder', 6 ops, 10 tensors" && run 0 validate "$tmp/pl.json"
[ "$(py "$tmp/pl.json" "[(b['first_use'], b['last_use']) for b in d['buffers'] if b['name']=='enc/feat'][0] == (2, 3) and any(r['earlier'].startswith('enc/') and r['later'].startswith('dec/') for r in d['reuse'])")" = True ] && ok ||
  bad "pipeline: enc/feat not retained across the boundary, or no decoder reuse of encoder bytes"
run 2 plan tests/data/pipeline.json --dim N=2 && has "$tmp/err" "a pipeline binds its models' dims and shapes itself"

# The real models (issue 4), when fetched.
if [ -n "$cache" ] && [ -d "$cache/ocr" ]; then
  for spec in "ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192" \
    "ocr/ch_PP-OCRv4_det_infer.onnx x=1x3x640x640" \
    "ocr/ch_PP-OCRv4_rec_infer.onnx x=1x3x48x320" \
    "blazeface/face_detection_front_128x128_barracuda.onnx"; do
    set -- $spec
    args=()
    [ -n "${2:-}" ] && args=(--shape "$2")
    name=$(basename "$1" .onnx)
    run 0 plan "$cache/$1" "${args[@]}" -o "$tmp/$name.json" && has "$tmp/out" "validated: no two live buffers share a byte" && lines "$tmp/err" 0
    run 0 validate "$tmp/$name.json"
    # Issue 9: every pass and the memory-aware order, validated; the
    # passes never raise the lower bound and the order never beats
    # itself into a worse peak than the file order.
    run 0 plan "$cache/$1" "${args[@]}" --passes all --order memory -o "$tmp/$name.p.json" &&
      has "$tmp/out" "validated: no two live buffers share a byte" && run 0 validate "$tmp/$name.p.json"
    [ "$(py "$tmp/$name.p.json" "d['passes']['rows'][-1]['lower_bound_after'] <= d['passes']['rows'][0]['lower_bound_before'] and d['schedule']['peak_bytes'] <= d['schedule']['candidates'][0]['peak_bytes'] and d['summary']['lower_bound_bytes'] == d['schedule']['peak_bytes']")" = True ] && ok ||
      bad "$name: passes raised the lower bound, or the memory order is worse than file order"
  done
  # rec with a capped width: the plan at 320 serves every smaller width.
  run 0 plan "$cache/ocr/ch_PP-OCRv4_rec_infer.onnx" --dim p2o.DynamicDimension.0=1 --dim 'p2o.DynamicDimension.1<=320' --json &&
    [ "$(py "$tmp/out" "d['summary']['arena_bytes'] == $(py "$tmp/ch_PP-OCRv4_rec_infer.json" "d['summary']['arena_bytes']") and d['dynamic']['waste'][0]['waste_bytes'] > 0")" = True ] && ok ||
    bad "rec capped at width 320 differs from rec at 1x3x48x320"
  run 2 plan "$cache/ocr/ch_PP-OCRv4_rec_infer.onnx" && has "$tmp/err" "dim 'p2o.DynamicDimension.0' is not bound"
fi
# M-LSD tiny (keras MobileNetV2 by tf2onnx): a Pad of zeros before each
# stride-2 depthwise Conv held the expand output and its padded copy
# together (19,784,128 B); eliminate rule 9 folds the three Pads into the
# Convs' pads, which also lets the expand Convs fuse their Relu6: every
# pass and the memory order, 11,468,800 B; the outputs those of the
# no-reuse run bit for bit.
ml=$cache/mlsd/mlsd_320x320_tiny.onnx
if [ -n "$cache" ] && [ -f "$ml" ]; then
  run 0 plan "$ml" -o "$tmp/ml.json" && has "$tmp/out" "lower bound 19,784,128 B" && run 0 validate "$tmp/ml.json"
  run 0 plan "$ml" --passes all --order memory -o "$tmp/ml.p.json" && has "$tmp/out" "Pad into Conv 3" &&
    has "$tmp/out" "lower bound 11,468,800 B" && run 0 validate "$tmp/ml.p.json"
  run 0 verify "$ml" --passes all --order memory &&
    has "$tmp/out" "outputs     2 of 2 identical to the no-reuse run" && has "$tmp/out" "verified: no event"
  # the NHWC -> NCHW Transpose moved before the input's normalization
  # (eliminate rule 11) is where the tile pass starts its stage: 3 x 2
  # patches up to the fourth block's projection (40 x 40) at +1.2% Conv
  # MACs, past block_2_add, the skip the decoder reads: the stage takes
  # in the decoder's 1x1 Conv of it, whose output the patches join too:
  # 3,276,800 B (before a stage could join more than T it stopped at the
  # skip: 4,505,600 B)
  run 0 plan "$ml" --passes all,tile --order memory -o "$tmp/ml.t.json" &&
    has "$tmp/out" "Transpose before elementwise ops 1" && has "$tmp/out" "patches 6; 3 x 2 of 26 ops" &&
    has "$tmp/out" "lower bound 3,276,800 B" && run 0 validate "$tmp/ml.t.json"
  # (verified in file order: the same patches, without the memory
  # order's searches, a minute under ASan)
  run 0 verify "$ml" --passes all,tile &&
    has "$tmp/out" "outputs     2 of 2 identical to the no-reuse run" && has "$tmp/out" "verified: no event"
fi
# Silero VAD v5: If (sr == 16000) picks a 16 kHz or an 8 kHz path, and
# each path holds shapes only for its own frame size.
vad=$cache/vad/silero_vad_v5.onnx
if [ -n "$cache" ] && [ -f "$vad" ]; then
  run 0 plan "$vad" --shape input=1x512 --shape state=2x1x128 --value sr=16000 -o "$tmp/vad16.json" &&
    has "$tmp/err" "If 'If_0': the condition is known (true), so only its then branch is planned" && run 0 validate "$tmp/vad16.json" &&
    [ "$(py "$tmp/vad16.json" "[b['shape'] for b in d['buffers'] if b['name'] in ('output', 'stateN')]")" = "['[1,1]', '[2,1,128]']" ] && ok ||
    bad "silero_vad_v5 at 16 kHz does not plan"
  run 0 plan "$vad" --shape input=1x256 --shape state=2x1x128 --value sr=8000 -o "$tmp/vad8.json" &&
    has "$tmp/err" "If 'If_0': the condition is known (false), so only its else branch is planned" && run 0 validate "$tmp/vad8.json" && ok ||
    bad "silero_vad_v5 at 8 kHz does not plan"
  run 2 plan "$vad" --shape input=1x512 --shape state=2x1x128 && lines "$tmp/err" 1 &&
    has "$tmp/err" "(in the else branch of If 'If_0', whose condition is not known: --value sr=V picks the branch that runs)" && ok ||
    bad "silero_vad_v5 without sr: no hint"
  run 0 plan "$cache/vad/silero_vad_legacy.onnx" --dim batch=1 --dim sequence=512 --value sr=16000 -o "$tmp/vadl.json" &&
    run 0 validate "$tmp/vadl.json" && ok || bad "silero_vad_legacy does not plan"
  # without passes those two chains (256 KiB each) join at the LSTM: the
  # branch bound's paths that stop at the LSTM prove the memory order
  # (the last Concat finds the other chain's 256 KiB live)
  run 0 plan "$vad" --shape input=1x512 --shape state=2x1x128 --value sr=16000 --passes none --order memory -o "$tmp/vadm.json" &&
    has "$tmp/out" "2 the branch bound" && has "$tmp/out" "optimal for this graph" &&
    [ "$(py "$tmp/vadm.json" "(d['schedule']['optimal'], d['schedule']['bound_bytes'], d['summary']['lower_bound_bytes'])")" = "(True, 786432, 786432)" ] && ok ||
    bad "silero_vad_v5: the memory order without passes is not proven"
  # with every pass: the LSTM's W and R, sliced and concatenated from the
  # model's weights, were 2 x 262,144 B of activations at the peak; the
  # fold pass folds those groups (compile runs them), and the known Ifs
  # hold nothing captured alive
  run 0 plan "$vad" --shape input=1x512 --shape state=2x1x128 --value sr=16000 --passes all --order memory -o "$tmp/vadp.json" &&
    has "$tmp/out" "constant subgraphs too large to evaluate here: compile runs them" &&
    [ "$(py "$tmp/vadp.json" "d['summary']['lower_bound_bytes'] < 16384")" = True ] && ok ||
    bad "silero_vad_v5: the LSTM's reordered weights are not folded"
  # and runs: the If copies its taken branch, the LSTM has a kernel
  run 0 verify "$vad" --shape input=1x512 --shape state=2x1x128 --value sr=16000 --passes all --order memory &&
    has "$tmp/out" "outputs     2 of 2 identical to the no-reuse run" && has "$tmp/out" "verified: no event"
fi
# IS-Net at 1024x1024, dynamically quantized (DynamicQuantizeLinear and
# ConvInteger, 1084 ops): planned and validated, with every pass and the
# memory order (a lower bound below the file order's), and compiled: the
# runtime has a kernel for every op (a run takes a minute, so not here).
isn=$cache/isnet/isnet_quint8.onnx
if [ -n "$cache" ] && [ -f "$isn" ]; then
  run 0 plan "$isn" -o "$tmp/isn.json" && run 0 validate "$tmp/isn.json" && ok || bad "isnet does not plan"
  run 0 plan "$isn" --passes all --order memory -o "$tmp/isn.p.json" && run 0 validate "$tmp/isn.p.json" &&
    [ "$(py "$tmp/isn.p.json" "d['summary']['lower_bound_bytes'] < $(py "$tmp/isn.json" "d['summary']['lower_bound_bytes']")")" = True ] && ok ||
    bad "isnet: the passes do not lower its lower bound"
  # without passes the biases are reshaped at run time: every candidate
  # makes them early, sinking (schedule_memory.c invariant 12) makes each
  # just before its reader, and the order meets the step bound unsearched
  run 0 plan "$isn" --passes none --order memory -o "$tmp/isn.m.json" &&
    has "$tmp/out" "1 met the step bound" && has "$tmp/out" "1 by moving ops), 0 states" && has "$tmp/out" "optimal for this graph" &&
    [ "$(py "$tmp/isn.m.json" "(d['schedule']['optimal'], d['schedule']['move_improved_segments'], d['schedule']['bound_bytes'] == d['summary']['lower_bound_bytes'], d['summary']['lower_bound_bytes'] < $(py "$tmp/isn.json" "d['summary']['lower_bound_bytes']"))")" = "(True, 1, True, True)" ] && ok ||
    bad "isnet: the memory order without passes is not proven"
  run 0 compile "$isn" -o "$tmp/isn.mpk" && has "$tmp/out" "1084 ops" && rm -f "$tmp/isn.mpk"
fi
# com.microsoft's MatMulNBits at a language model's size (a 2048 x 2048
# int4 layer in blocks of 32, one token): the packed weight, scales and
# zero points (2,686,976 B) and the input are resident, and the runtime unpacks 8 of
# W's 2,048 rows at a time, so the workspace is 65,696 B where the f32
# weight would take 16 MiB.
python3 - "$src/tests/data" "$tmp/nbits.onnx" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from gen_onnx_extra import (UINT8, int_tensor, ld, model, node, tensor,
                            value_info, vint)
one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
k = n = 2048
kb = k // 32
b = bytes((37 * i + 11) & 0xff for i in range(n * kb * 16))
raw = lambda name, dims, data: ld(5, b"".join(vint(1, d) for d in dims) +
                                  vint(2, UINT8) + ld(8, name) + ld(9, data))
graph = (ld(1, node("MatMulNBits", ["x", "b", "s", "z"], ["y"], "proj",
                    one("K", k) + one("N", n) + one("bits", 4) +
                    one("block_size", 32) + ld(7, "com.microsoft"))) +
         ld(2, "nbits_llm") + raw("b", [n, kb, 16], b) +
         ld(5, tensor("s", [n * kb], [0.01] * (n * kb))) +
         raw("z", [n * kb // 2], bytes([0x88]) * (n * kb // 2)) +
         ld(11, value_info("x", [1, 1, k])) + ld(12, value_info("y", [1, 1, n])))
open(sys.argv[2], "wb").write(model(graph, 21) +
                              ld(8, ld(1, "com.microsoft") + vint(2, 1)))
PY
run 0 plan "$tmp/nbits.onnx" && has "$tmp/out" "resident 2,695,168 B"
run 0 compile "$tmp/nbits.onnx" -o "$tmp/nbits.mpk" &&
  has "$tmp/out" "workspace 65,696 B (64.16 KiB) for the reference kernels (op 'proj')"
run 0 verify "$tmp/nbits.onnx" --poison && has "$tmp/out" "verified: no event"
# Float zero points and g_idx (act order) run; what the runtime does not
# run is refused at compile in one line, and no bundle is written: 3-bit
# weights, and a g_idx that names a block the weight does not have.
for w in fzp gidx bits3 gbad; do
  python3 - "$src/tests/data" "$tmp/nb_$w.onnx" $w <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from gen_onnx_extra import (INT32, UINT8, int_tensor, ld, model, node, tensor,
                            value_info, vint)
one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
which = sys.argv[3]
bits = 3 if which == "bits3" else 4
ins = ["x", "b", "s", "z"] + (["g"] if which in ("gidx", "gbad") else [])
inits = (ld(5, int_tensor("b", [4, 2, 4 * bits], [0x88] * 32 * bits, UINT8)) +
         ld(5, tensor("s", [8], [0.5] * 8)))
if which == "fzp":
    inits += ld(5, tensor("z", [8], [7.5] * 8))
else:
    inits += ld(5, int_tensor("z", [4], [0x88] * 4, UINT8))
# gbad: element 40 in block 2 of the 2
g = [i // 32 + (which == "gbad" and i == 40) for i in range(64)]
inits += ld(5, int_tensor("g", [64], g, INT32)) if "g" in ins else b""
graph = (ld(1, node("MatMulNBits", ins, ["y"], "mm",
                    one("K", 64) + one("N", 4) + one("bits", bits) +
                    one("block_size", 32) + ld(7, "com.microsoft"))) +
         ld(2, which) + inits + ld(11, value_info("x", [1, 64])) +
         ld(12, value_info("y", [1, 4])))
open(sys.argv[2], "wb").write(model(graph, 21) +
                              ld(8, ld(1, "com.microsoft") + vint(2, 1)))
PY
done
run 0 verify "$tmp/nb_fzp.onnx" --poison && has "$tmp/out" "verified: no event"
run 0 verify "$tmp/nb_gidx.onnx" --poison && has "$tmp/out" "verified: no event"
run 2 compile "$tmp/nb_bits3.onnx" -o "$tmp/nb.mpk" &&
  has "$tmp/err" "bits 3 (2, 4 or 8 only)" && lines "$tmp/err" 1
run 2 compile "$tmp/nb_gbad.onnx" -o "$tmp/nb.mpk" &&
  has "$tmp/err" "g_idx 'g' [40] = 2 is not a block in [0, 2)" && lines "$tmp/err" 1
[ ! -e "$tmp/nb.mpk" ] && ok || bad "a refused MatMulNBits left a bundle"
echo "onnx cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
