#!/usr/bin/env bash
# Installs the Debian packages stacklab needs (only the missing ones), then configures and builds
# Release into build/. Idempotent: a second run installs nothing and rebuilds only what changed.
# Not here: tests (scripts/test.sh) or training (scripts/run.sh).
#
#   scripts/setup.sh                         # from any directory
#   STACKLAB_SKIP_INSTALL=1 scripts/setup.sh # build only, never touch apt
#   STACKLAB_WERROR=1 scripts/setup.sh       # warnings are errors (scripts/test.sh sets it)
#   scripts/setup.sh stacklab                # build only these targets (run.sh, reproduce.sh: the
#                                            # binary, not the test executables), and install only
#                                            # the packages to run it (not the test-only ones)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"

# Debian 12 package names. RUN_PACKAGES build and run stacklab and draw its figures and its HTML
# views (python3-plotly; GoogleTest too: CMake configures the tests by default). TEST_PACKAGES are for scripts/test.sh only: clang and
# libclang-rt-14-dev (its libFuzzer runtime) for fuzzing; libbenchmark-dev for
# -DSTACKLAB_BUILD_BENCH=ON; python3-torch for the PyTorch parity check; slurm-wlm and munge for the
# single-node Slurm of tests/integration/check_slurm.sh (scripts/slurm_local.sh: nothing is
# configured system-wide, the daemons are not started here); chromium renders report.html headless
# in tests/integration/check_report_html.sh; python3-flake8 and clang-format for test.sh's lint
# stage. libxsmm-dev and pkg-config are run packages: the default build runs its matrix products
# through libxsmm (CMakeLists.txt, STACKLAB_LIBXSMM).
RUN_PACKAGES=(g++ cmake make libopenblas-dev libxsmm-dev pkg-config nlohmann-json3-dev libgtest-dev
              python3-numpy python3-matplotlib python3-plotly)
TEST_PACKAGES=(libbenchmark-dev python3-torch clang libclang-rt-14-dev slurm-wlm munge chromium
               python3-flake8 clang-format)
# A build of named targets (run.sh and reproduce.sh: `setup.sh stacklab`) installs RUN_PACKAGES; a
# full build (no target: test.sh) installs both sets.
PACKAGES=("${RUN_PACKAGES[@]}")
(($# == 0)) && PACKAGES+=("${TEST_PACKAGES[@]}")

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

install_missing() {
  if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    die "dpkg-query/apt-get not found: this script installs packages on Debian only.
       Install these yourself, then rerun with STACKLAB_SKIP_INSTALL=1: ${PACKAGES[*]}"
  fi
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    is_installed "$p" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    say "all ${#PACKAGES[@]} Debian packages already installed"
    return
  fi

  local -a as_root=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 ||
      die "not root and sudo not found; as root run: apt-get install ${missing[*]}"
    as_root=(sudo)
  fi
  local -a apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)

  say "installing ${#missing[@]} missing package(s): ${missing[*]}"
  "${apt[@]}" update ||
    die "'apt-get update' failed (network or apt sources?); the packages needed are: ${missing[*]}"
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}" ||
    die "'apt-get install ${missing[*]}' failed; see apt's message above"
  for p in "${missing[@]}"; do
    is_installed "$p" || die "apt-get returned success but '$p' is still not installed"
  done
  say "installed: ${missing[*]}"
}

if [[ "${STACKLAB_SKIP_INSTALL:-0}" == "1" ]]; then
  say "STACKLAB_SKIP_INSTALL=1: not checking Debian packages"
else
  install_missing
fi

command -v cmake >/dev/null 2>&1 || die "cmake not found (apt-get install cmake)"
# Plain nproc honours OMP_NUM_THREADS, which reproduce.sh sets to 1 for its runs: unset it here.
jobs="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)"
# A full build (no targets: test.sh) also builds the kernel microbenchmarks (libbenchmark-dev is
# one of TEST_PACKAGES), so tests/integration/check_microbench.sh never has to reconfigure build/.
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
# Warnings fail the build only where STACKLAB_WERROR=1 asks (test.sh, CI): a user's newer compiler
# may warn about code this one accepts, and that should not stop a user's build.
if [[ "${STACKLAB_WERROR:-0}" == "1" ]]; then cmake_args+=(-DSTACKLAB_WERROR=ON); else cmake_args+=(-DSTACKLAB_WERROR=OFF); fi
(($# == 0)) && cmake_args+=(-DSTACKLAB_BUILD_BENCH=ON)
say "configuring Release build in $BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" "${cmake_args[@]}" ||
  die "cmake configure failed; see the message above"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
say "building ${*:-all targets} with $jobs job(s)"
cmake --build "$BUILD_DIR" -j"$jobs" "${targets[@]}" || die "build failed; see the compiler output above"
say "done: $BUILD_DIR/stacklab"
