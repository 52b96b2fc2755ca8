"""sparse_opt.decoder end to end on the CPU reference backend: a 2-layer
decoder with a static KV cache is exported (prefill and decode programs
sharing its params and cache state), loaded with the torch module's
weights, and checked against torch: prefill plus 8 decode steps, a ragged
batch against each sequence alone, greedy generate, and the errors."""
import copy
import json
import math
import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "model"))

import decoder as models  # noqa: E402
from sparse_opt import decoder as sdec  # noqa: E402

# f32 models: the reference backend keeps f32 state. Tolerance of the
# logits against torch's f32 (same math, other summation orders).
TOL = 2e-4
CONFIGS = {
    "llama": models.Config(vocab=64, d=64, layers=2, heads=4, kv_heads=2, ffn=128, seq=8,
                           cache_batch=2, cache_len=24),
    "gpt2": models.Config(vocab=64, d=64, layers=2, heads=4, kv_heads=4, ffn=256, seq=8, style="gpt2",
                          act="gelu", cache_batch=2, cache_len=24),
}


def _model(style):
    torch.manual_seed(0)
    m = models.Decoder(CONFIGS[style]).eval()
    models.init_weights(m, seed=1)
    return m


def _torch_logits(model, seq):
    """torch's logits of every position of one sequence, run without the
    cache (the cache-less forward over the whole sequence)."""
    c = models.Config(**{**CONFIGS[model.config.style].__dict__, "seq": len(seq), "cache_batch": 0,
                         "cache_len": 0})
    ref = models.Decoder(c).eval()
    state = {k: v for k, v in model.state_dict().items()}
    if c.style == "gpt2":
        state["pos.weight"] = state["pos.weight"][:len(seq)]
    ref.load_state_dict(state, strict=False)
    with torch.no_grad():
        return ref(torch.as_tensor(seq)[None])[0]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def exported(request, tmp_path_factory):
    pytest.importorskip("sparse_opt.compiler")
    model = _model(request.param)
    out = tmp_path_factory.mktemp("decoder_" + request.param)
    manifest = sdec.export(model, out, prefill=(2, 8), decode_batches=(1, 2), compile=False)
    return model, out, manifest


def test_manifest(exported):
    model, out, manifest = exported
    on_disk = json.loads((out / sdec.MANIFEST).read_text())
    assert on_disk == manifest
    assert manifest["capacity"] == 24 and manifest["max_batch"] == 2 and manifest["vocab"] == 64
    assert set(manifest["programs"]) == {"prefill", "decode_b1", "decode_b2"}
    # One K and one V cache per layer, shared by every program.
    assert sorted(manifest["state"]) == sorted("layers.%d.attn.%s_cache" % (i, kv) for i in range(2)
                                               for kv in "kv")
    for name in manifest["programs"]:
        text = (out / name / "model.mlir").read_text()
        assert text.count("sgpu.cache_update") == 4
        assert text.count("sgpu.state") == 4


def test_prefill_then_eight_decode_steps(exported):
    """Teacher-forced: both sides see the same tokens; every step's logits
    match torch's logits at that position."""
    model, out, _ = exported
    dec = sdec.load_decoder(out, model, backend="reference")
    g = torch.Generator().manual_seed(3)
    seq = torch.randint(0, 64, (14,), generator=g)
    want = _torch_logits(model, seq)
    got = dec.prefill(seq[:6][None])
    np.testing.assert_allclose(got[0].numpy(), want[5].numpy(), atol=TOL, rtol=TOL)
    for step in range(8):
        got = dec.decode(seq[6 + step:7 + step])
        np.testing.assert_allclose(got[0].numpy(), want[6 + step].numpy(), atol=TOL, rtol=TOL,
                                   err_msg="decode step %d" % step)
    assert dec.lengths == [14]


def test_ragged_batch_matches_each_sequence_alone(exported):
    """Two prompts of different lengths in one batch (padding at -1): each
    sequence's logits equal the ones it gets alone, through decode too."""
    model, out, _ = exported
    g = torch.Generator().manual_seed(5)
    a, b = torch.randint(0, 64, (7,), generator=g), torch.randint(0, 64, (3,), generator=g)
    ids = torch.zeros(2, 7, dtype=torch.long)
    ids[0], ids[1, :3] = a, b
    dec = sdec.load_decoder(out, model, backend="reference")
    first = dec.prefill(ids, lengths=[7, 3])
    nxt = torch.tensor([5, 9])
    second = dec.decode(nxt)
    for i, (seq, tok) in enumerate(((a, 5), (b, 9))):
        want = _torch_logits(model, torch.cat([seq, torch.tensor([tok])]))
        np.testing.assert_allclose(first[i].numpy(), want[len(seq) - 1].numpy(), atol=TOL, rtol=TOL)
        np.testing.assert_allclose(second[i].numpy(), want[len(seq)].numpy(), atol=TOL, rtol=TOL)


def test_greedy_generate_matches_torch(exported):
    model, out, _ = exported
    dec = sdec.load_decoder(out, model, backend="reference")
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    got = dec.generate(prompt, max_new_tokens=4)
    seq = prompt[0].tolist()
    for _ in range(4):
        seq.append(int(_torch_logits(model, torch.tensor(seq))[-1].argmax()))
    assert got[0].tolist() == seq[5:]


def test_sampling_and_eos(exported):
    model, out, _ = exported
    dec = sdec.load_decoder(out, model, backend="reference")
    g = torch.Generator().manual_seed(0)
    got = dec.generate(torch.tensor([[1, 2, 3]]), 3, temperature=0.8, top_k=5, top_p=0.9, generator=g)
    assert got.shape == (1, 3) and int(got.min()) >= 0 and int(got.max()) < 64
    greedy = dec.generate(torch.tensor([[1, 2, 3]]), 3)
    eos = int(greedy[0, 0])
    stopped = dec.generate(torch.tensor([[1, 2, 3]]), 3, eos_token_id=eos)
    assert stopped.tolist() == [[eos]]


def test_errors(exported, tmp_path):
    model, out, _ = exported
    dec = sdec.load_decoder(out, model, backend="reference")
    with pytest.raises(sdec.DecoderError, match="decode before prefill"):
        dec.decode(torch.tensor([1]))
    with pytest.raises(sdec.DecoderError, match="does not fit the prefill program"):
        dec.prefill(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(sdec.DecoderError, match="lengths"):
        dec.prefill(torch.zeros(2, 4, dtype=torch.long), lengths=[4, 5])
    dec.prefill(torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(sdec.DecoderError, match="one token for each of the 1 sequences"):
        dec.decode(torch.tensor([1, 2]))
    with pytest.raises(sdec.DecoderError, match="exported without compiling"):
        sdec.load_decoder(out, model, backend="cuda")
    with pytest.raises(sdec.DecoderError, match="not a decoder directory"):
        sdec.load_decoder(tmp_path, model, backend="reference")
    with pytest.raises(sdec.DecoderError, match="backend"):
        sdec.load_decoder(out, model, backend="tpu")
    with pytest.raises(sdec.DecoderError, match="need 27 cache positions; the cache has 24"):
        dec.generate(torch.zeros(1, 8, dtype=torch.long), max_new_tokens=20)
    with pytest.raises(sdec.DecoderError, match="does not fit the model's cache of 2 sequences"):
        sdec.export(model, tmp_path / "big", prefill=(2, 8), decode_batches=(4,), compile=False)
    from sparse_opt.importers.emitter import ImportError_
    with pytest.raises(ImportError_, match="cache_write: 4 sequences do not fit a cache of 2"):
        sdec.export(model, tmp_path / "big", prefill=(4, 8), compile=False)


def test_cacheless_model_is_refused(tmp_path):
    class NoCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(16, 8)

        def forward(self, ids, positions):
            return self.embed(ids)

    with pytest.raises(sdec.DecoderError, match="keeps no KV cache"):
        sdec.export(NoCache(), tmp_path, prefill=(1, 4), compile=False)


MODEL_PY = '''
import torch
from sparse_opt import models

def make():
    c = models.Config(vocab=64, d=64, layers=2, heads=4, kv_heads=2, ffn=128, seq=8, cache_batch=2, cache_len=24)
    return models.init_weights(models.Decoder(c).eval(), seed=1)
'''


def test_command_line_export_and_generate(tmp_path):
    """python -m sparse_opt export / generate on the reference backend: the
    tokens are torch's greedy continuation."""
    from conftest import run_python
    (tmp_path / "model.py").write_text(MODEL_PY)
    out = tmp_path / "dec"
    r = run_python("import sys; from sparse_opt.__main__ import main; "
                   "sys.exit(main(['export', %r, '-o', %r, '--prefill', '2x8', '--decode-batches', '1,2', "
                   "'--no-compile']))" % (str(tmp_path / "model.py") + ":make", str(out)))
    assert r.returncode == 0, r.stderr
    assert "decode_b1, decode_b2, prefill" in r.stdout
    r = run_python("import sys; from sparse_opt.__main__ import main; "
                   "sys.exit(main(['generate', %r, '--model', %r, '--prompt', '3,1,4', '--prompt', '1,5', "
                   "'--max-new-tokens', '3', '--backend', 'reference']))"
                   % (str(out), str(tmp_path / "model.py") + ":make"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    sys.path.insert(0, str(tmp_path))
    import importlib
    made = importlib.import_module("model").make()
    for line, prompt in zip(lines, ([3, 1, 4], [1, 5])):
        seq = list(prompt)
        for _ in range(3):
            seq.append(int(_torch_logits(made, torch.tensor(seq))[-1].argmax()))
        assert [int(x) for x in line.split(",")] == seq[len(prompt):]
    # A bad prompt and a missing directory are errors with a message.
    r = run_python("import sys; from sparse_opt.__main__ import main; "
                   "sys.exit(main(['generate', %r, '--model', %r, '--prompt', 'x', '--backend', 'reference']))"
                   % (str(out), str(tmp_path / "model.py") + ":make"))
    assert r.returncode == 1 and "expected integers separated by ','" in r.stderr
    r = run_python("import sys; from sparse_opt.__main__ import main; "
                   "sys.exit(main(['generate', %r, '--model', %r, '--prompt', '1', '--backend', 'reference']))"
                   % (str(tmp_path), str(tmp_path / "model.py") + ":make"))
    assert r.returncode == 1 and "not a decoder directory" in r.stderr


class GptFastStyle(torch.nn.Module):
    """A decoder with gpt-fast's static cache: forward(idx, input_pos) with
    one set of positions for the batch, the keys written with index_copy_
    (HF StaticCache's form) and the values by item assignment (gpt-fast's),
    RoPE tables picked by position, the mask `causal_mask[None, None,
    input_pos]` and grouped-query heads repeated with repeat_interleave.
    Attention is the decomposed where(mask, scores, -inf) form (torch 1.13
    has no scaled_dot_product_attention)."""

    def __init__(self, vocab=64, d=64, heads=4, kv=2, batch=2, capacity=24, layers=2):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.embed = torch.nn.Embedding(vocab, d)
        self.qkv = torch.nn.ModuleList([torch.nn.Linear(d, (heads + 2 * kv) * self.hd, bias=False)
                                        for _ in range(layers)])
        self.out = torch.nn.ModuleList([torch.nn.Linear(d, d, bias=False) for _ in range(layers)])
        self.head = torch.nn.Linear(d, vocab, bias=False)
        for i in range(layers):
            self.register_buffer("k_cache_%d" % i, torch.zeros(batch, kv, capacity, self.hd), persistent=False)
            self.register_buffer("v_cache_%d" % i, torch.zeros(batch, kv, capacity, self.hd), persistent=False)
        self.register_buffer("causal_mask", torch.tril(torch.ones(capacity, capacity, dtype=torch.bool)),
                             persistent=False)
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(torch.arange(capacity).float(), inv)
        self.register_buffer("cos", torch.cat((ang, ang), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((ang, ang), -1).sin(), persistent=False)
        self.layers = layers

    def forward(self, idx, input_pos):
        b, s = idx.shape
        x = self.embed(idx)
        cos, sin = self.cos[input_pos], self.sin[input_pos]
        mask = self.causal_mask[None, None, input_pos]
        for i in range(self.layers):
            q, k, v = self.qkv[i](x).split([self.heads * self.hd, self.kv * self.hd, self.kv * self.hd], dim=-1)
            q = q.view(b, s, self.heads, self.hd).transpose(1, 2)
            k = k.view(b, s, self.kv, self.hd).transpose(1, 2)
            v = v.view(b, s, self.kv, self.hd).transpose(1, 2)
            q = q * cos + models.rotate_half(q) * sin
            k = k * cos + models.rotate_half(k) * sin
            k_cache, v_cache = getattr(self, "k_cache_%d" % i), getattr(self, "v_cache_%d" % i)
            k_cache.index_copy_(2, input_pos, k)
            v_cache[:, :, input_pos] = v
            kk = k_cache.repeat_interleave(self.heads // self.kv, dim=1)
            vv = v_cache.repeat_interleave(self.heads // self.kv, dim=1)
            scores = torch.matmul(q, kk.transpose(-2, -1)) / math.sqrt(self.hd)
            scores = torch.where(mask, scores, torch.tensor(float("-inf")))
            o = torch.matmul(torch.softmax(scores, dim=-1), vv)
            x = x + self.out[i](o.transpose(1, 2).reshape(b, s, -1))
        return self.head(x)


def test_gpt_fast_style_cache_imports_and_decodes(tmp_path):
    """The gpt-fast form imports as a cache: both writes become
    sgpu.cache_update on state params, the gathered causal mask attention
    over the cache with the shared positions; the decoder runs it (prompts
    of equal length) and matches the module run step by step in torch."""
    from sparse_opt.importers.fx import import_fx
    torch.manual_seed(0)
    model = GptFastStyle().eval()
    text = import_fx(model, (torch.zeros(2, 1, dtype=torch.long), torch.zeros(1, dtype=torch.long)))
    assert text.count("sgpu.cache_update") == 4 and text.count("sgpu.state") == 4
    assert text.count("positions(%input_pos : tensor<1xi64>)") == 2
    assert "causal_mask" not in text  # the gathered mask is not computed
    sdec.export(model, tmp_path, prefill=(2, 6), decode_batches=(2,), compile=False)
    dec = sdec.load_decoder(tmp_path, model, backend="reference")
    prompts = torch.tensor([[5, 9, 2, 7], [1, 3, 3, 8]])
    got = [dec.prefill(prompts)] + [dec.decode(torch.tensor([4 + t, 11 - t])) for t in range(3)]
    ref = copy.deepcopy(model)
    with torch.no_grad():
        want = [ref(prompts, torch.arange(4))[:, -1]]
        for t in range(3):
            want.append(ref(torch.tensor([[4 + t], [11 - t]]), torch.tensor([4 + t]))[:, -1])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=TOL, rtol=TOL)
    with pytest.raises(sdec.DecoderError, match="equal lengths"):
        dec.prefill(prompts, lengths=[4, 3])


class PastPresentStep(torch.nn.Module):
    """One decode step in the form ONNX decoders are exported in: past keys
    and values in, present (past + the new token's) out, causal attention
    over the present aligned to its end."""

    def __init__(self, d=32, h=2, vocab=50):
        super().__init__()
        self.h, self.hd = h, d // h
        self.emb = torch.nn.Embedding(vocab, d)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids, past_k, past_v):
        b, s = ids.shape
        x = self.emb(ids)
        q, k, v = (p(x).view(b, s, self.h, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        pk, pv = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        t = pk.shape[2]
        scores = q @ pk.transpose(-2, -1) / math.sqrt(self.hd)
        scores = scores.masked_fill(~torch.ones(s, t, dtype=torch.bool).tril(t - s), float("-inf"))
        o = torch.softmax(scores, -1) @ pv
        return self.head(x + self.o(o.transpose(1, 2).reshape(b, s, -1))), pk, pv


def test_onnx_past_present_decoder_imports(tmp_path):
    """An ONNX decoder step with past/present key-value inputs and outputs
    imports (the present is a concat, attention over it causal and aligned
    to its end) and computes torch's logits and presents on the CPU
    reference."""
    pytest.importorskip("onnx")
    from sparse_opt.importers.onnx_importer import import_onnx
    from sparse_opt.reference import run_reference
    torch.manual_seed(0)
    model = PastPresentStep().eval()
    ids, pk, pv = torch.tensor([[7]]), torch.randn(1, 2, 5, 16), torch.randn(1, 2, 5, 16)
    path = tmp_path / "step.onnx"
    torch.onnx.export(model, (ids, pk, pv), str(path), input_names=["input_ids", "past_key", "past_value"],
                      output_names=["logits", "present_key", "present_value"], opset_version=14)
    text = import_onnx(str(path))
    assert "sgpu.attention" in text and "causal" in text and text.count("tensor.concat") == 2
    import onnx
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    got = run_reference(text, [ids.numpy(), pk.numpy(), pv.numpy()], inits)
    with torch.no_grad():
        want = model(ids, pk, pv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), atol=TOL, rtol=TOL)


def test_materialize_keeps_ties_and_tables():
    """models.materialize: a meta-built GPT-2-style model allocated on the
    CPU keeps its head tied to the embedding, its RoPE tables and causal
    mask as built, and zeroed caches."""
    c = models.Config(vocab=32, d=32, layers=1, heads=2, kv_heads=2, ffn=64, seq=8, style="gpt2", act="gelu",
                      cache_batch=2, cache_len=16)
    built = models.Decoder(c)
    m = models.init_weights(models.materialize(models.Decoder(c, device="meta"), "cpu", torch.float16))
    assert m.head.weight is m.embed.weight and m.embed.weight.dtype == torch.float16
    assert torch.equal(m.mask, built.mask) and torch.allclose(m.rope_cos.float(), built.rope_cos, atol=1e-3)
    assert not m.layers[0].attn.k_cache.any() and m.layers[0].attn.k_cache.shape == (2, 2, 16, 16)


def test_reference_backend_refuses_cuda_graphs(exported):
    model, out, _ = exported
    with pytest.raises(sdec.DecoderError, match="cuda_graphs applies to the cuda backend"):
        sdec.load_decoder(out, model, backend="reference", cuda_graphs=True)


def test_sparse_weights_prepared_once_across_programs(tmp_path):
    """The prefill and decode programs of a 2:4 decoder compress each weight
    with the same kernels into the same layouts: every decode program's
    prepare stage is the prefill's, so load_decoder binds them to the
    prefill's compressed weights (runtime.Program.prepare_shareable, the
    parse-level form of that match). A program of another model does not
    match, and says why."""
    pytest.importorskip("sparse_opt.compiler")
    from sparse_opt import runtime
    c = models.Config(vocab=64, d=128, layers=1, heads=2, kv_heads=1, ffn=256, seq=16,
                      cache_batch=2, cache_len=32)
    model = models.Decoder(c, device="meta")
    sparsity = {n: "2:4" for n in models.block_linear_names(model)}
    sdec.export(model, tmp_path / "a", prefill=(2, 16), decode_batches=(1, 2), dtype="bf16", sparsity=sparsity)
    progs = {n: runtime.parse(tmp_path / "a" / n) for n in ("prefill", "decode_b1", "decode_b2")}
    for name in ("decode_b1", "decode_b2"):
        ok, why = progs[name].prepare_shareable(progs["prefill"])
        assert ok, why
    other = models.Config(**{**c.__dict__, "ffn": 512})
    sdec.export(models.Decoder(other, device="meta"), tmp_path / "b", prefill=(2, 16), decode_batches=(1,),
                dtype="bf16", sparsity=sparsity)
    ok, why = runtime.parse(tmp_path / "b" / "decode_b1").prepare_shareable(progs["prefill"])
    assert not ok and why
