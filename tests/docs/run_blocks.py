"""Runs the Python blocks of one page in order, in one namespace (a page reads like a notebook):
``python run_blocks.py BLOCKS.json`` with ``[[label, code], ...]``; each block is compiled with its
label (``README.md:15``) as file name, so a traceback names the page and line."""

import json
import sys

namespace = {"__name__": "__main__"}
for label, code in json.load(open(sys.argv[1])):
    print(f"--- {label}", flush=True)
    exec(compile(code, label, "exec"), namespace)
print("--- all blocks ran", flush=True)
