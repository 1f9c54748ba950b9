#!/usr/bin/env bash
# The project's own CI gate (label gate): scripts/gate.sh checks every
# bundled model against the baselines committed in baselines/, writing the
# JUnit XML and Markdown reports into OUT_DIR (CI can upload them). The
# JUnit file is validated by a real XML parser (python3's xml.etree).
# usage: test_gate.sh MPLAN SOURCE_DIR OUT_DIR
set -u
mplan=$1
src=$2
out=$3
mkdir -p "$out"
rm -f "$out/gate.xml" "$out/gate.md"
"$src/scripts/gate.sh" "$mplan" --junit "$out/gate.xml" --markdown "$out/gate.md" >"$out/gate.txt"
rc=$?
cat "$out/gate.txt"
if [ "$rc" -ne 0 ]; then
  echo "gate: mplan check exited $rc (reports in $out)."
  echo "gate: if the change of arena is intended (a better planner, a changed"
  echo "gate: model), refresh the baselines and commit them with the change:"
  echo "gate:   ./scripts/update_baselines.sh && git diff baselines/"
  exit 1
fi
python3 - "$out/gate.xml" "$(ls "$src"/models/*.json "$src"/tests/bench/minimalloc/?.1048576.csv | wc -l)" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
models = int(sys.argv[2])
assert root.tag == "testsuites", root.tag
assert len(root.findall("testsuite")) == models, len(root.findall("testsuite"))
assert root.get("tests") == str(2 * models), root.get("tests")
assert root.get("failures") == "0" and root.get("errors") == "0"
print(f"gate: {models} models, JUnit XML valid")
PY
