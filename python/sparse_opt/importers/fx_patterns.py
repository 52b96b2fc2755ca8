"""Recognition of SparseOpt's block ops in a torch.fx graph, before emission.

- RMSNorm written out: `x * rsqrt(mean(x.pow(2) | x*x, -1, keepdim=True) + eps)`
  (either operand order, or `x / sqrt(...)`), optionally cast in and out
  (`x.float()` ... `.to(dtype)`, as Hugging Face writes it) and optionally
  times a 1-D weight (either order) -> `sgpu.rms_norm`.
- Attention written out: `matmul(q, k^T)` (q and k^T optionally scaled
  first), scalar `*`/`/` scale(s), `+ float mask`, `masked_fill(bool mask,
  -inf)` or `where(bool mask, -inf, s)` / `where(keep, s, -inf)`, `softmax(-1)`,
  `matmul(., v)` on 4-D q/k/v -> `sgpu.attention`. A mask whose value is
  known at import time and equals the causal mask becomes `{causal}`; other
  boolean masks (True = masked, masked_fill's sense) are negated into the
  keep-mask `sgpu.attention` takes.
- Grouped-query attention: k and v whose heads were repeated for the
  attention only (Hugging Face's `repeat_kv`, `x[:, :, None].expand(b, kv,
  rep, s, d).reshape(b, kv * rep, s, d)`, or `torch.repeat_interleave(x,
  rep, dim=1)`), in the form above or into `F.scaled_dot_product_attention`,
  reach `sgpu.attention` un-repeated: its query head h reads k/v head
  h // (H / Hkv), the head the repetition puts at h. Nothing of the
  repeated size is computed.
- Rotary embeddings written out: `x * cos + rotate_half(x) * sin` with
  `rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2], dim=-1)` (getitem or
  ATen slices; either operand order in each product and in the sum), cos and
  sin of x's dtype broadcasting to x -> `sgpu.rope`.
- A transpose of the last two dims whose only user is a matmul (as its right
  operand) folds into that matmul (`transpose_b`).

Only values used solely inside a pattern are absorbed into it: a value the
rest of the graph also reads stops the match, and the graph is emitted op by
op instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch.fx import Node

from . import fx_cache, fx_forms, fx_ops, fx_registry
from .fx_masks import is_causal_mask
from .fx_values import NOT_CONST
from .emitter import ImportError_, Value, promote


@dataclass
class RMSNormMatch:
    x: Node
    eps: float
    weight: Optional[Node]
    pre_cast: Optional[Node]
    post_cast: Optional[Node]
    nodes: list = field(default_factory=list)


@dataclass
class AttentionMatch:
    q: Node
    k: Node
    k_transposed: bool       # k is given as k^T (B x H x D x S): transpose it back
    v: Node
    scale: float
    mask: Optional[Node]
    mask_kind: Optional[str]  # "fill" (True = masked), "keep" (True = kept) or "add" (float, added)
    causal: bool
    nodes: list = field(default_factory=list)
    dropped: list = field(default_factory=list)  # inputs not read (a mask found causal)
    positions: Optional[Node] = None  # a causal table gathered by these positions (a cache)


@dataclass
class SdpaMatch:
    """F.scaled_dot_product_attention (or its ATen op) on k and v whose heads
    were repeated for it only: emitted on the un-repeated k and v."""
    node: Node
    key: Node
    value: Node
    nodes: list = field(default_factory=list)


@dataclass
class RoPEMatch:
    x: Node
    cos: Node
    sin: Node
    nodes: list = field(default_factory=list)


# The blocks recognized here, as `supported_ops()` names them.
BLOCKS = ("rms_norm", "attention", "rope")


def _single(n, user) -> bool:
    return isinstance(n, Node) and len(n.users) == 1 and user in n.users


def _kind(imp, n) -> Optional[str]:
    c = imp.call(n) if isinstance(n, Node) else None
    return c.kind if c is not None else None


# ------------------------------------------------------------------ RMSNorm
def _last_dim(imp, dim, rank) -> bool:
    dim = imp.const(dim)
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            return False
        dim = dim[0]
    return isinstance(dim, int) and rank > 0 and dim % rank == rank - 1


def match_rms_norm(imp, n: Node) -> Optional[tuple]:
    """(root, RMSNormMatch) when `n` is the `x * rsqrt(...)` / `x / sqrt(...)` of an RMSNorm."""
    c = imp.call(n)
    if c is None or c.kind not in ("mul", "div"):
        return None
    a, b = c.args["input"], c.args["other"]
    for xp, r in ([(a, b), (b, a)] if c.kind == "mul" else [(a, b)]):
        if not isinstance(xp, Node) or not isinstance(r, Node) or xp is r:
            continue
        shape = imp.shape(xp)
        if shape is None or len(shape) < 1:
            continue
        rc = imp.call(r)
        if rc is None or rc.kind != ("rsqrt" if c.kind == "mul" else "sqrt") or not _single(r, n):
            continue
        inner = rc.args["input"]
        ic = imp.call(inner) if isinstance(inner, Node) else None
        if ic is None or ic.kind != "add" or not _single(inner, r) or imp.const(ic.args["alpha"]) != 1:
            continue
        eps = mean = None
        for u, e in ((ic.args["input"], ic.args["other"]), (ic.args["other"], ic.args["input"])):
            if isinstance(u, Node) and imp.number(e) is not None:
                mean, eps = u, float(imp.number(e))
                break
        mc = imp.call(mean) if mean is not None else None
        if mc is None or mc.kind != "mean" or not _single(mean, inner) or imp.const(mc.args["keepdim"]) is not True \
                or mc.args["dtype"] is not None or not _last_dim(imp, mc.args["dim"], len(shape)):
            continue
        sq = mc.args["input"]
        sc = imp.call(sq) if isinstance(sq, Node) else None
        if sc is None or not _single(sq, mean):
            continue
        if not ((sc.kind == "pow" and sc.args["input"] is xp and imp.number(sc.args["exponent"]) == 2) or
                (sc.kind == "mul" and sc.args["input"] is xp and sc.args["other"] is xp) or
                (sc.kind == "square" and sc.args["input"] is xp)):
            continue
        m = RMSNormMatch(x=xp, eps=eps, weight=None, pre_cast=None, post_cast=None, nodes=[sq, mean, inner, r, n])
        if _kind(imp, xp) == "cast" and set(xp.users) == {sq, n}:
            m.pre_cast, m.x = xp, imp.call(xp).args["input"]
            m.nodes.insert(0, xp)
            if not isinstance(m.x, Node):
                continue
        root = n
        if len(root.users) == 1 and _kind(imp, next(iter(root.users))) == "cast":
            root = next(iter(root.users))
            m.post_cast = root
            m.nodes.append(root)
        if len(root.users) == 1:
            u = next(iter(root.users))
            uc = imp.call(u)
            if uc is not None and uc.kind == "mul" and (uc.args["input"] is root) != (uc.args["other"] is root):
                w = uc.args["other"] if uc.args["input"] is root else uc.args["input"]
                if isinstance(w, Node) and imp.shape(w) == (shape[-1],):
                    m.weight, root = w, u
                    m.nodes.append(u)
        return root, m
    return None


def _cast_dtype(imp, cast_node) -> str:
    c = imp.call(cast_node)
    dt = None
    for t in tuple(c.args.get("targets", ())) + (c.args.get("dtype"),):
        t = imp.operand(t)
        if isinstance(t, torch.dtype):
            dt = fx_forms.mlir_dtype(t)
        elif isinstance(t, Value):
            dt = t.dtype
    if dt is None:
        dt = imp.value(c.args["input"]).dtype
    if dt not in ("f16", "bf16", "f32", "f64"):
        raise ImportError_("RMSNorm pattern: cast to %s" % dt)
    return dt


def emit_rms_norm(imp, m: RMSNormMatch) -> Value:
    x = imp.value(m.x)
    inner = x.dtype
    if m.pre_cast is not None:
        inner = _cast_dtype(imp, m.pre_cast)
    if m.post_cast is not None:
        inner = _cast_dtype(imp, m.post_cast)
    w = imp.value(m.weight) if m.weight is not None else None
    dt = promote(inner, w.dtype) if w is not None else inner
    if dt not in ("f16", "bf16", "f32"):
        dt = "f32"
    x = fx_ops.cast_to(imp, x, dt)
    w = fx_ops.cast_to(imp, w, dt) if w is not None else imp.e.splat(1.0, (x.shape[-1],), dt, imp.loc)
    return imp.e.rms_norm(x, w, m.eps, imp.loc)


# ---------------------------------------------------------------- attention
def _tensor_and_number(imp, c):
    """(tensor operand, factor) of a scalar mul/div, else (None, None)."""
    a, b = c.args["input"], c.args["other"]
    if c.kind == "div":
        k = imp.number(b)
        return (a, 1.0 / k) if isinstance(a, Node) and k else (None, None)
    for t, s in ((a, b), (b, a)):
        k = imp.number(s)
        if isinstance(t, Node) and k is not None:
            return t, float(k)
    return None, None


def _scores(imp, cur, prev, allow_fill):
    """Walks `(scale)* [masked_fill (scale)*]` back from `cur` (used by
    `prev`) to the q.k^T matmul: (matmul node, scale, fill mask, nodes)."""
    nodes, scale, fill = [], 1.0, None
    while True:
        if not _single(cur, prev):
            return None
        c = imp.call(cur)
        if c is None:
            return None
        if c.kind == "matmul":
            return cur, scale, fill, nodes
        if c.kind in ("mul", "div"):
            t, k = _tensor_and_number(imp, c)
            if t is None:
                return None
            scale *= k
        elif c.kind == "masked_fill" and allow_fill and fill is None and isinstance(c.args["mask"], Node):
            v = imp.number(c.args["value"])
            # A fill seen after (in program order, before) a scale survives it
            # only when the scale keeps it hugely negative.
            if not (fx_ops.neg_inf_like(v) and scale > 0 and (v == float("-inf") or v * scale <= -1e4)):
                return None
            fill, t = (c.args["mask"], "fill"), c.args["input"]
        elif c.kind == "where" and allow_fill and fill is None and isinstance(c.args["condition"], Node):
            # where(mask, -inf, x) (masked_fill as ATen decompositions write
            # it) or where(keep, x, -inf).
            found = None
            for v, t, kind in ((c.args["input"], c.args["other"], "fill"), (c.args["other"], c.args["input"], "keep")):
                v = imp.number(v)
                if isinstance(t, Node) and imp.shape(t) == imp.shape(cur) and fx_ops.neg_inf_like(v) and \
                        imp.tensor_dtype(c.args["condition"]) is torch.bool and \
                        scale > 0 and (v == float("-inf") or v * scale <= -1e4):
                    found = (c.args["condition"], kind), t
                    break
            if found is None:
                return None
            fill, t = found
        else:
            return None
        nodes.append(cur)
        prev, cur = cur, t


def _broadcasts(shape, full) -> bool:
    return shape is not None and len(shape) <= len(full) and all(
        d in (1, f) for d, f in zip(reversed(shape), reversed(full)))


def _peel_scale(imp, n, user):
    """(operand, factor, nodes) through single-use multiplications of `n` by
    positive numbers."""
    nodes, f = [], 1.0
    while isinstance(n, Node) and _single(n, user):
        c = imp.call(n)
        if c is None or c.kind not in ("mul", "div"):
            break
        t, k = _tensor_and_number(imp, c)
        if t is None or not k > 0 or imp.shape(t) != imp.shape(n):
            break
        f *= k
        nodes.append(n)
        user, n = n, t
    return n, f, nodes


def _unsqueezes_dim2(imp, n, x) -> bool:
    """Whether node `n` is x with a unit dim inserted at 2 and nothing else
    (a reshape, unsqueeze or view, or an index of None and full slices):
    the same elements in the same order."""
    c = imp.call(n)
    if c is None:
        return False
    if c.kind == "reshape":
        return True  # the shapes (checked by the caller) fix where the unit dim goes
    if c.kind != "getitem":
        return False
    index = _static(imp, c.args["index"])
    items = list(index) if isinstance(index, tuple) else [index]
    return all(it is None or it is Ellipsis or it == slice(None) for it in items) and \
        sum(1 for it in items if it is None) == 1


def repeated_heads(imp, n, user) -> Optional[tuple]:
    """(x, nodes) when `n`, used only by `user`, repeats the heads of a 4-D
    x (B x Hkv x S x D) to B x (Hkv * rep) x S x D with head j reading x's
    head j // rep: `x[:, :, None].expand(B, Hkv, rep, S, D).reshape(B, Hkv *
    rep, S, D)` (any unsqueeze form; a clone or contiguous may sit between
    the expand and the reshape, as ATen writes it) or
    `repeat_interleave(x, rep, dim=1)`. `nodes` are the repetition's nodes,
    each used only by the next. Else None."""
    if not _single(n, user):
        return None
    c, shape = imp.call(n), imp.shape(n)
    if c is None or shape is None or len(shape) != 4:
        return None
    b, h, s, d = shape
    if c.kind == "repeat_interleave":
        x, rep, dim = c.args["input"], _static(imp, c.args["repeats"]), _static(imp, c.args["dim"])
        xs = imp.shape(x) if isinstance(x, Node) else None
        if isinstance(rep, int) and not isinstance(rep, bool) and rep > 0 and isinstance(dim, int) and \
                dim % 4 == 1 and xs is not None and xs == (b, h // rep, s, d) and xs[1] * rep == h:
            return x, [n]
        return None
    if c.kind != "reshape":
        return None
    nodes = [n]
    e = _skip_noop_views(imp, c.args["input"], nodes)
    es = imp.shape(e) if isinstance(e, Node) else None
    if _kind(imp, e) != "expand" or not _single(e, nodes[-1]) or es is None or len(es) != 5 or \
            es[0] != b or es[1] * es[2] != h or es[3:] != (s, d):
        return None
    nodes.append(e)
    u = _skip_noop_views(imp, imp.call(e).args["input"], nodes)
    if not isinstance(u, Node) or not _single(u, nodes[-1]) or imp.shape(u) != (b, es[1], 1, s, d):
        return None
    x = imp.call(u).args.get("input") if imp.call(u) is not None else None
    if not isinstance(x, Node) or imp.shape(x) != (b, es[1], s, d) or not _unsqueezes_dim2(imp, u, x):
        return None
    return x, nodes + [u]


def _skip_noop_views(imp, n, nodes):
    """The first node back from `n` (each used only by the next, the last by
    nodes[-1]) that is not a copy of its input: a clone or contiguous, or a
    slice or index that keeps every element (ATen writes `x[:, :, None]` as
    full slices around an unsqueeze). The skipped nodes join `nodes`."""
    while isinstance(n, Node) and _single(n, nodes[-1]):
        c = imp.call(n)
        src = c.args.get("input") if c is not None else None
        if not isinstance(src, Node) or imp.shape(src) is None or imp.shape(src) != imp.shape(n):
            break
        if c.kind == "getitem":
            index = _static(imp, c.args["index"])
            items = list(index) if isinstance(index, tuple) else [index]
            if not all(it is Ellipsis or it == slice(None) for it in items):
                break
        elif c.kind not in ("identity", "slice"):  # a slice of unchanged size keeps every element
            break
        nodes.append(n)
        n = src
    return n


def _unrepeated_kv(imp, k, k_user, v, v_user) -> Optional[tuple]:
    """(k, v, nodes): the un-repeated k and v when both were repeated for
    the attention only, by the same count; else None."""
    if k is v:
        return None
    rk, rv = repeated_heads(imp, k, k_user), repeated_heads(imp, v, v_user)
    if rk is None or rv is None or imp.shape(rk[0])[1] != imp.shape(rv[0])[1]:
        return None
    return rk[0], rv[0], rk[1] + rv[1]


def match_sdpa(imp, n: Node) -> Optional[tuple]:
    """(n, SdpaMatch) when `n` is a scaled_dot_product_attention whose k and
    v are repeated heads used by it only."""
    c = imp.call(n)
    if c is None or c.kind != "sdpa" or not isinstance(c.args["key"], Node) or \
            not isinstance(c.args["value"], Node):
        return None
    found = _unrepeated_kv(imp, c.args["key"], n, c.args["value"], n)
    if found is None:
        return None
    k, v, nodes = found
    return n, SdpaMatch(node=n, key=k, value=v, nodes=nodes + [n])


def emit_sdpa(imp, m: SdpaMatch):
    c = imp.call(m.node)
    call = fx_ops.Call("sdpa", dict(c.args, key=m.key, value=m.value, enable_gqa=True), c.module, c.extra)
    result = fx_registry.handler("sdpa")(imp, call)
    results = c.extra.get("results")
    if results:
        # An ATen attention kernel's other results (logsumexp, ...) are not computed.
        what = fx_forms.describe_target(m.node, imp.gm)
        result = (result,) + tuple(fx_ops.NoValue(what) for _ in range(results - 1))
    return result


def match_attention(imp, p: Node) -> Optional[tuple]:
    """(root, AttentionMatch) when softmax node `p` sits between two matmuls of 4-D q/k/v."""
    pc = imp.call(p)
    if pc is None or pc.kind != "softmax" or pc.args["dtype"] is not None or len(p.users) != 1:
        return None
    shape = imp.shape(p)
    if shape is None or len(shape) != 4 or not _last_dim(imp, pc.args["dim"], 4):
        return None
    m2 = next(iter(p.users))
    m2c = imp.call(m2)
    if m2c is None or m2c.kind != "matmul" or m2c.args["input"] is not p or m2c.args["other"] is p:
        return None
    cur = pc.args["input"]
    res, mask, mask_kind, extra = None, None, None, []
    cc = imp.call(cur) if isinstance(cur, Node) else None
    if cc is not None and cc.kind == "add" and _single(cur, p) and imp.const(cc.args["alpha"]) == 1:
        for s, mk in ((cc.args["input"], cc.args["other"]), (cc.args["other"], cc.args["input"])):
            if isinstance(s, Node) and isinstance(mk, Node) and _broadcasts(imp.shape(mk), shape):
                res = _scores(imp, s, cur, allow_fill=False)
                if res is not None:
                    mask, mask_kind, extra = mk, "add", [cur]
                    break
    if res is None:
        res = _scores(imp, cur, p, allow_fill=True)
        if res is None:
            return None
        if res[2] is not None:
            mask, mask_kind = res[2]
    m1, scale, _, nodes = res
    m1c = imp.call(m1)
    q, kt = m1c.args["input"], m1c.args["other"]
    # Scales on q and k^T (SDPA's decomposition scales both by sqrt(scale)).
    q, fq, q_nodes = _peel_scale(imp, q, m1)
    kt, fk, k_nodes = _peel_scale(imp, kt, m1)
    kt_user = k_nodes[-1] if k_nodes else m1
    scale *= fq * fk
    nodes = nodes + q_nodes + k_nodes
    if not isinstance(q, Node) or not isinstance(kt, Node) or q is kt:
        return None
    v = m2c.args["other"]
    ktc = imp.call(kt)
    kts = imp.shape(kt)
    if kts is None or len(kts) != 4:
        return None
    m = AttentionMatch(q=q, k=kt, k_transposed=True, v=v, scale=scale, mask=mask, mask_kind=mask_kind,
                       causal=False)
    k_user = kt_user
    if ktc is not None and fx_ops.transposes_last_two(ktc, 4) and _single(kt, kt_user) \
            and isinstance(ktc.args["input"], Node):
        m.k, m.k_transposed, k_user = ktc.args["input"], False, kt
        nodes = nodes + [kt]
    if isinstance(v, Node):
        # Grouped-query attention: the k/v heads before their repetition.
        found = _unrepeated_kv(imp, m.k, k_user, v, m2)
        if found is not None:
            m.k, m.v, repeat_nodes = found
            v = m.v
            nodes = nodes + repeat_nodes
    qs, vs, ks = imp.shape(q), imp.shape(v), imp.shape(m.k)
    if ks is None or len(ks) != 4:
        return None
    if m.k_transposed:
        ks = ks[:2] + (ks[3], ks[2])
    if qs is None or vs is None or len(qs) != 4 or len(vs) != 4:
        return None
    b, h, sq, d = qs
    if ks[0] != b or vs[0] != b or ks[1] != vs[1] or ks[1] == 0 or h % ks[1] or ks[2] != vs[2] or ks[3] != d:
        return None
    if mask is not None and not _broadcasts(imp.shape(mask), (b, h, sq, ks[2])):
        return None
    pos = fx_cache.gathered_causal_positions(imp, mask, mask_kind) if mask is not None else None
    if pos is not None:
        m.dropped, m.mask, m.mask_kind, m.causal, m.positions = [mask], None, None, True, pos
    elif mask is not None and is_causal_mask(imp.known_data(mask, "to tell whether the attention mask is causal"),
                                             sq, ks[2], mask_kind):
        m.dropped, m.mask, m.mask_kind, m.causal = [mask], None, None, True
    m.nodes = [m1] + nodes + extra + [p, m2]
    return m2, m


def emit_attention(imp, m: AttentionMatch) -> Value:
    q, v = imp.value(m.q), imp.value(m.v)
    k = imp.value(m.k)
    if m.k_transposed:
        k = imp.e.transpose(k, [0, 1, 3, 2], imp.loc)
    mask = None
    if m.mask is not None:
        mask = imp.value(m.mask)
        if m.mask_kind in ("fill", "keep") and mask.dtype != "i1":
            raise ImportError_("a masking select needs a boolean mask, got %s" % mask.dtype)
        if m.mask_kind == "fill":
            # sgpu.attention keeps where true: not(mask), with a splat operand
            # (the emitter's i1 scalar literal does not parse).
            mask = imp.e.compare("eq", mask, fx_ops.i1_constant(imp, False), imp.loc)
    if m.positions is not None:
        return fx_cache.attend_cache(imp, q, k, v, m.scale, m.positions)
    return fx_ops.attention(imp, q, k, v, mask, m.causal, m.scale)


# --------------------------------------------------------------------- RoPE
_NOT_STATIC = object()


def _static(imp, v):
    """`v` with every node in it replaced by its import-time value
    (_NOT_STATIC when one has none): a getitem index holds the slice bounds
    as nodes (`x[..., x.size(-1) // 2:]`)."""
    if isinstance(v, Node):
        c = imp.const(v)
        return _NOT_STATIC if c is NOT_CONST else c
    if isinstance(v, slice):
        parts = [_static(imp, p) for p in (v.start, v.stop, v.step)]
        return _NOT_STATIC if any(p is _NOT_STATIC for p in parts) else slice(*parts)
    if isinstance(v, (tuple, list)):
        parts = [_static(imp, p) for p in v]
        return _NOT_STATIC if any(p is _NOT_STATIC for p in parts) else tuple(parts)
    return v


def _last_dim_slice(imp, c, rank):
    """(start, stop, step) of a getitem / ATen slice `c` that slices only the
    last of `rank` dims, else None."""
    if c.kind == "slice":
        dim, parts = _static(imp, c.args["dim"]), _static(imp, (c.args["start"], c.args["end"], c.args["step"]))
        if not isinstance(dim, int) or parts is _NOT_STATIC or dim % rank != rank - 1:
            return None
        return parts
    index = _static(imp, c.args["index"])
    items = list(index) if isinstance(index, tuple) else [index]
    if len(items) == 2 and items[0] is Ellipsis:
        items = [slice(None)] * (rank - 1) + items[1:]
    if len(items) != rank or not isinstance(items[-1], slice) or \
            any(it != slice(None) for it in items[:-1]):
        return None
    return items[-1].start, items[-1].stop, items[-1].step


def _half(imp, n, d, rank) -> Optional[tuple]:
    """(source, "lo" | "hi") when `n` is `x[..., :d/2]` / `x[..., d/2:]` of a
    tensor x whose last dim is d, else None."""
    c = imp.call(n) if isinstance(n, Node) else None
    if c is None or c.kind not in ("getitem", "slice") or not isinstance(c.args["input"], Node):
        return None
    bounds = _last_dim_slice(imp, c, rank)
    if bounds is None:
        return None
    start, stop, step = bounds
    if step not in (None, 1) or not all(b is None or isinstance(b, int) for b in (start, stop)):
        return None
    start = 0 if start is None else (start + d if start < 0 else start)
    stop = d if stop is None else min(stop + d if stop < 0 else stop, d)
    half = {(0, d // 2): "lo", (d // 2, d): "hi"}.get((start, stop))
    return (c.args["input"], half) if half else None


def _rotate_half(imp, n, user) -> Optional[tuple]:
    """(x, nodes) when `n` (used only by `user`) is `cat(-x[..., D/2:],
    x[..., :D/2], dim=-1)`."""
    c = imp.call(n) if isinstance(n, Node) else None
    shape = imp.shape(n)
    if c is None or c.kind != "cat" or not _single(n, user) or not shape or shape[-1] % 2:
        return None
    parts, rank, d = c.args["tensors"], len(shape), shape[-1]
    dim = _static(imp, c.args["dim"])
    if not isinstance(parts, (list, tuple)) or len(parts) != 2 or not isinstance(dim, int) or dim % rank != rank - 1:
        return None
    neg, lo = parts
    nc = imp.call(neg) if isinstance(neg, Node) else None
    if nc is None or nc.kind != "neg" or not _single(neg, n) or not _single(lo, n):
        return None
    hi = nc.args["input"]
    found_hi, found_lo = _half(imp, hi, d, rank), _half(imp, lo, d, rank)
    if not _single(hi, neg) or found_hi is None or found_lo is None or found_hi[1] != "hi" or \
            found_lo[1] != "lo" or found_hi[0] is not found_lo[0] or imp.shape(found_hi[0]) != shape:
        return None
    return found_hi[0], [hi, neg, lo, n]


def _mul_operands(imp, n, user):
    """The two operands of `n` when it is a tensor product used only by `user`."""
    c = imp.call(n) if isinstance(n, Node) else None
    if c is None or c.kind != "mul" or not _single(n, user):
        return None
    a, b = c.args["input"], c.args["other"]
    return (a, b) if isinstance(a, Node) and isinstance(b, Node) else None


def match_rope(imp, n: Node) -> Optional[tuple]:
    """(n, RoPEMatch) when `n` is `x * cos + rotate_half(x) * sin` (operands
    of each product and of the sum in either order) with cos and sin of x's
    dtype, of at most x's rank and broadcasting to x's shape."""
    c = imp.call(n)
    if c is None or c.kind != "add" or imp.const(c.args.get("alpha", 1)) != 1:
        return None
    shape = imp.shape(n)
    for a, b in ((c.args["input"], c.args["other"]), (c.args["other"], c.args["input"])):
        pa, pb = _mul_operands(imp, a, n), _mul_operands(imp, b, n)
        if pa is None or pb is None or a is b:
            continue
        for rot, sin in (pb, pb[::-1]):
            found = _rotate_half(imp, rot, b)
            if found is None:
                continue
            x, nodes = found
            if x not in pa or pa[0] is pa[1]:
                continue
            cos = pa[1] if pa[0] is x else pa[0]
            if _rope_operands_fit(imp, x, cos, sin, shape):
                return n, RoPEMatch(x=x, cos=cos, sin=sin, nodes=nodes + [b, a, n])
    return None


def _rope_operands_fit(imp, x, cos, sin, shape) -> bool:
    xs = imp.shape(x)
    if xs is None or shape != xs or x in (cos, sin):
        return False
    dt = imp.tensor_dtype(x)
    if dt is None or not dt.is_floating_point:
        return False
    return all(imp.tensor_dtype(t) == dt and _broadcasts(imp.shape(t), xs) for t in (cos, sin))


def emit_rope(imp, m: RoPEMatch) -> Value:
    x = imp.value(m.x)
    ops = []
    for t in (m.cos, m.sin):
        v = fx_ops.cast_to(imp, imp.value(t), x.dtype)  # differ only where dtype= cast one side
        if v.rank < x.rank:
            v = imp.e.reshape(v, (1,) * (x.rank - v.rank) + v.shape, imp.loc)
        ops.append(v)
    return imp.e.rope(x, ops[0], ops[1], imp.loc)


# -------------------------------------------------------------------- driver
def find(imp):
    """Matches over the whole graph: ({root: match}, absorbed nodes, folded transposes)."""
    matches, absorbed = {}, set()
    nodes = list(imp.gm.graph.nodes)
    for finder in (match_attention, match_sdpa, match_rms_norm, match_rope):
        for n in nodes:
            if n in absorbed or n in matches:
                continue
            found = finder(imp, n)
            if found is None:
                continue
            root, m = found
            if any(x in absorbed or x in matches for x in m.nodes):
                continue
            matches[root] = m
            absorbed.update(x for x in m.nodes if x is not root)
    folds = set()
    for n in nodes:
        if n in absorbed or n in matches or len(n.users) != 1:
            continue
        c = imp.call(n)
        if c is None or c.kind not in ("transpose", "permute", "t", "reverse"):
            continue
        shape = imp.shape(n)
        u = next(iter(n.users))
        if shape is None or not fx_ops.transposes_last_two(c, len(shape)) or u in absorbed or u in matches:
            continue
        uc = imp.call(u)
        if uc is not None and uc.kind in ("matmul", "addmm") and uc.args["other"] is n and uc.args["input"] is not n \
                and isinstance(c.args["input"], Node):
            folds.add(n)
    return matches, absorbed, folds


def live_nodes(imp, matches, absorbed):
    """The nodes whose values the emission reads: backwards from the output,
    the all_reduce markers (collectives are never dropped), the cache writes
    (state the next run reads, even when this run does not), in-place ops
    (later reads of their input see them) and every node the
    importer cannot classify or that mutates in place (so it still raises);
    a match reads its external inputs except the ones it dropped."""
    live, work = set(), []
    for n in imp.gm.graph.nodes:
        if n in absorbed:
            continue
        c = imp.call(n) if n.op in ("call_function", "call_method", "call_module") else None
        if n.op == "output" or (c is not None and (c.kind in ("all_reduce", "cache_write", "setitem")
                                                   or c.args.get("inplace"))) or (
                n.op in ("call_function", "call_method", "call_module") and c is None) or (
                n.op == "call_method" and str(n.target).endswith("_") and not str(n.target).startswith("__")):
            work.append(n)
    while work:
        n = work.pop()
        if n in live:
            continue
        live.add(n)
        m = matches.get(n)
        if m is None:
            work.extend(n.all_input_nodes)
            continue
        inside = set(m.nodes)
        for x in m.nodes:
            work.extend(i for i in x.all_input_nodes if i not in inside and i not in getattr(m, "dropped", ()))
        if getattr(m, "positions", None) is not None:  # read in place of a dropped mask
            work.append(m.positions)
    return live


def emit(imp, m) -> Value:
    if isinstance(m, RMSNormMatch):
        return emit_rms_norm(imp, m)
    if isinstance(m, RoPEMatch):
        return emit_rope(imp, m)
    if isinstance(m, SdpaMatch):
        return emit_sdpa(imp, m)
    return emit_attention(imp, m)
