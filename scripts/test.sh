#!/usr/bin/env bash
# Installs, builds (scripts/setup.sh) and runs every test: all CTest tests, then the Python-side
# checks (scripts/torch_parity.py when present, then each scripts/check_*.sh). Extra arguments go
# to ctest (e.g. scripts/test.sh -R LayerNorm). Ends with one line
#   stacklab tests: N passed, M failed
# (N and M count ctest's tests plus one per Python check) and exits non-zero when M > 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

passed=0
failed=0
skipped=()
failures=()

summary() {
  echo
  ((${#failures[@]} == 0)) || printf 'FAILED: %s\n' "${failures[@]}"
  ((${#skipped[@]} == 0)) || printf 'SKIPPED: %s\n' "${skipped[@]}"
  echo "stacklab tests: ${passed} passed, ${failed} failed"
}

loud_skip() {
  skipped+=("$1")
  printf '\n%s\n!!! SKIPPED: %s\n%s\n\n' "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" "$1" \
    "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
}

# run_check NAME CMD...: one step; exit status 77 means "skipped" (the automake convention).
run_check() {
  local name="$1" rc=0
  shift
  echo "==> $name"
  "$@" || rc=$?
  if ((rc == 0)); then
    passed=$((passed + 1))
  elif ((rc == 77)); then
    loud_skip "$name (it reported exit 77: a prerequisite is missing)"
  else
    failed=$((failed + 1))
    failures+=("$name (exit $rc)")
  fi
}

echo "==> setup (install + build)"
if ! bash "$ROOT/scripts/setup.sh"; then
  failed=$((failed + 1))
  failures+=("setup/build (scripts/setup.sh)")
  summary
  exit 1
fi

echo "==> ctest"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
ctest_rc=0
ctest --test-dir build --output-on-failure --no-tests=error -j2 "$@" 2>&1 | tee "$log" || ctest_rc=$?
# ctest's own count line: "95% tests passed, 2 tests failed out of 40"
counts="$(sed -nE 's/^[0-9]+% tests passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/p' "$log" | tail -n 1)"
if [[ -n "$counts" ]]; then
  read -r c_failed c_total <<<"$counts"
  # ctest counts a skipped test (GTEST_SKIP) as passed; count it as skipped here instead.
  c_skipped="$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)"
  ((c_skipped == 0)) || skipped+=("ctest: $c_skipped test(s) skipped themselves (listed above)")
  passed=$((passed + c_total - c_failed - c_skipped))
  failed=$((failed + c_failed))
  ((c_failed == 0)) || failures+=("ctest: $c_failed of $c_total tests")
  if ((ctest_rc != 0 && c_failed == 0)); then
    failed=$((failed + 1))
    failures+=("ctest exited $ctest_rc")
  fi
else
  failed=$((failed + 1))
  failures+=("ctest (exit $ctest_rc, no test counts: no tests found or ctest did not run)")
fi

# ---- Python-side checks ---------------------------------------------------------------------
if [[ -f scripts/torch_parity.py ]]; then
  if PY="$(bash scripts/find_python.sh --torch)"; then
    run_check "torch parity (scripts/torch_parity.py)" \
      "$PY" scripts/torch_parity.py --stacklab build/stacklab
  else
    loud_skip "torch parity (scripts/torch_parity.py): no Python with numpy+torch; install python3-torch (apt-get install python3-numpy python3-matplotlib python3-torch)"
  fi
fi

# Each scripts/check_*.sh gets STACKLAB_PYTHON (when one was found) and may exit 77 to skip.
if PY="$(bash scripts/find_python.sh --torch 2>/dev/null)"; then export STACKLAB_PYTHON="$PY"; fi
shopt -s nullglob
for check in scripts/check_*.sh; do
  run_check "$check" bash "$check"
done

summary
((failed == 0))
