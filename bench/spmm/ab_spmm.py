#!/usr/bin/env python3
"""A/B of two compilations of the same spmm case set, in one process: each
case's program from --a and from --b runs on the same inputs, both are
checked against torch (run_spmm.py's tolerance), and both are timed in
interleaved rounds of CUDA-graph replays (bench/timing.py), so that both see
the same clocks. For a change that must not slow the kernels:

  python3 bench/spmm/ab_spmm.py --set issue --a .carry/before --b .carry/after \\
      --out results.json --max-slowdown 1.02

Fails (exit 1) when a case is outside tolerance, or when --max-slowdown is
given and some case's b/a time ratio exceeds it. Each record says whether
the two programs' PTX is the same (`same_ptx`: their b/a is the noise of
the measurement).

  python3 bench/spmm/ab_spmm.py --report RECORDS.json... [--doc docs/performance.md] [--section NAME]

writes the records' summary (and the cases above 1%) into the document's
section NAME (default `persistent-grid-ab`), or prints it.
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
from markdown import replace_section  # noqa: E402
from run_spmm import TOLERANCE, TORCH_DTYPE, load_case, pruned_weight  # noqa: E402
from timing import median_interleaved_us  # noqa: E402


def report(paths):
    """Markdown: per records file, b/a of the timed cases with the same and
    with changed PTX (min, median, max), then every case above 1.01."""
    lines = ["| records | PTX | cases | b/a min | median | max |", "|---|---|---|---|---|---|"]
    above = []
    for path in paths:
        records = [r for r in json.loads(pathlib.Path(path).read_text()) if "ratio" in r]
        for same in (True, False):
            ratios = sorted(r["ratio"] for r in records if r.get("same_ptx") == same)
            if ratios:
                lines.append("| `%s` | %s | %d | %.3f | %.3f | %.3f |" % (
                    pathlib.Path(path).name, "same" if same else "changed", len(ratios), ratios[0],
                    ratios[len(ratios) // 2], ratios[-1]))
        above += [(pathlib.Path(path).name, r) for r in records if r["ratio"] > 1.01]
    lines += ["", "Cases above 1.01:", "", "| records | case | PTX | %s µs | %s µs | b/a |" % ("a", "b"),
              "|---|---|---|---|---|---|"]
    for name, r in above:
        s = r["shape"]
        lines.append("| `%s` | %s %s M=%d N=%d K=%d | %s | %.1f | %.1f | %.3f |" % (
            name, r["variant"], r["dtype"], s["M"], s["N"], s["K"], "same" if r.get("same_ptx") else "changed",
            r["a_us"], r["b_us"], r["ratio"]))
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--report":
        ap = argparse.ArgumentParser()
        ap.add_argument("--report", nargs="+", required=True)
        ap.add_argument("--doc")
        ap.add_argument("--section", default="persistent-grid-ab",
                        help="the document's section (<!-- NAME:begin/end -->) to replace")
        args = ap.parse_args()
        text = report(args.report)
        if not args.doc:
            print(text)
            return 0
        doc = pathlib.Path(args.doc)
        doc.write_text(replace_section(doc.read_text(), args.section, text))
        return 0
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
    ap.add_argument("--only", default="",
                    help="comma-separated case names (cases.name) to run, of the set; all when empty")
    ap.add_argument("--commit", default=os.environ.get("SPARSEOPT_COMMIT", "unknown"))
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()

    gpu = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    records, failures, slow = [], 0, 0
    for variant, dtype, kind, m, n, k in cases.cases(args.set):
        name = cases.name(variant, dtype, m, n, k)
        if args.only and name not in args.only.split(","):
            continue
        tdt = TORCH_DTYPE[dtype]
        w = pruned_weight(n, k, tdt, gen, cases.family(variant))
        x = torch.randn(m, k, generator=gen, device="cuda").to(tdt)
        ref = x.float() @ w.float().t()
        rec = {"bench": "spmm-ab", "variant": variant, "dtype": dtype, "kind": kind,
               "shape": {"M": m, "N": n, "K": k}, "gpu": gpu,
               "date": datetime.date.today().isoformat(), "commit": args.commit,
               "command": args.command, "a": args.a_label, "b": args.b_label,
               "tolerance": TOLERANCE[dtype]}
        ptx = [(pathlib.Path(getattr(args, side)) / name / "kernels.ptx") for side in ("a", "b")]
        rec["same_ptx"] = all(p.exists() for p in ptx) and ptx[0].read_bytes() == ptx[1].read_bytes()
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
        # Written after every case, so that a run cut short keeps its records.
        pathlib.Path(args.out).write_text(json.dumps(records, indent=1) + "\n")
        print("%-4s %-5s %-11s M=%-6d N=%-6d K=%-6d err %.1e / %.1e%s" % (
            variant, dtype, kind, m, n, k, rec["a_max_rel_err"], rec["b_max_rel_err"],
            "  %s %.1f us  %s %.1f us  b/a %.3f" % (args.a_label, rec["a_us"], args.b_label,
                                                     rec["b_us"], rec["ratio"]) if kind == "timing" else ""))
    timed = [r["ratio"] for r in records if "ratio" in r]
    if timed:
        print("b/a over %d timed cases: min %.3f, median %.3f, max %.3f" % (
            len(timed), min(timed), sorted(timed)[len(timed) // 2], max(timed)))
    print("%d cases, %d outside tolerance, %d slower than %.2fx; wrote %s" % (
        len(records), failures, slow, args.max_slowdown, args.out))
    return 1 if failures or slow else 0


if __name__ == "__main__":
    sys.exit(main())
