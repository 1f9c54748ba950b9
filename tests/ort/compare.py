#!/usr/bin/env python3
"""compare.py -- max absolute and relative error between two tensors/1
files (runtime/README.md), output by output; exit 1 when an output is
missing, of another shape, or off by more than the tolerance.

usage: compare.py OURS.mpt ORT.mpt ATOL RTOL LABEL
A value passes when |ours - ort| <= ATOL + RTOL * |ort|.
"""
import struct
import sys

FMT = {1: 'f', 2: 'd', 3: 'b', 4: 'B', 7: 'i', 9: 'q', 11: 'B', 12: 'e'}
SIZE = {1: 4, 2: 8, 3: 1, 4: 1, 7: 4, 9: 8, 11: 1, 12: 2}
NIBBLES = {14: True, 15: False}  # int4 (signed), uint4: two per byte


def nibbles(data, n, signed):
    """n 4-bit values packed two to a byte, the first in the low nibble."""
    out = []
    for k in range(n):
        v = data[k // 2] >> 4 if k % 2 else data[k // 2] & 15
        out.append(v - 16 if signed and v >= 8 else v)
    return tuple(out)


def read_raw(path):
    """name -> (dtype code, dims, data bytes) of a tensors/1 file."""
    b = open(path, 'rb').read()
    assert b[:8] == b'MPTENSOR', path
    n = struct.unpack_from('<I', b, 12)[0]
    at, out = 16, {}
    for _ in range(n):
        nl = struct.unpack_from('<I', b, at)[0]
        at += 4
        name = b[at:at + nl].decode()
        at += nl
        dtype, rank = b[at], b[at + 1]
        at += 8
        dims = list(struct.unpack_from('<%dq' % rank, b, at))
        at += 8 * rank
        nbytes = struct.unpack_from('<Q', b, at)[0]
        at += 8
        out[name] = (dtype, dims, b[at:at + nbytes])
        at += nbytes + (8 - (4 + nl + 8 + 8 * rank + 8 + nbytes) % 8) % 8
    return out


def read(path):
    """name -> (dims, values) of a tensors/1 file."""
    out = {}
    for name, (dtype, dims, data) in read_raw(path).items():
        if dtype in NIBBLES:
            count = 1
            for d in dims:
                count *= d
            vals = nibbles(data, count, NIBBLES[dtype])
        else:
            vals = struct.unpack('<%d%s' % (len(data) // SIZE[dtype], FMT[dtype]), data)
        out[name] = (dims, vals)
    return out


def main():
    ours, ort = read(sys.argv[1]), read(sys.argv[2])
    atol, rtol, label = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    ok = True
    for name, (dims, want) in ort.items():
        if name not in ours or ours[name][0] != dims:
            print('%s: output %s missing or of another shape' % (label, name))
            ok = False
            continue
        got = ours[name][1]
        # NaN where ONNX Runtime has NaN agrees (Log of a negative)
        pairs = [(g, w) for g, w in zip(got, want) if not (g != g and w != w)]
        nan_only = len(got) - len(pairs)
        got, want = [g for g, _ in pairs], [w for _, w in pairs]
        if not got:
            print('%s: %-40s all %d values NaN in both' % (label, name[-40:], nan_only))
            continue
        abs_err = max(abs(g - w) for g, w in zip(got, want))
        # relative error where it means something: |ort| >= 1e-3
        rels = [abs(g - w) / abs(w) for g, w in zip(got, want) if abs(w) >= 1e-3]
        rel_err = max(rels) if rels else 0.0
        bad = sum(1 for g, w in zip(got, want) if abs(g - w) > atol + rtol * abs(w))
        print('%s: %-40s %6d values  max abs %.3g  max rel %.3g (|ort| >= 1e-3)  (%d beyond tolerance)'
              % (label, name[-40:], len(want), abs_err, rel_err, bad))
        ok = ok and bad == 0
    print('%s: %s (tolerance |d| <= %g + %g |ort|)' % (label, 'agree' if ok else 'DISAGREE', atol, rtol))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
