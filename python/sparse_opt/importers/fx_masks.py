"""Masks known at import time: whether one is exactly the causal mask
(shared by the scaled_dot_product_attention handler and the attention
pattern of fx_patterns)."""
from __future__ import annotations

import torch


def is_causal_mask(t, sq, sk, kind) -> bool:
    """Whether a mask known at import time is exactly the causal mask (key j
    hidden from query i when j > i + sk - sq): `kind` "fill" (True = masked),
    "keep" (True = kept) or "add" (0 kept, <= -1e4 or -inf masked)."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.dim() > 4 or tuple(t.shape[-2:]) != (sq, sk):
        return False
    masked = torch.ones(sq, sk, dtype=torch.bool).triu(sk - sq + 1)
    for m in t.detach().reshape(-1, sq, sk):
        if kind in ("fill", "keep"):
            if m.dtype != torch.bool or not torch.equal(m if kind == "fill" else ~m, masked):
                return False
        else:
            if not m.is_floating_point():
                return False
            m = m.float()
            if not bool(((m <= -1e4) == masked).all()) or not bool((m[~masked] == 0).all()):
                return False
    return True
