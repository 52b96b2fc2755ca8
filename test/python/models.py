"""Small models the importer tests share (torch 1.13 and 2.x compatible).

- `MLP`: linear -> ReLU -> linear (a 2:4-ready first layer).
- `GatedFFN`: `(relu(x Wg^T) * (x Wu^T)) Wd^T`, the TwELL shape.
- `LlamaDecoder`: 2 layers of RMSNorm (decomposed: torch 1.13 has no
  nn.RMSNorm), causal attention in the matmul-softmax-matmul form with
  rotary embeddings (cat/slice), a SiLU-gated MLP, a tensor-parallel
  all-reduce marker after each block, embedding in front, norm + LM head.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from sparse_opt.markers import all_reduce
from sparse_opt.models import RMSNorm as _RMSNorm, rotate_half  # noqa: F401


class MLP(nn.Module):
    def __init__(self, d=64, hidden=128, out=32, bias=True):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden, bias=bias)
        self.fc2 = nn.Linear(hidden, out, bias=bias)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SparseLinearReLU(nn.Module):
    """The foundation's layer: relu(x W^T), W 2:4-sparse, no bias."""

    def __init__(self, k=256, n=512):
        super().__init__()
        self.fc = nn.Linear(k, n, bias=False)
        with torch.no_grad():
            w = self.fc.weight.view(n, k // 4, 4)
            idx = w.abs().topk(2, dim=2).indices
            mask = torch.zeros_like(w, dtype=torch.bool).scatter_(2, idx, True)
            self.fc.weight.copy_((w * mask).view(n, k))

    def forward(self, x):
        return F.relu(self.fc(x))


class GatedFFN(nn.Module):
    def __init__(self, d=64, f=256):
        super().__init__()
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.gate(x)) * self.up(x))


def RMSNorm(d, eps=1e-6):
    """The package's RMSNorm (decomposed: torch 1.13 has no nn.RMSNorm)."""
    return _RMSNorm(d, eps)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, d = x.size(0), x.size(1), x.size(2)
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.hd)
        scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, d)
        return self.o(out)


class SiluMLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Layer(nn.Module):
    def __init__(self, d, heads, f):
        super().__init__()
        self.attn_norm = RMSNorm(d)
        self.attn = Attention(d, heads)
        self.mlp_norm = RMSNorm(d)
        self.mlp = SiluMLP(d, f)

    def forward(self, x, cos, sin, mask):
        x = x + all_reduce(self.attn(self.attn_norm(x), cos, sin, mask))
        return x + all_reduce(self.mlp(self.mlp_norm(x)))


class LlamaDecoder(nn.Module):
    def __init__(self, vocab=128, d=64, heads=4, f=128, layers=2, seq=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Layer(d, heads, f) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None])
        self.register_buffer("sin", emb.sin()[None, None])
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)[None, None])

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return self.head(self.norm(x))
