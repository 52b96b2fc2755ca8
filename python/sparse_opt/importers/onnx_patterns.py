"""Recognition of model blocks in ONNX graphs.

`find_matches` looks at the graph's structure only (op types, edges, and
that every value a block absorbs is used by the block alone and is not a
graph output), latest node first, so the largest block claims its nodes. The
importer then skips the absorbed nodes and, at the block's last node (the
root), calls the block's `emit`: it checks the values (constants, shapes)
and emits one canonical op, or raises `Fallback`, and the root is emitted
as a plain node, its absorbed inputs then emitted on demand
(`OnnxImporter.get`). So a block that does not check out costs nothing
but the fusion, and nothing is ever dropped.

Blocks:
- silu: `Mul(x, Sigmoid(x))` -> unary silu
- gelu: `x * 0.5 * (1 + Erf(x / sqrt(2)))` in any product order -> unary gelu
- rms_norm: `Pow(x, 2)` or `Mul(x, x)` -> `ReduceMean(-1, keepdims)` -> `Add(eps)`
  -> `Sqrt` -> `Div(x, .)` | `Reciprocal` / `Div(1, .)` then `Mul(x, .)`, then
  optionally `Mul(., weight)` -> sgpu.rms_norm
- attention: `MatMul(q, Transpose(k))` -> `Div`/`Mul` by a scalar -> optional
  `Where(mask, -inf, .)` / `Add(., mask)` -> `Softmax(-1)` -> `MatMul(., v)`
  on 4-D tensors -> sgpu.attention (scalar `Mul`s on q and k, as exported
  scaled_dot_product_attention has them, fold into the scale). The mask:
  sgpu.attention's i1 mask KEEPS the positions where it is true, while
  `Where(mask, -inf, s)` drops them, so a constant mask is negated at import
  time (and dropped for `causal` when it is exactly the causal mask) and a
  runtime one goes through an element-wise xor with true; `Where(mask, s,
  -inf)` keeps the mask as is; an additive float mask is passed as is.
  Grouped-query attention: k (under its Transpose) and v whose heads were
  repeated for the attention only, `Reshape(Expand(Unsqueeze(x, axes=[2]),
  [B, Hkv, rep, S, D]), [B, Hkv * rep, S, D])` (torch's export of
  Hugging Face's repeat_kv), reach sgpu.attention un-repeated (its query
  head h reads k/v head h // rep, the head the repetition put there).
- rope: `Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2),
  axis=-1), sin))` (either order in each Mul and in the Add), cos and sin of
  x's type broadcasting to x -> sgpu.rope
- linear_bias: `Add(MatMul(x, W), b)` with a constant 2-D W and 1-D b -> linear with bias
- matmul_tb: `MatMul(a, Transpose(b))` swapping the last two dims -> matmul
  with transpose_b (a linear when b is a constant 2-D weight)
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .emitter import FLOAT_TYPES, ImportError_, Value, broadcast_shapes
from .onnx_fold import Const, attrs_of, axes_arg, ints, reduce_axes, reshape_target, slice_params
from .onnx_ops import bias_constant, feature_param, logical_not

STANDARD = ("", "ai.onnx")


class Fallback(Exception):
    """The block's values do not fit: emit its nodes one by one."""


class GraphIndex:
    """Producers and consumers of the values of a topologically sorted graph."""

    def __init__(self, nodes, outputs):
        self.nodes = nodes
        self.outputs = set(outputs)
        self.producer = {}
        self.consumers = defaultdict(list)
        for i, n in enumerate(nodes):
            for o in n.output:
                if o:
                    self.producer[o] = i
            for x in n.input:
                if x:
                    self.consumers[x].append(i)

    def used(self, name) -> bool:
        return name in self.outputs or bool(self.consumers.get(name))

    def single(self, name) -> bool:
        return name not in self.outputs and len(self.consumers.get(name, ())) == 1

    def node(self, name, ops, single=True) -> Optional[int]:
        """The producer of `name` if it is one of `ops` and (by default)
        `name` has no other use."""
        i = self.producer.get(name)
        if i is None:
            return None
        n = self.nodes[i]
        ops = (ops,) if isinstance(ops, str) else ops
        if n.domain not in STANDARD or n.op_type not in ops:
            return None
        if single and not self.single(name):
            return None
        return i


@dataclass
class Match:
    kind: str
    root: int
    nodes: list
    emit: Callable
    data: dict = field(default_factory=dict)


def _orders(pair):
    a, b = list(pair)[:2]
    return ((a, b), (b, a))


def _close(value, want, rel=1e-3):
    return value is not None and abs(value - want) <= rel * max(1.0, abs(want))


# -------------------------------------------------------------- activations
def _match_silu(g, i):
    n = g.nodes[i]
    for x, s in _orders(n.input):
        j = g.node(s, "Sigmoid")
        if j is not None and g.nodes[j].input[0] == x:
            return Match("silu", i, [i, j], _emit_silu, {"x": x})
    return None


def _emit_silu(imp, m):
    x = imp.get(m.data["x"])
    if not isinstance(x, Value) or x.dtype not in FLOAT_TYPES:
        raise Fallback
    return [imp.e.unary("silu", x, imp.loc(imp.nodes[m.root]))]


def _product(g, i, depth=0):
    """The factors of a tree of single-use Muls rooted at node i."""
    factors, nodes = [], [i]
    for x in g.nodes[i].input:
        j = g.node(x, "Mul") if depth < 3 else None
        if j is not None:
            f, ns = _product(g, j, depth + 1)
            factors += f
            nodes += ns
        else:
            factors.append(x)
    return factors, nodes


def _match_gelu(g, i):
    factors, muls = _product(g, i)
    if len(factors) != 3:
        return None
    for k, f in enumerate(factors):
        a = g.node(f, "Add")
        if a is None:
            continue
        rest = factors[:k] + factors[k + 1:]
        for erf_out, one in _orders(g.nodes[a].input):
            e = g.node(erf_out, "Erf")
            if e is None:
                continue
            z = g.nodes[e].input[0]
            d = g.node(z, ("Div", "Mul"))
            if d is None:
                continue
            dn = g.nodes[d]
            pairs = _orders(dn.input) if dn.op_type == "Mul" else [tuple(dn.input[:2])]
            for x, c in pairs:
                if x in rest:
                    half = rest[1] if rest[0] == x else rest[0]
                    return Match("gelu", i, muls + [a, e, d], _emit_gelu,
                                 {"x": x, "half": half, "one": one, "c": c, "div": dn.op_type == "Div"})
    return None


def _emit_gelu(imp, m):
    d = m.data
    x = imp.get(d["x"])
    if not isinstance(x, Value) or x.dtype not in FLOAT_TYPES:
        raise Fallback
    want = math.sqrt(2.0) if d["div"] else 1.0 / math.sqrt(2.0)
    if not (_close(imp.scalar(d["half"]), 0.5) and _close(imp.scalar(d["one"]), 1.0)
            and _close(imp.scalar(d["c"]), want)):
        raise Fallback
    return [imp.e.unary("gelu", x, imp.loc(imp.nodes[m.root]))]


# ------------------------------------------------------------------ RMSNorm
def _rms_core(g, i):
    """Node i computes x * rsqrt(mean(x^2, -1) + eps) (decomposed)."""
    n = g.nodes[i]
    if n.op_type == "Div":
        cands = [(n.input[0], n.input[1], "div")]
    elif n.op_type == "Mul":
        cands = [(x, r, "mul") for x, r in _orders(n.input)]
    else:
        return None
    for x, r, how in cands:
        nodes, checks, s, t = [], [], None, None
        if how == "div":
            s = r
        else:
            j = g.node(r, ("Reciprocal", "Div", "Pow"))
            if j is None:
                continue
            rn = g.nodes[j]
            nodes.append(j)
            if rn.op_type == "Reciprocal":
                s = rn.input[0]
            elif rn.op_type == "Div":
                checks.append((rn.input[0], 1.0))
                s = rn.input[1]
            else:
                checks.append((rn.input[1], -0.5))
                t = rn.input[0]
        if s is not None:
            k = g.node(s, "Sqrt")
            if k is None:
                continue
            nodes.append(k)
            t = g.nodes[k].input[0]
        a = g.node(t, "Add")
        if a is None:
            continue
        for mean, eps in _orders(g.nodes[a].input):
            rm = g.node(mean, "ReduceMean")
            if rm is None:
                continue
            p = g.node(g.nodes[rm].input[0], ("Pow", "Mul"))
            if p is None:
                continue
            pn = g.nodes[p]
            if pn.op_type == "Pow" and pn.input[0] == x:
                square = [(pn.input[1], 2.0)]
            elif pn.op_type == "Mul" and pn.input[0] == x and pn.input[1] == x:
                square = []
            else:
                continue
            return {"x": x, "eps": eps, "reduce": rm, "checks": checks + square, "nodes": nodes + [a, rm, p]}
    return None


def _match_rms_weighted(g, i):
    n = g.nodes[i]
    for normed, w in _orders(n.input):
        j = g.node(normed, ("Mul", "Div"))
        if j is None:
            continue
        core = _rms_core(g, j)
        if core:
            return Match("rms_norm", i, [i, j] + core["nodes"], _emit_rms, dict(core, w=w))
    return None


def _match_rms(g, i):
    core = _rms_core(g, i)
    if core:
        return Match("rms_norm", i, [i] + core["nodes"], _emit_rms, dict(core, w=None))
    return None


def _emit_rms(imp, m):
    d = m.data
    x = imp.get(d["x"])
    if not isinstance(x, Value) or x.dtype not in FLOAT_TYPES:
        raise Fallback
    for name, want in d["checks"]:
        if not _close(imp.scalar(name), want, 1e-6):
            raise Fallback
    eps = imp.scalar(d["eps"])
    rn = imp.nodes[d["reduce"]]
    at = attrs_of(rn)
    try:
        # (only the axes input: the data input is absorbed, getting it would emit it)
        axes = reduce_axes(rn, [None] + [imp.get(n) for n in rn.input[1:]], at, x.rank)
    except Exception:
        raise Fallback from None
    if eps is None or eps < 0 or axes != [x.rank - 1] or not at.get("keepdims", 1):
        raise Fallback
    loc = imp.loc(imp.nodes[m.root])
    dim = x.shape[-1]
    w = imp.get(d["w"]) if d["w"] else None
    weight = None
    if w is not None and w.rank <= x.rank and w.shape and w.shape[-1] == dim:
        weight = feature_param(imp, w, dim, x.dtype, loc)
    y = imp.e.rms_norm(x, weight if weight is not None else imp.e.splat(1.0, (dim,), x.dtype, loc), eps, loc)
    if w is not None and weight is None:
        y = imp.e.binary("mul", y, imp.operand(w, y), loc)
    return [y]


# --------------------------------------------------------------------- RoPE
def _rotate_half(g, name):
    """(x, nodes, hi slice, lo slice) when `name` = Concat(Neg(Slice(x)),
    Slice(x)), used only by its consumer (the slices are checked later)."""
    c = g.node(name, "Concat")
    if c is None or len(g.nodes[c].input) != 2:
        return None
    neg_out, lo_out = g.nodes[c].input
    neg, lo = g.node(neg_out, "Neg"), g.node(lo_out, "Slice")
    hi = g.node(g.nodes[neg].input[0], "Slice") if neg is not None else None
    if lo is None or hi is None or g.nodes[hi].input[0] != g.nodes[lo].input[0]:
        return None
    return g.nodes[hi].input[0], [c, neg, hi, lo], hi, lo


def _match_rope(g, i):
    n = g.nodes[i]
    for a, b in _orders(n.input):
        ja, jb = g.node(a, "Mul"), g.node(b, "Mul")
        if ja is None or jb is None or ja == jb:
            continue
        for rot, sin in _orders(g.nodes[jb].input):
            found = _rotate_half(g, rot)
            if found is None:
                continue
            x, nodes, hi, lo = found
            xa = list(g.nodes[ja].input)
            if x not in xa or xa[0] == xa[1]:
                continue
            cos = xa[1] if xa[0] == x else xa[0]
            return Match("rope", i, [i, ja, jb] + nodes, _emit_rope,
                         {"x": x, "cos": cos, "sin": sin, "hi": hi, "lo": lo, "cat": nodes[0]})
    return None


def _last_dim_range(imp, j, shape):
    """(start, end) of Slice node j when it slices only the last dim with
    step 1, else None (Fallback when its bounds are not constants)."""
    sn = imp.nodes[j]
    if len(sn.input) > 1:
        xs = [imp.get(n) if n else None for n in sn.input[1:]]
        if not all(x is None or isinstance(x, Const) for x in xs):
            raise Fallback
        xs += [None] * (4 - len(xs))
        starts, ends, axes, steps = (ints(x) if x is not None else None for x in xs)
    else:
        at = attrs_of(sn)
        starts, ends, axes, steps = at["starts"], at["ends"], at.get("axes"), None
    rank, out = len(shape), None
    for axis, s, e, st in slice_params(shape, starts, ends, axes, steps):
        if axis == rank - 1 and st == 1:
            out = (s, e)
        elif (s, e, st) != (0, shape[axis], 1):
            return None
    return out if out is not None else (0, shape[-1])


def _emit_rope(imp, m):
    d = m.data
    x = imp.get(d["x"])
    if not isinstance(x, Value) or x.dtype not in FLOAT_TYPES or x.rank < 1 or x.shape[-1] % 2:
        raise Fallback
    half = x.shape[-1] // 2
    axis = attrs_of(imp.nodes[d["cat"]]).get("axis")
    if axis is None or axis % x.rank != x.rank - 1 or \
            _last_dim_range(imp, d["hi"], x.shape) != (half, x.shape[-1]) or \
            _last_dim_range(imp, d["lo"], x.shape) != (0, half):
        raise Fallback
    ops = []
    for t in (imp.get(d["cos"]), imp.get(d["sin"])):
        dt = imp.fdt(t.dtype) if isinstance(t, Const) else getattr(t, "dtype", None)
        if dt != x.dtype or t.rank > x.rank or broadcast_shapes(t.shape, x.shape) != x.shape:
            raise Fallback
        ops.append(t)
    loc = imp.loc(imp.nodes[m.root])
    vals = []
    for t in ops:
        v = imp.tensor(t)
        if v.rank < x.rank:
            v = imp.e.reshape(v, (1,) * (x.rank - v.rank) + v.shape, loc)
        vals.append(v)
    return [imp.e.rope(x, vals[0], vals[1], loc)]


# ----------------------------------------------------------------- matmuls
def _match_linear_bias(g, i):
    n = g.nodes[i]
    for mm, b in _orders(n.input):
        j = g.node(mm, "MatMul")
        if j is None:
            continue
        t = g.node(g.nodes[j].input[1], "Transpose")
        nodes = [i, j] + ([t] if t is not None else [])
        return Match("linear_bias", i, nodes, _emit_linear_bias, {"mm": j, "t": t, "b": b})
    return None


def _emit_linear_bias(imp, m):
    d = m.data
    mm = imp.nodes[d["mm"]]
    x = imp.get(mm.input[0])
    if d["t"] is not None:
        tn = imp.nodes[d["t"]]
        w = imp.get(tn.input[0])
        transposed = False
        if isinstance(w, Const) and list(attrs_of(tn).get("perm") or [1, 0]) != [1, 0]:
            raise Fallback
    else:
        w = imp.get(mm.input[1])
        transposed = True
    b = imp.get(d["b"])
    if not (isinstance(x, Value) and isinstance(w, Const) and w.rank == 2 and isinstance(b, Const)):
        raise Fallback
    n, k = (w.shape[1], w.shape[0]) if transposed else w.shape
    if x.shape[-1] != k or b.array.size != n or b.shape[-1] != n or b.rank > x.rank:
        raise Fallback
    weight = imp.linear_weight(w, transposed, mm)
    bias = bias_constant(imp, b, x.dtype, n, imp.loc(imp.nodes[m.root]))
    return [imp.e.linear(x, weight, bias, imp.loc(imp.nodes[m.root]))]


def _match_matmul_tb(g, i):
    t = g.node(g.nodes[i].input[1], "Transpose")
    if t is None:
        return None
    return Match("matmul_tb", i, [i, t], _emit_matmul_tb, {"t": t})


def _emit_matmul_tb(imp, m):
    root = imp.nodes[m.root]
    tn = imp.nodes[m.data["t"]]
    a, b = imp.get(root.input[0]), imp.get(tn.input[0])
    r = b.rank
    perm = list(attrs_of(tn).get("perm") or reversed(range(r)))
    if r < 2 or perm != list(range(r - 2)) + [r - 1, r - 2] or a.rank < 2:
        raise Fallback
    if isinstance(a, Const) and isinstance(b, Const):
        raise Fallback
    loc = imp.loc(root)
    if isinstance(b, Const) and r == 2:
        return [imp.e.linear(imp.tensor(a), imp.linear_weight(b, False, root), None, loc)]
    return [imp.e.matmul(imp.tensor(a), imp.tensor(b), True, loc)]


# ---------------------------------------------------------------- attention
def _scores(g, name):
    """`name` = [Div|Mul by a scalar] (MatMul(q, k^T)), used only there."""
    j = g.node(name, ("Div", "Mul", "MatMul"))
    if j is None:
        return None
    n = g.nodes[j]
    nodes, scale = [], None
    if n.op_type != "MatMul":
        pairs = _orders(n.input) if n.op_type == "Mul" else [tuple(n.input[:2])]
        for qk, c in pairs:
            k = g.node(qk, "MatMul")
            if k is not None:
                nodes, scale, j = [j], (n.op_type, c), k
                break
        else:
            return None
    q, kt = g.nodes[j].input
    nodes.append(j)
    qmul = g.node(q, "Mul")
    outer, outer_c, tr = None, None, None
    o = g.node(kt, "Mul")
    if o is not None:
        for a, c in _orders(g.nodes[o].input):
            t = g.node(a, "Transpose")
            if t is not None:
                outer, outer_c, tr = o, c, t
                break
    if tr is None:
        tr = g.node(kt, "Transpose")
    inner = g.node(g.nodes[tr].input[0], "Mul") if tr is not None else None
    nodes += [x for x in (qmul, outer, tr, inner) if x is not None]
    return {"nodes": nodes, "scale": scale, "q": q, "qmul": qmul, "kt": kt, "outer": outer,
            "outer_c": outer_c, "tr": tr, "inner": inner}


def _match_attention(g, i):
    root = g.nodes[i]
    p, v = root.input
    si = g.node(p, "Softmax")
    if si is None:
        return None
    s1 = g.nodes[si].input[0]
    nodes, mask = [i, si], None
    core = _scores(g, s1)
    if core is None:
        j = g.node(s1, ("Where", "Add"))
        if j is None:
            return None
        mn = g.nodes[j]
        if mn.op_type == "Where":
            cond, a, b = mn.input
            for scores, fill, keep_true in ((b, a, False), (a, b, True)):
                core = _scores(g, scores)
                if core:
                    mask = ("where", cond, fill, keep_true)
                    break
        else:
            for scores, add in _orders(mn.input):
                core = _scores(g, scores)
                if core:
                    mask = ("add", add)
                    break
        if core is None:
            return None
        nodes.append(j)
    data = dict(core, v=v, softmax=si, mask=mask, k_rep=None, v_rep=None)
    nodes = nodes + core["nodes"]
    if core["tr"] is not None and core["inner"] is None:
        k_rep, v_rep = _repeat_chain(g, g.nodes[core["tr"]].input[0]), _repeat_chain(g, v)
        if k_rep and v_rep:
            data["k_rep"], data["v_rep"] = k_rep, v_rep
            nodes += k_rep + v_rep
    return Match("attention", i, nodes, _emit_attention, data)


def _repeat_chain(g, name):
    """[Reshape, Expand, Unsqueeze] node indices when `name` is
    `Reshape(Expand(Unsqueeze(x)))`, each used only by the next (what
    `_unrepeated` checks to be a repetition of x's heads)."""
    rs = g.node(name, "Reshape")
    ex = g.node(g.nodes[rs].input[0], "Expand") if rs is not None else None
    un = g.node(g.nodes[ex].input[0], "Unsqueeze") if ex is not None else None
    return [rs, ex, un] if un is not None else None


def _unrepeated(imp, chain):
    """(x, rep) when the repeat chain [Reshape, Expand, Unsqueeze] makes
    B x (Hkv * rep) x S x D of a 4-D x (B x Hkv x S x D) whose head j is x's
    head j // rep: unsqueezed at 2, expanded there to rep, the two dims
    merged. Else None. Reads only the chain's operands (nothing is emitted)."""
    rs, ex, un = (imp.nodes[i] for i in chain)
    x = imp.get(un.input[0])
    if not isinstance(x, Value) or x.rank != 4:
        return None
    try:
        axes = axes_arg(un, [imp.get(n) for n in un.input], attrs_of(un))
        shape, target = imp.get(ex.input[1]), imp.get(rs.input[1])
        if axes is None or [a % 5 for a in axes] != [2] or not isinstance(shape, Const) or \
                not isinstance(target, Const):
            return None
        b, kv, s, d = x.shape
        wide = broadcast_shapes((b, kv, 1, s, d), tuple(ints(shape)))
        if len(wide) != 5 or wide[:2] != (b, kv) or wide[3:] != (s, d):
            return None
        out = reshape_target(wide, ints(target), attrs_of(rs).get("allowzero", 0))
    except ImportError_:
        return None
    return (x, wide[2]) if out == (b, kv * wide[2], s, d) else None


def _unrepeated_kv(imp, d):
    """(k, v) before their repetition when both repeat chains check out
    with one count, else None."""
    if not d.get("k_rep") or not d.get("v_rep"):
        return None
    k, v = _unrepeated(imp, d["k_rep"]), _unrepeated(imp, d["v_rep"])
    if k is None or v is None or k[1] != v[1] or k[0].shape[1] != v[0].shape[1]:
        return None
    return k[0], v[0]


def _scaled(imp, j, name):
    """(value, factor): `name` = Mul(y, c) with a scalar constant c gives
    (y, c); otherwise name's own value (emitted on demand) and 1."""
    if j is not None:
        for y, c in _orders(imp.nodes[j].input):
            f = imp.scalar(c)
            if f is not None and isinstance(imp.get(y), Value):
                return imp.get(y), f
    return imp.get(name), 1.0


def _causal(keep: np.ndarray, sq: int, sk: int) -> bool:
    """Whether a keep-mask is exactly sgpu.attention's `causal` (key j
    visible from query i iff j <= i + sk - sq), broadcast over batch and heads."""
    if keep.ndim < 2 or keep.shape[-2:] != (sq, sk) or any(d != 1 for d in keep.shape[:-2]):
        return False
    return bool((keep.reshape(sq, sk) == np.tril(np.ones((sq, sk), bool), sk - sq)).all())


def _broadcasts(shape, full):
    return len(shape) <= 4 and all(d in (1, f) for d, f in zip(reversed(shape), reversed(full)))


def _is_neg_inf(v):
    # -inf, or a finite fill that underflows exp() exactly the same way
    # (torch.finfo(dtype).min, HF's -10000.0).
    return v is not None and (v == -math.inf or v <= -1e4)


def _emit_attention(imp, m):
    d = m.data
    root = imp.nodes[m.root]
    loc = imp.loc(root)
    # 1. constants (nothing emitted yet)
    scale = 1.0
    if d["scale"]:
        op, c = d["scale"]
        s = imp.scalar(c)
        if s is None or s == 0:
            raise Fallback
        scale = 1.0 / s if op == "Div" else s
    axis = attrs_of(imp.nodes[d["softmax"]]).get("axis", -1)
    mask = d["mask"]
    if mask and mask[0] == "where" and not _is_neg_inf(imp.scalar(mask[2])):
        raise Fallback
    # 2. q, k, v (values the block does not absorb are emitted on demand)
    q, f = _scaled(imp, d["qmul"], d["q"])
    scale *= f
    base, perm, v = None, [0, 1, 3, 2], None
    if d["tr"] is not None:
        f = 1.0
        if d["outer"] is not None:
            f = imp.scalar(d["outer_c"])
        if f is not None:
            tn = imp.nodes[d["tr"]]
            unrepeated = _unrepeated_kv(imp, d)
            if unrepeated is not None:
                (base, v), g2 = unrepeated, 1.0
            else:  # (a repeat chain that does not check out is emitted here, on demand)
                base, g2 = _scaled(imp, d["inner"], tn.input[0])
            p = list(attrs_of(tn).get("perm") or reversed(range(base.rank)))
            if len(p) != 4:
                raise Fallback
            perm = [p[0], p[1], p[3], p[2]]
            scale *= f * g2
    if base is None:
        base = imp.get(d["kt"])
    if v is None:
        v = imp.get(d["v"])
    if not all(isinstance(t, (Value, Const)) and t.rank == 4 for t in (q, base, v)) or axis % 4 != 3:
        raise Fallback
    kshape = tuple(base.shape[p] for p in perm)
    (b, h, sq, dq), (bk, hk, sk, dk), (bv, hv, sv, _) = q.shape, kshape, v.shape
    if not (b == bk == bv and hk == hv and sk == sv and dq == dk and hk and h % hk == 0):
        raise Fallback
    dts = {imp.fdt(t.dtype) if isinstance(t, Const) else t.dtype for t in (q, base, v)}
    if len(dts) != 1 or next(iter(dts)) not in FLOAT_TYPES:
        raise Fallback
    dtype = dts.pop()
    full = (b, h, sq, sk)
    causal, keep, keep_value, fmask = False, None, None, None
    if mask and mask[0] == "where":
        cond, keep_true = imp.get(mask[1]), mask[3]
        if cond.dtype != "i1" or not _broadcasts(cond.shape, full):
            raise Fallback
        if isinstance(cond, Const):
            keep = cond.array.astype(bool) if keep_true else ~cond.array.astype(bool)
            causal = _causal(keep, sq, sk)
        else:
            keep_value = cond
    elif mask:
        fmask = imp.get(mask[1])
        if fmask.dtype not in FLOAT_TYPES or not _broadcasts(fmask.shape, full):
            raise Fallback
        if isinstance(fmask, Const):
            arr = fmask.array
            if ((arr == 0) | (arr <= -1e4)).all() and _causal(arr == 0, sq, sk):
                causal, fmask = True, None
    # 3. emit
    k = imp.e.transpose(imp.tensor(base), perm, loc)
    mask_value = None
    if keep is not None and not causal:
        # sgpu.attention keeps positions where an i1 mask is true, ONNX's
        # Where(mask, -inf, scores) drops them: the constant is negated here.
        mask_value = imp.materialize(Const(keep, "i1"), name=(cond.source or mask[1]) + "_keep")
    elif keep_value is not None:
        # ... and a runtime mask is negated with an element-wise xor (Not).
        mask_value = keep_value if keep_true else logical_not(imp, keep_value, loc)
    elif fmask is not None:
        mask_value = imp.tensor(fmask)
        if mask_value.dtype not in (dtype, "f32"):
            mask_value = imp.e.unary("cast", mask_value, loc, out_dtype=dtype)
    return [imp.e.attention(imp.tensor(q), k, imp.tensor(v), mask_value, causal, scale, loc)]


# -------------------------------------------------------------- the finder
MATCHERS = {
    "MatMul": (_match_attention, _match_matmul_tb),
    "Add": (_match_rope, _match_linear_bias),
    "Mul": (_match_rms_weighted, _match_gelu, _match_silu, _match_rms),
    "Div": (_match_rms,),
}


def find_matches(g: GraphIndex, within=None, rejected=frozenset()) -> dict:
    """{root node index: Match}, claiming each node at most once, latest
    roots first (so a block absorbs the smaller patterns inside it). With
    `within`, only blocks made of those nodes; `rejected` holds (root, kind)
    pairs that did not check out."""
    claimed, matches = set(), {}
    for i in reversed(range(len(g.nodes)) if within is None else sorted(within)):
        n = g.nodes[i]
        if i in claimed or n.domain not in STANDARD:
            continue
        for matcher in MATCHERS.get(n.op_type, ()):
            m = matcher(g, i)
            if m is None or (i, m.kind) in rejected or set(m.nodes) & claimed:
                continue
            if within is not None and not set(m.nodes) <= within:
                continue
            matches[i] = m
            claimed |= set(m.nodes)
            break
    return matches
