"""torch.export front end of the fx importer: an `ExportedProgram` (torch 2.x)
as the GraphModule the importer walks.

    ep = torch.export.export(model, (x,))
    mlir = import_fx(ep, sparsity={"fc.weight": "2:4"})

An ExportedProgram's graph is ATen-level and lifted: parameters, buffers and
tensor constants are placeholders that its graph signature maps to fully
qualified names (`inputs_to_parameters`, `inputs_to_buffers`,
`inputs_to_lifted_tensor_constants`), their values in `state_dict` and
`constants`. `prepare()` turns those placeholders into `get_attr` nodes of a
GraphModule holding the tensors under their qualified names (so parameters
keep the names sparsity annotations and locations use), keeps the user
inputs as the function's arguments and the user outputs as its results, and
rewrites the ATen decompositions that hide an op the importer emits in one
canonical form (fx_aten.py maps the ATen ops themselves):

- `view(bmm(view(expand(a)), view(expand(b))))` (a batched matmul, as
  `run_decompositions()` writes `matmul`) -> `aten.matmul(a, b)`, so
  attention is recognized from the decomposition too, and a linear layer
  on a 3-D input written as a bmm against the expanded weight is one again;
- `mul(x, sigmoid(x))` (SiLU decomposed) -> `aten.silu(x)`;
- `_safe_softmax` decomposed (`where(not(any(x != -inf)), 0, softmax(x))`,
  as SDPA's decomposition writes it) -> the softmax;
- chains of `permute` (through contiguous copies) -> one permute; views
  become reshapes (the importer never needed their aliasing).

Example inputs default to the program's own (`example_inputs`), else to zeros
of the placeholders' recorded shapes (`node.meta["val"]`). Nothing here
imports torch.export: a program is recognized by its attributes, so torch
1.x loads this module (and never sees one).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.fx
from torch.fx import GraphModule, Node

from .emitter import ImportError_

__all__ = ["is_exported_program", "prepare", "state_names"]


def is_exported_program(obj) -> bool:
    """Whether `obj` is a torch.export.ExportedProgram (or quacks like one)."""
    if isinstance(obj, torch.nn.Module):
        return False
    ep_cls = getattr(getattr(torch, "export", None), "ExportedProgram", None)
    if ep_cls is not None and isinstance(obj, ep_cls):
        return True
    return all(hasattr(obj, a) for a in ("graph_signature", "graph_module", "state_dict"))


def _fake_shape(v) -> Optional[tuple]:
    shape = getattr(v, "shape", None)
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None  # none recorded, or a symbolic (dynamic) size
    return tuple(shape)


def _tensor(v) -> torch.Tensor:
    """A real CPU tensor (not a parameter wrapper) for a state dict entry."""
    if isinstance(v, torch.nn.Parameter):
        v = v.data
    if not isinstance(v, torch.Tensor):
        raise ImportError_("expected a tensor, got %s" % type(v).__name__)
    return v.detach().cpu()


def _lifted(ep):
    """{placeholder name: (qualified name, is parameter, tensor)} of the lifted inputs."""
    sig = ep.graph_signature
    state = dict(getattr(ep, "state_dict", {}) or {})
    consts = dict(getattr(ep, "constants", {}) or {})
    custom = dict(getattr(sig, "inputs_to_lifted_custom_objs", {}) or {})
    if custom:
        raise ImportError_("the exported program takes custom objects (%s), which the importer does not support"
                           % ", ".join(sorted(custom.values())))
    out = {}
    groups = ((getattr(sig, "inputs_to_parameters", {}) or {}, True),
              (getattr(sig, "inputs_to_buffers", {}) or {}, False),
              (getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {}, False))
    for mapping, is_param in groups:
        for ph, fqn in mapping.items():
            if fqn in state:
                t = state[fqn]
            elif fqn in consts:
                t = consts[fqn]
            else:
                raise ImportError_("the exported program has no value for '%s' (input '%s')" % (fqn, ph))
            out[ph] = (fqn, is_param, _tensor(t))
    return out


def state_names(ep) -> set:
    """The qualified names of the program's parameters and buffers (its
    lifted tensor constants are not among them: they stay constants)."""
    sig = ep.graph_signature
    names = set()
    for key in ("inputs_to_parameters", "inputs_to_buffers"):
        names.update((getattr(sig, key, {}) or {}).values())
    return names


def _check_outputs(ep):
    sig = ep.graph_signature
    mutated = dict(getattr(sig, "buffers_to_mutate", {}) or {})
    mutated.update(getattr(sig, "user_inputs_to_mutate", {}) or {})
    if mutated:
        raise ImportError_("the exported program updates %s in place (state mutation); the importer imports "
                           "inference graphs without side effects" % ", ".join("'%s'" % v for v in
                                                                               sorted(set(mutated.values()))))


def _user_outputs(ep, out_node):
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    names = getattr(ep.graph_signature, "user_outputs", None)
    if names is not None and len(names) < len(outs):
        outs = outs[len(outs) - len(names):]  # mutated state comes first
    return outs


def unlift(ep) -> GraphModule:
    """A GraphModule of `ep`'s graph with its parameters, buffers and constants
    as get_attr nodes of their qualified names; user inputs stay placeholders."""
    _check_outputs(ep)
    lifted = _lifted(ep)
    graph = torch.fx.Graph()
    env, attrs = {}, {}
    src = ep.graph_module.graph

    def lookup(n):
        return env[n]
    for n in src.nodes:
        if n.op == "placeholder" and n.name in lifted:
            fqn, is_param, t = lifted[n.name]
            if fqn not in attrs:
                attrs[fqn] = torch.nn.Parameter(t, requires_grad=False) if is_param and t.is_floating_point() else t
            new = graph.get_attr(fqn)
            new.meta = dict(n.meta)
        elif n.op == "placeholder":
            new = graph.node_copy(n, lookup)
        elif n.op == "output":
            outs = [env[o] if isinstance(o, Node) else o for o in _user_outputs(ep, n)]
            new = graph.output(tuple(outs))
        elif n.op == "get_attr":
            # A submodule of the program (a higher-order op's body): the op
            # using it is reported as unsupported.
            obj = ep.graph_module
            for part in n.target.split("."):
                obj = getattr(obj, part)
            attrs[n.target] = obj
            new = graph.node_copy(n, lookup)
        else:
            new = graph.node_copy(n, lookup)
        env[n] = new
    return GraphModule(attrs, graph, "ExportedProgram")


# ------------------------------------------------------ canonicalization
def _aten(name, overload="default"):
    packet = getattr(torch.ops.aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


def _is(node, *ops) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and any(
        o is not None and node.target is o for o in ops)


def _shape(node) -> Optional[tuple]:
    return _fake_shape(node.meta.get("val")) if isinstance(node, Node) else None


def _broadcast(a, b):
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(out)


def _bmm_operand(node, bmm, batch, last2):
    """The matmul operand behind a bmm operand `node` when it is
    `reshape([clone](expand(a, batch + last2)), (prod(batch),) + last2)`
    (the expand optional when `a` already has that shape), else None."""
    views = (_aten("view"), _aten("_unsafe_view"), _aten("reshape"), _aten("_reshape_alias"))
    copies = (_aten("clone"), _aten("contiguous"), _aten("alias"))
    if not _is(node, *views) or len(node.users) != 1 or bmm not in node.users:
        return None
    chain = [node]
    cur = node.args[0]
    while _is(cur, *copies) and len(cur.users) == 1:
        chain.append(cur)
        cur = cur.args[0]
    full = tuple(batch) + tuple(last2)
    expanded = _is(cur, _aten("expand")) and len(cur.users) == 1
    if expanded:
        if _shape(cur) != full:
            return None
        chain.append(cur)
        cur = cur.args[0]
        while _is(cur, *copies) and len(cur.users) == 1:
            chain.append(cur)
            cur = cur.args[0]
    s = _shape(cur)
    if not isinstance(cur, Node) or s is None or len(s) < 2 or len(s) > len(full) or s[-2:] != tuple(last2):
        return None
    # Broadcasting the batch dims is what matmul does; without the expand the
    # operand must already have them all.
    if (s != full) if not expanded else (_broadcast(s[:-2], batch) != tuple(batch)):
        return None
    return cur, chain


def _fold_bmm(graph) -> int:
    """[view](bmm(view(expand(a)), view(expand(b)))) -> matmul(a, b): how
    `matmul` of N-D operands (N >= 3, or a 2-D weight against a 3-D input)
    decomposes."""
    bmm, matmul = _aten("bmm"), _aten("matmul")
    views = (_aten("view"), _aten("_unsafe_view"), _aten("reshape"), _aten("_reshape_alias"))
    count = 0
    for n in list(graph.nodes):
        if not _is(n, bmm) or matmul is None:
            continue
        out = next(iter(n.users)) if len(n.users) == 1 else None
        if not (_is(out, *views) and out.args[0] is n):
            out = n
        so, sb = _shape(out), _shape(n)
        if so is None or sb is None or len(so) < 3:
            continue
        batch, (m, nn_) = so[:-2], so[-2:]
        if math.prod(batch) != sb[0] or sb[1:] != (m, nn_):
            continue
        a_in, b_in = n.args[0], n.args[1]
        sa = _shape(a_in)
        if sa is None:
            continue
        k = sa[-1]
        ra = _bmm_operand(a_in, n, batch, (m, k))
        rb = _bmm_operand(b_in, n, batch, (k, nn_))
        if ra is None or rb is None:
            continue
        with graph.inserting_before(out):
            new = graph.call_function(matmul, (ra[0], rb[0]))
        new.meta = dict(out.meta)
        out.replace_all_uses_with(new)
        for dead in ([out] if out is not n else []) + [n] + ra[1] + rb[1]:
            if not dead.users:
                graph.erase_node(dead)
        count += 1
    return count


def _views_as_reshapes(graph):
    """view / _unsafe_view / _reshape_alias -> reshape: the same to the
    importer, and still runnable once a fold below drops a contiguous copy."""
    reshape = _aten("reshape")
    for n in graph.nodes:
        if _is(n, _aten("view"), _aten("_unsafe_view"), _aten("_reshape_alias")) and not n.kwargs:
            n.target, n.args = reshape, (n.args[0], n.args[1])


def _fold_permutes(graph) -> int:
    """permute(permute(x, p1), p2) -> permute(x, p1 . p2) (through contiguous
    copies), dropped when the identity; a final swap of the last two dims
    stays apart (a matmul absorbs it)."""
    permute = _aten("permute")
    copies = (_aten("clone"), _aten("contiguous"), _aten("alias"))
    count = 0
    for n in list(graph.nodes):
        if not _is(n, permute) or len(n.args) != 2:
            continue
        rank = len(n.args[1])
        p2 = [int(d) % rank for d in n.args[1]]
        if p2 == list(range(rank - 2)) + [rank - 1, rank - 2]:
            continue
        chain, cur = [], n.args[0]
        while _is(cur, *copies) and len(cur.users) == 1:
            chain.append(cur)
            cur = cur.args[0]
        if not _is(cur, permute) or len(cur.users) != 1 or len(cur.args) != 2:
            continue
        p1 = [int(d) % rank for d in cur.args[1]]
        composed = [p1[d] for d in p2]
        src = cur.args[0]
        if composed == list(range(rank)):
            n.replace_all_uses_with(src)
            graph.erase_node(n)
        else:
            n.args = (src, composed)
        for dead in chain + [cur]:
            if not dead.users:
                graph.erase_node(dead)
        count += 1
    return count


def _fold_safe_softmax(graph) -> int:
    """where(not(any(not(eq(a, -inf)), d, True)), full_like(s, 0), s) with
    s = softmax(a, d) -> s: `_safe_softmax` (SDPA's decomposition) decomposed.
    It differs from softmax only in rows that are -inf throughout (0, not
    NaN); the importer takes `_safe_softmax` as softmax too."""
    where, eq, lnot = _aten("where", "self"), _aten("eq", "Scalar"), _aten("logical_not")
    any_ops = (_aten("any", "dim"), _aten("any", "dims"))
    softmaxes = (_aten("_softmax"), _aten("softmax", "int"))
    full_like = _aten("full_like")
    count = 0
    for n in list(graph.nodes):
        if not _is(n, where) or len(n.args) != 3:
            continue
        cond, zero, sm = n.args
        if not _is(sm, *softmaxes) or not _is(zero, full_like) or zero.args[:2] != (sm, 0) or \
                not _is(cond, lnot) or len(cond.users) != 1 or len(zero.users) != 1:
            continue
        a, rank = sm.args[0], len(_shape(sm) or ())
        dim = int(sm.args[1]) % rank if rank else None
        anyn = cond.args[0]
        if not _is(anyn, *any_ops) or len(anyn.users) != 1 or len(anyn.args) < 3 or anyn.args[2] is not True:
            continue
        dims = anyn.args[1] if isinstance(anyn.args[1], (list, tuple)) else [anyn.args[1]]
        if [int(d) % rank for d in dims] != [dim]:
            continue
        inner = anyn.args[0]
        if not _is(inner, lnot) or len(inner.users) != 1:
            continue
        e = inner.args[0]
        if not _is(e, eq) or len(e.users) != 1 or e.args[0] is not a or e.args[1] != float("-inf"):
            continue
        n.replace_all_uses_with(sm)
        for dead in (n, zero, cond, anyn, inner, e):
            graph.erase_node(dead)
        count += 1
    return count


def _fold_silu(graph) -> int:
    """mul(x, sigmoid(x)) -> silu(x)."""
    mul, sigmoid, silu = _aten("mul", "Tensor"), _aten("sigmoid"), _aten("silu")
    count = 0
    for n in list(graph.nodes):
        if not _is(n, mul) or len(n.args) != 2 or n.kwargs or silu is None:
            continue
        a, b = n.args
        for x, s in ((a, b), (b, a)):
            if _is(s, sigmoid) and s.args[0] is x and len(s.users) == 1 and isinstance(x, Node):
                with graph.inserting_before(n):
                    new = graph.call_function(silu, (x,))
                new.meta = dict(n.meta)
                n.replace_all_uses_with(new)
                graph.erase_node(n)
                graph.erase_node(s)
                count += 1
                break
    return count


def canonicalize(gm: GraphModule) -> GraphModule:
    _views_as_reshapes(gm.graph)
    _fold_permutes(gm.graph)
    _fold_bmm(gm.graph)
    _fold_safe_softmax(gm.graph)
    _fold_silu(gm.graph)
    gm.graph.lint()
    gm.recompile()
    return gm


# ------------------------------------------------------------ the inputs
def _example_inputs(ep, placeholders, given):
    if given is not None:
        if isinstance(given, torch.Tensor):
            given = (given,)
        given = tuple(given)
        if len(given) != len(placeholders):
            raise ImportError_("the exported program takes %d inputs (%s), %d example inputs given"
                               % (len(placeholders), ", ".join(p.name for p in placeholders), len(given)))
        for p, x in zip(placeholders, given):
            want = _fake_shape(p.meta.get("val"))
            if isinstance(x, torch.Tensor) and want is not None and tuple(x.shape) != want:
                raise ImportError_("example input '%s' has shape %s; the program was exported for %s"
                                   % (p.name, list(x.shape), list(want)))
        return tuple(x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in given)
    own = getattr(ep, "example_inputs", None)
    if own is not None:
        try:
            from torch.utils import _pytree
            leaves = _pytree.tree_flatten(own)[0]
        except Exception:
            leaves = None
        if leaves is not None and len(leaves) == len(placeholders) and all(
                not isinstance(x, torch.Tensor) or _fake_shape(p.meta.get("val")) in (None, tuple(x.shape))
                for p, x in zip(placeholders, leaves)):
            return tuple(x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in leaves)
    out = []
    for p in placeholders:
        v = p.meta.get("val")
        if isinstance(v, (bool, int, float)) or v is None:
            out.append(v)
            continue
        shape = _fake_shape(v)
        if shape is None:
            raise ImportError_("input '%s' has a dynamic shape %s: the importer needs static shapes (export "
                               "without dynamic_shapes)" % (p.name, list(getattr(v, "shape", ()))))
        out.append(torch.zeros(shape, dtype=v.dtype))
    return tuple(out)


def _check_static(gm):
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor) and _fake_shape(v) is None:
            raise ImportError_("node '%s' has a dynamic shape %s: the importer needs static shapes (export "
                               "without dynamic_shapes)" % (n.name, list(v.shape)))
        if n.op == "call_function" and any(q in str(n.target) for q in ("sym_size", "sym_numel", "sym_stride")):
            raise ImportError_("node '%s' (%s) queries a dynamic size: the importer needs static shapes "
                               "(export without dynamic_shapes)" % (n.name, n.target))


def prepare(ep, example_inputs=None):
    """(GraphModule, example inputs) for FxImporter from an ExportedProgram."""
    gm = canonicalize(unlift(ep))
    _check_static(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return gm, _example_inputs(ep, placeholders, example_inputs)
