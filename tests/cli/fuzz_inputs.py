#!/usr/bin/env python3
"""Seeded mutation fuzzing of every input mplan reads (graph JSON, ONNX,
minimalloc CSV, lifetimes, pipelines, backends), run as a ctest.

Each case takes a seed file, mutates it (bytes; the parsed JSON: numbers
made 0, -1, huge or fractional, names swapped so that edges dangle or close
cycles, keys dropped, values of the wrong type, arrays emptied or
repeated; or the protobuf fields of an ONNX file: varints made huge,
fields dropped or repeated, names swapped) and runs mplan on it. The rules every case must keep:
  - exit status 0, 1 or 2, within the time limit, no sanitizer report;
  - on status 2, exactly one line on stderr ("mplan: error: ..."), nothing
    on stdout and no output file;
  - on status 0, the output file exists and no temporary file is left.

The same seed gives the same cases, so a failure reproduces; the failing
input and its command are kept in the --keep folder.

usage: fuzz_inputs.py MPLAN SOURCE_DIR [--onnx DIR] [--cases N] [--seed S]
                      [--keep DIR] [--timeout SECONDS]
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

NUMBERS = [0, -1, 1, 3, 255, 65535, 2**31, 2**32 + 1, 2**53, 2**63,
           2**64 + 7, -2**63, 0.5, -0.0, 1e308, 1e-300]
TOKENS = [b"-1", b"0", b"99999999999999999999999", b"1e308", b"null",
          b"[]", b"{}", b'""', b"\x00", b"\xff\xff\xff\xff", b"\"\\u0000\""]


def seeds(src, onnx_dir):
    """(path, kind) pairs; kind chooses the command. Valid files come
    three times: one mutation away from them is where checks are thin."""
    out = [(os.path.join(src, "models", m + ".json"), "graph")
           for m in ("seed_example", "mobilenet_v1", "mobilenet_v2",
                     "resnet50")] * 3
    # Graphs the passes rewrite: fusions, in place, Concat slices, Sums
    # turned into Adds (accumulate), variadic ops in place.
    for m in ("convnet", "concat", "concat_add", "branches", "sum_f32",
              "sum_bcast"):
        out += [(os.path.join(src, "tests", "data", "passes", m + ".json"),
                 "graph")] * 3
    # ONNX control flow: If and Loop bodies flattened, and an If whose
    # condition shape math decides, imported again with one branch.
    for m in ("control", "branch"):
        out += [(os.path.join(src, "tests", "data", m + ".onnx.bin"),
                 "graph")] * 3
    for f in sorted(glob.glob(os.path.join(src, "backends", "*.json"))):
        out += [(f, "backend")] * 3
    for f in sorted(glob.glob(os.path.join(src, "tests", "bad", "*"))):
        if f.endswith((".json", ".csv", ".bin", ".txt")):
            out.append((f, "graph"))
    if onnx_dir and os.path.isdir(onnx_dir):
        small = sorted(glob.glob(os.path.join(onnx_dir, "test_*", "model.onnx")))
        small = [f for f in small if os.path.getsize(f) < 4096]
        # A spread of ops, the same on every machine (sorted, every k-th).
        step = max(1, len(small) // 40)
        out += [(f, "graph") for f in small[::step]] * 3
    return out


def walk(doc, path=()):
    """Every (path, value) of a JSON document."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from walk(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from walk(v, path + (i,))


def put(doc, path, value):
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def mutate_json(rng, doc):
    nodes = list(walk(doc))
    strings = [v for _, v in nodes if isinstance(v, str)]
    path, value = rng.choice(nodes)
    r = rng.random()
    if isinstance(value, bool) or value is None:
        return put(doc, path, rng.choice([0, "x", [], {}]))
    if isinstance(value, (int, float)):
        return put(doc, path, rng.choice(NUMBERS))
    if isinstance(value, str):
        if strings and r < 0.6:  # dangling edges, duplicates, cycles
            return put(doc, path, rng.choice(strings))
        return put(doc, path, rng.choice(["", "x" * 5000, "a.b/c", "\u00e9",
                                          "graph/2", "1x0x3", "N"]))
    if isinstance(value, list):
        if not value or r < 0.25:
            return put(doc, path, [] if value else [0, "x", None])
        if r < 0.5:
            return put(doc, path, value + [rng.choice(value)])
        if r < 0.7:
            v = list(value)
            rng.shuffle(v)
            return put(doc, path, v)
        return put(doc, path, value * rng.choice([2, 50]))
    if isinstance(value, dict):
        if value and r < 0.5:
            value.pop(rng.choice(list(value)))
            return doc
        if r < 0.7:
            value["unknown_field_%d" % rng.randrange(9)] = 1
            return doc
        return put(doc, path, rng.choice([[value], "x", 7]))
    return doc


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        pos = rng.randrange(len(data) + 1)
        if r < 0.3 and data:
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif r < 0.45:
            del data[pos:]
        elif r < 0.6 and data:
            end = min(len(data), pos + rng.randint(1, 64))
            del data[pos:end]
        elif r < 0.8:
            data[pos:pos] = rng.choice(TOKENS)
        elif data:
            a = rng.randrange(len(data))
            data[pos:pos] = data[a:a + rng.randint(1, 256)]
    return bytes(data)


# ---- protobuf (ONNX) at the wire level: fields, not bytes ----------------
def pb_varint(b, i):
    v, shift = 0, 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def pb_put_varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v >> 7 else 0))
        v >>= 7
        if not v:
            return bytes(out)


def pb_parse(b, depth=0):
    """[field, wire type, value] triples; a length-delimited value that
    parses as a message (and is not plain text) becomes a list."""
    out, i = [], 0
    while i < len(b):
        key, i = pb_varint(b, i)
        field, wt = key >> 3, key & 7
        if field == 0 or wt not in (0, 1, 2, 5):
            raise ValueError("key")
        if wt == 0:
            v, i = pb_varint(b, i)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            if i + n > len(b):
                raise ValueError("fixed")
            v, i = b[i:i + n], i + n
        else:
            n, i = pb_varint(b, i)
            if i + n > len(b):
                raise ValueError("length")
            v, i = b[i:i + n], i + n
            if depth < 12 and n > 1 and not all(32 <= c < 127 for c in v):
                try:
                    v = pb_parse(v, depth + 1)
                except ValueError:
                    pass
        out.append([field, wt, v])
    return out


def pb_write(msg):
    out = bytearray()
    for field, wt, v in msg:
        out += pb_put_varint(field << 3 | wt)
        if wt == 0:
            out += pb_put_varint(v)
        elif wt in (1, 5):
            out += v
        else:
            v = pb_write(v) if isinstance(v, list) else v
            out += pb_put_varint(len(v)) + v
    return bytes(out)


def pb_fields(msg, acc):
    for e in msg:
        acc.append((msg, e))
        if isinstance(e[2], list):
            pb_fields(e[2], acc)
    return acc


PB_INTS = [0, 1, 2, 3, 7, 13, 100, 2**31, 2**32, 2**63 - 1, 2**63,
           2**64 - 1, 2**64 - 2]
PB_STRINGS = [b"", b"x", b"Conv", b"Reshape", b"If", b"Loop", b"Concat",
              b"com.microsoft", b"ai.onnx", b"a" * 300]


def mutate_protobuf(rng, data):
    try:
        msg = pb_parse(data)
    except ValueError:
        return None
    for _ in range(rng.randint(1, 3)):
        fields = pb_fields(msg, [])
        if not fields:
            break
        parent, e = rng.choice(fields)
        field, wt, v = e
        r = rng.random()
        if r < 0.1:
            parent.remove(e)
        elif r < 0.2:
            parent.append(list(e))  # a field repeated
        elif wt == 0:
            e[2] = rng.choice(PB_INTS + [v + 1, max(v - 1, 0)])
        elif wt in (1, 5):
            e[2] = bytes(rng.randrange(256) for _ in v)
        elif isinstance(v, list):
            if v and r < 0.6:
                del v[rng.randrange(len(v))]
            else:
                e[2] = b""
        else:
            names = [x[2] for _, x in fields
                     if x[1] == 2 and isinstance(x[2], bytes) and x[2]]
            e[2] = rng.choice(names + PB_STRINGS) if r < 0.7 else \
                mutate_bytes(rng, v)
    return pb_write(msg)


def mutate(rng, data):
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        doc = None
    if doc is not None and rng.random() < 0.75:
        for _ in range(rng.randint(1, 3)):
            doc = mutate_json(rng, doc)
        return json.dumps(doc).encode()
    if doc is None and rng.random() < 0.75:
        out = mutate_protobuf(rng, data)
        if out is not None:
            return out
    return mutate_bytes(rng, data)


def run_case(a, case, seed_path, kind, data, work, status):
    ext = os.path.splitext(seed_path)[1]
    if seed_path.endswith("model.onnx"):
        ext = ".onnx"
    inp = os.path.join(work, "input" + ext)
    with open(inp, "wb") as f:
        f.write(data)
    out = os.path.join(work, "out", "plan.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    graph = os.path.join(a.src, "models", "seed_example.json")
    variant = case % 4
    if kind == "backend":
        cmd = [a.mplan, "plan", graph, "--backend", inp, "-o", out]
    elif variant == 1:
        cmd = [a.mplan, "plan", inp, "--passes", "all", "--order", "memory",
               "--order-budget-ms", "2000", "-o", out]
    elif variant == 2:
        cmd = [a.mplan, "explain", inp]
        out = None
    elif variant == 3 and len(data) < 8192:
        # Every other verify runs the rewritten plan (shared buffers).
        cmd = [a.mplan, "verify", inp] + (
            ["--passes", "all", "--order", "memory", "--poison"]
            if case % 8 == 7 else [])
        out = None
    else:
        cmd = [a.mplan, "plan", inp, "-o", out]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=a.timeout,
                           env=a.env)
    except subprocess.TimeoutExpired:
        return cmd, inp, "no answer within %g s" % a.timeout
    err = p.stderr.decode(errors="replace")
    status[p.returncode] = status.get(p.returncode, 0) + 1
    why = []
    if p.returncode not in (0, 1, 2):
        why.append("exit status %d" % p.returncode)
    if "Sanitizer" in err or "runtime error:" in err:
        why.append("sanitizer report")
    if p.returncode == 2:
        lines = err.split("\n")[:-1] if err.endswith("\n") else [err]
        if len(lines) != 1 or not lines[0].startswith("mplan: error: "):
            why.append("%d lines on stderr, expected one 'mplan: error:'"
                       % len(lines))
        if p.stdout:
            why.append("output on stdout")
        if out and os.path.exists(out):
            why.append("an output file was written")
    elif p.returncode == 0 and out and not os.path.exists(out):
        why.append("status 0 but no output file")
    left = [f for f in os.listdir(os.path.dirname(out or inp)) if "tmp" in f]
    if left:
        why.append("temporary files left: %s" % left)
    if out and os.path.exists(out):
        os.remove(out)
    return cmd, inp, "; ".join(why) + ("\n" + err[-2000:] if why else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mplan")
    ap.add_argument("src")
    ap.add_argument("--onnx")
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default="fuzz-failures")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    a.mplan = os.path.abspath(a.mplan)
    # Under ASan a huge allocation returns NULL as libc's would, rather
    # than abort: mplan's handling of that NULL is what is under test.
    a.env = dict(os.environ)
    a.env["ASAN_OPTIONS"] = "allocator_may_return_null=1:" + \
        a.env.get("ASAN_OPTIONS", "")
    pool = seeds(a.src, a.onnx)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="mplan-fuzz-")
    failed, status = 0, {}
    try:
        for case in range(a.cases):
            seed_path, kind = pool[case % len(pool)] if case < len(pool) \
                else rng.choice(pool)
            with open(seed_path, "rb") as f:
                data = mutate(rng, f.read())
            cmd, inp, why = run_case(a, case, seed_path, kind, data, work,
                                     status)
            if why:
                failed += 1
                os.makedirs(a.keep, exist_ok=True)
                keep = os.path.join(a.keep, "case%d%s" % (
                    case, os.path.splitext(inp)[1]))
                shutil.copy(inp, keep)
                shown = " ".join(keep if c == inp else c for c in cmd)
                print("FAIL case %d (seed %s): %s\n  %s" % (
                    case, os.path.basename(seed_path), why.strip(), shown))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("fuzz_inputs: %d cases from %d seed files (exit status: %s), "
          "%d failed" % (a.cases, len(pool), ", ".join(
              "%d x%d" % (k, v) for k, v in sorted(status.items())), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
