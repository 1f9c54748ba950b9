#!/usr/bin/env bash
# mplan report and the report flags of mplan plan, end to end: every file
# for every bundled model, checked by other tools (Graphviz's dot, Python's
# XML, YAML and JSON parsers, the sqlite3 shell) against the plan JSON;
# the run history across runs and two concurrent writers; and the
# all-or-nothing rule on every kind of failure.
# usage: test_report.sh MPLAN SOURCE_DIR
set -u
mplan=$1
src=$2
. "$(dirname "$0")/lib.sh"

same() { if [ "$1" = "$2" ]; then ok; else bad "$3: '$1' != '$2'"; fi; }
one_line() { [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "$1: stderr is not one line: $(cat "$tmp/err")"; }
absent() { for f in "$@"; do [ -e "$f" ] && bad "$f was written on an error" || ok; done; }
q() { sqlite3 "$1" "$2"; }

cd "$src"
for m in models/seed_example.json models/mobilenet_v1.json models/mobilenet_v2.json tests/data/input.12.csv \
  tests/data/utf8_names.json; do
  n=$(basename "$m")
  d="$tmp/$n"
  mkdir -p "$d"
  run 0 plan "$m" -o "$d/plan.json" || continue
  run 0 report "$m" --html "$d/r.html" --sqlite "$d/h.db" --dot "$d/g.dot" \
    --svg "$d/g.svg" --lifetimes "$d/l.yaml" || continue
  for f in r.html g.dot g.svg l.yaml; do has "$tmp/out" "wrote $d/$f"; done
  has "$tmp/out" "appended run 1 to $d/h.db"
  # Graphviz itself accepts the DOT file, and the SVG is well-formed XML.
  if dot -Tsvg "$d/g.dot" -o "$d/dot.svg" 2>"$tmp/doterr" && grep -q '<svg' "$d/dot.svg"; then
    ok
  else
    bad "$n: dot -Tsvg rejects the DOT file: $(head -2 "$tmp/doterr")"
  fi
  python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$d/g.svg" && ok ||
    bad "$n: the SVG is not well-formed XML"
  # The YAML and JSON dumps say the same, and agree with the plan.
  run 0 report "$m" --lifetimes "$d/l.json"
  python3 - "$d/l.yaml" "$d/l.json" "$d/plan.json" <<'EOF' && ok || bad "$n: lifetime dumps disagree with the plan"
import json, sys, yaml
y = yaml.safe_load(open(sys.argv[1]))["tensor_lifetime"]
j = json.load(open(sys.argv[2]))["tensor_lifetime"]
p = json.load(open(sys.argv[3]))
assert y == j, "YAML and JSON differ"
assert list(j) == [b["name"] for b in p["buffers"]], "order or names differ"
for b in p["buffers"]:
    e = j[b["name"]]
    assert e["size_bytes"] == b["size"] and e["offset"] == b["offset"], b["name"]
    assert e["first_use"] == b["first_use"] and e["last_use"] == b["last_use"], b["name"]
    assert e["class"] == b["class"] and e["padded_bytes"] == b["padded_size"], b["name"]
    assert e["last_use_op"] == b.get("last_consumer"), b["name"]
EOF
  # The history: the run's figures are the plan's.
  arena=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["arena_bytes"])' "$d/plan.json")
  lb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["lower_bound_bytes"])' "$d/plan.json")
  nb=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["buffers"]))' "$d/plan.json")
  same "$(q "$d/h.db" 'SELECT arena_bytes FROM run_summary')" "$arena" "$n: run_summary arena"
  same "$(q "$d/h.db" 'SELECT sum(bytes) FROM live_at_peak WHERE peak_seq = 0')" "$lb" "$n: live_at_peak sums to the lower bound"
  same "$(q "$d/h.db" 'SELECT count(*) FROM tensor')" "$nb" "$n: tensor rows"
  same "$(q "$d/h.db" 'SELECT model_sha256 FROM run')" "$(sha256sum "$m" | cut -d' ' -f1)" "$n: model SHA-256"
  same "$(q "$d/h.db" 'PRAGMA journal_mode')" "wal" "$n: WAL mode"
  # The HTML is one file: no external reference of any kind.
  if grep -Eq '<(script|link|img|iframe)[^>]+(src|href)=' "$d/r.html"; then
    bad "$n: the HTML references an external resource"
  else
    ok
  fi
done

# Names in UTF-8 (Cyrillic, CJK, an emoji) arrive whole in every file.
d=$tmp/utf8_names.json
for name in 'größe' '卷积层卷积_relu' 'свёртка' 'probs😀'; do
  has "$d/plan.json" "$name"
  has "$d/r.html" "$name"
  has "$d/g.svg" "$name"
done
same "$(q "$d/h.db" "SELECT count(*) FROM tensor WHERE name IN ('größe', '卷积层卷积_relu', 'probs😀', 'входы')")" 4 "UTF-8 names in SQLite"
# explain pads names by terminal columns: the bytes column lines up.
"$mplan" explain tests/data/utf8_names.json >"$tmp/x.txt" 2>"$tmp/err" && ok || bad "explain utf8_names"
python3 - "$tmp/x.txt" <<'PY' && ok || bad "utf8_names: explain's columns do not line up"
import sys, unicodedata
cols = lambda s: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
rows = [l for l in open(sys.argv[1], encoding="utf-8") if " B " in l and "%" in l and l.strip()[:1].isdigit()]
ends = {cols(l[:l.index(" B ") + 2]) for l in rows}
assert len(rows) >= 2 and len(ends) == 1, (rows, ends)
PY
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["model"]["name"] == "tiny_net_ünïcode", d["model"]' \
  "$d/plan.json" && ok || bad "utf8_names: the model name in the plan JSON"

# mplan plan takes the same flags and writes everything together.
d=$tmp/plan
mkdir -p "$d"
run 0 plan models/mobilenet_v2.json -o "$d/p.json" --html "$d/r.html" \
  --sqlite "$d/h.db" --dot "$d/g.dot" --svg "$d/g.svg" --lifetimes "$d/l.json"
for f in p.json r.html g.dot g.svg l.json; do [ -s "$d/$f" ] && ok || bad "plan did not write $f"; done
# one layout serves both: the page embeds the drawing of g.svg
python3 - "$d/g.svg" "$d/r.html" <<'PY' && ok || bad "r.html does not embed the drawing of g.svg"
import sys
svg = open(sys.argv[1]).read()
svg = svg[svg.index("<svg"):].strip()
assert svg in open(sys.argv[2]).read()
PY
has "$tmp/out" "validated: no two live buffers share a byte"
has "$tmp/out" "appended run 1 to $d/h.db"
run 0 plan models/mobilenet_v2.json --json --sqlite "$d/h.db"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" && ok || bad "plan --json --sqlite: stdout is not one JSON document"
run 0 report "$d/p.json" --sqlite "$d/h.db" --html "$d/from_plan.html"
same "$(q "$d/h.db" 'SELECT count(*) FROM run')" 3 "runs accumulate"
same "$(q "$d/h.db" "SELECT count(DISTINCT model_format) FROM run")" 2 "a plan file is recorded as plan/1"
same "$(q "$d/h.db" "SELECT count(*) FROM run WHERE options LIKE 'plan models/mobilenet_v2.json%'")" 2 "options are recorded"
# NAME=VALUE options are recorded whole (parsing splits them in place),
# in the history and the HTML page alike: the run can be repeated.
run 0 plan models/decoder.json --dim N=2 --sqlite "$d/h.db" --html "$d/dim.html"
same "$(q "$d/h.db" "SELECT options FROM run ORDER BY id DESC LIMIT 1")" \
  "plan models/decoder.json --dim N=2 --sqlite $d/h.db --html $d/dim.html" "--dim recorded whole"
has "$d/dim.html" "models/decoder.json --dim N=2 --sqlite"

# Two writers at once, five runs each: all ten land, whole.
d=$tmp/concurrent
mkdir -p "$d"
for w in 1 2; do
  (for k in 1 2 3 4 5; do
    "$mplan" report models/mobilenet_v1.json --sqlite "$d/h.db" >/dev/null 2>>"$d/err$w" || echo "writer $w run $k failed" >>"$d/err$w"
  done) &
done
wait
[ -s "$d/err1" ] || [ -s "$d/err2" ] && bad "a concurrent writer failed: $(cat "$d"/err*)" || ok
same "$(q "$d/h.db" 'SELECT count(*) FROM run')" 10 "two concurrent writers: every run lands"
same "$(q "$d/h.db" 'SELECT count(*) FROM run r WHERE buffers != (SELECT count(*) FROM tensor t WHERE t.run_id = r.id)')" 0 "no half-written run"
same "$(q "$d/h.db" 'PRAGMA integrity_check')" ok "integrity"

# All or nothing: on any error, no file and no run.
d=$tmp/errors
mkdir -p "$d"
run 2 report models/mobilenet_v2.json && one_line "no flags"
has "$tmp/err" "nothing to write"
run 2 report models/mobilenet_v2.json --lifetimes "$d/l.txt" && one_line "--lifetimes .txt"
has "$tmp/err" "must end in .yaml, .yml or .json"
absent "$d/l.txt"
run 2 report models/mobilenet_v2.json --dot "$d/same" --svg "$d/same" && one_line "same file twice"
has "$tmp/err" "named by two output options"
absent "$d/same"
echo "not a database" >"$d/notes.db"
cp "$d/notes.db" "$d/notes.orig"
run 2 report models/mobilenet_v2.json --html "$d/r.html" --sqlite "$d/notes.db" && one_line "not a database"
has "$tmp/err" "notes.db: not an SQLite database"
absent "$d/r.html"
cmp -s "$d/notes.db" "$d/notes.orig" && ok || bad "a non-database file was modified"
# A damaged history (its freelist count wrong) is refused untouched: found
# by fuzzing, where the migration committed before an insert failed.
"$mplan" report models/seed_example.json --sqlite "$d/dmg.db" >/dev/null 2>&1
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(36); f.write((7).to_bytes(4, "big"))' "$d/dmg.db"
cp "$d/dmg.db" "$d/dmg.orig"
run 2 report models/mobilenet_v2.json --html "$d/r.html" --sqlite "$d/dmg.db" && one_line "damaged database"
has "$tmp/err" "dmg.db: the database is damaged (quick_check: "
absent "$d/r.html"
cmp -s "$d/dmg.db" "$d/dmg.orig" && ok || bad "a damaged database was modified"
run 2 report models/mobilenet_v2.json --html "$d/r.html" --sqlite "$d/h.db" --svg "$d/missing/g.svg" &&
  one_line "unwritable output"
has "$tmp/err" "$d/missing/g.svg"
absent "$d/r.html"
same "$(q "$d/h.db" 'SELECT count(*) FROM run')" 0 "no run recorded when a file could not be written"
ls "$d" | grep -q 'tmp~' && bad "a temporary file was left behind" || ok
sqlite3 "$d/h.db" "INSERT INTO schema_version VALUES (99, 'later', '9.0')"
run 2 report models/mobilenet_v2.json --html "$d/r.html" --sqlite "$d/h.db" && one_line "newer schema"
has "$tmp/err" "schema version 99 is newer than this mplan"
absent "$d/r.html"
run 2 report tests/bad/cycle.json --html "$d/r.html" --sqlite "$d/fresh.db" && one_line "bad model"
absent "$d/r.html" "$d/fresh.db"
run 2 explain models/mobilenet_v2.json --html "$d/r.html" && one_line "explain takes no report flags"
run 0 report --help && has "$tmp/out" "usage: mplan report"
run 0 --help && has "$tmp/out" "report MODEL"

echo "report cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
