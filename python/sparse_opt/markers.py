"""Markers a model can call so the importers see intent that plain torch ops
do not carry.

`all_reduce(x)` marks a tensor-parallel reduction: the identity when the
model runs in PyTorch on one rank, `sgpu.all_reduce` once imported. It is
wrapped for torch.fx (a leaf call in the traced graph); ONNX graphs express
the same with a node of op type `AllReduce` in the domain `ai.sparseopt`.
"""

ONNX_DOMAIN = "ai.sparseopt"


def all_reduce(x):
    """Tensor-parallel all-reduce (sum) across the model's ranks."""
    return x


try:  # make it a leaf of torch.fx traces when torch is present
    import torch.fx

    torch.fx.wrap("all_reduce")
except Exception:  # pragma: no cover - torch missing or too old
    pass
