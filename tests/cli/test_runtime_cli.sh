#!/usr/bin/env bash
# mplan compile, mplan-runner and mplan verify end to end: clean runs and
# exit codes, injected faults named on their event lines, report files,
# the runner protocol's files, and every usage and input error as one
# line with exit 2 and no partial output.
# usage: test_runtime_cli.sh MPLAN RUNNER SOURCE_DIR
set -u
mplan=$1
runner=$2
src=$3
. "$(dirname "$0")/lib.sh"

run() { # EXPECTED_STATUS PROGRAM ARGS...
  local want=$1 prog=$2
  shift 2
  "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$(basename "$prog") $* exited $rc, expected $want"
    sed 's/^/    /' "$tmp/err" | head -5
    return 1
  fi
  ok
}

one_line() { # the error file has exactly one line
  if [ "$(wc -l <"$tmp/err")" -eq 1 ]; then ok; else bad "stderr has $(wc -l <"$tmp/err") lines"; fi
}

cd "$src"
v2=models/mobilenet_v2.json

# Clean runs: every bundled graph, plain, poison, paranoid, red zones.
for m in models/mobilenet_v1.json $v2 tests/data/tiny_net.json; do
  run 0 "$mplan" verify "$m" && has "$tmp/out" "verified: no event"
  has "$tmp/out" "identical to the no-reuse run (bit for bit)"
  run 0 "$mplan" verify "$m" --paranoid --redzone 32 && has "$tmp/out" "paranoid"
done
run 0 "$mplan" verify tests/data/tiny_net.json --poison --strategy linear --seed 9
# Graph inputs planned as activations are released after their last read.
run 0 "$mplan" verify $v2 --inputs activation --paranoid --redzone 8
run 0 "$mplan" verify $v2 --backend tests/data/backend_64.json --paranoid
run 0 "$mplan" verify tests/data/pipeline.json --paranoid
run 0 "$mplan" verify tests/data/data_weights.json --paranoid
# f16 and bf16 (runtime/ops.c invariant 5): elementwise and pooling in
# 16 bits, Conv, Gemm, GlobalAveragePool and Softmax through f32 copies in
# the workspace, which compile reports; with every pass too.
run 0 "$mplan" verify tests/data/half_net.onnx.bin --paranoid --redzone 16 &&
  has "$tmp/out" "outputs     1 of 1 identical to the no-reuse run" &&
  has "$tmp/out" "verified: no event"
run 0 "$mplan" verify tests/data/half_net.onnx.bin --passes all --order memory --paranoid &&
  has "$tmp/out" "verified: no event"
run 0 "$mplan" compile tests/data/half_net.onnx.bin -o "$tmp/half.mpk" &&
  has "$tmp/out" "workspace 13,248 B"
cat >"$tmp/bf16.json" <<'JSON'
{"mplan": "graph/1", "name": "bf16",
 "tensors": [{"name": "x", "dtype": "bf16", "shape": [1, 4, 8, 8], "kind": "input"},
             {"name": "w", "dtype": "bf16", "shape": [4, 4, 3, 3], "kind": "weight"},
             {"name": "c", "dtype": "bf16", "shape": [1, 4, 8, 8]},
             {"name": "r", "dtype": "bf16", "shape": [1, 4, 8, 8]},
             {"name": "y", "dtype": "bf16", "shape": [1, 4, 8, 8], "kind": "output"}],
 "ops": [{"name": "conv", "op": "Conv", "inputs": ["x", "w"], "outputs": ["c"],
          "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
         {"name": "relu", "op": "Relu", "inputs": ["c"], "outputs": ["r"]},
         {"name": "add", "op": "Add", "inputs": ["r", "x"], "outputs": ["y"]}],
 "outputs": ["y"]}
JSON
run 0 "$mplan" verify "$tmp/bf16.json" --paranoid --redzone 8 &&
  has "$tmp/out" "verified: no event"
run 0 "$mplan" verify "$tmp/bf16.json" --passes all --order memory --paranoid &&
  has "$tmp/out" "verified: no event"
# A ConstantOfShape without its shape input fills its output's declared
# shape (the tile pass makes them, docs/ir-conventions.md): x plus a fill
# of 2.5 gives the outputs of x plus a weight of 2.5, bit for bit
for g in fill weight; do
  if [ $g = fill ]; then
    t='{"name": "c", "dtype": "f32", "shape": [1, 4, 3, 5]}'
    o='{"name": "f", "op": "ConstantOfShape", "inputs": [], "outputs": ["c"], "attrs": {"value": [2.5]}},'
  else
    t='{"name": "c", "dtype": "f32", "shape": [1], "kind": "weight", "data": [2.5]}'
    o=
  fi
  cat >"$tmp/$g.json" <<JSON
{"mplan": "graph/1", "name": "$g",
 "tensors": [{"name": "x", "dtype": "f32", "shape": [1, 4, 3, 5], "kind": "input"}, $t,
             {"name": "y", "dtype": "f32", "shape": [1, 4, 3, 5], "kind": "output"}],
 "ops": [$o {"name": "add", "op": "Add", "inputs": ["x", "c"], "outputs": ["y"]}],
 "outputs": ["y"]}
JSON
  run 0 "$mplan" compile "$tmp/$g.json" -o "$tmp/$g.mpk" &&
    run 0 "$runner" "$tmp/$g.mpk" --seed 5 --outputs "$tmp/$g.mpt"
done
if [ -s "$tmp/fill.mpt" ] && cmp -s "$tmp/fill.mpt" "$tmp/weight.mpt"; then
  ok
else
  bad "a ConstantOfShape of no input: its outputs differ from a weight's"
fi
# Retained state: written by an op into the persistent tier.
cat >"$tmp/ret.json" <<'JSON'
{"mplan": "graph/1", "name": "ret",
 "tensors": [{"name": "x", "dtype": "f32", "shape": [1, 8], "kind": "input"},
             {"name": "state", "dtype": "f32", "shape": [1, 8], "kind": "retained"},
             {"name": "y", "dtype": "f32", "shape": [1, 8], "kind": "output"}],
 "ops": [{"name": "upd", "op": "Relu", "inputs": ["x"], "outputs": ["state"]},
         {"name": "out", "op": "Add", "inputs": ["x", "state"], "outputs": ["y"]}],
 "outputs": ["y"]}
JSON
run 0 "$mplan" verify "$tmp/ret.json" --paranoid --redzone 8

# Injected faults: exit 1, the event line names culprit and victim.
run 1 "$mplan" verify $v2 --paranoid --inject overlap:b2_expand_out,b2_dw_out
has "$tmp/out" "event clobber step 4 op b2_dw tensor b2_expand_out"
has "$tmp/out" "verification FAILED"
run 1 "$mplan" verify $v2 --paranoid --inject early-free:b2_expand_out
has "$tmp/out" "event early-free step 3 op b2_expand tensor b2_expand_out"
run 1 "$mplan" verify $v2 --poison --inject early-free:b2_expand_out
has "$tmp/out" "event use-after-free step 4 op b2_dw tensor b2_expand_out"
# an injected fault without a mode is looked for with --poison (a plain
# run poisons nothing, and said "verified: no event")
run 1 "$mplan" verify $v2 --inject early-free:b2_expand_out
has "$tmp/out" "(auto); poison, injected early-free:b2_expand_out"
has "$tmp/out" "event use-after-free step 4 op b2_dw tensor b2_expand_out"
run 1 "$mplan" verify $v2 --redzone 16 --inject oob:b3_dw
has "$tmp/out" "event redzone step 7 op b3_dw tensor b3_dw_out"
run 1 "$mplan" verify $v2 --paranoid --inject oob:b3_dw --fail-fast
[ "$(grep -c '^event' "$tmp/out")" -eq 1 ] && ok || bad "--fail-fast reported more than one event"
# A Loop's scan output (runtime/exec.c invariant 7): a body tensor placed
# on the first row of lp's 'stacked' overwrites it on later trips. Poison
# mode names the Loop after its last trip (each trip hashes only the row
# it adds, and the rest must keep its checksum); --paranoid names the body
# op, once, not once a trip.
lo=tests/data/loop_ort.onnx.bin
run 1 "$mplan" verify $lo --poison --inject overlap:stacked,scan_o &&
  has "$tmp/out" "event clobber step 8 op lp tensor stacked arena bytes 488..527: 'stacked' changed by 'lp'"
run 1 "$mplan" verify $lo --poison --paranoid --inject overlap:stacked,scan_o &&
  [ "$(grep -c "changed by 'lp/body/Cast#0'" "$tmp/out")" -eq 1 ] && ok ||
  bad "the body op's clobber of 'stacked' is not one event"
# A clean run of 3,000 trips, the scan output 72,000 B.
run 0 "$mplan" verify tests/data/loop_rows.onnx.bin --value n=3000 --poison &&
  has "$tmp/out" "outputs     2 of 2 identical to the no-reuse run"

# Events into the reports.
run 1 "$mplan" verify $v2 --paranoid --inject oob:b3_dw --sqlite "$tmp/h.db" --html "$tmp/r.html"
has "$tmp/out" "appended run 1 to"
[ "$(sqlite3 "$tmp/h.db" "SELECT op || ' ' || tensor FROM verification_event WHERE seq = 0")" = "b3_dw b2_project_out" ] && ok || bad "verification_event row"
has "$tmp/r.html" '"verification":[{"kind":"clobber"'
run 0 "$mplan" verify tests/data/tiny_net.json --html "$tmp/clean.html"
has "$tmp/clean.html" '"verification":[]'

# compile and the runner protocol.
run 0 "$mplan" compile $v2 -o "$tmp/m.mpk" && has "$tmp/out" "wrote $tmp/m.mpk"
run 0 "$runner" "$tmp/m.mpk" --paranoid --outputs "$tmp/o.mpt" --events "$tmp/e.tsv" --write-inputs "$tmp/i.mpt"
has "$tmp/e.tsv" "mplan-events/1"
grep -q "^end	0	0	" "$tmp/e.tsv" && ok || bad "events end line"
[ "$(head -c 8 "$tmp/o.mpt")" = MPTENSOR ] && ok || bad "outputs are not tensors/1"
run 0 "$runner" "$tmp/m.mpk" --inputs "$tmp/i.mpt" --outputs "$tmp/o2.mpt"
cmp -s "$tmp/o.mpt" "$tmp/o2.mpt" && ok || bad "the same inputs gave other outputs"
run 1 "$runner" "$tmp/m.mpk" --poison --oob b3_dw
has "$tmp/out" "event	"
head -c 5000 "$tmp/m.mpk" >"$tmp/short.mpk"
run 2 "$runner" "$tmp/short.mpk" && one_line && has "$tmp/err" "invalid bundle"
run 2 "$runner" "$tmp/m.mpk" --inputs "$tmp/e.tsv" && has "$tmp/err" "not a tensors/1 file"
run 2 "$runner" && has "$tmp/err" "usage"

# Usage and input errors: one line, exit 2, no file written.
MPLAN_RV64_RUNNER=/nonexistent/mplan-runner run 2 "$mplan" verify $v2 --target rv64 && one_line && has "$tmp/err" "is not built"
MPLAN_QEMU=/nonexistent/qemu-riscv64 run 2 "$mplan" verify $v2 --target rv64 && one_line && has "$tmp/err" "apt-get install qemu-user"
run 2 "$mplan" verify $v2 --vlen 256 && has "$tmp/err" "--vlen applies to --target rv64"
run 2 "$mplan" verify $v2 --vlen 100 && has "$tmp/err" "expected 128, 256 or 512"
run 2 "$mplan" verify $v2 --target gpu && has "$tmp/err" "expected host or rv64"
run 2 "$mplan" verify $v2 --inject nonsense && has "$tmp/err" "expected overlap:A,B, early-free:T or oob:OP"
run 2 "$mplan" verify $v2 --inject early-free:ghost && has "$tmp/err" "no tensor named 'ghost'"
run 2 "$mplan" verify $v2 --inject oob:ghost && has "$tmp/err" "no op named 'ghost'"
run 2 "$mplan" verify $v2 --inject overlap:input,b2_dw_out && has "$tmp/err" "must be distinct activations live at a common step"
# An 8 TiB weight plans (resident), but verify refuses to generate it.
cat >"$tmp/huge.json" <<'EOF'
{"mplan": "graph/1", "name": "huge_weight", "dims": {},
 "tensors": [
  {"name": "x", "dtype": "f32", "shape": [1, 1048576], "kind": "input"},
  {"name": "w", "dtype": "f32", "shape": [2097152, 1048576], "kind": "weight"},
  {"name": "y", "dtype": "f32", "shape": [1, 2097152]}],
 "ops": [{"name": "fc", "op": "Gemm", "inputs": ["x", "w"], "outputs": ["y"],
          "attrs": {"transB": 1}}],
 "outputs": ["y"]}
EOF
# Inputs found by fuzzing that plan but cannot run: one line each.
run 2 "$mplan" verify tests/data/verify_no_input.json && one_line && has "$tmp/err" "op 'flatten' (Flatten): has no first input, so it cannot run"
run 2 "$mplan" verify tests/data/verify_resize_rank.onnx.bin && one_line && has "$tmp/err" "(Resize): output rank 3 is not the input's"
# A warning shows when the command succeeds, and is dropped when it fails
# (here at run time: a GatherElements index out of range, named with the
# file).
run 0 "$mplan" plan tests/data/verify_warning_then_error.onnx.bin && has "$tmp/err" "mplan: warning:" && has "$tmp/err" "using the inferred shape"
run 2 "$mplan" verify tests/data/verify_warning_then_error.onnx.bin && one_line && has "$tmp/err" "verify_warning_then_error.onnx.bin (no-reuse bundle): op 'GatherElements#0' (GatherElements) at step 0: index 7 of 'idx2' is out of range [-4, 4)"
# Indices read when the op runs are checked first (MaxUnpool's, RoiAlign's
# batch indices); a Dropout in training mode with a ratio of 1 (it would
# divide by 1 - ratio) is refused when compiled. Each plans.
for f in verify_unpool_index verify_roi_batch verify_dropout_training; do
  run 0 "$mplan" plan tests/data/$f.json
done
run 2 "$mplan" verify tests/data/verify_unpool_index.json && one_line && has "$tmp/err" "op 'unpool' (MaxUnpool) at step 0: index 16 of 'idx' is out of range [0, 16)"
run 2 "$mplan" verify tests/data/verify_roi_batch.json && one_line && has "$tmp/err" "op 'roi' (RoiAlign) at step 0: batch index 1 of 'batch' is out of range [0, 1)"
run 2 "$mplan" verify tests/data/verify_dropout_training.json && one_line && has "$tmp/err" "verify_dropout_training.json: op 'drop' (Dropout): training mode with ratio 1, outside [0, 1)"
run 0 "$mplan" plan "$tmp/huge.json" && has "$tmp/out" "8.00 TiB"
run 2 "$mplan" verify "$tmp/huge.json" && one_line && has "$tmp/err" "the no-reuse run holds 8796105605120 bytes of tensors, more than a quarter of this machine's"
# verify's own cap (1 GiB by default): a 115-byte ONNX file inferring a
# 2^31-element tensor (fuzz_inputs found it) is refused at once, instead
# of running for minutes; --max-bytes moves the cap.
run 2 "$mplan" verify tests/data/verify_2g_tensor.onnx.bin && one_line && has "$tmp/err" "the no-reuse run holds 4294967296 bytes of tensors, more than verify's limit of 1073741824 (--max-bytes raises it)"
run 2 "$mplan" verify $v2 --max-bytes 1000 && one_line && has "$tmp/err" "more than verify's limit of 1000"
# The cap counts the constant subgraphs the fold pass folded: compile
# runs them, so a 2 GiB weight only a folded GlobalMaxPool reads is made
# and read there (found by tests/fuzz/fuzz_model.c).
cat >"$tmp/bigfold.json" <<'JSON'
{"mplan": "graph/1", "name": "bigfold",
 "tensors": [{"name": "x", "dtype": "f32", "shape": [1, 2048, 1, 1], "kind": "input"},
             {"name": "w", "dtype": "i8", "shape": [1, 2048, 1024, 1024], "kind": "weight"},
             {"name": "m", "dtype": "i8", "shape": [1, 2048, 1, 1]},
             {"name": "c", "dtype": "f32", "shape": [1, 2048, 1, 1]},
             {"name": "y", "dtype": "f32", "shape": [1, 2048, 1, 1], "kind": "output"}],
 "ops": [{"name": "gmp", "op": "GlobalMaxPool", "inputs": ["w"], "outputs": ["m"]},
         {"name": "cast", "op": "Cast", "inputs": ["m"], "outputs": ["c"], "attrs": {"to": 1}},
         {"name": "add", "op": "Add", "inputs": ["x", "c"], "outputs": ["y"]}],
 "outputs": ["y"]}
JSON
run 2 "$mplan" verify "$tmp/bigfold.json" --passes all && one_line &&
  has "$tmp/err" "(2147493888 of them in constant subgraphs the fold pass folded), more than verify's limit of 1073741824"
run 0 "$mplan" verify $v2 --max-bytes 100000000 && has "$tmp/out" "verified: no event"
run 2 "$mplan" verify $v2 --max-bytes 0 && one_line && has "$tmp/err" "--max-bytes '0': expected bytes >= 1"
# Sizes as everywhere else: 4GiB lifts the cap above the 2 GiB tensor's
# 4294967296 bytes only when the machine has the memory, so the check is
# that the unit is read (the cap in the message), not that it runs.
run 2 "$mplan" verify tests/data/verify_2g_tensor.onnx.bin --max-bytes 1.5GiB && one_line && has "$tmp/err" "more than verify's limit of 1610612736"
run 2 "$mplan" verify $v2 --max-bytes 4XB && one_line && has "$tmp/err" "--max-bytes '4XB': expected bytes >= 1 (such as 2000000000 or 4GiB)"
run 0 "$mplan" verify $v2 --max-bytes 100MB --redzone 1KiB && has "$tmp/out" "verified: no event"
run 2 "$mplan" compile $v2 -o "$tmp/x.mpk" --max-bytes 5 && has "$tmp/err" "--max-bytes and --max-ops belong to mplan verify"
run 2 "$mplan" compile $v2 -o "$tmp/x.mpk" --max-ops 5 && has "$tmp/err" "--max-ops belong to mplan verify"
# --max-ops bounds the ops a run executes, each loop iteration's body ops
# counted again: a while loop whose condition never falls, nested in a
# for loop of 1000 trips, ends at the limit in one line (without it, at
# 16,777,216 iterations of the inner Loop); the no-reuse run is the first
# to pass it. A model without loops runs under a limit of its op count
# and stops one op short of it.
lf=tests/data/loop_forever.onnx.bin
run 2 "$mplan" verify $lf --max-ops 1000 && one_line &&
  has "$tmp/err" "loop_forever.onnx.bin (no-reuse bundle): op 'thousand/body/forever/body/Add#1' (Add) at step 3: the run would pass 1000 ops, its --max-ops (a loop's body ops count once an iteration, and so does each iteration)"
# Each iteration counts too: a Loop whose body the passes emptied (found
# by the fuzzer: 16,777,216 iterations of nothing took 14 s under ASan).
run 2 "$mplan" verify tests/fuzz/corpus/loop_empty_body_forever.onnx.bin --passes all --max-ops 1000 && one_line &&
  has "$tmp/err" "op 'thousand/body/Loop#0' (Loop) at step 2: the run would pass 1000 ops"
run 2 "$mplan" verify $lf --max-ops 1001 --poison && one_line && has "$tmp/err" "the run would pass 1001 ops"
run 2 "$mplan" verify $lf && one_line &&
  has "$tmp/err" "op 'thousand/body/forever' (Loop) at step 4: runs more than 16777216 iterations, the runtime's cap per Loop (--max-ops N stops a run sooner)"
nops=$("$mplan" plan $v2 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["execution"]))')
run 0 "$mplan" verify $v2 --max-ops "$nops" && has "$tmp/out" "verified: no event"
run 2 "$mplan" verify $v2 --max-ops $((nops - 1)) && one_line && has "$tmp/err" "the run would pass $((nops - 1)) ops"
run 2 "$mplan" verify $v2 --max-ops 0 && one_line && has "$tmp/err" "--max-ops '0': expected an integer >= 1 (ops each run may execute)"
run 2 "$mplan" verify $v2 --max-ops lots && one_line && has "$tmp/err" "--max-ops 'lots': expected an integer >= 1"
run 2 "$mplan" verify $v2 --inject overlap:conv1_out,b2_dw_out && has "$tmp/err" "live at a common step"
run 2 "$mplan" verify $v2 --redzone 70000 && has "$tmp/err" "--redzone '70000'"
run 2 "$mplan" verify $v2 --dot "$tmp/g.dot" && has "$tmp/err" "only --html and --sqlite"
run 2 "$mplan" verify models/seed_example.json && has "$tmp/err" "has no ops to run"
run 2 "$mplan" compile $v2 && has "$tmp/err" "give the bundle's path with -o"
run 2 "$mplan" compile $v2 -o "$tmp/x.mpk" --paranoid && has "$tmp/err" "belong to mplan verify"
run 2 "$mplan" compile models/seed_example.json -o "$tmp/x.mpk" && has "$tmp/err" "has no ops to compile"
# an op the runtime cannot run (an int8 BatchNormalization of a planning
# graph) is named with the model, and nothing is written (the error named
# the -o file, which does not exist)
rm -f "$tmp/bn.mpk"
run 2 "$mplan" compile tests/data/passes/convnet.json -o "$tmp/bn.mpk" && one_line &&
  has "$tmp/err" "tests/data/passes/convnet.json (compiled bundle): invalid bundle: op 'bn1' (BatchNormalization) at step 1: needs f32 of rank >= 2"
[ ! -e "$tmp/bn.mpk" ] && ok || bad "compile wrote a bundle it could not load"
[ -e "$tmp/x.mpk" ] && bad "compile wrote a bundle after an error" || ok
# --plan: the plan/1 JSON of the plan the bundle holds, what plan -o
# writes (but for its timings); a plan or a bundle that cannot be written
# leaves neither file
run 0 "$mplan" compile $v2 -o "$tmp/p.mpk" --passes all --order memory --plan "$tmp/p.json" &&
  has "$tmp/out" "wrote $tmp/p.json"
run 0 "$mplan" plan $v2 --passes all --order memory -o "$tmp/p2.json"
strip_ms() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['summary'].pop('plan_ms'); [d['schedule'].pop(k, None) for k in ('ms', 'time_ms')]; print(json.dumps(d, sort_keys=True))" "$1"; }
[ -s "$tmp/p.json" ] && [ "$(strip_ms "$tmp/p.json")" = "$(strip_ms "$tmp/p2.json")" ] && ok ||
  bad "compile --plan wrote another plan than mplan plan -o"
[ "$("$runner" "$tmp/p.mpk" --paranoid >/dev/null 2>&1; echo $?)" = 0 ] && ok || bad "the bundle of compile --plan does not run"
rm -f "$tmp/x.mpk" "$tmp/x.json"
run 2 "$mplan" compile $v2 -o "$tmp/x.mpk" --plan "$tmp/no/x.json" && one_line && has "$tmp/err" "$tmp/no/x.json"
run 2 "$mplan" compile $v2 -o "$tmp/no/x.mpk" --plan "$tmp/x.json" && one_line && has "$tmp/err" "$tmp/no/x.mpk"
[ -e "$tmp/x.mpk" ] || [ -e "$tmp/x.json" ] && bad "compile left a file after failing to write the other" || ok
# An op the runtime lacks (DeformConv): a clear error naming it; planning
# still works.
cat >"$tmp/topk.json" <<'JSON'
{"mplan": "graph/1", "name": "u",
 "tensors": [{"name": "x", "dtype": "f32", "shape": [1, 8], "kind": "input"},
             {"name": "y", "dtype": "f32", "shape": [1, 8]},
             {"name": "z", "dtype": "f32", "shape": [1, 8], "kind": "output"}],
 "ops": [{"name": "e", "op": "DeformConv", "inputs": ["x"], "outputs": ["y"]},
         {"name": "r", "op": "Relu", "inputs": ["y"], "outputs": ["z"]}],
 "outputs": ["z"]}
JSON
run 0 "$mplan" plan "$tmp/topk.json"
run 2 "$mplan" verify "$tmp/topk.json" && one_line && has "$tmp/err" "op 'e' (DeformConv): the runtime has no kernel for this op"
run 2 "$mplan" compile "$tmp/topk.json" -o "$tmp/x.mpk" && has "$tmp/err" "(DeformConv)"
# The random ops (tests/data/random_ops.onnx.bin, kernels/k_random.c):
# every output is what its op promises (tests/cli/random_stats.py: ranges,
# moments, Bernoulli, Dropout and Multinomial element by element, a Loop
# body drawing anew each iteration); the same bytes on a second run, in
# poison mode, and after every pass in the memory order; and the plan
# verifies clean against the no-reuse run.
r=tests/data/random_ops.onnx.bin
run 0 "$mplan" compile $r -o "$tmp/rnd.mpk"
run 0 "$runner" "$tmp/rnd.mpk" --seed 11 --outputs "$tmp/rnd1.mpt" --write-inputs "$tmp/rnd_in.mpt"
run 0 python3 "$src/tests/cli/random_stats.py" "$tmp/rnd1.mpt" "$tmp/rnd_in.mpt"
run 0 "$runner" "$tmp/rnd.mpk" --seed 11 --poison --paranoid --outputs "$tmp/rnd2.mpt"
cmp -s "$tmp/rnd1.mpt" "$tmp/rnd2.mpt" && ok || bad "random ops: a second run (poison) drew other values"
run 0 "$mplan" compile $r --passes all --order memory -o "$tmp/rnd_all.mpk"
run 0 "$runner" "$tmp/rnd_all.mpk" --seed 11 --outputs "$tmp/rnd3.mpt"
cmp -s "$tmp/rnd1.mpt" "$tmp/rnd3.mpt" && ok || bad "random ops: other values after the passes"
run 0 "$mplan" verify $r --paranoid --passes all --order memory && has "$tmp/out" "outputs     9 of 9 identical to the no-reuse run"
run 0 "$mplan" verify --help && has "$tmp/out" "--inject SPEC"
run 0 "$mplan" compile --help && has "$tmp/out" "mplan compile MODEL -o BUNDLE.mpk"

# 4-bit outputs: uq_rt (uint4, 7 elements) ends in a padding nibble that
# the kernel writes as 0 (ONNX's packing), so the bytes of a tensor depend
# on its values only, even when its buffer was poisoned before
python3 "$src/tests/data/gen_onnx_extra.py" "$tmp/extra" >/dev/null
run 0 "$mplan" compile "$tmp/extra/test_int4_blocked/model.onnx" -o "$tmp/i4.mpk"
run 0 "$runner" "$tmp/i4.mpk" --seed 5 --poison --outputs "$tmp/i4.mpt"
python3 - "$src/tests/ort" "$tmp/i4.mpt" <<'PY' && ok || bad "int4 outputs: padding nibble or size"
import sys
sys.path.insert(0, sys.argv[1])
from compare import read_raw
dt, dims, data = read_raw(sys.argv[2])["uq_rt"]
sys.exit(0 if (dt, dims, len(data)) == (15, [7], 4) and data[3] >> 4 == 0
         else "uq_rt: %r" % ((dt, dims, data.hex()),))
PY
echo "runtime cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
