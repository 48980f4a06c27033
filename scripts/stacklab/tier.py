"""Moved (issue 58): the tiers' orchestration is scripts/tiers/ (behind scripts/tier.py), their sweep
lists configs/experiments/tiers.json, read by stacklab.runs.tier_lists. This stub keeps the old name
working: `python3 -m stacklab.tier ARGS` says where it moved (stderr) and runs `scripts/tier.py ARGS`;
`from stacklab.tier import CLAIMS_SWEEPS` (any name of stacklab.runs.tier_lists) still imports, and the
orchestration's names (tier.main, tier.cost_model, ...) load from scripts/tiers/ on first use.
New code imports stacklab.runs.tier_lists; no module of the package imports this one.
"""
import importlib
import os
import sys

from stacklab.runs.tier_lists import *  # noqa: F401,F403 (the old names of the sweep lists)
from stacklab.runs.tier_lists import ROOT

_ORCHESTRATION = ("tiers.cli", "tiers.files", "tiers.full", "tiers.prepare", "tiers.extend", "tiers.size")


def _orchestration():
    """scripts/tiers/'s modules, scripts/ put on sys.path if it is not (the package was found elsewhere)."""
    scripts = os.path.join(ROOT, "scripts")
    if scripts not in sys.path:
        sys.path.append(scripts)
    return [importlib.import_module(m) for m in _ORCHESTRATION]


def __getattr__(name):  # PEP 562: tier.main, tier.cost_model, ... from scripts/tiers/
    for module in _orchestration():
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module 'stacklab.tier' has no attribute '{name}' (moved to scripts/tiers/?)")


if __name__ == "__main__":
    print("note: stacklab.tier is now scripts/tier.py (the code: scripts/tiers/; the sweep lists: "
          "configs/experiments/tiers.json); running that", file=sys.stderr)
    sys.exit(_orchestration()[0].main())
