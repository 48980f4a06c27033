#!/usr/bin/env bash
# Checks the HTML views (scripts/stacklab/plots/views.py) as a person uses them, in headless Chromium
# (Debian's `chromium`): three real runs (`build/stacklab train`: two 2-block runs of a 16-wide
# model, with and without the residual, 12 steps, and a 96-block run 8 wide, 6 steps, a layers
# record every step), plot_run.py's view of each and plot_compare.py's sweep view of all three: the
# first run's view alone, as `plot_run.py RUN_DIR` writes it (plotly.js beside it), the others as
# reproduce.sh writes a study's (--plotly-dir: one copy of plotly.js that every view loads by a
# relative path). Each page must load nothing from a URL (no http(s) URL, no <link>), load with no
# script error and no network request, and draw every chart (the page's own #view-check). Hovering as a person would
# (tests/integration/view_probe.js, injected into a copy) must show the last val loss and a
# gradient-norm heatmap cell (in the sweep view, its first run's) equal to metrics.jsonl's values
# at the digits the page shows (6 and 5 significant), and picking one run in the sweep view must
# hide every other run's traces.
# Size bound: the 96-block view (96 blocks x 7 layers records x 11 metrics) is under 1 MB, and the
# four views hold two copies of plotly.js (Debian's unminified plotly.js 2.6.3 is 8.7 MB), not four.
# Then a page with a script error, one with a chart never drawn, one that fetches over the network
# and one moved away from its plotly.js must each fail.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 77 skip (no binary, plotly or chromium), 1 fail.
# Not here: the PNG figures (check_plots.sh), the report's link to each view (check_report_html.sh).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
BIN="${STACKLAB_BIN:-build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_views: SKIPPED: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
PY="$(bash scripts/find_python.sh --plot)" || { echo "check_views: SKIPPED: no Python with numpy and matplotlib" >&2; exit 77; }
"$PY" -c 'import plotly' 2>/dev/null || { echo "check_views: SKIPPED: no plotly (apt-get install python3-plotly)" >&2; exit 77; }
CHROMIUM="${STACKLAB_CHROMIUM:-$(command -v chromium || true)}"
[[ -x "$CHROMIUM" ]] || { echo "check_views: SKIPPED: no chromium (apt-get install chromium)" >&2; exit 77; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_views: FAIL: $*" >&2; fails=$((fails + 1)); }
S="$tmp/sweep"
SMALL=(--model.n_layer=2 --model.n_embd=16 --model.n_head=2 --model.block_size=16 --train.batch_size=2
  --train.max_iters=12 --train.eval_interval=4 --train.eval_iters=1 --train.ckpt_interval=0
  --log.layer_interval=4 --log.log_interval=2)
DEEP=(--model.n_layer=96 --model.n_embd=8 --model.n_head=2 --model.block_size=8 --train.batch_size=2
  --train.max_iters=6 --train.eval_interval=3 --train.eval_iters=1 --train.ckpt_interval=0
  --log.layer_interval=1 --log.log_interval=1)
for spec in "res:--model.residual=true" "nores:--model.residual=false"; do
  "$BIN" train configs/base.json "${SMALL[@]}" "${spec#*:}" --out "$S/${spec%%:*}" >"$tmp/train.log" 2>&1 ||
    { cat "$tmp/train.log" >&2; fail "stacklab train ${spec%%:*}"; }
done
"$BIN" train configs/base.json "${DEEP[@]}" --out "$S/deep96" >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log" >&2; fail "stacklab train deep96"; }
MPLBACKEND=Agg "$PY" scripts/plot_run.py "$S/res" >"$tmp/plot.log" 2>&1 || { cat "$tmp/plot.log" >&2; fail "plot_run.py res"; }
for r in nores deep96; do
  MPLBACKEND=Agg "$PY" scripts/plot_run.py "$S/$r" --plotly-dir "$S" >"$tmp/plot.log" 2>&1 ||
    { cat "$tmp/plot.log" >&2; fail "plot_run.py $r"; }
done
MPLBACKEND=Agg "$PY" scripts/plot_compare.py "$S" --out "$S/compare" --plotly-dir "$S" >"$tmp/plot.log" 2>&1 ||
  { cat "$tmp/plot.log" >&2; fail "plot_compare.py"; }
VIEWS=("$S/res/plots/view.html" "$S/nores/plots/view.html" "$S/deep96/plots/view.html" "$S/compare/view.html")
for v in "${VIEWS[@]}"; do [[ -s "$v" ]] || fail "no view written: $v"; done
((fails == 0)) || { echo "check_views: $fails check(s) failed" >&2; exit 1; }

# Static: each page loads plotly.js from one file on disk, by a relative path, and nothing from a
# URL; two copies for four views (the lone run's, the shared one); the 96-block view's size bound.
"$PY" - "$S" "$S/deep96/plots/view.html" "${VIEWS[@]}" <<'EOF' || fail "static checks (see above)"
import glob, os, re, sys
from plotly.offline import get_plotlyjs
plotly_js = get_plotlyjs()
for v in sys.argv[3:]:
    page = open(v, encoding="utf-8").read()
    assert plotly_js[:2000] not in page, f"{v} embeds plotly.js"
    srcs = re.findall(r'<script src="([^"]*)"', page)
    assert len(srcs) == 1 and not os.path.isabs(srcs[0]), f"{v}: scripts loaded {srcs}, expected one relative path"
    lib = os.path.join(os.path.dirname(v), srcs[0])
    assert open(lib, encoding="utf-8").read() == plotly_js, f"{v}: {lib} is not plotly.js"
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page), f"{v} refers to a URL"
    assert "<link" not in page, f"{v} has a <link>"
copies = sorted(os.path.relpath(p, sys.argv[1])
                for p in glob.glob(os.path.join(sys.argv[1], "**", "plotly-*.js"), recursive=True))
print(f"check_views: {len(sys.argv) - 3} views, plotly.js copies: {' '.join(copies)}")
assert len(copies) == 2, "the views plotted with --plotly-dir do not share one copy of plotly.js"
size = os.path.getsize(sys.argv[2])
print(f"check_views: the 96-block view is {size / 1e6:.3f} MB (plotly.js, {len(plotly_js) / 1e6:.1f} MB, apart)")
assert size < 1e6, "the 96-block view is over its bound (1 MB beside plotly.js)"
EOF

# render FILE: the DOM after the load event (the page's check and any probe have run) into FILE.dom.
render() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 \
    --user-data-dir="$tmp/chrome-profile" --dump-dom "file://$1" 2>"$tmp/chromium.err" >"$1.dom"
}
# drawn DOM: every chart drawn, no script error and no network request, by the page's #view-check.
drawn() {
  "$PY" - "$1" <<'EOF'
import re, sys
m = re.search(r'id="view-check" data-charts="(\d+)" data-rendered="(\d+)" data-errors="([^"]*)" '
              r'data-network="([^"]*)"', open(sys.argv[1]).read())
assert m, "no #view-check counts in the rendered page (its script did not run?)"
charts, drawn, errors, network = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
print(f"check_views: {sys.argv[1]}: {drawn} of {charts} charts drawn, script errors: {errors or 'none'}, "
      f"network requests: {network or 'none'}")
assert charts >= 3 and drawn == charts and not errors and not network
EOF
}

# probe VIEW RUN_DIR BLOCK: a copy of VIEW with view_probe.js renders with every chart drawn, and
# its hover values equal RUN_DIR's metrics.jsonl.
probe() {
  "$PY" - "$1" "$1.probe.html" "$3" <<'EOF'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
js = open("tests/integration/view_probe.js").read().replace("BLOCK", sys.argv[3])
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", f"<script>{js}</script></body>"))
EOF
  render "$1.probe.html"
  drawn "$1.probe.html.dom" || { tail -5 "$tmp/chromium.err" >&2; return 1; }
  "$PY" - "$1.probe.html.dom" "$2" "$3" <<'EOF'
import html, json, re, sys
dom, run_dir, block = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
m = re.search(r'<div id="view-probe"([^>]*)>', dom)
assert m, "no #view-probe in the page (the probe did not run)"
attrs = {k: html.unescape(v) for k, v in re.findall(r'data-([-\w]+)="([^"]*)"', m.group(1))}
assert "error" not in attrs, f"the probe failed: {attrs['error']}"
recs = [json.loads(line) for line in open(f"{run_dir}/metrics.jsonl")]
last_eval = [r for r in recs if r.get("kind") == "eval"][-1]
shown = re.search(r"step (\d+): ([-0-9.e+]+)$", attrs["loss"])
assert shown, f"loss hover text {attrs['loss']!r}"
assert int(shown.group(1)) == last_eval["step"] and float(shown.group(2)) == float(f"{last_eval['val_loss']:.6g}"), \
    f"the page shows val loss {attrs['loss']!r}, metrics.jsonl has {last_eval['val_loss']} at step {last_eval['step']}"
print(f"check_views: hover shows val loss {shown.group(2)} at step {shown.group(1)}; metrics.jsonl {last_eval['val_loss']}")
if "picked" in attrs:
    run, kept, others = attrs["picked"].split()
    assert int(kept) > 0 and int(others) == 0, f"picking {run}: {kept} of its traces and {others} others visible"
    print(f"check_views: sweep view, {run} picked: {kept} of its traces shown, {others} of other runs")
# the gradient heatmap: the run's own, or in the sweep view its first run's
layers = [r for r in recs if r.get("kind") == "layers"][-1]
shown = re.search(r"block (\d+)step (\d+)grad_norm ([-0-9.e+]+)$", attrs["grad"])
assert shown, f"heatmap hover text {attrs['grad']!r}"
want = float(f"{layers['grad_norm'][block]:.5g}")
assert (int(shown.group(1)), int(shown.group(2))) == (block, layers["step"]) and float(shown.group(3)) == want, \
    f"the page shows {attrs['grad']!r}; metrics.jsonl has grad_norm[{block}] {layers['grad_norm'][block]}"
print(f"check_views: heatmap hover shows grad_norm {shown.group(3)} at block {block}, step {layers['step']}; "
      f"metrics.jsonl {layers['grad_norm'][block]}")
EOF
}
probe "$S/res/plots/view.html" "$S/res" 1 || fail "res view: charts or hover values (see above)"
probe "$S/nores/plots/view.html" "$S/nores" 0 || fail "nores view: charts or hover values (see above)"
probe "$S/deep96/plots/view.html" "$S/deep96" 95 || fail "deep96 view: charts or hover values (see above)"
# The sweep view's first run: runs sorted by wiring, depth, name (views.sweep_sections).
first="$("$PY" -c 'import sys; from stacklab import runlog, views
runs = sorted(runlog.find_runs([sys.argv[1]]), key=lambda r: (r.wiring, r.n_layer or 0, views.run_key(r)))
print(views.run_key(runs[0]))' "$S" 2>/dev/null)"
probe "$S/compare/view.html" "$S/$first" 0 || fail "sweep view: charts, hover values or the run picker (see above)"

# The check must catch a script error, a chart that cannot draw, a network request and a view
# whose plotly.js is not where it looks. The first three are written beside the view (its plotly.js
# found); the second has its plot call skipped (no error), so one chart is never drawn.
V="$S/res/plots"
sed 's|</body>|<script>notAFunction();</script></body>|' "$V/view.html" >"$V/error.html"
"$PY" - "$V/view.html" "$V/undrawn.html" <<'EOF'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
assert 'if (document.getElementById("' in page, "the chart calls are not where this check expects them"
open(sys.argv[2], "w", encoding="utf-8").write(page.replace('if (document.getElementById("', 'if (false && document.getElementById("', 1))
EOF
# The third: an image fetched over the network (a port nothing listens on: the failed fetch counts).
sed 's|</body>|<img src="http://127.0.0.1:9/x.png"></body>|' "$V/view.html" >"$V/network.html"
# The fourth: the sweep view moved away from the folder of its plotly.js; the page must say so.
cp "$S/compare/view.html" "$tmp/moved.html"
for bad in "$V/error" "$V/undrawn" "$V/network" "$tmp/moved"; do
  render "$bad.html"
  drawn "$bad.html.dom" 2>/dev/null && fail "a view with $(basename "$bad") (see check_views.sh) passed"
done
grep -q 'id="plotly-missing"' "$tmp/moved.html.dom" || fail "a view without its plotly.js does not say so"

if ((fails)); then
  echo "check_views: $fails check(s) failed" >&2
  exit 1
fi
echo "check_views: PASS"
