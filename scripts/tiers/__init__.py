"""The study's tiers as scripts/reproduce.sh runs them: the orchestration behind scripts/tier.py,
apart from the analysis package (which judges runs and does not run them).

    cli.py      the command line (`python3 scripts/tier.py SUBCOMMAND ...`, `--help`)
    files.py    which sweep files an invocation runs (files, list, later, text-files) and deepest
    full.py     full-configs: configs/experiments/full/*.json from the quick tier's files
    prepare.py  prepare: OUT/sweeps/<name>.json (out_dir OUT/<name>, train.keep_final, --tiny)
    extend.py   extend: copy the runs an extension sweep continues
    size.py     size: a tier's runs and estimated core-hours (`stacklab sweep --dry-run`, `stacklab bench`)

What the tiers hold (their sweep lists, which sweep covers or extends another, how the full tier and
--tiny change a sweep) is data: configs/experiments/tiers.json, read by stacklab.runs.tier_lists, which
these modules, the judges and the tests import. Not here: running the sweeps (reproduce.sh, stacklab
sweep), the report (report.py).
"""
