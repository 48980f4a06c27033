"""`tier.py prepare OUT FILE... [--tiny]`: OUT/sweeps/<name>.json for one invocation of reproduce.sh.

prepare rewrites each sweep's out_dir (and base, made absolute) so that `reproduce.sh --out DIR` never
reuses another directory's runs (a relative data.path is made absolute against the source file's
folder, as stacklab sweep reads it: stacklab.runs.tier_lists.prepared), and sets its train.keep_final
(keep_final: the optimizer state is kept only where an extension may follow); --tiny scales a tier
down for the tests through the same path (tiers.json's "tiny").
"""
import json
import os

from stacklab.runs.tier_lists import EXTENDS, TierError, prepared

# What a finished run of a tier's sweep keeps of its checkpoints (train.keep_final, docs/reference.md;
# prepare writes it into every sweep that does not set it): the optimizer state only where an extension
# may continue the run (an extension sweep's source, and the extension, which may be extended again),
# the weights alone elsewhere: the report reads no checkpoint, load_run and `stacklab sample` the
# weights (the default study's 1.4 GB was almost all optimizer state).
KEEP_FULL = tuple(EXTENDS) + tuple(EXTENDS.values())


def keep_final(name) -> str:
    """train.keep_final of a tier's sweep: "full" where an extension may follow (KEEP_FULL), else "weights"."""
    return "full" if name in KEEP_FULL else "weights"


def with_keep_final(sweep) -> dict:
    """The sweep with train.keep_final in its overrides (keep_final), unless its overrides, grid or a
    variant set the key already: the file's own choice stands."""
    key = "train.keep_final"
    if (key in (sweep.get("overrides") or {}) or key in (sweep.get("grid") or {})
            or any(isinstance(v, dict) and key in v for v in sweep.get("variants") or [])):
        return sweep
    return dict(sweep, overrides=dict(sweep.get("overrides") or {}, **{key: keep_final(sweep["name"])}))


def cmd_prepare(args):
    out = os.path.abspath(args.out)
    try:
        os.makedirs(os.path.join(out, "sweeps"), exist_ok=True)
    except OSError as e:  # OUT (or OUT/sweeps) an existing file, no permission: named, no traceback
        raise TierError(f"{args.out}: cannot make {os.path.join(out, 'sweeps')} ({e.strerror or e})") from e
    for path in args.files:
        s = dict(prepared(path, args.tiny))
        s["out_dir"] = os.path.join(out, s["name"])
        s = with_keep_final(s)
        dst = os.path.join(out, "sweeps", s["name"] + ".json")
        with open(dst, "w", encoding="utf-8") as fh:
            json.dump(s, fh, indent=2)
            fh.write("\n")
        print(dst)
    return 0
