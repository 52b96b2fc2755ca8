#!/usr/bin/env python3
"""Per-kernel GPU times of one TwELL FFN program (torch.profiler, which sees
every kernel of the process), at the given active fractions: where the time
of run_ffn.py's figures goes (gate GEMM, pack, consumer).

  python3 bench/twell/profile_ffn.py --artifact DIR [--program SUB] [--fractions 0.005,0.02] [--reps 5]
"""
import argparse
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench" / "twell"))

import torch  # noqa: E402

from run_ffn import dense, inputs  # noqa: E402
from sparse_opt import runtime  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", required=True, type=pathlib.Path)
    ap.add_argument("--fractions", default="0.005,0.02")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--program", default="",
                    help="profile the program in DIR/SUB (e.g. tensor_cores, fused) instead")
    ap.add_argument("--dense", action="store_true",
                    help="profile our dense program (DIR/dense) and torch's dense FFN instead")
    args = ap.parse_args()
    _, _, mm, dd, ff = args.artifact.name.split("_")
    m, d, f = int(mm[1:]), int(dd[1:]), int(ff[1:])
    gen = torch.Generator(device="cuda").manual_seed(0)
    prog = runtime.load(args.artifact / "dense" if args.dense else
                        args.artifact / args.program if args.program else args.artifact)
    sig = prog.signature
    stream = torch.cuda.current_stream().cuda_stream
    for p in (float(v) for v in args.fractions.split(",")):
        xs = inputs(m, d, f, p, gen)
        ptrs = [t.data_ptr() for t in xs]
        prog.bind([ptrs[i] for i in sig.params], stream)
        ins = [ptrs[i] for i in sig.input_positions]
        out = torch.empty(m, d, dtype=torch.bfloat16, device="cuda")
        prog.run(ins, [out.data_ptr()], stream)
        torch.cuda.synchronize()
        runs = [("ours", lambda: prog.run(ins, [out.data_ptr()], stream))]
        if args.dense:
            runs.append(("torch", lambda: dense(*xs)))
        for label, fn in runs:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(args.reps):
                    fn()
                torch.cuda.synchronize()
            times = collections.defaultdict(float)
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    times[e.name] += getattr(e, "device_time", 0.0) / args.reps
            print("%s %s active %.3f: %s" % (label, args.artifact.name, p, ", ".join(
                "%s %.1f us" % (k[:60], v)
                for k, v in sorted(times.items(), key=lambda kv: -kv[1]))))
    prog.close()


if __name__ == "__main__":
    main()
