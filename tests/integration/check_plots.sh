#!/usr/bin/env bash
# Checks the plotting scripts on the committed example run tests/fixtures/run_small (4 blocks,
# 60 steps, a torn last line): runlog reads it as expected, plot_run.py and plot_compare.py write
# every figure as a valid non-empty PNG, a copy made diverged (summary.json status) is left out of the
# per-layer comparison by name, and a run dir without metrics.jsonl fails by name.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 77 skip (no numpy+matplotlib), 1 fail.
# Not here: judging how the figures look (do that by eye).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"  # the Python below imports the package stacklab
FIXTURE=tests/fixtures/run_small

# find_python.sh tries $STACKLAB_PYTHON (test.sh sets it) first, then Debian's python3.
PY="$(bash scripts/find_python.sh --plot)" || { echo "check_plots: SKIPPED: no Python with numpy and matplotlib" >&2; exit 77; }
export MPLBACKEND=Agg

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_plots: FAIL: $*" >&2; fails=$((fails + 1)); }

# 1. The reader: the torn last line is dropped, records are grouped, the label is honest.
"$PY" - "$FIXTURE" <<'EOF' 2>"$tmp/runlog.err" || { cat "$tmp/runlog.err" >&2; fail "runlog on $FIXTURE (see above)"; }
import sys
from stacklab import runlog
run = runlog.load_run(sys.argv[1])
counts = {k: len(v) for k, v in run.records.items()}
want = {"start": 1, "resume": 0, "train": 13, "eval": 4, "layers": 4, "diverged": 0}
assert counts == want, f"record counts {counts}, expected {want} (torn last line must be dropped)"
assert run.n_layer == 4 and run.wiring == "pre-layernorm-res", (run.n_layer, run.wiring)
assert runlog.label(run) == "L=4 pre-norm residual: x + f(layernorm(x))", runlog.label(run)
run.summary = {"status": "diverged", "diverged": True, "divergence": {"step": 120, "reason": "nan", "blocks": [3]}}
assert runlog.label(run).endswith(" [diverged at step 120]"), runlog.label(run)
run.summary = None
assert runlog.label(run).endswith(" [incomplete at step 60]"), runlog.label(run)
EOF
grep -q "no trailing newline" "$tmp/runlog.err" || fail "runlog did not warn about the torn last line"

# 1b. The metric descriptors: plots take each metric's label from the run (rank_ratio is not an
# "effective rank"), and a run written before descriptors existed gets them from its records.
"$PY" - "$FIXTURE" <<'EOF' 2>"$tmp/desc.err" || { cat "$tmp/desc.err" >&2; fail "metric descriptors (see above)"; }
import sys
from stacklab import plot_run, runlog
run = runlog.load_run(sys.argv[1])
desc = {d["name"]: d for d in run.layer_metrics}
for name in ("grad_norm", "rank_ratio", "attn_entropy", "attn_logit_max", "stream_cos"):
    assert name in desc, f"{name} missing from the descriptors {sorted(desc)}"
assert desc["stream_cos"]["axis"] == "block" and desc["act_rms"]["axis"] == "boundary", desc["stream_cos"]
ylabels = [ax.get_ylabel() for ax in plot_run.stream_figure(run).axes]
assert ylabels[1] == desc["rank_ratio"]["label"], ylabels
assert "effective rank" not in ylabels[1], ylabels
del run.records["start"][0]["layer_metrics"]
inferred = {d["name"]: d["axis"] for d in run.layer_metrics}
assert inferred == {n: d["axis"] for n, d in desc.items()}, (inferred, sorted(desc))
EOF

# A probe file (the `stacklab probe` format) for plot_compare, built from the fixture's step 0.
"$PY" - "$FIXTURE" "$tmp/probe_L4.json" <<'EOF' || fail "writing a probe file"
import json, sys
cfg = json.load(open(sys.argv[1] + "/config.json"))
layers = json.loads(open(sys.argv[1] + "/metrics.jsonl").readlines()[1])
mean = {k: v for k, v in layers.items() if k not in ("step", "kind")}
g = mean["grad_norm"]
start = json.loads(open(sys.argv[1] + "/metrics.jsonl").readlines()[0])
json.dump({"config": {k: v for k, v in cfg.items() if k != "derived"}, "derived": cfg["derived"],
           "seeds": [{"seed": 1, "loss": mean["loss"], "layers": mean}], "mean": mean,
           "ratio_first_last": g[0] / g[-1], "layer_metrics": start["layer_metrics"]},
          open(sys.argv[2], "w"))
EOF

# is_png FILE: exists, non-empty, PNG signature and an IHDR with non-zero size.
is_png() {
  "$PY" - "$1" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read(32)
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert w > 0 and h > 0, f"empty image {w}x{h}"
EOF
}
expect_pngs() {  # DIR NAME...
  local dir="$1" f
  shift
  for f in "$@"; do
    if [[ ! -s "$dir/$f" ]]; then fail "$dir/$f missing or empty"
    elif ! is_png "$dir/$f" 2>/dev/null; then fail "$dir/$f is not a valid PNG"; fi
  done
}

# 2. plot_run.py on the fixture.
if "$PY" scripts/plot_run.py "$FIXTURE" --out "$tmp/run" >"$tmp/run.out" 2>&1; then
  expect_pngs "$tmp/run" loss.png grad_norm_by_block.png grad_norm_heatmap.png stream.png stream_grad.png \
    layer_metrics.png
  grep -q "$tmp/run/loss.png" "$tmp/run.out" || fail "plot_run.py did not print the paths it wrote"
else
  cat "$tmp/run.out" >&2
  fail "plot_run.py $FIXTURE exited non-zero"
fi
"$PY" scripts/plot_run.py "$FIXTURE" --out "$tmp/run_steps" --steps 0,20 >/dev/null 2>&1 ||
  fail "plot_run.py --steps 0,20 exited non-zero"

# 3. plot_compare.py on the fixture's parent-style sweep (a copy, plus a copy made diverged as the
# trainer records it: summary.json status "diverged", its last loss kept) and the probe file.
mkdir -p "$tmp/sweep"
cp -r "$FIXTURE" "$tmp/sweep/run_small"
cp -r "$FIXTURE" "$tmp/sweep/run_diverged"
"$PY" - "$tmp/sweep/run_diverged/summary.json" <<'EOF' || fail "marking the fixture's copy diverged"
import json, sys
s = json.load(open(sys.argv[1]))
s.update(status="diverged", diverged=True, final_val_loss=8324.9,
         divergence={"step": 40, "reason": "val loss above 10 x ln(vocab_size)", "blocks": []})
json.dump(s, open(sys.argv[1], "w"))
EOF
if "$PY" scripts/plot_compare.py "$tmp/sweep" "$tmp/probe_L4.json" --out "$tmp/cmp" >"$tmp/cmp.out" 2>&1; then
  expect_pngs "$tmp/cmp" grad_norm_by_block.png final_loss_vs_depth.png grad_ratio_vs_depth.png rank_vs_layer.png \
    layer_metrics_vs_depth.png
  grep -q "3 run(s)" "$tmp/cmp.out" || fail "plot_compare.py did not find the runs and the probe: $(head -n 3 "$tmp/cmp.out")"
  grep -q "run_diverged: left out of the per-layer figures: \[diverged at step 40\]" "$tmp/cmp.out" ||
    fail "plot_compare.py did not leave out the run whose summary says diverged: $(cat "$tmp/cmp.out")"
  grep -q "run_small: left out" "$tmp/cmp.out" && fail "plot_compare.py left out the completed run"
else
  cat "$tmp/cmp.out" >&2
  fail "plot_compare.py exited non-zero"
fi

# 4. A run dir without metrics.jsonl: non-zero exit, and the message names the file.
mkdir -p "$tmp/empty_run"
cp "$FIXTURE/config.json" "$tmp/empty_run/"
if "$PY" scripts/plot_run.py "$tmp/empty_run" >"$tmp/empty.out" 2>&1; then
  fail "plot_run.py on a run dir without metrics.jsonl exited 0"
elif ! grep -q "metrics.jsonl" "$tmp/empty.out"; then
  fail "plot_run.py's error does not name metrics.jsonl: $(cat "$tmp/empty.out")"
fi

if ((fails > 0)); then
  echo "check_plots: $fails failure(s)" >&2
  exit 1
fi
echo "check_plots: ok (runlog, metric descriptors, plot_run.py: 6 figures, plot_compare.py: 5 figures, missing-metrics error)"
exit 0
