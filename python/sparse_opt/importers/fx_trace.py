"""Tracing for the torch.fx importer: `trace` turns an `nn.Module` into a
`GraphModule` with the `sparse_opt.markers` calls kept as calls. Each node
records the module it ran in (`sparse_opt_module`) and the user source line
(`sparse_opt_source`). Given example inputs, the tracer also evaluates each
node as it is created, on meta tensors, so that static shapes unpack and
measure like Python tuples (`b, s, d = x.shape`, `len(x.shape)`).
`in_torch` tells a frame of torch itself from a user's.
"""
from __future__ import annotations

import dis
import inspect
import linecache
import operator
import os
import re

import torch
import torch.fx
from torch.fx import GraphModule

from .. import markers
from . import fx_forms
from .emitter import ImportError_
from .fx_values import meta_tensor

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MARKERS = os.path.abspath(markers.__file__)


def in_torch(path: str) -> bool:
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
    state = {k: meta_tensor(v) for k, v in m.__dict__.get("_parameters", {}).items()}
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
                return meta_tensor(self._examples[i])
            return node.args[0] if node.args else _UNKNOWN
        if node.op == "get_attr":
            return meta_tensor(_raw_attr(self.root, node.target))
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), arg)
        args, kwargs = torch.fx.node.map_aggregate((args, kwargs), meta_tensor)
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

