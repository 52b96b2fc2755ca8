"""A compiled linear_relu_24 run on the GPU through sparse_opt.runtime and
compared with torch (GPU machines only).

Compilation happens elsewhere: SPARSEOPT_GPU_ARTIFACT names the artifact
directory of examples/linear_relu_24.mlir compiled with sgpu-compile. The
reference decompresses the weight constants of that directory with the
format library (sparseopt_sparse24_decompress). Skipped without the
variable, without torch with CUDA, or when the runtime finds no driver or
device.
"""
import ctypes
import os

import numpy as np
import pytest

from sparse_opt import _libs, runtime

ARTIFACT = os.environ.get("SPARSEOPT_GPU_ARTIFACT")


def _torch_with_cuda():
    if not ARTIFACT:
        return None  # do not pay for importing torch when nothing will run
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _torch_with_cuda()
pytestmark = pytest.mark.skipif(
    torch is None, reason="needs SPARSEOPT_GPU_ARTIFACT and torch with CUDA")


def decompressed_weight(artifact, rows, cols):
    """The rows x cols fp16 weight rebuilt from the artifact's 2:4 values and
    metadata constants (told apart by their sizes)."""
    lib = ctypes.CDLL(str(_libs.find(_libs.FORMATS)))
    i64, p = ctypes.c_int64, ctypes.c_void_p
    lib.sparseopt_sparse24_sizes.argtypes = [i64, i64, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.sparseopt_sparse24_decompress.argtypes = [p, p, i64, i64, p]
    nv, nm = i64(), i64()
    assert lib.sparseopt_sparse24_sizes(rows, cols, ctypes.byref(nv), ctypes.byref(nm)) == 0
    consts = {}
    for line in artifact.program.splitlines():
        parts = line.split()
        if parts[:1] == ["buffer"] and parts[2] == "constant":
            consts[int(parts[4])] = (artifact.directory / parts[3]).read_bytes()
    values = np.frombuffer(consts[nv.value * 2], dtype=np.uint16).copy()
    meta = np.frombuffer(consts[nm.value * 4], dtype=np.uint32).copy()
    dense = np.zeros((rows, cols), dtype=np.uint16)
    assert lib.sparseopt_sparse24_decompress(values.ctypes.data, meta.ctypes.data, rows, cols,
                                             dense.ctypes.data) == 0
    return dense.view(np.float16)


@pytest.fixture(scope="module")
def program():
    try:
        prog = runtime.load(ARTIFACT)
    except (runtime.NoDriverError, runtime.NoDeviceError) as e:
        pytest.skip(str(e))
    yield prog
    prog.close()


def reference(prog, x):
    (n, k) = prog.signature.outputs[0].shape[1], prog.signature.inputs[0].shape[1]
    w = torch.from_numpy(decompressed_weight(prog.artifact, n, k)).cuda()
    return torch.relu(x.float() @ w.float().T)


def test_matches_torch(program):
    m, k = program.signature.inputs[0].shape
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, generator=g, device="cuda", dtype=torch.float16)
    y = program(x)
    torch.cuda.synchronize()
    assert y.shape == program.signature.outputs[0].shape and y.dtype == torch.float16
    ref = reference(program, x)
    err = (y.float() - ref).abs().max().item()
    assert err <= 2e-3 * ref.abs().max().item(), err


def test_outputs_streams_and_strided_inputs(program):
    m, k = program.signature.inputs[0].shape
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    y = program(x)
    # Given outputs, a side stream, and a non-contiguous view of the same x.
    out = torch.full_like(y, float("nan"))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    strided = x.t().contiguous().t()
    assert not strided.is_contiguous()
    assert program(strided, outputs=out, stream=side) is out
    side.synchronize()
    torch.cuda.synchronize()
    assert torch.equal(out, y)


def test_wrong_arguments_are_rejected(program):
    m, k = program.signature.inputs[0].shape
    with pytest.raises(runtime.SignatureError, match="element type f32, expected f16"):
        program(torch.zeros(m, k, device="cuda"))
    with pytest.raises(runtime.SignatureError, match="shape"):
        program(torch.zeros(m + 1, k, device="cuda", dtype=torch.float16))
    with pytest.raises(runtime.SignatureError, match="is on cpu"):
        program(torch.zeros(m, k, dtype=torch.float16))
