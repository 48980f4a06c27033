"""The key table of docs/reference.md (## Configs) lists every config key with its default: the same
keys per section as scripts/stacklab/config_defaults.json (which tests/train/checkpoint_test.cpp
pins to `stacklab validate --defaults`), and where a row gives a literal default (a number, true,
false, null or a quoted string) it is the binary's. A key added to the binary without its row here
fails, naming the key; so does a row for a key that is gone, or a default that changed.
"""
import json
import math
import os
import re
import unittest

from stacklab import paths

REFERENCE = os.path.join(paths.ROOT, "docs", "reference.md")
DEFAULTS = os.path.join(paths.ROOT, "scripts", "stacklab", "config_defaults.json")

# Keys `stacklab validate --defaults` leaves out of config_defaults.json: train.name defaults to the
# config file's stem.
NOT_IN_DEFAULTS = {("train", "name")}

ROW = re.compile(r"^\| `(\w+)` \| (.*) \|\s*$")
KEY = re.compile(r"`(\w+)` \(")
# The head of a default: up to the first ')', ';', ':', ',', ' =' or ' \|'.
HEAD = re.compile(r"\s*(.*?)(?:\)|;|:|,| =| \\\|)")


def table_rows(text: str) -> dict:
    """{section: row text} of the key table under '## Configs'."""
    m = re.search(r"^## Configs\s*$(.*?)^## ", text, re.S | re.M)
    if not m:
        raise AssertionError("docs/reference.md has no '## Configs' section")
    return {r.group(1): r.group(2) for r in map(ROW.match, m.group(1).splitlines()) if r}


def documented(row: str) -> dict:
    """{key: the text that follows '`key` ('} for each key of one row."""
    hits = list(KEY.finditer(row))
    return {h.group(1): row[h.end():(hits[i + 1].start() if i + 1 < len(hits) else len(row))]
            for i, h in enumerate(hits)}


def literal(text: str):
    """(True, value) when the default's text starts with a JSON literal, else (False, None)."""
    head = HEAD.match(text + ")").group(1).strip()
    try:
        return True, json.loads(head)
    except ValueError:
        return False, None


def same(doc, value) -> bool:
    if isinstance(value, bool) or value is None or isinstance(doc, bool) or doc is None:
        return doc is value
    if isinstance(value, (int, float)) and isinstance(doc, (int, float)):
        return math.isclose(doc, value, rel_tol=1e-12)
    return doc == value


def problems(text: str, defaults: dict) -> list:
    rows = table_rows(text)
    out = []
    sections = sorted(k for k, v in defaults.items() if isinstance(v, dict))
    for section in sections:
        if section not in rows:
            out.append(f"section '{section}' has no row")
            continue
        doc = documented(rows[section])
        for key in sorted(set(defaults[section]) - set(doc)):
            out.append(f"{section}.{key} (default {json.dumps(defaults[section][key])}) is missing")
        for key in sorted(set(doc) - set(defaults[section])):
            if (section, key) not in NOT_IN_DEFAULTS:
                out.append(f"{section}.{key} is listed but is not a key")
        for key in sorted(set(doc) & set(defaults[section])):
            value = defaults[section][key]
            is_literal, shown = literal(doc[key])
            if is_literal and not same(shown, value):
                out.append(f"{section}.{key}: the table says {json.dumps(shown)}, the default is "
                           f"{json.dumps(value)}")
            if not is_literal and value != "":
                out.append(f"{section}.{key}: the table does not show its default {json.dumps(value)}")
    for section in sorted(set(rows) - set(sections)):
        out.append(f"row '{section}' is not a config section")
    return out


class KeyTable(unittest.TestCase):
    def test_every_key_is_listed_with_its_default(self):
        with open(REFERENCE, encoding="utf-8") as fh:
            text = fh.read()
        with open(DEFAULTS, encoding="utf-8") as fh:
            defaults = json.load(fh)
        found = problems(text, defaults)
        self.assertEqual(found, [], "docs/reference.md, the key table under '## Configs': "
                         + "; ".join(found) + " (write `key` (default) into its section's row)")


class Parsing(unittest.TestCase):
    TABLE = ("## Configs\n\n| section | keys (default) |\n|---|---|\n"
             "| `model` | `n_layer` (4), `norm` (\"layernorm\" \\| \"none\"), `final_norm` (null = auto), "
             "`bias` (true: with `n_layer`, ...), `norm_eps` (1e-5) |\n"
             "| `train` | `name` (the config file's stem), `seed` (1337; its own) |\n\n## Data\n")
    DEFAULTS = {"description": "", "model": {"n_layer": 4, "norm": "layernorm", "final_norm": None,
                                             "bias": True, "norm_eps": 1e-05},
                "train": {"seed": 1337}}

    def test_a_table_that_matches_has_no_problems(self):
        self.assertEqual(problems(self.TABLE, self.DEFAULTS), [])

    def test_a_missing_key_an_extra_key_and_a_wrong_default_are_named(self):
        d = json.loads(json.dumps(self.DEFAULTS))
        d["model"]["qk_norm"] = False
        d["train"]["seed"] = 7
        del d["model"]["bias"]
        self.assertEqual(problems(self.TABLE, d), [
            "model.qk_norm (default false) is missing",
            "model.bias is listed but is not a key",
            "train.seed: the table says 1337, the default is 7"])

    def test_prose_stands_for_an_empty_default_only(self):
        d = json.loads(json.dumps(self.DEFAULTS))
        d["train"]["name"] = "run"
        self.assertEqual(problems(self.TABLE, d),
                         ["train.name: the table does not show its default \"run\""])
        d["train"]["name"] = ""
        self.assertEqual(problems(self.TABLE, d), [])


if __name__ == "__main__":
    unittest.main()
