#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then the main job: trains configs/quickstart.json into
# runs/quickstart/ (starting it over if it exists) and plots it into runs/quickstart/plots/.
# Extra arguments go to `stacklab train`, e.g.  scripts/run.sh --model.n_layer=8
# STACKLAB_RUN_DIR picks another run directory.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The closing hint for using the run in PyTorch. TORCH_PY: a Python that imports torch
# (scripts/find_python.sh --torch), or "" when there is none: then what to install, not a command
# that would fail with ModuleNotFoundError.
load_run_hint() {
  local run_dir="$1" torch_py="$2"
  if [[ -z "$torch_py" ]]; then
    echo "run: to use the run in PyTorch (stacklab.load_run) install PyTorch first: apt-get install python3-torch"
    echo "       (or set STACKLAB_PYTHON to a Python that has torch), then: bash scripts/link_package.sh"
    return 0
  fi
  echo "run: in PyTorch: once 'bash scripts/link_package.sh', then from any folder:"
  echo "       $torch_py -c 'from stacklab import load_run; print(load_run(\"$run_dir\"))'"
}

main() {
  cd "$ROOT"
  local BIN="$ROOT/build/stacklab" CONFIG="configs/quickstart.json" RUN_DIR="${STACKLAB_RUN_DIR:-runs/quickstart}"
  local PLOT_PY TORCH_PY

  bash "$ROOT/scripts/setup.sh" stacklab

  echo "==> stacklab train $CONFIG --out $RUN_DIR --force $*"
  "$BIN" train "$CONFIG" --out "$RUN_DIR" --force "$@"

  if ! PLOT_PY="$(bash scripts/find_python.sh --plot)"; then
    echo "run: SKIPPED plotting: no Python with numpy+matplotlib (apt-get install python3-numpy python3-matplotlib)" >&2
    exit 0
  fi
  echo "==> plotting $RUN_DIR"
  MPLBACKEND="${MPLBACKEND:-Agg}" "$PLOT_PY" scripts/plot_run.py "$RUN_DIR"
  echo "run: done; results in $RUN_DIR (metrics.jsonl, summary.json, plots/; open plots/view.html to explore)"
  TORCH_PY="$(bash scripts/find_python.sh --torch 2>/dev/null)" || TORCH_PY=""
  load_run_hint "$(cd "$RUN_DIR" && pwd)" "$TORCH_PY"
}

# Executed, not sourced (tests/python/test_run_sh.py sources it to call load_run_hint): run it.
# `return` succeeds only in a sourced file, whatever $0 is.
if ! (return 0 2>/dev/null); then
  main "$@"
fi
