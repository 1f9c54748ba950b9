#!/usr/bin/env python3
"""Writes ONNX node tests of our own in the layout of ONNX's backend node
tests (NAME/model.onnx, NAME/test_data_set_0/input_K.pb and output_K.pb),
for cases the upstream suite has only once or not at all. ctest runs it
into the build folder (fixture onnx_extra); test_onnx_node and
test_onnx_run read the result like the upstream tests.

  test_weight_outputs: graph outputs that are weights. An initializer 'w'
    is a graph output and is read by an Add; a Constant's output 'k' is a
    graph output and is read by a Mul; a Relu writes 'k.value', the name
    the importer would make up first for k's weight, so it must pick
    another one. Outputs w, k, z = (x + w) * k and k.value = Relu(z).
  test_matmulinteger_batch: MatMulInteger with broadcast batch dims and
    zero points per row of A and per column of B.
  test_qlinearconv_bias: QLinearConv with an int32 bias and per-channel
    weight scales and zero points, int8 in, uint8 out.
  test_weight_output_big: a weight output too large for inference to keep
    its values (its bytes must come from the model under the output's name).
  test_if_big_constant: an If with a bound condition whose branches hold
    large Constants (their bytes must come from the subgraph).
  test_gru_lbr_bidirectional: GRU, both directions, linear_before_reset,
    biases, initial_h, one sequence shorter.
  test_topk_ties: TopK with ties (the lower index first, as ONNX says),
    largest along the last axis and smallest along the first, and ArgMax
    and ArgMin with ties (the first index): the upstream tests have none.

With --committed REPO_ROOT it writes the files the repository keeps
instead: tests/data/weight_outputs.onnx.bin (that model, for test_oom)
and tests/bad/onnx_utf8_name.onnx.bin (the same with a node name that is
not UTF-8, which mplan must refuse in one line).

The protobuf wire format is written directly (field numbers from onnx.proto),
so no python3-onnx is needed. Values are multiples of 1/4, so the expected
outputs are exact in float32.

usage: gen_onnx_extra.py OUT_DIR | --committed REPO_ROOT
"""
import itertools
import math
import os
import struct
import sys

FLOAT = 1


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def key(field, wire):
    return varint(field << 3 | wire)


def vint(field, v):
    return key(field, 0) + varint(v)


def ld(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def tensor(name, dims, values):
    raw = struct.pack("<%df" % len(values), *values)
    out = b"".join(vint(1, d) for d in dims)  # dims
    return out + vint(2, FLOAT) + ld(8, name) + ld(9, raw)


def value_info(name, dims, elem=FLOAT):
    shape = b"".join(ld(1, vint(1, d)) for d in dims)  # Dimension.dim_value
    tensor_type = vint(1, elem) + ld(2, shape)
    return ld(1, name) + ld(2, ld(1, tensor_type))


UINT8, INT8, INT32, INT64, BOOL, FLOAT16 = 2, 3, 6, 7, 9, 10
PACK = {UINT8: "B", INT8: "b", INT32: "i", INT64: "q", FLOAT: "f", BOOL: "?",
        FLOAT16: "e"}


def int_tensor(name, dims, values, elem):
    raw = struct.pack("<%d%s" % (len(values), PACK[elem]), *values)
    out = b"".join(vint(1, d) for d in dims)
    return out + vint(2, elem) + ld(8, name) + ld(9, raw)


def node(op, inputs, outputs, name, attrs=b""):
    out = b"".join(ld(1, i) for i in inputs)
    out += b"".join(ld(2, o) for o in outputs)
    return out + ld(3, name) + ld(4, op) + attrs


def model(graph, opset=13):
    return (vint(1, 8) + ld(2, "mplan gen_onnx_extra.py") + ld(7, graph) +
            ld(8, ld(1, "") + vint(2, opset)))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def weight_outputs(out, relu_name="relu"):
    x = [0.25 * i - 1.0 for i in range(6)]
    w = [0.5 * i - 1.25 for i in range(6)]
    k = [2.0, -1.0, 0.25]
    z = [(x[i] + w[i]) * k[i % 3] for i in range(6)]
    r = [max(v, 0.0) for v in z]
    constant = ld(5, ld(1, "value") + ld(5, tensor("", [3], k)) + vint(20, 4))
    graph = (ld(1, node("Constant", [], ["k"], "make_k", constant)) +
             ld(1, node("Add", ["x", "w"], ["y"], "add")) +
             ld(1, node("Mul", ["y", "k"], ["z"], "mul")) +
             ld(1, node("Relu", ["z"], ["k.value"], relu_name)) +
             ld(2, "weight_outputs") + ld(5, tensor("w", [2, 3], w)) +
             ld(11, value_info("x", [2, 3])) +
             ld(12, value_info("w", [2, 3])) + ld(12, value_info("k", [3])) +
             ld(12, value_info("z", [2, 3])) +
             ld(12, value_info("k.value", [2, 3])))
    if out is None:
        return model(graph)
    d = os.path.join(out, "test_weight_outputs")
    write(os.path.join(d, "model.onnx"), model(graph))
    data = os.path.join(d, "test_data_set_0")
    write(os.path.join(data, "input_0.pb"), tensor("x", [2, 3], x))
    for i, (name, dims, v) in enumerate([("w", [2, 3], w), ("k", [3], k),
                                         ("z", [2, 3], z),
                                         ("k.value", [2, 3], r)]):
        write(os.path.join(data, "output_%d.pb" % i), tensor(name, dims, v))


def write_case(out, name, graph, inputs, outputs, opset=13):
    """A node test in the upstream layout: NAME/model.onnx and its
    test_data_set_0 (serialized TensorProtos)."""
    d = os.path.join(out, name)
    write(os.path.join(d, "model.onnx"), model(graph, opset))
    data = os.path.join(d, "test_data_set_0")
    for i, t in enumerate(inputs):
        write(os.path.join(data, "input_%d.pb" % i), t)
    for i, t in enumerate(outputs):
        write(os.path.join(data, "output_%d.pb" % i), t)


def weight_output_big(out):
    """An initializer of 5,000 floats that is also a graph output, read by
    an Add: too large for inference to keep its values, so the bundle
    must find its bytes under the output's name (the importer renames the
    weight w.value and copies it into w)."""
    n = 5000
    x = [0.25 * (i % 17) - 2.0 for i in range(n)]
    w = [0.5 * (i % 13) - 3.0 for i in range(n)]
    y = [a + b for a, b in zip(x, w)]
    graph = (ld(1, node("Add", ["x", "w"], ["y"], "add")) +
             ld(2, "weight_output_big") + ld(5, tensor("w", [n], w)) +
             ld(11, value_info("x", [n])) + ld(12, value_info("w", [n])) +
             ld(12, value_info("y", [n])))
    write_case(out, "test_weight_output_big", graph, [tensor("x", [n], x)],
               [tensor("w", [n], w), tensor("y", [n], y)])


def if_big_constant(out):
    """An If whose branches hold Constants of 5,000 floats (too large for
    inference to keep their values): with the condition bound by the test
    data, only the then branch is imported, and its Constant's bytes must
    come from the subgraph (not random). y = x + c1 if cond else x - c2."""
    n = 5000
    x = [0.25 * (i % 19) - 2.0 for i in range(n)]
    c1 = [0.5 * (i % 11) - 2.5 for i in range(n)]
    c2 = [0.75 * (i % 7) for i in range(n)]
    y = [a + b for a, b in zip(x, c1)]

    def constant(name, values):
        return ld(1, node("Constant", [], [name], name + "_make",
                          ld(5, ld(1, "value") + ld(5, tensor("", [n], values)) +
                             vint(20, 4))))

    def branch(name, op, c, vals):
        return (constant(c, vals) + ld(1, node(op, ["x", c], [name + "_y"],
                                               name + "_op")) +
                ld(2, name) + ld(12, value_info(name + "_y", [n])))

    then_g, else_g = branch("then", "Add", "c1", c1), branch("else", "Sub",
                                                             "c2", c2)
    attrs = (ld(5, ld(1, "then_branch") + ld(6, then_g) + vint(20, 5)) +
             ld(5, ld(1, "else_branch") + ld(6, else_g) + vint(20, 5)))
    graph = (ld(1, node("If", ["cond"], ["y"], "if", attrs)) +
             ld(2, "if_big_constant") + ld(11, value_info("x", [n])) +
             ld(11, value_info("cond", [], 9)) + ld(12, value_info("y", [n])))
    cond = vint(2, 9) + ld(8, "cond") + ld(9, bytes([1]))
    write_case(out, "test_if_big_constant", graph, [tensor("x", [n], x), cond],
               [tensor("y", [n], y)])


def gru_lbr_bidirectional(out):
    """GRU, bidirectional, linear_before_reset=1, with biases, initial_h and
    sequence_lens (one sequence shorter): what the upstream GRU tests (one
    direction, linear_before_reset 0) leave out. Expected values by the
    ONNX equations in double."""
    import math
    seq, nb, ni, hn, d = 3, 2, 2, 3, 2
    x = [0.1 * ((i * 7) % 11) - 0.5 for i in range(seq * nb * ni)]
    w = [0.05 * ((i * 5) % 13) - 0.3 for i in range(d * 3 * hn * ni)]
    r = [0.04 * ((i * 3) % 17) - 0.3 for i in range(d * 3 * hn * hn)]
    b = [0.02 * ((i * 11) % 7) - 0.06 for i in range(d * 6 * hn)]
    h0 = [0.1 * (i % 5) - 0.2 for i in range(d * nb * hn)]
    lens = [3, 2]
    sig = lambda v: 1 / (1 + math.exp(-v))
    y = [0.0] * (seq * d * nb * hn)
    yh = [0.0] * (d * nb * hn)
    for dd in range(d):
        W = w[dd * 3 * hn * ni:(dd + 1) * 3 * hn * ni]
        R = r[dd * 3 * hn * hn:(dd + 1) * 3 * hn * hn]
        B = b[dd * 6 * hn:(dd + 1) * 6 * hn]
        for n in range(nb):
            h = h0[(dd * nb + n) * hn:(dd * nb + n + 1) * hn]
            L = lens[n]
            steps = range(L - 1, -1, -1) if dd == 1 else range(L)
            for t in steps:
                xt = x[(t * nb + n) * ni:(t * nb + n + 1) * ni]
                def lin(g, use_h):
                    v = B[g] + sum(xt[k] * W[g * ni + k] for k in range(ni))
                    if use_h:
                        v += B[3 * hn + g] + sum(h[k] * R[g * hn + k]
                                                 for k in range(hn))
                    return v
                z = [sig(lin(j, True)) for j in range(hn)]
                rr = [sig(lin(hn + j, True)) for j in range(hn)]
                hh = []
                for j in range(hn):
                    g = 2 * hn + j
                    rh = B[3 * hn + g] + sum(h[k] * R[g * hn + k]
                                             for k in range(hn))
                    hh.append(math.tanh(lin(g, False) + rr[j] * rh))
                h = [(1 - z[j]) * hh[j] + z[j] * h[j] for j in range(hn)]
                for j in range(hn):
                    y[((t * d + dd) * nb + n) * hn + j] = h[j]
            for j in range(hn):
                yh[(dd * nb + n) * hn + j] = h[j]
    attrs = (ld(5, ld(1, "hidden_size") + vint(3, hn) + vint(20, 2)) +
             ld(5, ld(1, "linear_before_reset") + vint(3, 1) + vint(20, 2)) +
             ld(5, ld(1, "direction") + ld(4, "bidirectional") + vint(20, 3)))
    graph = (ld(1, node("GRU", ["x", "w", "r", "b", "lens", "h0"], ["y", "yh"],
                        "gru", attrs)) +
             ld(2, "gru_lbr_bidirectional") +
             ld(5, tensor("w", [d, 3 * hn, ni], w)) +
             ld(5, tensor("r", [d, 3 * hn, hn], r)) +
             ld(5, tensor("b", [d, 6 * hn], b)) +
             ld(5, int_tensor("lens", [nb], lens, INT32)) +
             ld(5, tensor("h0", [d, nb, hn], h0)) +
             ld(11, value_info("x", [seq, nb, ni])) +
             ld(12, value_info("y", [seq, d, nb, hn])) +
             ld(12, value_info("yh", [d, nb, hn])))
    write_case(out, "test_gru_lbr_bidirectional", graph,
               [tensor("x", [seq, nb, ni], x)],
               [tensor("y", [seq, d, nb, hn], y), tensor("yh", [d, nb, hn], yh)])


def matmulinteger_batch(out):
    """MatMulInteger with numpy batch broadcasting ([2,1,3,4] x [3,4,2] ->
    [2,3,3,2]), uint8 A with a zero point per row, int8 B with one per
    column: what the upstream test (2-D, scalar zero points) leaves out."""
    ad, bd, yd = [2, 1, 3, 4], [3, 4, 2], [2, 3, 3, 2]
    a = [(i * 37 + 11) % 256 for i in range(24)]
    b = [(i * 53 + 7) % 256 - 128 for i in range(24)]
    az, bz = [3, 200, 128], [-5, 17]
    y = []
    for p in range(2):
        for q in range(3):
            for i in range(3):
                for j in range(2):
                    y.append(sum((a[(p * 3 + i) * 4 + t] - az[i]) *
                                 (b[(q * 4 + t) * 2 + j] - bz[j])
                                 for t in range(4)))
    graph = (ld(1, node("MatMulInteger", ["a", "b", "az", "bz"], ["y"],
                        "mmi")) +
             ld(2, "matmulinteger_batch") +
             ld(5, int_tensor("az", [3], az, UINT8)) +
             ld(5, int_tensor("bz", [2], bz, INT8)) +
             ld(11, value_info("a", ad, UINT8)) +
             ld(11, value_info("b", bd, INT8)) +
             ld(12, value_info("y", yd, INT32)))
    write_case(out, "test_matmulinteger_batch", graph,
               [int_tensor("a", ad, a, UINT8), int_tensor("b", bd, b, INT8)],
               [int_tensor("y", yd, y, INT32)])


def f32(v):
    """v rounded to float32, as C's float arithmetic rounds each step."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def qlinearconv_bias(out):
    """QLinearConv with an int32 bias, per-channel w_scale and
    w_zero_point, int8 x and w, uint8 y, stride 1 and pads 1; expected
    values by the definition with ONNX Runtime's f32 requantization
    (multiplier x_scale * w_scale / y_scale, then (sum + bias) times it,
    rounded half to even, plus y_zero_point, saturated)."""
    xd, wd, yd = [1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 4, 4]
    x = [(i * 29 + 5) % 256 - 128 for i in range(32)]
    w = [(i * 41 + 3) % 256 - 128 for i in range(54)]
    xs, xz = f32(0.0125), -3
    ws, wz = [f32(0.002), f32(0.0035), f32(0.0011)], [0, 5, -7]
    ys, yz = f32(0.05), 128
    bias = [100, -2500, 7]
    y = []
    for oc in range(3):
        mult = f32(f32(xs * ws[oc]) / ys)
        for i in range(4):
            for j in range(4):
                acc = 0
                for ic in range(2):
                    for u in range(3):
                        for v in range(3):
                            a, b = i + u - 1, j + v - 1
                            if 0 <= a < 4 and 0 <= b < 4:
                                acc += ((x[(ic * 4 + a) * 4 + b] - xz) *
                                        (w[((oc * 2 + ic) * 3 + u) * 3 + v] -
                                         wz[oc]))
                q = round(f32(f32(acc + bias[oc]) * mult)) + yz
                y.append(min(255, max(0, q)))
    attrs = (ld(5, ld(1, "pads") + b"".join(vint(8, 1) for _ in range(4)) +
                vint(20, 7)) +
             ld(5, ld(1, "kernel_shape") + vint(8, 3) + vint(8, 3) +
                vint(20, 7)))
    graph = (ld(1, node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz",
                                        "ys", "yz", "bias"], ["y"], "qconv",
                        attrs)) +
             ld(2, "qlinearconv_bias") +
             ld(5, int_tensor("xs", [], [xs], FLOAT)) +
             ld(5, int_tensor("xz", [], [xz], INT8)) +
             ld(5, int_tensor("w", wd, w, INT8)) +
             ld(5, int_tensor("ws", [3], ws, FLOAT)) +
             ld(5, int_tensor("wz", [3], wz, INT8)) +
             ld(5, int_tensor("ys", [], [ys], FLOAT)) +
             ld(5, int_tensor("yz", [], [yz], UINT8)) +
             ld(5, int_tensor("bias", [3], bias, INT32)) +
             ld(11, value_info("x", xd, INT8)) +
             ld(12, value_info("y", yd, UINT8)))
    write_case(out, "test_qlinearconv_bias", graph,
               [int_tensor("x", xd, x, INT8)], [int_tensor("y", yd, y, UINT8)])


def topk_ties(out):
    """TopK k=3 largest along axis 1 and k=2 smallest along axis 0 of a
    [3, 5] tensor with ties, and ArgMax/ArgMin along axis 1; expected
    values by a stable sort (equal values keep the lower index first)."""
    rows = [[1.0, 3.0, 3.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5, 0.5],
            [2.0, -1.0, 2.0, -1.0, 0.0]]
    x = [v for r in rows for v in r]
    v1, i1 = [], []
    for r in rows:
        order = sorted(range(5), key=lambda j: (-r[j], j))[:3]
        i1 += order
        v1 += [r[j] for j in order]
    v2, i2 = [0.0] * 10, [0] * 10
    for c in range(5):
        col = [rows[i][c] for i in range(3)]
        order = sorted(range(3), key=lambda i: (col[i], i))[:2]
        for k, i in enumerate(order):
            v2[k * 5 + c], i2[k * 5 + c] = col[i], i
    amax = [max(range(5), key=lambda j: (r[j], -j)) for r in rows]
    amin = [min(range(5), key=lambda j: (r[j], j)) for r in rows]
    axis = lambda a: ld(5, ld(1, "axis") + vint(3, a) + vint(20, 2))
    largest0 = ld(5, ld(1, "largest") + vint(3, 0) + vint(20, 2))
    keep0 = ld(5, ld(1, "keepdims") + vint(3, 0) + vint(20, 2))
    graph = (ld(1, node("TopK", ["x", "k3"], ["v1", "i1"], "top", axis(1))) +
             ld(1, node("TopK", ["x", "k2"], ["v2", "i2"], "bottom",
                        axis(0) + largest0)) +
             ld(1, node("ArgMax", ["x"], ["amax"], "amax", axis(1) + keep0)) +
             ld(1, node("ArgMin", ["x"], ["amin"], "amin", axis(1) + keep0)) +
             ld(2, "topk_ties") +
             ld(5, int_tensor("k3", [1], [3], INT64)) +
             ld(5, int_tensor("k2", [1], [2], INT64)) +
             ld(11, value_info("x", [3, 5])) +
             ld(12, value_info("v1", [3, 3])) +
             ld(12, value_info("i1", [3, 3], INT64)) +
             ld(12, value_info("v2", [2, 5])) +
             ld(12, value_info("i2", [2, 5], INT64)) +
             ld(12, value_info("amax", [3], INT64)) +
             ld(12, value_info("amin", [3], INT64)))
    write_case(out, "test_topk_ties", graph, [tensor("x", [3, 5], x)],
               [tensor("v1", [3, 3], v1), int_tensor("i1", [3, 3], i1, INT64),
                tensor("v2", [2, 5], v2), int_tensor("i2", [2, 5], i2, INT64),
                int_tensor("amax", [3], amax, INT64),
                int_tensor("amin", [3], amin, INT64)])


def legacy_broadcast_opset6(out):
    """Broadcasting as ONNX had it before opset 7, after a 1x1 Conv of
    output [1, 3, 3, 3]: Add(c, b[3], broadcast=1, axis=1) adds per
    channel, PRelu's slope of 3 values is per channel, and Mul(p,
    m[3, 3], broadcast=1, axis=1) aligns m with (C, H). numpy's rules
    would align each with the last axes instead, which give other values
    here; the fuse pass must not take them as epilogues either."""
    xd, wd, yd = [1, 2, 3, 3], [3, 2, 1, 1], [1, 3, 3, 3]
    x = [0.25 * i - 2.0 for i in range(18)]
    w = [1.0, -0.5, -1.0, 0.25, 0.5, 2.0]
    b = [0.125, -0.25, 0.5]
    slope = [0.5, -2.0, 0.25]
    m = [1.0, 2.0, -1.0, 0.5, 4.0, -2.0, 3.0, -0.25, 1.5]
    y, z = [], []
    for c in range(3):
        for p in range(9):
            v = w[2 * c] * x[p] + w[2 * c + 1] * x[9 + p] + b[c]
            v = v if v >= 0 else slope[c] * v
            y.append(v)
            z.append(v * m[3 * c + p // 3])
    bc_axis1 = (ld(5, ld(1, "broadcast") + vint(3, 1) + vint(20, 2)) +
                ld(5, ld(1, "axis") + vint(3, 1) + vint(20, 2)))
    graph = (ld(1, node("Conv", ["x", "w"], ["c"], "conv")) +
             ld(1, node("Add", ["c", "b"], ["a"], "bias", bc_axis1)) +
             ld(1, node("PRelu", ["a", "slope"], ["y"], "prelu")) +
             ld(1, node("Mul", ["y", "m"], ["z"], "scale", bc_axis1)) +
             ld(2, "legacy_broadcast_opset6") + ld(5, tensor("w", wd, w)) +
             ld(5, tensor("b", [3], b)) + ld(5, tensor("slope", [3], slope)) +
             ld(5, tensor("m", [3, 3], m)) +
             ld(11, value_info("x", xd)) + ld(12, value_info("y", yd)) +
             ld(12, value_info("z", yd)))
    write_case(out, "test_legacy_broadcast_opset6", graph,
               [tensor("x", xd, x)], [tensor("y", yd, y), tensor("z", yd, z)],
               opset=6)


def legacy_attrs_opset1(out):
    """Attributes as opset 1 wrote them: Pad's paddings (pads from opset
    2), a Concat without an axis (1 before opset 4; 0 is no default at
    all later), Cast's to as a type name (an enum from opset 6),
    Upsample's height_scale and width_scale (scales from opset 7); and
    ImageScaler (opsets 1 to 9), a bias per channel."""
    xd, qd, cd = [2, 3], [2, 2], [2, 6]
    x = [float(v) for v in (-3, 0, 4, 7, -1, 2)]
    q = [float(v) for v in (5, -6, 8, 9)]
    c = []
    for r in range(2):
        c += [2.0] + x[3 * r:3 * r + 3] + q[2 * r:2 * r + 2]
    paddings = (ld(5, ld(1, "paddings") + b"".join(
        vint(8, v) for v in (0, 1, 0, 0)) + vint(20, 7)) +
        ld(5, ld(1, "value") + key(2, 5) + struct.pack("<f", 2.0) +
           vint(20, 1)))
    to = ld(5, ld(1, "to") + ld(4, "INT32") + vint(20, 3))
    ud, vd = [1, 1, 2, 2], [1, 1, 4, 6]
    u = [1.0, -2.0, 3.5, 4.0]
    v = [u[2 * (i // 2) + j // 3] for i in range(4) for j in range(6)]
    scale = lambda n, f: ld(5, ld(1, n) + key(2, 5) + struct.pack("<f", f) +
                            vint(20, 1))
    nearest = ld(5, ld(1, "mode") + ld(4, "nearest") + vint(20, 3))
    bias = [0.5, -1.0, 2.0, 0.25, -3.0, 1.0]
    sc = [e * 0.5 + bias[i % 6] for i, e in enumerate(c)]
    scaler = (scale("scale", 0.5) +
              ld(5, ld(1, "bias") + b"".join(
                  key(7, 5) + struct.pack("<f", v) for v in bias) +
                 vint(20, 6)))
    graph = (ld(1, node("Pad", ["x"], ["p"], "pad", paddings)) +
             ld(1, node("Concat", ["p", "q"], ["c"], "concat")) +
             ld(1, node("Cast", ["c"], ["y"], "cast", to)) +
             ld(1, node("Upsample", ["u"], ["v"], "upsample",
                        scale("height_scale", 2.0) +
                        scale("width_scale", 3.0) + nearest)) +
             ld(1, node("ImageScaler", ["c"], ["s"], "scaler", scaler)) +
             ld(2, "legacy_attrs_opset1") +
             ld(11, value_info("x", xd)) + ld(11, value_info("q", qd)) +
             ld(11, value_info("u", ud)) +
             ld(12, value_info("c", cd)) +
             ld(12, value_info("y", cd, INT32)) +
             ld(12, value_info("v", vd)) + ld(12, value_info("s", cd)))
    write_case(out, "test_legacy_attrs_opset1", graph,
               [tensor("x", xd, x), tensor("q", qd, q), tensor("u", ud, u)],
               [tensor("c", cd, c),
                int_tensor("y", cd, [int(e) for e in c], INT32),
                tensor("v", vd, v), tensor("s", cd, sc)], opset=1)


def ext_tensor(name, dims, elem, location, offset, length=None):
    """A TensorProto whose data is in the file location (relative to the
    model's folder) at offset: external_data entries and data_location
    EXTERNAL."""
    entry = lambda k, v: ld(13, ld(1, k) + ld(2, v))
    out = b"".join(vint(1, d) for d in dims) + vint(2, elem) + ld(8, name)
    out += entry("location", location) + entry("offset", str(offset))
    if length is not None:
        out += entry("length", str(length))
    return out + vint(14, 1)


def external_data(out, variant=None):
    """Weights in another file (data/w.bin beside the model), as large
    models are saved: y = Reshape(x @ w + b, shape), w [3, 4] after 16
    bytes of something else, b [4], and the Reshape's shape [4, 2] (int64,
    with no length entry: its dims give it), whose values shape inference
    reads from that file. A variant breaks one thing for the bad-input tests."""
    xd, wd, yd = [2, 3], [3, 4], [4, 2]
    x = [0.5 * i - 1.0 for i in range(6)]
    w = [0.25 * i - 1.5 for i in range(12)]
    b = [1.0, -2.0, 0.5, 4.0]
    z = [sum(x[3 * r + k] * w[4 * k + j] for k in range(3)) + b[j]
         for r in range(2) for j in range(4)]
    blob = (b"\x7f" * 16 + struct.pack("<12f", *w) + struct.pack("<4f", *b) +
            struct.pack("<2q", 4, 2))
    loc, w_off, b_len = "data/w.bin", 16, 16
    if variant == "escape":
        loc = "../w.bin"
    elif variant == "absolute":
        loc = "/etc/hostname"
    elif variant == "missing":
        loc = "data/none.bin"
    elif variant == "short":
        blob = blob[:60]
    elif variant == "length":
        b_len = 12
    graph = (ld(1, node("MatMul", ["x", "w"], ["m"], "matmul")) +
             ld(1, node("Add", ["m", "b"], ["z"], "bias")) +
             ld(1, node("Reshape", ["z", "shape"], ["y"], "reshape")) +
             ld(2, "external_data") +
             ld(5, ext_tensor("w", wd, FLOAT, loc, w_off, 48)) +
             ld(5, ext_tensor("b", [4], FLOAT, loc, 64, b_len)) +
             ld(5, ext_tensor("shape", [2], INT64, loc, 80)) +
             ld(11, value_info("x", xd)) + ld(12, value_info("y", yd)))
    name = "test_external_data" + ("_" + variant if variant else "")
    write_case(out, name, graph, [tensor("x", xd, x)], [tensor("y", yd, z)])
    write(os.path.join(out, name, "data", "w.bin"), blob)


def group_norm(x, n, c, rest, groups, scale, bias, per_channel):
    """GroupNormalization of a flat [n, c, rest] list, epsilon 1e-5."""
    y, cg = [], c // groups
    for b in range(n):
        for g in range(groups):
            part = x[(b * c + g * cg) * rest:(b * c + (g + 1) * cg) * rest]
            mu = sum(part) / len(part)
            den = math.sqrt(sum((v - mu) ** 2 for v in part) / len(part) +
                            1e-5)
            for i, v in enumerate(part):
                k = g * cg + i // rest if per_channel else g
                y.append((v - mu) / den * scale[k] + bias[k])
    return y


def newer_opsets(out):
    """What opsets 18 to 21 changed, in one opset-21 model: ReduceMean's
    axes as an input, Split's num_outputs, GroupNormalization with scale
    and bias per channel (21), Pad with axes in wrap mode, Resize with
    axes, Mish, BitwiseAnd and BitwiseNot, ReduceMax of bool (20), AveragePool with
    dilations (19), LpPool with ceil_mode (18), GlobalLpPool and
    LpNormalization (a slice of norm 0 gives zeros, as ONNX Runtime does);
    and an opset-18 model whose GroupNormalization scales per group."""
    ints = lambda n, v: ld(5, ld(1, n) + b"".join(vint(8, e) for e in v) +
                           vint(20, 7))
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    text = lambda n, v: ld(5, ld(1, n) + ld(4, v) + vint(20, 3))
    x = [0.25 * i - 2.5 for i in range(24)]  # [2, 3, 4]
    r = [sum(x[b * 12 + k * 4 + j] for k in range(3)) / 3
         for b in range(2) for j in range(4)]
    s0 = [x[i] for i in range(24) if i % 4 < 2]
    s1 = [x[i] for i in range(24) if i % 4 >= 2]
    g = [math.sin(i) * 2 for i in range(24)]  # [2, 4, 3]
    gs, gb = [1.5, -0.5, 2.0, 0.5], [0.25, 1.0, -1.0, 0.0]
    gn = group_norm(g, 2, 4, 3, 2, gs, gb, True)
    p = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # [2, 3]
    pw = [p[3 * row + (j - 1) % 3] for row in range(2) for j in range(6)]
    u = [1.0, -2.0, 3.5, 4.0]  # [1, 1, 2, 2]
    uo = [u[2 * (i // 2) + j // 3] for i in range(4) for j in range(6)]
    m = [-3.0, -0.5, 0.0, 1.5, 40.0]
    mish = [v * math.tanh(v if v > 30 else math.log1p(math.exp(v))) for v in m]
    ia, ib = [1, 6, 12, -1], [3, 5, 10, 7]
    band = [a & b for a, b in zip(ia, ib)]
    bnot = [~a for a in ia]
    ub = [0, 5, 255]
    unot = [255 - v for v in ub]
    q = [False, False, True, False]
    a = [math.cos(i) for i in range(25)]  # [1, 1, 5, 5]
    ap = [sum(a[(2 * 0 + i + di) * 5 + j + dj] for di in (0, 2)
              for dj in (0, 2)) / 4 for i in range(3) for j in range(3)]
    lp = [sum(abs(a[r * 5 + q]) ** 3 for r in range(2 * i, min(2 * i + 2, 5))
              for q in range(2 * j, min(2 * j + 2, 5))) ** (1 / 3)
          for i in range(3) for j in range(3)]
    glp = [math.sqrt(sum(v * v for v in a))]
    z = [0.0, 0.0, 0.0, 3.0, -4.0, 0.0]  # [2, 3]
    zn2 = z[:3] + [v / 5 for v in z[3:]]
    zn1 = z[:3] + [v / 7 for v in z[3:]]
    graph = (ld(1, node("ReduceMean", ["x", "axes"], ["r"], "mean")) +
             ld(1, node("Split", ["x"], ["s0", "s1"], "split",
                        one("axis", 2) + one("num_outputs", 2))) +
             ld(1, node("GroupNormalization", ["g", "gs", "gb"], ["gn"],
                        "gn", one("num_groups", 2))) +
             ld(1, node("Pad", ["p", "pads", "", "pad_axes"], ["pw"], "pad",
                        text("mode", "wrap"))) +
             ld(1, node("Resize", ["u", "", "scales"], ["uo"], "resize",
                        ints("axes", [2, 3]))) +
             ld(1, node("Mish", ["m"], ["mish"], "mish")) +
             ld(1, node("BitwiseAnd", ["ia", "ib"], ["band"], "band")) +
             ld(1, node("BitwiseNot", ["ia"], ["bnot"], "bnot")) +
             ld(1, node("BitwiseNot", ["ub"], ["unot"], "unot")) +
             ld(1, node("ReduceMax", ["q"], ["qmax"], "any",
                        one("keepdims", 0))) +
             ld(1, node("AveragePool", ["a"], ["ap"], "pool",
                        ints("kernel_shape", [2, 2]) +
                        ints("dilations", [2, 2]))) +
             ld(1, node("LpPool", ["a"], ["lp"], "lppool",
                        ints("kernel_shape", [2, 2]) +
                        ints("strides", [2, 2]) + one("p", 3) +
                        one("ceil_mode", 1))) +
             ld(1, node("GlobalLpPool", ["a"], ["glp"], "glppool")) +
             ld(1, node("LpNormalization", ["z"], ["zn2"], "l2",
                        one("axis", 1))) +
             ld(1, node("LpNormalization", ["z"], ["zn1"], "l1",
                        one("p", 1))) +
             ld(2, "newer_opsets") +
             ld(5, int_tensor("axes", [1], [1], INT64)) +
             ld(5, tensor("gs", [4], gs)) + ld(5, tensor("gb", [4], gb)) +
             ld(5, int_tensor("pads", [2], [1, 2], INT64)) +
             ld(5, int_tensor("pad_axes", [1], [1], INT64)) +
             ld(5, tensor("scales", [2], [2.0, 3.0])) +
             ld(11, value_info("x", [2, 3, 4])) +
             ld(11, value_info("g", [2, 4, 3])) +
             ld(11, value_info("p", [2, 3])) +
             ld(11, value_info("u", [1, 1, 2, 2])) +
             ld(11, value_info("m", [5])) +
             ld(11, value_info("ia", [4], INT32)) +
             ld(11, value_info("ib", [4], INT32)) +
             ld(11, value_info("q", [2, 2], BOOL)) +
             ld(11, value_info("a", [1, 1, 5, 5])) +
             ld(11, value_info("z", [2, 3])) +
             ld(11, value_info("ub", [3], UINT8)) +
             ld(12, value_info("r", [2, 1, 4])) +
             ld(12, value_info("s0", [2, 3, 2])) +
             ld(12, value_info("s1", [2, 3, 2])) +
             ld(12, value_info("gn", [2, 4, 3])) +
             ld(12, value_info("pw", [2, 6])) +
             ld(12, value_info("uo", [1, 1, 4, 6])) +
             ld(12, value_info("mish", [5])) +
             ld(12, value_info("band", [4], INT32)) +
             ld(12, value_info("qmax", [], BOOL)) +
             ld(12, value_info("ap", [1, 1, 3, 3])) +
             ld(12, value_info("lp", [1, 1, 3, 3])) +
             ld(12, value_info("glp", [1, 1, 1, 1])) +
             ld(12, value_info("zn2", [2, 3])) +
             ld(12, value_info("zn1", [2, 3])) +
             ld(12, value_info("bnot", [4], INT32)) +
             ld(12, value_info("unot", [3], UINT8)))
    write_case(out, "test_newer_opsets", graph,
               [tensor("x", [2, 3, 4], x), tensor("g", [2, 4, 3], g),
                tensor("p", [2, 3], p), tensor("u", [1, 1, 2, 2], u),
                tensor("m", [5], m), int_tensor("ia", [4], ia, INT32),
                int_tensor("ib", [4], ib, INT32),
                int_tensor("q", [2, 2], q, BOOL),
                tensor("a", [1, 1, 5, 5], a), tensor("z", [2, 3], z),
                int_tensor("ub", [3], ub, UINT8)],
               [tensor("r", [2, 1, 4], r), tensor("s0", [2, 3, 2], s0),
                tensor("s1", [2, 3, 2], s1), tensor("gn", [2, 4, 3], gn),
                tensor("pw", [2, 6], pw), tensor("uo", [1, 1, 4, 6], uo),
                tensor("mish", [5], mish),
                int_tensor("band", [4], band, INT32),
                int_tensor("qmax", [], [any(q)], BOOL),
                tensor("ap", [1, 1, 3, 3], ap), tensor("lp", [1, 1, 3, 3], lp),
                tensor("glp", [1, 1, 1, 1], glp), tensor("zn2", [2, 3], zn2),
                tensor("zn1", [2, 3], zn1),
                int_tensor("bnot", [4], bnot, INT32),
                int_tensor("unot", [3], unot, UINT8)], opset=21)
    gs18, gb18 = [1.5, -0.5], [0.25, 1.0]
    graph = (ld(1, node("GroupNormalization", ["g", "gs", "gb"], ["gn"],
                        "gn", one("num_groups", 2))) +
             ld(2, "group_norm_18") + ld(5, tensor("gs", [2], gs18)) +
             ld(5, tensor("gb", [2], gb18)) +
             ld(11, value_info("g", [2, 4, 3])) +
             ld(12, value_info("gn", [2, 4, 3])))
    write_case(out, "test_group_norm_18", graph, [tensor("g", [2, 4, 3], g)],
               [tensor("gn", [2, 4, 3],
                       group_norm(g, 2, 4, 3, 2, gs18, gb18, False))],
               opset=18)


def rms_norm(x, outer, inner, scale, eps=1e-5):
    """RMSNormalization of `outer` rows of `inner` values."""
    y = []
    for r in range(outer):
        row = x[r * inner:(r + 1) * inner]
        inv = 1 / math.sqrt(sum(v * v for v in row) / inner + eps)
        y += [v * inv * scale[i] for i, v in enumerate(row)]
    return y


def rotary(x, dims, heads, rot, interleaved, cos, sin, pos):
    """RotaryEmbedding of a flat x: dims [B, H, S, D] (4-D) or [B, S,
    H x D] (3-D, `heads` heads); cos and sin rows of rot / 2 values,
    row pos[b S + s] (or b S + s when pos is None)."""
    if len(dims) == 4:
        b_n, h_n, s_n, d = dims
        sb, sh, ss = h_n * s_n * d, s_n * d, d
    else:
        b_n, s_n, hidden = dims
        h_n, d = heads, hidden // heads
        sb, sh, ss = s_n * hidden, d, hidden
    half, y = rot // 2, list(x)
    for b in range(b_n):
        for s in range(s_n):
            row = pos[b * s_n + s] if pos else b * s_n + s
            for h in range(h_n):
                at = b * sb + s * ss + h * sh
                for i in range(half):
                    i1 = at + (2 * i if interleaved else i)
                    i2 = at + (2 * i + 1 if interleaved else i + half)
                    c, n = cos[row * half + i], sin[row * half + i]
                    y[i1] = c * x[i1] - n * x[i2]
                    y[i2] = n * x[i1] + c * x[i2]
    return y


def attention(q, k, v, dims, heads=(0, 0), mask=None, mask_dims=None,
              past=None, causal=False, scale=None, softcap=0.0, nonpad=None):
    """Attention of flat Q, K, V of dims (Q's, K's, V's): 3-D with heads
    (q_heads, kv_heads), or 4-D. past: (past_key, past_value, length).
    mask: flat bool or float values of mask_dims (right-aligned on [B,
    q_heads, q_seq, total], its last dim up to total). Returns Y (Q's
    layout), present_key, present_value (flat [B, kv_heads, total, dim])
    and the scaled scores and the probabilities ([B, q_heads, q_seq,
    total]). nonpad: opset 24's nonpad_kv_seqlen (keys per batch; the
    causal cut bottom-right aligned when there is no past)."""
    def rows(t, tdims, nh):
        """t as [b][h][s] -> list of the head's values"""
        if len(tdims) == 3:
            b_n, s_n, hid = tdims
            d = hid // nh
            return [[[t[b * s_n * hid + s * hid + h * d:][:d]
                      for s in range(s_n)] for h in range(nh)]
                    for b in range(b_n)]
        b_n, nh, s_n, d = tdims
        return [[[t[((b * nh + h) * s_n + s) * d:][:d] for s in range(s_n)]
                 for h in range(nh)] for b in range(b_n)]
    qd, kd, vd = dims
    three = len(qd) == 3
    qh, kvh = heads if three else (qd[1], kd[1])
    Q, K, V = rows(q, qd, qh), rows(k, kd, kvh), rows(v, vd, kvh)
    b_n, sq = len(Q), len(Q[0][0])
    plen = past[2] if past else 0
    if past:
        pk = rows(past[0], [b_n, kvh, plen, len(K[0][0][0])], kvh)
        pv = rows(past[1], [b_n, kvh, plen, len(V[0][0][0])], kvh)
        K = [[pk[b][h] + K[b][h] for h in range(kvh)] for b in range(b_n)]
        V = [[pv[b][h] + V[b][h] for h in range(kvh)] for b in range(b_n)]
    total, dh = len(K[0][0]), len(Q[0][0][0])
    if scale is None:
        scale = 1 / math.sqrt(dh)
    full = [b_n, qh, sq, total]

    def bias(idx):
        if nonpad and idx[3] >= nonpad[idx[0]]:
            return -math.inf
        off = nonpad[idx[0]] - sq if nonpad and not past else plen
        if causal and idx[3] > idx[2] + off:
            return -math.inf
        if mask is None:
            return 0.0
        if idx[3] >= mask_dims[-1]:
            return -math.inf
        at, stride = 0, 1
        for ax in range(3, 3 - len(mask_dims), -1):
            n = mask_dims[ax - 4 + len(mask_dims)]
            at += (idx[ax] if n == full[ax] or ax == 3 else 0) * stride
            stride *= n
        m = mask[at]
        if isinstance(m, bool):
            return 0.0 if m else -math.inf
        return m
    y4, qk, probs = [], [], []
    for b in range(b_n):
        for h in range(qh):
            kvi = h // (qh // kvh)
            for i in range(sq):
                sc = []
                for j in range(total):
                    s = sum(a * c for a, c in zip(Q[b][h][i], K[b][kvi][j]))
                    s *= scale
                    if softcap > 0:
                        s = softcap * math.tanh(s / softcap)
                    sc.append(s)
                qk += sc
                w = [s + bias([b, h, i, j]) for j, s in enumerate(sc)]
                mx = max(w)
                e = [math.exp(t - mx) for t in w]
                p = [t / sum(e) for t in e]
                probs += p
                y4.append([sum(p[j] * V[b][kvi][j][c] for j in range(total))
                           for c in range(len(V[0][0][0]))])
    dv = len(y4[0])
    if three:  # [b][h][i] -> [b, i, h x dv]
        y = [y4[(b * qh + h) * sq + i][c] for b in range(b_n)
             for i in range(sq) for h in range(qh) for c in range(dv)]
    else:
        y = [t for r in y4 for t in r]
    pres_k = [t for b in range(b_n) for h in range(kvh) for r in K[b][h]
              for t in r]
    pres_v = [t for b in range(b_n) for h in range(kvh) for r in V[b][h]
              for t in r]
    return y, pres_k, pres_v, qk, probs


def opset23(out):
    """The transformer ops of opset 23 in one model: RMSNormalization
    (the last axis; axis 1 with a [3, 4] scale and epsilon 1e-3; one
    scale broadcast; and opset 17's LayerNormalization with one scale and
    one bias),
    RotaryEmbedding (4-D with position ids and a partial rotary dim; 3-D
    interleaved with num_heads and caches per position), Attention (4-D
    with a float mask broadcast over the heads and the scaled scores out;
    3-D grouped-query with a past cache, is_causal and the present
    caches; a bool mask, a softcap and the probabilities out). Every
    input a float: the integer and bool
    operands are initializers, so the ONNX Runtime comparison
    (tests/ort/test_ort.sh) can feed the runner's seeded inputs."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    flt = lambda n, v: ld(5, ld(1, n) + key(2, 5) + struct.pack("<f", v) +
                          vint(20, 1))
    vals = lambda n, seed: [f32(math.sin(seed + 0.7 * i)) for i in range(n)]
    ins = {"x": [2, 3, 4], "xr": [1, 2, 3, 6], "xr3": [2, 3, 8],
           "q4": [1, 2, 3, 4], "k4": [1, 2, 5, 4], "v4": [1, 2, 5, 3],
           "q3": [2, 3, 8], "k3": [2, 3, 4], "v3": [2, 3, 6],
           "pk": [2, 2, 2, 2], "pv": [2, 2, 2, 3],
           "qm": [1, 1, 2, 4], "km": [1, 1, 5, 4], "vm": [1, 1, 5, 4]}
    data = {}
    for seed, (name, dims) in enumerate(ins.items()):
        data[name] = vals(math.prod(dims), seed)
    rs = [f32(0.5 + 0.25 * i) for i in range(4)]
    rs2 = [f32(1.5 - 0.125 * i) for i in range(12)]
    cos_a = [f32(math.cos(0.3 * i)) for i in range(10)]  # [5, 2]
    sin_a = [f32(math.sin(0.3 * i)) for i in range(10)]
    pos = [4, 0, 2]
    cos_b = [f32(math.cos(0.2 * i + 0.1)) for i in range(12)]  # [2, 3, 2]
    sin_b = [f32(math.sin(0.2 * i + 0.1)) for i in range(12)]
    mf = [f32(-0.5 * (i % 4)) for i in range(15)]  # [1, 3, 5]
    mb = [True, False, True, False, True, False, True, True, True, False]
    d = data
    y_rms = rms_norm(d["x"], 6, 4, rs)
    y_rms2 = rms_norm(d["x"], 2, 12, rs2, eps=f32(1e-3))
    y_rms3 = rms_norm(d["x"], 6, 4, [f32(1.25)] * 4)
    y_ln1 = []  # LayerNormalization with one scale and one bias
    for r in range(6):
        row = d["x"][4 * r:4 * r + 4]
        mu = sum(row) / 4
        inv = 1 / math.sqrt(sum((v - mu) ** 2 for v in row) / 4 + 1e-5)
        y_ln1 += [(v - mu) * inv * 0.75 - 0.5 for v in row]
    y_rope4 = rotary(d["xr"], [1, 2, 3, 6], 0, 4, False, cos_a, sin_a, pos)
    y_rope3 = rotary(d["xr3"], [2, 3, 8], 2, 4, True, cos_b, sin_b, None)
    att4 = attention(d["q4"], d["k4"], d["v4"],
                     ([1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 3]), mask=mf,
                     mask_dims=[1, 3, 5], scale=f32(0.3))
    att3 = attention(d["q3"], d["k3"], d["v3"],
                     ([2, 3, 8], [2, 3, 4], [2, 3, 6]), heads=(4, 2),
                     past=(d["pk"], d["pv"], 2), causal=True)
    attm = attention(d["qm"], d["km"], d["vm"],
                     ([1, 1, 2, 4], [1, 1, 5, 4], [1, 1, 5, 4]), mask=mb,
                     mask_dims=[2, 5], softcap=2.0)
    outs = [("y_rms", [2, 3, 4], y_rms), ("y_rms2", [2, 3, 4], y_rms2),
            ("y_rms3", [2, 3, 4], y_rms3), ("y_ln1", [2, 3, 4], y_ln1),
            ("y_rope4", [1, 2, 3, 6], y_rope4),
            ("y_rope3", [2, 3, 8], y_rope3),
            ("y_att4", [1, 2, 3, 3], att4[0]), ("qk4", [1, 2, 3, 5], att4[3]),
            ("y_att3", [2, 3, 12], att3[0]),
            ("present_k", [2, 2, 5, 2], att3[1]),
            ("present_v", [2, 2, 5, 3], att3[2]),
            ("y_attm", [1, 1, 2, 4], attm[0]),
            ("probs", [1, 1, 2, 5], attm[4])]
    graph = (ld(1, node("RMSNormalization", ["x", "rs"], ["y_rms"], "rms")) +
             ld(1, node("RMSNormalization", ["x", "rs2"], ["y_rms2"], "rms2",
                        one("axis", 1) + flt("epsilon", 1e-3))) +
             ld(1, node("RMSNormalization", ["x", "rs3"], ["y_rms3"],
                        "rms3")) +
             ld(1, node("LayerNormalization", ["x", "ls1", "lb1"], ["y_ln1"],
                        "ln1")) +
             ld(1, node("RotaryEmbedding", ["xr", "cos_a", "sin_a", "pos"],
                        ["y_rope4"], "rope4",
                        one("rotary_embedding_dim", 4))) +
             ld(1, node("RotaryEmbedding", ["xr3", "cos_b", "sin_b"],
                        ["y_rope3"], "rope3",
                        one("interleaved", 1) + one("num_heads", 2))) +
             ld(1, node("Attention", ["q4", "k4", "v4", "mf"],
                        ["y_att4", "", "", "qk4"], "att4",
                        flt("scale", 0.3))) +
             ld(1, node("Attention", ["q3", "k3", "v3", "", "pk", "pv"],
                        ["y_att3", "present_k", "present_v"], "att3",
                        one("is_causal", 1) + one("q_num_heads", 4) +
                        one("kv_num_heads", 2))) +
             ld(1, node("Attention", ["qm", "km", "vm", "mb"],
                        ["y_attm", "", "", "probs"], "attm",
                        flt("softcap", 2.0) +
                        one("qk_matmul_output_mode", 3))) +
             ld(2, "opset23") +
             ld(5, tensor("rs", [4], rs)) + ld(5, tensor("rs2", [3, 4], rs2)) +
             ld(5, tensor("rs3", [1], [1.25])) +
             ld(5, tensor("ls1", [1], [0.75])) +
             ld(5, tensor("lb1", [1], [-0.5])) +
             ld(5, tensor("cos_a", [5, 2], cos_a)) +
             ld(5, tensor("sin_a", [5, 2], sin_a)) +
             ld(5, int_tensor("pos", [1, 3], pos, INT64)) +
             ld(5, tensor("cos_b", [2, 3, 2], cos_b)) +
             ld(5, tensor("sin_b", [2, 3, 2], sin_b)) +
             ld(5, tensor("mf", [1, 3, 5], mf)) +
             ld(5, int_tensor("mb", [2, 5], mb, BOOL)) +
             b"".join(ld(11, value_info(n, dims)) for n, dims in ins.items()) +
             b"".join(ld(12, value_info(n, dims)) for n, dims, _ in outs))
    write_case(out, "test_opset23", graph,
               [tensor(n, dims, data[n]) for n, dims in ins.items()],
               [tensor(n, dims, v) for n, dims, v in outs], opset=23)
    # f16: Attention (GQA, causal) and RMSNormalization computed through
    # f32 copies (runtime/ops.c invariant 5); the expected values from the
    # f16-rounded inputs, rounded to f16
    h16 = lambda v: struct.unpack("<e", struct.pack("<e", v))[0]
    hq, hk, hv = ([h16(t) for t in d[n]] for n in ("q3", "k3", "v3"))
    hx, hs = [h16(t) for t in d["x"]], [h16(t) for t in rs]
    ha = attention(hq, hk, hv, ([2, 3, 8], [2, 3, 4], [2, 3, 6]),
                   heads=(4, 2), causal=True)
    hr = rms_norm(hx, 6, 4, hs)
    graph = (ld(1, node("Attention", ["q", "k", "v"], ["y"], "att",
                        one("is_causal", 1) + one("q_num_heads", 4) +
                        one("kv_num_heads", 2))) +
             ld(1, node("RMSNormalization", ["x", "s"], ["n"], "rms")) +
             ld(2, "opset23_f16") +
             ld(5, int_tensor("s", [4], hs, FLOAT16)) +
             ld(11, value_info("q", [2, 3, 8], FLOAT16)) +
             ld(11, value_info("k", [2, 3, 4], FLOAT16)) +
             ld(11, value_info("v", [2, 3, 6], FLOAT16)) +
             ld(11, value_info("x", [2, 3, 4], FLOAT16)) +
             ld(12, value_info("y", [2, 3, 12], FLOAT16)) +
             ld(12, value_info("n", [2, 3, 4], FLOAT16)))
    write_case(out, "test_opset23_f16", graph,
               [int_tensor("q", [2, 3, 8], hq, FLOAT16),
                int_tensor("k", [2, 3, 4], hk, FLOAT16),
                int_tensor("v", [2, 3, 6], hv, FLOAT16),
                int_tensor("x", [2, 3, 4], hx, FLOAT16)],
               [int_tensor("y", [2, 3, 12], [h16(t) for t in ha[0]], FLOAT16),
                int_tensor("n", [2, 3, 4], [h16(t) for t in hr], FLOAT16)],
               opset=23)
    # A mask shorter than the keys: ONNX pads it (the keys after it are
    # masked); ONNX Runtime 1.30 refuses it, so it is a case of its own.
    ms = [True, False, True, False, False, True, True, True]  # [2, 4]
    att = attention(d["qm"], d["km"], d["vm"],
                    ([1, 1, 2, 4], [1, 1, 5, 4], [1, 1, 5, 4]), mask=ms,
                    mask_dims=[2, 4])
    graph = (ld(1, node("Attention", ["qm", "km", "vm", "ms"], ["y"], "att")) +
             ld(2, "attention_short_mask") +
             ld(5, int_tensor("ms", [2, 4], ms, BOOL)) +
             b"".join(ld(11, value_info(n, ins[n])) for n in ("qm", "km", "vm")) +
             ld(12, value_info("y", [1, 1, 2, 4])))
    write_case(out, "test_attention_short_mask", graph,
               [tensor(n, ins[n], d[n]) for n in ("qm", "km", "vm")],
               [tensor("y", [1, 1, 2, 4], att[0])], opset=23)


def opset24(out):
    """Opset 24: Swish (alpha 1 and 0.5), TensorScatter (a KV cache
    updated in place: linear with write indices per batch, circular
    wrapping past the end) and Attention's nonpad_kv_seqlen (4-D, causal
    without a past cache: the causal cut bottom-right aligned per batch).
    The integer operands are initializers (ONNX Runtime comparison)."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    flt = lambda n, v: ld(5, ld(1, n) + key(2, 5) + struct.pack("<f", v) +
                          vint(20, 1))
    text = lambda n, v: ld(5, ld(1, n) + ld(4, v) + vint(20, 3))
    vals = lambda n, seed: [f32(math.sin(seed + 0.9 * i)) for i in range(n)]
    sw = vals(12, 0)
    sw1 = [v / (1 + math.exp(-v)) for v in sw]
    sw5 = [v / (1 + math.exp(-0.5 * v)) for v in sw]
    cache, upd = vals(2 * 2 * 5 * 3, 1), vals(2 * 2 * 2 * 3, 2)  # [2,2,5,3]

    def scatter(w, circular):
        y = list(cache)
        for b in range(2):
            for h in range(2):
                for t in range(2):
                    r = (w[b] + t) % 5 if circular else w[b] + t
                    at = ((b * 2 + h) * 5 + r) * 3
                    src = ((b * 2 + h) * 2 + t) * 3
                    y[at:at + 3] = upd[src:src + 3]
        return y
    q, k, v = vals(2 * 2 * 3 * 4, 3), vals(2 * 2 * 6 * 4, 4), vals(96, 5)
    nonpad = [5, 6]
    att = attention(q, k, v, ([2, 2, 3, 4], [2, 2, 6, 4], [2, 2, 6, 4]),
                    causal=True, nonpad=nonpad)
    outs = [("sw1", [12], sw1), ("sw5", [12], sw5),
            ("lin", [2, 2, 5, 3], scatter([1, 3], False)),
            ("circ", [2, 2, 5, 3], scatter([4, 2], True)),
            ("y", [2, 2, 3, 4], att[0])]
    graph = (ld(1, node("Swish", ["sw"], ["sw1"], "swish1")) +
             ld(1, node("Swish", ["sw"], ["sw5"], "swish5",
                        flt("alpha", 0.5))) +
             ld(1, node("TensorScatter", ["cache", "upd", "w_lin"], ["lin"],
                        "scatter_lin")) +
             ld(1, node("TensorScatter", ["cache", "upd", "w_circ"], ["circ"],
                        "scatter_circ", text("mode", "circular") +
                        one("axis", 2))) +
             ld(1, node("Attention", ["q", "k", "v", "", "", "", "nonpad"],
                        ["y"], "att", one("is_causal", 1))) +
             ld(2, "opset24") +
             ld(5, int_tensor("w_lin", [2], [1, 3], INT64)) +
             ld(5, int_tensor("w_circ", [2], [4, 2], INT64)) +
             ld(5, int_tensor("nonpad", [2], nonpad, INT64)) +
             ld(11, value_info("sw", [12])) +
             ld(11, value_info("cache", [2, 2, 5, 3])) +
             ld(11, value_info("upd", [2, 2, 2, 3])) +
             ld(11, value_info("q", [2, 2, 3, 4])) +
             ld(11, value_info("k", [2, 2, 6, 4])) +
             ld(11, value_info("v", [2, 2, 6, 4])) +
             b"".join(ld(12, value_info(n, d)) for n, d, _ in outs))
    write_case(out, "test_opset24", graph,
               [tensor("sw", [12], sw), tensor("cache", [2, 2, 5, 3], cache),
                tensor("upd", [2, 2, 2, 3], upd), tensor("q", [2, 2, 3, 4], q),
                tensor("k", [2, 2, 6, 4], k), tensor("v", [2, 2, 6, 4], v)],
               [tensor(n, d, x) for n, d, x in outs], opset=24)


def resize_ref(x, dims, out_dims, scales, mode, coord, antialias=False,
               cubic_a=-0.75, exclude=False):
    """Resize of a flat x (ONNX's definitions, per axis, the output the
    product of the axes' taps): nearest (round_prefer_floor), linear,
    cubic; half_pixel or half_pixel_symmetric; antialias stretching the
    linear and cubic filters on axes whose scale is below 1."""
    def position(ax, o):
        s, n = scales[ax], dims[ax]
        if coord == "half_pixel_symmetric":
            adj = out_dims[ax] / (s * n)
            return n / 2 * (1 - adj) + (o + 0.5) / s - 0.5
        return (o + 0.5) / s - 0.5

    def kernel(v):
        v = abs(v)
        if mode == "linear":
            return max(0.0, 1 - v)
        a = cubic_a
        if v <= 1:
            return (a + 2) * v ** 3 - (a + 3) * v ** 2 + 1
        return a * v ** 3 - 5 * a * v ** 2 + 8 * a * v - 4 * a if v < 2 else 0

    def taps(ax, o):
        xo, n = position(ax, o), dims[ax]
        clamp = lambda i: min(max(i, 0), n - 1)
        if mode == "nearest":
            r = (math.floor(xo) if xo == math.floor(xo) + 0.5
                 else math.floor(xo + 0.5))
            return [(clamp(r), 1.0)]
        if mode == "linear" and not antialias:
            c = min(max(xo, 0), n - 1)
            lo = math.floor(c)
            return [(lo, 1 - (c - lo)), (clamp(lo + 1), c - lo)]
        sc = min(scales[ax], 1.0) if antialias else 1.0
        f = math.ceil(xo) - 1
        t = xo - f
        start = math.floor((-2 if mode == "cubic" else -1) / sc) + 1
        ks = range(start, 2 - start)
        w = [kernel((k - t) * sc) for k in ks]
        w = [v / sum(w) for v in w]
        if exclude:
            w = [v if 0 <= f + k < n else 0.0 for v, k in zip(w, ks)]
            w = [v / sum(w) for v in w]
        return [(clamp(f + k), v) for k, v in zip(ks, w)]
    strides = [math.prod(dims[i + 1:]) for i in range(len(dims))]
    out = []
    for idx in itertools.product(*[range(n) for n in out_dims]):
        acc = [(0, 1.0)]
        for ax, o in enumerate(idx):
            acc = [(at + i * strides[ax], wa * wb) for at, wa in acc
                   for i, wb in taps(ax, o)]
        out.append(sum(wt * x[at] for at, wt in acc))
    return out


def resize_opset19(out):
    """Resize's options of opsets 18 and 19: antialias (linear and cubic,
    downscaling by scales and by sizes, cubic with exclude_outside),
    half_pixel_symmetric (non-integer output lengths) and
    keep_aspect_ratio_policy not_larger and not_smaller (sizes with
    axes)."""
    ints = lambda n, v: ld(5, ld(1, n) + b"".join(vint(8, e) for e in v) +
                           vint(20, 7))
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    text = lambda n, v: ld(5, ld(1, n) + ld(4, v) + vint(20, 3))
    x = [f32(math.sin(0.9 * i) + 0.1 * (i % 5)) for i in range(64)]  # 8x8
    u = [f32(math.cos(0.6 * i)) for i in range(24)]  # [1, 1, 4, 6]
    cases = [  # name, input, dims, out dims, scales, mode, coord, attrs...
        ("aa_lin", "x", [1, 1, 8, 8], [1, 1, 4, 3], [1, 1, 0.6, 0.4],
         "linear", "half_pixel", dict(antialias=True)),
        ("aa_cub", "x", [1, 1, 8, 8], [1, 1, 3, 5], [1, 1, 3 / 8, 5 / 8],
         "cubic", "half_pixel", dict(antialias=True)),
        ("aa_cub_ex", "x", [1, 1, 8, 8], [1, 1, 4, 6], [1, 1, 0.5, 0.75],
         "cubic", "half_pixel", dict(antialias=True, exclude=True)),
        ("sym", "u", [1, 1, 4, 6], [1, 1, 6, 13], [1, 1, 1.7, 2.3],
         "linear", "half_pixel_symmetric", {}),
        ("not_larger", "u", [1, 1, 4, 6], [1, 1, 5, 8], [1, 1, 4 / 3, 4 / 3],
         "nearest", "half_pixel", {}),
        ("not_smaller", "u", [1, 1, 4, 6], [1, 1, 8, 12], [1, 1, 2, 2],
         "linear", "half_pixel", {}),
    ]
    nodes, inits, outs = b"", b"", []
    data = {"x": x, "u": u}
    for name, src, dims, od, sc, mode, coord, kw in cases:
        attrs = text("mode", mode) + text("coordinate_transformation_mode",
                                          coord)
        if kw.get("antialias"):
            attrs += one("antialias", 1)
        if kw.get("exclude"):
            attrs += one("exclude_outside", 1)
        if name == "aa_lin" or name == "sym":
            inputs = [src, "", name + "_scales"]
            inits += ld(5, tensor(name + "_scales", [4], sc))
        elif name.startswith("not_"):
            inputs = [src, "", "", name + "_sizes"]
            attrs += ints("axes", [2, 3]) + text("keep_aspect_ratio_policy",
                                                 name)
            inits += ld(5, int_tensor(name + "_sizes", [2], [8, 8], INT64))
        else:
            inputs = [src, "", "", name + "_sizes"]
            inits += ld(5, int_tensor(name + "_sizes", [4], od, INT64))
        nodes += ld(1, node("Resize", inputs, [name], name, attrs))
        y = resize_ref(data[src], dims, od, sc, mode, coord,
                       kw.get("antialias", False), exclude=kw.get("exclude",
                                                                  False))
        outs.append((name, od, y))
    graph = (nodes + ld(2, "resize_opset19") + inits +
             ld(11, value_info("x", [1, 1, 8, 8])) +
             ld(11, value_info("u", [1, 1, 4, 6])) +
             b"".join(ld(12, value_info(n, d)) for n, d, _ in outs))
    write_case(out, "test_resize_opset19", graph,
               [tensor("x", [1, 1, 8, 8], x), tensor("u", [1, 1, 4, 6], u)],
               [tensor(n, d, v) for n, d, v in outs], opset=19)


UINT4, INT4 = 21, 22


def pack4(values):
    """4-bit values two to a byte, the first in the low nibble (ceil(n /
    2) bytes, the last high nibble 0 when n is odd)."""
    raw = bytearray((len(values) + 1) // 2)
    for k, v in enumerate(values):
        raw[k // 2] |= (v & 15) << (4 * (k % 2))
    return bytes(raw)


def nibble_tensor(name, dims, values, elem):
    """A 4-bit TensorProto with its values in raw_data (pack4)."""
    out = b"".join(vint(1, d) for d in dims)
    return out + vint(2, elem) + ld(8, name) + ld(9, pack4(values))


def nibble_int32_tensor(name, dims, values, elem):
    """The same values in int32_data, one packed byte per entry."""
    out = b"".join(vint(1, d) for d in dims)
    return out + vint(2, elem) + ld(8, name) + ld(
        5, b"".join(varint(b) for b in pack4(values)))


def q4(v, signed):
    """Round half to even, then saturate to int4 or uint4."""
    lo, hi = (-8, 7) if signed else (0, 15)
    r = round(v)  # Python rounds half to even
    return max(lo, min(hi, r))


def int4_blocked(out, name="test_int4_blocked"):
    """Opset 21's 4-bit types and blocked quantization in one model:
    DequantizeLinear of an int4 weight blocked along axis 0 (block 3 over
    4 rows: the last block is short) with an int4 zero point; of a uint4
    weight of 7 elements (odd: the last byte's high nibble is padding),
    its zero point in int32_data; QuantizeLinear of the input to int4
    blocked along axis 1 (block 4 over 10) and back; the quantized tensor
    transposed nibble by nibble; Cast of floats to int4 (round half to
    even, saturate) and of int32 to uint4 (saturate), and back, as ONNX's
    reference Cast does. The
    _ort variant leaves the int4 output out: onnxruntime-node cannot hand
    a 4-bit output back to JavaScript. There x is a weight, so that ONNX
    Runtime quantizes the ties and the saturating values too; but the
    Casts read values in range and off the ties: ONNX Runtime 1.30 casts
    to 4 bits rounding half away from zero and wrapping (7.5 -> -8,
    int32 -20 -> uint4 12) where the reference rounds half to even and
    saturates. uq_rt, uint4 of 7 elements, ends in a padding nibble, which
    the kernels write as 0."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    ort = name.endswith("_ort")
    x = [f32(9 * math.sin(0.7 * i + 0.3)) for i in range(30)]
    x[:6] = [2.5, 3.5, -2.5, -0.5, 7.5, -8.5]
    wq = [((7 * i + 3) % 16) - 8 for i in range(20)]       # int4 [4, 5]
    ws = [f32(0.05 * (j + 1)) for j in range(10)]           # [2, 5]
    wz = [(j % 5) - 2 for j in range(10)]                   # int4 [2, 5]
    w_dq = [f32((wq[r * 5 + c] - wz[(r // 3) * 5 + c]) * ws[(r // 3) * 5 + c])
            for r in range(4) for c in range(5)]
    uq = [(5 * i + 1) % 16 for i in range(7)]               # uint4 [7]
    us, uz = f32(0.25), 9
    u_dq = [f32((v - uz) * us) for v in uq]
    qs = [0.5, 1.0, 2.0, 0.25, 1.5, 0.75, 1.0, 0.5, 3.0]    # [3, 3]
    qz = [0, 1, -1, 2, 0, -2, 3, 0, 1]                      # int4 [3, 3]
    # saturate(round(x / scale) + zero point): the zero point after rounding
    xq = [max(-8, min(7, round(f32(x[r * 10 + c] / qs[r * 3 + c // 4])) +
                      qz[r * 3 + c // 4]))
          for r in range(3) for c in range(10)]
    x_rt = [f32((xq[r * 10 + c] - qz[r * 3 + c // 4]) * qs[r * 3 + c // 4])
            for r in range(3) for c in range(10)]
    xt = [xq[r * 10 + c] for c in range(10) for r in range(3)]  # [10, 3]
    # the host variant's zero point is a [1] for a scalar scale, as some
    # exporters write it: one value all the same
    tz = 0 if ort else 1
    xt_dq = [f32((v - tz) * 0.125) for v in xt]
    xk = [f32(0.7 * v) for v in x[6:]] + [6.9, -7.2, 0.49, -0.49, 1.51, -1.49] \
        if ort else x
    xc = [float(q4(v, True)) for v in xk]
    iv = [0, 3, 7, 8, 15, 1, 2, 9] if ort else [-20, -8, -1, 0, 7, 15, 16, 100]
    ic = [max(0, min(15, v)) for v in iv]
    outs = [("w_dq", [4, 5], w_dq, FLOAT), ("u_dq", [7], u_dq, FLOAT),
            ("x_rt", [3, 10], x_rt, FLOAT), ("xt_dq", [10, 3], xt_dq, FLOAT),
            ("xc_f", [3, 10], xc, FLOAT), ("ic_i", [8], ic, INT32),
            ("xq", [3, 10], xq, INT4),
            ("uq_rt", [7], [max(0, min(15, round(f32(v / us)) + uz)) for v in u_dq],
             UINT4)]
    if ort:
        outs = outs[:-2]
    graph = (ld(1, node("DequantizeLinear", ["wq", "ws", "wz"], ["w_dq"], "dq_w",
                        one("axis", 0) + one("block_size", 3))) +
             ld(1, node("DequantizeLinear", ["uq", "us", "uz"], ["u_dq"], "dq_u")) +
             ld(1, node("QuantizeLinear", ["x", "qs", "qz"], ["xq"], "q_x",
                        one("axis", 1) + one("block_size", 4))) +
             ld(1, node("DequantizeLinear", ["xq", "qs", "qz"], ["x_rt"], "dq_x",
                        one("axis", 1) + one("block_size", 4))) +
             ld(1, node("Transpose", ["xq"], ["xt"], "t_x",
                        ld(5, ld(1, "perm") + vint(8, 1) + vint(8, 0) +
                           vint(20, 7)))) +
             ld(1, node("DequantizeLinear", ["xt", "ts"] + ([] if ort else ["tz"]),
                        ["xt_dq"], "dq_t")) +
             (b"" if ort else
              ld(1, node("QuantizeLinear", ["u_dq", "us", "uz"], ["uq_rt"], "q_u"))) +
             ld(1, node("Cast", ["xk"], ["xc"], "c_x", one("to", INT4))) +
             ld(1, node("Cast", ["xc"], ["xc_f"], "c_xf", one("to", FLOAT))) +
             ld(1, node("Cast", ["iv"], ["icu"], "c_i", one("to", UINT4))) +
             ld(1, node("Cast", ["icu"], ["ic_i"], "c_ii", one("to", INT32))) +
             ld(2, name[5:]) +
             ld(5, nibble_tensor("wq", [4, 5], wq, INT4)) +
             ld(5, tensor("ws", [2, 5], ws)) +
             ld(5, nibble_tensor("wz", [2, 5], wz, INT4)) +
             ld(5, nibble_tensor("uq", [7], uq, UINT4)) +
             ld(5, tensor("us", [], [us])) +
             ld(5, nibble_int32_tensor("uz", [], [uz], UINT4)) +
             ld(5, tensor("qs", [3, 3], qs)) +
             ld(5, nibble_tensor("qz", [3, 3], qz, INT4)) +
             ld(5, tensor("ts", [], [0.125])) +
             (b"" if ort else ld(5, nibble_tensor("tz", [1], [1], INT4))) +
             ld(5, int_tensor("iv", [8], iv, INT32)) +
             ld(5, tensor("xk", [3, 10], xk)) +
             # ONNX Runtime gets these x (ties, saturation) as a weight
             (ld(5, tensor("x", [3, 10], x)) if ort else
              ld(11, value_info("x", [3, 10]))) +
             b"".join(ld(12, value_info(n, d, e)) for n, d, _, e in outs))
    write_case(out, name, graph, [] if ort else [tensor("x", [3, 10], x)],
               [nibble_tensor(n, d, v, e) if e in (INT4, UINT4) else
                int_tensor(n, d, v, e) if e == INT32 else tensor(n, d, v)
                for n, d, v, e in outs], opset=21)


def conv_ref(x, xd, w, wd, b, pads, stride, group):
    """Conv of x [1, C, H, W] by w [M, C / group, kh, kw] (flat lists),
    summed in float64 then rounded to f32."""
    _, c, h, wi = xd
    m, cg, kh, kw = wd
    oh = (h + 2 * pads - kh) // stride + 1
    ow = (wi + 2 * pads - kw) // stride + 1
    mg = m // group
    y = []
    for oc in range(m):
        g = oc // mg
        for i in range(oh):
            for j in range(ow):
                acc = b[oc] if b else 0.0
                for ic in range(cg):
                    for a in range(kh):
                        for e in range(kw):
                            r, q = i * stride - pads + a, j * stride - pads + e
                            if 0 <= r < h and 0 <= q < wi:
                                acc += (x[((g * cg + ic) * h + r) * wi + q] *
                                        w[((oc * cg + ic) * kh + a) * kw + e])
                y.append(f32(acc))
    return y, [1, m, oh, ow]


def conv_dq(out, name="test_conv_dq"):
    """Conv weights DequantizeLinear'd as QDQ exporters write them, which
    the absorb pass folds into the Convs (each weight then widened a panel
    of output channels at a time): int8 per output channel with a bias;
    a depthwise uint4 weight per channel (9 weights a channel, so a
    channel's run starts inside a byte); int4 blocked along the input
    channels (block 3 over 8: the last block short); uint8 per tensor
    into a grouped, strided Conv. Every f32 weight is over the fold
    pass's 256 B, so it stays a DequantizeLinear for absorb to take. Each
    quantized value is at least its zero point and x is positive, so no
    output is a near cancellation that the order of f32 sums decides."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    ints = lambda n, vs: ld(5, ld(1, n) + b"".join(vint(8, v) for v in vs) +
                            vint(20, 7))
    x = [f32(0.6 + 0.5 * math.sin(0.37 * i + 0.1)) for i in range(100)]
    z1 = [9 * k - 128 for k in range(8)]                           # int8 [8]
    w1 = [z1[i // 36] + (37 * i + 11) % (128 - z1[i // 36])
          for i in range(288)]                                     # int8 [8,4,3,3]
    s1 = [f32(0.002 * (k + 1)) for k in range(8)]
    b1 = [f32(0.1 * k - 0.2) for k in range(8)]
    w1f = [f32((w1[i] - z1[i // 36]) * s1[i // 36]) for i in range(288)]
    h1, d1 = conv_ref(x, [1, 4, 5, 5], w1f, [8, 4, 3, 3], b1, 1, 1, 1)
    r1 = [max(0.0, v) for v in h1]
    z2 = [k % 4 for k in range(8)]                                 # uint4 [8]
    w2 = [z2[i // 9] + (5 * i + 3) % (16 - z2[i // 9])
          for i in range(72)]                                      # uint4 [8,1,3,3]
    s2 = [f32(0.03 * (k + 2)) for k in range(8)]
    w2f = [f32((w2[i] - z2[i // 9]) * s2[i // 9]) for i in range(72)]
    h2, d2 = conv_ref(r1, d1, w2f, [8, 1, 3, 3], None, 1, 1, 8)
    s3 = [f32(0.05 * (k % 7 + 1)) for k in range(36)]              # [12,3,1,1]
    z3 = [(k % 3) - 8 for k in range(36)]
    zb = lambda i: z3[(i // 8) * 3 + (i % 8) // 3]
    w3 = [zb(i) + (11 * i + 2) % (8 - zb(i)) for i in range(96)]  # int4 [12,8,1,1]
    w3f = [f32((w3[i] - z3[(i // 8) * 3 + (i % 8) // 3]) *
               s3[(i // 8) * 3 + (i % 8) // 3]) for i in range(96)]
    y3, d3 = conv_ref(h2, d2, w3f, [12, 8, 1, 1], None, 0, 1, 1)
    s4, z4 = f32(0.004), 31
    w4 = [z4 + (29 * i + 7) % (256 - z4) for i in range(72)]      # uint8 [4,2,3,3]
    w4f = [f32((v - z4) * s4) for v in w4]
    y4, d4 = conv_ref(x, [1, 4, 5, 5], w4f, [4, 2, 3, 3], None, 1, 2, 2)
    k33 = ints("kernel_shape", [3, 3])
    pad1 = ints("pads", [1, 1, 1, 1])
    graph = (ld(1, node("DequantizeLinear", ["w1", "s1", "z1"], ["w1f"], "dq1",
                        one("axis", 0))) +
             ld(1, node("Conv", ["x", "w1f", "b1"], ["h1"], "c1", k33 + pad1)) +
             ld(1, node("Relu", ["h1"], ["r1"], "r1")) +
             ld(1, node("DequantizeLinear", ["w2", "s2", "z2"], ["w2f"], "dq2",
                        one("axis", 0))) +
             ld(1, node("Conv", ["r1", "w2f"], ["h2"], "c2",
                        k33 + pad1 + one("group", 8))) +
             ld(1, node("DequantizeLinear", ["w3", "s3", "z3"], ["w3f"], "dq3",
                        one("axis", 1) + one("block_size", 3))) +
             ld(1, node("Conv", ["h2", "w3f"], ["y3"], "c3",
                        ints("kernel_shape", [1, 1]))) +
             ld(1, node("DequantizeLinear", ["w4", "s4", "z4"], ["w4f"], "dq4")) +
             ld(1, node("Conv", ["x", "w4f"], ["y4"], "c4",
                        k33 + pad1 + one("group", 2) + ints("strides", [2, 2]))) +
             ld(2, name[5:]) +
             ld(5, int_tensor("w1", [8, 4, 3, 3], w1, INT8)) +
             ld(5, tensor("s1", [8], s1)) +
             ld(5, int_tensor("z1", [8], z1, INT8)) +
             ld(5, tensor("b1", [8], b1)) +
             ld(5, nibble_tensor("w2", [8, 1, 3, 3], w2, UINT4)) +
             ld(5, tensor("s2", [8], s2)) +
             ld(5, nibble_tensor("z2", [8], z2, UINT4)) +
             ld(5, nibble_tensor("w3", [12, 8, 1, 1], w3, INT4)) +
             ld(5, tensor("s3", [12, 3, 1, 1], s3)) +
             ld(5, nibble_tensor("z3", [12, 3, 1, 1], z3, INT4)) +
             ld(5, int_tensor("w4", [4, 2, 3, 3], w4, UINT8)) +
             ld(5, tensor("s4", [], [s4])) +
             ld(5, int_tensor("z4", [], [z4], UINT8)) +
             ld(11, value_info("x", [1, 4, 5, 5])) +
             ld(12, value_info("y3", d3)) + ld(12, value_info("y4", d4)))
    write_case(out, name, graph, [tensor("x", [1, 4, 5, 5], x)],
               [tensor("y3", d3, y3), tensor("y4", d4, y4)], opset=21)


def qdq_conv(out, name="test_qdq_conv"):
    """Convs whose activation and weight are both quantized, as QDQ
    exporters write them (QuantizeLinear then DequantizeLinear before each
    Conv input), which the absorb pass folds both into the Conv: the input
    widened a band of output rows at a time, the weight a panel of output
    channels. c1: uint8 input, int8 weight per output channel, a bias and
    a Relu; c2: its output requantized to int8, a uint8 weight per tensor
    with a zero point, stride 2 and uneven pads; c3: a 1-D Conv of 3,000
    steps of 8 channels (96,000 B of f32: three bands of 1,365 outputs),
    dilation 2, int8 weight per channel. Inputs sit 0.3 of a step above a quantization level, so no
    value rounds on a tie; the reference sums in float64, as conv_ref."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    ints = lambda n, vs: ld(5, ld(1, n) + b"".join(vint(8, v) for v in vs) +
                            vint(20, 7))

    def quant(v, s, z, lo, hi):
        return min(hi, max(lo, round(f32(v / s)) + z))

    sx, zx = f32(0.02), 10                                         # uint8
    x = [f32(sx * ((17 * i + 5) % 200 - 10 + 0.3)) for i in range(126)]
    dx = [f32((quant(v, sx, zx, 0, 255) - zx) * sx) for v in x]     # [1,3,7,6]
    w1 = [(31 * i + 7) % 255 - 127 for i in range(135)]             # int8 [5,3,3,3]
    s1 = [f32(0.003 * (k + 1)) for k in range(5)]
    b1 = [f32(0.1 * k - 0.2) for k in range(5)]
    w1f = [f32(w1[i] * s1[i // 27]) for i in range(135)]
    h1, d1 = conv_ref(dx, [1, 3, 7, 6], w1f, [5, 3, 3, 3], b1, 1, 1, 1)
    r1 = [max(0.0, v) for v in h1]
    sh, zh = f32(0.01), -20                                         # int8
    dh = [f32((quant(v, sh, zh, -128, 127) - zh) * sh) for v in r1]
    s2, z2 = f32(0.004), 120                                        # uint8
    w2 = [(13 * i + 3) % 256 for i in range(180)]                   # [4,5,3,3]
    w2f = [f32((v - z2) * s2) for v in w2]
    # pads [top 0, left 1, bottom 1, right 0], stride 2: conv_ref pads
    # symmetrically, so pad the input by hand and run it unpadded
    hp, wp = d1[2] + 1, d1[3] + 1
    dhp = [0.0] * (5 * hp * wp)
    for c in range(5):
        for i in range(d1[2]):
            for j in range(d1[3]):
                dhp[(c * hp + i) * wp + j + 1] = dh[(c * d1[2] + i) * d1[3] + j]
    y2, d2 = conv_ref(dhp, [1, 5, hp, wp], w2f, [4, 5, 3, 3], None, 0, 2, 1)
    sl, zl = f32(0.05), 3                                           # uint8
    n1 = 3000
    x3 = [f32(sl * ((7 * i + 2) % 240 - 3 + 0.3)) for i in range(8 * n1)]
    dx3 = [f32((quant(v, sl, zl, 0, 255) - zl) * sl) for v in x3]   # [1,8,3000]
    w3 = [(23 * i + 9) % 251 - 125 for i in range(288)]             # int8 [12,8,3]
    s3 = [f32(0.0002 * (k + 2)) for k in range(12)]
    w3f = [f32(w3[i] * s3[i // 24]) for i in range(288)]
    y3 = []
    for oc in range(12):
        for o in range(n1):
            acc = 0.0
            for ic in range(8):
                for t in range(3):
                    q = o - 2 + 2 * t                               # pads 2, dilation 2
                    if 0 <= q < n1:
                        acc += dx3[ic * n1 + q] * w3f[(oc * 8 + ic) * 3 + t]
            y3.append(f32(acc))
    qdq = lambda i, src, s, z: (
        ld(1, node("QuantizeLinear", [src, s, z], [i + "_q"], "q_" + i)) +
        ld(1, node("DequantizeLinear", [i + "_q", s, z], [i + "_d"], "dq_" + i)))
    graph = (qdq("x", "x", "sx", "zx") +
             ld(1, node("DequantizeLinear", ["w1", "s1"], ["w1f"], "dq_w1",
                        one("axis", 0))) +
             ld(1, node("Conv", ["x_d", "w1f", "b1"], ["h1"], "c1",
                        ints("kernel_shape", [3, 3]) + ints("pads", [1, 1, 1, 1]))) +
             ld(1, node("Relu", ["h1"], ["r1"], "relu1")) +
             qdq("r1", "r1", "sh", "zh") +
             ld(1, node("DequantizeLinear", ["w2", "s2", "z2"], ["w2f"], "dq_w2")) +
             ld(1, node("Conv", ["r1_d", "w2f"], ["y2"], "c2",
                        ints("kernel_shape", [3, 3]) + ints("strides", [2, 2]) +
                        ints("pads", [0, 1, 1, 0]))) +
             qdq("x3", "x3", "sl", "zl") +
             ld(1, node("DequantizeLinear", ["w3", "s3"], ["w3f"], "dq_w3",
                        one("axis", 0))) +
             ld(1, node("Conv", ["x3_d", "w3f"], ["y3"], "c3",
                        ints("kernel_shape", [3]) + ints("pads", [2, 2]) +
                        ints("dilations", [2]))) +
             ld(2, name[5:]) +
             ld(5, tensor("sx", [], [sx])) +
             ld(5, int_tensor("zx", [], [zx], UINT8)) +
             ld(5, int_tensor("w1", [5, 3, 3, 3], w1, INT8)) +
             ld(5, tensor("s1", [5], s1)) +
             ld(5, tensor("b1", [5], b1)) +
             ld(5, tensor("sh", [], [sh])) +
             ld(5, int_tensor("zh", [], [zh], INT8)) +
             ld(5, int_tensor("w2", [4, 5, 3, 3], w2, UINT8)) +
             ld(5, tensor("s2", [], [s2])) +
             ld(5, int_tensor("z2", [], [z2], UINT8)) +
             ld(5, tensor("sl", [], [sl])) +
             ld(5, int_tensor("zl", [], [zl], UINT8)) +
             ld(5, int_tensor("w3", [12, 8, 3], w3, INT8)) +
             ld(5, tensor("s3", [12], s3)) +
             ld(11, value_info("x", [1, 3, 7, 6])) +
             ld(11, value_info("x3", [1, 8, n1])) +
             ld(12, value_info("y2", d2)) + ld(12, value_info("y3", [1, 12, n1])))
    write_case(out, name, graph,
               [tensor("x", [1, 3, 7, 6], x), tensor("x3", [1, 8, n1], x3)],
               [tensor("y2", d2, y2), tensor("y3", [1, 12, n1], y3)], opset=21)


def gemm_dq(out, name="test_gemm_dq"):
    """Gemm weights DequantizeLinear'd as exporters write a quantized
    nn.Linear, which the absorb pass folds into the Gemms (each weight then
    widened a panel of output columns at a time): int8 per output channel
    of a transposed weight [N, K] with a bias; uint4 blocked along K
    (block 4 over 10: the last block short) with alpha, beta and a C of
    one row. Positive values, as in conv_dq, so no output is a near
    cancellation."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    onef = lambda n, v: ld(5, ld(1, n) + key(2, 5) + struct.pack("<f", v) +
                           vint(20, 1))
    x = [f32(0.6 + 0.5 * math.sin(0.41 * i + 0.2)) for i in range(30)]  # [3,10]
    z1 = [7 * k - 128 for k in range(12)]                            # int8 [12]
    w1 = [z1[i // 10] + (23 * i + 5) % (128 - z1[i // 10])
          for i in range(120)]                                       # int8 [12,10]
    s1 = [f32(0.003 * (k + 1)) for k in range(12)]
    b1 = [f32(0.05 * k) for k in range(12)]
    h = [f32(b1[j] + sum(x[r * 10 + q] *
                         f32((w1[j * 10 + q] - z1[j]) * s1[j])
                         for q in range(10)))
         for r in range(3) for j in range(12)]                      # [3,12]
    s2 = [f32(0.02 * (k % 5 + 1)) for k in range(27)]                # [3,9]
    z2 = [k % 3 for k in range(27)]                                  # uint4 [3,9]
    zb = lambda i: z2[(i // 9) // 4 * 9 + i % 9]
    w2 = [zb(i) + (5 * i + 1) % (16 - zb(i)) for i in range(108)]    # uint4 [12,9]
    c2 = [f32(0.1 * j) for j in range(9)]                            # [1,9]
    y = [f32(0.5 * f32(sum(h[r * 12 + q] *
                           f32((w2[q * 9 + j] - zb(q * 9 + j)) *
                               s2[(q // 4) * 9 + j])
                           for q in range(12))) + 2.0 * c2[j])
         for r in range(3) for j in range(9)]
    graph = (ld(1, node("DequantizeLinear", ["w1", "s1", "z1"], ["w1f"], "dq1",
                        one("axis", 0))) +
             ld(1, node("Gemm", ["x", "w1f", "b1"], ["h"], "g1",
                        one("transB", 1))) +
             ld(1, node("DequantizeLinear", ["w2", "s2", "z2"], ["w2f"], "dq2",
                        one("axis", 0) + one("block_size", 4))) +
             ld(1, node("Gemm", ["h", "w2f", "c2"], ["y"], "g2",
                        onef("alpha", 0.5) + onef("beta", 2.0))) +
             ld(2, name[5:]) +
             ld(5, int_tensor("w1", [12, 10], w1, INT8)) +
             ld(5, tensor("s1", [12], s1)) +
             ld(5, int_tensor("z1", [12], z1, INT8)) +
             ld(5, tensor("b1", [12], b1)) +
             ld(5, nibble_tensor("w2", [12, 9], w2, UINT4)) +
             ld(5, tensor("s2", [3, 9], s2)) +
             ld(5, nibble_tensor("z2", [3, 9], z2, UINT4)) +
             ld(5, tensor("c2", [1, 9], c2)) +
             ld(11, value_info("x", [3, 10])) +
             ld(12, value_info("y", [3, 9])))
    write_case(out, name, graph, [tensor("x", [3, 10], x)],
               [tensor("y", [3, 9], y)], opset=21)


def int4_bad(which):
    """Committed 4-bit and blocked-quantization models (--committed):
    "raw": an int4 weight of 5 elements with 2 bytes of raw_data (it
    needs 3); "block": a blocked DequantizeLinear whose scale has 3 rows
    where block_size 3 over 4 rows needs 2; "add": an Add of two int4
    tensors, which plans (ONNX defines no 4-bit Add, but sizes are
    sizes) and does not compile."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    if which == "raw":
        raw = ld(5, b"".join(vint(1, d) for d in [5]) + vint(2, INT4) +
                 ld(8, "w4") + ld(9, bytes([0x21, 0x43])))
        graph = (ld(1, node("DequantizeLinear", ["w4", "s"], ["y"], "dq")) +
                 ld(2, "int4_raw") + raw + ld(5, tensor("s", [], [0.5])) +
                 ld(12, value_info("y", [5])))
    elif which == "block":
        graph = (ld(1, node("DequantizeLinear", ["w4", "s"], ["y"], "dq",
                            one("axis", 0) + one("block_size", 3))) +
                 ld(2, "int4_block") +
                 ld(5, nibble_tensor("w4", [4, 2], list(range(8)), INT4)) +
                 ld(5, tensor("s", [3, 2], [0.5] * 6)) +
                 ld(12, value_info("y", [4, 2])))
    else:
        graph = (ld(1, node("Cast", ["x"], ["x4"], "c", one("to", INT4))) +
                 ld(1, node("Add", ["x4", "x4"], ["y4"], "add")) +
                 ld(1, node("Cast", ["y4"], ["y"], "back", one("to", FLOAT))) +
                 ld(2, "int4_add") + ld(11, value_info("x", [3])) +
                 ld(12, value_info("y", [3])))
    return model(graph, 21)


def dq_output_dtype(out):
    """Opset 23's output_dtype on DequantizeLinear: an f16 output from an
    f32 scale (ONNX Runtime 1.30 fails this node: "Tensor type mismatch"),
    per channel, with a zero point. Every value is exact in f16."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    q, s, z = [-3, 0, 5, 127, -128, 9], [0.5, 0.25, 2.0], [1, 0, -2]
    y = [(q[i] - z[i % 3]) * s[i % 3] for i in range(6)]
    graph = (ld(1, node("DequantizeLinear", ["q", "s", "z"], ["y"], "dq",
                        one("axis", 1) + one("output_dtype", FLOAT16))) +
             ld(2, "dq_output_dtype") +
             ld(5, tensor("s", [3], s)) + ld(5, int_tensor("z", [3], z, INT8)) +
             ld(11, value_info("q", [2, 3], INT8)) +
             ld(12, value_info("y", [2, 3], FLOAT16)))
    write_case(out, "test_dq_output_dtype", graph,
               [int_tensor("q", [2, 3], q, INT8)],
               [int_tensor("y", [2, 3], y, FLOAT16)], opset=23)


def pack_nbits(rows, bits):
    """Rows of bits-wide values packed as MatMulNBits packs them: 8 / bits
    values a byte, the lowest bits first (2 and 4 bits); 8-bit values as
    bytes. A row's last byte is padded with zeros."""
    out, per = [], 8 // bits
    for r in rows:
        for i in range(0, len(r), per):
            out.append(sum(v << (bits * j) for j, v in enumerate(r[i:i + per])))
    return out


def nbits_weight(n, k, bits, block, zp, seed, rnd=f32, fzp=False, gidx=None):
    """A MatMulNBits weight W [n, k]: its packed B, scales (rounded by rnd:
    to f32, or to f16 for a float16 model), zero points (packed, or with
    fzp floats a quarter below the integer ones, or None: 2^(bits - 1))
    and the f32 values of W. gidx (a list of k blocks) gives each element
    its block, as g_idx does; else element j is in block j // block. Each
    value is at least its zero point, so no output is a near
    cancellation."""
    kb = (k + block - 1) // block
    blk = gidx if gidx else [j // block for j in range(k)]
    scales = [rnd(f32(0.01 * ((seed * 7 + i) % 5 + 1))) for i in range(n * kb)]
    zps = [[(seed + r + j) % 3 + (1 << (bits - 1)) - 2 if zp
            else 1 << (bits - 1) for j in range(kb)] for r in range(n)]
    top = (1 << bits) - 1
    q = [[zps[r][blk[j]] + (13 * (r * k + j) + seed) %
          (top + 1 - zps[r][blk[j]]) if j < k else 0
          for j in range(kb * block)] for r in range(n)]
    if fzp:
        fz = [[f32(zps[r][j] - 0.25) for j in range(kb)] for r in range(n)]
        w = [[f32(f32(q[r][j] - fz[r][blk[j]]) * scales[r * kb + blk[j]])
              for j in range(k)] for r in range(n)]
        return pack_nbits(q, bits), scales, [v for r in fz for v in r], w
    w = [[f32((q[r][j] - zps[r][blk[j]]) * scales[r * kb + blk[j]])
          for j in range(k)] for r in range(n)]
    return (pack_nbits(q, bits), scales, pack_nbits(zps, bits) if zp else None,
            w)


def matmul_nbits(out, name="test_matmulnbits"):
    """com.microsoft's MatMulNBits, the int4 weight format of ONNX Runtime's
    quantized language models: y1 = x W1^T + b1 with 4-bit weights in
    blocks of 32 along K = 80 (the last block half used), packed zero
    points and a bias; y2 = y1 W2^T with 8-bit weights in blocks of 16
    along K = 24 (the last half used), no zero points (128) and no bias;
    y3 = x3 W3^T with an odd K = 37 in blocks of 16 (the last block 5
    values, its last byte half used; 3 zero points a row, 2 bytes). mplan's
    runtime unpacks a panel of W's rows at a time."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    ms = ld(7, "com.microsoft")
    m, k1, n1, k2, n2 = 6, 80, 24, 24, 40
    x = [f32(0.3 + 0.25 * abs(math.sin(0.23 * i + 0.4))) for i in range(m * k1)]
    b1p, s1, z1p, w1 = nbits_weight(n1, k1, 4, 32, True, 3)
    bias = [f32(0.05 * (i % 7) - 0.1) for i in range(n1)]
    y1 = [f32(sum(x[i * k1 + j] * w1[c][j] for j in range(k1)) + bias[c])
          for i in range(m) for c in range(n1)]
    b2p, s2, _, w2 = nbits_weight(n2, k2, 8, 16, False, 5)
    y2 = [f32(sum(y1[i * k2 + j] * w2[c][j] for j in range(k2)))
          for i in range(m) for c in range(n2)]
    x3 = [f32(0.2 + 0.125 * (i % 9)) for i in range(2 * 37)]
    b3p, s3, z3p, w3 = nbits_weight(5, 37, 4, 16, True, 7)
    y3 = [f32(sum(x3[i * 37 + j] * w3[c][j] for j in range(37)))
          for i in range(2) for c in range(5)]
    graph = (ld(1, node("MatMulNBits", ["x", "b1", "s1", "z1", "", "bias"],
                        ["y1"], "mm1",
                        one("K", k1) + one("N", n1) + one("bits", 4) +
                        one("block_size", 32) + ms)) +
             ld(1, node("MatMulNBits", ["y1", "b2", "s2"], ["y2"], "mm2",
                        one("K", k2) + one("N", n2) + one("bits", 8) +
                        one("block_size", 16) + ms)) +
             ld(1, node("MatMulNBits", ["x3", "b3", "s3", "z3"], ["y3"], "mm3",
                        one("K", 37) + one("N", 5) + one("bits", 4) +
                        one("block_size", 16) + ms)) +
             ld(2, name[5:]) +
             ld(5, int_tensor("b1", [n1, 3, 16], b1p, UINT8)) +
             ld(5, tensor("s1", [n1 * 3], s1)) +
             ld(5, int_tensor("z1", [n1 * 2], z1p, UINT8)) +
             ld(5, tensor("bias", [n1], bias)) +
             ld(5, int_tensor("b2", [n2, 2, 16], b2p, UINT8)) +
             ld(5, tensor("s2", [n2 * 2], s2)) +
             ld(5, int_tensor("b3", [5, 3, 8], b3p, UINT8)) +
             ld(5, tensor("s3", [15], s3)) +
             ld(5, int_tensor("z3", [10], z3p, UINT8)) +
             ld(11, value_info("x", [2, 3, k1])) +
             ld(11, value_info("x3", [2, 37])) +
             ld(12, value_info("y1", [2, 3, n1])) +
             ld(12, value_info("y2", [2, 3, n2])) +
             ld(12, value_info("y3", [2, 5])))
    d = os.path.join(out, name)
    write(os.path.join(d, "model.onnx"),
          model(graph, 21) + ld(8, ld(1, "com.microsoft") + vint(2, 1)))
    data = os.path.join(d, "test_data_set_0")
    write(os.path.join(data, "input_0.pb"), tensor("x", [2, 3, k1], x))
    write(os.path.join(data, "output_0.pb"), tensor("y1", [2, 3, n1], y1))
    write(os.path.join(data, "input_1.pb"), tensor("x3", [2, 37], x3))
    write(os.path.join(data, "output_1.pb"), tensor("y2", [2, 3, n2], y2))
    write(os.path.join(data, "output_2.pb"), tensor("y3", [2, 5], y3))


def matmul_nbits_f16(out, name="test_matmulnbits_f16"):
    """MatMulNBits of a float16 A, scales and bias (4-bit weights, packed
    zero points): mplan's runtime computes it through f32 and rounds y to
    float16 once."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    h16 = lambda v: struct.unpack("<e", struct.pack("<e", v))[0]
    m, k, n = 6, 80, 24
    x = [h16(0.3 + 0.25 * abs(math.sin(0.23 * i + 0.4))) for i in range(m * k)]
    bp, s, zp, w = nbits_weight(n, k, 4, 32, True, 3, h16)
    kb = (k + 31) // 32
    bias = [h16(0.05 * (i % 7) - 0.1) for i in range(n)]
    y = [h16(f32(sum(x[i * k + j] * w[c][j] for j in range(k)) + bias[c]))
         for i in range(m) for c in range(n)]
    graph = (ld(1, node("MatMulNBits", ["x", "b", "s", "z", "", "bias"], ["y"],
                        "mm", one("K", k) + one("N", n) + one("bits", 4) +
                        one("block_size", 32) + ld(7, "com.microsoft"))) +
             ld(2, name[5:]) +
             ld(5, int_tensor("b", [n, kb, 16], bp, UINT8)) +
             ld(5, int_tensor("s", [n * kb], s, FLOAT16)) +
             ld(5, int_tensor("z", [n * 2], zp, UINT8)) +
             ld(5, int_tensor("bias", [n], bias, FLOAT16)) +
             ld(11, value_info("x", [2, 3, k], FLOAT16)) +
             ld(12, value_info("y", [2, 3, n], FLOAT16)))
    d = os.path.join(out, name)
    write(os.path.join(d, "model.onnx"),
          model(graph, 21) + ld(8, ld(1, "com.microsoft") + vint(2, 1)))
    data = os.path.join(d, "test_data_set_0")
    write(os.path.join(data, "input_0.pb"),
          int_tensor("x", [2, 3, k], x, FLOAT16))
    write(os.path.join(data, "output_0.pb"),
          int_tensor("y", [2, 3, n], y, FLOAT16))


def nbits_case(x, m, k, n, bits, block, seed, zp=True, fzp=False, gidx=None,
               bias=False):
    """One MatMulNBits of gen_onnx_extra's cases: its initializers (named
    by seed: b, s, z, g and c), its inputs and the expected y [m, n]."""
    b, sc, z, w = nbits_weight(n, k, bits, block, zp or fzp, seed, fzp=fzp,
                               gidx=gidx)
    kb, t = (k + block - 1) // block, str(seed)
    c = [f32(0.05 * (i % 7) - 0.1) for i in range(n)] if bias else None
    y = [f32(sum(x[i * k + j] * w[col][j] for j in range(k)) +
             (c[col] if bias else 0)) for i in range(m) for col in range(n)]
    inits = (ld(5, int_tensor("b" + t, [n, kb, block * bits // 8], b, UINT8)) +
             ld(5, tensor("s" + t, [n * kb], sc)))
    ins = ["b" + t, "s" + t, ""]
    if fzp:
        inits += ld(5, tensor("z" + t, [n * kb], z))
    elif zp:
        inits += ld(5, int_tensor("z" + t, [len(z)], z, UINT8))
    if zp or fzp:
        ins[2] = "z" + t
    ins += ["g" + t if gidx else "", "c" + t if bias else ""]
    if gidx:
        inits += ld(5, int_tensor("g" + t, [k], gidx, INT32))
    if bias:
        inits += ld(5, tensor("c" + t, [n], c))
    while ins[-1] == "":
        ins.pop()
    return inits, ins, y


def act_order(k, block, seed):
    """g_idx as GPTQ's act order writes it: the K input channels ranked by
    a permutation, each channel in the block of its rank."""
    return [((j * 29 + seed) % k) // block for j in range(k)]


def nbits_graph(name, x_in, cases):
    """A graph of MatMulNBits cases: x_in maps input names to [m, k], cases
    are (output, input, bits, block, n, inits, ins)."""
    one = lambda a, v: ld(5, ld(1, a) + vint(3, v) + vint(20, 2))
    g = b""
    for i, (out, xin, bits, block, n, _, ins) in enumerate(cases):
        g += ld(1, node("MatMulNBits", [xin] + ins, [out], "mm%d" % i,
                        one("K", x_in[xin][1]) + one("N", n) +
                        one("bits", bits) + one("block_size", block) +
                        ld(7, "com.microsoft")))
    g += ld(2, name[5:])
    for case in cases:
        g += case[5]
    for xin, (m, k) in x_in.items():
        g += ld(11, value_info(xin, [m, k]))
    for out, xin, _, _, n, _, _ in cases:
        g += ld(12, value_info(out, [x_in[xin][0], n]))
    return model(g, 21) + ld(8, ld(1, "com.microsoft") + vint(2, 1))


def nbits_write(out, name, spec):
    """A node test of MatMulNBits cases (output, input, bits, block, n,
    nbits_case's keywords) on nbits_inputs' inputs."""
    x_in, xs = nbits_inputs()
    cases, ys = [], []
    for o, xin, bits, block, n, kw in spec:
        m, k = x_in[xin]
        inits, ins, y = nbits_case(xs[xin], m, k, n, bits, block, **kw)
        cases.append((o, xin, bits, block, n, inits, ins))
        ys.append(y)
    d = os.path.join(out, name)
    write(os.path.join(d, "model.onnx"), nbits_graph(name, x_in, cases))
    data = os.path.join(d, "test_data_set_0")
    for i, (xin, (m, k)) in enumerate(x_in.items()):
        write(os.path.join(data, "input_%d.pb" % i), tensor(xin, [m, k], xs[xin]))
    for i, (case, y) in enumerate(zip(cases, ys)):
        write(os.path.join(data, "output_%d.pb" % i),
              tensor(case[0], [x_in[case[1]][0], case[4]], y))


def nbits_inputs():
    x_in = {"x": (3, 64), "x2": (2, 37)}
    xs = {"x": [f32(0.3 + 0.25 * abs(math.sin(0.23 * i + 0.4)))
                for i in range(3 * 64)],
          "x2": [f32(0.2 + 0.125 * (i % 9)) for i in range(2 * 37)]}
    return x_in, xs


def matmul_nbits_more(out, name="test_matmulnbits_more"):
    """MatMulNBits beyond 4 and 8 bits with packed zero points, as ONNX
    Runtime 1.30 runs them: 2-bit weights with packed zero points (K =
    37: the last byte holds one value) and without (a bias); float zero
    points (4- and 2-bit, a quarter below the integer ones, so (q - zp)
    is fractional); g_idx in GPTQ's act order (each input channel in the
    block of its rank), without zero points and with float ones."""
    spec = [("y1", "x2", 2, 16, 6, dict(seed=11)),
            ("y2", "x2", 2, 32, 5, dict(seed=12, zp=False, bias=True)),
            ("y3", "x", 4, 16, 7, dict(seed=13, fzp=True)),
            ("y4", "x", 2, 32, 4, dict(seed=14, fzp=True)),
            ("y5", "x", 4, 16, 6, dict(seed=15, zp=False,
                                       gidx=act_order(64, 16, 5))),
            ("y6", "x", 4, 16, 5, dict(seed=16, fzp=True,
                                       gidx=act_order(64, 16, 9)))]
    nbits_write(out, name, spec)


def matmul_nbits_gidx(out, name="test_matmulnbits_gidx"):
    """MatMulNBits as its schema defines it where ONNX Runtime 1.30 does
    not compute it so (checked against this file's reference only): g_idx
    with packed uint8 zero points (ONNX Runtime uses 2^(bits - 1) there),
    g_idx of 2-bit weights, and 8-bit weights with float zero points or
    g_idx (ONNX Runtime refuses both)."""
    spec = [("y1", "x", 4, 16, 6, dict(seed=21, gidx=act_order(64, 16, 3))),
            ("y2", "x", 2, 16, 5, dict(seed=22, zp=False,
                                       gidx=act_order(64, 16, 7))),
            ("y3", "x2", 8, 16, 4, dict(seed=23, fzp=True)),
            ("y4", "x", 8, 32, 3, dict(seed=24, fzp=True,
                                       gidx=act_order(64, 32, 11)))]
    nbits_write(out, name, spec)


def nbits_bad(zp=False):
    """A committed bad model (--committed): a MatMulNBits whose B holds 2
    blocks a row where K = 80 in blocks of 32 needs 3; with zp, B is right
    and its float zero points are one a row (4) where it needs one a
    block (12)."""
    one = lambda n, v: ld(5, ld(1, n) + vint(3, v) + vint(20, 2))
    kb = 3 if zp else 2
    graph = (ld(1, node("MatMulNBits", ["x", "b", "s"] + (["z"] if zp else []),
                        ["y"], "mm",
                        one("K", 80) + one("N", 4) + one("bits", 4) +
                        one("block_size", 32) + ld(7, "com.microsoft"))) +
             ld(2, "nbits_bad") +
             ld(5, int_tensor("b", [4, kb, 16], [0x88] * 64 * kb, UINT8)) +
             ld(5, tensor("s", [12], [0.5] * 12)) +
             (ld(5, tensor("z", [4], [7.5] * 4)) if zp else b"") +
             ld(11, value_info("x", [2, 80])) + ld(12, value_info("y", [2, 4])))
    return model(graph, 21) + ld(8, ld(1, "com.microsoft") + vint(2, 1))


def main():
    if sys.argv[1] == "--external-bad":
        for v in ("escape", "absolute", "missing", "short", "length"):
            external_data(sys.argv[2], v)
    elif sys.argv[1] == "--committed":
        root = sys.argv[2]
        write(os.path.join(root, "tests", "data", "weight_outputs.onnx.bin"),
              weight_outputs(None))
        write(os.path.join(root, "tests", "bad", "onnx_utf8_name.onnx.bin"),
              weight_outputs(None, relu_name=b"re\xfflu"))
        write(os.path.join(root, "tests", "bad", "onnx_int4_raw.onnx.bin"),
              int4_bad("raw"))
        write(os.path.join(root, "tests", "bad", "onnx_block_scale.onnx.bin"),
              int4_bad("block"))
        write(os.path.join(root, "tests", "data", "int4_add.onnx.bin"),
              int4_bad("add"))
        write(os.path.join(root, "tests", "bad", "onnx_nbits_size.onnx.bin"),
              nbits_bad())
        write(os.path.join(root, "tests", "bad", "onnx_nbits_zp.onnx.bin"),
              nbits_bad(zp=True))
    else:
        weight_outputs(sys.argv[1])
        matmulinteger_batch(sys.argv[1])
        qlinearconv_bias(sys.argv[1])
        weight_output_big(sys.argv[1])
        if_big_constant(sys.argv[1])
        gru_lbr_bidirectional(sys.argv[1])
        topk_ties(sys.argv[1])
        legacy_broadcast_opset6(sys.argv[1])
        legacy_attrs_opset1(sys.argv[1])
        external_data(sys.argv[1])
        newer_opsets(sys.argv[1])
        opset23(sys.argv[1])
        resize_opset19(sys.argv[1])
        opset24(sys.argv[1])
        int4_blocked(sys.argv[1])
        int4_blocked(sys.argv[1], "test_int4_blocked_ort")
        dq_output_dtype(sys.argv[1])
        conv_dq(sys.argv[1])
        gemm_dq(sys.argv[1])
        qdq_conv(sys.argv[1])
        matmul_nbits(sys.argv[1])
        matmul_nbits_f16(sys.argv[1])
        matmul_nbits_more(sys.argv[1])
        matmul_nbits_gidx(sys.argv[1])


# tests/cli/gen_empty_ops.py imports the wire-format helpers
if __name__ == "__main__":
    main()
