"""Reference decoders in plain torch: Llama-style (RMSNorm, RoPE,
grouped-query attention, SwiGLU or ReLU MLP, untied LM head) and
GPT-2-style (LayerNorm, learned positions, GELU MLP, tied LM head), the
models the benchmarks, the tests and examples/llama_generate.py run. With a
static KV cache (Config.cache_batch / cache_len) they take
forward(ids, positions) in the form sparse_opt.decoder exports.

Written so that the same module traces under torch 1.13 (Debian 12's: no
`enable_gqa`, no `F.scaled_dot_product_attention`) and torch 2.x: attention is the matmul -> scale -> masked_fill(causal
buffer) -> softmax -> matmul form, and grouped-query heads are repeated with
expand + reshape. Built with `device="meta"`, the parameters hold no memory;
the small tables the importer reads or binds (the causal mask, the RoPE
cos/sin tables) are always real CPU buffers.

`tp_markers` adds the tensor-parallel all-reduce markers (identities in
torch, sgpu.all_reduce once imported) after every block, and `ladder` runs
the residual stream in ladder form, the model sgpu-ladder-residual makes.

`ReLU` variants take `relu_shift`: every gate neuron gets the bias
-relu_shift, so that with unit-variance gate outputs only the tail above the
shift is active (2.58 -> about 0.5% of the neurons), the low activity TwELL
is for; the dense program computes the same function.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from sparse_opt.markers import all_reduce, cache_write, cached_attention


@dataclass
class Config:
    vocab: int = 128
    d: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 128
    seq: int = 16
    style: str = "llama"        # llama | gpt2
    act: str = "silu"           # silu | relu | gelu
    relu_shift: float = 0.0     # relu only: gate bias -relu_shift
    eps: float = 1e-5
    tp_markers: bool = False    # all_reduce markers after every block (TP 1)
    ladder: bool = False        # ladder residuals (implies tp_markers)
    cache_batch: int = 0        # > 0: a static KV cache of this many sequences ...
    cache_len: int = 0          # ... and this many positions: forward(ids, positions)


LLAMA_8B = Config(vocab=128256, d=4096, layers=32, heads=32, kv_heads=8, ffn=14336, seq=2048)
# A GPT-2-style model of about the same size (d=4096, 32 layers, FFN 4d).
GPT2_8B = Config(vocab=50304, d=4096, layers=32, heads=32, kv_heads=32, ffn=16384, seq=2048,
                 style="gpt2", act="gelu")
SMALL = Config(vocab=128, d=256, layers=2, heads=4, kv_heads=2, ffn=512, seq=32)
SMALL_GPT2 = Config(vocab=128, d=256, layers=2, heads=4, kv_heads=4, ffn=1024, seq=32, style="gpt2", act="gelu")


class RMSNorm(nn.Module):
    def __init__(self, d, eps, device=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: Config, device=None):
        super().__init__()
        self.heads, self.kv, self.hd = c.heads, c.kv_heads, c.d // c.heads
        bias = c.style == "gpt2"
        self.q = nn.Linear(c.d, c.heads * self.hd, bias=bias, device=device)
        self.k = nn.Linear(c.d, c.kv_heads * self.hd, bias=bias, device=device)
        self.v = nn.Linear(c.d, c.kv_heads * self.hd, bias=bias, device=device)
        self.o = nn.Linear(c.heads * self.hd, c.d, bias=bias, device=device)
        self.rope = c.style == "llama"
        if c.cache_batch:
            shape = (c.cache_batch, c.kv_heads, c.cache_len, self.hd)
            self.register_buffer("k_cache", torch.zeros(shape, device=device), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape, device=device), persistent=False)

    def repeat_kv(self, x):
        b, kv, s, hd = x.shape
        rep = self.heads // self.kv
        if rep == 1:
            return x
        return x[:, :, None, :, :].expand(b, kv, rep, s, hd).reshape(b, kv * rep, s, hd)

    def forward(self, x, cos, sin, mask, positions=None, mode="prefill"):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        if self.rope:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if positions is not None:
            kc = cache_write(self.k_cache, k, positions)
            vc = cache_write(self.v_cache, v, positions)
            if mode == "decode":
                out = cached_attention(q, kc, vc, positions, 1.0 / math.sqrt(self.hd))
                return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.hd))
            # A prefill from position 0 attends over its own keys (causal).
            mask = mask[:, :, :s, :s]
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.hd)
        scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.heads * self.hd)
        return self.o(out)


class MLP(nn.Module):
    def __init__(self, c: Config, device=None):
        super().__init__()
        self.act = c.act
        if c.style == "gpt2":
            self.up = nn.Linear(c.d, c.ffn, device=device)
            self.down = nn.Linear(c.ffn, c.d, device=device)
            return
        self.gate = nn.Linear(c.d, c.ffn, bias=c.act == "relu", device=device)
        self.up = nn.Linear(c.d, c.ffn, bias=False, device=device)
        self.down = nn.Linear(c.ffn, c.d, bias=False, device=device)

    def forward(self, x):
        if self.act == "gelu":
            return self.down(F.gelu(self.up(x)))
        g = self.gate(x)
        g = F.silu(g) if self.act == "silu" else torch.relu(g)
        return self.down(g * self.up(x))


class Block(nn.Module):
    def __init__(self, c: Config, device=None):
        super().__init__()
        norm = (lambda: RMSNorm(c.d, c.eps, device)) if c.style == "llama" else \
            (lambda: nn.LayerNorm(c.d, eps=c.eps, device=device))
        self.attn_norm, self.attn = norm(), Attention(c, device)
        self.mlp_norm, self.mlp = norm(), MLP(c, device)

    def forward(self, x, cos, sin, mask, positions=None, mode="prefill"):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask, positions, mode)
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    """forward(ids [B, S]) -> logits [B, S, vocab] for S = config.seq.

    With config.cache_batch and cache_len: forward(ids, positions) with the
    absolute position of every token (B x S, -1 for padding), a static KV
    cache per layer (sparse_opt.markers.cache_write / cached_attention) and
    `decoder_mode`: "prefill" (sequences start at position 0 and attend over
    their new keys, S <= config.seq) or "decode" (attention over the cache),
    the form sparse_opt.decoder exports."""

    def __init__(self, c: Config, device=None):
        super().__init__()
        self.config = c
        self.embed = nn.Embedding(c.vocab, c.d, device=device)
        if c.style == "gpt2":
            self.pos = nn.Embedding(max(c.seq, c.cache_len), c.d, device=device)
        self.layers = nn.ModuleList([Block(c, device) for _ in range(c.layers)])
        self.norm = RMSNorm(c.d, c.eps, device) if c.style == "llama" else nn.LayerNorm(c.d, eps=c.eps, device=device)
        self.head = nn.Linear(c.d, c.vocab, bias=False, device=device)
        if c.style == "gpt2":
            self.head.weight = self.embed.weight  # tied
        hd = c.d // c.heads
        inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(c.seq).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)
        self.register_buffer("positions", torch.arange(c.seq), persistent=False)
        self.decoder_mode = "prefill"
        if c.cache_batch:
            # RoPE tables for every cache position, gathered by position.
            ang = torch.outer(torch.arange(c.cache_len).float(), inv)
            emb = torch.cat((ang, ang), dim=-1)
            self.register_buffer("rope_cos", emb.cos(), persistent=False)
            self.register_buffer("rope_sin", emb.sin(), persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(c.seq, c.seq, dtype=torch.bool), 1)[None, None],
                             persistent=False)

    def forward(self, ids, positions=None):
        if self.config.cache_batch:  # (a config choice: tracing sees it, not the Proxy)
            if positions is None:
                raise ValueError("a decoder with a KV cache takes forward(ids, positions)")
            return self._cached(ids, positions)
        x = self.embed(ids)
        if self.config.style == "gpt2":
            x = x + self.pos(self.positions)[None]
        if self.config.ladder:
            x = self._ladder(x)
        elif self.config.tp_markers:
            for layer in self.layers:
                x = x + all_reduce(layer.attn(layer.attn_norm(x), self.cos, self.sin, self.mask))
                x = x + all_reduce(layer.mlp(layer.mlp_norm(x)))
        else:
            for layer in self.layers:
                x = layer(x, self.cos, self.sin, self.mask)
        return self.head(self.norm(x))

    def _cached(self, ids, positions):
        """The cached forward: every token at its own position."""
        x = self.embed(ids)
        if self.config.style == "gpt2":
            x = x + self.pos(positions)
        cos = F.embedding(positions, self.rope_cos).unsqueeze(1) if self.config.style == "llama" else None
        sin = F.embedding(positions, self.rope_sin).unsqueeze(1) if self.config.style == "llama" else None
        for layer in self.layers:
            x = layer(x, cos, sin, self.mask, positions, self.decoder_mode)
        return self.head(self.norm(x))

    def _ladder(self, x):
        """Ladder residuals (docs/design.md, "Collectives and the ladder
        residual"), the form sgpu-ladder-residual gives every layer: block
        i reads the stream one block stale, x_i = x_{i-1} +
        all_reduce(f_i(norm(x_{i-2}))), the first two blocks reading the
        embedding."""
        stale, current = x, x
        for layer in self.layers:
            attn = lambda h, layer=layer: layer.attn(h, self.cos, self.sin, self.mask)
            for norm, f in ((layer.attn_norm, attn), (layer.mlp_norm, layer.mlp)):
                stale, current = current, current + all_reduce(f(norm(stale)))
        return current


def materialize(model: Decoder, device, dtype=torch.float32):
    """A model built on the meta device, allocated on `device` in `dtype`
    (so an 8B model is never allocated in f32 first): the parameters
    uninitialized (init_weights fills them), the tables built on the CPU
    (RoPE, causal mask) copied over, the caches zeroed."""
    real = {n: b.clone() for n, b in model.named_buffers() if not b.is_meta}
    # Tied parameters (GPT-2's head and embedding): to_empty would give each
    # module its own tensor; they are tied again after it.
    first, ties = {}, []
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for p_name, p in mod.named_parameters(recurse=False):
            if id(p) in first and first[id(p)] != (mod_name, p_name):
                ties.append(((mod_name, p_name), first[id(p)]))
            first.setdefault(id(p), (mod_name, p_name))
    model = model.to(dtype).to_empty(device=device)
    for (mod_name, p_name), (src_mod, src_name) in ties:
        setattr(model.get_submodule(mod_name), p_name, getattr(model.get_submodule(src_mod), src_name))
    with torch.no_grad():
        for n, b in model.named_buffers():
            if n in real:
                b.copy_(real[n])
            else:
                b.zero_()
    return model


def init_weights(model: Decoder, seed=0):
    """Random weights with unit-scale activations (normal / sqrt(fan_in)),
    norms at 1, and for relu_shift the gate bias -relu_shift."""
    dev = next(model.parameters()).device
    g = torch.Generator(device=dev).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and p.dim() == 1 and name.endswith("weight"):
                p.fill_(1.0)
            elif p.dim() == 1:
                p.zero_()
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]), generator=g)
        shift = model.config.relu_shift
        if model.config.act == "relu" and shift:
            for layer in model.layers:
                layer.mlp.gate.bias.fill_(-shift * 1.0)
    return model


def prune_linear(weight, n, m):
    """Keeps the n largest of every m along K of one weight, in place."""
    with torch.no_grad():
        rows, k = weight.shape
        g = weight.view(rows, k // m, m)
        idx = g.abs().topk(n, dim=2).indices
        keep = torch.zeros_like(g, dtype=torch.bool).scatter_(2, idx, True)
        weight.copy_((g * keep).view(rows, k))


def block_linear_names(model: Decoder):
    return [n + ".weight" for n, mod in model.named_modules()
            if isinstance(mod, nn.Linear) and n.startswith("layers.")]
