#!/usr/bin/env bash
# The mplan command end to end: plan, validate and explain on every bundled
# model, round trips through plan files, hand-edited unsafe plans, options,
# usage errors, and a golden explanation.
# usage: test_cli.sh MPLAN SOURCE_DIR
set -u
mplan=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# run EXPECTED_STATUS ARGS...: runs mplan, keeps stdout/stderr in $tmp.
run() {
  local want=$1
  shift
  "$mplan" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "mplan $* exited $rc, expected $want"
    sed 's/^/    /' "$tmp/err" | head -5
    return 1
  fi
  ok
}

has() { # FILE TEXT
  if grep -qF -- "$2" "$1"; then ok; else bad "$(basename "$1") lacks: $2"; fi
}

json_field() { # FILE PYTHON-EXPRESSION-ON-d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

cd "$src"
models="models/seed_example.json models/mobilenet_v1.json models/mobilenet_v2.json tests/data/input.12.csv"

for m in $models; do
  name=$(basename "$m")
  for s in seed-first-fit linear; do
    run 0 plan "$m" --strategy "$s" -o "$tmp/$name.$s.plan.json" || continue
    has "$tmp/out" "validated: no two live buffers share a byte"
    has "$tmp/out" "wrote $tmp/$name.$s.plan.json"
    run 0 validate "$tmp/$name.$s.plan.json" && has "$tmp/out" ": valid:"
    [ "$(json_field "$tmp/$name.$s.plan.json" "d['summary']['strategy']")" = "$s" ] && ok ||
      bad "$name: strategy not recorded in the plan"
  done
  run 0 explain "$m" --strategy seed-first-fit && has "$tmp/out" "Lower bound" &&
    has "$tmp/out" "Memory map"
  cp "$tmp/out" "$tmp/$name.explain"
  # Explaining the plan file gives the same peak table as the model.
  run 0 explain "$tmp/$name.seed-first-fit.plan.json" --no-map &&
    for key in "Lower bound" "Activation arena" "Peak "; do
      want=$(grep -F "$key" "$tmp/$name.explain" | head -1)
      has "$tmp/out" "$want"
    done
  # --json prints exactly one JSON document with the required fields.
  run 0 plan "$m" --json &&
    [ "$(json_field "$tmp/out" "all(k in d['summary'] for k in ['arena_bytes','lower_bound_bytes','resident_bytes','activation_peak_bytes','no_reuse_bytes','strategy','order','plan_ms']) and d['summary']['activation_peak_bytes'] >= d['summary']['lower_bound_bytes'] and d['summary']['arena_bytes'] == d['summary']['resident_bytes'] + d['summary']['activation_peak_bytes'] and all(k in b for b in d['buffers'] for k in ['name','offset','size','first_use','last_use','class','region'])")" = True ] &&
    ok || bad "$name: plan --json lacks required fields or breaks an invariant"
done

# The published lower bounds, from the command line.
run 0 plan models/mobilenet_v2.json --json &&
  [ "$(json_field "$tmp/out" "d['summary']['lower_bound_bytes']")" = 1505280 ] && ok ||
  bad "MobileNetV2 lower bound is not 1,505,280"
run 0 plan models/mobilenet_v1.json --json &&
  [ "$(json_field "$tmp/out" "d['summary']['lower_bound_bytes']")" = 1204224 ] && ok ||
  bad "MobileNetV1 lower bound is not 1,204,224"
run 0 explain models/mobilenet_v2.json && has "$tmp/out" "step 4 'b2_dw' (Conv)" &&
  has "$tmp/out" "b2_expand_out" && has "$tmp/out" "last read here by b2_dw"
# Named dims: N=2 doubles every activation.
run 0 plan models/mobilenet_v2.json --dim N=2 --json &&
  [ "$(json_field "$tmp/out" "d['summary']['lower_bound_bytes']")" = 3010560 ] && ok ||
  bad "--dim N=2 does not double the lower bound"
# Inputs as activations: the input joins the first step's live set.
run 0 plan models/mobilenet_v2.json --inputs activation --json &&
  [ "$(json_field "$tmp/out" "[b['class'] for b in d['buffers'] if b['name']=='input'][0]")" = activation ] && ok ||
  bad "--inputs activation did not make the input an activation"
# A backend: every offset a multiple of 64, weights of 128.
run 0 plan models/mobilenet_v2.json --backend tests/data/backend_64.json -o "$tmp/b64.json" &&
  [ "$(json_field "$tmp/b64.json" "all(b['offset'] % (128 if b['kind']=='weight' else 64) == 0 for b in d['buffers']) and d['model']['backend']=='cpu-64'")" = True ] && ok ||
  bad "backend alignment not honoured"
run 0 validate "$tmp/b64.json"

# Hand-edited plans: rejected with exit 1, naming what is wrong.
run 1 validate tests/data/overlap_plan.json &&
  has "$tmp/err" "overlap: 'logits' (live 4..5, bytes 331776..332799) and 'probs' (live 5..5, bytes 331776..332799)" &&
  has "$tmp/err" "while both are live at 5..5"
run 1 validate tests/data/misaligned_plan.json && has "$tmp/err" "'res' at offset 344072 is not a multiple of its alignment 16"
run 1 validate tests/data/outside_plan.json && has "$tmp/err" "'res' (offset 344064, 8192 bytes) ends beyond region 0 of 352000 bytes"
run 1 explain tests/data/overlap_plan.json && has "$tmp/err" "overlap: 'logits'"
run 2 validate models/seed_example.json && has "$tmp/err" "is a lifetimes/1, not a plan"
run 2 plan tests/data/overlap_plan.json && has "$tmp/err" "this is a plan, not a model"

# Usage errors: one line, exit 2.
for args in "plan" "plan a.json b.json" "plan models/seed_example.json --frobnicate" \
  "plan models/seed_example.json --strategy nope" "plan models/seed_example.json --order sideways" \
  "plan models/mobilenet_v2.json --dim N" "plan models/mobilenet_v2.json --dim N=0" \
  "plan models/mobilenet_v2.json --dim" "plan models/mobilenet_v2.json --shape x=1x3x224x224" \
  "plan models/seed_example.json --dim N=2" "plan models/mobilenet_v2.json --backend tests/data/backend_bad_alignment.json" \
  "plan models/mobilenet_v2.json --backend tests/data/backend_regions.json" \
  "plan models/mobilenet_v2.json --backend tests/data/missing.json" "frobnicate" \
  "plan models/seed_example.json -o /nonexistent-dir/plan.json"; do
  # shellcheck disable=SC2086
  run 2 $args && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] && ok ||
    bad "mplan $args: expected one line on stderr and nothing on stdout"
done
run 2 plan models/seed_example.json --strategy nope && has "$tmp/err" "unknown strategy 'nope' (known: auto, exact, seed-first-fit,"
run 2 plan models/mobilenet_v2.json --dim N=0 && has "$tmp/err" "expected NAME=VALUE with VALUE >= 1"
run 0 --help && has "$tmp/out" "usage: mplan COMMAND"
run 0 plan --help && has "$tmp/out" "usage: mplan plan MODEL"
run 2

# Golden: the seed example's explanation, timing masked.
run 0 explain models/seed_example.json --strategy seed-first-fit &&
  sed 's/planned in [0-9.]* ms/planned in X ms/' "$tmp/out" >"$tmp/seed.txt" &&
  if diff -u tests/golden/seed_example.explain.txt "$tmp/seed.txt"; then ok; else bad "seed explanation differs from tests/golden"; fi

echo "cli: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
