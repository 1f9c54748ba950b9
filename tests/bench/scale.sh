#!/usr/bin/env bash
# Scale benchmark (a figure, not a test): synthetic problems of 10k, 100k
# and 1M buffers (tests/bench/gen_synthetic.c, seeded), each planned by
# every fast heuristic; prints wall time and peak memory of the whole
# process (read the CSV, build the problem, plan, validate) per run.
# usage: tests/bench/scale.sh BUILD_DIR [SIZES...]
set -eu
build=${1:-build}
shift || true
sizes=${*:-10000 100000 1000000}
dir=$build/bench-scale
mkdir -p "$dir"
for n in $sizes; do
  csv=$dir/synthetic.$n.csv
  [ -s "$csv" ] || "$build/gen_synthetic" "$n" 1 >"$csv"
  for s in best-fit-size best-fit-duration best-fit-conflict greedy-breadth \
    seed-first-fit online-best-fit linear auto; do
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" \
      "$build/mplan" bench "$csv" --strategies "$s" --json >"$dir/out.json"
    read -r secs kib <"$dir/time.txt"
    python3 - "$dir/out.json" "$n" "$s" "$secs" "$kib" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["files"][0]
r = d["results"][0]
n, s, secs, kib = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
print(f"{int(n):>9,} buffers  {s:<18} wall {secs:6.2f} s  peak {kib/1024:7.1f} MiB  "
      f"plan {r['plan_ms']:9.1f} ms  arena/LB {r['ratio_lower_bound']:.3f}")
PY
  done
done
