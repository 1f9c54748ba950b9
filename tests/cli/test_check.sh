#!/usr/bin/env bash
# mplan check and mplan diff end to end (issue 8): usage errors, baselines
# written and checked, the budget and both sides of the tolerance band,
# missing, corrupt and foreign baselines (exit 2), baselines from other
# options, hints for a model over budget, many models in one call, all-or-none updates, JUnit XML
# validated by a real XML parser (python3's xml.etree: expat), a Markdown
# snapshot (tests/golden/check.md; MPLAN_UPDATE_GOLDEN=1 rewrites it), and
# diffs of plans, baselines, models and report-database runs.
# usage: test_check.sh MPLAN SOURCE_DIR
set -u
mplan=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
. "$(dirname "$0")/lib.sh"

hasnt() { # FILE TEXT
  if grep -qF -- "$2" "$1"; then bad "$(basename "$1") has: $2"; else ok; fi
}

py() { # PYTHON-EXPRESSION-ON-d FILE: prints the expression's value
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$2"
}

expect() { # WHAT ACTUAL WANTED
  if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', expected '$3'"; fi
}

# A lifetimes/1 table: table FILE "name:first:last:size[:r]"...
table() {
  local file=$1 sep="" item
  shift
  {
    printf '{"mplan": "lifetimes/1", "steps": 6, "alignment": 16, "tensors": [\n'
    for item in "$@"; do
      IFS=: read -r name first last size res <<<"$item"
      printf '%s  {"name": "%s", "first_use": %s, "last_use": %s, "size": %s%s}' \
        "$sep" "$name" "$first" "$last" "$size" \
        "$([ "$res" = r ] && echo ', "resident": true')"
      sep=$',\n'
    done
    printf '\n]}\n'
  } >"$file"
}

cd "$tmp"
mkdir ci
# Resident 32 KiB; activations with a peak of 12 KiB at steps 2..3.
base_items=("w:0:5:32768:r" "x:0:1:4096" "y:1:2:4096" "z:2:3:8192" "o:3:5:1024")
table ci/steady.json "${base_items[@]}"
table ci/grown.json "${base_items[@]}"
table ci/saved.json "${base_items[@]}"
table ci/gone.json "${base_items[@]}"
L=(--strategy linear) # stable figures for the snapshot

# ---- usage errors: one line on stderr, nothing on stdout, exit 2 ---------
while IFS= read -r args; do
  # shellcheck disable=SC2086
  run 2 check $args && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] && ok ||
    bad "mplan check $args: expected one line on stderr and nothing on stdout"
done <<'EOF'
check
ci/steady.json
ci/steady.json --baseline b.json --baseline-dir bl
ci/steady.json --update-baseline
ci/steady.json --budget 1MiB --tolerance 3%
ci/steady.json --baseline-dir bl --tolerance 3x
ci/steady.json --budget lots
ci/steady.json ci/grown.json --baseline b.json
ci/steady.json --budget 1MiB --junit r.xml --markdown r.xml
ci/steady.json --budget 1MiB --frobnicate
EOF
mkdir -p other && cp ci/steady.json other/steady.json
run 2 check ci/steady.json other/steady.json --baseline-dir bl &&
  has "$tmp/err" "'ci/steady.json' and 'other/steady.json' would share the baseline 'bl/steady.baseline.json'"
run 2 check ci/steady.json --budget 1MiB --tolerance 3% && has "$tmp/err" "--tolerance needs --baseline FILE or --baseline-dir DIR"
run 2 check ci/steady.json --baseline-dir bl --tolerance 3x && has "$tmp/err" "tolerance '3x': expected a percentage"
run 2 check ci/steady.json && has "$tmp/err" "nothing to check"
[ ! -e bl ] && ok || bad "a usage error created the baseline directory"

# ---- writing baselines, then passing --------------------------------------
run 0 check ci/*.json --baseline-dir baselines --update-baseline "${L[@]}" &&
  has "$tmp/out" "baseline written: arena 50,176 B (49.00 KiB)"
for m in steady grown saved gone; do
  [ -s "baselines/$m.baseline.json" ] && ok || bad "no baselines/$m.baseline.json"
done
expect "baseline format" "$(py "d['mplan'], d['tool'], d['options']['strategy'], d['regions'][0]['arena_bytes'], len(d['tensors'])" baselines/steady.baseline.json)" \
  "baseline/1 mplan $("$mplan" --version | cut -d' ' -f2) linear 50176 5"
run 0 check ci/*.json --baseline-dir baselines "${L[@]}" &&
  has "$tmp/out" "arena 50,176 B (49.00 KiB) = baseline (band +-0 B, 0%)" &&
  has "$tmp/out" "result: PASS: 4 passed, 0 failed, 0 errors of 4 models"
run 0 check ci/steady.json --baseline-dir baselines "${L[@]}" --json &&
  expect "JSON status" "$(py "d['mplan'], d['status'], d['counts']['passed'], d['models'][0]['checks'][0]['regions'][0]['band_bytes']" "$tmp/out")" \
    "check/1 pass 1 0"
run 0 check ci/steady.json --baseline-dir baselines --update-baseline "${L[@]}" &&
  has "$tmp/out" "baseline rewritten: arena unchanged at 50,176 B (49.00 KiB)"
cp baselines/gone.baseline.json gone.keep && rm baselines/gone.baseline.json

# ---- the budget: the arena itself passes, one byte less fails ------------
run 0 check ci/steady.json --budget 50176 "${L[@]}" && has "$tmp/out" "is 100.00% of the budget"
run 1 check ci/steady.json --budget 50175 "${L[@]}" &&
  has "$tmp/out" "arena 50,176 B (49.00 KiB) exceeds the budget 50,175 B (49.00 KiB) by 1 B" &&
  has "$tmp/err" "mplan: check failed: 1 failed, 0 errors of 1 model"
run 0 check ci/steady.json --budget 49KiB "${L[@]}"
run 1 check ci/steady.json --budget 48KiB "${L[@]}"
run 2 check ci/steady.json --budget 0.05MiB "${L[@]}" && has "$tmp/err" "size '0.05MiB' is not a whole number of bytes"

# ---- over budget: a hint names the other setting with the smallest arena --
run 1 check ci/steady.json --budget 50175 "${L[@]}" &&
  has "$tmp/out" "hint            --strategy auto fits: arena 45,056 B, within the budget of 50,175 B"
run 1 check ci/steady.json --budget 40000 "${L[@]}" --json &&
  expect "JSON hint" "$(py "d['models'][0]['checks'][0]['hint']" "$tmp/out")" \
    "--strategy auto gives the smallest arena of the other settings, 45,056 B: still over the budget of 40,000 B"
run 0 check ci/steady.json --budget 50176 "${L[@]}" && hasnt "$tmp/out" "hint"
run 1 check "$src/models/mobilenet_v2.json" "$src/models/resnet50.json" --budget 4MiB \
  --markdown hint.md --junit hint.xml &&
  has "$tmp/out" "hint            --passes all,tile --order memory fits: arena 3,934,768 B, within the budget of 4,194,304 B" &&
  has "$tmp/out" "hint            the resident tensors (weights) alone take 25,763,680 B" &&
  has hint.md "**hint**: --passes all,tile --order memory fits" &&
  has hint.xml "hint: --passes all,tile --order memory fits"
# the hint's figure is what plan gives for that setting
expect "all,tile memory arena" "$("$mplan" plan "$src/models/mobilenet_v2.json" --passes all,tile --order memory --json |
  py "d['summary']['arena_bytes']" /dev/stdin)" 3934768
# every setting the hint compared is listed, with what plan gives for it
# and whether it fits; the hint names the smallest
has "$tmp/out" "what-if   fits  3,934,768 B with --passes all,tile --order memory" &&
  has "$tmp/out" "what-if   over  5,097,440 B with --passes all" &&
  has hint.md "| --passes all,tile | 3,947,312 B | fits |" &&
  has hint.md "| --order memory | 5,197,792 B | over |"
run 1 check "$src/models/mobilenet_v2.json" --budget 4MiB --json && cp "$tmp/out" wi.json
n=0
while IFS=$'\t' read -r setting arena fits; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  got=$("$mplan" plan "$src/models/mobilenet_v2.json" $setting --json | py "d['summary']['arena_bytes']" /dev/stdin)
  expect "what-if $setting arena" "$got" "$arena"
  expect "what-if $setting fits" "$fits" "$([ "$arena" -le 4194304 ] && echo True || echo False)"
done < <(py "'\n'.join('%s\t%d\t%s' % (w['setting'], w['arena_bytes'], w['fits']) for w in d['models'][0]['checks'][0]['what_if'])" wi.json)
expect "what-if rows" "$n" 5
expect "hint names the smallest" "$(py "min(d['models'][0]['checks'][0]['what_if'], key=lambda w: w['arena_bytes'])['setting']" wi.json)" "--passes all,tile --order memory"
# a strategy row: steady.json's activations are above their lower bound
run 1 check ci/steady.json --budget 50175 "${L[@]}" --json &&
  expect "strategy row" "$(py "[w['fits'] for w in d['models'][0]['checks'][0]['what_if'] if w['setting'] == '--strategy auto']" "$tmp/out")" "[True]"

# ---- both sides of the band ------------------------------------------------
# grown: z grows by 512 B (+1.02% of 50,176) and y lives one step longer.
table ci/grown.json "w:0:5:32768:r" "x:0:1:4096" "y:1:3:4096" "z:2:3:8704" "o:3:5:1024"
# saved: z shrinks by 1 KiB (-2.04%).
table ci/saved.json "w:0:5:32768:r" "x:0:1:4096" "y:1:2:4096" "z:2:3:7168" "o:3:5:1024"
run 1 check ci/grown.json --baseline-dir baselines "${L[@]}" &&
  has "$tmp/out" "arena 50,688 B (49.50 KiB) vs baseline 50,176 B (49.00 KiB): +512 B (+1.02%), outside the band +-0 B (0%)" &&
  has "$tmp/out" "grew      z" && has "$tmp/out" "lifetime  y"
# The band's edges: floor(50,176 * 1.03%) = 516 >= 512, floor(* 1.02%) =
# 511 < 512; floor(50,176 * 2.05%) = 1,028 >= 1,024, floor(* 2%) = 1,003.
run 0 check ci/grown.json --baseline-dir baselines --tolerance 1.03% "${L[@]}" &&
  has "$tmp/out" "within the band +-516 B (1.03%)"
run 1 check ci/grown.json --baseline-dir baselines --tolerance 1.02% "${L[@]}" &&
  has "$tmp/out" "outside the band +-511 B (1.02%)"
run 1 check ci/saved.json --baseline-dir baselines --tolerance 2% "${L[@]}" &&
  has "$tmp/out" "-1,024 B (1.00 KiB) (-2.04%), outside the band +-1,003 B (2%): an unexpected saving; refresh the baseline (--update-baseline)"
run 0 check ci/saved.json --baseline-dir baselines --tolerance 2.05% "${L[@]}" &&
  has "$tmp/out" "within the band +-1,028 B (1.00 KiB) (2.05%)"
run 1 check ci/saved.json --baseline ./baselines/saved.baseline.json --tolerance 1% "${L[@]}"

# ---- baselines that cannot be used: exit 2 -------------------------------
run 2 check ci/gone.json --baseline-dir baselines "${L[@]}" &&
  has "$tmp/err" "baselines/gone.baseline.json: no baseline (No such file or directory); create it with --update-baseline" &&
  has "$tmp/out" "ERROR  ci/gone.json: arena 50,176 B (49.00 KiB)"
corrupt() { # NAME SED-EXPRESSION EXPECTED-MESSAGE
  sed "$2" baselines/steady.baseline.json >"bad_$1.json"
  run 2 check ci/steady.json --baseline "bad_$1.json" "${L[@]}" &&
    has "$tmp/err" "bad_$1.json" && has "$tmp/err" "$3"
}
corrupt truncated '$d' "unexpected end of input"
corrupt version 's|baseline/1|baseline/9|' "unsupported format 'baseline/9' (this mplan reads baseline/1 and plan/1)"
corrupt lower 's|"lower_bound_bytes":12288|"lower_bound_bytes":12000|' "lower_bound_bytes is 12000, but its tensors give 12288 (edited by hand?)"
corrupt size 's|"size":8192|"size":"8192"|' "tensors[3] ('z').size: expected an integer"
corrupt field 's|"padded"|"paded"|' "paded: unknown field"
: >empty.json
run 2 check ci/steady.json --baseline empty.json "${L[@]}" && has "$tmp/err" "empty.json:1:1: malformed JSON (unexpected end of input)"
run 2 check ci/steady.json --baseline ci/grown.json "${L[@]}" && has "$tmp/err" "ci/grown.json: is a lifetimes/1, not a baseline or a plan"
"$mplan" plan ci/steady.json "${L[@]}" -o steady.plan.json >/dev/null
run 2 check ci/steady.json --baseline steady.plan.json "${L[@]}" && has "$tmp/err" "steady.plan.json: records no planning options to compare with (plan/1)"
run 2 check ci/steady.json --baseline baselines/saved.baseline.json "${L[@]}" &&
  has "$tmp/err" "baselines/saved.baseline.json: is the baseline of 'ci/saved.json', not of 'ci/steady.json'"
# Other options: a clear error, not a false pass.
run 2 check ci/steady.json --baseline-dir baselines &&
  has "$tmp/err" "baselines/steady.baseline.json: baseline made with other options: strategy 'linear' (now 'auto'); check with the baseline's options or refresh it with --update-baseline"
run 2 check ci/steady.json --baseline-dir baselines --strategy linear --budget-ms 5 &&
  has "$tmp/err" "budget_ms 0 (now 5)"
"$mplan" check "$src/models/mobilenet_v2.json" --baseline-dir gbl --update-baseline >/dev/null 2>&1
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --dim N=2 && has "$tmp/err" "dims {} (now {\"N\":2})"
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --order topo && has "$tmp/err" "order 'auto' (now 'topo')"
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --inputs activation && has "$tmp/err" "inputs 'resident' (now 'activation')"
run 0 check "$src/models/mobilenet_v2.json" --baseline-dir gbl
# The work budgets decide a plan and are recorded only when set (the
# baselines made without them stay valid).
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --budget-work 1000 &&
  has "$tmp/err" "budget_work (none) (now 1000)"
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --order-work 5000 &&
  has "$tmp/err" "order_work (none) (now 5000)"
"$mplan" check "$src/models/mobilenet_v2.json" --baseline-dir gwork --order memory \
  --order-work 5000 --update-baseline >/dev/null 2>&1
run 0 check "$src/models/mobilenet_v2.json" --baseline-dir gwork --order memory --order-work 5000
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gwork --order memory &&
  has "$tmp/err" "order_work 5000 (now (none))"
# Graph passes are options too: absent in a baseline made without them
# (so the committed ones stay valid), named when they differ either way.
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --passes all &&
  has "$tmp/err" "passes (none) (now 'all')"
"$mplan" check "$src/models/mobilenet_v2.json" --baseline-dir pbl --passes fuse,inplace --update-baseline >/dev/null 2>&1
[ "$(py 'd["options"].get("passes")' pbl/mobilenet_v2.baseline.json)" = "fuse,inplace" ] && ok || bad "pbl: options.passes not recorded"
run 0 check "$src/models/mobilenet_v2.json" --baseline-dir pbl --passes inplace,fuse
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir pbl && has "$tmp/err" "passes 'fuse,inplace' (now (none))"
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir pbl --passes all && has "$tmp/err" "passes 'fuse,inplace' (now 'all')"
# A baseline made with passes names what they did ("holds" on a buffer's
# line, "fused" and "removed" lines), so a diff of two baselines explains
# every tensor that went away; ops.onnx.bin's passes remove 20.
"$mplan" check "$src/models/mobilenet_v2.json" --baseline-dir abl --passes all --update-baseline >/dev/null 2>&1
run 0 diff gbl/mobilenet_v2.baseline.json abl/mobilenet_v2.baseline.json &&
  has "$tmp/out" "0 appeared, 0 vanished" && has "$tmp/out" "29 joined, 0 left, 10 fused, 0 unfused" &&
  has "$tmp/out" "(now in buffer 'b3_expand_out')" && has "$tmp/out" "(fused into op 'b3_project')"
run 0 diff abl/mobilenet_v2.baseline.json gbl/mobilenet_v2.baseline.json &&
  has "$tmp/out" "29 left, 0 fused, 10 unfused"
ops=$src/tests/data/passes/ops.onnx.bin
"$mplan" check "$ops" --baseline-dir obl0 --update-baseline >/dev/null 2>&1
"$mplan" check "$ops" --baseline-dir obl1 --passes all --update-baseline >/dev/null 2>&1
run 0 diff obl0/ops.onnx.baseline.json obl1/ops.onnx.baseline.json &&
  has "$tmp/out" "0 vanished" && has "$tmp/out" "20 removed" &&
  has "$tmp/out" "(removed by pass 'eliminate')"
run 0 check "$ops" --baseline-dir obl1 --passes all
[ "$(grep -c '"holds"' gbl/mobilenet_v2.baseline.json)" = 0 ] && ok || bad "a baseline without passes has holds"
badbl() { # NAME SED-EXPRESSION EXPECTED-MESSAGE: a corrupt passes baseline
  sed "$2" abl/mobilenet_v2.baseline.json >"abl_$1.json"
  run 2 check "$src/models/mobilenet_v2.json" --baseline "abl_$1.json" --passes all &&
    has "$tmp/err" "abl_$1.json" && has "$tmp/err" "$3" &&
    expect "abl_$1: error lines" "$(wc -l <"$tmp/err")" 1
}
badbl holds 's|"holds":\["b1_dw_out"\]|"holds":[7]|' "('conv1_out').holds[0]: expected a tensor name"
badbl fused 's|{"op":"b3_project",|{"op":"b3_project","at":1,|' "fused[0].at: unknown field"
badbl fusedop 's|{"op":"b3_project",|{|' "fused[0].op: missing"
# A report may not overwrite a baseline, however it is spelled.
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --update-baseline \
  --junit ./gbl/mobilenet_v2.baseline.json && has "$tmp/err" "is both a report and the baseline of"
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir gbl --junit j.xml --markdown ./j.xml &&
  has "$tmp/err" "is named by --junit and --markdown"
[ -e j.xml ] && bad "j.xml written by a refused check" || ok
# One model that cannot be checked: its error is the only line on stderr.
run 2 check "$src/models/mobilenet_v2.json" --baseline-dir nowhere &&
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "one model, one error: not one line"

# ---- many models in one call; the worst verdict wins ----------------------
run 2 check ci/*.json --baseline-dir baselines --tolerance 1.5% --budget 64KiB "${L[@]}" \
  --json --junit report.xml --markdown report.md &&
  expect "counts" "$(py "d['status'], d['counts']['models'], d['counts']['passed'], d['counts']['failed'], d['counts']['errors'], [m['status'] for m in d['models']]" "$tmp/out")" \
    "error 4 2 1 1 ['error', 'pass', 'fail', 'pass']" &&
  has "$tmp/err" "mplan: error: baselines/gone.baseline.json: no baseline" &&
  has "$tmp/err" "mplan: check incomplete: 1 failed, 1 error of 4 models"
[ -s report.xml ] && [ -s report.md ] && ok || bad "--junit/--markdown not written when the verdict is error"
run 1 check ci/grown.json ci/saved.json ci/steady.json --baseline-dir baselines --tolerance 1.5% "${L[@]}" &&
  has "$tmp/out" "result: FAIL: 2 passed, 1 failed, 0 errors of 3 models"

# ---- JUnit XML, validated by a real parser -------------------------------
junit_check() { # FILE TESTS FAILURES ERRORS SUITES
  python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
path, tests, failures, errors, suites = sys.argv[1], *map(int, sys.argv[2:])
root = ET.parse(path).getroot()
assert root.tag == "testsuites", root.tag
got = (int(root.get("tests")), int(root.get("failures")), int(root.get("errors")))
assert got == (tests, failures, errors), got
ss = root.findall("testsuite")
assert len(ss) == suites, len(ss)
n = f = e = 0
for s in ss:
    cases = s.findall("testcase")
    assert int(s.get("tests")) == len(cases)
    for c in cases:
        assert c.get("classname") == s.get("name") and c.get("name")
        f += len(c.findall("failure"))
        e += len(c.findall("error"))
        for x in c.findall("failure") + c.findall("error"):
            assert x.get("message") and x.text
    n += len(cases)
assert (n, f, e) == (tests, failures, errors), (n, f, e)
print("ok")
PY
}
expect "JUnit of 4 models" "$(junit_check report.xml 8 1 1 4 2>&1)" ok
grep -q '<testcase classname="ci/grown.json" name="baseline">' report.xml && ok || bad "no baseline testcase for ci/grown.json"
grep -q '<failure type="baseline" message="arena 49,152 B (48.00 KiB) vs baseline 50,176 B' report.xml && ok || bad "no baseline failure message"
# Names that XML must escape, and bytes that are not UTF-8.
weird=$'we<ird&"\'\xff\x01.json'
cp ci/steady.json "$weird"
run 2 check "$weird" ci/steady.json missing.json --budget 60KiB --junit weird.xml "${L[@]}"
expect "JUnit with odd names" "$(junit_check weird.xml 3 0 1 3 2>&1)" ok
python3 -c "
import sys, xml.etree.ElementTree as ET
names = [s.get('name') for s in ET.parse('weird.xml').getroot()]
assert names[0] == 'we<ird&\"\'\ufffd\ufffd.json', names[0]
" && ok || bad "odd names not preserved through XML"

# ---- Markdown snapshot ----------------------------------------------------
cp gone.keep baselines/gone.baseline.json
table ci/gone.json "w:0:5:32768:r" "x:0:1:4096" "y:1:2:4096" "z:2:3:8192"
table ci/new.json "w:0:5:32768:r" "x:0:1:4096" # no baseline: an error
run 2 check ci/*.json --baseline-dir baselines --tolerance 1.5% --budget 64KiB "${L[@]}" --markdown check.md
rm ci/new.json
if [ "${MPLAN_UPDATE_GOLDEN:-}" = 1 ]; then cp check.md "$src/tests/golden/check.md"; fi
if diff -u "$src/tests/golden/check.md" check.md; then ok; else bad "Markdown differs from tests/golden/check.md (MPLAN_UPDATE_GOLDEN=1 rewrites it)"; fi
# Outputs are all or nothing: a JUnit file that cannot be written stops
# the Markdown too.
rm -f check.md
run 2 check ci/steady.json --baseline-dir baselines "${L[@]}" --junit nodir/r.xml --markdown check.md
[ ! -e check.md ] && ok || bad "--markdown written although --junit failed"

# ---- --update-baseline: all or none --------------------------------------
mkdir fresh
table ci/broken.json "w:0:5:0:r"
run 2 check ci/steady.json ci/broken.json --baseline-dir fresh --update-baseline "${L[@]}" &&
  has "$tmp/err" "fresh/steady.baseline.json: not written: 1 model could not be planned (baselines are written all or none)"
[ -z "$(ls fresh)" ] && ok || bad "--update-baseline wrote baselines although a model failed"
rm ci/broken.json
run 0 check ci/grown.json --baseline-dir baselines --update-baseline "${L[@]}" &&
  has "$tmp/out" "baseline updated: arena 50,176 B (49.00 KiB) -> 50,688 B (49.50 KiB): +512 B (+1.02%)"
run 0 check ci/grown.json --baseline-dir baselines "${L[@]}"

# ---- mplan diff -------------------------------------------------------------
table a.json "w:0:5:32768:r" "x:0:1:4096" "y:1:2:4096" "z:2:3:8192"
table b.json "w:0:5:32768:r" "x:0:1:4096" "y:1:3:4096" "z:2:3:12288" "n:4:5:512"
"$mplan" plan a.json -o a.plan.json >/dev/null && "$mplan" plan b.json -o b.plan.json >/dev/null
run 0 diff a.plan.json b.plan.json &&
  has "$tmp/out" "old: a.plan.json (plan/1 of a.json" &&
  has "$tmp/out" "why: +4,096 B (4.00 KiB) = resident 0 B, sizes +4,096 B (4.00 KiB), order 0 B, fragmentation 0 B; mostly sizes" &&
  has "$tmp/out" "tensors: 1 grew, 0 shrank, 1 appeared, 0 vanished, 0 moved, 1 lifetime" &&
  has "$tmp/out" "peak: 12,288 B (12.00 KiB) at step 2 -> 16,384 B (16.00 KiB) at steps 2..3: moved"
run 0 diff a.plan.json b.plan.json --json &&
  expect "diff JSON sums" "$(py "d['mplan'], sum(d['total']['why'].values()) == d['total']['delta'], d['tensors']['counts']['appeared'], d['regions'][0]['peak']['moved']" "$tmp/out")" \
    "diff/1 True 1 True"
run 0 diff a.json b.json --markdown d.md && has d.md "**Why**: +4,096 B (4.00 KiB)" && has d.md "| **total** | arena |"
"$mplan" check a.json --baseline a.bl.json --update-baseline >/dev/null
run 0 diff a.bl.json b.json && has "$tmp/out" "old: a.bl.json (baseline/1 of a.json"
run 0 diff a.bl.json a.plan.json && has "$tmp/out" "tensors: 0 grew, 0 shrank, 0 appeared, 0 vanished, 0 moved, 0 lifetime"
"$mplan" report a.json --sqlite h.db >/dev/null && "$mplan" report b.json --sqlite h.db >/dev/null &&
  "$mplan" report b.json --sqlite h.db --strategy linear >/dev/null
run 0 diff h.db:1 h.db:-2 && has "$tmp/out" "new: h.db:2 (run of b.json" && has "$tmp/out" "why: +4,096 B (4.00 KiB)"
run 0 diff h.db:-2 h.db:-1 --json &&
  expect "runs: only fragmentation" "$(py "d['total']['why']['sizes'], d['total']['why']['order'], d['total']['main_cause']" "$tmp/out")" "0 0 fragmentation"
run 0 diff "$tmp/h.db:1" b.plan.json
cp h.db h.db.before
run 2 diff h.db h.db:1 && has "$tmp/err" "h.db: a report database: name one of its runs, h.db:ID or h.db:-1 for the latest"
run 2 diff h.db:9 h.db:1 && has "$tmp/err" "h.db: no run 9"
run 2 diff h.db:first h.db:1 && has "$tmp/err" "run 'first': expected a run id"
run 2 diff a.json:1 h.db:1 && has "$tmp/err" "a.json: not a report database, so 'a.json:1' names no run"
run 2 diff nothere.json a.json && has "$tmp/err" "nothere.json: no such file"
run 2 diff a.json && has "$tmp/err" "expected two arguments, A and B (1 given)"
run 2 diff a.json b.json c.json
run 2 diff a.json b.json --budget 1KiB && has "$tmp/err" "unknown option '--budget'"
cmp -s h.db h.db.before && ok || bad "diffing runs changed the database"

# a graph the passes empty (its one op's output is read by nothing; a
# fuzz finding): its plan has no buffer, and still validates, diffs and
# checks against its baseline
cp "$src/tests/fuzz/corpus/every_op_dead.onnx.bin" empty.onnx
e=empty.onnx
run 0 plan "$e" --passes all -o empty.plan.json
run 0 validate empty.plan.json && has "$tmp/out" "valid: 0 buffers in an arena of 0 B"
run 0 diff empty.plan.json empty.plan.json
run 0 check "$e" --passes all --baseline empty.bl.json --update-baseline
run 0 check "$e" --passes all --baseline empty.bl.json && has "$tmp/out" "arena 0 B = baseline"
"$mplan" report "$e" --passes all --sqlite empty.db >/dev/null
run 0 diff empty.db:1 empty.plan.json && has "$tmp/out" "arena                                   0 B"

# ---- a report database as the baseline ------------------------------------
# The latest run of a model file of the same name planned with the same
# options: several models in one call, the strategy picks the run, a
# model that grew fails against it, options without a run and a model
# without a run are errors (exit 2), --update-baseline is refused, and the
# database is only read.
mkdir -p hist
cp ci/steady.json hist/m.json
cp ci/saved.json hist/n.json
run 0 report hist/m.json --sqlite hist.db
run 0 report hist/m.json --sqlite hist.db --strategy linear
run 0 report hist/n.json --sqlite hist.db
run 0 check hist/m.json hist/n.json --baseline hist.db &&
  has "$tmp/out" "result: PASS: 2 passed, 0 failed, 0 errors of 2 models"
run 0 check hist/m.json --baseline hist.db --json &&
  expect "db baseline: the default run" "$(py "d['models'][0]['diff']['old']['source']" "$tmp/out")" "hist.db:1"
run 0 check hist/m.json --baseline hist.db --strategy linear --json &&
  expect "db baseline: the linear run" "$(py "d['models'][0]['diff']['old']['source']" "$tmp/out")" "hist.db:2"
run 0 report hist/m.json --sqlite hist.db --strategy linear
run 0 check hist/m.json --baseline hist.db --strategy linear --json &&
  expect "db baseline: the latest linear run" "$(py "d['models'][0]['diff']['old']['source']" "$tmp/out")" "hist.db:4"
table hist/m.json "w:0:5:32768:r" "x:0:1:4096" "y:1:2:4096" "z:2:3:16384" "o:3:5:1024"
run 1 check hist/m.json --baseline hist.db && has "$tmp/out" "FAIL   hist/m.json"
runs=$(sqlite3 hist.db "SELECT count(*) FROM run")
run 2 check hist/m.json --baseline hist.db --strategy best-fit-size &&
  has "$tmp/err" "hist.db: no run of 'm.json' planned with these options (3 runs of it with other options, or recorded before schema version 9); record one with mplan report MODEL --sqlite hist.db and the same planning flags"
cp ci/steady.json hist/o.json
run 2 check hist/o.json --baseline hist.db &&
  has "$tmp/err" "hist.db: no run of 'o.json'; record one with mplan report MODEL --sqlite hist.db"
run 2 check hist/m.json --baseline hist.db --update-baseline &&
  has "$tmp/err" "hist.db is a report database: mplan report MODEL --sqlite hist.db records runs in it; --update-baseline writes baseline files"
expect "the database is only read" "$(sqlite3 hist.db "SELECT count(*) FROM run")" "$runs"

# ---- diff of the what-if: plans and runs made with --what-if -------------
# Matched by setting; each figure is what that side recorded; a side
# without --what-if has none ("only new").
m2=$src/models/mobilenet_v2.json
run 0 plan "$m2" --what-if -o wa.json
run 0 plan "$m2" --backend gpu --what-if -o wb.json
run 0 plan "$m2" -o wc.json
run 0 diff wa.json wb.json --json && cp "$tmp/out" wd.json
expect "what-if rows" "$(py "len(d['what_if'])" wd.json)" \
  "$(py "len(d['what_if'])" wa.json)"
expect "what-if figures" "$(py "[(w['setting'], w['old']['lower_bound_bytes'], w['old']['arena_bytes'], w['new']['lower_bound_bytes'], w['new']['arena_bytes']) for w in d['what_if']]" wd.json)" \
  "$(python3 -c "import json; a=json.load(open('wa.json'))['what_if']; b={w['setting']: w for w in json.load(open('wb.json'))['what_if']}; print([(w['setting'], w['lower_bound_bytes'], w['arena_bytes'], b[w['setting']]['lower_bound_bytes'], b[w['setting']]['arena_bytes']) for w in a])")"
run 0 diff wa.json wb.json && has "$tmp/out" "what-if (the other settings, as recorded by --what-if):" &&
  grep -q "^  --passes all,tile  *lower bound 254,800 -> [0-9,]* B (+[0-9,]* B); arena 3,947,312 -> " "$tmp/out" && ok || bad "diff text: no what-if row for all,tile"
run 0 diff wc.json wa.json && has "$tmp/out" "  --passes all,tile                  lower bound 254,800 B (only new); arena 3,947,312 B (only new)"
run 0 diff wc.json wc.json && hasnt "$tmp/out" "what-if"
run 0 diff wa.json wb.json --markdown wd.md && has wd.md "| setting | lower bound | arena |" &&
  has wd.md "| --order memory | 1,505,280 -> 1,505,280 B (0 B) | 5,197,792 -> "
# runs of a report database keep them too (table what_if)
rm -f wi.db
run 0 report "$m2" --what-if --sqlite wi.db
run 0 report "$m2" --backend gpu --what-if --sqlite wi.db
run 0 diff wi.db:1 wi.db:2 --json &&
  expect "run what-if = plan what-if" "$(py "d['what_if']" "$tmp/out")" "$(py "d['what_if']" wd.json)"

# two models with --what-if: planned under the same settings here, the
# same rows as the diff of their plans made with --what-if (searches count
# work, so the figures repeat); without it, none.
m1=$src/models/mobilenet_v1.json
run 0 plan "$m1" --what-if -o we.json
run 0 diff wa.json we.json --json && cp "$tmp/out" wf.json
run 0 diff "$m2" "$m1" --what-if --json &&
  expect "models what-if = plans what-if" "$(py "d['what_if']" "$tmp/out")" "$(py "d['what_if']" wf.json)"
expect "models what-if rows" "$(py "len(d['what_if'])" wf.json)" 5
run 0 diff "$m2" "$m1" && hasnt "$tmp/out" "what-if"

echo "check/diff: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
