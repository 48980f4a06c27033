"""Where the package's modules moved when it was split by role (runs/, studies/, plots/): the old
flat names keep working, so users' scripts and `python3 -m stacklab.<old name>` do not break.

    import stacklab.escape_study          -> the module stacklab.studies.escape.study (same object)
    python3 -m stacklab.escape_study ...  -> says where it moved (stderr), then runs the new module

`install()` (called by the package's __init__) puts one finder on sys.meta_path that answers only
for the names in MOVED; everything else is found as usual. New code imports the new names.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys

# old name (stacklab.<old>) -> new name (stacklab.<new>)
MOVED = {
    "runlog": "runs.runlog", "io_util": "runs.io_util", "load": "runs.load",
    "checkpoint_config": "runs.checkpoint_config", "torch_model": "runs.torch_model",
    "nanogpt_export": "runs.nanogpt_export", "datasets": "runs.datasets", "make_corpus": "runs.make_corpus",
    "judge": "studies.judge", "study_findings": "studies.findings", "study_stats": "studies.stats",
    "study_text": "studies.text", "stability_map": "studies.prepost_map", "claims": "studies.claims",
    "convergence": "studies.convergence", "escape_law": "studies.escape.fit",
    "escape_results": "studies.escape.tables", "escape_core": "studies.escape.default_tier",
    "escape_study": "studies.escape.study", "signal_study": "studies.signal",
    "rules_check": "studies.rules_check", "verdicts": "studies.verdicts",
    "plot_common": "plots.common", "plot_compare": "plots.compare", "plot_convergence": "plots.convergence",
    "plot_escape_law": "plots.escape_law", "plot_run": "plots.run", "plot_study": "plots.study",
    "views": "plots.views",
}


def new_name(old):
    """'stacklab.escape_study' -> 'stacklab.studies.escape.study'; None for a name that did not move."""
    prefix, _, leaf = old.partition(".")
    return f"stacklab.{MOVED[leaf]}" if prefix == "stacklab" and leaf in MOVED else None


class _Alias(importlib.abc.Loader):
    """Loads an old name as the new module itself (one module object under both names)."""

    def __init__(self, new):
        self.new = new

    def create_module(self, spec):
        return None  # a placeholder, replaced in sys.modules by exec_module

    def exec_module(self, module):
        sys.modules[module.__name__] = importlib.import_module(self.new)

    def get_code(self, old):  # `python3 -m stacklab.<old>`: runpy runs this code as __main__
        src = (f"import runpy, sys\n"
               f"print('note: stacklab.{old.partition('.')[2]} is now {self.new}; running that',"
               f" file=sys.stderr)\n"
               f"runpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n")
        return compile(src, f"<{old}: moved to {self.new}>", "exec")

    def is_package(self, old):
        return False


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        new = new_name(name)
        return importlib.machinery.ModuleSpec(name, _Alias(new)) if new else None


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
