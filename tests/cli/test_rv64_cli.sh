#!/usr/bin/env bash
# mplan verify --target rv64 end to end: the cross-built riscv64 runner
# under qemu-riscv64 at VLEN 128, 256 and 512 reports as a host run does
# (clean runs bit for bit against the no-reuse run on the target, the same
# injected faults named with the same culprit and victim), lists the ops
# that fell back to scalar kernels, and every missing-tool and bad --vlen
# case is one line with exit 2 and no partial output.
# usage: test_rv64_cli.sh MPLAN SOURCE_DIR
set -u
mplan=$1
src=$2
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

one_line() {
  if [ "$(wc -l <"$tmp/err")" -eq 1 ]; then ok; else bad "stderr has $(wc -l <"$tmp/err") lines"; fi
}

# The event lines of a run, without the run's header (same on both targets).
events() { grep '^event ' "$tmp/out" >"$1"; }

cd "$src"
v1=models/mobilenet_v1.json
v2=models/mobilenet_v2.json

for vlen in 128 256 512; do
  # paranoid (every live byte re-checked after every op) once; it is the
  # slow part under QEMU
  mode=--poison
  [ $vlen = 256 ] && mode=--paranoid
  run 0 "$mplan" verify $v2 --target rv64 --vlen $vlen $mode --redzone 16 &&
    has "$tmp/out" "66 ops on rv64" &&
    has "$tmp/out" "VLEN $vlen: RVV kernels" &&
    has "$tmp/out" "outputs     1 of 1 identical to the no-reuse run" &&
    has "$tmp/out" "verified: no event"
done
# The one op of MobileNetV2 without an RVV kernel is listed.
has "$tmp/out" "scalar op   pool (GlobalAveragePool): kernel avgpool, i8"
run 0 "$mplan" verify $v1 --target rv64 --poison && has "$tmp/out" "VLEN 256"
# f16 (runtime/ops.c invariant 5): Conv, Gemm, GlobalAveragePool and
# Softmax run the RVV f32 kernels on f32 copies; the six 16-bit
# elementwise, pooling and fill ops are listed as scalar.
run 0 "$mplan" verify tests/data/half_net.onnx.bin --target rv64 --vlen 128 --poison &&
  has "$tmp/out" "RVV kernels, 6 ops on scalar kernels" &&
  has "$tmp/out" "scalar op   relu1 (Relu): kernel unary, f16" &&
  has "$tmp/out" "verified: no event"

# Absorbed DequantizeLinears widened a part at a time
# (tests/data/passes/dq_cnn.json: 4-bit and blocked Conv weights, whose
# runs of output channels take mp_kv_dequantize_range; qdq_mm.json:
# quantized activations a block of rows at a time; qdq_conv.json: Convs'
# quantized inputs a band of rows at a time, with their weights' panels;
# qdq_gemm_ta.json: Gemms' transposed A a block of its columns at a time;
# nbits_mlp.json: MatMulNBits heads, their 4-bit rows unpacked by RVV;
# nbits_gptq.json: 2-bit rows, float zero points and g_idx; qdq_tail.json:
# Convs ending in their QuantizeLinear; qdq_convt.json: ConvTransposes
# ending in theirs or over their operand, a plane at a time; qdq_shared:
# DequantizeLinears widened by each of their readers; qdq_ew: elementwise
# ops between pairs, a tile at a time; qdq_concat: Concats of two, a block
# at a time; qdq_bn_convt: BatchNormalizations a tile of a channel at a
# time, ConvTransposes a band of rows at a time): every op on an RVV
# kernel, and the outputs those of the no-reuse run.
for m in dq_cnn qdq_mm qdq_conv qdq_gemm_ta nbits_mlp nbits_gptq qdq_tail qdq_convt qdq_shared qdq_ew qdq_concat qdq_bn_convt; do
  run 0 "$mplan" verify tests/data/passes/$m.json --passes all --order memory \
    --target rv64 --vlen 128 --poison &&
    has "$tmp/out" "RVV kernels, 0 ops on scalar kernels" &&
    has "$tmp/out" "verified: no event"
done
# qdq_pool: pools between pairs, a plane at a time, on the RVV pool
# kernels; only mi, which writes Indices (no vector kernel does), is not.
run 0 "$mplan" verify tests/data/passes/qdq_pool.json --passes all --order memory \
  --target rv64 --vlen 128 --poison &&
  has "$tmp/out" "RVV kernels, 1 op on scalar kernels" &&
  has "$tmp/out" "scalar op   mi (MaxPool): kernel maxpool, f32" &&
  has "$tmp/out" "verified: no event"

# Injected faults: the same events as on the host.
for spec in oob:b3_dw early-free:b2_dw_out overlap:b1_dw_out,b1_project_out; do
  extra=()
  [ "${spec%%:*}" = oob ] && extra=(--redzone 16)
  run 1 "$mplan" verify $v2 --paranoid --fail-fast --inject "$spec" "${extra[@]}"
  events "$tmp/host.ev"
  run 1 "$mplan" verify $v2 --paranoid --fail-fast --inject "$spec" "${extra[@]}" --target rv64 --vlen 128
  events "$tmp/rv64.ev"
  if [ -s "$tmp/host.ev" ] && cmp -s "$tmp/host.ev" "$tmp/rv64.ev"; then ok; else
    bad "$spec: rv64 events differ from the host's"; diff "$tmp/host.ev" "$tmp/rv64.ev" | head -5
  fi
done

# Report files record the rv64 run like a host run, with where it ran and
# the ops on scalar kernels (verification_target, verification_scalar_op).
run 0 "$mplan" verify $v2 --target rv64 --vlen 512 --poison --sqlite "$tmp/h.db" --html "$tmp/r.html"
run 0 "$mplan" verify $v2 --poison --sqlite "$tmp/h.db" --html "$tmp/host.html"
q() { sqlite3 "$tmp/h.db" "$1"; }
[ "$(q "SELECT arch || ' ' || kernels || ' ' || vlen FROM verification_target ORDER BY run_id")" = "rv64 rvv 512
host scalar 0" ] && ok || bad "verification_target rows: $(q 'SELECT * FROM verification_target')"
[ "$(q "SELECT op || ' ' || op_type || ' ' || kernel || ' ' || dtype FROM verification_scalar_op")" = "pool GlobalAveragePool avgpool i8" ] &&
  ok || bad "verification_scalar_op rows: $(q 'SELECT * FROM verification_scalar_op')"
[ "$(q "SELECT count(*) FROM verification_event")" = 0 ] && ok || bad "rv64 events in the history"
has "$tmp/r.html" '"verification_target":{"arch":"rv64","kernels":"rvv","vlen":512,"scalar_ops":[{"op":"pool","type":"GlobalAveragePool","kernel":"avgpool","dtype":"i8"}]}'
has "$tmp/host.html" '"verification_target":{"arch":"host","kernels":"scalar","vlen":0,"scalar_ops":[]}'

# Missing tools and bad --vlen: one line, exit 2, no file written.
MPLAN_QEMU=/nonexistent/qemu-riscv64 run 2 "$mplan" verify $v2 --target rv64 --html "$tmp/x.html" &&
  one_line && has "$tmp/err" "apt-get install qemu-user"
MPLAN_RV64_RUNNER=/nonexistent/runner run 2 "$mplan" verify $v2 --target rv64 --html "$tmp/x.html" &&
  one_line && has "$tmp/err" "-DMPLAN_RV64=ON"
[ ! -e "$tmp/x.html" ] && ok || bad "a failed rv64 verify wrote its report"
for v in 100 64 1000 abc; do
  run 2 "$mplan" verify $v2 --target rv64 --vlen $v && one_line && has "$tmp/err" "--vlen '$v'"
done
run 2 "$mplan" verify $v2 --vlen 256 && has "$tmp/err" "--vlen applies to --target rv64"
# An emulator that fails is an error, not a crash.
printf '#!/bin/sh\nexit 7\n' >"$tmp/fake" && chmod +x "$tmp/fake"
MPLAN_QEMU="$tmp/fake" run 2 "$mplan" verify $v2 --target rv64 &&
  one_line && has "$tmp/err" "exited with status 7"

# The random ops draw the same values on riscv64 as on the host: the
# stream is integer arithmetic, each value one double rounded at the store
# (kernels/k_random.c); only the normal values go through libm (log, cos),
# so the f64 ones may differ in their last bits (compare.py: 1e-12
# relative, which holds f32 values and integers exact).
r=tests/data/random_ops.onnx.bin
rvr=$(dirname "$mplan")/rv64/mplan-runner
run 0 "$mplan" compile $r -o "$tmp/rnd.mpk"
run 0 "$(dirname "$mplan")/mplan-runner" "$tmp/rnd.mpk" --seed 11 --outputs "$tmp/rnd_host.mpt" --write-inputs "$tmp/rnd_in.mpt"
for vlen in 128 512; do
  run 0 qemu-riscv64 -cpu "rv64,v=true,vlen=$vlen,vext_spec=v1.0" "$rvr" "$tmp/rnd.mpk" \
    --inputs "$tmp/rnd_in.mpt" --outputs "$tmp/rnd_rv.mpt" --poison --paranoid
  run 0 python3 tests/ort/compare.py "$tmp/rnd_rv.mpt" "$tmp/rnd_host.mpt" 0 1e-12 "random ops rv64 VLEN $vlen"
done

# --max-ops reaches the target's runner: a Loop whose condition never
# falls ends there in one line, and so does the runner itself.
lf=tests/data/loop_forever.onnx.bin
run 2 "$mplan" verify $lf --target rv64 --max-ops 500 && one_line &&
  has "$tmp/err" "rv64 runner: mplan-runner: error:" &&
  has "$tmp/err" "op 'thousand/body/forever' (Loop) at step 4: the run would pass 500 ops, its --max-ops"
run 0 "$mplan" compile $lf -o "$tmp/lf.mpk"
run 2 qemu-riscv64 -cpu "rv64,v=true,vlen=256,vext_spec=v1.0" "$rvr" "$tmp/lf.mpk" --max-ops 77 --poison &&
  one_line && has "$tmp/err" "the run would pass 77 ops"

echo "rv64 cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
