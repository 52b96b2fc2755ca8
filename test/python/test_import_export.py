"""The fx importer on `torch.export.ExportedProgram`s (torch 2.x).

Three groups of tests:

- fixtures (run everywhere): test/python/fixtures/export/<case>.mlir were
  exported with `torch.export.export` (torch 2.x; `<case>_core`: then
  `run_decompositions()`, the core-ATen form) and imported by `import_fx` on a
  machine with torch 2.x; `data.npz` holds each case's inputs and torch
  outputs. Here each must verify with sparse-opt, have the canonical structure
  (N x K linears, `sgpu.rms_norm` / `sgpu.attention` recognized from ATen, the
  2:4 weight compiling to sparse MMA) and, in f32, compute torch's outputs
  through the reference pipeline.
- replay (run everywhere): `graphs.json` holds each exported ATen graph and its
  graph signature; rebuilt here as an ExportedProgram look-alike (weights
  zero, small buffers exact), this checkout's importer must produce the op
  text of the fixture, so the ATen path is exercised with any torch that has
  the ops (torch 1.13 included).

The fixtures hold the weights as constants (`weights="constants"`), so they
run as they are; importing with the weights as params (the default) is
checked on the replayed graphs and live.
- live (torch with torch.export only, skipped elsewhere): export and import
  in process, example inputs optional, sparsity names, errors.

Regenerate the fixtures with torch 2.x (MLIR tools not needed):
    PYTHONPATH=python:test/python python3 test/python/test_import_export.py --write-fixtures DIR
"""
import gzip
import json
import math
import operator
import pathlib
import re
import subprocess
import sys
import traceback
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import models  # noqa: E402
from sparse_opt.importers.emitter import AnnotationError, ImportError_  # noqa: E402
from sparse_opt.importers.fx import import_fx  # noqa: E402

try:
    import torch.export as _torch_export
    HAS_EXPORT = hasattr(_torch_export, "export")
except ImportError:
    HAS_EXPORT = False

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "export"
RTOL, ATOL = 2e-4, 2e-5  # test_import_numerics.py's
NK_MAP = ("affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
          "affine_map<(m, n, k) -> (m, n)>")

live = pytest.mark.skipif(not HAS_EXPORT, reason="torch %s has no torch.export" % torch.__version__)


# ------------------------------------------------------------------ cases
class Zoo(nn.Module):
    """ATen ops beyond the shared models: SDPA, LayerNorm, nn.RMSNorm, GELU,
    split, where, masked_fill, comparisons, casts, dropout (eval),
    unsqueeze/squeeze, slice/cat, select, chunk, rsub, clamp, embedding."""

    def __init__(self, vocab=50, d=32, heads=2):
        super().__init__()
        self.d, self.heads = d, heads
        self.emb = nn.Embedding(vocab, d)
        self.ln = nn.LayerNorm(d)
        self.rms = nn.RMSNorm(d, eps=1e-5) if hasattr(nn, "RMSNorm") else models.RMSNorm(d, 1e-5)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, ids, x):
        b, s = ids.shape
        h = self.emb(ids) + x
        q, k, v = self.qkv(self.ln(h)).split(self.d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, self.d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + self.drop(self.o(att.transpose(1, 2).reshape(b, s, self.d)))
        r = self.rms(h)
        g = F.gelu(r) * torch.sigmoid(r) - F.silu(r) / 2.0
        g = torch.where(g > 0, g, -g).masked_fill(r.lt(-1.5), 0.25)
        g = torch.cat([g[..., : self.d // 2], g[..., self.d // 2:].neg()], dim=-1)
        g = g.unsqueeze(1).squeeze(1).to(torch.float64).to(torch.float32)
        p = torch.softmax(g, dim=-1) + g.pow(2).mean(-1, keepdim=True).rsqrt()
        e = torch.chunk(x, 2, dim=1)[1].sum(1) + x[:, 3] - (1.0 - x[:, 0]) + x[:, 1].clamp(min=-0.5)
        return p, (h > 0).float() * 0.5, e


def _small_llama():
    return models.LlamaDecoder(vocab=64, d=32, heads=2, f=64, layers=2, seq=8)


def cases():
    """name -> (model factory, inputs factory, import kwargs, run_decompositions)."""
    ids = lambda n, v=128: (torch.randint(0, v, (1, n)),)  # noqa: E731
    const = {"weights": "constants"}
    sparse = dict(const, sparsity={"fc.weight": "2:4"})
    return {
        "mlp": (models.MLP, lambda: (torch.randn(2, 8, 64),), const, False),
        "gated_ffn": (lambda: models.GatedFFN(32, 64), lambda: (torch.randn(2, 8, 32),), const, False),
        "llama": (models.LlamaDecoder, lambda: ids(16), const, False),
        "sparse_linear_relu": (lambda: models.SparseLinearReLU(128, 128).half(),
                               lambda: (torch.randn(64, 128).half(),), sparse, False),
        "zoo": (Zoo, lambda: (torch.randint(0, 50, (2, 8)), torch.randn(2, 8, 32)), const, False),
        "mlp_core": (lambda: models.MLP(32, 64, 16), lambda: (torch.randn(2, 8, 32),), const, True),
        "llama_core": (_small_llama, lambda: ids(8, 64), const, True),
        "sparse_linear_relu_core": (lambda: models.SparseLinearReLU(128, 128).half(),
                                    lambda: (torch.randn(64, 128).half(),), sparse, True),
        "zoo_core": (Zoo, lambda: (torch.randint(0, 50, (2, 8)), torch.randn(2, 8, 32)), const, True),
    }


def build(name):
    factory, inputs, kwargs, core = cases()[name]
    torch.manual_seed(0)
    model = factory().eval()
    torch.manual_seed(1)
    return model, inputs(), kwargs, core


def export(model, inputs, core):
    ep = _torch_export.export(model, tuple(inputs))
    return ep.run_decompositions() if core else ep


# ------------------------------------------------------- structure checks
def _weights(text):
    return set(re.findall(r"(%[\w.]+) = arith.constant dense_resource", text))


def check_structure(name, text):
    """The canonical form the importer gives each case (text only: no tools)."""
    base = name[:-5] if name.endswith("_core") else name
    nk = text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP)
    weights = _weights(text)
    for src in re.findall(r"linalg\.transpose ins\((%[\w.]+)", text):
        assert src not in weights, "%s: a weight is transposed: %s" % (name, src)
    if base == "mlp":
        assert nk == 2 and "linalg.transpose" not in text and "sgpu." not in text, name
        assert re.search(r"dense_resource<fc1_weight> : tensor<\d+x\d+xf32> loc\(\"fc1\.weight\"\)", text), name
    elif base == "gated_ffn":
        assert nk == 3 and "linalg.transpose" not in text and "arith.maximumf" in text, name
    elif base == "llama":
        assert text.count("sgpu.rms_norm") == 5, name
        assert text.count("sgpu.embedding") == 1 and text.count("sgpu.rope") == 4, name
        assert "tensor.concat" not in text and "tensor.extract " not in text, name
        assert text.count("sgpu.attention") == 2, name
        assert len(re.findall(r"sgpu\.attention .*\{causal, scale = ", text)) == 2, name
        assert nk == 15, (name, nk)  # 7 linears per layer and the LM head
        assert "linalg.batch_matmul" not in text and "linalg.softmax" not in text, name
        assert "math.rsqrt" not in text and "dense_resource<mask>" not in text, name
        assert "dense_resource<layers_1_attn_q_weight>" in text
    elif base == "sparse_linear_relu":
        assert "dense_resource<fc_weight> : tensor<128x128xf16, #sgpu.nm<2:4>>" in text, name
        assert "tensor<128x128xf16, #sgpu.nm<2:4>>) outs(" in text and nk == 1, name
        assert "linalg.transpose" not in text
    elif base == "zoo":
        assert text.count("sgpu.layer_norm") == 1 and text.count("sgpu.rms_norm") == 1, name
        assert text.count("sgpu.embedding") == 1, name
        assert nk == 2 and "math.erf" in text and "linalg.batch_matmul" not in text, name
        assert len(re.findall(r"sgpu\.attention .*\{causal, scale = 2\.5", text)) == 1, name


# ------------------------------------------------------ fixture tests (here)
def _fixture(name):
    path = FIXTURES / (name + ".mlir")
    if not path.exists():
        pytest.skip("no fixture %s" % path.name)
    return path.read_text()


def _data(name):
    with np.load(FIXTURES / "data.npz") as d:
        ins = [d["%s/in%d" % (name, i)] for i in range(sum(1 for k in d.files if k.startswith(name + "/in")))]
        outs = [d["%s/out%d" % (name, i)] for i in range(sum(1 for k in d.files if k.startswith(name + "/out")))]
    return ins, outs


CASE_NAMES = list(cases())


def _run_opt(build_dir, text, *args, path=None):
    cmd = [str(build_dir / "bin" / "sparse-opt"), str(path) if path else "-", *args]
    return subprocess.run(cmd, input=None if path else text, capture_output=True, text=True)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_fixture_verifies_with_canonical_structure(build_dir, name):
    text = _fixture(name)
    r = _run_opt(build_dir, text)
    assert r.returncode == 0 and r.stderr == "", r.stderr[:4000]
    check_structure(name, text)


@pytest.mark.parametrize("name", [n for n in CASE_NAMES if "sparse" not in n])
def test_fixture_matches_torch(build_dir, name):
    from reference_runner import run_reference
    text = _fixture(name)
    ins, want = _data(name)
    got = run_reference(text, ins)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", [n for n in CASE_NAMES if "sparse" in n])
def test_fixture_sparse_compiles_to_sparse_mma(build_dir, tmp_path, name):
    text = _fixture(name)
    rewritten = _run_opt(build_dir, text, "--sgpu-slide-sparse", "--sgpu-fuse-epilogue")
    assert rewritten.returncode == 0, rewritten.stderr[:4000]
    assert "activation = #sgpu.activation<relu>" in rewritten.stdout
    src, out = tmp_path / "model.mlir", tmp_path / "art"
    src.write_text(text)
    out.mkdir()
    r = _run_opt(build_dir, None, "--sgpu-compile=output-dir=%s" % out, "-o", str(tmp_path / "c.mlir"), path=src)
    assert r.returncode == 0, r.stderr[:4000]
    summary = (out / "summary.txt").read_text()
    counts = [int(n) for n in re.findall(r"kernel \w+: (\d+) sparse MMA instructions", summary)]
    assert counts and all(n > 0 for n in counts), summary


# ------------------------------------------------ graph dumps and replay
def _enc(x):
    if isinstance(x, torch.fx.Node):
        return {"$node": x.name}
    if isinstance(x, torch.dtype):
        return {"$dtype": str(x).split(".")[-1]}
    if isinstance(x, torch.device):
        return {"$device": str(x)}
    if isinstance(x, torch.memory_format):
        return {"$memory_format": str(x).split(".")[-1]}
    if isinstance(x, torch.layout):
        return {"$layout": str(x).split(".")[-1]}
    if isinstance(x, float) and not math.isfinite(x):
        return {"$float": repr(x)}
    if isinstance(x, tuple):
        return {"$tuple": [_enc(y) for y in x]}
    if isinstance(x, list):
        return [_enc(y) for y in x]
    if isinstance(x, dict):
        return {"$dict": [[k, _enc(v)] for k, v in x.items()]}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError("cannot dump %r (%s)" % (x, type(x).__name__))


def _val(v):
    if isinstance(v, torch.Tensor):
        return {"shape": [int(d) for d in v.shape], "dtype": str(v.dtype).split(".")[-1]}
    if isinstance(v, (list, tuple)):
        return [_val(y) for y in v]
    if isinstance(v, (bool, int, float)):
        return v
    return None


def dump_program(ep):
    """An ExportedProgram's graph, signature and lifted tensors as JSON data
    (plus the small or non-float tensors' values, returned apart)."""
    nodes = []
    for n in ep.graph.nodes:
        t = n.target
        if isinstance(t, torch._ops.OpOverload):
            target = {"$op": "%s.%s" % (t._schema.name, t._overloadname)}
        elif t is operator.getitem:
            target = {"$py": "operator.getitem"}
        elif n.op in ("placeholder", "output"):
            target = t
        else:
            raise TypeError("cannot dump target %r of %s" % (t, n.name))
        nodes.append({"name": n.name, "op": n.op, "target": target, "args": _enc(tuple(n.args)),
                      "kwargs": _enc(dict(n.kwargs)), "val": _val(n.meta.get("val")),
                      "stack_trace": n.meta.get("stack_trace"),
                      "nn_module_stack": {k: [str(v[0]), str(v[1])] for k, v in
                                          (n.meta.get("nn_module_stack") or {}).items()}})
    sig = ep.graph_signature
    signature = {k: dict(getattr(sig, k)) for k in ("inputs_to_parameters", "inputs_to_buffers",
                                                     "inputs_to_lifted_tensor_constants", "buffers_to_mutate")}
    signature["user_inputs"] = [str(x) for x in sig.user_inputs]
    signature["user_outputs"] = [str(x) for x in sig.user_outputs]
    tensors, values = {}, {}
    for fqn, t in list(ep.state_dict.items()) + list(ep.constants.items()):
        if not isinstance(t, torch.Tensor):
            continue
        t = t.detach().cpu()
        exact = t.numel() <= 1024 or not t.is_floating_point()
        tensors[fqn] = {"shape": list(t.shape), "dtype": str(t.dtype).split(".")[-1], "exact": exact,
                        "constant": fqn in ep.constants}
        if exact:
            values[fqn] = t.numpy()
    return {"nodes": nodes, "signature": signature, "tensors": tensors}, values


class ReplayedProgram:
    """An ExportedProgram look-alike rebuilt from `dump_program`'s data with the
    ATen ops of the torch installed here (KeyError: an op it lacks)."""

    def __init__(self, data, values):
        def dec(x):
            if isinstance(x, list):
                return [dec(y) for y in x]
            if isinstance(x, dict):
                if "$node" in x:
                    return env[x["$node"]]
                if "$dtype" in x:
                    return getattr(torch, x["$dtype"])
                if "$device" in x:
                    return torch.device(x["$device"])
                if "$memory_format" in x:
                    return getattr(torch, x["$memory_format"])
                if "$layout" in x:
                    return getattr(torch, x["$layout"])
                if "$float" in x:
                    return float(x["$float"])
                if "$tuple" in x:
                    return tuple(dec(y) for y in x["$tuple"])
                if "$dict" in x:
                    return {k: dec(v) for k, v in x["$dict"]}
            return x

        def fake(v):
            if isinstance(v, dict) and not all(isinstance(d, int) for d in v["shape"]):
                # A symbolic size (a test's stand-in for a dynamic shape).
                return types.SimpleNamespace(shape=tuple(v["shape"]), dtype=getattr(torch, v["dtype"]))
            if isinstance(v, dict):
                return torch.empty(v["shape"], dtype=getattr(torch, v["dtype"]))
            if isinstance(v, list):
                return [fake(y) for y in v]
            return v

        def resolve(t):
            if "$py" in t:
                return operator.getitem
            name, overload = t["$op"].split("::", 1)[1].rsplit(".", 1)
            op = getattr(getattr(torch.ops.aten, name, None), overload, None)
            if op is None:
                raise KeyError("aten.%s.%s" % (name, overload))
            return op

        graph = torch.fx.Graph()
        env = {}
        for nd in data["nodes"]:
            args, kwargs = dec(nd["args"]), dec(nd["kwargs"])
            if nd["op"] == "placeholder":
                n = graph.placeholder(nd["name"])
            elif nd["op"] == "output":
                n = graph.output(args[0])
            else:
                n = graph.create_node(nd["op"], resolve(nd["target"]), tuple(args), kwargs, nd["name"])
            n.meta["val"] = fake(nd["val"])
            if nd["stack_trace"]:
                n.meta["stack_trace"] = nd["stack_trace"]
            if nd["nn_module_stack"]:
                n.meta["nn_module_stack"] = {k: tuple(v) for k, v in nd["nn_module_stack"].items()}
            env[nd["name"]] = n
        self.graph_module = torch.fx.GraphModule(torch.nn.Module(), graph)
        self.graph = graph
        self.graph_signature = types.SimpleNamespace(**data["signature"])
        self.state_dict, self.constants = {}, {}
        for fqn, t in data["tensors"].items():
            value = torch.from_numpy(np.array(values[fqn])) if t["exact"] else \
                torch.zeros(t["shape"], dtype=getattr(torch, t["dtype"]))
            (self.constants if t["constant"] else self.state_dict)[fqn] = value


def _replay_data(name):
    if not (FIXTURES / "graphs.json.gz").exists():
        pytest.skip("no graphs.json.gz fixture")
    with gzip.open(FIXTURES / "graphs.json.gz", "rt") as f:
        data = json.load(f)[name]
    with np.load(FIXTURES / "data.npz") as d:
        values = {k.split("/state/", 1)[1]: d[k] for k in d.files if k.startswith(name + "/state/")}
    return data, values


def _ops_text(text):
    return text.split("\n{-#", 1)[0]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_replayed_graph_imports_to_the_fixture(name):
    expected = _fixture(name)
    data, values = _replay_data(name)
    try:
        program = ReplayedProgram(data, values)
    except KeyError as err:
        pytest.skip("torch %s lacks %s" % (torch.__version__, err.args[0]))
    kwargs = build(name)[2]
    text = import_fx(program, **kwargs)  # example inputs: zeros of the recorded shapes
    assert _ops_text(text) == _ops_text(expected)
    ins = [torch.from_numpy(x) for x in _data(name)[0]]
    assert import_fx(program, ins, **kwargs) == text


@pytest.mark.parametrize("name", ["llama", "zoo_core", "sparse_linear_relu"])
def test_replayed_graph_imports_weights_as_params(name):
    """By default the program's parameters and buffers are params named by
    their qualified names (those the graph reads); its lifted constants and
    the causal mask it recognizes are not."""
    data, values = _replay_data(name)
    try:
        program = ReplayedProgram(data, values)
    except KeyError as err:
        pytest.skip("torch %s lacks %s" % (torch.__version__, err.args[0]))
    kwargs = dict(build(name)[2])
    del kwargs["weights"]
    text = import_fx(program, **kwargs)
    params = re.findall(r'\{sgpu\.param = "([^"]+)"\}', text)
    sig = data["signature"]
    state = set(sig["inputs_to_parameters"].values()) | set(sig["inputs_to_buffers"].values())
    assert params and set(params) <= state and len(set(params)) == len(params)
    assert "dense_resource" not in text or name == "zoo_core"  # (a lifted constant stays one)
    if name == "llama":
        assert "mask" not in params and {"embed.weight", "cos", "sin", "head.weight"} <= set(params)
        assert len(params) == 23
    if name == "sparse_linear_relu":
        assert re.search(r'%fc_weight: tensor<128x128xf16, #sgpu\.nm<2:4>> \{sgpu\.param = "fc\.weight"\}', text)


def test_replayed_state_mutation_is_an_error():
    data, values = _replay_data("mlp")
    data["signature"]["buffers_to_mutate"] = {"add_": "steps"}  # as a functionalized program lists it
    with pytest.raises(ImportError_, match=r"the exported program updates 'steps' in place"):
        import_fx(ReplayedProgram(data, values))


def test_replayed_dynamic_shape_is_an_error():
    data, values = _replay_data("mlp")
    x = next(n for n in data["nodes"] if n["op"] == "placeholder" and n["name"] == "x")
    x["val"]["shape"][0] = "s0"
    with pytest.raises(ImportError_, match=r"input 'x' has a dynamic shape \['s0', 8, 64\]"):
        import_fx(ReplayedProgram(data, values))


def test_replayed_example_inputs_are_checked():
    program = ReplayedProgram(*_replay_data("mlp"))
    with pytest.raises(ImportError_, match=r"example input 'x' has shape \[4, 64\]; the program was exported "
                                          r"for \[2, 8, 64\]"):
        import_fx(program, (torch.randn(4, 64),))


# ----------------------------------------------------------- live (torch 2.x)
@live
@pytest.mark.parametrize("name", CASE_NAMES)
def test_live_export_imports_canonically(name):
    model, inputs, kwargs, core = build(name)
    ep = export(model, inputs, core)
    text = import_fx(ep, **kwargs)
    check_structure(name, text)
    assert text == import_fx(ep, inputs, **kwargs)  # the program's own example inputs by default


@live
def test_live_export_weights_as_params():
    model, inputs, _, _ = build("llama")
    ep = export(model, inputs, False)
    text = import_fx(ep)
    params = re.findall(r'\{sgpu\.param = "([^"]+)"\}', text)
    assert set(params) <= set(model.state_dict()) and "mask" not in params and len(params) == 23
    assert "dense_resource" not in text and text.count("sgpu.rope") == 4


@live
def test_live_sparsity_annotation_names():
    model, inputs, _, _ = build("mlp")
    ep = export(model, inputs, False)
    with pytest.raises(AnnotationError, match=r"'fc1\.wieght', which is not a parameter.*did you mean 'fc1\.weight'"):
        import_fx(ep, sparsity={"fc1.wieght": "2:4"})
    with pytest.raises(AnnotationError, match=r"weight 'fc1\.weight' is not 2:4 sparse"):
        import_fx(ep, sparsity={"fc1.weight": "2:4"}, dtype="f16", weights="constants")
    model, inputs, kwargs, _ = build("sparse_linear_relu")
    for core in (False, True):
        text = import_fx(export(model, inputs, core), **kwargs)
        assert "#sgpu.nm<2:4>" in text and 'loc("fc.weight")' in text


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=-1)


@live
def test_live_unsupported_op_names_op_node_and_line():
    ep = export(Cumsum(), (torch.randn(2, 8),), False)
    with pytest.raises(ImportError_) as err:
        import_fx(ep)
    msg = str(err.value)
    assert "torch.ops.aten.cumsum.default" in msg and "node 'cumsum'" in msg, msg
    assert "test_import_export.py:" in msg and "torch.cumsum(self.fc(x), dim=-1)" in msg, msg


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps.add_(1)
        return x * 2


@live
def test_live_in_place_update_is_an_error():
    # torch 2.11's export keeps the in-place op in the graph (a functionalized
    # program lists it in buffers_to_mutate instead: see the replay test).
    with pytest.raises(ImportError_) as err:
        import_fx(export(Counter(), (torch.randn(2, 4),), False))
    msg = str(err.value)
    assert "torch.ops.aten.add_.Tensor" in msg and "self.steps.add_(1)" in msg, msg


@live
def test_live_example_inputs_must_match_the_exported_shapes():
    model, inputs, _, _ = build("mlp")
    ep = export(model, inputs, False)
    with pytest.raises(ImportError_, match=r"example input 'x' has shape \[4, 64\]"):
        import_fx(ep, (torch.randn(4, 64),))
    with pytest.raises(ImportError_, match=r"takes 1 inputs"):
        import_fx(ep, (inputs[0], inputs[0]))


# ------------------------------------------------------------- generation
def write_fixtures(out_dir):
    """Exports, imports and records every case (torch 2.x); returns failures."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays, graphs, failed = {}, {}, []
    for name in CASE_NAMES:
        try:
            model, inputs, kwargs, core = build(name)
            ep = export(model, inputs, core)
            print("=" * 30, name, "\n", ep.graph_module.code, "\n", ep.graph_signature, flush=True)
            text = import_fx(ep, **kwargs)
            (out / (name + ".mlir")).write_text(text)
            graphs[name], values = dump_program(ep)
            for fqn, v in values.items():
                arrays["%s/state/%s" % (name, fqn)] = v
            for i, x in enumerate(inputs):
                arrays["%s/in%d" % (name, i)] = x.numpy()
            with torch.no_grad():
                res = model(*inputs)
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            for i, r in enumerate(res):
                arrays["%s/out%d" % (name, i)] = r.numpy()
            try:
                check_structure(name, text)
            except AssertionError as err:
                print("STRUCTURE", name, err, flush=True)
                failed.append(name)
        except Exception:
            print("FAILED", name, flush=True)
            traceback.print_exc()
            failed.append(name)
    np.savez_compressed(out / "data.npz", **arrays)
    with gzip.open(out / "graphs.json.gz", "wt") as f:
        json.dump(graphs, f)
    return failed


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write-fixtures":
        bad = write_fixtures(sys.argv[2])
        print("torch", torch.__version__, "failed:", bad)
        sys.exit(1 if bad else 0)
    print(__doc__)
    sys.exit(2)


@live
def test_live_all_reduce_marker_survives_export():
    """On torch 2.x the marker is the custom op sparse_opt::all_reduce, so an
    exported model keeps its tensor-parallel reductions."""
    import models
    torch.manual_seed(0)
    m = models.LlamaDecoder().eval()
    ids = torch.randint(0, 128, (1, 16))
    text = import_fx(torch.export.export(m, (ids,)))
    assert text.count("sgpu.all_reduce ") == 4
    assert text.count("sgpu.rms_norm ") == 5 and text.count("sgpu.attention ") == 2
