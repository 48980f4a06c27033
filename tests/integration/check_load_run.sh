#!/usr/bin/env bash
# Checks stacklab.load_run against the binary on trained runs (tests/parity/load_run_check.py):
# a tiny run of every wiring the PyTorch mirror supports, its latest checkpoint's logits from
# `stacklab gradients --checkpoint` against load_run's on the same tokens (relative error < 1e-4),
# a text run's vocabulary and best checkpoint, its nanoGPT export read back into the mirror,
# a checkpoint with a flipped bit refused by load_run's checksum as by `stacklab sample`, and a
# wiring the mirror lacks refused by name.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 77 skip (no binary, no torch), 1 fail.
# Not here: gradients (the parity stage), the nanoGPT file's names and shapes (tests/python/test_nanogpt_export.py).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${STACKLAB_BIN:-build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_load_run: SKIPPED: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
PY="$(bash scripts/find_python.sh --torch)" || { echo "check_load_run: SKIPPED: no Python with numpy and torch" >&2; exit 77; }
PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" "$PY" tests/parity/load_run_check.py --stacklab "$BIN" ||
  { echo "check_load_run: FAIL (see above)" >&2; exit 1; }
echo "check_load_run: PASS"
