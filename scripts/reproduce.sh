#!/usr/bin/env bash
# Reproduces the deep-stacking study end to end: builds (scripts/setup.sh), runs the sweeps of
# configs/experiments/ into runs/deep_stacking/<sweep>/ (2 jobs at once), plots each sweep into
# runs/deep_stacking/figures/<sweep>/, then scripts/report.py writes runs/deep_stacking/report.md.
# Re-running resumes: completed runs are skipped, interrupted ones continue.
#
#   time bash scripts/reproduce.sh          # from any directory
#   STACKLAB_JOBS=1 bash scripts/reproduce.sh
#   STACKLAB_BIN=/path/to/stacklab bash scripts/reproduce.sh   # skip setup, use this binary
# Not here: the analysis itself (scripts/report.py), the figures' code (scripts/plot_compare.py).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="runs/deep_stacking"
JOBS="${STACKLAB_JOBS:-2}"
SWEEPS=(probe_grid train_grid extras extras_init extras_lr)
SWEEP_FILES=("${SWEEPS[@]/#/configs/experiments/}")
SWEEP_FILES=("${SWEEP_FILES[@]/%/.json}")

say() { printf 'reproduce: %s\n' "$*"; }
die() { printf 'reproduce: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Each sweep child is single-threaded (--train.threads=1) and --jobs children share the cores:
# OpenMP worker threads on top would oversubscribe them, and their barrier spin-waits cost more
# than the work (measured: 10 training steps of an 8-layer model, 10.5 s of CPU with the default
# team, 0.8 s with OMP_NUM_THREADS=1).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

T0="$(now)"
if [[ -n "${STACKLAB_BIN:-}" ]]; then
  BIN="$(realpath "$STACKLAB_BIN")"
  say "STACKLAB_BIN=$BIN: not running scripts/setup.sh"
else
  bash scripts/setup.sh stacklab || die "scripts/setup.sh failed"
  BIN="$ROOT/build/stacklab"
fi
T_SETUP="$(now)"
[[ -x "$BIN" ]] || die "$BIN not found after setup"
PY="$(bash scripts/find_python.sh --plot)" || die "no Python with numpy and matplotlib (see above)"
mkdir -p "$OUT/figures"

# One JSON line per stage, appended: each invocation starts with a "start" line (a re-run that
# resumes finished sweeps shows up as a second, shorter invocation). The report states these.
TIMING="$OUT/timing.jsonl"
{
  printf '{"stage": "start", "time": %s, "version": "%s", "commit": "%s", "dirty": %s, "nproc": %s, "jobs": %s, "loadavg": "%s", "binary": "%s"}\n' \
    "$T0" "$("$BIN" --version 2>/dev/null | awk '{print $2}')" "$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$(git diff --quiet HEAD -- src CMakeLists.txt 2>/dev/null && echo false || echo true)" \
    "$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc --all)" "$JOBS" "$(cut -d' ' -f1-3 /proc/loadavg)" "$BIN"
  printf '{"stage": "setup", "seconds": %s, "skipped": %s}\n' "$(awk -v a="$T0" -v b="$T_SETUP" 'BEGIN { printf "%.1f", b - a }')" \
    "$([[ -n "${STACKLAB_BIN:-}" ]] && echo true || echo false)"
} >>"$TIMING"

status=0
# All sweeps in one `stacklab sweep` call: one pool of $JOBS slots, so no core idles at the end of
# one sweep while the next has runs waiting (the sweeps are listed small-last to keep the tail short).
# A failed run is recorded in its manifest and the report; it does not stop the study. A signal
# does: the runs checkpoint, and running this script again resumes them.
t="$(now)"
say "sweeps ${SWEEPS[*]} ($JOBS runs at once)"
rc=0
"$BIN" sweep "${SWEEP_FILES[@]}" --jobs "$JOBS" || rc=$?
printf '{"stage": "sweep", "sweep": "%s", "seconds": %s, "exit": %s}\n' "${SWEEPS[*]}" "$(since "$t")" "$rc" >>"$TIMING"
if ((rc >= 128)); then
  die "sweeps stopped by a signal (exit $rc); run this script again to resume"
elif ((rc != 0)); then
  say "some runs failed (see the manifest.json of each sweep)"
  status=1
fi

t="$(now)"
for s in "${SWEEPS[@]}"; do
  MPLBACKEND=Agg "$PY" scripts/plot_compare.py "$OUT/$s" --out "$OUT/figures/$s" >/dev/null ||
    say "plot_compare.py $s: no figures"
done
# The training grid again after training: the last layers record (step 275 of 300).
MPLBACKEND=Agg "$PY" scripts/plot_compare.py "$OUT/train_grid" --step 275 --out "$OUT/figures/train_grid_step275" \
  >/dev/null || say "plot_compare.py train_grid --step 275: no figures"
# Single runs of the training grid, each with its loss curves against the reference losses and its
# block x step heatmap: the deepest stack with and without a residual, pre-norm.
for id in L96-pre-layernorm-res-s0 L96-pre-layernorm-nores-s0; do
  [[ -d "$OUT/train_grid/$id" ]] || continue
  MPLBACKEND=Agg "$PY" scripts/plot_run.py "$OUT/train_grid/$id" --out "$OUT/figures/train_grid_runs/$id" \
    >/dev/null || say "plot_run.py $id: no figures"
done
printf '{"stage": "plots", "seconds": %s}\n' "$(since "$t")" >>"$TIMING"
printf '{"stage": "end", "time": %s}\n' "$(now)" >>"$TIMING"

"$PY" scripts/report.py "$OUT" || die "scripts/report.py failed"
say "done in $(since "$T0") s: $OUT/report.md"
exit "$status"
