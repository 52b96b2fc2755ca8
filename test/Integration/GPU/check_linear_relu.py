#!/usr/bin/env python3
"""Runs a compiled `relu(x . W^T)` program (one f16 input, the 2:4 weight as
two constants) on the GPU through the runtime and compares it with numpy.

  check_linear_relu.py <artifact-dir> <lib-dir> M K N

The weight is rebuilt from the compressed constants with the format library
(the same decoding the kernel does), x is random, and the reference is the
fp32 product with ReLU. Passes when max|ours - ref| <= 2e-3 * max|ref| (one
fp16 rounding of the output). Needs numpy and a GPU; no torch."""
import ctypes
import pathlib
import sys

import numpy as np

from runtime_ctypes import checker, load_runtime

art, libdir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
M, K, N = (int(v) for v in sys.argv[3:6])
u64, p = ctypes.c_uint64, ctypes.c_void_p

rt = load_runtime(libdir)
check = checker(rt)
fmt = ctypes.CDLL(str(libdir / "libsparseopt_formats.so"))
fmt.sparseopt_sparse24_decompress.argtypes = [p, p, ctypes.c_int64, ctypes.c_int64, p]


# The two constants: values (fp16) and metadata (32-bit words), by size.
pn, pk = (N + 15) // 16 * 16, (K + 31) // 32 * 32
consts = {}
for line in (art / "program.txt").read_text().splitlines():
    f = line.split()
    if f[:1] == ["buffer"] and f[2] == "constant":
        consts[int(f[4])] = (art / f[3]).read_bytes()
values = np.frombuffer(consts[pn * pk // 2 * 2], dtype=np.uint16).copy()
meta = np.frombuffer(consts[pn * pk // 32 * 4], dtype=np.uint32).copy()
w = np.zeros((N, K), dtype=np.float16)
assert fmt.sparseopt_sparse24_decompress(values.ctypes.data, meta.ctypes.data, N, K, w.ctypes.data) == 0

x = np.random.default_rng(0).standard_normal((M, K)).astype(np.float16)
ref = np.maximum(x.astype(np.float32) @ w.astype(np.float32).T, 0)

check(rt.sparseopt_init(0))
dx, dy = u64(), u64()
check(rt.sparseopt_malloc(x.nbytes, ctypes.byref(dx)))
check(rt.sparseopt_malloc(M * N * 2, ctypes.byref(dy)))
check(rt.sparseopt_memcpy_htod(dx, x.ctypes.data, x.nbytes))
prog = p()
check(rt.sparseopt_program_load(str(art).encode(), ctypes.byref(prog)))
check(rt.sparseopt_program_run(prog, (u64 * 1)(dx.value), (u64 * 1)(dy.value), None))
check(rt.sparseopt_synchronize())
y = np.zeros((M, N), dtype=np.float16)
check(rt.sparseopt_memcpy_dtoh(y.ctypes.data, dy, y.nbytes))

err = float(np.abs(y.astype(np.float32) - ref).max() / np.abs(ref).max())
print("max_rel_err %.3e (%s)" % (err, "ok" if err <= 2e-3 else "FAIL"))
sys.exit(0 if err <= 2e-3 else 1)
