"""sparse_opt.kv_cache: a KV cache added to cache-less causal decoders
(plain `forward(ids)`), in torch and through export / load_decoder on the
CPU reference backend, against the model's own full forward pass; and the
models it refuses, with their reasons."""
import math
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from sparse_opt import decoder as sdec  # noqa: E402
from sparse_opt.kv_cache import CacheError, add_kv_cache, meta_copy  # noqa: E402

TOL = 2e-4  # f32 logits: the same math in other summation orders


def _math_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's math, for torch before 2.0 (the
    models below are written against torch 2's API)."""
    if enable_gqa:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if is_causal:
        attn_mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf"))
    return torch.softmax(s, -1) @ v


@pytest.fixture(autouse=True)
def sdpa(monkeypatch):
    if not hasattr(F, "scaled_dot_product_attention"):
        monkeypatch.setattr(F, "scaled_dot_product_attention", _math_sdpa, raising=False)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class Block(torch.nn.Module):
    def __init__(self, d, heads, kv_heads, gqa):
        super().__init__()
        self.h, self.kv, self.hd, self.gqa = heads, kv_heads, d // heads, gqa
        self.norm = torch.nn.RMSNorm(d) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.up = torch.nn.Linear(d, 2 * d, bias=False)
        self.down = torch.nn.Linear(2 * d, d, bias=False)

    def forward(self, x, cos, sin, **sdpa_args):
        b, s, _ = x.shape
        h = self.norm(x)
        q = self.q(h).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if self.gqa:
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **sdpa_args)
        else:  # HF's repeat_kv before attention
            rep = self.h // self.kv
            k = k[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.h, s, self.hd)
            v = v[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.h, s, self.hd)
            o = F.scaled_dot_product_attention(q, k, v, **sdpa_args)
        x = x + self.o(o.transpose(1, 2).reshape(b, s, -1))
        return x + self.down(F.relu(self.up(x)))


class PlainLlama(torch.nn.Module):
    """A cache-less causal decoder: forward(ids) over the whole sequence,
    RoPE tables gathered by torch.arange(seq_len)."""

    def __init__(self, vocab=48, d=32, heads=4, kv_heads=2, layers=2, max_len=64, gqa=True, positions="arange",
                 causal=True):
        super().__init__()
        self.positions, self.causal = positions, causal
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads, kv_heads, gqa) for _ in range(layers))
        self.head = torch.nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1), persistent=False)
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1), persistent=False)

    def forward(self, ids):
        s = ids.shape[1]
        if self.positions == "arange":
            pos = torch.arange(s, device=ids.device)
            cos, sin = self.cos[pos], self.sin[pos]
        else:  # sliced tables: no positions to substitute
            cos, sin = self.cos[:s], self.sin[:s]
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, is_causal=self.causal)
        return self.head(x)


class PlainGPT2(torch.nn.Module):
    """Learned position embeddings of torch.arange(0, seq_len), multi-head
    attention."""

    def __init__(self, vocab=48, d=32, heads=4, max_len=64):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.wte, self.wpe = torch.nn.Embedding(vocab, d), torch.nn.Embedding(max_len, d)
        self.ln = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(3))
        self.proj = torch.nn.Linear(d, d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        b, s = ids.shape
        x = self.wte(ids) + self.wpe(torch.arange(0, s, dtype=torch.long))
        q, k, v = (p(self.ln(x)).view(b, s, self.h, self.hd).transpose(1, 2) for p in self.qkv)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / math.sqrt(self.hd))
        return self.head(x + self.proj(o.transpose(1, 2).reshape(b, s, -1)))


def _model(cls=PlainLlama, **kw):
    torch.manual_seed(0)
    return cls(**kw).eval()


@pytest.mark.parametrize("kw", [{"gqa": True}, {"gqa": False}], ids=["enable_gqa", "repeat_kv"])
def test_torch_steps_match_the_full_forward(kw):
    """In torch: a prefill then decode steps through the added cache give
    the full forward pass's logits at every step; the caches hold the heads
    the attention receives."""
    model = _model(**kw)
    dec = add_kv_cache(model, max_batch=2, capacity=16)
    assert dec.layers == 2 and dec.k_cache_0.shape == (2, 2 if kw["gqa"] else 4, 16, 8)
    ids = torch.randint(0, 48, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = model(ids)
        dec.decoder_mode = "prefill"
        got = [dec(ids[:, :5], torch.arange(5))[:, -1]]
        dec.decoder_mode = "decode"
        got += [dec(ids[:, t:t + 1], torch.tensor([t]))[:, -1] for t in range(5, 9)]
    for i, g in enumerate(got):
        np.testing.assert_allclose(g.numpy(), want[:, 4 + i].numpy(), atol=TOL, rtol=TOL)


@pytest.mark.parametrize("cls", [PlainLlama, PlainGPT2], ids=["llama", "gpt2"])
def test_export_with_added_cache_decodes_on_the_reference(cls, tmp_path):
    """export(..., cache=...) adds the cache to the cache-less model: the
    programs keep one cache pair per layer as state, the positions shared by
    the batch; load_decoder with the plain module adds it again; a prefill
    plus 8 decode steps match the full forward pass; greedy generate
    matches torch's greedy loop over the full forward."""
    pytest.importorskip("sparse_opt.compiler")
    model = _model(cls)
    m = sdec.export(model, tmp_path, prefill=(2, 6), decode_batches=(1, 2), compile=False,
                    cache={"max_batch": 2, "capacity": 20})
    assert m["added_cache"] == {"max_batch": 2, "capacity": 20}
    assert {p["positions"] for p in m["programs"].values()} == {"shared"}
    layers = 2 if cls is PlainLlama else 1
    assert len(m["state"]) == 2 * layers
    text = (tmp_path / "decode_b2" / "model.mlir").read_text()
    assert text.count("sgpu.cache_update") == 2 * layers
    assert text.count("sgpu.attention") == text.count("positions(") == layers
    dec = sdec.load_decoder(tmp_path, model, backend="reference")
    ids = torch.randint(0, 48, (2, 14), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = model(ids)
    got = [dec.prefill(ids[:, :6])] + [dec.decode(ids[:, t]) for t in range(6, 14)]
    for i, g in enumerate(got):
        np.testing.assert_allclose(g.numpy(), want[:, 5 + i].numpy(), atol=TOL, rtol=TOL)
    seq = ids[:1, :4]
    with torch.no_grad():
        for _ in range(5):
            seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], 1)
    assert dec.generate(ids[:1, :4], max_new_tokens=5).tolist() == seq[:, 4:].tolist()


def test_meta_module_exports(tmp_path):
    """A meta-device module exports with an added cache (no check without
    weights, no cache memory)."""
    pytest.importorskip("sparse_opt.compiler")
    model = meta_copy(PlainLlama().eval())
    assert all(p.is_meta for p in model.parameters())
    m = sdec.export(model, tmp_path, prefill=(1, 8), decode_batches=(1,), compile=False,
                    cache={"max_batch": 4, "capacity": 4096})
    assert m["capacity"] == 4096 and m["max_batch"] == 4


def test_refused_models():
    """What cannot be seen from the calls is an error with the reason."""
    with pytest.raises(CacheError, match="is_causal=False"):
        add_kv_cache(_model(causal=False), 1, 8)
    with pytest.raises(CacheError, match=r"no torch.arange\(seq_len\)"):
        add_kv_cache(_model(positions="slice"), 1, 8)

    class NoAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(8, 4)

        def forward(self, ids):
            return self.e(ids)

    with pytest.raises(CacheError, match="no attention call"):
        add_kv_cache(NoAttention(), 1, 8)

    class Masked(PlainGPT2):
        def forward(self, ids):
            b, s = ids.shape
            x = self.wte(ids) + self.wpe(torch.arange(s))
            q = self.qkv[0](x).view(b, s, self.h, self.hd).transpose(1, 2)
            mask = torch.ones(s, s, dtype=torch.bool).tril()
            return self.head(F.scaled_dot_product_attention(q, q, q, attn_mask=mask).transpose(1, 2)
                             .reshape(b, s, -1))

    with pytest.raises(CacheError, match="a mask"):
        add_kv_cache(_model(Masked), 1, 8)
    with pytest.raises(CacheError, match="must be positive"):
        add_kv_cache(_model(), 0, 8)


def test_wrong_positions_fail_the_check():
    """A model whose positions do not follow torch.arange(seq_len) (here:
    an arange it offsets by one) is caught by the prefill-plus-decode check
    against its full forward pass."""

    class Offset(PlainGPT2):
        def forward(self, ids):
            b, s = ids.shape
            x = self.wte(ids) + self.wpe(torch.arange(s)) + self.wpe.weight[s % 2]
            q, k, v = (p(self.ln(x)).view(b, s, self.h, self.hd).transpose(1, 2) for p in self.qkv)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.head(x + self.proj(o.transpose(1, 2).reshape(b, s, -1)))

    with pytest.raises(CacheError, match="differ from the full forward pass"):
        add_kv_cache(_model(Offset), 1, 8)
    with pytest.raises(sdec.DecoderError, match="differ from the full forward pass"):
        sdec.export(_model(Offset), "/nonexistent-never-written", prefill=(1, 4), compile=False,
                    cache={"max_batch": 1, "capacity": 8})
    with pytest.raises(sdec.DecoderError, match="cache takes max_batch and capacity"):
        sdec.export(_model(), "/nonexistent-never-written", prefill=(1, 4), compile=False,
                    cache={"max_batch": 1})


def test_command_line_add_cache(tmp_path):
    """python -m sparse_opt export --add-cache BxT on a cache-less model,
    then generate on the reference backend: torch's greedy continuation of
    the full forward pass; a malformed --add-cache is an error."""
    pytest.importorskip("sparse_opt.compiler")
    from conftest import run_python
    here = pathlib.Path(__file__).resolve().parent
    (tmp_path / "plain.py").write_text(
        "import sys\nsys.path.insert(0, %r)\nimport torch\nimport test_kv_cache as t\n"
        "if not hasattr(torch.nn.functional, 'scaled_dot_product_attention'):\n"
        "    torch.nn.functional.scaled_dot_product_attention = t._math_sdpa\n"
        "def make():\n    return t._model()\n" % str(here))
    spec, out = str(tmp_path / "plain.py") + ":make", str(tmp_path / "dec")
    main = "import sys; from sparse_opt.__main__ import main; sys.exit(main(%r))"
    r = run_python(main % ["export", spec, "-o", out, "--prefill", "1x4", "--add-cache", "2x16", "--no-compile"])
    assert r.returncode == 0, r.stderr
    assert "cache 2 sequences x 16 positions" in r.stdout
    r = run_python(main % ["generate", out, "--model", spec, "--prompt", "3,1,4", "--max-new-tokens", "4",
                           "--backend", "reference"])
    assert r.returncode == 0, r.stderr
    seq = torch.tensor([[3, 1, 4]])
    model = _model()
    with torch.no_grad():
        for _ in range(4):
            seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], 1)
    assert r.stdout.strip() == ",".join(str(int(x)) for x in seq[0, 3:])
    r = run_python(main % ["export", spec, "-o", out, "--add-cache", "16", "--no-compile"])
    assert r.returncode == 1 and "--add-cache is MAX_BATCHxCAPACITY" in r.stderr
