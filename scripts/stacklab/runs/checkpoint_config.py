"""Was a checkpoint written with this run's config? The Python copy of the check every reader of a
checkpoint makes in the binary (src/train/checkpoint.cpp: check_checkpoint_config, with_added_keys,
resume_invariant, config_differences), for load_run and the nanoGPT export.

Both implementations pass the same cases (tests/fixtures/checkpoint_config_cases.json: the
GoogleTest in tests/train/checkpoint_test.cpp and tests/python/test_checkpoint_config.py), so they
cannot drift apart. A key a checkpoint lacks counts as its default: config_defaults.json beside this
file is `stacklab validate --defaults`, which tests/train/checkpoint_test.cpp holds equal to the
binary's Config{}. Not here: reading the checkpoint (load.py).
"""
import copy
import json
import os
from functools import lru_cache
from typing import List, Optional, Sequence
from stacklab.paths import CONFIG_DEFAULTS

# What a reader of a run's checkpoint lets differ beyond a resume (reader_may_differ() in
# src/train/checkpoint.cpp; the fixture's "reader_may_differ" holds both to it).
READER_MAY_DIFFER = ("optim.lr_decay_iters", "train.name", "train.out_dir")
DEFAULTS_PATH = CONFIG_DEFAULTS


@lru_cache(maxsize=1)
def _defaults() -> dict:
    with open(DEFAULTS_PATH, encoding="utf-8") as f:
        return json.load(f)


def defaults() -> dict:
    """stacklab's default config (`stacklab validate --defaults`: every key but train.name)."""
    return copy.deepcopy(_defaults())


def with_added_keys(stored):
    """stored with every key of a section it has, but lacks, set to its default (a key added to
    stacklab after the checkpoint was written: its default keeps the old behaviour). A section it
    lacks stays absent, as in the binary."""
    if not isinstance(stored, dict):
        return stored
    out = copy.deepcopy(stored)
    for section, keys in _defaults().items():
        if isinstance(keys, dict) and isinstance(out.get(section), dict):
            for key, value in keys.items():
                out[section].setdefault(key, copy.deepcopy(value))
    return out


def with_defaults(config):
    """A run's config.json as the binary reads it (parsed, then written back): every section and
    key it lacks at its default, the derived section dropped."""
    if not isinstance(config, dict):
        return config
    out = {k: copy.deepcopy(v) for k, v in config.items() if k != "derived"}
    for section, keys in _defaults().items():
        if section not in out:
            out[section] = copy.deepcopy(keys)
    return with_added_keys(out)


def resume_invariant(c, may_differ: Sequence[str]):
    """What must not change between a checkpoint and its reader: all but the derived section,
    train.max_iters, train.threads, the stop rule (train.stop_at, train.stop_below_unigram: a run
    stopped at one milestone goes on to a later one), the dotted keys of may_differ, and
    optim.lr_decay_iters compared resolved (0 is train.max_iters)."""
    if not isinstance(c, dict):
        return c
    c = copy.deepcopy(c)
    c.pop("derived", None)
    for key in may_differ:
        section, dot, rest = key.partition(".")
        if dot and isinstance(c.get(section), dict):
            c[section].pop(rest, None)
    train, optim = c.get("train"), c.get("optim")
    if not isinstance(train, dict) or not isinstance(optim, dict):
        return c
    max_iters = train.get("max_iters")
    if "lr_decay_iters" in optim and json_equal(optim["lr_decay_iters"], 0):
        optim["lr_decay_iters"] = max_iters
    train.pop("max_iters", None)
    train.pop("threads", None)
    train.pop("stop_at", None)
    train.pop("stop_below_unigram", None)
    return c


def json_equal(a, b) -> bool:
    """nlohmann::json's ==: numbers by value whatever their type (8 == 8.0), a bool only equal to
    a bool (true is not 1), null only to null, arrays and objects element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def config_differences(a, b, prefix: str = "") -> List[str]:
    """Every dotted key whose value differs between two configs, in the binary's order (a's keys
    sorted, then the keys only b has, sorted, at each level)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(a):
            key = f"{prefix}.{k}" if prefix else k
            out += config_differences(a[k], b[k], key) if k in b else [key]
        return out + [f"{prefix}.{k}" if prefix else k for k in sorted(b) if k not in a]
    return [] if json_equal(a, b) else [prefix or "(root)"]


def checkpoint_differences(written, expected, may_differ: Sequence[str] = READER_MAY_DIFFER) -> List[str]:
    """The dotted keys where a checkpoint's config (written) differs from the run's (expected)
    beyond what may_differ lets differ (checkpoint_config_differences in the binary)."""
    return config_differences(resume_invariant(expected, may_differ),
                              resume_invariant(with_added_keys(written), may_differ))


def value_at(j, dotted: str) -> str:
    cur = j
    for key in dotted.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return "(absent)"
        cur = cur[key]
    return json.dumps(cur)


def mismatch(path: str, written, expected, expected_where: str,
             may_differ: Sequence[str] = READER_MAY_DIFFER) -> Optional[str]:
    """None when the checkpoint at path was written with the expected config, else the binary's
    message: "PATH: written with a different config: 'KEY' is A in the checkpoint but B in WHERE"."""
    keys = checkpoint_differences(written, expected, may_differ)
    if not keys:
        return None
    return f"{path}: written with a different config: " + "; ".join(
        f"'{k}' is {value_at(written, k)} in the checkpoint but {value_at(expected, k)} in {expected_where}"
        for k in keys)
