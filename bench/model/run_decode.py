#!/usr/bin/env python3
"""Whole-model decoding with a KV cache: export a decoder (sparse_opt.decoder)
on the compiler's machine from a meta-device module, then on the GPU
machine check it against torch (teacher-forced) and time decode steps
beside torch in the same process.

  # compiler's machine: import + compile the prefill and decode programs
  python3 bench/model/run_decode.py compile --config llama8b --variant dense \\
      --max-batch 8 --capacity 512 --prefill 8x64 --decode-batches 1,8 --out DIR
  # GPU machine
  python3 bench/model/run_decode.py check --config llama8b --variant dense --dir DIR --json OUT.json
  python3 bench/model/run_decode.py time --config llama8b --dir DIR --context 2048 --json OUT.json

check: a prompt of 64 tokens, then 32 decode steps fed torch fp32's greedy
tokens (teacher forcing). At every step ours must pick torch fp32's argmax
wherever fp32's gap between its two largest logits exceeds 3x the prefill's
max absolute logit error (ours against fp32 over every prompt position);
each step's max_rel_err (max|ours - fp32| / max|fp32|) is recorded. Then a
batch of 8 prompts of 8 different lengths, prefilled together and decoded 4
steps, against each sequence run alone: the logits must agree within 1e-2
of their largest magnitude. Exit status 1 when a check fails.

time: decode steps at `context` tokens already in every sequence's cache
(random keys and values, the same in torch's cache and ours), at each
decode batch the directory has: ours eager and in a CUDA graph; torch
eager, eager inside a CUDA graph, and torch.compile inside a CUDA graph
(the same module, its static cache, attention over the whole cache through
a boolean mask).
"""
import argparse
import json
import pathlib
import re
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "model"))

import decoder as models  # noqa: E402
from run_prefill import PATTERNS, config_for, sparsity_for  # noqa: E402
from cli import provenance, write_records  # noqa: E402

PROMPT, STEPS, RAGGED = 64, 32, [9, 17, 24, 33, 40, 47, 56, 64]


def _ints(text):
    return [int(x) for x in text.replace("x", ",").split(",") if x]


def cached_config(args, prefill_tokens):
    c = config_for(args.config, args.variant)
    c.cache_batch, c.cache_len = args.max_batch, args.capacity
    c.seq = max(prefill_tokens, 16)
    return c


def cmd_compile(args):
    from sparse_opt import decoder
    pb, ps = _ints(args.prefill)
    c = cached_config(args, ps)
    model = models.Decoder(c, device="meta").eval()
    sparsity = sparsity_for(model, args.variant) or None
    config = _attention_config(args.attention_config)
    t0 = time.perf_counter()
    options = dict(dtype=args.dtype, sparsity=sparsity, chip=args.chip, twell=args.variant == "twell")
    if not args.programmatic_launch:
        options["programmatic_launch"] = False
    m = decoder.export(model, args.out, prefill=(pb, ps), decode_batches=_ints(args.decode_batches),
                       compile=not config, **options)
    if config:
        _compile_with_attention_config(args.out, m, config, options)
    meta = {"config": args.config, "variant": args.variant, "max_batch": args.max_batch,
            "capacity": args.capacity, "prefill": [pb, ps], "seconds": time.perf_counter() - t0,
            "attention_config": config}
    (pathlib.Path(args.out) / "bench.json").write_text(json.dumps(meta) + "\n")
    print("exported %s %s in %.1f s: %s" % (args.config, args.variant, meta["seconds"], sorted(m["programs"])))
    return 0


def _attention_config(text):
    """{"lanes_per_key": 16, ...} from "lanes_per_key=16,unroll=2" (a
    non-numeric value, as in kernel=decode, stays a word)."""
    config = {}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        value = value.strip()
        config[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return config


def _compile_with_attention_config(out, manifest, config, options):
    """Compiles the exported decode programs with `config` as the
    #sgpu.attention_config of their cache attention (the split-KV decode kernel's knobs), the
    prefill program as exported; marks them compiled in decoder.json."""
    from sparse_opt import decoder
    from sparse_opt.compiler import Compiler
    attr = "sgpu.config = #sgpu.attention_config<%s>" % ", ".join(
        "%s = %s" % kv for kv in config.items())
    out = pathlib.Path(out)
    with Compiler() as c:
        for name, program in manifest["programs"].items():
            path = out / name / "model.mlir"
            text = path.read_text()
            if program["mode"] == "decode":
                text = re.sub(r"(= sgpu\.attention [^\n]* positions\([^)]*\) \{)", r"\1%s, " % attr, text)
                if attr not in text:
                    raise SystemExit("no cache attention in %s to configure" % path)
                path.write_text(text)
            c.parse(text, filename=str(path)).compile(
                str(out / name), chip=options["chip"], twell=options["twell"],
                programmatic_launch=options.get("programmatic_launch", True))
            program["compiled"] = True
    (out / decoder.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def _setup(args, dtype=torch.float32):
    """(the torch model in `dtype` on the GPU, the export's metadata). The
    model is built on the meta device and materialized in `dtype`, so a
    large cache is never allocated in f32 first."""
    meta = json.loads((pathlib.Path(args.dir) / "bench.json").read_text())
    for k in ("config", "variant", "max_batch", "capacity"):
        setattr(args, k, meta[k])
    c = cached_config(args, meta["prefill"][1])
    model = models.materialize(models.Decoder(c, device="meta").eval(), "cuda", dtype)
    model = models.init_weights(model, seed=0)
    for name, pattern in sparsity_for(model, args.variant).items():
        models.prune_linear(dict(model.named_parameters())[name], *PATTERNS[pattern])
    return model, meta


def _rel(got, want):
    return ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()


def _torch_greedy(model, prompt):
    """fp32 logits of every prompt position and of STEPS greedy steps, and
    the tokens chosen."""
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name.endswith("_cache"):
                buf.zero_()
        model.decoder_mode = "prefill"
        pos = torch.arange(PROMPT, device="cuda")[None]
        logits = model(prompt[None], pos)[0].float()
        steps, tokens = [logits[-1]], []
        model.decoder_mode = "decode"
        for t in range(STEPS):
            nxt = steps[-1].argmax()
            tokens.append(int(nxt))
            out = model(nxt.view(1, 1), torch.tensor([[PROMPT + t]], device="cuda"))
            steps.append(out[0, -1].float())
    return logits, steps, tokens


def _progress(what):
    print("  [%s] %s" % (time.strftime("%H:%M:%S"), what), flush=True)


def cmd_check(args):
    from sparse_opt import decoder
    model, meta = _setup(args)
    _progress("torch fp32 model ready")
    g = torch.Generator("cuda").manual_seed(1)
    prompt = torch.randint(0, model.config.vocab, (PROMPT,), device="cuda", generator=g)
    ref_prefill, ref_steps, tokens = _torch_greedy(model, prompt)
    ours_model = model.to(torch.bfloat16)  # in place: the fp32 results are kept above
    with torch.no_grad():
        ours_model.decoder_mode = "prefill"
        torch_bf16 = ours_model(prompt[None], torch.arange(PROMPT, device="cuda")[None])[0].float()
    dec = decoder.load_decoder(args.dir, ours_model)
    _progress("torch greedy done, programs loaded and bound")
    got = dec.prefill(prompt[None], all_logits=True)[0]
    prefill_err = (got - ref_prefill).abs().max().item()
    torch_prefill_err = (torch_bf16 - ref_prefill).abs().max().item()
    steps, ok = [], True
    for t in range(STEPS):
        logits = dec.decode(torch.tensor([tokens[t]]))[0]
        want = ref_steps[t + 1]
        top2 = torch.topk(want, 2).values
        gap = (top2[0] - top2[1]).item()
        checked = gap > 3 * prefill_err
        match = int(logits.argmax()) == int(want.argmax())
        ok &= match or not checked
        steps.append({"step": t, "max_rel_err": _rel(logits, want), "gap": gap, "checked": checked,
                      "argmax_match": match})
    _progress("teacher-forced steps done")
    # A ragged batch against each sequence alone: through the same programs
    # (the batch-8 decode program holding one sequence), where the other
    # rows must change nothing (bar 1e-3 of the largest logit), and through
    # the batch-1 decode program (other GEMM shapes: bf16 rounding noise,
    # the prefill bar of the whole-model checks, max(2e-2, 2x torch bf16's
    # error against fp32)).
    pb, ps = meta["prefill"]
    torch_rel = torch_prefill_err / ref_prefill.abs().max().item()
    ragged = None
    if pb >= len(RAGGED) and ps >= max(RAGGED) and 8 in dec.decode_batches:
        ragged = {"lengths": RAGGED, "same_programs_max_rel_diff": 0.0, "batch1_max_rel_diff": 0.0,
                  "same_programs_bar": 1e-3, "batch1_bar": max(2e-2, 2 * torch_rel)}
        ids = torch.randint(0, model.config.vocab, (len(RAGGED), max(RAGGED)), device="cuda", generator=g)
        follow = torch.randint(0, model.config.vocab, (4, len(RAGGED)), device="cuda", generator=g)
        batch = [dec.prefill(ids, lengths=RAGGED)] + [dec.decode(follow[t]) for t in range(4)]
        for i, n in enumerate(RAGGED):
            for key, program in (("same_programs_max_rel_diff", 8), ("batch1_max_rel_diff", None)):
                alone = [dec.prefill(ids[i:i + 1, :n])] + [dec.decode(follow[t, i:i + 1], program)
                                                           for t in range(4)]
                for a, bt in zip(alone, batch):
                    ragged[key] = max(ragged[key], _rel(bt[i], a[0]))
        ragged["correct"] = (ragged["same_programs_max_rel_diff"] <= ragged["same_programs_bar"] and
                             ragged["batch1_max_rel_diff"] <= ragged["batch1_bar"])
        ok &= ragged["correct"]
    c = model.config
    rec = [{
        "bench": "model_decode_check", "config": args.config, "variant": args.variant, "dtype": "bf16",
        "shape": {"layers": c.layers, "d": c.d, "heads": c.heads, "kv_heads": c.kv_heads, "F": c.ffn,
                  "vocab": c.vocab, "style": c.style, "prompt": PROMPT, "steps": STEPS,
                  "capacity": c.cache_len, "phase": "decode"},
        "prefill_max_abs_err": prefill_err, "torch_bf16_prefill_max_abs_err": torch_prefill_err,
        "argmax_bar": 3 * prefill_err, "steps": steps,
        "max_rel_err": max(s["max_rel_err"] for s in steps),
        "checked_steps": sum(s["checked"] for s in steps),
        "ragged": ragged, "correct": ok,
        **provenance("python3 bench/model/run_decode.py check --config %s --variant %s --dir DIR --json OUT"
                     % (args.config, args.variant)),
    }]
    print("%s %s: prefill max abs err %.3e (torch bf16 %.3e); %d/%d steps checked, worst step max_rel_err "
          "%.3e; ragged %s -> %s"
          % (args.config, args.variant, prefill_err, torch_prefill_err, rec[0]["checked_steps"], STEPS,
             rec[0]["max_rel_err"],
             ragged and "%.2e (same programs), %.2e (batch-1 program)" % (
                 ragged["same_programs_max_rel_diff"], ragged["batch1_max_rel_diff"]),
             "ok" if ok else "FAIL"))
    for s in steps:
        if s["checked"] and not s["argmax_match"]:
            print("  step %d: argmax differs with a gap of %.3f" % (s["step"], s["gap"]))
    return write_records(rec, args.json, ok)


def _graph(fn):
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def copy_bandwidth():
    """The device's copy bandwidth in bytes per second (bytes read plus
    bytes written by a 2 GiB device-to-device copy, median of 20): the
    memory bound of the decode step is its bytes over this."""
    from timing import median_events_us
    src = torch.empty(1 << 30, dtype=torch.int16, device="cuda")
    dst = torch.empty_like(src)
    us = median_events_us(lambda: dst.copy_(src), warmup=3, reps=20)
    return 2 * (1 << 31) / (us * 1e-6)


def cmd_time(args):
    from timing import kernel_profile, median_events_us
    from sparse_opt import decoder
    copy_bytes_per_s = copy_bandwidth()
    torch.cuda.empty_cache()
    model, meta = _setup(args, torch.bfloat16)
    dec = decoder.load_decoder(args.dir, model)
    # --ab-env NAME=VALUE: the same programs loaded a second time with NAME
    # set while they load (e.g. SPARSEOPT_GEMM_AUTOTUNE=0), timed beside
    # the first in this process: an A/B of a load-time choice.
    ab = None
    if args.ab_dir:
        # --ab-dir DIR: the same model's programs compiled another way (an
        # A/B of a compile-time choice), bound to the same weights.
        ab = decoder.load_decoder(args.ab_dir, model)
    elif args.ab_env:
        import os
        name, _, value = args.ab_env.partition("=")
        old = os.environ.get(name)
        os.environ[name] = value
        try:
            ab = decoder.load_decoder(args.dir, model)
        finally:
            if old is None:
                del os.environ[name]
            else:
                os.environ[name] = old
    ab_label = pathlib.Path(args.ab_dir).name if args.ab_dir else args.ab_env
    ctx = args.context
    g = torch.Generator("cuda").manual_seed(2)
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name.endswith("_cache"):
                buf.zero_()
                buf[:, :, :ctx].normal_(generator=g)
                dec.backend.caches[name].copy_(buf)
                if ab is not None:
                    ab.backend.caches[name].copy_(buf)
    model.decoder_mode = "decode"
    recs, c = [], model.config
    for b in dec.decode_batches:
        prog = dec.backend.programs["decode_b%d" % b]
        ids = torch.randint(0, c.vocab, (b, 1), device="cuda", generator=g)
        pos = torch.full((b, 1), ctx, dtype=torch.long, device="cuda")
        out = torch.empty(b, 1, c.vocab, dtype=torch.bfloat16, device="cuda")

        def ours():
            prog.run([ids.data_ptr(), pos.data_ptr()], [out.data_ptr()], torch.cuda.current_stream().cuda_stream)

        def theirs():
            with torch.no_grad():
                model(ids, pos)

        cases = [("ours", ours, False), ("ours_graph", ours, True),
                 ("torch_eager", theirs, False), ("torch_eager_graph", theirs, True)]
        if ab is not None:
            prog_ab = ab.backend.programs["decode_b%d" % b]

            def ours_ab():
                prog_ab.run([ids.data_ptr(), pos.data_ptr()], [out.data_ptr()],
                            torch.cuda.current_stream().cuda_stream)
            # Interleaved with the first load's: A, B, A, B.
            cases = [("ours_graph", ours, True), ("ab_graph", ours_ab, True),
                     ("ours_graph_2", ours, True), ("ab_graph_2", ours_ab, True)] + cases[:1] + cases[2:]
        if args.torch_compile:
            # torch's best for a decode step: inductor's kernels (compiled
            # for this batch, static shapes), captured in a CUDA graph after
            # warm-up calls (compilation, autotuning), like ours.
            torch._dynamo.reset()
            compiled = torch.compile(model, dynamic=False)

            def theirs_compiled():
                with torch.no_grad():
                    compiled(ids, pos)
            for _ in range(3):
                theirs_compiled()
            cases.append(("torch_compile_graph", theirs_compiled, True))
        times, notes = {}, {}
        for name, fn, graphed in cases:
            try:
                f = _graph(fn) if graphed else fn
                times[name] = median_events_us(f, warmup=3, reps=args.reps)
            except Exception as e:  # a capture the runtime does not support is recorded, not hidden
                notes[name] = str(e).splitlines()[0][:200]
                torch.cuda.synchronize()
        profiles = {}
        if args.profile:
            profiles = {"ours": kernel_profile(ours), "torch_eager": kernel_profile(theirs)}
            if "torch_compile_graph" in times:
                profiles["torch_compile"] = kernel_profile(theirs_compiled)
            for who, prof in profiles.items():
                print("  %s kernels at batch %d: %.0f us per step" % (who, b, prof["total_us"]))
                for row in prof["kernels"]:
                    print("    %9.1f  %s" % (row["us"], row["kernel"]))
        ab_rec = None
        if ab is not None:
            for k in ("ours_graph", "ab_graph"):
                if k + "_2" in times:
                    times[k] = min(times[k], times.pop(k + "_2")) if k in times else times.pop(k + "_2")
            if "ab_graph" in times:
                ab_rec = {("dir" if args.ab_dir else "env"): ab_label,
                          "tokens_per_s": b / times.pop("ab_graph") * 1e6,
                          "timing": "CUDA graph, the better of two interleaved medians, as ours_graph"}
        best_ours = min(v for k, v in times.items() if k.startswith("ours"))
        base = times.get("torch_eager_graph")
        rec = {
            "bench": "model", "config": args.config, "variant": args.variant, "dtype": "bf16",
            "shape": {"layers": c.layers, "d": c.d, "heads": c.heads, "kv_heads": c.kv_heads, "F": c.ffn,
                      "vocab": c.vocab, "batch": b, "tokens": b, "context": ctx, "capacity": c.cache_len,
                      "phase": "decode", "style": c.style},
            "ours_us": best_ours, "tokens_per_s": b / best_ours * 1e6,
            "ours_eager_tokens_per_s": b / times["ours"] * 1e6 if "ours" in times else None,
            "ours_graph_tokens_per_s": b / times["ours_graph"] * 1e6 if "ours_graph" in times else None,
            "baselines": {k: b / v * 1e6 for k, v in times.items() if k.startswith("torch")},
            "baselines_us": {k: v for k, v in times.items() if k.startswith("torch")},
            "floor": "torch_eager_graph", "floor_holds": base is not None and best_ours <= base,
            **({"best_torch": min((v, k) for k, v in times.items() if k.startswith("torch"))[1]}
               if any(k.startswith("torch") for k in times) else {}),
            "notes": notes, "attention_config": meta.get("attention_config") or {},
            **({"ab": ab_rec} if ab_rec else {}),
            "copy_bytes_per_s": copy_bytes_per_s,
            **({"profile": profiles} if profiles else {}),
            "timing": "one decode step, CUDA events, median of %d after 3" % args.reps,
            **provenance("python3 bench/model/run_decode.py time --config %s --dir DIR --context %d --json OUT"
                         % (args.config, ctx)),
        }
        recs.append(rec)
        print("%s %s decode batch %d at context %d: ours %.0f tok/s (eager %s, graph %s); torch eager %s, "
              "eager+graph %s, compile+graph %s tok/s; floor %s %s"
              % (args.config, args.variant, b, ctx, rec["tokens_per_s"],
                 rec["ours_eager_tokens_per_s"] and "%.0f" % rec["ours_eager_tokens_per_s"],
                 rec["ours_graph_tokens_per_s"] and "%.0f" % rec["ours_graph_tokens_per_s"],
                 "%.0f" % rec["baselines"].get("torch_eager", 0),
                 "%.0f" % rec["baselines"].get("torch_eager_graph", 0),
                 "%.0f" % rec["baselines"].get("torch_compile_graph", 0),
                 "holds" if rec["floor_holds"] else "MISSED", notes or ""))
        if ab_rec:
            print("  A/B: ours %.0f tok/s, with %s %.0f tok/s (%.3fx)" % (
                b / times["ours_graph"] * 1e6, ab_label, ab_rec["tokens_per_s"],
                ab_rec["tokens_per_s"] / (b / times["ours_graph"] * 1e6)))
    return write_records(recs, args.json, all(r["floor_holds"] for r in recs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("compile")
    p.add_argument("--config", choices=["llama8b", "gpt2_8b", "small", "small_gpt2"], default="llama8b")
    p.add_argument("--variant", choices=["dense", "2:4", "6:8", "twell"], default="dense")
    p.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--capacity", type=int, default=512)
    p.add_argument("--prefill", default="8x64")
    p.add_argument("--decode-batches", default="1,8")
    p.add_argument("--chip", default="sm_90a")
    p.add_argument("--no-programmatic-launch", dest="programmatic_launch", action="store_false",
                   help="compile with plain launches (sgpu-compile programmatic-launch=false; "
                        "the default's A/B needs no second compile: --ab-env SPARSEOPT_PDL=0)")
    p.add_argument("--attention-config", default="",
                   help="#sgpu.attention_config of the decode programs' cache attention, "
                        "e.g. lanes_per_key=16,unroll=2")
    p.add_argument("--out", required=True)
    for name in ("check", "time"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--json")
        if name == "time":
            p.add_argument("--context", type=int, default=2048)
            p.add_argument("--reps", type=int, default=20)
            p.add_argument("--ab-env", default="",
                           help="NAME=VALUE: also load the programs with NAME set and time both "
                                "(CUDA graph, interleaved) in this process")
            p.add_argument("--ab-dir", default="",
                           help="DIR: also load the same model's programs compiled into DIR "
                                "(e.g. another --attention-config) and time both in this process")
            p.add_argument("--no-torch-compile", dest="torch_compile", action="store_false",
                           help="skip torch.compile (+ CUDA graph) as a baseline")
            p.add_argument("--profile", action="store_true",
                           help="also record each side's GPU time per kernel (torch profiler)")
    args = ap.parse_args()
    return {"compile": cmd_compile, "check": cmd_check, "time": cmd_time}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
