#!/usr/bin/env bash
# Checks report.html end to end: a tiny real study (`build/stacklab sweep`: a 2-depth probe sweep
# and a 2-seed train sweep of a 16-wide model, 6 steps), its figures (plot_compare.py) and its
# report (report.py), then renders report.html in headless Chromium (Debian's `chromium`): the
# page loads, its inline script counts every <img> that decoded (complete, naturalWidth > 0), and
# that count must equal the number of figures in report.md (the count is written at the page's foot).
# The page must be self-contained (no http(s) URL in a src or href, no <link>), hold every table of
# the Markdown, and open (under its headline figure) with the summary: a row per finding (1-5), rule P's, and per claim of
# claims.json and claims_round2.json that ran (those not run: one line under the table), each
# linking to its section; in the rendered page every in-page link must resolve to an element;
# every HTML view the plotting wrote (figures/**/view.html) is linked by its relative path.
# Then one figure is broken on purpose, and one link's target renamed, and each check must fail.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 77 skip (no binary, numpy or chromium), 1 fail.
# Not here: the report's numbers (check_report.sh), the tiers (check_full_tier.sh).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${STACKLAB_BIN:-build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_report_html: SKIPPED: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
# find_python.sh tries $STACKLAB_PYTHON (test.sh sets it) first, then Debian's python3.
PY="$(bash scripts/find_python.sh --plot)" || { echo "check_report_html: SKIPPED: no Python with numpy and matplotlib" >&2; exit 77; }
CHROMIUM="${STACKLAB_CHROMIUM:-$(command -v chromium || true)}"
[[ -x "$CHROMIUM" ]] || { echo "check_report_html: SKIPPED: no chromium (apt-get install chromium; scripts/setup.sh installs it)" >&2; exit 77; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_report_html: FAIL: $*" >&2; fails=$((fails + 1)); }
BASE="$PWD/configs/base.json"
TINY='"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "model.norm": "layernorm",
      "train.batch_size": 2, "train.max_iters": 6, "train.eval_interval": 2, "train.eval_iters": 1,
      "train.ckpt_interval": 0, "log.layer_interval": 2, "log.log_interval": 2'
VARIANTS='[{"name": "pre-res", "model.norm_position": "pre", "model.residual": true},
           {"name": "pre-nores", "model.norm_position": "pre", "model.residual": false}]'
cat >"$tmp/probe_grid.json" <<EOF
{"name": "probe_grid", "base": "$BASE", "mode": "probe", "out_dir": "$tmp/study/probe_grid", "seeds": [0, 1],
 "overrides": {$TINY}, "grid": {"model.n_layer": [1, 2]}, "variants": $VARIANTS}
EOF
cat >"$tmp/train_grid.json" <<EOF
{"name": "train_grid", "base": "$BASE", "mode": "train", "out_dir": "$tmp/study/train_grid", "seeds": [0, 1],
 "overrides": {$TINY}, "grid": {"model.n_layer": [1, 2]}, "variants": $VARIANTS}
EOF
"$BIN" sweep "$tmp/probe_grid.json" "$tmp/train_grid.json" --jobs 2 >"$tmp/sweep.log" 2>&1 ||
  { cat "$tmp/sweep.log" >&2; fail "stacklab sweep"; }
S="$tmp/study"
for s in probe_grid train_grid; do
  MPLBACKEND=Agg "$PY" scripts/plot_compare.py "$S/$s" --out "$S/figures/$s" >"$tmp/plot_$s.log" 2>&1 ||
    { cat "$tmp/plot_$s.log" >&2; fail "plot_compare.py $s"; }
done
"$PY" scripts/report.py "$S" >"$tmp/report.log" 2>&1 || { cat "$tmp/report.log" >&2; fail "report.py exited non-zero"; }
[[ -s "$S/report.html" ]] || { fail "no report.html beside report.md"; echo "check_report_html: $fails check(s) failed" >&2; exit 1; }

# Static checks: self-contained, the Markdown's figures, tables and findings all in the page.
"$PY" - "$S/report.md" "$S/report.html" "$S" <<'EOF' || fail "report.html content (see above)"
import glob, os, re, sys
md, page, root = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page), "report.html refers to a URL"
assert "<link" not in page, "report.html has a <link> (not self-contained)"
figs_md = re.findall(r"^!\[", md, re.M)
pngs = glob.glob(os.path.join(root, "figures", "**", "*.png"), recursive=True)
imgs = re.findall(r'<img [^>]*src="data:image/png;base64,', page)
assert len(figs_md) == len(pngs) == len(imgs) > 0, f"figures: {len(figs_md)} in md, {len(pngs)} PNGs, {len(imgs)} <img>"
assert page.count("<figcaption>") == len(imgs), "a figure without a caption"
tables_md = len(re.findall(r"^\|---", md, re.M))
assert page.count("<table>") == tables_md, f"{page.count('<table>')} tables in html, {tables_md} in md"
for fid in range(1, 6):  # numbered as in README.md; a findings row is marked seen or notseen
    assert re.search(f'<tr class="(not)?seen"><td><a href="#finding-{fid}">{fid}</a></td>', page), \
        f"finding {fid} missing from report.html's summary"
assert page.index('id="summary"') < page.index('id="finding-1"'), "the summary does not open the report"
views = sorted(os.path.relpath(v, root) for v in glob.glob(os.path.join(root, "figures", "**", "view.html"), recursive=True))
assert views, "no view.html under figures/ (plot_compare.py writes one per sweep; is python3-plotly installed?)"
for v in views:  # each sweep's view (and each plotted run's) linked by its relative path
    assert f'<a href="{v}">' in page, f"report.html does not link {v}"
print(f"check_report_html: static ok: {len(imgs)} embedded figures, {tables_md} tables, {len(views)} views linked")
EOF

# render FILE: the page's DOM after the load event (its script has written the counts) into FILE.dom.
render() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 \
    --user-data-dir="$tmp/chrome-profile" --dump-dom "file://$1" 2>"$tmp/chromium.err" >"$1.dom"
}
# figures_ok FILE N: the page rendered and all N figures decoded.
figures_ok() {
  local got loaded total
  render "$1"
  got="$(sed -n 's/.*id="figure-check" data-loaded="\([-0-9]*\)" data-total="\([0-9]*\)".*/\1 \2/p' "$1.dom" | head -n 1)"
  read -r loaded total <<<"$got"
  echo "check_report_html: $(basename "$1"): ${loaded:-?} of ${total:-?} figures loaded (expected $2)"
  [[ -n "$got" && "$loaded" == "$2" && "$total" == "$2" ]]
}
N="$(grep -c '<img ' "$S/report.html")"
figures_ok "$S/report.html" "$N" || { tail -5 "$tmp/chromium.err" >&2; fail "report.html: not every figure loaded in chromium"; }

# The check must catch a broken figure: the first image's PNG data replaced by a truncated header.
"$PY" - "$S/report.html" "$tmp/broken.html" <<'EOF'
import re, sys
page = open(sys.argv[1]).read()
page = re.sub(r'src="data:image/png;base64,[^"]*"', 'src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"', page, count=1)
open(sys.argv[2], "w").write(page)
EOF
if figures_ok "$tmp/broken.html" "$N"; then
  fail "a report.html with a broken figure passed the chromium check"
fi

# links_ok FILE: in the rendered page (FILE.dom), the summary holds a row per finding 1-5, rule P and
# each claim of claims.json and claims_round2.json that ran (all 12 when the claims ran; the others in the
# one line under the table), in that order, each row's link names its section, and every in-page link
# resolves (the page's script counted them with getElementById).
links_ok() {
  "$PY" - "$1.dom" configs/experiments/claims.json configs/experiments/claims_round2.json <<'EOF'
import json, re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'id="link-check" data-resolved="(-?\d+)" data-links="(\d+)" data-broken="([^"]*)"', dom)
assert m, "no link-check counts in the rendered page (its script did not run?)"
ok, total, broken = int(m.group(1)), int(m.group(2)), m.group(3)
assert total > 0 and ok == total, f"{ok} of {total} in-page links resolve; broken: {broken}"
summary = dom.split('id="summary"', 1)[1].split("</table>", 1)[0]
rows = re.findall(r'<tr class="(seen|notseen|notrun)"><td><a href="#([-\w]+)">([^<]+)</a></td>', summary)
claims = json.load(open(sys.argv[2]))["claims"] + json.load(open(sys.argv[3]))["claims"]  # round 1, round 2
# A claim this tier did not run is in the one line under the table (how to run it), not a row.
after = dom.split('id="summary"', 1)[1].split("<h2", 1)[0]
line = next((p for p in re.findall(r"<p>(.*?)</p>", after, re.S) if "not run at this tier" in p), "")
ran = [f"claim-{c['id'].lower()}" for c in claims if f'href="#claim-{c["id"].lower()}"' in summary]
if len(ran) == len(claims):  # the claims ran: 12 rows (round 1, round 2), no line
    assert not line, f"every claim has a row, yet a not-run line: {line!r}"
else:
    assert "--claims" in line, f"claims neither in rows nor in the one line: {line!r}"
    assert ran or ("claims.json" in line and "claims_round2.json" in line), f"the line misses a round: {line!r}"
want = [f"finding-{i}" for i in range(1, 6)] + ["pre-post"] + ran
got = [target for _, target, _ in rows]
assert got == want, f"summary rows link to {got}, expected {want}"
for target in got:
    assert re.search(f'id="{target}"', dom), f"the summary links to #{target}, which no element has"
print(f"check_report_html: {ok} of {total} links resolve; summary rows: {', '.join(t for _, _, t in rows)}")
EOF
}
render "$S/report.html"
links_ok "$S/report.html" || fail "report.html: the summary or its links (see above)"
# The check must catch a link whose target is gone: finding 3's section renamed.
sed 's/id="finding-3"/id="finding-3-renamed"/' "$S/report.html" >"$tmp/badlink.html"
render "$tmp/badlink.html"
if links_ok "$tmp/badlink.html" 2>/dev/null; then
  fail "a report.html with a link to a missing section passed the link check"
fi

if ((fails)); then
  echo "check_report_html: $fails check(s) failed" >&2
  exit 1
fi
echo "check_report_html: PASS"
