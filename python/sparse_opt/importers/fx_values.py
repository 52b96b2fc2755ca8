"""Value folding for the torch.fx importer. Before emitting, the importer runs
the graph once on the example inputs, and `FoldedValues` keeps what that run
shows, by node name: the structure of each result (shapes and dtypes), the
Python values computed from shapes alone, which are folded at import time
(`x.size(0) // 2`), and the tensor values that do not depend on the example
inputs (a causal mask buffer, a 0-d scale). `meta_tensor` gives a tensor's
stand-in on the meta device, for evaluating shapes without data.
"""
from __future__ import annotations

import copy
from typing import Optional

import torch
import torch.fx
from torch.fx import Node

from . import fx_aten, fx_forms, fx_ops
from .emitter import ImportError_

# Queries whose (Python) results depend on shapes only, folded at import time.
_SHAPE_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "is_floating_point"}
_SHAPE_ATTRS = {"shape", "ndim", "device", "is_cuda"}

# What `FoldedValues.const` returns for a value that is not known at import time.
NOT_CONST = object()


def meta_tensor(x):
    """A tensor's stand-in for shape evaluation: its shape and dtype on the
    meta device (no data, nothing computed)."""
    return x.detach().to("meta") if isinstance(x, torch.Tensor) else x


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



class _RunFailed(Exception):
    def __init__(self, node, err):
        super().__init__(str(err))
        self.node, self.err = node, err


class _Recorder(torch.fx.Interpreter):
    """Runs the graph once, recording each node's result shape (by name), the
    Python values computed from shapes (folded), and tensor values that the
    example inputs do not influence."""

    def __init__(self, gm, values):
        super().__init__(gm)
        self.values = values

    def run_node(self, n):
        if n.op == "call_function" and fx_aten.is_noop(n.target):
            return None  # a runtime check of torch.export: it holds for the program as exported
        try:
            result = super().run_node(n)
        except Exception as err:
            result = self._on_meta(n, err)
        self.values.record(n, result)
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
        args, kwargs = torch.fx.node.map_aggregate((args, kwargs), meta_tensor)
        try:
            return getattr(self, n.op)(n.target, args, kwargs)
        except Exception:
            raise _RunFailed(n, err) from err


class FoldedValues:
    """The values of one run of the graph `gm` on `inputs`, by node name: the
    structure of each result (`shape`, `tensor_dtype`), the Python values
    folded at import time (`const`, `number`) and the tensors that the
    example inputs do not influence (`known`, `known_data`).

    `dtype` is the importer's dtype option: with one, `x.dtype` is not folded
    (the program's differs from the example's). `bound` holds the qualified
    names of the parameters and buffers the program binds (weights='params'):
    their values at import time are not the ones the program runs on.
    `where(node)` names a node and its source in error messages. A run that
    fails raises ImportError_ naming the node."""

    def __init__(self, gm, inputs, *, where, dtype=None, bound=()):
        self.gm = gm
        self.dtype = dtype
        self.bound = frozenset(bound)
        self.where = where
        self._meta = {}      # node name -> recorded result structure
        self._static = {}    # node name -> value folded at import time
        self._known = {}     # node name -> tensor value independent of the inputs
        self._fell_back = False
        self._run(tuple(inputs))

    def _run(self, inputs):
        by_name = {n.name: n for n in self.gm.graph.nodes}
        try:
            with torch.no_grad():
                _Recorder(self.gm, self).run(*inputs)
            return
        except _RunFailed as failed:
            first = failed
        low = [t for t in list(self.gm.parameters()) + list(self.gm.buffers()) + list(inputs)
               if isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16)]
        if low:
            # Half-precision ops missing on this CPU: shapes are the same in f32.
            self._meta.clear(), self._static.clear(), self._known.clear()
            self._fell_back = True
            gm32 = copy.deepcopy(self.gm).float()
            inputs = tuple(x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                           for x in inputs)
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

    def record(self, n, result):
        """Records node `n`'s result (the recording run calls it per node)."""
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

    def shape(self, node) -> Optional[tuple]:
        """The static shape of a tensor node's result (None when not a tensor)."""
        m = self._meta.get(node.name) if isinstance(node, Node) else None
        return m[1] if isinstance(m, tuple) and len(m) == 3 and m[0] == "tensor" else None

    def const(self, arg):
        """A Python value known at import time, else NOT_CONST."""
        if isinstance(arg, Node):
            return self._static.get(arg.name, NOT_CONST)
        return arg

    def tensor_dtype(self, node) -> Optional[torch.dtype]:
        """The dtype of a tensor node's result in the recording run."""
        m = self._meta.get(node.name) if isinstance(node, Node) else None
        return m[2] if isinstance(m, tuple) and len(m) == 3 and m[0] == "tensor" else None

    def number(self, arg):
        """A Python number known at import time (a 0-d tensor read as one), else None."""
        v = self.const(arg)
        if v is NOT_CONST:
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
        """The tensor value of a node that the example inputs do not influence, else None."""
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
        itself is: see `FxImporter._materialize`)."""
        return node.op != "get_attr" and any(n in self.bound for n in self._attr_sources(node))
