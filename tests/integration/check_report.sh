#!/usr/bin/env bash
# Checks scripts/report.py end to end on a tiny real study written by `build/stacklab sweep` into
# a temp dir (a 3-depth probe sweep and an 8-run train sweep of a 16-wide model, 4 steps, 2 seeds):
# under its headline figure and paragraph (tests/python/test_report_convergence.py), the report opens
# with the summary, a row per finding (the numbers that decide it, computed, and a
# seen/not-seen mark) and per claim, each linked to its section, under which every number of the
# finding is folded; a run made diverged as the trainer records it (summary.json status "diverged", its last loss 8324.9)
# and one made incomplete are left out of every number, listed, and counted in their table cells;
# a completed point whose 2 seeds are far apart has its interval clipped at 0, not below. The seed
# statistics against hand values are unit tests: tests/python/test_study_stats.py.
# Run by scripts/test.sh from the repo root. Exit 0 pass, 77 skip (no binary or no numpy), 1 fail.
# Not here: whether the findings hold at full scale (that is scripts/reproduce.sh's report).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${STACKLAB_BIN:-build/stacklab}"
[[ -x "$BIN" ]] || { echo "check_report: SKIPPED: $BIN not built (run scripts/setup.sh)" >&2; exit 77; }
# find_python.sh tries $STACKLAB_PYTHON (test.sh sets it) first, then Debian's python3.
PY="$(bash scripts/find_python.sh --plot)" || { echo "check_report: SKIPPED: no Python with numpy and matplotlib" >&2; exit 77; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "check_report: FAIL: $*" >&2; fails=$((fails + 1)); }
BASE="$PWD/configs/base.json"
TINY='"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "model.norm": "layernorm",
      "train.batch_size": 2, "train.max_iters": 4, "train.eval_interval": 2, "train.eval_iters": 1,
      "train.ckpt_interval": 0, "log.layer_interval": 2, "log.log_interval": 2'
VARIANTS='[{"name": "pre-res", "model.norm_position": "pre", "model.residual": true},
           {"name": "pre-nores", "model.norm_position": "pre", "model.residual": false}]'
cat >"$tmp/probe_grid.json" <<EOF
{"name": "probe_grid", "base": "$BASE", "mode": "probe", "out_dir": "$tmp/study/probe_grid", "seeds": [0, 1],
 "overrides": {$TINY}, "grid": {"model.n_layer": [1, 2, 4]},
 "variants": [{"name": "pre-res", "model.norm_position": "pre", "model.residual": true},
              {"name": "post-res", "model.norm_position": "post", "model.residual": true},
              {"name": "none-nores", "model.norm": "none", "model.residual": false},
              {"name": "pre-nores", "model.norm_position": "pre", "model.residual": false}]}
EOF
cat >"$tmp/train_grid.json" <<EOF
{"name": "train_grid", "base": "$BASE", "mode": "train", "out_dir": "$tmp/study/train_grid", "seeds": [0, 1],
 "overrides": {$TINY}, "grid": {"model.n_layer": [1, 2]}, "variants": $VARIANTS}
EOF
# Both sweeps in one call, as scripts/reproduce.sh runs them: one pool, a manifest per sweep.
"$BIN" sweep "$tmp/probe_grid.json" "$tmp/train_grid.json" --jobs 2 >"$tmp/sweep.log" 2>&1 ||
  { cat "$tmp/sweep.log" >&2; fail "stacklab sweep probe_grid.json train_grid.json"; }
grep -q "2 sweeps in one pool: 20 runs to do, 2 at once" "$tmp/sweep.log" ||
  { cat "$tmp/sweep.log" >&2; fail "the pooled sweep did not announce its 20 runs"; }
for s in probe_grid train_grid; do
  "$PY" -c "import json, sys; m = json.load(open(sys.argv[1])); \
assert m['name'] == sys.argv[2] and m['runs'] and all(r['status'] == 'completed' for r in m['runs']), m" \
    "$tmp/study/$s/manifest.json" "$s" || fail "$s/manifest.json: not every run completed"
done
# Two sweeps that would write into the same directory are refused before anything runs.
sed 's/"name": "train_grid"/"name": "again"/' "$tmp/train_grid.json" >"$tmp/again.json"
if "$BIN" sweep "$tmp/train_grid.json" "$tmp/again.json" >"$tmp/same.log" 2>&1; then
  fail "two sweeps with one out_dir were accepted"
elif ! grep -q "write to the same out_dir" "$tmp/same.log"; then
  cat "$tmp/same.log" >&2; fail "the same-out_dir error does not say so"
fi

# One run diverged as the trainer records it (status "diverged", its last loss kept: only the
# status may decide), one interrupted before its summary, and one completed seed 10x off its twin.
T="$tmp/study/train_grid"
"$PY" - "$T/L2-pre-layernorm-res-s0/summary.json" "$T/L1-pre-layernorm-nores-s1/summary.json" <<'EOF' ||
import json, sys
s = json.load(open(sys.argv[1]))
s.update(status="diverged", final_val_loss=8324.9001, diverged=True,
         divergence={"step": 2, "reason": "val loss 8324.9 above 10 x ln(vocab_size) = 34.66", "blocks": []})
json.dump(s, open(sys.argv[1], "w"))
s = json.load(open(sys.argv[2]))
s.update(final_val_loss=30.0)  # completed, below the divergence bound; 2 seeds: t-interval reaches below 0
json.dump(s, open(sys.argv[2], "w"))
EOF
  fail "marking a run diverged"
rm -f "$T/L2-pre-layernorm-nores-s0/summary.json"

"$PY" scripts/report.py "$tmp/study" >"$tmp/report.log" 2>&1 || { cat "$tmp/report.log" >&2; fail "report.py exited non-zero"; }
R="$tmp/study/report.md"
[[ -s "$R" ]] || fail "no report.md"
"$PY" - "$R" "$tmp/study/findings.json" <<'EOF' || fail "report content (see above)"
import json, re, sys
md = open(sys.argv[1]).read()
fj = json.load(open(sys.argv[2]))
# The summary: one row per finding, linked to its section, with the numbers that decide it and a
# mark; every measured number folded in <details> under the finding's section.
rows = [l for l in md.splitlines() if re.match(r"\| \[[1-9]\]\(#finding-[1-9]\) \|", l)]
assert [int(r[3]) for r in rows] == [1, 2, 3, 4, 5], f"findings rows, numbered as in README.md: {[r[:20] for r in rows]}"
for r in rows:
    cells = r.split(" | ")
    assert cells[-1].strip(" |") in ("**seen**", "**not seen**"), f"no seen/not-seen mark: {r[:60]}"
    assert re.search(r"\d\.\d", cells[2]), f"no computed number in the deciding cell: {r[:60]}"
assert "| | what it says | the numbers that decide it | verdict |" in md, "summary table header missing"
for fid, f in enumerate(fj["findings"], 1):
    assert f'<a id="finding-{fid}"></a>' in md, f"no anchor for finding {fid}"
    sec = md.split(f'<a id="finding-{fid}"></a>')[1].split("<a id=")[0]
    folded = sec.split(f"<summary>Every number of finding {fid}")[1].split("</details>")[0]
    assert all(m in folded for m in f["measured"]), f"finding {fid}: its numbers are not all folded under it"
    assert f["deciding"] and f["title"], f"finding {fid}: findings.json without title or deciding"
# Every claim of both rounds is in the summary: a row with its verdict where it ran (C1-C7, C1r2-...),
# else in the one line that says how to run them (--claims, and where its time is measured), never as rows of
# missing configs.
claims = [l for l in md.splitlines() if re.match(r"\| \[C[0-9]+(r2)?\]\(#claim-c[0-9]+(r2)?\) \|", l)]
n_all = sum(len(json.load(open(f"configs/experiments/{n}"))["claims"]) for n in ("claims.json", "claims_round2.json"))
for r in claims:
    assert r.split(" | ")[-1].strip(" |") in ("**seen**", "**not seen**"), f"claim verdict: {r[:60]}"
summary = md.split('<a id="summary"></a>')[1].split("<a id=")[0]
line = next((l for l in summary.splitlines() if "not run at this tier" in l), "")
if len(claims) == n_all:  # the claims ran: a row each, round 1 then round 2, and no line
    assert not line, f"every claim has a row, yet a not-run line: {line!r}"
else:
    assert "`bash scripts/reproduce.sh --claims` runs them (measured times: `configs/experiments/README.md`" in line, \
        f"the summary lists {len(claims)} of {n_all} claims and no line for the others: {line!r}"
    assert claims or ("`configs/experiments/claims.json`" in line and "`configs/experiments/claims_round2.json`" in line), \
        f"no claim ran, yet the line does not name both rounds' files: {line!r}"
assert "runs missing" not in summary, "a claim's missing configs are listed in the summary"
# The pre- vs post-norm row (study_rules.json's rule P) with its verdict ("not run": no map cells here).
p = next((l for l in summary.splitlines() if l.startswith("| [P](#pre-post) |")), None)
assert p and p.split(" | ")[-1].strip(" |") in ("**seen**", "**not seen**", "**not run**"), f"rule P's row: {p}"
assert '<a id="on-real-text"></a>' in md and "bash scripts/reproduce.sh --text" in md, "no section On real text"
assert [f["id"] for f in fj["findings"]] == [1, 2, 3, 4, 5] and all(isinstance(f["seen"], bool) for f in fj["findings"])
ex = {e["id"]: e["reason"] for e in fj["excluded"]}
assert "L2-pre-layernorm-res-s0" in ex and "diverged" in ex["L2-pre-layernorm-res-s0"], ex
assert "L2-pre-layernorm-nores-s0" in ex and "incomplete" in ex["L2-pre-layernorm-nores-s0"], ex
excl = md.split("## Excluded runs")[1].split("##")[0]
for rid in ex:
    assert rid in excl, f"{rid} not listed under Excluded runs"
# Left out of the numbers: finding 3 has the L=2 points of these wirings with their one completed seed.
c = next(f for f in fj["findings"] if f["id"] == 3)
text = " ".join(c["measured"])
for w in ("pre-layernorm-res", "pre-layernorm-nores"):
    line = next(m for m in c["measured"] if m.startswith(w + ":"))
    assert "L=1:" in line and re.search(r"L=2: [0-9.]+ \(n=1\)", line), f"an excluded run is in the numbers: {line}"
loss_table = md.split("## Final validation loss")[1].split("##")[0]
assert loss_table.count("1 of 2 seeds excluded: s0 ") == 2, f"2 cells must count their excluded seeds:\n{loss_table}"
assert "s0 diverged at step 2" in loss_table and "s0 incomplete" in loss_table, loss_table
lr_table = md.split("## Learning rates")[1].split("##")[0]
assert lr_table.count("1 of 2 seeds excluded: s0 ") == 2, f"the rate table must count the excluded seeds:\n{lr_table}"
assert "8324" not in loss_table + lr_table + json.dumps(fj["points"]), "the diverged run's loss is in a number"
neg = re.search(r".{60}CI -\d.{20}", md)
assert not neg, "an interval of a loss reaches below 0: " + neg.group(0)
assert "95% CI 0.0000-" in loss_table and "clipped at 0" in loss_table, f"the far-apart point's interval:\n{loss_table}"
print("check_report: report ok:", len(rows), "findings,", len(ex), "excluded runs")
EOF

if ((fails)); then
  echo "check_report: $fails check(s) failed" >&2
  exit 1
fi
echo "check_report: PASS"
