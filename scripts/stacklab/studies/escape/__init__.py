"""The escape law: fit (the law's censored fit and its prediction), tables (the runs as results
tables, docs/results/escape_law*.csv), default_tier (the law's core, judged in the default tier)
and study (the opt-in law over all its sweeps, `python3 -m stacklab.studies.escape.study`).
"""
