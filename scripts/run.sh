#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then the main job: trains configs/quickstart.json into
# runs/quickstart/ (starting it over if it exists) and plots it into runs/quickstart/plots/.
# Extra arguments go to `stacklab train`, e.g.  scripts/run.sh --model.n_layer=8
# STACKLAB_RUN_DIR picks another run directory.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="$ROOT/build/stacklab"
CONFIG="configs/quickstart.json"
RUN_DIR="${STACKLAB_RUN_DIR:-runs/quickstart}"

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
echo "run: in PyTorch: once 'bash scripts/link_package.sh', then from any folder:"
echo "       /usr/bin/python3 -c 'from stacklab import load_run; print(load_run(\"$(cd "$RUN_DIR" && pwd)\"))'"
