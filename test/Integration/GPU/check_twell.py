#!/usr/bin/env python3
"""Runs a compiled ReLU FFN after sgpu-sparsify-ffn (TwELL pack + consumer
kernels) on the GPU through the runtime and compares it with a dense numpy
FFN:

  ungated: y = relu(x . Wu^T [+ b]) . Wd^T               inputs x, wu, [b,] wd
  gated:   y = (relu(x . Wg^T [+ b]) * (x . Wu^T)) . Wd^T  inputs x, wg, [b,] wu, wd
  shared:  y = the gated y + the same with Wu2, Wd2        inputs x, wg, wu, wd, wu2, wd2
           (two consumers of one TwELL pack)

(b, a bias of the first linear, is the one 1-D input.)

  check_twell.py <artifact-dir> <lib-dir> [--seed 0] [--tile 256 --compression 4] [--block-form]
                 [--no-capacity]

Row densities are set through feature 0: x[m, 0] = 1 and the first (gate)
weight's column 0 holds a per-row-group shift, so that the rows span about
0.5%, 2%, 10%, 50% and 100% active neurons; the dense ones overflow the
tile capacity and take the fallback path, the sparse ones the entries. The
program is run twice, so a count or buffer not cleared per run shows.

Tolerance: the GEMM producing the hidden activations rounds to the element
type (as the reference does here), the consumer accumulates in f32 in
another order than numpy and rounds once, and the gated dot product
x . Wu[j] is recomputed in f32 by the consumer where the dense FFN rounds
it to the element type first. So the check passes when
max|ours - ref| <= 2e-2 * max|ref| (a few bf16 ulps; a dropped or misplaced
neuron is off by far more). The program's stats after the last run, the
nonzero count and the fallback rows (for the tile and compression it was
compiled with), must match numpy's gate output (within 0.1% + 2 and 1:
cuBLAS may round a value next to 0 the other way). Needs numpy and a GPU;
no torch."""
import argparse
import json
import pathlib
import sys

import numpy as np

from runtime_ctypes import load_runtime, run_program

TOLERANCE = 2e-2

ap = argparse.ArgumentParser()
ap.add_argument("artifacts", type=pathlib.Path)
ap.add_argument("libdir", type=pathlib.Path)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--tile", type=int, default=256, help="the TwELL tile it was compiled with")
ap.add_argument("--compression", type=int, default=4, help="the TwELL compression factor")
ap.add_argument("--block-form", action="store_true",
                help="compiled with twell-consumer=tensor-cores: the block form has no "
                     "capacity, so no row falls back, and its union stat "
                     "(twell0.block_neurons) is checked")
ap.add_argument("--no-capacity", action="store_true",
                help="compiled with twell-pack=consumer: the consumer reads H, nothing has a "
                     "capacity, so no row falls back")
args = ap.parse_args()

sig = json.loads((args.artifacts / "signature.json").read_text())
ins = sig["inputs"]
dtype = ins[0]["dtype"]
bias_at = [i for i, t in enumerate(ins) if len(t["shape"]) == 1]
matrices = len(ins) - len(bias_at)
gated = matrices in (4, 6)
shared = matrices == 6
if (matrices not in (3, 4, 6) or shared and bias_at or len(bias_at) > 1 or bias_at and bias_at[0] != 2
        or any(t["dtype"] != dtype for t in ins + sig["outputs"])):
    sys.exit("expected x, [wg,] [b,] wu, wd[, wu2, wd2] of one element type: %s" % sig)
M, D = ins[0]["shape"]
F = ins[1]["shape"][0]

rt = load_runtime(args.libdir)


def to_dtype(a):
    """numpy array of the element type, as raw 16-bit patterns for bf16."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "f16":
        return a.astype(np.float16)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
    return u.astype(np.uint16)


def to_f32(a):
    if dtype == "f16":
        return a.astype(np.float32)
    return (a.astype(np.uint32) << 16).view(np.float32)


rng = np.random.default_rng(args.seed)
# Shifts giving roughly 0.5%, 2%, 10%, 50% and 100% active neurons per row
# (the rest of the pre-activation is about N(0, 1)).
shifts = np.array([-2.6, -2.05, -1.3, 0.0, 8.0], dtype=np.float32)
x = rng.standard_normal((M, D)).astype(np.float32) / np.sqrt(D - 1)
x[:, 0] = 1.0
w1 = rng.standard_normal((F, D)).astype(np.float32)
w1[:, 0] = 0.0
gate = w1.copy()
# Shift per row group through x: x[m, 0] scales one common column.
gate[:, 0] = 1.0
x[:, 0] = shifts[np.arange(M) % len(shifts)]
wu = rng.standard_normal((F, D)).astype(np.float32) / np.sqrt(D)
wd = rng.standard_normal((D, F)).astype(np.float32) / np.sqrt(F * 0.05)
xs, gs, wus, wds = to_dtype(x), to_dtype(gate), to_dtype(wu), to_dtype(wd)
inputs = [xs, gs, wus, wds] if gated else [xs, gs, wds]
if shared:
    wu2s = to_dtype(rng.standard_normal((F, D)).astype(np.float32) / np.sqrt(D))
    wd2s = to_dtype(rng.standard_normal((D, F)).astype(np.float32) / np.sqrt(F * 0.05))
    inputs += [wu2s, wd2s]
# A bias moves every neuron's pre-activation a little (densities stay
# spread); it is added to the f32 product before the one rounding.
bias = np.zeros(F, dtype=np.float32)
if bias_at:
    bs = to_dtype(rng.standard_normal(F).astype(np.float32) * 0.25)
    bias = to_f32(bs)
    inputs.insert(2, bs)

# The dense reference, rounding where the dense program would.
xf = to_f32(xs)
h = to_f32(to_dtype(np.maximum(xf @ to_f32(gs).T + bias, 0)))
density = (h != 0).mean(axis=1)


def ffn(up, down):
    hu = to_f32(to_dtype(h * to_f32(to_dtype(xf @ to_f32(up).T)))) if gated else h
    return hu @ to_f32(down).T


ref = ffn(wus, wds)
if shared:
    ref = to_f32(to_dtype(ref)) + to_f32(to_dtype(ffn(wu2s, wd2s)))

stats = {}
out = run_program(rt, args.artifacts, inputs, np.zeros((M, D), dtype=np.float16 if dtype == "f16" else np.uint16), runs=2, stats=stats)

# The pack's stats against numpy's gate output: nonzeros, and rows with a
# tile over capacity. Rounding may differ from cuBLAS's for values next to 0.
gate_nz = to_f32(to_dtype(np.maximum(xf @ to_f32(gs).T + bias, 0))) != 0
tiles = np.add.reduceat(gate_nz, np.arange(0, F, args.tile), axis=1)
ref_active = int(gate_nz.sum())
ref_fallback = 0 if args.block_form or args.no_capacity else int(
    (tiles > args.tile // args.compression - 1).any(axis=1).sum())
active, fallback = stats.get("twell0.active_neurons"), stats.get("twell0.fallback_rows")
stats_ok = (active is not None and abs(active - ref_active) <= 2 + ref_active // 1000 and
            fallback is not None and abs(fallback - ref_fallback) <= 1)
if args.block_form:
    # The block form's union stat: per block of 64 rows, the neurons active
    # in any of them.
    blocks = [gate_nz[r:r + 64].any(axis=0).sum() for r in range(0, M, 64)]
    ref_union = int(sum(blocks))
    union = stats.get("twell0.block_neurons")
    union_ok = union is not None and abs(union - ref_union) <= 2 + ref_union // 1000
    print("block neurons %s (numpy %d) (%s)" % (union, ref_union, "ok" if union_ok else "FAIL"))
    stats_ok = stats_ok and union_ok
print("stats: active neurons %s (numpy %d), fallback rows %s (numpy %d) (%s)"
      % (active, ref_active, fallback, ref_fallback, "ok" if stats_ok else "FAIL"))

ours = to_f32(out)
err = float(np.abs(ours - ref).max() / np.abs(ref).max())
ok = bool(np.isfinite(ours).all()) and err <= TOLERANCE and stats_ok
print("twell %s%s %s %dx%d, hidden %d, densities %s: max_rel_err %.3e (%s)"
      % ("gated" if gated else "ungated",
         " with bias" if bias_at else " (two consumers of one pack)" if shared else "", dtype, M, D, F,
         " ".join("%.3f" % v for v in sorted(set(np.round(density, 3)))[:1] +
                  sorted(set(np.round(density, 3)))[-1:]),
         err, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
