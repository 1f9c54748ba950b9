#!/usr/bin/env bash
# The project gates its own bundled models: every model of models/ and the
# minimalloc benchmark instances are planned with the default options and
# checked with `mplan check` against the baselines committed in baselines/
# (exact bytes: tolerance 0%), under a ceiling budget. The ctest `gate`
# runs this; scripts/update_baselines.sh refreshes the baselines with the
# same command plus --update-baseline.
# usage: scripts/gate.sh MPLAN [more mplan check options...]
set -euo pipefail
mplan=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
cd "$(dirname "$0")/.."
exec "$mplan" check models/*.json tests/bench/minimalloc/?.1048576.csv \
  --baseline-dir baselines --budget 32MiB "$@"
