#!/usr/bin/env bash
# The Slurm executor against a real single-node Slurm (scripts/slurm_local.sh), run by
# scripts/test.sh (exit 0 pass, 1 fail, 77 skip: not root, or not Debian without Slurm; ~1 min):
#  1. a 4-run sweep submitted held (--slurm-extra --hold): --status counts 4 queued; a second
#     invocation (slurm or local) on its out_dir is refused naming it and the job;
#  2. one run's config.json broken before release: that task is reported failed (--status exits
#     non-zero, its log's last line shown), the other three complete;
#  3. a task requeued mid-run (scontrol requeue: SIGTERM, checkpoint, back in the queue) is counted
#     queued, then resumes; every completed run's train/eval losses equal, bit for bit, the same
#     sweep run with --executor local (one thread each);
#  4. resubmission submits only the failed run; cancelled mid-run (scancel) it is counted
#     interrupted; submitted again with --wait it completes from its checkpoint, equal to local;
#     the finished runs are never touched again (summary.json mtimes);
#  5. the time-limit warning (USR1 to the batch shell) checkpoints, the task requeues itself and
#     resumes, identical to local.
# A trap stops the cluster (every daemon by its pid) whatever happens.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BIN="${STACKLAB_BIN:-$ROOT/build/stacklab}"
PY="${STACKLAB_PYTHON:-$(command -v python3 || true)}"
[[ -x "$BIN" ]] || { echo "check_slurm: $BIN not built (run scripts/setup.sh)"; exit 77; }
[[ -n "$PY" ]] || { echo "check_slurm: no python3"; exit 77; }
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  if command -v dpkg-query >/dev/null 2>&1; then
    echo "check_slurm: FAIL: slurm-wlm or munge missing on a Debian machine (scripts/setup.sh installs them)"
    exit 1
  fi
  echo "check_slurm: no slurmctld/munged (not Debian: install Slurm and munge to run this check)"
  exit 77
fi
[[ "$(id -u)" == 0 ]] || { echo "check_slurm: not root (slurmd must start tasks as their users)"; exit 77; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/stacklab_slurm_check.XXXXXX")"
chmod 0755 "$WORK"  # munged wants its socket's parent directories searchable by all
export STACKLAB_SLURM_DIR="$WORK/cluster"
# Two free loopback ports (SlurmctldPort, SlurmdPort = +1) so a machine's own Slurm is not in the way.
STACKLAB_SLURM_PORT="$("$PY" - <<'EOF'
import random, socket
for _ in range(200):
    p = random.randrange(20000, 60000, 2)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
EOF
)"
export STACKLAB_SLURM_PORT
cleanup() {
  bash "$ROOT/scripts/slurm_local.sh" stop || true
  rm -rf "$WORK"
}
trap cleanup EXIT
started="$(bash "$ROOT/scripts/slurm_local.sh" start)" || { echo "check_slurm: FAIL: the local cluster did not start"; exit 1; }
eval "$started"
export SLURM_CONF

rc=0
"$PY" - "$BIN" "$ROOT" "$WORK" <<'PYEOF' || rc=$?
import json, os, re, subprocess, sys, time

BIN, ROOT, WORK = sys.argv[1:4]
failures = []
t_start = time.time()

def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)

def run(*args, timeout=300):
    """(exit code, output); a command still running after `timeout` s fails the check (and the
    trap stops the cluster) instead of hanging CI."""
    try:
        p = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"check_slurm: FAIL: {' '.join(args)} still running after {timeout} s")
    return p.returncode, p.stdout

def sweep_file(name):
    path = os.path.join(WORK, name + ".json")
    json.dump({"name": name, "base": os.path.join(ROOT, "configs", "base.json"), "out_dir": os.path.join(WORK, name),
               "overrides": {"model.n_embd": 64, "model.n_head": 2, "model.block_size": 32, "train.batch_size": 8,
                             "train.max_iters": 1000, "train.ckpt_interval": 25, "train.eval_interval": 100,
                             "log.log_interval": 10, "log.layer_interval": 250},
               "grid": {"model.n_layer": [1, 2]}, "seeds": [0, 1]}, open(path, "w"))
    return path

RUNS = ["L1-pre-layernorm-res-s0", "L1-pre-layernorm-res-s1", "L2-pre-layernorm-res-s0", "L2-pre-layernorm-res-s1"]
BAD, REQUEUED = RUNS[1], RUNS[2]
LOCAL, SLURM = os.path.join(WORK, "local"), os.path.join(WORK, "slurm")

def submitted_job(out):
    m = re.search(r"submitted \d+ run\(s\) as Slurm job (\d+)", out)
    return m.group(1) if m else None

def losses(run_dir):
    out = []
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        r = json.loads(line)
        if r["kind"] in ("train", "eval"):
            out.append((r["step"], r["kind"], r.get("loss"), r.get("val_loss"), r.get("train_loss")))
    return out

def kinds(run_dir):
    return [json.loads(l)["kind"] for l in open(os.path.join(run_dir, "metrics.jsonl"))]

def status_counts():
    """--status SLURM: (exit code, output, {state: count}) from its line 'sweep NAME: ... (...): new 0, ...'."""
    rc, out = run(BIN, "sweep", "--status", SLURM)
    line = out.splitlines()[0] if out else ""
    counts = {}
    for part in line.rsplit("):", 1)[-1].split(","):
        k, _, v = part.strip().rpartition(" ")
        if k: counts[k] = int(v)
    return rc, out, line, counts

def status(expect, expect_rc, where):
    rc, out, line, counts = status_counts()
    want = {s: expect.get(s, 0) for s in ("new", "queued", "running", "completed", "failed", "diverged", "interrupted", "changed")}
    if counts != want or rc != expect_rc:
        fail(f"{where}: --status gave {counts} exit {rc}, expected {want} exit {expect_rc}:\n{out}")
    else:
        print(f"{where}: --status ok: {line}", flush=True)
    return out

def job_gone(job, timeout=180):
    """True once squeue lists no task of `job` twice in a row, 1 s apart (a requeue passes through
    states squeue may not list)."""
    end, empty = time.time() + timeout, 0
    while time.time() < end:
        rc, out = run("squeue", "-h", "-j", job, "-o", "%i")
        empty = empty + 1 if rc == 0 and not out.strip() else 0
        if empty == 2:
            return True
        time.sleep(1.0 if empty else 0.5)
    fail(f"job {job} still in the queue after {timeout} s")
    return False

def start_now(job_task, requeued_at):
    """Start a requeued task now instead of after Slurm's requeue delay (~2 min). slurmd compares a
    credential's creation time, in whole seconds, with the time it revoked the task's previous one:
    a task started again within the same second is refused ("Job credential revoked") and ends
    with exit 1 instead of running. So wait until 2 s have passed since the requeue."""
    time.sleep(max(0.0, requeued_at + 2.0 - time.time()))
    rc, out = run("scontrol", "update", f"JobId={job_task}", "StartTime=now")
    if rc != 0:
        fail(f"scontrol update JobId={job_task} StartTime=now: exit {rc}: {out}")

def wait_for(pred, what, timeout=120, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if pred():
                return True
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(step)
    fail(f"timed out waiting for {what}")
    return False

def task(run_id):
    return json.load(open(os.path.join(SLURM, run_id, "task.json")))

def steps_done(run_id):
    return max((json.loads(l).get("step", 0) for l in open(os.path.join(SLURM, run_id, "metrics.jsonl"))), default=0)

# ---- reference: the same sweep with the local executor ------------------------------------------
rc, out = run(BIN, "sweep", sweep_file("local"), "--jobs", "2")
if rc != 0:
    sys.exit(f"check_slurm: the local reference sweep failed (exit {rc}):\n{out}")
print(f"local reference sweep: {time.time() - t_start:.1f}s", flush=True)

# ---- 1. submitted held: all queued; a second invocation is refused ------------------------------
SW = sweep_file("slurm")
rc, out = run(BIN, "sweep", SW, "--executor", "slurm", "--max-parallel", "2", "--slurm-extra", "--hold")
job = submitted_job(out)
if rc != 0 or not job:
    sys.exit(f"check_slurm: submission failed (exit {rc}):\n{out}")
script = open(os.path.join(SLURM, "slurm", "array.sbatch")).read()
for needle in ("#SBATCH --array=0-3%2", "#SBATCH --requeue", "#SBATCH --signal=B:USR1@", "#SBATCH --cpus-per-task=1"):
    if needle not in script:
        fail(f"array.sbatch lacks {needle!r}")
manifest = json.load(open(os.path.join(SLURM, "manifest.json")))
if manifest.get("slurm", {}).get("job") != job or [r.get("job") for r in manifest["runs"]] != [f"{job}_{i}" for i in range(4)]:
    fail(f"manifest.json does not record job {job} and its tasks: {manifest.get('slurm')}")
for r in RUNS:
    if not os.path.exists(os.path.join(SLURM, r, "config.json")):
        fail(f"{r}: no config.json written at submission")
    elif json.load(open(os.path.join(SLURM, r, "config.json")))["train"]["out_dir"] != SLURM:
        fail(f"{r}: config.json does not record where the run lies (train.out_dir {SLURM}), as a local run's does")
status({"queued": 4}, 0, "held")
for executor in ("slurm", "local"):
    rc, out = run(BIN, "sweep", SW, "--executor", executor)
    if rc == 0 or SLURM not in out or f"Slurm job {job}" not in out:
        fail(f"a second invocation (--executor {executor}) was not refused naming {SLURM} and job {job}: exit {rc}\n{out}")
    else:
        print(f"second invocation --executor {executor} refused: {[l for l in out.splitlines() if 'error' in l][0]}", flush=True)

# ---- 2./3. a bad config fails alone; a requeued task resumes ------------------------------------
cfg_path = os.path.join(SLURM, BAD, "config.json")
cfg = json.load(open(cfg_path))
cfg["model"]["n_head"] = 3  # 64 is not divisible by 3: the task's config no longer validates
json.dump(cfg, open(cfg_path, "w"))
run("scontrol", "release", job)
if wait_for(lambda: task(REQUEUED)["state"] == "running" and steps_done(REQUEUED) >= 300, f"{REQUEUED} mid-run"):
    rc, out, line, c = status_counts()  # mid-run: at most 2 at once (%2), the bad one failed
    if not (1 <= c.get("running", 0) <= 2 and c.get("failed", 0) <= 1 and sum(c.values()) == 4 and
            c.get("new", 0) == 0 and c.get("interrupted", 0) == 0):
        fail(f"mid-run: --status gave {c}:\n{out}")
    else:
        print(f"mid-run: --status ok: {line}", flush=True)
    rc, out = run("scontrol", "requeue", f"{job}_2")
    if rc != 0:
        fail(f"scontrol requeue {job}_2: exit {rc}: {out}")
    wait_for(lambda: task(REQUEUED)["state"] == "exited" and task(REQUEUED)["exit"] == 143, f"{REQUEUED} checkpointed")
    wait_for(lambda: status_counts()[3].get("queued", 0) >= 1, "the requeued task back in the queue", timeout=20)
    requeued_at = time.time()
    wait_for(lambda: all(os.path.exists(os.path.join(SLURM, r, "summary.json")) and
                         json.load(open(os.path.join(SLURM, r, "summary.json")))["status"] == "completed"
                         for r in (RUNS[0], RUNS[3])), "the other runs to complete")
    status({"completed": 2, "failed": 1, "queued": 1}, 1, "requeued task pending")
    start_now(f"{job}_2", requeued_at)
job_gone(job)
out = status({"completed": 3, "failed": 1}, 1, "first job done")
if f"failed {BAD}" not in out or "n_head" not in out:
    fail(f"--status does not show {BAD}'s failure with its log's last line:\n{out}")
if "resume" not in kinds(os.path.join(SLURM, REQUEUED)):
    fail(f"{REQUEUED}: no resume record: the requeue did not interrupt it mid-run")
for r in (RUNS[0], RUNS[2], RUNS[3]):
    if losses(os.path.join(SLURM, r)) != losses(os.path.join(LOCAL, r)):
        fail(f"{r}: losses differ between --executor slurm and --executor local")
    else:
        print(f"{r}: {len(losses(os.path.join(LOCAL, r)))} train/eval records identical to local", flush=True)

# ---- 4. resubmission: only the failed run; scancel -> interrupted; --wait completes it -----------
mtimes = {r: os.stat(os.path.join(SLURM, r, "summary.json")).st_mtime_ns for r in (RUNS[0], RUNS[2], RUNS[3])}
os.remove(cfg_path)  # the fix: the next submission writes the run's config from the sweep again
rc, out = run(BIN, "sweep", SW, "--executor", "slurm")
job2 = submitted_job(out)
script = open(os.path.join(SLURM, "slurm", "array.sbatch")).read()
if rc != 0 or not job2 or "#SBATCH --array=0-0" not in script or BAD not in script or RUNS[0] in script:
    fail(f"resubmission did not submit exactly {BAD} (exit {rc}):\n{out}")
elif wait_for(lambda: task(BAD)["job"] == f"{job2}_0" and task(BAD)["state"] == "running" and steps_done(BAD) >= 200,
              f"{BAD} mid-run"):
    run("scancel", job2)
    job_gone(job2)
    status({"completed": 3, "interrupted": 1}, 0, "cancelled")
    rc, out = run(BIN, "sweep", SW, "--executor", "slurm", "--wait")
    if rc != 0 or "[1/1]" not in out:
        fail(f"resubmission with --wait: exit {rc}, no progress line:\n{out}")
    status({"completed": 4}, 0, "all done")
    if "resume" not in kinds(os.path.join(SLURM, BAD)):
        fail(f"{BAD}: no resume record after scancel and resubmission")
    if losses(os.path.join(SLURM, BAD)) != losses(os.path.join(LOCAL, BAD)):
        fail(f"{BAD}: cancelled and resubmitted, its losses differ from the local run's")
    else:
        print(f"{BAD}: cancelled, resubmitted, identical to local", flush=True)

# ---- 5. the time-limit warning (USR1 to the batch shell): checkpoint, requeue itself, resume -----
WARN = os.path.join(WORK, "warn")
warn_sweep = sweep_file("warn")
spec = json.load(open(warn_sweep))
spec["grid"], spec["seeds"] = {"model.n_layer": [2]}, [0]
json.dump(spec, open(warn_sweep, "w"))
rc, out = run(BIN, "sweep", warn_sweep, "--executor", "slurm")
job3 = submitted_job(out)
W = os.path.join(WARN, RUNS[2])
def warn_task():
    return json.load(open(os.path.join(W, "task.json")))
def warn_steps():
    return max((json.loads(l).get("step", 0) for l in open(os.path.join(W, "metrics.jsonl"))), default=0)
if rc != 0 or not job3:
    fail(f"the warning sweep was not submitted (exit {rc}):\n{out}")
elif wait_for(lambda: warn_task()["state"] == "running" and warn_steps() >= 300, "the warning task mid-run"):
    run("scancel", "--signal=USR1", "--batch", job3)  # what Slurm sends 120 s before the time limit
    wait_for(lambda: warn_task()["state"] == "exited" and warn_task()["exit"] == 143, "the warned task checkpointed")
    if not wait_for(lambda: "PENDING" in run("squeue", "-h", "-r", "-j", job3, "-o", "%i %T")[1],
                    "the warned task to requeue itself (PENDING in squeue)", timeout=30, step=0.2):
        print(run("squeue", "-h", "-r", "-j", job3, "-o", "%i %T")[1], flush=True)
    start_now(f"{job3}_0", time.time())
    job_gone(job3)
    wait_for(lambda: json.load(open(os.path.join(W, "summary.json")))["status"] == "completed",
             "the warned run to complete", timeout=60)
    if "resume" not in kinds(W) or losses(W) != losses(os.path.join(LOCAL, RUNS[2])):
        fail(f"warned, requeued by itself and resumed, the run is not identical to the local one "
             f"(records {kinds(W).count('resume')} resume); its log:\n" + open(os.path.join(W, "log.txt")).read()[-3000:])
    else:
        print("time-limit warning: checkpointed, requeued itself, resumed, identical to local", flush=True)

for r, m in mtimes.items():
    if os.stat(os.path.join(SLURM, r, "summary.json")).st_mtime_ns != m:
        fail(f"{r}: summary.json rewritten by a resubmission that should have skipped it")

print(f"check_slurm: {'FAILED' if failures else 'ok'} in {time.time() - t_start:.1f}s", flush=True)
sys.exit(1 if failures else 0)
PYEOF
if ((rc != 0)); then
  echo "check_slurm: exit $rc; the cluster's logs:"
  tail -n 15 "$STACKLAB_SLURM_DIR"/log/*.log || true
fi
exit "$rc"
