"""The PyTorch mirror's model defaults are the binary's: torch_model.MODEL_DEFAULTS is a second copy
of scripts/stacklab/config_defaults.json's model section, kept on purpose (a model key the mirror
does not know is refused there, so a new key cannot pass parity unmirrored; docs/extending.md,
'Adding a config key', step 6). This test holds the two copies equal, key for key and value for
value, so neither drifts (config_defaults.json is itself pinned to `stacklab validate --defaults`).
"""
import json
import os
import unittest

try:
    import torch  # noqa: F401  (torch_model needs it)
except ImportError:  # the python stage's interpreter needs only numpy and matplotlib
    raise unittest.SkipTest("needs torch (apt-get install python3-torch)")
from stacklab.runs import torch_model

DEFAULTS = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "stacklab", "config_defaults.json")


class MirrorDefaults(unittest.TestCase):
    def test_the_mirrors_model_defaults_are_the_binarys(self):
        with open(DEFAULTS, encoding="utf-8") as fh:
            binary = json.load(fh)["model"]
        self.assertEqual(sorted(torch_model.MODEL_DEFAULTS), sorted(binary),
                         "a model key in one copy only: add it to the other (docs/extending.md)")
        for key, value in binary.items():
            self.assertEqual(torch_model.MODEL_DEFAULTS[key], value, f"model.{key}")


if __name__ == "__main__":
    unittest.main()
