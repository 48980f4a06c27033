#!/usr/bin/env python3
"""Writes data/corpus.txt: English-like prose from a small hand-written grammar (standard library only).

    python3 scripts/make_corpus.py [--out data/corpus.txt]

The code is in the package: stacklab/runs/make_corpus.py.
"""
import sys

from stacklab.runs.make_corpus import main

if __name__ == "__main__":
    sys.exit(main())
