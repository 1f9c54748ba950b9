#!/usr/bin/env python3
"""A seeded random CNN stem (graph/1) for the tile pass: Convs with
kernels of 1 to 5 rows, strides 1 and 2, dilation 2 now and then,
asymmetric pads, depthwise and grouped ones; MaxPool and (f32)
AveragePool with and without count_include_pad; Relu, Clip, (f32)
BatchNormalization, an Add of a per-channel weight; residual Adds over a
branch that keeps the size; (f32) channels padded with a ConstantOfShape's
zeros joined by a Concat, and now and then an NHWC input transposed to
NCHW first, as TensorFlow exports have; then a GlobalAveragePool and a 1x1
Conv as the tail the pass must not tile. Shapes of activations are left
to shape inference.

With qdq, the f32 stem laid out as a QDQ model: most Convs read their
input through a QuantizeLinear and DequantizeLinear pair (uint8, per
tensor or now and then per channel) and a DequantizeLinear of int8
weights (per output channel), and an NHWC input is scaled by a constant
and quantized before its Transpose.

With skip, one or two tensors of the stem (each the output of a layer,
drawn by a generator of their own, so the stem is the one without skip)
are also read by the tail, a GlobalAveragePool each, joined with the
stem's by a Concat before the 1x1 Conv: cuts after them have exports.

test_tile.sh compiles each with --passes none and with the tile pass and
requires the same outputs bit for bit: a band must compute exactly the
rows, windows and pads of the whole.

usage: rnd_stem.py SEED OUT.json [i8|f32|qdq] [skip]
"""
import json
import random
import sys


class Stem:
    def __init__(self, seed, dt, skip=False):
        self.r = random.Random(seed)
        self.rs = random.Random(seed + 7000003) if skip else None
        self.skips = []
        self.qdq = dt == "qdq"
        dt = "f32" if self.qdq else dt
        self.dt = dt
        self.r6 = random.Random(seed + 6000007)  # the QDQ layout's draws
        self.tensors = []
        self.ops = []
        self.n = 0
        c = self.r.randint(1, 4)
        h = self.r.randint(12, 40)
        w = self.r.randint(4, 16)
        # a stream of its own for what came later (NHWC inputs, padded
        # channels), so that the first one still draws the same stems
        self.r5 = random.Random(seed + 5000011)
        if self.r5.random() < 0.3:
            self.tensors.append({"name": "x", "dtype": dt,
                                 "shape": [1, h, w, c], "kind": "input"})
            x = ("x", h, w, c)
            if self.qdq:  # normalized and quantized while NHWC
                x = self.op("Mul", ["x", self.const([1], [0.5])], None,
                            (h, w, c))
                x = self.pair(x, False)
            self.cur = self.op("Transpose", [x[0]], {"perm": [0, 3, 1, 2]},
                               (c, h, w))
        else:
            self.tensors.append({"name": "x", "dtype": dt,
                                 "shape": [1, c, h, w], "kind": "input",
                                 "layout": "NCHW"})
            self.cur = ("x", c, h, w)

    def weight(self, shape, dt=None):
        name = "w%d" % len(self.tensors)
        self.tensors.append({"name": name, "dtype": dt or self.dt,
                             "shape": shape, "kind": "weight"})
        return name

    def const(self, shape, data, dt="f32"):
        name = "w%d" % len(self.tensors)
        self.tensors.append({"name": name, "dtype": dt, "shape": shape,
                             "kind": "weight", "data": data})
        return name

    def pair(self, src, per_channel):
        """src through a QuantizeLinear and DequantizeLinear (uint8)."""
        name, c = src[0], src[1]
        n = c if per_channel else 1
        sc = self.const([n] if per_channel else [],
                        [round(self.r6.uniform(0.02, 0.1), 3)
                         for _ in range(n)])
        zp = self.const([n] if per_channel else [],
                        [self.r6.randint(100, 156) for _ in range(n)], "u8")
        attrs = {"axis": 1} if per_channel else None
        q = self.op("QuantizeLinear", [name, sc, zp], attrs, src[1:])
        self.tensors[-1]["dtype"] = "u8"
        return self.op("DequantizeLinear", [q[0], sc, zp], attrs, src[1:])

    def qweight(self, shape):
        """An int8 weight and the DequantizeLinear (per output channel)
        that gives the Conv its f32 weight."""
        wq = self.weight(shape, "i8")
        sc = self.const([shape[0]], [round(self.r6.uniform(0.005, 0.05), 4)
                                     for _ in range(shape[0])])
        return self.op("DequantizeLinear", [wq, sc], {"axis": 0}, ())[0]

    def op(self, typ, inputs, attrs=None, shape=None):
        self.n += 1
        name = "t%d" % self.n
        self.tensors.append({"name": name, "dtype": self.dt})
        o = {"name": "op%d" % self.n, "op": typ, "inputs": inputs,
             "outputs": [name]}
        if attrs:
            o["attrs"] = attrs
        self.ops.append(o)
        return (name,) + shape

    @staticmethod
    def out(n, k, s, d, pb, pe):
        return (n + pb + pe - (k - 1) * d - 1) // s + 1

    def window(self, src, kind):
        r = self.r
        name, c, h, w = src
        for _ in range(20):
            kh = r.choice([1, 2, 3, 3, 5]) if kind == "conv" else r.choice([2, 3])
            kw = r.choice([1, 3])
            s = r.choice([1, 1, 2])
            d = r.choice([1, 1, 2]) if kind == "conv" and kh > 1 else 1
            lim_h = (kh - 1) * d if kind == "conv" else kh - 1
            lim_w = (kw - 1) if kind == "conv" else kw - 1
            pads = [r.randint(0, lim_h), r.randint(0, lim_w),
                    r.randint(0, lim_h), r.randint(0, lim_w)]
            oh = self.out(h, kh, s, d, pads[0], pads[2])
            ow = self.out(w, kw, 1, 1, pads[1], pads[3])  # strides [s, 1]
            if oh >= 2 and ow >= 1:
                break
        else:
            return src
        attrs = {"kernel_shape": [kh, kw], "strides": [s, 1], "pads": pads}
        if kind == "conv":
            if d > 1:
                attrs["dilations"] = [d, 1]
            g = r.choice([1, 1, c]) if c > 1 else 1
            co = c if g == c and g > 1 else r.choice([2, 3, 4, 6])
            attrs["group"] = g
            if self.qdq and self.r6.random() < 0.8:
                name = self.pair(src, self.r6.random() < 0.2)[0]
            if self.qdq and self.r6.random() < 0.8:
                wt = self.qweight([co, c // g, kh, kw])
            else:
                wt = self.weight([co, c // g, kh, kw])
            ins = [name, wt]
            if self.dt == "f32" and r.random() < 0.5:
                ins.append(self.weight([co]))
            return self.op("Conv", ins, attrs, (co, oh, ow))
        if kind == "avg":
            attrs["count_include_pad"] = r.choice([0, 1])
            return self.op("AveragePool", [name], attrs, (c, oh, ow))
        return self.op("MaxPool", [name], attrs, (c, oh, ow))

    def same_conv(self, src):
        """A Conv that keeps the size (odd kernel, symmetric pads)."""
        name, c, h, w = src
        k = self.r.choice([1, 3])
        p = (k - 1) // 2
        wt = self.weight([c, c, k, k])
        return self.op("Conv", [name, wt], {"kernel_shape": [k, k],
                                            "pads": [p, p, p, p]},
                       (c, h, w))

    def layer(self):
        r = self.r
        f32 = self.dt == "f32"
        kinds = ["conv", "conv", "conv", "max", "relu", "res", "addw"]
        if f32:
            kinds += ["avg", "clip", "bn"]
        k = r.choice(kinds)
        if f32 and self.r5.random() < 0.15:
            k = "padc"
        name, c, h, w = self.cur
        if k in ("conv", "max", "avg"):
            self.cur = self.window(self.cur, k)
        elif k == "relu":
            self.cur = self.op("Relu", [name], None, (c, h, w))
        elif k == "clip":
            self.cur = self.op("Clip", [name], {"min": -0.5, "max": 0.75},
                               (c, h, w))
        elif k == "bn":
            ws = [self.weight([c]) for _ in range(4)]
            self.cur = self.op("BatchNormalization", [name] + ws, None,
                               (c, h, w))
        elif k == "addw":
            wt = self.weight([1, c, 1, 1] if r.random() < 0.5 else [1])
            self.cur = self.op("Add", [name, wt], None, (c, h, w))
        elif k == "padc":
            extra = r.randint(1, 3)
            shape = "w%d" % len(self.tensors)
            self.tensors.append({"name": shape, "dtype": "i64", "shape": [4],
                                 "kind": "weight",
                                 "data": [1, extra, h, w]})
            zeros = self.op("ConstantOfShape", [shape], None, (extra, h, w))
            self.cur = self.op("Concat", [name, zeros[0]], {"axis": 1},
                               (c + extra, h, w))
        else:
            a = self.same_conv(self.cur)
            if r.random() < 0.5:
                a = self.same_conv(a)
            self.cur = self.op("Add", [name, a[0]], None, (c, h, w))

    def build(self):
        n = self.r.randint(3, 9)
        outs = []
        for i in range(n):
            self.layer()
            outs.append(self.cur)
            if (self.rs and i < n - 1 and len(self.skips) < 2 and
                    self.rs.random() < 0.4):
                self.skips.append(self.cur)
        if self.rs and not self.skips:
            self.skips.append(self.rs.choice(outs[:-1]))
        name, c, h, w = self.cur
        p = self.op("GlobalAveragePool", [name], None, (c, 1, 1))
        for sk in self.skips:  # after the stem's: the stage stops there
            q = self.op("GlobalAveragePool", [sk[0]], None, (sk[1], 1, 1))
            c += sk[1]
            p = self.op("Concat", [p[0], q[0]], {"axis": 1}, (c, 1, 1))
        wt = self.weight([3, c, 1, 1])
        y = self.op("Conv", [p[0], wt], {"kernel_shape": [1, 1]}, (3, 1, 1))
        for t in self.tensors:
            if t["name"] == y[0]:
                t["kind"] = "output"
        return {"mplan": "graph/1", "name": "stem", "tensors": self.tensors,
                "ops": self.ops, "outputs": [y[0]]}


def main():
    seed = int(sys.argv[1])
    dt = sys.argv[3] if len(sys.argv) > 3 else "f32"
    skip = len(sys.argv) > 4 and sys.argv[4] == "skip"
    with open(sys.argv[2], "w") as f:
        json.dump(Stem(seed, dt, skip).build(), f, indent=1)


if __name__ == "__main__":
    main()
