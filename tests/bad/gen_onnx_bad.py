#!/usr/bin/env python3
"""Writes the small ONNX-like bad inputs of tests/bad/ (*.onnx.bin: not
named .onnx on purpose) and tests/data/*.onnx.bin. Needs python3-onnx (a
developer tool; the test suite only reads the committed outputs).

usage: gen_onnx_bad.py REPO_ROOT
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

root = sys.argv[1]


def model(nodes, inputs, outputs, inits=(), vi=(), opset=13):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits), value_info=list(vi))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="mplan-tests")
    m.ir_version = 8
    return m.SerializeToString()


def save(rel, data):
    with open(f"{root}/{rel}", "wb") as f:
        f.write(data)


F = TensorProto.FLOAT
x = helper.make_tensor_value_info("x", F, [1, 3, 8, 8])
y = helper.make_tensor_value_info("y", F, None)
w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
good = model([conv], [x], [y], [w])

# A valid model cut in the middle of the weights.
save("tests/bad/onnx_truncated.onnx.bin", good[: len(good) // 2])
# ir_version, then bytes that are no protobuf.
save("tests/bad/onnx_garbage.onnx.bin", b"\x08\x07" + bytes(range(250, 256)) * 8)
# Conv whose weight is neither an initializer nor an input.
save("tests/bad/onnx_missing_initializer.onnx.bin", model([conv], [x], [y]))
# An op no rule knows, its output not declared.
foo = helper.make_node("FrobnicateV2", ["x"], ["t"], name="frob")
relu = helper.make_node("Relu", ["t"], ["y"], name="relu")
save("tests/bad/onnx_unknown_op.onnx.bin", model([foo, relu], [x], [y]))
# A graph output without a name (ONNX requires one). The committed file is
# a fuzzed copy of onnx_unknown_op whose output name is absent, not empty;
# both get the same error.
save("tests/bad/onnx_unnamed_output.onnx.bin",
     model([foo, relu], [x], [helper.make_tensor_value_info("", F, None)]))
# The same with value_info giving the unknown op's output: this one plans.
t_vi = helper.make_tensor_value_info("t", F, [1, 3, 8, 8])
save("tests/data/unknown_op_declared.onnx.bin", model([foo, relu], [x], [y], vi=[t_vi]))
# A negative dim on a graph input.
xn = helper.make_tensor_value_info("x", F, [1, -3, 8, 8])
save("tests/bad/onnx_negative_dim.onnx.bin", model([relu], [xn], [y]))
# Input dims whose product overflows 64 bits.
xo = helper.make_tensor_value_info("t", F, [1 << 31, 1 << 31, 1 << 31])
save("tests/bad/onnx_overflow.onnx.bin", model([relu], [xo], [y]))
# An initializer whose dims product overflows.
big = TensorProto(name="w", data_type=F, dims=[1 << 40, 1 << 40], raw_data=b"")
save("tests/bad/onnx_overflow_init.onnx.bin", model([conv], [x], [y], [big]))
# Weights kept in an external file that is not there.
ext = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
ext.ClearField("raw_data")
ext.data_location = TensorProto.EXTERNAL
e = ext.external_data.add()
e.key, e.value = "location", "weights.bin"
save("tests/bad/onnx_external.onnx.bin", model([conv], [x], [y], [ext]))
# raw_data shorter than dims x dtype.
short = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
short.raw_data = short.raw_data[:100]
save("tests/bad/onnx_short_raw.onnx.bin", model([conv], [x], [y], [short]))
# Conv whose weights expect 5 channels for an input of 3.
w5 = numpy_helper.from_array(np.zeros((4, 5, 3, 3), np.float32), "w")
save("tests/bad/onnx_channels.onnx.bin", model([conv], [x], [y], [w5]))
# Opset newer than known: a warning, then planned.
save("tests/data/opset_new.onnx.bin", model([conv], [x], [y], [w], opset=99))
# Dynamic dims, named and unnamed, and shape math (Shape -> Gather ->
# Concat -> Reshape) for the CLI and fault-injection tests.
xd = helper.make_tensor_value_info("x", F, ["N", 3, "H", "W"])
shape = helper.make_node("Shape", ["y"], ["s"], name="shape")
idx = numpy_helper.from_array(np.array([0, 1], np.int64), "idx")
gat = helper.make_node("Gather", ["s", "idx"], ["nc"], name="gather")
minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
cat = helper.make_node("Concat", ["nc", "minus1"], ["target"], name="concat", axis=0)
rs = helper.make_node("Reshape", ["y", "target"], ["flat"], name="reshape")
sm = helper.make_node("Softmax", ["flat"], ["z"], name="softmax", axis=-1)
z = helper.make_tensor_value_info("z", F, ["N", 4, "HW"])
save("tests/data/dynamic.onnx.bin",
     model([conv, shape, gat, cat, rs, sm], [xd], [z], [w, idx, minus1]))
# value_info that contradicts inference: a warning names both shapes.
t_bad = helper.make_tensor_value_info("t", F, [1, 3, 4, 4])
relu1 = helper.make_node("Relu", ["x"], ["t"], name="relu1")
save("tests/data/mismatch.onnx.bin", model([relu1, relu], [x], [y], vi=[t_bad]))
# If and Loop, flattened: branches of the If may share bytes, captured
# outer tensors live until the node, loop body tensors until the loop.
B = TensorProto.BOOL
xi = helper.make_tensor_value_info("x", F, [1, 4])
ci = helper.make_tensor_value_info("cond", B, [])
then_g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["t1"], name="t_relu"),
     helper.make_node("Concat", ["t1", "t1"], ["t_out"], name="t_cat", axis=1)],
    "then", [], [helper.make_tensor_value_info("t_out", F, None)])
else_g = helper.make_graph(
    [helper.make_node("Sigmoid", ["x"], ["e1"], name="e_sig"),
     helper.make_node("Neg", ["e1"], ["e_out"], name="e_neg")],
    "else", [], [helper.make_tensor_value_info("e_out", F, None)])
if_n = helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g, else_branch=else_g)
trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
body = helper.make_graph(
    [helper.make_node("Identity", ["c_in"], ["c_out"], name="b_cond"),
     helper.make_node("Add", ["y_in", "x"], ["y_out"], name="b_add"),
     helper.make_node("Identity", ["y_out"], ["s_out"], name="b_scan")],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("c_in", B, []),
     helper.make_tensor_value_info("y_in", F, None)],
    [helper.make_tensor_value_info("c_out", B, []),
     helper.make_tensor_value_info("y_out", F, None),
     helper.make_tensor_value_info("s_out", F, None)])
loop_n = helper.make_node("Loop", ["trip", "cond", "x"], ["y_final", "scan"], name="loop", body=body)
after = helper.make_node("Relu", ["branch"], ["out"], name="after")
save("tests/data/control.onnx.bin",
     model([if_n, loop_n, after], [xi, ci],
           [helper.make_tensor_value_info("out", F, None),
            helper.make_tensor_value_info("y_final", F, None),
            helper.make_tensor_value_info("scan", F, None)], [trip]))

# An If whose condition is known (--value, or shape math) runs one branch,
# and the other need not hold for these inputs (as in Silero VAD, whose
# 8 kHz path cannot take a 16 kHz frame). 'rate' = (sr == 16000): its then
# branch holds a nested If 'fits' = (x.shape[1] == 8), known from shapes
# alone; its else branch squeezes an axis of size 8, which fails, and so
# does the else branch of 'fits'.
I64 = TensorProto.INT64
sri = helper.make_tensor_value_info("sr", I64, [])
xb = helper.make_tensor_value_info("x", F, [1, 8])
sr16k = numpy_helper.from_array(np.array(16000, np.int64), "sr16k")
eight = numpy_helper.from_array(np.array(8, np.int64), "eight")
one = numpy_helper.from_array(np.array(1, np.int64), "one")
ax1 = numpy_helper.from_array(np.array([1], np.int64), "ax1")
fits_then = helper.make_graph(
    [helper.make_node("Add", ["t16", "t16"], ["f_out"], name="f_add")],
    "fits_then", [], [helper.make_tensor_value_info("f_out", F, None)])
fits_else = helper.make_graph(
    [helper.make_node("Squeeze", ["t16", "ax1"], ["g_out"], name="g_sq")],
    "fits_else", [], [helper.make_tensor_value_info("g_out", F, None)])
rate_then = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["t16"], name="t_relu"),
     helper.make_node("Shape", ["t16"], ["t_shape"], name="t_shape"),
     helper.make_node("Gather", ["t_shape", "one"], ["t_w"], name="t_w", axis=0),
     helper.make_node("Equal", ["t_w", "eight"], ["t_fits"], name="t_eq"),
     helper.make_node("If", ["t_fits"], ["t_out"], name="fits",
                      then_branch=fits_then, else_branch=fits_else)],
    "rate_then", [], [helper.make_tensor_value_info("t_out", F, None)])
rate_else = helper.make_graph(
    [helper.make_node("Squeeze", ["x", "ax1"], ["e_sq"], name="e_sq")],
    "rate_else", [], [helper.make_tensor_value_info("e_sq", F, None)])
save("tests/data/branch.onnx.bin",
     model([helper.make_node("Equal", ["sr", "sr16k"], ["is16k"], name="is16k"),
            helper.make_node("If", ["is16k"], ["r_out"], name="rate",
                             then_branch=rate_then, else_branch=rate_else),
            helper.make_node("Relu", ["r_out"], ["y"], name="after")],
           [xb, sri], [helper.make_tensor_value_info("y", F, None)],
           [sr16k, eight, one, ax1]))

# The runtime's quantized and recurrent kernels in one small model, for
# the structured bundle fuzzer (test_runtime) and the comparison with
# ONNX Runtime (test_ort): DynamicQuantizeLinear -> ConvInteger (uint8,
# per-tensor zero points) -> Cast -> Mul by the scales -> Relu ->
# Reshape to a sequence -> GRU; then an If decided by shape math
# (x.shape[2] == 6) whose then branch runs an LSTM with weights defined in
# the branch (R has 6,400 values, more than inference keeps), and whose
# else branch could not run.
rng = np.random.default_rng(20261130)
xq_in = helper.make_tensor_value_info("x", F, [1, 2, 6, 6])
wq = numpy_helper.from_array(rng.integers(0, 256, (3, 2, 3, 3), dtype=np.uint8), "wq")
wz = numpy_helper.from_array(np.array(131, np.uint8), "wz")
ws = numpy_helper.from_array(np.array(0.02, np.float32), "ws")
shape_seq = numpy_helper.from_array(np.array([6, 1, 18], np.int64), "shape_seq")
gw = numpy_helper.from_array((rng.standard_normal((1, 12, 18)) * 0.3).astype(np.float32), "gw")
gr = numpy_helper.from_array((rng.standard_normal((1, 12, 4)) * 0.3).astype(np.float32), "gr")
gb = numpy_helper.from_array((rng.standard_normal((1, 24)) * 0.1).astype(np.float32), "gb")
two = numpy_helper.from_array(np.array(2, np.int64), "two")
six = numpy_helper.from_array(np.array(6, np.int64), "six")
hid = 40
lw_ = numpy_helper.from_array((rng.standard_normal((1, 4 * hid, 4)) * 0.3).astype(np.float32), "lw")
lr_ = numpy_helper.from_array((rng.standard_normal((1, 4 * hid, hid)) * 0.1).astype(np.float32), "lr")
lstm_then = helper.make_graph(
    [helper.make_node("Constant", [], ["lw"], name="lw_make", value=lw_),
     helper.make_node("Constant", [], ["lr"], name="lr_make", value=lr_),
     helper.make_node("Reshape", ["gy", "shape_l"], ["gseq"], name="l_reshape"),
     helper.make_node("LSTM", ["gseq", "lw", "lr"], ["ly", "lh"], name="lstm", hidden_size=hid)],
    "lstm_then", [], [helper.make_tensor_value_info("lh", F, None)])
shape_l = numpy_helper.from_array(np.array([6, 1, 4], np.int64), "shape_l")
lstm_else = helper.make_graph(
    [helper.make_node("Squeeze", ["gy", "ax1"], ["bad"], name="e_bad")],
    "lstm_else", [], [helper.make_tensor_value_info("bad", F, None)])
nodes = [
    helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq"),
    helper.make_node("ConvInteger", ["xq", "wq", "xz", "wz"], ["acc"], name="convi", pads=[1, 1, 1, 1]),
    helper.make_node("Cast", ["acc"], ["accf"], name="cast", to=F),
    helper.make_node("Mul", ["xs", "ws"], ["scale"], name="scale"),
    helper.make_node("Mul", ["accf", "scale"], ["deq"], name="deq"),
    helper.make_node("Relu", ["deq"], ["act"], name="relu"),
    helper.make_node("Transpose", ["act"], ["actt"], name="tr", perm=[2, 0, 1, 3]),
    helper.make_node("Reshape", ["actt", "shape_seq"], ["seq"], name="to_seq"),
    helper.make_node("GRU", ["seq", "gw", "gr", "gb"], ["gy"], name="gru", hidden_size=4),
    helper.make_node("Shape", ["x"], ["xshape"], name="xshape"),
    helper.make_node("Gather", ["xshape", "two"], ["h"], name="h", axis=0),
    helper.make_node("Equal", ["h", "six"], ["is6"], name="is6"),
    helper.make_node("If", ["is6"], ["lh_out"], name="branch", then_branch=lstm_then, else_branch=lstm_else),
]
save("tests/data/quant_rnn.onnx.bin",
     model(nodes, [xq_in], [helper.make_tensor_value_info("gy", F, None),
                            helper.make_tensor_value_info("lh_out", F, None)],
           [wq, wz, ws, shape_seq, gw, gr, gb, two, six, shape_l, ax1]))

# The index, layout and selection ops of runtime/ops_index.c in one small
# model, for the structured bundle fuzzer (test_runtime) and the
# comparison with ONNX Runtime (test_ort): every op reads the graph input
# x (directly or through another op), so ONNX Runtime sees the values
# mplan-runner does. Negative and duplicate indices, OneHot indices out of
# range, reductions, NaN (Log of a negative) and infinities (1 / 0).
I64, B = TensorProto.INT64, TensorProto.BOOL
xi = helper.make_tensor_value_info("x", F, [2, 4, 3, 3])
inits = [
    numpy_helper.from_array(rng.integers(-4, 4, (2, 2, 3, 3)).astype(np.int64), "ge_idx"),
    numpy_helper.from_array(rng.integers(0, 3, (2, 4, 2, 3)).astype(np.int64), "sc_idx"),
    numpy_helper.from_array(np.array([[[1, 2], [3, 0]], [[0, 0], [2, 1]]], np.int64), "nd_idx"),
    numpy_helper.from_array(np.array([[1, 2], [0, 3], [1, 2]], np.int64), "snd_idx"),
    numpy_helper.from_array(np.array([0, 0, 0, 0], np.int64), "s0"),
    numpy_helper.from_array(np.array([1, 3, 3, 3], np.int64), "s1"),
    numpy_helper.from_array(np.array([3, 3, 3], np.int64), "snd_shape"),
    numpy_helper.from_array(np.array(-1, np.int64), "trilu_k"),
    numpy_helper.from_array(np.array(-1, np.int32), "cum_axis"),
    numpy_helper.from_array(np.array([1, 2, 1, 2], np.int64), "reps"),
    numpy_helper.from_array(np.array([3, 2, 4, 3, 3], np.int64), "eshape"),
    numpy_helper.from_array(np.array([[0, 4, -1], [2, -5, 3]], np.int64), "oh_idx"),
    numpy_helper.from_array(np.array(4, np.int64), "oh_depth"),
    numpy_helper.from_array(np.array([-1.5, 2.0], np.float32), "oh_vals"),
    numpy_helper.from_array(np.array([2], np.int64), "topk_k"),
]
nodes = [
    helper.make_node("ArgMax", ["x"], ["amax"], name="amax", axis=1),
    helper.make_node("ArgMin", ["x"], ["amin"], name="amin", axis=-1, keepdims=0, select_last_index=1),
    helper.make_node("GatherElements", ["x", "ge_idx"], ["ge"], name="ge", axis=1),
    helper.make_node("GatherElements", ["x", "sc_idx"], ["sc_upd"], name="sc_upd", axis=2),
    helper.make_node("ScatterElements", ["x", "sc_idx", "sc_upd"], ["sc"], name="sc", axis=2, reduction="add"),
    helper.make_node("GatherND", ["x", "nd_idx"], ["gnd"], name="gnd", batch_dims=1),
    helper.make_node("Slice", ["x", "s0", "s1"], ["snd_sl"], name="snd_sl"),
    helper.make_node("Reshape", ["snd_sl", "snd_shape"], ["snd_upd"], name="snd_upd"),
    helper.make_node("ScatterND", ["x", "snd_idx", "snd_upd"], ["snd"], name="snd", reduction="max"),
    helper.make_node("Trilu", ["x", "trilu_k"], ["tril"], name="tril", upper=0),
    helper.make_node("CumSum", ["x", "cum_axis"], ["cum"], name="cum", exclusive=1, reverse=1),
    helper.make_node("Hardmax", ["x"], ["hmax"], name="hmax", axis=1),
    helper.make_node("DepthToSpace", ["x"], ["d2s"], name="d2s", blocksize=2, mode="CRD"),
    helper.make_node("SpaceToDepth", ["d2s"], ["s2d"], name="s2d", blocksize=2),
    helper.make_node("Tile", ["x", "reps"], ["tile"], name="tile"),
    helper.make_node("Cast", ["amax"], ["amax_f"], name="amax_f", to=F),
    helper.make_node("Expand", ["amax_f", "eshape"], ["expand"], name="expand"),
    helper.make_node("OneHot", ["oh_idx", "oh_depth", "oh_vals"], ["onehot"], name="onehot", axis=1),
    helper.make_node("TopK", ["x", "topk_k"], ["topv", "topi"], name="topk", axis=1, largest=0),
    helper.make_node("Log", ["x"], ["logx"], name="logx"),
    helper.make_node("IsNaN", ["logx"], ["isnan"], name="isnan"),
    helper.make_node("Relu", ["x"], ["xpos"], name="xpos"),
    helper.make_node("Reciprocal", ["xpos"], ["recip"], name="recip"),
    helper.make_node("IsInf", ["recip"], ["isinf"], name="isinf", detect_negative=0),
    helper.make_node("Shrink", ["x"], ["shrink"], name="shrink", lambd=0.3, bias=0.1),
]
outs = [("amax", I64), ("amin", I64), ("ge", F), ("sc", F), ("gnd", F),
        ("snd", F), ("tril", F), ("cum", F), ("hmax", F), ("d2s", F),
        ("s2d", F), ("tile", F), ("expand", F), ("onehot", F), ("topv", F),
        ("topi", I64), ("isnan", B), ("isinf", B), ("shrink", F)]
save("tests/data/index_ops.onnx.bin",
     model(nodes, [xi], [helper.make_tensor_value_info(o, t, None) for o, t in outs],
           inits, opset=18))

# The normalisations and losses of runtime/ops_stats.c, BitShift and a
# window fill in one small model, for the bundle fuzzer (test_runtime)
# and the comparison with ONNX Runtime (test_ort). The labels hold the
# ignore_index (-1) twice.
U8 = TensorProto.UINT8
xs_in = helper.make_tensor_value_info("x", F, [2, 4, 3, 3])
labels = rng.integers(0, 4, (2, 3, 3)).astype(np.int64)
labels[0, 1, 2] = labels[1, 0, 0] = -1
inits = [
    numpy_helper.from_array((rng.standard_normal(4) + 1).astype(np.float32), "in_scale"),
    numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "in_bias"),
    numpy_helper.from_array(labels, "labels"),
    numpy_helper.from_array(np.array([1.0, 0.5, 2.0, 0.25], np.float32), "cls_w"),
    numpy_helper.from_array(np.array([1, 2, 3, 200, 255, 16], np.uint8), "bits"),
    numpy_helper.from_array(np.array([1, 2, 3, 1, 7, 4], np.uint8), "shifts"),
    numpy_helper.from_array(np.array(10, np.int64), "win_size"),
]
nodes = [
    helper.make_node("InstanceNormalization", ["x", "in_scale", "in_bias"], ["inorm"], name="inorm", epsilon=1e-3),
    helper.make_node("LRN", ["x"], ["lrn"], name="lrn", size=3, alpha=0.01, beta=0.6, bias=2.0),
    helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"], name="mvn"),
    helper.make_node("SoftmaxCrossEntropyLoss", ["x", "labels", "cls_w"], ["sce", "logp"], name="sce", ignore_index=-1),
    helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["nll"], name="nll", reduction="none", ignore_index=-1),
    helper.make_node("NegativeLogLikelihoodLoss", ["x", "labels", "cls_w"], ["nll_sum"], name="nll_sum", reduction="sum", ignore_index=-1),
    helper.make_node("BitShift", ["bits", "shifts"], ["shl"], name="shl", direction="LEFT"),
    helper.make_node("BitShift", ["bits", "shifts"], ["shr"], name="shr", direction="RIGHT"),
    helper.make_node("HannWindow", ["win_size"], ["hann"], name="hann", periodic=0),
    helper.make_node("BlackmanWindow", ["win_size"], ["blackman"], name="blackman"),
]
outs = [("inorm", F), ("lrn", F), ("mvn", F), ("sce", F), ("logp", F), ("nll", F),
        ("nll_sum", F), ("shl", U8), ("shr", U8), ("hann", F), ("blackman", F)]
save("tests/data/stats_ops.onnx.bin",
     model(nodes, [xs_in], [helper.make_tensor_value_info(o, t, None) for o, t in outs],
           inits, opset=17))

# Einsum (a batched product with an ellipsis, a diagonal, a broadcast dim
# of 1, an implicit output, three operands), Det, ReverseSequence and Pow
# of two dtypes, for the bundle fuzzer (test_runtime) and the comparison
# with ONNX Runtime (test_ort).
I32 = TensorProto.INT32
xe = helper.make_tensor_value_info("x", F, [2, 3, 3])
inits = [
    numpy_helper.from_array(rng.standard_normal((1, 3, 4)).astype(np.float32), "e_w"),
    numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "e_v"),
    numpy_helper.from_array(np.array([3, 1], np.int64), "seq_lens"),
    numpy_helper.from_array(np.array([2, 3, 0, 1, -1, 2], np.int32), "pow_e"),
]
nodes = [
    helper.make_node("Einsum", ["x", "e_w"], ["e_mm"], name="e_mm", equation="...ij,...jk->...ik"),
    helper.make_node("Einsum", ["x"], ["e_diag"], name="e_diag", equation="bii->bi"),
    helper.make_node("Einsum", ["x", "e_w", "e_v"], ["e_three"], name="e_three", equation="bij,zjk,k"),
    helper.make_node("Einsum", ["x"], ["e_trace"], name="e_trace", equation="bii"),
    helper.make_node("Det", ["x"], ["det"], name="det"),
    helper.make_node("ReverseSequence", ["x", "seq_lens"], ["rev"], name="rev", time_axis=1, batch_axis=0),
    helper.make_node("Reshape", ["x", "pow_shape"], ["x6"], name="x6"),
    helper.make_node("Pow", ["x6", "pow_e"], ["pow"], name="pow"),
]
inits.append(numpy_helper.from_array(np.array([3, 6], np.int64), "pow_shape"))
outs = ["e_mm", "e_diag", "e_three", "e_trace", "det", "rev", "pow"]
save("tests/data/linalg_ops.onnx.bin",
     model(nodes, [xe], [helper.make_tensor_value_info(o, F, None) for o in outs],
           inits, opset=17))

# GridSample in every mode (bilinear, nearest, bicubic), padding mode
# (zeros, border, reflection) and align_corners, at grid positions up to
# 1.6x outside [-1, 1] (the seeded input times 1.6), for the comparison
# with ONNX Runtime (test_ort) and the bundle fuzzer (test_runtime).
xg = helper.make_tensor_value_info("x", F, [1, 2, 4, 5])
gg = helper.make_tensor_value_info("g", F, [1, 3, 4, 2])
nodes = [helper.make_node("Mul", ["g", "spread"], ["grid"], name="spread")]
outs = []
for mode in ["bilinear", "nearest", "bicubic"]:
    for pad in ["zeros", "border", "reflection"]:
        for align in [0, 1]:
            o = "gs_%s_%s_%d" % (mode, pad, align)
            nodes.append(helper.make_node("GridSample", ["x", "grid"], [o], name=o, mode=mode,
                                          padding_mode=pad, align_corners=align))
            outs.append(o)
save("tests/data/grid_ops.onnx.bin",
     model(nodes, [xg, gg], [helper.make_tensor_value_info(o, F, None) for o in outs],
           [numpy_helper.from_array(np.array(1.6, np.float32), "spread")], opset=16))

# Cubic Resize: up and down, four coordinate transformations, both
# cubic_coeff_a values in use (-0.75, PyTorch's; -0.5, TensorFlow's) and
# exclude_outside, for the comparison with ONNX Runtime (test_ort). Every
# size times its scale is a whole number: where it is not, align_corners
# divides by the unrounded length in ONNX's reference (and in mplan) but
# by the output length in ONNX Runtime.
xr = helper.make_tensor_value_info("x", F, [1, 2, 4, 6])
inits = [numpy_helper.from_array(np.array([1, 1, 1.75, 1.5], np.float32), "up"),
         numpy_helper.from_array(np.array([1, 1, 0.75, 0.5], np.float32), "down")]
nodes, outs = [], []
for ct in ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]:
    for sc in ["up", "down"]:
        for a, ex in [(-0.75, 0), (-0.5, 1)]:
            o = "rs_%s_%s_%d" % (ct, sc, ex)
            nodes.append(helper.make_node("Resize", ["x", "", sc], [o], name=o, mode="cubic",
                                          coordinate_transformation_mode=ct,
                                          cubic_coeff_a=a, exclude_outside=ex))
            outs.append(o)
save("tests/data/resize_cubic.onnx.bin",
     model(nodes, [xr], [helper.make_tensor_value_info(o, F, None) for o in outs], inits,
           opset=13))

# An If whose condition is known (Equal of a constant with itself) and
# whose then_branch attribute holds no graph: importing it with its taken
# branch cannot prune it (the importer once imported it again forever).
from onnx import AttributeProto  # noqa: E402

sr = numpy_helper.from_array(np.array(16000, np.int64), "sr")
eq = helper.make_node("Equal", ["sr", "sr"], ["is16k"], name="is16k")
no_graph = helper.make_node("If", ["is16k"], ["r_out"], name="rate")
no_graph.attribute.append(AttributeProto(name="then_branch", type=AttributeProto.GRAPH))
r_out = helper.make_tensor_value_info("r_out", TensorProto.INT64, None)
save("tests/bad/onnx_if_no_graph.onnx.bin", model([eq, no_graph], [], [r_out], [sr]))

# MaxPool with its Indices (1-D; 2-D row and column major, padded,
# strided, dilated, ceil_mode; 3-D), MaxUnpool of those indices (to the
# window's shape: with an output_shape larger than it, ONNX's reference
# reads the indices in the window's shape and pads, ONNX Runtime in the
# larger one; the ONNX node test covers ONNX's reading), RoiAlign (avg and max, both coordinate transformations, a fixed
# and an adaptive sampling grid, a scaled roi partly outside the image)
# and Dropout with its mask, for the comparison with ONNX Runtime
# (test_ort).
I64 = TensorProto.INT64
xp1 = helper.make_tensor_value_info("x1", F, [1, 2, 9])
xp2 = helper.make_tensor_value_info("x2", F, [1, 3, 7, 8])
xp3 = helper.make_tensor_value_info("x3", F, [1, 2, 4, 4, 6])
xp4 = helper.make_tensor_value_info("x4", F, [1, 2, 6, 8])
nodes = [
    helper.make_node("MaxPool", ["x1"], ["mp1", "mp1_i"], name="mp1", kernel_shape=[3], strides=[2]),
    helper.make_node("MaxPool", ["x2"], ["mp2", "mp2_i"], name="mp2", kernel_shape=[3, 2],
                     strides=[2, 2], pads=[1, 0, 1, 1]),
    helper.make_node("MaxPool", ["x2"], ["mp2c", "mp2c_i"], name="mp2c", kernel_shape=[2, 3],
                     strides=[2, 1], storage_order=1, dilations=[2, 1], ceil_mode=1),
    helper.make_node("MaxPool", ["x3"], ["mp3", "mp3_i"], name="mp3", kernel_shape=[2, 2, 3],
                     strides=[2, 2, 3]),
    helper.make_node("MaxPool", ["x4"], ["mpu", "mpu_i"], name="mpu", kernel_shape=[2, 2],
                     strides=[2, 2]),
    helper.make_node("MaxUnpool", ["mpu", "mpu_i"], ["unpool"], name="unpool",
                     kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("MaxUnpool", ["mpu", "mpu_i", "unpool_shape"], ["unpool_given"],
                     name="unpool_given", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("MaxUnpool", ["mp3", "mp3_i"], ["unpool3"], name="unpool3",
                     kernel_shape=[2, 2, 3], strides=[2, 2, 3]),
    helper.make_node("Dropout", ["x2"], ["drop", "drop_mask"], name="drop"),
]
inits = [numpy_helper.from_array(np.array([1, 2, 6, 8], np.int64), "unpool_shape"),
         numpy_helper.from_array(np.array([[0.5, 1.0, 5.5, 6.0], [2.0, 0.0, 4.0, 3.5],
                                           [-2.0, 3.0, 9.0, 12.0]], np.float32), "rois"),
         numpy_helper.from_array(np.array([0, 0, 0], np.int64), "roi_batch")]
outs = ["mp1", "mp1_i", "mp2", "mp2_i", "mp2c", "mp2c_i", "mp3", "mp3_i", "unpool",
        "unpool_given", "unpool3", "drop", "drop_mask"]
for mode in ["avg", "max"]:
    for ct in ["half_pixel", "output_half_pixel"]:
        for sr, scale in [(2, 1.0), (0, 0.5)]:
            o = "roi_%s_%s_%d" % (mode, ct, sr)
            nodes.append(helper.make_node("RoiAlign", ["x2", "rois", "roi_batch"], [o], name=o,
                                          mode=mode, coordinate_transformation_mode=ct,
                                          output_height=3, output_width=2, sampling_ratio=sr,
                                          spatial_scale=scale))
            outs.append(o)
types = {"mp1_i": I64, "mp2_i": I64, "mp2c_i": I64, "mp3_i": I64,
         "drop_mask": TensorProto.BOOL}
save("tests/data/pool_roi_ops.onnx.bin",
     model(nodes, [xp1, xp2, xp3, xp4],
           [helper.make_tensor_value_info(o, types.get(o, F), None) for o in outs], inits,
           opset=16))

# Upsample (opset 9): nearest and linear, integer and fractional scales.
xu = helper.make_tensor_value_info("x", F, [1, 2, 3, 4])
inits = [numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "s_int"),
         numpy_helper.from_array(np.array([1, 1, 1.5, 2.5], np.float32), "s_frac")]
nodes, outs = [], []
for mode in ["nearest", "linear"]:
    for sc in ["s_int", "s_frac"]:
        o = "up_%s_%s" % (mode, sc)
        nodes.append(helper.make_node("Upsample", ["x", sc], [o], name=o, mode=mode))
        outs.append(o)
save("tests/data/upsample_ops.onnx.bin",
     model(nodes, [xu], [helper.make_tensor_value_info(o, F, None) for o in outs], inits,
           opset=9))

# DFT (real and complex signals, both axes, dft_length padding and
# cutting, onesided, inverse), STFT (a window, a frame_length, onesided
# and not) and MelWeightMatrix, for the comparison with ONNX Runtime
# (test_ort) and the bundle fuzzer (test_runtime).
xs = helper.make_tensor_value_info("x", F, [2, 12, 6, 1])
xc = helper.make_tensor_value_info("xc", F, [2, 12, 6, 2])
sig = helper.make_tensor_value_info("sig", F, [2, 40, 1])
inits = [numpy_helper.from_array(np.array(16, np.int64), "len16"),
         numpy_helper.from_array(np.array(9, np.int64), "len9"),
         numpy_helper.from_array(np.array(6, np.int64), "step"),
         numpy_helper.from_array(np.array(10, np.int64), "frame"),
         numpy_helper.from_array(np.hanning(12).astype(np.float32), "hann"),
         numpy_helper.from_array(np.array(6, np.int64), "mel_bins"),
         numpy_helper.from_array(np.array(32, np.int64), "mel_len"),
         numpy_helper.from_array(np.array(16000, np.int64), "mel_rate"),
         numpy_helper.from_array(np.array(100.0, np.float32), "mel_lo"),
         numpy_helper.from_array(np.array(6000.0, np.float32), "mel_hi")]
nodes = [
    helper.make_node("DFT", ["x"], ["dft_real"], name="dft_real", axis=1),
    helper.make_node("DFT", ["x", "len16"], ["dft_pad"], name="dft_pad", axis=1, onesided=1),
    helper.make_node("DFT", ["xc", "len9"], ["dft_cut"], name="dft_cut", axis=1),
    helper.make_node("DFT", ["xc"], ["dft_axis2"], name="dft_axis2", axis=2),
    helper.make_node("DFT", ["xc"], ["dft_inv"], name="dft_inv", axis=-2, inverse=1),
    helper.make_node("STFT", ["sig", "step", "hann"], ["stft_win"], name="stft_win"),
    helper.make_node("STFT", ["sig", "step", "", "frame"], ["stft_len"], name="stft_len",
                     onesided=0),
    helper.make_node("MelWeightMatrix", ["mel_bins", "mel_len", "mel_rate", "mel_lo", "mel_hi"],
                     ["mel"], name="mel"),
]
outs = ["dft_real", "dft_pad", "dft_cut", "dft_axis2", "dft_inv", "stft_win", "stft_len", "mel"]
save("tests/data/signal_ops.onnx.bin",
     model(nodes, [xs, xc, sig], [helper.make_tensor_value_info(o, F, None) for o in outs],
           inits, opset=17))

# Resize with tf_crop_and_resize: nearest, linear and cubic, a roi inside
# the image and one reaching past it (extrapolation_value there), for the
# comparison with ONNX Runtime (test_ort). No nearest position falls on a
# half: there ONNX Runtime's float32 sums and mplan's double ones can
# round to different pixels.
xr = helper.make_tensor_value_info("x", F, [1, 2, 6, 7])
inits = [numpy_helper.from_array(np.array([0, 0, 0.13, 0.1, 1, 1, 0.77, 0.7], np.float32),
                                 "roi_in"),
         numpy_helper.from_array(np.array([0, 0, -0.25, 0.5, 1, 1, 0.75, 1.4], np.float32),
                                 "roi_out"),
         numpy_helper.from_array(np.array([1, 2, 5, 4], np.int64), "crop_size")]
nodes, outs = [], []
for mode in ["nearest", "linear", "cubic"]:
    for roi in ["roi_in", "roi_out"]:
        o = "crop_%s_%s" % (mode, roi)
        nodes.append(helper.make_node("Resize", ["x", roi, "", "crop_size"], [o], name=o,
                                      mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
                                      extrapolation_value=-3.5))
        outs.append(o)
save("tests/data/resize_crop.onnx.bin",
     model(nodes, [xr], [helper.make_tensor_value_info(o, F, None) for o in outs], inits,
           opset=13))

# Ops whose output shape depends on the data, with inputs whose values are
# not known: each is planned at its bound with a warning (analyzer/shape.c
# invariant 7), a Transpose of NonZero's output carries the bound on, and
# a run stops at the first op whose data selects fewer than its bound
# (test_onnx_cli.sh).
I64, BOOL = TensorProto.INT64, TensorProto.BOOL
nodes = [
    helper.make_node("Greater", ["x", "zero"], ["mask"], name="mask"),
    helper.make_node("NonZero", ["mask"], ["nz"], name="nz"),
    helper.make_node("Transpose", ["nz"], ["nz_t"], name="nz_t"),
    helper.make_node("Compress", ["x", "keep"], ["kept_axis"], name="kept_axis", axis=1),
    helper.make_node("Compress", ["x", "keep_flat"], ["kept_flat"], name="kept_flat"),
    helper.make_node("Unique", ["ids"], ["uniq", "uniq_idx", "uniq_inv", "uniq_cnt"],
                     name="uniq"),
    helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "min_score"],
                     ["picked"], name="nms"),
]
inputs = [helper.make_tensor_value_info("x", F, [2, 5, 3]),
          helper.make_tensor_value_info("keep", BOOL, [4]),
          helper.make_tensor_value_info("keep_flat", BOOL, [40]),
          helper.make_tensor_value_info("ids", I64, [12]),
          helper.make_tensor_value_info("boxes", F, [1, 8, 4]),
          helper.make_tensor_value_info("scores", F, [1, 3, 8])]
inits = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
         numpy_helper.from_array(np.array([5], np.int64), "max_out"),
         numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
         numpy_helper.from_array(np.array([0.1], np.float32), "min_score")]
outs = ["nz_t", "kept_axis", "kept_flat", "uniq", "uniq_idx", "uniq_inv", "uniq_cnt", "picked"]
types = {"nz_t": I64, "uniq": I64, "uniq_idx": I64, "uniq_inv": I64, "uniq_cnt": I64,
         "picked": I64}
save("tests/data/bounded_ops.onnx.bin",
     model(nodes, inputs, [helper.make_tensor_value_info(o, types.get(o, F), None)
                           for o in outs], inits, opset=13))

# The same ops where the data fills declared shapes, for test_ort: x is
# an input (seeded by the runner), every selection input a constant, and
# each output's shape declared from an independent count here (numpy, and
# the NonMaxSuppression rule as ONNX states it), so ONNX Runtime and the
# runtime must agree on the counts as well as the values.
srng = np.random.default_rng(20261201)


def nms_count(boxes, scores, max_out, iou, min_score, center):
    def corners(b):
        if center:
            return (b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2)
        return (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))

    def iou_of(a, b):
        ih = min(a[2], b[2]) - max(a[0], b[0])
        iw = min(a[3], b[3]) - max(a[1], b[1])
        if ih <= 0 or iw <= 0:
            return 0.0
        inter = ih * iw
        ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / ua

    total = 0
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = sorted((i for i in range(len(s)) if s[i] > min_score),
                           key=lambda i: (-s[i], i))
            kept = []
            for i in order:
                if len(kept) == max_out:
                    break
                a = corners(boxes[b, i])
                if all(iou_of(a, corners(boxes[b, k])) <= iou for k in kept):
                    kept.append(i)
            total += len(kept)
    return total


cond = srng.random(6) < 0.5
cond_flat = srng.random(50) < 0.3
counts_of = srng.integers(-2, 3, size=(4, 5)).astype(np.int32)
vals = srng.integers(0, 7, size=30).astype(np.float32)
rows = srng.integers(0, 2, size=(7, 3)).astype(np.int64)
boxes = srng.random((2, 20, 4)).astype(np.float32)
nscores = srng.random((2, 3, 20)).astype(np.float32)
cboxes = np.concatenate([srng.random((1, 16, 2)), 0.2 + 0.3 * srng.random((1, 16, 2))],
                        axis=2).astype(np.float32)
cscores = srng.random((1, 2, 16)).astype(np.float32)
_, ix_rows = np.unique(rows, axis=0, return_index=True)
n_nms = nms_count(boxes, nscores, 10, 0.4, 0.3, False)
n_cnms = nms_count(cboxes, cscores, 16, 0.3, 0.0, True)
nodes = [
    helper.make_node("Compress", ["x", "cond"], ["kept_axis"], name="kept_axis", axis=1),
    helper.make_node("Compress", ["x", "cond_flat"], ["kept_flat"], name="kept_flat"),
    helper.make_node("NonZero", ["counts_of"], ["nz"], name="nz"),
    helper.make_node("Unique", ["vals"], ["u", "u_idx", "u_inv", "u_cnt"], name="u"),
    helper.make_node("Unique", ["rows"], ["r", "r_idx", "r_inv", "r_cnt"], name="r",
                     axis=0, sorted=0),
    helper.make_node("NonMaxSuppression", ["boxes", "nscores", "max_corner", "iou4", "min3"],
                     ["picked"], name="nms"),
    helper.make_node("NonMaxSuppression", ["cboxes", "cscores", "max_center", "iou3", "min0"],
                     ["picked_c"], name="nms_c", center_point_box=1),
]
k, m = int(cond.sum()), int(cond_flat[:3 * 6 * 4].sum())
nu, nr = len(np.unique(vals)), len(ix_rows)
declared = [("kept_axis", F, [3, k, 4]), ("kept_flat", F, [m]),
            ("nz", I64, [2, int(np.count_nonzero(counts_of))]),
            ("u", F, [nu]), ("u_idx", I64, [nu]), ("u_inv", I64, [30]), ("u_cnt", I64, [nu]),
            ("r", I64, [nr, 3]), ("r_idx", I64, [nr]), ("r_inv", I64, [7]), ("r_cnt", I64, [nr]),
            ("picked", I64, [n_nms, 3]), ("picked_c", I64, [n_cnms, 3])]
inits = [numpy_helper.from_array(cond, "cond"), numpy_helper.from_array(cond_flat, "cond_flat"),
         numpy_helper.from_array(counts_of, "counts_of"), numpy_helper.from_array(vals, "vals"),
         numpy_helper.from_array(rows, "rows"), numpy_helper.from_array(boxes, "boxes"),
         numpy_helper.from_array(nscores, "nscores"), numpy_helper.from_array(cboxes, "cboxes"),
         numpy_helper.from_array(cscores, "cscores"),
         numpy_helper.from_array(np.array([10], np.int64), "max_corner"),
         numpy_helper.from_array(np.array([16], np.int64), "max_center"),
         numpy_helper.from_array(np.array([0.4], np.float32), "iou4"),
         numpy_helper.from_array(np.array([0.3], np.float32), "iou3"),
         numpy_helper.from_array(np.array([0.3], np.float32), "min3"),
         numpy_helper.from_array(np.array([0.0], np.float32), "min0")]
save("tests/data/select_ort.onnx.bin",
     model(nodes, [helper.make_tensor_value_info("x", F, [3, 6, 4])],
           [helper.make_tensor_value_info(n, t, s) for n, t, s in declared], inits, opset=13))
print("select_ort: counts", k, m, nu, nr, n_nms, n_cnms, file=sys.stderr)

# Loop and Scan (tests/data/loop_ort.onnx.bin), run against ONNX Runtime:
#  - lp: a for loop (trip count 4, no condition) with two carried values,
#    a scan output, and an outer tensor its body captures (relu_x);
#  - wl: a while loop (trip count 10 and a condition) whose count depends
#    on the input: it doubles |row 0 of x| + 0.25 until its sum passes 6;
#  - sc: a Scan with a state, two scan inputs (the second along axis 1,
#    reversed) and two scan outputs (the second along axis 2, reversed);
#  - outer: a loop whose body runs an inner loop (nesting).
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, t, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


lp_body = helper.make_graph(
    [helper.make_node("Cast", ["i"], ["i_f"], to=F),
     helper.make_node("Mul", ["relu_x", "i_f"], ["scaled"]),
     helper.make_node("Add", ["acc_in", "scaled"], ["acc_out"]),
     helper.make_node("Add", ["c_in", "one"], ["c_out"]),
     helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Tanh", ["acc_out"], ["scan_o"])],
    "lp_body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc_in", F),
                vi("c_in", F)],
    [vi("cond_out", B, []), vi("acc_out", F), vi("c_out", F), vi("scan_o", F)],
    [numpy_helper.from_array(np.array([1.0], np.float32), "one")])
wl_body = helper.make_graph(
    [helper.make_node("Mul", ["v_in", "two"], ["v_out"]),
     helper.make_node("ReduceSum", ["v_out"], ["v_sum"], keepdims=0),
     helper.make_node("Less", ["v_sum", "six"], ["wl_cond"])],
    "wl_body", [vi("j", I64, []), vi("wc_in", B, []), vi("v_in", F)],
    [vi("wl_cond", B, []), vi("v_out", F)],
    [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
     numpy_helper.from_array(np.array(6.0, np.float32), "six")])
sc_body = helper.make_graph(
    [helper.make_node("Add", ["s_in", "seq_t"], ["s_out"]),
     helper.make_node("Identity", ["s_out"], ["s_copy"]),
     helper.make_node("Unsqueeze", ["seq2_t", "ax1"], ["seq2_col"]),
     helper.make_node("Mul", ["seq_t", "seq2_col"], ["prod"])],
    "sc_body", [vi("s_in", F), vi("seq_t", F), vi("seq2_t", F)],
    [vi("s_out", F), vi("s_copy", F), vi("prod", F)],
    [numpy_helper.from_array(np.array([1], np.int64), "ax1")])
inner_body = helper.make_graph(
    [helper.make_node("Cast", ["k"], ["k_f"], to=F),
     helper.make_node("Add", ["z_in", "k_f"], ["z_out"]),
     helper.make_node("Identity", ["ic_in"], ["ic_out"])],
    "inner_body", [vi("k", I64, []), vi("ic_in", B, []), vi("z_in", F)],
    [vi("ic_out", B, []), vi("z_out", F)])
outer_body = helper.make_graph(
    [helper.make_node("Loop", ["two_i", "", "zo_in"], ["zi"], body=inner_body),
     helper.make_node("Mul", ["zi", "half"], ["zo_out"]),
     helper.make_node("Identity", ["oc_in"], ["oc_out"])],
    "outer_body", [vi("o", I64, []), vi("oc_in", B, []), vi("zo_in", F)],
    [vi("oc_out", B, []), vi("zo_out", F)],
    [numpy_helper.from_array(np.array(2, np.int64), "two_i"),
     numpy_helper.from_array(np.array(0.5, np.float32), "half")])
nodes = [
    helper.make_node("Relu", ["x"], ["relu_x"]),
    helper.make_node("Loop", ["trip4", "", "x", "c0"], ["acc", "count", "stacked"],
                     name="lp", body=lp_body),
    helper.make_node("Gather", ["x", "row0"], ["x0"], axis=0),
    helper.make_node("Abs", ["x0"], ["x0_abs"]),
    helper.make_node("Add", ["x0_abs", "quarter"], ["v0"]),
    helper.make_node("Loop", ["trip10", "yes", "v0"], ["v_final"], name="wl", body=wl_body),
    helper.make_node("Scan", ["s0", "seq", "seq2"], ["s_final", "s_all", "prods"],
                     name="sc", body=sc_body, num_scan_inputs=2,
                     scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                     scan_output_axes=[0, 2], scan_output_directions=[0, 1]),
    helper.make_node("Loop", ["trip3", "", "v0"], ["z_final"], name="outer",
                     body=outer_body),
    helper.make_node("Loop", ["trip0", "", "v0"], ["v_none"], name="none",
                     body=helper.make_graph(
                         [helper.make_node("Neg", ["n_in"], ["n_out"]),
                          helper.make_node("Identity", ["nc_in"], ["nc_out"])],
                         "none_body", [vi("n", I64, []), vi("nc_in", B, []), vi("n_in", F)],
                         [vi("nc_out", B, []), vi("n_out", F)])),
]
inits = [numpy_helper.from_array(np.array(4, np.int64), "trip4"),
         numpy_helper.from_array(np.array(10, np.int64), "trip10"),
         numpy_helper.from_array(np.array(3, np.int64), "trip3"),
         numpy_helper.from_array(np.array(0, np.int64), "trip0"),
         numpy_helper.from_array(np.array(True), "yes"),
         numpy_helper.from_array(np.array([0.0], np.float32), "c0"),
         numpy_helper.from_array(np.array(0, np.int64), "row0"),
         numpy_helper.from_array(np.array(0.25, np.float32), "quarter"),
         numpy_helper.from_array(np.zeros((2, 3), np.float32), "s0")]
save("tests/data/loop_ort.onnx.bin",
     model(nodes, [vi("x", F, [4, 3]), vi("seq", F, [5, 2, 3]), vi("seq2", F, [2, 5])],
           [vi("acc", F, [4, 3]), vi("count", F, [1]), vi("stacked", F, [4, 4, 3]),
            vi("v_final", F, [3]), vi("s_final", F, [2, 3]), vi("s_all", F, [5, 2, 3]),
            vi("prods", F, [2, 3, 5]), vi("z_final", F, [3]), vi("v_none", F, [3])],
           inits, opset=13))

# A Loop that stops before its trip count (its condition falls at i == 2)
# while its scan output is planned for the trip count (5): the run stops
# in one line (tests/data/loop_short.onnx.bin).
short_body = helper.make_graph(
    [helper.make_node("Less", ["si", "two_s"], ["s_cond"]),
     helper.make_node("Cast", ["si"], ["si_f"], to=F),
     helper.make_node("Add", ["sv_in", "si_f"], ["sv_out"])],
    "short_body", [vi("si", I64, []), vi("sc_in", B, []), vi("sv_in", F)],
    [vi("s_cond", B, []), vi("sv_out", F), vi("sv_out", F)],
    [numpy_helper.from_array(np.array(2, np.int64), "two_s")])
save("tests/data/loop_short.onnx.bin",
     model([helper.make_node("Loop", ["trip5", "yes", "x"], ["x_last", "x_all"], name="short",
                             body=short_body)],
           [vi("x", F, [3])], [vi("x_last", F, [3]), vi("x_all", F, [5, 3])],
           [numpy_helper.from_array(np.array(5, np.int64), "trip5"),
            numpy_helper.from_array(np.array(True), "yes")], opset=13))

# A while loop whose condition never falls, nested in a for loop of a
# thousand trips (tests/data/loop_forever.onnx.bin): verify --max-ops ends
# its run in one line; without it each Loop stops at the runtime's cap.
forever_body = helper.make_graph(
    [helper.make_node("Identity", ["fc_in"], ["fc_out"]),
     helper.make_node("Add", ["fv_in", "f_one"], ["fv_out"])],
    "forever_body", [vi("fi", I64, []), vi("fc_in", B, []), vi("fv_in", F)],
    [vi("fc_out", B, []), vi("fv_out", F)],
    [numpy_helper.from_array(np.array([1.0], np.float32), "f_one")])
outer_forever = helper.make_graph(
    [helper.make_node("Loop", ["", "f_yes", "ov_in"], ["ov_out"], name="forever",
                      body=forever_body),
     helper.make_node("Identity", ["oc_in"], ["oc_out"])],
    "outer_forever", [vi("oi", I64, []), vi("oc_in", B, []), vi("ov_in", F)],
    [vi("oc_out", B, []), vi("ov_out", F)],
    [numpy_helper.from_array(np.array(True), "f_yes")])
save("tests/data/loop_forever.onnx.bin",
     model([helper.make_node("Loop", ["trip1000", "", "x"], ["x_out"], name="thousand",
                             body=outer_forever)],
           [vi("x", F, [1])], [vi("x_out", F, [1])],
           [numpy_helper.from_array(np.array(1000, np.int64), "trip1000")], opset=13))

# A Loop of n trips (n a graph input: verify --value n=N) whose scan
# output stacks a [6] f32 value per trip (tests/data/loop_rows.onnx.bin):
# tests/bench/loop_poison.sh counts what poison mode costs per trip.
rows_body = helper.make_graph(
    [helper.make_node("Mul", ["rv_in", "r_half"], ["rv_mul"]),
     helper.make_node("Add", ["rv_mul", "r_one"], ["rv_out"]),
     helper.make_node("Tanh", ["rv_out"], ["r_row"]),
     helper.make_node("Identity", ["rc_in"], ["rc_out"])],
    "rows_body", [vi("ri", I64, []), vi("rc_in", B, []), vi("rv_in", F, [6])],
    [vi("rc_out", B, []), vi("rv_out", F, [6]), vi("r_row", F, [6])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "r_half"),
     numpy_helper.from_array(np.array(1.0, np.float32), "r_one")])
save("tests/data/loop_rows.onnx.bin",
     model([helper.make_node("Loop", ["n", "", "x"], ["x_last", "rows"], name="rows",
                             body=rows_body)],
           [vi("n", I64, []), vi("x", F, [6])],
           [vi("x_last", F, [6]), vi("rows", F, ["n", 6])], opset=13))

# TfIdfVectorizer on an int64 constant (tests/data/tfidf_ort.onnx.bin),
# against ONNX Runtime: 1- to 3-grams with skips, the three modes,
# weights, permuted output columns, a batch of rows.
trng = np.random.default_rng(11)
tokens = trng.integers(0, 4, size=(3, 12)).astype(np.int64)
tf_common = dict(ngram_counts=[0, 2, 8], pool_int64s=[1, 2, 1, 2, 2, 3, 3, 1, 1, 2, 3, 2, 1, 2],
                 ngram_indexes=[6, 5, 4, 3, 2, 1, 0])
save("tests/data/tfidf_ort.onnx.bin",
     model([helper.make_node("TfIdfVectorizer", ["tokens"], ["tf"], mode="TF", min_gram_length=1,
                             max_gram_length=3, max_skip_count=2, **tf_common),
            helper.make_node("TfIdfVectorizer", ["tokens"], ["idf"], mode="IDF", min_gram_length=2,
                             max_gram_length=3, max_skip_count=0,
                             weights=[0.5, 1.5, 2.0, 2.5, 3.0, 0.25, 4.0], **tf_common),
            helper.make_node("TfIdfVectorizer", ["tokens"], ["tfidf"], mode="TFIDF",
                             min_gram_length=1, max_gram_length=2, max_skip_count=3,
                             weights=[0.5, 1.5, 2.0, 2.5, 3.0, 0.25, 4.0], **tf_common)],
           [vi("x", F, [1])], [vi("tf", F, [3, 7]), vi("idf", F, [3, 7]), vi("tfidf", F, [3, 7])],
           [numpy_helper.from_array(tokens, "tokens")], opset=13))

# The training ops (tests/data/train_ops.onnx.bin): Adagrad on two
# tensors, Momentum in Nesterov mode, Adam with both norm coefficients,
# BatchNormalization in training mode with its running mean and
# variance; R and T are constants, the tensors and their states inputs.
TD = "ai.onnx.preview.training"
train_nodes = [
    helper.make_node("Adagrad", ["R", "T", "a1", "a2", "ga1", "ga2", "ha1", "ha2"],
                     ["a1_new", "a2_new", "ha1_new", "ha2_new"], domain=TD, name="adagrad",
                     decay_factor=0.1, epsilon=1e-6, norm_coefficient=0.01),
    helper.make_node("Momentum", ["R", "T", "m", "gm", "vm"], ["m_new", "vm_new"], domain=TD,
                     name="nesterov", alpha=0.9, beta=0.5, mode="nesterov", norm_coefficient=0.02),
    helper.make_node("Adam", ["R", "T", "d", "gd", "vd", "hd"], ["d_new", "vd_new", "hd_new"],
                     domain=TD, name="adam", alpha=0.8, beta=0.9, epsilon=1e-3,
                     norm_coefficient=0.01, norm_coefficient_post=0.05),
    helper.make_node("BatchNormalization", ["bx", "bs", "bb", "bm", "bv"], ["by", "bm_new", "bv_new"],
                     name="bn_train", training_mode=1, momentum=0.7, epsilon=1e-4),
]
train_shapes = {"a1": [3, 4], "a2": [5], "m": [2, 3], "d": [6]}
train_in = []
for n, sh in train_shapes.items():
    g = {"a1": "ga1", "a2": "ga2", "m": "gm", "d": "gd"}[n]
    train_in += [vi(n, F, sh), vi(g, F, sh)]
train_in += [vi("ha1", F, [3, 4]), vi("ha2", F, [5]), vi("vm", F, [2, 3]), vi("vd", F, [6]),
             vi("hd", F, [6]), vi("bx", F, [2, 3, 4, 4]), vi("bs", F, [3]), vi("bb", F, [3]),
             vi("bm", F, [3]), vi("bv", F, [3])]
train_out = [vi("a1_new", F, [3, 4]), vi("a2_new", F, [5]), vi("ha1_new", F, [3, 4]),
             vi("ha2_new", F, [5]), vi("m_new", F, [2, 3]), vi("vm_new", F, [2, 3]),
             vi("d_new", F, [6]), vi("vd_new", F, [6]), vi("hd_new", F, [6]),
             vi("by", F, [2, 3, 4, 4]), vi("bm_new", F, [3]), vi("bv_new", F, [3])]


def train_model(nodes, name, inputs, outputs):
    """A model of the default and the training domains, with the
    constants R (0.05) and T (3)."""
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [numpy_helper.from_array(np.array(0.05, np.float32), "R"),
                           numpy_helper.from_array(np.array(3, np.int64), "T")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid(TD, 1)],
                          producer_name="mplan-tests")
    m.ir_version = 8
    return m.SerializeToString()


save("tests/data/train_ops.onnx.bin", train_model(train_nodes, "train_ops", train_in, train_out))
# The random ops (tests/data/random_ops.onnx.bin): RandomUniform with a
# seed and RandomNormal without one (their shapes from attributes),
# RandomUniformLike and RandomNormalLike of x, Bernoulli of a Sigmoid of x
# (f32 probabilities, an int32 output), Dropout in training mode with its
# mask, Multinomial over three rows of logits (one holds -inf: that class
# has probability 0), and a Loop whose body draws a RandomUniform each iteration (its
# scan output holds one row a draw: the rows must differ).
rnd_body = helper.make_graph(
    [helper.make_node("RandomUniform", [], ["draw"], name="rnd_body_draw", shape=[6]),
     helper.make_node("Identity", ["rc_in"], ["rc_out"])],
    "rnd_body", [vi("ri", I64, []), vi("rc_in", B, [])], [vi("rc_out", B, []), vi("draw", F, [6])])
rnd_nodes = [
    helper.make_node("RandomUniform", [], ["u"], name="uniform", shape=[64, 64], low=-2.0,
                     high=3.0, seed=7.0),
    helper.make_node("RandomNormal", [], ["n"], name="normal", shape=[64, 64], mean=1.0,
                     scale=0.5),
    helper.make_node("RandomUniformLike", ["x"], ["ul"], name="uniform_like"),
    helper.make_node("RandomNormalLike", ["x"], ["nl"], name="normal_like", seed=2.0,
                     dtype=TensorProto.DOUBLE),
    helper.make_node("Sigmoid", ["x"], ["p"], name="sig"),
    helper.make_node("Bernoulli", ["p"], ["b"], name="bern", dtype=TensorProto.INT32),
    helper.make_node("Dropout", ["x", "ratio", "train"], ["d", "d_mask"], name="drop", seed=5.0),
    helper.make_node("Loop", ["trip4", ""], ["draws"], name="rnd_loop", body=rnd_body),
    helper.make_node("Multinomial", ["logits"], ["classes"], name="multi", sample_size=4000,
                     dtype=TensorProto.INT64, seed=1.0),
]
save("tests/data/random_ops.onnx.bin",
     model(rnd_nodes, [vi("x", F, [8, 16])],
           [vi("u", F, [64, 64]), vi("n", F, [64, 64]), vi("ul", F, [8, 16]),
            vi("nl", TensorProto.DOUBLE, [8, 16]), vi("b", TensorProto.INT32, [8, 16]),
            vi("d", F, [8, 16]), vi("d_mask", B, [8, 16]), vi("draws", F, [4, 6]),
            vi("classes", I64, [3, 4000])],
           [numpy_helper.from_array(np.array(0.25, np.float32), "ratio"),
            numpy_helper.from_array(np.array([[0, 1, 2, 0.5, -1], [3, 0, 0, 0, 0],
                                              [-30, 0, 0, -np.inf, 1]], np.float32), "logits"),
            numpy_helper.from_array(np.array(True), "train"),
            numpy_helper.from_array(np.array(4, np.int64), "trip4")], opset=15))
# Random ops the planner refuses (tests/bad/): RandomUniform without its
# shape attribute, Multinomial with sample_size 0; and ones only compile
# refuses (tests/data/, cli_onnx): Bernoulli of int32, a NaN seed.
save("tests/bad/onnx_random_noshape.onnx.bin",
     model([helper.make_node("RandomUniform", [], ["y"], name="r")], [], [vi("y", F)], opset=15))
save("tests/bad/onnx_multinomial_samples.onnx.bin",
     model([helper.make_node("Multinomial", ["x"], ["y"], name="mn", sample_size=0)],
           [vi("x", F, [2, 5])], [vi("y", TensorProto.INT32)], opset=15))
save("tests/data/random_bern_int.onnx.bin",
     model([helper.make_node("Bernoulli", ["x"], ["y"], name="b")],
           [vi("x", TensorProto.INT32, [4])], [vi("y", TensorProto.INT32)], opset=15))
save("tests/data/random_nan_seed.onnx.bin",
     model([helper.make_node("RandomUniform", [], ["y"], name="r", shape=[4], seed=float("nan"))],
           [], [vi("y", F)], opset=15))
# Momentum in a mode the schema does not name: compile refuses it.
save("tests/data/momentum_mode.onnx.bin",
     train_model([helper.make_node("Momentum", ["R", "T", "m", "gm", "vm"], ["m_new", "vm_new"],
                                   domain=TD, name="heavy", alpha=0.9, beta=0.5,
                                   mode="heavyball", norm_coefficient=0.0)],
                 "momentum_mode", [vi("m", F, [2]), vi("gm", F, [2]), vi("vm", F, [2])],
                 [vi("m_new", F, [2]), vi("vm_new", F, [2])]))
# Tile of opset 1, whose inputs were tiles and axis (repeats from opset 6):
# refused in one line, not read as repeats.
save("tests/bad/onnx_tile1.onnx.bin",
     model([helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile")],
           [vi("x", F, [2, 3])], [vi("y", F)],
           [numpy_helper.from_array(np.array(2, np.int64), "tiles"),
            numpy_helper.from_array(np.array(1, np.int64), "axis")], opset=1))
# BatchNormalization with spatial=0 (opset 7: statistics per activation):
# it plans; compile refuses it in one line (tests/cli/test_onnx_cli.sh).
save("tests/data/bn_spatial0.onnx.bin",
     model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                             name="bn", spatial=0)],
           [vi("x", F, [1, 2, 2, 2])], [vi("y", F)],
           [numpy_helper.from_array(np.ones((2, 2, 2), np.float32), n) for n in "sbmv"],
           opset=7))
# Opset 23's Attention with 3-D inputs whose q_num_heads does not divide
# Q's hidden size: planning refuses it in one line.
save("tests/bad/onnx_attention_heads.onnx.bin",
     model([helper.make_node("Attention", ["q", "k", "v"], ["y"], name="att",
                             q_num_heads=3, kv_num_heads=2)],
           [vi("q", F, [1, 4, 8]), vi("k", F, [1, 5, 8]), vi("v", F, [1, 5, 8])],
           [vi("y", F)], opset=23))
# Attention's qk_matmul_output_mode 1 (the masked scores), where ONNX's
# text and reference disagree: it plans; compile refuses it in one line.
# RotaryEmbedding whose position ids come from the input: a run with an id
# outside the cache fails the op in one line (tests/cli/test_onnx_cli.sh).
save("tests/data/opset23_refused.onnx.bin",
     model([helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"],
                             name="att", qk_matmul_output_mode=1)],
           [vi("q", F, [1, 2, 3, 4]), vi("k", F, [1, 2, 5, 4]),
            vi("v", F, [1, 2, 5, 4])], [vi("y", F), vi("qk", F)], opset=23))
save("tests/data/rope_positions.onnx.bin",
     model([helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"],
                             name="rope")],
           [vi("x", F, [1, 2, 3, 4]), vi("pos", TensorProto.INT64, [1, 3])],
           [vi("y", F)],
           [numpy_helper.from_array(np.ones((2, 2), np.float32), n)
            for n in ("cos", "sin")], opset=23))
# Resize with an antialiased scale below 1/32: it plans; compile refuses
# it in one line (tests/cli/test_onnx_cli.sh). A keep_aspect_ratio_policy
# ONNX does not name: planning refuses it.
save("tests/data/resize_aa_tiny.onnx.bin",
     model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="rs",
                             mode="linear", antialias=1)],
           [vi("x", F, [1, 1, 128, 4])], [vi("y", F)],
           [numpy_helper.from_array(np.array([1, 1, 1 / 64, 1], np.float32), "s")],
           opset=18))
save("tests/bad/onnx_resize_policy.onnx.bin",
     model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs",
                             keep_aspect_ratio_policy="bogus")],
           [vi("x", F, [1, 1, 4, 4])], [vi("y", F)],
           [numpy_helper.from_array(np.array([1, 1, 8, 8], np.int64), "sz")],
           opset=18))
# TensorScatter whose write index comes from the input: a run whose index
# leaves no room for the update fails the op in one line.
save("tests/data/scatter_index.onnx.bin",
     model([helper.make_node("TensorScatter", ["cache", "upd", "w"], ["y"],
                             name="scatter")],
           [vi("cache", F, [1, 4, 2]), vi("upd", F, [1, 3, 2]),
            vi("w", TensorProto.INT64, [1])], [vi("y", F)], opset=24))
