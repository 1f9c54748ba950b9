#!/usr/bin/env bash
# mplan plan/report --c-header end to end: the header of a plan compiles
# (gcc and clang-19, -std=c11 -Wall -Wextra -pedantic -Werror, also two
# headers in one translation unit that uses none of their tables), a
# program that includes it re-proves the plan from its tables alone
# (tests/cli/c_header_check.c), and its tables and macros hold what the
# plan JSON of the same command holds: every tensor's region, offset,
# buffer and steps, the regions, the op order and the arena. Names that
# are not identifiers (quotes, backslashes, trigraphs, '*/', UTF-8, a
# leading digit, names that map onto one identifier) are exact in the
# strings and unique as identifiers. Bad names are one line, exit 2, and
# no file.
# usage: test_c_header.sh MPLAN SOURCE_DIR [ONNX_CACHE]
set -u
mplan=$1
src=$2
cache=${3:-}
. "$(dirname "$0")/lib.sh"

cd "$src"
flags=(-std=c11 -Wall -Wextra -pedantic -Werror)

# check NAME HEADER PLAN_JSON [GRAPH_JSON]: compile the checker against the
# header with both compilers, run it, and compare its tables with the plan
# JSON (and, for a plan made without passes, the shapes and attributes
# with the graph's).
check() {
  local name=$1 hdr=$2 pj=$3 gj=${4:-}
  local stem up low
  stem=$(basename "$hdr" .h)
  up=$(python3 -c 'import re,sys; s=re.sub(r"[^A-Za-z0-9]+","_",sys.argv[1]).strip("_").upper() or "X"; print(("P" if s[0].isdigit() else "")+s)' "$stem")
  low=$(echo "$up" | tr 'A-Z' 'a-z')
  for cc in gcc clang-19; do
    if "$cc" "${flags[@]}" -DMP_HEADER="\"$hdr\"" -DMP_UP="${up}_" -DMP_LOW="${low}_" \
      tests/cli/c_header_check.c -o "$tmp/chk_$cc" 2>"$tmp/cc_err"; then
      ok
    else
      bad "$name: the checker does not compile with $cc"
      sed 's/^/    /' "$tmp/cc_err" | head -5
      return
    fi
  done
  if "$tmp/chk_gcc" >"$tmp/tables" 2>"$tmp/chk_err"; then ok; else
    bad "$name: the header does not re-prove the plan: $(cat "$tmp/chk_err")"
    return
  fi
  cmp -s "$tmp/tables" <("$tmp/chk_clang-19") && ok || bad "$name: gcc and clang read different tables"
  if python3 - "$hdr" "$pj" "$tmp/tables" "$up" "$gj" <<'PY'; then ok; else bad "$name: the header and the plan JSON differ"; fi
import json, math, re, sys
hdr, pj, tables, up, gj = sys.argv[1:]
plan = json.load(open(pj, encoding="utf-8"))
rows = [l.rstrip("\n").split("\t") for l in open(tables, encoding="utf-8")]
tens = [r for r in rows if r[0] == "tensor"]
regs = [r for r in rows if r[0] == "region"]
steps = [r[2:] for r in rows if r[0] == "step"]
arena = [r for r in rows if r[0] == "arena"][0]
def fail(msg):
    print("   ", msg)
    sys.exit(1)
# every tensor of every buffer, buffer by buffer, where the plan puts it
want = []
for bi, b in enumerate(plan["buffers"]):
    names = b.get("tensors", [b["name"]])
    offs = b.get("tensor_offsets", [0] * len(names))
    for n, o in zip(names, offs):
        want.append((n, b["region"], str(bi), str(b["offset"] + o),
                     str(b["first_use"]), str(b["last_use"]), b))
if len(want) != len(tens):
    fail("%d tensors in the header, %d in the plan" % (len(tens), len(want)))
for w, t in zip(want, tens):
    got = (t[2], t[5], t[6], t[7], t[9], t[10])
    if got != w[:6] and not (w[6].get("class") != "activation" and got[:4] == w[:4]):
        fail("tensor %r: header %r, plan %r" % (t[2], got, w[:6]))
    b = w[6]
    if len(b.get("tensors", [])) < 2 and t[8] != str(b["size"]):
        fail("tensor %r: %s bytes, its buffer %s" % (t[2], t[8], b["size"]))
    if int(t[7]) + int(t[8]) > b["offset"] + b["size"]:
        fail("tensor %r: past its buffer" % t[2])
    if t[4] and t[2] == b["name"] and (t[3], t[4]) != (b["kind"], b["dtype"]):
        fail("tensor %r: kind/dtype %r" % (t[2], (t[3], t[4])))
# regions and steps and the arena
if [(r[2], r[3]) for r in regs] != [(r["name"], str(r["size"])) for r in plan["regions"]]:
    fail("regions %r" % regs)
ex = plan.get("execution", [])
if [s[0] for s in steps] != [e["op"] for e in ex] or [s[1] for s in steps] != [e["type"] for e in ex]:
    fail("steps differ")
graph = any(s[2] or s[3] for s in steps)  # a plan file's steps have no operands
for s, e in zip(steps, ex if graph else []):
    if "inputs" in e and (s[2].split(",") if s[2] else []) != e["inputs"]:
        fail("step %s: inputs %r, plan %r" % (s[0], s[2], e["inputs"]))
    if "outputs" in e and (s[3].split(",") if s[3] else []) != e["outputs"]:
        fail("step %s: outputs %r, plan %r" % (s[0], s[3], e["outputs"]))
# each tensor's own steps, from the step table: written .. last read
if graph:
    first, last = {}, {}
    for k, st in enumerate(steps):
        for x in filter(None, st[2].split(",")):
            last[x] = max(last.get(x, 0), k)
        for x in filter(None, st[3].split(",")):
            first[x] = k
    for t in tens:
        lf = first.get(t[2], 0)
        ll = len(steps) - 1 if t[3] == "output" else max(lf, last.get(t[2], lf))
        if (t[11], t[12]) != (str(lf), str(ll)):
            fail("tensor %r: own steps %s..%s, the step table says %d..%d" % (t[2], t[11], t[12], lf, ll))
# a graph tensor's bytes are its shape's elements (one byte when empty)
size = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "c64": 8, "c128": 16, "i8": 1, "u8": 1, "i16": 2, "u16": 2,
        "i32": 4, "u32": 4, "i64": 8, "u64": 8, "bool": 1}
for t in tens:
    if t[4] in size:
        dims = [int(d) for d in t[14].split("x")] if t[14] else []
        if max(1, math.prod(dims) * size[t[4]]) != int(t[8]):
            fail("tensor %r: shape %s of %s, %s bytes" % (t[2], t[14], t[4], t[8]))
# without passes: shapes and attributes as the graph gives them
if gj:
    g = json.load(open(gj, encoding="utf-8"))
    dimv = g.get("dims", {})
    shape = {t["name"]: "x".join(str(d if isinstance(d, int) else dimv[d]) for d in t["shape"])
             for t in g["tensors"]}
    for t in tens:
        if shape.get(t[2], t[14]) != t[14]:
            fail("tensor %r: shape %s, the graph's %s" % (t[2], t[14], shape[t[2]]))
    def show(v):
        if isinstance(v, list):
            return "[" + ", ".join(show(x) for x in v) + "]"
        if isinstance(v, str):
            return "'%s'" % v
        if isinstance(v, float):
            return "%.9g" % v
        return str(v)
    want_attrs = {o["name"]: [(k, show(v)) for k, v in o.get("attrs", {}).items()] for o in g["ops"]}
    got_attrs = {}
    for r in rows:
        if r[0] == "attr":
            got_attrs.setdefault(steps[int(r[1])][0], []).append((r[2], r[3]))
    for op, want in want_attrs.items():
        if sorted(got_attrs.get(op, [])) != sorted(want):
            fail("op %r: attributes %r, the graph's %r" % (op, got_attrs.get(op), want))
s = plan["summary"]
if arena[1:] != [str(s[k]) for k in ("arena_bytes", "resident_bytes", "activation_peak_bytes", "lower_bound_bytes")]:
    fail("arena %r" % arena)
# the macros: one index, offset, bytes and region per tensor, unique
text = open(hdr, encoding="utf-8").read()
defs = {}
for m in re.finditer(r"^#define (\w+) (.*?)(?: /\*.*\*/)?$", text, re.M):
    if m.group(1) in defs:
        fail("macro %s defined twice" % m.group(1))
    defs[m.group(1)] = m.group(2)
idx = {int(v[:-1]): k for k, v in defs.items()
       if k.startswith(up + "_T_") and re.fullmatch(r"\d+u", v)}
if sorted(idx) != list(range(len(tens))):
    fail("tensor index macros: %d for %d tensors" % (len(idx), len(tens)))
rid = {k: v for k, v in defs.items() if k.startswith(up + "_R_") and re.fullmatch(r"\d+u", v)}
for k, t in enumerate(tens):
    m = idx[k]
    if defs[m + "_OFFSET"] != "UINT64_C(%s)" % t[7] or defs[m + "_BYTES"] != "UINT64_C(%s)" % t[8]:
        fail("macros of %s disagree with the table" % m)
    if regs[int(rid[defs[m + "_REGION"]][:-1])][2] != t[5]:
        fail("region macro of %s" % m)
PY
}

# MobileNetV2: the default plan, and with every pass, the memory order and
# two regions (views, in-place buffers, activations in SRAM and DRAM).
run 0 plan models/mobilenet_v2.json --c-header "$tmp/mbv2.h" -o "$tmp/mbv2.json"
has "$tmp/out" "wrote $tmp/mbv2.h"
check "mobilenet_v2" "$tmp/mbv2.h" "$tmp/mbv2.json" models/mobilenet_v2.json
has "$tmp/mbv2.h" "#define MBV2_ARENA_BYTES UINT64_C(5197792)"
has "$tmp/mbv2.h" "#define MBV2_OPSET 0 /* no ONNX opset: the newest rules */"
has "$tmp/mbv2.h" "#define MBV2_T_B2_DW_OUT_REGION MBV2_R_ARENA"
run 0 report models/mobilenet_v2.json --passes all --order memory --backend npu \
  --c-header "$tmp/mbv2_npu.h" --lifetimes "$tmp/lt.json"
run 0 plan models/mobilenet_v2.json --passes all --order memory --backend npu --json
cp "$tmp/out" "$tmp/mbv2_npu.json"
check "mobilenet_v2 npu all,memory" "$tmp/mbv2_npu.h" "$tmp/mbv2_npu.json"
has "$tmp/mbv2_npu.h" "#define MBV2_NPU_REGION_COUNT 2u"
has "$tmp/mbv2_npu.h" '{"sram", UINT64_C('
grep -q "#define MBV2_NPU_T_B1_DW_OUT_REGION MBV2_NPU_R_DRAM\|#define MBV2_NPU_T_B1_DW_OUT_REGION MBV2_NPU_R_SRAM" "$tmp/mbv2_npu.h" && ok || bad "mbv2_npu: no region macro for b1_dw_out"

# Names that are not identifiers, and regions whose names meet; '__'
# (identifier X) comes after 'x_offset' (X_OFFSET), so X would define
# X_OFFSET again: it is X_2.
cat >"$tmp/names.json" <<'JSON'
{"mplan": "graph/1", "name": "odd */ names??/",
 "tensors": [{"name": "1st", "dtype": "f32", "shape": [4], "kind": "input"},
             {"name": "x.y", "dtype": "f32", "shape": [4]},
             {"name": "x_y", "dtype": "f32", "shape": [4]},
             {"name": "X-Y", "dtype": "f32", "shape": [4]},
             {"name": "q\"uote\\back", "dtype": "f32", "shape": [4]},
             {"name": "a??=b */ c", "dtype": "f32", "shape": [4]},
             {"name": "ünï", "dtype": "f32", "shape": [4]},
             {"name": "arena", "dtype": "f32", "shape": [4]},
             {"name": "x_offset", "dtype": "f32", "shape": [4]},
             {"name": "__", "dtype": "f32", "shape": [4], "kind": "output"}],
 "ops": [{"name": "r1", "op": "Relu", "inputs": ["1st"], "outputs": ["x.y"]},
         {"name": "r2", "op": "Relu", "inputs": ["x.y"], "outputs": ["x_y"]},
         {"name": "r3", "op": "Add", "inputs": ["x_y", "x.y"], "outputs": ["X-Y"]},
         {"name": "r4", "op": "Relu", "inputs": ["X-Y"], "outputs": ["q\"uote\\back"]},
         {"name": "r5", "op": "Add", "inputs": ["q\"uote\\back", "X-Y"], "outputs": ["a??=b */ c"]},
         {"name": "r6", "op": "Relu", "inputs": ["a??=b */ c"], "outputs": ["ünï"]},
         {"name": "r7", "op": "Add", "inputs": ["ünï", "a??=b */ c"], "outputs": ["arena"]},
         {"name": "r8", "op": "Relu", "inputs": ["arena"], "outputs": ["x_offset"]},
         {"name": "r9", "op": "Relu", "inputs": ["x_offset"], "outputs": ["__"]}],
 "outputs": ["__"]}
JSON
cat >"$tmp/two.json" <<'JSON'
{"mplan": "backend/1", "name": "two", "alignment": 16,
 "regions": [{"name": "fast-mem", "capacity": 48, "classes": ["activation"]},
             {"name": "FAST_MEM", "classes": ["weight", "input", "activation", "retained"]}]}
JSON
run 0 plan "$tmp/names.json" --backend "$tmp/two.json" --c-header "$tmp/2names.h" -o "$tmp/names_plan.json"
check "odd names" "$tmp/2names.h" "$tmp/names_plan.json"
for id in P2NAMES_T_1ST P2NAMES_T_X_Y P2NAMES_T_X_Y_2 P2NAMES_T_X_Y_3 P2NAMES_T_Q_UOTE_BACK \
  P2NAMES_T_A_B_C P2NAMES_T_N P2NAMES_T_ARENA P2NAMES_T_X_OFFSET P2NAMES_T_X_2 \
  P2NAMES_R_FAST_MEM P2NAMES_R_FAST_MEM_2; do
  grep -q "^#define $id [0-9]*u$" "$tmp/2names.h" && ok || bad "2names.h: no #define $id"
done
has "$tmp/2names.h" '{"q\"uote\\back", '
has "$tmp/2names.h" '{"a\?\?=b */ c", '
has "$tmp/2names.h" '{"\303\274n\303\257", '
has "$tmp/2names.h" "The memory plan of 'odd _/ names__/'"
grep -q '??' "$tmp/2names.h" && bad "2names.h holds a trigraph" || ok

# A plan file: the placements and the op order it holds (no graph, so
# the kind is the class and the dtype empty).
run 0 report "$tmp/mbv2.json" --c-header "$tmp/from_plan.h"
check "plan file" "$tmp/from_plan.h" "$tmp/mbv2.json"
has "$tmp/from_plan.h" "#define FROM_PLAN_STEP_COUNT 66u"
has "$tmp/from_plan.h" '{"b2_dw_out", "activation", "", FROM_PLAN_R_ARENA, '

# Problem files have no graph: one entry a buffer, no op order.
run 0 plan tests/data/input.12.csv --c-header "$tmp/csv.h" -o "$tmp/csv.json"
check "minimalloc csv" "$tmp/csv.h" "$tmp/csv.json"
has "$tmp/csv.h" "#define CSV_STEP_COUNT 0u /* no op order */"
run 0 plan models/seed_example.json --c-header "$tmp/seed.h" -o "$tmp/seed.json"
check "lifetime table" "$tmp/seed.h" "$tmp/seed.json"

# A real ONNX model: ISNet's 1,719 tensors, named like
# '/stage1/rebnconvin/conv_s1/Conv_output_0', in place and as views.
isnet=$cache/isnet/isnet_quint8.onnx
if [ -f "$isnet" ]; then
  run 0 plan "$isnet" --passes all --c-header "$tmp/isnet.h" -o "$tmp/isnet.json"
  check "isnet" "$tmp/isnet.h" "$tmp/isnet.json"
  has "$tmp/isnet.h" "#define ISNET_T_STAGE1_REBNCONVIN_CONV_S1_CONV_OUTPUT_0 "
else
  bad "no ISNet in '$cache' (ctest fetches it: fixture onnx_data)"
fi

# Two headers in one translation unit that uses neither's tables.
printf '#include "%s"\n#include "%s"\nint main(void) { return (int)(MBV2_ARENA_BYTES - MBV2_NPU_ARENA_BYTES > 0); }\n' \
  "$tmp/mbv2.h" "$tmp/mbv2_npu.h" >"$tmp/both.c"
for cc in gcc clang-19; do
  "$cc" "${flags[@]}" -c "$tmp/both.c" -o "$tmp/both.o" 2>"$tmp/cc_err" && ok || { bad "two headers with $cc"; head -3 "$tmp/cc_err"; }
done

# The checker fails on a header whose tables overlap: b2_expand_out moved
# onto a tensor of another buffer that is live with it.
python3 - "$tmp/mbv2.h" "$tmp/broken.h" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r'\{"(\w+)", "(\w+)", "(\w*)", \w+, (\d+)u, UINT64_C\((\d+)\), UINT64_C\((\d+)\),\s+(-?\d+), (-?\d+),', text)
t = {r[0]: r for r in rows}
a = t["b2_expand_out"]
for b in rows:
    if b[3] != a[3] and b[1] != "weight" and int(b[6]) <= int(a[7]) and int(a[6]) <= int(b[7]) and b[0] != "input":
        break
old = '{"b2_expand_out", "%s", "%s", MBV2_R_ARENA, %su, UINT64_C(%s)' % (a[1], a[2], a[3], a[4])
new = '{"b2_expand_out", "%s", "%s", MBV2_R_ARENA, %su, UINT64_C(%s)' % (a[1], a[2], a[3], b[4])
assert old in text
open(sys.argv[2], "w").write(text.replace(old, new))
PY
gcc "${flags[@]}" -DMP_HEADER="\"$tmp/broken.h\"" -DMP_UP=MBV2_ -DMP_LOW=mbv2_ tests/cli/c_header_check.c -o "$tmp/chk_broken" && ok || bad "broken header does not compile"
if "$tmp/chk_broken" >/dev/null 2>"$tmp/chk_err"; then bad "the checker passed an overlapping header"; else
  grep -q "share bytes at a common step" "$tmp/chk_err" && ok || bad "checker: $(cat "$tmp/chk_err")"
fi

# A runtime of its own that knows the model only through the header
# (tests/cli/c_header_run.c): a seeded DAG of 80 f32 elementwise ops,
# planned in file order, and with every pass in the memory order (in
# place ops write over their inputs), gives every output bit for bit as
# a run with a buffer per tensor; the same header with one activation
# moved onto another live one does not.
python3 - "$tmp/ew.json" <<'PY'
import json, random, sys
rng = random.Random(7)
ts = [{"name": "x%d" % i, "dtype": "f32", "shape": [1, 256], "kind": "input"} for i in range(3)]
ops, avail, used = [], ["x0", "x1", "x2"], set()
for k in range(80):
    typ = rng.choice(["Relu", "Neg", "Abs", "Add", "Sub", "Mul", "Add", "Mul"])
    ins = [rng.choice(avail[-6:])]
    if typ in ("Add", "Sub", "Mul"):
        ins.append(rng.choice(avail[-10:]))
    out = "t%d" % k
    ts.append({"name": out, "dtype": "f32", "shape": [1, 256]})
    ops.append({"name": "op%d" % k, "op": typ, "inputs": ins, "outputs": [out]})
    used.update(ins)
    avail.append(out)
outs = [t["name"] for t in ts[3:] if t["name"] not in used]
for t in ts:
    if t["name"] in outs:
        t["kind"] = "output"
json.dump({"mplan": "graph/1", "name": "elementwise_dag", "tensors": ts, "ops": ops,
           "outputs": outs}, open(sys.argv[1], "w"))
PY
for p in "none --order file" "all --order memory"; do
  # shellcheck disable=SC2086
  run 0 plan "$tmp/ew.json" --passes $p --c-header "$tmp/ew.h" -o "$tmp/ew_plan.json"
  check "elementwise dag, passes $p" "$tmp/ew.h" "$tmp/ew_plan.json"
  gcc "${flags[@]}" -DMP_HEADER="\"$tmp/ew.h\"" -DMP_UP=EW_ -DMP_LOW=ew_ tests/cli/c_header_run.c -o "$tmp/ew_run" -lm && ok || bad "c_header_run.c does not compile"
  "$tmp/ew_run" >"$tmp/ew_out" 2>&1 && grep -q "^80 steps, [1-9][0-9]* outputs identical to the run without reuse$" "$tmp/ew_out" && ok ||
    bad "elementwise dag, passes $p: $(cat "$tmp/ew_out")"
done
python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(len(b.get("tensors",[]))>1 for b in d["buffers"]) else 1)' "$tmp/ew_plan.json" && ok || bad "the passes made no buffer of several tensors"
python3 - "$tmp/ew.h" "$tmp/ew_broken.h" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r'\{"(\w+)", "(\w+)", "f32", EW_R_ARENA, (\d+)u, UINT64_C\((\d+)\), UINT64_C\((\d+)\),\s+(-?\d+), (-?\d+),', text)
acts = [r for r in rows if r[1] != "input"]
for a in acts:
    b = next((b for b in acts if b[2] != a[2] and b[3] != a[3] and int(b[5]) < int(a[5]) <= int(b[6]) and int(a[5]) < int(b[6])), None)
    if b:
        break
old = '{"%s", "%s", "f32", EW_R_ARENA, %su, UINT64_C(%s)' % a[:4]
new = '{"%s", "%s", "f32", EW_R_ARENA, %su, UINT64_C(%s)' % (a[0], a[1], a[2], b[3])
open(sys.argv[2], "w").write(text.replace(old, new, 1))
print("moved %s onto %s" % (a[0], b[0]))
PY
gcc "${flags[@]}" -DMP_HEADER="\"$tmp/ew_broken.h\"" -DMP_UP=EW_ -DMP_LOW=ew_ tests/cli/c_header_run.c -o "$tmp/ew_broken" -lm && ok || bad "broken header does not compile"
if "$tmp/ew_broken" >"$tmp/ew_out" 2>&1; then bad "the runtime did not notice a moved tensor"; else
  grep -q "differs from the run without reuse" "$tmp/ew_out" && ok || bad "broken run: $(cat "$tmp/ew_out")"
fi

# The same runtime on a small CNN (tests/cli/c_header_run.c's kernels:
# Conv with groups, strides and pads, Clip, a residual Add, MaxPool, a
# SiLU, Concat, AveragePool, Gemm, Softmax, Reshape, Transpose, MatMul
# with a bias and a Div), driven by the header's shapes and attributes.
# Without passes its attributes and shapes are the graph's; with every
# pass and the memory order the header has fused epilogues
# (mplan.epilogue with Clip bounds, a SiLU diamond Mul@0, MatMul's
# Add,Div), views and Concat slices, and both headers give the same
# outputs bit for bit. Changing one attribute in the header changes them;
# a tensor's own steps cut short of its reader fail the checker.
python3 - "$tmp/cnn.json" <<'PY'
import json, sys
T, O = [], []
def t(name, shape, kind=None, dtype="f32"):
    d = {"name": name, "dtype": dtype, "shape": shape}
    if kind: d["kind"] = kind
    T.append(d)
def op(name, typ, ins, outs, **attrs):
    d = {"name": name, "op": typ, "inputs": ins, "outputs": outs}
    if attrs: d["attrs"] = attrs
    O.append(d)
t("x", [1, 8, 16, 16], "input")
def conv(name, x, cin, cout, k, out_hw, group=1, stride=1, pad=0, bias=True):
    t(name + "_w", [cout, cin // group, k, k], "weight")
    ins = [x, name + "_w"]
    if bias:
        t(name + "_b", [cout], "weight"); ins.append(name + "_b")
    t(name, [1, cout, out_hw, out_hw])
    a = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4}
    if group > 1: a["group"] = group
    op(name + "_op", "Conv", ins, [name], **a)
    return name
conv("stem", "x", 8, 16, 3, 16, pad=1)
t("stem_r", [1, 16, 16, 16]); op("stem_relu", "Relu", ["stem"], ["stem_r"])
conv("dw", "stem_r", 16, 16, 3, 16, group=16, pad=1)
t("dw_r", [1, 16, 16, 16]); op("dw_clip", "Clip", ["dw"], ["dw_r"], min=0.0, max=6.0)
conv("pw", "dw_r", 16, 16, 1, 16, bias=False)
t("res", [1, 16, 16, 16]); op("res_add", "Add", ["pw", "stem_r"], ["res"])
t("mp", [1, 16, 8, 8]); op("pool", "MaxPool", ["res"], ["mp"], kernel_shape=[2, 2], strides=[2, 2])
conv("b1", "mp", 16, 8, 1, 8)
t("b1_r", [1, 8, 8, 8]); op("b1_relu", "Relu", ["b1"], ["b1_r"])
conv("b2", "mp", 16, 8, 3, 8, pad=1)
t("b2_s", [1, 8, 8, 8]); op("b2_sigmoid", "Sigmoid", ["b2"], ["b2_s"])
t("b2_silu", [1, 8, 8, 8]); op("b2_mul", "Mul", ["b2", "b2_s"], ["b2_silu"])
t("cat", [1, 16, 8, 8]); op("concat", "Concat", ["b1_r", "b2_silu"], ["cat"], axis=1)
conv("down", "cat", 16, 24, 3, 4, stride=2, pad=1)
t("down_r", [1, 24, 4, 4]); op("down_relu", "Relu", ["down"], ["down_r"])
t("ap", [1, 24, 4, 4]); op("avg", "AveragePool", ["down_r"], ["ap"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
t("gap", [1, 24, 1, 1]); op("gap_op", "GlobalAveragePool", ["ap"], ["gap"])
t("flat", [1, 24]); op("flatten", "Flatten", ["gap"], ["flat"], axis=1)
t("fc_w", [10, 24], "weight"); t("fc_b", [10], "weight")
t("logits", [1, 10]); op("fc", "Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1)
t("probs", [1, 10], "output"); op("softmax", "Softmax", ["logits"], ["probs"], axis=1)
t("rs_shape", [3], "weight", "i64")
t("rs", [1, 16, 64]); op("reshape", "Reshape", ["cat", "rs_shape"], ["rs"])
t("tr", [1, 64, 16]); op("transpose", "Transpose", ["rs"], ["tr"], perm=[0, 2, 1])
t("mm_w", [16, 8], "weight"); t("mm_b", [8], "weight")
t("mm", [1, 64, 8]); op("matmul", "MatMul", ["tr", "mm_w"], ["mm"])
t("mm_y", [1, 64, 8]); op("bias", "Add", ["mm", "mm_b"], ["mm_y"])
t("emb", [1, 64, 8], "output"); op("scale", "Div", ["mm_y", "mm_b"], ["emb"])
json.dump({"mplan": "graph/1", "name": "header_cnn", "tensors": T, "ops": O,
           "outputs": ["probs", "emb"]}, open(sys.argv[1], "w"), indent=1)
PY
for p in none all; do
  order=file; [ "$p" = all ] && order=memory
  run 0 plan "$tmp/cnn.json" --passes $p --order $order --c-header "$tmp/cnn_$p.h" -o "$tmp/cnn_$p.json"
  if [ "$p" = none ]; then
    check "cnn, passes none" "$tmp/cnn_$p.h" "$tmp/cnn_$p.json" "$tmp/cnn.json"
  else
    check "cnn, passes all" "$tmp/cnn_$p.h" "$tmp/cnn_$p.json"
  fi
  sed "s/MPLAN_CNN_$(echo $p | tr a-z A-Z)_H/MPLAN_CNN_H/; s/CNN_$(echo $p | tr a-z A-Z)_/CNN_/g; s/cnn_${p}_/cnn_/g" "$tmp/cnn_$p.h" >"$tmp/cnn_run_$p.h"
  gcc "${flags[@]}" -DMP_HEADER="\"$tmp/cnn_run_$p.h\"" -DMP_UP=CNN_ -DMP_LOW=cnn_ tests/cli/c_header_run.c -o "$tmp/cnn_run_$p" -lm && ok || bad "cnn $p: c_header_run.c does not compile"
  "$tmp/cnn_run_$p" "$tmp/cnn_out_$p" >"$tmp/cnn_msg" 2>&1 && grep -q "^[0-9]* steps, 2 outputs identical to the run without reuse$" "$tmp/cnn_msg" && ok ||
    bad "cnn, passes $p: $(cat "$tmp/cnn_msg")"
done
has "$tmp/cnn_all.h" '"Sigmoid,Mul@0"'
has "$tmp/cnn_all.h" '"Add,Div"'
has "$tmp/cnn_all.h" '"in place (concat slice)"'
has "$tmp/cnn_all.h" '"view"'
has "$tmp/cnn_run_all.h" '{"down_op", "Conv", 3u, 1u,'
cmp -s "$tmp/cnn_out_none" "$tmp/cnn_out_all" && ok || bad "cnn: the outputs with every pass differ from those without"
[ "$(grep -c 'static const struct cnn_step s\[25\]' "$tmp/cnn_run_none.h")" = 1 ] &&
  [ "$(grep -c 'static const struct cnn_step s\[16\]' "$tmp/cnn_run_all.h")" = 1 ] && ok || bad "cnn: not 25 and 16 steps"
# down_op's strides 2 -> 1 in the header: other outputs
python3 - "$tmp/cnn_run_all.h" "$tmp/cnn_stride.h" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'\{"down_op", "Conv", \d+u, \d+u, io \+ \d+, io \+ \d+, \d+u, a \+ (\d+), -?\d+\}', text)
first = int(m.group(1))
rows = re.findall(r'^      \{"[^"]*", CNN_ATTR_\w+, .*$', text, re.M)
k = next(i for i in range(first, len(rows)) if rows[i].startswith('      {"strides"'))
at = int(re.search(r"ai \+ (\d+)", rows[k]).group(1))
ai = re.search(r"static const int64_t ai\[\d+\] = \{(.*?)\};", text, re.S)
vals = re.findall(r"INT64_C\((-?\d+)\)", ai.group(1))
assert vals[at:at + 2] == ["2", "2"], vals[at:at + 2]
vals[at:at + 2] = ["1", "1"]
new = "{" + ", ".join("INT64_C(%s)" % v for v in vals) + "}"
open(sys.argv[2], "w").write(text[:ai.start(1) - 1] + new + text[ai.end(1) + 1:])
PY
gcc "${flags[@]}" -DMP_HEADER="\"$tmp/cnn_stride.h\"" -DMP_UP=CNN_ -DMP_LOW=cnn_ tests/cli/c_header_run.c -o "$tmp/cnn_stride" -lm && ok || bad "strided header does not compile"
"$tmp/cnn_stride" "$tmp/cnn_out_stride" >/dev/null 2>&1 && ! cmp -s "$tmp/cnn_out_stride" "$tmp/cnn_out_all" && ok || bad "cnn: strides 1 gave the same outputs"
# the Softmax's input 'logits' last read one step early
python3 - "$tmp/cnn_run_all.h" "$tmp/cnn_short.h" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'(\{"logits", [^\n]*\n\s+-?\d+, -?\d+, -?\d+, )(-?\d+)', text)
open(sys.argv[2], "w").write(text[:m.start(2)] + str(int(m.group(2)) - 1) + text[m.end(2):])
PY
gcc "${flags[@]}" -DMP_HEADER="\"$tmp/cnn_short.h\"" -DMP_UP=CNN_ -DMP_LOW=cnn_ tests/cli/c_header_check.c -o "$tmp/chk_short" && ok || bad "short header does not compile"
if "$tmp/chk_short" >/dev/null 2>"$tmp/chk_err"; then bad "the checker passed a tensor dead before its reader"; else
  grep -q "operand .* is not live" "$tmp/chk_err" && ok || bad "short: $(cat "$tmp/chk_err")"
fi

# Attributes C spells only through <math.h> (a JSON number past the
# double range is an infinity), and a negative zero in a list.
cat >"$tmp/nonfinite.json" <<'JSON'
{"mplan": "graph/1", "name": "nonfinite",
 "tensors": [{"name": "x", "dtype": "f32", "shape": [4], "kind": "input"},
             {"name": "y", "dtype": "f32", "shape": [4]},
             {"name": "z", "dtype": "f32", "shape": [4], "kind": "output"}],
 "ops": [{"name": "clip", "op": "Clip", "inputs": ["x"], "outputs": ["y"],
          "attrs": {"min": -1e999, "max": 1e999}},
         {"name": "leaky", "op": "LeakyRelu", "inputs": ["y"], "outputs": ["z"],
          "attrs": {"alpha": 0.25, "extra": [1e999, 0.5, -0.0]}}],
 "outputs": ["z"]}
JSON
run 0 plan "$tmp/nonfinite.json" --c-header "$tmp/nonfinite.h" -o "$tmp/nonfinite_plan.json"
check "non-finite attributes" "$tmp/nonfinite.h" "$tmp/nonfinite_plan.json" "$tmp/nonfinite.json"
has "$tmp/nonfinite.h" "#include <math.h>"
has "$tmp/nonfinite.h" '{"min", NONFINITE_ATTR_FLOAT, 0u, INT64_C(0), -(double)INFINITY, 0, ai + 0, af + 0},'
grep -q "^attr	1	extra	\[inf, 0.5, -0\]$" "$tmp/tables" && ok || bad "non-finite: the list reads $(grep extra "$tmp/tables")"
grep -q "math.h" "$tmp/mbv2.h" && bad "mbv2.h includes math.h" || ok

# Control flow: an If and a Loop (tests/data/control.onnx.bin). Each step
# names the Loop that runs it again (the body's ops), or -1.
run 0 plan tests/data/control.onnx.bin --c-header "$tmp/control.h" -o "$tmp/control.json"
check "control flow" "$tmp/control.h" "$tmp/control.json"
has "$tmp/control.h" "#define CONTROL_OPSET 13 /* the ONNX opset the ops follow */"
python3 - "$tmp/tables" <<'PY' && ok || bad "control flow: the loop fields"
import sys
steps = [l.rstrip("\n").split("\t")[2:] for l in open(sys.argv[1]) if l.startswith("step\t")]
at = {s[0]: k for k, s in enumerate(steps)}
for s in steps:
    want = at["loop"] if s[0].startswith("loop/body/") else -1
    if int(s[4]) != want:
        print("   ", s[0], "loop", s[4], "want", want)
        sys.exit(1)
sys.exit(0 if sum(s[0].startswith("loop/body/") for s in steps) == 3 else 1)
PY
# ... and the checker refuses a body op whose loop is not a Loop's step
sed 's/\({"loop\/body\/b_add", .*\), [0-9][0-9]*},$/\1, 10},/' "$tmp/control.h" >"$tmp/control_bad.h"
gcc "${flags[@]}" -DMP_HEADER="\"$tmp/control_bad.h\"" -DMP_UP=CONTROL_ -DMP_LOW=control_ tests/cli/c_header_check.c -o "$tmp/chk_loop" && ok || bad "control_bad.h does not compile"
if "$tmp/chk_loop" >/dev/null 2>"$tmp/chk_err"; then bad "the checker passed a loop field naming a Relu"; else
  grep -q "loop 10 is no later Loop" "$tmp/chk_err" && ok || bad "loop: $(cat "$tmp/chk_err")"
fi

# Every ONNX node test the planner takes (Debian's libonnx-testdata, with
# every pass and the memory order): its header compiles with -pedantic
# -Werror and re-proves its plan (tests/cli/c_header_check.c).
if [ -d "$cache/node" ]; then
  nodes=0 failed=0
  for d in "$cache"/node/*/; do
    "$mplan" plan "$d/model.onnx" --passes all --order memory --c-header "$tmp/node.h" >/dev/null 2>&1 || continue
    nodes=$((nodes + 1))
    if ! gcc "${flags[@]}" -DMP_HEADER="\"$tmp/node.h\"" -DMP_UP=NODE_ -DMP_LOW=node_ \
      tests/cli/c_header_check.c -o "$tmp/node_chk" 2>"$tmp/cc_err" || ! "$tmp/node_chk" >/dev/null 2>"$tmp/chk_err"; then
      failed=$((failed + 1))
      [ $failed -le 3 ] && echo "    $(basename "$d"): $(head -2 "$tmp/cc_err" "$tmp/chk_err" | tr '\n' ' ')"
    fi
  done
  [ $nodes -ge 870 ] && [ $failed -eq 0 ] && ok || bad "node tests: $failed of $nodes headers fail (at least 870 expected)"
  echo "    node tests: $nodes headers re-prove their plans"
else
  bad "no node tests in '$cache' (ctest fetches them: fixture onnx_data)"
fi

# The README's snippet compiles against MobileNetV2's header, inside a
# function (gcc and clang-19, -pedantic -Werror).
run 0 plan models/mobilenet_v2.json --c-header "$tmp/mbv2_plan.h"
python3 - README.md "$tmp/readme.c" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
code = re.search(r"--c-header F\.h`.*?```c\n(.*?)```", text, re.S).group(1)
lines = [l.strip() for l in code.splitlines()]
inc = [l for l in lines if l.startswith("#include")]
body = [l for l in lines if not l.startswith("#include")]
open(sys.argv[2], "w").write("\n".join(inc) + "\nint main(void) {\n" + "\n".join(body) +
                             "\n  return input == 0;\n}\n")
PY
for cc in gcc clang-19; do
  "$cc" "${flags[@]}" -I"$tmp" "$tmp/readme.c" -o "$tmp/readme" 2>"$tmp/cc_err" && "$tmp/readme" && ok ||
    { bad "the README's snippet with $cc"; head -3 "$tmp/cc_err"; }
done

# --c-header-weights: the header carries the bytes `mplan compile` gives
# every weight, so a runtime needs nothing else. c_header_run.c runs the
# CNN and BlazeFace (a real ONNX model, every pass, the memory order)
# from their headers alone, fed the inputs mplan-runner drew, and gets
# mplan-runner's outputs of the compiled bundle (other kernels: within
# 1e-5 of the largest value), and bit for bit its own no-reuse run.
runner=$(dirname "$mplan")/mplan-runner
cat >"$tmp/cmp_outputs.py" <<'PY'
import struct, sys
def tensors(p):
    d=open(p,'rb').read(); assert d[:8]==b'MPTENSOR'
    n=struct.unpack_from('<I',d,12)[0]; at=16; out={}
    for _ in range(n):
        nl=struct.unpack_from('<I',d,at)[0]; name=d[at+4:at+4+nl].decode(); rank=d[at+5+nl]
        rec=4+nl+8+8*rank; nb=struct.unpack_from('<Q',d,at+rec)[0]; rec+=8
        out[name]=d[at+rec:at+rec+nb]; rec+=nb; at+=rec+(8-rec%8)%8
    return out
def dump(p):
    d=open(p,'rb').read(); out={}; at=0
    while at<len(d):
        nl=d.index(b'\n',at); name,nb=d[at:nl].decode().rsplit(' ',1); nb=int(nb); out[name]=d[nl+1:nl+1+nb]; at=nl+1+nb
    return out
a=tensors(sys.argv[1]); b=dump(sys.argv[2])
assert sorted(a)==sorted(b), (sorted(a), sorted(b))
worst=0
for k in a:
    x=struct.unpack('%df'%(len(a[k])//4),a[k]); y=struct.unpack('%df'%(len(b[k])//4),b[k])
    scale=max(abs(v) for v in x) or 1
    err=max(abs(p-q) for p,q in zip(x,y))/scale; worst=max(worst,err); print(k,len(x),'max err / max |value|: %.3g'%err)
sys.exit(0 if worst < 1e-5 else 1)
PY
weights_case() {
  local name=$1 model=$2 stem=$3 up
  up=$(echo "$stem" | tr a-z A-Z)
  run 0 compile "$model" --passes all --order memory -o "$tmp/$stem.mpk"
  "$runner" "$tmp/$stem.mpk" --write-inputs "$tmp/${stem}_in.t" --outputs "$tmp/${stem}_out.t" >/dev/null && ok || bad "$name: mplan-runner failed"
  run 0 plan "$model" --passes all --order memory --c-header "$tmp/$stem.h" --c-header-weights
  grep -q 'static const uint8_t w\[' "$tmp/$stem.h" && ok || bad "$name: no weights in the header"
  gcc "${flags[@]}" -O1 -DMP_HEADER="\"$tmp/$stem.h\"" -DMP_UP="${up}_" -DMP_LOW="${stem}_" tests/cli/c_header_run.c -o "$tmp/${stem}_run" -lm && ok || bad "$name: c_header_run.c does not compile"
  "$tmp/${stem}_run" "$tmp/${stem}_got" "$tmp/${stem}_in.t" >"$tmp/msg" 2>&1 && grep -q "outputs identical to the run without reuse" "$tmp/msg" && ok || bad "$name: $(cat "$tmp/msg")"
  python3 "$tmp/cmp_outputs.py" "$tmp/${stem}_out.t" "$tmp/${stem}_got" >"$tmp/msg" 2>&1 && ok || bad "$name: outputs differ from mplan-runner's: $(cat "$tmp/msg")"
  sed 's/^/    /' "$tmp/msg"
}
weights_case "cnn with weights" "$tmp/cnn.json" cnnw
blazeface=$cache/blazeface/face_detection_front_128x128_barracuda.onnx
if [ -f "$blazeface" ]; then
  weights_case "blazeface with weights" "$blazeface" bfw
else
  bad "no BlazeFace in '$cache' (ctest fetches it: fixture onnx_data)"
fi
grep -q 'w + ' "$tmp/mbv2.h" && bad "mbv2.h has data without --c-header-weights" || ok
run 2 plan models/mobilenet_v2.json --c-header-weights
has "$tmp/err" "mplan plan: --c-header-weights puts the weights into the header of --c-header F.h, which is missing"
run 2 plan tests/data/input.12.csv --c-header "$tmp/csvw.h" --c-header-weights
has "$tmp/err" "--c-header-weights needs a graph"
[ ! -e "$tmp/csvw.h" ] && ok || bad "a header was written for a CSV"

# Bad names: one line, exit 2, no file.
run 2 plan models/mobilenet_v2.json --c-header "$tmp/plan.txt"
has "$tmp/err" "mplan plan: --c-header '$tmp/plan.txt': the name must end in .h"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -e "$tmp/plan.txt" ] && ok || bad "--c-header .txt: a file or more lines"
run 2 report models/mobilenet_v2.json --c-header "$tmp/same.h" --html "$tmp/same.h"
has "$tmp/err" "is named by two output options"
run 2 plan tests/bad/cycle.json --c-header "$tmp/cycle.h"
[ ! -e "$tmp/cycle.h" ] && ok || bad "a header was written for a bad model"
run 2 verify models/mobilenet_v2.json --c-header "$tmp/v.h"
has "$tmp/err" "only --html and --sqlite"

echo "c header: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
