"""torch.fx importer: an `nn.Module`, a `torch.fx.GraphModule` or a
`torch.export.ExportedProgram` to SparseOpt's input IR (docs/input-ir.md),
built through `Emitter`.

    from sparse_opt.importers.fx import import_fx
    mlir = import_fx(model, (x,), sparsity={"fc.weight": "2:4"}, dtype="f16")
    mlir = import_fx(torch.export.export(model, (x,)))   # torch 2.x

An ExportedProgram's ATen graph is first unlifted (fx_export.py: parameters
and buffers become attributes of their qualified names) and its ATen ops map
onto the same calls (fx_aten.py), so both reach the same canonical IR.

Steps: trace (a module, fx_trace.py; the `sparse_opt.markers.all_reduce`
marker stays a call), run the graph once on the example inputs to learn every
value's static shape and fold the Python ints it computes (`x.size(0) // 2`,
fx_values.py), recognize the block ops (fx_patterns.py), then emit node by
node (fx_ops.py; the calls are classified by fx_forms.py). Parameters and buffers become arguments
the program binds by qualified name (`weights="params"`, the default) or
`dense_resource` constants named by their qualified names
(`weights="constants"`).
Anything the importer cannot express raises `ImportError_` naming the op, the
node, its module and its source line.
"""
from __future__ import annotations

import difflib
import os
import re
from typing import Optional

import torch
from torch.fx import GraphModule, Node

from . import fx_export, fx_forms, fx_ops, fx_patterns, fx_registry
from .emitter import AnnotationError, Emitter, ImportError_, Value, check_nm, check_nm_type, parse_pattern
from .fx_call import ParamRef
from .fx_forms import FoldedTranspose, mlir_dtype, MLIR_TO_TORCH
from .fx_trace import in_torch, trace
from .fx_values import NOT_CONST, FoldedValues

__all__ = ["import_fx", "FxImporter", "supported_ops", "WEIGHT_MODES"]

# How parameters and buffers reach the program: as arguments the program
# binds by name ("params", the default) or as constants holding their data.
WEIGHT_MODES = ("params", "constants")

_DTYPE_OPTION = {"f16": "f16", "float16": "f16", "half": "f16", torch.float16: "f16",
                 "bf16": "bf16", "bfloat16": "bf16", torch.bfloat16: "bf16",
                 "f32": "f32", "float32": "f32", "float": "f32", torch.float32: "f32"}


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


def tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


class FxImporter:
    """Imports one model: `run()` returns the MLIR text. The constructor traces
    (when given a module), checks the sparsity annotations, runs the graph once
    to record shapes and fold shape arithmetic (`values`, a `FoldedValues`),
    and matches the block patterns. Handlers (fx_ops)
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
        self._params = {}    # qualified name -> Value
        self._tensors = {}   # id(static tensor) -> Value
        self._sparse = {}    # SSA name -> (parameter, pattern)
        self.values = FoldedValues(self.gm, self.inputs, dtype=self.dtype, where=self.where,
                                   bound=self.state if weights == "params" else ())
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

    # Values known at import time, from the recording run (`values`).
    def shape(self, node) -> Optional[tuple]:
        return self.values.shape(node)

    def out_shape(self) -> tuple:
        s = self.shape(self.node)
        if s is None:
            raise ImportError_("no static shape recorded for %s" % self.node.name)
        return s

    def const(self, arg):
        """A Python value known at import time, else `NOT_CONST`."""
        return self.values.const(arg)

    def tensor_dtype(self, node) -> Optional[torch.dtype]:
        return self.values.tensor_dtype(node)

    def number(self, arg):
        return self.values.number(arg)

    def known(self, node):
        return self.values.known(node)

    def known_data(self, node, why: str):
        return self.values.known_data(node, why)

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
            frames = [f for f in frames if not in_torch(f[0])]
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
        folded = self.values.const(node)
        if folded is not NOT_CONST:
            return folded
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
