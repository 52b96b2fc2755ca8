#!/usr/bin/env python3
"""Compiles programs that are one prefill attention (cuDNN's fused attention,
an `attention` line of the runtime program), one residual add followed by
an RMS norm (sgpu.add_rms_norm, one generated kernel) or one RoPE, runs
them on the GPU through the runtime and compares them with numpy.

  check_model_ops.py <lib dir> <work dir> [--compile <sparse-opt>] [--no-run]

--compile writes each case's function into the work dir and compiles it
there (the lit test); without it the artifacts must already be there (a
GPU machine without the compiler); --no-run only compiles.

Attention cases: causal and full, grouped-query and plain heads, f16, a
sequence that is no multiple of cuDNN's tiles. Reference: f32 softmax
attention on the f16 inputs (causal: query i sees keys 0..i); cuDNN rounds
P to f16 before P.V, so the bound is 5e-3 of max|ref| (the generated
kernels' f16 bound in bench/model/check_attention.py).

Residual-norm cases: r = s + rmsnorm(s, w) with s = x + a (the program's
one output uses both results of sgpu.add_rms_norm: the rounded sum and the
normalized rows), D = 4096 (the register-resident form) and D = 20000 (the
strided form). Reference: numpy with the program's roundings (s to f16, the
norm in f32 from the rounded s, its output to f16, the final sum to f16);
bound 4e-3 of max|ref| (a few f16 roundings; a wrong sum or norm is off by
far more).

Attention-block case: the importers' form of a block's attention on the
projections' B x S x H x D outputs (transposes to B x H x S x D, RoPE of q
and k, causal grouped-query attention, the result transposed back), which
sgpu-fold-attention-transposes turns into RoPE on the untransposed q and k
and an `attention ... layout=bshd` line (the compile fails without it).
Reference: the rope rounded to f16, then the attention reference; bound
5e-3.

RoPE cases: y = x cos + rotate_half(x) sin, f16, tables broadcast over the
heads; D = 128 and D = 12.
Reference: f32 products of the f16 values, one rounding; bound 1e-3 of
max|ref| (an FMA may round the sum once where numpy rounds twice).
Needs numpy and a GPU."""
import sys

import numpy as np

from runtime_ctypes import case_arguments, compile_function, load_runtime, run_program

# (name, B, H, Hkv, S, D, causal)
ATTENTION = [
    ("attn_gqa_causal", 1, 8, 2, 300, 64, True),
    ("attn_mha_full", 2, 4, 4, 128, 128, False),
    ("attn_gqa_causal_d128", 1, 32, 8, 1024, 128, True),
]
# (name, rows, D)
NORM = [("add_norm_4096", 5, 4096), ("add_norm_strided", 3, 20000)]
# (name, H, Hkv, S, D)
BLOCK = [("attn_block_bshd", 8, 2, 300, 64)]
# (name, heads, S, D)
ROPE = [("rope_d128", 8, 300, 128), ("rope_d12", 4, 7, 12)]


def block_mlir(h, hkv, s, d):
    """q, k, v as the projections write them (1 x S x heads x D), cos and
    sin 1 x 1 x S x D; the result 1 x S x H x D."""
    qs, kvs = "tensor<1x%dx%dx%dxf16>" % (s, h, d), "tensor<1x%dx%dx%dxf16>" % (s, hkv, d)
    qh, kvh = "tensor<1x%dx%dx%dxf16>" % (h, s, d), "tensor<1x%dx%dx%dxf16>" % (hkv, s, d)
    t = "tensor<1x1x%dx%dxf16>" % (s, d)
    lines = ["func.func @block(%%q: %s, %%k: %s, %%v: %s, %%c: %s, %%s: %s) -> %s {"
             % (qs, kvs, kvs, t, t, qs)]
    for name, src, dst in (("q", qs, qh), ("k", kvs, kvh), ("v", kvs, kvh)):
        lines.append("  %%e%s = tensor.empty() : %s" % (name, dst))
        lines.append("  %%t%s = linalg.transpose ins(%%%s : %s) outs(%%e%s : %s) permutation = [0, 2, 1, 3]"
                     % (name, name, src, name, dst))
    lines.append("  %%rq = sgpu.rope %%tq, %%c, %%s : %s, %s, %s -> %s" % (qh, t, t, qh))
    lines.append("  %%rk = sgpu.rope %%tk, %%c, %%s : %s, %s, %s -> %s" % (kvh, t, t, kvh))
    lines.append("  %%o = sgpu.attention %%rq, %%rk, %%tv {causal, scale = %.9e : f32} : %s, %s, %s -> %s"
                 % (d ** -0.5, qh, kvh, kvh, qh))
    lines.append("  %%eo = tensor.empty() : %s" % qs)
    lines.append("  %%r = linalg.transpose ins(%%o : %s) outs(%%eo : %s) permutation = [0, 2, 1, 3]" % (qh, qs))
    lines.append("  return %%r : %s\n}\n" % qs)
    return "\n".join(lines)


def rope_tables(s, d):
    ang = np.arange(s)[:, None] * (10000.0 ** (-np.arange(d) % (d // 2) / (d // 2)))[None, :]
    return (np.cos(ang).astype(np.float16).reshape(1, 1, s, d),
            np.sin(ang).astype(np.float16).reshape(1, 1, s, d))


def rope_ref(x, cos, sin):
    """f32 rope of f16 x over the last dimension (tables broadcast)."""
    d = x.shape[-1]
    xf = x.astype(np.float32)
    rot = np.concatenate([-xf[..., d // 2:], xf[..., :d // 2]], axis=-1)
    return xf * cos.astype(np.float32) + rot * sin.astype(np.float32)


def attention_mlir(b, h, hkv, s, d, causal):
    q = "tensor<%dx%dx%dx%dxf16>" % (b, h, s, d)
    kv = "tensor<%dx%dx%dx%dxf16>" % (b, hkv, s, d)
    attrs = ("causal, " if causal else "") + "scale = %.9e : f32" % (d ** -0.5)
    return ("func.func @attn(%%q: %s, %%k: %s, %%v: %s) -> %s {\n"
            "  %%o = sgpu.attention %%q, %%k, %%v {%s} : %s, %s, %s -> %s\n"
            "  return %%o : %s\n}\n") % (q, kv, kv, q, attrs, q, kv, kv, q, q)


def norm_mlir(rows, d):
    t = "tensor<%dx%dxf16>" % (rows, d)
    w = "tensor<%dxf16>" % d
    return ("func.func @block(%%x: %s, %%a: %s, %%w: %s) -> %s {\n"
            "  %%s = arith.addf %%x, %%a : %s\n"
            "  %%n = sgpu.rms_norm %%s, %%w {epsilon = 1.0e-05 : f32} : %s, %s -> %s\n"
            "  %%r = arith.addf %%s, %%n : %s\n"
            "  return %%r : %s\n}\n") % (t, t, w, t, t, t, w, t, t, t)


def rope_mlir(h, s, d):
    x = "tensor<1x%dx%dx%dxf16>" % (h, s, d)
    t = "tensor<1x1x%dx%dxf16>" % (s, d)
    return ("func.func @rope(%%x: %s, %%c: %s, %%s: %s) -> %s {\n"
            "  %%y = sgpu.rope %%x, %%c, %%s : %s, %s, %s -> %s\n"
            "  return %%y : %s\n}\n") % (x, t, t, x, x, t, t, x, x)


def attention_ref(q, k, v, causal):
    b, h, s, d = q.shape
    rep = h // k.shape[1]
    qf = q.astype(np.float32)
    kf = np.repeat(k.astype(np.float32), rep, axis=1)
    vf = np.repeat(v.astype(np.float32), rep, axis=1)
    scores = qf @ kf.transpose(0, 1, 3, 2) * np.float32(d ** -0.5)
    if causal:
        scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ vf


def main():
    args = case_arguments()
    rng = np.random.default_rng(0)
    cases = [(c[0], attention_mlir(*c[1:])) for c in ATTENTION] + \
            [(c[0], norm_mlir(*c[1:])) for c in NORM] + \
            [(c[0], block_mlir(*c[1:])) for c in BLOCK] + \
            [(c[0], rope_mlir(*c[1:])) for c in ROPE]
    if args.compile:
        for name, text in cases:
            compile_function(args.compile, args.work / (name + ".mlir"), text, args.work / name)
            if name.startswith("attn") and "attention " not in (args.work / name / "program.txt").read_text():
                sys.exit("%s: the program has no attention line (cuDNN not chosen)" % name)
            if name.endswith("bshd") and "layout=bshd" not in (args.work / name / "program.txt").read_text():
                sys.exit("%s: the transposes around the attention were not folded" % name)
    if args.no_run:
        return 0
    rt = load_runtime(args.libdir)
    failed = 0
    for name, b, h, hkv, s, d, causal in ATTENTION:
        q = rng.standard_normal((b, h, s, d)).astype(np.float16)
        k = rng.standard_normal((b, hkv, s, d)).astype(np.float16)
        v = rng.standard_normal((b, hkv, s, d)).astype(np.float16)
        out = run_program(rt, args.work / name, [q, k, v], np.zeros((b, h, s, d), np.float16))
        ref = attention_ref(q, k, v, causal)
        err = float(np.abs(out.astype(np.float32) - ref).max() / np.abs(ref).max())
        ok = bool(np.isfinite(out).all()) and err <= 5e-3
        failed += not ok
        print("%s: max_rel_err %.2e: %s" % (name, err, "ok" if ok else "FAIL"))
    for name, rows, d in NORM:
        x = rng.standard_normal((rows, d)).astype(np.float16)
        a = (0.5 * rng.standard_normal((rows, d))).astype(np.float16)
        w = (1 + 0.1 * rng.standard_normal(d)).astype(np.float16)
        out = run_program(rt, args.work / name, [x, a, w], np.zeros((rows, d), np.float16))
        s = (x.astype(np.float32) + a.astype(np.float32)).astype(np.float16).astype(np.float32)
        inv = np.float32(1) / np.sqrt((s * s).sum(axis=1, keepdims=True) / np.float32(d) + np.float32(1e-5))
        n = (s * inv * w.astype(np.float32)).astype(np.float16).astype(np.float32)
        ref = (s + n).astype(np.float16).astype(np.float32)
        err = float(np.abs(out.astype(np.float32) - ref).max() / np.abs(ref).max())
        ok = bool(np.isfinite(out).all()) and err <= 4e-3
        failed += not ok
        print("%s: max_rel_err %.2e: %s" % (name, err, "ok" if ok else "FAIL"))
    for name, h, hkv, s, d in BLOCK:
        q = rng.standard_normal((1, s, h, d)).astype(np.float16)
        k = rng.standard_normal((1, s, hkv, d)).astype(np.float16)
        v = rng.standard_normal((1, s, hkv, d)).astype(np.float16)
        cos, sin = rope_tables(s, d)
        out = run_program(rt, args.work / name, [q, k, v, cos, sin], np.zeros((1, s, h, d), np.float16))
        bhsd = lambda x: x.transpose(0, 2, 1, 3)
        rq = rope_ref(bhsd(q), cos, sin).astype(np.float16)
        rk = rope_ref(bhsd(k), cos, sin).astype(np.float16)
        ref = bhsd(attention_ref(rq, rk, bhsd(v), True))
        err = float(np.abs(out.astype(np.float32) - ref).max() / np.abs(ref).max())
        ok = bool(np.isfinite(out).all()) and err <= 5e-3
        failed += not ok
        print("%s: max_rel_err %.2e: %s" % (name, err, "ok" if ok else "FAIL"))
    for name, h, s, d in ROPE:
        x = rng.standard_normal((1, h, s, d)).astype(np.float16)
        cos, sin = rope_tables(s, d)
        out = run_program(rt, args.work / name, [x, cos, sin], np.zeros((1, h, s, d), np.float16))
        ref = rope_ref(x, cos, sin)
        err = float(np.abs(out.astype(np.float32) - ref).max() / np.abs(ref).max())
        ok = bool(np.isfinite(out).all()) and err <= 1e-3
        failed += not ok
        print("%s: max_rel_err %.2e: %s" % (name, err, "ok" if ok else "FAIL"))
    print("cases %d failed %d" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
