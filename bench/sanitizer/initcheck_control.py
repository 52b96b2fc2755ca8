#!/usr/bin/env python3
"""initcheck's view of cuBLASLt's writes, with torch alone (no SparseOpt
code): run under `compute-sanitizer --tool initcheck`.

Two fresh allocations (each larger than anything torch's allocator holds,
so each is a new cudaMalloc that no kernel has written yet):
  copy:   written by an element-wise copy kernel, then read by torch;
  matmul: written by a bf16 torch.matmul (a cuBLASLt GEMM), then read.
Both are fully written before they are read (the script checks every
element), so any "Uninitialized __global__ memory read" between the
markers of the matmul case is initcheck not seeing the GEMM's stores.
Without the sanitizer (--kernels) it lists the GEMM kernels that ran.
"""
import argparse

import torch


def fresh(rows, cols):
    # 256 MiB: above every block torch has cached, so a new segment.
    big = torch.empty(128 << 20, dtype=torch.bfloat16, device="cuda")
    return big[:rows * cols].view(rows, cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", action="store_true", help="list the kernels of the matmul (no sanitizer)")
    args = ap.parse_args()
    g = torch.Generator("cuda").manual_seed(0)
    a = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(256, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    want = (a.float() @ b.float())
    torch.cuda.synchronize()

    print("MARK copy begin", flush=True)
    c = fresh(512, 128)
    c.copy_(want)
    ok_copy = bool(torch.isfinite(c.float()).all())
    torch.cuda.synchronize()
    print("MARK copy end", flush=True)

    print("MARK matmul begin", flush=True)
    d = fresh(512, 128)
    if args.kernels:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.matmul(a, b, out=d)
            torch.cuda.synchronize()
        for e in prof.key_averages():
            print("kernel:", e.key, flush=True)
    else:
        torch.matmul(a, b, out=d)
    err = (d.float() - want).abs().max().item()
    torch.cuda.synchronize()
    print("MARK matmul end", flush=True)
    ok = ok_copy and err < 0.5
    print("copy finite: %s; matmul max abs err vs f32: %.3g -> %s" % (ok_copy, err, "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
