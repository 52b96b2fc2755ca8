"""What an FX node computes: the torch-level forms of each kind and the
classifier of the torch.fx importer.

`classify(node, gm)` names what an FX node computes, whatever form torch
traced it in (call_function `torch.add` / `operator.add`, call_method `add`,
call_module `nn.ReLU`, ...), as a `Call`: a kind ("add", "softmax", ...) and
its arguments bound to the parameter names of one signature per kind. The
forms are registered here (fx_registry.FUNCTIONS, METHODS), the ATen forms
in fx_aten.py; the handlers of each kind are fx_ops.py's and fx_cache.py's.
"""
from __future__ import annotations

import builtins
import operator
from typing import Optional

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from .. import markers
from . import fx_aten
from .fx_registry import FUNCTIONS, METHODS, register_forms
from .fx_call import Call, ParamRef
from .emitter import ImportError_

REQUIRED = object()

TORCH_TO_MLIR = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
                 torch.bool: "i1", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64"}
MLIR_TO_TORCH = {v: k for k, v in TORCH_TO_MLIR.items()}


def mlir_dtype(dt: torch.dtype) -> str:
    if dt not in TORCH_TO_MLIR:
        raise ImportError_("unsupported element type %s" % dt)
    return TORCH_TO_MLIR[dt]


class FoldedTranspose:
    """A transpose of the last two dims that its only user, a matmul, absorbs."""

    def __init__(self, base):
        self.base = base


# ------------------------------------------------------------ signatures
def S(*required, **optional):
    return tuple((r, REQUIRED) for r in required) + tuple(optional.items())


_reg = register_forms  # the torch-level forms, into fx_registry


def _t(name):
    """torch.<name>, F.<name> or torch.Tensor.<name> when this torch has it."""
    mod, _, attr = name.rpartition(".")
    root = {"torch": torch, "F": F, "Tensor": torch.Tensor, "torch.special": getattr(torch, "special", None)}[mod]
    return getattr(root, attr, None) if root is not None else None


BINARY = ("add", "sub", "mul", "div")
_reg("add", S("input", "other", alpha=1), [operator.add, operator.iadd, _t("torch.add"), _t("Tensor.add")], ["add"])
_reg("sub", S("input", "other", alpha=1), [operator.sub, operator.isub, _t("torch.sub"), _t("torch.subtract"),
                                            _t("Tensor.sub")], ["sub", "subtract"])
_reg("mul", S("input", "other"), [operator.mul, operator.imul, _t("torch.mul"), _t("torch.multiply"), _t("Tensor.mul")],
     ["mul", "multiply"])
_reg("div", S("input", "other", rounding_mode=None),
     [operator.truediv, operator.itruediv, _t("torch.div"), _t("torch.divide"), _t("torch.true_divide"),
      _t("Tensor.div")], ["div", "divide", "true_divide"])
_reg("pow", S("input", "exponent"), [operator.pow, _t("torch.pow"), _t("Tensor.pow")], ["pow"])
_reg("square", S("input"), [_t("torch.square")], ["square"])
_reg("maximum", S("input", "other"), [_t("torch.maximum"), _t("torch.fmax")], ["maximum"])
_reg("minimum", S("input", "other"), [_t("torch.minimum"), _t("torch.fmin")], ["minimum"])
_reg("max", S("input", other=None), [_t("torch.max")], ["max"])
_reg("min", S("input", other=None), [_t("torch.min")], ["min"])
_reg("clamp", S("input", min=None, max=None), [_t("torch.clamp"), _t("torch.clip")], ["clamp", "clip"])
for _k in ("rsqrt", "sqrt", "exp", "tanh", "sigmoid", "abs", "neg"):
    _reg(_k, S("input"), [_t("torch." + _k), _t("Tensor." + _k)], [_k])
_reg("neg", S("input"), [operator.neg, _t("torch.negative")], ["negative"])
_reg("sigmoid", S("input"), [_t("F.sigmoid"), _t("torch.special.expit")])
_reg("tanh", S("input"), [_t("F.tanh")])
_reg("relu", S("input", inplace=False), [_t("F.relu")])
_reg("relu", S("input"), [_t("torch.relu"), _t("Tensor.relu")], ["relu"])
_reg("relu", S("input", inplace=True), [_t("torch.relu_"), _t("F.relu_")], ["relu_"])
_reg("silu", S("input", inplace=False), [_t("F.silu")])
_reg("gelu", S("input", approximate="none"), [_t("F.gelu")])
_reg("softmax", S("input", dim=None, _stacklevel=3, dtype=None), [_t("F.softmax")])
_reg("softmax", S("input", "dim", dtype=None), [_t("torch.softmax"), _t("Tensor.softmax"),
                                                 _t("torch.special.softmax")], ["softmax"])
_reg("masked_fill", S("input", "mask", "value"), [_t("torch.masked_fill"), _t("Tensor.masked_fill")], ["masked_fill"])
_reg("where", S("condition", "input", "other"), [_t("torch.where")], ["where"],
     method_sig=S("input", "condition", "other"))
for _k, _ops in {"lt": (operator.lt, "less"), "le": (operator.le, "less_equal"), "gt": (operator.gt, "greater"),
                 "ge": (operator.ge, "greater_equal"), "eq": (operator.eq, None), "ne": (operator.ne, "not_equal")}.items():
    _reg(_k, S("input", "other"), [_ops[0], _t("torch." + _k), _t("Tensor." + _k)] +
         ([_t("torch." + _ops[1])] if _ops[1] else []), [_k] + ([_ops[1]] if _ops[1] else []))
_reg("logical_not", S("input"), [operator.invert, _t("torch.logical_not"), _t("torch.bitwise_not")],
     ["logical_not", "bitwise_not"])
_reg("logical_and", S("input", "other"), [operator.and_, _t("torch.logical_and"), _t("torch.bitwise_and")],
     ["logical_and", "bitwise_and", "__and__"])
_reg("logical_or", S("input", "other"), [operator.or_, _t("torch.logical_or"), _t("torch.bitwise_or")],
     ["logical_or", "bitwise_or", "__or__"])
_reg("sum", S("input", dim=None, keepdim=False, dtype=None), [_t("torch.sum")], ["sum"])
_reg("mean", S("input", dim=None, keepdim=False, dtype=None), [_t("torch.mean")], ["mean"])
_reg("amax", S("input", dim=(), keepdim=False), [_t("torch.amax")], ["amax"])
_reg("matmul", S("input", "other"), [operator.matmul, _t("torch.matmul"), _t("torch.bmm"), _t("torch.mm"),
                                     _t("Tensor.matmul")], ["matmul", "bmm", "mm", "__matmul__"])
_reg("linear", S("input", "weight", bias=None), [_t("F.linear")])
_reg("transpose", S("input", "dim0", "dim1"), [_t("torch.transpose"), _t("torch.swapaxes"), _t("torch.swapdims"),
                                               _t("Tensor.transpose")], ["transpose", "swapaxes", "swapdims"])
_reg("permute", S("input", "dims"), [_t("torch.permute")])
_reg("permute", S("input", "*dims"), [_t("Tensor.permute")], ["permute"])
_reg("t", S("input"), [_t("torch.t"), _t("Tensor.t")], ["t"])
_reg("reshape", S("input", "*shape"), [_t("torch.reshape"), _t("Tensor.view"), _t("Tensor.reshape")],
     ["view", "reshape"])
_reg("reshape", S("input", start_dim=0, end_dim=-1), [_t("torch.flatten")], ["flatten"])
_reg("reshape", S("input", "dim", "sizes"), [_t("torch.unflatten")], ["unflatten"])
_reg("reshape", S("input", "dim"), [_t("torch.unsqueeze")], ["unsqueeze"])
_reg("reshape", S("input", dim=None), [_t("torch.squeeze")], ["squeeze"])
_reg("reshape", S("input", "other"), [], ["view_as", "reshape_as"])
_reg("expand", S("input", "*size"), [_t("torch.broadcast_to")], ["expand", "broadcast_to"])
_reg("expand", S("input", "other"), [], ["expand_as"])
_reg("repeat", S("input", "*sizes"), [], ["repeat"])
_reg("repeat_interleave", S("input", "repeats", dim=None, output_size=None),
     [_t("torch.repeat_interleave"), _t("Tensor.repeat_interleave")], ["repeat_interleave"])
_reg("identity", S("input", memory_format=None), [_t("torch.clone")], ["contiguous", "clone"])
_reg("identity", S("input"), [_t("torch.detach")], ["detach"])
_reg("dropout", S("input", p=0.5, training=True, inplace=False), [_t("F.dropout")])
_reg("dropout", S("input", "p", "train"), [_t("torch.dropout")])
_reg("cast", S("input", "*targets", non_blocking=False, copy=False, memory_format=None, dtype=None, device=None),
     [], ["to"])
for _k, _dt in {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16, "double": torch.float64,
                "int": torch.int32, "long": torch.int64, "bool": torch.bool}.items():
    _reg("cast_" + _k, S("input", memory_format=None), [], [_k])
_reg("cast", S("input", "*targets"), [], ["type_as", "type"])
_reg("cat", S("tensors", dim=0), [_t("torch.cat"), _t("torch.concat"), _t("torch.concatenate")])
_reg("stack", S("tensors", dim=0), [_t("torch.stack")])
_reg("split", S("input", "split_size_or_sections", dim=0), [_t("torch.split"), _t("Tensor.split")], ["split"],
     method_sig=S("input", "split_size", dim=0))
_reg("chunk", S("input", "chunks", dim=0), [_t("torch.chunk"), _t("Tensor.chunk")], ["chunk"])
_reg("unbind", S("input", dim=0), [_t("torch.unbind"), _t("Tensor.unbind")], ["unbind"])
_reg("getitem", S("input", "index"), [operator.getitem], ["__getitem__"])
_reg("getattr", S("input", "name"), [builtins.getattr])
_reg("embedding", S("input", "weight", padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                    sparse=False), [_t("F.embedding")])
_reg("layer_norm", S("input", "normalized_shape", weight=None, bias=None, eps=1e-5), [_t("F.layer_norm")])
_reg("rms_norm", S("input", "normalized_shape", weight=None, eps=None), [_t("F.rms_norm"), _t("torch.rms_norm")])
_reg("sdpa", S("query", "key", "value", attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False),
     [_t("F.scaled_dot_product_attention")])
_reg("all_reduce", S("input"), [markers.all_reduce])
_reg("cache_write", S("cache", "new", "positions"), [markers.cache_write])
# Static caches written in place (HF StaticCache, gpt-fast):
# cache.index_copy_(2, positions, new) and cache[:, :, positions] = new.
_reg("index_copy", S("input", "dim", "index", "source"), [], ["index_copy_"])
_reg("setitem", S("input", "index", "value"), [operator.setitem])
_reg("cached_attention", S("query", "key_cache", "value_cache", "positions", scale=None),
     [markers.cached_attention])
_reg("zeros_like", S("input", dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
                     memory_format=None), [_t("torch.zeros_like")])
_reg("ones_like", S("input", dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
                    memory_format=None), [_t("torch.ones_like")])
_reg("full_like", S("input", "fill_value", dtype=None, layout=None, device=None, pin_memory=None,
                    requires_grad=False, memory_format=None), [_t("torch.full_like")])


def _bind(sig, args, kwargs, what):
    out = {}
    args = list(args)
    kwargs = dict(kwargs)
    for i, (name, default) in enumerate(sig):
        if name.startswith("*"):
            rest = args[i:]
            args = args[:i]
            if len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)):
                rest = list(rest[0])
            out[name[1:]] = tuple(rest) + ((kwargs.pop(name[1:]),) if name[1:] in kwargs else ())
            continue
        if i < len(args):
            out[name] = args[i]
        elif name in kwargs:
            out[name] = kwargs.pop(name)
        elif default is REQUIRED:
            raise ImportError_("%s: missing argument '%s'" % (what, name))
        else:
            out[name] = default
    if len(args) > len([s for s in sig if not s[0].startswith("*")]) and not any(s[0].startswith("*") for s in sig):
        raise ImportError_("%s: %d positional arguments, expected at most %d" % (what, len(args), len(sig)))
    if kwargs:
        raise ImportError_("%s: unsupported keyword arguments %s" % (what, ", ".join(sorted(kwargs))))
    return out


_MARKER_FUNCTIONS = {f.__name__: f for f in (markers.all_reduce, markers.cache_write, markers.cached_attention)}


def _marker(f):
    """The sparse_opt.markers function `f` is (also when the module was loaded
    twice), or None."""
    name = getattr(f, "__name__", None)
    if name in _MARKER_FUNCTIONS and (f is _MARKER_FUNCTIONS[name] or
                                      getattr(f, "__module__", "") == markers.__name__):
        return _MARKER_FUNCTIONS[name]
    return None


# --------------------------------------------------------- classification
def module_type_name(m) -> str:
    cls = type(m)
    if cls.__module__.startswith("torch.nn"):
        return "nn." + cls.__name__
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def describe_target(node, gm) -> str:
    """`call_function torch.nn.functional.unfold`, `call_module layers.0.conv (nn.Conv1d)`."""
    if node.op == "call_function":
        f = node.target
        try:
            from torch.fx.node import _get_qualified_name
            name = _get_qualified_name(f)
        except Exception:
            owner = getattr(f, "__objclass__", None)
            name = ("%s.%s.%s" % (owner.__module__, owner.__name__, f.__name__) if owner is not None
                    else getattr(f, "__qualname__", None) or repr(f))
        if name.startswith("_operator."):
            name = "operator." + name[len("_operator."):]
        return "call_function %s" % name
    if node.op == "call_method":
        return "call_method %s" % node.target
    if node.op == "call_module":
        try:
            return "call_module %s (%s)" % (node.target, module_type_name(gm.get_submodule(node.target)))
        except AttributeError:
            return "call_module %s" % node.target
    return "%s %s" % (node.op, node.target)


def _param(gm, path, name):
    """The ParamRef of `path.name` when that submodule attribute is a tensor, else None."""
    sub = gm.get_submodule(path)
    return ParamRef("%s.%s" % (path, name) if path else name) if getattr(sub, name, None) is not None else None


_DROPOUTS = tuple(getattr(nn, n) for n in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout")
                  if hasattr(nn, n))


_MODULES = (nn.Linear, nn.Embedding, nn.LayerNorm, nn.ReLU, nn.SiLU, nn.Sigmoid, nn.Tanh, nn.Identity, nn.GELU,
            nn.Softmax, nn.Flatten, nn.Unflatten) + _DROPOUTS + ((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ())


def is_known_module(m) -> bool:
    """Whether a leaf module is one the importer maps onto its calls."""
    return isinstance(m, _MODULES)


def _classify_module(node, gm):
    m = gm.get_submodule(node.target)
    if not is_known_module(m):
        return None
    a = _bind(S("input"), node.args, node.kwargs, describe_target(node, gm))
    t = node.target
    if isinstance(m, nn.Linear):
        return Call("linear", {"input": a["input"], "weight": _param(gm, t, "weight"),
                               "bias": _param(gm, t, "bias")}, m)
    if isinstance(m, nn.Embedding):
        if m.max_norm is not None:
            return None
        return Call("embedding", {"input": a["input"], "weight": _param(gm, t, "weight"), "max_norm": None}, m)
    if isinstance(m, nn.LayerNorm):
        return Call("layer_norm", {"input": a["input"], "normalized_shape": tuple(m.normalized_shape),
                                   "weight": _param(gm, t, "weight"), "bias": _param(gm, t, "bias"),
                                   "eps": m.eps}, m)
    if hasattr(nn, "RMSNorm") and isinstance(m, nn.RMSNorm):
        return Call("rms_norm", {"input": a["input"], "normalized_shape": tuple(m.normalized_shape),
                                 "weight": _param(gm, t, "weight"), "eps": m.eps}, m)
    simple = {nn.ReLU: "relu", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.Identity: "identity"}
    for cls, kind in simple.items():
        if type(m) is cls:
            return Call(kind, {"input": a["input"], "inplace": getattr(m, "inplace", False)}, m)
    if isinstance(m, nn.GELU):
        return Call("gelu", {"input": a["input"], "approximate": getattr(m, "approximate", "none")}, m)
    if isinstance(m, nn.Softmax):
        return Call("softmax", {"input": a["input"], "dim": m.dim, "dtype": None}, m)
    if isinstance(m, _DROPOUTS):
        return Call("dropout", {"input": a["input"], "p": m.p, "training": m.training, "inplace": False}, m)
    if isinstance(m, (nn.Flatten, nn.Unflatten)):
        return Call("reshape", {"input": a["input"]}, m)
    return None


def classify(node, gm) -> Optional[Call]:
    """The normalized call of an FX node, or None when the importer has no handler."""
    if node.op == "call_module":
        return _classify_module(node, gm)
    what = describe_target(node, gm)
    if node.op == "call_function":
        f = node.target
        if isinstance(f, torch._ops.OpOverload):
            return fx_aten.classify(node, what)  # an ATen op (a torch.export graph)
        entry = FUNCTIONS.get(f) if _hashable(f) else None
        if entry is None and _marker(f) is not None:
            entry = FUNCTIONS[_marker(f)]
        if entry is None:
            return None
        kind, sig = entry
    elif node.op == "call_method":
        entry = METHODS.get(node.target)
        if entry is None:
            return None
        kind, sig = entry
    else:
        return None
    args = _bind(sig, node.args, node.kwargs, what)
    if kind == "getattr":
        attr = args["name"]
        if attr == "mT":
            return Call("transpose", {"input": args["input"], "dim0": -2, "dim1": -1})
        if attr == "T":
            return Call("reverse", {"input": args["input"]})
        if attr in ("dtype", "device", "shape", "ndim", "is_cuda"):
            return Call("getattr", args)
        return None
    if kind.startswith("cast_"):
        return Call("cast", {"input": args["input"], "targets": (_CAST_DT[kind],), "dtype": None})
    if kind == "max" or kind == "min":
        if args["other"] is None:
            return Call("amax" if kind == "max" else "amin_all", {"input": args["input"], "dim": None, "keepdim": False})
        if isinstance(args["other"], torch.fx.Node):
            return Call("maximum" if kind == "max" else "minimum", args)
        return None  # torch.max(x, dim) returns (values, indices)
    return Call(kind, args)


_CAST_DT = {"cast_float": torch.float32, "cast_half": torch.float16, "cast_bfloat16": torch.bfloat16,
            "cast_double": torch.float64, "cast_int": torch.int32, "cast_long": torch.int64, "cast_bool": torch.bool}


def _hashable(f):
    try:
        hash(f)
        return True
    except TypeError:
        return False
