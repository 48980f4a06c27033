"""`tier.py full-configs [--check]`: configs/experiments/full/*.json from the quick tier's files.

full-configs derives the full tier from the quick tier's files (tiers.json's full_tier: seeds, rates,
the horizon factor, the depths added), so a change of the quick tier's horizon or depths is one edit
plus a rerun (--check fails while the written files differ).
"""
import json
import os
import sys

from stacklab.runs.tier_lists import (FULL_ADD_DEPTHS, FULL_DIR, FULL_RATES, FULL_SEEDS, FULL_SWEEPS, HORIZON_FACTOR,
                                      OWN_RATES, QUICK_DIR, ROOT, TierError, base_value, read_json)


def full_sweep(name):
    src = os.path.join(QUICK_DIR, name + ".json")
    q = read_json(src)
    quick_iters = base_value(src, q, "train.max_iters")
    if not isinstance(quick_iters, int):
        raise TierError(f"{src}: no integer train.max_iters in its overrides or base")
    # full/ is one folder down: its base and a relative data.path (both read against the sweep
    # file's folder) gain "../".
    f = dict(q)
    f["base"] = os.path.join("..", q["base"])

    f["out_dir"] = "runs/deep_stacking_full/" + name
    first = (q.get("seeds") or [0])[0]
    f["seeds"] = [first + s for s in FULL_SEEDS]
    f["description"] = (f"Full tier of {name}.json (written by scripts/tier.py full-configs; edit the quick file "
                        f"and rerun): " + q.get("description", ""))
    if q.get("mode", "train") == "train":
        f["overrides"] = dict(q.get("overrides") or {}, **{"train.max_iters": HORIZON_FACTOR * quick_iters})
        if name not in OWN_RATES:
            f["grid"] = dict(q.get("grid") or {}, **{"optim.learning_rate": FULL_RATES})
    if name in FULL_ADD_DEPTHS:
        grid = dict(f.get("grid") or {})
        if "model.n_layer" not in grid:
            raise TierError(f"{src}: no model.n_layer grid to add the full tier's depths to")
        grid["model.n_layer"] = grid["model.n_layer"] + [d for d in FULL_ADD_DEPTHS[name]
                                                         if d not in grid["model.n_layer"]]
        f["grid"] = grid
    path = (f.get("overrides") or {}).get("data.path")
    if isinstance(path, str) and path and not os.path.isabs(path):
        f["overrides"] = dict(f["overrides"], **{"data.path": os.path.join("..", path)})
    return f


def cmd_full_configs(args):
    os.makedirs(FULL_DIR, exist_ok=True)
    stale = []
    for name in FULL_SWEEPS:
        text = json.dumps(full_sweep(name), indent=2) + "\n"
        path = os.path.join(FULL_DIR, name + ".json")
        old = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
        if old != text:
            stale.append(path)
            if not args.check:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    if args.check and stale:
        print("tier.py: full tier out of date with the quick tier (run `python3 scripts/tier.py full-configs`): "
              + ", ".join(os.path.relpath(p, ROOT) for p in stale), file=sys.stderr)
        return 1
    print(("up to date: " if args.check else "wrote: ") + ", ".join(f"full/{n}.json" for n in FULL_SWEEPS))
    return 0
