#!/usr/bin/env python3
"""Side-by-side CPU table: one op of our CPU backend (benches/cpu_reduce.rs
JSON) against torch on the CPU, over the suite or the sweep, on the same
machine with the same number of threads.

Protocol, identical for both sides and read from our bench: wall clock
around each call (allocating and freeing the result included), `warmup`
untimed calls, then calls until `min_runs` are done and either `max_runs` are
done or `budget_ms` has passed; the median. torch runs with
torch.set_num_threads(threads of our bench: rayon's pool, every core).

The two sides are interleaved: our bench runs as a server (`--serve`) and,
case by case, the script alternates `--rounds` rounds of our calls and
torch's (ours first in even rounds, torch first in odd ones). Each side's
time is the median of its round medians. A shared host's memory speed
drifts over minutes; a whole run of ours followed by a whole run of torch
compares two different machines.

Usage (torch installed; on the GPU machine's host, from the repo root):

    python3 scripts/compare_cpu.py --run-ours auto --op sum --cases sweep --ours cpu.json --out cpu_table.md

`--run-ours CMD` starts `CMD --serve --op OP --cases SET` and writes what it
measured to OURS in the bench's own JSON shape; `auto` is the bench binary
staged by the GPU bundle (.gpu/bin/bench-cpu_reduce-*) when there is one,
else `cargo bench --bench cpu_reduce --`. Without `--run-ours`, `--ours`
merges an existing JSON of the bench and torch is timed afterwards (not
interleaved). `--merge A.json B.json` makes one table of runs over parts of the case list
(each beside its `_peers.json`), for a sweep that does not fit one command
on the GPU machine. `--dry-run` needs no torch: it prints
the case list and, with `--ours`, the table with an empty torch column.
"""

import argparse
import datetime
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

from bench_common import (
    case_set_arg, DASH, OPS, ROOT, NotApplicable, fmt, gcell, geomean_cells, load_cases, load_ours, staged_or_cargo,
    torch_call, torch_input, torch_view,
)

# benches/cpu_reduce.rs's Plan, for when there is no JSON of ours to read it from.
DEFAULT_PROTOCOL = {
    "suite": {"warmup": 2, "min_runs": 5, "max_runs": 201, "budget_ms": 1000},
    "sweep": {"warmup": 1, "min_runs": 3, "max_runs": 101, "budget_ms": 300},
    "quick": {"warmup": 1, "min_runs": 3, "max_runs": 3, "budget_ms": 0},
}


def time_us(fn, protocol):
    """Median µs of `fn` under our CPU bench's protocol."""
    for _ in range(protocol["warmup"]):
        fn()
    times = []
    start = time.perf_counter()
    budget = protocol["budget_ms"] / 1e3
    while len(times) < protocol["min_runs"] or (
        len(times) < protocol["max_runs"] and time.perf_counter() - start < budget
    ):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def torch_setup(threads):
    import torch

    torch.set_num_threads(threads)
    # torch's CPU generator is single-threaded: making a 256 MiB input took
    # seconds a case. A GPU, where there is one, makes it in milliseconds;
    # the timed calls run on the CPU copy either way.
    maker = "cuda" if torch.cuda.is_available() else "cpu"
    return torch, maker, torch.Generator(device=maker)


def torch_env(torch):
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": cpu_name()}


def torch_timer(case, op, maker, gen, copies=1):
    """A function timing torch's call on `case` under a protocol; it holds
    the case's inputs until dropped: `copies` of them, each in an allocation
    of its own, taken in turn by the calls (our bench's `--copies`)."""
    xs = [torch_view(torch_input(case, maker, gen).cpu(), case["view"]) for _ in range(copies)]
    call, dims = torch_call(op), tuple(case["dims"])
    turn = itertools.cycle(xs)
    return lambda protocol: time_us(lambda: call(next(turn), dims), protocol)


def copies_args(copies):
    """Our bench's arguments for `copies` inputs a case: none for one, so
    that a bench from before `--copies` still runs."""
    return ["--copies", str(copies)] if copies > 1 else []


def copies_of(protocol):
    """The inputs a case of the protocol (1 for a bench from before `--copies`)."""
    return protocol.get("copies", 1)


def measure_torch(cases, op, threads, protocol):
    """torch alone, case after case (for a JSON of ours measured earlier)."""
    torch, maker, gen = torch_setup(threads)
    results = {}
    for case in cases:
        t0 = time.time()
        r = {"torch_us": None, "notes": []}
        try:
            r["torch_us"] = torch_timer(case, op, maker, gen, copies_of(protocol))(protocol)
        except (NotApplicable, RuntimeError, TypeError) as e:
            r["notes"].append(str(e))
        results[case["name"]] = r
        print(f"  {case['name']:<30} torch {fmt(r['torch_us']):>10} µs  ({time.time() - t0:.1f} s) {'; '.join(r['notes'])}",
              file=sys.stderr)
    return results, torch_env(torch)


class OurServer:
    """Our bench in `--serve` mode: one command a line, one JSON reply a line."""

    def __init__(self, spec, extra, env=None):
        cmd = (staged_or_cargo("cpu_reduce") if spec == "auto" else shlex.split(spec)) + ["--serve"] + list(extra)
        print(f"running: {shlex.join(cmd)}", file=sys.stderr)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.hello = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"our bench exited ({self.proc.wait()}) without a reply")
        return json.loads(line)

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if "error" in reply:
            raise RuntimeError(f"our bench, on {command!r}: {reply['error']}")
        return reply

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except OSError:
            pass
        return self.proc.wait()


# Between one side's calls and the other's: long enough for the side that
# just ran to stop spinning (OpenMP's and rayon's idle workers spin briefly
# before they sleep) so that it takes no core from the other.
SETTLE_S = 0.05


def measure_interleaved(cases, op, spec, extra, rounds, threads_arg):
    """Ours and torch, case by case, in alternating rounds. Returns our
    side's JSON document (the shape of `cpu_reduce --json`), torch's
    results and the environment."""
    ours = OurServer(spec, extra)
    hello = ours.hello
    protocol = hello["protocol"]
    threads = threads_arg or hello["threads"]
    torch, maker, gen = torch_setup(threads)
    doc = {"benchmark": "cpu_reduce", "op": op, "commit": hello.get("commit"), "threads": hello["threads"],
           "protocol": protocol, "rounds": rounds, "interleaved": True, "cases": []}
    peers = {}
    try:
        for case in cases:
            t0 = time.time()
            o = ours.ask(f"case {case['name']}")
            row = {"name": case["name"], "dtype": case["dtype"], "input_bytes": case["input_bytes"],
                   "ok": o.get("ok", False), "skipped": o.get("skipped"), "detail": o.get("detail", ""),
                   "worst_err_over_tol": o.get("worst_err_over_tol"), "our_us": None, "ndarray_us": None,
                   "plain_read_gbs": None, "round_us": []}
            r = {"torch_us": None, "notes": [], "round_us": []}
            timer = None
            if row["ok"] and not row["skipped"]:
                try:
                    timer = torch_timer(case, op, maker, gen, copies_of(protocol))
                except (NotApplicable, RuntimeError, TypeError) as e:
                    r["notes"].append(str(e))
                for i in range(rounds):
                    sides = ["ours", "torch"] if i % 2 == 0 else ["torch", "ours"]
                    for side in sides:
                        if side == "ours":
                            row["round_us"].append(ours.ask("time")["us"])
                        elif timer is not None:
                            try:
                                r["round_us"].append(timer(protocol))
                            except (NotApplicable, RuntimeError, TypeError) as e:
                                r["notes"].append(str(e))
                                timer = None
                        time.sleep(SETTLE_S)
                del timer
                row["our_us"] = statistics.median(row["round_us"])
                if r["round_us"]:
                    r["torch_us"] = statistics.median(r["round_us"])
                row["plain_read_gbs"] = ours.ask("plain")["gbs"]
                row["ndarray_us"] = ours.ask("ndarray")["us"]
            doc["cases"].append(row)
            peers[case["name"]] = r
            status = "n/a" if row["skipped"] else ("ok" if row["ok"] else "FAILED")
            print(f"  {case['name']:<30} {status:<6} ours {fmt(row['our_us']):>10} µs  torch {fmt(r['torch_us']):>10} µs"
                  f"  ({time.time() - t0:.1f} s) {row['detail']} {'; '.join(r['notes'])}", file=sys.stderr)
    finally:
        rc = ours.close()
    if rc != 0:
        print(f"our bench exited with {rc}", file=sys.stderr)
    return doc, peers, torch_env(torch), rc


def merge_runs(paths):
    """Our JSONs and torch's of runs over parts of one case list, as one run
    (they must come from one commit and one protocol)."""
    docs, peers, env = [], {}, {}
    for path in paths:
        with open(path) as f:
            docs.append(json.load(f))
        with open(path[: -len(".json")] + "_peers.json") as f:
            p = json.load(f)
        peers.update(p["cases"])
        env = env or p["env"]
    first = docs[0]
    for d in docs[1:]:
        for key in ("commit", "protocol", "threads", "op", "rounds"):
            if d.get(key) != first.get(key):
                raise SystemExit(f"cannot merge runs with different {key}: {first.get(key)} vs {d.get(key)}")
    merged = dict(first, cases=[c for d in docs for c in d["cases"]])
    return merged, peers, env


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return DASH


def build_table(cases, op, peers, env, ours_doc, protocol, threads):
    ours_by_name = {c["name"]: c for c in (ours_doc or {}).get("cases", [])}
    rows, cols = [], {k: [] for k in ("ours", "torch", "nd", "vs_torch", "vs_nd", "pct_plain")}
    for case in cases:
        o = ours_by_name.get(case["name"], {})
        ok = o.get("ok", False)
        our_us = o.get("our_us") if ok else None
        torch_us = peers.get(case["name"], {}).get("torch_us")
        nd_us = o.get("ndarray_us")
        b = case["input_bytes"]
        vs_torch = torch_us / our_us if our_us and torch_us else None
        vs_nd = nd_us / our_us if our_us and nd_us else None
        plain = o.get("plain_read_gbs")
        pct_plain = 100.0 * (b / our_us / 1e3) / plain if our_us and plain else None
        for k, v in zip(cols, (our_us, torch_us, nd_us, vs_torch, vs_nd, pct_plain)):
            cols[k].append(v)
        if o.get("skipped"):
            ours_cell = "n/a"
        else:
            ours_cell = fmt(our_us) if ok else ("FAILED" if o else DASH)
        gb = lambda us: fmt(b / us / 1e3 if us else None)  # noqa: E731
        rows.append(
            f"| {case['name']} | {case['dtype']} | {b / 1e6:.1f} | {ours_cell} | {gb(our_us)} | {fmt(plain)} | "
            f"{fmt(pct_plain, '.0f', '%')} | {fmt(torch_us)} | {gb(torch_us)} | {fmt(nd_us)} | "
            f"{fmt(vs_torch, '.2f', '×')} | {fmt(vs_nd, '.2f', '×')} |"
        )
    g = geomean_cells(cols, [v is not None for v in cols["ours"]], len(cases))
    out = [
        f"Op `{op}`. CPU: {env.get('cpu', DASH)}; {threads} threads on both sides; torch {env.get('torch', DASH)}",
        f"tensor-reduce commit {(ours_doc or {}).get('commit') or DASH}. Protocol (both sides): wall clock per call, "
        f"{protocol['warmup']} warm-up, then at least {protocol['min_runs']} and at most {protocol['max_runs']} calls "
        f"within {protocol['budget_ms']} ms"
        + (f", taking {copies_of(protocol)} inputs in separate allocations in turn" if copies_of(protocol) > 1 else "")
        + "; the median"
        + (f" of each round, then the median of {ours_doc['rounds']} rounds that alternate between the sides, case by case"
           if (ours_doc or {}).get("interleaved") else "")
        + ". plain read: a multithreaded read of the same number of bytes in "
        "the same run (small inputs may sit in cache for every column). ours vs X = X µs / ours µs; > 1 means we are faster.",
        "",
        "| case | dtype | input MB | ours µs | ours GB/s | plain read GB/s | % of plain read | torch µs | torch GB/s "
        "| ndarray µs | ours vs torch | ours vs ndarray |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        f"| **geometric mean** | | | {gcell(g, 'ours')} | | | {gcell(g, 'pct_plain', '.0f', '%')} | {gcell(g, 'torch')} | "
        f"| {gcell(g, 'nd')} | {gcell(g, 'vs_torch', '.2f', '×')} | {gcell(g, 'vs_nd', '.2f', '×')} |",
    ]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="sum", choices=OPS)
    ap.add_argument("--cases", dest="case_set", default="suite", type=case_set_arg,
                    help="suite, sweep, or a .json case list of the same form")
    ap.add_argument("--quick", action="store_true", help="the sweep's small shapes and 1 warm-up + 3 runs, on both sides")
    ap.add_argument("--ours", help="JSON written by `cpu_reduce --json` (merged into the table)")
    ap.add_argument("--run-ours", metavar="CMD", help="start `CMD --serve --op OP --cases SET`, time torch between its rounds and write ours to OURS; "
                         "`auto`: the bundle's staged bench, else cargo bench")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and torch a case (with --run-ours)")
    ap.add_argument("--copies", type=int, default=1, help="inputs a case on each side, in allocations of their own, "
                    "taken in turn (with --run-ours; see the bench's --copies)")
    ap.add_argument("--threads", type=int, help="torch threads (default: our bench's, else every core)")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--peers-json", help="also write torch's raw numbers to this file")
    ap.add_argument("--merge", nargs="+", metavar="OURS_JSON",
                    help="no timing: one table from runs over parts of the case list (each OURS_JSON beside its "
                         "_peers.json, as bench.sh writes them)")
    ap.add_argument("--dry-run", action="store_true", help="no torch: print the cases (and the merged table with --ours)")
    ap.add_argument("filters", nargs="*", help="substrings of case names (all when empty)")
    args = ap.parse_args()

    cases = load_cases(args.case_set, args.quick, args.filters)
    status = 0
    if args.run_ours and args.dry_run:
        ap.error("--dry-run runs no torch: merge an existing --ours instead of --run-ours")
    if args.merge:
        ours_doc, peers, env = merge_runs(args.merge)
        protocol, threads = ours_doc["protocol"], ours_doc["threads"]
    elif args.run_ours:
        if not args.ours:
            ap.error("--run-ours needs --ours PATH")
        extra = (["--op", args.op, "--cases", args.case_set] + (["--quick"] if args.quick else [])
                 + copies_args(args.copies) + args.filters)
        print(f"ours and torch interleaved: {args.op} over {len(cases)} {args.case_set} cases, {args.rounds} rounds",
              file=sys.stderr)
        ours_doc, peers, env, rc = measure_interleaved(cases, args.op, args.run_ours, extra, args.rounds, args.threads)
        ours_doc["case_set"] = args.case_set
        ours_doc["quick"] = args.quick
        with open(args.ours, "w") as f:
            json.dump(ours_doc, f, indent=1)
        if rc != 0:
            status = 1
        protocol, threads = ours_doc["protocol"], args.threads or ours_doc["threads"]
    else:
        ours_doc = load_ours(args.ours)
        protocol = (ours_doc or {}).get("protocol") or DEFAULT_PROTOCOL["quick" if args.quick else "suite" if args.case_set == "suite" else "sweep"]
        threads = args.threads or (ours_doc or {}).get("threads") or os.cpu_count()
        if args.dry_run:
            for c in cases:
                print(f"{c['name']:<30} {c['dtype']:>5} {c['input_bytes']:>12} {c['view']:<18} dims {c['dims']}")
            peers, env = {}, {"cpu": cpu_name()}
        else:
            print(f"torch: {args.op} over {len(cases)} {args.case_set} cases, {threads} threads, protocol {protocol}",
                  file=sys.stderr)
            peers, env = measure_torch(cases, args.op, threads, protocol)
    if args.ours and (ours_doc is None or any(not c.get("ok") for c in ours_doc.get("cases", []))):
        status = 1
    if args.peers_json and not args.dry_run:
        with open(args.peers_json, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(), "op": args.op, "case_set": args.case_set,
                       "env": env, "protocol": protocol, "cases": peers}, f, indent=1)

    table = build_table(cases, args.op, peers, env, ours_doc, protocol, threads)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    return status


if __name__ == "__main__":
    sys.exit(main())
