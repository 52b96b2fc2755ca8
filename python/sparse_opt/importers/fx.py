"""torch.fx importer: an `nn.Module`, a `torch.fx.GraphModule` or a
`torch.export.ExportedProgram` to SparseOpt's input IR (docs/input-ir.md),
built through `Emitter`.

    from sparse_opt.importers.fx import import_fx
    mlir = import_fx(model, (x,), sparsity={"fc.weight": "2:4"}, dtype="f16")
    mlir = import_fx(torch.export.export(model, (x,)))   # torch 2.x

An ExportedProgram's ATen graph is first unlifted (fx_export.py: parameters
and buffers become attributes of their qualified names) and its ATen ops map
onto the same calls (fx_aten.py), so both reach the same canonical IR.

Steps: trace (a module; the `sparse_opt.markers.all_reduce` marker stays a
call), run the graph once on the example inputs to learn every value's static
shape and fold the Python ints it computes (`x.size(0) // 2`), recognize the
block ops (fx_patterns.py), then emit node by node (fx_ops.py; the calls
are classified by fx_forms.py). Parameters and buffers become arguments
the program binds by qualified name (`weights="params"`, the default) or
`dense_resource` constants named by their qualified names
(`weights="constants"`).
Anything the importer cannot express raises `ImportError_` naming the op, the
node, its module and its source line.
"""
from __future__ import annotations

import copy
import difflib
import dis
import inspect
import linecache
import operator
import os
import re
from typing import Optional

import torch
import torch.fx
from torch.fx import GraphModule, Node

from .. import markers
from . import fx_aten, fx_export, fx_forms, fx_ops, fx_patterns, fx_registry
from .emitter import AnnotationError, Emitter, ImportError_, Value, check_nm, check_nm_type, parse_pattern
from .fx_call import ParamRef
from .fx_forms import FoldedTranspose, mlir_dtype, MLIR_TO_TORCH

__all__ = ["import_fx", "FxImporter", "trace", "supported_ops", "WEIGHT_MODES"]

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MARKERS = os.path.abspath(markers.__file__)

# How parameters and buffers reach the program: as arguments the program
# binds by name ("params", the default) or as constants holding their data.
WEIGHT_MODES = ("params", "constants")

_DTYPE_OPTION = {"f16": "f16", "float16": "f16", "half": "f16", torch.float16: "f16",
                 "bf16": "bf16", "bfloat16": "bf16", torch.bfloat16: "bf16",
                 "f32": "f32", "float32": "f32", "float": "f32", torch.float32: "f32"}

# Queries whose (Python) results depend on shapes only, folded at import time.
_SHAPE_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "is_floating_point"}
_SHAPE_ATTRS = {"shape", "ndim", "device", "is_cuda"}


def _in_torch(path: str) -> bool:
    """A frame of torch itself: this torch's, or any installed torch's (a
    program exported on another machine)."""
    return os.path.abspath(path).startswith(_TORCH_DIR) or \
        re.search(r"[/\\](site|dist)-packages[/\\]torch[/\\]", path) is not None


def _user_source():
    """(file, line, text) of the innermost frame outside torch and this package."""
    f = inspect.currentframe()
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename) if not f.f_code.co_filename.startswith("<") \
            else f.f_code.co_filename
        if not (fn.startswith(_TORCH_DIR) or fn.startswith(_HERE) or fn == _MARKERS):
            return fn, f.f_lineno, linecache.getline(fn, f.f_lineno).strip()
        f = f.f_back
    return None


_UNKNOWN = object()


def _length(value):
    """How many items iterating `value` gives (None when not known): a shape
    (torch.Size), a tuple or list, or a tensor along its first dim."""
    if isinstance(value, (tuple, list)):
        return len(value)
    if isinstance(value, torch.Tensor) and value.dim() > 0:
        return int(value.shape[0])
    return None


class _ShapeAware:
    """Proxy behaviour for values whose length the example inputs fix: `b, s,
    d = x.shape`, `*lead, d = x.shape`, `len(x.shape)`, `for d in x.shape`
    iterate or measure the value the tracer computed alongside the graph
    (`_Tracer.value`), so static shapes unpack like Python tuples. Without a
    known value, `a, b = proxy` still unpacks by the count in the bytecode:
    torch 1.13 finds that UNPACK_SEQUENCE by indexing the instructions with
    `f_lasti // 2`, which Python 3.11's inline caches break, so it is looked
    up by its offset here (as torch 2.x does)."""

    def __iter__(self):
        n = _length(self.tracer.value(self.node))
        if n is None:
            frame = inspect.currentframe().f_back
            inst = None
            for i in dis.get_instructions(frame.f_code):
                if i.offset > frame.f_lasti:
                    break
                inst = i
            if inst is None or inst.opname != "UNPACK_SEQUENCE":
                return self.tracer.iter(self)
            n = inst.argval
        return (self[i] for i in range(n))

    def __len__(self):
        n = _length(self.tracer.value(self.node))
        if n is None:
            raise torch.fx.proxy.TraceError("len() of a value whose length the example inputs do not fix")
        return n

    def __getattr__(self, k):
        return _Attribute(self, k)


class _Proxy(_ShapeAware, torch.fx.Proxy):
    def __setitem__(self, key, value):
        # `cache[:, :, pos] = new` (a static KV cache): an operator.setitem
        # node, as torch 2.x's tracer records it (1.13's has no __setitem__).
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class _Attribute(_ShapeAware, torch.fx.proxy.Attribute):
    """`x.shape`, `x.T`: torch.fx makes its node lazily (a method call needs none)."""


def _meta_tensor(x):
    """A tensor's stand-in for shape evaluation: its shape and dtype on the
    meta device (no data, nothing computed)."""
    return x.detach().to("meta") if isinstance(x, torch.Tensor) else x


def _raw_attr(root, qualname):
    """An attribute by qualified name without Module.__getattr__ (which
    tracing patches to return proxies)."""
    obj = root
    for part in qualname.split("."):
        d = obj.__dict__
        for store in (d, d.get("_parameters", {}), d.get("_buffers", {}), d.get("_modules", {})):
            if part in store:
                obj = store[part]
                break
        else:
            raise AttributeError(qualname)
    return obj


def _has_proxy(v) -> bool:
    found = []
    torch.fx.node.map_aggregate(v, lambda x: found.append(x) if isinstance(x, torch.fx.Proxy) else None)
    return bool(found)


def _module_value(m, args, kwargs):
    """A leaf module's result on meta tensors, for the modules the importer
    knows (they keep no state a call updates). Tracing patches Module.__call__
    and makes parameter reads proxies, so the parameters are read from the
    module's own dict and the stateless ones run their forward."""
    if not fx_forms.is_known_module(m):
        return _UNKNOWN
    state = {k: _meta_tensor(v) for k, v in m.__dict__.get("_parameters", {}).items()}
    if isinstance(m, torch.nn.Linear):
        return torch.nn.functional.linear(args[0], state["weight"], state.get("bias"))
    if isinstance(m, torch.nn.Embedding):
        return torch.nn.functional.embedding(args[0], state["weight"])
    if state:
        return args[0]  # a norm: the input's shape and type
    return m.forward(*args, **kwargs)


class _Tracer(torch.fx.Tracer):
    """Keeps the all_reduce marker a call and records, per node, the module it
    ran in and the user source line. With example inputs it also evaluates
    each node as it is created, on meta tensors (shapes and Python values,
    no data), for the proxies to unpack and measure (`_ShapeAware`)."""

    def __init__(self, example_inputs=None):
        super().__init__(autowrap_functions=(markers.all_reduce, markers.cache_write, markers.cached_attention))
        self.proxy_buffer_attributes = True  # torch 2.x's default: `self.mask[:, :, :t, :t]` traces
        self._paths = []
        self._examples = None if example_inputs is None else tuple(example_inputs)
        self._values = {}    # node -> its value on meta tensors
        self._placeholders = 0

    def proxy(self, node):
        return _Proxy(node, self)

    def value(self, node):
        """The node's value computed while tracing (_UNKNOWN when not known)."""
        return self._values.get(node, _UNKNOWN)

    def _evaluate(self, node):
        def arg(n):
            v = self._values.get(n, _UNKNOWN)
            if v is _UNKNOWN:
                raise LookupError(n.name)
            return v
        if node.op == "placeholder":
            i, self._placeholders = self._placeholders, self._placeholders + 1
            if i < len(self._examples):
                return _meta_tensor(self._examples[i])
            return node.args[0] if node.args else _UNKNOWN
        if node.op == "get_attr":
            return _meta_tensor(_raw_attr(self.root, node.target))
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), arg)
        args, kwargs = torch.fx.node.map_aggregate((args, kwargs), _meta_tensor)
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "call_module":
            return _module_value(self.root.get_submodule(node.target), args, kwargs)
        return _UNKNOWN

    def _record_value(self, node):
        if self._examples is None:
            return
        try:
            with torch.no_grad():
                v = self._evaluate(node)
        except Exception:  # an op without meta support, a data-dependent value: unknown
            v = _UNKNOWN
        if v is not _UNKNOWN and not _has_proxy(v):
            self._values[node] = v

    def call_module(self, m, forward, args, kwargs):
        self._paths.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._paths.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        if self._paths:
            node.meta["sparse_opt_module"] = self._paths[-1]
        src = _user_source()
        if src:
            node.meta["sparse_opt_source"] = src
        self._record_value(node)
        return node


def _failing_source(err):
    """' (file:line: text)' of the innermost user frame of an exception's
    traceback (outside torch and this package), or ''."""
    found = None
    tb = err.__traceback__
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(fn) if not fn.startswith("<") else fn
        if not (path.startswith(_TORCH_DIR) or path.startswith(_HERE) or path == _MARKERS or fn.startswith("<")):
            found = (fn, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return ""
    text = linecache.getline(found[0], found[1]).strip()
    return " (%s:%d%s)" % (found[0], found[1], ": " + text if text else "")


def trace(module: torch.nn.Module, example_inputs=None) -> GraphModule:
    """Symbolically traces `module` with the all_reduce marker kept as a call.
    With `example_inputs`, static shapes unpack and measure as tuples while
    tracing (`b, s, d = x.shape`, `len(x.shape)`)."""
    tracer = _Tracer(example_inputs)
    try:
        graph = tracer.trace(module)
    except Exception as err:
        raise ImportError_("torch.fx could not trace %s%s: %s: %s" % (type(module).__name__, _failing_source(err),
                                                                     type(err).__name__, err)) from err
    return GraphModule(tracer.root, graph, type(module).__name__)


def _module_path(path: str) -> str:
    """A module path as torch.export's nn_module_stack may spell it
    (`L['self'].layers[0].attn`, `L['self']._modules['mlp']`) -> `layers.0.attn`, `mlp`."""
    path = str(path)
    for prefix in ("L['self'].", "L['self']", "L__self___", "L__self__"):
        if path.startswith(prefix):
            path = path[len(prefix):]
            break
    path = re.sub(r"\._modules\['([^']*)'\]", r".\1", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']*)'\]", r".\1", path)
    return path.strip(".")


def _has_tensor(x) -> bool:
    if isinstance(x, torch.Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(y) for y in x)
    if isinstance(x, dict):
        return any(_has_tensor(y) for y in x.values())
    return False


def _meta(x):
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), x.dtype)
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_meta(y) for y in x) if not hasattr(x, "_fields") else tuple(_meta(y) for y in x)
    return x


def tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


class _RunFailed(Exception):
    def __init__(self, node, err):
        super().__init__(str(err))
        self.node, self.err = node, err


class _Recorder(torch.fx.Interpreter):
    """Runs the graph once, recording each node's result shape (by name), the
    Python values computed from shapes (folded), and tensor values that the
    example inputs do not influence."""

    def __init__(self, gm, imp):
        super().__init__(gm)
        self.imp = imp

    def run_node(self, n):
        if n.op == "call_function" and fx_aten.is_noop(n.target):
            return None  # a runtime check of torch.export: it holds for the program as exported
        try:
            result = super().run_node(n)
        except Exception as err:
            result = self._on_meta(n, err)
        self.imp._record(n, result)
        return result

    def _on_meta(self, n, err):
        """Runs `n` again with every tensor on the meta device when one of its
        operands (or a called module's parameter) is there (a model built
        without weights): torch 1.13 mixes meta and CPU tensors in most ops,
        not in all (a 0-d meta operand), torch 2.x in none."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        metas = []
        torch.fx.node.map_aggregate((args, kwargs), lambda x: metas.append(x) if isinstance(
            x, torch.Tensor) and x.is_meta else None)
        if n.op == "call_module":
            m = self.module.get_submodule(n.target)
            metas += [t for t in list(m.parameters()) + list(m.buffers()) if t.is_meta]
        if not metas:
            raise _RunFailed(n, err) from err
        args, kwargs = torch.fx.node.map_aggregate((args, kwargs), _meta_tensor)
        try:
            return getattr(self, n.op)(n.target, args, kwargs)
        except Exception:
            raise _RunFailed(n, err) from err


class FxImporter:
    """Imports one model: `run()` returns the MLIR text. The constructor traces
    (when given a module), checks the sparsity annotations, records shapes and
    folds shape arithmetic, and matches the block patterns. Handlers (fx_ops)
    and pattern emitters (fx_patterns) use: `e` (the Emitter), `loc` and
    `node` (of the node being emitted), `value()`, `operand()`, `call()`,
    `shape()`, `out_shape()`, `const()`, `number()`, `known()`,
    `known_data()`, `constant_tensor()`, `is_sparse()`.

    `weights` ("params" or "constants", see `import_fx`) decides what
    `param()` makes of a parameter or buffer; `state` holds the qualified
    names of the model's parameters and buffers (other tensor attributes,
    such as constants a trace captured, are always constants), `aliases`
    maps each of those names to the canonical one of its tensor: a tensor
    shared under several names (tied weights: a GPT-2 LM head's weight is
    the embedding's) is one param, named by its first name in
    `named_parameters()` (`named_buffers()`) order."""

    def __init__(self, module, example_inputs=None, *, name: str = "forward", sparsity: Optional[dict] = None,
                 dtype=None, weights: str = "params"):
        if dtype is not None and dtype not in _DTYPE_OPTION:
            raise ImportError_("dtype=%r: expected 'f16', 'bf16' or 'f32'" % (dtype,))
        if weights not in WEIGHT_MODES:
            raise ImportError_("weights=%r: expected 'params' or 'constants'" % (weights,))
        self.dtype = _DTYPE_OPTION.get(dtype) if dtype is not None else None
        self.weights = weights
        self.exported = fx_export.is_exported_program(module)
        if self.exported:
            # torch.export: the unlifted graph holds the parameters by their
            # qualified names; the example inputs default to the program's.
            self.gm, self.inputs = fx_export.prepare(module, example_inputs)
            self.root = self.gm
            self.aliases = {n: n for n in fx_export.state_names(module)}
        else:
            if example_inputs is None:
                raise ImportError_("example_inputs are needed to import a %s (they fix the static shapes)"
                                   % type(module).__name__)
            if isinstance(example_inputs, torch.Tensor):
                example_inputs = (example_inputs,)
            self.inputs = tuple(example_inputs)
            self.root = module
            self.gm = module if isinstance(module, GraphModule) else trace(module, self.inputs)
            self.aliases = state_aliases(module)
        # Every name a parameter or buffer is reached under (tied weights:
        # several), each mapped to the one its param is named by.
        self.state = set(self.aliases)
        self.sparsity = self._check_sparsity(sparsity or {})
        self.e = Emitter(name)
        self.loc = None
        self.node = None
        self.env = {}
        self._calls = {}
        self._meta = {}      # node name -> recorded result structure
        self._static = {}    # node name -> value folded at import time
        self._known = {}     # node name -> tensor value independent of the inputs
        self._params = {}    # qualified name -> Value
        self._tensors = {}   # id(static tensor) -> Value
        self._sparse = {}    # SSA name -> (parameter, pattern)
        self._fell_back = False
        self._propagate()
        self.matches, self.absorbed, self.folds = fx_patterns.find(self)
        self.live = fx_patterns.live_nodes(self, self.matches, self.absorbed)

    # ------------------------------------------------------------ checking
    def _check_sparsity(self, sparsity):
        """The annotations, checked: a pattern of the (2N-2):2N family on a 2-D
        f16/bf16 parameter (after the dtype option); with weights='constants'
        the data too (with 'params' the program checks it when bound)."""
        params = dict(self.root.named_parameters())
        names = [n for n in self.aliases if self.aliases[n] in params] or list(params)
        out, given = {}, {}
        for pname, pattern in sparsity.items():
            try:
                parse_pattern(pattern)
            except AnnotationError as err:
                raise AnnotationError("sparsity annotation for '%s': %s" % (pname, err)) from None
            canon = self.canonical(pname)
            if canon not in params:
                close = difflib.get_close_matches(pname, names, n=1)
                raise AnnotationError("sparsity annotation names '%s', which is not a parameter of the model%s"
                                      % (pname, "; did you mean '%s'?" % close[0] if close else ""))
            if canon in given and parse_pattern(sparsity[given[canon]]) != parse_pattern(pattern):
                raise AnnotationError("sparsity annotations for '%s' (%s) and '%s' (%s) differ, but they name one "
                                      "(tied) parameter" % (given[canon], sparsity[given[canon]], pname, pattern))
            given[canon] = pname
            pname = canon
            t = params[pname].detach()
            what = "weight '%s'" % pname
            check_nm_type(tuple(t.shape), self.declared_dtype(t), pattern, what)
            if self.weights == "constants":
                t = self._cast_param(self._data(pname, t, "weights='constants' checks the annotated weight"))
                check_nm(tensor_bytes(t), tuple(t.shape), mlir_dtype(t.dtype), pattern, what)
            out[pname] = pattern
        return out

    def _cast_param(self, t):
        if self.dtype is not None and t.is_floating_point():
            t = t.to(MLIR_TO_TORCH[self.dtype])
        return t

    def declared_dtype(self, t: torch.Tensor) -> str:
        """The element type a parameter has in the IR: float ones take the
        dtype option (a param's binder casts the caller's tensor to it)."""
        return self.dtype if self.dtype is not None and t.is_floating_point() else mlir_dtype(t.dtype)

    @staticmethod
    def _data(name: str, t: torch.Tensor, why: str) -> torch.Tensor:
        """`t` when its data can be read; a tensor on the meta device (a model
        built without weights) raises ImportError_ naming it and why."""
        if t.is_meta:
            raise ImportError_("'%s' is on the meta device (it holds no data), but %s" % (name, why))
        return t

    # ------------------------------------------------ shapes and folding
    def _propagate(self):
        by_name = {n.name: n for n in self.gm.graph.nodes}
        try:
            with torch.no_grad():
                _Recorder(self.gm, self).run(*self.inputs)
            return
        except _RunFailed as failed:
            first = failed
        low = [t for t in list(self.gm.parameters()) + list(self.gm.buffers()) + list(self.inputs)
               if isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16)]
        if low:
            # Half-precision ops missing on this CPU: shapes are the same in f32.
            self._meta.clear(), self._static.clear(), self._known.clear()
            self._fell_back = True
            gm32 = copy.deepcopy(self.gm).float()
            inputs = tuple(x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                           for x in self.inputs)
            try:
                with torch.no_grad():
                    _Recorder(gm32, self).run(*inputs)
                return
            except _RunFailed:
                pass
        node = by_name.get(first.node.name, first.node)
        raise ImportError_("running the model on the example inputs failed at %s %s: %s: %s"
                           % (fx_forms.describe_target(node, self.gm), self.where(node),
                              type(first.err).__name__, first.err)) from first.err

    def _record(self, n, result):
        name = n.name
        self._meta[name] = _meta(result)
        inputs = n.all_input_nodes
        has_t = _has_tensor(result)
        static = False
        if n.op == "placeholder":
            static = not has_t
        elif n.op in ("call_function", "call_method"):
            shape_query = not has_t and (
                (n.op == "call_method" and n.target in _SHAPE_METHODS) or
                (n.op == "call_function" and n.target is getattr and len(n.args) > 1 and
                 (n.args[1] in _SHAPE_ATTRS or (n.args[1] == "dtype" and self.dtype is None and
                                                not self._fell_back))) or
                (n.op == "call_function" and n.target in (len, torch.numel)))
            static = shape_query or all(i.name in self._static for i in inputs)
        if static:
            self._static[name] = result
        if has_t and (static or n.op == "get_attr" or (
                n.op in ("call_function", "call_method") and inputs and
                all(i.name in self._known or i.name in self._static for i in inputs))):
            self._known[name] = result

    # --------------------------------------------------- context for ops
    def call(self, node, strict=False):
        """The classified call of a node (None when unknown)."""
        if node not in self._calls:
            try:
                self._calls[node] = fx_forms.classify(node, self.gm)
            except ImportError_:
                if strict:
                    raise
                return None
        return self._calls[node]

    def shape(self, node) -> Optional[tuple]:
        m = self._meta.get(node.name) if isinstance(node, Node) else None
        return m[1] if isinstance(m, tuple) and len(m) == 3 and m[0] == "tensor" else None

    def out_shape(self) -> tuple:
        s = self.shape(self.node)
        if s is None:
            raise ImportError_("no static shape recorded for %s" % self.node.name)
        return s

    _NOT_CONST = object()

    def const(self, arg):
        """A Python value known at import time, else a sentinel."""
        if isinstance(arg, Node):
            return self._static.get(arg.name, self._NOT_CONST)
        return arg

    def tensor_dtype(self, node) -> Optional[torch.dtype]:
        m = self._meta.get(node.name) if isinstance(node, Node) else None
        return m[2] if isinstance(m, tuple) and len(m) == 3 and m[0] == "tensor" else None

    def number(self, arg):
        v = self.const(arg)
        if v is self._NOT_CONST:
            # A 0-d tensor computed from constants only (torch.export lifts
            # `torch.tensor(-inf)` to a constant input).
            k = self.known(arg)
            if isinstance(k, torch.Tensor) and k.dim() == 0:
                if self._bound_later(arg):
                    return None
                v = self.known_data(arg, "as a number")
        if isinstance(v, torch.Tensor) and v.dim() == 0:
            v = v.item()
        return v if fx_ops.is_number(v) else None

    def known(self, node):
        return self._known.get(node.name) if isinstance(node, Node) else None

    def known_data(self, node, why: str):
        """known(node) where the importer reads its data (a mask it checks for
        the causal pattern, a 0-d scale): a value computed from tensors on the
        meta device raises ImportError_ naming them."""
        t = self.known(node)
        if isinstance(t, torch.Tensor) and t.is_meta:
            names = sorted(n for n, v in self._attr_sources(node).items() if v.is_meta) or [node.name]
            raise ImportError_("%s %s on the meta device (it holds no data), but the importer reads it %s at %s; "
                               "load %s first" % (", ".join("'%s'" % n for n in names),
                                                  "is" if len(names) == 1 else "are", why, self.where(node),
                                                  "it" if len(names) == 1 else "them"))
        return t

    def _attr_sources(self, node) -> dict:
        """{qualified name: tensor} of the attributes `node` is computed from."""
        out, seen, work = {}, set(), [node]
        while work:
            n = work.pop()
            if n in seen:
                continue
            seen.add(n)
            if n.op == "get_attr" and isinstance(self.known(n), torch.Tensor):
                out[n.target] = self.known(n)
            work.extend(n.all_input_nodes)
        return out

    def _bound_later(self, node) -> bool:
        """Whether `node` computes on parameters or buffers that the program
        binds (weights='params'): its value at import time is not the one
        the program runs on, so it is no number to fold (a 0-d parameter
        itself is: see `_materialize`)."""
        return self.weights == "params" and node.op != "get_attr" and \
            any(n in self.state for n in self._attr_sources(node))

    def is_sparse(self, v: Value) -> bool:
        return v.name in self._sparse

    def operand(self, arg, allow_folded=False, sparse_ok=False):
        """Resolves an FX argument: Values for tensors, Python values otherwise."""
        if isinstance(arg, Node):
            if arg not in self.env:
                raise ImportError_("%s is used before it is defined" % arg.name)
            r = self.env[arg]
            if isinstance(r, FoldedTranspose) and not allow_folded:
                base = self.value(r.base)
                r = self.e.transpose(base, list(range(base.rank - 2)) + [base.rank - 1, base.rank - 2], self.loc)
            r = self._materialize(r, arg.name)
        else:
            r = self._materialize(arg, "const")
        if isinstance(r, Value) and not sparse_ok and r.name in self._sparse:
            pname, pattern = self._sparse[r.name]
            raise AnnotationError("weight '%s' is annotated %s but %s uses it other than as a linear layer's "
                                  "weight" % (pname, pattern, self.node.name if self.node is not None else "?"))
        return r

    def value(self, arg, sparse_ok=False) -> Value:
        v = self.operand(arg, sparse_ok=sparse_ok)
        if isinstance(v, (bool, int, float)) and isinstance(arg, (Node, ParamRef)):
            # A 0-d tensor folded to a scalar, needed as a tensor here.
            dt = "i1" if isinstance(v, bool) else "i64" if isinstance(v, int) else (self.dtype or "f32")
            return self.e.splat(v, (), dt, self.loc)
        if not isinstance(v, Value):
            raise ImportError_("expected a tensor, got %r" % (v,))
        return v

    def _materialize(self, r, hint):
        if isinstance(r, ParamRef):
            t = self._attr(r.name)
            if t.dim() == 0:
                # A 0-d parameter acts as a scalar (torch does not promote with
                # it), and sparse-opt crashes on a rank-0 dense_resource: its
                # value is read here, whatever `weights` says.
                return self._cast_param(self._data(r.name, t.detach(), "a 0-d tensor is read as a number")).item()
            return self.param(r.name)
        if isinstance(r, torch.Tensor):
            if r.dim() == 0:
                return r.item()
            return self.constant_tensor(r, hint)
        if isinstance(r, torch.Size):
            return tuple(r)
        if isinstance(r, (list, tuple)):
            return type(r)(self._materialize(x, hint) for x in r) if not hasattr(r, "_fields") else \
                tuple(self._materialize(x, hint) for x in r)
        if isinstance(r, slice):
            return slice(self.operand(r.start), self.operand(r.stop), self.operand(r.step))
        if isinstance(r, Node):
            return self.operand(r)
        if isinstance(r, dict):
            return {k: self._materialize(v, hint) for k, v in r.items()}
        return r

    def canonical(self, qualname: str) -> str:
        """The name a parameter or buffer is imported under: its first name
        when it is shared under several (tied weights)."""
        return self.aliases.get(qualname, qualname)

    def param(self, qualname: str) -> Value:
        """A parameter or buffer (or other tensor attribute) of the model. With
        weights='params' a parameter or buffer is a function argument named
        by `sgpu.param` (its declared type only: no data is read, so it may
        live on the meta device); otherwise, and for other attributes, a
        constant holding its data. A tensor reached under several names
        (tied weights) is one argument (or constant), named by `canonical`."""
        qualname = self.canonical(qualname)
        if qualname in self._params:
            return self._params[qualname]
        t = self._attr(qualname).detach()
        enc = self.sparsity.get(qualname)
        if self.weights == "params" and qualname in self.state:
            v = self.e.param(tuple(t.shape), self.declared_dtype(t), qualname, encoding=enc)
        else:
            v = self._constant_attr(qualname, t, enc)
        if enc:
            self._sparse[v.name] = (qualname, enc)
        self._params[qualname] = v
        return v

    def write_state(self, qualname: str, update) -> Value:
        """A write into buffer `qualname` that the program keeps between runs
        (a KV cache): the buffer becomes a param marked as state, `update`
        (param value -> updated value) emits the write, and later reads of
        the buffer see the updated value."""
        qualname = self.canonical(qualname)
        if qualname not in self.state:
            raise ImportError_("'%s' is written as a cache but is no parameter or buffer of the model" % qualname)
        if self.weights != "params":
            raise ImportError_("the cache buffer '%s' is state the program updates in place: import with "
                               "weights='params' (the default)" % qualname)
        if qualname in self._params and qualname in self.e.states:
            raise ImportError_("the cache buffer '%s' is written twice in one forward; write it once" % qualname)
        cache = self.param(qualname)
        self.e.states.add(qualname)
        updated = update(cache)
        self._params[qualname] = updated
        return updated

    def _constant_attr(self, qualname: str, t: torch.Tensor, enc: Optional[str]) -> Value:
        why = ("weights='constants' reads every parameter and buffer" if qualname in self.state
               else "it is a tensor constant of the graph")
        t = self._cast_param(self._data(qualname, t, why).cpu())
        # The emitter keys the blob by the sanitized name; a key must not start
        # with a digit (`nn.Sequential`'s "0.weight"), so prefix one.
        key = "_" + qualname if qualname[:1].isdigit() else qualname
        return self.e.constant(tensor_bytes(t), tuple(t.shape), mlir_dtype(t.dtype), name=key, encoding=enc,
                               loc=Emitter.loc(qualname))

    def _attr(self, qualname: str) -> torch.Tensor:
        obj = self.gm
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if not isinstance(obj, torch.Tensor):
            raise ImportError_("attribute '%s' is not a tensor" % qualname)
        return obj

    def constant_tensor(self, t: torch.Tensor, name: str) -> Value:
        """A tensor computed at import time (not a parameter) as a constant."""
        key = id(t)
        if key not in self._tensors:
            c = self._cast_param(t.detach().cpu())
            name = "_" + name if name[:1].isdigit() else name
            self._tensors[key] = (self.e.constant(tensor_bytes(c), tuple(c.shape), mlir_dtype(c.dtype), name=name,
                                                  loc=self.loc), t)  # keeps t alive: ids stay unique
        return self._tensors[key][0]

    # ---------------------------------------------------------- locations
    def source(self, node, generated: bool = False):
        """(module path, file, line, text) of a node, as far as known; with
        `generated`, a node without a user source line (a GraphModule traced
        elsewhere, a program exported without stack traces) gets its line in
        the GraphModule's generated code."""
        path = node.meta.get("sparse_opt_module")
        if path is None and node.meta.get("nn_module_stack"):
            last = list(node.meta["nn_module_stack"].values())[-1]
            path = _module_path(last[0] if isinstance(last, (tuple, list)) else str(last))
        if node.op == "call_module":
            path = node.target
        src = node.meta.get("sparse_opt_source")
        if src is None and node.stack_trace:
            frames = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)', node.stack_trace)
            frames = [f for f in frames if not _in_torch(f[0])]
            if frames:
                src = (frames[-1][0], int(frames[-1][1]), frames[-1][2].strip())
        if src is None and generated:
            src = self._generated_line(node)
        return (path or None,) + (tuple(src) if src else (None, None, None))

    def _generated_line(self, node):
        """(file, line, text) of the statement computing `node` in the
        GraphModule's generated forward (torch.fx compiles it under a
        `<eval_with_key>.N` file name), or None."""
        try:
            code = self.gm.code
            file = type(self.gm).forward.__code__.co_filename
        except Exception:
            return None
        head = "return " if node.op == "output" else "%s = " % node.name
        for i, text in enumerate(code.splitlines()):
            if text.strip().startswith(head):
                return file, i + 1, text.strip()
        return None

    def where(self, node) -> str:
        path, file, line, text = self.source(node, generated=True)
        s = "node '%s'" % node.name
        if path:
            s += " in module '%s'" % path
        if file:
            s += " (%s:%d%s)" % (file, line, ": %s" % text if text else "")
        return s

    def _loc(self, node) -> str:
        path, file, line, _ = self.source(node)
        if node.op == "call_module":
            name = node.target
        elif path:
            name = "%s/%s" % (path, node.name)
        else:
            name = node.name
        return Emitter.loc(name, os.path.basename(file) if file else None, line)

    # ----------------------------------------------------------- emission
    def run(self) -> str:
        placeholders = 0
        for node in self.gm.graph.nodes:
            self.node, self.loc = node, self._loc(node)
            if node in self.absorbed or (node not in self.live and node.op != "placeholder"):
                continue
            try:
                if node.op == "placeholder":
                    self.env[node] = self._argument(node, placeholders)
                    placeholders += 1
                else:
                    self.env[node] = self._emit(node)
            except ImportError_ as err:
                if getattr(err, "_located", False):
                    raise
                new = type(err)("%s at %s: %s" % (fx_forms.describe_target(node, self.gm), self.where(node), err))
                new._located = True
                raise new from err
            except Exception as err:
                new = ImportError_("%s at %s: %s: %s" % (fx_forms.describe_target(node, self.gm), self.where(node),
                                                         type(err).__name__, err))
                new._located = True
                raise new from err
        return self.e.render()

    def _argument(self, node, index):
        if index < len(self.inputs):
            x = self.inputs[index]
        elif node.args:
            x = node.args[0]
        else:
            raise ImportError_("no example input for argument '%s'" % node.name)
        if not isinstance(x, torch.Tensor):
            return x
        dt = mlir_dtype(x.dtype)
        if self.dtype is not None and x.is_floating_point():
            dt = self.dtype
        name = node.name + ("_" if re.search(r"_\d+$", node.name) else "")
        return self.e.argument(tuple(x.shape), dt, name)

    def _emit(self, node):
        if node.op == "get_attr":
            return ParamRef(node.target)
        if node.op == "output":
            self.e.returns([self._result(v) for v in self._flatten(node.args[0])])
            return None
        if node.name in self._static:
            return self._static[node.name]
        if node in self.matches:
            return fx_patterns.emit(self, self.matches[node])
        call = self.call(node, strict=True)
        if node in self.folds:
            return FoldedTranspose(call.args["input"])
        if call is None or fx_registry.handler(call.kind) is None:
            err = ImportError_("unsupported op %s at %s" % (fx_forms.describe_target(node, self.gm), self.where(node)))
            err._located = True
            raise err
        result = fx_registry.handler(call.kind)(self, call)
        results = call.extra.get("results")
        if results:
            # A multi-result ATen op (native_layer_norm, an attention kernel):
            # its first result only, read through getitem.
            what = fx_forms.describe_target(node, self.gm)
            result = (result,) + tuple(fx_ops.NoValue(what) for _ in range(results - 1))
        return result

    def _flatten(self, out):
        if isinstance(out, (list, tuple)):
            return [y for x in out for y in self._flatten(x)]
        if isinstance(out, dict):
            return [y for x in out.values() for y in self._flatten(x)]
        return [out]

    def _result(self, arg):
        v = self.operand(arg, sparse_ok=True)
        if not isinstance(v, Value):
            raise ImportError_("the model returns a %s, not a tensor" % type(v).__name__)
        return v


def state_aliases(module) -> dict:
    """{qualified name: canonical name} for every name under which a module's
    parameters and buffers are reachable. A tensor shared under several
    names (tied weights, a module registered twice) maps each of them to
    its first name in `named_parameters()` (then `named_buffers()`) order,
    which deduplicates shared tensors (as `remove_duplicate=False` does not
    exist before torch 2.0, every name is found by walking the modules)."""
    first = {}
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        first.setdefault(id(t), name)
    out = {}
    for prefix, m in module.named_modules(remove_duplicate=False):
        for store in ("_parameters", "_buffers"):
            for key, t in m.__dict__.get(store, {}).items():
                if t is None:
                    continue
                name = "%s.%s" % (prefix, key) if prefix else key
                out[name] = first.get(id(t), name)
    return out


def supported_ops() -> list:
    """The names of the ops the fx importer lowers: every kind fx_ops has a
    handler for (the kinds torch functions, tensor methods, nn modules and
    ATen ops are classified as) and the blocks fx_patterns recognizes."""
    return sorted(set(fx_registry.HANDLERS) | set(fx_patterns.BLOCKS))


def import_fx(module_or_graph_module, example_inputs=None, *, name: str = "forward", sparsity: Optional[dict] = None,
              dtype=None, weights: str = "params") -> str:
    """Imports a model to SparseOpt's input IR (MLIR text).

    The model is an `nn.Module`, a `torch.fx.GraphModule` or (torch 2.x) a
    `torch.export.ExportedProgram`. `example_inputs` fix the static shapes
    (and the dtypes of the arguments); an ExportedProgram brings its own,
    so there they are optional (a tuple of its user inputs when given).
    `sparsity` maps qualified parameter names to N:M patterns ('2:4', '6:8',
    ...) on 2-D f16/bf16 weights; `dtype` ('f16' / 'bf16') casts float
    parameters and inputs.

    `weights`: "params" (the default) makes every parameter and buffer the
    graph reads a function argument after the model's inputs, named by its
    qualified name (`{sgpu.param = "layers.0.attn.q.weight"}`), which the
    program binds once (`Program.bind_module(model)`); no weight data is
    read, so the model may live on the meta device, and a sparse weight's
    pattern is checked when it is bound. A tensor reached under several
    names (tied weights) is one argument, named by its first name in
    `named_parameters()` order. "constants" embeds their data as
    `dense_resource` blobs and checks sparse weights now. Either way,
    tensors the importer reads to recognize a block (a causal mask buffer)
    are read, and tensors computed at import time are constants."""
    return FxImporter(module_or_graph_module, example_inputs, name=name, sparsity=sparsity, dtype=dtype,
                      weights=weights).run()
