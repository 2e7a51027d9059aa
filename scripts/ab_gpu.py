#!/usr/bin/env python3
"""A/B of two or more builds of the GPU bench, on the GPU machine.

Runs each bench executable (ours only, no peers) over the same cases,
alternating the builds round by round so that the machine's drift hits
each the same, and prints per case each build's median over the rounds
and its speed-up over the first build (> 1: faster than the first).

    python3 scripts/ab_gpu.py --rounds 2 --cases benches/int_layouts.json \\
        OLD_BENCH NEW_BENCH [--filter CASE-SUBSTRING ...]

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benches", nargs="+", help="bench executables, the first is the base")
    ap.add_argument("--cases", default="sweep", help="suite, sweep or a cases JSON file")
    ap.add_argument("--op", default="sum")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--filter", nargs="*", default=[], help="case-name substrings")
    args = ap.parse_args()

    times: dict[str, dict[int, list[float]]] = {}
    order: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for b, bench in enumerate(args.benches):
                out = os.path.join(tmp, f"r{rnd}_b{b}.json")
                cmd = [bench, "--op", args.op, "--cases", args.cases, "--json", out, *args.filter]
                done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr[-4000:])
                    print(f"{bench} failed (exit {done.returncode}) in round {rnd + 1}", file=sys.stderr)
                    return 1
                with open(out) as f:
                    for case in json.load(f)["cases"]:
                        if case["our_us"] is None:
                            continue
                        if case["name"] not in times:
                            times[case["name"]] = {}
                            order.append(case["name"])
                        times[case["name"]].setdefault(b, []).append(case["our_us"])

    names = [os.path.basename(b) for b in args.benches]
    print(f"median of {args.rounds} alternating rounds, µs; speed-up = first build's µs / this build's µs")
    print("| case | " + " | ".join(names) + " | " + " | ".join(f"speed-up {n}" for n in names[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(names) - 1))
    speedups: list[list[float]] = [[] for _ in names[1:]]
    for name in order:
        med = [statistics.median(times[name][b]) if b in times[name] else None for b in range(len(names))]
        cells = [f"{m:.1f}" if m is not None else "–" for m in med]
        ups = []
        for i, m in enumerate(med[1:]):
            if m and med[0]:
                ups.append(f"{med[0] / m:.2f}×")
                speedups[i].append(med[0] / m)
            else:
                ups.append("–")
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ups) + " |")
    geo = [f"{statistics.geometric_mean(s):.2f}×" if s else "–" for s in speedups]
    print("| **geometric mean** | " + " | ".join("" for _ in names) + " | " + " | ".join(geo) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
