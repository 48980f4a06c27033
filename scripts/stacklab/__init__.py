"""stacklab's analysis package: run logs (runlog), safetensors files (io_util), the study's
statistics and findings (study_stats, study_findings), the study judged once (judge) and its
report (the report subpackage), the figures (plot_common, plot_run, plot_compare, plot_study), the
tiers (tier), the training corpus (make_corpus), the model in PyTorch (torch_model, load), its
nanoGPT export (nanogpt_export) and the explorable HTML views (views).

Import it with scripts/ on the path: the entry points scripts/*.py get that for free (Python puts
a script's folder first on sys.path); elsewhere `PYTHONPATH=scripts python3 -m unittest ...` or
`PYTHONPATH=scripts python3 -c 'from stacklab import runlog'`, or from any folder after the one
set-up step `bash scripts/link_package.sh`. Importing the package imports no
module: numpy, matplotlib and torch load only with the modules that need them.

`stacklab.load_run(RUN_DIR)` (a trained run as a torch.nn.Module, stacklab/load.py) is the one name
the package itself holds; it loads torch on first use.
"""


def __getattr__(name):  # PEP 562: torch loads on first use of load_run, not on `import stacklab`
    if name == "load_run":
        from .load import load_run
        return load_run
    raise AttributeError(f"module 'stacklab' has no attribute '{name}'")
