#!/usr/bin/env bash
# Checks that the kernel microbenchmarks (tests/bench/, Google Benchmark) build and run: builds
# stacklab_microbench in build/ when build/ was configured with it (scripts/setup.sh does that for
# a full build), else in its own tree build-bench/ (it never reconfigures a tree another test
# stage uses), runs every benchmark for a moment and checks that each family reported a time. It times nothing worth reading (a shared machine,
# 10 ms per benchmark): real numbers come from docs/benchmarks.md's commands.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 1 fail.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD="${STACKLAB_BUILD_DIR:-build}"
fail() { echo "check_microbench: FAIL: $*" >&2; exit 1; }

if ! grep -qs '^STACKLAB_BUILD_BENCH:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  BUILD=build-bench
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTACKLAB_BUILD_TESTS=OFF -DSTACKLAB_BUILD_BENCH=ON >/dev/null ||
    fail "configuring $BUILD with -DSTACKLAB_BUILD_BENCH=ON (is libbenchmark-dev installed? scripts/setup.sh installs it)"
fi
cmake --build "$BUILD" -j"$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)" \
  --target stacklab_microbench >/dev/null || fail "building stacklab_microbench"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
STACKLAB_THREADS=1 "$BUILD/stacklab_microbench" --benchmark_min_time=0.01 >"$out" 2>&1 ||
  { cat "$out" >&2; fail "stacklab_microbench exited non-zero"; }
for family in BM_LinearGemm BM_AttentionForward BM_AttentionBackward BM_LayerNorm BM_Gelu BM_CrossEntropy BM_AdamW; do
  grep -qE "^${family}/[0-9/]+ +[0-9.]+ (ns|us|ms)" "$out" || { cat "$out" >&2; fail "no timing line for $family"; }
done
echo "check_microbench: ok ($(grep -cE '^BM_' "$out") benchmarks ran)"
