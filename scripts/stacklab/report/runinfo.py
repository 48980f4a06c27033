"""How a study was run, as the report states it: each reproduce.sh invocation from OUT/timing.jsonl
(version, commit, cores, the stages' wall times) and the numeric path (OPENBLAS_CORETYPE, the
OpenBLAS core, the matrix-product path, the CPU, each run's start record). Used by page.py.
Not here: the findings, the tables, the figures.
"""
import json
from collections import defaultdict

from stacklab.studies.findings import fmt


def timing_lines(stages, sweeps):
    """One block per reproduce.sh invocation (a resumed study has several)."""
    start = next((s for s in stages if s.get("stage") == "start"), None)
    lines = []
    if not start:
        lines.append("no timing.jsonl (not run by scripts/reproduce.sh): version and wall time unknown")
    n = 0
    t_start = None
    for s in stages:
        st = s.get("stage")
        if st == "start":
            n += 1
            lines.append(f"invocation {n} of reproduce.sh ({s.get('tier', 'quick')} tier): stacklab version "
                         f"{s.get('version', '?')}, commit `{s.get('commit', '?')}`"
                         + (" with uncommitted changes in src/ or CMakeLists.txt" if s.get("dirty") else "")
                         + f", binary {s.get('binary', '?')}; {s.get('nproc', '?')} cores, "
                         + ("runs on Slurm" if s.get("executor") == "slurm" else f"{s.get('jobs', '?')} runs at once")
                         + f", load average at start {s.get('loadavg', '?')}")
            t_start = float(s["time"]) if s.get("time") else None
        elif st == "setup":
            took = "skipped (STACKLAB_BIN)" if s.get("skipped") else f"{fmt(s['seconds'], 4)} s"
            lines.append("  setup (build): " + took)
        elif st == "size":
            lines.append(f"  size: {s.get('runs')} runs ({s.get('done')} done), "
                         f"estimated {fmt(s.get('core_hours'), 3)} "
                         f"core-hours ({s.get('model', '')})")
        elif st == "sweep":
            stop = " (stopped by a signal: incomplete)" if (s.get("exit") or 0) >= 128 else ""
            lines.append(f"  sweep {s['sweep']}: {fmt(s['seconds'], 4)} s{stop}")
        elif st == "submitted":
            lines.append("  submitted to Slurm and returned (the runs' own wall times are in their summaries)")
        elif st == "plots":
            lines.append(f"  plots: {fmt(s['seconds'], 3)} s")
        elif st == "end" and t_start is not None and s.get("time"):
            lines.append(f"  **whole invocation (setup, sweeps, plots): {(float(s['time']) - t_start) / 60:.1f} min**")
    sweep_s = [s for s in stages if s.get("stage") == "sweep"]
    if sweep_s:
        minutes = sum(s['seconds'] for s in sweep_s) / 60
        lines.append(f"**suite wall time (all sweeps, all invocations): {minutes:.1f} min**")
    run_secs = [r.summary.get("wall_seconds") for s in sweeps for r in s.runs
                if r.summary and r.summary.get("wall_seconds")]
    if run_secs:
        lines.append(f"summed training wall time of the completed runs: {sum(run_secs) / 60:.1f} min "
                     f"(longest run {max(run_secs) / 60:.1f} min)")
    return lines


def numeric_path_lines(stages, runs):
    """What decides the arithmetic: OpenBLAS's kernel choice, the build's matrix-product path and
    vector-loop clone, threads per run, the CPU. From each run's start record (`numeric_path`,
    binaries that write it) and reproduce.sh's timing.jsonl (OPENBLAS_CORETYPE, CPU model)."""
    starts = [s for s in stages if s.get("stage") == "start"]
    lines = []
    for i, s in enumerate(starts, 1):
        ct = s.get("openblas_coretype")
        lines.append(f"invocation {i}: OPENBLAS_CORETYPE "
                     + (f"= `{ct}`" if ct else "unset (OpenBLAS picks its kernels)")
                     + f"; OpenBLAS core: {s.get('openblas_core') or 'not recorded'}"
                     + (f"; matrix products: {s['matmul']}" if s.get("matmul") else "")
                     + (f"; vector loops: {s['vector_loops']}" if s.get("vector_loops") else "")
                     + f"; CPU: {s.get('cpu_model') or 'not recorded'}"
                     + f"; OMP_NUM_THREADS={s.get('omp_num_threads', '?')}")
    if not starts:
        lines.append("no timing.jsonl: OPENBLAS_CORETYPE and the CPU model not recorded")
    paths = defaultdict(int)
    for r in runs:
        npth = r.start.get("numeric_path")
        if isinstance(npth, dict):
            paths[json.dumps(npth, sort_keys=True)] += 1
    for k, n in sorted(paths.items(), key=lambda kv: -kv[1]):
        d = json.loads(k)
        lines.append(f"{n} of {len(runs)} training runs' start records: " + ", ".join(f"{a} {b}" for a, b in d.items()))
    if not paths:
        lines.append("the runs' start records name no numeric path (binary older than that record)")
    threads = sorted({(r.config.get("train") or {}).get("threads") for r in runs} - {None})
    lines.append("threads per run (train.threads of the runs): " + (", ".join(map(str, threads)) or "unknown"))
    return lines
