# Shared by the command-line test scripts (sourced, not run): a scratch
# folder removed on exit, and pass/fail counters.
#   ok          counts a passed check
#   bad MSG...  prints "FAIL: MSG" and counts a failed check
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
