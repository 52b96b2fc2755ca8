"""Compile-time values of an ONNX graph (constant folding).

Initializers, `Constant` nodes and everything computed only from them and
from static shapes (`Shape`, `Gather` on shapes, `Unsqueeze`/`Concat` of shape
pieces, `ConstantOfShape`, `Range`, arithmetic on int64 constants, ...) are
evaluated here with numpy at import time, so that `Reshape`, `Expand` and
`Slice` see static values. A folded value is a `Const`; it becomes an MLIR
constant only where a runtime op consumes it (see `OnnxImporter.materialize`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from .emitter import ImportError_

# ONNX element types the emitter can express.
ONNX_TO_DTYPE = {
    TensorProto.FLOAT: "f32", TensorProto.FLOAT16: "f16", TensorProto.BFLOAT16: "bf16",
    TensorProto.DOUBLE: "f64", TensorProto.INT8: "i8", TensorProto.INT16: "i16",
    TensorProto.INT32: "i32", TensorProto.INT64: "i64", TensorProto.BOOL: "i1",
}
# numpy dtypes for folding (bf16 values are held as float32, tagged "bf16").
DTYPE_TO_NP = {"f32": np.float32, "f16": np.float16, "bf16": np.float32, "f64": np.float64,
               "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.bool_}
_NP_TO_DTYPE = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.float64): "f64",
                np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
                np.dtype(np.int64): "i64", np.dtype(np.bool_): "i1"}
# Unsigned types fold fine but cannot be materialized (the emitter has no unsigned ints).
_NP_UNSIGNED = {np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16", np.dtype(np.uint32): "ui32",
                np.dtype(np.uint64): "ui64"}


def onnx_type_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return str(elem_type)


@dataclass
class Const:
    """A value known at import time. `source` is the initializer it is a
    view of (through Identity/Cast/Transpose), for weight names. `param` is
    set on an initializer itself when the importer makes initializers
    params (weights="params"): where such a Const reaches the program as a
    tensor, it is an argument named `param`."""
    array: np.ndarray
    dtype: str
    source: Optional[str] = None
    name: Optional[str] = None  # the ONNX value it was bound to first
    param: Optional[str] = None

    @property
    def shape(self):
        return tuple(self.array.shape)

    @property
    def rank(self):
        return self.array.ndim

    def scalar(self):
        """The single value as a Python scalar (None unless size 1)."""
        if self.array.size != 1:
            return None
        v = self.array.reshape(()).item()
        if self.dtype == "i1":
            return bool(v)
        return float(v) if self.dtype in ("f16", "bf16", "f32", "f64") else int(v)


def is_param(x) -> bool:
    """Whether `x` is an initializer the program binds as a param."""
    return isinstance(x, Const) and x.param is not None


def dtype_of(array: np.ndarray, bf16: bool = False) -> str:
    dt = np.dtype(array.dtype)
    if dt in _NP_TO_DTYPE:
        name = _NP_TO_DTYPE[dt]
        return "bf16" if bf16 and name == "f32" else name
    if dt in _NP_UNSIGNED:
        return _NP_UNSIGNED[dt]
    raise ImportError_("unsupported constant element type %s" % dt)


def make_const(array, like=(), source=None) -> Const:
    array = np.asarray(array)
    bf16 = any(isinstance(c, Const) and c.dtype == "bf16" for c in like)
    return Const(array, dtype_of(array, bf16), source)


# ------------------------------------------------------------------ tensors
def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even, NaN kept NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def tensor_to_const(t: TensorProto, what: str) -> Const:
    """An initializer or Constant tensor as a Const (checks its size, so a
    truncated model gives a clear error)."""
    if t.data_type not in ONNX_TO_DTYPE and t.data_type not in (TensorProto.UINT8, TensorProto.UINT16,
                                                                TensorProto.UINT32, TensorProto.UINT64):
        raise ImportError_("%s has element type %s, which SparseOpt does not support"
                           % (what, onnx_type_name(t.data_type)))
    if t.data_location == TensorProto.EXTERNAL and not t.raw_data:
        raise ImportError_("%s keeps its data in an external file that was not loaded (load the model "
                           "from its path, or with onnx.load(..., load_external_data=True))" % what)
    dims = tuple(int(d) for d in t.dims)
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    try:
        if t.data_type == TensorProto.BFLOAT16:
            if t.raw_data:
                bits = np.frombuffer(t.raw_data, dtype="<u2")
            else:
                bits = np.asarray(t.int32_data, dtype=np.uint32).astype(np.uint16)
            if bits.size != count:
                raise ValueError("%d values for dims %s" % (bits.size, list(dims)))
            return Const(bf16_bits_to_f32(bits).reshape(dims), "bf16", t.name or None)
        if t.raw_data:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)
                                if hasattr(helper, "tensor_dtype_to_np_dtype")
                                else _legacy_np_dtype(t.data_type)).itemsize
            if len(t.raw_data) != count * itemsize:
                raise ValueError("%d bytes of data for dims %s (%d bytes expected)"
                                 % (len(t.raw_data), list(dims), count * itemsize))
        array = np.array(numpy_helper.to_array(t))
    except ImportError_:
        raise
    except Exception as e:  # malformed tensor data
        raise ImportError_("%s cannot be read (%s); is the model truncated or malformed?" % (what, e)) from None
    if array.size != count:
        raise ImportError_("%s holds %d values but its dims %s need %d; is the model truncated?"
                           % (what, array.size, list(dims), count))
    return Const(array.reshape(dims), dtype_of(array), t.name or None)


def _legacy_np_dtype(elem_type):
    from onnx.mapping import TENSOR_TYPE_TO_NP_TYPE  # onnx < 1.13
    return TENSOR_TYPE_TO_NP_TYPE[elem_type]


def const_bytes(c: Const, dtype: str) -> bytes:
    """Little-endian bytes of `c` converted to the emitter dtype `dtype`."""
    a = c.array
    if dtype == "bf16":
        return f32_to_bf16_bits(a.astype(np.float32)).astype("<u2").tobytes()
    if dtype == "i1":
        return np.ascontiguousarray(a.astype(np.bool_)).astype(np.uint8).tobytes()
    np_t = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "i8": "i1", "i16": "<i2", "i32": "<i4", "i64": "<i8"}
    if dtype not in np_t:
        raise ImportError_("constants of type %s cannot be expressed" % dtype)
    return np.ascontiguousarray(a.astype(np_t[dtype])).tobytes()


# ------------------------------------------------------------------ helpers
def attrs_of(node) -> dict:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        out[a.name] = v
    return out


def ints(c) -> list:
    """A Const (or None) as a list of Python ints."""
    if c is None:
        return None
    return [int(v) for v in np.asarray(c.array).reshape(-1)]


def axes_arg(node, xs, at: dict, index: int = 1):
    """`axes` from input `index` (newer opsets) or the attribute."""
    if len(xs) > index and xs[index] is not None:
        if not isinstance(xs[index], Const):
            raise ImportError_("%s needs constant axes" % node.op_type)
        return ints(xs[index])
    return list(at["axes"]) if "axes" in at else None


def unsqueeze_shape(shape, axes):
    rank = len(shape) + len(axes)
    axes = sorted(a % rank for a in axes)
    out = list(shape)
    for a in axes:
        out.insert(a, 1)
    return tuple(out)


def squeeze_shape(shape, axes):
    if axes is None:
        return tuple(d for d in shape if d != 1)
    axes = {a % len(shape) for a in axes}
    for a in axes:
        if shape[a] != 1:
            raise ImportError_("Squeeze of dimension %d of size %d" % (a, shape[a]))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reshape_target(shape, target, allowzero=0):
    """ONNX Reshape semantics: 0 copies the input dim (unless allowzero), -1 is inferred."""
    out = [shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise ImportError_("Reshape to %s has more than one -1" % list(target))
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(shape, dtype=np.int64))
        if known == 0 or total % known:
            raise ImportError_("cannot reshape %s to %s" % (list(shape), list(target)))
        out[out.index(-1)] = total // known
    return tuple(int(d) for d in out)


def slice_params(shape, starts, ends, axes, steps):
    """Normalized (axis, start, end, step) per sliced axis (ONNX clamping)."""
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    out = []
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= len(shape)
        dim = shape[a]
        if st == 0:
            raise ImportError_("Slice with step 0")
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        out.append((a, s, e, st))
    return out


def split_sizes(node, xs, at, dim_size, n_out):
    if len(xs) > 1 and xs[1] is not None:
        if not isinstance(xs[1], Const):
            raise ImportError_("Split needs constant sizes")
        return ints(xs[1])
    if "split" in at:
        return list(at["split"])
    n = int(at.get("num_outputs", n_out))
    chunk = -(-dim_size // n)
    return [min(chunk, dim_size - i * chunk) for i in range(n)]


def reduce_axes(node, xs, at, rank):
    """Sorted reduced dims, or None for a no-op (empty axes with noop_with_empty_axes)."""
    axes = axes_arg(node, xs, at)
    if not axes:
        return None if at.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({a % rank for a in axes})


def flatten_shape(shape, axis):
    axis = axis % (len(shape) + 1) if axis < 0 else axis
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))


# ------------------------------------------------------------------- folding
def _int_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return (np.sign(a) * np.sign(b) * q).astype(a.dtype)
    return (a / b).astype(a.dtype)


def _same(fn):
    """An element-wise function keeping the first input's numpy dtype."""
    def run(node, a, at):
        return [np.asarray(fn(*a)).astype(a[0].dtype)]
    return run


def _cmp(fn):
    def run(node, a, at):
        return [np.asarray(fn(*a))]
    return run


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _constant(node, a, at):
    if "value" in at:
        return [tensor_to_const(at["value"], "Constant '%s'" % (node.name or node.output[0])).array]
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32),
                    ("value_int", np.int64), ("value_ints", np.int64)):
        if key in at:
            return [np.asarray(at[key], dtype=dt)]
    raise ImportError_("Constant with attributes %s is not supported" % sorted(at))


def _constant_of_shape(node, a, at):
    value = tensor_to_const(at["value"], "ConstantOfShape value").array.reshape(-1) \
        if "value" in at else np.zeros(1, np.float32)
    return [np.full(tuple(int(d) for d in a[0]), value[0], dtype=value.dtype)]


def _cast(node, a, at):
    to = at["to"]
    if to == TensorProto.BFLOAT16:
        return [bf16_bits_to_f32(f32_to_bf16_bits(a[0].astype(np.float32)))]
    if to not in ONNX_TO_DTYPE:
        raise ImportError_("Cast to %s is not supported" % onnx_type_name(to))
    return [a[0].astype(DTYPE_TO_NP[ONNX_TO_DTYPE[to]])]


def _reduce(fn):
    def run(node, a, at):
        axes = reduce_axes(node, [Const(x, "f32") for x in a], at, a[0].ndim)
        if axes is None:
            return [a[0]]
        return [np.asarray(fn(a[0], axis=tuple(axes), keepdims=bool(at.get("keepdims", 1)))).astype(a[0].dtype)]
    return run


def _slice(node, a, at):
    x = a[0]
    if len(a) > 1:
        starts, ends = ints(Const(a[1], "i64")), ints(Const(a[2], "i64"))
        axes = ints(Const(a[3], "i64")) if len(a) > 3 and a[3] is not None else None
        steps = ints(Const(a[4], "i64")) if len(a) > 4 and a[4] is not None else None
    else:
        starts, ends, axes, steps = at["starts"], at["ends"], at.get("axes"), None
    idx = [slice(None)] * x.ndim
    for ax, s, e, st in slice_params(x.shape, starts, ends, axes, steps):
        idx[ax] = slice(s, e if e >= 0 else None, st)
    return [x[tuple(idx)]]


def _split(node, a, at):
    axis = at.get("axis", 0) % a[0].ndim
    sizes = split_sizes(node, [Const(x, "i64") if x is not None else None for x in a], at,
                        a[0].shape[axis], len(node.output))
    return np.split(a[0], np.cumsum(sizes)[:-1], axis=axis)


def _trilu(node, a, at):
    k = int(a[1].reshape(())) if len(a) > 1 and a[1] is not None else 0
    return [np.triu(a[0], k) if at.get("upper", 1) else np.tril(a[0], k)]


FOLDERS = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Identity": lambda n, a, at: [a[0]],
    "Dropout": lambda n, a, at: [a[0], np.ones(a[0].shape, np.bool_)],
    "Cast": _cast,
    "CastLike": lambda n, a, at: [a[0].astype(a[1].dtype)],
    "Range": lambda n, a, at: [np.arange(a[0].reshape(()), a[1].reshape(()), a[2].reshape(()), dtype=a[0].dtype)],
    "Gather": lambda n, a, at: [np.take(a[0], a[1].astype(np.int64), axis=at.get("axis", 0))],
    "Unsqueeze": lambda n, a, at: [a[0].reshape(unsqueeze_shape(
        a[0].shape, axes_arg(n, [Const(x, "i64") for x in a], at)))],
    "Squeeze": lambda n, a, at: [a[0].reshape(squeeze_shape(
        a[0].shape, axes_arg(n, [Const(x, "i64") for x in a], at)))],
    "Concat": lambda n, a, at: [np.concatenate(a, axis=at["axis"])],
    "Reshape": lambda n, a, at: [a[0].reshape(reshape_target(a[0].shape, [int(d) for d in a[1]],
                                                             at.get("allowzero", 0)))],
    "Flatten": lambda n, a, at: [a[0].reshape(flatten_shape(a[0].shape, at.get("axis", 1)))],
    "Transpose": lambda n, a, at: [np.transpose(a[0], at.get("perm"))],
    "Expand": lambda n, a, at: [np.array(np.broadcast_to(a[0], np.broadcast_shapes(a[0].shape, tuple(
        int(d) for d in a[1]))))],
    "Tile": lambda n, a, at: [np.tile(a[0], [int(r) for r in a[1]])],
    "Slice": _slice,
    "Split": _split,
    "Trilu": _trilu,
    "Add": _same(np.add), "Sub": _same(np.subtract), "Mul": _same(np.multiply), "Div": _same(_int_div),
    "Pow": _same(np.power), "Mod": _same(lambda a, b: np.fmod(a, b)),
    "Neg": _same(np.negative), "Abs": _same(np.abs), "Sqrt": _same(np.sqrt),
    "Reciprocal": _same(np.reciprocal), "Exp": _same(np.exp), "Log": _same(np.log),
    "Floor": _same(np.floor), "Ceil": _same(np.ceil), "Sign": _same(np.sign),
    "Relu": _same(lambda x: np.maximum(x, 0)), "Tanh": _same(np.tanh),
    "Sigmoid": _same(lambda x: 1 / (1 + np.exp(-x))), "Erf": _same(_erf),
    "Max": _same(lambda *xs: np.maximum.reduce(np.broadcast_arrays(*xs))),
    "Min": _same(lambda *xs: np.minimum.reduce(np.broadcast_arrays(*xs))),
    "Equal": _cmp(np.equal), "Less": _cmp(np.less), "Greater": _cmp(np.greater),
    "LessOrEqual": _cmp(np.less_equal), "GreaterOrEqual": _cmp(np.greater_equal),
    "Not": _cmp(np.logical_not), "And": _cmp(np.logical_and), "Or": _cmp(np.logical_or),
    "Xor": _cmp(np.logical_xor),
    "Where": lambda n, a, at: [np.where(a[0], a[1], a[2])],
    "MatMul": lambda n, a, at: [np.matmul(a[0], a[1])],
    "ReduceMean": _reduce(np.mean), "ReduceSum": _reduce(np.sum), "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min), "ReduceProd": _reduce(np.prod),
}


def fold(node, xs, at) -> Optional[list]:
    """The outputs of `node` as Consts when they are known at import time
    (None when the node must be emitted). `xs` holds the inputs: Const, an
    emitted Value (which has a static .shape) or None for a missing input."""
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return None
    if op in ("Shape", "Size"):
        shape = xs[0].shape
        if op == "Size":
            return [make_const(np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=np.int64))]
        start, end = at.get("start", 0), at.get("end", None)
        return [make_const(np.asarray(shape[start:end], dtype=np.int64))]
    if op not in FOLDERS:
        return None
    present = [x for x in xs if x is not None]
    if not all(isinstance(x, Const) for x in present):
        return None
    arrays = [x.array if x is not None else None for x in xs]
    with np.errstate(all="ignore"):
        outs = FOLDERS[op](node, arrays, at)
    like = [x for x in present]
    # Views of an initializer keep its name (weights named after initializers).
    source = present[0].source if present and op in ("Identity", "Dropout", "Cast", "Transpose") else None
    if op == "Cast" and at["to"] == TensorProto.BFLOAT16:
        return [Const(np.asarray(outs[0]), "bf16", source)]
    result = []
    for o in outs:
        o = np.asarray(o)
        if o.dtype == np.float64 and present and all(x.dtype != "f64" for x in present) and op not in ("Cast",):
            o = o.astype(DTYPE_TO_NP[present[0].dtype] if present[0].dtype in ("f32", "f16", "bf16") else np.float32)
        result.append(make_const(o, like if op != "Cast" else (), source))
    return result
