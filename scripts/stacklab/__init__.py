"""stacklab's analysis package, by role. From the folder names alone:

    runs/      reading what the binary writes: run folders and sweeps, checkpoints, the PyTorch mirror
    studies/   the studies judged: each reads runs or results tables and returns verdicts; draws nothing
    plots/     the figures and the HTML views, drawn from runs or from judged studies
    report/    the report (report.md, report.html), rendered from a judged study only

runs/       runlog (what every reader of runs shares, and the names below it: loaded_run, the Run;
            run_files, reading one run folder or probe file; sweep_dirs, a sweep's runs and finding
            runs), io_util (safetensors), checkpoint_config (was a checkpoint written with this
            config?), torch_model and load (a run as a PyTorch module; torch_model_checks, the
            mirror's self-checks), nanogpt_export, datasets (the data step), make_corpus (data/corpus.txt),
            tier_lists (the tiers' sweep lists, configs/experiments/tiers.json, and a tier's sweep file
            as prepared)
studies/    judge (the study judged once into Result), findings (findings 1-5; training: the
            training points they read), stats (seed statistics), text (real text and rule P),
            prepost_map (the stability map), claims (the verdicts; claim_runs: the claims' files, runs
            and outcomes; claim_rules: each claim's rule), convergence (convergence_short: its pre vs
            post and short against long), signal (the residual or the
            signal; signal_text: it as text and as findings.json's record), escape/ (fit: the escape law's fit;
            tables: the results tables; default_tier: the law's core in the default tier; study:
            the opt-in law judged; rows: its tables read; checks: its deep, second-path and
            pooled-rank checks), rules_check (a run's config against its rules), verdicts
plots/      common, run (one run), compare (a sweep; its per-layer figures in layer_figures, its runs
            grouped by wiring and depth in depth_groups), study (the study's figures), convergence,
            escape_law, prepost_map (the stability map's figure), views (the HTML views)
report/     see report/__init__.py
paths.py    the checkout's root and the files the package reads from it
moved.py    the old flat module names (stacklab.escape_study, ...), still importable and runnable
tier.py     moved out of the package: running the tiers is scripts/tiers/ (behind scripts/tier.py),
            their lists runs/tier_lists; this stub keeps `python3 -m stacklab.tier` and the old names

Import it with scripts/ on the path: the entry points scripts/*.py get that for free (Python puts
a script's folder first on sys.path); elsewhere `PYTHONPATH=scripts python3 -m unittest ...` or
`PYTHONPATH=scripts python3 -c 'from stacklab.runs import runlog'`, or from any folder after the one
set-up step `bash scripts/link_package.sh`. Importing the package imports no module of its own but
moved.py: numpy, matplotlib and torch load only with the modules that need them.

`stacklab.load_run(RUN_DIR)` (a trained run as a torch.nn.Module, stacklab/runs/load.py) is the one
name the package itself holds; it loads torch on first use.
"""
from stacklab import moved

moved.install()


def __getattr__(name):  # PEP 562: torch loads on first use of load_run, not on `import stacklab`
    if name == "load_run":
        from stacklab.runs.load import load_run
        return load_run
    raise AttributeError(f"module 'stacklab' has no attribute '{name}'")
