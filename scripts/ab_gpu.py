#!/usr/bin/env python3
"""A/B of two or more builds of the GPU bench, on the GPU machine.

Runs each bench executable (ours only, no peers) over the same cases,
alternating the builds round by round so that the machine's drift hits
each the same, and prints per case each build's median over the rounds
and its speed-up over the first build (> 1: faster than the first).

    python3 scripts/ab_gpu.py --rounds 2 --cases benches/int_layouts.json \\
        [--prewarm] OLD_BENCH NEW_BENCH [--filter CASE-SUBSTRING ...]

On a fresh machine each bench compiles its kernels (NVRTC) as it meets
them, one build after the other (45-51 s a build for one op over the
sweep's rows of 16 to 256). `--prewarm` first runs every build once, all
at the same time, its timings thrown away, so that the rounds find their
kernels in the disk cache and a device call's minutes go to the rounds.

Each bench checks its results before it times them (a wrong result makes
it exit non-zero, and this script with it). docs/PERFORMANCE.md ("A
change against the code before it, on the GPU") says how to build and
carry the old bench.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import print_ab_table


def bench_command(bench: str, args: argparse.Namespace, out: str) -> list[str]:
    return [bench, "--op", args.op, "--cases", args.cases, "--json", out, *args.filter]


def prewarm(args: argparse.Namespace, tmp: str) -> bool:
    """Runs every bench once, all at the same time, so that each compiles
    its kernels on a core of its own; their timings (taken side by side on
    one GPU) are thrown away. False where one failed."""
    started = time.monotonic()
    runs = [subprocess.Popen(bench_command(bench, args, os.path.join(tmp, f"warm_b{b}.json")),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for b, bench in enumerate(args.benches)]
    ok = True
    for bench, run in zip(args.benches, runs):
        _, err = run.communicate()
        if run.returncode != 0:
            sys.stderr.write(err[-4000:])
            print(f"{bench} failed (exit {run.returncode}) while warming", file=sys.stderr)
            ok = False
    print(f"prewarm: {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benches", nargs="+", help="bench executables, the first is the base")
    ap.add_argument("--cases", default="sweep", help="suite, sweep or a cases JSON file")
    ap.add_argument("--op", default="sum")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--filter", nargs="*", default=[], help="case-name substrings")
    ap.add_argument("--prewarm", action="store_true",
                    help="first run every bench once, all at the same time, to fill the kernel cache (timings discarded)")
    args = ap.parse_args()

    times: dict[str, dict[int, list[float]]] = {}
    order: list[str] = []
    names = [os.path.basename(b) for b in args.benches]
    with tempfile.TemporaryDirectory() as tmp:
        if args.prewarm and not prewarm(args, tmp):
            return 1
        for rnd in range(args.rounds):
            for b, bench in enumerate(args.benches):
                out = os.path.join(tmp, f"r{rnd}_b{b}.json")
                cmd = bench_command(bench, args, out)
                started = time.monotonic()
                done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr[-4000:])
                    print(f"{bench} failed (exit {done.returncode}) in round {rnd + 1}", file=sys.stderr)
                    return 1
                # Progress on stderr: a build's first round also compiles
                # its kernels, so rounds can take minutes.
                print(f"round {rnd + 1}, {names[b]}: {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
                with open(out) as f:
                    for case in json.load(f)["cases"]:
                        if case["our_us"] is None:
                            continue
                        if case["name"] not in times:
                            times[case["name"]] = {}
                            order.append(case["name"])
                        times[case["name"]].setdefault(b, []).append(case["our_us"])
            # The table so far after every round, so that a run cut short
            # (a device call's time limit) still leaves its whole rounds.
            rows = [(name, [statistics.median(times[name][b]) if b in times[name] else None for b in range(len(names))])
                    for name in order]
            print_ab_table(names, rows, rnd + 1)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
