"""Every verdict of a study's findings.json (judge.py's Result serialised), and whether two studies
agree on them. What issue 46 promises after a kernel change that changes the rounding: the same
verdict on every finding and rule, under each matrix-product path.

The verdicts are read from the whole file, not from a list of its sections: every field whose key is
in VERDICT_KEYS, wherever it is (the findings, rule P, the claims, the text study, the map's cells,
the convergence study, the escape law's core and the opt-in law, the residual-or-signal study, and
any section added later). A field is named by its path, a list item by the fields that identify it
(ID_KEYS): `signal.points[point=shaped,depth=8].trains`, `claims[id=C1].verdict`. A section a study
did not run (`{"present": false, ...}`) reads "not run", as does each verdict under it that the
other study has. Every key findings.json holds is either a verdict (VERDICT_KEYS) or not
(NOT_VERDICTS): tests/python/test_verdicts.py fails on a key that is neither, so a new verdict field
cannot go uncompared.

    python3 -m stacklab.studies.verdicts A/findings.json B/findings.json    # exit 1, naming each difference
Not here: the numbers behind a verdict (they may move with the rounding; judge.py decides).
"""
import argparse
import json
import sys

# Keys whose value is a verdict: a rule's outcome, in words or as a bool (BOOL_WORDS says it in words).
# parts and lower hold one verdict per key (finding 3's parts, which ends lower per init); a dict under such
# a key that holds dicts or lists (the opt-in law's "best": its read at each depth's best rate) is a section.
VERDICT_KEYS = frozenset({
    "verdict", "seen", "parts", "p_verdict", "lower", "short", "long", "reversal", "control", "trains",
    "reading", "majority", "outcome", "best", "fires", "holds", "contradicted", "read_so_far", "main_form",
    "second_form", "outside"})
BOOL_WORDS = {"seen": ("seen", "not seen"), "trains": ("trains", "does not train"),
              "fires": ("falsified", "not falsified"), "holds": ("holds", "does not hold"),
              "contradicted": ("contradicted", "holds"), "outside": ("outside the main path's range", "inside")}
# Keys that are no verdict: numbers, descriptions, identities, where a run was read (a verdict-like word
# among them, such as an escape step's "censored", is a measurement the verdicts above are made from).
NOT_VERDICTS = frozenset({
    # identities and descriptions
    "id", "claim", "criterion", "title", "note", "deciding", "measured", "source", "rule", "value", "details",
    "round", "why", "wiring", "formula", "depth", "depths", "learning_rate", "rate", "horizon", "seed", "seeds",
    "sweep", "sweeps", "run", "point", "planned", "init", "statement", "short_from", "p_deciding", "lines",
    "rules", "fixed_on", "how", "present", "reason", "excluded", "refused", "differs", "key",
    "not_judged", "counts", "kernels", "cpu_model", "commits", "superseded", "disagree", "reached", "pending",
    "wirings", "cells", "rows", "points", "seed_fits", "median_fit", "escape_fits", "pre_post", "pre_post_short",
    "short_vs_long", "reversals", "findings", "text", "stability_map", "convergence", "escape", "learning_rates",
    "escape_law_core", "escape_law", "signal", "reference", "rates", "sublayer", "rank", "deep_tests", "forms",
    "second_path", "pooled_rank", "held", "probe", "rank_fit", "second_knob", "main", "second", "main_96",
    "second_96", "predictions", "fits", "falsifier", "bounds", "escape_steps", "escaped_depths", "wiring_probe",
    # numbers
    "mean", "min", "max", "n", "ci", "ci_clipped", "final_val_loss", "best_val_loss", "escape_step", "last_step",
    "last_eval_step", "last_eval", "last", "step", "median", "median_censored", "censored", "trained", "diverged",
    "plateau", "unfinished", "mean_final_val_loss", "unigram", "margin", "escaped", "finished", "need",
    "rank_ratio_at_init", "seeds_planned", "factor", "p", "ssr_exp", "ssr_poly", "exact_exp", "exact_poly",
    "intercept_exp", "intercept_poly", "from", "factor_above", "p_above", "theta", "sigma", "loglik", "aic",
    "delta_aic", "lo", "hi", "chance_all_never", "runs", "run_seconds", "min_escaped_depths", "predicted",
    "rank_ratio", "grad_ratio_first_last", "steps", "escaped_at", "interval", "values",
    # the sections and lists of findings.json and of the opt-in law's study_json
    "claims", "complete", "missing", "absent", "not_made", "read", "seeds_named", "rank_not_made", "tables",
    "left_out",
    # the opt-in law's best-rate read refitted on part of its runs (checks.Robustness): numbers
    "robustness", "fitted", "at", "without", "subsets",
    # the law's forms, as keys of its fits and predictions
    "exponential", "power", "doubly exponential", "linear"})
# The fields that identify a list item, in the order its name gives them (a value longer than ID_LEN, such as
# a claim's paper, is left out: the others identify it).
ID_KEYS = ("id", "sweep", "run", "source", "wiring", "point", "form", "init", "depth", "learning_rate", "horizon",
           "seed")
ID_LEN = 24
NOT_RUN = "not run"


def _label(item: dict, index: int) -> str:
    ids = [f"{k}={item[k]}" for k in ID_KEYS
           if k in item and not isinstance(item[k], (dict, list)) and len(str(item[k])) <= ID_LEN]
    return "[" + (",".join(ids) if ids else str(index)) + "]"


def _word(key: str, v):
    if isinstance(v, bool) and key in BOOL_WORDS:
        return BOOL_WORDS[key][0 if v else 1]
    if v is None and key == "trains":
        return "not judged"
    return v


def _container(v) -> bool:
    """A dict under a verdict key that holds more than one verdict per key (the opt-in law's "best", its
    read at each depth's best rate): walked as a section, not read as parts."""
    return isinstance(v, dict) and any(isinstance(x, (dict, list)) for x in v.values())


def _walk(x, path: str, out: dict):
    if isinstance(x, dict):
        if x.get("present") is False:  # a section the study did not run: that is its one verdict
            out[f"{path}.verdict" if path else "verdict"] = NOT_RUN
            return
        for k, v in x.items():
            name = f"{path}.{k}" if path else str(k)
            if k in VERDICT_KEYS and not _container(v):
                if isinstance(v, dict):
                    for part, pv in v.items():
                        out[f"{name}.{part}"] = _word(k, pv)
                elif isinstance(v, list):  # a table of verdicts (learning_rates.best): one verdict, whole
                    out[name] = json.dumps(v, sort_keys=True)
                else:
                    out[name] = _word(k, v)
            elif isinstance(v, (dict, list)):
                _walk(v, name, out)
    elif isinstance(x, list):
        for i, item in enumerate(x):
            _walk(item, path + (_label(item, i) if isinstance(item, dict) else f"[{i}]"), out)


def verdicts(f: dict) -> dict:
    """{name: verdict} over every verdict field of the findings (VERDICT_KEYS, wherever it is); a section
    not run gives "<section>.verdict": "not run"."""
    out = {}
    _walk(f, "", out)
    return out


def _is_number(k) -> bool:
    try:
        float(k)
        return True
    except ValueError:
        return False


def unknown_keys(f: dict) -> list:
    """The keys of the findings that are neither verdicts (VERDICT_KEYS) nor known not to be (NOT_VERDICTS),
    sorted: a new field must be classified before the verdicts are trusted to cover it."""
    found = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if not _is_number(k):  # a dict keyed by seed ("20"), depth or rate ("0.0003"): its values are
                    found.add(k)      # walked
                if k not in VERDICT_KEYS or _container(v):
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(f)
    return sorted(k for k in found if k not in VERDICT_KEYS and k not in NOT_VERDICTS)


def _missing(v: dict, name: str) -> str:
    """What a study says of a verdict it does not hold: "not run" when the section holding it was not run
    there, else "absent" (a findings.json from before the section existed)."""
    section = name.split(".", 1)[0].split("[", 1)[0]
    return NOT_RUN if v.get(f"{section}.verdict") == NOT_RUN else "absent"


def compare(a: dict, b: dict) -> list:
    """[(name, verdict in a, verdict in b)] where they differ, a name missing on one side included ("not
    run" where its section was not run there, else "absent")."""
    va, vb = verdicts(a), verdicts(b)
    out = []
    for k in sorted(set(va) | set(vb)):
        x = va[k] if k in va else _missing(va, k)
        y = vb[k] if k in vb else _missing(vb, k)
        if x != y:
            out.append((k, x, y))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m stacklab.studies.verdicts", description=__doc__.split("\n")[0])
    ap.add_argument("a", help="a study's findings.json")
    ap.add_argument("b", help="another study's findings.json")
    args = ap.parse_args(argv)
    docs = []
    for path in (args.a, args.b):
        try:
            with open(path, encoding="utf-8") as fh:
                docs.append(json.load(fh))
        except (OSError, ValueError) as e:
            print(f"verdicts: cannot read {path}: {e}", file=sys.stderr)
            return 2
    diff = compare(*docs)
    n = len(verdicts(docs[0]))
    if not diff:
        print(f"verdicts: the same {n} verdicts in {args.a} and {args.b}")
        return 0
    for name, x, y in diff:
        print(f"verdicts: {name}: {x} in {args.a}, {y} in {args.b}")
    print(f"verdicts: {len(diff)} of {max(n, len(verdicts(docs[1])))} differ", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
