"""Generate token ids with a compiled Llama-style decoder.

Builds a small random-weight Llama in torch (sparse_opt.models, with a
static KV cache), exports it into prefill and decode programs, loads them
with the module's weights and generates greedily; then checks the tokens
against torch running the same module. There is no tokenizer: prompts and
outputs are token ids.

  python3 examples/llama_generate.py                 # small model, GPU
  python3 examples/llama_generate.py --backend reference   # small model, CPU reference (f32)
  python3 examples/llama_generate.py --8b --sparsity 2:4   # Llama-3-8B shape, 2:4 block linears

Exporting needs the compiler library; a GPU machine without it loads a
directory exported elsewhere: `--export-only --out DIR` on the compiler's
machine, then `--load DIR` (with the same --8b / --sparsity) on the GPU.

--8b exports from a meta-device module (no weight memory) and then builds
the bf16 weights on the GPU. --sparsity prunes every block linear to that
pattern before export (the compiler checks it when the weights are bound).
"""
import argparse
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from sparse_opt import decoder, models  # noqa: E402


def build(config, device, dtype, sparsity, seed=0):
    """The decoder with random weights on `device` in `dtype` (shapes only on
    "meta"), every block linear pruned to `sparsity` when given."""
    model = models.Decoder(config, device="meta").eval()
    if device == "meta":
        return model.to(dtype)
    model = models.init_weights(models.materialize(model, device, dtype), seed=seed)
    if sparsity:
        n, m = (int(x) for x in sparsity.split(":"))
        for name in models.block_linear_names(model):
            models.prune_linear(model.get_parameter(name), n, m)
    return model


def torch_greedy(model, prompt, steps):
    """torch's greedy continuation, the cached forward one token at a time."""
    model.decoder_mode = "decode"
    seq = prompt.tolist()
    out = []
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name.endswith("_cache"):
                buf.zero_()
        for i, t in enumerate(seq[:-1]):
            model(torch.tensor([[t]], device=prompt.device), torch.tensor([[i]], device=prompt.device))
        last = seq[-1]
        for _ in range(steps):
            pos = torch.tensor([[len(seq) - 1]], device=prompt.device)
            nxt = int(model(torch.tensor([[last]], device=prompt.device), pos)[0, -1].float().argmax())
            out.append(nxt)
            seq.append(nxt)
            last = nxt
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--8b", dest="big", action="store_true", help="the Llama-3-8B shape (bf16, GPU)")
    ap.add_argument("--sparsity", choices=["2:4", "6:8"], help="prune every block linear to this pattern")
    ap.add_argument("--backend", choices=["cuda", "reference"], default="cuda")
    ap.add_argument("--tokens", type=int, default=16, help="new tokens to generate")
    ap.add_argument("--out", help="decoder directory (default: a temporary one)")
    ap.add_argument("--export-only", action="store_true", help="export into --out and stop")
    ap.add_argument("--load", metavar="DIR", help="load a directory exported before instead of exporting")
    args = ap.parse_args()
    if args.backend == "reference" and (args.big or args.sparsity):
        ap.error("the reference backend runs the small f32 model (no --8b, no --sparsity)")

    if args.big:
        config = models.Config(**{**models.LLAMA_8B.__dict__, "seq": 128, "cache_batch": 1, "cache_len": 512})
    else:
        config = models.Config(vocab=256, d=256, layers=2, heads=4, kv_heads=2, ffn=512, seq=32,
                               cache_batch=1, cache_len=128)
    gpu = args.backend == "cuda"
    dtype = torch.bfloat16 if gpu else torch.float32
    names = None
    if args.sparsity:
        names = {n: args.sparsity for n in models.block_linear_names(models.Decoder(config, device="meta"))}
    out = args.load or args.out or tempfile.mkdtemp(prefix="llama_generate_")

    if not args.load:
        t0 = time.perf_counter()
        meta = build(config, "meta", dtype, None)  # export reads shapes only
        decoder.export(meta, out, prefill=(1, config.seq), decode_batches=(1,),
                       dtype="bf16" if gpu else None, sparsity=names, compile=gpu)
        print("exported to %s in %.1f s" % (out, time.perf_counter() - t0))
        if args.export_only:
            return 0

    model = build(config, "cuda" if gpu else "cpu", dtype, args.sparsity)
    dec = decoder.load_decoder(out, model, backend=args.backend)
    prompt = torch.randint(0, config.vocab, (1, 8), generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    new = dec.generate(prompt, args.tokens)
    if gpu:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    print("prompt:    %s" % prompt[0].tolist())
    print("generated: %s  (%.1f tokens/s including the prefill)" % (new[0].tolist(), args.tokens / seconds))
    want = torch_greedy(model, prompt[0].to(model.embed.weight.device), args.tokens)
    agree = sum(int(a == b) for a, b in zip(new[0].tolist(), want))
    print("torch:     %s  (%d of %d tokens agree)" % (want, agree, args.tokens))
    # Greedy decoding may part ways where two logits tie within rounding
    # (bf16); the first token comes from the prefill and must agree.
    if new[0, 0].item() != want[0]:
        print("error: the first generated token differs from torch's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
