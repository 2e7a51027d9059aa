#!/usr/bin/env python3
"""A/B of two or more CPU bench sides, interleaved case by case, on one host.

Each side is a `cpu_reduce` bench run as a server (`--serve`): a build, or
the same build under other environment variables. Case by case, every side
prepares the case, then `--rounds` rounds time each side in turn (the order
rotates each round), so that the host's drift hits every side alike. With
`--torch`, torch's CPU sum is one more side. Prints, per case, each side's
median of its round medians and its speed-up over the first side (> 1:
faster than the first).

    python3 scripts/ab_cpu.py --rounds 3 --cases sweep \\
        OLD_BENCH NEW_BENCH ['VAR=VALUE NEW_BENCH' ...] [--torch] [--filter CASE-SUBSTRING ...]

A side is a shell-quoted command: leading `VAR=VALUE` words set its
environment. Each side checks its results before it times them; a side
whose result fails its check makes this script exit non-zero.
docs/PERFORMANCE.md ("A change against the code before it") says how to
build and carry an old bench.
"""

import argparse
import os
import shlex
import statistics
import sys
import time

from bench_common import case_set_arg, load_cases, print_ab_table
from compare_cpu import SETTLE_S, OurServer, copies_args, copies_of, torch_setup, torch_timer


def side_command(spec):
    """(environment, argv) of a side's spec."""
    words = shlex.split(spec)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if not words:
        raise ValueError(f"side {spec!r} names no bench")
    return env, words


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sides", nargs="+", help="bench commands, each optionally led by VAR=VALUE words; the first is the base")
    ap.add_argument("--cases", default="sweep", type=case_set_arg, help="suite, sweep or a cases JSON file")
    ap.add_argument("--op", default="sum")
    ap.add_argument("--quick", action="store_true", help="the sweep's small shapes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=1, help="inputs a case on every side, in allocations of their own, taken in turn")
    ap.add_argument("--torch", action="store_true", help="torch's CPU as one more side")
    ap.add_argument("--filter", nargs="*", default=[], help="case-name substrings")
    args = ap.parse_args()

    cases = load_cases(args.cases, args.quick, args.filter)
    extra = ["--op", args.op, "--cases", args.cases] + (["--quick"] if args.quick else []) + copies_args(args.copies) + args.filter
    servers = []
    for spec in args.sides:
        env, argv = side_command(spec)
        servers.append(OurServer(shlex.join(argv), extra, env=env))
    names = list(args.sides)
    torch = None
    if args.torch:
        torch = torch_setup(servers[0].hello["threads"])
        names.append("torch")
    protocol = servers[0].hello["protocol"]
    status = 0
    rows = []
    try:
        for case in cases:
            t0 = time.time()
            ok = True
            for s in servers:
                reply = s.ask(f"case {case['name']}")
                if not reply.get("ok") or reply.get("skipped"):
                    print(f"  {case['name']}: {reply.get('detail') or reply.get('skipped')}", file=sys.stderr)
                    ok = False
                    status = status or int(not reply.get("skipped"))
            if not ok:
                continue
            timers = [lambda s=s: s.ask("time")["us"] for s in servers]
            if torch is not None:
                _, maker, gen = torch
                timer = torch_timer(case, args.op, maker, gen, copies_of(protocol))
                timers.append(lambda: timer(protocol))
            rounds = [[] for _ in timers]
            for r in range(args.rounds):
                for i in range(len(timers)):
                    j = (i + r) % len(timers)
                    rounds[j].append(timers[j]())
                    time.sleep(SETTLE_S)
            med = [statistics.median(t) for t in rounds]
            rows.append((case["name"], med))
            print(f"  {case['name']:<30} " + "  ".join(f"{m:9.1f}" for m in med) + f"  ({time.time() - t0:.1f} s)",
                  file=sys.stderr)
    finally:
        for s in servers:
            s.close()

    for i, n in enumerate(names):
        print(f"- side {i}: `{n}`")
    print_ab_table([f"side {i}" for i in range(len(names))], rows, args.rounds, order="rotating")
    return status


if __name__ == "__main__":
    sys.exit(main())
