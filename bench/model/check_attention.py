#!/usr/bin/env python3
"""sgpu.attention on the GPU: the generated kernels against torch, and the
tensor-core kernel's time against torch's SDPA backends (cuDNN, flash) in
the same process.

  # development machine: one artifact directory per case
  python3 bench/model/check_attention.py compile --out DIR
  # GPU machine
  python3 bench/model/check_attention.py run --dir DIR --json OUT.json

Reference: torch's math SDPA in fp32 on the same (rounded) inputs, key/value
heads repeated for grouped-query attention, causal aligned to the end as in
sgpu.attention. Tolerances on max|ours - ref| / max|ref|: bf16 2e-2, f16
5e-3 (P is rounded to the input type before P.V, as flash attention does),
f32 1e-4. Exit status 1 when any case fails.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from cli import provenance, write_records  # noqa: E402

TOL = {"bf16": 2e-2, "f16": 5e-3, "f32": 1e-4}
# name: (B, H, Hkv, Sq, Sk, D, dtype, causal, mask, #sgpu.attention_config
# parameters); the cases
# in TIMED are also timed against torch's SDPA backends.
CASES = {
    "llama8b_prefill": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {}),
    "llama8b_prefill_w8": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {"warps": 8}),
    "llama8b_prefill_w2": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {"warps": 2}),
    "llama8b_full": (1, 32, 8, 2048, 2048, 128, "bf16", False, False, {}),
    "llama8b_prefill_mb3": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {"min_blocks_per_sm": 3}),
    "llama8b_full_mb3": (1, 32, 8, 2048, 2048, 128, "bf16", False, False, {"min_blocks_per_sm": 3}),
    "gqa_tail_f16": (2, 4, 2, 100, 100, 64, "f16", True, False, {}),
    "offset_causal": (1, 8, 2, 16, 80, 128, "bf16", True, False, {}),
    "full_d32": (1, 4, 4, 77, 77, 32, "bf16", False, False, {}),
    "small_d16_w8": (1, 2, 1, 40, 40, 16, "bf16", True, False, {"warps": 8}),
    "cuda_cores_f32": (1, 4, 2, 64, 64, 64, "f32", True, False, {}),
    "cuda_cores_mask": (1, 2, 2, 32, 48, 64, "bf16", False, True, {}),
    "cuda_cores_forced": (1, 4, 4, 128, 128, 128, "bf16", True, False, {"kernel": "cuda_cores"}),
}
TIMED = ("llama8b_prefill", "llama8b_prefill_w8", "llama8b_prefill_w2", "llama8b_full",
         "llama8b_prefill_mb3", "llama8b_full_mb3", "cuda_cores_forced")


def mlir_for(case):
    b, h, hkv, sq, sk, d, dt, causal, mask, config = case
    q = "tensor<%dx%dx%dx%dx%s>" % (b, h, sq, d, dt)
    kv = "tensor<%dx%dx%dx%dx%s>" % (b, hkv, sk, d, dt)
    attrs = ["scale = %.9e : f32" % (d ** -0.5)]
    if causal:
        attrs.insert(0, "causal")
    if config:
        attrs.append("sgpu.config = #sgpu.attention_config<%s>" % ", ".join(
            "%s = %s" % (k, v) for k, v in config.items()))
    args = "%%q: %s, %%k: %s, %%v: %s" % (q, kv, kv)
    m = ""
    if mask:
        mt = "tensor<1x1x%dx%dxi1>" % (sq, sk)
        args += ", %%m: %s" % mt
        m = " mask(%%m : %s)" % mt
    return ("func.func @attention(%s) -> %s {\n"
            "  %%o = sgpu.attention %%q, %%k, %%v%s {%s} : %s, %s, %s -> %s\n"
            "  return %%o : %s\n}\n") % (args, q, m, ", ".join(attrs), q, kv, kv, q, q)


def cmd_compile(args):
    from sparse_opt.compiler import Compiler
    out = pathlib.Path(args.out)
    with Compiler() as c:
        for name, case in CASES.items():
            c.parse(mlir_for(case), filename=name + ".mlir").compile(out / name, chip="sm_90a")
            print("compiled", name)
    return 0


def cmd_run(args):
    import torch
    import torch.nn.functional as F
    from sparse_opt import runtime
    from timing import median_us
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    g = torch.Generator("cuda").manual_seed(0)
    records, ok_all = [], True
    for name, case in CASES.items():
        b, h, hkv, sq, sk, d, dt, causal, use_mask, config = case
        t = dtypes[dt]
        q = torch.randn(b, h, sq, d, device="cuda", generator=g).to(t)
        k = torch.randn(b, hkv, sk, d, device="cuda", generator=g).to(t)
        v = torch.randn(b, hkv, sk, d, device="cuda", generator=g).to(t)
        mask = (torch.rand(1, 1, sq, sk, device="cuda", generator=g) > 0.3) if use_mask else None
        if mask is not None:
            mask[..., 0] = True  # no fully masked row
        prog = runtime.load(pathlib.Path(args.dir) / name)
        got = prog(q, k, v, mask) if use_mask else prog(q, k, v)
        rep = h // hkv
        kr, vr = k.float().repeat_interleave(rep, 1), v.float().repeat_interleave(rep, 1)
        bias = None
        if causal:
            keep = torch.ones(sq, sk, dtype=torch.bool, device="cuda").tril(sk - sq)
            bias = keep if mask is None else keep & mask
        elif mask is not None:
            bias = mask
        ref = F.scaled_dot_product_attention(q.float(), kr, vr, attn_mask=bias)
        err = ((got.float() - ref).abs().max() / ref.abs().max()).item()
        ok = err <= TOL[dt]
        ok_all &= ok
        rec = {"bench": "attention", "variant": name, "dtype": dt,
               "shape": {"batch": b, "heads": h, "kv_heads": hkv, "Sq": sq, "Sk": sk, "D": d,
                         "causal": causal, "mask": use_mask, "config": config},
               "max_rel_err": err, "tolerance": TOL[dt], "correct": ok,
               **provenance("python3 bench/model/check_attention.py run --dir DIR --json OUT")}
        line = "%-18s err %.2e (tol %.0e) %s" % (name, err, TOL[dt], "ok" if ok else "FAIL")
        if name in TIMED:
            ours, method = median_us(lambda: prog(q, k, v))
            rec["ours_us"], rec["timing"] = ours, method
            base = {}
            from torch.nn.attention import SDPBackend, sdpa_kernel
            for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=rep > 1)
                        base[label], _ = median_us(fn)
                except Exception as exc:  # a backend that does not take the case
                    print("  %s: %s" % (label, str(exc).splitlines()[0]))
            rec["baselines"] = base
            best = min(base.values()) if base else None
            rec["speedup"] = best / ours if best else None
            flops = 4 * b * h * sq * sk * d * (0.5 if causal else 1.0)
            rec["tflops"] = flops / ours / 1e6
            line += "; ours %.1f us (%.0f TFLOP/s), %s" % (
                ours, rec["tflops"], ", ".join("%s %.1f us" % kv for kv in base.items()))
        print(line)
        records.append(rec)
    return write_records(records, args.json, ok_all)


def main():
    from cli import compile_or_run
    return compile_or_run(__doc__, cmd_compile, cmd_run)


if __name__ == "__main__":
    sys.exit(main())
