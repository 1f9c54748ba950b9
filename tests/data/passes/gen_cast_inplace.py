#!/usr/bin/env python3
"""Writes tests/data/passes/cast_inplace.onnx.bin: the dynamic-quantization
pattern of ISNet (ConvInteger -> Cast to float -> scale), for the inplace
pass's Cast rule (analyzer/passes/share.c rule 8): a Cast between dtypes of
one element size converts element by element over its input.

- a: ConvInteger's int32 sums, read only by a Cast to float: in place.
- b: ConvInteger's int32 sums, read by a Cast to float and by a Cast to
  int64; neither may write over b (the other reads it; int64 is wider).

Needs python3-onnx (a developer tool; the tests read the committed file).
usage: gen_cast_inplace.py REPO_ROOT
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxgen import Builder  # noqa: E402

root = sys.argv[1]
rng = np.random.default_rng(11)
b = Builder()
const, node = b.const, b.node
U8, F = TensorProto.UINT8, TensorProto.FLOAT
wa = const("wa", rng.integers(0, 255, [16, 8, 3, 3]), np.uint8)
wb = const("wb", rng.integers(0, 255, [2, 8, 1, 1]), np.uint8)
node("ConvInteger", ["x", wa], ["a"], "conv_a", kernel_shape=[3, 3])
node("Cast", ["a"], ["af"], "cast_a", to=F)
node("Mul", ["af", const("sa", [1e-4])], ["as"], "scale_a")
node("Relu", ["as"], ["ya"], "relu_a")
node("ConvInteger", ["x", wb], ["bq"], "conv_b", kernel_shape=[1, 1])
node("Cast", ["bq"], ["bf"], "cast_b", to=F)
node("Cast", ["bq"], ["bl"], "cast_b64", to=TensorProto.INT64)
node("Mul", ["bf", const("sb", [1e-3])], ["yb"], "scale_b")
node("Cast", ["bl"], ["yl"], "cast_back", to=TensorProto.INT32)
vi = helper.make_tensor_value_info
b.save(f"{root}/tests/data/passes/cast_inplace.onnx.bin", "cast_inplace",
       [vi("x", U8, [1, 8, 32, 32])],
       [vi("ya", F, [1, 16, 30, 30]), vi("yb", F, [1, 2, 32, 32]),
        vi("yl", TensorProto.INT32, [1, 2, 32, 32])])
