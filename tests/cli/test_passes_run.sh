#!/usr/bin/env bash
# The graph passes keep the model's meaning (issues 6 and 9 together): each
# bundled graph compiled with --passes none and with --passes all --order
# memory gives the same outputs bit for bit on the same seeded inputs and
# weights (weights are seeded by name, so a rewritten graph gets the same
# ones); and the rewritten plans (fused epilogues written in place over
# their residual, in-place depthwise Conv, views, Concat inputs written
# into their slices) verify clean in paranoid mode with red zones, also
# with the NPU preset's regions and banks.
# With RV64=1 the rewritten MobileNetV2, DARTS and RandWire networks also
# verify on rv64 (the RVV kernels under qemu-riscv64).
# usage: test_passes_run.sh MPLAN MPLAN_RUNNER SOURCE_DIR [RV64]
set -u
mplan=$1
runner=$2
src=$3
rv64=${4:-0}
. "$(dirname "$0")/lib.sh"

# A DARTS-like stack (tests/bench/gen_cells.py): its cells end in channel
# Concats whose inputs the concat pass writes straight into their slices.
# A RandWire-WS network (seed 2): its nodes' Sums become Adds (accumulate),
# fused into the pointwise Convs and written in place over running sums.
python3 "$src/tests/bench/gen_cells.py" "$tmp" --randwire 0 --darts 1 --seed 3
python3 "$src/tests/bench/gen_cells.py" "$tmp" --randwire 1 --darts 0 --seed 2
for m in mobilenet_v1 mobilenet_v2 resnet50 decoder decoder_int4 darts_3 randwire_2 concat concat_add view_input \
  hfuse_f32 bn_f32 bn_train_f32 sum_f32 sum_i8 sum_reread_i8 sum_late_i8 sum_late_f32 sum_bcast act_f32 act_big rows_f32 rows_rope kv_scatter attn_decomposed attn_chained upsample two_diamonds \
  upsample_one fold_large dw_epilogue_f32 dw_epilogue_i8 cast_inplace dq4_mlp dq_cnn dq_fc dq_f16 qdq_dw qdq_mm qdq_conv cast_w qdq_gemm_ta dq_half nbits_mlp nbits_gptq qdq_tail qdq_convt qdq_shared qdq_ew qdq_pool qdq_concat qdq_move qdq_bn_convt qdq_chain three_clips qdq_up se_slice qdq_dw_inplace qdq_dw_apart qdq_pad se_residual pad_conv qdq_pad_conv qdq_bias_i32 dq_clip qdq_resize qdq_twice quant_early nhwc_first; do
  model=$src/models/$m.json
  [ -f "$tmp/$m.json" ] && model=$tmp/$m.json
  [ -f "$src/tests/data/passes/$m.json" ] && model=$src/tests/data/passes/$m.json
  [ -f "$src/tests/data/passes/$m.onnx.bin" ] && model=$src/tests/data/passes/$m.onnx.bin
  outputs "$model" "$m.none" --passes none || continue
  outputs "$model" "$m.all" --passes all --order memory || continue
  # the rewrite really happened: fewer buffers (views, in place, fusion)
  n0=$("$mplan" plan "$model" --passes none --json | python3 -c \
    "import json,sys; print(json.load(sys.stdin)['summary']['buffers'])")
  n1=$("$mplan" plan "$model" --passes all --json | python3 -c \
    "import json,sys; print(json.load(sys.stdin)['summary']['buffers'])")
  if [ "$n1" -lt "$n0" ]; then ok; else bad "$m: passes all kept $n1 of $n0 buffers"; fi
  if cmp -s "$tmp/$m.none.mpt" "$tmp/$m.all.mpt"; then
    ok
  else
    bad "$m: outputs with --passes all differ from --passes none"
  fi
done

verify "$src/models/mobilenet_v2.json" --passes all --order memory
verify "$src/models/resnet50.json" --passes all --order memory
verify "$src/models/mobilenet_v2.json" --passes all --backend npu
verify "$tmp/darts_3.json" --passes all --order memory
verify "$src/tests/data/passes/view_input.json" --passes all
verify "$src/tests/data/passes/sum_f32.json" --passes all --order memory
verify "$src/tests/data/passes/sum_i8.json" --passes all --order memory
verify "$src/tests/data/passes/sum_bcast.json" --passes all --order memory
verify "$src/tests/data/passes/sum_late_i8.json" --passes all --order memory
# a fused depthwise Conv (BatchNormalization + HardSwish, or Relu, as its
# epilogue) written over its input
verify "$src/tests/data/passes/dw_epilogue_f32.json" --passes all --order memory
verify "$src/tests/data/passes/dw_epilogue_i8.json" --passes all --order memory
# a Cast from int32 to float written over its input
verify "$src/tests/data/passes/cast_inplace.onnx.bin" --passes all --order memory
# randwire_2's outputs above are identical with and without passes while
# its int8 Sums add in production order, not input order (wrapping Adds).
if "$mplan" plan "$tmp/randwire_2.json" --passes all --order memory |
  grep -q "integer Sums in production order"; then
  ok
else
  bad "randwire_2: no Sum reordered, so the output check proves nothing"
fi
verify "$src/tests/data/passes/act_f32.json" --passes all --order memory
verify "$src/tests/data/passes/rows_f32.json" --passes all --order memory
verify "$src/tests/data/passes/rows_rope.json" --passes all --order memory
verify "$src/tests/data/passes/kv_scatter.json" --passes all --order memory
verify "$src/tests/data/passes/attn_decomposed.json" --passes all --order memory
verify "$src/tests/data/passes/dq4_mlp.json" --passes all --order memory
verify "$src/tests/data/passes/dq_cnn.json" --passes all --order memory
verify "$src/tests/data/passes/dq_fc.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_dw.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_mm.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_conv.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_gemm_ta.json" --passes all --order memory
verify "$src/tests/data/passes/dq_half.json" --passes all --order memory
verify "$src/tests/data/passes/nbits_mlp.json" --passes all --order memory
verify "$src/tests/data/passes/nbits_gptq.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_tail.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_convt.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_shared.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_ew.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_pool.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_concat.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_move.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_bn_convt.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_chain.json" --passes all --order memory
verify "$src/tests/data/passes/qdq_up.json" --passes all --order memory
verify "$src/models/decoder_int4.json" --passes all --order memory
verify "$src/models/decoder.json" --passes all --order memory
verify "$src/tests/data/passes/upsample.onnx.bin" --passes all --order memory
verify "$src/tests/data/passes/act_big.json" --passes all --order memory
verify "$src/tests/data/passes/upsample_one.json" --passes all
# A tapped epilogue runs tile by tile, and a Conv whose epilogue operand
# lives in its output's buffer plane by plane (a MatMul or Gemm row by
# row: act_big's mm2 and gemm3): the workspace is a tile, plane or row plus
# the kernels' own scratch, not a whole output (the 13 MB map
# of PP-OCRv4 det's first HardSwish). MobileNetV2 and ResNet-50 need the
# same workspace with the passes as without (conv1's accumulator plane).
"$mplan" compile "$src/tests/data/passes/act_big.json" --passes all \
  -o "$tmp/ab.mpk" >"$tmp/out" 2>&1
ws=$(sed -n 's/^workspace \([0-9,]*\) B.*/\1/p' "$tmp/out" | tr -d ,)
if [ -n "$ws" ] && [ "$ws" -lt 40000 ]; then ok; else bad "act_big: workspace '$ws' B"; fi
for m in mobilenet_v2 resnet50; do
  for p in none all; do
    "$mplan" compile "$src/models/$m.json" --passes $p --order memory \
      -o "$tmp/ws.mpk" >"$tmp/out" 2>&1
    sed -n 's/^workspace \([0-9,]*\) B.*/\1/p' "$tmp/out" >"$tmp/ws.$p"
  done
  if [ -s "$tmp/ws.none" ] && cmp -s "$tmp/ws.none" "$tmp/ws.all"; then
    ok
  else
    bad "$m: workspace $(cat "$tmp/ws.all") B with the passes, $(cat "$tmp/ws.none") B without"
  fi
done
verify "$tmp/randwire_2.json" --passes all --order memory
slices=$("$mplan" plan "$tmp/darts_3.json" --passes all --json | python3 -c "
import json,sys
d=json.load(sys.stdin)
print(sum(1 for b in d['buffers'] for o in b.get('tensor_offsets', []) if o))")
if [ "$slices" -ge 8 ]; then ok; else bad "darts_3: only $slices Concat slices off offset 0"; fi
if [ "$rv64" = 1 ]; then
  verify "$src/models/mobilenet_v2.json" --passes all --order memory \
    --target rv64 --vlen 128
  verify "$tmp/darts_3.json" --passes all --order memory
  verify "$tmp/randwire_2.json" --passes all --order memory --target rv64 \
    --vlen 256
  verify "$src/tests/data/passes/sum_bcast.json" --passes all --order memory \
    --target rv64 --vlen 128
  verify "$src/tests/data/passes/act_f32.json" --passes all --order memory \
    --target rv64 --vlen 128
  verify "$src/tests/data/passes/rows_f32.json" --passes all --target rv64 \
    --vlen 256
  verify "$src/tests/data/passes/rows_rope.json" --passes all --target rv64 \
    --vlen 128
  verify "$src/models/decoder.json" --passes all --order memory --target rv64 \
    --vlen 128
  verify "$src/tests/data/passes/upsample.onnx.bin" --passes all --target rv64 \
    --vlen 128
  verify "$src/tests/data/passes/act_big.json" --passes all --target rv64 \
    --vlen 256
  # on rv64 too, the RVV kernels give the unfused outputs: act_big's tiled
  # epilogues and its Conv run plane by plane (an operand in its output's
  # buffer), MobileNetV2's int8 projections written over their residual
  rv64_same "$src/tests/data/passes/act_big.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/act_big.json" 256 all --order memory
  rv64_same "$src/models/mobilenet_v2.json" 128 all --order memory
  rv64_same "$src/models/decoder.json" 128 all --order memory
  # the attention pass: each query row runs the absorbed ops' RVV kernels,
  # the unfused outputs bit for bit
  rv64_same "$src/tests/data/passes/attn_decomposed.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/attn_decomposed.json" 256 all --order memory
  # 4-bit weights widened a panel of columns at a time into the workspace
  rv64_same "$src/tests/data/passes/dq4_mlp.json" 128 all --order memory
  rv64_same "$src/models/decoder_int4.json" 128 all --order memory
  # Conv weights widened a panel of output channels at a time: per channel
  # on the vector kernel, 4-bit and blocked runs on the scalar one
  rv64_same "$src/tests/data/passes/dq_cnn.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/dq_fc.json" 256 all --order memory
  # grouped Convs widening their quantized input a panel of groups at a time
  rv64_same "$src/tests/data/passes/qdq_dw.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/qdq_dw_inplace.json" 256 all --order memory
  rv64_same "$src/tests/data/passes/qdq_dw_apart.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/qdq_pad.json" 256 all --order memory
  rv64_same "$src/tests/data/passes/se_residual.json" 128 all --order memory
  # a Pad folded into a depthwise Conv's pads (eliminate rule 9): the
  # vector kernel's skipped taps give the padded zeros' sums
  rv64_same "$src/tests/data/passes/pad_conv.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/qdq_pad_conv.json" 256 all --order memory
  rv64_same "$src/tests/data/passes/qdq_bias_i32.json" 128 all --order memory
  # a weight's prologue without a zero point, after a Clip's operands
  rv64_same "$src/tests/data/passes/dq_clip.json" 256 all --order memory
  # a Resize widened and quantized a plane at a time
  rv64_same "$src/tests/data/passes/qdq_resize.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/qdq_mm.json" 256 all --order memory
  # transposed A widened a block of its columns at a time
  rv64_same "$src/tests/data/passes/qdq_gemm_ta.json" 128 all --order memory
  # 16-bit heads through f32, their prologues rounded to f16 and bf16
  rv64_same "$src/tests/data/passes/dq_half.json" 128 all --order memory
  # MatMulNBits heads with fused epilogues, two over their operands
  rv64_same "$src/tests/data/passes/nbits_mlp.json" 256 all --order memory
  # and of 2-bit weights, float zero points and g_idx (act order)
  rv64_same "$src/tests/data/passes/nbits_gptq.json" 128 all --order memory
  # Convs ending in their QuantizeLinear, quantized a plane or a row at a time
  rv64_same "$src/tests/data/passes/qdq_tail.json" 256 all --order memory
  # ConvTransposes ending in their QuantizeLinear or over their operand
  rv64_same "$src/tests/data/passes/qdq_convt.json" 128 all --order memory
  # elementwise ops reading 8 bits and ending in their QuantizeLinear, a
  # tile at a time
  rv64_same "$src/tests/data/passes/qdq_ew.json" 256 all --order memory
  # and pools, a plane at a time
  rv64_same "$src/tests/data/passes/qdq_pool.json" 128 all --order memory
  # and Concats of two, a block at a time
  rv64_same "$src/tests/data/passes/qdq_concat.json" 256 all --order memory
  # and moves between pairs of one scale, on the 8-bit values
  rv64_same "$src/tests/data/passes/qdq_move.json" 128 all --order memory
  # BatchNormalizations a tile of a channel at a time, ConvTransposes a
  # band of output rows at a time (2-D and 3-D)
  rv64_same "$src/tests/data/passes/qdq_bn_convt.json" 128 all --order memory
  # chains of elementwise ops through QDQ pairs, a HardSwish diamond among
  # them, each pair a round trip through 8 bits on the tile
  rv64_same "$src/tests/data/passes/qdq_chain.json" 256 all --order memory
  # an upsample-and-add reading the small 8-bit map replicated
  rv64_same "$src/tests/data/passes/qdq_up.json" 128 all --order memory
  # Convs of one group widening their quantized input a band of rows at a
  # time, and their weight a panel of channels
  rv64_same "$src/tests/data/passes/qdq_conv.json" 128 all --order memory
  # f16 weights Cast to f32, widened a panel at a time
  rv64_same "$src/tests/data/passes/cast_w.json" 256 all --order memory
  verify "$src/tests/data/passes/view_input.json" --passes all --target rv64 \
    --vlen 256
  # a fused depthwise Conv written over its input, on the RVV kernels
  rv64_same "$src/tests/data/passes/dw_epilogue_f32.json" 128 all --order memory
  rv64_same "$src/tests/data/passes/dw_epilogue_i8.json" 256 all --order memory
fi

# Random graphs of Convs, depthwise Convs, Relu, Add, MaxPool, nearest
# Resizes read by an Add, Mul or Sub (9 of the 40 hold 9 in five mode
# pairs; absorb folds 5, and leaves asymmetric + round_prefer_ceil and a
# map read twice) and channel
# Concats (tests/cli/rnd_graph.py): the same outputs with and without the
# passes, and the rewritten plan verifies clean. Concats of Concats, a
# tensor concatenated twice, a slice read after the Concat: the cases the
# concat pass and the runtime's slice checks must get right.
# Then f32 graphs (BatchNormalization after some Convs, SiLU, HardSwish
# and GELU written out: diamonds with BN in front), 6x6 and at 72x72,
# where a tapped epilogue runs row by row; and f32q graphs, whose Conv
# weights are mostly quantized (every dtype and layout the absorb pass
# takes into a Conv) and whose Convs now and then read an activation
# quantized and dequantized (both absorbed when the weight is quantized
# too), also at 72x72, where a 1x1 Conv's input is widened in bands.
for spec in $(seq 1 40) $(seq 101 112 | sed 's/$/:6:f32/') \
  $(seq 201 206 | sed 's/$/:72:f32/') $(seq 301 324 | sed 's/$/:6:f32q/') \
  $(seq 335 338 | sed 's/$/:72:f32q/'); do
  IFS=: read -r s hw dt <<<"$spec"
  python3 "$src/tests/cli/rnd_graph.py" "$s" "$tmp/rg.json" ${hw:-6} ${dt:-i8}
  outputs "$tmp/rg.json" rg.none --passes none || continue
  outputs "$tmp/rg.json" rg.all --passes all --order memory || continue
  if cmp -s "$tmp/rg.none.mpt" "$tmp/rg.all.mpt"; then
    ok
  else
    bad "rnd_graph.py $spec: outputs with --passes all differ"
  fi
  verify "$tmp/rg.json" --passes all --order memory
done

# A wrong runtime would show here: a Conv whose fused Add writes over its
# residual must still read the residual (the bundle of a plan that put
# them in one buffer runs clean above; its outputs equal the unfused ones).
"$mplan" plan "$src/models/resnet50.json" --passes all --json >"$tmp/r.json"
# s1b1_down (Conv) absorbs s1b1_add (Add, Relu) and writes s1b1_out over
# the residual s1b1_c_out.
if python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
sys.exit(0 if any({'s1b1_c_out','s1b1_out'} <= set(b.get('tensors',[]))
                  for b in d['buffers']) else 1)" "$tmp/r.json"; then
  ok
else
  bad "resnet50 --passes all: s1b1_out is not written over s1b1_c_out"
fi

echo "test_passes_run: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
