#!/usr/bin/env python3
"""Writes half_net.onnx.bin: a small CNN computed in f16 end to end (the
runtime's f16 support, ctest cli_runtime and test_ort): Conv 3x3 + Relu,
MaxPool, a 1x1 Conv with a residual Add, HardSigmoid, GlobalAveragePool,
Flatten, Gemm, a Mul by a ConstantOfShape of 0.375, Softmax; weights are
f16 initializers. Needs python3-onnx
and numpy.

usage: gen_half.py OUT_DIR"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "passes"))
from onnxgen import Builder  # noqa: E402

rng = np.random.default_rng(20261130)
b = Builder()
h = np.float16


def w(name, shape, scale):
    return b.const(name, rng.uniform(-scale, scale, shape), h)


b.node("Conv", ["x", w("c1_w", [8, 3, 3, 3], 0.4), w("c1_b", [8], 0.1)],
       ["c1"], "conv1", pads=[1, 1, 1, 1])
b.node("Relu", ["c1"], ["r1"], "relu1")
b.node("MaxPool", ["r1"], ["p1"], "pool1", kernel_shape=[2, 2], strides=[2, 2])
b.node("Conv", ["p1", w("c2_w", [8, 8, 1, 1], 0.5), w("c2_b", [8], 0.1)],
       ["c2"], "conv2")
b.node("Add", ["c2", "p1"], ["a2"], "residual")
b.node("HardSigmoid", ["a2"], ["s2"], "hsig", alpha=0.2, beta=0.5)
b.node("GlobalAveragePool", ["s2"], ["g"], "gap")
b.node("Flatten", ["g"], ["f"], "flatten", axis=1)
b.node("Gemm", ["f", w("fc_w", [10, 8], 0.8), w("fc_b", [10], 0.2)],
       ["logits"], "fc", transB=1)
# a constant the compiler writes with a fill op (ConstantOfShape's f16
# value, not an integer), scaling the logits
b.node("ConstantOfShape", [b.const("t_shape", [1, 10], np.int64)], ["t"],
       "temperature", value=numpy_helper.from_array(np.array([0.375], h)))
b.node("Mul", ["logits", "t"], ["scaled"], "scale")
b.node("Softmax", ["scaled"], ["y"], "softmax", axis=1)
b.save(os.path.join(sys.argv[1], "half_net.onnx.bin"), "half_net",
       [helper.make_tensor_value_info("x", TensorProto.FLOAT16,
                                      [1, 3, 16, 16])],
       [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 10])])
