"""KV caches in the torch.fx importer: the handlers that turn a model's cache
writes into `sgpu.cache_update` on state params and its attention over the
cache into `sgpu.attention` with positions.

Three ways a model writes its cache, all into a buffer of the model (which
becomes a param marked `sgpu.state`):
- the marker `sparse_opt.markers.cache_write(cache, new, positions)`;
- `cache.index_copy_(2, positions, new)` (Hugging Face's StaticCache);
- `cache[:, :, positions] = new` (gpt-fast).
And two ways it attends over it: the marker `cached_attention`, or an
attention whose mask is `causal_table[None, None, positions]` (a known
lower-triangular boolean buffer gathered by position), which the SDPA
handler and the attention pattern recognize with
`gathered_causal_positions`.

This module needs only the importer context (`ctx`), so fx_ops and
fx_patterns import it, not the other way round.
"""
from __future__ import annotations

import torch
from torch.fx import Node

from .emitter import ImportError_
from .fx_registry import register_handlers


class GatheredCausal:
    """Rows of a causal table picked by positions (`causal_mask[None, None,
    input_pos]`): not computed, only read as an attention's mask, which
    becomes attention over a cache with those positions."""

    def __init__(self, positions):
        self.positions = positions

    def __repr__(self):
        return ("a causal mask gathered by positions (supported only as the attn_mask of "
                "scaled_dot_product_attention over a KV cache)")


def index_items(index):
    """The items of an index expression without trailing `:` and `...`."""
    items = list(index) if isinstance(index, tuple) else [index]
    while items and items[-1] in (slice(None), Ellipsis):
        items.pop()
    return items


def gathered_causal_positions(imp, mask, kind):
    """The positions node when `mask` is rows of a known causal table picked
    by a 1-D integer tensor, `table[None, None, positions]` (gpt-fast's
    `causal_mask[None, None, input_pos]`): table `T x T` lower-triangular
    ones for a keep-mask ("keep"), or its complement for a fill mask
    ("fill"). Else None."""
    if not isinstance(mask, Node):
        return None
    mc = imp.call(mask)
    if mc is None or mc.kind != "getitem" or not isinstance(mc.args["input"], Node):
        return None
    items = index_items(mc.args["index"])
    if len(items) != 3 or items[0] is not None or items[1] is not None or not isinstance(items[2], Node):
        return None
    pos_shape = imp.shape(items[2])
    table = imp.known(mc.args["input"])
    if pos_shape is None or len(pos_shape) != 1 or not isinstance(table, torch.Tensor) or table.is_meta \
            or table.dtype != torch.bool or table.dim() != 2 or table.shape[0] != table.shape[1]:
        return None
    tril = torch.ones(table.shape, dtype=torch.bool).tril()
    if not torch.equal(table.cpu(), tril if kind == "keep" else ~tril):
        return None
    return items[2]


def attend_cache(ctx, q, k, v, scale, positions):
    """sgpu.attention over a cache: q, k, v Values, `positions` a node."""
    return ctx.e.attention(q, k, v, None, True, scale, ctx.loc, positions=_positions(ctx, positions, "attention"))


def _positions(ctx, arg, what, ranks=(1, 2)):
    pos = ctx.value(arg)
    if pos.dtype not in ("i32", "i64") or pos.rank not in ranks:
        raise ImportError_("%s: positions must be a %s integer tensor, got %s"
                           % (what, "1-D" if ranks == (1,) else "B x S (or S)", pos.type))
    return pos


def _write(ctx, cache, new, positions, what, ranks=(1, 2)):
    """The write of `new` into model buffer `cache` (a get_attr node) at
    `positions`: the buffer becomes a state param and later reads of it see
    the updated cache."""
    if getattr(cache, "op", None) != "get_attr":
        raise ImportError_("%s: only a buffer of the model (self.k_cache) can be written as a KV cache, "
                           "state the program keeps between runs" % what)
    new = ctx.value(new)
    pos = _positions(ctx, positions, what, ranks)
    return ctx.write_state(cache.target, lambda c: ctx.e.cache_update(c, new, pos, ctx.loc))


def _cache_write(ctx, c):
    """cache_write(self.<buffer>, new, positions)."""
    return _write(ctx, c.args["cache"], c.args["new"], c.args["positions"], "cache_write")


def _index_copy(ctx, c):
    """cache.index_copy_(2, positions, new) on a B x H x T x D buffer."""
    dim = ctx.operand(c.args["dim"])
    if dim not in (2, -2):
        raise ImportError_("index_copy_ into a cache along dim %s: only the position dimension (2 of "
                           "B x H x T x D) is supported" % dim)
    return _write(ctx, c.args["input"], c.args["source"], c.args["index"], "index_copy_", ranks=(1,))


def _setitem(ctx, c):
    """cache[:, :, positions] = new on a B x H x T x D buffer (setitem has no
    result)."""
    items = index_items(c.args["index"])
    if len(items) != 3 or items[0] != slice(None) or items[1] != slice(None) or not hasattr(items[2], "op"):
        raise ImportError_("item assignment into a buffer: only cache[:, :, positions] = new (a KV cache "
                           "written at 1-D positions) is supported")
    _write(ctx, c.args["input"], c.args["value"], items[2], "cache[:, :, positions] = new", ranks=(1,))
    return None


def _cached_attention(ctx, c):
    q = ctx.value(c.args["query"])
    kc, vc = ctx.value(c.args["key_cache"]), ctx.value(c.args["value_cache"])
    scale = ctx.operand(c.args["scale"])
    return attend_cache(ctx, q, kc, vc, None if scale is None else float(scale), c.args["positions"])


register_handlers({"cache_write": _cache_write, "cached_attention": _cached_attention,
                   "index_copy": _index_copy, "setitem": _setitem})
