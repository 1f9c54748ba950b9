#!/usr/bin/env python3
"""qdq_model.py IN.onnx OUT.onnx [--full] [--int32-bias] -- a real f32 ONNX model
rewritten in the QDQ form static quantizers emit (ONNX Runtime's
quantize_static with QuantFormat.QDQ lays a model out this way):

  - every activation a Conv, MatMul or Gemm reads as its first input goes
    through QuantizeLinear and DequantizeLinear first, uint8 per tensor
    (one pair per tensor, shared by its readers, as the quantizer does by
    default); the scale and zero point are fixed (0.05 and 128: no
    calibration, which would not change the graph's shape);
  - every such op's f32 weight (its second input, an initializer) becomes
    int8 with a DequantizeLinear: per output channel when the model's
    default-domain opset is 13 or more (DequantizeLinear's axis), per
    tensor before, symmetric (scale max |w| / 127, zero point omitted).

Biases and every other op stay as they are, unless --int32-bias: then,
as ONNX Runtime's quantizer writes them, the f32 bias of a Conv or Gemm
whose input is quantized becomes int32 with a DequantizeLinear, its scale
the input's scale times the weight's (per channel with the weight),
zero point omitted. With --full, as later
quantizers do by default, the activations of more ops are quantized, their
outputs too: every activation an op of FULL_OPS reads (the data inputs:
a product's first, an Add's, Mul's or Concat's every one, the others'
first) or writes goes through one QuantizeLinear and DequantizeLinear pair
placed after its producer, and every reader reads the DequantizeLinear's
output (an output no op reads keeps no pair); constants (initializers,
Constant and ConstantOfShape outputs, and what Shape or constants alone
make) stay as they are. A model before opset 10 is
refused (QuantizeLinear came with opset 10; raising its opset would change
other ops' meaning, Slice's for one). The wire format is read and
written here (no onnx package): the graph's nodes and initializers are
decoded, the other fields kept byte for byte.
"""
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value, raw entry bytes) of a message."""
    i = 0
    while i < len(b):
        start = i
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v, b[start:i]


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def ld(f, payload):
    return enc_varint(f << 3 | 2) + enc_varint(len(payload)) + payload


def vint(f, v):
    return enc_varint(f << 3) + enc_varint(v & ((1 << 64) - 1))


def s(v):
    return v.encode()


def node(op, ins, outs, name, attrs=b""):
    return (b"".join(ld(1, s(x)) for x in ins) +
            b"".join(ld(2, s(x)) for x in outs) + ld(3, s(name)) +
            ld(4, s(op)) + attrs)


def attr_int(name, v):
    return ld(5, ld(1, s(name)) + vint(3, v) + vint(20, 2))


def tensor(name, dims, elem, raw):
    return (b"".join(vint(1, d) for d in dims) + vint(2, elem) +
            ld(8, s(name)) + ld(9, raw))


FLOAT, UINT8, INT8, INT32 = 1, 2, 3, 6
X_SCALE = 0.05  # every activation's (an f32 value)

# --full: the ops whose activations are quantized, and those that read
# every input as data (the others read input 0)
FULL_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Add", "Mul",
            "Concat", "GlobalAveragePool", "AveragePool", "MaxPool",
            "Sigmoid", "HardSigmoid", "Relu", "Clip", "Resize", "Reshape",
            "Transpose")
FULL_ALL_INPUTS = ("Add", "Mul", "Concat")


class Node:
    def __init__(self, raw):
        self.raw, self.inputs, self.outputs = raw, [], []
        self.op = self.name = ""
        self.attrs, self.tensors = {}, {}
        for f, wt, v, _ in fields(raw):
            if f == 1:
                self.inputs.append(v.decode())
            elif f == 2:
                self.outputs.append(v.decode())
            elif f == 3:
                self.name = v.decode()
            elif f == 4:
                self.op = v.decode()
            elif f == 5:
                an, ai, at = None, None, None
                for g, _, w, _ in fields(v):
                    if g == 1:
                        an = w.decode()
                    elif g == 3:
                        ai = w
                    elif g == 5:
                        at = w
                self.attrs[an] = ai
                if at is not None:
                    self.tensors[an] = at

    def with_inputs(self, ins):
        """The node's bytes with its inputs replaced, the rest as read."""
        rest = b"".join(r for f, _, _, r in fields(self.raw) if f != 1)
        return b"".join(ld(1, s(x)) for x in ins) + rest


def name_of(msg, field):
    """The string field of a message (a tensor's or a value info's name)."""
    return next((v.decode() for f, _, v, _ in fields(msg) if f == field), "")


def f32_values(t):
    """name, dims, values of an f32 initializer (None if not f32)."""
    name, dims, elem, raw, fd = None, [], None, None, []
    for f, wt, v, _ in fields(t):
        if f == 1:
            if wt == 2:
                j = 0
                while j < len(v):
                    d, j = varint(v, j)
                    dims.append(d)
            else:
                dims.append(v)
        elif f == 2:
            elem = v
        elif f == 8:
            name = v.decode()
        elif f == 9:
            raw = v
        elif f == 4:
            if wt == 2:
                fd += list(struct.unpack("<%df" % (len(v) // 4), v))
            else:
                fd.append(struct.unpack("<f", v)[0])
        elif f == 14:  # data_location: external data is not read here
            return name, dims, None
    if elem != FLOAT:
        return name, dims, None
    vals = list(struct.unpack("<%df" % (len(raw) // 4), raw)) if raw else fd
    return name, dims, vals


def quantize(vals, dims, axis):
    """int8 values and per-slice scales along axis (None: per tensor)."""
    n = len(vals)
    if axis is None:
        groups = [range(n)]
    else:
        outer = 1
        for d in dims[:axis]:
            outer *= d
        ch = dims[axis]
        inner = n // (outer * ch)
        groups = [[(o * ch + c) * inner + i for o in range(outer)
                   for i in range(inner)] for c in range(ch)]
    q, scales = [0] * n, []
    for g in groups:
        m = max((abs(vals[i]) for i in g), default=0.0)
        sc = struct.unpack("<f", struct.pack("<f", m / 127 if m else 1.0))[0]
        scales.append(sc)
        for i in g:
            q[i] = max(-127, min(127, round(vals[i] / sc)))
    return q, scales


def full_tensors(nodes, constants):
    """--full: the activations to quantize, in the nodes' order."""
    readers = {}
    for nd in nodes:
        for x in nd.inputs:
            readers[x] = readers.get(x, 0) + 1
    want = {}  # ordered, as a set
    for nd in nodes:
        if nd.op not in FULL_OPS:
            continue
        ins = nd.inputs if nd.op in FULL_ALL_INPUTS else nd.inputs[:1]
        for x in ins + nd.outputs[:1]:
            if x and x not in constants and readers.get(x):
                want[x] = True
    return want


def main():
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if flags - {"--full", "--int32-bias"} or len(args) != 2:
        sys.exit("usage: qdq_model.py IN.onnx OUT.onnx [--full] "
                 "[--int32-bias]")
    full, int32_bias = "--full" in flags, "--int32-bias" in flags
    src, dst = args[0], args[1]
    model = open(src, "rb").read()
    opset = 0
    for f, _, v, _ in fields(model):
        if f == 8:
            dom, ver = "", 0
            for g, _, w, _ in fields(v):
                if g == 1:
                    dom = w.decode()
                elif g == 2:
                    ver = w
            if dom in ("", "ai.onnx"):
                opset = ver
    if opset < 10:
        sys.exit("qdq_model: %s: opset %d has no QuantizeLinear (10 or later)"
                 % (src, opset))
    graph = next(v for f, _, v, _ in fields(model) if f == 7)
    nodes = [Node(v) for f, _, v, _ in fields(graph) if f == 1]
    inits = {}
    for f, _, v, r in fields(graph):
        if f == 5:
            name, dims, vals = f32_values(v)
            inits[name] = (dims, vals)
    # weights written as Constant nodes (Paddle2ONNX does): their value
    consts = {}
    for nd in nodes:
        if nd.op == "Constant" and "value" in nd.tensors and nd.outputs:
            _, dims, vals = f32_values(nd.tensors["value"])
            consts[nd.outputs[0]] = (dims, vals)
    per_channel = opset >= 13
    heads = ("Conv", "MatMul", "Gemm")
    new_nodes, new_inits, dropped = [], [], set()
    qdq = {}  # activation -> its dequantized name

    def pair(x):
        """The QuantizeLinear and DequantizeLinear of activation x."""
        k = len(qdq)
        sn, zn = "qdq_s%d" % k, "qdq_z%d" % k
        qn, dn = x + "_qdq_q", x + "_qdq_d"
        new_inits.append(tensor(sn, [], FLOAT, struct.pack("<f", X_SCALE)))
        new_inits.append(tensor(zn, [], UINT8, bytes([128])))
        new_nodes.append(node("QuantizeLinear", [x, sn, zn], [qn],
                              "qdq_quant%d" % k))
        new_nodes.append(node("DequantizeLinear", [qn, sn, zn], [dn],
                              "qdq_dequant%d" % k))
        qdq[x] = dn

    def int32_dq(b, vals, wscales):
        """Bias b as int32 by the input's scale times the weight's."""
        f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
        scales = [f32(X_SCALE * ws) for ws in wscales]
        q = [max(-2**31, min(2**31 - 1,
                             round(v / scales[c if len(scales) > 1 else 0])))
             for c, v in enumerate(vals)]
        qn, sn = b + "_qdq_b", b + "_qdq_bs"
        new_inits.append(tensor(qn, [len(q)], INT32,
                                struct.pack("<%di" % len(q), *q)))
        one = len(scales) == 1
        new_inits.append(tensor(sn, [] if one else [len(scales)], FLOAT,
                                struct.pack("<%df" % len(scales), *scales)))
        new_nodes.append(node("DequantizeLinear", [qn, sn], [b],
                              "qdq_dqb_" + b,
                              b"" if one else attr_int("axis", 0)))
        dropped.add(b)
        biases.append(b)

    biases = []
    constants = set(inits) | set(consts) | {
        nd.outputs[0] for nd in nodes
        if nd.op in ("Constant", "ConstantOfShape") and nd.outputs}
    # shape math and what constants alone make (a Pad's pads that a Concat
    # of Split constants gives, a Resize's sizes from a Shape) are not
    # activations either
    for nd in nodes:
        if nd.op == "Shape" or all(not x or x in constants
                                   for x in nd.inputs):
            constants |= set(nd.outputs)
    want = full_tensors(nodes, constants) if full else {}
    made = {y for nd in nodes for y in nd.outputs}
    for x in want:  # graph inputs: their pairs first
        if x not in made:
            pair(x)
    for nd in nodes:
        if full:  # every reader reads the pairs made so far
            nd = Node(nd.with_inputs([qdq.get(x, x) for x in nd.inputs]))
        if nd.op in heads and len(nd.inputs) >= 2:
            ins = list(nd.inputs)
            x = ins[0]
            if not full and x and x not in inits and x not in consts:
                if x not in qdq:
                    pair(x)
                ins[0] = qdq[x]
            w = ins[1]
            dims, vals = inits.get(w, consts.get(w, (None, None)))
            if vals is not None and len(dims) >= 2 and w not in dropped:
                tb = nd.attrs.get("transB", 0)
                axis = None
                if per_channel:
                    axis = 0 if nd.op == "Conv" or (nd.op == "Gemm" and tb) \
                        else len(dims) - 1
                q, scales = quantize(vals, dims, axis)
                qn, sn = w + "_qdq_w", w + "_qdq_ws"
                new_inits.append(tensor(qn, dims, INT8,
                                        struct.pack("<%db" % len(q), *q)))
                sdims = [len(scales)] if axis is not None else []
                new_inits.append(tensor(
                    sn, sdims, FLOAT,
                    struct.pack("<%df" % len(scales), *scales)))
                attrs = attr_int("axis", axis) if axis is not None else b""
                new_nodes.append(node("DequantizeLinear", [qn, sn], [w],
                                      "qdq_dqw_" + w, attrs))
                dropped.add(w)
                b = ins[2] if len(ins) >= 3 and nd.op != "MatMul" else ""
                bdims, bvals = inits.get(b, consts.get(b, (None, None)))
                if (int32_bias and bvals is not None and b not in dropped
                        and ins[0] in qdq.values()
                        and len(bdims) == 1
                        and len(scales) in (1, len(bvals))):
                    int32_dq(b, bvals, scales)
            nd = Node(nd.with_inputs(ins))
        new_nodes.append(nd)
        for y in nd.outputs[:1]:
            if y in want:
                pair(y)
    # the Constants whose weights were quantized are gone; the others stay
    new_nodes = [n.raw if isinstance(n, Node) else n for n in new_nodes
                 if not (isinstance(n, Node) and n.op == "Constant" and
                         n.outputs and n.outputs[0] in dropped)]
    out_graph = b""
    for f, _, v, r in fields(graph):
        if f == 1:
            continue
        if f == 5 and name_of(v, 8) in dropped:
            continue
        if f == 11 and name_of(v, 1) in dropped:  # an initializer as input
            continue
        out_graph += r
    out_graph = (b"".join(ld(1, n) for n in new_nodes) + out_graph +
                 b"".join(ld(5, t) for t in new_inits))
    out = b""
    for f, _, v, r in fields(model):
        out += ld(7, out_graph) if f == 7 else r
    open(dst, "wb").write(out)
    print("qdq_model: opset %d, %d activations%s and %d weights quantized "
          "(weights %s)%s" % (
              opset, len(qdq), " (--full)" if full else "",
              len(dropped) - len(biases),
              "per channel" if per_channel else "per tensor",
              ", %d biases int32" % len(biases) if int32_bias else ""))


if __name__ == "__main__":
    main()
