"""PyTorch's side of tests/fixtures/display.txt: evaluates each case's torch
expression and prints it in the fixture's layout, so that

    python3 scripts/display_torch_check.py | diff tests/fixtures/display.txt -

shows nothing when our expected strings are exactly what torch prints.
"""
import pathlib

import torch

fixture = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "display.txt"
for line in fixture.read_text().splitlines():
    if line.startswith("### "):
        name, expr = line[4:].split(": ", 1)
        print(line)
        print(eval(expr, {"torch": torch}))
