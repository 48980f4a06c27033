#!/usr/bin/env bash
# Installs, builds (scripts/setup.sh) and runs every test, in stages. Each stage is a function
# that prints its wall time; the summary lists every stage with its time and counts, and the
# last line is
#   stacklab tests: N passed, M failed
# (N and M count every CTest test of each ctest stage plus one per other check); the exit status
# is non-zero when M > 0. No stage reconfigures a build tree another stage uses.
#
#   scripts/test.sh                  # the complete run (what CI's .ci/run calls)
#   scripts/test.sh --fast           # the edit loop: incremental build, unit tests, parity at one
#                                    # depth, Python tests but the @full_run_only ones, lint
#                                    # (a few minutes after a first build)
#   scripts/test.sh --stage NAME     # one stage (repeatable); --list prints the stage names
#   scripts/test.sh -R LayerNorm     # other arguments go to every ctest call
#
# Stages of the complete run, in order:
#   build      scripts/setup.sh: the missing Debian packages, then Release into build/
#   unit       every CTest test in build/ (labels: util core nn train sweep data config cli)
#   asan       the same tests built with ASan + UBSan into build-asan/
#   openblas   the second matrix-product path, OpenBLAS alone (build-openblas/, -DSTACKLAB_LIBXSMM=OFF):
#              --version, CTest, torch parity (--stage xsmm, its name before libxsmm became the default, runs it too)
#   fuzz       each libFuzzer target for STACKLAB_FUZZ_SECONDS (40) s (tests/fuzz/run.sh, build-fuzz/);
#              its seed is printed, STACKLAB_FUZZ_SEED=N reruns it
#   parity     the PyTorch parity check of build/stacklab (tests/parity/torch_parity.py)
#   python     the unit tests of the analysis package scripts/stacklab/ (tests/python/)
#   lint       flake8 over scripts/ and tests/ (setup.cfg), clang-format --dry-run over src/ and tests/
#   check_*    one stage per tests/integration/check_*.sh (end-to-end: Slurm, kill and resume, ...)
# A check exiting 77 is a loud skip (a prerequisite is missing), never a pass. For quick local
# runs STACKLAB_SKIP_SANITIZE=1, STACKLAB_SKIP_OPENBLAS_PATH=1 and STACKLAB_SKIP_FUZZ=1 skip (loudly)
# the asan, openblas and fuzz stages; CI sets none of them.
set -euo pipefail
# Every build this run makes (setup.sh's build/, build-asan, build-openblas, build-fuzz) treats
# compiler warnings as errors.
export STACKLAB_WERROR=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

usage() { sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

CHECKS=()
shopt -s nullglob
for c in tests/integration/check_*.sh; do CHECKS+=("$(basename "$c" .sh)"); done
shopt -u nullglob
ALL_STAGES=(build unit asan openblas fuzz parity python lint "${CHECKS[@]}")
FAST_STAGES=(build unit parity_quick python lint)

selected=()
ctest_args=()
fast=0
while (($#)); do
  case "$1" in
    --fast) fast=1 ;;
    --stage)
      (($# >= 2)) || { echo "test.sh: --stage needs a stage name (--list shows them)" >&2; exit 2; }
      selected+=("$2")
      shift ;;
    --stage=*) selected+=("${1#--stage=}") ;;
    --list) printf '%s\n' "${ALL_STAGES[@]}" parity_quick; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    *) ctest_args+=("$1") ;;
  esac
  shift
done

if ((fast)); then
  ((${#selected[@]} == 0)) || { echo "test.sh: --fast and --stage do not combine" >&2; exit 2; }
  selected=("${FAST_STAGES[@]}")
elif ((${#selected[@]} == 0)); then
  selected=("${ALL_STAGES[@]}")
else
  for i in "${!selected[@]}"; do  # xsmm: the openblas stage's name before libxsmm became the default
    [[ ${selected[$i]} != xsmm ]] || { echo "test.sh: stage 'xsmm' is now 'openblas' (the default build runs libxsmm)" >&2; selected[$i]=openblas; }
  done
  for s in "${selected[@]}"; do
    [[ " ${ALL_STAGES[*]} parity_quick " == *" $s "* ]] ||
      { echo "test.sh: no stage '$s'; the stages are: ${ALL_STAGES[*]} parity_quick" >&2; exit 2; }
  done
  # Every stage but the self-building ones needs build/ current: build first (python and lint
  # read no build tree, so alone they skip it).
  needs_build=0
  for s in "${selected[@]}"; do [[ $s == python || $s == lint ]] || needs_build=1; done
  ((needs_build == 0)) || [[ " ${selected[*]} " == *" build "* ]] || selected=(build "${selected[@]}")
fi

passed=0
failed=0
skipped=()
failures=()
stage_rows=()

loud_skip() {
  skipped+=("$1")
  printf '\n%s\n!!! SKIPPED: %s\n%s\n\n' "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" "$1" \
    "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
}

# run_check NAME CMD...: one check; exit status 77 means "skipped" (the automake convention).
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

jobs_n() { env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2; }

# build_tree LABEL DIR CMAKE_ARGS...: configures DIR with CMAKE_ARGS and builds all its targets;
# a failure is counted (and returns 1, so the stage's tests are not run).
build_tree() {
  local label="$1" dir="$2"
  shift 2
  echo "==> $dir ($label)"
  if cmake -S "$ROOT" -B "$dir" -DSTACKLAB_WERROR=ON "$@" >/dev/null && cmake --build "$dir" -j"$(jobs_n)"; then
    return 0
  fi
  failed=$((failed + 1))
  failures+=("$dir: configure or build failed (see above)")
  return 1
}

torch_python() { bash scripts/find_python.sh --torch 2>/dev/null; }

# The analysis package scripts/stacklab/ for every Python a stage starts (tests, parity, checks).
export PYTHONPATH="$ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}"

# ---- the stages ------------------------------------------------------------------------------
BUILD_OK=1
stage_build() {
  if ! bash "$ROOT/scripts/setup.sh"; then
    BUILD_OK=0
    failed=$((failed + 1))
    failures+=("setup/build (scripts/setup.sh)")
  fi
}

stage_unit() { run_ctest ctest build "${ctest_args[@]}"; }

# Any sanitizer report aborts the test that triggered it, which then fails.
stage_asan() {
  [[ "${STACKLAB_SKIP_SANITIZE:-0}" != "1" ]] || { loud_skip "ASan+UBSan tests (STACKLAB_SKIP_SANITIZE=1)"; return 0; }
  if build_tree "ASan + UBSan, RelWithDebInfo" build-asan -DSTACKLAB_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
    LSAN_OPTIONS="suppressions=$ROOT/tests/sanitize/lsan.supp" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      run_ctest "ctest (ASan+UBSan)" build-asan "${ctest_args[@]}"
  fi
}

# The same unit tests (gradient checks included) and the PyTorch parity check on a build whose
# products run through OpenBLAS alone (-DSTACKLAB_LIBXSMM=OFF), the path a build without
# libxsmm takes; the default build (build/, the unit stage) runs them through libxsmm.
stage_openblas() {
  if [[ "${STACKLAB_SKIP_OPENBLAS_PATH:-0}" == "1" || "${STACKLAB_SKIP_LIBXSMM:-0}" == "1" ]]; then
    loud_skip "OpenBLAS-alone path tests (STACKLAB_SKIP_OPENBLAS_PATH=1)"
    return 0
  fi
  if build_tree "Release, -DSTACKLAB_LIBXSMM=OFF" build-openblas -DSTACKLAB_LIBXSMM=OFF -DCMAKE_BUILD_TYPE=Release; then
    run_check "build-openblas/stacklab --version names OpenBLAS alone" \
      bash -c 'build-openblas/stacklab --version | grep -q "^matrix products: OpenBLAS"'
    run_ctest "ctest (OpenBLAS-alone path)" build-openblas "${ctest_args[@]}"
    local py
    if py="$(torch_python)"; then
      run_check "torch parity, OpenBLAS-alone path (tests/parity/torch_parity.py)" "$py" tests/parity/torch_parity.py --stacklab build-openblas/stacklab
    else
      loud_skip "torch parity, OpenBLAS-alone path: no Python with numpy+torch (apt-get install python3-torch)"
    fi
  fi
}

stage_fuzz() {
  [[ "${STACKLAB_SKIP_FUZZ:-0}" != "1" ]] || { loud_skip "fuzzing (STACKLAB_SKIP_FUZZ=1)"; return 0; }
  run_check "fuzzing (tests/fuzz/run.sh ${STACKLAB_FUZZ_SECONDS:-40})" bash tests/fuzz/run.sh "${STACKLAB_FUZZ_SECONDS:-40}"
}

parity() {
  local py
  if py="$(torch_python)"; then
    run_check "torch parity (tests/parity/torch_parity.py $*)" "$py" tests/parity/torch_parity.py --stacklab build/stacklab "$@"
  else
    loud_skip "torch parity: no Python with numpy+torch; install python3-torch (apt-get install python3-numpy python3-matplotlib python3-torch)"
  fi
}
stage_parity() { parity; }
stage_parity_quick() { parity --quick; }

# The analysis package's unit tests (tests/python: statistics, tables, findings, the run-log
# reader, figures on fabricated runs); standard-library unittest, so no pytest is needed. The
# package is found through PYTHONPATH (set above). --fast sets STACKLAB_FAST_TESTS=1: the tests marked
# @full_run_only (tests/python/full_run.py: the escape law's fits, seconds each) are left to the complete run.
stage_python() {
  [[ -d tests/python ]] || { echo "(no tests/python/)"; return 0; }
  local py edit_loop=()
  ((fast == 0)) || edit_loop=(STACKLAB_FAST_TESTS=1)
  if py="$(bash scripts/find_python.sh --plot 2>/dev/null)"; then
    run_check "python unit tests (tests/python${edit_loop[*]:+; --fast: @full_run_only tests skipped})" \
      env MPLBACKEND=Agg "${edit_loop[@]}" "$py" -m unittest discover -s tests/python
  else
    loud_skip "python unit tests (tests/python): no Python with numpy and matplotlib"
  fi
}

# flake8 (Debian's python3-flake8; setup.cfg holds its settings) over the Python of scripts/ and
# tests/, and clang-format --dry-run (the repo's .clang-format) over the C++ of src/ and tests/.
# Each names the files it fails on; clang-format -i FILE applies the format.
stage_lint() {
  run_check "flake8 scripts tests" /usr/bin/python3 -m flake8 scripts tests
  local -a cxx
  mapfile -t cxx < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h')
  run_check "clang-format --dry-run -Werror (${#cxx[@]} files of src/ and tests/)" lint_format "${cxx[@]}"
}

# lint_format FILE...: clang-format's report, then one line per file that is not formatted.
lint_format() {
  local out
  command -v clang-format >/dev/null || { echo "clang-format not found (apt-get install clang-format)"; return 1; }
  out="$(clang-format --dry-run -Werror "$@" 2>&1)" && return 0
  printf '%s\n' "$out" | head -n 40
  # clang-format's lines read "FILE:LINE:COL: error: code should be clang-formatted [-Wclang-format-violations]"
  printf 'not clang-formatted (clang-format -i FILE): %s\n' \
    $(printf '%s\n' "$out" | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error: .*/\1/p' | sort -u)
  return 1
}

# Each tests/integration/check_*.sh gets STACKLAB_PYTHON (when one was found) and may exit 77 to skip.
stage_check() {
  local py
  if py="$(torch_python)"; then export STACKLAB_PYTHON="$py"; fi
  run_check "tests/integration/$1.sh" bash "tests/integration/$1.sh"
}

# ---- run them ----------------------------------------------------------------------------------
for s in "${selected[@]}"; do
  if [[ $s != build ]] && ((BUILD_OK == 0)); then
    stage_rows+=("$(printf '%-22s %8s  %s' "$s" "-" "not run: the build failed")")
    continue
  fi
  echo
  echo "======== stage $s"
  p0=$passed f0=$failed t0=$SECONDS
  if [[ $s == check_* ]]; then stage_check "$s"; else "stage_$s"; fi
  dt=$((SECONDS - t0))
  echo "======== stage $s: ${dt} s"
  stage_rows+=("$(printf '%-22s %6d s  %d passed, %d failed' "$s" "$dt" $((passed - p0)) $((failed - f0)))")
done

echo
echo "stage                    time    tests"
printf '%s\n' "${stage_rows[@]}"
echo "total                  ${SECONDS} s"
echo
((${#failures[@]} == 0)) || printf 'FAILED: %s\n' "${failures[@]}"
((${#skipped[@]} == 0)) || printf 'SKIPPED: %s\n' "${skipped[@]}"
echo "stacklab tests: ${passed} passed, ${failed} failed"
((failed == 0))
