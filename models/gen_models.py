#!/usr/bin/env python3
"""Writes the bundled example graphs as mplan graph JSON (graph/1).

MobileNetV1 (Howard et al. 2017) and MobileNetV2 (Sandler et al. 2018) at
224x224, width multiplier 1.0, and ResNet-50 (He et al. 2016, the v1.5
variant with the stride on the 3x3 convolution, as torchvision has it),
written from the published architecture tables. They describe an int8 deployment as TFLite Micro runs it: batch
norm folded into the convolutions, ReLU6 fused into the op that produces
it (attribute "fused_activation"), int8 activations and weights, int32
biases. No weight values: mplan plans memory, it does not need them.

Run from the repository root:  python3 models/gen_models.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Graph:
    def __init__(self, name, description):
        self.doc = {
            "mplan": "graph/1",
            "name": name,
            "description": description,
            "dims": {"N": 1},
            "tensors": [],
            "ops": [],
            "outputs": [],
        }

    def tensor(self, name, shape, dtype="i8", kind=None, layout=None):
        t = {"name": name, "dtype": dtype, "shape": shape}
        if kind:
            t["kind"] = kind
        if layout:
            t["layout"] = layout
        self.doc["tensors"].append(t)
        return name

    def op(self, name, op, inputs, outputs, attrs=None):
        o = {"name": name, "op": op, "inputs": inputs, "outputs": outputs}
        if attrs:
            o["attrs"] = attrs
        self.doc["ops"].append(o)

    def conv(self, name, x, cin, cout, k, stride, hw_in, groups=1,
             act="Relu6"):
        """A convolution with folded BN; returns (output, output size)."""
        pad = k // 2
        hw = (hw_in + 2 * pad - k) // stride + 1
        w = self.tensor(name + "_w", [cout, cin // groups, k, k],
                        kind="weight")
        b = self.tensor(name + "_b", [cout], dtype="i32", kind="weight")
        y = self.tensor(name + "_out", ["N", cout, hw, hw], layout="NCHW")
        attrs = {"kernel_shape": [k, k], "strides": [stride, stride],
                 "pads": [pad, pad, pad, pad], "group": groups}
        if act:
            attrs["fused_activation"] = act
        self.op(name, "Conv", [x, w, b], [y], attrs)
        return y, hw

    def head(self, x, channels, classes):
        p = self.tensor("pool_out", ["N", channels, 1, 1], layout="NCHW")
        self.op("pool", "GlobalAveragePool", [x], [p])
        f = self.tensor("flatten_out", ["N", channels])
        self.op("flatten", "Flatten", [p], [f], {"axis": 1})
        w = self.tensor("fc_w", [classes, channels], kind="weight")
        b = self.tensor("fc_b", [classes], dtype="i32", kind="weight")
        logits = self.tensor("logits", ["N", classes])
        self.op("fc", "Gemm", [f, w, b], [logits], {"transB": 1})
        probs = self.tensor("probs", ["N", classes])
        self.op("softmax", "Softmax", [logits], [probs], {"axis": 1})
        self.doc["outputs"].append(probs)

    def write(self, filename):
        path = os.path.join(HERE, filename)
        with open(path, "w") as f:
            json.dump(self.doc, f, indent=1)
            f.write("\n")
        print("wrote", path, len(self.doc["ops"]), "ops",
              len(self.doc["tensors"]), "tensors")


def mobilenet_v1():
    g = Graph("mobilenet_v1_224",
              "MobileNetV1 1.0 224x224 (Howard et al. 2017), int8, BN "
              "folded, ReLU6 fused. Activation lower bound in file order "
              "with the input resident: 1,204,224 bytes.")
    x = g.tensor("input", ["N", 3, 224, 224], kind="input", layout="NCHW")
    x, hw = g.conv("conv1", x, 3, 32, 3, 2, 224)
    cin = 32
    table = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512)] + \
        [(1, 512)] * 5 + [(2, 1024), (1, 1024)]
    for i, (s, cout) in enumerate(table, start=1):
        x, hw = g.conv("b%d_dw" % i, x, cin, cin, 3, s, hw, groups=cin)
        x, hw = g.conv("b%d_pw" % i, x, cin, cout, 1, 1, hw)
        cin = cout
    g.head(x, cin, 1000)
    g.write("mobilenet_v1.json")


def mobilenet_v2():
    g = Graph("mobilenet_v2_224",
              "MobileNetV2 1.0 224x224 (Sandler et al. 2018), int8, BN "
              "folded, ReLU6 fused, residual adds as ops. Activation lower "
              "bound in file order with the input resident: 1,505,280 "
              "bytes.")
    x = g.tensor("input", ["N", 3, 224, 224], kind="input", layout="NCHW")
    x, hw = g.conv("conv1", x, 3, 32, 3, 2, 224)
    cin = 32
    # (expansion t, output channels c, repeats n, first stride s)
    table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
             (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    block = 0
    for t, c, n, s in table:
        for r in range(n):
            block += 1
            stride = s if r == 0 else 1
            name = "b%d" % block
            y, yhw = x, hw
            mid = cin * t
            if t != 1:
                y, yhw = g.conv(name + "_expand", y, cin, mid, 1, 1, yhw)
            y, yhw = g.conv(name + "_dw", y, mid, mid, 3, stride, yhw,
                            groups=mid)
            y, yhw = g.conv(name + "_project", y, mid, c, 1, 1, yhw,
                            act=None)
            if stride == 1 and cin == c:
                out = g.tensor(name + "_add_out", ["N", c, yhw, yhw],
                               layout="NCHW")
                g.op(name + "_add", "Add", [x, y], [out])
                y = out
            x, hw, cin = y, yhw, c
    x, hw = g.conv("conv_last", x, cin, 1280, 1, 1, hw)
    g.head(x, 1280, 1000)
    g.write("mobilenet_v2.json")


def resnet50():
    g = Graph("resnet50_224",
              "ResNet-50 v1.5 224x224 (He et al. 2016; stride on the 3x3 "
              "convolution), int8, BN folded, ReLU fused, residual adds as "
              "ops with a fused ReLU, projection shortcuts after the main "
              "branch (torchvision order). Activation lower bound in file "
              "order with the input resident: 2,408,448 bytes; with the "
              "residual add in place: 1,806,336 bytes.")
    x = g.tensor("input", ["N", 3, 224, 224], kind="input", layout="NCHW")
    x, hw = g.conv("conv1", x, 3, 64, 7, 2, 224, act="Relu")
    p = g.tensor("pool1_out", ["N", 64, hw // 2, hw // 2], layout="NCHW")
    g.op("pool1", "MaxPool", [x], [p],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    x, hw, cin = p, hw // 2, 64
    # (width, blocks, stride of the first block)
    for stage, (w, n, s) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                       (512, 3, 2)], start=1):
        for b in range(n):
            name = "s%db%d" % (stage, b + 1)
            stride = s if b == 0 else 1
            y, yhw = g.conv(name + "_a", x, cin, w, 1, 1, hw, act="Relu")
            y, yhw = g.conv(name + "_b", y, w, w, 3, stride, yhw, act="Relu")
            y, yhw = g.conv(name + "_c", y, w, 4 * w, 1, 1, yhw, act=None)
            skip = x
            if b == 0:
                skip, _ = g.conv(name + "_down", x, cin, 4 * w, 1, stride, hw,
                                 act=None)
            out = g.tensor(name + "_out", ["N", 4 * w, yhw, yhw],
                           layout="NCHW")
            g.op(name + "_add", "Add", [y, skip], [out],
                 {"fused_activation": "Relu"})
            x, hw, cin = out, yhw, 4 * w
    g.head(x, cin, 1000)
    g.write("resnet50.json")


def decoder(int4=False):
    """A Llama-style decoder of opset 23's ops, f32: 2 blocks of
    RMSNormalization, Q/K/V projections (8 query heads and 2 key/value
    heads of 32), RotaryEmbedding, causal grouped-query Attention, the
    output projection and a residual Add, then RMSNormalization, a SwiGLU
    MLP (688) and a residual Add; a final RMSNormalization and an LM head
    (512). 128 positions of 256 (hidden states in, logits out). With
    int4, every projection's weight is int4, quantized in blocks of 32
    along its input axis with int4 zero points (opset 21), and
    DequantizeLinear'd before its MatMul, as weight-only quantized
    language models ship (the down projection's 688 rows end in a short
    block of 16)."""
    seq, d, heads, kv, hd, ff, vocab = 128, 256, 8, 2, 32, 688, 512
    if int4:
        g = Graph("decoder_int4_2x256",
                  "decoder.json with weight-only int4 projections: each "
                  "weight int4, blocks of 32 along its input axis with an "
                  "f32 scale and an int4 zero point each, DequantizeLinear'd "
                  "(opset 21) before its MatMul. Unrewritten, each "
                  "dequantized f32 weight is an arena activation; the "
                  "absorb pass folds every DequantizeLinear into its "
                  "MatMul, whose runtime widens the weight a panel of "
                  "columns at a time. Weights total 8x less than "
                  "decoder.json's projections.")
    else:
        g = Graph("decoder_2x256",
                  "A Llama-style decoder, f32: 2 blocks (RMSNormalization, "
                  "Q/K/V projections, RotaryEmbedding, causal grouped-query "
                  "Attention with 8 query and 2 key/value heads of 32, "
                  "output projection, residual; RMSNormalization, SwiGLU MLP "
                  "of 688, residual), final RMSNormalization and an LM head "
                  "of 512, over 128 positions of 256. Attention's scores "
                  "live one row at a time in its scratch, never as a "
                  "[8, 128, 128] tensor.")

    def f32(name, shape, kind=None):
        return g.tensor(name, shape, dtype="f32", kind=kind)

    def act(name, width):
        return f32(name, ["N", seq, width])

    def matmul(name, x, cin, cout):
        if int4:
            blocks = (cin + 31) // 32
            q = g.tensor(name + "_wq", [cin, cout], dtype="i4", kind="weight")
            s = f32(name + "_ws", [blocks, cout], kind="weight")
            z = g.tensor(name + "_wz", [blocks, cout], dtype="i4",
                         kind="weight")
            w = f32(name + "_w", [cin, cout])
            g.op(name + "_dq", "DequantizeLinear", [q, s, z], [w],
                 {"axis": 0, "block_size": 32})
        else:
            w = f32(name + "_w", [cin, cout], kind="weight")
        y = act(name + "_out", cout)
        g.op(name, "MatMul", [x, w], [y])
        return y

    def rms(name, x):
        s = f32(name + "_scale", [d], kind="weight")
        y = act(name + "_out", d)
        g.op(name, "RMSNormalization", [x, s], [y], {"epsilon": 1e-6})
        return y

    def binary(name, op, a, b, width):
        y = act(name + "_out", width)
        g.op(name, op, [a, b], [y])
        return y

    x = f32("hidden", ["N", seq, d], kind="input")
    cos = f32("rope_cos", ["N", seq, hd // 2], kind="weight")
    sin = f32("rope_sin", ["N", seq, hd // 2], kind="weight")
    for b in range(2):
        p = "l%d_" % b
        n = rms(p + "attn_norm", x)
        q = matmul(p + "q", n, d, heads * hd)
        k = matmul(p + "k", n, d, kv * hd)
        v = matmul(p + "v", n, d, kv * hd)
        qr, kr = act(p + "q_rope", heads * hd), act(p + "k_rope", kv * hd)
        g.op(p + "q_rope", "RotaryEmbedding", [q, cos, sin], [qr],
             {"num_heads": heads})
        g.op(p + "k_rope", "RotaryEmbedding", [k, cos, sin], [kr],
             {"num_heads": kv})
        a = act(p + "attn_out", heads * hd)
        g.op(p + "attn", "Attention", [qr, kr, v], [a],
             {"q_num_heads": heads, "kv_num_heads": kv, "is_causal": 1})
        o = matmul(p + "o", a, heads * hd, d)
        x = binary(p + "attn_res", "Add", x, o, d)
        n = rms(p + "mlp_norm", x)
        gate = matmul(p + "gate", n, d, ff)
        up = matmul(p + "up", n, d, ff)
        sg = act(p + "gate_sig", ff)
        g.op(p + "gate_sig", "Sigmoid", [gate], [sg])
        silu = binary(p + "silu", "Mul", gate, sg, ff)
        h = binary(p + "swiglu", "Mul", silu, up, ff)
        dn = matmul(p + "down", h, ff, d)
        x = binary(p + "mlp_res", "Add", x, dn, d)
    n = rms("final_norm", x)
    logits = matmul("lm_head", n, d, vocab)
    g.doc["outputs"].append(logits)
    g.write("decoder_int4.json" if int4 else "decoder.json")


if __name__ == "__main__":
    mobilenet_v1()
    mobilenet_v2()
    resnet50()
    decoder()
    decoder(int4=True)
