"""Whole decoders through the importers: tied weights and grouped-query
attention.

- Tied weights: a tensor reached under several qualified names (a GPT-2 LM
  head whose weight IS the embedding's) is one param, named by its first
  name in `named_parameters()` order and read by every op that uses it;
  the runtime finds it under either name (`module_state`, `match_params`,
  `bind_module`). ONNX: an initializer the exporter shares is one param.
- Grouped-query attention: k/v heads repeated for the attention only
  (`repeat_kv`'s expand + reshape, `repeat_interleave`) reach
  `sgpu.attention` un-repeated (its query head h reads k/v head
  h // (H / Hkv), the repetition's order); an expand elsewhere is a
  broadcasting copy, never a constant of the result's size.

The decoders are bench/model/decoder.py's (SMALL: 4 query heads, 2 KV
heads; SMALL_GPT2: tied LM head). Numerics run the imported function on the
CPU reference pipeline (reference_runner.py) in f32 with the params fed from
the module's parameters and buffers by name.
"""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from reference_runner import arguments, run_reference
from sparse_opt.importers.emitter import ELEMENT_BYTES, AnnotationError
from sparse_opt.importers.fx import import_fx, state_aliases

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "bench" / "model") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench" / "model"))
import decoder  # noqa: E402  (bench/model/decoder.py)

RTOL, ATOL = 2e-4, 2e-5


def params_of(text):
    """{qualified name: declared type text} of @forward's params, in order."""
    return {name: t for t, name in arguments(text) if name is not None}


def state(model):
    return dict(list(model.named_parameters()) + list(model.named_buffers()))


def verify(build_dir, text):
    r = subprocess.run([str(build_dir / "bin" / "sparse-opt"), "-"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]


def matches_torch(model, inputs, text, params=None):
    with torch.no_grad():
        want = model(*inputs)
    (got,) = run_reference(text, [x.numpy() for x in inputs], params=state(model) if params is None else params)
    np.testing.assert_allclose(got, want.numpy(), rtol=RTOL, atol=ATOL)


def constant_bytes(text):
    """The size in bytes of each `arith.constant dense...` tensor in `text`."""
    sizes = []
    for dims, dt in re.findall(r"arith\.constant dense[^:]*: tensor<((?:\d+x)*)([a-z0-9]+)", text):
        n = 1
        for d in dims.split("x")[:-1]:
            n *= int(d)
        sizes.append(n * ELEMENT_BYTES[dt])
    return sizes


def ids_for(config, seed=0):
    return torch.randint(0, config.vocab, (1, config.seq), generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------ tied weights
class Tied(nn.Module):
    """An embedding and an LM head sharing one weight (GPT-2's tying)."""

    def __init__(self, device=None):
        super().__init__()
        self.embed = nn.Embedding(64, 32, device=device)
        self.norm = nn.LayerNorm(32, device=device)
        self.head = nn.Linear(32, 64, bias=False, device=device)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.norm(self.embed(ids)))


def test_tied_weight_is_one_param_read_by_both_uses(build_dir):
    torch.manual_seed(0)
    model, ids = Tied(), torch.randint(0, 64, (2, 8))
    assert [n for n, _ in model.named_parameters()] == ["embed.weight", "norm.weight", "norm.bias"]
    assert state_aliases(model)["head.weight"] == "embed.weight"
    text = import_fx(model, (ids,))
    assert params_of(text) == {"embed.weight": "tensor<64x32xf32>", "norm.weight": "tensor<32xf32>",
                               "norm.bias": "tensor<32xf32>"}
    assert "sgpu.embedding %embed_weight, %ids" in text
    assert re.search(r"linalg\.matmul .* ins\(%[\w.]+, %embed_weight : tensor<16x32xf32>, tensor<64x32xf32>\)",
                     text)
    verify(build_dir, text)
    matches_torch(model, (ids,), text, params=dict(model.named_parameters()))
    # As constants: one blob, read twice.
    constants = import_fx(model, (ids,), weights="constants")
    assert len(re.findall(r"^\s+embed_weight: \"0x", constants, re.M)) == 1
    assert "head_weight" not in constants and len(re.findall(r"dense_resource<", constants)) == 3
    matches_torch(model, (ids,), constants)


def test_tied_weight_imports_from_the_meta_device():
    text = import_fx(Tied(device="meta"), (torch.zeros(1, 8, dtype=torch.long),), dtype="bf16")
    assert list(params_of(text)) == ["embed.weight", "norm.weight", "norm.bias"]
    assert params_of(text)["embed.weight"] == "tensor<64x32xbf16>"


class SharedLinear(nn.Module):
    """One Linear registered under two names and applied twice."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = self.a

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def test_annotations_name_a_tied_weight_by_either_name():
    x = torch.randn(4, 64)
    text = import_fx(SharedLinear(), (x,), sparsity={"b.weight": "2:4"}, dtype="f16")
    assert params_of(text) == {"a.weight": "tensor<64x64xf16, #sgpu.nm<2:4>>", "a.bias": "tensor<64xf16>"}
    assert text.count("#sgpu.nm<2:4>>) outs(") == 2
    with pytest.raises(AnnotationError, match=r"sparsity annotations for 'a\.weight' \(2:4\) and 'b\.weight' "
                                              r"\(6:8\) differ, but they name one \(tied\) parameter"):
        import_fx(SharedLinear(), (x,), sparsity={"a.weight": "2:4", "b.weight": "6:8"}, dtype="f16")
    # The embedding reads the tied weight too: it cannot be sparse.
    with pytest.raises(AnnotationError, match=r"weight 'embed\.weight' is annotated 2:4 but .*other than as a "
                                              r"linear layer's weight"):
        import_fx(Tied(), (torch.zeros(1, 8, dtype=torch.long),), sparsity={"head.weight": "2:4"}, dtype="f16")


def test_runtime_finds_a_tied_weight_under_either_name(build_dir, tmp_path):
    from sparse_opt import compile_mlir, runtime
    from sparse_opt.artifact import Signature
    model = Tied()
    st = runtime.module_state(model)
    assert st["head.weight"] is st["embed.weight"] is model.embed.weight
    assert set(st) == {"embed.weight", "head.weight", "norm.weight", "norm.bias"}
    # The compiled program names the one param after the first name ...
    compile_mlir(import_fx(model, (torch.zeros(1, 16, dtype=torch.long),), dtype="f16"), tmp_path / "art")
    prog = runtime.parse(tmp_path / "art")
    with prog:
        assert prog.signature.param_names == ("embed.weight", "norm.weight", "norm.bias")
        pairs = runtime.match_params(prog.signature, model)
        assert pairs[0][1] is model.embed.weight
        # ... which the deduplicated named_parameters() holds too.
        assert [t for _, t in runtime.match_params(prog.signature, dict(model.named_parameters()))] == \
            [t for _, t in pairs]
    # A program naming it by its other name (an ONNX initializer "head.weight")
    # binds from the module as well.
    sig = Signature.from_json({"function": "f", "inputs": [{"shape": [64, 32], "dtype": "f16",
                                                            "name": "head.weight"}],
                               "outputs": [{"shape": [2], "dtype": "f32"}], "params": [0]})
    assert runtime.match_params(sig, model)[0][1] is model.embed.weight
    with pytest.raises(runtime.SignatureError, match=r"'head\.weight' is not among the given tensors; did you "
                                                     r"mean 'embed\.weight'\?"):
        runtime.match_params(sig, dict(model.named_parameters()))


def test_gpt2_decoder_with_a_tied_head_imports_from_the_meta_device(build_dir):
    model = decoder.Decoder(decoder.SMALL_GPT2, device="meta")
    assert model.head.weight is model.embed.weight
    text = import_fx(model, (torch.zeros(1, 32, dtype=torch.long),), weights="params", dtype="bf16")
    params = params_of(text)
    assert "head.weight" not in params and params["embed.weight"] == "tensor<128x256xbf16>"
    assert len(params) == len(list(model.named_parameters())) + 1  # + the positions buffer
    assert text.count("%embed_weight") == 3  # the argument, the embedding, the LM head
    assert re.search(r"sgpu\.embedding %embed_weight, %ids", text)
    assert re.search(r"ins\(%[\w.]+, %embed_weight : tensor<32x256xbf16>, tensor<128x256xbf16>\)", text)
    assert text.count("sgpu.attention") == 2 and "dense_resource" not in text
    verify(build_dir, text)


def test_gpt2_decoder_matches_torch():
    model = decoder.init_weights(decoder.Decoder(decoder.SMALL_GPT2)).eval()
    ids = ids_for(decoder.SMALL_GPT2)
    text = import_fx(model, (ids,))
    assert "head.weight" not in params_of(text)
    matches_torch(model, (ids,), text)


def test_onnx_shared_initializer_is_one_param(build_dir, tmp_path):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from sparse_opt.importers.onnx_importer import import_onnx
    rng = np.random.default_rng(0)
    table = rng.standard_normal((64, 32)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["embed.weight", "ids"], ["x"], name="/embed/Gather"),
             helper.make_node("Relu", ["x"], ["r"], name="/act/Relu"),
             helper.make_node("Transpose", ["embed.weight"], ["wt"], name="/head/Transpose", perm=[1, 0]),
             helper.make_node("MatMul", ["r", "wt"], ["y"], name="/head/MatMul")]
    graph = helper.make_graph(nodes, "tied", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 64])],
                              initializer=[numpy_helper.from_array(table, "embed.weight")])
    mp = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    text = import_onnx(mp)
    assert params_of(text) == {"embed.weight": "tensor<64x32xf32>"}
    assert "sgpu.embedding %embed_weight, %ids" in text and "linalg.transpose" not in text
    verify(build_dir, text)
    ids = rng.integers(0, 64, (2, 8))
    (got,) = run_reference(text, [ids], params={"embed.weight": table})
    want = np.maximum(table[ids], 0) @ table.T
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


# ----------------------------------------------- grouped-query attention
def attention_lines(text):
    return [l for l in text.splitlines() if "sgpu.attention" in l]


def check_gqa_decoder(build_dir, model, config):
    """The decoder imports with attention on Hkv k/v heads, no repetition and
    no large constant, and computes what torch computes."""
    ids = ids_for(config)
    text = import_fx(model, (ids,), weights="params")
    b, s, hd = 1, config.seq, config.d // config.heads
    q_t = "tensor<%dx%dx%dx%dxf32>" % (b, config.heads, s, hd)
    kv_t = "tensor<%dx%dx%dx%dxf32>" % (b, config.kv_heads, s, hd)
    lines = attention_lines(text)
    assert len(lines) == config.layers
    for line in lines:
        assert re.search(r"sgpu\.attention %[\w.]+, %[\w.]+, %[\w.]+ \{causal, scale = 1\.250000000e-01 : f32\} : "
                         + re.escape("%s, %s, %s -> %s" % (q_t, kv_t, kv_t, q_t)), line), line
    # Nothing of the repeated size: no 5-D expansion (b x kv x rep x s x hd).
    assert not re.search(r"tensor<(\d+x){5}f32>", text)
    assert all(n <= 4096 for n in constant_bytes(text)), constant_bytes(text)
    verify(build_dir, text)
    matches_torch(model, (ids,), text)
    return text


def test_llama_decoder_attention_reads_the_kv_heads_unrepeated(build_dir):
    config = decoder.SMALL
    assert (config.heads, config.kv_heads) == (4, 2)
    model = decoder.init_weights(decoder.Decoder(config)).eval()
    text = check_gqa_decoder(build_dir, model, config)
    assert text.count("sgpu.rope") == 2 * config.layers


class RepeatInterleaveAttention(decoder.Attention):
    def repeat_kv(self, x):
        return torch.repeat_interleave(x, self.heads // self.kv, dim=1)


def test_llama_decoder_with_repeat_interleave(build_dir):
    config = decoder.SMALL
    model = decoder.Decoder(config)
    for layer in model.layers:
        attn = RepeatInterleaveAttention(config)
        layer.attn = attn
    model = decoder.init_weights(model).eval()
    check_gqa_decoder(build_dir, model, config)


class GQA(nn.Module):
    """Attention of 4 query heads on 2 k/v heads, repeated in one of several
    ways; `leak` also returns the repeated k (so it is computed)."""

    def __init__(self, form, leak=False):
        super().__init__()
        self.form, self.leak = form, leak

    def repeat(self, x):
        b, kv, s, d = x.shape
        if self.form == "repeat_kv":
            return x[:, :, None, :, :].expand(b, kv, 2, s, d).reshape(b, kv * 2, s, d)
        if self.form == "unsqueeze":
            return x.unsqueeze(2).expand(b, kv, 2, s, d).contiguous().view(b, kv * 2, s, d)
        if self.form == "repeat_interleave":
            return x.repeat_interleave(2, dim=1)
        if self.form == "aten":  # as torch.export writes repeat_kv: full slices, unsqueeze, expand, clone, view
            aten, end = torch.ops.aten, 2 ** 63 - 1
            u = aten.unsqueeze.default(aten.slice.Tensor(aten.slice.Tensor(x, 0, 0, end), 1, 0, end), 2)
            u = aten.slice.Tensor(aten.slice.Tensor(u, 3, 0, end), 4, 0, end)
            e = aten.clone.default(aten.expand.default(u, [b, kv, 2, s, d]), memory_format=torch.contiguous_format)
            return aten._unsafe_view.default(e, [b, kv * 2, s, d])
        if self.form == "repeat":  # head j reads kv head j % kv: another order, no GQA
            return x.repeat(1, 2, 1, 1)
        raise ValueError(self.form)

    def forward(self, q, k, v):
        kr, vr = self.repeat(k), self.repeat(v)
        out = torch.softmax(q @ kr.transpose(-2, -1) * 0.5, dim=-1) @ vr
        return (out, kr) if self.leak else out


@pytest.mark.parametrize("form", ["repeat_kv", "unsqueeze", "repeat_interleave", "aten"])
def test_repeated_kv_heads_reach_attention_unrepeated(build_dir, form):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8, 16), torch.randn(2, 2, 8, 16), torch.randn(2, 2, 8, 16)
    text = import_fx(GQA(form), (q, k, v))
    (line,) = attention_lines(text)
    assert "sgpu.attention %q, %k, %v {scale = 5.000000000e-01 : f32} : tensor<2x4x8x16xf32>, " \
           "tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>" in line, line
    assert "linalg.generic" not in text and "tensor.expand_shape" not in text
    matches_torch(GQA(form), (q, k, v), text, params={})


@pytest.mark.parametrize("form", ["repeat_kv", "repeat_interleave", "repeat"])
def test_repeated_kv_used_elsewhere_is_a_broadcast_not_a_constant(build_dir, form):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8, 16), torch.randn(2, 2, 8, 16), torch.randn(2, 2, 8, 16)
    model = GQA(form, leak=form != "repeat")
    text = import_fx(model, (q, k, v))
    (line,) = attention_lines(text)
    # The repeated k is returned too (so k and v both stay repeated: the
    # attention takes k and v of one head count), or the repetition is
    # x.repeat's (head j reads head j % Hkv, not GQA's j // rep).
    assert ": tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> ->" in line, line
    assert all(n <= 64 for n in constant_bytes(text)), constant_bytes(text)
    if form != "repeat":
        # The broadcast reads index 0 of the unit dim: (d0, d1, 0, d3, d4).
        assert "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>" in text
    verify(build_dir, text)
    with torch.no_grad():
        want = model(q, k, v)
    got = run_reference(text, [q.numpy(), k.numpy(), v.numpy()], params={})
    for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"), reason="torch without SDPA")
def test_sdpa_on_repeated_kv_heads(build_dir):
    class M(nn.Module):
        def forward(self, q, k, v):
            b, kv, s, d = k.shape
            k = k[:, :, None].expand(b, kv, 2, s, d).reshape(b, kv * 2, s, d)
            return F.scaled_dot_product_attention(q, k, v.repeat_interleave(2, dim=1), is_causal=True)
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    text = import_fx(M(), (q, k, v))
    (line,) = attention_lines(text)
    assert "sgpu.attention %q, %k, %v {causal, scale = 2.500000000e-01 : f32} : tensor<1x4x8x16xf32>, " \
           "tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>" in line, line
    matches_torch(M(), (q, k, v), text, params={})


def sdpa_standin(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's math (no mask, equal head counts), for
    the importer's SDPA path on a torch without it (registered as "sdpa")."""
    s = query @ key.transpose(-2, -1) * (scale if scale is not None else 1 / query.shape[-1] ** 0.5)
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ value


torch.fx.wrap("sdpa_standin")


class StandinSdpa(nn.Module):
    def forward(self, q, k, v):
        b, kv, s, d = k.shape
        k = k[:, :, None].expand(b, kv, 2, s, d).reshape(b, kv * 2, s, d)
        return sdpa_standin(q, k, v.repeat_interleave(2, dim=1), is_causal=True)


def test_sdpa_path_on_repeated_kv_heads(build_dir, monkeypatch):
    from sparse_opt.importers import fx_forms, fx_registry
    sig = fx_forms.S("query", "key", "value", attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False)
    monkeypatch.setitem(fx_registry.FUNCTIONS, sdpa_standin, ("sdpa", sig))
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    text = import_fx(StandinSdpa(), (q, k, v))
    (line,) = attention_lines(text)
    assert "sgpu.attention %q, %k, %v {causal, scale = 2.500000000e-01 : f32} : tensor<1x4x8x16xf32>, " \
           "tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>" in line, line
    matches_torch(StandinSdpa(), (q, k, v), text, params={})


class Repeats(nn.Module):
    def forward(self, x):
        return (torch.repeat_interleave(x, 3, dim=1) + 1, x.repeat_interleave(2), x[:, None].expand(2, 4, 3, 5) * 2,
                x.repeat(2, 1, 3), x.repeat(2, 1, 1, 1), x.expand(4, 2, 3, 5))


def test_repeat_interleave_repeat_and_expand_are_broadcasts(build_dir):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5)
    text = import_fx(Repeats(), (x,))
    assert constant_bytes(text) == [] and "arith.constant dense" not in text
    assert text.count("linalg.generic") == 8  # 6 broadcasts, + 1, * 2
    # A new leading dim is left out of the input's map.
    assert "affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>" in text
    verify(build_dir, text)
    got = run_reference(text, [x.numpy()], params={})
    for g, w in zip(got, Repeats()(x)):
        np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------- ONNX
def test_onnx_llama_decoder_attention_reads_the_kv_heads_unrepeated(build_dir):
    onnx = pytest.importorskip("onnx")
    import inspect
    import io
    from sparse_opt.importers.onnx_importer import import_onnx
    config = decoder.SMALL
    model = decoder.init_weights(decoder.Decoder(config)).eval()
    ids = ids_for(config)
    f = io.BytesIO()
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, (ids,), f, opset_version=17, input_names=["ids"], do_constant_folding=True, **kwargs)
    mp = onnx.load_from_string(f.getvalue())
    text = import_onnx(mp)
    lines = attention_lines(text)
    assert len(lines) == config.layers
    for line in lines:
        assert "{causal, scale = 1.250000000e-01 : f32} : tensor<1x4x32x64xf32>, tensor<1x2x32x64xf32>, " \
               "tensor<1x2x32x64xf32> -> tensor<1x4x32x64xf32>" in line, line
    assert not re.search(r"tensor<(\d+x){5}f32>", text)
    verify(build_dir, text)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in mp.graph.initializer}
    with torch.no_grad():
        want = model(ids).numpy()
    (got,) = run_reference(text, [ids.numpy()], params=inits)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("axis,unrepeated", [(2, True), (1, False)])
def test_onnx_repeat_chain(build_dir, axis, unrepeated):
    """Reshape(Expand(Unsqueeze(x, axis))) on k and v: at axis 2 head j is
    x's head j // 2 (GQA's order: un-repeated), at axis 1 head j % 2 (a tile:
    repeated for real, as a broadcast)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from sparse_opt.importers.onnx_importer import import_onnx
    consts = {"axes": np.array([axis], np.int64), "wide": np.array([1, 2, 2, 8, 16], np.int64),
              "heads": np.array([1, 4, 8, 16], np.int64), "scale": np.array(0.25, np.float32)}
    nodes = []
    for x in ("k", "v"):
        nodes += [helper.make_node("Unsqueeze", [x, "axes"], [x + "_u"]),
                  helper.make_node("Expand", [x + "_u", "wide"], [x + "_e"]),
                  helper.make_node("Reshape", [x + "_e", "heads"], [x + "_r"])]
    nodes += [helper.make_node("Transpose", ["k_r"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Mul", ["s", "scale"], ["s2"]),
              helper.make_node("Softmax", ["s2"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v_r"], ["y"])]
    info = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)  # noqa: E731
    graph = helper.make_graph(nodes, "gqa", [info("q", [1, 4, 8, 16]), info("k", [1, 2, 8, 16]),
                                             info("v", [1, 2, 8, 16])], [info("y", [1, 4, 8, 16])],
                              initializer=[numpy_helper.from_array(a, n) for n, a in consts.items()])
    mp = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    text = import_onnx(mp, weights="constants")
    (line,) = attention_lines(text)
    kv = "tensor<1x2x8x16xf32>" if unrepeated else "tensor<1x4x8x16xf32>"
    assert ": tensor<1x4x8x16xf32>, %s, %s -> tensor<1x4x8x16xf32>" % (kv, kv) in line, line
    assert ("linalg.generic" in text) != unrepeated
    assert all(n <= 64 for n in constant_bytes(text)), constant_bytes(text)
    verify(build_dir, text)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ([1, 4, 8, 16], [1, 2, 8, 16], [1, 2, 8, 16]))
    heads = [j // 2 if axis == 2 else j % 2 for j in range(4)]
    sc = q @ k[:, heads].transpose(0, 1, 3, 2) * 0.25
    p = np.exp(sc - sc.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v[:, heads]
    (got,) = run_reference(text, [q, k, v])
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
