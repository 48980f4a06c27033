"""Where the package finds the checkout it lives in: the repository's root and the files the
package reads from it (the experiments' rules and sweep files, the binary's config defaults).
Defined once here, so a module that moves inside the package keeps finding them.
"""
import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))   # scripts/stacklab
ROOT = os.path.dirname(os.path.dirname(PACKAGE))        # the checkout: scripts/stacklab/../..
EXPERIMENTS = os.path.join(ROOT, "configs", "experiments")
CONFIG_DEFAULTS = os.path.join(PACKAGE, "config_defaults.json")  # `stacklab validate --defaults`


def in_root(*parts):
    """A path below the checkout's root: in_root("configs", "base.json")."""
    return os.path.join(ROOT, *parts)
