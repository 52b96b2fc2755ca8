"""Markers a model can call so the importers see intent that plain torch ops
do not carry.

`all_reduce(x)` marks a tensor-parallel reduction: the identity when the
model runs in PyTorch on one rank, `sgpu.all_reduce` once imported.

- torch.fx: the importer's tracer keeps `all_reduce` as a leaf call.
- torch.export (torch 2.x): where `torch.library.custom_op` exists, the
  marker is the custom op `sparse_opt::all_reduce`, so it survives export
  as `torch.ops.sparse_opt.all_reduce.default` instead of vanishing as an
  identity.
- ONNX: a node of op type `AllReduce` in the domain `ai.sparseopt`.
"""

ONNX_DOMAIN = "ai.sparseopt"
CUSTOM_OP = "sparse_opt::all_reduce"

_op = None
try:  # torch 2.4+: a real op, visible to torch.export
    import torch

    if hasattr(torch, "library") and hasattr(torch.library, "custom_op"):
        @torch.library.custom_op(CUSTOM_OP, mutates_args=())
        def _all_reduce_op(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @_all_reduce_op.register_fake
        def _(x):
            return torch.empty_like(x)

        _op = torch.ops.sparse_opt.all_reduce
except Exception:  # pragma: no cover - torch missing, too old, or already registered
    _op = None


def all_reduce(x):
    """Tensor-parallel all-reduce (sum) across the model's ranks."""
    if _op is not None and not isinstance(x, (int, float)) and type(x).__name__ != "Proxy":
        return _op(x)
    return x


try:  # make it a leaf of torch.fx traces when torch is present
    import torch.fx

    torch.fx.wrap("all_reduce")
except Exception:  # pragma: no cover - torch missing or too old
    pass
