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
block ops (fx_patterns.py), then emit node by node (fx_ops.py). Parameters and
buffers become `dense_resource` constants named by their qualified names.
Anything the importer cannot express raises `ImportError_` naming the op, the
node, its module and its source line.
"""
from __future__ import annotations

import copy
import difflib
import dis
import inspect
import linecache
import os
import re
from typing import Optional

import torch
import torch.fx
from torch.fx import GraphModule, Node

from .. import markers
from . import fx_aten, fx_export, fx_ops, fx_patterns
from .emitter import AnnotationError, Emitter, ImportError_, Value, check_nm, parse_pattern
from .fx_ops import FoldedTranspose, ParamRef, mlir_dtype, MLIR_TO_TORCH

__all__ = ["import_fx", "FxImporter", "trace"]

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MARKERS = os.path.abspath(markers.__file__)

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


class _Proxy(torch.fx.Proxy):
    """torch 1.13 finds the UNPACK_SEQUENCE of `a, b = proxy` by indexing the
    instructions with `f_lasti // 2`, which Python 3.11's inline caches break:
    look the instruction up by its offset instead (as torch 2.x does)."""

    def __iter__(self):
        frame = inspect.currentframe().f_back
        inst = None
        for i in dis.get_instructions(frame.f_code):
            if i.offset > frame.f_lasti:
                break
            inst = i
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)


class _Tracer(torch.fx.Tracer):
    """Keeps the all_reduce marker a call and records, per node, the module it
    ran in and the user source line."""

    def __init__(self):
        super().__init__(autowrap_functions=(markers.all_reduce,))
        self.proxy_buffer_attributes = True  # torch 2.x's default: `self.mask[:, :, :t, :t]` traces
        self._paths = []

    def proxy(self, node):
        return _Proxy(node, self)

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
        return node


def trace(module: torch.nn.Module) -> GraphModule:
    """Symbolically traces `module` with the all_reduce marker kept as a call."""
    tracer = _Tracer()
    try:
        graph = tracer.trace(module)
    except Exception as err:
        raise ImportError_("torch.fx could not trace %s: %s: %s" % (type(module).__name__, type(err).__name__, err)) \
            from err
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
            raise _RunFailed(n, err) from err
        self.imp._record(n, result)
        return result


class FxImporter:
    """Imports one model: `run()` returns the MLIR text. The constructor traces
    (when given a module), checks the sparsity annotations, records shapes and
    folds shape arithmetic, and matches the block patterns. Handlers (fx_ops)
    and pattern emitters (fx_patterns) use: `e` (the Emitter), `loc` and
    `node` (of the node being emitted), `value()`, `operand()`, `call()`,
    `shape()`, `out_shape()`, `const()`, `number()`, `known()`,
    `constant_tensor()`, `is_sparse()`."""

    def __init__(self, module, example_inputs=None, *, name: str = "forward", sparsity: Optional[dict] = None,
                 dtype=None):
        if dtype is not None and dtype not in _DTYPE_OPTION:
            raise ImportError_("dtype=%r: expected 'f16', 'bf16' or 'f32'" % (dtype,))
        self.dtype = _DTYPE_OPTION.get(dtype) if dtype is not None else None
        self.exported = fx_export.is_exported_program(module)
        if self.exported:
            # torch.export: the unlifted graph holds the parameters by their
            # qualified names; the example inputs default to the program's.
            self.gm, self.inputs = fx_export.prepare(module, example_inputs)
            self.root = self.gm
        else:
            if example_inputs is None:
                raise ImportError_("example_inputs are needed to import a %s (they fix the static shapes)"
                                   % type(module).__name__)
            if isinstance(example_inputs, torch.Tensor):
                example_inputs = (example_inputs,)
            self.inputs = tuple(example_inputs)
            self.root = module
            self.gm = module if isinstance(module, GraphModule) else trace(module)
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
        params = dict(self.root.named_parameters())
        out = {}
        for pname, pattern in sparsity.items():
            try:
                parse_pattern(pattern)
            except AnnotationError as err:
                raise AnnotationError("sparsity annotation for '%s': %s" % (pname, err)) from None
            if pname not in params:
                close = difflib.get_close_matches(pname, list(params), n=1)
                raise AnnotationError("sparsity annotation names '%s', which is not a parameter of the model%s"
                                      % (pname, "; did you mean '%s'?" % close[0] if close else ""))
            t = self._cast_param(params[pname].detach())
            check_nm(tensor_bytes(t), tuple(t.shape), mlir_dtype(t.dtype), pattern, "weight '%s'" % pname)
            out[pname] = pattern
        return out

    def _cast_param(self, t):
        if self.dtype is not None and t.is_floating_point():
            t = t.to(MLIR_TO_TORCH[self.dtype])
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
                           % (fx_ops.describe_target(node, self.gm), self.where(node),
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
                self._calls[node] = fx_ops.classify(node, self.gm)
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
                v = k
        if isinstance(v, torch.Tensor) and v.dim() == 0:
            v = v.item()
        return v if fx_ops.is_number(v) else None

    def known(self, node):
        return self._known.get(node.name) if isinstance(node, Node) else None

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
                # it), and sparse-opt crashes on a rank-0 dense_resource.
                return self._cast_param(t.detach()).item()
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

    def param(self, qualname: str) -> Value:
        """A parameter or buffer (or other tensor attribute) as a constant."""
        if qualname in self._params:
            return self._params[qualname]
        t = self._cast_param(self._attr(qualname).detach().cpu())
        enc = self.sparsity.get(qualname)
        # The emitter keys the blob by the sanitized name; a key must not start
        # with a digit (`nn.Sequential`'s "0.weight"), so prefix one.
        key = "_" + qualname if qualname[:1].isdigit() else qualname
        v = self.e.constant(tensor_bytes(t), tuple(t.shape), mlir_dtype(t.dtype), name=key, encoding=enc,
                            loc=Emitter.loc(qualname))
        if enc:
            self._sparse[v.name] = (qualname, enc)
        self._params[qualname] = v
        return v

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
    def source(self, node):
        """(module path, file, line, text) of a node, as far as known."""
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
        return (path or None,) + (tuple(src) if src else (None, None, None))

    def where(self, node) -> str:
        path, file, line, text = self.source(node)
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
                new = type(err)("%s at %s: %s" % (fx_ops.describe_target(node, self.gm), self.where(node), err))
                new._located = True
                raise new from err
            except Exception as err:
                new = ImportError_("%s at %s: %s: %s" % (fx_ops.describe_target(node, self.gm), self.where(node),
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
        if call is None or call.kind not in fx_ops.HANDLERS:
            err = ImportError_("unsupported op %s at %s" % (fx_ops.describe_target(node, self.gm), self.where(node)))
            err._located = True
            raise err
        result = fx_ops.HANDLERS[call.kind](self, call)
        results = call.extra.get("results")
        if results:
            # A multi-result ATen op (native_layer_norm, an attention kernel):
            # its first result only, read through getitem.
            what = fx_ops.describe_target(node, self.gm)
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


def import_fx(module_or_graph_module, example_inputs=None, *, name: str = "forward", sparsity: Optional[dict] = None,
              dtype=None) -> str:
    """Imports a model to SparseOpt's input IR (MLIR text).

    The model is an `nn.Module`, a `torch.fx.GraphModule` or (torch 2.x) a
    `torch.export.ExportedProgram`. `example_inputs` fix the static shapes
    (and the dtypes of the arguments); an ExportedProgram brings its own,
    so there they are optional (a tuple of its user inputs when given).
    `sparsity` maps qualified parameter names to N:M patterns ('2:4', '6:8',
    ...) checked against the weights; `dtype` ('f16' / 'bf16') casts float
    parameters and inputs."""
    return FxImporter(module_or_graph_module, example_inputs, name=name, sparsity=sparsity, dtype=dtype).run()
