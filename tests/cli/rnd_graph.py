#!/usr/bin/env python3
"""A seeded random int8 graph (graph/1) of 1x1 and depthwise Convs (some
followed by SiLU, x * Sigmoid(x)), Relu, Softmax,
Add, Sum and Max of 2-4 inputs, MaxPool, nearest Resizes of a pooled map
read by an Add, Mul or Sub, and channel Concats over
[1, C, 6, 6] tensors, for
test_passes_run.sh: the passes (Concat slices, in place, fusion) must not
change its outputs, and the rewritten plan must verify clean. Concats read
recent tensors, the graph input, earlier Concats, and now and then one
tensor twice.

usage: rnd_graph.py SEED OUT.json [HW [DTYPE]]
HW (even; 6 by default) sets the spatial size: at 72 a plane (5,184
elements) is over the runtime's epilogue tile of 4,096, so tapped
epilogues run row by row. DTYPE f32 (i8 by default) also draws a
BatchNormalization after some Convs and HardSwish and GELU written out;
f32q as f32 with most Conv weights quantized, DequantizeLinear'd as QDQ
exporters write them (int8, uint8, int4 or uint4; per tensor, per output
channel or blocked along the input channels; with or without a zero
point), and now and then an activation quantized and dequantized before
its Conv (1x1 or depthwise): the absorb pass folds them into the Convs (or the fold pass
folds the small ones), which must not change a bit.
"""
import json
import random
import sys

HW = 6
DT = "i8"
QUANT = False


class Builder:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        # A second stream for what was added later (SiLU diamonds after
        # Convs, Softmax for Relu), so that the first one still draws the
        # same graph for a seed: only those ops change.
        self.rng2 = random.Random(seed + 1000003)
        # A third (nearest Resizes read by Add, Mul or Sub), for the same
        # reason.
        self.rng3 = random.Random(seed + 2000003)
        # A fourth for f32 graphs (a BatchNormalization after a Conv, and
        # HardSwish and GELU written out as elementwise ops).
        self.rng4 = random.Random(seed + 3000003)
        # A fifth for f32q's quantized weights and activations.
        self.rng5 = random.Random(seed + 4000003)
        self.tensors = [self.act("x", 4, kind="input")]
        self.ops = []
        self.live = [("x", 4)]  # (name, channels), oldest first
        self.weights = 0

    @staticmethod
    def act(name, ch, kind=None, hw=None):
        hw = HW if hw is None else hw
        t = {"name": name, "dtype": DT, "shape": [1, ch, hw, hw],
             "layout": "NCHW"}
        if kind:
            t["kind"] = kind
        return t

    def weight(self, shape):
        name = "w%d" % self.weights
        self.weights += 1
        self.tensors.append({"name": name, "dtype": DT, "shape": shape,
                             "kind": "weight"})
        return name

    def param(self, name, dtype, shape):
        self.tensors.append({"name": name, "dtype": dtype, "shape": shape,
                             "kind": "weight"})
        return name

    def conv_weight(self, shape):
        """A Conv weight: f32q now and then a quantized weight and its
        DequantizeLinear (per tensor, per output channel or blocked along
        the input channels, block 2)."""
        r5 = self.rng5
        if not QUANT or r5.random() < 0.3:
            return self.weight(shape)
        k = self.weights
        self.weights += 1
        qd = r5.choice(["i8", "u8", "i4", "u4"])
        wq = self.param("q%d" % k, qd, shape)
        how = r5.choice(["tensor", "channel", "block"])
        attrs = {}
        if how == "tensor":
            ps = []
        elif how == "channel":
            ps, attrs = [shape[0]], {"axis": 0}
        else:
            ps = [shape[0], (shape[1] + 1) // 2] + shape[2:]
            attrs = {"axis": 1, "block_size": 2}
        ins = [wq, self.param("s%d" % k, "f32", ps)]
        if r5.random() < 0.7:
            ins.append(self.param("z%d" % k, qd, ps))
        name = "dq%d" % k
        self.tensors.append({"name": name, "dtype": "f32", "shape": shape})
        o = {"name": "op" + name, "op": "DequantizeLinear", "inputs": ins,
             "outputs": [name]}
        if attrs:
            o["attrs"] = attrs
        self.ops.append(o)
        return name

    def qdq(self, i, src, ch):
        """f32q: src quantized to int8 or uint8 per tensor and back."""
        qd = self.rng5.choice(["i8", "u8"])
        s = self.param("as%d" % i, "f32", [])
        z = self.param("az%d" % i, qd, [])
        q, d = "t%dq" % i, "t%dr" % i
        self.tensors.append(dict(self.act(q, ch), dtype=qd))
        self.ops.append({"name": "op" + q, "op": "QuantizeLinear",
                         "inputs": [src, s, z], "outputs": [q]})
        self.raw(d, "DequantizeLinear", [q, s, z], ch)
        return d

    def emit(self, i, op, inputs, ch, attrs=None):
        name = "t%d" % i
        self.tensors.append(self.act(name, ch))
        o = {"name": "op%d" % i, "op": op, "inputs": inputs,
             "outputs": [name]}
        if attrs:
            o["attrs"] = attrs
        self.ops.append(o)
        self.live.append((name, ch))

    def raw(self, name, op, inputs, ch, attrs=None, hw=None):
        """An op whose output no later step picks (an intermediate)."""
        self.tensors.append(self.act(name, ch, hw=hw))
        o = {"name": "op" + name, "op": op, "inputs": inputs,
             "outputs": [name]}
        if attrs:
            o["attrs"] = attrs
        self.ops.append(o)

    def conv_f32(self, i, src, w, co):
        """f32: a Conv, now and then a BatchNormalization, then SiLU, a
        HardSwish (x * Clip(x + 3, 0, 6) / 6) or a GELU (x * (Erf(x / s)
        + 1) * 0.5) written out, each a diamond fuse absorbs; constants
        are weights of one element."""
        r4 = self.rng4
        c = "t%dc" % i
        self.raw(c, "Conv", [src, w], co, {"kernel_shape": [1, 1]})
        if r4.random() < 0.5:
            n = "t%dn" % i
            self.raw(n, "BatchNormalization",
                     [c] + [self.weight([co]) for _ in range(4)], co)
            c = n
        act = r4.choice(["silu", "hardswish", "gelu"])
        if act == "silu":
            self.raw("t%dg" % i, "Sigmoid", [c], co)
            self.emit(i, "Mul", [c, "t%dg" % i], co)
        elif act == "hardswish":
            self.raw("t%da" % i, "Add", [c, self.weight([1])], co)
            self.raw("t%dk" % i, "Clip", ["t%da" % i], co,
                     {"min": 0.0, "max": 6.0})
            self.raw("t%dm" % i, "Mul", [c, "t%dk" % i], co)
            self.emit(i, "Div", ["t%dm" % i, self.weight([1])], co)
        else:
            self.raw("t%dd" % i, "Div", [c, self.weight([1])], co)
            self.raw("t%de" % i, "Erf", ["t%dd" % i], co)
            self.raw("t%da" % i, "Add", ["t%de" % i, self.weight([1])], co)
            self.raw("t%dm" % i, "Mul", [c, "t%da" % i], co)
            self.emit(i, "Mul", ["t%dm" % i, self.weight([1])], co)

    def step(self, i):
        r = self.rng
        kind = r.choice(["conv", "relu", "add", "cat", "cat", "dw", "pool",
                         "sum", "max"])
        recent = self.live[-5:]
        if kind == "cat" and len(recent) >= 2:
            ins = r.sample(recent, r.randint(2, min(3, len(recent))))
            if r.random() < 0.1:
                ins.append(ins[0])  # one tensor twice: copied the second time
            self.emit(i, "Concat", [a for a, _ in ins],
                      sum(c for _, c in ins), {"axis": 1})
            return
        src, ch = r.choice(self.live[-4:])
        same = [a for a, c in self.live if c == ch and a != src]
        if kind in ("conv", "cat"):
            co = r.choice([2, 4, 6])
            if QUANT:
                co *= 4  # weights over the fold pass's 256 B, mostly
            w = self.conv_weight([co, ch, 1, 1])
            if QUANT and self.rng5.random() < 0.25:
                src = self.qdq(i, src, ch)
            if DT == "f32" and self.rng4.random() < 0.5:
                self.conv_f32(i, src, w, co)
            elif self.rng2.random() < 0.3:
                # SiLU: Conv, then x * Sigmoid(x) (a diamond fuse absorbs)
                c, g = "t%dc" % i, "t%dg" % i
                self.raw(c, "Conv", [src, w], co, {"kernel_shape": [1, 1]})
                self.raw(g, "Sigmoid", [c], co)
                self.emit(i, "Mul", [g, c], co)
            else:
                self.emit(i, "Conv", [src, w], co, {"kernel_shape": [1, 1]})
        elif kind == "dw":
            w = self.conv_weight([ch, 1, 3, 3])
            if QUANT and self.rng5.random() < 0.4:
                src = self.qdq(i, src, ch)
            self.emit(i, "Conv", [src, w], ch,
                      {"kernel_shape": [3, 3], "group": ch,
                       "pads": [1, 1, 1, 1]})
        elif kind == "pool":
            self.emit(i, "MaxPool", [src], ch,
                      {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
        elif kind == "add" and same and self.rng3.random() < 0.4:
            # a feature-pyramid step: src pooled to half size, a nearest
            # Resize back, read by an Add, Mul or Sub (the absorb pass
            # folds it in where the modes replicate exactly), now and then
            # read twice
            r3 = self.rng3
            lo, up = "t%dl" % i, "t%du" % i
            self.raw(lo, "MaxPool", [src], ch,
                     {"kernel_shape": [2, 2], "strides": [2, 2]}, hw=HW // 2)
            ct, nm = r3.choice([
                ("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"),
                ("half_pixel", "round_prefer_ceil"),
                ("pytorch_half_pixel", "round_prefer_floor"),
                ("asymmetric", "round_prefer_ceil"),
                ("tf_half_pixel_for_nn", "floor"),
                ("align_corners", "round_prefer_floor")])
            self.raw(up, "Resize", [lo], ch,
                     {"mode": "nearest",
                      "coordinate_transformation_mode": ct,
                      "nearest_mode": nm})
            ins = [up, r.choice(same)]
            if r3.random() < 0.5:
                ins.reverse()
            if r3.random() < 0.15:
                ins[ins.index(up) ^ 1] = up
            self.emit(i, r3.choice(["Add", "Mul", "Sub"]), ins, ch)
        elif kind == "add" and same:
            self.emit(i, "Add", [src, r.choice(same)], ch)
        elif kind in ("sum", "max") and same:
            # n-ary, sometimes one tensor twice (in place only over x0)
            ins = [src] + [r.choice(same) for _ in range(r.randint(1, 3))]
            self.emit(i, "Sum" if kind == "sum" else "Max", ins, ch)
        elif self.rng2.random() < 0.25:
            self.emit(i, "Softmax", [src], ch, {"axis": 1})
        else:
            self.emit(i, "Relu", [src], ch)

    def write(self, seed, path):
        read = set(a for o in self.ops for a in o["inputs"])
        outs = [t["name"] for t in self.tensors
                if "kind" not in t and t["name"] not in read]
        for t in self.tensors:
            if t["name"] in outs:
                t["kind"] = "output"
        with open(path, "w") as f:
            json.dump({"mplan": "graph/1", "name": "rg%d" % seed,
                       "tensors": self.tensors, "ops": self.ops,
                       "outputs": outs}, f)


def gen(seed, path):
    b = Builder(seed)
    for i in range(b.rng.randint(4, 14)):
        b.step(i)
    b.write(seed, path)


if __name__ == "__main__":
    if len(sys.argv) > 3:
        HW = int(sys.argv[3])  # read at call time by act(), raw(), step()
    if len(sys.argv) > 4:
        DT = sys.argv[4]
    if DT == "f32q":
        DT, QUANT = "f32", True
    gen(int(sys.argv[1]), sys.argv[2])
