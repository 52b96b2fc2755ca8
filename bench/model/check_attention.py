#!/usr/bin/env python3
"""sgpu.attention on the GPU: the generated kernels and the cuDNN library
call against torch, and their time against torch's SDPA backends (cuDNN,
flash) in the same process.

  # development machine: one artifact directory per case
  python3 bench/model/check_attention.py compile --out DIR
  # GPU machine
  python3 bench/model/check_attention.py run --dir DIR --json OUT.json

Reference: torch's math SDPA in fp32 on the same (rounded) inputs, key/value
heads repeated for grouped-query attention, causal aligned to the end as in
sgpu.attention; for the decode cases (one query per sequence over a KV
cache, keys 0..p visible), torch fp32 on each sequence's visible keys.
Tolerances on max|ours - ref| / max|ref|: bf16 2e-2, f16
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
    # auto: cuDNN's fused attention through the runtime (an `attention`
    # line), measured faster than the generated tensor-core kernel; the
    # _tc cases force the generated kernel on the same shapes.
    "llama8b_prefill": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {}),
    "llama8b_prefill_tc": (1, 32, 8, 2048, 2048, 128, "bf16", True, False, {"kernel": "tensor_cores"}),
    "llama8b_full_tc": (1, 32, 8, 2048, 2048, 128, "bf16", False, False, {"kernel": "tensor_cores"}),
    "library_b2_f16": (2, 8, 2, 300, 300, 128, "f16", True, False, {"kernel": "library"}),
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
# Decoding over a KV cache (the split-KV kernel): name: (B, H, Hkv,
# capacity, D, dtype, positions (one per sequence; the query at position p
# sees keys 0..p, none when p < 0), #sgpu.attention_config parameters). The
# llama8b_decode cases sit at context 2048 of a 4096-position cache, the
# decode benchmark's setting, and are timed against torch's SDPA backends
# on the same keys (the cache sliced to the context).
DECODE_CASES = {
    "llama8b_decode_b1": (1, 32, 8, 4096, 128, "bf16", [2047], {}),
    "llama8b_decode_b8": (8, 32, 8, 4096, 128, "bf16", [2047] * 8, {}),
    "llama8b_decode_b64": (64, 32, 8, 4096, 128, "bf16", [2047] * 64, {}),
    # The CUDA-core split kernel beside the tensor-core one (auto).
    "llama8b_decode_b1_cc": (1, 32, 8, 4096, 128, "bf16", [2047], {"kernel": "decode"}),
    "llama8b_decode_b8_cc": (8, 32, 8, 4096, 128, "bf16", [2047] * 8, {"kernel": "decode"}),
    "llama8b_decode_b64_cc": (64, 32, 8, 4096, 128, "bf16", [2047] * 64, {"kernel": "decode"}),
    # Splits sweeps of the tensor-core kernel around its one-wave choice.
    "llama8b_decode_b1_s8": (1, 32, 8, 4096, 128, "bf16", [2047], {"splits": 8}),
    "llama8b_decode_b1_s32": (1, 32, 8, 4096, 128, "bf16", [2047], {"splits": 32}),
    "llama8b_decode_b8_s3": (8, 32, 8, 4096, 128, "bf16", [2047] * 8, {"splits": 3}),
    "llama8b_decode_b8_s12": (8, 32, 8, 4096, 128, "bf16", [2047] * 8, {"splits": 12}),
    "llama8b_decode_b64_s1": (64, 32, 8, 4096, 128, "bf16", [2047] * 64, {"splits": 1}),
    "llama8b_decode_b64_s3": (64, 32, 8, 4096, 128, "bf16", [2047] * 64, {"splits": 3}),
    "llama8b_decode_b64_s4": (64, 32, 8, 4096, 128, "bf16", [2047] * 64, {"splits": 4}),
    "llama8b_decode_b8_u1": (8, 32, 8, 4096, 128, "bf16", [2047] * 8, {"unroll": 1}),
    "decode_ragged": (4, 8, 2, 300, 128, "bf16", [0, 17, 299, -1], {}),
    "decode_ragged_cc": (4, 8, 2, 300, 128, "bf16", [0, 17, 299, -1], {"kernel": "decode"}),
    "decode_mha_d64_f16": (3, 4, 4, 96, 64, "f16", [95, 40, 5], {}),
    "decode_gqa8_splits": (3, 16, 2, 320, 128, "bf16", [300, 5, 0], {"splits": 3}),
    "decode_tc_splits7": (2, 8, 2, 512, 128, "bf16", [511, 200], {"splits": 7}),
    "decode_splits_unroll1": (2, 8, 2, 512, 128, "bf16", [511, 200], {"splits": 7, "unroll": 1}),
}
TIMED = ("llama8b_prefill", "llama8b_prefill_tc", "llama8b_full_tc", "llama8b_prefill_w8", "llama8b_prefill_w2", "llama8b_full",
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


def decode_mlir_for(case):
    b, h, hkv, cap, d, dt, _, config = case
    q = "tensor<%dx%dx1x%dx%s>" % (b, h, d, dt)
    kv = "tensor<%dx%dx%dx%dx%s>" % (b, hkv, cap, d, dt)
    pos = "tensor<%dx1xi64>" % b
    attrs = ["causal", "scale = %.9e : f32" % (d ** -0.5)]
    if config:
        # `kernel` names the split kernel ("decode": CUDA cores,
        # "decode_tensor_cores"); without it the compiler chooses.
        attrs.append("sgpu.config = #sgpu.attention_config<%s>" % ", ".join(
            "%s = %s" % (k, v) for k, v in config.items()))
    return ("func.func @attention(%%q: %s, %%k: %s, %%v: %s, %%p: %s) -> %s {\n"
            "  %%o = sgpu.attention %%q, %%k, %%v positions(%%p : %s) {%s} : %s, %s, %s -> %s\n"
            "  return %%o : %s\n}\n") % (q, kv, kv, pos, q, pos, ", ".join(attrs), q, kv, kv, q, q)


def kernel_of(artifact):
    """What runs the attention of a compiled case: "library" (an `attention`
    line: cuDNN), "tensor-cores", "decode-tensor-cores", "decode" or
    "cuda-cores"."""
    text = (pathlib.Path(artifact) / "program.txt").read_text()
    if any(line.startswith("attention ") for line in text.splitlines()):
        return "library"
    if "sgpu_attention_mma" in text:
        return "tensor-cores"
    if "sgpu_attention_split_mma" in text:
        return "decode-tensor-cores"
    return "decode" if "sgpu_attention_split" in text else "cuda-cores"


def cmd_compile(args):
    from sparse_opt.compiler import Compiler
    out = pathlib.Path(args.out)
    with Compiler() as c:
        for name, case in CASES.items():
            c.parse(mlir_for(case), filename=name + ".mlir").compile(out / name, chip="sm_90a")
            print("compiled", name)
        for name, case in DECODE_CASES.items():
            c.parse(decode_mlir_for(case), filename=name + ".mlir").compile(out / name, chip="sm_90a")
            print("compiled", name)
    return 0


def sdpa_times(backends, call):
    """µs of `call` (a torch SDPA call) under each named backend ("cudnn",
    "flash", "efficient"); a backend that refuses the case is left out and
    said."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from timing import median_us
    named = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
             "efficient": SDPBackend.EFFICIENT_ATTENTION}
    times = {}
    for label in backends:
        try:
            with sdpa_kernel(named[label]):
                times[label], _ = median_us(call)
        except Exception as exc:  # a backend that does not take the case
            print("  %s: %s" % (label, str(exc).splitlines()[0]))
    return times


def run_decode_cases(args, g, dtypes, records):
    """The decode kernel against torch fp32 per sequence (keys 0..p), and the
    timed cases against torch's SDPA backends on the cache sliced to the
    context. Returns whether every case passed."""
    import torch
    import torch.nn.functional as F
    from sparse_opt import runtime
    from timing import median_us
    ok_all = True
    for name, case in DECODE_CASES.items():
        b, h, hkv, cap, d, dt, positions, config = case
        t = dtypes[dt]
        q = torch.randn(b, h, 1, d, device="cuda", generator=g).to(t)
        k = torch.randn(b, hkv, cap, d, device="cuda", generator=g).to(t)
        v = torch.randn(b, hkv, cap, d, device="cuda", generator=g).to(t)
        pos = torch.tensor(positions, dtype=torch.int64, device="cuda").view(b, 1)
        prog = runtime.load(pathlib.Path(args.dir) / name)
        got = prog(q, k, v, pos)
        rep = h // hkv
        ref = torch.zeros(b, h, 1, d, device="cuda")
        for i, p in enumerate(positions):
            if p < 0:
                continue  # no visible key: the kernel writes zeros
            kr = k[i:i + 1, :, :p + 1].float().repeat_interleave(rep, 1)
            vr = v[i:i + 1, :, :p + 1].float().repeat_interleave(rep, 1)
            ref[i:i + 1] = F.scaled_dot_product_attention(q[i:i + 1].float(), kr, vr)
        err = ((got.float() - ref).abs().max() / ref.abs().max()).item()
        ok = err <= TOL[dt] and bool(torch.isfinite(got.float()).all())
        ok_all &= ok
        rec = {"bench": "attention_decode", "variant": name, "dtype": dt,
               "kernel": kernel_of(pathlib.Path(args.dir) / name),
               "shape": {"batch": b, "heads": h, "kv_heads": hkv, "capacity": cap, "D": d,
                         "positions": positions if len(set(positions)) > 1 else positions[0],
                         "config": config},
               "max_rel_err": err, "tolerance": TOL[dt], "correct": ok,
               **provenance("python3 bench/model/check_attention.py run --dir DIR --json OUT")}
        line = "%-22s %-19s err %.2e (tol %.0e) %s" % (name, rec["kernel"], err, TOL[dt],
                                                      "ok" if ok else "FAIL")
        if name.startswith("llama8b_decode"):
            ctx = positions[0] + 1
            ours, method = median_us(lambda: prog(q, k, v, pos))
            kc, vc = k[:, :, :ctx], v[:, :, :ctx]
            base = sdpa_times(("flash", "cudnn", "efficient"),
                              lambda: F.scaled_dot_product_attention(q, kc, vc, enable_gqa=rep > 1))
            kv_bytes = 2 * b * hkv * ctx * d * k.element_size()
            rec.update(ours_us=ours, timing=method, baselines=base, context=ctx,
                       kv_bytes=kv_bytes, ours_tb_s=kv_bytes / ours / 1e6)
            best = min(base.values()) if base else None
            rec["speedup"] = best / ours if best else None
            line += "; ours %.1f us (%.2f TB/s of K and V), %s" % (
                ours, rec["ours_tb_s"], ", ".join("%s %.1f us" % kv for kv in base.items()))
        print(line)
        records.append(rec)
    return ok_all


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
               "kernel": kernel_of(pathlib.Path(args.dir) / name),
               "shape": {"batch": b, "heads": h, "kv_heads": hkv, "Sq": sq, "Sk": sk, "D": d,
                         "causal": causal, "mask": use_mask, "config": config},
               "max_rel_err": err, "tolerance": TOL[dt], "correct": ok,
               **provenance("python3 bench/model/check_attention.py run --dir DIR --json OUT")}
        line = "%-18s %-12s err %.2e (tol %.0e) %s" % (name, rec["kernel"], err, TOL[dt],
                                                      "ok" if ok else "FAIL")
        if name in TIMED:
            ours, method = median_us(lambda: prog(q, k, v))
            rec["ours_us"], rec["timing"] = ours, method
            base = sdpa_times(("cudnn", "flash"), lambda: F.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=rep > 1))
            rec["baselines"] = base
            best = min(base.values()) if base else None
            rec["speedup"] = best / ours if best else None
            flops = 4 * b * h * sq * sk * d * (0.5 if causal else 1.0)
            rec["tflops"] = flops / ours / 1e6
            line += "; ours %.1f us (%.0f TFLOP/s), %s" % (
                ours, rec["tflops"], ", ".join("%s %.1f us" % kv for kv in base.items()))
        print(line)
        records.append(rec)
    ok_all &= run_decode_cases(args, g, dtypes, records)
    return write_records(records, args.json, ok_all)


def main():
    from cli import compile_or_run
    return compile_or_run(__doc__, cmd_compile, cmd_run)


if __name__ == "__main__":
    sys.exit(main())
