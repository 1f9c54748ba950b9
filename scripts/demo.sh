#!/usr/bin/env bash
# The main job: set up, build, then plan and explain the bundled default
# model (MobileNetV2-224, int8) into report/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p report
model=models/mobilenet_v2.json
./build/mplan plan "$model" -o report/plan.json | tee report/summary.txt
./build/mplan explain "$model" >report/explain.txt
./build/mplan validate report/plan.json
echo
sed -n '1,/^Memory map/p' report/explain.txt | sed '$d'
echo "report/: plan.json (plan/1), summary.txt, explain.txt (with the memory map)"
