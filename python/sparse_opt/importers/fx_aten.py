"""ATen ops (the call_function targets of a `torch.export` graph) as the
fx importer's calls.

`classify(node, what)` binds the arguments of a `torch.ops.aten.<op>.<overload>`
node through the op's own schema and names the call with the same kinds and
argument names the torch-level forms get in fx_forms.py (`aten.linear.default`
is the "linear" of `F.linear`, `aten.mm.default` the "matmul" of `torch.mm`,
...), so the pattern matchers and handlers of fx_ops/fx_patterns serve both.
The table (fx_registry.ATEN, beside the torch-level forms) is keyed by
"aten::<op>.<overload>"; an ATen op absent from it is unsupported (the importer names it and the node). Nothing here needs
torch.export: OpOverload exists in torch 1.12+.
"""
from __future__ import annotations

from typing import Optional

import torch

from .emitter import ImportError_
from .fx_call import Call
from .fx_registry import ATEN, register_aten

_on = register_aten  # "op:overload ..." -> kind, into fx_registry.ATEN


def _self(a):
    return {"input": a["self"]}


def _only(*keep, **fixed):
    """Keeps the tensor operand (`self` or `input`, as `input`) and the named
    schema arguments, adds `fixed`."""
    def conv(a):
        out = {"input" if k == "self" else k: v for k, v in a.items() if k in keep or k in ("self", "input")}
        out.update(fixed)
        return out
    return conv


# the tensor-parallel marker (sparse_opt.markers on torch 2.x)
ATEN["sparse_opt::all_reduce.default"] = ("all_reduce", lambda a: {"input": a["x"]}, {})

# element-wise
for _k in ("relu", "silu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "abs", "neg", "square"):
    _on(_k, _k, _self)
_on("gelu", "gelu", _only("approximate"))
_on("add:Tensor,Scalar sub:Tensor,Scalar", None, _only("other", "alpha"))
_on("mul:Tensor,Scalar", "mul", _only("other"))
_on("div:Tensor,Scalar", "div", _only("other", rounding_mode=None))
_on("div:Tensor_mode,Scalar_mode", "div", _only("other", "rounding_mode"))
_on("rsub:Tensor,Scalar", "sub", lambda a: {"input": a["other"], "other": a["self"], "alpha": a["alpha"]})
_on("pow:Tensor_Scalar,Tensor_Tensor,Scalar", "pow", _only("exponent"))
_on("maximum max:other", "maximum", _only("other"))
_on("minimum min:other", "minimum", _only("other"))
_on("clamp:default,Tensor", "clamp", _only("min", "max"))
_on("clamp_min:default,Tensor", "clamp", _only("min", max=None))
_on("clamp_max:default,Tensor", "clamp", _only("max", min=None))
for _k in ("lt", "le", "gt", "ge", "eq", "ne"):
    _on("%s:Tensor,Scalar" % _k, _k, _only("other"))
_on("logical_not", "logical_not", _self)
_on("bitwise_not", "logical_not", _self, bitwise=True)
_on("logical_and bitwise_and:Tensor,Scalar", "logical_and", _only("other"))
_on("logical_or bitwise_or:Tensor,Scalar", "logical_or", _only("other"))
_on("where:self,ScalarSelf,ScalarOther,Scalar", "where",
    lambda a: {"condition": a["condition"], "input": a["self"], "other": a["other"]})
_on("masked_fill:Scalar,Tensor", "masked_fill", _only("mask", "value"))
# reductions, softmax
_on("mean:dim sum:dim_IntList", None, _only("dim", "keepdim", "dtype"))
_on("mean sum", None, _only("dtype", dim=None, keepdim=False))
_on("amax", "amax", _only("dim", "keepdim"))
_on("any:dim,dims", "any", _only("dim", "keepdim"))
_on("any", "any", _only(dim=None, keepdim=False))
_on("softmax:int", "softmax", _only("dim", "dtype"))
_on("_softmax", "softmax", lambda a: {"input": a["self"], "dim": a["dim"],
                                      "dtype": torch.float32 if a["half_to_float"] else None})
_on("_safe_softmax", "softmax", _only("dim", "dtype"))
# contractions
_on("mm bmm", "matmul", lambda a: {"input": a["self"], "other": a["mat2"]})
_on("matmul", "matmul", _only("other"))
_on("addmm", "addmm", lambda a: {"input": a["mat1"], "other": a["mat2"], "bias": a["self"],
                                 "beta": a["beta"], "alpha": a["alpha"]})
_on("linear", "linear", lambda a: {"input": a["input"], "weight": a["weight"], "bias": a["bias"]})
# layout
_on("t", "t", _self)
_on("numpy_T", "reverse", _self)
_on("transpose:int", "transpose", _only("dim0", "dim1"))
_on("permute", "permute", _only("dims"))
_on("view _unsafe_view _reshape_alias", "reshape", lambda a: {"input": a["self"], "shape": tuple(a["size"])})
_on("reshape", "reshape", lambda a: {"input": a["self"], "shape": tuple(a["shape"])})
_on("unsqueeze squeeze:default,dim,dims flatten:using_ints unflatten:int", "reshape", _self)
_on("expand", "expand", lambda a: {"input": a["self"], "size": tuple(a["size"])})
_on("expand_as", "expand", lambda a: {"input": a["self"], "other": a["other"]})
_on("repeat", "repeat", lambda a: {"input": a["self"], "sizes": tuple(a["repeats"])})
_on("repeat_interleave:self_int", "repeat_interleave", _only("repeats", "dim", "output_size"))
_on("clone contiguous alias detach lift_fresh_copy", "identity", _self)
_on("slice:Tensor", "slice", _only("dim", "start", "end", "step"))
_on("select:int", "select", _only("dim", "index"))
_on("cat stack", None, _only("tensors", "dim"))
_on("split:Tensor", "split", lambda a: {"input": a["self"], "split_size_or_sections": a["split_size"], "dim": a["dim"]})
_on("split_with_sizes", "split", lambda a: {"input": a["self"], "split_size_or_sections": a["split_sizes"],
                                            "dim": a["dim"]})
_on("chunk", "chunk", _only("chunks", "dim"))
_on("unbind:int", "unbind", _only("dim"))
# casts, dropout
_on("_to_copy to:dtype,dtype_layout,device", "cast", lambda a: {"input": a["self"], "targets": (),
                                                               "dtype": a.get("dtype")})
_on("to:other type_as", "cast", lambda a: {"input": a["self"], "targets": (a["other"],), "dtype": None})
_on("dropout feature_dropout alpha_dropout", "dropout", _only("p", "train"))
_on("native_dropout", "dropout", lambda a: {"input": a["input"], "p": a["p"], "train": bool(a["train"])}, results=2)
# blocks
_on("embedding", "embedding", lambda a: {"input": a["indices"], "weight": a["weight"], "max_norm": None})
_on("layer_norm", "layer_norm", _only("normalized_shape", "weight", "bias", "eps"))
_on("native_layer_norm", "layer_norm", _only("normalized_shape", "weight", "bias", "eps"), results=3)
_on("rms_norm", "rms_norm", _only("normalized_shape", "weight", "eps"))
_on("_fused_rms_norm", "rms_norm", _only("normalized_shape", "weight", "eps"), results=2)
_on("scaled_dot_product_attention", "sdpa",
    _only("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"))
_on("_scaled_dot_product_flash_attention_for_cpu", "sdpa",
    _only("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", enable_gqa=False), results=2)
_on("_scaled_dot_product_flash_attention", "sdpa",
    _only("query", "key", "value", "dropout_p", "is_causal", "scale", attn_mask=None, enable_gqa=False), results=9)
_on("_scaled_dot_product_efficient_attention", "sdpa",
    lambda a: {"query": a["query"], "key": a["key"], "value": a["value"], "attn_mask": a["attn_bias"],
               "dropout_p": a["dropout_p"], "is_causal": a["is_causal"], "scale": a["scale"],
               "enable_gqa": False}, results=4)
_on("zeros_like ones_like", None, _only("dtype"))
_on("full_like", "full_like", _only("fill_value", "dtype"))
# Checks export inserts (dtype/shape assertions, size constraints): no value.
_on("_assert_tensor_metadata _assert_async:default,msg _assert_scalar sym_constrain_range "
    "sym_constrain_range_for_size _functional_assert_async:msg", "noop", lambda a: {})

KIND_BY_NAME = {"add": "add", "sub": "sub", "mean": "mean", "sum": "sum", "cat": "cat", "stack": "stack",
                 "zeros_like": "zeros_like", "ones_like": "ones_like"}


def is_aten(target) -> bool:
    return isinstance(target, torch._ops.OpOverload)


def is_noop(target) -> bool:
    """An assertion export inserts: never run, never emitted."""
    return is_aten(target) and ATEN.get(op_key(target), (None,))[0] == "noop"


def op_key(op) -> str:
    """"aten::linear.default" for torch.ops.aten.linear.default."""
    return "%s.%s" % (op._schema.name, op._overloadname or "default")


def bind(op, args, kwargs, what) -> dict:
    """The arguments of a call of `op` by schema name, defaults filled in."""
    out = {}
    sargs = op._schema.arguments
    positional = [a for a in sargs if not a.kwarg_only]
    if len(args) > len(positional):
        raise ImportError_("%s: %d positional arguments, expected at most %d" % (what, len(args), len(positional)))
    for a, v in zip(positional, args):
        out[a.name] = v
    for a in sargs:
        if a.name in out:
            continue
        if a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            raise ImportError_("%s: missing argument '%s'" % (what, a.name))
    unknown = set(kwargs) - {a.name for a in sargs}
    if unknown:
        raise ImportError_("%s: unsupported keyword arguments %s" % (what, ", ".join(sorted(unknown))))
    return out


def classify(node, what) -> Optional[Call]:
    """The Call of an ATen node, or None when the op has no mapping."""
    op = node.target
    key = op_key(op)
    entry = ATEN.get(key)
    if entry is None:
        return None
    kind, convert, info = entry
    if kind == "noop":
        return Call("noop", {}, extra={"aten": key})
    a = bind(op, node.args, node.kwargs, what)
    if kind is None:
        kind = KIND_BY_NAME[op._schema.name.split("::", 1)[1]]
    args = convert(a) if convert is not None else _self(a)
    return Call(kind, args, extra=dict(info, aten=key))
