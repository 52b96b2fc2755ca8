#!/usr/bin/env python3
"""A/B of two compilations of the same spmm case set, in one process: each
case's program from --a and from --b runs on the same inputs, both are
checked against torch (run_spmm.py's tolerance), and both are timed in
interleaved rounds of CUDA-graph replays (bench/timing.py), so that both see
the same clocks. For a change that must not slow the kernels:

  python3 bench/spmm/ab_spmm.py --set issue --a .carry/before --b .carry/after \\
      --out results.json --max-slowdown 1.02

Fails (exit 1) when a case is outside tolerance, or when --max-slowdown is
given and some case's b/a time ratio exceeds it.
"""
import argparse
import datetime
import json
import os
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import cases  # noqa: E402
from run_spmm import TOLERANCE, TORCH_DTYPE, load_case, pruned_weight  # noqa: E402
from timing import median_interleaved_us  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="issue", choices=cases.SETS)
    ap.add_argument("--a", required=True, help="artifacts of the reference compilation")
    ap.add_argument("--b", required=True, help="artifacts of the changed compilation")
    ap.add_argument("--a-label", default="a")
    ap.add_argument("--b-label", default="b")
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--max-slowdown", type=float, default=0.0,
                    help="fail when b/a exceeds this for a timed case (0: report only)")
    ap.add_argument("--commit", default=os.environ.get("SPARSEOPT_COMMIT", "unknown"))
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()

    gpu = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    records, failures, slow = [], 0, 0
    for variant, dtype, kind, m, n, k in cases.cases(args.set):
        name = cases.name(variant, dtype, m, n, k)
        tdt = TORCH_DTYPE[dtype]
        w = pruned_weight(n, k, tdt, gen, cases.family(variant))
        x = torch.randn(m, k, generator=gen, device="cuda").to(tdt)
        ref = x.float() @ w.float().t()
        rec = {"bench": "spmm-ab", "variant": variant, "dtype": dtype, "kind": kind,
               "shape": {"M": m, "N": n, "K": k}, "gpu": gpu,
               "date": datetime.date.today().isoformat(), "commit": args.commit,
               "command": args.command, "a": args.a_label, "b": args.b_label,
               "tolerance": TOLERANCE[dtype]}
        runs = []
        for side in ("a", "b"):
            choice, run, y = load_case(pathlib.Path(getattr(args, side)) / name, variant, x, w)
            run()
            torch.cuda.synchronize()
            err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
            rec[side + "_path"], rec[side + "_max_rel_err"] = choice, err
            failures += err > TOLERANCE[dtype]
            runs.append(run)
        if kind == "timing":
            ta, tb = median_interleaved_us(runs, warmup=args.warmup, reps=args.reps)
            rec["a_us"], rec["b_us"], rec["ratio"] = ta, tb, tb / ta
            slow += bool(args.max_slowdown) and tb / ta > args.max_slowdown
        for run in runs:
            run.keep[0].close()
        records.append(rec)
        print("%-4s %-5s %-11s M=%-6d N=%-6d K=%-6d err %.1e / %.1e%s" % (
            variant, dtype, kind, m, n, k, rec["a_max_rel_err"], rec["b_max_rel_err"],
            "  %s %.1f us  %s %.1f us  b/a %.3f" % (args.a_label, rec["a_us"], args.b_label,
                                                     rec["b_us"], rec["ratio"]) if kind == "timing" else ""))
    pathlib.Path(args.out).write_text(json.dumps(records, indent=1) + "\n")
    timed = [r["ratio"] for r in records if "ratio" in r]
    if timed:
        print("b/a over %d timed cases: min %.3f, median %.3f, max %.3f" % (
            len(timed), min(timed), sorted(timed)[len(timed) // 2], max(timed)))
    print("%d cases, %d outside tolerance, %d slower than %.2fx; wrote %s" % (
        len(records), failures, slow, args.max_slowdown, args.out))
    return 1 if failures or slow else 0


if __name__ == "__main__":
    sys.exit(main())
