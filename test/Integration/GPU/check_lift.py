#!/usr/bin/env python3
"""Compiles programs that are one sgpu.lift (the generated gather kernel,
LiftToGPU.cpp), runs them on the GPU through the runtime and compares the
lifted activations bit for bit with the formats library's lift
(SlidingWindow.h, sparse_opt.formats.lift).

  check_lift.py <lib dir> <work dir> [--compile <sparse-opt>] [--no-run]

--compile writes each case's function into the work dir and compiles it
there (the lit test); without it the artifacts must already be there (a
GPU machine without the compiler); --no-run only compiles.

The cases cover the kernel's forms: two chunks (16 bytes) per thread where
the lifted pitch is a multiple of 8, one chunk (8 bytes) where it is only a
multiple of 4, and the one-element-per-thread fallback for an odd K; both
window orders; chunks that straddle K (K % 2N != 0), whole groups past K
(the tiled order's rounding), f16 and bf16, and families 2:4 to 14:16. The
input is random 16-bit patterns (any bits: the kernel only copies), and the
output buffer is filled with 0xffff before the run, so an element the
kernel does not write shows. Needs numpy and a GPU."""
import ctypes
import sys

import numpy as np

from runtime_ctypes import case_arguments, checker, compile_function, load_runtime, p, u64
from sparse_opt import formats

# (pattern, tile_groups, dtype, M, K)
CASES = [
    ("6:8", 8, "f16", 64, 4096),     # tiled, two chunks, no padding
    ("6:8", 0, "f16", 64, 4096),     # plain, two chunks, no padding
    ("6:8", 8, "bf16", 33, 4000),    # tiled, groups past K
    ("6:8", 8, "f16", 5, 130),       # tiled, a chunk straddling K
    ("6:8", 0, "f16", 7, 130),       # plain, one chunk, straddling K
    ("4:6", 0, "bf16", 9, 40),       # 4:6, straddling K
    ("8:10", 0, "f16", 3, 2050),     # 8:10, straddling K
    ("2:4", 0, "f16", 6, 42),        # the identity family, one chunk
    ("14:16", 0, "bf16", 4, 100),    # 14:16, one chunk
    ("6:8", 0, "f16", 5, 37),        # odd K: the per-element fallback
    ("4:6", 2, "bf16", 11, 99),      # odd K, tiled: the fallback
]


def lift_function(pattern, order, dtype, m, k, kl):
    """The case's function: one sgpu.lift."""
    return (
        "func.func @lift(%%x: tensor<%dx%dx%s>) -> tensor<%dx%dx%s> {\n"
        "  %%y = sgpu.lift %%x {pattern = #sgpu.nm<%s>%s} : tensor<%dx%dx%s> -> tensor<%dx%dx%s>\n"
        "  return %%y : tensor<%dx%dx%s>\n}\n"
        % (m, k, dtype, m, kl, dtype, pattern, order, m, k, dtype, m, kl, dtype, m, kl, dtype))


args = case_arguments()
work = args.work
if not args.no_run:
    rt = load_runtime(args.libdir)
    check = checker(rt)
    check(rt.sparseopt_init(0))
rng = np.random.default_rng(0)

failed = 0
for pattern, tg, dtype, m, k in CASES:
    n = int(pattern.split(":")[1]) // 2
    kl = formats.sliding_shape(m, k, n, tg)[1]
    name = "lift_%s_tg%d_%s_m%d_k%d" % (pattern.replace(":", "to"), tg, dtype, m, k)
    order = ", tile_groups = %d" % tg if tg else ""
    out_dir = work / name
    if args.compile:
        compile_function(args.compile, work / (name + ".mlir"),
                         lift_function(pattern, order, dtype, m, k, kl), out_dir)
    if args.no_run:
        print("%s: compiled" % name)
        continue
    x = rng.integers(0, 1 << 16, size=(m, k), dtype=np.uint16)
    ref = formats.lift(x, n, tg)
    got = np.full((m, kl), 0xFFFF, dtype=np.uint16)

    prog = p()
    check(rt.sparseopt_program_load(str(out_dir).encode(), ctypes.byref(prog)))
    dx, dy = u64(), u64()
    check(rt.sparseopt_malloc(x.nbytes, ctypes.byref(dx)))
    check(rt.sparseopt_malloc(got.nbytes, ctypes.byref(dy)))
    check(rt.sparseopt_memcpy_htod(dx, x.ctypes.data, x.nbytes))
    check(rt.sparseopt_memcpy_htod(dy, got.ctypes.data, got.nbytes))
    check(rt.sparseopt_program_run(prog, (u64 * 1)(dx.value), (u64 * 1)(dy.value), None))
    check(rt.sparseopt_synchronize())
    check(rt.sparseopt_memcpy_dtoh(got.ctypes.data, dy, got.nbytes))
    check(rt.sparseopt_program_destroy(prog))
    for d in (dx, dy):
        check(rt.sparseopt_free(d))

    bad = np.argwhere(got != ref)
    status = "ok" if bad.size == 0 else "MISMATCH"
    failed += bad.size != 0
    where = "" if bad.size == 0 else ": %d elements, first at %s (got %#x, want %#x)" % (
        len(bad), tuple(bad[0]), got[tuple(bad[0])], ref[tuple(bad[0])])
    print("%s %dx%d -> %dx%d: %s%s" % (name, m, k, m, kl, status, where))

print("cases %d failed %d" % (len(CASES), failed))
sys.exit(1 if failed else 0)
