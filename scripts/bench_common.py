"""Shared by scripts/compare_gpu.py and scripts/compare_cpu.py: the case
lists, views, each op's torch and CuPy call, running our bench, and table
helpers. Mirrors benches/common (the Rust side) where both must agree."""

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 0x5EED
DASH = "–"
# As benches/common: inputs this large are read from DRAM even when reused.
DRAM_BYTES = 128 << 20
ESIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8, "u8": 1, "bool": 1}
CASE_SETS = ("suite", "sweep")
OPS = ("sum", "mean", "prod", "nansum", "amax", "amin", "any", "all",
       "argmax", "argmin", "max_dim", "var", "std", "norm", "logsumexp")


def case_set_arg(value):
    """--cases: a list's name, or a .json file of the same form (as the Rust
    benches' --cases)."""
    if value in CASE_SETS or value.endswith(".json"):
        return value
    raise ValueError(f"--cases takes {', '.join(CASE_SETS)} or a .json case list, got {value!r}")


def load_cases(case_set, quick=False, filters=()):
    """The cases of benches/<case_set>.json, or of the file case_set names;
    `quick` takes the sweep's small shapes, as the Rust benches' --quick
    does."""
    path = case_set if case_set.endswith(".json") else ROOT / "benches" / f"{case_set}.json"
    with open(path) as f:
        cases = json.load(f)["cases"]
    out = []
    for c in cases:
        c = dict(c)
        c.setdefault("rotate", 1)
        if quick and "quick_base_shape" in c:
            c["base_shape"] = c["quick_base_shape"]
            c["input_bytes"] = math.prod(c["base_shape"]) * ESIZE[c["dtype"]]
        if not filters or any(s in c["name"] for s in filters):
            out.append(c)
    return out


def reads_from(case):
    """Where a repeated call reads its input from (as Case::reads_from)."""
    if case.get("rotate", 1) > 1:
        return f"DRAM ({case['rotate']} copies)"
    return "DRAM" if case["input_bytes"] >= DRAM_BYTES else "L2-warm"


def parse_view(view):
    """('none'|'transpose'|'permute', args) from the case's view string."""
    import re

    if view == "none":
        return ("none", ())
    m = re.fullmatch(r"(transpose|permute)\(([-\d,\s]+)\)", view)
    if not m:
        raise ValueError(f"unknown view {view!r}")
    return (m.group(1), tuple(int(v) for v in m.group(2).split(",")))


def torch_view(x, view):
    kind, args = parse_view(view)
    if kind == "transpose":
        return x.transpose(*args)
    if kind == "permute":
        return x.permute(*args)
    return x


def cupy_view(x, view):
    kind, args = parse_view(view)
    if kind == "transpose":
        return x.swapaxes(*args)
    if kind == "permute":
        return x.transpose(args)
    return x


def int_range(dtype):
    """As benches/common's int_range: every value of bool and u8, [-1000,
    1000) for the wider integers."""
    return {"bool": (0, 2), "u8": (0, 256)}.get(dtype, (-1000, 1000))


def torch_dtype(name):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
            "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}[name]


def torch_input(case, device, gen):
    """The case's base tensor for torch: seeded randn, or integers in
    int_range for integer dtypes (the data differ from ours; the work does not)."""
    import torch

    gen.manual_seed(SEED)
    dt = torch_dtype(case["dtype"])
    if dt.is_floating_point:
        return torch.randn(case["base_shape"], dtype=dt, device=device, generator=gen)
    # Drawn as u8 for bool (randint's bool support varies by release).
    draw = torch.uint8 if dt == torch.bool else dt
    x = torch.randint(*int_range(case["dtype"]), case["base_shape"], dtype=draw, device=device, generator=gen)
    return x.to(dt)


class NotApplicable(Exception):
    """The peer has no such call for this case (e.g. a one-dim op, several dims)."""


def one_dim(dims):
    if len(dims) != 1:
        raise NotApplicable(f"takes one dim, the case reduces {len(dims)}")
    return dims[0]


def torch_call(op):
    """fn(x, dims) calling torch's version of `op`."""
    import torch

    return {
        "sum": lambda x, d: torch.sum(x, dim=d),
        "mean": lambda x, d: torch.mean(x, dim=d),
        # torch.prod takes one dim.
        "prod": lambda x, d: torch.prod(x, dim=one_dim(d)),
        "nansum": lambda x, d: torch.nansum(x, dim=d),
        "amax": lambda x, d: torch.amax(x, dim=d),
        "amin": lambda x, d: torch.amin(x, dim=d),
        "any": lambda x, d: torch.any(x, dim=d),
        "all": lambda x, d: torch.all(x, dim=d),
        "argmax": lambda x, d: torch.argmax(x, dim=one_dim(d)),
        "argmin": lambda x, d: torch.argmin(x, dim=one_dim(d)),
        "max_dim": lambda x, d: torch.max(x, dim=one_dim(d)),
        "var": lambda x, d: torch.var(x, d, correction=1),
        "std": lambda x, d: torch.std(x, d, correction=1),
        "norm": lambda x, d: torch.linalg.vector_norm(x, 2, d),
        "logsumexp": lambda x, d: torch.logsumexp(x, d),
    }[op]


# Ops CuPy routes through CUB under CUPY_ACCELERATORS=cub (when the reduced
# axes are contiguous in memory; otherwise it falls back to its own kernel).
CUB_OPS = {"sum", "prod", "amax", "amin", "argmax", "argmin"}
# Ops CuPy has at all.
CUPY_OPS = CUB_OPS | {"mean", "nansum", "any", "all", "var", "std"}


def cupy_call(op):
    """fn(x, dims) calling CuPy's version of `op`, or None where CuPy has
    none (max_dim, norm over arbitrary dims, logsumexp)."""
    if op not in CUPY_OPS:
        return None
    import cupy as cp

    return {
        "sum": lambda x, d: cp.sum(x, axis=d),
        "mean": lambda x, d: cp.mean(x, axis=d),
        "prod": lambda x, d: cp.prod(x, axis=d),
        "nansum": lambda x, d: cp.nansum(x, axis=d),
        "amax": lambda x, d: cp.max(x, axis=d),
        "amin": lambda x, d: cp.min(x, axis=d),
        "any": lambda x, d: cp.any(x, axis=d),
        "all": lambda x, d: cp.all(x, axis=d),
        "argmax": lambda x, d: cp.argmax(x, axis=one_dim(d)),
        "argmin": lambda x, d: cp.argmin(x, axis=one_dim(d)),
        "var": lambda x, d: cp.var(x, axis=d, ddof=1),
        "std": lambda x, d: cp.std(x, axis=d, ddof=1),
    }[op]


def staged_or_cargo(bench):
    """Our bench: the binary staged by scripts/gpu-bundle.sh when there is one,
    else cargo bench."""
    staged = sorted((ROOT / ".gpu" / "bin").glob(f"bench-{bench}-*"))
    if staged:
        return [str(staged[0])]
    return ["cargo", "bench", "--bench", bench, "--"]


def run_ours(spec, bench, json_path, extra, env=None):
    """Runs `spec` (or the staged/cargo bench for `auto`) with `--json` and the
    extra arguments; returns its exit status."""
    cmd = (staged_or_cargo(bench) if spec == "auto" else shlex.split(spec))
    cmd += ["--json", str(Path(json_path).resolve())] + list(extra)
    print(f"running: {shlex.join(cmd)}", file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, env=env or dict(os.environ)).returncode


def load_ours(path):
    if path and Path(path).exists():
        with open(path) as f:
            return json.load(f)
    if path:
        print(f"no results at {path}; the ours column stays empty", file=sys.stderr)
    return None


def fmt(v, spec=".1f", suffix=""):
    return DASH if v is None else f"{v:{spec}}{suffix}"


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def geomean_cells(cols, keep, total):
    """Geometric mean per column over the rows where `keep` holds, so the
    columns compare like with like; a column with fewer rows says so."""
    cells = {}
    for k, vals in cols.items():
        kept = [v for v, ok in zip(vals, keep) if ok and v is not None]
        g = geomean(kept)
        cells[k] = (g, len(kept), total)
    return cells


def gcell(cells, k, spec=".1f", suffix=""):
    g, n, total = cells[k]
    more = f" ({n} cases)" if 0 < n < total else ""
    return fmt(g, spec, suffix) + more


def print_ab_table(names, rows, rounds, order="alternating"):
    """The A/B table of scripts/ab_gpu.py and scripts/ab_cpu.py: per case
    (`rows`: (name, [µs or None per side])) each side's median and its
    speed-up over the first side, then the geometric mean of the speed-ups."""
    print(f"median of {rounds} {order} rounds, µs; speed-up = the first side's µs / this side's µs")
    print("| case | " + " | ".join(names) + " | " + " | ".join(f"speed-up {n}" for n in names[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(names) - 1))
    speedups = [[] for _ in names[1:]]
    for name, med in rows:
        cells = [fmt(m) for m in med]
        ups = []
        for i, m in enumerate(med[1:]):
            if m and med[0]:
                ups.append(f"{med[0] / m:.2f}×")
                speedups[i].append(med[0] / m)
            else:
                ups.append(DASH)
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ups) + " |")
    geo = [f"{geomean(s):.2f}×" if s else DASH for s in speedups]
    print("| **geometric mean** | " + " | ".join("" for _ in names) + " | " + " | ".join(geo) + " |")


def cupy_median_us(launch, warmup=5, runs=50):
    """Median µs of `launch()` by CUDA events around each call, after
    `warmup` calls: the plain kernels' protocol in scripts/ (CuPy)."""
    import cupy as cp
    import numpy as np

    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        launch()
    times = []
    for _ in range(runs):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1000)
    return float(np.median(times))


def half_sm_shared_memory(kernel, threads, half):
    """The dynamic shared memory a launch of `kernel` in blocks of `threads`
    asks for, so that `half` holds it to 1024 resident threads an SM (the
    residency of `reduce_kernel<64, 8>` at 64 registers): the SM's 228 KiB
    over 1024 / threads blocks, less the 1 KiB the driver keeps a block.
    0 when not `half`. Opts the kernel in past 48 KiB."""
    smem = 228 * 1024 // (1024 // threads) - 1100 if half else 0
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    return smem
