#!/usr/bin/env python3
"""A KV cache added to a cache-less decoder (sparse_opt.kv_cache), on the GPU:
a plain causal Llama-style `forward(ids)` (F.scaled_dot_product_attention
with is_causal=True, RoPE tables gathered by torch.arange) is exported with
`cache={"max_batch": 4, "capacity": 256}`, loaded with the same module's
bf16 weights, and run as a prefill of 32 tokens plus 16 decode steps fed
the next tokens of a fixed sequence. Each step's logits are compared with
torch's full forward pass over the sequence so far (fp32): the max
relative error must stay within max(2e-2, 2x torch bf16's own).

  python3 bench/model/check_added_cache.py compile --out DIR     # compiler's machine
  python3 bench/model/check_added_cache.py run --dir DIR --json OUT.json   # GPU
"""
import argparse
import pathlib
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from cli import provenance, write_records  # noqa: E402

PROMPT, STEPS, CACHE = 32, 16, {"max_batch": 4, "capacity": 256}


def _math_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """For torch before 2.0 (the compiler's machine may have one): the math
    of F.scaled_dot_product_attention, enough to trace the model."""
    if enable_gqa:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], 1)
    s = q @ k.transpose(-2, -1) * (scale or q.shape[-1] ** -0.5)
    if is_causal:
        s = s.masked_fill(~torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril(),
                          float("-inf"))
    return torch.softmax(s, -1) @ v


if not hasattr(F, "scaled_dot_product_attention"):
    F.scaled_dot_product_attention = _math_sdpa


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, d, heads, kv):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv, d // heads
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.up, self.down = torch.nn.Linear(d, 4 * d, bias=False), torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(o.transpose(1, 2).reshape(b, s, -1))
        return x + self.down(F.gelu(self.up(self.n2(x))))


class PlainDecoder(torch.nn.Module):
    """No cache: every call runs the whole sequence."""

    def __init__(self, vocab=2048, d=512, heads=8, kv=2, layers=4, max_len=256):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Layer(d, heads, kv) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        hd = d // heads
        ang = torch.outer(torch.arange(max_len).float(), 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))
        self.register_buffer("cos", torch.cat([ang, ang], -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat([ang, ang], -1).sin(), persistent=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        cos, sin = self.cos[pos], self.sin[pos]
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def _model():
    torch.manual_seed(0)
    return PlainDecoder().eval()


def cmd_compile(args):
    from sparse_opt import decoder
    m = decoder.export(_model(), args.out, prefill=(1, PROMPT), decode_batches=(1,), dtype="bf16",
                       cache=CACHE)
    print("exported %s: %s, cache %d x %d" % (args.out, sorted(m["programs"]), m["max_batch"], m["capacity"]))
    return 0


def cmd_run(args):
    from sparse_opt import decoder
    model = _model().cuda()
    seq = torch.randint(0, 2048, (1, PROMPT + STEPS), generator=torch.Generator().manual_seed(1)).cuda()
    with torch.no_grad():
        want = model(seq).float()[0]
        torch_bf16 = model.to(torch.bfloat16)(seq).float()[0]
    scale = want.abs().max().item()
    torch_rel = (torch_bf16 - want).abs().max().item() / scale
    dec = decoder.load_decoder(args.dir, model)  # the module, now bf16: its weights used in place
    got = [dec.prefill(seq[:, :PROMPT])[0]] + [dec.decode(seq[:, t])[0] for t in range(PROMPT, PROMPT + STEPS)]
    errs = [(g.float() - want[PROMPT - 1 + i]).abs().max().item() / want[PROMPT - 1 + i].abs().max().item()
            for i, g in enumerate(got)]
    bar = max(2e-2, 2 * torch_rel)
    ok = max(errs) <= bar
    print("added cache: prefill %d + %d decode steps, worst max_rel_err %.3e (bar %.3e, torch bf16 %.3e) -> %s"
          % (PROMPT, STEPS, max(errs), bar, torch_rel, "ok" if ok else "FAIL"))
    rec = [{"bench": "added_cache_check", "dtype": "bf16", "prompt": PROMPT, "steps": STEPS, "cache": CACHE,
            "step_max_rel_err": errs, "max_rel_err": max(errs), "bar": bar, "torch_bf16_rel_err": torch_rel,
            "correct": ok,
            **provenance("python3 bench/model/check_added_cache.py run --dir DIR --json OUT")}]
    return write_records(rec, args.json, ok)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("compile").add_argument("--out", required=True)
    p = sub.add_parser("run")
    p.add_argument("--dir", required=True)
    p.add_argument("--json")
    args = ap.parse_args()
    return {"compile": cmd_compile, "run": cmd_run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
