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

It also writes benches/odd_layouts.json, layouts off the sweep's powers of
two, each in one dtype, sized and rotated by the same rule: rows of 6, 9,
12, 33, 37, 66, 100, 127, 255, 999, 1001 and 50257 (no vector divides most
of them, only a narrower one divides 66 f32 and 100 f16, and most rows
start unaligned); columns of an odd width (no output vector
fits, rows start unaligned) from 3 to 2048 high; channel statistics with an
odd H·W; two reduced dims that coalesce into rows of 63; an odd middle dim
and a narrow one (32 outputs a row); a transposed and a permuted view of
odd sizes; a full sum of an odd count; and small column and middle-dim sums
(under 10 MB), each rotated and, as `_cached`, read from the caches (rotate
= 1).

And benches/nd_rows.json, contiguous rows whose kept dims do not coalesce
(rows looked up one by one, not found by one stride): `[R, 2048, L]`
permuted to `[2048, R, L]` and summed over L, for L = 2, 4, 8, 16, 64, 128, 256
and 1024
in f32, f16, f64 and i64 at the sweep's sizes.

And benches/int_layouts.json, the integer dtypes the sweep leaves out (i32,
u8 and bool, whose sums accumulate in i64), as inner and outer rows of 2,
16, 128 and 4096 at the sweep's sizes. u8 and bool take every value of
their type; i32 takes [-1000, 1000) like i64.
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
ESIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8, "u8": 1, "bool": 1}


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


def odd_width(dtype, height):
    """An odd column count for `height` rows at the target size."""
    return max(1, target(dtype, False) // (height * ESIZE[dtype])) | 1


def odd_layouts():
    cases = []
    for dtype, length in [("f32", 6), ("f32", 9), ("f16", 12), ("bf16", 33), ("i64", 37), ("f32", 66),
                          ("f16", 100), ("f32", 127), ("f16", 255), ("f64", 999), ("f32", 1001),
                          ("f16", 50257)]:
        rows = lambda quick: max(1, target(dtype, quick) // (length * ESIZE[dtype]))  # noqa: E731
        cases.append(case(f"{dtype}_inner_L{length}", [rows(False), length], [rows(True), length], [1], dtype))
    for dtype, height in [("f16", 3), ("bf16", 7), ("f64", 5), ("f16", 16), ("f32", 64), ("f16", 2048)]:
        width = odd_width(dtype, height)
        quick = max(1, target(dtype, True) // (height * ESIZE[dtype])) | 1
        cases.append(case(f"{dtype}_outer_L{height}_W{width}", [height, width], [height, quick], [0], dtype))
    cases += [
        nd("chanstats_32_3_223_223", [32, 3, 223, 223], [0, 2, 3]),
        nd("chanstats_bf16_64_96_27_27", [64, 96, 27, 27], [0, 2, 3], dtype="bf16"),
        nd("two_dims_1065220_7_9", [1065220, 7, 9], [1, 2]),
        nd("middle_1000_333_201", [1000, 333, 201], [1]),
        nd("transposed_8191_8193", [8191, 8193], [1], view="transpose(0,1)", quick=[255, 8193]),
        nd("permuted_255_257_1023", [255, 257, 1023], [2], view="permute(2,0,1)", quick=[7, 257, 1023]),
        nd("full_67108863", [67108863], [0], quick=[2097151]),
        nd("middle_2048_1000_32", [2048, 1000, 32], [1]),
        nd("small_columns_333_6432", [333, 6432], [0], quick=[333, 6432]),
        nd("small_columns_333_6432_cached", [333, 6432], [0], rot=1, quick=[333, 6432]),
        nd("small_middle_256_100_50", [256, 100, 50], [1], quick=[256, 100, 50]),
        nd("small_middle_256_100_50_cached", [256, 100, 50], [1], rot=1, quick=[256, 100, 50]),
    ]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names are unique"
    return cases


def int_layouts():
    cases = []
    for dtype in ("i32", "u8", "bool"):
        for length in (2, 16, 128, 4096):
            cases += row_cases(dtype, length)
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names are unique"
    return cases


def nd_rows():
    return [
        nd(f"nd_{dtype}_rows{length}", [target(dtype, False) // (length * 2048 * ESIZE[dtype]), 2048, length], [2],
           view="permute(1,0,2)", dtype=dtype)
        for dtype in ("f32", "f16", "f64", "i64")
        for length in (2, 4, 8, 16, 64, 128, 256, 1024)
    ]


def write(name, about, cases):
    path = ROOT / "benches" / name
    path.write_text(json.dumps({"about": about, "cases": cases}, indent=1) + "\n")
    total = sum(c["input_bytes"] for c in cases)
    print(f"wrote {path}: {len(cases)} cases, {total / 1e9:.1f} GB of input in all")


def main():
    write("sweep.json",
          "The shape sweep, written by scripts/gen_sweep.py (its docstring is the rule; edit the script, not this file). "
          "Same fields as suite.json, plus rotate (copies of the input cycled through, so that inputs under 128 MiB are read "
          "from DRAM on every call) and quick_base_shape (the case at about 8 MiB, for --quick). i64 inputs are integers "
          "in [-1000, 1000), the others randn.",
          sweep())
    write("odd_layouts.json",
          "Layouts off the sweep's powers of two, written by scripts/gen_sweep.py (its docstring is the rule). "
          "Same fields as sweep.json.",
          odd_layouts())
    write("nd_rows.json",
          "Rows looked up one by one (their kept dims do not coalesce): [R, 2048, L] permuted to [2048, R, L], summed "
          "over L, written by scripts/gen_sweep.py (its docstring is the rule). Same fields as sweep.json.",
          nd_rows())
    write("int_layouts.json",
          "The integer dtypes the sweep leaves out (i32, u8, bool; each summed into i64), as rows and columns of 2, 16, "
          "128 and 4096, written by scripts/gen_sweep.py (its docstring is the rule). Same fields as sweep.json.",
          int_layouts())


if __name__ == "__main__":
    main()
