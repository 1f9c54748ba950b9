#!/usr/bin/env python3
"""Seeded generator of irregularly wired networks for the scheduling
benchmark (issue 9), written as mplan graph JSON (graph/1).

randwire: RandWire-WS networks (Xie et al. 2019, "Exploring randomly wired
  neural networks"): each stage is a Watts-Strogatz graph WS(N, K, P) made
  acyclic by pointing every edge from the lower to the higher node index;
  a node sums its inputs (Sum, when it has several) and transforms the sum
  with a ReLU-separable-convolution (a depthwise 3x3 Conv with a fused
  ReLU, then a pointwise 1x1 Conv, BN folded); nodes without predecessors
  read the stage input (the first ones with stride 2), and the stage
  output is the average (Sum then a Mul by 1/n) of the nodes without
  successors. The small regime: conv1 and conv2 plain, then stages of N=32
  nodes at C, 2C, 4C channels.

darts: DARTS/NASNet-style cells (Liu et al. 2019, Zoph et al. 2018): each
  cell reads the two previous cells' outputs, preprocesses both with a 1x1
  Conv, and builds 4 nodes, each the Add of two ops (separable 3x3/5x5
  convolution, dilated convolution, max/avg pool, identity) applied to two
  earlier states; the cell output concatenates the 4 nodes. Reduction
  cells (at 1/3 and 2/3 of the stack) halve the resolution and double the
  channels.

The file order is the order a framework emits: node by node in index
order, as the original implementations construct them. All tensors are
int8 NCHW with batch 1; no weight values are written (mplan plans memory).

usage: gen_cells.py OUT_DIR [--randwire N] [--darts N] [--seed S] [--cells]
Writes randwire_SEED.json and darts_SEED.json files, seeds S, S+1, ...
With --cells, every RandWire stage and every DARTS cell of those networks
becomes a graph of its own (randwire_SEED_stageK.json, darts_SEED_cellK.json)
whose inputs are the stage's or cell's inputs: SERENITY measured peaks per
cell.
"""
import argparse
import json
import os
import random


class Graph:
    def __init__(self, name, description, first=0):
        self.doc = {"mplan": "graph/1", "name": name,
                    "description": description, "dims": {},
                    "tensors": [], "ops": [], "outputs": []}
        self.n = first  # names stay unique across the cells of a network

    def tensor(self, name, shape, dtype="i8", kind=None):
        t = {"name": name, "dtype": dtype, "shape": shape}
        if kind:
            t["kind"] = kind
        else:
            t["layout"] = "NCHW"
        self.doc["tensors"].append(t)
        return name

    def op(self, name, op, inputs, outputs, attrs=None):
        o = {"name": name, "op": op, "inputs": inputs, "outputs": outputs}
        if attrs:
            o["attrs"] = attrs
        self.doc["ops"].append(o)

    def uniq(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def conv(self, x, cin, cout, hw, k=3, stride=1, groups=1, dil=1,
             act=None, base="conv"):
        name = self.uniq(base)
        pad = dil * (k - 1) // 2
        out_hw = (hw + 2 * pad - dil * (k - 1) - 1) // stride + 1
        w = self.tensor(name + "_w", [cout, cin // groups, k, k],
                        kind="weight")
        b = self.tensor(name + "_b", [cout], dtype="i32", kind="weight")
        y = self.tensor(name + "_out", [1, cout, out_hw, out_hw])
        attrs = {"kernel_shape": [k, k], "strides": [stride, stride],
                 "pads": [pad] * 4, "group": groups,
                 "dilations": [dil, dil]}
        if act:
            attrs["fused_activation"] = act
        self.op(name, "Conv", [x, w, b], [y], attrs)
        return y, out_hw

    def sepconv(self, x, c, hw, stride=1, k=3, cout=None):
        """ReLU - depthwise k x k - pointwise 1x1 (BN folded)."""
        y, hw = self.conv(x, c, c, hw, k=k, stride=stride, groups=c,
                          act="Relu", base="dw")
        return self.conv(y, c, cout or c, hw, k=1, base="pw")

    def sum(self, xs, c, hw, base="sum"):
        name = self.uniq(base)
        y = self.tensor(name + "_out", [1, c, hw, hw])
        self.op(name, "Sum", xs, [y])
        return y

    def pool(self, x, c, hw, kind, stride=1):
        name = self.uniq(kind.lower())
        out_hw = (hw + 2 - 3) // stride + 1
        y = self.tensor(name + "_out", [1, c, out_hw, out_hw])
        self.op(name, kind, [x], [y], {"kernel_shape": [3, 3],
                                       "strides": [stride, stride],
                                       "pads": [1, 1, 1, 1]})
        return y, out_hw

    def head(self, x, c, classes=1000):
        p = self.tensor("pool_out", [1, c, 1, 1])
        self.op("pool", "GlobalAveragePool", [x], [p])
        f = self.tensor("flatten_out", [1, c])
        self.op("flatten", "Flatten", [p], [f], {"axis": 1})
        w = self.tensor("fc_w", [classes, c], kind="weight")
        b = self.tensor("fc_b", [classes], dtype="i32", kind="weight")
        y = self.tensor("logits", [1, classes])
        self.op("fc", "Gemm", [f, w, b], [y], {"transB": 1})
        self.doc["outputs"].append(y)

    def write(self, path):
        with open(path, "w") as f:
            json.dump(self.doc, f, indent=0)
            f.write("\n")


def ws_dag(rng, n, k, p):
    """Watts-Strogatz WS(n, k, p), edges pointing to the higher index."""
    edges = set()
    for i in range(n):
        for j in range(1, k // 2 + 1):
            edges.add((i, (i + j) % n))
    result = set()
    for (u, v) in sorted(edges):
        if rng.random() < p:
            choices = [w for w in range(n) if w != u and
                       (u, w) not in result and (w, u) not in result]
            if choices:
                v = rng.choice(choices)
        if (u, v) not in result and (v, u) not in result:
            result.add((u, v))
    dag = set((min(u, v), max(u, v)) for (u, v) in result if u != v)
    preds = {i: sorted(u for (u, v) in dag if v == i) for i in range(n)}
    succs = {i: sorted(v for (u, v) in dag if u == i) for i in range(n)}
    return preds, succs


def randwire(seed, n_nodes=32, k=4, p=0.75, c=78, cells=False):
    """The whole network, or (cells) a list of one graph per stage."""
    rng = random.Random(seed)
    g = Graph("randwire_ws_%d" % seed,
              "RandWire-WS small regime, WS(%d, %d, %.2f), C=%d, seed %d "
              "(tests/bench/gen_cells.py)" % (n_nodes, k, p, c, seed))
    x = g.tensor("input", [1, 3, 224, 224], kind="input")
    x, hw = g.conv(x, 3, c // 2, 224, stride=2, act="Relu", base="conv1")
    x, hw = g.sepconv(x, c // 2, hw, stride=2, cout=c)
    cin = c
    stages = []
    for stage, cout in enumerate([c, 2 * c, 4 * c]):
        preds, succs = ws_dag(rng, n_nodes, k, p)
        if cells:
            g = Graph("randwire_ws_%d_stage%d" % (seed, stage + 1),
                      "stage %d of RandWire-WS seed %d as one graph "
                      "(tests/bench/gen_cells.py --cells)" % (stage + 1, seed),
                      first=g.n)
            x = g.tensor(x, [1, cin, hw, hw], kind="input")
        out = {}
        hw_in = hw
        hw = hw_in // 2
        for i in range(n_nodes):
            if preds[i]:
                ins = [out[j] for j in preds[i]]
                agg = ins[0] if len(ins) == 1 else g.sum(ins, cout, hw)
                out[i], _ = g.sepconv(agg, cout, hw)
            else:
                out[i], _ = g.sepconv(x, cin, hw_in, stride=2, cout=cout)
        sinks = [out[i] for i in range(n_nodes) if not succs[i]]
        s = sinks[0] if len(sinks) == 1 else g.sum(sinks, cout, hw)
        name = g.uniq("avg")
        scale = g.tensor(name + "_scale", [1], kind="weight")
        y = g.tensor(name + "_out", [1, cout, hw, hw])
        g.op(name, "Mul", [s, scale], [y])
        if cells:
            g.doc["outputs"].append(y)
            stages.append(g)
        x, cin = y, cout
    if cells:
        return stages
    x, hw = g.conv(x, cin, 1280, hw, k=1, act="Relu", base="classifier")
    g.head(x, 1280)
    return g


DARTS_OPS = ["sep3", "sep5", "dil3", "dil5", "max", "avg", "skip"]


def darts_op(g, kind, x, c, hw, stride):
    if kind == "sep3":
        y, hw2 = g.sepconv(x, c, hw, stride=stride)
        return g.sepconv(y, c, hw2)[0]
    if kind == "sep5":
        y, hw2 = g.sepconv(x, c, hw, stride=stride, k=5)
        return g.sepconv(y, c, hw2, k=5)[0]
    if kind in ("dil3", "dil5"):
        k = 3 if kind == "dil3" else 5
        y, hw2 = g.conv(x, c, c, hw, k=k, stride=stride, groups=c, dil=2,
                        act="Relu", base="dil")
        return g.conv(y, c, c, hw2, k=1, base="pw")[0]
    if kind in ("max", "avg"):
        return g.pool(x, c, hw, "MaxPool" if kind == "max" else "AveragePool",
                      stride)[0]
    if stride == 1:
        return x
    return g.conv(x, c, c, hw, k=1, stride=2, base="fr")[0]


def darts(seed, cells=8, c=36, split=False):
    """The whole stack, or (split) a list of one graph per cell."""
    rng = random.Random(seed)
    g = Graph("darts_cells_%d" % seed,
              "DARTS/NASNet-like stack of %d cells (4 nodes, 2 inputs "
              "each), C=%d, 32x32, seed %d (tests/bench/gen_cells.py)"
              % (cells, c, seed))
    x = g.tensor("input", [1, 3, 32, 32], kind="input")
    stem, hw = g.conv(x, 3, 3 * c, 32, base="stem")
    prev = [(stem, 3 * c, hw), (stem, 3 * c, hw)]
    reductions = {cells // 3, 2 * cells // 3}
    cc = c
    whole, parts = g, []
    for cell in range(cells):
        red = cell in reductions
        if red:
            cc *= 2
        (p0, c0, h0), (p1, c1, h1) = prev
        if split:
            g = Graph("darts_cells_%d_cell%d" % (seed, cell + 1),
                      "%s cell %d of the DARTS-like stack seed %d as one "
                      "graph (tests/bench/gen_cells.py --cells)"
                      % ("reduction" if red else "normal", cell + 1, seed),
                      first=whole.n)
            g.tensor(p0, [1, c0, h0, h0], kind="input")
            if p1 != p0:
                g.tensor(p1, [1, c1, h1, h1], kind="input")
        hw = h1
        # The cell before a reduction is at twice the resolution.
        s0 = g.conv(p0, c0, cc, h0, k=1, stride=h0 // hw, act="Relu",
                    base="pre0")[0]
        s1 = g.conv(p1, c1, cc, h1, k=1, act="Relu", base="pre1")[0]
        states = [(s0, hw), (s1, hw)]
        out_hw = hw // 2 if red else hw
        nodes = []
        for i in range(4):
            picks = rng.sample(range(len(states)), 2)
            branch = []
            for j in picks:
                kind = rng.choice(DARTS_OPS)
                src, shw = states[j]
                stride = 2 if red and j < 2 else 1
                branch.append(darts_op(g, kind, src, cc, shw, stride))
            name = g.uniq("node")
            y = g.tensor(name + "_out", [1, cc, out_hw, out_hw])
            g.op(name, "Add", branch, [y])
            states.append((y, out_hw))
            nodes.append(y)
        name = g.uniq("cell")
        y = g.tensor(name + "_out", [1, 4 * cc, out_hw, out_hw])
        g.op(name, "Concat", nodes, [y], {"axis": 1})
        if split:
            g.doc["outputs"].append(y)
            parts.append(g)
            whole.n = g.n
        prev = [prev[1], (y, 4 * cc, out_hw)]
    if split:
        return parts
    g.head(prev[1][0], prev[1][1], classes=10)
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--randwire", type=int, default=5)
    ap.add_argument("--darts", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cells", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.cells:
        for i in range(a.randwire):
            for k, g in enumerate(randwire(a.seed + i, cells=True)):
                g.write(os.path.join(a.out, "randwire_%d_stage%d.json"
                                     % (a.seed + i, k + 1)))
        for i in range(a.darts):
            for k, g in enumerate(darts(a.seed + i, split=True)):
                g.write(os.path.join(a.out, "darts_%d_cell%d.json"
                                     % (a.seed + i, k + 1)))
        return
    for i in range(a.randwire):
        randwire(a.seed + i).write(
            os.path.join(a.out, "randwire_%d.json" % (a.seed + i)))
    for i in range(a.darts):
        darts(a.seed + i).write(
            os.path.join(a.out, "darts_%d.json" % (a.seed + i)))


if __name__ == "__main__":
    main()
