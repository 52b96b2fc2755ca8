"""ONNX models to SparseOpt's input IR (docs/input-ir.md).

    from sparse_opt.importers.onnx_importer import import_onnx
    mlir = import_onnx("model.onnx", sparsity={"fc1.weight": "2:4"},
                       input_shapes={"ids": (1, 16)}, dtype="f16")

The graph is walked once in topological order. Values known at import time
(initializers, `Constant` nodes, shape computations) are folded with numpy
(`onnx_fold`); every other node becomes emitter calls (`onnx_ops`), except
where `onnx_patterns` recognized a block (RMSNorm, attention, GELU, SiLU, a
linear layer with its bias, a matmul with a transposed right operand): its
nodes are skipped and the block's last node emits the canonical op.

Weights. With `weights="params"` (the default) every initializer that
reaches the program as a tensor is a function argument after the graph's
inputs, named by the initializer (`{sgpu.param = "fc1.weight"}`), which the
program binds once; "constants" embeds the data as `dense_resource` blobs.
Either way initializers are read where the importer needs their values
(shape tensors, Reshape targets and other integer computations still fold;
a scalar, a mask it recognizes as causal), and values computed at import
time are constants. As params, float initializers are not folded: a
`Transpose` (or Cast, Reshape, ...) of a weight initializer becomes a
run-time op on the param.

Linear layers and sparsity annotations. A linear layer is `Gemm` or
`MatMul(x, W)` with a constant 2-D `W`; its weight is N x K (the torch
`nn.Linear` layout): a constant is transposed at import time for `MatMul`'s
K x N initializer and keeps the initializer's name, while a param keeps the
initializer's K x N layout and is transposed at run time. `sparsity` maps a
weight to an N:M pattern ('2:4', '6:8', ...) on f16/bf16 (after `dtype`).
The key is either the initializer's name (`fc1.weight`, or
`onnx::MatMul_12` after torch's constant folding) or the torch-style name
derived from the node's scope (`/layers.0/mlp/up/MatMul` ->
`layers.0.mlp.up.weight`). The pattern is checked on the N x K layout:
groups of m along K in each output row, i.e. on the torch weight; as a
param, only an N x K initializer (Gemm transB=1, `MatMul(x, Transpose(W))`)
can carry one, and the program checks it when the weight is bound.
"""
from __future__ import annotations

import numbers
import os
from typing import Optional

import numpy as np

try:
    import onnx
    from google.protobuf.message import DecodeError
except ImportError as _err:  # pragma: no cover - onnx missing
    raise ImportError("the ONNX importer needs the 'onnx' package: %s" % _err) from None

from . import onnx_ops, onnx_patterns
from .emitter import FLOAT_TYPES, AnnotationError, Emitter, ImportError_, Value, parse_pattern

WEIGHT_MODES = ("params", "constants")
from .onnx_fold import (ONNX_TO_DTYPE, Const, attrs_of, const_bytes, fold, is_param, onnx_type_name,
                        tensor_to_const)

STANDARD_DOMAINS = ("", "ai.onnx")


def weight_name(node) -> Optional[str]:
    """`/layers.0/attn/q/MatMul` -> `layers.0.attn.q.weight` (torch's scope names)."""
    parts = [p for p in (node.name or "").split("/") if p]
    if not node.name.startswith("/") or len(parts) < 2:
        return None
    return ".".join(parts[:-1]) + ".weight"


def _shape_option(name, value):
    """input_shapes[name] as a tuple of positive ints, or an ImportError_."""
    try:
        shape = tuple(value)
    except TypeError:
        shape = None
    if shape is None or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
                                for d in shape):
        raise ImportError_("input_shapes gives input '%s' the shape %r: sizes must be positive integers"
                           % (name, value))
    return tuple(int(d) for d in shape)


class OnnxImporter:
    """One ONNX model -> one MLIR module with a single function."""

    def __init__(self, model, *, name: str = "forward", sparsity: Optional[dict] = None,
                 input_shapes: Optional[dict] = None, dtype: Optional[str] = None, source: str = "<model>",
                 weights: str = "params"):
        if dtype is not None and dtype not in FLOAT_TYPES:
            raise ImportError_("dtype must be one of %s, got %r" % (", ".join(FLOAT_TYPES), dtype))
        if weights not in WEIGHT_MODES:
            raise ImportError_("weights=%r: expected 'params' or 'constants'" % (weights,))
        self.weights = weights
        if not isinstance(model, onnx.ModelProto):
            model, source = load_model(model)
        self.model = model
        self.source = source
        self.dtype = dtype
        self.sparsity = dict(sparsity or {})
        for key, pattern in self.sparsity.items():
            try:
                parse_pattern(pattern)
            except AnnotationError as err:
                raise AnnotationError("sparsity annotation '%s': %s" % (key, err)) from None
        self.input_shapes = {k: _shape_option(k, v) for k, v in (input_shapes or {}).items()}
        self.e = Emitter(name)
        self.env: dict = {}
        self._materialized: dict = {}
        self._params: dict = {}  # (initializer, encoding or "T") -> Value
        self._used_sparsity: set = set()
        self._pending: set = set()
        self._names = 0
        self.body_names = 0  # SSA names in the bodies onnx_ops builds itself

    # ------------------------------------------------------------ the driver
    def run(self) -> str:
        g = self._check_model()
        for t in g.initializer:
            c = tensor_to_const(t, "initializer '%s' of %s" % (t.name, self.source))
            if self.weights == "params":
                c.param = t.name
            self.env[t.name] = c
        args = [vi for vi in g.input if vi.name not in self.env]
        unknown = set(self.input_shapes) - {vi.name for vi in args}
        if unknown:
            raise ImportError_("input_shapes names %s, which %s not among the model's inputs (%s)"
                               % (", ".join(sorted(unknown)), "is" if len(unknown) == 1 else "are",
                                  ", ".join(vi.name for vi in args) or "none"))
        for vi in args:
            self.env[vi.name] = self._argument(vi)
        self.nodes = self._topological(g)
        self.graph = onnx_patterns.GraphIndex(self.nodes, [o.name for o in g.output])
        self._check_sparsity_names(g)
        matches = onnx_patterns.find_matches(self.graph)
        absorbed = set()
        for m in matches.values():
            absorbed |= set(m.nodes) - {m.root}
        for idx in range(len(self.nodes)):
            if idx in absorbed:
                continue
            if idx in matches:
                self._emit_match(matches[idx])
            else:
                self.emit_node(idx)
        results = []
        for o in g.output:
            v = self.get(o.name)
            results.append(self.tensor(v, o.name))
        self._check_sparsity_used(g)
        self.e.returns(results)
        return self.e.render()

    def _check_model(self):
        m = self.model
        if not m.HasField("graph") or not m.graph.output:
            raise ImportError_("%s is not a usable ONNX model: it has no graph or the graph has no outputs "
                               "(truncated or not an ONNX file?)" % self.source)
        if not m.opset_import:
            raise ImportError_("%s is not a usable ONNX model: it declares no opset "
                               "(truncated or not an ONNX file?)" % self.source)
        self.opset = 0
        for o in m.opset_import:
            if o.domain in STANDARD_DOMAINS:
                self.opset = o.version
        return m.graph

    def _topological(self, g):
        """The nodes in an order where producers come first (checking that
        every input is defined somewhere)."""
        defined = set(self.env)
        producer = {}
        for i, n in enumerate(g.node):
            for o in n.output:
                if o:
                    producer[o] = i
        order, state = [], {}
        for start in range(len(g.node)):
            stack = [(start, False)]
            while stack:
                i, done = stack.pop()
                if done:
                    state[i] = 2
                    order.append(g.node[i])
                    continue
                if state.get(i):
                    if state[i] == 1:
                        raise ImportError_("%s: the graph has a cycle through node '%s'" % (self.source, g.node[i].name))
                    continue
                state[i] = 1
                stack.append((i, True))
                for name in g.node[i].input:
                    if not name or name in defined:
                        continue
                    if name not in producer:
                        n = g.node[i]
                        raise ImportError_("%s: node '%s' (%s) uses '%s', which no node, input or initializer "
                                           "defines (truncated or malformed model?)"
                                           % (self.source, n.name or n.output[0], n.op_type, name))
                    j = producer[name]
                    if state.get(j) == 1:
                        raise ImportError_("%s: the graph has a cycle through node '%s'" % (self.source, g.node[j].name))
                    if not state.get(j):
                        stack.append((j, False))
        for o in g.output:
            if o.name not in defined and o.name not in producer:
                raise ImportError_("%s: graph output '%s' is never computed (truncated or malformed model?)"
                                   % (self.source, o.name))
        return order

    def _argument(self, vi) -> Value:
        name = vi.name
        if not vi.type.HasField("tensor_type"):
            raise ImportError_("input '%s' is not a tensor" % name)
        tt = vi.type.tensor_type
        if tt.elem_type not in ONNX_TO_DTYPE:
            raise ImportError_("input '%s' has element type %s, which SparseOpt does not support"
                               % (name, onnx_type_name(tt.elem_type)))
        dims = list(tt.shape.dim) if tt.HasField("shape") else None
        if name in self.input_shapes:
            shape = self.input_shapes[name]
            if dims is not None:
                if len(dims) != len(shape):
                    raise ImportError_("input_shapes gives input '%s' rank %d, the model says rank %d"
                                       % (name, len(shape), len(dims)))
                for i, (d, s) in enumerate(zip(dims, shape)):
                    if d.HasField("dim_value") and d.dim_value != s:
                        raise ImportError_("input_shapes gives input '%s' size %d in dim %d, the model says %d"
                                           % (name, s, i, d.dim_value))
        else:
            if dims is None:
                raise ImportError_("input '%s' has no shape in the model; give it with input_shapes={'%s': (...)}"
                                   % (name, name))
            shape = []
            for i, d in enumerate(dims):
                if not d.HasField("dim_value"):
                    sym = d.dim_param or "?"
                    raise ImportError_("input '%s' has a symbolic dimension '%s' (dim %d); static shapes are required: "
                                       "pass input_shapes={'%s': (...)} (on the command line: --input-shape %s=DxD)"
                                       % (name, sym, i, name, name))
                shape.append(int(d.dim_value))
        return self.e.argument(tuple(shape), self.fdt(ONNX_TO_DTYPE[tt.elem_type]), name)

    # ------------------------------------------------------------ the nodes
    def get(self, name):
        """The Const or Value of an ONNX value (None for a missing optional
        input). Inside a recognized block, a value the block did not absorb
        after all is emitted on demand from its (skipped) producer."""
        if not name:
            return None
        if name in self.env:
            return self.env[name]
        idx = self.graph.producer.get(name)
        if idx is not None and idx in self._pending:
            self.emit_node(idx)
            return self.env[name]
        raise ImportError_("value '%s' is used before it is defined" % name)

    def emit_node(self, idx):
        node = self.nodes[idx]
        self._pending.discard(idx)
        try:
            xs = [self.get(n) for n in node.input]
            at = attrs_of(node)
            outs = None if self._reads_param(node, xs) else fold(node, xs, at)
            if outs is None:
                handler = onnx_ops.handler(node)
                if handler is None:
                    raise ImportError_("unsupported ONNX op '%s'%s in node '%s' (outputs: %s) of %s"
                                       % (node.op_type, " of domain '%s'" % node.domain if node.domain else "",
                                          node.name, ", ".join("'%s'" % o for o in node.output), self.source))
                outs = handler(self, node, xs, at)
        except ImportError_ as err:
            raise self._in_node(node, err) from None
        except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, AttributeError) as err:
            raise self._in_node(node, ImportError_("%s: %s" % (type(err).__name__, err))) from err
        self._bind(node, outs)

    @staticmethod
    def _reads_param(node, xs) -> bool:
        """Whether `node` computes on the data of a float initializer that is a
        param (so it is not folded: it runs on the bound weight); a Shape
        reads only the shape."""
        return node.op_type not in ("Shape", "Size") and any(
            is_param(x) and x.dtype in FLOAT_TYPES for x in xs)

    def _bind(self, node, outs):
        for name, v in zip(node.output, outs):
            if name:
                if isinstance(v, Const) and v.name is None:
                    v.name = name
                self.env[name] = v
        for name in node.output[len(outs):]:
            if name and self.graph.used(name):
                raise self._in_node(node, ImportError_("output '%s' is used but not supported" % name))

    def _in_node(self, node, err):
        if getattr(err, "onnx_node", None):
            return err
        msg = str(err)
        if not msg.startswith("unsupported ONNX op"):
            msg = "%s node '%s' (outputs: %s): %s" % (node.op_type, node.name,
                                                      ", ".join("'%s'" % o for o in node.output), msg)
        new = type(err)(msg)
        new.onnx_node = node.name or node.output[0]
        return new

    def _emit_match(self, m, rejected=frozenset()):
        root = self.nodes[m.root]
        self._pending = set(m.nodes) - {m.root}
        try:
            outs = m.emit(self, m)
        except onnx_patterns.Fallback:
            outs = None
        except ImportError_ as err:
            raise self._in_node(root, err) from None
        except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, AttributeError) as err:
            raise self._in_node(root, ImportError_("recognizing a %s block: %s: %s"
                                                   % (m.kind, type(err).__name__, err))) from err
        if outs is not None:
            self._bind(root, outs)
            self._pending = set()
            return
        # The block did not check out: emit its nodes not emitted yet one by
        # one, except for the smaller blocks found among them.
        group = self._pending | {m.root}
        self._pending = set()
        rejected = rejected | {(m.root, m.kind)}
        subs = onnx_patterns.find_matches(self.graph, within=group, rejected=rejected)
        absorbed = set()
        for sub in subs.values():
            absorbed |= set(sub.nodes) - {sub.root}
        for idx in sorted(group):
            if idx in subs:
                self._emit_match(subs[idx], rejected)
            elif idx not in absorbed:
                self.emit_node(idx)

    # --------------------------------------------------- services for ops
    def loc(self, node) -> str:
        return Emitter.loc(node.name or node.output[0])

    def fdt(self, dtype: str) -> str:
        """A float type under the `dtype` override."""
        return self.dtype if self.dtype and dtype in FLOAT_TYPES else dtype

    def tensor(self, x, name: Optional[str] = None, loc: Optional[str] = None) -> Value:
        """A runtime Value for `x` (a Const becomes an MLIR constant)."""
        if isinstance(x, Value):
            return x
        if not isinstance(x, Const):
            raise ImportError_("missing operand")
        return self.materialize(x, name, loc)

    def materialize(self, c: Const, name: Optional[str] = None, loc: Optional[str] = None) -> Value:
        dtype = self.fdt(c.dtype)
        if dtype.startswith("ui"):
            raise ImportError_("unsigned constants (%s) cannot be expressed" % dtype)
        if is_param(c):
            return self.param(c)
        key = (c.source, c.shape, dtype) if c.source else id(c)
        hit = self._cached(key, c)
        if hit is not None:
            return hit
        label = c.source or name or c.name
        if label is None:
            self._names += 1
            label = "cst%d" % self._names
        arr = c.array
        if c.source is None and arr.size > 1 and (arr.reshape(-1) == arr.reshape(-1)[0]).all():
            v = self.e.splat(Const(arr.reshape(-1)[:1], c.dtype).scalar(), c.shape, dtype, loc or Emitter.loc(label))
        else:
            v = self.e.constant(const_bytes(c, dtype), c.shape, dtype, name=label, loc=Emitter.loc(label))
        self._materialized.setdefault(key, []).append((c, v))  # keeps c alive so id() stays unique
        return v

    def param(self, c: Const, encoding: Optional[str] = None) -> Value:
        """The argument of initializer `c` (a param), one per initializer and
        encoding."""
        key = (c.param, encoding)
        if key not in self._params:
            self._params[key] = self.e.param(c.shape, self.fdt(c.dtype), c.param, encoding=encoding)
        return self._params[key]

    def _cached(self, key, c: Const):
        """The Value already made for the same data (views of one
        initializer share a key; the data decides)."""
        for old, v in self._materialized.get(key, ()):
            if old is c or old.array is c.array or np.array_equal(old.array, c.array):
                return v
        return None

    def operand(self, x, *others):
        """A Python scalar for a one-element Const that broadcasting does
        not need as a tensor, else a Value."""
        if isinstance(x, Const) and x.array.size == 1 and x.dtype != "i1":
            # (never a bool: the emitter renders i1 scalars as `false : i1`, which does not parse)
            ranks = [o.rank for o in others if isinstance(o, (Value, Const))]
            if ranks and x.rank <= max(ranks) and any(isinstance(o, Value) for o in others):
                return x.scalar()
        return self.tensor(x)

    def scalar(self, name):
        """The value of a one-element constant (None if not constant)."""
        c = self.get(name)
        return c.scalar() if isinstance(c, Const) else None

    def linear_weight(self, c: Const, transposed: bool, node, loc=None) -> Value:
        """A linear layer's weight as an N x K constant; `transposed` when
        `c` is K x N (MatMul's layout). Applies the sparsity annotation."""
        if c.rank != 2:
            raise ImportError_("a linear weight must be 2-D, got %s" % list(c.shape))
        dtype = self.fdt(c.dtype)
        names = list(dict.fromkeys(n for n in (c.source, weight_name(node)) if n))
        patterns = {self.sparsity[n] for n in names if n in self.sparsity}
        if len(patterns) > 1:
            raise AnnotationError("weight '%s' has conflicting sparsity annotations %s"
                                  % (names[0], sorted(patterns)))
        pattern = patterns.pop() if patterns else None
        self._used_sparsity |= {n for n in names if n in self.sparsity}
        if is_param(c):
            return self._param_weight(c, transposed, pattern, names, loc or self.loc(node))
        key = ("linear", c.source or id(c), c.shape, transposed, dtype, pattern)
        hit = self._cached(key, c)
        if hit is not None:
            return hit
        arr = np.ascontiguousarray(c.array.T if transposed else c.array)
        label = c.source or (names[-1] if names else "weight")
        try:
            v = self.e.constant(const_bytes(Const(arr, c.dtype), dtype), arr.shape, dtype, name=label,
                                encoding=pattern, loc=Emitter.loc(label))
        except AnnotationError as err:
            used = [n for n in names if n in self.sparsity]
            raise AnnotationError("%s (annotated as %s; checked on the %d x %d (N x K) layout%s)" % (
                err, " / ".join("'%s'" % n for n in used),
                arr.shape[0], arr.shape[1], ", the transpose of the K x N initializer" if transposed else "")) from None
        self._materialized.setdefault(key, []).append((c, v))
        return v

    def _param_weight(self, c: Const, transposed: bool, pattern, names, loc) -> Value:
        """A linear weight that is a param: an N x K initializer as is (with
        its encoding), a K x N one transposed at run time (where no encoding
        can apply: the program binds the initializer as stored)."""
        if not transposed:
            return self.param(c, pattern)
        if pattern:
            used = [n for n in names if n in self.sparsity]
            raise AnnotationError(
                "weight '%s' (annotated as %s) is a K x N MatMul initializer: as a param the program binds it as "
                "stored, and %s sparsity needs the N x K layout; import with weights='constants' (the weight is "
                "transposed at import time) or export the layer as Gemm(transB=1)"
                % (c.param, " / ".join("'%s'" % n for n in used), pattern))
        key = (c.param, "T")
        if key not in self._params:
            self._params[key] = self.e.transpose(self.param(c), [1, 0], loc)
        return self._params[key]

    # ------------------------------------------------------------ sparsity
    def _check_sparsity_names(self, g):
        if not self.sparsity:
            return
        known = {t.name for t in g.initializer}
        known |= {weight_name(n) for n in self.nodes if n.op_type in ("MatMul", "Gemm") and weight_name(n)}
        for key in self.sparsity:
            if key not in known:
                linear = sorted({weight_name(n) or n.input[1] for n in self.nodes if n.op_type in ("MatMul", "Gemm")})
                raise AnnotationError("sparsity annotation names '%s', which is neither an initializer nor a linear "
                                      "weight of %s (linear weights: %s)"
                                      % (key, self.source, ", ".join(linear[:12]) + (", ..." if len(linear) > 12 else "")))

    def _check_sparsity_used(self, g):
        for key in sorted(set(self.sparsity) - self._used_sparsity):
            raise AnnotationError("sparsity annotation '%s': %s is not the constant 2-D weight of a linear layer "
                                  "(MatMul or Gemm) in %s" % (key, "this initializer" if any(
                                      t.name == key for t in g.initializer) else "this weight", self.source))


def load_model(model_or_path):
    """(ModelProto, a name for messages); malformed files give ImportError_."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path, "the ONNX model" + (" of graph '%s'" % model_or_path.graph.name
                                                  if model_or_path.graph.name else "")
    if isinstance(model_or_path, (bytes, bytearray)):
        source, data = "the ONNX model bytes", bytes(model_or_path)
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, ValueError, RuntimeError) as err:
            raise ImportError_("%s cannot be parsed as an ONNX protobuf (%s)" % (source, err)) from None
        return model, source
    path = os.fspath(model_or_path)
    source = "'%s'" % path
    if not os.path.isfile(path):
        raise ImportError_("ONNX model file %s does not exist" % source)
    try:
        model = onnx.load(path)
    except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError) as err:
        reason = str(err) or type(err).__name__
        raise ImportError_("ONNX model file %s cannot be read: %s (truncated, corrupt or not an ONNX file?)"
                           % (source, reason)) from None
    except Exception as err:  # protobuf/onnx internals raise assorted types
        raise ImportError_("ONNX model file %s cannot be read: %s: %s (truncated, corrupt or not an ONNX file?)"
                           % (source, type(err).__name__, err)) from None
    return model, source


def import_onnx(model_or_path, *, name: str = "forward", sparsity: Optional[dict] = None,
                input_shapes: Optional[dict] = None, dtype: Optional[str] = None, weights: str = "params") -> str:
    """MLIR text (SparseOpt's input IR) for an ONNX model or .onnx file.

    sparsity: {weight or initializer name: 'n:m'} (see the module docstring).
    input_shapes: static shapes for inputs with symbolic dims, {'ids': (1, 16)}.
    dtype: 'f16' / 'bf16' / 'f32' converts every float input, weight and cast.
    weights: 'params' (initializers become arguments named by the
    initializer, bound once by the program) or 'constants' (their data in
    the IR); see the module docstring.
    """
    model, source = load_model(model_or_path)
    return OnnxImporter(model, name=name, sparsity=sparsity, input_shapes=input_shapes, dtype=dtype,
                        source=source, weights=weights).run()
