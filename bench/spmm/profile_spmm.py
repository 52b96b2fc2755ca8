#!/usr/bin/env python3
"""Runs one compiled spmm case and torch's cuSPARSELt and cuBLAS paths on
the same problem, a few times each, for a profiler to capture (ncu):

  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \\
      python3 bench/spmm/profile_spmm.py --artifact DIR --m 4096 --n 14336 --k 4096

The artifact is a 2:4 case of make_cases.py (inputs X, compressed values,
metadata)."""
import argparse
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))
from run_spmm import pruned_weight  # noqa: E402
from sparse_opt import formats, runtime  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", required=True)
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    tdt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = pruned_weight(args.n, args.k, tdt, gen)
    x = torch.randn(args.m, args.k, generator=gen, device="cuda").to(tdt)
    values, meta = formats.compress(w.cpu().view(torch.int16).numpy().view(np.uint16))
    v = torch.from_numpy(values.view(np.int16)).cuda()
    e = torch.from_numpy(meta.view(np.int32)).cuda()
    y = torch.empty(args.m, args.n, dtype=tdt, device="cuda")
    prog = runtime.load(args.artifact)
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
    SparseSemiStructuredTensor._FORCE_CUTLASS = False
    ws = to_sparse_semi_structured(w)
    for _ in range(args.reps):
        prog.run([x.data_ptr(), v.data_ptr(), e.data_ptr()], [y.data_ptr()],
                 torch.cuda.current_stream().cuda_stream)
        F.linear(x, ws)
        F.linear(x, w)
    torch.cuda.synchronize()
    prog.close()
    print("ran ours, cuSPARSELt and cuBLAS %d times each" % args.reps)


if __name__ == "__main__":
    main()
