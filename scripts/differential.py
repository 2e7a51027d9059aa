"""A differential test of the library against PyTorch, on random cases.

    python3 scripts/differential.py gen DIR [--cases N] [--seed S]
    cargo run --release --example differential -- DIR
    python3 scripts/differential.py check DIR

`gen` (standard library only) writes DIR/cases.json and DIR/data.bin: each
case is an op with its arguments (dims, keepdim, correction, p, a result
dtype), a dtype, a base shape (empty dims and zero-dim tensors included, and
now and then a tensor of up to half a million elements), a chain of views (transpose, permute, stepped slices, broadcast expands) and
values of one style (normal, ties, specials such as NaN, +-inf and -0.0, all
-inf rows). Bad arguments (dims out of range or repeated) are part of the
mix. `check` rebuilds every case in torch on the device each of our results
came from and compares:

- errors: both raise, or neither does (messages are listed, not judged);
- dtypes and shapes exactly;
- indices and integer or bool values exactly;
- floating values with NaNs and infinities in the same places and finite
  values within a tolerance scaled by the dtype's epsilon and the magnitude
  of what was reduced, or at least as close as torch's to the same op in
  float64 (torch's own order of accumulation is not the truth either: its
  CPU adds a general norm's terms one by one in float32, ours pairwise).
  For a float64 input that op would be torch's own result, so sums, means,
  moments and norms of a finite non-zero p are then measured against
  math.fsum's correctly rounded sums instead (exact_moments, exact_norm).

These differences are decided rather than compared. A float cast to an integer
dtype out of the integer's range is undefined behaviour in torch (its CPU
gives INT64_MIN, its CUDA saturates, as ours does on both), so `gen` asks for
an integer `dtype=` only of values that fit. And torch's CUDA aminmax over
every dim with keepdim=True returns shape [] (with a deprecation warning about
resizing its output) where its CPU and its documentation keep every dim as 1,
as ours does on both devices; `check` accepts that one quirk. And torch's CPU
multiplies `prod`'s f16 and bf16 in their own type, so a product whose
partial products leave the type's range is +-inf there, or NaN where such an
inf meets a zero (its CUDA, and ours on both devices, multiply in float32);
where torch's CPU gives a 16-bit product +-inf or NaN, `check` judges ours
against the float64 product instead: equal to it rounded to the dtype where
that is +-inf (or NaN, where that product is past float32's range: ours
multiplies in float32 in a tree, and one partial product can then round to
0 while another overflows), else within 24 epsilons of it. And a float
product whose partial products can leave the range of the type it is
multiplied in (float64 for f64, float32 otherwise: its factors above 1 in
magnitude overflow it together, or those below 1 underflow it) depends on
the order of its multiplications, in torch too (its CPU's float32 product
of n/2 times 1e30 and n/2 times 1e-30, which is 1, comes out inf, 1.0 or
NaN by n): ours may be NaN there, where a partial product of 0 (a factor
of 0, or a rounding) met one that overflowed, or an infinity where one
partial product overflowed before the factors below 1 came in (a float32
row of 2049 factors whose product is 4.9e32 came out inf here and finite
in torch). And torch's CPU
nansum gave 0.0 over a broadcast of 16384 f16 elements, 766 of them +inf
and 795 -inf, whose sum is NaN (as ours on both devices and torch's CUDA
give): it appears to drop NaN partial sums as well as NaN elements, so
where an output's elements hold both infinities, ours may be NaN. Where
one side's value is finite and the other's is not, and ours is not NaN,
ours is accepted when it is the float64 result rounded to the output
dtype: that infinity, or within the tolerance of it where it stays finite.
Torch's CPU nansum of f16 gave NaN over elements that hold +inf (and no
-inf) among finite values whose sum leaves f16's range, and over finite
elements whose partial sums leave that range while their whole sum does
not. And the
mean that var_mean and std_mean return is a Welford mean, which is NaN or
the infinity once an infinity meets a finite value, depending on which
comes first: torch's own devices disagree (its CPU's std_mean([inf, 1, 2])
has mean NaN, of [1, 2, inf] inf), and a short row folds in another order
under our ShortRows plan than under PyTorch's; where torch's is not finite,
ours may be NaN or the plain mean.

Exits 1 when any case differs, printing each difference.
"""
import argparse
import json
import math
import random
import struct
import sys
from pathlib import Path

FLOATS = ["f32", "f64", "f16", "bf16"]
DTYPES = FLOATS + ["i32", "i64", "u8", "bool"]
DTYPE_WEIGHTS = [4, 2, 2, 2, 1, 2, 1, 1]
VALUE_OPS = ["sum", "nansum", "prod", "mean", "amax", "amin", "any", "all"]
OPS = VALUE_OPS + ["max_dim", "min_dim", "argmax", "argmin", "aminmax", "var", "std",
                   "var_mean", "std_mean", "norm", "logsumexp"]
SIZES = [0, 1, 1, 2, 3, 4, 5, 7, 8, 9, 16, 33]


def round_to(dtype, v):
    """v rounded to a value `dtype` holds exactly (as a Python float or int)."""
    if dtype == "f32":
        return struct.unpack("<f", struct.pack("<f", v))[0] if math.isfinite(v) or math.isnan(v) else v
    if dtype == "f16":
        try:
            return struct.unpack("<e", struct.pack("<e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if dtype == "bf16":
        if math.isnan(v) or math.isinf(v):
            return v
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    return v


def values(rng, dtype, n):
    style = rng.choice(["normal", "normal", "ties", "specials", "neg_inf", "big"])
    out = []
    for _ in range(n):
        if dtype == "bool":
            out.append(int(rng.random() < 0.5) if style != "ties" else 1)
        elif dtype == "u8":
            out.append(rng.randrange(256) if style != "ties" else rng.choice([0, 255]))
        elif dtype in ("i32", "i64"):
            if style == "big":
                out.append(rng.choice([2**31 - 1, -(2**31), 2**30]) if dtype == "i32" else rng.choice([2**62, -(2**62), 2**40]))
            elif style == "ties":
                out.append(rng.choice([-3, 0, 3]))
            else:
                out.append(rng.randrange(-1000, 1000))
        else:
            if style == "ties":
                v = float(rng.choice([-2, 0, 1, 1, 2]))
            elif style == "specials":
                v = rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, rng.gauss(0, 1)])
            elif style == "neg_inf":
                v = -math.inf if rng.random() < 0.8 else rng.gauss(0, 3)
            elif style == "big":
                v = rng.gauss(0, 1) * rng.choice([1e3, 1e4, 6e4 if dtype == "f16" else 1e30])
            else:
                v = rng.gauss(0, 1) * 2 + (0.5 if rng.random() < 0.3 else 0)
            out.append(round_to(dtype, v))
    return out


# The largest finite float32.
F32_MAX = 3.4028234663852886e38
INT_RANGE = {"i64": (-2**63, 2**63), "i32": (-2**31, 2**31)}


def casts_in_range(data, dtype):
    """Whether every value of `data` converts to the integer `dtype` by
    truncation without leaving its range (NaN and infinities never do):
    the only float-to-integer casts whose result torch defines."""
    if dtype not in INT_RANGE:
        return True
    lo, hi = INT_RANGE[dtype]
    return all(math.isfinite(v) and lo < v < hi for v in data)


def random_dims(rng, rank, single=False):
    r = max(rank, 1)
    roll = rng.random()
    if roll < 0.05:  # bad input: out of range
        return [rng.choice([r, -r - 1, r + 2])]
    if roll < 0.08 and rank >= 1 and not single:  # bad input: repeated
        d = rng.randrange(rank)
        return [d, d - rank]
    if roll < 0.3 or rank == 0:
        return None
    if single:
        return [rng.randrange(-rank, rank)]
    k = rng.randint(1, rank)
    dims = rng.sample(range(rank), k)
    return [d - rank if rng.random() < 0.3 else d for d in dims]


LARGE_ELEMENTS = 1 << 19
ROW_LENGTHS = [1, 2, 3, 4, 7, 8, 16, 33, 100, 128, 1000, 4096, 65536]


def large_shape(rng):
    """A shape of 2^16 to 2^19 elements whose rows are short or long, kept
    fastest or slowest, or a 3-d tensor: big enough that both devices plan
    parallel work (several CTAs a row or many rows a CTA on the GPU,
    column tiles and row blocks on the CPU), not just one block."""
    n = 1 << rng.randint(16, 19)
    row = rng.choice(ROW_LENGTHS)
    kind = rng.choice(["rows", "columns", "cube"])
    if kind == "cube":
        a, b = rng.choice([3, 7, 64]), rng.choice([5, 32, 100])
        return [a, b, max(1, n // (a * b))]
    shape = [max(1, n // row), row]
    return shape if kind == "rows" else shape[::-1]


def random_views(rng, shape):
    steps, shape = [], list(shape)
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        rank = len(shape)
        kind = rng.choice(["transpose", "permute", "slice", "expand", "t"])
        if kind == "t" and rank <= 2:
            steps.append(["t"])
            shape = shape[::-1]
        elif kind == "transpose" and rank >= 2:
            a, b = rng.sample(range(rank), 2)
            steps.append(["transpose", a, b - rank])
            shape[a], shape[b] = shape[b], shape[a]
        elif kind == "permute" and rank >= 2:
            perm = list(range(rank))
            rng.shuffle(perm)
            steps.append(["permute", perm])
            shape = [shape[p] for p in perm]
        elif kind == "slice" and rank >= 1:
            d = rng.randrange(rank)
            n = shape[d]
            start = rng.randint(0, max(n - 1, 0))
            end = rng.randint(start, n)
            step = rng.choice([1, 2, 3])
            steps.append(["slice", d, start, end, step])
            shape[d] = max(0, (end - start + step - 1) // step)
        elif kind == "expand":
            d = rng.randint(0, rank)
            size = rng.choice([1, 2, 3, 5])
            steps.append(["unsqueeze", d])
            shape.insert(d, 1)
            steps.append(["expand", shape[:d] + [size] + shape[d + 1:]])
            shape[d] = size
    return steps, shape


def gen(args):
    rng = random.Random(args.seed)
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    cases, words = [], bytearray()
    for i in range(args.cases):
        dtype = rng.choices(DTYPES, DTYPE_WEIGHTS)[0]
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        shape = [rng.choice(SIZES) for _ in range(rank)]
        roll, limit = rng.random(), 20000
        if roll < 0.01:  # a large tensor: the GPU's and the CPU's parallel plans
            shape, limit = large_shape(rng), LARGE_ELEMENTS
        elif roll < 0.1 and rank >= 1:  # a long row
            shape[-1] = rng.choice([100, 1000, 4099])
        while math.prod(shape) > limit:
            shape[shape.index(max(shape))] //= 2
        if rng.random() > 0.1:  # mostly non-empty
            shape = [max(s, 1) for s in shape]
        n = math.prod(shape)
        data = values(rng, dtype, n)
        offset = len(words) // 8
        fmt = "<d" if dtype in FLOATS else "<q"
        for v in data:
            words += struct.pack(fmt, v)
        views, vshape = random_views(rng, shape)
        vrank = len(vshape)
        op = rng.choice(OPS)
        a = {"keepdim": rng.random() < 0.3}
        if op in ("max_dim", "min_dim"):
            d = random_dims(rng, vrank, single=True)
            a["dim"] = d[0] if d else (rng.choice([0, -1]) if vrank <= 1 else 0)
        elif op in ("argmax", "argmin"):
            d = random_dims(rng, vrank, single=True)
            a["dim"] = d[0] if d else None
        elif op in ("aminmax", "prod"):
            a["dims"] = random_dims(rng, vrank, single=True)
        else:
            a["dims"] = random_dims(rng, vrank)
        if op in ("var", "std", "var_mean", "std_mean"):
            a["correction"] = rng.choice([0, 1, 1, 2, -1, 0.5])
        if op == "norm":
            a["p"] = rng.choice([0, 1, 2, 2, math.inf, -math.inf, 3, 0.5, -1])
        if op in ("sum", "nansum", "prod", "mean") and rng.random() < 0.15:
            a["dtype"] = rng.choice(["f64", "f32", "i64", "f16"])
            # An out-of-range float-to-integer cast is undefined in torch
            # (mean refuses an integer dtype before any cast, so it stays).
            if op != "mean" and dtype in FLOATS and not casts_in_range(data, a["dtype"]):
                del a["dtype"]
        cases.append({"id": i, "dtype": dtype, "base_shape": shape, "data_offset": offset,
                      "view": views, "op": op, "args": a})
    # JSON has no infinities: the one float argument that takes them, p,
    # is then the string "inf" or "-inf".
    for c in cases:
        p = c["args"].get("p")
        if p is not None and math.isinf(p):
            c["args"]["p"] = str(p)
    (out / "cases.json").write_text(json.dumps(cases, allow_nan=False))
    (out / "data.bin").write_bytes(bytes(words))
    print(f"{len(cases)} cases in {out}")


# ---- check (torch) ----


def closer_to_reference(got, want, ref, output, i):
    """Whether `got` is at least as close as torch's `want` to the float64
    reference value `ref[output][i]` (a finite one; a missing reference
    decides nothing)."""
    if output >= len(ref) or i >= len(ref[output]):
        return False
    r = ref[output][i]
    return math.isfinite(r) and abs(got - r) <= abs(want - r)


EXACT_OPS = ("sum", "nansum", "mean", "var", "std", "var_mean", "std_mean")


def rounded_reference(ref, output, i, dtype):
    """The float64 reference value `ref[output][i]` and that value rounded
    to `dtype` (+-inf past float32's range), or None where it is missing or
    NaN."""
    if output >= len(ref) or i >= len(ref[output]) or math.isnan(ref[output][i]):
        return None
    r = ref[output][i]
    try:
        return r, round_to(dtype, r)
    except OverflowError:  # past float32's range
        return r, math.copysign(math.inf, r)


def is_reference_value(got, ref, output, i, dtype, atol, rel):
    """Whether `got` is the float64 reference value `ref[output][i]` (not
    NaN) rounded to `dtype`: that infinity where it rounds to one, else
    finite and within `atol` plus `rel` of it, relatively (a missing
    reference decides nothing)."""
    found = rounded_reference(ref, output, i, dtype)
    if found is None:
        return False
    r, rounded = found
    if math.isinf(rounded):
        return got == rounded
    return math.isfinite(got) and abs(got - r) <= atol + rel * abs(r)


def exact_moments(rows, op, correction=None):
    """The outputs of `op` (one of EXACT_OPS) over each row of finite
    floats, from math.fsum's correctly rounded sums: the sum (nansum's too,
    as the rows hold no NaN), the mean, and the variance as the fsum of
    squared deviations from that mean over n - correction; var_mean and
    std_mean give [var or std, mean]. A list of flat lists (one per
    output), or None where a row is empty or n - correction is not
    positive (torch's NaN or inf decides there)."""
    sums, means, variances = [], [], []
    for row in rows:
        n = len(row)
        if n == 0:
            return None
        s = math.fsum(row)
        sums.append(s)
        means.append(s / n)
        if op in ("var", "std", "var_mean", "std_mean"):
            if n - correction <= 0:
                return None
            m = s / n
            variances.append(math.fsum((v - m) ** 2 for v in row) / (n - correction))
    spread = [math.sqrt(v) for v in variances] if op.startswith("std") else variances
    return {"sum": [sums], "nansum": [sums], "mean": [means], "var": [spread], "std": [spread],
            "var_mean": [spread, means], "std_mean": [spread, means]}[op]


def exact_norm(row, p):
    """The p-norm (finite, non-zero p) of a row of finite floats, from
    math.fsum's correctly rounded sum of the terms |v|^p, each rounded once:
    within an epsilon or two of the true norm, where torch's float64 norm
    adds the terms one by one (its CPU's p = 0.5 norm of half a million
    elements was 3.4e-12 off, relatively, ours 1e-15)."""
    if p < 0 and any(v == 0 for v in row):
        return 0.0  # a term of +inf, to the power 1/p < 0
    return math.fsum(abs(v) ** p for v in row) ** (1 / p)


def beats_cpu_16bit_product(got, ref, output, i, dtype, rel):
    """Whether `got` is right where torch's CPU gave a 16-bit product +-inf
    or NaN: equal to the float64 product `ref[output][i]` rounded to `dtype`
    (or NaN where that is +-inf past float32's range), or within `rel` of
    it, relatively (a missing reference decides nothing)."""
    found = rounded_reference(ref, output, i, dtype)
    if found is None:
        return False
    r, rounded = found
    if math.isinf(rounded):
        # Past float32's range, a partial product of small elements can
        # round to 0 in float32 while another overflows: 0 * inf is NaN.
        return got == rounded or (math.isnan(got) and abs(r) > F32_MAX)
    # Rounded to the dtype, a product below its range is 0 (or a
    # subnormal), which no relative tolerance reaches.
    return math.isfinite(got) and (got == rounded or abs(got - r) <= rel * abs(r))


def over_same_dims(c, op):
    """Case `c` with `op` in place of its own, over the same dims and
    keepdim (and no other argument)."""
    a = c["args"]
    return dict(c, op=op, args={"dims": a.get("dims"), "keepdim": a.get("keepdim", False)})


def check(args):
    import torch

    tdt = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
           "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}
    name_of = {v: k for k, v in tdt.items()}
    eps = {"f32": 1.2e-7, "f64": 2.3e-16, "f16": 9.8e-4, "bf16": 7.9e-3}
    d = Path(args.dir)
    cases = {c["id"]: c for c in json.loads((d / "cases.json").read_text())}
    ours = json.loads((d / "ours.json").read_text())
    words = (d / "data.bin").read_bytes()
    ours_bin = (d / "ours.bin").read_bytes()

    def base(c, device):
        n = math.prod(c["base_shape"])
        off = c["data_offset"] * 8
        fmt = "d" if c["dtype"] in FLOATS else "q"
        vals = struct.unpack(f"<{n}{fmt}", words[off:off + 8 * n])
        t = torch.tensor(vals, dtype=torch.float64 if fmt == "d" else torch.int64)
        return t.to(tdt[c["dtype"]]).reshape(c["base_shape"]).to(device)

    def view(x, s):
        k = s[0]
        if k == "t":
            return x.t()
        if k == "transpose":
            return x.transpose(s[1], s[2])
        if k == "permute":
            return x.permute(*s[1])
        if k == "slice":
            idx = [slice(None)] * x.dim()
            idx[s[1]] = slice(s[2], s[3], s[4])
            return x[tuple(idx)]
        if k == "unsqueeze":
            return x.unsqueeze(s[1])
        if k == "expand":
            return x.expand(*s[1])
        raise ValueError(k)

    def torch_op(x, c):
        a, op = c["args"], c["op"]
        dims, keep = a.get("dims"), a.get("keepdim", False)
        dt = tdt[a["dtype"]] if a.get("dtype") else None
        all_dims = dims is None or len(dims) == 0

        def keep_all(r):
            return r.reshape([1] * x.dim()) if keep else r

        if op in ("sum", "mean"):
            f = getattr(torch, op)
            return [keep_all(f(x, dtype=dt)) if all_dims else f(x, dim=dims, keepdim=keep, dtype=dt)]
        if op == "prod":
            return [keep_all(torch.prod(x, dtype=dt)) if all_dims else torch.prod(x, dims[0], keepdim=keep, dtype=dt)]
        if op == "nansum":
            return [keep_all(torch.nansum(x, dtype=dt)) if all_dims else torch.nansum(x, dim=dims, keepdim=keep, dtype=dt)]
        if op in ("amax", "amin"):
            return [getattr(torch, op)(x, dim=() if all_dims else dims, keepdim=keep)]
        if op in ("any", "all"):
            f = getattr(torch, op)
            return [keep_all(f(x)) if all_dims else f(x, dim=tuple(dims), keepdim=keep)]
        if op in ("max_dim", "min_dim"):
            r = (torch.max if op == "max_dim" else torch.min)(x, a["dim"], keepdim=keep)
            return [r.values, r.indices]
        if op in ("argmax", "argmin"):
            return [getattr(torch, op)(x, dim=a.get("dim"), keepdim=keep)]
        if op == "aminmax":
            r = torch.aminmax(x, dim=None if all_dims else dims[0], keepdim=keep)
            return [r.min, r.max]
        if op in ("var", "std", "var_mean", "std_mean"):
            r = getattr(torch, op)(x, dim=None if all_dims else dims, correction=a["correction"], keepdim=keep)
            return list(r) if isinstance(r, tuple) else [r]
        if op == "norm":
            return [torch.linalg.vector_norm(x, ord=float(a["p"]), dim=None if all_dims else dims, keepdim=keep)]
        if op == "logsumexp":
            return [torch.logsumexp(x, dim=tuple(range(x.dim())) if all_dims else dims, keepdim=keep)]
        raise ValueError(op)

    def tolerance(c, x, out_name):
        """Absolute tolerance for one float result: epsilons of the dtypes
        involved times the magnitude of what was reduced."""
        e = max(eps.get(out_name, 0.0), eps.get(c["dtype"], 0.0), eps["f32"] if c["dtype"] not in ("f64",) else 0)
        xf = x.detach().to("cpu", torch.float64).abs()
        xf = xf[torch.isfinite(xf)]
        m = float(xf.max()) if xf.numel() else 1.0
        n = max(x.numel(), 1)
        if c["op"] in ("var", "std", "var_mean", "std_mean"):
            return e * 64 * (m * m + m) * 4
        if c["op"] == "prod":
            return None  # relative only
        return e * 16 * m * math.sqrt(n) + e * 8 * m

    def relative_tolerance(c, reduced, out_name, relative_only):
        """The tolerance relative to torch's value: 8 epsilons (24 where no
        absolute one applies); for a product of n factors, n epsilons; for
        a norm of order 0 < |p| < 1, whose root multiplies the sum's
        relative error by 1/|p| and whose sum of positive terms carries an
        error that grows with its length (the `reduced` elements of one
        output) in torch's order (one by one) as in ours (pairwise),
        sqrt(reduced)/|p| times that."""
        rel = (24 if relative_only else 8) * eps.get(out_name, 1e-7)
        if c["op"] == "prod":
            # Each of n - 1 products rounds by half an epsilon at most, so
            # two orders can end n epsilons apart.
            rel = max(rel, reduced * eps.get(out_name, 1e-7))
        if c["op"] == "norm":
            p = abs(float(c["args"]["p"]))
            if 0 < p < 1:
                rel *= math.sqrt(max(reduced, 1)) / p
        return rel

    def exact_reference(x, c):
        """exact_moments (or exact_norm, for a finite non-zero p) for a
        float64 input of a finite case, each output flat in torch's order
        (kept dims in order), or None."""
        a = c["args"]
        p = a.get("p")
        exact_norm_p = c["op"] == "norm" and not isinstance(p, str) and p != 0
        if (c["op"] not in EXACT_OPS and not exact_norm_p) or x.dtype != torch.float64 \
                or a.get("dtype") not in (None, "f64"):
            return None
        x = x.detach().to("cpu")
        if not bool(torch.isfinite(x).all()):
            return None
        nd, dims = x.dim(), a.get("dims")
        reduced = sorted({d % nd for d in dims}) if dims and nd else list(range(nd))
        kept = [d for d in range(nd) if d not in reduced]
        length = math.prod(x.shape[d] for d in reduced)
        rows = x.permute(kept + reduced).reshape(-1, length) if nd else x.reshape(1, 1)
        if exact_norm_p:
            rows = rows.tolist()
            return [[exact_norm(row, p) for row in rows]] if rows and all(rows) else None
        return exact_moments(rows.tolist(), c["op"], a.get("correction"))

    def reference(x, c):
        """The same op on the input in float64 (after the `dtype=` cast,
        which torch applies to each element first), as flat lists per
        output, or None where it cannot be had. For a float64 input, sums,
        means and moments come from exact_reference instead."""
        a = c["args"]
        exact = exact_reference(x, c)
        if exact is not None:
            return exact
        try:
            if a.get("dtype"):
                x = x.to(tdt[a["dtype"]])
            plain = dict(c, args={k: v for k, v in a.items() if k != "dtype"})
            return [r.detach().to("cpu", torch.float64).flatten().tolist()
                    for r in torch_op(x.to(torch.float64), plain)]
        except Exception:
            return None

    def both_infinities_of(x, c):
        """Whether each output's elements (flat) hold both +inf and -inf."""
        has = over_same_dims(c, "amax")
        pos = (reference((x == math.inf).to(torch.float64), has) or [None])[0]
        neg = (reference((x == -math.inf).to(torch.float64), has) or [None])[0]
        return [p > 0 and q > 0 for p, q in zip(pos, neg)] if pos and neg else None

    def partials_may_leave_range(x, c, out_name):
        """Whether, for each output of a float product (flat), some order
        of its multiplications can leave the range of the type it is
        multiplied in (float64 for f64, float32 otherwise): the factors
        above 1 in magnitude together overflow it, or those below 1
        underflow it. Only there can partial products meet as 0 * inf, so
        that the order decides between NaN and the rest."""
        a = c["args"]
        if a.get("dtype"):
            x = x.to(tdt[a["dtype"]])
        logs = torch.log2(x.detach().to("cpu", torch.float64).abs())
        finite = torch.isfinite(logs)
        zero = torch.zeros_like(logs)
        summed = over_same_dims(c, "sum")
        up = (reference(torch.where(finite & (logs > 0), logs, zero), summed) or [None])[0]
        down = (reference(torch.where(finite & (logs < 0), logs, zero), summed) or [None])[0]
        if up is None or down is None:
            return None
        emax, emin = (1024, -1074) if out_name == "f64" else (128, -149)
        return [u > emax or d < emin for u, d in zip(up, down)]

    def plain_mean_of(x, c):
        """torch.mean over the case's dims in float64, as a flat list."""
        mean = over_same_dims(c, "mean")
        return (reference(x, mean) or [None])[0]

    mismatches, messages, compared, closer = [], [], 0, 0
    for r in ours:
        c = cases[r["id"]]
        dev = "cuda" if r["device"] == "cuda" else "cpu"
        label = f"case {c['id']} on {dev}: {c['op']}({c['args']}) of {c['dtype']} {c['base_shape']} views {c['view']}"
        x = base(c, dev)
        try:
            for s in c["view"]:
                x = view(x, s)
        except Exception as e:
            if "view_error" not in r:
                mismatches.append(f"{label}: torch's view raised {e!r}, ours did not")
            continue
        if "view_error" in r:
            mismatches.append(f"{label}: our view raised {r['view_error']}, torch's did not")
            continue
        try:
            expected = torch_op(x, c)
            terr = None
        except Exception as e:
            expected, terr = None, f"{type(e).__name__}: {str(e).splitlines()[0]}"
        compared += 1
        if terr is not None or "error" in r:
            if terr is None:
                mismatches.append(f"{label}: ours raised `{r['error']}`, torch returned")
            elif "error" not in r:
                mismatches.append(f"{label}: torch raised `{terr}`, ours returned")
            else:
                messages.append(f"{c['op']}: ours `{r['error']}` | torch `{terr}`")
            continue
        outs = r["outputs"]
        if len(outs) != len(expected):
            mismatches.append(f"{label}: {len(outs)} outputs, torch {len(expected)}")
            continue
        ref = plain_mean = both_infinities = leaves_range = None
        for k, (o, t) in enumerate(zip(outs, expected)):
            tname = name_of[t.dtype]
            # torch's CUDA aminmax over every dim with keepdim=True returns
            # shape [] (and warns that resizing a non-empty output is
            # deprecated); its CPU and its docs keep each dim as 1, as ours.
            cuda_aminmax_quirk = (
                dev == "cuda" and c["op"] == "aminmax" and c["args"].get("keepdim")
                and not c["args"].get("dims") and list(t.shape) == []
                and list(o["shape"]) == [1] * x.dim())
            if o["dtype"] != tname or (list(o["shape"]) != list(t.shape) and not cuda_aminmax_quirk):
                mismatches.append(f"{label} output {k}: ours {o['dtype']} {o['shape']}, torch {tname} {list(t.shape)}")
                continue
            n = t.numel()
            fmt = "d" if tname in FLOATS else "q"
            got = struct.unpack(f"<{n}{fmt}", ours_bin[o["offset"] * 8:(o["offset"] + n) * 8])
            want = t.detach().to("cpu", torch.float64 if fmt == "d" else torch.int64).flatten().tolist()
            if fmt == "q":
                bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
            else:
                atol = tolerance(c, x, tname)
                rel = relative_tolerance(c, x.numel() / max(n, 1), tname, atol is None)
                cpu_16bit_prod = dev == "cpu" and c["op"] == "prod" and tname in ("f16", "bf16")
                float_prod = c["op"] == "prod" and tname in FLOATS
                cpu_nansum = dev == "cpu" and c["op"] == "nansum"
                welford_mean = c["op"] in ("var_mean", "std_mean") and k == 1
                bad = []
                for i, (g, w) in enumerate(zip(got, want)):
                    if not (math.isfinite(w) and math.isfinite(g)):
                        ok = (math.isnan(w) and math.isnan(g)) or g == w
                        if not ok and welford_mean and not math.isfinite(w):
                            # The mean var_mean and std_mean return is a
                            # Welford mean: once an infinity meets a finite
                            # value in an update or a combine, it is NaN or
                            # the infinity depending on which came first, so
                            # torch's own result depends on its order (its
                            # CPU and CUDA disagree: std_mean([inf, 1, 2]) is
                            # NaN, of [1, 2, inf] inf). Ours is right if it
                            # is NaN or the plain mean.
                            if plain_mean is None:
                                plain_mean = plain_mean_of(x, c) or []
                            ok = math.isnan(g) or (i < len(plain_mean) and g == plain_mean[i])
                        if not ok and float_prod and not math.isfinite(g):
                            # A product whose partial products can leave the
                            # range of the type it is multiplied in: in one
                            # part of ours (and of torch's, whose CPU gives
                            # such a product +-inf, 0 or NaN by its length)
                            # a partial product can be 0, exactly or by
                            # rounding, while another overflows, and 0 * inf
                            # is NaN; or one overflows before the factors
                            # below 1 come in, and stays an infinity.
                            if leaves_range is None:
                                leaves_range = partials_may_leave_range(x, c, tname) or []
                            ok = i < len(leaves_range) and leaves_range[i]
                            closer += ok
                        if not ok and cpu_16bit_prod:
                            # torch's CPU multiplies f16 and bf16 in their own
                            # type: inf where a partial product leaves the
                            # type's range, NaN where such an inf meets a 0.
                            if ref is None:
                                ref = reference(x, c) or []
                            ok = beats_cpu_16bit_product(g, ref, k, i, tname, 24 * eps[tname])
                            closer += ok
                        if not ok and not math.isnan(g):
                            # Ours is the float64 result, rounded to the
                            # output dtype, where torch's is not: torch's
                            # CPU nansum of f16 gave NaN over +inf and
                            # finite elements, and over finite elements
                            # whose partial sums (not the whole) leave
                            # f16's range.
                            if ref is None:
                                ref = reference(x, c) or []
                            ok = is_reference_value(g, ref, k, i, tname, atol or 0, rel)
                            closer += ok
                        if not ok and cpu_nansum and math.isnan(g):
                            # Where both infinities meet, the sum is NaN;
                            # torch's CPU appears to drop such partial sums.
                            if both_infinities is None:
                                both_infinities = both_infinities_of(x, c) or []
                            ok = i < len(both_infinities) and both_infinities[i]
                            closer += ok
                    else:
                        ok = abs(g - w) <= (atol if atol is not None else 0) + rel * abs(w)
                        if not ok:
                            if ref is None:
                                ref = reference(x, c) or []
                            ok = closer_to_reference(g, w, ref, k, i)
                            closer += ok
                    if not ok:
                        bad.append((i, g, w))
            if bad:
                mismatches.append(f"{label} output {k} ({tname}): {len(bad)} of {n} differ, e.g. {bad[:3]}")
    print(f"differential: {compared} results compared with torch {torch.__version__}, {len(mismatches)} differ"
          f" ({closer} values outside the tolerance accepted as at least as close as torch's to float64)")
    for m in mismatches:
        print("DIFF", m)
    if args.messages:
        for m in sorted(set(messages)):
            print("MSG", m)
    return 1 if mismatches else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--cases", type=int, default=2000)
    g.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--messages", action="store_true", help="also list both sides' error messages")
    args = ap.parse_args()
    if args.cmd == "gen":
        gen(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
