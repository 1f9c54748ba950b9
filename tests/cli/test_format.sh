#!/usr/bin/env bash
# Every C source and header follows the repository's .clang-format.
# usage: test_format.sh SOURCE_DIR
set -eu
cd "$1"
fmt=$(command -v clang-format-19 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "clang-format-19 is not installed (scripts/setup.sh installs it)"
  exit 1
fi
files=$(find common planner analyzer reports cli runtime kernels include tests \
  -name '*.[ch]' -not -path '*/build*' | sort)
"$fmt" --dry-run -Werror $files
echo "format: $(echo "$files" | wc -l) files clean ($("$fmt" --version | head -1))"
