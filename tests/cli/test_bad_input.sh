#!/usr/bin/env bash
# Every bad input gets exactly one line on stderr that names the file and
# the problem, exit status 2, nothing on stdout, and no output file.
# usage: test_bad_input.sh MPLAN SOURCE_DIR
set -u
mplan=$1
src=$2
dir=$src/tests/bad
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
count=0

check_one() { # command-name file expected-substring
  local cmd=$1 file=$2 want=$3 rc lines
  rm -f "$tmp/out.json"
  if [ "$cmd" = plan ] || [ "$cmd" = compile ]; then
    "$mplan" "$cmd" "$dir/$file" -o "$tmp/out.json" >"$tmp/stdout" 2>"$tmp/stderr"
  elif [ "$cmd" = report ]; then
    "$mplan" report "$dir/$file" --html "$tmp/out.json" --sqlite "$tmp/out.db" \
      --lifetimes "$tmp/out.yaml" >"$tmp/stdout" 2>"$tmp/stderr"
  else
    "$mplan" "$cmd" "$dir/$file" >"$tmp/stdout" 2>"$tmp/stderr"
  fi
  rc=$?
  lines=$(wc -l <"$tmp/stderr")
  count=$((count + 1))
  local why=""
  [ "$rc" -eq 2 ] || why="exit status $rc, expected 2"
  [ "$lines" -eq 1 ] || why="$why; $lines lines on stderr, expected 1"
  [ -s "$tmp/stdout" ] && why="$why; output on stdout"
  [ -e "$tmp/out.json" ] && why="$why; an output file was written"
  [ -e "$tmp/out.db" ] || [ -e "$tmp/out.yaml" ] && why="$why; a report file was written"
  grep -qF -- "$file" "$tmp/stderr" || why="$why; the message does not name the file"
  grep -qF -- "$want" "$tmp/stderr" || why="$why; the message lacks: $want"
  ls "$dir" | grep -q 'tmp~' && why="$why; a temporary file was left behind"
  if [ -n "$why" ]; then
    echo "FAIL mplan $cmd $file: $why"
    sed 's/^/    stderr: /' "$tmp/stderr"
    fail=$((fail + 1))
  fi
}

while IFS=$'\t' read -r file want; do
  case "$file" in '#'* | '') continue ;; esac
  for cmd in plan explain report compile verify; do
    check_one "$cmd" "$file" "$want"
  done
done <"$dir/expect.tsv"

echo "bad inputs: $count runs, $fail failed"
[ "$fail" -eq 0 ]
