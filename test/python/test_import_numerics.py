"""Imported models compute what torch computes: each shared test model is
imported (torch.fx and ONNX; weights as params, the default, fed with the
module's parameters and buffers or the ONNX initializers by name, and as
constants), run on the CPU through the reference pipeline (sgpu-reference +
mlir-runner, f32) and compared with the torch module's output on the same
input."""
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import models  # noqa: E402
from reference_runner import run_reference  # noqa: E402

RTOL, ATOL = 2e-4, 2e-5


def cases():
    torch.manual_seed(0)
    x2 = torch.randn(2, 8, 64)
    ids = torch.randint(0, 128, (1, 16))
    return [
        ("mlp", models.MLP(), (x2,)),
        ("gated_ffn", models.GatedFFN(), (x2,)),
        ("llama", models.LlamaDecoder(), (ids,)),
    ]


def fx_text(model, inputs, weights):
    """(MLIR text, {param name: tensor})."""
    from sparse_opt.importers.fx import import_fx
    state = dict(list(model.named_parameters()) + list(model.named_buffers()))
    return import_fx(model, inputs, weights=weights), state


def onnx_text(model, inputs, weights):
    onnx = pytest.importorskip("onnx")
    from sparse_opt.importers.onnx_importer import import_onnx
    buf = io.BytesIO()
    torch.onnx.export(model, inputs, buf, opset_version=14, do_constant_folding=True,
                      input_names=["x%d" % i for i in range(len(inputs))])
    mp = onnx.load_from_string(buf.getvalue())
    return import_onnx(mp, weights=weights), {t.name: onnx.numpy_helper.to_array(t) for t in mp.graph.initializer}


@pytest.mark.parametrize("weights", ["params", "constants"])
@pytest.mark.parametrize("frontend", ["fx", "onnx"])
@pytest.mark.parametrize("name", ["mlp", "gated_ffn", "llama"])
def test_imported_model_matches_torch(frontend, name, weights):
    model, inputs = next((m, i) for n, m, i in cases() if n == name)
    model.eval()
    with torch.no_grad():
        want = model(*inputs).numpy()
    text, params = (fx_text if frontend == "fx" else onnx_text)(model, inputs, weights)
    assert ("sgpu.param" in text) == (weights == "params")
    (got,) = run_reference(text, [t.numpy() for t in inputs], params=params)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
