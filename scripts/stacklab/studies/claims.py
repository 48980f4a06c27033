"""The published claims, each judged seen or not seen on a study's runs by the rule and thresholds
fixed before its runs; "not run" (naming the runs missing) where its configs did not all run at
the tier's seeds and horizon. Two rounds: configs/experiments/claims.json (round 1, C1-C7) and
claims_round2.json (round 2, C1r2-C4r2 and C7r2: the paper's statement under conditions closer to
the paper's, at seeds no round-1 run used), which also holds why each round-1 claim was not seen
(why_not_seen: category a, b or c, with its text), read into the verdicts' `why`.

    verdicts = evaluate_all("runs/deep_stacking", tier="quick")   # [ClaimVerdict], round 1 then round 2
    outcome(run)    # "trained" | "diverged" | "plateau" as claims.json defines them ("incomplete" else)

Runs are found in OUT/<sweep> for the claims sweeps (tier.CLAIMS_SWEEPS) and matched to a claim's
configs by their config values, not by run ids: a key a claim does not name must hold its value
in configs/base.json (model, data, optimiser, batch), else stacklab's default (DEFAULTS).
Here: the verdict of each claim, of both rounds, of several study folders compared, and the command
line (scripts/claims.py). Not here: the claims' files, runs and outcomes (claim_runs.py), each
claim's rule (claim_rules.py; both re-exported here), the sweeps (configs/experiments/), the
report's page (report.py).
"""
import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

from stacklab.runs import tier_lists as tier
# The names the claims module had before its split, importable from here as before.
from stacklab.studies.claim_rules import EVALUATORS, logit_growth, loglog_slope  # noqa: F401  (re-exported)
from stacklab.studies.claim_runs import (AXES, BASE_PATH, CLAIMS_PATH, DEFAULT_KEYS, DEFAULTS,  # noqa: F401  (as above)
                                         ROUND2_PATH, RunSet, claims_runs, default_margin, depths, load_claims,
                                         load_runset, margin, outcome, points)

# claims_round2.json's why_not_seen categories (its "categories" holds their text, read by the report).
CATEGORIES = ("a", "b", "c")


@dataclass
class ClaimVerdict:
    id: str        # "C1"
    claim: str     # the claim text
    source: str    # "Xiong et al. 2020, arXiv 2002.04745, Theorem 1"
    rule: str      # rule.text
    value: str     # one short line of the deciding numbers with their seed spread
    verdict: str   # "seen" | "not seen" | "not run"
    details: str   # Markdown: per-seed numbers, per-rate counts
    round: int = 1  # 1: claims.json; 2: claims_round2.json
    why: str = ""   # a "not seen" round-1 claim: why (claims_round2.json's why_not_seen), else ""


def source_text(src: dict) -> str:
    authors = src.get("authors", "")
    first = authors.split(",")[0].replace("et al.", "").split()
    who = (first[-1] if first else "?") + (" et al." if "," in authors or "et al" in authors else "")
    return f"{who} {src.get('year')}, arXiv {src.get('arxiv')}" + (f", {src['where']}" if src.get("where") else "")


def evaluate(claim: dict, rs: RunSet) -> ClaimVerdict:
    v = ClaimVerdict(id=claim["id"], claim=claim["claim"], source=source_text(claim["source"]),
                     rule=claim["rule"]["text"], value="", verdict="not run", details="")
    missing = rs.missing(claim)
    if claim["id"] not in EVALUATORS:
        v.value = f"no evaluator for {claim['id']} in stacklab/studies/claim_rules.py"
        return v
    if missing:
        more = "; ..." if len(missing) > 4 else ""
        v.value = (f"runs missing ({len(missing)} config{'s' if len(missing) > 1 else ''}): "
                   + "; ".join(missing[:4]) + more)
        v.details = (f"Missing at the {rs.tier} tier's seeds and horizon:\n\n"
                     + "\n".join(f"- {m}" for m in missing))
        return v
    v.value, seen, v.details = EVALUATORS[claim["id"]](claim, rs)
    v.verdict = "seen" if seen else "not seen"
    return v


def why_text(reasons: list, categories: dict) -> str:
    """One paragraph from a claim's why_not_seen: "Category b, <its text>: <reason>. Category c, ..."
    (categories by letter, never "(b)": the findings were once lettered that way)."""
    out = []
    for r in reasons or []:
        if r.get("category") not in CATEGORIES:
            raise ValueError(f"why_not_seen: category '{r.get('category')}' is not one of {', '.join(CATEGORIES)}")
        out.append(f"Category {r['category']}, {categories.get(r['category'], '')}: {r['text']}")
    return " ".join(out)


def rounds(claims_path: str | None = None) -> list[tuple[int, dict]]:
    """[(round, claims doc)]: claims.json and claims_round2.json; or only the file given (its "round",
    default 1)."""
    if claims_path:
        doc = load_claims(claims_path)
        return [(doc.get("round", 1), doc)]
    return [(1, load_claims(CLAIMS_PATH)), (2, load_claims(ROUND2_PATH))]


def evaluate_all(out_dir: str, claims_path: str | None = None, tier: str = "quick") -> list[ClaimVerdict]:
    """Every claim of both rounds (or of the one file given) judged on the claims sweeps under
    out_dir (OUT/<sweep>/...); a round-1 claim not seen carries its why_not_seen as `why`."""
    docs = rounds(claims_path)
    runs = claims_runs(out_dir)
    why = next((d.get("why_not_seen") or {} for _, d in docs if d.get("why_not_seen")), {})
    cats = next((d.get("categories") or {} for _, d in docs if d.get("categories")), {})
    out = []
    for rnd, doc in docs:
        rs = RunSet(runs, tier, doc)
        for c in doc["claims"]:
            v = evaluate(c, rs)
            v.round = rnd
            if rnd == 1 and v.verdict == "not seen" and c["id"] in why:
                v.why = why_text(why[c["id"]], cats)
            out.append(v)
    return out


def over_runs(verdicts: list[str]) -> str:
    """One claim's verdict over several runs of the study (e.g. two numeric paths): the verdict they
    share; "not run" when any of them did not run it; else "mixed" (seen in one, not seen in another)."""
    if "not run" in verdicts:
        return "not run"
    return verdicts[0] if len(set(verdicts)) == 1 else "mixed"


def compare_table(dirs: list[str], per_dir: list[list[ClaimVerdict]]) -> str:
    """Markdown: per claim, its verdict in each study dir and over all of them (over_runs)."""
    head = ("| claim | " + " | ".join(f"`{d}`" for d in dirs) + " | over the runs |\n|---|"
            + "---|" * (len(dirs) + 1))
    rows = []
    for i, v in enumerate(per_dir[0]):
        vs = [p[i].verdict for p in per_dir]
        rows.append(f"| {v.id} | " + " | ".join(f"{x.verdict}: {x.value}" for x in (p[i] for p in per_dir))
                    + f" | **{over_runs(vs)}** |")
    return head + "\n" + "\n".join(rows)


def main(argv=None):
    p = argparse.ArgumentParser(description="Judge the claims of configs/experiments/claims.json (round 1) and "
                                "claims_round2.json (round 2) on a study's runs.")
    p.add_argument("out_dir", help="the study dir, e.g. runs/deep_stacking (its claims sweeps: OUT/<sweep>/)")
    p.add_argument("--tier", choices=("quick", "full"), default="quick", help="the tier's seeds and horizon")
    p.add_argument("--claims", help="judge only this claims file (default: both rounds, "
                   "configs/experiments/claims.json and claims_round2.json)")
    p.add_argument("--json", help="also write the verdicts as JSON to this file")
    p.add_argument("--compare", nargs="+", metavar="OTHER_OUT",
                   help="also judge these study dirs (e.g. the same tier under OPENBLAS_CORETYPE=Haswell) and print "
                        "each claim's verdict in every dir and over them: the shared verdict, or mixed")
    args = p.parse_args(argv)
    dirs = [args.out_dir] + (args.compare or [])
    for d in dirs:
        if not os.path.isdir(d):
            print(f"claims.py: {d}: no such directory", file=sys.stderr)
            return 1
    per_dir = []
    for d in dirs:
        try:
            per_dir.append(evaluate_all(d, args.claims, args.tier))
        except (OSError, ValueError, KeyError, tier.TierError) as e:
            print(f"claims.py: judging {d} with {args.claims or CLAIMS_PATH + ' and ' + ROUND2_PATH}: {e}",
                  file=sys.stderr)
            return 1
    verdicts = per_dir[0]
    if args.compare:
        print(compare_table(dirs, per_dir))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"tier": args.tier, "dirs": dirs,
                           "claims": [{"id": v.id, "over_runs": over_runs([p[i].verdict for p in per_dir]),
                                       "verdicts": [asdict(p[i]) for p in per_dir]}
                                      for i, v in enumerate(verdicts)]}, fh, indent=1)
        return 0
    print("| claim | round | source | verdict | deciding numbers |\n|---|---|---|---|---|")
    for v in verdicts:
        print(f"| {v.id} | {v.round} | {v.source} | **{v.verdict}** | {v.value} |")
    for v in verdicts:
        if v.why:
            print(f"\n{v.id} not seen, why: {v.why}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"tier": args.tier, "claims": [asdict(v) for v in verdicts]}, fh, indent=1)
    return 0
