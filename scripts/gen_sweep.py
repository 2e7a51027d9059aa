#!/usr/bin/env python3
"""Writes benches/sweep.json, the shape sweep, from the rule below.

    python3 scripts/gen_sweep.py            # rewrites benches/sweep.json

The rule (the JSON carries it in "about" too):

- Row lengths L = 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384,
  65536, as an inner reduction (shape [R, L], dims [1]) and an outer one
  (shape [L, R], dims [0]), with R chosen so that the input is 256 MiB (128
  MiB for 8-byte dtypes). f32 covers every L; f16, bf16, f64 and i64 cover
  L = 2, 16, 128, 4096, 16384, 65536 (short rows, a warp, a block, long rows
  with many rows and with few).
- Odd row lengths 3, 5, 7 and 100 in f32, inner and outer (3 is in the list
  above already; its inner/outer twins are not repeated).
- Multi-dim f32 cases: channel statistics (N, C, H, W over (0, 2, 3)) with
  C = 3, 64 and 1024, and over a channels-last base (permuted view); a middle
  dim; a permuted view reducing a base's middle dim; and, for small inputs, a
  channel-statistics and two short-row cases of 4-32 MB.
- Input dtype i64 is filled with integers in [-1000, 1000), the others with
  randn.
- Every case whose input is under 128 MiB rotates among `rotate` copies of
  its input, with rotate * input bytes >= 128 MiB (more than twice the H200's
  60 MB L2), so that each call reads from DRAM. One small case has a twin
  with rotate = 1 (`_l2`) to show what the L2 gives.
- `quick_base_shape` is the same case at about 8 MiB (4 MiB for 8-byte
  dtypes), for `--quick` runs on small machines.
"""

import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
ROTATE_BYTES = 128 * MIB
LENGTHS = [1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536]
OTHER_DTYPE_LENGTHS = [2, 16, 128, 4096, 16384, 65536]
ODD_LENGTHS = [5, 7, 100]
ESIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i64": 8}


def target(dtype, quick):
    full = 128 * MIB if ESIZE[dtype] == 8 else 256 * MIB
    return full // 32 if quick else full


def nbytes(shape, dtype):
    return math.prod(shape) * ESIZE[dtype]


def rotate(input_bytes):
    return 1 if input_bytes >= ROTATE_BYTES else math.ceil(ROTATE_BYTES / input_bytes)


def case(name, shape, quick_shape, dims, dtype, view="none", rot=None):
    b = nbytes(shape, dtype)
    return {
        "name": name,
        "base_shape": shape,
        "quick_base_shape": quick_shape,
        "view": view,
        "dims": dims,
        "dtype": dtype,
        "input_bytes": b,
        "rotate": rotate(b) if rot is None else rot,
    }


def row_cases(dtype, length):
    rows = lambda quick: max(1, target(dtype, quick) // (length * ESIZE[dtype]))  # noqa: E731
    prefix = "" if dtype == "f32" else f"{dtype}_"
    return [
        case(f"{prefix}inner_L{length}", [rows(False), length], [rows(True), length], [1], dtype),
        case(f"{prefix}outer_L{length}", [length, rows(False)], [length, rows(True)], [0], dtype),
    ]


def scaled(shape, dtype, quick):
    """`shape` with its first dim cut down to reach the quick target (the
    callers' first dims are kept dims)."""
    if not quick:
        return shape
    f = max(1, nbytes(shape, dtype) // target(dtype, True))
    return [max(1, shape[0] // f)] + shape[1:]


def nd(name, shape, dims, view="none", dtype="f32", rot=None, quick=None):
    return case(name, shape, quick or scaled(shape, dtype, True), dims, dtype, view, rot)


def sweep():
    cases = []
    for length in LENGTHS:
        cases += row_cases("f32", length)
    for length in ODD_LENGTHS:
        cases += row_cases("f32", length)
    for dtype in ("f16", "bf16", "f64", "i64"):
        for length in OTHER_DTYPE_LENGTHS:
            cases += row_cases(dtype, length)
    cases += [
        nd("chanstats_64_3_512_512", [64, 3, 512, 512], [0, 2, 3]),
        nd("chanstats_256_64_56_56", [256, 64, 56, 56], [0, 2, 3]),
        nd("chanstats_64_1024_32_32", [64, 1024, 32, 32], [0, 2, 3]),
        nd("chanstats_f16_256_64_56_56", [256, 64, 56, 56], [0, 2, 3], dtype="f16"),
        nd("chanstats_nhwc_128_56_56_128", [128, 56, 56, 128], [0, 2, 3], view="permute(0,3,1,2)"),
        nd("middle_64_4096_256", [64, 4096, 256], [1]),
        nd("middle_1024_64_1024", [1024, 64, 1024], [1]),
        nd("permuted_256_256_1024", [256, 256, 1024], [2], view="permute(2,0,1)"),
        # Small inputs: rotated so that every call reads from DRAM.
        nd("small_chanstats_32_64_56_56", [32, 64, 56, 56], [0, 2, 3]),
        nd("small_inner_L128_4MB", [8192, 128], [1]),
        nd("small_outer_L128_32MB", [128, 65536], [0], quick=[128, 16384]),
        nd("small_inner_L128_4MB_l2", [8192, 128], [1], rot=1),
    ]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names are unique"
    return cases


def main():
    doc = {
        "about": "The shape sweep, written by scripts/gen_sweep.py (its docstring is the rule; edit the script, not this file). "
        "Same fields as suite.json, plus rotate (copies of the input cycled through, so that inputs under 128 MiB are read "
        "from DRAM on every call) and quick_base_shape (the case at about 8 MiB, for --quick). i64 inputs are integers "
        "in [-1000, 1000), the others randn.",
        "cases": sweep(),
    }
    path = ROOT / "benches" / "sweep.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    total = sum(c["input_bytes"] for c in doc["cases"])
    print(f"wrote {path}: {len(doc['cases'])} cases, {total / 1e9:.1f} GB of input in all")


if __name__ == "__main__":
    main()
