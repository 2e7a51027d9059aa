#!/usr/bin/env python3
"""Side-by-side GPU table: our `sum` (benches/gpu_reduce.rs JSON) against
torch.sum and cupy.sum with CUB, timed the same way on the same GPU.

Timing, identical for every column: a CUDA event recorded on the default
stream just before and just after each call from the host, 5 warm-up calls,
the median of 50, so the host-side cost of the call counts.

Usage on a GPU machine (torch and cupy installed):

    python3 scripts/compare_gpu.py --run-ours auto --ours gpu_reduce.json --out gpu_table.md

`--run-ours CMD` runs `CMD --json OURS` first (omit it to merge an existing
JSON); `auto` is the bench binary staged by the GPU bundle
(.gpu/bin/bench-gpu_reduce-*) when there is one, else
`cargo bench --bench gpu_reduce --`. The bench needs libnvrtc.so.13; where the
loader does not find it, the script looks for it as the bundle's run.sh does. `--dry-run` needs neither torch, cupy nor a GPU: it prints the case list
and, with `--ours`, the table with empty peer columns.
"""

import os

# CuPy reads its accelerator list when it is imported.
os.environ.setdefault("CUPY_ACCELERATORS", "cub")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SEED = 0x5EED
DASH = "–"


def load_suite(path):
    with open(path) as f:
        return json.load(f)["cases"]


def our_bench_command(spec):
    """The command that runs our benchmark, from --run-ours."""
    if spec != "auto":
        return shlex.split(spec)
    staged = sorted((ROOT / ".gpu" / "bin").glob("bench-gpu_reduce-*"))
    if staged:
        return [str(staged[0])]
    return ["cargo", "bench", "--bench", "gpu_reduce", "--"]


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


def parse_view(view):
    """('none'|'transpose'|'permute', args) from the suite's view string."""
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


def measure_peers(cases, warmup, runs):
    import cupy as cp
    import torch

    torch_dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
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
    gen = torch.Generator(device="cuda")
    pool = cp.get_default_memory_pool()
    results = {}
    for case in cases:
        t0 = time.time()
        gen.manual_seed(SEED)
        base = torch.randn(case["base_shape"], dtype=torch_dtypes[case["dtype"]], device="cuda", generator=gen)
        x = torch_view(base, case["view"])
        dims = tuple(case["dims"])
        r = {"torch_us": tt.events_us(lambda: torch.sum(x, dim=dims)), "cupy_cub_us": None}
        # CuPy has no bfloat16.
        if case["dtype"] != "bf16":
            torch.cuda.synchronize()
            xc = cupy_view(cp.from_dlpack(base), case["view"])
            r["cupy_cub_us"] = ct.events_us(lambda: cp.sum(xc, axis=dims))
            del xc
        results[case["name"]] = r
        del x, base
        cp.cuda.Device().synchronize()
        pool.free_all_blocks()
        torch.cuda.empty_cache()
        cub = DASH if r["cupy_cub_us"] is None else f"{r['cupy_cub_us']:.1f} µs"
        print(f"  {case['name']:<24} torch {r['torch_us']:9.1f} µs  cub {cub:>12}  ({time.time() - t0:.1f} s)", file=sys.stderr)

    tiny = next(c for c in load_suite(ROOT / "benches" / "suite.json") if c["name"] == "tiny_2_3_4_5")
    gen.manual_seed(SEED)
    tiny_base = torch.randn(tiny["base_shape"], device="cuda", generator=gen)
    tiny_x = torch_view(tiny_base, tiny["view"])
    one = torch.randn([1], device="cuda", generator=gen)
    tiny_c, one_c = cupy_view(cp.from_dlpack(tiny_base), tiny["view"]), cp.from_dlpack(one)
    tdims = tuple(tiny["dims"])
    overhead = {
        "torch": {
            "tiny_2_3_4_5": tt.overhead(lambda: torch.sum(tiny_x, dim=tdims)),
            "one_element": tt.overhead(lambda: torch.sum(one, dim=(0,))),
        },
        "cupy_cub": {
            "tiny_2_3_4_5": ct.overhead(lambda: cp.sum(tiny_c, axis=tdims)),
            "one_element": ct.overhead(lambda: cp.sum(one_c, axis=(0,))),
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


def fmt(v, spec=".1f", suffix=""):
    return DASH if v is None else f"{v:{spec}}{suffix}"


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def build_table(cases, peers, overhead, env, ours_doc, warmup, runs):
    ours_by_name = {c["name"]: c for c in (ours_doc or {}).get("cases", [])}
    rows, cols = [], {k: [] for k in ("ours", "torch", "cub", "vs_torch", "vs_best", "pct")}
    for case in cases:
        o = ours_by_name.get(case["name"], {})
        p = peers.get(case["name"], {})
        ok = o.get("ok", False)
        our_us = o.get("our_us") if ok else None
        torch_us, cub_us = p.get("torch_us"), p.get("cupy_cub_us")
        peer_list = [v for v in (torch_us, cub_us) if v is not None]
        best = min(peer_list) if peer_list else None
        vs_torch = torch_us / our_us if our_us and torch_us else None
        vs_best = best / our_us if our_us and best else None
        pct = None
        if our_us and o.get("ceiling_gbs"):
            pct = 100.0 * (case["input_bytes"] / our_us / 1e3) / o["ceiling_gbs"]
        for k, v in zip(cols, (our_us, torch_us, cub_us, vs_torch, vs_best, pct)):
            cols[k].append(v)
        ours_cell = fmt(our_us) if ok else ("FAILED" if o else DASH)
        rows.append(
            f"| {case['name']} | {ours_cell} | {fmt(torch_us)} | {fmt(cub_us)} | "
            f"{fmt(vs_torch, '.2f', '×')} | {fmt(vs_best, '.2f', '×')} | {fmt(pct, '.0f', '%')} |"
        )
    # Every geometric mean runs over the cases where ours succeeded, so the
    # columns compare like with like; a column with fewer cases says so.
    ours_ok = [v is not None for v in cols["ours"]]
    g, counts = {}, {}
    for k, vals in cols.items():
        kept = [v for v, keep in zip(vals, ours_ok) if keep and v is not None]
        g[k], counts[k] = geomean(kept), len(kept)

    def gcell(k, spec=".1f", suffix=""):
        more = f" ({counts[k]} cases)" if 0 < counts[k] < len(cases) else ""
        return fmt(g[k], spec, suffix) + more

    out = []
    dev = env.get("device") or (ours_doc or {}).get("device") or DASH
    out.append(f"GPU: {dev}; driver {env.get('driver', DASH)}; torch {env.get('torch', DASH)} (CUDA {env.get('torch_cuda', DASH)}); "
               f"CuPy {env.get('cupy', DASH)} with CUPY_ACCELERATORS={env.get('cupy_accelerators', DASH)}")
    if ours_doc:
        out.append(f"tensor-reduce commit {ours_doc.get('commit') or DASH}, run {ours_doc.get('date', DASH)}; "
                   f"read-stream ceiling over 1 GiB {fmt(ours_doc.get('ceiling_1gib_gbs'), '.0f')} GB/s "
                   "(% of ceiling uses the same kernel over each case's byte count)")
    out.append(f"Timing: CUDA events around each call from the host, {warmup} warm-up calls, median of {runs} (host cost included). "
               "ours vs torch = torch µs / ours µs; ours vs best peer = best peer µs / ours µs; > 1 means we are faster.")
    out.append("")
    out.append("| case | ours µs | torch µs | CUB µs | ours vs torch | ours vs best peer | % of ceiling |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    out.extend(rows)
    out.append(
        f"| **geometric mean** | {gcell('ours')} | {gcell('torch')} | {gcell('cub')} | "
        f"{gcell('vs_torch', '.2f', '×')} | {gcell('vs_best', '.2f', '×')} | {gcell('pct', '.0f', '%')} |"
    )
    out.append("")
    out.append("Host overhead per call (µs): GPU events / wall clock of the call / wall clock of call + sync")
    out.append("")
    out.append("| input | ours | torch | CuPy+CUB |")
    out.append("|---|---:|---:|---:|")
    ours_oh = (ours_doc or {}).get("host_overhead", {})
    for key in ("tiny_2_3_4_5", "one_element"):
        cells = []
        for src in (ours_oh, overhead.get("torch", {}), overhead.get("cupy_cub", {})):
            v = src.get(key) or {}
            cells.append(" / ".join(fmt(v.get(k)) for k in ("event_us", "wall_call_us", "wall_call_sync_us")))
        out.append(f"| {key} | {' | '.join(cells)} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=str(ROOT / "benches" / "suite.json"))
    ap.add_argument("--ours", help="JSON written by `gpu_reduce --json` (merged into the table)")
    ap.add_argument("--run-ours", metavar="CMD", help="run `CMD --json OURS` first; `auto`: the bundle's staged bench, else cargo bench")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--peers-json", help="also write the peers' raw numbers to this file")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--dry-run", action="store_true", help="no torch/cupy/GPU: print the cases (and the merged table with --ours)")
    ap.add_argument("cases", nargs="*", help="substrings of case names (all when empty)")
    args = ap.parse_args()

    cases = [c for c in load_suite(args.suite) if not args.cases or any(s in c["name"] for s in args.cases)]
    status = 0
    if args.run_ours:
        if not args.ours:
            ap.error("--run-ours needs --ours PATH")
        cmd = our_bench_command(args.run_ours) + ["--json", str(Path(args.ours).resolve())] + args.cases
        print(f"running: {shlex.join(cmd)}", file=sys.stderr)
        rc = subprocess.run(cmd, cwd=ROOT, env=nvrtc_env()).returncode
        if rc != 0:
            print(f"our benchmark exited with {rc}; merging what it wrote", file=sys.stderr)
            status = 1

    ours_doc = None
    if args.ours and Path(args.ours).exists():
        with open(args.ours) as f:
            ours_doc = json.load(f)
        if any(not c.get("ok") for c in ours_doc.get("cases", [])):
            status = 1
    elif args.ours:
        print(f"no results at {args.ours}; the ours column stays empty", file=sys.stderr)
        status = 1

    if args.dry_run:
        for c in cases:
            print(f"{c['name']:<24} {c['dtype']:>5} {c['input_bytes']:>12} {c['view']:<18} dims {c['dims']}")
        peers, overhead, env = {}, {}, {}
    else:
        print(f"peers: {len(cases)} cases, {args.warmup} warm-up + median of {args.runs}, "
              f"CUPY_ACCELERATORS={os.environ['CUPY_ACCELERATORS']}", file=sys.stderr)
        peers, overhead, env = measure_peers(cases, args.warmup, args.runs)
        if args.peers_json:
            with open(args.peers_json, "w") as f:
                json.dump({"date": datetime.date.today().isoformat(), "env": env, "cases": peers, "host_overhead": overhead}, f, indent=1)

    table = build_table(cases, peers, overhead, env, ours_doc, args.warmup, args.runs)
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    return status


if __name__ == "__main__":
    sys.exit(main())
