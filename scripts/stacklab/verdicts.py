"""Every verdict of a study's findings.json (judge.py's Result serialised), and whether two studies
agree on them: the five findings, rule P, the claims of both rounds, criterion S on text, the
convergence points and the residual-or-signal study (its verdict, its parts per depth, each point's
"trains"). What issue 46 promises after a kernel change that changes the rounding: the
same verdict on every finding and rule, under each matrix-product path.

    python3 -m stacklab.verdicts A/findings.json B/findings.json    # exit 1, naming each difference
Not here: the numbers behind a verdict (they may move with the rounding; judge.py decides).
"""
import argparse
import json
import sys


def _seen(finding: dict) -> str:
    if "verdict" in finding:
        return finding["verdict"]
    return "seen" if finding.get("seen") else "not seen"


def verdicts(f: dict) -> dict:
    """{name: verdict} over every verdict the findings hold; a part missing from the study is absent."""
    out = {}
    for x in f.get("findings") or []:  # a finding's verdict is its `seen`
        out[f"finding {x.get('id')}"] = _seen(x)
    for x in f.get("pre_post") or []:
        out[f"rule {x.get('id')}"] = x.get("verdict")
    for x in f.get("claims") or []:
        out[f"claim {x.get('id')}"] = x.get("verdict")
    text = f.get("text") or {}
    if (text.get("criterion") or {}).get("verdict") is not None:
        out["text criterion " + str(text["criterion"].get("id"))] = text["criterion"]["verdict"]
    for x in text.get("findings") or []:
        out[f"text finding {x.get('id')}"] = _seen(x)
    for p in (f.get("convergence") or {}).get("points") or []:
        key = (f"convergence {p.get('source')} {p.get('wiring')} L={p.get('depth')} "
               f"lr={p.get('learning_rate')} H={p.get('horizon')}")
        out[key] = p.get("verdict")
    sig = f.get("signal") or {}
    if sig.get("present"):
        out["signal"] = sig.get("verdict")
        for x in sig.get("depths") or []:
            out[f"signal L={x.get('depth')}"] = x.get("verdict")
            out[f"signal control L={x.get('depth')}"] = x.get("control")
        for x in sig.get("sublayer") or []:
            out[f"signal sub-layers L={x.get('depth')}"] = x.get("verdict")
        for p in sig.get("points") or []:
            trains = p.get("trains")
            out[f"signal {p.get('point')} L={p.get('depth')}"] = ("not judged" if trains is None
                                                                  else "trains" if trains else "does not train")
    return out


def compare(a: dict, b: dict) -> list:
    """[(name, verdict in a, verdict in b)] where they differ, a name missing on one side included."""
    va, vb = verdicts(a), verdicts(b)
    return [(k, va.get(k, "absent"), vb.get(k, "absent")) for k in sorted(set(va) | set(vb))
            if va.get(k, "absent") != vb.get(k, "absent")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m stacklab.verdicts", description=__doc__.split("\n")[0])
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
