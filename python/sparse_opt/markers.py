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

`cache_write(cache, new, positions)` and `cached_attention(q, k_cache,
v_cache, positions)` write a static KV cache and attend over it with one
position per token (sequences of different lengths in one batch): plain
torch code when the model runs in PyTorch, `sgpu.cache_update` (the cache
buffer becomes program state) and `sgpu.attention` with positions once
imported through torch.fx. docs/models.md shows a decoder written with them.
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


def cache_write(cache, new, positions):
    """Writes `new` (B x H x S x D) into `cache` (Bmax x H x T x D, B <= Bmax)
    in place: token s of sequence b goes to row positions[b, s] of cache row
    b. A position outside [0, T) (padding: -1) writes nothing. Returns the
    cache, which the attention over the cache should read."""
    import torch
    if new.shape[0] > cache.shape[0]:
        raise ValueError("cache_write: %d sequences do not fit a cache of %d" % (new.shape[0], cache.shape[0]))
    if cache.is_meta or new.is_meta or positions.is_meta:
        return cache  # shapes only (tracing): the scatter's size depends on data
    b, h, s, d = new.shape
    pos = positions.long()
    rows = torch.arange(b, device=pos.device)[:, None].expand(b, s)
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)()
    with torch.no_grad():
        if pos.is_cuda and (torch.cuda.is_current_stream_capturing() or compiling):
            # A CUDA graph cannot select by data: under capture every
            # position must be valid (a decode step of running sequences).
            # torch.compile takes the same form, so that its graph has no
            # data-dependent shape (a host sync) and can be captured.
            cache[rows, :, pos] = new.permute(0, 2, 1, 3).to(cache.dtype)
            return cache
        valid = (pos >= 0) & (pos < cache.shape[2])
        cache[rows[valid], :, pos[valid]] = new.permute(0, 2, 1, 3)[valid].to(cache.dtype)
    return cache


def cached_attention(q, k_cache, v_cache, positions, scale=None):
    """Causal attention of q (B x H x S x D) over the first B rows of a KV
    cache (Bmax x Hkv x T x D, H a multiple of Hkv): query s of sequence b
    sees the keys 0..positions[b, s]; a negative position (padding) gives
    zeros. Softmax in f32."""
    import torch
    import torch.nn.functional as F
    b, h, s, d = q.shape
    k, v = k_cache[:b], v_cache[:b]
    keep = torch.arange(k.shape[2], device=q.device)[None, None, :] <= positions.to(q.device).long()[:, :, None]
    if q.is_cuda and tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5):
        # torch's fused attention with the mask over the whole cache.
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None], scale=scale,
                                             enable_gqa=h != k.shape[1])
        return out.nan_to_num(0.0)
    rep = h // k.shape[1]
    if rep > 1:  # expand + reshape: also on the meta device (tracing)
        k = k[:, :, None].expand(b, k.shape[1], rep, k.shape[2], d).reshape(b, h, k.shape[2], d)
        v = v[:, :, None].expand(b, v.shape[1], rep, v.shape[2], v.shape[3]).reshape(b, h, v.shape[2], v.shape[3])
    scale = d ** -0.5 if scale is None else scale
    scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
    scores = scores.masked_fill(~keep[:, None], float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.matmul(probs, v.float()).to(q.dtype)


try:  # the cache markers are leaves of torch.fx traces too
    import torch.fx

    torch.fx.wrap("cache_write")
    torch.fx.wrap("cached_attention")
except Exception:  # pragma: no cover - torch missing or too old
    pass
