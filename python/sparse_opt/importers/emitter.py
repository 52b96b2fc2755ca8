"""Builds MLIR text in SparseOpt's input form (docs/input-ir.md).

Both importers (torch.fx and ONNX) map their graphs onto the methods of
`Emitter`, so every op family reaches the compiler in exactly one canonical
form, whichever front end it came from. The emitter knows nothing of torch or
onnx: it takes shapes, dtypes, raw little-endian weight bytes and Python
scalars, and returns `Value`s. A weight is either a constant holding its
bytes (`constant`) or a param (`param`): an argument after the model's
inputs that names the weight (`{sgpu.param = "<qualified name>"}`) for the
program to bind once, so the IR holds no weight data.

Every method takes an optional `loc` (see `Emitter.loc`) that becomes the
MLIR location of the ops it emits, so compiler diagnostics point back to the
module and source line the op came from.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Optional, Sequence, Union

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
INT_TYPES = ("i1", "i8", "i16", "i32", "i64")
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
_FLOAT_RANK = {"bf16": 0, "f16": 1, "f32": 2, "f64": 3}


class ImportError_(Exception):
    """An op or input the importers cannot express; the message names the op
    and where it came from."""


class AnnotationError(ImportError_):
    """A sparsity (or other) annotation that the weight or model breaks."""


@dataclass(frozen=True)
class TensorType:
    shape: tuple
    dtype: str

    def __str__(self):
        dims = "".join("%dx" % d for d in self.shape)
        return "tensor<%s%s>" % (dims, self.dtype)

    @property
    def rank(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Value:
    name: str
    type: TensorType

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def rank(self):
        return self.type.rank


Scalar = Union[int, float, bool]
Operand = Union[Value, Scalar]


def parse_pattern(pattern: str):
    """'6:8' -> (6, 8), checking the (2N-2):2N family (N = 2..8)."""
    m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", str(pattern))
    if not m:
        raise AnnotationError("sparsity pattern %r is not of the form 'n:m'" % (pattern,))
    n, mm = int(m.group(1)), int(m.group(2))
    if mm % 2 or mm < 4 or mm > 16 or n + 2 != mm:
        raise AnnotationError("unsupported structured sparsity %d:%d; expected 2:4 or (2N-2):2N for "
                              "N = 2..8 (2:4, 4:6, 6:8, 8:10, 10:12, 12:14, 14:16)" % (n, mm))
    return n, mm


SPARSE_TYPES = ("f16", "bf16")


def check_nm_type(shape: Sequence[int], dtype: str, pattern: str, what: str):
    """Raises AnnotationError unless a weight of this shape and element type
    can carry `pattern`: 2-D (N x K) and f16 or bf16, the types the sparse
    tensor cores take (an f32 model is imported with dtype='f16' or 'bf16')."""
    parse_pattern(pattern)
    if len(shape) != 2:
        raise AnnotationError("%s: a %s weight must be 2-D (N x K), got shape %s" % (what, pattern, list(shape)))
    if dtype not in FLOAT_TYPES:
        raise AnnotationError("%s: structured sparsity needs a float weight, got %s" % (what, dtype))
    if dtype not in SPARSE_TYPES:
        raise AnnotationError("%s is %s, but structured sparsity runs on f16/bf16 only: use dtype=f16 or bf16"
                              % (what, dtype))


def check_nm(data: bytes, shape: Sequence[int], dtype: str, pattern: str, what: str):
    """Raises AnnotationError naming the first row and group of a row-major
    N x K weight with more than n nonzeros in an aligned group of m (after
    `check_nm_type`)."""
    check_nm_type(shape, dtype, pattern, what)
    n, m = parse_pattern(pattern)
    rows, cols = shape
    size = ELEMENT_BYTES[dtype]
    mask = {2: 0x7FFF, 4: 0x7FFFFFFF}[size]
    fmt = {2: "<%dH", 4: "<%dI"}[size] % (rows * cols)
    bits = struct.unpack(fmt, data)
    for r in range(rows):
        row = bits[r * cols:(r + 1) * cols]
        for g in range(0, cols, m):
            nz = sum(1 for b in row[g:g + m] if b & mask)
            if nz > n:
                raise AnnotationError(
                    "%s is not %d:%d sparse: row %d, group %d (columns %d..%d) has %d nonzeros"
                    % (what, n, m, r, g // m, g, min(g + m, cols) - 1, nz))


def string_literal(text: str) -> str:
    """An MLIR string attribute for `text` (quotes and backslashes escaped)."""
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def float_literal(value: float, dtype: str) -> str:
    """An exact MLIR literal for `value` in a float type."""
    if math.isfinite(value):
        return "%.9e" % value if dtype != "f64" else "%.17e" % value
    bits = {"f16": (0x7C00, 0xFC00, 0x7E00), "bf16": (0x7F80, 0xFF80, 0x7FC0),
            "f32": (0x7F800000, 0xFF800000, 0x7FC00000),
            "f64": (0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000)}[dtype]
    v = bits[2] if math.isnan(value) else bits[0] if value > 0 else bits[1]
    return "0x%X" % v


def broadcast_shapes(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise ImportError_("shapes %s do not broadcast" % ", ".join(str(list(s)) for s in shapes))
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def promote(*dtypes):
    floats = [d for d in dtypes if d in FLOAT_TYPES]
    if floats:
        return max(floats, key=lambda d: _FLOAT_RANK[d])
    return max(dtypes, key=lambda d: ELEMENT_BYTES[d])


class Emitter:
    """Accumulates one function (the model's forward) and renders a module."""

    def __init__(self, name: str = "forward"):
        self.name = name
        self.args: list = []
        self.body: list = []
        self.resources: dict = {}
        self.params: list = []  # (Value, declared type text, qualified name): arguments after `args`
        self.states: set = set()  # qualified names of the params that are state (sgpu.state: KV caches)
        self.results: Optional[list] = None
        self.module_attrs: dict = {}
        self._declared: dict = {}  # value name -> declared type text (with encoding)
        self._count = 0

    # ----------------------------------------------------------------- basics
    @staticmethod
    def loc(name: str, file: Optional[str] = None, line: Optional[int] = None) -> str:
        """An MLIR location naming the op's origin: `loc("name"("file":line:0))`."""
        name = name.replace("\\", "/").replace('"', "'")
        if file:
            return 'loc("%s"("%s":%d:0))' % (name, file.replace('"', "'"), line or 0)
        return 'loc("%s")' % name

    def _fresh(self, hint: str = "v") -> str:
        # `<hint>.<n>`: the '.' keeps generated names apart from arguments,
        # whose names are sanitized to letters, digits and '_'.
        self._count += 1
        hint = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        if hint[0].isdigit():
            hint = "v" + hint
        return "%%%s.%d" % (hint, self._count)

    def _op(self, text: str, loc: Optional[str]):
        self.body.append("  " + text + ((" " + loc) if loc else ""))

    def argument(self, shape, dtype: str, name: str = "arg") -> Value:
        v = Value("%%%s" % re.sub(r"[^A-Za-z0-9_]", "_", name) if name else "%%arg%d" % len(self.args),
                  TensorType(tuple(shape), dtype))
        if self._taken(v.name):
            v = Value("%%arg%d_%s" % (len(self.args), v.name[1:]), v.type)
        self.args.append(v)
        return v

    def _taken(self, name: str) -> bool:
        return any(name == a.name for a in self.args) or any(name == p[0].name for p in self.params)

    def param(self, shape, dtype: str, qualname: str, encoding: Optional[str] = None) -> Value:
        """A weight the program binds once (a param): an argument after the
        model's inputs carrying `{sgpu.param = "<qualname>"}`, so a runtime
        binds it by name. No data: with `encoding` ('2:4', ...) only the
        shape and type are checked here (the program checks the pattern when
        the weight is bound) and the type carries #sgpu.nm<n:m>."""
        t = TensorType(tuple(shape), dtype)
        type_text = str(t)
        if encoding:
            check_nm_type(t.shape, dtype, encoding, "weight '%s'" % qualname)
            type_text = self._encoded(t, encoding)
        base = re.sub(r"[^A-Za-z0-9_]", "_", qualname) or "param"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "p_" + base
        name, i = "%" + base, 1
        while self._taken(name):
            i += 1
            name = "%%%s_%d" % (base, i)
        v = Value(name, t)
        self.params.append((v, type_text, qualname))
        self._declared[v.name] = type_text
        return v

    @staticmethod
    def _encoded(t: TensorType, encoding: str) -> str:
        n, m = parse_pattern(encoding)
        return str(t)[:-1] + ", #sgpu.nm<%d:%d>>" % (n, m)

    def constant(self, data: bytes, shape, dtype: str, name: str = "weight",
                 encoding: Optional[str] = None, loc: Optional[str] = None) -> Value:
        """A weight: raw little-endian bytes as a dense_resource blob. With
        `encoding` ('2:4', '6:8', ...) the pattern is checked first and the
        type carries #sgpu.nm<n:m>."""
        shape = tuple(shape)
        t = TensorType(shape, dtype)
        if len(data) != t.numel() * ELEMENT_BYTES[dtype]:
            raise ImportError_("constant %s: %d bytes for %s" % (name, len(data), t))
        type_text = str(t)
        if encoding:
            check_nm(data, shape, dtype, encoding, "weight '%s'" % name)
            type_text = self._encoded(t, encoding)
        if dtype == "i1":
            # Boolean tensors (masks) are small and have no portable blob
            # layout: inline them as a dense literal.
            v = Value(self._fresh(re.sub(r"[^A-Za-z0-9_]", "_", name) or "mask"), t)
            flat = ["true" if b else "false" for b in data]
            self._op("%s = arith.constant dense<%s> : %s" % (v.name, self._nested(flat, shape), type_text), loc)
            return v
        key = re.sub(r"[^A-Za-z0-9_]", "_", name) or "weight"
        if not (key[0].isalpha() or key[0] == "_"):
            key = "w_" + key
        base, i = key, 1
        while key in self.resources:
            i += 1
            key = "%s_%d" % (base, i)
        self.resources[key] = (max(ELEMENT_BYTES[dtype], 1), data)
        v = Value(self._fresh(key), t)
        self._op("%s = arith.constant dense_resource<%s> : %s" % (v.name, key, type_text), loc)
        self._declared[v.name] = type_text
        return v

    @staticmethod
    def _nested(flat, shape):
        """Row-major items as a nested MLIR literal of `shape`."""
        if not shape:
            return flat[0]
        step = len(flat) // shape[0] if shape[0] else 0
        return "[" + ", ".join(Emitter._nested(flat[i * step:(i + 1) * step], shape[1:])
                               for i in range(shape[0])) + "]"

    def splat(self, value: Scalar, shape, dtype: str, loc: Optional[str] = None) -> Value:
        t = TensorType(tuple(shape), dtype)
        v = Value(self._fresh("splat"), t)
        self._op("%s = arith.constant dense<%s> : %s" % (v.name, self._literal(value, dtype), t), loc)
        return v

    def _literal(self, value: Scalar, dtype: str) -> str:
        if dtype in FLOAT_TYPES:
            return float_literal(float(value), dtype)
        if dtype == "i1":
            return "true" if value else "false"
        return str(int(value))

    def _scalar_text(self, value: Scalar, dtype: str) -> str:
        # i1 constants print as `true`/`false` and take no type suffix.
        if dtype == "i1":
            return "arith.constant %s" % self._literal(value, dtype)
        return "arith.constant %s : %s" % (self._literal(value, dtype), dtype)

    def _scalar(self, lines: list, value: Scalar, dtype: str) -> str:
        name = self._fresh("c")
        lines.append("%s = %s" % (name, self._scalar_text(value, dtype)))
        return name

    def empty(self, shape, dtype: str, loc=None) -> Value:
        v = Value(self._fresh("empty"), TensorType(tuple(shape), dtype))
        self._op("%s = tensor.empty() : %s" % (v.name, v.type), loc)
        return v

    def fill(self, value: Scalar, shape, dtype: str, loc=None) -> Value:
        e = self.empty(shape, dtype, loc)
        c = self._fresh("c")
        self._op("%s = %s" % (c, self._scalar_text(value, dtype)), loc)
        v = Value(self._fresh("fill"), e.type)
        self._op("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" % (v.name, c, dtype, e.name, e.type, v.type), loc)
        return v

    @staticmethod
    def _dims(n):
        return ", ".join("d%d" % i for i in range(n))

    def _map(self, rank, exprs):
        return "affine_map<(%s) -> (%s)>" % (self._dims(rank), ", ".join(exprs))

    # ------------------------------------------------------- element-wise ops
    def _convert(self, lines, name, src, dst):
        """Converts an SSA scalar between element types inside a body."""
        if src == dst:
            return name
        out = self._fresh("cv")
        if src in FLOAT_TYPES and dst in FLOAT_TYPES:
            op = "arith.extf" if _FLOAT_RANK[dst] > _FLOAT_RANK[src] else "arith.truncf"
        elif src in FLOAT_TYPES:
            op = "arith.fptosi"
        elif dst in FLOAT_TYPES:
            op = "arith.uitofp" if src == "i1" else "arith.sitofp"
        else:
            op = "arith.extsi" if ELEMENT_BYTES[dst] > ELEMENT_BYTES[src] else "arith.trunci"
            if src == "i1":
                op = "arith.extui"
        lines.append("%s = %s %s : %s to %s" % (out, op, name, src, dst))
        return out

    def generic(self, inputs: Sequence[Operand], out_dtype: str, body, hint="ew", loc=None,
                compute_dtype: Optional[str] = None, raw: Sequence[int] = (),
                body_dtype: Optional[str] = None, shape=None) -> Value:
        """An element-wise linalg.generic with numpy broadcasting. `body(args,
        lines)` gets the SSA names of the input elements (converted to
        `compute_dtype`, default `out_dtype`) and appends ops to `lines`,
        returning the SSA name of the result in `compute_dtype`. Inputs whose
        positions are in `raw` reach the body unconverted (e.g. an i1 mask);
        `body_dtype` is the type the body returns when not `compute_dtype`.
        The result has the inputs' broadcast shape, or `shape` when given
        (the inputs broadcast to it): an input's indexing map leaves out its
        missing leading dims and reads index 0 of a broadcast size-1 dim, so
        no operand is ever the size of the result unless it already was."""
        tensors = [x for x in inputs if isinstance(x, Value)]
        if not tensors:
            raise ImportError_("element-wise op without a tensor operand")
        shapes = [t.shape for t in tensors] + ([tuple(shape)] if shape is not None else [])
        shape = broadcast_shapes(*shapes)
        if len(shapes) > len(tensors) and shape != shapes[-1]:
            raise ImportError_("%s do not broadcast to %s" % (", ".join(str(t.type) for t in tensors),
                                                             list(shapes[-1])))
        rank = len(shape)
        cdt = compute_dtype or out_dtype
        maps, ins = [], []
        for t in tensors:
            exprs = []
            for i, d in enumerate(t.shape):
                od = rank - t.rank + i
                exprs.append("0" if d == 1 and shape[od] != 1 else "d%d" % od)
            maps.append(self._map(rank, exprs))
            ins.append(t)
        maps.append(self._map(rank, ["d%d" % i for i in range(rank)]))
        out = self.empty(shape, out_dtype, loc)
        lines = []
        block_args = [self._fresh("a") for _ in ins]
        out_arg = self._fresh("o")
        args, k = [], 0
        for pos, x in enumerate(inputs):
            if isinstance(x, Value):
                args.append(block_args[k] if pos in raw else self._convert(lines, block_args[k], x.dtype, cdt))
                k += 1
            else:
                args.append(self._scalar(lines, x, cdt))
        res = body(args, lines)
        res = self._convert(lines, res, body_dtype or cdt, out_dtype)
        v = Value(self._fresh(hint), TensorType(shape, out_dtype))
        ins_text = ", ".join(t.name for t in ins)
        ins_types = ", ".join(str(t.type) for t in ins)
        head = ("%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]} ins(%s : %s) outs(%s : %s) {"
                % (v.name, ", ".join(maps), ", ".join(['"parallel"'] * rank), ins_text, ins_types,
                   out.name, out.type))
        self.body.append("  " + head)
        sig = ", ".join("%s: %s" % (a, t.dtype) for a, t in zip(block_args, ins))
        self.body.append("  ^bb0(%s, %s: %s):" % (sig, out_arg, out_dtype))
        for line in lines:
            self.body.append("    " + line)
        self.body.append("    linalg.yield %s : %s" % (res, out_dtype))
        self.body.append("  } -> %s" % v.type + ((" " + loc) if loc else ""))
        return v

    def binary(self, kind: str, a: Operand, b: Operand, loc=None) -> Value:
        """add, sub, mul, div, pow, max, min (numpy broadcasting, torch type promotion)."""
        dts = [x.dtype for x in (a, b) if isinstance(x, Value)]
        dt = promote(*dts)
        if kind == "div" and dt not in FLOAT_TYPES:
            dt = "f32"
        is_f = dt in FLOAT_TYPES
        ops = {"add": ("arith.addf", "arith.addi"), "sub": ("arith.subf", "arith.subi"),
               "mul": ("arith.mulf", "arith.muli"), "div": ("arith.divf", None),
               "max": ("arith.maximumf", "arith.maxsi"), "min": ("arith.minimumf", "arith.minsi"),
               "pow": ("math.powf", None)}
        if kind not in ops:
            raise ImportError_("unknown element-wise op %s" % kind)
        op = ops[kind][0 if is_f else 1]
        if op is None:
            raise ImportError_("%s on integer tensors is not supported" % kind)

        def body(args, lines):
            r = self._fresh("r")
            if kind == "pow" and not isinstance(b, Value) and float(b) == 2.0:
                lines.append("%s = arith.mulf %s, %s : %s" % (r, args[0], args[0], dt))
            else:
                lines.append("%s = %s %s, %s : %s" % (r, op, args[0], args[1], dt))
            return r
        return self.generic([a, b], dt, body, kind, loc)

    def unary(self, kind: str, x: Value, loc=None, out_dtype: Optional[str] = None) -> Value:
        """relu, silu, gelu, gelu_tanh, sigmoid, tanh, exp, neg, sqrt, rsqrt, abs, cast."""
        dt = x.dtype
        if kind == "cast":
            return self.generic([x], out_dtype, lambda a, l: a[0], "cast", loc, compute_dtype=out_dtype)
        if dt not in FLOAT_TYPES:
            raise ImportError_("%s needs a float tensor, got %s" % (kind, dt))

        def body(args, lines):
            v = args[0]

            def emit(text):
                r = self._fresh("r")
                lines.append("%s = %s" % (r, text))
                return r

            def const(c):
                return self._scalar(lines, c, dt)
            if kind == "relu":
                return emit("arith.maximumf %s, %s : %s" % (v, const(0.0), dt))
            if kind in ("sigmoid", "silu"):
                e = emit("math.exp %s : %s" % (emit("arith.negf %s : %s" % (v, dt)), dt))
                s = emit("arith.divf %s, %s : %s" % (const(1.0), emit("arith.addf %s, %s : %s" % (const(1.0), e, dt)), dt))
                return s if kind == "sigmoid" else emit("arith.mulf %s, %s : %s" % (v, s, dt))
            if kind == "gelu":
                t = emit("math.erf %s : %s" % (emit("arith.mulf %s, %s : %s" % (v, const(1 / math.sqrt(2)), dt)), dt))
                h = emit("arith.mulf %s, %s : %s" % (v, const(0.5), dt))
                return emit("arith.mulf %s, %s : %s" % (h, emit("arith.addf %s, %s : %s" % (t, const(1.0), dt)), dt))
            if kind == "gelu_tanh":
                cube = emit("arith.mulf %s, %s : %s" % (v, emit("arith.mulf %s, %s : %s" % (v, v, dt)), dt))
                inner = emit("arith.addf %s, %s : %s" % (v, emit("arith.mulf %s, %s : %s" % (cube, const(0.044715), dt)), dt))
                t = emit("math.tanh %s : %s" % (emit("arith.mulf %s, %s : %s" % (inner, const(math.sqrt(2 / math.pi)), dt)), dt))
                h = emit("arith.mulf %s, %s : %s" % (v, const(0.5), dt))
                return emit("arith.mulf %s, %s : %s" % (h, emit("arith.addf %s, %s : %s" % (t, const(1.0), dt)), dt))
            simple = {"tanh": "math.tanh", "exp": "math.exp", "neg": "arith.negf", "sqrt": "math.sqrt",
                      "rsqrt": "math.rsqrt", "abs": "math.absf"}
            if kind in simple:
                return emit("%s %s : %s" % (simple[kind], v, dt))
            raise ImportError_("unknown unary op %s" % kind)
        return self.generic([x], dt, body, kind, loc)

    def where(self, cond: Value, a: Operand, b: Operand, loc=None) -> Value:
        """select(cond, a, b) element-wise with broadcasting; cond is i1."""
        if cond.dtype != "i1":
            raise ImportError_("where: the condition must be boolean, got %s" % cond.dtype)
        dt = promote(*[x.dtype for x in (a, b) if isinstance(x, Value)] or ["f32"])

        def body(args, lines):
            r = self._fresh("r")
            lines.append("%s = arith.select %s, %s, %s : %s" % (r, args[0], args[1], args[2], dt))
            return r
        return self.generic([cond, a, b], dt, body, "where", loc, raw=(0,))

    def compare(self, kind: str, a: Operand, b: Operand, loc=None) -> Value:
        """eq, ne, lt, le, gt, ge -> i1 tensor."""
        dt = promote(*[x.dtype for x in (a, b) if isinstance(x, Value)])
        fpred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
        ipred = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}

        def body(args, lines):
            r = self._fresh("r")
            if dt in FLOAT_TYPES:
                lines.append("%s = arith.cmpf %s, %s, %s : %s" % (r, fpred[kind], args[0], args[1], dt))
            else:
                lines.append("%s = arith.cmpi %s, %s, %s : %s" % (r, ipred[kind], args[0], args[1], dt))
            return r
        return self.generic([a, b], "i1", body, kind, loc, compute_dtype=dt, body_dtype="i1")

    def masked_fill(self, x: Value, mask: Value, value: Scalar, loc=None) -> Value:
        return self.where(mask, value, x, loc)

    # -------------------------------------------------------------- reductions
    def reduce(self, kind: str, x: Value, dims: Sequence[int], keepdim: bool = False, loc=None) -> Value:
        """sum, mean, max over `dims`; f16/bf16 accumulate in f32 (as torch does)."""
        dims = sorted({d % x.rank for d in dims})
        acc = "f32" if x.dtype in ("f16", "bf16") else x.dtype
        out_shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        init_val = {"sum": 0.0, "mean": 0.0, "max": float("-inf")}[kind] if acc in FLOAT_TYPES else 0
        if kind == "max" and acc not in FLOAT_TYPES:
            init_val = -(2 ** (8 * ELEMENT_BYTES[acc] - 1))
        init = self.fill(init_val, out_shape, acc, loc)
        a, o = self._fresh("a"), self._fresh("o")
        lines = []
        av = self._convert(lines, a, x.dtype, acc)
        r = self._fresh("r")
        if acc in FLOAT_TYPES:
            op = "arith.maximumf" if kind == "max" else "arith.addf"
        else:
            op = "arith.maxsi" if kind == "max" else "arith.addi"
        lines.append("%s = %s %s, %s : %s" % (r, op, av, o, acc))
        red = Value(self._fresh(kind), TensorType(out_shape, acc))
        self.body.append("  %s = linalg.reduce ins(%s : %s) outs(%s : %s) dimensions = [%s]"
                         % (red.name, x.name, x.type, init.name, init.type, ", ".join(map(str, dims))))
        self.body.append("    (%s: %s, %s: %s) {" % (a, x.dtype, o, acc))
        for line in lines:
            self.body.append("      " + line)
        self.body.append("      linalg.yield %s : %s" % (r, acc))
        self.body.append("    }" + ((" " + loc) if loc else ""))
        res = red
        if kind == "mean":
            count = 1
            for d in dims:
                count *= x.shape[d]
            res = self.binary("div", res, float(count), loc)
        if res.dtype != x.dtype:
            res = self.unary("cast", res, loc, out_dtype=x.dtype)
        if keepdim:
            res = self.reshape(res, tuple(1 if i in dims else d for i, d in enumerate(x.shape)), loc)
        return res

    def softmax(self, x: Value, dim: int, loc=None) -> Value:
        dim %= x.rank
        out = self.empty(x.shape, x.dtype, loc)
        v = Value(self._fresh("softmax"), x.type)
        self._op("%s = linalg.softmax dimension(%d) ins(%s : %s) outs(%s : %s) -> %s"
                 % (v.name, dim, x.name, x.type, out.name, out.type, v.type), loc)
        return v

    # ------------------------------------------------------------ data layout
    def broadcast(self, x: Value, shape, loc=None, hint: str = "expand") -> Value:
        """numpy broadcast of `x` to `shape` (torch `expand`, ONNX `Expand`):
        a linalg.generic copying `x` whose indexing map drops the new
        leading dims and reads index 0 of each broadcast size-1 dim. Nothing
        of the result's size is materialized besides the result itself (in
        particular no constant: a zero splat of the result's shape would be
        a constant of that size once lowered)."""
        shape = tuple(int(d) for d in shape)
        if x.shape == shape:
            return x
        return self.generic([x], x.dtype, lambda args, lines: args[0], hint, loc, shape=shape)

    def reshape(self, x: Value, shape, loc=None) -> Value:
        """collapse_shape / expand_shape (both when neither alone expresses it)."""
        shape = tuple(int(d) for d in shape)
        if -1 in shape:
            known = 1
            for d in shape:
                if d != -1:
                    known *= d
            shape = tuple(x.type.numel() // known if d == -1 else d for d in shape)
        t = TensorType(shape, x.dtype)
        if t.numel() != x.type.numel():
            raise ImportError_("cannot reshape %s to %s" % (x.type, list(shape)))
        if shape == x.shape:
            return x
        groups = self._groups(x.shape, shape)
        if groups is not None and len(shape) < x.rank:
            return self._collapse(x, groups, t, loc)
        groups = self._groups(shape, x.shape)
        if groups is not None and len(shape) > x.rank:
            return self._expand(x, groups, t, loc)
        flat = self._collapse(x, [list(range(x.rank))], TensorType((x.type.numel(),), x.dtype), loc) \
            if x.rank != 1 else x
        return self._expand(flat, [list(range(len(shape)))], t, loc) if len(shape) != 1 else flat

    @staticmethod
    def _groups(big, small):
        """Reassociation grouping the dims of `big` into those of `small`."""
        if len(small) == 0:
            return [] if all(d == 1 for d in big) else None
        groups, i = [], 0
        for j, d in enumerate(small):
            g, prod = [], 1
            while i < len(big) and (prod < d or not g or (big[i] == 1 and prod == d and j == len(small) - 1)):
                g.append(i)
                prod *= big[i]
                i += 1
                if prod == d and (i >= len(big) or big[i] != 1 or j == len(small) - 1):
                    break
            if prod != d:
                return None
            groups.append(g)
        while i < len(big) and big[i] == 1 and groups:
            groups[-1].append(i)
            i += 1
        return groups if i == len(big) else None

    def _reassoc(self, groups):
        return "[%s]" % ", ".join("[%s]" % ", ".join(map(str, g)) for g in groups)

    def _collapse(self, x, groups, t, loc):
        v = Value(self._fresh("collapse"), t)
        self._op("%s = tensor.collapse_shape %s %s : %s into %s" % (v.name, x.name, self._reassoc(groups), x.type, t), loc)
        return v

    def _expand(self, x, groups, t, loc):
        v = Value(self._fresh("expand"), t)
        self._op("%s = tensor.expand_shape %s %s output_shape [%s] : %s into %s"
                 % (v.name, x.name, self._reassoc(groups), ", ".join(map(str, t.shape)), x.type, t), loc)
        return v

    def transpose(self, x: Value, perm: Sequence[int], loc=None) -> Value:
        perm = [p % x.rank for p in perm]
        if perm == list(range(x.rank)):
            return x
        shape = tuple(x.shape[p] for p in perm)
        out = self.empty(shape, x.dtype, loc)
        v = Value(self._fresh("transpose"), out.type)
        self._op("%s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [%s]"
                 % (v.name, x.name, x.type, out.name, out.type, ", ".join(map(str, perm))), loc)
        return v

    def concat(self, xs: Sequence[Value], dim: int, loc=None) -> Value:
        dim %= xs[0].rank
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        v = Value(self._fresh("concat"), TensorType(tuple(shape), xs[0].dtype))
        self._op("%s = tensor.concat dim(%d) %s : (%s) -> %s"
                 % (v.name, dim, ", ".join(x.name for x in xs), ", ".join(str(x.type) for x in xs), v.type), loc)
        return v

    def slice(self, x: Value, dim: int, start: int, end: int, step: int = 1, loc=None) -> Value:
        dim %= x.rank
        size = x.shape[dim]
        start = max(0, min(size, start + size if start < 0 else start))
        end = max(0, min(size, end + size if end < 0 else end))
        n = max(0, (end - start + step - 1) // step)
        if start == 0 and n == size and step == 1:
            return x
        offs = [0] * x.rank
        sizes = list(x.shape)
        strides = [1] * x.rank
        offs[dim], sizes[dim], strides[dim] = start, n, step
        t = TensorType(tuple(sizes), x.dtype)
        v = Value(self._fresh("slice"), t)
        self._op("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s"
                 % (v.name, x.name, ", ".join(map(str, offs)), ", ".join(map(str, sizes)),
                    ", ".join(map(str, strides)), x.type, t), loc)
        return v

    def split(self, x: Value, sizes: Sequence[int], dim: int, loc=None) -> list:
        out, start = [], 0
        for s in sizes:
            out.append(self.slice(x, dim, start, start + s, 1, loc))
            start += s
        return out

    def embedding(self, table: Value, ids: Value, loc=None) -> Value:
        """out[..., j] = table[ids[...], j] as `sgpu.embedding` (table [V, D],
        i32/i64 ids of any rank, result ids.shape + [D]; an id outside [0, V)
        gives a row of zeros): one op the GPU lowering gathers rows with."""
        if table.rank != 2:
            raise ImportError_("embedding table must be 2-D, got %s" % table.type)
        if ids.dtype not in ("i32", "i64"):
            raise ImportError_("embedding ids must be i32 or i64, got %s" % ids.dtype)
        v = Value(self._fresh("embedding"), TensorType(ids.shape + (table.shape[1],), table.dtype))
        self._op("%s = sgpu.embedding %s, %s : %s, %s -> %s"
                 % (v.name, table.name, ids.name, table.type, ids.type, v.type), loc)
        return v

    # ----------------------------------------------------------- contractions
    def _zero_acc(self, shape, dtype, loc):
        return self.fill(0.0 if dtype in FLOAT_TYPES else 0, shape, dtype, loc)

    def linear(self, x: Value, w: Value, b: Optional[Value] = None, loc=None) -> Value:
        """x[..., K] . w[N, K]^T (+ b[N]): the weight stays N x K and the
        transpose lives in the matmul's indexing_maps."""
        if w.rank != 2 or x.shape[-1] != w.shape[1]:
            raise ImportError_("linear: input %s does not match weight %s" % (x.type, w.type))
        lead = x.shape[:-1]
        m = 1
        for d in lead:
            m *= d
        x2 = self.reshape(x, (m, x.shape[-1]), loc) if x.rank != 2 else x
        n = w.shape[0]
        acc = self._zero_acc((m, n), x.dtype, loc)
        y = Value(self._fresh("linear"), TensorType((m, n), x.dtype))
        w_type = self._type_text(w)
        self._op("%s = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
                 "affine_map<(m, n, k) -> (m, n)>] ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                 % (y.name, x2.name, w.name, x2.type, w_type, acc.name, acc.type, y.type), loc)
        if b is not None:
            y = self.binary("add", y, b, loc)
        return self.reshape(y, lead + (n,), loc) if x.rank != 2 else y

    def _type_text(self, v: Value) -> str:
        """A value's type as declared (keeps a weight's #sgpu.nm encoding)."""
        return self._declared.get(v.name, str(v.type))

    def matmul(self, a: Value, b: Value, transpose_b: bool = False, loc=None) -> Value:
        """a[..., M, K] . b[..., K, N] (b given as [..., N, K] when transpose_b),
        batch dims broadcast; rank 2 -> linalg.matmul, batched -> linalg.batch_matmul."""
        if b.rank == 1 or a.rank == 1:
            raise ImportError_("matmul with a 1-D operand is not supported")
        k = a.shape[-1]
        n = b.shape[-2] if transpose_b else b.shape[-1]
        kb = b.shape[-1] if transpose_b else b.shape[-2]
        if k != kb:
            raise ImportError_("matmul: %s and %s%s do not contract" % (a.type, b.type, " (transposed)" if transpose_b else ""))
        if b.rank == 2:
            if transpose_b:
                return self.linear(a, b, None, loc)
            if a.rank > 2:
                lead = a.shape[:-1]
                m = 1
                for d in lead:
                    m *= d
                y = self.matmul(self.reshape(a, (m, k), loc), b, False, loc)
                return self.reshape(y, lead + (n,), loc)
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        nb = 1
        for d in batch:
            nb *= d
        m = a.shape[-2]

        def as3(v, rows, cols):
            full = batch + (rows, cols)
            if v.shape != full:
                v = self._broadcast_to(v, full, loc)
            return self.reshape(v, (nb, rows, cols), loc) if len(full) != 3 else v
        if a.rank == 2 and b.rank == 2:
            a3, b3 = a, b
        else:
            a3 = as3(a, m, k)
            b3 = as3(b, n, k) if transpose_b else as3(b, k, n)
        rank3 = a3.rank == 3
        out_shape = ((nb,) if rank3 else ()) + (m, n)
        acc = self._zero_acc(out_shape, a.dtype, loc)
        y = Value(self._fresh("matmul"), TensorType(out_shape, a.dtype))
        op = "linalg.batch_matmul" if rank3 else "linalg.matmul"
        if rank3:
            bmap = "(b, n, k)" if transpose_b else "(b, k, n)"
            maps = ("affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> %s>, "
                    "affine_map<(b, m, n, k) -> (b, m, n)>" % bmap)
        else:
            bmap = "(n, k)" if transpose_b else "(k, n)"
            maps = ("affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> %s>, "
                    "affine_map<(m, n, k) -> (m, n)>" % bmap)
        self._op("%s = %s indexing_maps = [%s] ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                 % (y.name, op, maps, a3.name, b3.name, a3.type, b3.type, acc.name, acc.type, y.type), loc)
        return self.reshape(y, batch + (m, n), loc) if rank3 and len(batch) != 1 else y

    def _broadcast_to(self, v: Value, shape, loc):
        return self.broadcast(v, shape, loc, "bcast")

    # ------------------------------------------------ recognized model blocks
    def rms_norm(self, x: Value, weight: Value, eps: float, loc=None) -> Value:
        v = Value(self._fresh("rms_norm"), x.type)
        self._op("%s = sgpu.rms_norm %s, %s {epsilon = %s : f32} : %s, %s -> %s"
                 % (v.name, x.name, weight.name, float_literal(eps, "f32"), x.type, weight.type, v.type), loc)
        return v

    def layer_norm(self, x: Value, weight: Value, bias: Value, eps: float, loc=None) -> Value:
        v = Value(self._fresh("layer_norm"), x.type)
        self._op("%s = sgpu.layer_norm %s, %s, %s {epsilon = %s : f32} : %s, %s, %s -> %s"
                 % (v.name, x.name, weight.name, bias.name, float_literal(eps, "f32"), x.type, weight.type,
                    bias.type, v.type), loc)
        return v

    def attention(self, q: Value, k: Value, v: Value, mask: Optional[Value] = None, causal: bool = False,
                  scale: Optional[float] = None, loc=None, positions: Optional[Value] = None) -> Value:
        """sgpu.attention; with `positions` (B x S integers, causal) k and v
        are a KV cache and query s of sequence b sees keys 0..positions[b, s]."""
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1])
        r = Value(self._fresh("attention"), TensorType(q.shape[:-1] + (v.shape[-1],), q.dtype))
        mask_text = " mask(%s : %s)" % (mask.name, mask.type) if mask is not None else ""
        if positions is not None:
            if k.rank != 4 or q.rank != 4 or positions.shape not in ((q.shape[0], q.shape[2]), (q.shape[2],)):
                raise ImportError_("attention over a cache: positions %s must be batch x query length of %s, "
                                   "or the query length" % (positions.type, q.type))
            if k.shape[0] < q.shape[0]:
                raise ImportError_("attention over a cache: the cache %s holds fewer sequences than the "
                                   "query batch %d" % (k.type, q.shape[0]))
            mask_text += " positions(%s : %s)" % (positions.name, positions.type)
        attrs = "{%sscale = %s : f32}" % ("causal, " if causal else "", float_literal(scale, "f32"))
        self._op("%s = sgpu.attention %s, %s, %s%s %s : %s, %s, %s -> %s"
                 % (r.name, q.name, k.name, v.name, mask_text, attrs, q.type, k.type, v.type, r.type), loc)
        return r

    def rope(self, x: Value, cos: Value, sin: Value, loc=None) -> Value:
        """Rotary embedding as `sgpu.rope`: y[..., i] = x[..., i] * cos[..., i]
        + (i < D/2 ? -x[..., i + D/2] : x[..., i - D/2]) * sin[..., i], i.e.
        `x * cos + rotate_half(x) * sin`; cos and sin have x's element type
        and rank and broadcast to x's shape."""
        for t, what in ((cos, "cos"), (sin, "sin")):
            if t.dtype != x.dtype or t.rank != x.rank:
                raise ImportError_("rope: %s %s does not match x %s (same element type and rank)"
                                   % (what, t.type, x.type))
            if broadcast_shapes(t.shape, x.shape) != x.shape:
                raise ImportError_("rope: %s %s does not broadcast to x %s" % (what, t.type, x.type))
        if x.rank < 1 or x.shape[-1] % 2:
            raise ImportError_("rope: the rotated dimension of %s must be even" % x.type)
        v = Value(self._fresh("rope"), x.type)
        self._op("%s = sgpu.rope %s, %s, %s : %s, %s, %s -> %s"
                 % (v.name, x.name, cos.name, sin.name, x.type, cos.type, sin.type, v.type), loc)
        return v

    def cache_update(self, cache: Value, new: Value, positions: Value, loc=None) -> Value:
        """sgpu.cache_update: `new` (B x H x S x D) written into `cache` (a
        state param, Bmax x H x T x D) at `positions` (B x S)."""
        if cache.rank != 4 or new.rank != 4 or cache.shape[1] != new.shape[1] or \
                cache.shape[3] != new.shape[3] or new.shape[0] > cache.shape[0] or new.shape[2] > cache.shape[2]:
            raise ImportError_("cache_write of %s into a cache %s: expected B x H x S x D into Bmax x H x T x D "
                               "with the same heads and head size, B <= Bmax and S <= T" % (new.type, cache.type))
        if positions.shape not in ((new.shape[0], new.shape[2]), (new.shape[2],)):
            raise ImportError_("cache_write: positions %s must be %dx%d (batch x new tokens) or %d (the same "
                               "for every sequence)" % (positions.type, new.shape[0], new.shape[2], new.shape[2]))
        if new.dtype != cache.dtype:
            new = self.generic([new], cache.dtype, lambda args, lines: args[0], hint="cast", loc=loc)
        v = Value(self._fresh("cache"), cache.type)
        self._op("%s = sgpu.cache_update %s, %s, %s : %s, %s, %s -> %s"
                 % (v.name, cache.name, new.name, positions.name, cache.type, new.type, positions.type, v.type),
                 loc)
        return v

    def all_reduce(self, x: Value, loc=None) -> Value:
        v = Value(self._fresh("all_reduce"), x.type)
        self._op("%s = sgpu.all_reduce %s : %s" % (v.name, x.name, x.type), loc)
        return v

    # --------------------------------------------------------------- the end
    def returns(self, values: Sequence[Value]):
        self.results = list(values)

    def render(self) -> str:
        if self.results is None:
            raise ImportError_("the function has no results")
        attrs = ""
        if self.module_attrs:
            attrs = " attributes {%s}" % ", ".join("%s = %s" % kv for kv in sorted(self.module_attrs.items()))
        sig = ", ".join(["%s: %s" % (a.name, a.type) for a in self.args] +
                        ["%s: %s {sgpu.param = %s%s}" % (v.name, text, string_literal(q),
                                                          ", sgpu.state" if q in self.states else "")
                         for v, text, q in self.params])
        rtypes = ", ".join(str(r.type) for r in self.results)
        out = ["module%s {" % attrs,
               "func.func @%s(%s) -> (%s) {" % (self.name, sig, rtypes)]
        out += self.body
        out.append("  return %s : %s" % (", ".join(r.name for r in self.results), rtypes))
        out.append("}")
        out.append("}")
        if self.resources:
            out.append("{-#")
            out.append("  dialect_resources: {")
            out.append("    builtin: {")
            items = []
            for key, (align, data) in self.resources.items():
                items.append('      %s: "0x%s%s"' % (key, struct.pack("<I", align).hex().upper(), data.hex().upper()))
            out.append(",\n".join(items))
            out.append("    }")
            out.append("  }")
            out.append("#-}")
        return "\n".join(out) + "\n"
