#!/usr/bin/env bash
# Installs, builds (scripts/setup.sh) and runs every test: all CTest tests, the same tests again
# built with ASan + UBSan (build-asan/; STACKLAB_SKIP_SANITIZE=1 skips), again on the libxsmm
# matrix-product path (build-xsmm/, with the torch parity check; STACKLAB_SKIP_LIBXSMM=1 skips), the libFuzzer targets for
# 40 s each (scripts/fuzz.sh; STACKLAB_SKIP_FUZZ=1 skips), then the Python-side checks
# (scripts/torch_parity.py when present, the unit tests in tests/python, then each
# scripts/check_*.sh). Extra arguments go to ctest (e.g. scripts/test.sh -R LayerNorm). Ends with one line
#   stacklab tests: N passed, M failed
# (N and M count both ctest runs' tests plus one per other check) and exits non-zero when M > 0.
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

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# run_ctest LABEL BUILD_DIR [ctest args...]: runs CTest in BUILD_DIR and adds its counts.
run_ctest() {
  local label="$1" dir="$2" ctest_rc=0 counts c_failed c_total c_skipped
  shift 2
  echo "==> $label"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j2 "$@" 2>&1 | tee "$log" || ctest_rc=$?
  # ctest's own count line: "95% tests passed, 2 tests failed out of 40"
  counts="$(sed -nE 's/^[0-9]+% tests passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/p' "$log" | tail -n 1)"
  if [[ -n "$counts" ]]; then
    read -r c_failed c_total <<<"$counts"
    # ctest counts a skipped test (GTEST_SKIP) as passed; count it as skipped here instead.
    c_skipped="$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)"
    ((c_skipped == 0)) || skipped+=("$label: $c_skipped test(s) skipped themselves (listed above)")
    passed=$((passed + c_total - c_failed - c_skipped))
    failed=$((failed + c_failed))
    ((c_failed == 0)) || failures+=("$label: $c_failed of $c_total tests")
    if ((ctest_rc != 0 && c_failed == 0)); then
      failed=$((failed + 1))
      failures+=("$label exited $ctest_rc")
    fi
  else
    failed=$((failed + 1))
    failures+=("$label (exit $ctest_rc, no test counts: no tests found or ctest did not run)")
  fi
}

run_ctest ctest build "$@"

# build_tree LABEL DIR CMAKE_ARGS...: configures DIR with CMAKE_ARGS and builds all its targets;
# a failure is counted (and returns 1, so the stage's tests are not run).
build_tree() {
  local label="$1" dir="$2"
  shift 2
  echo "==> $dir ($label)"
  if cmake -S "$ROOT" -B "$dir" "$@" >/dev/null &&
     cmake --build "$dir" -j"$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)"; then
    return 0
  fi
  failed=$((failed + 1))
  failures+=("$dir: configure or build failed (see above)")
  return 1
}

# ---- the unit tests again under ASan + UBSan (build-asan/) ------------------------------------
# Any sanitizer report aborts the test that triggered it, which then fails. STACKLAB_SKIP_SANITIZE=1
# skips this stage for quick local runs (CI never sets it).
if [[ "${STACKLAB_SKIP_SANITIZE:-0}" == "1" ]]; then
  loud_skip "ASan+UBSan tests (STACKLAB_SKIP_SANITIZE=1)"
else
  if build_tree "ASan + UBSan, RelWithDebInfo" build-asan -DSTACKLAB_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
    LSAN_OPTIONS="suppressions=$ROOT/tests/sanitize/lsan.supp" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      run_ctest "ctest (ASan+UBSan)" build-asan "$@"
  fi
fi

# ---- the second matrix-product path: libxsmm (build-xsmm/) ------------------------------------
# The same unit tests (gradient checks included) and the PyTorch parity check on a build whose
# small products run through libxsmm (-DSTACKLAB_LIBXSMM=ON; setup.sh installs libxsmm-dev).
# STACKLAB_SKIP_LIBXSMM=1 skips this stage for quick local runs (CI never sets it).
if [[ "${STACKLAB_SKIP_LIBXSMM:-0}" == "1" ]]; then
  loud_skip "libxsmm path tests (STACKLAB_SKIP_LIBXSMM=1)"
else
  if build_tree "Release, -DSTACKLAB_LIBXSMM=ON" build-xsmm -DSTACKLAB_LIBXSMM=ON -DCMAKE_BUILD_TYPE=Release; then
    run_check "build-xsmm/stacklab --version names the libxsmm path" \
      bash -c 'build-xsmm/stacklab --version | grep -q "^matrix products: libxsmm"'
    run_ctest "ctest (libxsmm path)" build-xsmm "$@"
    if PY="$(bash scripts/find_python.sh --torch 2>/dev/null)"; then
      run_check "torch parity, libxsmm path (scripts/torch_parity.py)" \
        "$PY" scripts/torch_parity.py --stacklab build-xsmm/stacklab
    fi
  fi
fi

# ---- fuzzing: each libFuzzer target for a bounded time (scripts/fuzz.sh) -----------------------
if [[ "${STACKLAB_SKIP_FUZZ:-0}" == "1" ]]; then
  loud_skip "fuzzing (STACKLAB_SKIP_FUZZ=1)"
else
  run_check "fuzzing (scripts/fuzz.sh ${STACKLAB_FUZZ_SECONDS:-40})" bash scripts/fuzz.sh "${STACKLAB_FUZZ_SECONDS:-40}"
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

# The analysis package's unit tests (tests/python: statistics, tables, findings, figures on
# fabricated runs); standard-library unittest, so no pytest is needed.
if PY="$(bash scripts/find_python.sh --plot 2>/dev/null)"; then
  run_check "python unit tests (tests/python)" env MPLBACKEND=Agg "$PY" -m unittest discover -s tests/python
else
  loud_skip "python unit tests (tests/python): no Python with numpy and matplotlib"
fi

# Each scripts/check_*.sh gets STACKLAB_PYTHON (when one was found) and may exit 77 to skip.
if PY="$(bash scripts/find_python.sh --torch 2>/dev/null)"; then export STACKLAB_PYTHON="$PY"; fi
shopt -s nullglob
for check in scripts/check_*.sh; do
  run_check "$check" bash "$check"
done

summary
((failed == 0))
