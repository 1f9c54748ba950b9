#!/usr/bin/env python3
"""Writes tests/data/passes/fold_large.onnx.bin: constant subgraphs too
large for shape inference to know their values (more than 4096 elements,
MP_VALUE_MAX), for the fold pass's groups (analyzer/passes/fold.c
invariant 4) and compile's run of them (compile/bundle_write.c invariant
4). Needs python3-onnx (a developer tool; the tests read the committed
file).

- folds: W [384, 96] is cut into its four gate blocks, put back in another
  gate order (as exporters do for an LSTM's weights), transposed and read
  by a MatMul; the bias is reordered the same way. The group's outputs
  (W' and b') are no larger than W and b, which only the group reads.
- stays: a Tile of a small weight to [64, 96] (the weight it would make
  is larger than what dies with it), and a Transpose of V [128, 64],
  which a MatMul also reads directly (V stays, so its transpose would be
  new resident bytes).

usage: gen_fold_large.py REPO_ROOT
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxgen import Builder  # noqa: E402

root = sys.argv[1]
F = TensorProto.FLOAT
rng = np.random.default_rng(7)
b = Builder()
const, node = b.const, b.node


def i64(name, v):
    return const(name, v, np.int64)


const("W", rng.uniform(-0.2, 0.2, [384, 96]))
const("B", rng.uniform(-1, 1, [384]))
for k in range(4):
    node("Slice", ["W", i64("s%d" % k, [96 * k]), i64("e%d" % k, [96 * k + 96]),
                   i64("ax0_%d" % k, [0])], ["w%d" % k], "slice_w%d" % k)
    node("Slice", ["B", i64("bs%d" % k, [96 * k]),
                   i64("be%d" % k, [96 * k + 96])], ["b%d" % k],
         "slice_b%d" % k)
node("Concat", ["w0", "w3", "w1", "w2"], ["wr"], "gates_w", axis=0)
node("Concat", ["b0", "b3", "b1", "b2"], ["br"], "gates_b", axis=0)
node("Transpose", ["wr"], ["wt"], "transpose_w", perm=[1, 0])
node("MatMul", ["x", "wt"], ["h"], "gates")
node("Add", ["h", "br"], ["y"], "bias")
# stays: the Tile would make 24,576 resident bytes out of 384
node("Tile", [const("T", rng.uniform(-1, 1, [1, 96])),
              i64("reps", [64, 1])], ["tt"], "tile")
node("Add", ["z", "tt"], ["y2"], "add_tile")
# stays: V is read by a MatMul too, so V^T would be new bytes
const("V", rng.uniform(-0.2, 0.2, [128, 64]))
node("MatMul", ["u", "V"], ["uv"], "mm_v")
node("Transpose", ["V"], ["vt"], "transpose_v", perm=[1, 0])
node("MatMul", ["uv", "vt"], ["y3"], "mm_vt")

inputs = [helper.make_tensor_value_info("x", F, [1, 96]),
          helper.make_tensor_value_info("z", F, [64, 96]),
          helper.make_tensor_value_info("u", F, [1, 128])]
outputs = [helper.make_tensor_value_info("y", F, [1, 384]),
           helper.make_tensor_value_info("y2", F, [64, 96]),
           helper.make_tensor_value_info("y3", F, [1, 128])]
b.save(f"{root}/tests/data/passes/fold_large.onnx.bin", "fold_large", inputs,
       outputs)

# fold_bad_index.onnx.bin: the same kind of group, but its Gather reads
# row 999 of a [384, 96] weight; only running the group finds that, so
# compile must fail with one line naming the op (bad input, exit 2).
b = Builder()
b.const("W", rng.uniform(-0.2, 0.2, [384, 96]))
b.node("Gather", ["W", b.const("rows", [3, 999], np.int64)], ["wg"],
       "gather_rows", axis=0)
b.node("Transpose", ["wg"], ["wgt"], "transpose_rows", perm=[1, 0])
b.node("MatMul", ["x", "wgt"], ["y"], "project")
b.save(f"{root}/tests/data/passes/fold_bad_index.onnx.bin", "fold_bad_index",
       [helper.make_tensor_value_info("x", F, [1, 96])],
       [helper.make_tensor_value_info("y", F, [1, 2])])
