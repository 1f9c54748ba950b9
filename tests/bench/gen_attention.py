#!/usr/bin/env python3
"""Writes scaled dot-product attention written out as exporters before
opset 23 write it (the attention pass's input), at a chosen size, as mplan
graph JSON: x [1, H, S, 2D], Q/K/V projections to [1, H, S, D], K
transposed, MatMul(Q, Kt), Mul by a scale, Add of an [S, S] mask, Softmax
over the keys, MatMul with V and an output projection. The scores and
probabilities are [1, H, S, S] f32 each: what the attention pass removes.
tests/data/passes/attn_decomposed.json is this graph at H 4, S 64, D 16.

usage: gen_attention.py OUT.json HEADS SEQ HEAD_SIZE
"""
import json
import sys


def main():
    out, h, s, d = sys.argv[1], *map(int, sys.argv[2:5])

    def t(name, shape, kind=None):
        x = {"name": name, "dtype": "f32", "shape": shape}
        if kind:
            x["kind"] = kind
        return x

    def op(name, kind, inputs, outputs, attrs=None):
        o = {"name": name, "op": kind, "inputs": inputs, "outputs": outputs}
        if attrs:
            o["attrs"] = attrs
        return o
    g = {"mplan": "graph/1", "name": "attention_%dx%dx%d" % (h, s, d),
         "description": "Decomposed attention, %d heads of %d over %d "
                        "positions (tests/bench/gen_attention.py)" % (h, d, s),
         "tensors": [t("x", [1, h, s, 2 * d], "input"),
                     t("wq", [2 * d, d], "weight"),
                     t("wk", [2 * d, d], "weight"),
                     t("wv", [2 * d, d], "weight"), t("scale", [1], "weight"),
                     t("mask", [s, s], "weight"),
                     t("wo", [d, 2 * d], "weight"),
                     t("q", [1, h, s, d]), t("k", [1, h, s, d]),
                     t("kt", [1, h, d, s]), t("v", [1, h, s, d]),
                     t("s", [1, h, s, s]), t("s_scaled", [1, h, s, s]),
                     t("s_masked", [1, h, s, s]), t("p", [1, h, s, s]),
                     t("o", [1, h, s, d]), t("y", [1, h, s, 2 * d], "output")],
         "ops": [op("q", "MatMul", ["x", "wq"], ["q"]),
                 op("k", "MatMul", ["x", "wk"], ["k"]),
                 op("kt", "Transpose", ["k"], ["kt"], {"perm": [0, 1, 3, 2]}),
                 op("v", "MatMul", ["x", "wv"], ["v"]),
                 op("scores", "MatMul", ["q", "kt"], ["s"]),
                 op("scale", "Mul", ["s", "scale"], ["s_scaled"]),
                 op("mask", "Add", ["mask", "s_scaled"], ["s_masked"]),
                 op("softmax", "Softmax", ["s_masked"], ["p"], {"axis": -1}),
                 op("context", "MatMul", ["p", "v"], ["o"]),
                 op("out", "MatMul", ["o", "wo"], ["y"])]}
    with open(out, "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
