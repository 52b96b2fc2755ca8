"""ONNX models for the ONNX importer's tests (pytest and lit).

- `exported(name, opset)`: the torch models of `models.py` through
  `torch.onnx.export` (static shapes, constant folding, TorchScript exporter).
- `handmade(name)`: small graphs built with `onnx.helper`: Gemm + Relu, the
  `ai.sparseopt::AllReduce` marker, attention with a runtime mask, GELU,
  shape arithmetic, and bad inputs (Conv, a symbolic dim, ...).
- `build(name, opset)`: either, by name (the lit driver's entry point).

The LlamaDecoder's all_reduce markers are identities to torch, so they
export as nothing; the AllReduce marker is tested with a hand-made graph.
"""
import inspect
import io
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SPARSEOPT_DOMAIN = "ai.sparseopt"


# --------------------------------------------------------------- torch side
def torch_model(name):
    """(module in eval mode, example inputs, input names), seeded."""
    import torch

    import models
    torch.manual_seed(0)
    if name == "mlp":
        return models.MLP().eval(), (torch.randn(8, 64),), ["x"]
    if name == "mlp-3d":
        return models.MLP().eval(), (torch.randn(2, 8, 64),), ["x"]
    if name == "gated-ffn":
        return models.GatedFFN().eval(), (torch.randn(2, 8, 64),), ["x"]
    if name == "sparse-linear-relu":
        return models.SparseLinearReLU().eval(), (torch.randn(128, 256),), ["x"]
    if name == "llama":
        return models.LlamaDecoder(layers=2).eval(), (torch.randint(0, 128, (1, 16)),), ["ids"]
    if name == "layer-norm":  # LayerNormalization at opset 17, decomposed before
        net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.ReLU())
        return net.eval(), (torch.randn(4, 64),), ["x"]
    if name == "gelu-mlp":  # F.gelu exports as x * 0.5 * (1 + erf(x / sqrt 2))
        net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
        return net.eval(), (torch.randn(4, 64),), ["x"]
    raise KeyError(name)


TORCH_MODELS = ("mlp", "mlp-3d", "gated-ffn", "sparse-linear-relu", "llama", "layer-norm", "gelu-mlp")


def export(module, args, input_names, opset=17):
    import torch
    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter (torch >= 2.9 defaults to dynamo)
    f = io.BytesIO()
    torch.onnx.export(module, args, f, opset_version=opset, do_constant_folding=True,
                      input_names=list(input_names), output_names=["y"], **kwargs)
    return onnx.load_from_string(f.getvalue())


def exported(name, opset=17):
    module, args, names = torch_model(name)
    return export(module, args, names, opset)


# ---------------------------------------------------------------- hand-made
def _model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=(), name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="sparseopt-tests")
    model.ir_version = 8
    return model


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _scalar(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name))


def gemm_relu(k=32, n=16, m=4):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], name="/fc/Gemm", transB=1),
             helper.make_node("Relu", ["h"], ["y"], name="/relu/Relu")]
    return _model(nodes, [_f32("x", [m, k])], [_f32("y", [m, n])], [_init("fc.weight", w), _init("fc.bias", b)])


def all_reduce(d=64, m=8):
    """A row-parallel linear whose partial sums are all-reduced."""
    w = np.random.default_rng(2).standard_normal((d, d)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "proj"], ["p"], name="/o_proj/MatMul"),
             helper.make_node("AllReduce", ["p"], ["y"], name="/o_proj/AllReduce", domain=SPARSEOPT_DOMAIN)]
    return _model(nodes, [_f32("x", [m, d])], [_f32("y", [m, d])], [_init("proj", w)],
                  extra_opsets=[(SPARSEOPT_DOMAIN, 1)])


def conv():
    w = np.zeros((8, 3, 3, 3), np.float32)
    nodes = [helper.make_node("Conv", ["x", "stem.weight"], ["c"], name="/stem/conv/Conv"),
             helper.make_node("Relu", ["c"], ["y"], name="/stem/Relu")]
    return _model(nodes, [_f32("x", [1, 3, 8, 8])], [_f32("y", [1, 8, 6, 6])], [_init("stem.weight", w)])


def symbolic():
    w = np.ones((16, 8), np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")]
    return _model(nodes, [_f32("x", ["batch", 16])], [_f32("y", ["batch", 8])], [_init("w", w)])


def com_microsoft():
    nodes = [helper.make_node("FastGelu", ["x"], ["y"], name="/act/FastGelu", domain="com.microsoft")]
    return _model(nodes, [_f32("x", [4, 8])], [_f32("y", [4, 8])], extra_opsets=[("com.microsoft", 1)])


def attention(mask="where", b=1, h=4, s=16, d=32, constant=None):
    """softmax(q k^T / sqrt(d) [masked]) v; the mask is a runtime input, or
    the initializer `constant` (bool for `where`, float for `add`)."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], name="/attn/Transpose", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["qk"], name="/attn/MatMul"),
             _scalar("/attn/scale", math.sqrt(d)),
             helper.make_node("Div", ["qk", "/attn/scale"], ["s"], name="/attn/Div")]
    inputs = [_f32("q", [b, h, s, d]), _f32("k", [b, h, s, d]), _f32("v", [b, h, s, d])]
    inits, scores = [], "s"
    if mask == "where":
        nodes += [_scalar("/attn/ninf", -np.inf),
                  helper.make_node("Where", ["mask", "/attn/ninf", "s"], ["sm"], name="/attn/Where")]
        if constant is None:
            inputs.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [b, 1, s, s]))
        scores = "sm"
    elif mask == "add":
        nodes.append(helper.make_node("Add", ["s", "mask"], ["sm"], name="/attn/Add"))
        if constant is None:
            inputs.append(_f32("mask", [b, 1, s, s]))
        scores = "sm"
    if constant is not None:
        inits.append(_init("mask", constant))
    nodes += [helper.make_node("Softmax", [scores], ["p"], name="/attn/Softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"], name="/attn/MatMul_1")]
    return _model(nodes, inputs, [_f32("y", [b, h, s, d])], inits)


def gelu_erf(m=4, n=32):
    """The exported erf GELU: x * 0.5 * (1 + erf(x / sqrt 2))."""
    nodes = [_scalar("c_sqrt2", math.sqrt(2.0)), _scalar("c_one", 1.0), _scalar("c_half", 0.5),
             helper.make_node("Div", ["x", "c_sqrt2"], ["z"], name="/act/Div"),
             helper.make_node("Erf", ["z"], ["e"], name="/act/Erf"),
             helper.make_node("Add", ["e", "c_one"], ["a"], name="/act/Add"),
             helper.make_node("Mul", ["x", "a"], ["p"], name="/act/Mul"),
             helper.make_node("Mul", ["p", "c_half"], ["y"], name="/act/Mul_1")]
    return _model(nodes, [_f32("x", [m, n])], [_f32("y", [m, n])])


def shape_arith():
    """Reshape/Expand/Slice whose operands come from Shape, Gather,
    Unsqueeze, Concat, ConstantOfShape, Range and int64 arithmetic."""
    i64 = lambda name, v: _scalar(name, v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="/Shape"),
        i64("c0", 0), i64("c1", 1), i64("c2", 2),
        helper.make_node("Gather", ["shp", "c0"], ["b"], name="/Gather", axis=0),
        helper.make_node("Gather", ["shp", "c1"], ["s"], name="/Gather_1", axis=0),
        helper.make_node("Gather", ["shp", "c2"], ["d"], name="/Gather_2", axis=0),
        helper.make_node("Mul", ["s", "d"], ["sd"], name="/Mul"),
        helper.make_node("Unsqueeze", ["b", "zero_axis"], ["bu"], name="/Unsqueeze"),
        helper.make_node("Unsqueeze", ["sd", "zero_axis"], ["sdu"], name="/Unsqueeze_1"),
        helper.make_node("Concat", ["bu", "sdu"], ["target"], name="/Concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="/Reshape"),
        # a [1, S*D] ones row expanded to [B, S*D] through ConstantOfShape
        helper.make_node("Concat", ["cm1_like", "sdu"], ["row_shape"], name="/Concat_1", axis=0),
        helper.make_node("ConstantOfShape", ["row_shape"], ["ones"], name="/ConstantOfShape",
                         value=numpy_helper.from_array(np.ones(1, np.float32), "one")),
        helper.make_node("Expand", ["ones", "target"], ["ones_b"], name="/Expand"),
        helper.make_node("Add", ["flat", "ones_b"], ["y0"], name="/Add"),
        # the first half of the features, the end computed as Range's length
        helper.make_node("Range", ["c0", "sd", "c1"], ["rng"], name="/Range"),
        helper.make_node("Shape", ["rng"], ["rng_len"], name="/Shape_1"),
        helper.make_node("Div", ["rng_len", "two_1d"], ["half"], name="/Div"),
        helper.make_node("Slice", ["y0", "zero_1d", "half", "one_1d"], ["y"], name="/Slice"),
    ]
    inits = [_init("zero_axis", np.array([0], np.int64)), _init("cm1_like", np.array([1], np.int64)),
             _init("two_1d", np.array([2], np.int64)), _init("zero_1d", np.array([0], np.int64)),
             _init("one_1d", np.array([1], np.int64))]
    return _model(nodes, [_f32("x", [2, 4, 8])], [_f32("y", [2, 16])], inits)


def dense_matmul(k=32, n=16, m=4):
    """A dense MatMul weight (for a failing N:M annotation)."""
    w = np.arange(1, k * n + 1, dtype=np.float32).reshape(k, n) / (k * n)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="/proj/MatMul")]
    return _model(nodes, [_f32("x", [m, k])], [_f32("y", [m, n])], [_init("w", w)])


HANDMADE = {"gemm-relu": gemm_relu, "all-reduce": all_reduce, "conv": conv, "symbolic": symbolic,
            "com-microsoft": com_microsoft, "attention-where": lambda: attention("where"),
            "attention-add": lambda: attention("add"), "gelu-erf": gelu_erf, "shape-arith": shape_arith,
            "dense-matmul": dense_matmul}


def handmade(name):
    model = HANDMADE[name]()
    return model


def build(name, opset=17):
    """A model by name: a torch export or a hand-made graph."""
    if name in HANDMADE:
        return handmade(name)
    return exported(name, opset)


NAMES = TORCH_MODELS + tuple(HANDMADE)


# ------------------------------------------------------------- one-op graphs
_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float16): TensorProto.FLOAT16}


def op_model(nodes, inputs, inits=None, outputs=(("y", None),), opset=17):
    """A graph of `nodes` (onnx.helper nodes) with runtime `inputs` and
    initializers `inits` ({name: numpy array}); `outputs` are (name, shape)
    float outputs (shape None: unknown)."""
    ins = [helper.make_tensor_value_info(k, _NP_TO_ONNX[v.dtype], list(v.shape)) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in outputs]
    return _model(nodes, ins, outs, [_init(k, v) for k, v in (inits or {}).items()], opset=opset)


def node(op, ins, outs, **attrs):
    outs = [outs] if isinstance(outs, str) else outs
    return helper.make_node(op, list(ins), list(outs), name="/%s/%s" % (outs[0], op), **attrs)


def const(name, value, dtype=np.float32):
    return _scalar(name, value, dtype)
