#!/usr/bin/env bash
# Checks the study's full tier: configs/experiments/full/ is what `scripts/tier.py full-configs`
# derives from the quick tier; `stacklab sweep configs/experiments/full/*.json --dry-run` lists the
# expected number of runs, every wiring x depth of train_grid at the 4 rates with >= 5 seeds and
# twice the quick horizon (the claims' sweeps keep their own rates, the map and C1/C5 gain L=96); then a real full tier scaled down (`reproduce.sh --full --tiny`, the
# same code path: depths capped at 2, 2 seeds, 2 rates, 6 steps) prints its size, writes
# report.md, report.html and findings.json with the seed and rate structure, and a second
# invocation resumes: it runs nothing new. Bad flags exit 2. Last, the quick tier as a user starts it
# (default output directory), scaled down. Both tiers' text sweeps read tiny Shakespeare through the
# data step: from STACKLAB_DATA_LOCAL (CI sets it) or else the checked copy this tree holds; with
# neither, the --tiny path must skip them loudly (and in CI, CI=true, fail).
# Run by scripts/test.sh from the repo root (about a minute). Exit 0 pass, 77 skip, 1 fail.
# Not here: the report's numbers (check_report.sh), the page in a browser (check_report_html.sh).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"  # the Python below imports the package stacklab
BIN="${STACKLAB_BIN:-build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_full_tier: SKIPPED: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
BIN="$(realpath "$BIN")"
# find_python.sh tries $STACKLAB_PYTHON (test.sh sets it) first, then Debian's python3.
PY="$(bash scripts/find_python.sh --plot)" || { echo "check_full_tier: SKIPPED: no Python with numpy and matplotlib" >&2; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_full_tier: FAIL: $*" >&2; fails=$((fails + 1)); }

if [[ -z "${STACKLAB_DATA_LOCAL:-}" && -f data/shakespeare_char/input.txt ]]; then
  export STACKLAB_DATA_LOCAL="$PWD/data/shakespeare_char"  # the data step checks it as any local copy
fi
# The full tier's text sweeps read tiny Shakespeare, and `stacklab sweep --dry-run` checks every
# run's data.path: the data step runs first (from STACKLAB_DATA_LOCAL, or the checked copy here).
# In CI its failure fails the check; elsewhere, with no copy to be had, the check is skipped.
if ! "$PY" scripts/get_data.py shakespeare_char >"$tmp/data.log" 2>&1; then
  cat "$tmp/data.log" >&2
  [[ "${CI:-}" == true ]] || { echo "check_full_tier: SKIPPED: no tiny Shakespeare (set STACKLAB_DATA_LOCAL=DIR)" >&2; exit 77; }
  fail "the data step (scripts/get_data.py shakespeare_char) failed"
fi

# ---- the full tier's files and expansion ------------------------------------------------------
"$PY" scripts/tier.py full-configs --check || fail "configs/experiments/full/ is out of date with the quick tier"
"$BIN" sweep configs/experiments/full/*.json --dry-run >"$tmp/dry.log" 2>&1 || { cat "$tmp/dry.log" >&2; fail "full tier --dry-run"; }
"$PY" - "$tmp/dry.log" <<'EOF' || fail "full tier expansion (see above)"
import glob, json, math, re, sys
from stacklab import tier
log = open(sys.argv[1]).read()
total = 0
for path in sorted(glob.glob("configs/experiments/full/*.json")):
    s = json.load(open(path))
    pts = math.prod(len(v) for v in s.get("grid", {}).values()) * max(1, len(s.get("variants", [])))
    n = pts * (len(s["seeds"]) if s.get("mode", "train") == "train" else 1)
    m = re.search(rf"^sweep {s['name']}: (\d+) (train|probe) runs?\b", log, re.M)
    assert m and int(m.group(1)) == n, f"{path}: expected {n} runs, dry-run says {m.group(0) if m else 'nothing'}"
    total += n
    if s["name"] in tier.FULL_ADD_DEPTHS:
        assert set(tier.FULL_ADD_DEPTHS[s["name"]]) <= set(s["grid"]["model.n_layer"]), f"{path}: no L=96"
    if s.get("mode", "train") == "train":
        assert len(s["seeds"]) >= 5, f"{path}: {len(s['seeds'])} seeds"
        assert s["seeds"][0] == json.load(open(path.replace("/full/", "/")))["seeds"][0], f"{path}: first seed"
        q = json.load(open(path.replace("/full/", "/")))
        if s["name"] in tier.OWN_RATES:  # the claims' rates (stability map, C6, C7, C4r2, C7r2), kept as written
            assert s.get("grid", {}).get("optim.learning_rate") == q.get("grid", {}).get("optim.learning_rate"), path
            assert s.get("variants") == q.get("variants"), f"{path}: variants differ from the quick file's"
        else:
            assert sorted(s["grid"]["optim.learning_rate"]) == [0.0003, 0.001, 0.003, 0.01], path
        assert s["overrides"]["train.max_iters"] == 2 * tier.base_value(path.replace("/full/", "/"), q, "train.max_iters"), \
            f"{path}: train.max_iters is not twice the quick tier's"
assert re.search(rf"in one pool: {total} runs to do", log), f"the pool does not list {total} runs"
# Every wiring x depth of train_grid: the 4 rates, >= 5 seeds each.
cells = {}
for rid in re.findall(r"^\s+train_grid/(\S+)\s", log, re.M):
    m = re.match(r"L(\d+)-(.+)-learning_rate([0-9.e-]+)-s(\d+)$", rid)
    assert m, f"unexpected run id {rid}"
    cells.setdefault((m.group(2), int(m.group(1))), {}).setdefault(float(m.group(3)), set()).add(int(m.group(4)))
quick = json.load(open("configs/experiments/train_grid.json"))
depths = set(quick["grid"]["model.n_layer"]) | set(tier.FULL_ADD_DEPTHS.get("train_grid", []))  # + L=96
assert {d for _, d in cells} == depths and 96 in depths, f"train_grid depths {sorted({d for _, d in cells})}"
assert len(cells) == len(quick["variants"]) * len(depths), f"{len(cells)} wiring x depth cells"
for key, rates in cells.items():
    assert sorted(rates) == [0.0003, 0.001, 0.003, 0.01], f"{key}: rates {sorted(rates)}"
    assert all(len(s) >= 5 for s in rates.values()), f"{key}: seeds {rates}"
print(f"check_full_tier: expansion ok: {total} runs, {len(cells)} wiring x depth cells of train_grid at 4 rates x >= 5 seeds")
EOF

# ---- bad flags -----------------------------------------------------------------------------------
for args in "--bogus" "--jobs" "--executor pbs" "--slurm-time 1:00:00"; do
  rc=0
  # shellcheck disable=SC2086
  bash scripts/reproduce.sh $args >"$tmp/bad.log" 2>&1 || rc=$?
  ((rc == 2)) && grep -q "reproduce: " "$tmp/bad.log" || { cat "$tmp/bad.log" >&2; fail "reproduce.sh $args: exit $rc, expected 2 with a message"; }
done
# The help whole, then searched: `--help | grep -q` under pipefail fails whenever grep exits before
# the help is written out (SIGPIPE, exit 141), as it did once the help printed the tier lists.
help_text="$(bash scripts/reproduce.sh --help 2>&1)" || fail "reproduce.sh --help exited non-zero"
grep -q -- "--full" <<<"$help_text" || fail "reproduce.sh --help does not list --full"

# ---- the text cannot be brought: the tier stops before any sweep, naming the local-copy option ----
# (a copy of scripts/ and configs/ without data/, the local copy pointing at an empty folder; --tiny
# skips the text sweeps outside CI, below, but not in CI)
mkdir -p "$tmp/nodata/empty" "$tmp/nodata/data" && cp -r scripts configs "$tmp/nodata/" &&
  cp data/datasets.json "$tmp/nodata/data/"  # the data step's manifest of data sets
for args in "" "--tiny"; do
  rc=0
  # shellcheck disable=SC2086
  CI=true STACKLAB_DATA_LOCAL="$tmp/nodata/empty" STACKLAB_BIN="$BIN" \
    bash "$tmp/nodata/scripts/reproduce.sh" $args --out "$tmp/nodata/out" >"$tmp/nodata.log" 2>&1 || rc=$?
  ((rc == 1)) && grep -q "reproduce: ERROR: the data step could not bring tiny Shakespeare.*STACKLAB_DATA_LOCAL" \
    "$tmp/nodata.log" || { cat "$tmp/nodata.log" >&2; fail "reproduce.sh $args without the text: exit $rc, expected 1 naming STACKLAB_DATA_LOCAL"; }
  [[ -z "$(find "$tmp/nodata/out" -name manifest.json 2>/dev/null)" ]] || fail "reproduce.sh $args ran sweeps without the text"
done

# ---- a scaled-down real full tier, then a resume -------------------------------------------------
OUT="$tmp/full"
STACKLAB_BIN="$BIN" bash scripts/reproduce.sh --full --tiny --jobs 2 --out "$OUT" >"$tmp/run1.log" 2>&1 ||
  { tail -20 "$tmp/run1.log" >&2; fail "reproduce.sh --full --tiny exited non-zero"; }
grep -E "^reproduce: size: [0-9]+ runs \([0-9]+ probes, [0-9]+ trainings\), 0 done already" "$tmp/run1.log" >/dev/null ||
  fail "the first invocation did not print its size with 0 done"
grep -E "^reproduce: estimated [0-9.e+-]+ core-hours in all" "$tmp/run1.log" >/dev/null || fail "no core-hours estimate"
for f in report.md report.html findings.json; do [[ -s "$OUT/$f" ]] || fail "no $f"; done
"$PY" - "$OUT" <<'EOF' || fail "findings.json / report.md structure (see above)"
import json, os, sys
root = sys.argv[1]
fj = json.load(open(os.path.join(root, "findings.json")))
md = open(os.path.join(root, "report.md")).read()
assert [f["id"] for f in fj["findings"]] == [1, 2, 3, 4, 5], [f["id"] for f in fj["findings"]]
assert fj["learning_rates"]["rates"] == [0.0003, 0.01], fj["learning_rates"]["rates"]
pts = [p for p in fj["points"] if p["sweep"] == "train_grid"]
assert pts and all(p["seeds"] == [0, 1] for p in pts), "every train_grid point should have seeds 0 and 1"
cells = {}
for p in pts:
    cells.setdefault((p["wiring"], p["depth"]), set()).add(p["learning_rate"])
assert len(cells) == 12 and all(r == {0.0003, 0.01} for r in cells.values()), cells
assert all(p["final_val_loss"]["n"] == 2 and p["final_val_loss"]["ci"] for p in pts), "no 2-seed interval"
esc = fj["escape"]["points"]
assert len(esc) == len(pts) and all(len(e["seeds"]) == 2 for e in esc), "escape: every point, every seed"
assert all(("escape_step" in s and "censored" in s) for e in esc for s in e["seeds"])
c = next(f for f in fj["findings"] if f["id"] == 3)
assert any("at lr " in m and "best of 2" in m for m in c["measured"]), "finding 3 does not state the best rate per depth"
for head in ("## Learning rates", "## Escape time", "## Numeric path", "| lr 0.0003 | lr 0.01 |", "n=2"):
    assert head in md, f"report.md lacks {head!r}"
print(f"check_full_tier: report ok: {len(pts)} train_grid points x 2 seeds, rates {fj['learning_rates']['rates']}")
EOF
stamp="$tmp/stamp"; touch "$stamp"
STACKLAB_BIN="$BIN" bash scripts/reproduce.sh --full --tiny --jobs 2 --out "$OUT" >"$tmp/run2.log" 2>&1 ||
  { tail -20 "$tmp/run2.log" >&2; fail "the second reproduce.sh --full --tiny exited non-zero"; }
n_runs="$(sed -nE 's/^reproduce: size: ([0-9]+) runs.*/\1/p' "$tmp/run1.log")"
grep -E "^reproduce: size: $n_runs runs .*, $n_runs done already, 0 to run" "$tmp/run2.log" >/dev/null ||
  { grep "size:" "$tmp/run2.log" >&2; fail "the second invocation did not find all $n_runs runs done"; }
grep -q "in one pool: 0 runs to do" "$tmp/run2.log" || { grep "pool" "$tmp/run2.log" >&2; fail "the resume had runs to do"; }
changed="$(find "$OUT" \( -name metrics.jsonl -o -name probe.json \) -newer "$stamp" | head -n 3)"
[[ -z "$changed" ]] || fail "the resume rewrote run files: $changed"
[[ "$(grep -c '"stage": "start"' "$OUT/timing.jsonl")" == 2 ]] || fail "timing.jsonl should hold 2 invocations"
grep -q "invocation 2 of reproduce.sh (full tier)" "$OUT/report.md" || fail "report.md does not list the second invocation"

# ---- the quick tier as a user starts it: no flags but --tiny, default output directory -----------
# (in a copy of scripts/ and configs/, so the default runs/deep_stacking/ of this tree is not touched)
mkdir -p "$tmp/repo/data" && cp -r scripts configs "$tmp/repo/" && cp data/datasets.json "$tmp/repo/data/"
STACKLAB_BIN="$BIN" bash "$tmp/repo/scripts/reproduce.sh" --tiny >"$tmp/quick.log" 2>&1 ||
  { tail -20 "$tmp/quick.log" >&2; fail "reproduce.sh --tiny (quick tier, default --out) exited non-zero"; }
[[ -s "$tmp/repo/runs/deep_stacking/report.md" && -s "$tmp/repo/runs/deep_stacking/report.html" ]] ||
  fail "the quick tier did not write runs/deep_stacking/report.md and report.html"
for s in probe_grid train_grid lr_grid map_core escape_law_core; do
  [[ -f "$tmp/repo/runs/deep_stacking/$s/manifest.json" ]] || fail "the quick tier did not run $s"
done
Q="$tmp/repo/runs/deep_stacking"
# The escape law's core (issue 45 part 5): its paragraph under the headline, its figure, its results table
grep -q "^\*\*The escape law's core\*\*: " "$Q/report.md" || fail "report.md has no paragraph on the escape law's core"
[[ -s "$Q/figures/escape_law/escape_law_core.png" ]] || fail "the report drew no escape law figure"
[[ "$(wc -l <"$Q/results/escape_law_core.csv" 2>/dev/null)" == 9 ]] ||
  fail "results/escape_law_core.csv should hold 8 runs (--tiny: 2 wirings x L = 1, 2 x 2 seeds) and its header"
"$PY" scripts/report.py "$Q" --results-to "$tmp/results" >/dev/null 2>&1 &&
  fail "report.py --results-to copied the tables of a --tiny study"
grep -q "^| \[P\](#pre-post) |" "$Q/report.md" || fail "the quick tier's summary has no row for rule P"
if [[ -n "${STACKLAB_DATA_LOCAL:-}" ]]; then  # the tiny text point ran, and the report shows it beside the synthetic one
  [[ -f "$Q/text_point/manifest.json" ]] || fail "the quick tier did not run its text point"
  grep -q "^The text point: L=2 at lr 0.001" "$Q/report.md" || fail "report.md does not show the text point"
  grep -q "^| \`pre-layernorm-res\` | [0-9]" "$Q/report.md" || fail "the text point's table has no synthetic loss"
  for s in text_probe text_train text_map; do
    [[ -f "$OUT/$s/manifest.json" ]] || fail "the full tier did not run $s"
  done
  grep -q "^Per finding, the synthetic and the text result" "$OUT/report.md" || fail "the full tier's report has no text findings"
else
  grep -q "SKIPPING the text sweeps" "$tmp/quick.log" || fail "without the text, --tiny did not say it skipped the text sweeps"
fi

# ---- the convergence study, scaled down: its extension continued by `stacklab sweep --on-change extend` ----
C="$tmp/converge"
STACKLAB_BIN="$BIN" bash "$tmp/repo/scripts/reproduce.sh" --tiny --converge --out "$C" >"$tmp/converge.log" 2>&1 ||
  { tail -20 "$tmp/converge.log" >&2; fail "reproduce.sh --tiny --converge exited non-zero"; }
long_runs=$(find "$C/converge_synth_long" -mindepth 1 -maxdepth 1 -type d | wc -l)
((long_runs > 0)) || fail "--converge made no converge_synth_long runs"
for r in "$C"/converge_synth_long/*/; do
  grep -q '"kind": *"resume"' "$r/metrics.jsonl" || fail "$r was not continued from its converge_synth copy (no resume record)"
  "$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(s["status"] != "completed" or s["steps"] != 24)' \
    "$r/summary.json" || fail "$r did not complete at the extension's horizon (24 steps)"
done
"$BIN" sweep --status "$C/converge_synth_long" >/dev/null || fail "sweep --status does not count the extended runs as completed"
grep -q '^## .*onvergence' "$C/report.md" || fail "report.md has no convergence section"
# A study stopped after an extension's copy was made and before it was continued (a copy still at the
# source's horizon) resumes when the script runs again: its size step lists that copy as the extension
# sweep runs it (--on-change extend), not as a changed run (which made it stop, before the fix).
r1="$(find "$C/converge_synth_long" -mindepth 1 -maxdepth 1 -type d | sort | head -n 1)"
rm -rf "$r1" && cp -a "$C/converge_synth/$(basename "$r1")" "$r1" && rm -f "$r1/train.lock"
STACKLAB_BIN="$BIN" bash "$tmp/repo/scripts/reproduce.sh" --tiny --converge --out "$C" >"$tmp/converge2.log" 2>&1 ||
  { tail -20 "$tmp/converge2.log" >&2; fail "reproduce.sh --tiny --converge did not resume a copy not yet extended"; }
grep -q "^reproduce: size: .* 1 to run" "$tmp/converge2.log" || fail "the resumed study's size does not count the one copy to extend"
"$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(s["status"] != "completed" or s["steps"] != 24)' \
  "$r1/summary.json" || fail "$r1 was not continued to the extension's horizon when the study resumed"
[[ "$(grep -m1 -n '^!\[' "$C/report.md" | cut -d: -f1)" -lt "$(grep -m1 -n '^|' "$C/report.md" | cut -d: -f1)" ]] ||
  fail "report.md does not open with its headline figure before its first table"

if ((fails)); then
  echo "check_full_tier: $fails check(s) failed" >&2
  exit 1
fi
echo "check_full_tier: PASS"
