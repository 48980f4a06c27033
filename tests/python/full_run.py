"""The tests the edit loop leaves to the complete run. `scripts/test.sh --fast` runs the python stage with
STACKLAB_FAST_TESTS=1; a test (or class) decorated @full_run_only is then skipped, and every other run
(`scripts/test.sh`, CI, a plain `python3 -m unittest discover -s tests/python`) runs it. Only tests that
cost seconds each take it (the escape law's profile-likelihood fits above all), and every test module
keeps tests of its own that --fast runs (test_full_run holds both rules). docs/testing.md, "The edit loop".

    from full_run import full_run_only

    @full_run_only
    def test_three_escaped_depths_are_fitted(self): ...
"""
import os
import unittest

ENV = "STACKLAB_FAST_TESTS"
FAST = os.environ.get(ENV) == "1"
REASON = f"full run only ({ENV}=1: scripts/test.sh --fast leaves it to the complete run)"


def full_run_only(obj):
    """Marks a test method or class as one the edit loop skips; skipped only when STACKLAB_FAST_TESTS=1."""
    obj.full_run_only = True
    return unittest.skip(REASON)(obj) if FAST else obj


def is_full_run_only(test_class, method_name) -> bool:
    """Whether test_class.method_name is left to the complete run (marked itself or through its class)."""
    return bool(getattr(test_class, "full_run_only", False)
                or getattr(getattr(test_class, method_name, None), "full_run_only", False))
