"""ONNX node handlers: each maps one node (whose inputs are not all known at
import time) onto `Emitter` calls in the canonical forms of docs/input-ir.md.

A handler is `fn(imp, node, xs, at) -> [outputs]` where `imp` is the
`OnnxImporter`, `xs` the inputs (`Const`, `Value` or None) and `at` the
node's attributes.
"""
from __future__ import annotations

import numpy as np

from .emitter import FLOAT_TYPES, ImportError_, Value, broadcast_shapes
from .onnx_fold import (ONNX_TO_DTYPE, Const, axes_arg, flatten_shape, ints, is_param, reduce_axes,
                        reshape_target, slice_params, split_sizes, squeeze_shape, unsqueeze_shape)

# The all_reduce marker's ONNX domain (sparse_opt.markers.ONNX_DOMAIN; not
# imported from there because that module imports torch).
ONNX_DOMAIN = "ai.sparseopt"

def _name(imp, hint):
    """An SSA name for generic bodies built here: `%onnx.<hint><n>` (the
    emitter's names are `<hint>_<n>` or `<hint>.<n>`, digits after the
    separator; arguments have no '.')."""
    imp.body_names += 1
    return "%%onnx.%s%d" % (hint, imp.body_names)


def _const(x, what):
    if not isinstance(x, Const):
        raise ImportError_("%s must be known at import time" % what)
    return x


def _value(imp, x):
    return imp.tensor(x)


# ------------------------------------------------------------- element-wise
def _binary(kind):
    def run(imp, node, xs, at):
        a, b = xs
        va, vb = imp.operand(a, b), imp.operand(b, a)
        dts = [v.dtype for v in (va, vb) if isinstance(v, Value)]
        if kind == "div" and all(d not in FLOAT_TYPES for d in dts):
            return [_int_div(imp, va, vb, imp.loc(node))]
        return [imp.e.binary(kind, va, vb, imp.loc(node))]
    return run


def _int_div(imp, a, b, loc):
    """ONNX integer Div truncates (the emitter's div is true division)."""
    dt = [v.dtype for v in (a, b) if isinstance(v, Value)][0]

    def body(args, lines):
        r = _name(imp, "div")
        lines.append("%s = arith.divsi %s, %s : %s" % (r, args[0], args[1], dt))
        return r
    return imp.e.generic([a, b], dt, body, "div", loc)


def _math(op, hint):
    """A float element-wise op the emitter's `unary` lacks (math.erf, math.log)."""
    def run(imp, node, xs, at):
        x = _value(imp, xs[0])
        if x.dtype not in FLOAT_TYPES:
            raise ImportError_("%s needs a float tensor, got %s" % (node.op_type, x.dtype))

        def body(args, lines):
            r = _name(imp, hint)
            lines.append("%s = %s %s : %s" % (r, op, args[0], x.dtype))
            return r
        return [imp.e.generic([x], x.dtype, body, hint, imp.loc(node))]
    return run


def _unary(kind):
    def run(imp, node, xs, at):
        x = _value(imp, xs[0])
        if kind == "neg" and x.dtype not in FLOAT_TYPES:
            return [imp.e.binary("sub", 0, x, imp.loc(node))]
        return [imp.e.unary(kind, x, imp.loc(node))]
    return run


def _reciprocal(imp, node, xs, at):
    return [imp.e.binary("div", 1.0, _value(imp, xs[0]), imp.loc(node))]


def _gelu(imp, node, xs, at):
    approx = at.get("approximate", "none")
    return [imp.e.unary("gelu_tanh" if approx == "tanh" else "gelu", _value(imp, xs[0]), imp.loc(node))]


def _compare(kind):
    def run(imp, node, xs, at):
        a, b = xs
        return [imp.e.compare(kind, imp.operand(a, b), imp.operand(b, a), imp.loc(node))]
    return run


def logical_not(imp, x: Value, loc) -> Value:
    """Boolean negation (the emitter has no logical ops, and its i1 scalar
    literals do not parse: see compare(eq, x, False))."""
    def body(args, lines):
        r, t = _name(imp, "l"), _name(imp, "true")
        lines.append("%s = arith.constant true" % t)
        lines.append("%s = arith.xori %s, %s : i1" % (r, args[0], t))
        return r
    return imp.e.generic([x], "i1", body, "not", loc)


def _logical(op):
    """Not / And / Or / Xor on i1 tensors."""
    def run(imp, node, xs, at):
        vs = [_value(imp, x) for x in xs]
        if any(v.dtype != "i1" for v in vs):
            raise ImportError_("%s needs boolean tensors" % node.op_type)
        if op == "not":
            return [logical_not(imp, vs[0], imp.loc(node))]

        def body(args, lines):
            r = _name(imp, "l")
            lines.append("%s = arith.%s %s, %s : i1" % (r, op, args[0], args[1]))
            return r
        return [imp.e.generic(vs, "i1", body, op[:-1], imp.loc(node))]
    return run


def _where(imp, node, xs, at):
    cond, a, b = xs
    c = _value(imp, cond)
    if c.dtype != "i1":
        raise ImportError_("Where needs a boolean condition, got %s" % c.dtype)
    va, vb = imp.operand(a, c, b), imp.operand(b, c, a)
    if not isinstance(va, Value) and not isinstance(vb, Value):
        vb = imp.e.splat(vb, (), imp.fdt(b.dtype), imp.loc(node))
    return [imp.e.where(c, va, vb, imp.loc(node))]


def _minmax(kind):
    def run(imp, node, xs, at):
        vals = [x for x in xs if x is not None]
        acc = vals[0]
        for nxt in vals[1:]:
            acc = imp.e.binary(kind, imp.operand(acc, nxt), imp.operand(nxt, acc), imp.loc(node))
        return [_value(imp, acc)]
    return run


def _clip(imp, node, xs, at):
    x = _value(imp, xs[0])
    lo = xs[1] if len(xs) > 1 else None
    hi = xs[2] if len(xs) > 2 else None
    if lo is None and "min" in at:
        lo = Const(np.asarray(at["min"], np.float32), "f32")
    if hi is None and "max" in at:
        hi = Const(np.asarray(at["max"], np.float32), "f32")
    if lo is not None:
        x = imp.e.binary("max", x, imp.operand(lo, x), imp.loc(node))
    if hi is not None:
        x = imp.e.binary("min", x, imp.operand(hi, x), imp.loc(node))
    return [x]


def _cast(imp, node, xs, at):
    x = _value(imp, xs[0])
    if node.op_type == "CastLike":
        to = xs[1].dtype
    else:
        if at["to"] not in ONNX_TO_DTYPE:
            raise ImportError_("Cast to element type %d is not supported" % at["to"])
        to = ONNX_TO_DTYPE[at["to"]]
    to = imp.fdt(to)
    if to == x.dtype:
        return [x]
    if to == "i1":  # x != 0 (a plain fptosi to i1 is not torch's bool())
        return [imp.e.compare("ne", x, 0.0 if x.dtype in FLOAT_TYPES else 0, imp.loc(node))]
    return [imp.e.unary("cast", x, imp.loc(node), out_dtype=to)]


def _softmax(imp, node, xs, at):
    x = _value(imp, xs[0])
    axis = at.get("axis", -1 if imp.opset >= 13 else 1) % x.rank
    if imp.opset < 13 and axis != x.rank - 1:
        raise ImportError_("Softmax before opset 13 over axis %d (coerced to 2-D) is not supported" % axis)
    return [imp.e.softmax(x, axis, imp.loc(node))]


def _reduce(kind):
    def run(imp, node, xs, at):
        x = _value(imp, xs[0])
        dims = reduce_axes(node, xs, at, x.rank)
        if dims is None:
            return [x]
        return [imp.e.reduce(kind, x, dims, bool(at.get("keepdims", 1)), imp.loc(node))]
    return run


# --------------------------------------------------------------- layout ops
def _reshape(imp, node, xs, at):
    x = _value(imp, xs[0])
    shape = ints(_const(xs[1], "Reshape's shape"))
    return [imp.e.reshape(x, reshape_target(x.shape, shape, at.get("allowzero", 0)), imp.loc(node))]


def _flatten(imp, node, xs, at):
    x = _value(imp, xs[0])
    return [imp.e.reshape(x, flatten_shape(x.shape, at.get("axis", 1)), imp.loc(node))]


def _unsqueeze(imp, node, xs, at):
    x = _value(imp, xs[0])
    return [imp.e.reshape(x, unsqueeze_shape(x.shape, axes_arg(node, xs, at)), imp.loc(node))]


def _squeeze(imp, node, xs, at):
    x = _value(imp, xs[0])
    return [imp.e.reshape(x, squeeze_shape(x.shape, axes_arg(node, xs, at)), imp.loc(node))]


def _transpose(imp, node, xs, at):
    x = _value(imp, xs[0])
    perm = at.get("perm") or list(reversed(range(x.rank)))
    return [imp.e.transpose(x, perm, imp.loc(node))]


def broadcast_to(imp, x: Value, shape, loc) -> Value:
    """numpy broadcast of `x` to `shape` (`Emitter.broadcast`: a copy whose
    indexing map reads the broadcast dims at 0, no constant of the target
    shape)."""
    return imp.e.broadcast(x, tuple(shape), loc)


def _expand(imp, node, xs, at):
    x = _value(imp, xs[0])
    target = broadcast_shapes(x.shape, tuple(ints(_const(xs[1], "Expand's shape"))))
    return [broadcast_to(imp, x, target, imp.loc(node))]


def _tile(imp, node, xs, at):
    x = _value(imp, xs[0])
    for axis, r in enumerate(ints(_const(xs[1], "Tile's repeats"))):
        if r != 1:
            x = imp.e.concat([x] * r, axis, imp.loc(node))
    return [x]


def _concat(imp, node, xs, at):
    vals = [_value(imp, x) for x in xs if x is not None]
    vals = [v for v in vals if v.shape[at["axis"] % v.rank] != 0]
    if len(vals) == 1:
        return vals
    return [imp.e.concat(vals, at["axis"], imp.loc(node))]


def _slice(imp, node, xs, at):
    x = _value(imp, xs[0])
    if len(xs) > 1:
        starts, ends = ints(_const(xs[1], "Slice's starts")), ints(_const(xs[2], "Slice's ends"))
        axes = ints(_const(xs[3], "Slice's axes")) if len(xs) > 3 and xs[3] is not None else None
        steps = ints(_const(xs[4], "Slice's steps")) if len(xs) > 4 and xs[4] is not None else None
    else:
        starts, ends, axes, steps = at["starts"], at["ends"], at.get("axes"), None
    for axis, s, e, st in slice_params(x.shape, starts, ends, axes, steps):
        if st < 0:
            raise ImportError_("Slice with a negative step is not supported")
        x = imp.e.slice(x, axis, s, e, st, imp.loc(node))
    return [x]


def _split(imp, node, xs, at):
    x = _value(imp, xs[0])
    axis = at.get("axis", 0) % x.rank
    sizes = split_sizes(node, xs, at, x.shape[axis], len(node.output))
    if sum(sizes) != x.shape[axis]:
        raise ImportError_("Split sizes %s do not add up to %d" % (sizes, x.shape[axis]))
    return imp.e.split(x, sizes, axis, imp.loc(node))


def _gather(imp, node, xs, at):
    data, idx = xs
    axis = at.get("axis", 0)
    loc = imp.loc(node)
    if isinstance(idx, Const):
        return [_gather_const(imp, _value(imp, data), idx, axis, loc)]
    ids = _value(imp, idx)
    if ids.dtype not in ("i32", "i64"):
        raise ImportError_("Gather indices must be int32/int64, got %s" % ids.dtype)
    table_rank = data.rank
    if table_rank != 2 or axis % 2 != 0:
        raise ImportError_("Gather with runtime indices is supported as an embedding lookup only "
                           "(2-D table, axis 0); got a rank-%d table and axis %d" % (table_rank, axis))
    return [imp.e.embedding(_value(imp, data), ids, loc)]


def _gather_const(imp, x: Value, idx: Const, axis: int, loc) -> Value:
    """Gather of constant indices: slices (one per run of consecutive
    indices), a concat, and a reshape to the indices' shape."""
    axis %= x.rank
    size = x.shape[axis]
    flat = [i + size if i < 0 else i for i in ints(idx)]
    if any(i < 0 or i >= size for i in flat):
        raise ImportError_("Gather index out of range for dimension %d of size %d: %s" % (axis, size, ints(idx)))
    runs = []
    for i in flat:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    pieces = [imp.e.slice(x, axis, s, e, 1, loc) for s, e in runs]
    y = pieces[0] if len(pieces) == 1 else imp.e.concat(pieces, axis, loc)
    shape = x.shape[:axis] + tuple(idx.shape) + x.shape[axis + 1:]
    return imp.e.reshape(y, shape, loc)


# ------------------------------------------------------------ contractions
def _matmul(imp, node, xs, at):
    a, b = xs
    loc = imp.loc(node)
    if isinstance(b, Const) and b.rank == 2 and isinstance(a, Value):
        return [imp.e.linear(a, imp.linear_weight(b, True, node), None, loc)]
    va, vb = _value(imp, a), _value(imp, b)
    squeeze = []
    if va.rank == 1:
        va = imp.e.reshape(va, (1,) + va.shape, loc)
        squeeze.append(-2)
    if vb.rank == 1:
        vb = imp.e.reshape(vb, vb.shape + (1,), loc)
        squeeze.append(-1)
    y = imp.e.matmul(va, vb, False, loc)
    if squeeze:
        y = imp.e.reshape(y, squeeze_shape(y.shape, squeeze), loc)
    return [y]


def _gemm(imp, node, xs, at):
    a, b = xs[0], xs[1]
    c = xs[2] if len(xs) > 2 else None
    loc = imp.loc(node)
    alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
    x = _value(imp, a)
    if at.get("transA", 0):
        x = imp.e.transpose(x, [1, 0], loc)
    trans_b = bool(at.get("transB", 0))
    bias = None
    if isinstance(b, Const):
        w = imp.linear_weight(b, not trans_b, node)
        n = w.shape[0]
        if isinstance(c, Const) and c.array.size == n and c.rank <= 2 and alpha == 1.0 and \
                (beta == 1.0 or not is_param(c)):
            # (a param scaled by beta is multiplied at run time, below)
            bias = c if beta == 1.0 else Const(c.array.reshape(n) * np.asarray(beta, c.array.dtype), c.dtype)
            c = None
        y = imp.e.linear(x, w, bias_constant(imp, bias, x.dtype, n, loc) if bias is not None else None, loc)
    else:
        y = imp.e.matmul(x, _value(imp, b), trans_b, loc)
    if alpha != 1.0:
        y = imp.e.binary("mul", y, alpha, loc)
    if c is not None:
        cv = imp.operand(c, y)
        if beta != 1.0:
            cv = imp.e.binary("mul", cv, beta, loc) if isinstance(cv, Value) else cv * beta
        y = imp.e.binary("add", y, cv, loc)
    return [y]


def bias_constant(imp, c: Const, dtype, n=None, loc=None) -> Value:
    """A linear layer's bias as an [n] tensor of `dtype` (a param is reshaped
    at run time, a constant at import time)."""
    if n is not None and c.shape != (n,) and not is_param(c):
        c = Const(c.array.reshape(n), c.dtype, c.source)
    v = imp.tensor(c)
    if n is not None and v.shape != (n,):
        v = imp.e.reshape(v, (n,), loc)
    return v if v.dtype == dtype else imp.e.unary("cast", v, out_dtype=dtype)


# ------------------------------------------------------------ model blocks
def _layer_norm(imp, node, xs, at):
    x = _value(imp, xs[0])
    loc = imp.loc(node)
    if at.get("axis", -1) % x.rank != x.rank - 1:
        raise ImportError_("LayerNormalization over more than the last dimension (axis %d) is not supported"
                           % at["axis"])
    d = x.shape[-1]
    w = feature_param(imp, xs[1], d, x.dtype, loc) if xs[1] is not None else imp.e.splat(1.0, (d,), x.dtype, loc)
    b = feature_param(imp, xs[2], d, x.dtype, loc) if len(xs) > 2 and xs[2] is not None \
        else imp.e.splat(0.0, (d,), x.dtype, loc)
    return [imp.e.layer_norm(x, w, b, float(at.get("epsilon", 1e-5)), loc)]


def feature_param(imp, p, d, dtype, loc):
    """A per-feature parameter as a [d] tensor of `dtype` (None if `p` is
    not a vector of the last dimension)."""
    if p is None or int(np.prod(p.shape)) != d:
        return None
    if isinstance(p, Const) and not is_param(p):
        p = Const(p.array.reshape(d), p.dtype, p.source)
    v = imp.tensor(p)
    if v.shape != (d,):
        v = imp.e.reshape(v, (d,), loc)
    return v if v.dtype == dtype else imp.e.unary("cast", v, loc, out_dtype=dtype)


def _identity(imp, node, xs, at):
    return [_value(imp, xs[0])] if isinstance(xs[0], Value) else [xs[0]]


def _all_reduce(imp, node, xs, at):
    return [imp.e.all_reduce(_value(imp, xs[0]), imp.loc(node))]


HANDLERS = {
    "Add": _binary("add"), "Sub": _binary("sub"), "Mul": _binary("mul"), "Div": _binary("div"),
    "Pow": _binary("pow"), "Max": _minmax("max"), "Min": _minmax("min"), "Clip": _clip,
    "Sqrt": _unary("sqrt"), "Exp": _unary("exp"), "Tanh": _unary("tanh"), "Sigmoid": _unary("sigmoid"),
    "Relu": _unary("relu"), "Neg": _unary("neg"), "Abs": _unary("abs"), "Reciprocal": _reciprocal,
    "Erf": _math("math.erf", "erf"), "Log": _math("math.log", "log"), "Gelu": _gelu,
    "Equal": _compare("eq"), "Less": _compare("lt"), "Greater": _compare("gt"),
    "LessOrEqual": _compare("le"), "GreaterOrEqual": _compare("ge"),
    "Not": _logical("not"), "And": _logical("andi"), "Or": _logical("ori"), "Xor": _logical("xori"),
    "Where": _where, "Cast": _cast, "CastLike": _cast,
    "Softmax": _softmax,
    "ReduceMean": _reduce("mean"), "ReduceSum": _reduce("sum"), "ReduceMax": _reduce("max"),
    "Reshape": _reshape, "Flatten": _flatten, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze,
    "Transpose": _transpose, "Expand": _expand, "Tile": _tile, "Concat": _concat, "Slice": _slice,
    "Split": _split, "Gather": _gather,
    "MatMul": _matmul, "Gemm": _gemm,
    "LayerNormalization": _layer_norm,
    "Identity": _identity, "Dropout": _identity,
}


def handler(node):
    if node.domain in ("", "ai.onnx"):
        return HANDLERS.get(node.op_type)
    if node.domain == ONNX_DOMAIN and node.op_type == "AllReduce":
        return _all_reduce
    return None
