#!/usr/bin/env bash
# The main job: set up, build, then plan, explain and report the bundled
# default model (MobileNetV2-224, int8) into report/: the plan, the
# explanation, the interactive HTML page, the SQLite run history, the graph
# as DOT and SVG, the lifetime dump, and a paranoid poison-mode run of the
# plan with the reference kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p report
model=models/mobilenet_v2.json
./build/mplan plan "$model" -o report/plan.json --html report/report.html \
  --sqlite report/history.db --dot report/graph.dot --svg report/graph.svg \
  --lifetimes report/lifetimes.yaml --what-if | tee report/summary.txt
./build/mplan report "$model" --lifetimes report/lifetimes.json \
  --c-header report/mobilenet_v2_plan.h >/dev/null
./build/mplan explain "$model" >report/explain.txt
./build/mplan validate report/plan.json
./build/mplan verify "$model" --paranoid >report/verify.txt
echo
sed -n '1,/^Memory map/p' report/explain.txt | sed '$d'
echo "Verification (report/verify.txt):"
cat report/verify.txt
echo
echo "Run history (report/history.db, one run appended per demo):"
sqlite3 -header -column report/history.db \
  "SELECT run_id, created_utc, strategy, arena_bytes, lower_bound_bytes, overhead_pct FROM run_summary"
echo
echo "report/: plan.json (plan/1), summary.txt, explain.txt (with the memory map),"
echo "  report.html (open it in a browser), history.db (SQLite, docs/report-schema.md),"
echo "  graph.dot, graph.svg, lifetimes.yaml, lifetimes.json, verify.txt,"
echo "  mobilenet_v2_plan.h (the plan as a C header)"
