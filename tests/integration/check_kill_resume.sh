#!/usr/bin/env bash
# Kill-and-resume check (run by scripts/test.sh; exit 0 pass, 77 skip, 1 fail; < 90 s).
#  1. A tiny run killed with SIGKILL at random points (and, when the poller catches one, while
#     a checkpoint's temp file exists) and resumed each time ends with the same final loss and
#     the same step/kind/loss/val_loss records as the uninterrupted run.
#  2. A torn half line appended to metrics.jsonl before a resume is dropped, and
#     scripts/stacklab/runs/runlog.py ignores a torn last line.
#  3. A sweep whose process group is SIGKILLed midway, run again, completes only the missing
#     runs: finished runs keep their summary.json untouched (same mtime), the manifest ends
#     with every run completed.
# Needs build/stacklab (scripts/setup.sh builds it) and python3 (standard library only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BIN="${STACKLAB_BIN:-$ROOT/build/stacklab}"
PY="${STACKLAB_PYTHON:-$(command -v python3 || true)}"
[[ -x "$BIN" ]] || { echo "check_kill_resume: $BIN not built (run scripts/setup.sh)"; exit 77; }
[[ -n "$PY" ]] || { echo "check_kill_resume: no python3"; exit 77; }

PYTHONPATH="$ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" - "$BIN" "$ROOT" <<'PYEOF'
import json, os, random, shutil, signal, subprocess, sys, tempfile, time

BIN, ROOT = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="stacklab_kill_")
failures = []
t_start = time.time()

def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)

TINY = ["--model.n_layer=2", "--model.n_embd=32", "--model.n_head=2", "--model.block_size=16",
        "--train.batch_size=4", "--train.max_iters=150", "--train.ckpt_interval=5", "--train.eval_interval=25",
        "--log.log_interval=1", "--log.layer_interval=50", "--train.threads=1"]
BASE = os.path.join(ROOT, "configs", "base.json")
TORN = b'{"step": 99999, "kind": "train", "loss": 0.12'  # stacklab writes no spaces: never a real line

def train_cmd(out):
    return [BIN, "train", BASE, *TINY, "--out", out]

def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

def records(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl"), "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        fail(f"{run_dir}/metrics.jsonl ends in a torn line: {lines[-1][:60]!r}")
    for raw in lines[:-1]:
        try:
            r = json.loads(raw)
        except ValueError:
            fail(f"{run_dir}/metrics.jsonl holds a line that does not parse: {raw[:80]!r}")
            continue
        if r["kind"] in ("train", "eval"):
            out.append((r["step"], r["kind"], r.get("loss"), r.get("val_loss")))
    return out

# ---- 1. uninterrupted reference, then a run killed at random points ----------------------------
ref = os.path.join(work, "ref")
t0 = time.time()
p = run(train_cmd(ref))
ref_seconds = time.time() - t0
if p.returncode != 0:
    print(p.stdout)
    sys.exit(f"check_kill_resume: the reference run failed (exit {p.returncode})")
ref_records = records(ref)
ref_summary = json.load(open(os.path.join(ref, "summary.json")))
print(f"reference run: {len(ref_records)} train/eval records in {ref_seconds:.1f}s, "
      f"final val loss {ref_summary['final_val_loss']}", flush=True)

def kill_during_checkpoint(proc, ckpt_dir, budget):
    """Polls for a checkpoint temp file and SIGKILLs the run while it exists. True if caught."""
    end = time.time() + budget
    while time.time() < end and proc.poll() is None:
        try:
            if any(".tmp." in n for n in os.listdir(ckpt_dir)):
                proc.kill()
                return True
        except FileNotFoundError:
            pass
    proc.kill()
    return False

rng = random.Random(int(os.environ.get("STACKLAB_KILL_SEED", "12345")))
victim = os.path.join(work, "killed")
kills, caught_in_write, torn_done, attempts = 0, 0, False, 0
proc = subprocess.Popen(train_cmd(victim), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
while True:
    attempts += 1
    if attempts > 12:
        break
    if attempts in (2, 4):  # try to land inside a checkpoint write
        caught = kill_during_checkpoint(proc, os.path.join(victim, "checkpoints"), ref_seconds * 0.4 + 0.2)
        caught_in_write += caught
    else:
        time.sleep(rng.uniform(0.05, max(0.1, ref_seconds * 0.3)))
        proc.kill()
    proc.wait()
    if proc.returncode == 0:
        break  # it finished before the kill landed
    kills += 1
    if kills == 2 and os.path.exists(os.path.join(victim, "metrics.jsonl")):
        with open(os.path.join(victim, "metrics.jsonl"), "ab") as f:  # a torn write, by hand
            f.write(TORN)
        torn_done = True
    if os.path.exists(os.path.join(victim, "config.json")):
        proc = subprocess.Popen([BIN, "train", "--resume", victim], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    else:  # killed before the run directory was complete: start over, as a user would
        shutil.rmtree(victim, ignore_errors=True)
        proc = subprocess.Popen(train_cmd(victim), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
else:
    pass
if proc.poll() is None or proc.returncode != 0:
    proc.wait()
    if proc.returncode != 0:
        p = run([BIN, "train", "--resume", victim])
        if p.returncode != 0:
            fail(f"final resume failed (exit {p.returncode}): {p.stdout[-500:]}")
print(f"killed {kills} times ({caught_in_write} inside a checkpoint write), resumed each time", flush=True)
got = records(victim)
if got != ref_records:
    diff = next((i for i, (a, b) in enumerate(zip(got, ref_records)) if a != b), min(len(got), len(ref_records)))
    fail(f"resumed run's records differ from the uninterrupted run's at record {diff}: "
         f"{got[diff] if diff < len(got) else None} vs {ref_records[diff] if diff < len(ref_records) else None} "
         f"({len(got)} vs {len(ref_records)} records)")
summ = json.load(open(os.path.join(victim, "summary.json")))
if summ["status"] != "completed" or summ["final_val_loss"] != ref_summary["final_val_loss"]:
    fail(f"resumed run ended {summ['status']} with final val loss {summ['final_val_loss']}, "
         f"reference {ref_summary['final_val_loss']}")
if any(".tmp." in n for n in os.listdir(os.path.join(victim, "checkpoints"))):
    fail("a checkpoint temp file was left behind after the resumed run completed")
if kills < 3:
    fail(f"only {kills} kills landed before the run finished; the check did not exercise resume enough")

# ---- 2. torn lines: the trainer drops them, runlog.py ignores them --------------------------------
if not torn_done:
    # make sure the torn-line path is exercised even if the kills ended early
    t = os.path.join(work, "torn")
    proc = subprocess.Popen(train_cmd(t), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    while not os.path.exists(os.path.join(t, "checkpoints", "latest.safetensors")) and proc.poll() is None:
        time.sleep(0.01)
    proc.kill(); proc.wait()
    with open(os.path.join(t, "metrics.jsonl"), "ab") as f:
        f.write(TORN)
    if run([BIN, "train", "--resume", t]).returncode != 0:
        fail("resume after a torn line failed")
    records(t)
    victim = t
if TORN in open(os.path.join(victim, "metrics.jsonl"), "rb").read():
    fail("the torn half line appended before a resume is still in metrics.jsonl")
from stacklab import runlog
torn = os.path.join(work, "runlog_torn")
shutil.copytree(ref, torn)
with open(os.path.join(torn, "metrics.jsonl"), "ab") as f:
    f.write(b'{"step": 150, "kind": "eval", "val_loss": 0.5')
try:
    recs = runlog.read_metrics(os.path.join(torn, "metrics.jsonl"))
    n_eval = len(recs.get("eval", [])) if isinstance(recs, dict) else None
    ref_eval = sum(1 for r in ref_records if r[1] == "eval")
    if n_eval is not None and n_eval != ref_eval:
        fail(f"runlog.read_metrics kept the torn line: {n_eval} eval records, expected {ref_eval}")
except Exception as e:  # whatever it raises: raising at all is the failure checked here
    fail(f"runlog.read_metrics raised on a torn last line: {e!r}")

# ---- 3. a sweep killed midway completes only the missing runs --------------------------------------
sweep_dir = os.path.join(work, "sweep")
sweep_file = os.path.join(work, "tiny_sweep.json")
json.dump({"name": "tiny", "base": BASE, "out_dir": sweep_dir, "seeds": [0],
           "overrides": {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 4,
                         "train.max_iters": 60, "train.ckpt_interval": 10, "train.eval_interval": 30,
                         "log.layer_interval": 50},
           "grid": {"model.n_layer": [1, 2, 3, 4]}}, open(sweep_file, "w"))
sweep = subprocess.Popen([BIN, "sweep", sweep_file, "--jobs", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
manifest = os.path.join(sweep_dir, "manifest.json")

def statuses():
    try:
        return {r["id"]: r["status"] for r in json.load(open(manifest))["runs"]}
    except (OSError, ValueError, KeyError):
        return {}

def in_progress():
    """Ids of runs that are neither completed nor new and already hold a checkpoint."""
    st = statuses()
    return [i for i, s in st.items() if s != "completed" and
            os.path.exists(os.path.join(sweep_dir, i, "checkpoints", "latest.safetensors"))]

deadline = time.time() + 60
while time.time() < deadline and sweep.poll() is None:
    if sum(1 for s in statuses().values() if s == "completed") >= 1 and in_progress():
        break
    time.sleep(0.01)
os.killpg(sweep.pid, signal.SIGKILL)  # the sweep and its children, as a crash or OOM would
sweep.wait()
first = statuses()
done_before = sorted(i for i, s in first.items() if s == "completed")
mtimes = {i: os.stat(os.path.join(sweep_dir, i, "summary.json")).st_mtime_ns for i in done_before}
print(f"sweep killed with {len(done_before)} of {len(first)} runs completed: {first}", flush=True)
if not done_before or len(done_before) == len(first):
    fail(f"the sweep kill did not land midway ({first}); the check proves nothing")
p = run([BIN, "sweep", sweep_file, "--jobs", "1"])
if p.returncode != 0:
    fail(f"the resumed sweep failed (exit {p.returncode}): {p.stdout[-800:]}")
final = statuses()
if set(final.values()) != {"completed"}:
    fail(f"after the resumed sweep not every run is completed: {final}")
for i in done_before:
    if os.stat(os.path.join(sweep_dir, i, "summary.json")).st_mtime_ns != mtimes[i]:
        fail(f"run {i} was already complete but the resumed sweep touched its summary.json")
expected_todo = len(first) - len(done_before)
if f"({expected_todo} to do, {len(done_before)} already done)" not in p.stdout:
    fail(f"the resumed sweep did not report {expected_todo} to do / {len(done_before)} done: {p.stdout[:300]}")
for i in final:
    s = json.load(open(os.path.join(sweep_dir, i, "summary.json")))
    if s["status"] != "completed" or s["steps"] != 60:
        fail(f"sweep run {i}: summary says {s['status']} after {s['steps']} steps")

shutil.rmtree(work, ignore_errors=True)
print(f"check_kill_resume: {'FAILED' if failures else 'ok'} in {time.time() - t_start:.1f}s", flush=True)
sys.exit(1 if failures else 0)
PYEOF
