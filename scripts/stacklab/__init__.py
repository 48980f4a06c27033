"""stacklab's analysis package: run logs (runlog), safetensors files (io_util), the study's
statistics and findings (study_stats, study_findings), its report (report, report_doc), the
figures (plot_common, plot_run, plot_compare, plot_study), the tiers (tier), the training corpus
(make_corpus) and the model in PyTorch (torch_model).

Import it with scripts/ on the path: the entry points scripts/*.py get that for free (Python puts
a script's folder first on sys.path); elsewhere `PYTHONPATH=scripts python3 -m unittest ...` or
`PYTHONPATH=scripts python3 -c 'from stacklab import runlog'`. Importing the package imports no
module: numpy, matplotlib and torch load only with the modules that need them.
"""
