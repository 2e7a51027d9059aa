#!/usr/bin/env python3
"""Side-by-side GPU table: one op of ours (benches/gpu_reduce.rs JSON) against
torch and CuPy (with CUB where CuPy uses it) on the same GPU, timed the same
way, over the suite or the sweep.

Timing, identical for every column: a CUDA event recorded on the default
stream just before and just after each call from the host, 5 warm-up calls,
the median of 50, so the host-side cost of the call counts. Cases with
`rotate` > 1 (the sweep's small inputs) cycle through that many copies of the
input on every side, so each call reads from DRAM.

Usage on a GPU machine (torch and cupy installed):

    python3 scripts/compare_gpu.py --run-ours auto --op sum --cases sweep --ours gpu.json --out gpu_table.md

`--run-ours CMD` runs `CMD --json OURS --op OP --cases SET` first (omit it to
merge an existing JSON); `auto` is the bench binary staged by the GPU bundle
(.gpu/bin/bench-gpu_reduce-*) when there is one, else
`cargo bench --bench gpu_reduce --`. The bench needs libnvrtc.so.13; where the
loader does not find it, the script looks for it as the bundle's run.sh does.
`--dry-run` needs neither torch, cupy nor a GPU: it prints the case list and,
with `--ours`, the table with empty peer columns.

Peers per op: torch.sum/mean/prod/nansum/amax/amin/any/all/argmax/argmin,
torch.max(x, dim) for max_dim, torch.var/std(x, dims, correction=1),
torch.linalg.vector_norm(x, 2, dims), torch.logsumexp(x, dims); CuPy's
sum/mean/prod/nansum/max/min/any/all/argmax/argmin/var/std (ddof=1), none for
max_dim, norm and logsumexp. CuPy uses CUB for sum, prod, max, min, argmax and
argmin when the reduced axes are contiguous; its own reduction kernel
otherwise. torch.prod, argmax/argmin and max take one dim: cases reducing
several have no peer there.
"""

import os

# CuPy reads its accelerator list when it is imported.
os.environ.setdefault("CUPY_ACCELERATORS", "cub")

import argparse  # noqa: E402
import datetime  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from bench_common import (  # noqa: E402
    case_set_arg, CUB_OPS, CUPY_OPS, DASH, OPS, NotApplicable, cupy_call, cupy_view, fmt, gcell, geomean_cells,
    load_cases, load_ours, reads_from, run_ours, torch_call, torch_input, torch_view,
)


def nvrtc_env():
    """The environment for our bench, with libnvrtc.so.13 on the loader path
    when the loader does not find it by name (cudarc dlopens it by name)."""
    import ctypes
    import glob
    import site

    env = dict(os.environ)
    try:
        ctypes.CDLL("libnvrtc.so.13")
        return env
    except OSError:
        pass
    # Where CUDA toolkits and the pip wheels (torch's nvidia-* packages) put it.
    patterns = ["/usr/local/cuda*/lib64", "/usr/local/cuda*/targets/*/lib", "/usr/lib/x86_64-linux-gnu", "/opt/*/lib*"]
    patterns += [os.path.join(p, "nvidia", "*", "lib") for p in site.getsitepackages()]
    for pattern in patterns:
        for lib_dir in sorted(glob.glob(pattern)):
            hits = sorted(glob.glob(os.path.join(lib_dir, "libnvrtc.so.13*")))
            if hits:
                env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                print(f"libnvrtc: {hits[0]}", file=sys.stderr)
                return env
    print("libnvrtc.so.13 not found; our bench may fail to compile its kernels", file=sys.stderr)
    return env


class Timer:
    """The peers' protocol with one library's events and synchronisation."""

    def __init__(self, new_event, elapsed_ms, synchronize, warmup, runs):
        self.new_event = new_event
        self.elapsed_ms = elapsed_ms
        self.synchronize = synchronize
        self.warmup = warmup
        self.runs = runs

    def events_us(self, fn):
        """Median µs between events recorded around each call."""
        start, end = self.new_event(), self.new_event()
        for _ in range(self.warmup):
            fn()
        self.synchronize()
        times = []
        for _ in range(self.runs):
            start.record()
            y = fn()
            end.record()
            end.synchronize()
            times.append(self.elapsed_ms(start, end) * 1e3)
            # Freed after the end event, as in the Rust bench.
            del y
        return statistics.median(times)

    def overhead(self, fn):
        """Host overhead of one call: event median, wall clock of the call
        alone (after a sync) and of the call plus a sync."""
        event_us = self.events_us(fn)
        call, call_sync = [], []
        for _ in range(self.runs):
            self.synchronize()
            t = time.perf_counter()
            y = fn()
            call.append((time.perf_counter() - t) * 1e6)
            self.synchronize()
            call_sync.append((time.perf_counter() - t) * 1e6)
            del y
        return {
            "event_us": event_us,
            "wall_call_us": statistics.median(call),
            "wall_call_sync_us": statistics.median(call_sync),
        }


def cycling(fn, xs, dims):
    """A call of `fn` on the next of `xs` each time (rotation through copies)."""
    it = itertools.cycle(xs)
    return lambda: fn(next(it), dims)


def measure_peers(cases, op, warmup, runs):
    import cupy as cp
    import torch

    tt = Timer(
        lambda: torch.cuda.Event(enable_timing=True),
        lambda s, e: s.elapsed_time(e),
        torch.cuda.synchronize,
        warmup,
        runs,
    )
    ct = Timer(
        cp.cuda.Event,
        cp.cuda.get_elapsed_time,
        cp.cuda.Device().synchronize,
        warmup,
        runs,
    )
    t_op, c_op = torch_call(op), cupy_call(op)
    gen = torch.Generator(device="cuda")
    pool = cp.get_default_memory_pool()
    results = {}
    for case in cases:
        t0 = time.time()
        base = torch_input(case, "cuda", gen)
        # clone(): one allocation per copy, as our bench uploads one per copy.
        bases = [base] + [base.clone() for _ in range(case["rotate"] - 1)]
        dims = tuple(case["dims"])
        r = {"torch_us": None, "cupy_us": None, "notes": []}
        try:
            r["torch_us"] = tt.events_us(cycling(t_op, [torch_view(b, case["view"]) for b in bases], dims))
        except (NotApplicable, RuntimeError, TypeError) as e:
            r["notes"].append(f"torch: {e}")
        # CuPy has no bfloat16.
        if c_op is not None and case["dtype"] != "bf16":
            torch.cuda.synchronize()
            try:
                xcs = [cupy_view(cp.from_dlpack(b), case["view"]) for b in bases]
                r["cupy_us"] = ct.events_us(cycling(c_op, xcs, dims))
                del xcs
            except (NotApplicable, TypeError, ValueError) as e:
                r["notes"].append(f"cupy: {e}")
        results[case["name"]] = r
        del bases, base
        cp.cuda.Device().synchronize()
        pool.free_all_blocks()
        torch.cuda.empty_cache()
        print(f"  {case['name']:<30} torch {fmt(r['torch_us']):>9} µs  cupy {fmt(r['cupy_us']):>9} µs  "
              f"({time.time() - t0:.1f} s) {'; '.join(r['notes'])}", file=sys.stderr)

    tiny = next(c for c in load_cases("suite") if c["name"] == "tiny_2_3_4_5")
    gen.manual_seed(0x5EED)
    tiny_base = torch.randn(tiny["base_shape"], device="cuda", generator=gen)
    tiny_x = torch_view(tiny_base, tiny["view"])
    one = torch.randn([1], device="cuda", generator=gen)
    tiny_c, one_c = cupy_view(cp.from_dlpack(tiny_base), tiny["view"]), cp.from_dlpack(one)
    tdims = tuple(tiny["dims"])

    def oh(timer, fn, x, dims):
        try:
            return timer.overhead(lambda: fn(x, dims))
        except (NotApplicable, RuntimeError, TypeError, ValueError) as e:
            return {"error": str(e)}

    overhead = {
        "torch": {"tiny_2_3_4_5": oh(tt, t_op, tiny_x, tdims), "one_element": oh(tt, t_op, one, (0,))},
        "cupy": {} if c_op is None else {
            "tiny_2_3_4_5": oh(ct, c_op, tiny_c, tdims), "one_element": oh(ct, c_op, one_c, (0,)),
        },
    }
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        v = cp.cuda.runtime.driverGetVersion()
        driver = f"CUDA driver API {v // 1000}.{v % 1000 // 10}"
    env = {
        "device": torch.cuda.get_device_name(0),
        "driver": driver,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cupy": cp.__version__,
        "cupy_accelerators": os.environ.get("CUPY_ACCELERATORS"),
    }
    return results, overhead, env


def build_table(cases, op, peers, overhead, env, ours_doc, warmup, runs):
    ours_by_name = {c["name"]: c for c in (ours_doc or {}).get("cases", [])}
    rows, cols = [], {k: [] for k in ("ours", "torch", "cupy", "vs_torch", "vs_best", "pct", "pct_rw")}
    for case in cases:
        o = ours_by_name.get(case["name"], {})
        p = peers.get(case["name"], {})
        ok = o.get("ok", False)
        our_us = o.get("our_us") if ok else None
        torch_us, cupy_us = p.get("torch_us"), p.get("cupy_us")
        peer_list = [v for v in (torch_us, cupy_us) if v is not None]
        best = min(peer_list) if peer_list else None
        vs_torch = torch_us / our_us if our_us and torch_us else None
        vs_best = best / our_us if our_us and best else None
        pct = None
        if our_us and o.get("ceiling_gbs"):
            pct = 100.0 * (case["input_bytes"] / our_us / 1e3) / o["ceiling_gbs"]
        pct_rw = None
        if our_us and o.get("read_write_ceiling_us"):
            pct_rw = 100.0 * o["read_write_ceiling_us"] / our_us
        for k, v in zip(cols, (our_us, torch_us, cupy_us, vs_torch, vs_best, pct, pct_rw)):
            cols[k].append(v)
        if o.get("skipped"):
            ours_cell = "n/a"
        else:
            ours_cell = fmt(our_us) if ok else ("FAILED" if o else DASH)
        rows.append(
            f"| {case['name']} | {case['dtype']} | {case['input_bytes'] / 1e6:.1f} | {o.get('reads') or reads_from(case)} | "
            f"{ours_cell} | {fmt(torch_us)} | {fmt(cupy_us)} | "
            f"{fmt(vs_torch, '.2f', '×')} | {fmt(vs_best, '.2f', '×')} | {fmt(pct, '.0f', '%')} | {fmt(pct_rw, '.0f', '%')} |"
        )
    g = geomean_cells(cols, [v is not None for v in cols["ours"]], len(cases))

    out = []
    dev = env.get("device") or (ours_doc or {}).get("device") or DASH
    if op in CUB_OPS:
        cub = "CUB where the reduced axes are contiguous"
    elif op in CUPY_OPS:
        cub = "its own reduction kernel (no CUB path for this op)"
    else:
        cub = "no such op in CuPy"
    out.append(f"Op `{op}`. GPU: {dev}; driver {env.get('driver', DASH)}; torch {env.get('torch', DASH)} (CUDA {env.get('torch_cuda', DASH)}); "
               f"CuPy {env.get('cupy', DASH)} with CUPY_ACCELERATORS={env.get('cupy_accelerators', DASH)}: {cub}")
    if ours_doc:
        out.append(f"tensor-reduce commit {ours_doc.get('commit') or DASH}, run {ours_doc.get('date', DASH)}; "
                   f"read-stream ceiling over 1 GiB {fmt(ours_doc.get('ceiling_1gib_gbs'), '.0f')} GB/s "
                   "(% of ceiling uses the same kernel over each case's bytes, read from the same place: "
                   "DRAM rows cycle through as many buffers as the case; L2-warm rows reuse one; "
                   "% of read-write ceiling: the same kernel also writing the case's result bytes, a store beside each load)")
    out.append(f"Timing: CUDA events around each call from the host, {warmup} warm-up calls, median of {runs} (host cost included); "
               "every side cycles through the same number of input copies. "
               "ours vs torch = torch µs / ours µs; ours vs best peer = best peer µs / ours µs; > 1 means we are faster.")
    out.append("")
    out.append("| case | dtype | input MB | reads | ours µs | torch µs | CuPy µs | ours vs torch | ours vs best peer | % of ceiling | % of read-write ceiling |")
    out.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    out.extend(rows)
    out.append(
        f"| **geometric mean** | | | | {gcell(g, 'ours')} | {gcell(g, 'torch')} | {gcell(g, 'cupy')} | "
        f"{gcell(g, 'vs_torch', '.2f', '×')} | {gcell(g, 'vs_best', '.2f', '×')} | {gcell(g, 'pct', '.0f', '%')} | "
        f"{gcell(g, 'pct_rw', '.0f', '%')} |"
    )
    out.append("")
    out.append("Host overhead per call (µs): GPU events / wall clock of the call / wall clock of call + sync")
    out.append("")
    out.append("| input | ours | torch | CuPy |")
    out.append("|---|---:|---:|---:|")
    ours_oh = (ours_doc or {}).get("host_overhead", {})
    for key in ("tiny_2_3_4_5", "one_element"):
        cells = []
        for src in (ours_oh, overhead.get("torch", {}), overhead.get("cupy", {})):
            v = src.get(key) or {}
            cells.append(" / ".join(fmt(v.get(k)) for k in ("event_us", "wall_call_us", "wall_call_sync_us")))
        out.append(f"| {key} | {' | '.join(cells)} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="sum", choices=OPS)
    ap.add_argument("--cases", dest="case_set", default="suite", type=case_set_arg,
                    help="suite, sweep, or a .json case list of the same form")
    ap.add_argument("--quick", action="store_true", help="the sweep's small shapes and 2 warm-up + 10 runs, on every side")
    ap.add_argument("--ours", help="JSON written by `gpu_reduce --json` (merged into the table)")
    ap.add_argument("--run-ours", metavar="CMD", help="run `CMD --json OURS --op OP --cases SET` first; `auto`: the bundle's staged bench, else cargo bench")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--peers-json", help="also write the peers' raw numbers to this file")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--dry-run", action="store_true", help="no torch/cupy/GPU: print the cases (and the merged table with --ours)")
    ap.add_argument("filters", nargs="*", help="substrings of case names (all when empty)")
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.runs = 2, 10

    cases = load_cases(args.case_set, args.quick, args.filters)
    status = 0
    if args.run_ours:
        if not args.ours:
            ap.error("--run-ours needs --ours PATH")
        extra = ["--op", args.op, "--cases", args.case_set] + (["--quick"] if args.quick else []) + args.filters
        rc = run_ours(args.run_ours, "gpu_reduce", args.ours, extra, env=nvrtc_env())
        if rc != 0:
            print(f"our benchmark exited with {rc}; merging what it wrote", file=sys.stderr)
            status = 1

    ours_doc = load_ours(args.ours)
    if args.ours and (ours_doc is None or any(not c.get("ok") for c in ours_doc.get("cases", []))):
        status = 1

    if args.dry_run:
        for c in cases:
            print(f"{c['name']:<30} {c['dtype']:>5} {c['input_bytes']:>12} {c['view']:<18} dims {c['dims']}  {reads_from(c)}")
        peers, overhead, env = {}, {}, {}
    else:
        print(f"peers: {args.op} over {len(cases)} {args.case_set} cases, {args.warmup} warm-up + median of {args.runs}, "
              f"CUPY_ACCELERATORS={os.environ['CUPY_ACCELERATORS']}", file=sys.stderr)
        peers, overhead, env = measure_peers(cases, args.op, args.warmup, args.runs)
        if args.peers_json:
            with open(args.peers_json, "w") as f:
                json.dump({"date": datetime.date.today().isoformat(), "op": args.op, "case_set": args.case_set,
                           "env": env, "cases": peers, "host_overhead": overhead}, f, indent=1)

    table = build_table(cases, args.op, peers, overhead, env, ours_doc, args.warmup, args.runs)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    return status


if __name__ == "__main__":
    sys.exit(main())
