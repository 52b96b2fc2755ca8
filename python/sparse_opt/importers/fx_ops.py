"""Per-op handlers of the torch.fx importer.

The handler of each kind (registered in fx_registry.HANDLERS) emits the op
that a classified FX call (fx_forms.classify: a `Call` of a kind and its
bound arguments) computes, through the importer context (`ctx`, an
`FxImporter`). The pattern matchers (fx_patterns.py) read the same calls.
The handlers are registered here, the KV-cache handlers in fx_cache.py;
the forms of each kind are fx_forms.py's and fx_aten.py's.
"""
from __future__ import annotations

import math
import operator

import torch
import torch.fx

from . import fx_cache  # noqa: F401 (fx_cache registers its handlers)
from .fx_forms import MLIR_TO_TORCH, FoldedTranspose, mlir_dtype
from .fx_registry import register_handlers
from .fx_call import Call, NoValue
from .fx_masks import is_causal_mask
from .emitter import FLOAT_TYPES, ImportError_, Value, promote


# ----------------------------------------------------------------- helpers
def _norm_dim(d, rank):
    d = int(d)
    if not -max(rank, 1) <= d < max(rank, 1):
        raise ImportError_("dimension %d out of range for rank %d" % (d, rank))
    return d % rank if rank else 0


def _dims(dim, rank):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(rank))
    if isinstance(dim, (list, tuple)):
        return sorted({_norm_dim(d, rank) for d in dim})
    return [_norm_dim(dim, rank)]


def cast_to(ctx, x: Value, dt: str) -> Value:
    return x if x.dtype == dt else ctx.e.unary("cast", x, ctx.loc, out_dtype=dt)


def _is_scalar(x):
    return isinstance(x, (int, float, bool)) and not isinstance(x, Value)


def i1_constant(ctx, b) -> Value:
    """A boolean scalar as a rank-0 splat: the emitter renders an i1 scalar in a
    body as `arith.constant false : i1`, which MLIR does not parse."""
    return ctx.e.splat(bool(b), (), "i1", ctx.loc)


def _scalar_operands(ctx, x, y):
    """torch's promotion of an integer tensor with a float scalar (-> f32) and a
    bool tensor with an int scalar (-> i64); the emitter promotes tensors only."""
    def fix(t, s):
        if isinstance(t, Value) and _is_scalar(s):
            if isinstance(s, float) and t.dtype not in FLOAT_TYPES:
                return cast_to(ctx, t, "f32")
            if isinstance(s, int) and not isinstance(s, bool) and t.dtype == "i1":
                return cast_to(ctx, t, "i64")
        return t
    x, y = fix(x, y), fix(y, x)
    if isinstance(x, Value) and x.dtype == "i1" and isinstance(y, bool):
        y = i1_constant(ctx, y)
    if isinstance(y, Value) and y.dtype == "i1" and isinstance(x, bool):
        x = i1_constant(ctx, x)
    return x, y


def _binary(kind):
    def h(ctx, c):
        x, y = ctx.operand(c.args["input"]), ctx.operand(c.args["other"])
        if kind in ("add", "sub") and c.args.get("alpha", 1) != 1:
            y = ctx.e.binary("mul", y, c.args["alpha"], ctx.loc) if isinstance(y, Value) else y * c.args["alpha"]
        if kind == "div" and c.args.get("rounding_mode") is not None:
            raise ImportError_("div with rounding_mode=%r is not supported" % c.args["rounding_mode"])
        x, y = _scalar_operands(ctx, x, y)
        return ctx.e.binary(kind, x, y, ctx.loc)
    return h


def _float_unary(kind):
    def h(ctx, c):
        y = _float_unary_value(ctx, c, kind)
        if c.args.get("inplace"):
            _write_in_place(ctx, c, y)
        return y
    return h


def _float_unary_value(ctx, c, kind):
    x = ctx.value(c.args["input"])
    if x.dtype not in FLOAT_TYPES and kind not in ("relu", "abs"):
        x = cast_to(ctx, x, "f32")
    if kind == "gelu":
        approx = c.args.get("approximate", "none")
        if approx not in ("none", "tanh"):
            raise ImportError_("gelu approximate=%r is not supported" % approx)
        return ctx.e.unary("gelu" if approx == "none" else "gelu_tanh", x, ctx.loc)
    return ctx.e.unary(kind, x, ctx.loc)


# Ops whose result shares the input's memory in torch: an in-place op on one
# would change the tensor it views too.
_VIEW_KINDS = ("reshape", "transpose", "permute", "t", "expand", "getitem")


def _write_in_place(ctx, c, result):
    """An in-place op (`inplace=True`, `relu_()`): the nodes after it that
    read its input read `result` (the graph is emitted in program order),
    so a result the model discards still takes effect, as in eager torch."""
    src = c.args["input"]
    if not isinstance(src, torch.fx.Node):
        return
    view = ctx.call(src) if src.op in ("call_function", "call_method", "call_module") else None
    if view is not None and view.kind in _VIEW_KINDS:
        raise ImportError_("in-place op on a view (%s of another tensor) would change the viewed tensor too, "
                           "which the importer does not follow: write the result to a new name (y = F.relu(y))"
                           % view.kind)
    ctx.env[src] = result


def _neg(ctx, c):
    x = ctx.value(c.args["input"])
    return ctx.e.unary("neg", x, ctx.loc) if x.dtype in FLOAT_TYPES else ctx.e.binary("mul", x, -1, ctx.loc)


def _pow(ctx, c):
    x, y = ctx.operand(c.args["input"]), ctx.operand(c.args["exponent"])
    if isinstance(x, Value) and _is_scalar(y) and float(y) == 2.0:
        return ctx.e.binary("mul", x, x, ctx.loc)
    if isinstance(x, Value) and x.dtype not in FLOAT_TYPES:
        x = cast_to(ctx, x, "f32")
    return ctx.e.binary("pow", x, y, ctx.loc)


def _square(ctx, c):
    x = ctx.value(c.args["input"])
    return ctx.e.binary("mul", x, x, ctx.loc)


def _maxmin(kind):
    def h(ctx, c):
        x, y = _scalar_operands(ctx, ctx.operand(c.args["input"]), ctx.operand(c.args["other"]))
        return ctx.e.binary(kind, x, y, ctx.loc)
    return h


def _clamp(ctx, c):
    x = ctx.value(c.args["input"])
    lo, hi = ctx.operand(c.args["min"]), ctx.operand(c.args["max"])
    if lo is not None:
        x = ctx.e.binary("max", *_scalar_operands(ctx, x, lo), ctx.loc)
    if hi is not None:
        x = ctx.e.binary("min", *_scalar_operands(ctx, x, hi), ctx.loc)
    return x


def _softmax(ctx, c):
    x = ctx.value(c.args["input"])
    if c.args["dim"] is None:
        raise ImportError_("softmax without dim (implicit dim) is not supported")
    if c.args.get("dtype") is not None:
        x = cast_to(ctx, x, mlir_dtype(ctx.operand(c.args["dtype"])))
    return ctx.e.softmax(x, _norm_dim(c.args["dim"], x.rank), ctx.loc)


def _masked_fill(ctx, c):
    x, mask, v = ctx.value(c.args["input"]), ctx.value(c.args["mask"]), ctx.operand(c.args["value"])
    if mask.dtype != "i1":
        raise ImportError_("masked_fill needs a boolean mask, got %s" % mask.dtype)
    if isinstance(v, Value) and v.dtype != x.dtype:
        v = cast_to(ctx, v, x.dtype)
    return ctx.e.masked_fill(x, mask, v, ctx.loc)


def _bool(ctx, x):
    x = ctx.operand(x)
    if isinstance(x, Value) and x.dtype != "i1":
        return ctx.e.compare("ne", x, 0, ctx.loc)
    return x


def _where(ctx, c):
    cond = _bool(ctx, c.args["condition"])
    a, b = ctx.operand(c.args["input"]), ctx.operand(c.args["other"])
    vals = [v for v in (a, b) if isinstance(v, Value)]
    if all(v.dtype == "i1" for v in vals) and any(isinstance(v, bool) for v in (a, b)):
        a, b = (i1_constant(ctx, v) if isinstance(v, bool) else v for v in (a, b))
        vals = [a, b]
    if len(vals) == 2 and a.dtype != b.dtype:
        dt = promote(a.dtype, b.dtype)
        a, b = cast_to(ctx, a, dt), cast_to(ctx, b, dt)
    return ctx.e.where(cond, a, b, ctx.loc)


def _compare(kind):
    def h(ctx, c):
        x, y = _scalar_operands(ctx, ctx.operand(c.args["input"]), ctx.operand(c.args["other"]))
        return ctx.e.compare(kind, x, y, ctx.loc)
    return h


def _logical_not(ctx, c):
    x = ctx.value(c.args["input"])
    if x.dtype != "i1" and (c.extra.get("bitwise") or ctx.node.target in ("bitwise_not", operator.invert) or
                            ctx.node.target is getattr(torch, "bitwise_not", None)):
        raise ImportError_("bitwise not of a %s tensor is not supported" % x.dtype)
    return ctx.e.compare("eq", x, i1_constant(ctx, False) if x.dtype == "i1" else 0, ctx.loc)


def _logical(kind):
    def h(ctx, c):
        a, b = _bool(ctx, c.args["input"]), _bool(ctx, c.args["other"])
        if not isinstance(a, Value):
            a, b = b, a
        if not isinstance(b, Value):
            b = i1_constant(ctx, b)
        if kind == "and":
            return ctx.e.where(a, b, i1_constant(ctx, False), ctx.loc)
        return ctx.e.where(a, i1_constant(ctx, True), b, ctx.loc)
    return h


def _reduce(kind):
    def h(ctx, c):
        x = ctx.value(c.args["input"])
        if c.args.get("dtype") is not None:
            x = cast_to(ctx, x, mlir_dtype(ctx.operand(c.args["dtype"])))
        if kind == "mean" and x.dtype not in FLOAT_TYPES:
            raise ImportError_("mean of an integer tensor (%s)" % x.dtype)
        dims = _dims(ctx.operand(c.args["dim"]), x.rank)
        return ctx.e.reduce(kind, x, dims, bool(c.args["keepdim"]), ctx.loc)
    return h


def _any(ctx, c):
    """any over dims: max of (x != 0) as i32, != 0."""
    x = ctx.value(c.args["input"])
    b = x if x.dtype == "i1" else ctx.e.compare("ne", x, 0, ctx.loc)
    dims = _dims(ctx.operand(c.args["dim"]), x.rank)
    r = ctx.e.reduce("max", cast_to(ctx, b, "i32"), dims, bool(ctx.operand(c.args["keepdim"])), ctx.loc)
    return ctx.e.compare("ne", r, 0, ctx.loc)


def _amin_all(ctx, c):
    x = ctx.value(c.args["input"])
    neg = ctx.e.unary("neg", x, ctx.loc)
    return ctx.e.unary("neg", ctx.e.reduce("max", neg, list(range(x.rank)), False, ctx.loc), ctx.loc)


def _matmul(ctx, c):
    a = ctx.value(c.args["input"])
    b = ctx.operand(c.args["other"], allow_folded=True)
    if isinstance(b, FoldedTranspose):
        # x @ w.t() with a 2-D w is a linear layer: w may carry an N:M encoding.
        w = ctx.value(b.base, sparse_ok=True)
        if ctx.is_sparse(w) and w.rank != 2:
            ctx.value(b.base)  # raises the annotation error
        return ctx.e.matmul(a, w, transpose_b=True, loc=ctx.loc)
    return ctx.e.matmul(a, ctx.value(b), loc=ctx.loc)


def _addmm(ctx, c):
    """bias * beta + (input @ other) * alpha (aten.addmm: a linear layer once decomposed)."""
    y = _matmul(ctx, c)
    alpha, beta = ctx.operand(c.args["alpha"]), ctx.operand(c.args["beta"])
    if alpha != 1:
        y = ctx.e.binary("mul", y, alpha, ctx.loc)
    if beta == 0:
        return y
    b = ctx.operand(c.args["bias"])
    if beta != 1:
        b = ctx.e.binary("mul", b, beta, ctx.loc) if isinstance(b, Value) else b * beta
    if isinstance(b, Value) and b.dtype != y.dtype:
        b = cast_to(ctx, b, y.dtype)
    return ctx.e.binary("add", y, b, ctx.loc)


def _linear(ctx, c):
    x = ctx.value(c.args["input"])
    w = ctx.value(c.args["weight"], sparse_ok=True)
    b = ctx.operand(c.args["bias"])
    if isinstance(b, Value) and b.dtype != x.dtype:
        b = cast_to(ctx, b, x.dtype)
    if w.dtype != x.dtype and not ctx.is_sparse(w):
        w = cast_to(ctx, w, x.dtype)
    return ctx.e.linear(x, w, b, ctx.loc)


def _transpose(ctx, c):
    x = ctx.value(c.args["input"])
    perm = list(range(x.rank))
    if x.rank == 0:
        return x
    d0, d1 = _norm_dim(c.args["dim0"], x.rank), _norm_dim(c.args["dim1"], x.rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.e.transpose(x, perm, ctx.loc)


def _permute(ctx, c):
    x = ctx.value(c.args["input"])
    return ctx.e.transpose(x, [_norm_dim(d, x.rank) for d in ctx.operand(c.args["dims"])], ctx.loc)


def _t_op(ctx, c):
    x = ctx.value(c.args["input"])
    return x if x.rank < 2 else ctx.e.transpose(x, [1, 0], ctx.loc)


def _reverse(ctx, c):
    x = ctx.value(c.args["input"])
    return ctx.e.transpose(x, list(reversed(range(x.rank))), ctx.loc)


def _reshape(ctx, c):
    x = ctx.value(c.args["input"])
    for v in c.args.get("shape", ()) or ():
        if isinstance(v, torch.dtype) or isinstance(ctx.operand(v), torch.dtype):
            raise ImportError_("view(dtype) (a bitcast) is not supported")
    return ctx.e.reshape(x, ctx.out_shape(), ctx.loc)


def _expand(ctx, c):
    x = ctx.value(c.args["input"])
    shape = tuple(ctx.out_shape())
    if shape == x.shape:
        return x
    return ctx.e.broadcast(x, shape, ctx.loc)


def _repeat_interleave(ctx, c):
    """repeat_interleave(x, r, dim): each slice of `dim` repeated r times in
    place (numpy.repeat), i.e. x unsqueezed after `dim`, broadcast to r
    there and the two dims collapsed; without dim, of the flattened x."""
    x = ctx.value(c.args["input"])
    reps, dim = ctx.operand(c.args["repeats"]), ctx.operand(c.args["dim"])
    if isinstance(reps, (list, tuple)) and len(reps) == 1:
        reps = reps[0]
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 0:
        raise ImportError_("repeat_interleave with repeats %r: only one int count is supported" % (reps,))
    if dim is None:
        x, dim = ctx.e.reshape(x, (x.type.numel(),), ctx.loc), 0
    dim = _norm_dim(dim, x.rank)
    if reps == 1:
        return x
    one = ctx.e.reshape(x, x.shape[:dim + 1] + (1,) + x.shape[dim + 1:], ctx.loc)
    wide = ctx.e.broadcast(one, x.shape[:dim + 1] + (reps,) + x.shape[dim + 1:], ctx.loc, "repeat")
    return ctx.e.reshape(wide, x.shape[:dim] + (x.shape[dim] * reps,) + x.shape[dim + 1:], ctx.loc)


def _repeat(ctx, c):
    """x.repeat(r0, ..., rn) (np.tile): x (leading unit dims added up to n+1
    dims) as (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...) and
    reshaped to (r0 * d0, r1 * d1, ...)."""
    x = ctx.value(c.args["input"])
    reps = [ctx.operand(r) for r in c.args["sizes"]]
    if any(not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in reps) or len(reps) < x.rank:
        raise ImportError_("repeat %s of a rank-%d tensor: one int count per dimension is supported"
                           % (reps, x.rank))
    dims = (1,) * (len(reps) - x.rank) + x.shape
    if all(r == 1 for r in reps):
        return ctx.e.reshape(x, dims, ctx.loc)
    inner = ctx.e.reshape(x, tuple(v for d in dims for v in (1, d)), ctx.loc)
    wide = ctx.e.broadcast(inner, tuple(v for r, d in zip(reps, dims) for v in (r, d)), ctx.loc, "repeat")
    return ctx.e.reshape(wide, tuple(r * d for r, d in zip(reps, dims)), ctx.loc)


def _slice(ctx, c):
    """aten.slice.Tensor: x[start:end:step] along dim."""
    x = ctx.value(c.args["input"])
    dim = _norm_dim(ctx.operand(c.args["dim"]), x.rank)
    size = x.shape[dim]
    start, end, step = (ctx.operand(c.args[k]) for k in ("start", "end", "step"))
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    step = 1 if step is None else int(step)
    if step <= 0:
        raise ImportError_("slice step %d is not supported" % step)
    return ctx.e.slice(x, dim, start, min(end, size) if end >= 0 else end, step, ctx.loc)


def _select(ctx, c):
    """aten.select.int: x[..., index, ...] (the dim dropped)."""
    x = ctx.value(c.args["input"])
    dim = _norm_dim(ctx.operand(c.args["dim"]), x.rank)
    size = x.shape[dim]
    i = int(ctx.operand(c.args["index"]))
    i = i + size if i < 0 else i
    if not 0 <= i < size:
        raise ImportError_("index %d out of range for dimension %d of size %d" % (i, dim, size))
    x1 = ctx.e.slice(x, dim, i, i + 1, 1, ctx.loc)
    return ctx.e.reshape(x1, x.shape[:dim] + x.shape[dim + 1:], ctx.loc)


def _noop(ctx, c):
    return None


def _identity(ctx, c):
    return ctx.value(c.args["input"])


def _dropout(ctx, c):
    p = ctx.operand(c.args["p"])
    training = ctx.operand(c.args.get("training", c.args.get("train")))
    if training and p:
        raise ImportError_("dropout in training mode (p=%s): call model.eval() before importing" % p)
    return ctx.value(c.args["input"])


def _cast_op(ctx, c):
    x = ctx.value(c.args["input"])
    dt = None
    for t in tuple(c.args.get("targets", ())) + (c.args.get("dtype"),):
        t = ctx.operand(t)
        if isinstance(t, torch.dtype):
            dt = t
        elif isinstance(t, Value):
            dt = MLIR_TO_TORCH[t.dtype]
        elif isinstance(t, str) and t.startswith("torch.") and "Tensor" in t:
            raise ImportError_("type(%r) is not supported; use .to(dtype)" % t)
    if dt is None:
        return x
    return cast_to(ctx, x, mlir_dtype(dt))


def _promote_all(ctx, xs):
    dt = promote(*[x.dtype for x in xs])
    return [cast_to(ctx, x, dt) for x in xs]


def _cat(ctx, c):
    xs = [ctx.value(t) for t in ctx.operand(c.args["tensors"])]
    xs = [x for x in xs if not (x.rank == 1 and x.shape[0] == 0)]  # torch skips empty 1-D tensors
    xs = _promote_all(ctx, xs)
    if len(xs) == 1:
        return xs[0]
    return ctx.e.concat(xs, _norm_dim(c.args["dim"], xs[0].rank), ctx.loc)


def _stack(ctx, c):
    xs = _promote_all(ctx, [ctx.value(t) for t in ctx.operand(c.args["tensors"])])
    dim = _norm_dim(ctx.operand(c.args["dim"]), xs[0].rank + 1)
    xs = [ctx.e.reshape(x, x.shape[:dim] + (1,) + x.shape[dim:], ctx.loc) for x in xs]
    return xs[0] if len(xs) == 1 else ctx.e.concat(xs, dim, ctx.loc)


def _split(ctx, c):
    x = ctx.value(c.args["input"])
    dim = _norm_dim(ctx.operand(c.args["dim"]), x.rank)
    size = x.shape[dim]
    spec = ctx.operand(c.args.get("split_size_or_sections", c.args.get("split_size")))
    if isinstance(spec, int):
        sizes = [min(spec, size - s) for s in range(0, size, spec)] if spec > 0 else [size]
    else:
        sizes = [int(s) for s in spec]
        if sum(sizes) != size:
            raise ImportError_("split sizes %s do not sum to %d" % (sizes, size))
    return ctx.e.split(x, sizes, dim, ctx.loc)


def _chunk(ctx, c):
    x = ctx.value(c.args["input"])
    dim = _norm_dim(ctx.operand(c.args["dim"]), x.rank)
    size = x.shape[dim]
    step = -(-size // int(ctx.operand(c.args["chunks"])))
    sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
    return ctx.e.split(x, sizes, dim, ctx.loc)


def _unbind(ctx, c):
    x = ctx.value(c.args["input"])
    dim = _norm_dim(ctx.operand(c.args["dim"]), x.rank)
    parts = ctx.e.split(x, [1] * x.shape[dim], dim, ctx.loc)
    return tuple(ctx.e.reshape(p, x.shape[:dim] + x.shape[dim + 1:], ctx.loc) for p in parts)


def _getitem(ctx, c):
    base = ctx.operand(c.args["input"])
    index = ctx.operand(c.args["index"])
    if isinstance(base, (list, tuple)):
        r = base[index]
        if isinstance(r, NoValue):
            raise ImportError_("result %s of %s is not supported (only its first result is)" % (index, r.what))
        return r
    if not isinstance(base, Value):
        raise ImportError_("indexing a %s" % type(base).__name__)
    pos = fx_cache.gathered_causal_positions(ctx, ctx.node, "keep") if ctx.node is not None else None
    if pos is not None:
        return fx_cache.GatheredCausal(pos)
    return _index_tensor(ctx, base, index)


def _index_tensor(ctx, x: Value, index):
    if isinstance(index, Value) and x.rank == 2 and index.dtype in ("i32", "i64"):
        # table[ids]: rows of a 2-D table (RoPE tables picked by position).
        return ctx.e.embedding(x, index, ctx.loc)
    items = list(index) if isinstance(index, tuple) else [index]
    for it in items:
        if isinstance(it, (Value, list, torch.Tensor)) or (isinstance(it, bool)):
            raise ImportError_("advanced (tensor or list) indexing is not supported")
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consumed > x.rank:
        raise ImportError_("too many indices (%d) for a rank-%d tensor" % (consumed, x.rank))
    if any(it is Ellipsis for it in items):
        i = next(j for j, it in enumerate(items) if it is Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.rank - consumed)
    while sum(1 for it in items if it is not None) < x.rank:
        items.append(slice(None))
    out_shape, d = [], 0
    for it in items:
        if it is None:
            out_shape.append(1)
            continue
        size = x.shape[d]
        if isinstance(it, int):
            i = it + size if it < 0 else it
            if not 0 <= i < size:
                raise ImportError_("index %d out of range for dimension %d of size %d" % (it, d, size))
            x = ctx.e.slice(x, d, i, i + 1, 1, ctx.loc)
        elif isinstance(it, slice):
            step = 1 if it.step is None else int(it.step)
            if step <= 0:
                raise ImportError_("slice step %d is not supported" % step)
            start = 0 if it.start is None else int(it.start)
            stop = size if it.stop is None else int(it.stop)
            x = ctx.e.slice(x, d, start, min(stop, size) if stop >= 0 else stop, step, ctx.loc)
            out_shape.append(x.shape[d])
        else:
            raise ImportError_("index %r is not supported" % (it,))
        d += 1
    return ctx.e.reshape(x, tuple(out_shape), ctx.loc)


def _getattr(ctx, c):
    x = ctx.value(c.args["input"])
    name = c.args["name"]
    if name == "dtype":
        return MLIR_TO_TORCH[x.dtype]
    if name == "device":
        return torch.device("cpu")
    if name == "shape":
        return torch.Size(x.shape)
    if name == "ndim":
        return x.rank
    if name == "is_cuda":
        return False
    raise ImportError_("attribute %s of a tensor" % name)


def _embedding(ctx, c):
    if c.args.get("max_norm") is not None:
        raise ImportError_("embedding with max_norm (renormalizing the table) is not supported")
    ids, table = ctx.value(c.args["input"]), ctx.value(c.args["weight"])
    if ids.dtype in FLOAT_TYPES or ids.dtype == "i1":
        raise ImportError_("embedding ids must be integers, got %s" % ids.dtype)
    return ctx.e.embedding(table, ids, ctx.loc)


def _feature_param(ctx, ref, x, fill):
    d = x.shape[-1]
    if ref is None:
        return ctx.e.splat(fill, (d,), x.dtype, ctx.loc)
    w = ctx.value(ref)
    return cast_to(ctx, w, x.dtype)


def _check_last_dim(x, shape, what):
    shape = tuple(shape) if isinstance(shape, (list, tuple, torch.Size)) else (shape,)
    if len(shape) != 1 or x.rank < 1 or shape[0] != x.shape[-1]:
        raise ImportError_("%s over normalized_shape %s of an input %s: only the last dimension is supported"
                           % (what, list(shape), list(x.shape)))


def _layer_norm(ctx, c):
    x = ctx.value(c.args["input"])
    _check_last_dim(x, ctx.operand(c.args["normalized_shape"]), "layer_norm")
    w = _feature_param(ctx, c.args["weight"], x, 1.0)
    b = _feature_param(ctx, c.args["bias"], x, 0.0)
    return ctx.e.layer_norm(x, w, b, float(ctx.operand(c.args["eps"])), ctx.loc)


def _rms_norm(ctx, c):
    x = ctx.value(c.args["input"])
    _check_last_dim(x, ctx.operand(c.args["normalized_shape"]), "rms_norm")
    eps = ctx.operand(c.args["eps"])
    if eps is None:
        eps = torch.finfo(MLIR_TO_TORCH[x.dtype]).eps
    w = _feature_param(ctx, c.args["weight"], x, 1.0)
    return ctx.e.rms_norm(x, w, float(eps), ctx.loc)


def causal_mask(sq, sk) -> torch.Tensor:
    """torch's is_causal (top-left aligned) as a keep-mask: tril(ones(sq, sk))."""
    return torch.ones(sq, sk, dtype=torch.bool).tril()


def attention(ctx, q: Value, k: Value, v: Value, mask=None, causal=False, scale=None, top_left=False):
    """sgpu.attention on 4-D q/k/v (3-D ones get a head dim of 1). `top_left`:
    `causal` is torch's is_causal, aligned to the top-left corner."""
    dts = {q.dtype, k.dtype, v.dtype}
    if len(dts) > 1:
        q, k, v = _promote_all(ctx, [q, k, v])
    squeeze = False
    if q.rank == 3 and k.rank == 3 and v.rank == 3:
        q, k, v = (ctx.e.reshape(t, (t.shape[0], 1) + t.shape[1:], ctx.loc) for t in (q, k, v))
        if isinstance(mask, Value) and mask.rank == 3:
            mask = ctx.e.reshape(mask, (mask.shape[0], 1) + mask.shape[1:], ctx.loc)
        squeeze = True
    if q.rank != 4 or k.rank != 4 or v.rank != 4:
        raise ImportError_("attention needs B x H x S x D query/key/value, got %s, %s, %s"
                           % (list(q.shape), list(k.shape), list(v.shape)))
    if causal and top_left and q.shape[2] != k.shape[2]:
        # torch aligns is_causal to the top-left; sgpu's causal to the end.
        keep = causal_mask(q.shape[2], k.shape[2])
        mask = ctx.constant_tensor(keep, "causal_mask")
        causal = False
    if isinstance(mask, Value) and mask.dtype != "i1" and mask.dtype not in (q.dtype, "f32"):
        mask = cast_to(ctx, mask, q.dtype)
    out = ctx.e.attention(q, k, v, mask, causal, scale, ctx.loc)
    return ctx.e.reshape(out, (out.shape[0],) + out.shape[2:], ctx.loc) if squeeze else out


def _sdpa(ctx, c):
    pos = fx_cache.gathered_causal_positions(ctx, c.args["attn_mask"], "keep")
    if pos is not None:
        # causal_mask[None, None, positions] over a cache: each query sees
        # the keys up to its position.
        if ctx.operand(c.args["dropout_p"]) or ctx.operand(c.args["is_causal"]):
            raise ImportError_("scaled_dot_product_attention over a cache with dropout or is_causal")
        scale = ctx.operand(c.args["scale"])
        q, k, v = ctx.value(c.args["query"]), ctx.value(c.args["key"]), ctx.value(c.args["value"])
        return fx_cache.attend_cache(ctx, q, k, v, None if scale is None else float(scale), pos)
    a = {k: ctx.operand(v) for k, v in c.args.items()}
    if a["dropout_p"]:
        raise ImportError_("scaled_dot_product_attention with dropout_p=%s" % a["dropout_p"])
    q, k, v = ctx.value(c.args["query"]), ctx.value(c.args["key"]), ctx.value(c.args["value"])
    mask = a["attn_mask"]
    if mask is not None and not isinstance(mask, Value):
        raise ImportError_("attn_mask must be a tensor")
    if a["is_causal"] and mask is not None:
        raise ImportError_("scaled_dot_product_attention with both attn_mask and is_causal")
    if a["enable_gqa"] is False and q.rank == 4 and k.rank == 4 and q.shape[1] != k.shape[1]:
        raise ImportError_("query heads %d != key heads %d without enable_gqa" % (q.shape[1], k.shape[1]))
    causal = bool(a["is_causal"])
    if isinstance(mask, Value) and q.rank == 4 and k.rank == 4:
        known = ctx.known_data(c.args["attn_mask"], "to tell whether the attention mask is causal")
        if is_causal_mask(known, q.shape[2], k.shape[2], "keep" if mask.dtype == "i1" else "add"):
            # A mask that is the causal one, aligned to the end as sgpu's causal is.
            return attention(ctx, q, k, v, None, True, None if a["scale"] is None else float(a["scale"]))
    return attention(ctx, q, k, v, mask, causal, None if a["scale"] is None else float(a["scale"]), top_left=True)


def _all_reduce(ctx, c):
    return ctx.e.all_reduce(ctx.value(c.args["input"]), ctx.loc)


def _like(fill):
    def h(ctx, c):
        x = ctx.value(c.args["input"])
        dt = ctx.operand(c.args.get("dtype"))
        dt = mlir_dtype(dt) if dt is not None else x.dtype
        value = ctx.operand(c.args["fill_value"]) if fill is None else fill
        return ctx.e.splat(value, x.shape, dt, ctx.loc)
    return h


register_handlers({
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"), "div": _binary("div"),
    "pow": _pow, "square": _square, "maximum": _maxmin("max"), "minimum": _maxmin("min"), "clamp": _clamp,
    "neg": _neg, "rsqrt": _float_unary("rsqrt"), "sqrt": _float_unary("sqrt"), "exp": _float_unary("exp"),
    "tanh": _float_unary("tanh"), "sigmoid": _float_unary("sigmoid"), "abs": _float_unary("abs"),
    "relu": _float_unary("relu"), "silu": _float_unary("silu"), "gelu": _float_unary("gelu"),
    "softmax": _softmax, "masked_fill": _masked_fill, "where": _where,
    "lt": _compare("lt"), "le": _compare("le"), "gt": _compare("gt"), "ge": _compare("ge"),
    "eq": _compare("eq"), "ne": _compare("ne"),
    "logical_not": _logical_not, "logical_and": _logical("and"), "logical_or": _logical("or"),
    "sum": _reduce("sum"), "mean": _reduce("mean"), "amax": _reduce("max"), "amin_all": _amin_all, "any": _any,
    "matmul": _matmul, "addmm": _addmm, "linear": _linear, "slice": _slice, "select": _select, "noop": _noop,
    "transpose": _transpose, "permute": _permute, "t": _t_op, "reverse": _reverse,
    "reshape": _reshape, "expand": _expand, "repeat": _repeat, "repeat_interleave": _repeat_interleave,
    "identity": _identity, "dropout": _dropout, "cast": _cast_op,
    "cat": _cat, "stack": _stack, "split": _split, "chunk": _chunk, "unbind": _unbind,
    "getitem": _getitem, "getattr": _getattr, "embedding": _embedding,
    "layer_norm": _layer_norm, "rms_norm": _rms_norm, "sdpa": _sdpa, "all_reduce": _all_reduce,
    "zeros_like": _like(0), "ones_like": _like(1), "full_like": _like(None),
})

# Kinds whose operands may include an N:M-annotated weight (as the linear's weight).
SPARSE_WEIGHT_KINDS = ("linear", "matmul", "addmm")


def transposes_last_two(call: Call, rank: int) -> bool:
    """Whether `call` (transpose / permute / t / mT) only swaps the last two dims."""
    if rank < 2:
        return False
    if call.kind == "t":
        return rank == 2
    if call.kind == "transpose":
        try:
            d = {_norm_dim(call.args["dim0"], rank), _norm_dim(call.args["dim1"], rank)}
        except (ImportError_, TypeError, ValueError):
            return False
        return d == {rank - 2, rank - 1}
    if call.kind == "permute":
        dims = call.args["dims"]
        if any(not isinstance(d, int) for d in dims) or len(dims) != rank:
            return False
        return [d % rank for d in dims] == list(range(rank - 2)) + [rank - 1, rank - 2]
    if call.kind == "reverse":
        return rank == 2
    return False


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def neg_inf_like(x) -> bool:
    """A fill value that masks a score: -inf or at most f16's lowest."""
    return is_number(x) and (x == -math.inf or x <= -65504.0)
