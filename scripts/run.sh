#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then the main job: train configs/quickstart.json and
# plot the run into its run directory. Extra arguments go to `stacklab train`, e.g.
#   scripts/run.sh --model.n_layer=8 --train.steps=200
# Until `stacklab train` and configs/quickstart.json exist it only shows `stacklab --help`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="$ROOT/build/stacklab"
CONFIG="configs/quickstart.json"

bash "$ROOT/scripts/setup.sh"

if [[ ! -f "$CONFIG" ]] || ! "$BIN" train --help >/dev/null 2>&1; then
  echo "run: $CONFIG or 'stacklab train' is not there yet; showing what the binary offers:"
  "$BIN" --help
  exit 0
fi

# The run directory is <train.out_dir>/<train.name>; find it as the newest directory the
# training created or touched, else <out_dir>/<name> (honouring --train.out_dir=, --train.name=
# and STACKLAB_RUN_DIR).
out_dir="runs"
name="$(basename "$CONFIG" .json)"
for arg in "$@"; do
  case "$arg" in
    --train.out_dir=*) out_dir="${arg#--train.out_dir=}" ;;
    --train.name=*) name="${arg#--train.name=}" ;;
  esac
done
marker="$(mktemp)"
trap 'rm -f "$marker"' EXIT

echo "==> stacklab train $CONFIG $*"
"$BIN" train "$CONFIG" "$@"

run_dir="${STACKLAB_RUN_DIR:-}"
if [[ -z "$run_dir" && -d "$out_dir" ]]; then
  run_dir="$(find "$out_dir" -mindepth 1 -maxdepth 1 -type d -newer "$marker" -printf '%T@ %p\n' |
    sort -n | tail -n 1 | cut -d' ' -f2-)"
fi
if [[ -z "$run_dir" && -d "$out_dir/$name" ]]; then run_dir="$out_dir/$name"; fi

if [[ ! -f scripts/plot_run.py ]]; then
  echo "run: scripts/plot_run.py is not there yet; no plots (run dir: ${run_dir:-unknown})"
  exit 0
fi
if [[ -z "$run_dir" || ! -d "$run_dir" ]]; then
  echo "run: could not tell which run directory training wrote under '$out_dir/'; set STACKLAB_RUN_DIR to plot" >&2
  exit 1
fi
if ! PLOT_PY="$(bash scripts/find_python.sh --plot)"; then
  echo "run: SKIPPED plotting: no Python with numpy+matplotlib (apt-get install python3-numpy python3-matplotlib)" >&2
  exit 0
fi
echo "==> plotting $run_dir"
MPLBACKEND="${MPLBACKEND:-Agg}" "$PLOT_PY" scripts/plot_run.py "$run_dir"
echo "run: done; results in $run_dir"
