#!/usr/bin/env python3
"""Runs a compiled pre-norm MLP block on the GPU through the runtime and
compares it with numpy:

  r = x + W2 . relu(W1 . rmsnorm(x, g))     (examples/rmsnorm_mlp_block.mlir)

  check_block.py <artifact-dir> <lib-dir> [--eps 1e-5] [--seed 0]

The program's four inputs are x [M, D], g [D], w1 [F, D] and w2 [D, F], all
f16 (shapes from signature.json, checked against the runtime's byte counts);
it has one output, r [M, D]. x is normal with standard deviation 0.5, g
near 1 and the weights scaled like a Linear layer's init, so the MLP's share
of r (standard deviation about 0.7) outweighs x and an error in the norm or
a GEMM shows in r instead of hiding under the residual.

The reference rounds to f16 where the program does: the norm's output
(computed in f32: x * (1 / sqrt(mean(x^2) + eps)) * g), each GEMM's output
(f32 products and sums, ReLU before the rounding), and the residual sum.
The order of the additions differs (tree reductions in the norm kernel,
cuBLASLt's K order), so a value near a rounding boundary of an f16
intermediate may round the other way; such a flip moves the next stage by
far less than one of its own ulps, so the output differs from the reference
by at most about two f16 roundings. An f16 ulp is at most 2^-10 of the
value, so the check passes when max|ours - ref| <= 4e-3 * max|ref| (about
four ulps of the largest outputs; a wrong norm, GEMM or add is off by tens
of percent). Needs numpy and a GPU; no torch."""
import argparse
import json
import pathlib
import sys

import numpy as np

from runtime_ctypes import load_runtime, run_program

TOLERANCE = 4e-3

ap = argparse.ArgumentParser()
ap.add_argument("artifacts", type=pathlib.Path)
ap.add_argument("libdir", type=pathlib.Path)
ap.add_argument("--eps", type=float, default=1e-5)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()

sig = json.loads((args.artifacts / "signature.json").read_text())
shapes = [tuple(t["shape"]) for t in sig["inputs"]]
if len(shapes) != 4 or any(t["dtype"] != "f16" for t in sig["inputs"] + sig["outputs"]):
    sys.exit("expected the block's four f16 inputs x, g, w1, w2: %s" % sig)
(M, D), (D2,), (F, D3), (D4, F2) = shapes
if not (D == D2 == D3 == D4 and F == F2) or tuple(sig["outputs"][0]["shape"]) != (M, D):
    sys.exit("inconsistent block shapes: %s" % sig)

rt = load_runtime(args.libdir)


rng = np.random.default_rng(args.seed)
x = (0.5 * rng.standard_normal((M, D))).astype(np.float16)
g = (1 + 0.1 * rng.standard_normal(D)).astype(np.float16)
w1 = (rng.standard_normal((F, D)) / np.sqrt(D)).astype(np.float16)
w2 = (rng.standard_normal((D, F)) / np.sqrt(F)).astype(np.float16)
inputs = [x, g, w1, w2]

# The reference, rounding to f16 where the program does.
f32 = np.float32
xf = x.astype(f32)
inv = f32(1) / np.sqrt((xf * xf).sum(axis=1, keepdims=True, dtype=f32) / f32(D) + f32(args.eps))
n = ((xf * inv) * g.astype(f32)).astype(np.float16)
h = np.maximum(n.astype(f32) @ w1.astype(f32).T, 0).astype(np.float16)
y = (h.astype(f32) @ w2.astype(f32).T).astype(np.float16)
ref = (x + y).astype(np.float16)

out = run_program(rt, args.artifacts, inputs, np.zeros((M, D), dtype=np.float16))

err = float(np.abs(out.astype(f32) - ref.astype(f32)).max() / np.abs(ref.astype(f32)).max())
ok = bool(np.isfinite(out).all()) and err <= TOLERANCE
print("block %dx%d, hidden %d: max_rel_err %.3e (%s)" % (M, D, F, err, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
