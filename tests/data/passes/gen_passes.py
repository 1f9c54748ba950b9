#!/usr/bin/env python3
"""Writes tests/data/passes/ops.onnx.bin: a small ONNX graph with one
instance of everything the fold, eliminate, fuse, hfuse and absorb passes
rewrite (tests/test_passes.c checks each rewrite). ONNX, not graph JSON,
because some rules need constant values (x * 1, x + 0, shape math), which
only ONNX initializers carry. Needs python3-onnx (a developer tool; the
test suite reads the committed file).

usage: gen_passes.py REPO_ROOT
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxgen import Builder  # noqa: E402

root = sys.argv[1]
F = TensorProto.FLOAT
b = Builder()
const, node, inits, nodes = b.const, b.node, b.inits, b.nodes


x = helper.make_tensor_value_info("x", F, [1, 4, 16])
# eliminate: Identity, Dropout (inference), Cast to the same type,
# a Transpose pair, x * 1, x + 0.
node("Identity", ["x"], ["xi"], "ident")
node("Dropout", ["xi"], ["xd"], "drop")
node("Cast", ["xd"], ["xc"], "cast_same", to=F)
node("Transpose", ["xc"], ["t1"], "tr1", perm=[0, 2, 1])
node("Transpose", ["t1"], ["t2"], "tr2", perm=[0, 2, 1])
node("Mul", ["t2", const("one", np.ones([16]))], ["m1"], "mul_one")
node("Add", ["m1", const("zero", np.zeros([1]))], ["a1"], "add_zero")
# hfuse: K and V MatMuls share a1 (Q gets a bias first and is fused
# vertically, so it no longer qualifies).
node("MatMul", ["a1", const("wq", np.ones([16, 16]))], ["q"], "q_proj")
node("MatMul", ["a1", const("wk", np.ones([16, 16]))], ["k"], "k_proj")
node("MatMul", ["a1", const("wv", np.ones([16, 16]))], ["v"], "v_proj")
# fuse: MatMul + Add(bias) + Relu; the Softmax after it is a boundary.
node("Add", ["q", const("bq", np.ones([16]))], ["qb"], "q_bias")
node("Relu", ["qb"], ["qr"], "q_relu")
node("Transpose", ["k"], ["kt"], "k_t", perm=[0, 2, 1])
node("MatMul", ["qr", "kt"], ["scores"], "qk")
node("Softmax", ["scores"], ["probs"], "softmax", axis=-1)
node("MatMul", ["probs", "v"], ["att"], "av")
# absorb: a per-tensor DequantizeLinear weight, and a widening Cast.
const("w8", np.ones([16, 16]), np.int8)
node("DequantizeLinear", ["w8", const("s8", 0.5), const("z8", 0, np.int8)],
     ["wf"], "dq")
node("MatMul", ["att", "wf"], ["o1"], "out_proj")
xi8 = helper.make_tensor_value_info("xi8", TensorProto.INT8, [1, 4, 16])
node("Cast", ["xi8"], ["xw"], "widen", to=F)
node("MatMul", ["xw", const("w2", np.ones([16, 16]))], ["o2"], "side_proj")
# fold: shape math on an activation (Shape -> Gather -> Unsqueeze ->
# Concat -> Reshape) and a Transpose of a weight; a Reshape chain.
node("Shape", ["o1"], ["sh"], "shape")
node("Gather", ["sh", const("i0", 0, np.int64)], ["d0"], "gather", axis=0)
node("Unsqueeze", ["d0", const("ax0", [0], np.int64)], ["d0u"], "unsq")
node("Concat", ["d0u", const("m1c", [-1], np.int64)], ["tgt"], "concat",
     axis=0)
node("Reshape", ["o1", "tgt"], ["flat"], "reshape1")
node("Reshape", ["flat", const("back", [1, 4, 16], np.int64)], ["o1r"],
     "reshape2")
node("Transpose", [const("wt", np.ones([16, 16]))], ["wtt"], "w_transpose",
     perm=[1, 0])
node("MatMul", ["o2", "wtt"], ["o3"], "folded_w")
node("Add", ["o1r", "o3"], ["y"], "sum")

g = helper.make_graph(nodes, "passes_ops", [x, xi8],
                      [helper.make_tensor_value_info("y", F, [1, 4, 16])],
                      inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="mplan-tests")
m.ir_version = 8
with open(f"{root}/tests/data/passes/ops.onnx.bin", "wb") as f:
    f.write(m.SerializeToString())
