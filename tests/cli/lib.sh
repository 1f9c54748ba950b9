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

# For scripts that set $mplan (a script may define its own run after
# sourcing this file):
#   run EXPECTED_STATUS ARGS...  runs mplan ARGS, stdout and stderr kept in
#                                $tmp/out and $tmp/err; counts the status
#                                (on a wrong one, shows both's first lines)
#   has FILE TEXT                FILE holds TEXT (fixed string)
run() {
  local want=$1
  shift
  "$mplan" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "mplan $* exited $rc, expected $want"
    sed 's/^/    /' "$tmp/err" | head -5
    sed 's/^/    out: /' "$tmp/out" | head -10
    return 1
  fi
  ok
}

has() {
  if grep -qF -- "$2" "$1"; then ok; else bad "$(basename "$1") lacks: $2"; fi
}

lacks() {
  if grep -qF -- "$2" "$1"; then bad "$(basename "$1") has: $2"; else ok; fi
}

# For scripts that set $mplan and $runner:
#   outputs MODEL NAME ARGS...  compile MODEL with ARGS, run it on seeded
#                               inputs (--seed 11), outputs to $tmp/NAME.mpt
#   verify ARGS...              mplan verify ARGS --paranoid --redzone 16
#                               must exit 0 with no event
outputs() {
  local model=$1 name=$2
  shift 2
  rm -f "$tmp/$name.mpt"
  if ! "$mplan" compile "$model" "$@" -o "$tmp/$name.mpk" >/dev/null 2>"$tmp/err"; then
    bad "compile $model $*: $(head -1 "$tmp/err")"
    return 1
  fi
  if ! "$runner" "$tmp/$name.mpk" --seed 11 --outputs "$tmp/$name.mpt" \
    >/dev/null 2>"$tmp/err"; then
    bad "run $model $*: $(head -1 "$tmp/err")"
    return 1
  fi
}
verify() {
  if "$mplan" verify "$@" --paranoid --redzone 16 >"$tmp/out" 2>"$tmp/err" &&
    grep -q "verified: no event" "$tmp/out"; then
    ok
  else
    bad "verify $*: $(tail -2 "$tmp/out" "$tmp/err" | tr '\n' ' ')"
  fi
}
#   rv64_same MODEL VLEN PASSES ARGS...
#                               compiled with --passes none and with
#                               PASSES (ARGS for both), run on rv64 under
#                               qemu-riscv64 at VLEN: the same outputs
rv64_same() {
  local model=$1 vlen=$2 passes=$3 p
  shift 3
  local rvr
  rvr=$(dirname "$runner")/rv64/mplan-runner
  for p in none "$passes"; do
    rm -f "$tmp/rv.$p.mpt"
    "$mplan" compile "$model" --passes "$p" "$@" -o "$tmp/rv.$p.mpk" \
      >/dev/null 2>&1
    qemu-riscv64 -cpu "rv64,v=true,vlen=$vlen,vext_spec=v1.0" "$rvr" \
      "$tmp/rv.$p.mpk" --seed 11 --outputs "$tmp/rv.$p.mpt" >/dev/null 2>&1
  done
  if [ -s "$tmp/rv.$passes.mpt" ] && cmp -s "$tmp/rv.none.mpt" "$tmp/rv.$passes.mpt"; then
    ok
  else
    bad "$(basename "$model") on rv64 (VLEN $vlen): outputs with --passes $passes differ"
  fi
}
