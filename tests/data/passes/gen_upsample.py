#!/usr/bin/env python3
"""Writes tests/data/passes/upsample.onnx.bin: a feature-pyramid step whose
nearest Resizes the absorb pass folds into the Add, Mul or Sub that reads
them (mplan.prologue "Resize:k", docs/ir-conventions.md), and Resizes it
must leave alone. ONNX, not graph JSON, because the rule reads the Resize's
attributes and constant scales. Needs python3-onnx (a developer tool; the
test suite reads the committed file).

  up_early   asymmetric + floor, read by the Add after a later Conv:
             absorbed (not fused into that Conv)
  up_floor   asymmetric + floor, scales (1,1,2,2), read by Add: absorbed
  up_half    half_pixel + round_prefer_floor (the ONNX defaults), sizes
             given, read by Mul at input 0: absorbed
  up_wide    asymmetric + floor, scales (1,1,4,2) from the 2x4 map to 8x8:
             absorbed (two factors)
  up_bcast   the ONNX defaults, read by a Mul whose other operand is a
             per-channel constant that broadcasts: absorbed
  up_ceil    asymmetric + round_prefer_ceil: output 1 reads input 1, not
             0 -- not a replication, kept
  up_linear  linear: kept
  up_two     read by two ops: kept

usage: gen_upsample.py REPO_ROOT
"""
import os
import sys

import numpy as np
from onnx import TensorProto, checker, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxgen import Builder  # noqa: E402

root = sys.argv[1]
F = TensorProto.FLOAT
rng = np.random.default_rng(7)
b = Builder()
const, node, inits, nodes = b.const, b.node, b.inits, b.nodes


def conv(x, cin, cout, name, stride=1):
    w = const(name + "_w", rng.standard_normal([cout, cin, 1, 1]) * 0.5)
    node("Conv", [x, w], [name], name, kernel_shape=[1, 1],
         strides=[stride, stride])
    return name


x = helper.make_tensor_value_info("x", F, [1, 4, 8, 8])
lat = conv("x", 4, 4, "lateral")           # 1x4x8x8
low = conv("x", 4, 4, "coarse", stride=2)  # 1x4x4x4
s2 = const("s2", [1, 1, 2, 2])
# up_early exists before the lateral Conv that its Add follows: the fuse
# pass alone would make the Add that Conv's epilogue, with the upsampled
# map as its operand; with absorb on it leaves the Add to absorb.
node("Resize", [low, "", s2], ["up_early"], "resize_early", mode="nearest",
     coordinate_transformation_mode="asymmetric", nearest_mode="floor")
lat2 = conv("x", 4, 4, "lateral2")
node("Add", [lat2, "up_early"], ["p0"], "add_early")
node("Resize", [low, "", s2], ["up_floor"], "resize_floor", mode="nearest",
     coordinate_transformation_mode="asymmetric", nearest_mode="floor")
node("Add", [lat, "up_floor"], ["p1"], "add_floor")
node("Resize", [low, "", "", const("size8", [1, 4, 8, 8], np.int64)],
     ["up_half"], "resize_half", mode="nearest")
node("Mul", ["up_half", "p1"], ["p2"], "mul_half")
wide = conv("x", 4, 4, "wide_src", stride=2)  # 1x4x4x4
node("MaxPool", [wide], ["wide_low"], "wide_pool", kernel_shape=[2, 1],
     strides=[2, 1])  # 1x4x2x4
node("Resize", ["wide_low", "", const("s42", [1, 1, 4, 2])], ["up_wide"],
     "resize_wide", mode="nearest",
     coordinate_transformation_mode="asymmetric", nearest_mode="floor")
node("Add", ["p2", "up_wide"], ["p3"], "add_wide")
node("Resize", [low, "", s2], ["up_ceil"], "resize_ceil", mode="nearest",
     coordinate_transformation_mode="asymmetric",
     nearest_mode="round_prefer_ceil")
node("Sub", ["p3", "up_ceil"], ["p4"], "sub_ceil")
node("Resize", [low, "", s2], ["up_linear"], "resize_linear", mode="linear")
node("Add", ["p4", "up_linear"], ["p5"], "add_linear")
node("Resize", [low, "", s2], ["up_two"], "resize_two", mode="nearest")
node("Add", ["p5", "up_two"], ["p6"], "add_two")
node("Mul", ["p6", "up_two"], ["p7"], "mul_two")
node("Add", ["p7", "p0"], ["p8"], "add_out")
node("Resize", [low, "", s2], ["up_bcast"], "resize_bcast", mode="nearest")
node("Mul", ["up_bcast", const("chscale", rng.standard_normal([1, 4, 1, 1]))],
     ["p9"], "mul_bcast")
node("Add", ["p8", "p9"], ["y"], "add_last")
y = helper.make_tensor_value_info("y", F, [1, 4, 8, 8])
graph = helper.make_graph(nodes, "upsample", [x], [y], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="mplan gen_upsample.py")
model.ir_version = 7
checker.check_model(model)
with open(root + "/tests/data/passes/upsample.onnx.bin", "wb") as f:
    f.write(model.SerializeToString())
