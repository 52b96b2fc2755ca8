#!/usr/bin/env python3
"""Runs the compiled sparse matmul kernels (2:4, and 6:8 through sliding
windows) on a GPU through the SparseOpt
runtime, checks them against torch, and times them against torch dense
(cuBLAS) and torch's 2:4 path (cuSPARSELt), all in this one process.

  python3 bench/spmm/run_spmm.py --artifacts bench/artifacts --out results.json

Correctness: max_rel_err = max|ours - ref| / max|ref| with ref the fp32
product of the same fp16/bf16 inputs and pruned weight; it must stay within
TOLERANCE (the output is rounded to fp16/bf16 once, so the error is about half
an ulp of the largest output). Timing: median of --reps runs after --warmup,
CUDA events around the replay of a CUDA graph holding one call (so host-side
overheads are not counted), for ours and the baselines alike.
"""
import argparse
import datetime
import json
import os
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1] / "python"))
import cases  # noqa: E402
from sparse_opt import formats, runtime  # noqa: E402
from timing import median_interleaved_us, median_us  # noqa: E402

TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {"f16": 2e-3, "bf16": 1.6e-2}
KERNELS = {"mma": "mma.sp m16n8k32, 64x64 block tile, register prefetch",
           "wgmma": "wgmma.mma_async.sp m64nNk32, TMA + mbarrier pipeline, 1 producer + 2 consumer warpgroups, "
                    "one wgmma group in flight"}


def launches(artifact_dir):
    """The program's launch lines without their arguments (grid, block,
    shared memory: the tile and stage choice) and its library GEMM lines."""
    text = (pathlib.Path(artifact_dir) / "program.txt").read_text()
    return [line.split(" args")[0] for line in text.splitlines()
            if line.startswith("launch ") or line.startswith("gemm ")]


def lift_form(artifact_dir):
    """How the program lifts X for a sliding-window kernel: "in" (inside the
    kernel's operand loads, no lift kernel), "split" (a lift kernel writes
    only the shared windows, W1, which the spmm loads by TMA beside X) or
    "gather" (a lift kernel writes the whole lifted X)."""
    lines = (pathlib.Path(artifact_dir) / "program.txt").read_text().splitlines()
    if not any(l.startswith("launch sgpu_lift") for l in lines):
        return "in"
    # The split lift's spmm takes X, the values, W1 (16-bit) and then the
    # metadata (i32), where a lifted X's spmm takes the metadata third:
    # tmap:b<i>:<type>:<shape>:<box>:<swizzle>.
    for line in lines:
        if line.startswith("launch sgpu_spmm_"):
            types = [a.split(":")[2] for a in line.split() if a.startswith("tmap:")]
            if len(types) >= 4 and types[2] in ("f16", "bf16"):
                return "split"
    return "gather"


def pruned_weight(n, k, dtype, gen, fam=2):
    """Random weight, magnitude-pruned to (2N-2):2N along K (the 2N-2
    largest |w| of every group of 2N; 2:4 for N = 2)."""
    size = 2 * fam
    kp = (k + size - 1) // size * size
    w = torch.randn(n, kp, generator=gen, device="cuda") / kp ** 0.5
    if kp != k:
        w[:, k:] = 0
    g = w.view(n, kp // size, size)
    idx = g.abs().topk(size - 2, dim=2).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(2, idx, True)
    return (g * mask).view(n, kp)[:, :k].to(dtype).contiguous()


def lift_index(k, fam, device):
    """Source column of every lifted column (k where it reads zero)."""
    kl = cases.lifted_k(k, "%d:%d" % (2 * fam - 2, 2 * fam))
    c = torch.arange(kl, device=device)
    per = 4 * (fam - 1)
    src = (c // per) * 2 * fam + (c % per) // 4 * 2 + c % 4
    return torch.where(src < k, src, torch.full_like(src, k))


def load_case(adir, variant, x, w):
    """The compiled program of one case in `adir`, bound to X and the weight
    W (compressed here into the program's format, unless the compiler kept
    the case dense). Returns (choice, run, y): "sparse" or "dense", a call
    that runs the program on the current stream (raw pointers, no per-call
    checks; the stream is read at each call so that graph capture records
    the launch) and its output tensor."""
    fam = cases.family(variant)
    m, n = x.shape[0], w.shape[0]
    prog = runtime.load(adir)
    bits = w.cpu().view(torch.int16).numpy().view(np.uint16)
    tg_file = adir / "tile_groups.txt"
    tg = int(tg_file.read_text()) if tg_file.exists() else 0
    if fam == 2:
        values, meta = formats.compress(bits)
    else:
        values, meta = formats.compress(formats.decompose_sliding(bits, fam, tg))
    v = torch.from_numpy(values.view(np.int16)).cuda()
    e = torch.from_numpy(meta.view(np.int32)).cuda()
    y = torch.empty(m, n, dtype=x.dtype, device="cuda")
    # The compiler's choice (make_cases.py --policy auto): "dense" is a
    # program of one library GEMM on X and the dense pruned weight.
    choice_file = adir / "choice.txt"
    choice = choice_file.read_text().strip() if choice_file.exists() else "sparse"
    inputs = [x, v, e] if choice == "sparse" else [x, w]
    assert prog.input_bytes == [t.numel() * t.element_size() for t in inputs], prog.input_bytes
    assert prog.output_bytes == [y.numel() * 2]
    ptrs = [t.data_ptr() for t in inputs]

    def run():
        prog.run(ptrs, [y.data_ptr()], torch.cuda.current_stream().cuda_stream)
    run.keep = (prog, inputs)  # the program (closed by the caller) and its inputs
    return choice, run, y


def cusparselt_baselines(x, w, warmup, reps):
    """torch's 2:4 paths: to_sparse_semi_structured (cuSPARSELt backend) and
    _cslt_sparse_mm with the algorithm search. Returns (best_us, plan, rel_err)."""
    ref = x.float() @ w.float().t()
    found = []
    try:
        from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
        SparseSemiStructuredTensor._FORCE_CUTLASS = False
        ws = to_sparse_semi_structured(w)
        y = F.linear(x, ws)
        err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
        t, how = median_us(lambda: F.linear(x, ws), warmup, reps)
        found.append((t, "to_sparse_semi_structured (%s)" % how, err, lambda: F.linear(x, ws)))
    except Exception as exc:  # shape or dtype the library does not take
        print("  cuSPARSELt (semi_structured) unavailable: %s" % str(exc).splitlines()[0])
    try:
        wc = torch._cslt_compress(w)
        alg = 0
        plan = "_cslt_sparse_mm default plan"
        try:
            r = torch._cslt_sparse_mm_search(wc, x.t())
            alg = r[0] if isinstance(r, (tuple, list)) else int(r)
            plan = "_cslt_sparse_mm search alg_id=%d" % alg
        except Exception:
            pass
        fn = lambda: torch._cslt_sparse_mm(wc, x.t(), alg_id=alg, transpose_result=True)  # noqa: E731
        y = fn()
        err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
        t, how = median_us(fn, warmup, reps)
        found.append((t, "%s (%s)" % (plan, how), err, fn))
    except Exception as exc:
        print("  cuSPARSELt (_cslt) unavailable: %s" % str(exc).splitlines()[0])
    if not found:
        return None, None, None, None
    return min(found, key=lambda f: f[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifacts", default=str(HERE.parent / "artifacts"))
    ap.add_argument("--out", required=True, help="JSON file for the records")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--commit", default=os.environ.get("SPARSEOPT_COMMIT", "unknown"))
    ap.add_argument("--kernel", default="wgmma", choices=["mma", "wgmma"],
                    help="which spmm kernel the artifacts were compiled with (recorded)")
    ap.add_argument("--set", default="issue", choices=cases.SETS, help="case set (as compiled)")
    ap.add_argument("--options", default="", help="the sgpu-compile options the artifacts had (recorded)")
    ap.add_argument("--command", default=" ".join(sys.argv))
    ap.add_argument("--variants", default=",".join(cases.VARIANTS),
                    help="comma-separated variants to run (default all)")
    ap.add_argument("--no-cusparselt", action="store_true",
                    help="time only against cuBLAS (tile sweeps)")
    ap.add_argument("--interleaved", action="store_true",
                    help="after the usual timings, time ours, cuBLAS and (2:4) cuSPARSELt's "
                         "faster plan again in turns (--reps rounds, one replay each per round) "
                         "and record those medians as the case's times (the first ones under "
                         "'sequential')")
    args = ap.parse_args()

    gpu = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    records, failures = [], 0
    for variant, dtype, kind, m, n, k in cases.cases(args.set):
        if variant not in args.variants.split(","):
            continue
        fam = cases.family(variant)
        tdt = TORCH_DTYPE[dtype]
        adir = pathlib.Path(args.artifacts) / cases.name(variant, dtype, m, n, k)
        w = pruned_weight(n, k, tdt, gen, fam)
        x = torch.randn(m, k, generator=gen, device="cuda").to(tdt)
        choice, ours, y = load_case(adir, variant, x, w)
        ours()
        torch.cuda.synchronize()
        ref = x.float() @ w.float().t()
        err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
        ok = err <= TOLERANCE[dtype]
        failures += not ok
        rec = {
            "bench": "spmm", "variant": variant, "dtype": dtype, "kind": kind,
            "shape": {"M": m, "N": n, "K": k},
            "max_rel_err": err, "tolerance": TOLERANCE[dtype], "correct": ok,
            "gpu": gpu, "date": datetime.date.today().isoformat(), "commit": args.commit,
            "command": args.command,
            "kernel": (KERNELS[args.kernel] + ("" if fam == 2 else {
                "in": " lifting X in its operand loads",
                "split": " loading X and the shared windows a lift kernel copied (split lift)",
                "gather": " after a lift gather kernel"}[lift_form(adir)])
                       if choice == "sparse" else "library GEMM (cuBLASLt), kept dense by the cost model"),
            "path": choice,
            "options": args.options, "launches": launches(adir),
        }
        if kind == "timing":
            rec["ours_us"], rec["ours_timing"] = median_us(ours, args.warmup, args.reps)
            dense, rec["cublas_timing"] = median_us(lambda: F.linear(x, w), args.warmup, args.reps)
            cslt_fn = None
            if args.no_cusparselt:
                cslt_us, plan, cslt_err = None, None, None
            elif fam == 2:
                cslt_us, plan, cslt_err, cslt_fn = cusparselt_baselines(x, w, args.warmup, args.reps)
            else:
                # torch's 2:4 path on the lifted problem (W' 2:4 over K'),
                # the lift of X not counted for it.
                idx = lift_index(k, fam, x.device)
                xl = torch.cat([x, torch.zeros(m, 1, dtype=tdt, device=x.device)], 1)[:, idx].contiguous()
                bits = w.cpu().view(torch.int16).numpy().view(np.uint16)
                wl = torch.from_numpy(formats.decompose_sliding(bits, fam).view(np.int16)).cuda().view(tdt)
                cslt_us, plan, cslt_err, _ = cusparselt_baselines(xl, wl, args.warmup, args.reps)
                plan = plan and plan + ", lifted K' without the lift"
            rec["baselines"] = {"cublas": dense, "cusparselt": cslt_us}
            if args.interleaved:
                # The same calls in turns: each round replays ours, cuBLAS and
                # cuSPARSELt's plan once, so all see the same clocks.
                fns = [ours, lambda: F.linear(x, w)] + ([cslt_fn] if cslt_fn else [])
                times = median_interleaved_us(fns, warmup=args.warmup, reps=args.reps)
                rec["sequential"] = {"ours_us": rec["ours_us"], "baselines": rec["baselines"]}
                rec["ours_us"] = times[0]
                rec["baselines"] = {"cublas": times[1], "cusparselt": times[2] if cslt_fn else None}
                rec["timing_method"] = "interleaved rounds of cuda-graph replays"
                dense = times[1]
            rec["cusparselt_plan"], rec["cusparselt_max_rel_err"] = plan, cslt_err
            best = min(t for t in rec["baselines"].values() if t is not None)
            rec["speedup"] = best / rec["ours_us"]
            rec["speedup_vs_cublas"] = dense / rec["ours_us"]
        records.append(rec)
        print("%-4s %-5s %-6s %-11s M=%-6d N=%-6d K=%-6d err=%.2e %s%s" % (
            variant, dtype, choice, kind, m, n, k, err, "ok" if ok else "FAIL",
            "" if kind != "timing" else "  ours %.1f us  cublas %.1f us  cusparselt %s us  speedup vs best %.2fx" % (
                rec["ours_us"], rec["baselines"]["cublas"],
                "%.1f" % rec["baselines"]["cusparselt"] if rec["baselines"]["cusparselt"] else "n/a",
                rec["speedup"])))
        ours.keep[0].close()
    pathlib.Path(args.out).write_text(json.dumps(records, indent=1) + "\n")
    print("%d cases, %d outside tolerance; wrote %s" % (len(records), failures, args.out))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
