"""CPU reference semantics of sgpu.rms_norm, sgpu.layer_norm,
sgpu.attention, sgpu.embedding and sgpu.rope against numpy (f32, through
mlir-runner), and the runner feeding params by name."""
import numpy as np
import pytest

from reference_runner import run_reference
from sparse_opt.importers.emitter import Emitter

RTOL, ATOL = 1e-5, 1e-5


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_rms_norm_and_layer_norm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    w = rng.standard_normal(8).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    e = Emitter()
    xv = e.argument(x.shape, "f32", "x")
    wv = e.constant(w.tobytes(), (8,), "f32", "w")
    bv = e.constant(bias.tobytes(), (8,), "f32", "b")
    e.returns([e.rms_norm(xv, wv, 1e-6), e.layer_norm(xv, wv, bv, 1e-5)])
    rms, ln = run_reference(e.render(), [x])
    want_rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want_ln = (x - mu) / np.sqrt(var + 1e-5) * w + bias
    np.testing.assert_allclose(rms, want_rms, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ln, want_ln, rtol=RTOL, atol=1e-4)


@pytest.mark.parametrize("causal,mask,sq,hkv", [(False, None, 5, 4), (True, None, 5, 2), (False, "bool", 3, 4),
                                                (False, "float", 5, 1), (True, None, 2, 4)])
def test_attention(causal, mask, sq, hkv):
    rng = np.random.default_rng(1)
    b, h, sk, d, dv = 2, 4, 5, 8, 6
    q = rng.standard_normal((b, h, sq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, sk, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, sk, dv)).astype(np.float32)
    e = Emitter()
    args = [e.argument(q.shape, "f32", "q"), e.argument(k.shape, "f32", "k"), e.argument(v.shape, "f32", "v")]
    inputs = [q, k, v]
    m = None
    if mask == "bool":
        m = rng.random((1, 1, sq, sk)) > 0.3
        m[..., 0] = True  # every row keeps a key
        args.append(e.argument(m.shape, "i1", "mask"))
        inputs.append(m)
    elif mask == "float":
        m = rng.standard_normal((sq, sk)).astype(np.float32)
        args.append(e.argument(m.shape, "f32", "mask"))
        inputs.append(m)
    scale = 0.3
    e.returns([e.attention(*args[:3], mask=args[3] if m is not None else None, causal=causal, scale=scale)])
    (got,) = run_reference(e.render(), inputs)
    kk, vv = np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)
    s = q @ kk.transpose(0, 1, 3, 2) * scale
    if mask == "bool":
        s = np.where(m, s, -np.inf)
    elif mask == "float":
        s = s + m
    if causal:
        keep = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
        s = np.where(keep, s, -np.inf)
    want = softmax(s) @ vv
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_softmax_and_elementwise_through_linalg():
    """linalg.softmax is decomposed (sgpu-decompose-aggregates) and lowered."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 7)).astype(np.float32)
    e = Emitter()
    xv = e.argument(x.shape, "f32", "x")
    y = e.softmax(e.unary("silu", xv), -1)
    e.returns([y])
    (got,) = run_reference(e.render(), [x])
    silu = x / (1 + np.exp(-x))
    np.testing.assert_allclose(got, softmax(silu), rtol=1e-5, atol=1e-6)


def test_embedding():
    """sgpu.embedding: rows of the table by id; an id outside [0, V) gives zeros."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((7, 5)).astype(np.float32)
    for dt, np_dt in (("i64", np.int64), ("i32", np.int32)):
        ids = np.array([[6, 0, 3], [-1, 7, 2]], np_dt)
        e = Emitter()
        iv = e.argument(ids.shape, dt, "ids")
        tv = e.param(table.shape, "f32", "embed.weight")
        e.returns([e.embedding(tv, iv)])
        text = e.render()
        assert ("sgpu.embedding %embed_weight, %ids : tensor<7x5xf32>, tensor<2x3x" + dt +
                "> -> tensor<2x3x5xf32>") in text
        (got,) = run_reference(text, [ids], params={"embed.weight": table})
        want = np.where(((ids >= 0) & (ids < 7))[..., None], table[np.clip(ids, 0, 6)], 0)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)  # (printed with 6 digits)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


@pytest.mark.parametrize("table_shape", [(1, 1, 6, 8), (2, 3, 6, 8), (1, 3, 1, 8)])
def test_rope(table_shape):
    """sgpu.rope: x * cos + rotate_half(x) * sin, tables broadcast to x."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    cos = rng.standard_normal(table_shape).astype(np.float32)
    sin = rng.standard_normal(table_shape).astype(np.float32)
    e = Emitter()
    xv, cv, sv = (e.argument(a.shape, "f32", n) for a, n in ((x, "x"), (cos, "cos"), (sin, "sin")))
    e.returns([e.rope(xv, cv, sv)])
    (got,) = run_reference(e.render(), [x, cos, sin])
    np.testing.assert_allclose(got, x * cos + rotate_half(x) * sin, rtol=RTOL, atol=ATOL)


def test_params_are_fed_by_name_with_their_declared_type():
    """run_reference feeds params after the inputs, converted to the declared
    element type (here f16, cast back to f32 in the function)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    e = Emitter()
    xv = e.argument(x.shape, "f32", "x")
    wv = e.param(w.shape, "f16", "layer.w")
    bv = e.param(b.shape, "f32", 'odd "name"')
    y = e.binary("add", e.binary("mul", xv, e.unary("cast", wv, out_dtype="f32")), bv)
    e.returns([y])
    text = e.render()
    assert '%layer_w: tensor<4xf16> {sgpu.param = "layer.w"}' in text
    assert '%odd__name_: tensor<4xf32> {sgpu.param = "odd \\"name\\""}' in text
    want = x * w.astype(np.float16).astype(np.float32) + b
    (got,) = run_reference(text, [x], params={"layer.w": w, 'odd "name"': b, "unused": x})
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    (got,) = run_reference(text, [x], params=[w, b])
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="no value for the params layer.w"):
        run_reference(text, [x], params={'odd "name"': b})
