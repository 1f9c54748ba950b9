#!/usr/bin/env python3
"""Writes one ONNX model of independent nodes whose inputs are empty
(a dim of 0: ONNX allows them), and the --shape options that bind them.

Each node reads graph inputs of its own, declared with a dim of 0 (which
mplan reads as unknown for a graph input, so the options bind it), and
writes a graph output whose shape inference derives. The ops cover the
kernels whose loops or divisions meet an empty extent: reductions and
normalisations over 0 elements, products with an inner dim of 0, a
Conv with no batch or no input channels, pooling, Einsum, LSTM over no
time step, integer Div and Mod, TopK of 0, Gather of no index, Concat
with an empty part. test_onnx_cli.sh verifies it (poison mode, plain and
ASan+UBSan builds), with and without every pass.

The protobuf wire format comes from tests/data/gen_onnx_extra.py, so no
python3-onnx is needed.

usage: gen_empty_ops.py MODEL.onnx SHAPES.txt
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
from gen_onnx_extra import (FLOAT, INT32, INT64, UINT8, int_tensor, ld,  # noqa: E402
                            model, node, value_info, vint)

BOOL = 9


def attr_i(name, v):
    return ld(5, ld(1, name) + vint(3, v & (2**64 - 1)) + vint(20, 2))


def attr_ints(name, vs):
    return ld(5, ld(1, name) + b"".join(vint(8, v & (2**64 - 1)) for v in vs) +
              vint(20, 7))


def attr_s(name, s):
    return ld(5, ld(1, name) + ld(4, s) + vint(20, 3))


def untyped_shape(name, elem):
    """A value_info with the element type only: inference gives the shape."""
    return ld(1, name) + ld(2, ld(1, vint(1, elem)))


E = [2, 0, 3]
# name, op, inputs [(suffix, elem, dims)], output elems, attrs, initializers
CASES = [
    ("relu", "Relu", [("x", FLOAT, E)], [FLOAT], b""),
    ("add", "Add", [("x", FLOAT, E), ("b", FLOAT, [3])], [FLOAT], b""),
    ("matmul_k0", "MatMul", [("a", FLOAT, [2, 0]), ("b", FLOAT, [0, 3])], [FLOAT], b""),
    ("matmul_m0", "MatMul", [("a", FLOAT, [0, 4]), ("b", FLOAT, [4, 3])], [FLOAT], b""),
    ("gemm_k0", "Gemm", [("a", FLOAT, [2, 0]), ("b", FLOAT, [0, 3])], [FLOAT], b""),
    ("conv_n0", "Conv", [("x", FLOAT, [0, 2, 5, 5]), ("w", FLOAT, [3, 2, 3, 3])], [FLOAT], b""),
    ("conv_c0", "Conv", [("x", FLOAT, [1, 0, 5, 5]), ("w", FLOAT, [3, 0, 3, 3])], [FLOAT], b""),
    ("convt_n0", "ConvTranspose", [("x", FLOAT, [0, 2, 3, 3]), ("w", FLOAT, [2, 3, 3, 3])], [FLOAT], b""),
    ("softmax", "Softmax", [("x", FLOAT, E)], [FLOAT], attr_i("axis", 1)),
    ("logsoftmax", "LogSoftmax", [("x", FLOAT, E)], [FLOAT], attr_i("axis", 1)),
    ("mean", "ReduceMean", [("x", FLOAT, E)], [FLOAT], attr_ints("axes", [1])),
    ("mean_i32", "ReduceMean", [("x", INT32, E)], [INT32], attr_ints("axes", [1])),
    ("max", "ReduceMax", [("x", FLOAT, E)], [FLOAT], attr_ints("axes", [1])),
    ("prod", "ReduceProd", [("x", FLOAT, E)], [FLOAT], attr_ints("axes", [1])),
    ("l2", "ReduceL2", [("x", FLOAT, E)], [FLOAT], attr_ints("axes", [1])),
    ("lse", "ReduceLogSumExp", [("x", FLOAT, E)], [FLOAT], attr_ints("axes", [1])),
    ("argmax", "ArgMax", [("x", FLOAT, E)], [INT64], attr_i("axis", 2)),
    ("concat", "Concat", [("a", FLOAT, [2, 0, 3]), ("b", FLOAT, [2, 4, 3])], [FLOAT], attr_i("axis", 1)),
    ("transpose", "Transpose", [("x", FLOAT, E)], [FLOAT], attr_ints("perm", [2, 1, 0])),
    ("maxpool", "MaxPool", [("x", FLOAT, [0, 2, 4, 4])], [FLOAT],
     attr_ints("kernel_shape", [2, 2]) + attr_ints("strides", [2, 2])),
    ("avgpool", "AveragePool", [("x", FLOAT, [0, 2, 4, 4])], [FLOAT],
     attr_ints("kernel_shape", [2, 2]) + attr_ints("strides", [2, 2])),
    ("gap", "GlobalAveragePool", [("x", FLOAT, [0, 2, 4, 4])], [FLOAT], b""),
    ("batchnorm", "BatchNormalization",
     [("x", FLOAT, [0, 2, 3]), ("s", FLOAT, [2]), ("b", FLOAT, [2]), ("m", FLOAT, [2]),
      ("v", FLOAT, [2])], [FLOAT], b""),
    ("instnorm", "InstanceNormalization",
     [("x", FLOAT, [1, 2, 0]), ("s", FLOAT, [2]), ("b", FLOAT, [2])], [FLOAT], b""),
    ("layernorm", "LayerNormalization", [("x", FLOAT, [2, 3, 0]), ("s", FLOAT, [0])], [FLOAT],
     attr_i("axis", -1)),
    ("meanvar", "MeanVarianceNormalization", [("x", FLOAT, [0, 2, 2, 2])], [FLOAT], b""),
    ("lrn", "LRN", [("x", FLOAT, [1, 0, 2, 2])], [FLOAT], attr_i("size", 3)),
    ("einsum", "Einsum", [("a", FLOAT, [2, 0]), ("b", FLOAT, [0, 3])], [FLOAT],
     attr_s("equation", "ij,jk->ik")),
    ("lstm", "LSTM", [("x", FLOAT, [0, 1, 2]), ("w", FLOAT, [1, 8, 2]), ("r", FLOAT, [1, 8, 2])],
     [FLOAT], attr_i("hidden_size", 2)),
    ("where", "Where", [("c", BOOL, E), ("a", FLOAT, E), ("b", FLOAT, E)], [FLOAT], b""),
    ("d2s", "DepthToSpace", [("x", FLOAT, [0, 4, 2, 2])], [FLOAT], attr_i("blocksize", 2)),
    ("div_i32", "Div", [("a", INT32, E), ("b", INT32, E)], [INT32], b""),
    ("mod_i32", "Mod", [("a", INT32, E), ("b", INT32, E)], [INT32], b""),
    ("quant", "QuantizeLinear", [("x", FLOAT, E), ("s", FLOAT, []), ("z", UINT8, [])], [UINT8], b""),
    ("nonzero", "NonZero", [("x", FLOAT, [0, 3])], [INT64], b""),
    ("shape", "Shape", [("x", FLOAT, E)], [INT64], b""),
    ("size", "Size", [("x", FLOAT, E)], [INT64], b""),
    ("gather", "Gather", [("x", FLOAT, [4, 3]), ("i", INT64, [0])], [FLOAT], attr_i("axis", 0)),
]
# inputs that are initializers: (case, suffix) -> tensor bytes
INITS = {
    ("topk", "k"): int_tensor("topk_k", [1], [0], INT64),
    ("expand", "s"): int_tensor("expand_s", [3], [2, 0, 3], INT64),
    ("tile", "r"): int_tensor("tile_r", [2], [0, 1], INT64),
}
CASES += [
    ("topk", "TopK", [("x", FLOAT, [2, 5]), ("k", INT64, [1])], [FLOAT, INT64], attr_i("axis", 1)),
    ("expand", "Expand", [("x", FLOAT, [1, 0, 1]), ("s", INT64, [3])], [FLOAT], b""),
    ("tile", "Tile", [("x", FLOAT, [2, 3]), ("r", INT64, [2])], [FLOAT], b""),
]


def main():
    graph, shapes = b"", []
    inits, inputs, outputs = b"", b"", b""
    for name, op, ins, outs, attrs in CASES:
        names = []
        for suffix, elem, dims in ins:
            n = "%s_%s" % (name, suffix)
            names.append(n)
            if (name, suffix) in INITS:
                inits += ld(5, INITS[(name, suffix)])
                continue
            inputs += ld(11, value_info(n, dims, elem))
            shapes.append("--shape %s=%s" % (n, "x".join(map(str, dims)) if dims else "scalar"))
        onames = ["%s_y%d" % (name, k) for k in range(len(outs))]
        graph += ld(1, node(op, names, onames, name, attrs))
        for n, elem in zip(onames, outs):
            outputs += ld(12, untyped_shape(n, elem))
    graph += ld(2, "empty_ops") + inits + inputs + outputs
    with open(sys.argv[1], "wb") as f:
        f.write(model(graph, opset=17))
    with open(sys.argv[2], "w") as f:
        f.write(" ".join(shapes) + "\n")
    print("%d ops, %d bound inputs" % (len(CASES), len(shapes)))


if __name__ == "__main__":
    main()
