#!/usr/bin/env bash
# Reproduces the deep-stacking study end to end: builds (scripts/setup.sh), runs a tier's sweeps into
# OUT/<sweep>/, plots them into OUT/figures/, then scripts/report.py writes OUT/report.md,
# OUT/report.html and OUT/findings.json (and draws its front page's, escape law's and convergence section's figures,
# and writes the escape law's results tables OUT/results/*.csv). Re-running resumes: completed runs are skipped,
# interrupted ones continue.
#
#   bash scripts/reproduce.sh                    # quick tier -> runs/deep_stacking (2 runs at once)
#   bash scripts/reproduce.sh --claims           # quick tier plus the sweeps of claims.json's configs
#   bash scripts/reproduce.sh --text             # quick tier plus the study on tiny Shakespeare (data step first)
#   bash scripts/reproduce.sh --converge         # quick tier plus the convergence study (issue 36; hours)
#   bash scripts/reproduce.sh --signal           # quick tier plus the residual-or-signal study (issue 45 part 2)
#   bash scripts/reproduce.sh --full --jobs 2    # full tier (configs/experiments/full/) -> runs/deep_stacking_full
#   bash scripts/reproduce.sh --full --executor slurm --slurm-partition cpu --slurm-time 04:00:00
#   bash scripts/reproduce.sh --full --report-only          # after the Slurm jobs: figures and report
#   OPENBLAS_CORETYPE=Haswell bash scripts/reproduce.sh --out runs/deep_stacking_haswell
#   STACKLAB_BIN=/path/to/stacklab bash scripts/reproduce.sh   # skip setup, use this binary
# --help lists every flag. Not here: the analysis (report.py), the figures' code (plot_compare.py),
# the tiers' files and cost model (tier.py: scripts/tiers/; their sweep lists: configs/experiments/tiers.json).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CALLER_DIR="$PWD"  # a relative --out or STACKLAB_BIN is the caller's, not the repo's
cd "$ROOT"

usage() {
  # The sweep lists are configs/experiments/tiers.json's (tier.py list), not copied here.
  local py
  py="$(command -v python3 || echo /usr/bin/python3)"
  names() { "$py" scripts/tier.py list "$1" | fold -s -w 84 | sed 's/ *$//; 1!s/^/                    /'; }
  cat <<'EOF'
usage: bash scripts/reproduce.sh [--full] [--claims] [--text] [--converge] [--signal] [--out DIR] [--jobs N]
                                 [--executor local|slurm] [--slurm-* VALUE ...] [--max-parallel K] [--wait]
                                 [--report-only] [--tiny]

  --full            the full tier: configs/experiments/full/*.json (5 seeds, 4 learning rates at every
                    wiring and depth, twice the quick horizon); prints its size (runs, how many are done,
                    estimated core-hours) before it starts; it holds the claims' and the text study's
                    sweeps. Default: the quick tier of configs/experiments/
  --claims          add the sweeps of the claims' configs to the quick tier, both rounds
                    (configs/experiments/claims.json, claims_round2.json) and, after the report, print
                    the claims' verdicts (scripts/claims.py; OUT/claims_verdicts.json)
  --text            add the study on tiny Shakespeare to the quick tier
  --converge        add the convergence study (configs/experiments/convergence_rules.json); its
                    extension sweep continues its source's runs without a residual from H to 4H with
                    `stacklab train --resume` on copies of them; prints its size first. Opt-in: no tier
                    runs it by default. Hours on 2 cores (docs/study.md, "Convergence")
  --signal          add the residual-or-signal study (issue 45 part 2, configs/experiments/
                    signal_rules.json: without a residual, does shaped attention train where softmax
                    attention does not?); prints its size first (an upper bound: each run stops at its
                    escape). Opt-in: no tier runs it by default. About 1 hour on 2 cores if nothing
                    escapes (the rules' budget); the report's "The residual, or the signal?" judges it
EOF
  cat <<EOF

  The sweeps (configs/experiments/tiers.json, \`python3 scripts/tier.py list\`):
    quick tier      $(names quick)
    --full only     $(names full-only)
    --claims adds   $(names claims)
    --text adds     $(names text)
    --converge adds $(names converge)
    --signal adds   $(names signal)
    extension       $(names extends)
    runs once       $(names covered)
                    (where a tier has both, only the first runs)

EOF
  cat <<'EOF'
  --out DIR         where the runs, figures and report go (default runs/deep_stacking, with --full
                    runs/deep_stacking_full); a second numeric path needs its own DIR
  --jobs N          local runs at once, each single-threaded (default: STACKLAB_JOBS or 2)
  --executor WHERE  local (default) or slurm: one job array per sweep; submits and exits (unless --wait),
                    then run again with --report-only when the jobs are done
  --slurm-partition P, --slurm-time T, --slurm-cpus-per-task C, --slurm-mem M, --slurm-extra "...",
  --max-parallel K, --wait
                    passed to `stacklab sweep` as they are (see `stacklab sweep --help`)
  --report-only     run nothing: plot and write the report from what OUT holds
  --tiny            the tier scaled down (depths capped at 2, 2 seeds, first and last rate, a 16-wide
                    model, 6 steps: scripts/tier.py prepare --tiny), for the tests; its text sweeps run
                    when the data step can bring the text (STACKLAB_DATA_LOCAL or a checked copy in data/)
                    and are skipped loudly otherwise (in CI, CI=true, that is an error)

The text sweeps read data/shakespeare_char/input.txt: before them the data step runs
(python3 scripts/get_data.py; a machine without internet sets STACKLAB_DATA_LOCAL=DIR, a folder
holding tinyshakespeare/input.txt), and the script stops if it cannot bring the text.
  -h, --help        this text
EOF
}

say() { printf 'reproduce: %s\n' "$*"; }
die() { printf 'reproduce: ERROR: %s\n' "$*" >&2; exit 1; }
bad() { printf 'reproduce: %s (see --help)\n' "$*" >&2; exit 2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

TIER=quick OUT="" JOBS="${STACKLAB_JOBS:-2}" EXECUTOR=local REPORT_ONLY=0 TINY=0 WAIT=0 CLAIMS=0 TEXT=0 CONVERGE=0
SIGNAL=0
SLURM_ARGS=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --full) TIER=full ;;
    --claims) CLAIMS=1 ;;
    --text) TEXT=1 ;;
    --converge) CONVERGE=1 ;;
    --signal) SIGNAL=1 ;;
    --report-only) REPORT_ONLY=1 ;;
    --tiny) TINY=1 ;;
    --wait) WAIT=1; SLURM_ARGS+=(--wait) ;;
    --out | --jobs | --executor | --slurm-partition | --slurm-time | --slurm-cpus-per-task | --slurm-mem | \
      --slurm-extra | --max-parallel)
      (($# >= 2)) || bad "$1 needs a value"
      case "$1" in
        --out) if [[ "$2" == /* ]]; then OUT="$2"; else OUT="$CALLER_DIR/$2"; fi ;;
        --jobs) [[ "$2" =~ ^[0-9]+$ ]] || bad "--jobs: expected a number, got '$2'"; JOBS="$2" ;;
        --executor) [[ "$2" == local || "$2" == slurm ]] || bad "--executor: expected local or slurm, got '$2'"
                    EXECUTOR="$2" ;;
        *) SLURM_ARGS+=("$1" "$2") ;;
      esac
      shift ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done
if [[ "$EXECUTOR" == local && ${#SLURM_ARGS[@]} -gt 0 ]]; then
  bad "${SLURM_ARGS[0]} needs --executor slurm"
fi
if [[ -z "$OUT" ]]; then  # (an `x && echo` substitution would fail the assignment under set -e)
  if [[ "$TIER" == full ]]; then OUT="runs/deep_stacking_full"; else OUT="runs/deep_stacking"; fi
fi
# Each sweep child is single-threaded (--train.threads=1) and --jobs children share the cores:
# OpenMP worker threads on top would oversubscribe them, and their barrier spin-waits cost more
# than the work (measured: 10 training steps of an 8-layer model, 10.5 s of CPU with the default
# team, 0.8 s with OMP_NUM_THREADS=1).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

T0="$(now)"
if [[ -n "${STACKLAB_BIN:-}" ]]; then
  BIN="$(cd "$CALLER_DIR" && realpath "$STACKLAB_BIN")"
  say "STACKLAB_BIN=$BIN: not running scripts/setup.sh"
else
  bash scripts/setup.sh stacklab || die "scripts/setup.sh failed"
  BIN="$ROOT/build/stacklab"
fi
T_SETUP="$(now)"
[[ -x "$BIN" ]] || die "$BIN not found after setup"
PY="$(bash scripts/find_python.sh --plot)" || die "no Python with numpy and matplotlib (see above)"
# The tier's sweep files (configs/experiments/tiers.json's lists: quick, claims, text, full; converge and
# signal, the opt-in studies).
mapfile -t SRC_FILES < <("$PY" scripts/tier.py files "$TIER" $([[ $CLAIMS == 1 ]] && echo --claims) \
  $([[ $TEXT == 1 ]] && echo --text) $([[ $CONVERGE == 1 ]] && echo --converge) $([[ $SIGNAL == 1 ]] && echo --signal))
((${#SRC_FILES[@]})) || die "scripts/tier.py files $TIER failed (see above)"

# The text sweeps (tier.py text-files: data.source "text" in the file) read tiny Shakespeare, which the
# repository does not hold: the data step brings it first (a checked copy already in data/ is kept,
# without the network; STACKLAB_DATA_LOCAL names a local copy). Without it the tier stops here, except
# --tiny (the tests' path) outside CI, which drops its text sweeps and says so.
mapfile -t TEXT_FILES < <("$PY" scripts/tier.py text-files "${SRC_FILES[@]}")
is_text() { [[ " ${TEXT_FILES[*]} " == *" $1 "* ]]; }
if ((${#TEXT_FILES[@]})) && ((!REPORT_ONLY)); then
  say "data step for the text sweeps ($(basename -a "${TEXT_FILES[@]}" | tr '\n' ' ' | sed 's/ $//')): scripts/get_data.py${STACKLAB_DATA_LOCAL:+ (STACKLAB_DATA_LOCAL=$STACKLAB_DATA_LOCAL)}"
  if ! "$PY" scripts/get_data.py shakespeare_char; then
    why="the data step could not bring tiny Shakespeare into data/shakespeare_char/ (see above); set STACKLAB_DATA_LOCAL=DIR to a folder holding tinyshakespeare/input.txt, or run python3 scripts/get_data.py where there is internet"
    if ((TINY)) && [[ "${CI:-}" != "true" ]]; then
      say "SKIPPING the text sweeps: $why"
      KEEP=()
      for f in "${SRC_FILES[@]}"; do is_text "$f" || KEEP+=("$f"); done
      SRC_FILES=("${KEEP[@]}")
    else
      die "$why"
    fi
  fi
fi
mkdir -p "$OUT/figures"
OUT="$(cd "$OUT" && pwd)"

# This invocation's sweep files: OUT/sweeps/<name>.json, out_dir OUT/<name> (tier.py prepare).
rm -rf "$OUT/sweeps"
LIST="$(mktemp)"
trap 'rm -f "$LIST"' EXIT
"$PY" scripts/tier.py prepare "$OUT" "${SRC_FILES[@]}" $([[ $TINY == 1 ]] && echo --tiny) >"$LIST" ||
  die "scripts/tier.py prepare failed (see above)"
mapfile -t SWEEP_FILES <"$LIST"
SWEEPS=()
for f in "${SWEEP_FILES[@]}"; do SWEEPS+=("$(basename "$f" .json)"); done
# Extension sweeps (tier.py later: converge_synth_long) run after the others, on copies of their runs.
mapfile -t LATER_NAMES < <("$PY" scripts/tier.py later)
FIRST_FILES=() LATER_FILES=()
for f in "${SWEEP_FILES[@]}"; do
  later=0
  for n in "${LATER_NAMES[@]}"; do [[ "$(basename "$f" .json)" == "$n" ]] && later=1; done
  if ((later)); then LATER_FILES+=("$f"); else FIRST_FILES+=("$f"); fi
done

# One JSON line per stage, appended: each invocation starts with a "start" line (a re-run that
# resumes finished sweeps shows up as a second, shorter invocation). The report states these,
# with the numeric path: OPENBLAS_CORETYPE, the OpenBLAS core this binary loads with
# (`stacklab --version`'s "OpenBLAS kernels:" line, or OPENBLAS_VERBOSE=2's "Core:"), the matrix-
# product path and vector-loop clone of the build, the CPU model.
TIMING="$OUT/timing.jsonl"
json_str() { "$PY" -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
VERSION_TEXT="$("$BIN" --version 2>/dev/null || true)"
# `stacklab --version` names the OpenBLAS kernels (newer binaries); else OPENBLAS_VERBOSE=2's line.
CORE="$(sed -n 's/^OpenBLAS kernels: *//p' <<<"$VERSION_TEXT" | head -n 1)"
[[ -n "$CORE" ]] || CORE="$(OPENBLAS_VERBOSE=2 "$BIN" --version 2>&1 | sed -n 's/^Core: *//p' | head -n 1)"
MATMUL="$(sed -n 's/^matrix products: *//p' <<<"$VERSION_TEXT" | head -n 1)"
LOOPS="$(sed -n 's/^vector loops: *//p' <<<"$VERSION_TEXT" | head -n 1)"
# (awk exits at the first match: `sed | head` could end on SIGPIPE with hundreds of CPUs, which
# pipefail + set -e would turn into a silent exit)
CPU="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)"
{
  printf '{"stage": "start", "tier": "%s", "tiny": %s, "executor": "%s", "time": %s, "version": "%s", "commit": "%s", "dirty": %s, "nproc": %s, "jobs": %s, "loadavg": "%s", "binary": %s, "openblas_coretype": %s, "openblas_core": %s, "matmul": %s, "vector_loops": %s, "cpu_model": %s, "omp_num_threads": %s}\n' \
    "$TIER" "$([[ $TINY == 1 ]] && echo true || echo false)" "$EXECUTOR" \
    "$T0" "$(head -n 1 <<<"$VERSION_TEXT" | awk '{print $2}')" "$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$(git diff --quiet HEAD -- src CMakeLists.txt 2>/dev/null && echo false || echo true)" \
    "$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc --all)" "$JOBS" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(json_str "$BIN")" "$([[ -n "${OPENBLAS_CORETYPE:-}" ]] && json_str "$OPENBLAS_CORETYPE" || echo null)" \
    "$([[ -n "$CORE" ]] && json_str "$CORE" || echo null)" "$([[ -n "$MATMUL" ]] && json_str "$MATMUL" || echo null)" \
    "$([[ -n "$LOOPS" ]] && json_str "$LOOPS" || echo null)" "$([[ -n "$CPU" ]] && json_str "$CPU" || echo null)" \
    "$(json_str "$OMP_NUM_THREADS")"
  printf '{"stage": "setup", "seconds": %s, "skipped": %s}\n' "$(awk -v a="$T0" -v b="$T_SETUP" 'BEGIN { printf "%.1f", b - a }')" \
    "$([[ -n "${STACKLAB_BIN:-}" ]] && echo true || echo false)"
} >>"$TIMING"
say "$TIER tier$([[ $TINY == 1 ]] && echo ' (--tiny)') into $OUT; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, OpenBLAS core ${CORE:-unknown}"

status=0
if ((REPORT_ONLY)); then
  say "--report-only: running nothing"
  # A sweep that never ran (no manifest) is named with why, not counted as runs that did not
  # complete: with --tiny, a text sweep the data step could not bring the text for was skipped.
  RAN=()
  for f in "${SRC_FILES[@]}"; do
    s="$(basename "$f" .json)"
    if [[ -f "$OUT/$s/manifest.json" ]]; then
      RAN+=("$OUT/$s")
    elif is_text "$f" && ((TINY)); then
      say "$s: not run (no $OUT/$s/manifest.json): it reads tiny Shakespeare, and a --tiny study skips its text sweeps when the data step cannot bring the text; the report leaves it out"
    else
      say "$s: not run (no $OUT/$s/manifest.json); the report leaves it out (this script without --report-only runs it$(is_text "$f" && echo ', after the data step'))"
    fi
  done
  if ((${#RAN[@]})); then
    "$BIN" sweep --status "${RAN[@]}" || say "not every run completed (see above)"
  fi
else
  if [[ "$TIER" == full || $TINY == 1 || $CONVERGE == 1 || $SIGNAL == 1 ]]; then
    "$PY" scripts/tier.py size "$BIN" "${SWEEP_FILES[@]}" --timing "$TIMING" || die "scripts/tier.py size failed"
  fi
  # All sweeps in one `stacklab sweep` call: one pool of $JOBS slots, so no core idles at the end of
  # one sweep while the next has runs waiting. A failed run is recorded in its manifest and the
  # report; it does not stop the study. A signal does: the runs checkpoint, and running this
  # script again resumes them.
  t="$(now)"
  say "sweeps ${SWEEPS[*]} ($([[ $EXECUTOR == slurm ]] && echo "Slurm" || echo "$JOBS runs at once"))"
  rc=0
  if [[ "$EXECUTOR" == slurm ]]; then
    "$BIN" sweep "${FIRST_FILES[@]}" --executor slurm "${SLURM_ARGS[@]}" || rc=$?
    if ((${#LATER_FILES[@]})); then
      # The extension sweeps continue their sources' completed runs (tier.py extend copies them; the
      # sweep's --on-change extend submits `train --resume DIR --train.max_iters=N ...` tasks): only
      # once every source run has settled, so that none still queued is trained again from step 0.
      if "$PY" scripts/tier.py extend "$BIN" "$OUT" --settled >/dev/null; then
        "$BIN" sweep "${LATER_FILES[@]}" --executor slurm "${SLURM_ARGS[@]}" --on-change extend || rc=$?
      else
        say "not submitted yet: $(basename -a "${LATER_FILES[@]}" | tr '\n' ' ')(they extend runs that must finish first: run this script again with the same flags once the jobs are done)"
      fi
    fi
  else
    "$BIN" sweep "${FIRST_FILES[@]}" --jobs "$JOBS" || rc=$?
    if ((${#LATER_FILES[@]})) && ((rc < 128)); then
      # Copy each completed source run (tier.py extend); the extension sweep continues each copy to
      # its horizon with `train --resume` (--on-change extend: its one change is a longer
      # train.max_iters), $JOBS at once, and trains from step 0 any run whose source did not complete.
      "$PY" scripts/tier.py extend "$BIN" "$OUT" >/dev/null || rc=1
      "$BIN" sweep "${LATER_FILES[@]}" --jobs "$JOBS" --on-change extend || rc=$?
    fi
  fi
  printf '{"stage": "sweep", "sweep": "%s", "executor": "%s", "seconds": %s, "exit": %s}\n' "${SWEEPS[*]}" "$EXECUTOR" \
    "$(since "$t")" "$rc" >>"$TIMING"
  if ((rc >= 128)); then
    die "sweeps stopped by a signal (exit $rc); run this script again to resume"
  elif ((rc != 0)); then
    say "some runs failed (see the manifest.json of each sweep)"
    status=1
  fi
  if [[ "$EXECUTOR" == slurm && $WAIT == 0 ]]; then
    printf '{"stage": "submitted", "time": %s}\n' "$(now)" >>"$TIMING"
    say "submitted. Follow: $BIN sweep --status ${SWEEPS[*]/#/$OUT/}"
    say "when the jobs are done: bash scripts/reproduce.sh $([[ $TIER == full ]] && echo '--full ')$([[ $CLAIMS == 1 ]] && echo '--claims ')$([[ $TEXT == 1 ]] && echo '--text ')$([[ $CONVERGE == 1 ]] && echo '--converge ')$([[ $SIGNAL == 1 ]] && echo '--signal ')--out $OUT --report-only"
    exit "$status"
  fi
fi

t="$(now)"
rm -rf "$OUT/figures"
# The plot scripts read disjoint inputs and write disjoint folders: up to $JOBS of them run at
# once (each is one single-threaded Python process, mostly matplotlib's rendering). Their views
# share one plotly.js, OUT/figures/plotly-<version>.js (--plotly-dir; each writes it whole).
# Ctrl-C used to leave the plot scripts running (a background Python of a non-interactive shell
# ignores SIGINT) and the script going on to its report, exit 0: now SIGINT or SIGTERM while they
# run stops every plot job (each job's shell passes SIGTERM on to its Python) and the script, exit
# 130 / 143, with a message.
plot() {  # plot WHAT SCRIPT ARGS...: one plot script, its output dropped, "WHAT: no figures" if it fails
  local what="$1"
  shift
  PLOT_CHILD=""
  trap '[[ -n "$PLOT_CHILD" ]] && kill -TERM "$PLOT_CHILD" 2>/dev/null; wait; exit 143' INT TERM
  MPLBACKEND=Agg "$PY" "$@" >/dev/null &
  PLOT_CHILD=$!
  wait "$PLOT_CHILD" || say "$what: no figures"
}
stop_plots() {  # stop_plots SIGNAME CODE: the trap of SIGINT and SIGTERM while the plot jobs run
  trap '' INT TERM
  local pid
  for pid in $(jobs -p); do kill -TERM "$pid" 2>/dev/null || true; done
  wait
  printf 'reproduce: ERROR: plots stopped by a signal (%s): the plot jobs were stopped and no report was written; run this script again with the same flags and --report-only to plot and report\n' \
    "$1" >&2
  exit "$2"
}
trap 'stop_plots SIGINT 130' INT
trap 'stop_plots SIGTERM 143' TERM
PLOT_JOBS="$JOBS"
((PLOT_JOBS > 0)) || PLOT_JOBS="$(nproc)"  # --jobs 0: one per core, as `stacklab sweep` reads it
plot_bg() {
  while (($(jobs -rp | wc -l) >= PLOT_JOBS)); do wait -n || true; done
  plot "$@" &
}
TRAINING=()
for s in "${SWEEPS[@]}"; do
  [[ -f "$OUT/$s/manifest.json" ]] || continue  # never ran (--report-only named it above)
  case "$s" in
    train_grid | lr_grid) TRAINING+=("$OUT/$s") ;;
    escape_law*) ;;  # the report draws the escape law's figure (report/law.py) and writes its results table
    *) plot_bg "plot_compare.py $s" scripts/plot_compare.py "$OUT/$s" --out "$OUT/figures/$s" --plotly-dir "$OUT/figures" ;;
  esac
done
# The training points pooled over train_grid and lr_grid: at initialisation (with the learning-
# rate, escape-step and loss-curve figures) and at each run's last layers record.
if ((${#TRAINING[@]})); then
  plot_bg "plot_compare.py training" scripts/plot_compare.py "${TRAINING[@]}" --out "$OUT/figures/training" \
    --plotly-dir "$OUT/figures"
  plot_bg "plot_compare.py training --step last" scripts/plot_compare.py "${TRAINING[@]}" --step last \
    --out "$OUT/figures/training_last" --plotly-dir "$OUT/figures"
fi
# Single runs, each with its loss curves and its block x step heatmap: the deepest pre-norm stack
# with and without a residual (lowest seed, the rate every depth has).
while read -r run; do
  [[ -n "$run" ]] || continue
  plot_bg "plot_run.py $run" scripts/plot_run.py "$run" --out "$OUT/figures/runs/$(basename "$run")" \
    --plotly-dir "$OUT/figures"
done < <("$PY" scripts/tier.py deepest "$OUT")
# The stability map (its sweep comes with --claims): one figure of wiring x init x rate x depth,
# read by the report's "Where pre-norm and post-norm train".
# Without it, the quick tier's map core (map_core: 8 of its cells) is drawn in its place; the text
# study's map (text_map) beside it.
if [[ -f "$OUT/stability_map/manifest.json" ]]; then
  plot_bg "plot_stability_map.py" scripts/plot_stability_map.py "$OUT/stability_map" --out "$OUT/figures/stability_map"
elif [[ -f "$OUT/map_core/manifest.json" ]]; then
  plot_bg "plot_stability_map.py map_core" scripts/plot_stability_map.py "$OUT/map_core" --out "$OUT/figures/stability_map"
fi
if [[ -f "$OUT/text_map/manifest.json" ]]; then
  plot_bg "plot_stability_map.py text_map" scripts/plot_stability_map.py "$OUT/text_map" --out "$OUT/figures/text_map"
fi
wait
trap - INT TERM
printf '{"stage": "plots", "seconds": %s}\n' "$(since "$t")" >>"$TIMING"
printf '{"stage": "end", "time": %s}\n' "$(now)" >>"$TIMING"

"$PY" scripts/report.py "$OUT" || die "scripts/report.py failed"
# The claims of configs/experiments/claims.json, judged by their fixed rules where their sweeps ran.
if [[ $CLAIMS == 1 || "$TIER" == full ]]; then
  "$PY" scripts/claims.py "$OUT" --tier "$TIER" --json "$OUT/claims_verdicts.json" || die "scripts/claims.py failed"
fi
if compgen -G "$OUT/results/*.csv" >/dev/null && ((!TINY)); then
  # The results tables (one line per run) outlive this folder once committed: docs/results/, by hand.
  say "results tables: $OUT/results/; to refresh the repository's copy: $PY scripts/report.py $OUT --results-to docs/results"
fi
say "done in $(since "$T0") s: $OUT/report.md, $OUT/report.html"
exit "$status"
