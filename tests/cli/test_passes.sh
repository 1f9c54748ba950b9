#!/usr/bin/env bash
# Graph passes and memory-aware scheduling on the command line (issue 9):
# --passes and --order parsing and errors, the per-pass and scheduling
# tables, plan JSON with shared buffers validated and explained, SQLite
# rows, DOT clusters, and the published lower bounds.
# usage: test_passes.sh MPLAN SOURCE_DIR
set -u
mplan=$1
src=$2
. "$(dirname "$0")/lib.sh"
lines() { [ "$(wc -l <"$1")" -eq "$2" ] && ok || bad "$(basename "$1") has $(wc -l <"$1") lines, expected $2"; }
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

cd "$src"
mv2=models/mobilenet_v2.json
# The table: every pass, before -> after; inplace moves the peak.
run 0 plan $mv2 --passes all --order memory -o "$tmp/p.json" &&
  has "$tmp/out" "passes      fold, eliminate, accumulate, attention, fuse, hfuse, absorb, views, concat, inplace" &&
  has "$tmp/out" "lower bound before -> after" &&
  has "$tmp/out" "1,505,280 -> 1,404,928 (-6.7%)" &&
  has "$tmp/out" "depthwise Conv 17, fused epilogue 10" &&
  has "$tmp/out" "fusions     10" &&
  has "$tmp/out" "schedule    memory:" &&
  has "$tmp/out" "order memory"
run 0 validate "$tmp/p.json" && has "$tmp/out" ": valid: 134 buffers"
[ "$(py "$tmp/p.json" "(d['summary']['lower_bound_bytes'], len(d['passes']['rows']), d['passes']['rows'][-1]['peak_moved'], len(d['schedule']['candidates']), d['summary']['order'])")" = "(1404928, 10, True, 6, 'memory')" ] && ok || bad "plan JSON: passes or schedule fields wrong"
# A shared buffer names every tensor it holds; fused ops say what they absorbed.
[ "$(py "$tmp/p.json" "[b['tensors'] for b in d['buffers'] if b['name']=='b2_expand_out'][0]")" = "['b2_expand_out', 'b2_dw_out']" ] && ok || bad "b2_expand_out does not list b2_dw_out"
[ "$(py "$tmp/p.json" "[e.get('epilogue') for e in d['execution'] if e['op']=='b3_project'][0]")" = "Add" ] && ok || bad "b3_project is not fused with its Add"
# Explaining the stored plan gives the same peak.
run 0 explain "$tmp/p.json" --no-map && has "$tmp/out" "Peak 1,404,928 B (1.34 MiB)"
# A hand-edited plan that moves a shared buffer onto a live one is caught.
python3 - "$tmp/p.json" "$tmp/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = {x['name']: x for x in d['buffers']}
b['b2_expand_out']['offset'] = b['b1_project_out']['offset']
json.dump(d, open(sys.argv[2], 'w'))
PY
run 1 validate "$tmp/bad.json" && has "$tmp/err" "'b2_expand_out' (offset"

# Concat slices: both branch outputs are written into their halves of the
# Concat's buffer, which drops the peak from a + b + c to c + y; the H
# Concat is not contiguous per input and stays a copy. The plan says where
# each slice starts, explain and SQLite say why, and the runtime (poison,
# paranoid) finds the outputs bit for bit equal to the no-reuse run.
cat=tests/data/passes/concat.json
run 0 plan $cat --passes all -o "$tmp/c.json" &&
  has "$tmp/out" "8,192 -> 6,144 (-25.0%)" && has "$tmp/out" "Concat input 2"
run 0 validate "$tmp/c.json"
[ "$(py "$tmp/c.json" "[(b['tensors'], b['tensor_offsets'], b['size']) for b in d['buffers'] if 'tensors' in b]")" = "[(['a', 'b', 'c'], [0, 2048, 0], 4096)]" ] && ok || bad "concat: slices not in the plan JSON"
python3 - "$tmp/c.json" "$tmp/c_bad.json" "$tmp/c_len.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d['buffers'] if 'tensor_offsets' in x][0]
b['tensor_offsets'][1] = b['size']
json.dump(d, open(sys.argv[2], 'w'))
b['tensor_offsets'] = [0]
json.dump(d, open(sys.argv[3], 'w'))
PY
run 2 validate "$tmp/c_bad.json" && has "$tmp/err" "tensor_offsets[1]: expected a whole number below the size 4096" && lines "$tmp/err" 1
run 2 validate "$tmp/c_len.json" && has "$tmp/err" ".tensor_offsets: expected an array as long as \"tensors\"" && lines "$tmp/err" 1
run 0 plan $cat --passes fold,eliminate,fuse,hfuse,absorb,views,inplace && has "$tmp/out" "lower bound 8,192 B"
run 0 explain $cat --passes all --no-map && has "$tmp/out" "a also holds b (in place (concat slice) at +2048), c (own)"
run 0 report $cat --passes all --sqlite "$tmp/c.db" --dot "$tmp/c.dot" &&
  has "$tmp/c.dot" 'slice at +2048 of buffer a' && has "$tmp/c.dot" 'in buffer a'
[ "$(sqlite3 "$tmp/c.db" "SELECT group_concat(tensor || ':' || offset, ' ') FROM (SELECT * FROM tensor_buffer WHERE rule = 'in place (concat slice)' ORDER BY tensor)")" = "a:0 b:2048" ] && ok || bad "concat: SQLite tensor_buffer offsets"
run 0 verify $cat --passes all --paranoid && has "$tmp/out" "verified: no event"
run 0 verify $cat --passes all --order memory --poison --redzone 16 && has "$tmp/out" "verified: no event"
# A graph output written in place over a slice 16 bytes into its buffer:
# at the default 16-byte output alignment it shares the slice's bytes;
# when outputs need 64, it keeps bytes of its own.
al=tests/data/passes/concat_align.json
holds() { py "$1" "[b['tensors'] for b in d['buffers'] if 'tensors' in b]"; }
run 0 plan $al --passes views,concat,inplace -o "$tmp/al.json" &&
  [ "$(holds "$tmp/al.json")" = "[['a', 'b', 'c', 'y']]" ] && ok || bad "concat_align: y not in place at 16"
run 0 plan $al --passes views,concat,inplace --backend tests/data/passes/backend_out64.json -o "$tmp/al64.json" &&
  [ "$(holds "$tmp/al64.json")" = "[['a', 'b', 'c']]" ] && ok || bad "concat_align: y in place at a 64-byte output alignment"
run 0 verify $al --passes views,concat,inplace --backend tests/data/passes/backend_out64.json --paranoid
# o2 reads slice a and writes slice b of one buffer: a write by o2 past b
# lands in a and is named at o2 (two slices are not one tensor in place).
run 1 verify tests/data/passes/concat_oob.json --passes all --poison --inject oob:o2 &&
  has "$tmp/out" "'a' changed by 'o2'"
# An early-free of the Concat's buffer is caught like any other.
run 1 verify $cat --passes all --poison --inject early-free:c
# A stride-2 depthwise Conv written over its input keeps the input's
# 2,048 bytes while its 512-byte result waits for the pointwise Conv:
# that union would raise the bound from 2,560 to 4,096 B, so the inplace
# pass leaves it out (the figures are derived in the file's description).
dw2=tests/data/passes/dw_stride2.json
run 0 plan $dw2 --passes inplace && has "$tmp/out" "lower bound 2,560 B" &&
  has "$tmp/out" "2,560 -> 2,560 (=)" && has "$tmp/out" "nothing to do"
run 0 verify $dw2 --passes all --poison --redzone 16 && has "$tmp/out" "verified: no event"
# A U-Net whose tail (a 9,216-byte zoom and a Neg the inplace pass writes
# over it) holds the peak while the concat pass judges: every skip goes
# into its Concat's buffer, and after inplace the three buffers, half
# idle, are the peak at the bottleneck (13,312 B). The pass manager then
# reruns concat and inplace with the three skips kept out of the slices
# (10,752 B), and puts the deepest back: 10,240 B, the tail's own peak
# (the figures are derived in the file's description).
us=tests/data/passes/unet_skip.json
run 0 plan $us --passes all --order memory -o "$tmp/us.json" &&
  has "$tmp/out" "lower bound 10,240 B" &&
  has "$tmp/out" "Concat input 4; 2 early inputs kept out of their Concat slice (idle at the final peak)" &&
  has "$tmp/out" "18,432 -> 10,240 (-44.4%)"
[ "$(py "$tmp/us.json" "[b['tensors'] for b in d['buffers'] if 'tensors' in b][:3]")" = "[['e3', 'u3', 'c3'], ['u2', 'c2'], ['u1', 'c1']]" ] && ok || bad "unet_skip: e1 and e2 kept out, e3 in its slice"
run 0 validate "$tmp/us.json"
[ "$(py "$tmp/us.json" "(d['peak']['idle_bytes'], [r['pass'] for r in d['passes']['rows']][-2:])")" = "(0, ['concat', 'inplace'])" ] && ok || bad "unet_skip: refined rows or idle bytes"
run 0 plan $us --passes views,concat --order memory && has "$tmp/out" "lower bound 18,432 B"
run 0 verify $us --passes all --order memory --poison --redzone 16 && has "$tmp/out" "verified: no event"
# An SE block whose Mul is a Concat slice (PP-OCRv4 det's neck): the Mul
# is produced late, but the inplace pass moved its input y into the
# slice, so the slice's bytes are written at y's Conv, a peak step while
# the other slice comes later. Invariant 9 dates a slice by the first
# write of any tensor in its bytes: z is kept out, 12,800 -> 10,752 B
# (the figures are derived in the file's description).
se=tests/data/passes/se_slice.json
run 0 plan $se --passes all --order memory -o "$tmp/se.json" &&
  has "$tmp/out" "lower bound 10,752 B" &&
  has "$tmp/out" "Concat input 1; 1 early input kept out of its Concat slice (idle at the final peak)"
[ "$(py "$tmp/se.json" "([b['tensors'] for b in d['buffers'] if 'tensors' in b], d['peak']['idle_bytes'])")" = "([['y', 'z'], ['u', 'c'], ['m', 'n']], 0)" ] && ok || bad "se_slice: z kept out of its slice, the Mul over y"
run 0 validate "$tmp/se.json"
run 0 plan $se --passes views,concat,inplace --order memory && has "$tmp/out" "lower bound 10,752 B"
run 0 verify $se --passes all --order memory --poison --redzone 16 && has "$tmp/out" "verified: no event"
# Absorb rule 3: 4-bit weights, blocked (int4, block 32 along the input
# axis) and per output channel (uint4), DequantizeLinear'd into MatMuls.
# Unrewritten, each f32 weight (128 x 256 x 4 = 131,072 B) is an arena
# activation: dn_w + r (8,192) + d (4,096) = 143,360 B at 'down'.
# Absorbed, the weights stay 4-bit and the peak is r and y: 8,192 + 4,096
# = 12,288 B (fuse folds Relu and the residual Add into the MatMuls);
# the runtime's panel of weight columns is workspace (69,760 B at 'up',
# printed by compile). saved_bytes 2 x 2 x 131,072.
d4=tests/data/passes/dq4_mlp.json
run 0 plan $d4 --passes none && has "$tmp/out" "lower bound 143,360 B"
run 0 plan $d4 --passes all --order memory -o "$tmp/d4.json" &&
  has "$tmp/out" "lower bound 12,288 B" &&
  has "$tmp/out" "143,360 -> 12,288 (-91.4%)" && has "$tmp/out" "DequantizeLinear 2"
[ "$(py "$tmp/d4.json" "sorted((e['op'], e['inputs']) for e in d['execution'])")" = "[('down', ['r', 'w_dn', 'x', 's_dn', 'z_dn']), ('up', ['x', 'w_up', 's_up', 'z_up'])]" ] && ok || bad "dq4_mlp: absorbed inputs"
run 0 compile $d4 --passes all --order memory -o "$tmp/d4.mpk" &&
  has "$tmp/out" "workspace 69,760 B (68.12 KiB) for the reference kernels (op 'up')"
# Absorb rule 3 into Convs: dq_cnn's five Conv weights are quantized per
# output channel (int8, uint8, uint4), per tensor (uint8, a grouped Conv)
# and blocked along the input channels (int4). Unrewritten, c3's f32
# weight (64 x 64 x 9 x 4 = 147,456 B) is live with h2 and h3 (65,536
# each) and a (8,192): 286,720 B at 'c3'. Absorbed, the peak is two
# activations and a: 139,264 B; the depthwise Conv still runs in place
# (its prologue reads only the weight); the runtime widens a panel of at
# most 64 KiB of output channels, never across a group (c2: 56 of 288
# weights each, 64,512 B, + the kernel's 1,024 B plane + 64).
dc=tests/data/passes/dq_cnn.json
run 0 plan $dc --passes none --order memory && has "$tmp/out" "lower bound 286,720 B"
run 0 plan $dc --passes all --order memory -o "$tmp/dc.json" &&
  has "$tmp/out" "286,720 -> 139,264 (-51.4%)" &&
  has "$tmp/out" "DequantizeLinear 5" && has "$tmp/out" "depthwise Conv 1, fused epilogue 1"
[ "$(py "$tmp/dc.json" "sorted(e['op'] for e in d['execution'])")" = "['act0', 'c1', 'c2', 'c3', 'dw', 'pw']" ] && ok || bad "dq_cnn: the DequantizeLinear ops are not all absorbed"
run 0 compile $dc --passes all --order memory -o "$tmp/dc.mpk" &&
  has "$tmp/out" "workspace 65,600 B (64.06 KiB) for the reference kernels (op 'c2')"
# The same into Gemms (dq_fc: quantized nn.Linear layers, an int8 weight
# per output channel transposed, uint4 blocked along K with alpha, beta
# and C, uint8 per tensor, int4 blocked along K transposed with a
# residual Add written over its operand). Unrewritten, fc1's f32 weight
# (512 x 256 x 4 = 524,288 B) is live with x and h1 (4,096 and 8,192 B):
# 532,480 B. Absorbed: 10,240 B; the workspace holds fc1's panel of 64
# rows of 256 (65,536 B) and the product's panel of 4 x 64, 66,688 B.
df=tests/data/passes/dq_fc.json
run 0 plan $df --passes none --order memory && has "$tmp/out" "lower bound 532,480 B"
run 0 plan $df --passes all --order memory -o "$tmp/df.json" &&
  has "$tmp/out" "532,480 -> 10,240 (-98.1%)" && has "$tmp/out" "DequantizeLinear 4"
[ "$(py "$tmp/df.json" "[(e['op'], e['outputs']) for e in d['execution']]")" = "[('fc1', ['r1']), ('fc2', ['h2']), ('sk', ['s']), ('fc3', ['y'])]" ] && ok || bad "dq_fc: Gemms with their prologues and epilogues"
run 0 compile $df --passes all --order memory -o "$tmp/df.mpk" &&
  has "$tmp/out" "workspace 66,688 B (65.12 KiB) for the reference kernels (op 'fc1')"
# Activations quantized and dequantized before grouped Convs (qdq_dw:
# [1, 16, 64, 64], 262,144 B in f32): absorbed, each Conv reads the
# quantized input, and the fused residual Add writes over its operand.
# The runtime widens a depthwise or grouped Conv's input a panel of whole
# groups at a time (4 of 16 channels, 65,536 B) instead of whole. Its Conv
# of one group (c3) reads a quantized input (65,536 B in f32) and a
# quantized weight (18,432 B): both are widened a part at a time (a band
# of output rows, a panel of output channels), so rule 5 absorbs both,
# and the lower bound falls from 458,752 B (the weight's alone) to
# 409,600 B. c3's workspace is then the largest: a band of 16 output rows
# reads 18 input rows of its 16 channels (36,864 B), those outputs of its
# 32 channels (65,536 B), the weight's panel (all of it, 18,432 B) and the
# kernel's plane of accumulators (4,096 B), each rounded up to 64 B.
qd=tests/data/passes/qdq_dw.json
run 0 plan $qd --passes none --order memory && has "$tmp/out" "lower bound 786,432 B"
run 0 plan $qd --passes all --order memory -o "$tmp/qd.json" &&
  has "$tmp/out" "786,432 -> 589,824 (-25.0%)" && has "$tmp/out" "DequantizeLinear 5" &&
  has "$tmp/out" "lower bound 409,600 B"
[ "$(py "$tmp/qd.json" "[(e['inputs'], e['prologue']) for e in d['execution'] if e['op'] == 'c3']")" = "[(['q3', 'wq3', '', 's3', 'z3', 'ws3', ''], 'DequantizeLinear:0,DequantizeLinear:1')]" ] && ok || bad "qdq_dw: c3 did not take both DequantizeLinears"
run 0 compile $qd --passes all --order memory -o "$tmp/qd.mpk" &&
  has "$tmp/out" "workspace 125,120 B (122.19 KiB) for the reference kernels (op 'c3')"
# A QDQ depthwise Conv reading its 8-bit input under a DequantizeLinear
# and ending in a QuantizeLinear of the same type writes its output over
# that input (qdq_dw_inplace: 32,768 -> 17,408 B, both depthwise Convs in
# one buffer). With a tail where the stride-2 one's smaller output lives
# on (qdq_dw_apart), that union ties while inplace judges it and leaves
# bytes idle at the final peak: the pass manager keeps it apart, 98,304
# -> 86,016 B (the figures are derived in the files' descriptions).
qi=tests/data/passes/qdq_dw_inplace.json
run 0 plan $qi --passes all --order memory -o "$tmp/qi.json" &&
  has "$tmp/out" "32,768 -> 17,408 (-46.9%)" && has "$tmp/out" "depthwise Conv 2" &&
  has "$tmp/out" "lower bound 17,408 B"
[ "$(py "$tmp/qi.json" "([b['tensors'] for b in d['buffers'] if 'tensors' in b], [(e['op'], e.get('prologue')) for e in d['execution'] if e['type'] == 'Conv'])")" = "([['q0', 'q1', 'q2']], [('dw1', 'DequantizeLinear:0'), ('dw2', 'DequantizeLinear:0'), ('pw', 'DequantizeLinear:0')])" ] && ok || bad "qdq_dw_inplace: dw1 and dw2 not written over q0"
run 0 verify $qi --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
qa=tests/data/passes/qdq_dw_apart.json
run 0 plan $qa --passes all --order memory -o "$tmp/qa.json" &&
  has "$tmp/out" "131,072 -> 86,016 (-34.4%)" &&
  has "$tmp/out" "depthwise Conv 1, Neg 1; 1 smaller output kept apart from its input (idle at the final peak, or the bound is lower without)" &&
  has "$tmp/out" "lower bound 86,016 B"
[ "$(py "$tmp/qa.json" "[b['tensors'] for b in d['buffers'] if 'tensors' in b]")" = "[['q0', 'q1'], ['zm', 'out']]" ] && ok || bad "qdq_dw_apart: dw2 not kept apart"
run 0 verify $qa --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
# The channel padding of a TensorFlow Pad between QDQ pairs (qdq_pad):
# the ConstantOfShape of f32 zeros becomes one of the zero point in uint8
# (eliminate rule 8), the Concat moves 8-bit values and writes its inputs'
# slices: 14,336 -> 6,144 B (derived in the file's description). A fill of
# any other value stays f32.
qp=tests/data/passes/qdq_pad.json
run 0 plan $qp --passes all --order memory -o "$tmp/qp.json" &&
  has "$tmp/out" "lower bound 6,144 B" && has "$tmp/out" "QDQ pair around a move 1, dead op 1"
[ "$(py "$tmp/qp.json" "([(e['op'], e['type'], e['inputs'], e.get('prologue')) for e in d['execution'] if e['op'] in ('fill_q', 'pad')], [b['tensors'] for b in d['buffers'] if 'tensors' in b])")" = "([('fill_q', 'ConstantOfShape', ['shape'], None), ('pad', 'Concat', ['q1', 'qp_fill'], None)], [['q1', 'qp', 'qp_fill']])" ] && ok || bad "qdq_pad: the fill not quantized, or the Concat not 8-bit in place"
run 0 verify $qp --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
python3 - "$qp" "$tmp/qp_half.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
next(o for o in d["ops"] if o["name"] == "fill")["attrs"] = {"value": [0.5]}
json.dump(d, open(sys.argv[2], "w"))
PY
run 0 plan "$tmp/qp_half.json" --passes all --order memory &&
  has "$tmp/out" "lower bound 14,336 B" && lacks "$tmp/out" "QDQ pair around a move"
# An SE block's residual in f32 (se_residual): the Mul x * s heads a chain
# that takes the Add x + m with x as its operand (fuse condition 9), and
# the fused op writes over x: 65,568 -> 40,960 B (derived in the file's
# description).
sr=tests/data/passes/se_residual.json
run 0 plan $sr --passes all --order memory -o "$tmp/sr.json" &&
  has "$tmp/out" "lower bound 40,960 B" && has "$tmp/out" "98,304 -> 65,568 (-33.3%)" &&
  has "$tmp/out" "Mul 1"
[ "$(py "$tmp/sr.json" "([(e['op'], e['inputs'], e.get('epilogue')) for e in d['execution'] if e['type'] == 'Mul'], [b['tensors'] for b in d['buffers'] if 'tensors' in b][0])")" = "([('mul', ['h', 's', 'h'], 'Add')], ['h', 'a'])" ] && ok || bad "se_residual: the Mul did not take the Add over h"
run 0 verify $sr --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
# A TensorFlow Pad before a stride-2 depthwise Conv (pad_conv): eliminate
# rule 9 folds it into the Conv's pads, the depthwise Conv then writes
# over the expand Conv's output: 34,880 -> 18,432 B (derived in the
# file's description). The Pad stays where the rule would not be exact or
# does not apply: a bias element of -0, a non-zero value, reflect mode.
# elim_graph FILE JSON BOUND_WITHOUT TEXT...: FILE planned with every
# pass and the memory order into JSON, the output holding each TEXT, and
# verified in paranoid mode; with every pass but eliminate, its lower
# bound is BOUND_WITHOUT
without_eliminate=fold,accumulate,attention,fuse,hfuse,absorb,views,concat,inplace
elim_graph() {
  local f=$1 json=$2 without=$3 text
  shift 3
  if run 0 plan "$f" --passes all --order memory -o "$json"; then
    for text in "$@"; do has "$tmp/out" "$text"; done
  fi
  run 0 verify "$f" --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
  run 0 plan "$f" --passes $without_eliminate --order memory && has "$tmp/out" "lower bound $without B"
}
pc=tests/data/passes/pad_conv.json
elim_graph $pc "$tmp/pc.json" 34,880 "lower bound 18,432 B" "34,880 -> 32,768 (-6.1%)" "Pad into Conv 1"
[ "$(py "$tmp/pc.json" "([(e['op'], e['inputs']) for e in d['execution']], [b['tensors'] for b in d['buffers'] if 'tensors' in b])")" = "([('expand', ['x', 'w1', 'b1']), ('dw', ['r', 'wd', 'bd']), ('project', ['d', 'w2'])], [['r', 'd']])" ] && ok || bad "pad_conv: the depthwise Conv does not read r in place"
python3 - "$pc" "$tmp" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
def variant(name, edit):
    d = json.load(open(src))
    edit(d)
    json.dump(d, open(os.path.join(out, "pc_%s.json" % name), "w"))
t = lambda d, n: next(x for x in d["tensors"] if x["name"] == n)
o = lambda d, n: next(x for x in d["ops"] if x["name"] == n)
variant("negzero", lambda d: t(d, "bd")["data"].__setitem__(3, -0.0))
def one(d):
    d["tensors"].append({"name": "one", "dtype": "f32", "shape": [], "kind": "weight", "data": [1.0]})
    o(d, "pad")["inputs"].append("one")
variant("one", one)
variant("reflect", lambda d: o(d, "pad")["attrs"].__setitem__("mode", "reflect"))
def attr(d):
    o(d, "pad")["inputs"] = ["r"]
    o(d, "pad")["attrs"]["pads"] = [0, 0, 0, 0, 0, 0, 1, 1]
variant("attr", attr)
PY
for v in negzero one reflect; do
  run 0 plan "$tmp/pc_$v.json" --passes all --order memory &&
    lacks "$tmp/out" "Pad into Conv" && has "$tmp/out" "lower bound 34,880 B"
done
run 0 plan "$tmp/pc_attr.json" --passes all --order memory &&
  has "$tmp/out" "Pad into Conv 1" && has "$tmp/out" "lower bound 18,432 B"
# The same in QDQ form (qdq_pad_conv, qdq_model.py --full's layout): the
# pair after the Pad moves before it, where it cancels the pair before:
# 34,880 -> 8,192 B. In the default layout (one pair, after the Pad) the
# pair's copies quantize r; a pair whose zero points differ keeps the Pad.
# A bias of DequantizeLinear(int32) takes the rule, unless it holds a -0.
qc=tests/data/passes/qdq_pad_conv.json
elim_graph $qc "$tmp/qc.json" 34,880 "lower bound 8,192 B" "Pad into Conv (through a QDQ pair) 1"
[ "$(py "$tmp/qc.json" "[(e['op'], e['inputs'][0], e.get('prologue'), e.get('epilogue')) for e in d['execution']]")" = "[('expand', 'x', None, 'Relu,QuantizeLinear'), ('dw', 'rq', 'DequantizeLinear:0', None), ('project', 'd', None, None)]" ] && ok || bad "qdq_pad_conv: the depthwise Conv does not read rq under its DequantizeLinear"
python3 - "$qc" "$tmp" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
d = json.load(open(src))
o = lambda n: next(x for x in d["ops"] if x["name"] == n)
o("pad")["inputs"][0] = "r"
d["ops"] = [x for x in d["ops"] if x["name"] not in ("q_r", "dq_r")]
d["tensors"] = [t for t in d["tensors"] if t["name"] not in ("rq", "rd")]
json.dump(d, open(os.path.join(out, "qc_default.json"), "w"))
d = json.load(open(src))
d["tensors"].append({"name": "z2", "dtype": "u8", "shape": [], "kind": "weight", "data": [127]})
next(x for x in d["ops"] if x["name"] == "dq_p")["inputs"][2] = "z2"
json.dump(d, open(os.path.join(out, "qc_z.json"), "w"))
PY
run 0 plan "$tmp/qc_default.json" --passes all --order memory -o "$tmp/qcd.json" &&
  has "$tmp/out" "lower bound 8,192 B" && has "$tmp/out" "Pad into Conv (through a QDQ pair) 1"
[ "$(py "$tmp/qcd.json" "[(e['op'], e['inputs'][0], e.get('prologue')) for e in d['execution'] if e['op'] == 'dw']")" = "[('dw', 'pq_unpadded', 'DequantizeLinear:0')]" ] && ok || bad "qdq_pad_conv (default layout): the pair was not moved before the Pad"
run 0 verify "$tmp/qc_default.json" --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
run 0 plan "$tmp/qc_z.json" --passes all --order memory &&
  lacks "$tmp/out" "Pad into Conv" && has "$tmp/out" "lower bound 34,880 B"
qb=tests/data/passes/qdq_bias_i32.json
elim_graph $qb "$tmp/qb.json" 34,880 "lower bound 8,192 B" "Pad into Conv (through a QDQ pair) 1"
[ "$(py "$tmp/qb.json" "[e['inputs'] for e in d['execution'] if e['op'] == 'dw']")" = "[['rq', 'wd', 'bd', 's', 'z']]" ] && ok || bad "qdq_bias_i32: the depthwise Conv does not read rq and the folded bias"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
next(t for t in d['tensors'] if t['name'] == 'bs')['data'] = [-0.05]
json.dump(d, open(sys.argv[2], 'w'))" $qb "$tmp/qb_neg.json"
run 0 plan "$tmp/qb_neg.json" --passes all --order memory &&
  lacks "$tmp/out" "Pad into Conv" && has "$tmp/out" "lower bound 34,880 B"
# A bilinear Resize between QDQ pairs (qdq_resize): absorb rule 9 gives
# it the DequantizeLinear and fuse its QuantizeLinear, so it reads and
# writes 8 bits a plane at a time: 40,960 -> 24,576 B (derived in the
# file's description); a cubic Resize stays apart, and so does one with a
# keep_aspect_ratio_policy (its one scale would apply to the channels).
qr=tests/data/passes/qdq_resize.json
run 0 plan $qr --passes all --order memory -o "$tmp/qr.json" &&
  has "$tmp/out" "lower bound 24,576 B" && has "$tmp/out" "Resize 1"
[ "$(py "$tmp/qr.json" "[(e['op'], e['inputs'][0], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['op'] == 'up']")" = "[('up', 'xq', 'DequantizeLinear:0', 'QuantizeLinear')]" ] && ok || bad "qdq_resize: the Resize does not read xq and write uq"
run 0 verify $qr --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
python3 -c "
import json, sys
for attr, value, out in (('mode', 'cubic', sys.argv[2]),
                         ('keep_aspect_ratio_policy', 'not_larger', sys.argv[3])):
    d = json.load(open(sys.argv[1]))
    next(o for o in d['ops'] if o['name'] == 'up')['attrs'][attr] = value
    json.dump(d, open(out, 'w'))" $qr "$tmp/qr_cubic.json" "$tmp/qr_aspect.json"
for v in cubic aspect; do
  run 0 plan "$tmp/qr_$v.json" --passes all --order memory && has "$tmp/out" "lower bound 40,960 B"
done
# A Transpose whose one reader is a QuantizeLinear (quant_early): the
# QuantizeLinear goes before it and the Transpose moves 8-bit values
# (eliminate rule 10), 16,384 -> 10,240 B; not for a MaxPool (a max of
# values that may be NaN), a Slice that drops elements, nor a per-channel
# QuantizeLinear.
qe=tests/data/passes/quant_early.json
elim_graph $qe "$tmp/qe.json" 16,384 "lower bound 10,240 B" "QuantizeLinear before a move 1"
[ "$(py "$tmp/qe.json" "[(e['op'], e['type'], e['inputs'][0], e['outputs']) for e in d['execution']][:3]")" = "[('norm', 'Sub', 'x', ['n']), ('quant_early', 'QuantizeLinear', 'n', ['q_early']), ('nchw', 'Transpose', 'q_early', ['q'])]" ] && ok || bad "quant_early: the Transpose does not move 8-bit values"
[ "$(py "$tmp/qe.json" "[(b['name'], b['shape']) for b in d['buffers'] if b['name'] == 'q_early']")" = "[('q_early', '[1,16,16,8]')]" ] && ok || bad "quant_early: q_early is not n's shape"
python3 - "$qe" "$tmp" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
d = json.load(open(src))
t = lambda n: next(x for x in d["tensors"] if x["name"] == n)
o = lambda n: next(x for x in d["ops"] if x["name"] == n)
for n in ("x", "n"):
    t(n)["shape"], t(n)["layout"] = [1, 8, 16, 16], "NCHW"
for n in ("t", "q", "d"):
    t(n)["shape"] = [1, 8, 8, 8]
t("y")["shape"] = [1, 4, 8, 8]
o("nchw").update({"op": "MaxPool", "attrs": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}})
json.dump(d, open(os.path.join(out, "qe_pool.json"), "w"))
d = json.load(open(src))
d["tensors"].append({"name": "sc", "dtype": "f32", "shape": [8], "kind": "weight", "data": [0.05] * 8})
d["tensors"].append({"name": "zc", "dtype": "u8", "shape": [8], "kind": "weight", "data": [128] * 8})
for n in ("quant", "dequant"):
    op = next(x for x in d["ops"] if x["name"] == n)
    op["inputs"][1:] = ["sc", "zc"]
    op["attrs"] = {"axis": 1}
json.dump(d, open(os.path.join(out, "qe_axis.json"), "w"))
d = json.load(open(src))
t = lambda n: next(x for x in d["tensors"] if x["name"] == n)
for n in ("t", "q", "d"):
    t(n)["shape"] = [1, 8, 8, 16]
t("y")["shape"] = [1, 4, 8, 16]
d["tensors"] += [{"name": n, "dtype": "i64", "shape": [1], "kind": "weight", "data": [v]}
                 for n, v in (("st", 0), ("en", 8), ("ax", 2))]
o = next(x for x in d["ops"] if x["name"] == "nchw")
d["ops"].insert(d["ops"].index(o) + 1, {"name": "half", "op": "Slice", "inputs": ["t", "st", "en", "ax"], "outputs": ["th"]})
d["tensors"].append({"name": "th", "dtype": "f32", "shape": [1, 8, 8, 16], "layout": "NCHW"})
for n in ("t",):
    t(n)["shape"] = [1, 8, 16, 16]
next(x for x in d["ops"] if x["name"] == "quant")["inputs"][0] = "th"
json.dump(d, open(os.path.join(out, "qe_slice.json"), "w"))
PY
# a Slice that keeps half of t keeps its QuantizeLinear after it
# (quantizing all of t could take more bytes than the half), and the
# Transpose, read by the Slice, keeps its f32 output
run 0 plan "$tmp/qe_slice.json" --passes all --order memory && lacks "$tmp/out" "QuantizeLinear before a move"
for v in pool axis; do
  run 0 plan "$tmp/qe_$v.json" --passes all --order memory && lacks "$tmp/out" "QuantizeLinear before a move"
done
# With a scalar mean instead (nhwc_first, eliminate rule 11), the Transpose goes
# before the Sub and reads the graph input: the same 10,240 B, now with
# no Transpose before the QuantizeLinear. From an op's output (a Softmax
# of the input first), the Transpose stays after the Sub, and rule 10
# applies instead.
nf=tests/data/passes/nhwc_first.json
python3 - "$nf" "$tmp" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
d = json.load(open(src))
d["tensors"].append({"name": "sm", "dtype": "f32", "shape": [1, 16, 16, 8], "layout": "NHWC"})
d["ops"].insert(0, {"name": "soft", "op": "Softmax", "inputs": ["x"], "outputs": ["sm"]})
next(x for x in d["ops"] if x["name"] == "norm")["inputs"][0] = "sm"
json.dump(d, open(os.path.join(out, "qe_softmax.json"), "w"))
PY
run 0 plan $nf --passes all --order memory -o "$tmp/qes.json" &&
  has "$tmp/out" "Transpose before elementwise ops 1" && lacks "$tmp/out" "QuantizeLinear before a move" &&
  has "$tmp/out" "lower bound 10,240 B"
[ "$(py "$tmp/qes.json" "[(e['op'], e['type'], e['inputs'][0]) for e in d['execution']][:3]")" = "[('nchw_first', 'Transpose', 'x'), ('norm_nchw', 'Sub', 't_first'), ('quant', 'QuantizeLinear', 't')]" ] && ok || bad "nhwc_first: the Transpose does not read the graph input first"
run 0 verify $nf --passes all --order memory --paranoid --redzone 16 && has "$tmp/out" "verified: no event"
run 0 plan "$tmp/qe_softmax.json" --passes all --order memory &&
  lacks "$tmp/out" "Transpose before elementwise ops" && has "$tmp/out" "QuantizeLinear before a move 1"
# Two pairs of one scale and zero point in a row (qdq_twice): the second
# QuantizeLinear gives back the first one's 8-bit tensor (eliminate rule
# 8 with no move between), 20,480 -> 8,192 B; not when the scales differ.
qt=tests/data/passes/qdq_twice.json
run 0 plan $qt --passes all --order memory -o "$tmp/qt.json" &&
  has "$tmp/out" "lower bound 8,192 B" && has "$tmp/out" "QDQ pair cancelling 1, dead op 1"
[ "$(py "$tmp/qt.json" "[(e['op'], e['inputs'][0], e.get('prologue')) for e in d['execution'] if e['op'] == 'dw']")" = "[('dw', 'rq', 'DequantizeLinear:0')]" ] && ok || bad "qdq_twice: the depthwise Conv does not read rq"
run 0 plan $qt --passes $without_eliminate --order memory &&
  has "$tmp/out" "lower bound 20,480 B"
python3 - "$qt" "$tmp/qt_scale.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["tensors"].append({"name": "s2", "dtype": "f32", "shape": [], "kind": "weight", "data": [0.04]})
for n in ("q_p", "dq_p"):
    next(x for x in d["ops"] if x["name"] == n)["inputs"][1] = "s2"
json.dump(d, open(sys.argv[2], "w"))
PY
run 0 plan "$tmp/qt_scale.json" --passes all --order memory &&
  lacks "$tmp/out" "QDQ pair cancelling" && has "$tmp/out" "lower bound 20,480 B"
# The same for a MatMul and a Gemm (qdq_mm): A quantized and dequantized
# ([2, 64, 512] and [96, 512]), absorbed, and widened a block of 32 rows
# at a time (65,536 B of workspace) where it used to be widened whole
# (262,144 and 196,608 B). mm3 reads a quantized A and a quantized
# weight: both absorbed, A widened a block of rows at a time and the
# weight a panel of columns, the panels again for each block. mm4
# multiplies two quantized activations, as attention scores in a QDQ
# transformer (Q [2, 4, 32, 16] by K^T [2, 4, 16, 48]): both absorbed,
# the batched B widened one matrix of its batch at a time; mm6's batched
# B [1, 16, 40] is broadcast over A's batch and widened once. mm7's
# residual Add is fused and written over its operand: it runs row by
# row, each row of its quantized A widened alone. 327,680 -> 183,936 B
# (mm4's, mm6's and mm7's operands and outputs now in the graph).
qm=tests/data/passes/qdq_mm.json
run 0 plan $qm --passes all --order memory -o "$tmp/qm.json" &&
  has "$tmp/out" "327,680 -> 183,936 (-43.9%)" && has "$tmp/out" "DequantizeLinear 8"
[ "$(py "$tmp/qm.json" "sorted((e['op'], e['prologue']) for e in d['execution'] if e.get('prologue'))")" = "[('g2', 'DequantizeLinear:0'), ('mm1', 'DequantizeLinear:0'), ('mm3', 'DequantizeLinear:0,DequantizeLinear:1'), ('mm4', 'DequantizeLinear:0,DequantizeLinear:1'), ('mm6', 'DequantizeLinear:1'), ('mm7', 'DequantizeLinear:0')]" ] && ok || bad "qdq_mm: the MatMuls' prologues"
[ "$(py "$tmp/qm.json" "([e.get('epilogue') for e in d['execution'] if e['op'] == 'mm7'], [b['tensors'] for b in d['buffers'] if 'y7' in b.get('tensors', [])])")" = "(['Add'], [['r7', 'y7']])" ] && ok || bad "qdq_mm: mm7's Add is not written over its operand"
run 0 compile $qm --passes all --order memory -o "$tmp/qm.mpk" &&
  has "$tmp/out" "workspace 82,112 B (80.19 KiB) for the reference kernels (op 'mm3')"
# Gemms with transA (qdq_gemm_ta): A stored [K, M], so a block of op(A)'s
# rows is a block of the stored A's columns. Before, neither operand of a
# transposed A was widened a part at a time: the absorb pass took one
# DequantizeLinear of g1 and g4 (the larger, widened whole: g1's 196,672 B
# workspace) and none of g3, whose residual Add then stayed an op (531,200
# B). Now all six are absorbed, both Adds fused and written over their
# operands: 588,800 -> 335,872 B; the largest workspace is g4's block of
# 64 rows (A's columns, the weight's panel, the block's rows).
qt=tests/data/passes/qdq_gemm_ta.json
run 0 plan $qt --passes all --order memory -o "$tmp/qt.json" &&
  has "$tmp/out" "lower bound 335,872 B" && has "$tmp/out" "DequantizeLinear 6"
[ "$(py "$tmp/qt.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['op'][0] == 'g')")" = "[('g1', 'DequantizeLinear:0,DequantizeLinear:1', None), ('g2', 'DequantizeLinear:0', None), ('g3', 'DequantizeLinear:1', 'Add'), ('g4', 'DequantizeLinear:0,DequantizeLinear:1', 'Add')]" ] && ok || bad "qdq_gemm_ta: the Gemms' prologues and epilogues"
[ "$(py "$tmp/qt.json" "sorted(b['tensors'] for b in d['buffers'] if 'y3' in b.get('tensors', []) or 'y4' in b.get('tensors', []))")" = "[['r3', 'y3'], ['r4', 'y4']]" ] && ok || bad "qdq_gemm_ta: the Adds are not written over their operands"
run 0 compile $qt --passes all --order memory -o "$tmp/qt.mpk" &&
  has "$tmp/out" "workspace 205,248 B (200.44 KiB) for the reference kernels (op 'g4')"
# 16-bit heads of DequantizeLinears with 16-bit scales (dq_half: f16
# MatMuls, Gemm and Conv, a bf16 MatMul; an int4 weight blocked along K):
# every DequantizeLinear absorbed (before, rule 3 kept each an op, as its
# f16 result rounds), 67,584 -> 16,384 B, and the weights widened a panel
# at a time: the largest workspace 143,360 -> 82,048 B (mm1, whose int4
# weight the unfused MatMul widened whole to f32).
dh=tests/data/passes/dq_half.json
run 0 plan $dh --passes all --order memory -o "$tmp/dh.json" &&
  has "$tmp/out" "67,584 -> 16,384 (-75.8%)" && has "$tmp/out" "DequantizeLinear 7"
[ "$(py "$tmp/dh.json" "sorted((e['op'], e.get('prologue')) for e in d['execution'] if e.get('prologue'))")" = "[('c4', 'DequantizeLinear:0,DequantizeLinear:1'), ('g2', 'DequantizeLinear:1'), ('mm1', 'DequantizeLinear:1'), ('mm3', 'DequantizeLinear:0,DequantizeLinear:1'), ('mm5', 'DequantizeLinear:1')]" ] && ok || bad "dq_half: the 16-bit DequantizeLinears not absorbed"
run 0 compile $dh --passes none -o "$tmp/dh0.mpk" &&
  has "$tmp/out" "workspace 143,360 B (140.00 KiB) for the reference kernels (op 'mm1')"
run 0 compile $dh --passes all --order memory -o "$tmp/dh.mpk" &&
  has "$tmp/out" "workspace 82,048 B (80.12 KiB) for the reference kernels (op 'mm1')"
# com.microsoft's MatMulNBits as a fusion head (nbits_mlp: a transformer
# MLP block of 4-bit weights): gate takes its SiLU diamond, up the Mul by
# gate's result, down the residual Add, and two of them write over their
# epilogue operand: 147,456 -> 49,152 B.
nm=tests/data/passes/nbits_mlp.json
run 0 plan $nm --passes all --order memory -o "$tmp/nm.json" &&
  has "$tmp/out" "lower bound 49,152 B" && has "$tmp/out" "com.microsoft::MatMulNBits 3; 1 diamond"
[ "$(py "$tmp/nm.json" "sorted((e['op'], e.get('epilogue')) for e in d['execution'])")" = "[('down', 'Add'), ('embed', None), ('gate', 'Sigmoid,Mul@0'), ('up', 'Mul')]" ] && ok || bad "nbits_mlp: the MatMulNBits epilogues"
[ "$(py "$tmp/nm.json" "sorted(b['tensors'] for b in d['buffers'] if len(b.get('tensors', [])) > 1)")" = "[['ag', 'm'], ['h0', 'y']]" ] && ok || bad "nbits_mlp: the epilogues are not written over their operands"
run 0 plan $nm --passes none && has "$tmp/out" "lower bound 147,456 B"
# Convs, MatMuls and a Gemm whose chains end in a QuantizeLinear
# (qdq_tail): each fused op writes the quantized output, its f32 values a
# plane, a band's row or a product's row at a time in the workspace:
# 221,184 -> 92,160 B.
qt2=tests/data/passes/qdq_tail.json
run 0 plan $qt2 --passes all --order memory -o "$tmp/qt2.json" &&
  has "$tmp/out" "lower bound 92,160 B"
[ "$(py "$tmp/qt2.json" "sorted((e['op'], e.get('epilogue')) for e in d['execution'] if e['op'][0] == 'c')")" = "[('c1', 'Sigmoid,Mul@0,QuantizeLinear'), ('c2', 'Relu,QuantizeLinear'), ('c3', 'Add,QuantizeLinear'), ('c4', 'QuantizeLinear')]" ] && ok || bad "qdq_tail: the Convs do not end in their QuantizeLinear"
[ "$(py "$tmp/qt2.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['op'][0] in 'gm')")" = "[('g7', None, 'Add,QuantizeLinear'), ('m5', 'DequantizeLinear:0,DequantizeLinear:1', 'Relu,QuantizeLinear'), ('m8', 'DequantizeLinear:0', 'QuantizeLinear')]" ] && ok || bad "qdq_tail: the products do not end in their QuantizeLinear"
run 0 plan $qt2 --passes none && has "$tmp/out" "lower bound 221,184 B"
# ConvTransposes whose chains end in a QuantizeLinear (t1 per channel,
# t2 grouped with a residual Add) or write over their epilogue operand
# (t3, a SiLU and a residual Add over f3's bytes), computed a plane at a
# time; t1 also takes its input's DequantizeLinear (absorb rule 10) and
# widens it a band of output rows at a time: 36,864 -> 11,904 B.
qct=tests/data/passes/qdq_convt.json
run 0 plan $qct --passes all --order memory -o "$tmp/qct.json" &&
  has "$tmp/out" "lower bound 11,904 B" &&
  has "$tmp/out" "prologue   t1 ConvTranspose + DequantizeLinear: 2 x 9,216 x 1 = 18,432 B"
[ "$(py "$tmp/qct.json" "sorted((e['op'], e.get('epilogue')) for e in d['execution'] if e['op'][0] == 't')")" = "[('t1', 'Relu,QuantizeLinear'), ('t2', 'Add,QuantizeLinear'), ('t3', 'Sigmoid,Mul@0,Add')]" ] && ok || bad "qdq_convt: the ConvTransposes do not end in their QuantizeLinear"
[ "$(py "$tmp/qct.json" "sorted(b['tensors'] for b in d['buffers'] if len(b.get('tensors', [])) > 1)")" = "[['f3', 'y3']]" ] && ok || bad "qdq_convt: t3 is not written over its operand"
run 0 plan $qct --passes none && has "$tmp/out" "lower bound 36,864 B"
# Elementwise ops between QuantizeLinear/DequantizeLinear pairs (qdq_ew,
# absorb rule 9, fuse condition 7): a residual Add of the dequantized
# input (which Conv c1 reads too, rule 8) and c1's quantized result, a
# Relu, a Mul by a broadcast gate, a HardSigmoid whose f32 result is an
# output, a Clip with bound inputs and a Sub with the dequantized input
# second each read 8 bits a tile at a time, and all but the two whose
# f32 results are outputs end in their QuantizeLinear. c1's chain goes on
# through its pair to a1, which adds the dequantized input (the entry
# Add(DequantizeLinear)), and through the next to the Relu (fuse condition
# 8: each pair a round trip through uint8 inside c1's epilogue); m's to
# the HardSigmoid, whose f32 result is an output, so the chain ends there;
# h1q, r1q, r2q and r3q no longer exist. dv's scale is per channel: it
# stays. 92,160 -> 69,120 B.
qe=tests/data/passes/qdq_ew.json
run 0 plan $qe --passes all --order memory -o "$tmp/qe.json" &&
  has "$tmp/out" "lower bound 69,120 B" && has "$tmp/out" "DequantizeLinear 8" &&
  has "$tmp/out" "Conv 1, Mul 1, Clip 1" &&
  has "$tmp/out" "prologue   a1 Add + DequantizeLinear: 2 x 30,720 x 1 = 61,440 B" &&
  has "$tmp/out" "vertical   c1 Conv + QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear,DequantizeLinear,Relu,QuantizeLinear: 2 x 107,520 B in 5 intermediates = 215,040 B"
[ "$(py "$tmp/qe.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['type'] not in ('QuantizeLinear',))")" = "[('av', None, None), ('c1', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear,DequantizeLinear,Relu,QuantizeLinear'), ('cl', 'DequantizeLinear:0', 'QuantizeLinear'), ('dv', None, None), ('m', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,HardSigmoid'), ('sb', 'DequantizeLinear:1', None), ('sig', None, None)]" ] && ok || bad "qdq_ew: the elementwise ops do not take their DequantizeLinears and QuantizeLinears"
[ "$(py "$tmp/qe.json" "sorted(b['tensors'] for b in d['buffers'] if len(b.get('tensors', [])) > 1)")" = "[['xvd', 'yv']]" ] && ok || bad "qdq_ew: a buffer shared that should not be"
run 0 plan $qe --passes none && has "$tmp/out" "lower bound 92,160 B"
# Chains through QDQ pairs (qdq_chain, fuse condition 8): c1's chain runs
# through seven pairs to the last QuantizeLinear, each pair a round trip
# through 8 bits inside its epilogue (the Clip's uint8 without a zero
# point, dv's widened with another scale), and takes the HardSwish
# diamond whole: hm, which reads x under the DequantizeLinear p3 reads it
# under, is the entry Mul@8 (a1's Add: the value that entered it is x
# dequantized). e1's chain ends in the f32 output of a Sigmoid; c2's goes
# on to r2's residual Add of the 8-bit skip (Add(DequantizeLinear)) and
# the Relu, and writes y3 over the skip, a band's row at a time; c3's
# (a plane at a time) ends in a Sigmoid. Without condition 8 each op of
# the chains ended in its own QuantizeLinear: 168,960 B after fuse, now
# 153,600 B.
qc=tests/data/passes/qdq_chain.json
run 0 plan $qc --passes all --order memory -o "$tmp/qc.json" &&
  has "$tmp/out" "lower bound 153,600 B" &&
  has "$tmp/out" "168,960 -> 153,600 (-9.1%)" && has "$tmp/out" "Conv 3, Mul 1; 1 diamond (x * f(x))" &&
  has "$tmp/out" "vertical   e1 Mul + QuantizeLinear,DequantizeLinear,Sigmoid: 2 x 76,800 B in 2 intermediates = 153,600 B"
[ "$(py "$tmp/qc.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e.get('epilogue'))")" = "[('c1', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Mul,QuantizeLinear,DequantizeLinear,Add,QuantizeLinear,DequantizeLinear,Add,QuantizeLinear,DequantizeLinear,Clip,QuantizeLinear,DequantizeLinear,Mul@8,QuantizeLinear,DequantizeLinear,Div,QuantizeLinear,DequantizeLinear,Sub,QuantizeLinear'), ('c2', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear,DequantizeLinear,Relu,QuantizeLinear'), ('c3', None, 'QuantizeLinear,DequantizeLinear,Sigmoid'), ('e1', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Sigmoid')]" ] && ok || bad "qdq_chain: the Convs and e1 do not take their chains through the pairs"
# the fused ops' inputs: their own, then each entry's in order (a pair's
# scales and zero points, an operand, the Clip's bounds, none for Mul@8, a
# quantized operand with its scale and zero point), then their prologue's
[ "$(py "$tmp/qc.json" "[e['inputs'] for e in d['execution'] if e['op'] == 'c1'][0]")" = "['xq', 'w1', '', 's1', 'z1', 's1', 'z1', 'ga', 's2', 'z2', 's2', 'z2', 'gb', 's3', 'z3', 's3', 'z3', 'three', 's4', 'z4', 's4', 'z4', 'zero', 'six', 's5', '', 's5', '', 's6', 'z6', 's6', 'z6', 'six', 's7', 'z7', 's7b', 'z7', 'off', 's8', 'z8', 'sx', 'zx']" ] && ok || bad "qdq_chain: c1's inputs are not in entry order"
[ "$(py "$tmp/qc.json" "[e['inputs'] for e in d['execution'] if e['op'] == 'c2'][0]")" = "['xq', 'w2', '', 's10', 'z10', 's10', 'z10', 'sk', 's13', 'z13', 's11', 'z11', 's11', 'z11', 's12', 'z12', 'sx', 'zx']" ] && ok || bad "qdq_chain: c2's inputs are not in entry order"
[ "$(py "$tmp/qc.json" "sorted(b['tensors'] for b in d['buffers'] if len(b.get('tensors', [])) > 1)")" = "[['gpo', 'gate'], ['sk', 'y3']]" ] && ok || bad "qdq_chain: c2 is not written over the skip"
run 0 plan $qc --passes none && has "$tmp/out" "lower bound 261,120 B"
# A feature pyramid's upsample-and-add between QDQ pairs (qdq_up, absorb
# rule 11): eliminate runs each Resize on the 8-bit values, then add1 and
# sub2 absorb the DequantizeLinear and the Resize under it and read the
# small map replicated (add1's input 1 a plane at a time, sub2's input 0 a
# row at a time); rs3 (asymmetric, round_prefer_ceil: o reads (o + 1) / 2)
# stays. 356,352 -> 55,296 B.
qu=tests/data/passes/qdq_up.json
run 0 plan $qu --passes all --order memory -o "$tmp/qu.json" &&
  has "$tmp/out" "lower bound 55,296 B" && has "$tmp/out" "Resize 2, DequantizeLinear 6" &&
  has "$tmp/out" "294,912 -> 135,168 (-54.2%)"
[ "$(py "$tmp/qu.json" "sorted((e['op'], e['type'], e['inputs'][:2], e.get('epilogue'), e.get('replicated')) for e in d['execution'] if e['type'] in ('Add', 'Sub', 'Resize'))")" = "[('add1', 'Add', ['x1q', 'u1q'], 'Mul,QuantizeLinear', 1), ('add3', 'Add', ['x1q', 'r3q'], 'QuantizeLinear', None), ('rs3', 'Resize', ['u3q'], None, None), ('sub2', 'Sub', ['u2q', 'x2q'], 'QuantizeLinear', 0)]" ] && ok || bad "qdq_up: add1 and sub2 do not read the small maps, or rs3 is gone"
run 0 plan $qu --passes none && has "$tmp/out" "lower bound 356,352 B"
# Three Clips after a Conv, the first with attribute bounds, the others
# with bound inputs: the group takes the first two (the bundle gives one
# Clip's bound inputs) and the third writes over their result; compile
# used to fail on the group of all three, and on the first two alone.
tc=tests/data/passes/three_clips.json
run 0 plan $tc --passes all -o "$tmp/tc.json" &&
  has "$tmp/out" "vertical   conv Conv + Clip,Clip: 2 x 1,024 x 2 = 4,096 B"
[ "$(py "$tmp/tc.json" "[(e['op'], e.get('epilogue')) for e in d['execution']]")" = "[('conv', 'Clip,Clip'), ('c2', None)]" ] && ok || bad "three_clips: the Conv's group does not stop before the third Clip"
run 0 compile $tc --passes all -o "$tmp/tc.mpk"
# Pools between pairs (qdq_pool, absorb rule 9): an SE gate's
# GlobalAveragePool, its Mul and a residual Add each widen the shared
# 8-bit input themselves (rule 8), a padded stride-2 MaxPool ends in its
# QuantizeLinear, an AveragePool counting its pads writes the f32 output,
# each a plane at a time; mi also writes Indices, so d2 stays. m's chain
# goes on through its pair to the residual Add of the dequantized input
# (Add(DequantizeLinear), fuse condition 8): 92,160 -> 15,424 B (23,040 B
# before).
qp=tests/data/passes/qdq_pool.json
run 0 plan $qp --passes all --order memory -o "$tmp/qp.json" &&
  has "$tmp/out" "lower bound 15,424 B" && has "$tmp/out" "DequantizeLinear 6" &&
  has "$tmp/out" "Mul 1, MaxPool 1"
[ "$(py "$tmp/qp.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['type'] not in ('QuantizeLinear', 'Sigmoid'))")" = "[('avg', 'DequantizeLinear:0', None), ('d2', None, None), ('gap', 'DequantizeLinear:0', None), ('m', 'DequantizeLinear:0', 'QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear'), ('mi', None, None), ('mp', 'DequantizeLinear:0', 'QuantizeLinear')]" ] && ok || bad "qdq_pool: the pools do not take their DequantizeLinears and QuantizeLinears"
run 0 plan $qp --passes none && has "$tmp/out" "lower bound 92,160 B"
# Concats of two between pairs (qdq_concat, absorb rule 9): pad writes
# the dequantized input and zeros along the channels (a TensorFlow channel
# Pad) and ends in its QuantizeLinear, the depthwise Conv dw reads the
# same pair (rule 8); rows joins a dequantized and an f32 piece along H (8
# outer blocks of 6,144 elements) into 8 bits; cols writes an f32 output;
# three has three pieces, so d3 stays. 122,880 -> 83,712 B.
qcc=tests/data/passes/qdq_concat.json
run 0 plan $qcc --passes all --order memory -o "$tmp/qcc.json" &&
  has "$tmp/out" "lower bound 83,712 B" && has "$tmp/out" "DequantizeLinear 5" &&
  has "$tmp/out" "Concat 2"
[ "$(py "$tmp/qcc.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['type'] in ('Concat', 'DequantizeLinear'))")" = "[('cols', 'DequantizeLinear:1', None), ('d3', None, None), ('dc', None, None), ('pad', 'DequantizeLinear:0', 'QuantizeLinear'), ('rows', 'DequantizeLinear:0', 'QuantizeLinear'), ('three', None, None)]" ] && ok || bad "qdq_concat: the Concats do not take their DequantizeLinears and QuantizeLinears"
run 0 plan $qcc --passes none && has "$tmp/out" "lower bound 122,880 B"
# BatchNormalization and ConvTranspose between pairs (qdq_bn_convt,
# absorb rules 9 and 10): bn1 widens a tile of one channel at a time, ends
# in its QuantizeLinear and writes over its 8-bit input; bn2 writes f32;
# bn5 ends in a QuantizeLinear per channel (a tile is within a channel);
# t1 (stride 2, output padding, Relu and QuantizeLinear fused), t2 (two
# groups, dilation 2, a residual Add written over its operand f3, row by
# row) and t3 (3-D) widen the input rows a band of output rows reads.
# 589,824 -> 112,720 B.
qbn=tests/data/passes/qdq_bn_convt.json
run 0 plan $qbn --passes all --order memory -o "$tmp/qbn.json" &&
  has "$tmp/out" "lower bound 112,720 B" && has "$tmp/out" "DequantizeLinear 6" &&
  has "$tmp/out" "prologue   t1 ConvTranspose + DequantizeLinear: 2 x 147,456 x 1 = 294,912 B"
[ "$(py "$tmp/qbn.json" "sorted((e['op'], e.get('prologue'), e.get('epilogue')) for e in d['execution'] if e['type'] in ('BatchNormalization', 'ConvTranspose', 'DequantizeLinear'))")" = "[('bn1', 'DequantizeLinear:0', 'QuantizeLinear'), ('bn2', 'DequantizeLinear:0', None), ('bn5', 'DequantizeLinear:0', 'QuantizeLinear'), ('t1', 'DequantizeLinear:0', 'Relu,QuantizeLinear'), ('t2', 'DequantizeLinear:0', 'Add'), ('t3', 'DequantizeLinear:0', 'QuantizeLinear')]" ] && ok || bad "qdq_bn_convt: the BatchNormalizations and ConvTransposes do not take their DequantizeLinears and QuantizeLinears"
[ "$(py "$tmp/qbn.json" "sorted(b['tensors'] for b in d['buffers'] if len(b.get('tensors', [])) > 1)")" = "[['f3', 'y3'], ['x5q', 'y5'], ['xq', 'b1q']]" ] && ok || bad "qdq_bn_convt: bn1 and bn5 are not written over their quantized inputs, t2 over its residual operand"
run 0 plan $qbn --passes none && has "$tmp/out" "lower bound 589,824 B"
# Moves between pairs of one scale and zero point (qdq_move, eliminate
# rule 8): a Transpose, a padded MaxPool, a nearest Resize, a Concat
# reading one pair twice and a Reshape each read the 8-bit values and
# write the next pair's (QuantizeLinear(DequantizeLinear(n)) = n); t2's
# QuantizeLinear has another scale, so rule 8 leaves its pairs, and rule
# 10 quantizes t2's input instead of its output. 36,864 -> 6,144 B.
qm=tests/data/passes/qdq_move.json
run 0 plan $qm --passes all --order memory -o "$tmp/qm.json" &&
  has "$tmp/out" "lower bound 6,144 B" && has "$tmp/out" "QDQ pair around a move 5, QuantizeLinear before a move 1, dead op 5"
[ "$(py "$tmp/qm.json" "[(e['op'], e['inputs'][0], e['outputs'][0]) for e in d['execution'] if e['type'] not in ('QuantizeLinear', 'DequantizeLinear')]")" = "[('tp', 'xq', 'trq'), ('mp', 'trq', 'mpq'), ('rs', 'mpq', 'rsq'), ('cc', 'trq', 'ccq'), ('rp', 'ccq', 'y1'), ('t2', 'y2_early', 'y2')]" ] && ok || bad "qdq_move: the moves do not read and write the 8-bit values"
run 0 plan $qm --passes none && has "$tmp/out" "lower bound 36,864 B"
# A QuantizeLinear dividing in bf16 (opset 23's precision 16) may miss the
# step it came from: the Reshape before it keeps its pair.
python3 - "$qm" "$tmp/qm16.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
for o in g["ops"]:
    if o["name"] == "qp":
        o["attrs"] = {"precision": 16}
json.dump(g, open(sys.argv[2], "w"))
PY
run 0 plan "$tmp/qm16.json" --passes all --order memory &&
  has "$tmp/out" "QDQ pair around a move 4, QuantizeLinear before a move 1, dead op 4"
# DequantizeLinears shared by their readers (qdq_shared, absorb rule 8):
# deq0's two Convs and deq6's two MatMuls each widen the int8 tensor
# themselves and both ops go; deq5 is also read by a Softmax, so it stays
# for both readers; deq7's m8 takes its weight's DequantizeLinear instead,
# so m10 does not take deq7 either (without the fixed point it did, and
# both the f32 and the int8 vector lived). 49,152 -> 22,528 B (32,768 B
# with deq0 and deq6 kept).
qs=tests/data/passes/qdq_shared.json
run 0 plan $qs --passes all --order memory -o "$tmp/qs.json" &&
  has "$tmp/out" "lower bound 22,528 B" &&
  has "$tmp/out" "DequantizeLinear 5" &&
  has "$tmp/out" "prologue   c1 Conv + DequantizeLinear: 1 x 16,384 x 1 = 16,384 B" &&
  has "$tmp/out" "prologue   c2 Conv + DequantizeLinear: 2 x 16,384 x 1 = 32,768 B"
[ "$(py "$tmp/qs.json" "sorted((e['op'], e.get('prologue')) for e in d['execution'])")" = "[('c1', 'DequantizeLinear:0'), ('c2', 'DequantizeLinear:0'), ('c5', None), ('deq5', None), ('deq7', None), ('m10', None), ('m6a', 'DequantizeLinear:1'), ('m6b', 'DequantizeLinear:1'), ('m8', 'DequantizeLinear:1'), ('quant0', None), ('quant5', None), ('quant7', None), ('sm5', None)]" ] && ok || bad "qdq_shared: the shared DequantizeLinears are not absorbed by every reader"
[ "$(py "$tmp/qs.json" "[f['saved_bytes'] for f in d['passes']['fusions'] if f['kind'] == 'prologue']")" = "[16384, 32768, 6144, 12288, 4096]" ] && ok || bad "qdq_shared: saved bytes are not one read each and the write once"
run 0 plan $qs --passes none && has "$tmp/out" "lower bound 49,152 B"
# The same block with 2-bit weights, float zero points and g_idx
# (nbits_gptq): the same epilogues and the same bound.
ng=tests/data/passes/nbits_gptq.json
run 0 plan $ng --passes all --order memory -o "$tmp/ng.json" &&
  has "$tmp/out" "lower bound 49,152 B"
[ "$(py "$tmp/ng.json" "sorted((e['op'], e.get('epilogue')) for e in d['execution'])")" = "[('down', 'Add'), ('embed', None), ('gate', 'Sigmoid,Mul@0'), ('up', 'Mul')]" ] && ok || bad "nbits_gptq: the MatMulNBits epilogues"
# f16 weights Cast to f32 before a MatMul, a Gemm (transB) and a Conv
# (cast_w): each Cast absorbed (245,760 -> 106,496 B), and the weight
# widened a panel at a time like a DequantizeLinear'd one: the largest
# workspace is g2's 87,168 B, where widening the weights whole took
# mm1's 196,672 B (its f32 weight, 196,608 B).
cw=tests/data/passes/cast_w.json
run 0 plan $cw --passes all --order memory -o "$tmp/cw.json" &&
  has "$tmp/out" "245,760 -> 106,496 (-56.7%)" && has "$tmp/out" "Cast 3"
[ "$(py "$tmp/cw.json" "sorted((e['op'], e.get('prologue')) for e in d['execution'])")" = "[('c3', 'Cast:1'), ('g2', 'Cast:1'), ('mm1', 'Cast:1')]" ] && ok || bad "cast_w: the Casts not absorbed"
run 0 compile $cw --passes all --order memory -o "$tmp/cw.mpk" &&
  has "$tmp/out" "workspace 87,168 B (85.12 KiB) for the reference kernels (op 'g2')"
# QDQ Convs of one group (qdq_conv): the input widened a band of output
# rows at a time, the weight a panel of output channels. c1 (32 channels
# of 48 x 40, 3x3): bands of 10 output rows read 12 input rows (61,440 B
# of f32). c3's weight is f32: its input's DequantizeLinear alone. c5's
# input rows are 67,200 B each: bands of one output row read three input
# rows (201,600 B), its outputs 10,080 B, the weight 2,880 B and the
# accumulator plane 16,800 B, the largest workspace. c6's residual Add is
# fused and written over its operand (rr's buffer holds y6): each band's
# rows go over the operand's after they were saved. Both f32 copies
# leave the arena: 1,008,000 -> 377,440 B (c1 takes its QuantizeLinear in
# the fuse run after absorb, which leaves it: fuse.c condition 8).
qc=tests/data/passes/qdq_conv.json
run 0 plan $qc --passes none --order memory && has "$tmp/out" "lower bound 1,008,000 B"
run 0 plan $qc --passes all --order memory -o "$tmp/qc.json" &&
  has "$tmp/out" "1,008,000 -> 491,520 (-51.2%)" && has "$tmp/out" "DequantizeLinear 11" &&
  has "$tmp/out" "491,520 -> 377,440 (-23.2%)"
[ "$(py "$tmp/qc.json" "sorted((e['op'], e['prologue']) for e in d['execution'] if e.get('prologue'))")" = "[('c1', 'DequantizeLinear:0,DequantizeLinear:1'), ('c2', 'DequantizeLinear:0,DequantizeLinear:1'), ('c3', 'DequantizeLinear:0'), ('c4', 'DequantizeLinear:0,DequantizeLinear:1'), ('c5', 'DequantizeLinear:0,DequantizeLinear:1'), ('c6', 'DequantizeLinear:0,DequantizeLinear:1')]" ] && ok || bad "qdq_conv: the Convs' prologues"
[ "$(py "$tmp/qc.json" "([e.get('epilogue') for e in d['execution'] if e['op'] == 'c6'], [b['tensors'] for b in d['buffers'] if 'y6' in b.get('tensors', [])])")" = "(['Add'], [['rr', 'y6']])" ] && ok || bad "qdq_conv: c6's Add is not written over its operand"
# (c2's epilogue is its QuantizeLinear: its scale and zero point come
# first, then each DequantizeLinear's)
[ "$(py "$tmp/qc.json" "[e['inputs'] for e in d['execution'] if e['op'] == 'c2']")" = "[['q1', 'wq2', '', 's2', 'z2', 's1', 'z1', 'ws2', 'wz2']]" ] && ok || bad "qdq_conv: c2's inputs"
run 0 compile $qc --passes all --order memory -o "$tmp/qc.mpk" &&
  has "$tmp/out" "workspace 231,552 B (226.12 KiB) for the reference kernels (op 'c5')"
# The weight-only int4 decoder (models/decoder_int4.json): fuse runs
# before absorb, on an order that runs each up projection before the SiLU
# its Mul needs; once absorb gave the MatMuls their prologues, fuse runs
# again (manager.c invariant 12) and fuses those Muls, and the lower bound
# is decoder.json's own, 614,400 B, from 1,671,168 B; the runtime then
# writes the residual projections over their sums a block of rows at a
# time, within a 150,912 B workspace.
di=models/decoder_int4.json
run 0 plan $di --passes all --order memory -o "$tmp/di.json" &&
  has "$tmp/out" "lower bound 614,400 B"
[ "$(py "$tmp/di.json" "([r['pass'] for r in d['passes']['rows']].count('fuse'), d['passes']['rows'][0]['lower_bound_before'])")" = "(2, 1671168)" ] && ok || bad "decoder_int4: fuse twice, from 1,671,168 B"
run 0 compile $di --passes all --order memory -o "$tmp/di.mpk" &&
  has "$tmp/out" "workspace 150,912 B (147.38 KiB) for the reference kernels (op 'l1_o')"
# Rule 6: each node's Add writes its slice in place over its pooling
# branch's result, which moves into the slice (the figures are derived in
# the file's description); the runtime agrees bit for bit, and an
# early-free of the shared buffer is named.
ca=tests/data/passes/concat_add.json
run 0 plan $ca --passes concat,inplace -o "$tmp/ca.json" &&
  has "$tmp/out" "3,072 -> 2,560 (-16.7%)" && has "$tmp/out" "into a Concat slice 3"
run 0 validate "$tmp/ca.json"
[ "$(py "$tmp/ca.json" "[(b['tensors'], b['tensor_offsets']) for b in d['buffers'] if 'tensors' in b]")" = "[(['b0', 'n0', 'b1', 'n1', 'b2', 'n2', 'y'], [0, 0, 512, 512, 1024, 1024, 0])]" ] && ok || bad "concat_add: branch results not moved into their slices"
run 0 explain $ca --passes all --no-map && has "$tmp/out" "b1 (in place (concat slice) at +512), n1 (in place (epilogue) at +512)" &&
  has "$tmp/out" "idle in live buffers: 1,024 B (1.00 KiB), 50.0% of the peak, in 1 buffer" &&
  has "$tmp/out" "b0: 512 B of 1,536 B (1.50 KiB) in use; the rest is written at step 3 (pool1)"
[ "$(py "$tmp/ca.json" "(d['peak']['idle_bytes'], [(e['name'], e['bytes'], e['in_use_bytes']) for e in d['peak']['live']])")" = "(1024, [('b0', 1536, 512), ('p', 512, 512), ('c0', 512, 512)])" ] && ok || bad "concat_add: idle bytes at the peak in the plan JSON"
run 0 report $ca --passes all --sqlite "$tmp/ca.db" &&
  [ "$(sqlite3 "$tmp/ca.db" "SELECT group_concat(seq || ':' || idle_bytes, ' ') FROM peak_interval")" = "0:1024 1:0" ] && ok || bad "concat_add: SQLite peak_interval.idle_bytes"
[ "$(sqlite3 "$tmp/ca.db" "SELECT group_concat(peak_seq || ':' || tensor || ':' || in_use_bytes || '/' || bytes, ' ') FROM (SELECT * FROM live_at_peak ORDER BY peak_seq, tensor)")" = "0:b0:512/1536 0:p:512/512 1:b0:1536/1536 1:z:512/512" ] && ok || bad "concat_add: SQLite live_at_peak.in_use_bytes"
[ "$(sqlite3 "$tmp/ca.db" "SELECT seq || ':' || in_use_bytes || ':' || next_write_step || ':' || next_writer FROM peak_in_use")" = "0:512:3:pool1" ] && ok || bad "concat_add: SQLite peak_in_use"
run 0 plan $ca --passes none -o "$tmp/ca0.json" &&
  [ "$(py "$tmp/ca0.json" "d['peak']['idle_bytes']")" = "0" ] && ok || bad "concat_add: idle bytes without passes"
run 0 explain $ca --passes none --no-map && ! grep -q "idle in live" "$tmp/out" && ok || bad "concat_add: idle line without passes"
run 0 report $ca --passes all --dot "$tmp/ca.dot" &&
  has "$tmp/ca.dot" 'slice at +512 of buffer b0' && has "$tmp/ca.dot" 'in place at +512 of buffer b0'
run 0 verify $ca --passes all --paranoid && has "$tmp/out" "verified: no event"
run 0 verify $ca --passes all --order memory --poison --redzone 16 && has "$tmp/out" "verified: no event"
run 1 verify $ca --passes all --poison --inject early-free:b1 && has "$tmp/out" "event use-after-free"
run 0 plan tests/data/passes/concat_add_guard.json --passes concat,inplace &&
  has "$tmp/out" "into a Concat slice 2" && has "$tmp/out" "lower bound 5,632 B"

# Every bundled graph: all passes, the memory order, validated, and the
# passes never raise the lower bound. (seed_example.json is a lifetime
# table: no ops to rewrite or reorder, so --passes is refused there.)
for m in models/mobilenet_v1.json $mv2 models/resnet50.json tests/data/passes/convnet.json tests/data/pipeline.json $cat; do
  run 0 plan $m --passes all --order memory -o "$tmp/m.json" && run 0 validate "$tmp/m.json"
  [ "$(py "$tmp/m.json" "d['passes']['rows'][-1]['lower_bound_after'] <= d['passes']['rows'][0]['lower_bound_before'] and d['summary']['lower_bound_bytes'] == d['schedule']['peak_bytes']")" = True ] && ok || bad "$m: passes raised the lower bound"
  run 0 explain $m --passes all --order memory --no-map && has "$tmp/out" "order memory"
done
run 2 plan models/seed_example.json --passes all && has "$tmp/err" "--passes applies only to graph models, and this file is a lifetimes/1"

# The published figures (also golden tests in test_models).
run 0 plan models/resnet50.json --json && [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 2408448 ] && ok || bad "ResNet-50 without passes"
run 0 plan models/resnet50.json --passes inplace --json && [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 1806336 ] && ok || bad "ResNet-50 with the residual add in place"
run 0 plan models/resnet50.json --passes all --json && [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 1304576 ] && ok || bad "ResNet-50 with every pass"
run 0 plan $mv2 --passes inplace --json && [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 1404928 ] && ok || bad "MobileNetV2 with depthwise in place"
# A VLEN backend caps fusion groups and reports register estimates.
run 0 plan tests/data/passes/convnet.json --passes fuse --backend tests/data/passes/backend_vlen128.json &&
  has "$tmp/out" "(register estimates for VLEN 128)" &&
  has "$tmp/out" "1 group capped by registers (avoided 5 spilled registers)" &&
  has "$tmp/out" "24 vregs, 0 spills, capped"

# Orders: dfs and rpo are plain orders; memory prints the table.
run 0 plan tests/data/passes/branches.json --order dfs && has "$tmp/out" "order dfs"
run 0 plan tests/data/passes/branches.json --order rpo --json && [ "$(py "$tmp/out" "[e['op'] for e in d['execution']]")" = "['a1', 'a2', 'b1', 'b2', 'join']" ] && ok || bad "rpo order"
run 0 plan tests/data/passes/branches.json --order memory &&
  has "$tmp/out" "file         8,256 B" && has "$tmp/out" "memory       4,224 B (4.12 KiB)  (1.955x lower than file)" &&
  has "$tmp/out" "optimal for this graph"
run 0 plan tests/data/passes/branches.json --order memory --order-budget-ms 5000
# An order no better than the file's says so, in plan and in explain.
run 0 plan $mv2 --order memory && has "$tmp/out" "(the same as file)" &&
  has "$tmp/out" "schedule    memory: 0 segments (largest 0 ops)"
run 0 explain $mv2 --order memory && has "$tmp/out" "memory order 1,505,280 B (1.44 MiB), the same as file; optimal"
run 0 plan tests/data/passes/branches.json --order memory --passes none &&
  has "$tmp/out" "schedule    memory: 1 segment (largest"

# Errors: one line, exit 2.
run 2 plan $mv2 --passes bogus && has "$tmp/err" "mplan plan: --passes 'bogus': unknown pass 'bogus' (known: fold, eliminate, tile, accumulate, attention, fuse, hfuse, absorb, views, concat, inplace; or all, none)" && lines "$tmp/err" 1
run 2 plan $mv2 --passes fold,fold && has "$tmp/err" "pass 'fold' is listed twice" && lines "$tmp/err" 1
run 2 plan $mv2 --order sideways && has "$tmp/err" "expected auto, file, topo, dfs, rpo or memory" && lines "$tmp/err" 1
run 2 plan $mv2 --order-budget-ms -3 && has "$tmp/err" "expected a number >= 0"
run 2 plan tests/data/input.12.csv --passes all && has "$tmp/err" "--passes applies only to graph models, and this file is a minimalloc-csv" && lines "$tmp/err" 1
run 2 validate "$tmp/p.json" --passes all
# --passes none is the plan without passes.
run 0 plan $mv2 --passes none --json && [ "$(py "$tmp/out" "('passes' in d, d['summary']['lower_bound_bytes'])")" = "(False, 1505280)" ] && ok || bad "--passes none"

# Reports: SQLite rows, DOT clusters and in-place labels.
run 0 report $mv2 --passes all --order memory --sqlite "$tmp/h.db" --dot "$tmp/g.dot"
[ "$(sqlite3 "$tmp/h.db" "SELECT count(*), sum(peak_moved) FROM pass")" = "10|1" ] && ok || bad "SQLite pass rows"
[ "$(sqlite3 "$tmp/h.db" "SELECT count(*) FROM fusion WHERE absorbed = 'Add'")" = 10 ] && ok || bad "SQLite fusion rows"
[ "$(sqlite3 "$tmp/h.db" "SELECT count(*) FROM tensor_buffer WHERE rule = 'in place (depthwise)'")" = 17 ] && ok || bad "SQLite tensor_buffer rows"
[ "$(sqlite3 "$tmp/h.db" "SELECT name FROM schedule_candidate WHERE chosen = 1")" = memory ] && ok || bad "SQLite schedule rows"
[ "$(grep -c 'subgraph cluster_fusion_' "$tmp/g.dot")" = 10 ] && ok || bad "DOT: one cluster per fusion"
has "$tmp/g.dot" "in place of b2_expand_out"

# accumulate: a Sum of four parallel Convs becomes three Adds; --order
# memory then adds each branch as soon as it exists (40,960 -> 32,768 B),
# and with fuse and inplace every Add runs in the Conv's epilogue over the
# running sum (16,384 B). The chain keeps the Sum's output name.
sum=tests/data/passes/sum_f32.json
run 0 plan $sum --inputs activation --passes accumulate --order memory --json &&
  [ "$(py "$tmp/out" "(d['summary']['lower_bound_bytes'], [(e['op'], e['outputs']) for e in d['execution'] if e['op'].startswith('sum')])")" = "(32768, [('sum.add1', ['y.acc1']), ('sum.add2', ['y.acc2']), ('sum.add3', ['y'])])" ] && ok || bad "accumulate: chain, names or lower bound"
run 0 plan $sum --inputs activation --passes all --order memory &&
  has "$tmp/out" "accumulate 6->8        15->17      40,960 -> 32,768 (-20.0%)" &&
  has "$tmp/out" "Sum 1; 3 Adds" && has "$tmp/out" "lower bound 16,384 B"
run 0 plan $sum --inputs activation --passes accumulate --order file --json &&
  [ "$(py "$tmp/out" "d['summary']['lower_bound_bytes']")" = 40960 ] && ok || bad "accumulate: file order peak changed"
# Guarded: under the dfs order, rewriting RandWire seed 1's Sums would
# raise the lower bound, so the pass hands on the graph unchanged.
python3 tests/bench/gen_cells.py "$tmp/rw" --randwire 1 --darts 0 --seed 1
run 0 plan "$tmp/rw/randwire_1.json" --passes accumulate --order dfs &&
  has "$tmp/out" "accumulate 262->262    660->660    1,161,888 -> 1,161,888 (=)" &&
  has "$tmp/out" "dropped: lower bound would rise 1161888 -> 1345344 B"
# With inplace among the passes the guard judges after inplace too: here
# the rise stays (1,161,888 -> 1,284,192 B), so the graph is still dropped.
run 0 plan "$tmp/rw/randwire_1.json" --passes accumulate,inplace --order dfs &&
  has "$tmp/out" "dropped: lower bound would rise 1161888 -> 1345344 B (1161888 -> 1284192 B with inplace)"
# A Sum whose inputs are read again after it: its chain holds one more
# buffer (8,192 -> 10,240 B) until inplace writes the last Add over the
# running sum, so the guard keeps it, and the final bound is the Sum's.
rr=tests/data/passes/sum_reread_i8.json
run 0 plan $rr --passes accumulate,inplace --order memory &&
  has "$tmp/out" "kept: lower bound 8192 -> 10240 B, but 8192 -> 8192 B with inplace" &&
  has "$tmp/out" "lower bound 8,192 B"
run 0 plan $rr --passes accumulate --order memory &&
  has "$tmp/out" "dropped: lower bound would rise 8192 -> 10240 B"
run 0 plan "$tmp/rw/randwire_1.json" --passes accumulate --order rpo &&
  has "$tmp/out" "accumulate 262->323    660->721    1,100,736 -> 856,128" &&
  has "$tmp/out" "Sum 60; 121 Adds, 34 integer Sums in production order"
# Production order: Sum(br3, br2, br1, br0) of a chain of Convs. Integer
# Adds wrap, so the int8 chain adds br0 + br1 as soon as both exist
# (10,240 -> 6,144 B); the f32 chain keeps the input order (exact float
# rounding), so its first Add waits for br3 and the peak stays.
late=tests/data/passes/sum_late
chain="[(e['op'], e['inputs']) for e in d['execution'] if e['op'].startswith('sum')]"
run 0 plan ${late}_i8.json --inputs activation --passes accumulate --order memory --json &&
  [ "$(py "$tmp/out" "(d['summary']['lower_bound_bytes'], $chain)")" = "(6144, [('sum.add1', ['br0', 'br1']), ('sum.add2', ['y.acc1', 'br2']), ('sum.add3', ['y.acc2', 'br3'])])" ] && ok || bad "accumulate: int8 chain not in production order"
run 0 plan ${late}_f32.json --inputs activation --passes accumulate --order memory --json &&
  [ "$(py "$tmp/out" "(d['summary']['lower_bound_bytes'], $chain)")" = "(40960, [('sum.add1', ['br3', 'br2']), ('sum.add2', ['y.acc1', 'br1']), ('sum.add3', ['y.acc2', 'br0'])])" ] && ok || bad "accumulate: f32 chain not in input order"
run 0 plan ${late}_i8.json --inputs activation --passes accumulate --order memory &&
  has "$tmp/out" "10,240 -> 6,144 (-40.0%)" &&
  has "$tmp/out" "Sum 1; 3 Adds, 1 integer Sum in production order"
run 0 plan ${late}_f32.json --inputs activation --passes accumulate --order memory &&
  has "$tmp/out" "Sum 1; 3 Adds" &&
  if grep -q "production order" "$tmp/out"; then bad "f32 Sum reordered"; else ok; fi

# Diamonds: SiLU, HardSwish and GELU written out as elementwise ops after
# Convs fuse into one op each (Mul@0 reads the head's value), in the plan
# JSON and the table; a tap of a later entry is refused with one line.
act=tests/data/passes/act_f32.json
run 0 plan $act --passes fuse --json &&
  [ "$(py "$tmp/out" "[(e['op'], e.get('epilogue')) for e in d['execution']]")" = "[('conv1', 'Sigmoid,Mul@0'), ('conv2', 'Add,Clip,Mul@0,Div'), ('conv3', 'Div,Erf,Add,Mul@0,Mul'), ('conv4', None), ('s4', None), ('y', None)]" ] && ok || bad "act_f32: diamonds not fused"
run 0 plan $act --passes fuse && has "$tmp/out" "Conv 3; 3 diamonds (x * f(x))"
rm -f "$tmp/bt.mpk"
run 2 compile tests/data/passes/bad_tap.json -o "$tmp/bt.mpk" &&
  has "$tmp/err" "bad_tap.json: op 'conv1' (Conv): epilogue entry 'Mul@2' taps a later entry" &&
  lines "$tmp/err" 1
[ -e "$tmp/bt.mpk" ] && bad "bad_tap: a bundle was written" || ok

# absorb folds a nearest Resize by whole factors into the Add, Mul or Sub
# reading it (mplan.prologue "Resize:k"); diff names the upsampled maps.
up=tests/data/passes/upsample.onnx.bin
run 0 plan $up --passes all --json -o "$tmp/u1.json" &&
  [ "$(py "$tmp/u1.json" "sorted((e['op'], e['prologue'], e['inputs']) for e in d['execution'] if e.get('prologue'))")" = "[('add_early', 'Resize:1', ['lateral2', 'coarse']), ('add_floor', 'Resize:1', ['lateral', 'coarse']), ('add_wide', 'Resize:1', ['p2', 'wide_low']), ('mul_bcast', 'Resize:0', ['coarse', 'chscale']), ('mul_half', 'Resize:0', ['coarse', 'p1'])]" ] && ok || bad "upsample: Resizes not absorbed"
run 0 plan $up --passes absorb && has "$tmp/out" "Resize 5" &&
  has "$tmp/out" "prologue   add_floor Add + Resize: 2 x 1,024 x 1 = 2,048 B"
run 0 plan $up --passes none -o "$tmp/u0.json"
run 0 diff "$tmp/u0.json" "$tmp/u1.json" && has "$tmp/out" "5 fused" &&
  has "$tmp/out" "(fused into op 'add_wide')"
# A bundle whose replicated operand does not divide the output, and a
# prologue on an input the op does not have: one line each, no bundle.
rm -f "$tmp/bu.mpk"
run 2 compile tests/data/passes/bad_upsample.json -o "$tmp/bu.mpk" &&
  has "$tmp/err" "op 'add_up' (Add) at step 0: Resize prologue: 'b' does not divide the output 'y'" &&
  lines "$tmp/err" 1
[ -e "$tmp/bu.mpk" ] && bad "bad_upsample: a bundle was written" || ok
sed 's/Resize:1/Resize:2/' tests/data/passes/bad_upsample.json >"$tmp/bu2.json"
run 2 compile "$tmp/bu2.json" -o "$tmp/bu.mpk" &&
  has "$tmp/err" "op 'add_up' (Add): mplan.prologue 'Resize:2' on a Add (Resize:0 or Resize:1)" &&
  lines "$tmp/err" 1
run 2 verify tests/data/passes/bad_upsample.json && lines "$tmp/err" 1
# bad_head NAME MESSAGE: a head tests/data/passes/NAME.json refused by
# compile and verify in one line, no bundle written
bad_head() {
  rm -f "$tmp/bh.mpk"
  run 2 compile "tests/data/passes/$1.json" -o "$tmp/bh.mpk" &&
    has "$tmp/err" "$2" && lines "$tmp/err" 1
  [ -e "$tmp/bh.mpk" ] && bad "$1: a bundle was written" || ok
  run 2 verify "tests/data/passes/$1.json" && lines "$tmp/err" 1
}
# An elementwise head whose dequantized input is not of its output's shape
# (absorb rule 9 takes none such).
bad_head bad_ew "op 'add_dq' (Add) at step 0: prologue input 'q' does not have the output's shape"
# A BatchNormalization head whose QuantizeLinear has three scales for four
# channels (fuse condition 7 gives it one, or one per channel).
bad_head bad_bn "op 'bn_dq' (BatchNormalization) at step 0: epilogue QuantizeLinear scale 'sc' is not f32, one value or 4 (one per output channel)"
# An Add between pairs that reads input 1 replicated (mplan.p.resize 1)
# where 3 does not divide 8; the same with mplan.p.resize 2.
bad_head bad_qup "op 'add_up' (Add) at step 0: replicated input 'b' does not divide the output axis by axis (or the other operand does not broadcast)"
sed 's/"mplan.p.resize": 1/"mplan.p.resize": 2/' tests/data/passes/bad_qup.json >"$tmp/bqu.json"
rm -f "$tmp/bqu.mpk"
run 2 compile "$tmp/bqu.json" -o "$tmp/bqu.mpk" &&
  has "$tmp/err" "op 'add_up' (Add): mplan.p.resize 2 (an Add, Sub, Mul or Div reads input 0 or 1 replicated)" &&
  lines "$tmp/err" 1
[ -e "$tmp/bqu.mpk" ] && bad "bad_qup: a bundle was written" || ok
# A chain through a QDQ pair whose zero points have two types; the same
# with the pair's DequantizeLinear left out (a QuantizeLinear entry
# before a Relu), with its QuantizeLinear left out, and with an
# Add(DequantizeLinear) entry whose operand is f32, not 8-bit.
bad_head bad_chain "op 'add_dq' (Add): epilogue QuantizeLinear and DequantizeLinear entries 0 and 1: zero points of two types, or not 8-bit"
# bad_chain_edit EPILOGUE INPUTS MESSAGE: bad_chain.json with that
# epilogue and those epilogue inputs, refused by compile and verify in
# one line, no bundle written
bad_chain_edit() {
  sed "s/\"QuantizeLinear,DequantizeLinear,Relu,QuantizeLinear\"/\"$1\"/; s/\"s1\", \"z1\", \"s1\", \"z2\", \"s3\"/$2, \"s3\"/" \
    tests/data/passes/bad_chain.json >"$tmp/bch.json"
  rm -f "$tmp/bch.mpk"
  run 2 compile "$tmp/bch.json" -o "$tmp/bch.mpk" && has "$tmp/err" "$3" &&
    lines "$tmp/err" 1
  [ -e "$tmp/bch.mpk" ] && bad "bad_chain ($1): a bundle was written" || ok
  run 2 verify "$tmp/bch.json" && lines "$tmp/err" 1
}
bad_chain_edit "QuantizeLinear,Relu,QuantizeLinear" '"s1", "z1"' \
  "op 'add_dq' (Add) at step 0: epilogue entry 0: a QuantizeLinear before the last entry is an elementwise op's, Conv's or ConvTranspose's, followed by a DequantizeLinear of int8 or uint8"
bad_chain_edit "Relu,DequantizeLinear,QuantizeLinear" '"s1", "z2"' \
  "op 'add_dq' (Add): epilogue DequantizeLinear entry 1 does not follow a QuantizeLinear entry"
bad_chain_edit "QuantizeLinear,DequantizeLinear,Add(DequantizeLinear),QuantizeLinear" \
  '"s1", "z2", "s1", "z2", "k", "s1", "z2"' \
  "op 'add_dq' (Add) at step 0: epilogue operand 'k' under a DequantizeLinear: not 8-bit of the output's shape with one f32 scale and a zero point of its type"

# mplan diff says which tensors a pass put in another's buffer: from a
# plan JSON, a model planned with --passes, and a report database's runs.
rows=tests/data/passes/rows_f32.json
run 0 plan $rows --passes none -o "$tmp/r0.json"
run 0 plan $rows --passes all -o "$tmp/r1.json"
run 0 diff "$tmp/r0.json" $rows --passes all &&
  has "$tmp/out" "1 lifetime, 2 joined, 0 left" &&
  has "$tmp/out" "(now in buffer 'q')" && has "$tmp/out" "(now in buffer 'v')"
run 0 diff "$tmp/r1.json" "$tmp/r0.json" &&
  has "$tmp/out" "0 joined, 2 left" && has "$tmp/out" "(was in buffer 'q')"
run 0 diff "$tmp/r0.json" "$tmp/r1.json" --json &&
  [ "$(py "$tmp/out" "sorted((t['name'], t['change'], t.get('host')) for t in d['tensors']['changed'] if t['change'] == 'joined')")" = "[('p', 'joined', 'q'), ('y', 'joined', 'v')]" ] && ok || bad "diff JSON: joined tensors and hosts"
python3 - "$tmp/r1.json" "$tmp/r1_bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
next(b for b in d["buffers"] if "tensors" in b)["tensors"][1] = 7
json.dump(d, open(sys.argv[2], "w"))
PY
run 2 diff "$tmp/r0.json" "$tmp/r1_bad.json" &&
  has "$tmp/err" "r1_bad.json: buffers[" && has "$tmp/err" ".tensors[1]: expected a tensor name" &&
  lines "$tmp/err" 1
# Every tensor of MobileNetV2 without passes is accounted for with them:
# none appeared or vanished; 29 joined a buffer, 10 were fused into an op
# (its Conv + Add groups), the rest only changed their lifetime.
run 0 plan $mv2 --passes none -o "$tmp/m0.json"
run 0 plan $mv2 --passes all --order memory -o "$tmp/m1.json"
run 0 diff "$tmp/m0.json" "$tmp/m1.json" &&
  has "$tmp/out" "tensors: 0 grew, 0 shrank, 0 appeared, 0 vanished, 0 moved, 132 lifetime, 29 joined, 0 left, 10 fused, 0 unfused, 0 removed, 0 restored" &&
  has "$tmp/out" "(fused into op 'b3_project')"
run 0 diff "$tmp/m1.json" "$tmp/m0.json" &&
  has "$tmp/out" "29 left, 0 fused, 10 unfused" &&
  has "$tmp/out" "(was fused into op 'b3_project')"
python3 - "$tmp/m1.json" "$tmp/m1_bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["passes"]["fusions"][2]["op"]
json.dump(d, open(sys.argv[2], "w"))
PY
run 2 diff "$tmp/m0.json" "$tmp/m1_bad.json" &&
  has "$tmp/err" "m1_bad.json: passes.fusions[2]" && has "$tmp/err" "op" &&
  lines "$tmp/err" 1
# fold and eliminate: each tensor they removed is named with the pass, in
# the plan JSON's rows and in the diff (ops.onnx.bin: Identity, Dropout,
# x*1, x+0, cancelling Transposes, view chains, constant subgraphs).
ops=tests/data/passes/ops.onnx.bin
run 0 plan $ops --passes none -o "$tmp/o0.json"
run 0 plan $ops --passes all -o "$tmp/o1.json" &&
  [ "$(py "$tmp/o1.json" "[(r['pass'], r['removed']) for r in d['passes']['rows'] if r['removed']]")" = "[('fold', 'i0,ax0,m1c,wt,sh,d0,d0u'), ('eliminate', 'one,zero,back,xi,xd,xc,t1,t2,m1,a1,tgt,flat,o1r')]" ] && ok || bad "plan JSON: removed tensors per pass"
run 0 diff "$tmp/o0.json" "$tmp/o1.json" &&
  has "$tmp/out" "0 appeared, 0 vanished" && has "$tmp/out" "20 removed, 0 restored" &&
  has "$tmp/out" "(removed by pass 'eliminate')"
run 0 diff "$tmp/o1.json" "$tmp/o0.json" && has "$tmp/out" "0 removed, 20 restored"
rm -f "$tmp/rows.db"
run 0 report $rows --passes none --sqlite "$tmp/rows.db"
run 0 report $rows --passes all --sqlite "$tmp/rows.db"
run 0 diff "$tmp/rows.db:1" "$tmp/rows.db:2" --markdown "$tmp/rows.md" &&
  has "$tmp/out" "2 joined" && has "$tmp/rows.md" "| joined | p | 4,096 B (4.00 KiB) | in q |"

# inplace: a depthwise Conv with a fused epilogue (BatchNormalization +
# HardSwish; Relu for int8) still writes over its input, and its epilogue
# runs in place (share.h rule 3): the lower bound falls (f32 262,144 ->
# 196,608 B; int8 65,536 -> 49,152 B).
for dt in f32 i8; do
  m=tests/data/passes/dw_epilogue_$dt.json
  run 0 plan $m --passes all -o "$tmp/dwe.json" && has "$tmp/out" "depthwise Conv 1" &&
    run 0 plan $m --passes fold,eliminate,accumulate,fuse,hfuse,absorb,views,concat -o "$tmp/dwe0.json" &&
    [ "$(py "$tmp/dwe.json" "d['summary']['lower_bound_bytes']")" -lt "$(py "$tmp/dwe0.json" "d['summary']['lower_bound_bytes']")" ] && ok ||
    bad "dw_epilogue_$dt: the fused depthwise Conv does not write over its input"
done
# inplace: a Cast between dtypes of one element size (ConvInteger's int32
# sums to float, as in dynamically quantized ISNet) converts in place
# (share.c rule 8); a Cast whose input another op still reads, or to a
# wider dtype, does not: exactly one of cast_inplace's four Casts.
ci=tests/data/passes/cast_inplace.onnx.bin
run 0 plan $ci --passes all -o "$tmp/ci1.json" && has "$tmp/out" "Cast 1, Mul 2, Relu 1" &&
  has "$tmp/out" "115,200 -> 90,368 (-21.6%)" && run 0 validate "$tmp/ci1.json"
# fold, groups too large to evaluate while planning (fold.c invariant 4):
# W [384, 96] cut into gate blocks, reordered and transposed, and its bias
# reordered, fold as two groups (W^T and b' are no larger than W and b,
# which die); the Tile (a larger weight out of a small one) and V's
# Transpose (V stays: a MatMul reads it) stay ops. Compile runs the group
# with the runtime (cli_passes_run: outputs bit for bit; test_ort: ONNX
# Runtime agrees).
fl=tests/data/passes/fold_large.onnx.bin
run 0 plan $fl --passes none -o "$tmp/fl0.json"
run 0 plan $fl --passes fold -o "$tmp/fl1.json" &&
  has "$tmp/out" "Slice 8, Concat 2, Transpose 1; 6 ops of constant subgraphs too large to evaluate here: compile runs them" &&
  [ "$(py "$tmp/fl1.json" "sorted(e['op'] for e in d['execution'])")" = "['add_tile', 'bias', 'gates', 'mm_v', 'mm_vt', 'tile', 'transpose_v']" ] && ok ||
  bad "fold_large: the groups that fold, and the ops that stay"
[ "$(py "$tmp/fl1.json" "(d['summary']['lower_bound_bytes'], d['summary']['resident_bytes'] <= $(py "$tmp/fl0.json" "d['summary']['resident_bytes']"))")" = "(59648, True)" ] && ok ||
  bad "fold_large: lower bound or resident bytes after folding"
run 0 compile $fl --passes all -o "$tmp/fl.mpk"
# the group reads row 999 of a [384, 96] weight: planning cannot see it,
# running the group at compile time does (one line, exit 2, no bundle)
run 0 plan tests/data/passes/fold_bad_index.onnx.bin --passes all
run 2 compile tests/data/passes/fold_bad_index.onnx.bin --passes all -o "$tmp/fb.mpk" &&
  lines "$tmp/err" 1 &&
  has "$tmp/err" "fold_bad_index.onnx.bin: a constant subgraph the fold pass folded: op 'gather_rows' (Gather)" &&
  has "$tmp/err" "index 999 of 'rows' is out of range" &&
  { [ ! -e "$tmp/fb.mpk" ] && ok || bad "a partial bundle was written"; }

run 0 plan --help && has "$tmp/out" "--passes"
echo "passes cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
