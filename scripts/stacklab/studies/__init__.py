"""The studies judged: each module reads runs (through stacklab.runs) or results tables and returns
typed verdicts, gathered by judge.Result and serialised as findings.json; none draws or writes a
report. findings (1-5), text (real text, rule P), prepost_map, claims (with
claim_runs and claim_rules), convergence, signal, escape/
(the escape law), rules_check (the one check of a run's config against a study's rules), stats
(seed statistics), verdicts (every verdict of a findings.json, and two compared).
"""
