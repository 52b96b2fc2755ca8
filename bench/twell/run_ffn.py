#!/usr/bin/env python3
"""Times the TwELL FFN programs of make_ffn.py against torch's dense gated
FFN (cuBLAS) in the same process, at several active fractions of the gate.

The gate's active fraction p is set through the data: x has a constant 1 in
feature 0 and column 0 of Wg holds the same shift s for every neuron, so
each gate pre-activation is N(s, σ²) with σ the spread of the other
features' product; s = σ·Φ⁻¹(p) makes each neuron active with probability p
in every row. Times: CUDA-graph replay, median of repeated runs after
warm-up, the three programs replayed in turns so that they see the same
clocks (bench/timing.py); error: max |ours − dense| / max |dense|. Each record has the
TwELL program's time, the program stats after a run (the measured density
and the fallback rows, as the GPU counted them), our dense program's time,
and the compiler's choice at that calibrated density (choice.json of
make_ffn.py) with the time and speedup of the chosen program. Where the
case has a fused/, fused_cluster/ or tensor_cores/ program (make_ffn.py
--fused / --fused-cluster / --tensor-cores: the TwELL program with the
fused producer, without or with clusters of two, or with the tensor-core
consumer), each is timed in the same turns and gets its own record
(variant "twell-fused-producer" / "twell-fused-producer-cluster2" /
"twell-tensor-cores"; "twell-tensor-cores-tma-gather" for tensor_cores_tma/,
make_ffn.py --tensor-cores-tma),
with the library-producer TwELL time as the baseline
"twell_library_producer").

  python3 bench/twell/run_ffn.py --artifacts DIR --out results.json
"""
import argparse
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from sparse_opt import runtime  # noqa: E402
from timing import median_interleaved_us  # noqa: E402


# Sub-programs of a case timed beside the TwELL one (make_ffn.py options).
EXTRA_PROGRAMS = (("fused", "twell-fused-producer"),
                  ("fused_cluster", "twell-fused-producer-cluster2"),
                  ("tensor_cores", "twell-tensor-cores"),
                  ("tensor_cores_tma", "twell-tensor-cores-tma-gather"))


def neuron_fractions(f, p, skew):
    """Per-neuron active fractions with mean p: all p (skew 0), or Zipf-like
    p_j proportional to (j + 1)^-skew, capped at 0.99, the mass above the
    cap spread over the rest (a few hot neurons, a long cold tail)."""
    if skew <= 0:
        return torch.full((f,), p, dtype=torch.float64)
    w = torch.arange(1, f + 1, dtype=torch.float64).pow(-skew)
    q = w * (p * f / w.sum())
    for _ in range(50):
        over = q > 0.99
        if not over.any():
            break
        excess = (q[over] - 0.99).sum()
        q[over] = 0.99
        q[~over] += excess * q[~over] / q[~over].sum()
    return q.clamp(max=0.99)


def inputs(m, d, f, p, gen, skew=0.0):
    x = torch.randn(m, d, generator=gen, device="cuda")
    x[:, 0] = 1.0
    wg = torch.randn(f, d, generator=gen, device="cuda") / d ** 0.5
    sigma = (wg[:, 1:].pow(2).sum(1).mean()).sqrt()
    # Neuron j is active with probability p_j in every row (independently
    # across rows): the shift of column 0 is sigma * Phi^-1(p_j).
    q = neuron_fractions(f, p, skew).float().cuda()
    wg[:, 0] = sigma * torch.special.ndtri(q)
    wu = torch.randn(f, d, generator=gen, device="cuda") / d ** 0.5
    wd = torch.randn(d, f, generator=gen, device="cuda") / f ** 0.5
    return [t.bfloat16().contiguous() for t in (x, wg, wu, wd)]


def dense(x, wg, wu, wd):
    return (torch.relu(x @ wg.t()) * (x @ wu.t())) @ wd.t()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True, type=pathlib.Path)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--fractions", default="0.005,0.02,0.05,0.12,0.3")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--skew", type=float, default=0.0,
                    help="Zipf exponent of the neurons' active fractions (0: every neuron "
                         "active with the same probability, the default; >0: hot and cold "
                         "neurons with the same mean, so the rows share active neurons)")
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    records = []
    for adir in sorted(p for p in args.artifacts.iterdir() if (p / "program.txt").exists()):
        _, _, mm, dd, ff = adir.name.split("_")
        m, d, f = int(mm[1:]), int(dd[1:]), int(ff[1:])
        prog = runtime.load(adir)
        sig = prog.signature
        dprog = runtime.load(adir / "dense")
        extras = [(variant, runtime.load(adir / sub)) for sub, variant in EXTRA_PROGRAMS
                  if (adir / sub / "program.txt").exists()]
        choice = json.loads((adir / "choice.json").read_text())
        for p in (float(v) for v in args.fractions.split(",")):
            xs = inputs(m, d, f, p, gen, args.skew)
            active = (xs[0].float() @ xs[1].float().t() > 0).float().mean().item()
            out = torch.empty(m, d, dtype=torch.bfloat16, device="cuda")
            ptrs = [t.data_ptr() for t in xs]
            # Wd is a param: transposed once, when bound.
            prog.bind([ptrs[i] for i in sig.params], torch.cuda.current_stream().cuda_stream)
            ins = [ptrs[i] for i in sig.input_positions]
            # The stream is looked up at each call: the timing captures the
            # call on torch's capture stream.
            cur = lambda: torch.cuda.current_stream().cuda_stream
            run = lambda: prog.run(ins, [out.data_ptr()], cur())
            run()
            torch.cuda.synchronize()
            stats = prog.stats(cur())
            ref = dense(*xs)
            err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
            dense_out = torch.empty_like(out)
            run_dense = lambda: dprog.run(ptrs, [dense_out.data_ptr()], cur())
            programs = [run, run_dense, lambda: dense(*xs)]
            checked = []
            for variant, eprog in extras:
                eout = torch.empty_like(out)
                eprog.bind([ptrs[i] for i in eprog.signature.params], cur())
                eins = [ptrs[i] for i in eprog.signature.input_positions]
                erun = (lambda prog_, ins_, out_: lambda: prog_.run(ins_, [out_.data_ptr()], cur()))(
                    eprog, eins, eout)
                erun()
                torch.cuda.synchronize()
                estats = eprog.stats(cur())
                eerr = ((eout.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                checked.append((variant, estats, eerr, eprog.stat_totals))
                programs.append(erun)
            # TwELL, our dense program and torch's (and the fused producer's
            # program) in turns (same clocks).
            times = median_interleaved_us(programs, warmup=3, reps=args.reps)
            ours, ours_dense, base = times[:3]
            how = "cuda-graph, interleaved"
            err_dense = ((dense_out.float() - ref.float()).abs().max()
                         / ref.float().abs().max()).item()
            pick = choice.get(repr(p), choice.get(str(p)))
            chosen = ours if pick == "twell" else ours_dense
            rec = {"bench": "twell_ffn", "variant": "twell-cuda-core", "dtype": "bf16",
                   "shape": {"M": m, "d": d, "F": f, "active": p, "measured_active": active},
                   "neuron_skew": args.skew,
                   "time_us": ours, "timing": how,
                   "baselines": {"torch_dense": base, "sparseopt_dense": ours_dense},
                   "speedup": base / ours, "max_rel_err": err, "max_rel_err_dense": err_dense,
                   "gpu_measured_density": stats["twell0.active_neurons"] / (m * f),
                   "fallback_rows": stats["twell0.fallback_rows"],
                   "chosen": pick, "chosen_time_us": chosen, "chosen_speedup": base / chosen}
            records.append(rec)
            print("M=%-6d d=%d F=%d active %.3f (GPU %.4f, fallback rows %d): twell %.1f us, "
                  "our dense %.1f us, torch %.1f us, %.2fx, err %.1e; chosen %s %.2fx"
                  % (m, d, f, p, rec["gpu_measured_density"], rec["fallback_rows"], ours,
                     ours_dense, base, base / ours, err, pick, base / chosen))
            sys.stdout.flush()
            for (variant, estats, eerr, totals), etime in zip(checked, times[3:]):
                erec = dict(rec, variant=variant, time_us=etime,
                            baselines={"torch_dense": base, "sparseopt_dense": ours_dense,
                                       "twell_library_producer": ours},
                            speedup=base / etime, max_rel_err=eerr,
                            gpu_measured_density=estats["twell0.active_neurons"] / (m * f),
                            fallback_rows=estats["twell0.fallback_rows"])
                if "twell0.block_neurons" in estats:
                    # The tensor cores' union of 64 rows, as the GPU counted it.
                    erec["gpu_block_union"] = (estats["twell0.block_neurons"]
                                               / totals["twell0.block_neurons"])
                for key in ("chosen", "chosen_time_us", "chosen_speedup"):
                    erec.pop(key)
                records.append(erec)
                print("  %s: %.1f us, %.2fx torch, %.2fx the library producer, "
                      "err %.1e, GPU density %.4f, fallback rows %d%s"
                      % (variant, etime, base / etime, ours / etime, eerr,
                         erec["gpu_measured_density"], erec["fallback_rows"],
                         ", block union %.3f" % erec["gpu_block_union"]
                         if "gpu_block_union" in erec else ""))
        dprog.close()
        prog.close()
        for _, eprog in extras:
            eprog.close()
    args.out.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
