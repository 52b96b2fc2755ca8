#!/usr/bin/env python3
"""Compiles 2:4 layers `act(x . W^T + b)` (sgpu.assemble of the compressed
weight, sgpu.spmm with a bias and ReLU or none), runs them on the GPU
through the runtime and compares them with numpy: the sm_90a TMA kernel's
epilogues, its TMA-store one (staging boxes of 128, 64 and 16 tokens, a
box entirely past M, M and N tails) and the register one on the same
shapes.

  check_spmm_epilogue.py <lib dir> <work dir> [--compile <sparse-opt>] [--no-run]

--compile writes each case's function into the work dir and compiles it
there (the lit test); without it the artifacts must already be there (a
GPU machine without the compiler); --no-run only compiles. A case passes
when max|ours - ref| <= tol * max|ref| (f16 2e-3, bf16 1.6e-2: one rounding
of the output), ref being the fp32 product of the rounded inputs. Needs
numpy and a GPU."""
import sys

import numpy as np

from runtime_ctypes import case_arguments, compile_function, load_runtime, run_program
from sparse_opt import formats

# (dtype, M, N, K, relu, sgpu-compile options)
CASES = [
    # 256-token tiles at 300 tokens: the second tile's second 128-token box
    # lies entirely past M; N = 200 ends inside a 64-feature box.
    ("f16", 300, 200, 512, True, "tile-n=256 split-k=1"),
    ("f16", 300, 200, 512, True, "tile-n=256 split-k=1 epilogue=registers"),
    # 128-token tiles with 8 stages: 64-token boxes, two per tile.
    ("bf16", 520, 264, 1024, True, "tile-n=128 split-k=1"),
    ("bf16", 520, 264, 1024, True, "tile-n=128 split-k=1 epilogue=registers"),
    # 16-token tiles: one stmatrix.x4 per warp and box; no activation.
    ("f16", 40, 136, 256, False, "tile-n=16 split-k=1"),
    ("bf16", 40, 136, 256, False, "tile-n=16 split-k=1 epilogue=registers"),
    # The tile table's own choice, pairs of blocks at 4096 tokens.
    ("bf16", 4096, 512, 256, True, ""),
]
TOL = {"f16": 2e-3, "bf16": 1.6e-2}


def to_bits(a, dtype):
    """uint16 bits of f32 `a` rounded to `dtype` (bf16: nearest even)."""
    if dtype == "f16":
        return a.astype(np.float16).view(np.uint16)
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bits(b, dtype):
    if dtype == "f16":
        return b.view(np.float16).astype(np.float32)
    return (b.astype(np.uint32) << 16).view(np.float32)


def source(dtype, m, n, k, relu, pn, nv, nm):
    t = dtype
    act = " {activation = #sgpu.activation<relu>}" if relu else ""
    return (
        "func.func @layer(%%x: tensor<%dx%dx%s>, %%v: tensor<%dx%dx%s>, %%m: tensor<%dxi32>, "
        "%%b: tensor<%dx%s>) -> tensor<%dx%dx%s> {\n"
        "  %%w = sgpu.assemble %%v, %%m : tensor<%dx%dx%s>, tensor<%dxi32> -> "
        "!sgpu.compressed<%dx%dx%s, #sgpu.nm<2:4>>\n"
        "  %%y = sgpu.spmm %%x, %%w bias(%%b : tensor<%dx%s>)%s : tensor<%dx%dx%s>, "
        "!sgpu.compressed<%dx%dx%s, #sgpu.nm<2:4>> -> tensor<%dx%dx%s>\n"
        "  return %%y : tensor<%dx%dx%s>\n}\n"
        % (m, k, t, pn, nv // pn, t, nm, n, t, m, n, t,
           pn, nv // pn, t, nm, n, k, t,
           n, t, act, m, k, t, n, k, t, m, n, t,
           m, n, t))


args = case_arguments()
rt = None if args.no_run else load_runtime(args.libdir)
rng = np.random.default_rng(0)
failed = 0
for i, (dtype, m, n, k, relu, opts) in enumerate(CASES):
    name = "spmm%d_%s_m%d_n%d_k%d" % (i, dtype, m, n, k)
    out_dir = args.work / name
    # A random weight pruned to 2:4 (the two largest |w| of every four).
    w = rng.standard_normal((n, k)).astype(np.float32)
    groups = np.abs(w).reshape(n, k // 4, 4)
    keep = np.argsort(groups, axis=2)[:, :, 2:]
    mask = np.zeros_like(groups, dtype=bool)
    np.put_along_axis(mask, keep, True, axis=2)
    w = np.where(mask.reshape(n, k), w, 0.0).astype(np.float32)
    wb = to_bits(w, dtype)
    values, meta = formats.compress(wb)
    pn = (n + 15) // 16 * 16
    if args.compile:
        compile_function(args.compile, args.work / (name + ".mlir"),
                         source(dtype, m, n, k, relu, pn, values.size, meta.size), out_dir,
                         "kernel=wgmma " + opts)
    if args.no_run:
        print("%s (%s): compiled" % (name, opts or "defaults"))
        continue
    xb = to_bits(rng.standard_normal((m, k)).astype(np.float32), dtype)
    bb = to_bits(rng.standard_normal(n).astype(np.float32), dtype)
    got = np.full((m, n), 0xFFFF, dtype=np.uint16)
    run_program(rt, out_dir, [xb, values, meta, bb], got)
    ref = from_bits(xb, dtype) @ from_bits(wb, dtype).T + from_bits(bb, dtype)
    if relu:
        ref = np.maximum(ref, 0.0)
    y = from_bits(got, dtype)
    err = float(np.nanmax(np.abs(y - ref)) / np.abs(ref).max()) if np.isfinite(y).all() else float("inf")
    ok = err <= TOL[dtype]
    failed += not ok
    print("%s (%s): max_rel_err %.2e: %s" % (name, opts or "defaults", err, "ok" if ok else "FAIL"))
print("cases %d failed %d" % (len(CASES), failed))
sys.exit(1 if failed else 0)
