#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, CMake option STACKLAB_FUZZ=ON, clang) into
# build-fuzz/ and runs each for SECONDS (default 40) from its committed seed corpus
# tests/fuzz/corpus/<target>/. New inputs go to a scratch corpus (the committed one stays
# small); a crash, leak, sanitizer report or timeout fails the script and leaves the input in
# build-fuzz/artifacts/<target>/. Exit 0 all clean, 77 clang/libFuzzer missing, 1 a finding.
# The libFuzzer seed differs from run to run (so coverage grows across CI runs) and is printed;
# STACKLAB_FUZZ_SEED=N reproduces a run. A finding becomes a regression test and a corpus entry.
#
#   tests/fuzz/run.sh            # 40 s per target
#   tests/fuzz/run.sh 600        # longer, by hand
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_PER_TARGET="${1:-40}"
BUILD="$ROOT/build-fuzz"
TARGETS=(fuzz_config fuzz_safetensors fuzz_text)

say() { printf 'fuzz: %s\n' "$*"; }

if ! command -v clang++ >/dev/null 2>&1; then
  say "clang++ not found (apt-get install clang libclang-rt-14-dev); skipping"
  exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer,address - -o /dev/null 2>/dev/null; then
  say "clang++ cannot link -fsanitize=fuzzer (libFuzzer runtime missing: apt-get install libclang-rt-14-dev); skipping"
  exit 77
fi

SEED="${STACKLAB_FUZZ_SEED:-$(( ($(date +%s) ^ $$) % 2000000000 + 1 ))}"
say "seed $SEED (reproduce with STACKLAB_FUZZ_SEED=$SEED tests/fuzz/run.sh $SECONDS_PER_TARGET)"
say "building ${TARGETS[*]} in $BUILD"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSTACKLAB_FUZZ=ON \
  -DSTACKLAB_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTACKLAB_WERROR="$([[ "${STACKLAB_WERROR:-0}" == "1" ]] && echo ON || echo OFF)" >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; say "cmake configure failed"; exit 1; }
cmake --build "$BUILD" -j"$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)" --target "${TARGETS[@]}" ||
  { say "build failed"; exit 1; }

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in "${TARGETS[@]}"; do
  seeds="$ROOT/tests/fuzz/corpus/$t"
  work="$(mktemp -d)"
  artifacts="$BUILD/artifacts/$t"
  mkdir -p "$artifacts"
  dict=()
  [[ -f "$ROOT/tests/fuzz/${t#fuzz_}.dict" ]] && dict=(-dict="$ROOT/tests/fuzz/${t#fuzz_}.dict")
  log="$BUILD/$t.log"
  say "$t: ${SECONDS_PER_TARGET}s from $(ls "$seeds" | wc -l) seeds"
  rc=0
  (cd "$work" && "$BUILD/$t" -max_total_time="$SECONDS_PER_TARGET" -seed="$SEED" -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
      "$work" "$seeds") >"$log" 2>&1 || rc=$?
  execs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)"
  cov="$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 || true)"
  if ((rc == 0)); then
    say "$t: clean, ${execs:-?} executions, ${cov:-cov ?}, corpus $(ls "$work" | wc -l) inputs"
  else
    status=1
    say "$t: FAILED (exit $rc) after ${execs:-?} executions with seed $SEED; input(s) in $artifacts/, log $log:"
    grep -E 'ERROR|SUMMARY|fuzz property|Test unit written' "$log" | head -n 20 || tail -n 40 "$log"
  fi
  rm -rf "$work"
done
exit "$status"
