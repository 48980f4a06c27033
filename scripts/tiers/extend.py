"""`tier.py extend BIN OUT [--settled]`: copy the runs an extension sweep continues (tiers.json's
"extends"), so that `stacklab sweep EXTENSION --on-change extend` resumes each copy instead of
training it again.
"""
import json
import os
import sys

from stacklab.runs.tier_lists import EXTENDS, TierError, get_key, read_json
from tiers.size import dry_run


def extension_plan(binary, sweep_file, out):
    """[(run dir, max_iters, source run dir)] of an extension sweep prepared into OUT/sweeps/: its runs
    as `stacklab sweep --dry-run` lists them for an empty out_dir (a copy of the file pointing at a
    scratch folder, so the copies already made cannot make the listing refuse them as changed)."""
    import tempfile
    s = read_json(sweep_file)
    src = EXTENDS[s["name"]]
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, s["name"] + ".json")
        with open(probe, "w", encoding="utf-8") as fh:
            json.dump(dict(s, out_dir=os.path.join(tmp, "runs")), fh)
        runs = dry_run(binary, [probe])
    return [(os.path.join(out, s["name"], rid.split("/")[-1]), int(kv["train.max_iters"]),
             os.path.join(out, src, rid.split("/")[-1])) for rid, _, _, _, kv, _, _ in runs]


def run_status(run_dir):
    """(summary status or None, config max_iters or None) of a run directory."""
    summ = os.path.join(run_dir, "summary.json")
    cfg = os.path.join(run_dir, "config.json")
    status = read_json(summ).get("status") if os.path.isfile(summ) else None
    iters = get_key(read_json(cfg), "train.max_iters") if os.path.isfile(cfg) else None
    return status, iters


SETTLED = ("completed", "diverged")  # a source run that will not change any more


def copy_run(src, dst):
    """Copies a run folder (without its lock) so that dst is whole or absent at every instant: into a
    temporary folder beside it (.NAME.copying, which a copy killed midway leaves and the next one
    removes), then one rename. A folder copied file by file and killed midway was a run with a
    completed summary and no config.json, which the sweep took as done."""
    import shutil
    tmp = os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.copying")
    if os.path.lexists(tmp):
        shutil.rmtree(tmp)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("train.lock"))
    os.rename(tmp, dst)


def cmd_extend(args):
    """For each extension sweep prepared into OUT/sweeps/: copy each completed source run not yet
    copied (without its lock), and print `RUN_DIR MAX_ITERS` for every copy not yet completed at the
    extension's horizon. `stacklab sweep EXTENSION --on-change extend` then continues each copy to
    MAX_ITERS with `train --resume` (its config differs from the sweep's in the horizon alone), on
    either executor. A source run that did not complete is not copied: the extension sweep then trains
    it from step 0 (a diverged one diverges where it did). Each copy is atomic (copy_run); a copy without
    config.json (made file by file by an older tier.py and killed midway) is refused, named, with the
    fix. Every copy is made before the first line is printed, so a reader that stops early (`| head`)
    leaves none undone. An OUT without a prepared extension sweep is refused (a mistyped OUT copied
    nothing, silently). With --settled, nothing is copied and the
    exit code is 3 unless every source run has completed or diverged (the Slurm path submits the
    extension only then: a source run still queued would otherwise be trained again from step 0)."""
    if not os.path.isdir(args.out):
        raise TierError(f"extend: {args.out}: no such folder (OUT is the study folder reproduce.sh --converge "
                        "--out OUT writes)")
    files = [os.path.join(args.out, "sweeps", name + ".json") for name in EXTENDS]
    if not any(os.path.isfile(f) for f in files):
        raise TierError(f"extend: {args.out} holds no extension sweep ({', '.join(files)}): not a study folder of "
                        "reproduce.sh --converge, or its sweeps not prepared yet (tier.py prepare OUT FILE...)")
    plans = [extension_plan(args.binary, f, args.out) for f in files if os.path.isfile(f)]
    if args.settled:
        waiting = [src for plan in plans for dst, _, src in plan
                   if not os.path.isdir(dst) and run_status(src)[0] not in SETTLED]
        if waiting:
            print(f"tier.py: {len(waiting)} source run(s) of the extension sweeps have not completed yet, "
                  f"e.g. {waiting[0]}", file=sys.stderr)
            return 3
    todo = []
    for plan in plans:
        for dst, iters, src in plan:
            if not os.path.isdir(dst):
                if run_status(src)[0] != "completed":
                    continue
                copy_run(src, dst)
            elif not os.path.isfile(os.path.join(dst, "config.json")):
                raise TierError(f"{dst}: a run folder without config.json (a copy interrupted midway?): it is done "
                                f"under no config, so it is neither continued nor counted; remove it (rm -r {dst}) "
                                "and run tier.py extend again, which copies it whole")
            if run_status(dst) != ("completed", iters):
                todo.append(f"{dst} {iters}")
    for line in todo:
        print(line)
    sys.stdout.flush()  # a closed reader is met here, in main's hands, not at exit
    return 0
