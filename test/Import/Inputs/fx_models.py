"""Prints the torch.fx import of a test model, for the lit tests of test/Import.

    fx_models.py MODEL [--sparsity NAME=PATTERN]... [--dtype f16|bf16] [--weights params|constants]

MODEL is one of the shared test models (test/python/models.py: mlp,
gated-ffn, llama, sparse-linear-relu), a grouped-query attention (gqa: 4
query heads on 2 repeated k/v heads), a tied embedding and LM head (tied),
or an error case (unfold, conv1d, dropout-train). An import error prints `error: <kind>: <message>` on stderr
and exits 1.
"""
import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import models
from sparse_opt.importers.emitter import ImportError_
from sparse_opt.importers.fx import import_fx


class Unfold(nn.Module):
    def forward(self, x):
        return F.unfold(x, 2)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.conv = nn.Conv1d(4, 4, 3)

    def forward(self, x):
        return self.conv(self.proj(x))


class DropoutTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x)


class GQA(nn.Module):
    """Attention of 4 query heads on 2 k/v heads repeated as Hugging Face's
    repeat_kv does (v by repeat_interleave)."""

    def forward(self, q, k, v):
        b, kv, s, d = k.shape
        k = k[:, :, None, :, :].expand(b, kv, 2, s, d).reshape(b, kv * 2, s, d)
        v = torch.repeat_interleave(v, 2, dim=1)
        return torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1) @ v


class Tied(nn.Module):
    """An embedding and an LM head sharing one weight."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 32)
        self.head = nn.Linear(32, 64, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(torch.relu(self.embed(ids)))


def build(name):
    """(model, example inputs) by name, deterministic."""
    torch.manual_seed(0)
    if name == "mlp":
        return models.MLP().eval(), (torch.randn(4, 64),)
    if name == "gated-ffn":
        return models.GatedFFN().eval(), (torch.randn(2, 8, 64),)
    if name == "llama":
        return models.LlamaDecoder().eval(), (torch.randint(0, 128, (1, 16)),)
    if name == "sparse-linear-relu":
        return models.SparseLinearReLU().eval(), (torch.randn(128, 256),)
    if name == "gqa":
        return GQA(), (torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16))
    if name == "tied":
        return Tied().eval(), (torch.randint(0, 64, (1, 8)),)
    if name == "unfold":
        return Unfold(), (torch.randn(1, 2, 4, 4),)
    if name == "conv1d":
        return Conv(), (torch.randn(2, 4, 8),)
    if name == "dropout-train":
        return DropoutTrain().train(), (torch.randn(2, 8),)
    raise SystemExit("unknown model %r" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--sparsity", action="append", default=[], metavar="NAME=PATTERN")
    ap.add_argument("--dtype")
    ap.add_argument("--weights", default="params")
    args = ap.parse_args()
    sparsity = dict(s.split("=", 1) for s in args.sparsity)
    model, inputs = build(args.model)
    try:
        text = import_fx(model, inputs, sparsity=sparsity or None, dtype=args.dtype, weights=args.weights)
    except ImportError_ as err:
        print("error: %s: %s" % (type(err).__name__, err), file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
