"""Programs run on the GPU through sparse_opt.runtime and compared with torch
(GPU machines only).

A compiled linear_relu_24: compilation happens elsewhere,
SPARSEOPT_GPU_ARTIFACT names the artifact directory of
examples/linear_relu_24.mlir compiled with sgpu-compile. The reference
decompresses the weight constants of that directory with the format library
(sparseopt_sparse24_decompress). Skipped without the variable, without torch
with CUDA, or when the runtime finds no driver or device.

Gemm lines (cuBLASLt): programs written here by hand, compared with an f32
torch reference. Skipped when the runtime finds no driver or device (torch is
then not imported) or without torch with CUDA.
"""
import ctypes
import json
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
needs_artifact = pytest.mark.skipif(
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


@needs_artifact
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


@needs_artifact
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


@needs_artifact
def test_wrong_arguments_are_rejected(program):
    m, k = program.signature.inputs[0].shape
    with pytest.raises(runtime.SignatureError, match="element type f32, expected f16"):
        program(torch.zeros(m, k, device="cuda"))
    with pytest.raises(runtime.SignatureError, match="shape"):
        program(torch.zeros(m + 1, k, device="cuda", dtype=torch.float16))
    with pytest.raises(runtime.SignatureError, match="is on cpu"):
        program(torch.zeros(m, k, dtype=torch.float16))


# ---------------------------------------------------------------------------
# gemm lines
# ---------------------------------------------------------------------------

_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
# Largest error allowed, relative to the largest reference magnitude, by
# output type: rounding the f32 result to bf16 (8-bit mantissa) or f16
# (11-bit) dominates; in f32 only the order of the f32 sums differs.
_TOLERANCE = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-4}


def write_gemm_artifact(directory, m, n, k, dtype, out, bias=None, relu=False):
    """An artifact of one gemm line: inputs x [m, k] and w [n, k] (and bias
    [n] of type `bias`), output y [m, n]."""
    inputs = [([m, k], dtype), ([n, k], dtype)] + ([([n], bias)] if bias else [])
    lines = ["sparseopt-program 2", "# written by test_gpu_program.py"]
    for i, (shape, t) in enumerate(inputs):
        count = shape[0] * (shape[1] if len(shape) > 1 else 1)
        lines.append("buffer %d input %d %d" % (10 + i, i, count * _BYTES[t]))
    lines.append("buffer 20 output 0 %d" % (m * n * _BYTES[out]))
    gemm = "gemm m=%d n=%d k=%d in=%s out=%s x=b10 w=b11 y=b20" % (m, n, k, dtype, out)
    if bias:
        gemm += " bias=b12:%s" % bias
    if relu:
        gemm += " act=relu"
    lines.append(gemm)
    directory.mkdir(parents=True, exist_ok=True)
    lines.append("end")
    (directory / "program.txt").write_text("\n".join(lines) + "\n")
    spec = lambda shape, t: {"shape": shape, "dtype": t}
    (directory / "signature.json").write_text(json.dumps({
        "function": "gemm",
        "inputs": [spec(shape, t) for shape, t in inputs],
        "outputs": [spec([m, n], out)]}))
    return directory


def gemm_reference(t, x, w, bias, relu):
    ref = x.float() @ w.float().T
    if bias is not None:
        ref = ref + bias.float()
    return t.relu(ref) if relu else ref


def relative_error(t, y, ref):
    return ((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


# (m, n, k, in, out, bias, relu): both input types at a decode-like shape and
# at one that is a multiple of nothing, the epilogues, f32 outputs and biases.
GEMMS = [
    (16, 4096, 1024, "f16", "f16", None, False),
    (16, 4096, 1024, "bf16", "bf16", None, False),
    (3, 40, 24, "f16", "f16", None, False),
    (3, 40, 24, "bf16", "bf16", None, False),
    (16, 4096, 1024, "bf16", "bf16", "bf16", True),
    (3, 40, 24, "f16", "f16", "f16", True),
    (3, 40, 24, "bf16", "f32", "f32", False),
    (16, 4096, 1024, "f16", "f32", None, True),
]


@pytest.mark.parametrize("m,n,k,dtype,out,bias,relu", GEMMS,
                         ids=["%dx%dx%d-%s-%s%s%s" % (g[0], g[1], g[2], g[3], g[4],
                                                      "-bias_" + g[5] if g[5] else "",
                                                      "-relu" if g[6] else "")
                              for g in GEMMS])
def test_gemm_matches_torch(cuda_torch, tmp_path, m, n, k, dtype, out, bias, relu):
    t = cuda_torch
    tdt = {"f16": t.float16, "bf16": t.bfloat16, "f32": t.float32}
    prog = runtime.load(write_gemm_artifact(tmp_path / "gemm", m, n, k, dtype, out, bias, relu))
    with prog:
        g = t.Generator(device="cuda").manual_seed(m * n + k)
        x = t.randn(m, k, generator=g, device="cuda", dtype=tdt[dtype])
        w = t.randn(n, k, generator=g, device="cuda", dtype=tdt[dtype]) / k ** 0.5
        args = [x, w]
        b = None
        if bias:
            b = t.randn(n, generator=g, device="cuda", dtype=tdt[bias])
            args.append(b)
        y = prog(*args)
        t.cuda.synchronize()
        assert y.shape == (m, n) and y.dtype == tdt[out]
        ref = gemm_reference(t, x, w, b, relu)
        err = relative_error(t, y, ref)
        assert err <= _TOLERANCE[out], (err, _TOLERANCE[out])
        if relu:
            assert (y >= 0).all()


def test_gemm_runs_in_order_and_in_a_cuda_graph(cuda_torch, tmp_path):
    """Two gemms chained through a temp buffer (file order matters), run
    captured in a CUDA graph and replayed on new inputs: a run allocates and
    synchronizes nothing."""
    t = cuda_torch
    m, n, k, h = 8, 256, 128, 512
    d = tmp_path / "chain"
    d.mkdir()
    (d / "program.txt").write_text(
        "sparseopt-program 2\n"
        "buffer 0 input 0 %d\n"  # x [m, k] bf16
        "buffer 1 input 1 %d\n"  # w1 [h, k] bf16
        "buffer 2 input 2 %d\n"  # b1 [h] bf16
        "buffer 3 input 3 %d\n"  # w2 [n, h] bf16
        "buffer 4 temp %d\n"     # hidden [m, h] bf16
        "buffer 5 output 0 %d\n"  # y [m, n] f32
        "gemm m=%d n=%d k=%d in=bf16 out=bf16 x=b0 w=b1 y=b4 bias=b2:bf16 act=relu\n"
        "gemm m=%d n=%d k=%d in=bf16 out=f32 x=b4 w=b3 y=b5\n"
        "end\n"
        % (m * k * 2, h * k * 2, h * 2, n * h * 2, m * h * 2, m * n * 4, m, h, k, m, n, h))
    (d / "signature.json").write_text(json.dumps({
        "function": "chain",
        "inputs": [{"shape": s, "dtype": "bf16"} for s in ([m, k], [h, k], [h], [n, h])],
        "outputs": [{"shape": [m, n], "dtype": "f32"}]}))
    prog = runtime.load(d)
    with prog:
        def make(seed):
            g = t.Generator(device="cuda").manual_seed(seed)
            r = lambda *s: t.randn(*s, generator=g, device="cuda", dtype=t.bfloat16)
            return [r(m, k), r(h, k) / k ** 0.5, r(h), r(n, h) / h ** 0.5]

        def reference(x, w1, b1, w2):
            hidden = gemm_reference(t, x, w1, b1, True).to(t.bfloat16)
            return gemm_reference(t, hidden, w2, None, False)

        inputs = make(1)
        y = t.empty(m, n, device="cuda", dtype=t.float32)
        prog(*inputs, outputs=y)  # warm-up outside the capture
        t.cuda.synchronize()
        assert relative_error(t, y, reference(*inputs)) <= 1e-2

        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            prog(*inputs, outputs=y)
        for seed in (2, 3):
            for dst, src in zip(inputs, make(seed)):
                dst.copy_(src)
            y.fill_(float("nan"))
            graph.replay()
            t.cuda.synchronize()
            assert relative_error(t, y, reference(*inputs)) <= 1e-2, seed


# ---------------------------------------------------------------------------
# params: bound once, prepared at bind time, checked
# ---------------------------------------------------------------------------

def write_param_artifact(directory, m, n, k, name=None):
    """x [m, k] bf16 (input 0) and W [n, k] bf16 (argument 1, param 0, named
    `name` in signature.json) -> y = x W^T [m, n] f32. The prepare stage
    copies W into a temp (a gemm with the identity) that the run reads, and
    writes W[0, 0] (times 1.0, as f32 bits) into the buffer of a 2:4 check:
    the check passes while W[0, 0] is 0 and reports a row and group
    otherwise."""
    directory.mkdir(parents=True)
    eye = np.zeros((k, k), dtype=np.uint16)
    np.fill_diagonal(eye, 0x3F80)  # bf16 1.0
    (directory / "eye.bin").write_bytes(eye.tobytes())
    (directory / "one.bin").write_bytes(np.array([0x3F80], dtype=np.uint16).tobytes())
    (directory / "program.txt").write_text(
        "sparseopt-program 2\n"
        "buffer 0 input 0 %d\n"
        "buffer 1 param 0 %d\n"
        "buffer 2 constant eye.bin %d\n"
        "buffer 3 constant one.bin 2\n"
        "buffer 4 temp %d\n"
        "buffer 5 temp 4\n"
        "buffer 6 output 0 %d\n"
        "stage prepare\n"
        "gemm m=%d n=%d k=%d in=bf16 out=bf16 x=b1 w=b2 y=b4\n"
        "gemm m=1 n=1 k=1 in=bf16 out=f32 x=b3 w=b1 y=b5\n"
        "check b5 param 0 pattern 2:4 groups %d\n"
        "stage run\n"
        "gemm m=%d n=%d k=%d in=bf16 out=f32 x=b0 w=b4 y=b6\n"
        "end\n"
        % (m * k * 2, n * k * 2, k * k * 2, n * k * 2, m * n * 4, n, k, k, k // 4, m, n, k))
    (directory / "signature.json").write_text(json.dumps({
        "function": "linear",
        "inputs": [{"shape": [m, k], "dtype": "bf16"},
                   dict({"shape": [n, k], "dtype": "bf16"}, **({"name": name} if name else {}))],
        "outputs": [{"shape": [m, n], "dtype": "f32"}],
        "params": [1]}))
    return directory


def test_params_are_bound_once_prepared_and_checked(cuda_torch, tmp_path):
    t = cuda_torch
    m, n, k = 8, 32, 64
    prog = runtime.load(write_param_artifact(tmp_path / "linear", m, n, k))
    with prog:
        assert prog.param_bytes == [n * k * 2] and prog.input_bytes == [m * k * 2]
        binds = []
        real_bind = prog._bind
        prog._bind = lambda ptrs, *rest: (binds.append(list(ptrs)), real_bind(ptrs, *rest))[1]

        g = t.Generator(device="cuda").manual_seed(5)
        x = t.randn(m, k, generator=g, device="cuda", dtype=t.bfloat16)
        w = t.randn(n, k, generator=g, device="cuda", dtype=t.bfloat16)
        w[0, 0] = 0
        ref = gemm_reference(t, x, w, None, False)

        y = prog(x, w)  # the first call binds
        t.cuda.synchronize()
        assert binds == [[w.data_ptr()]] and prog.bound
        assert relative_error(t, y, ref) <= _TOLERANCE["f32"]
        assert t.equal(prog(x, w), y)  # same weight: no new bind
        assert len(binds) == 1

        # Changed in place: the prepared copy is stale until bound again.
        w.mul_(2)
        assert t.equal(prog(x, w), y) and len(binds) == 1
        prog.bind([w.data_ptr()], stream=t.cuda.current_stream().cuda_stream)
        assert relative_error(t, prog(x, w), 2 * ref) <= _TOLERANCE["f32"]

        # A non-contiguous weight is copied once; the copy lives while bound.
        strided = w.t().contiguous().t()
        assert not strided.is_contiguous()
        y2 = prog(x, strided)
        assert len(binds) == 3 and len(prog._bound_copies) == 1
        assert binds[-1] == [prog._bound_copies[0].data_ptr()]
        assert relative_error(t, y2, 2 * ref) <= _TOLERANCE["f32"]
        prog(x, strided)
        assert len(binds) == 3

        # A weight that breaks its declared 2:4 sparsity. The check reads
        # 1.0f = 0x3F800000 = 1065353216: flat 2147483647 - 1065353216 =
        # 1082130431 = 67633151 * 16 + 15 with k / 4 = 16 groups per row.
        bad = w.clone()
        bad[0, 0] = 1.0
        with pytest.raises(runtime.WeightError) as e:
            prog(x, bad)
        assert e.value.status_name == "SPARSEOPT_ERROR_WEIGHT"
        assert e.value.message == (
            "sparseopt_program_bind: param 0 breaks its declared 2:4 sparsity: row 67633151, "
            "group 15 (columns 60..63) has more than 2 nonzeros")
        assert not prog.bound
        with pytest.raises(runtime.InvalidArgumentError, match="bind them first"):
            prog.run([x.data_ptr()], [y.data_ptr()])
        # The next call binds again.
        assert relative_error(t, prog(x, w), 2 * ref) <= _TOLERANCE["f32"]
        assert binds[-1] == [w.data_ptr()]


def test_params_bound_by_name(cuda_torch, tmp_path):
    """bind_module / bind_state: the param named "fc.weight" takes the
    module's tensor of that name, cast to bf16, moved to the GPU and made
    contiguous (kept alive by the program); calls then take the input only."""
    t = cuda_torch
    m, n, k = 8, 32, 64
    prog = runtime.load(write_param_artifact(tmp_path / "linear", m, n, k, name="fc.weight"))
    with prog:
        g = t.Generator().manual_seed(7)
        net = t.nn.Module()
        net.fc = t.nn.Linear(k, n, bias=False)
        with t.no_grad():
            net.fc.weight.copy_(t.randn(n, k, generator=g))
            net.fc.weight[0, 0] = 0  # the program's check reads W[0, 0]
        x = t.randn(m, k, generator=g).to("cuda", t.bfloat16)
        w = net.fc.weight.detach().to("cuda", t.bfloat16)
        ref = gemm_reference(t, x, w, None, False)

        prog.bind_module(net)  # an f32 CPU parameter: cast and copied
        assert prog.bound and len(prog._bound_copies) == 1
        bound = prog._bound_copies[0]
        assert bound.dtype == t.bfloat16 and bound.is_cuda and bound.is_contiguous()
        y = prog(x)
        t.cuda.synchronize()
        assert relative_error(t, y, ref) <= _TOLERANCE["f32"]
        with pytest.raises(runtime.SignatureError, match="the program takes 2 inputs, got 3"):
            prog(x, w, x)

        # A state dict; a tensor already as the program binds it is used as is.
        prog.bind_state({"fc.weight": w})
        assert prog._bound_copies[0].data_ptr() == w.data_ptr()
        assert relative_error(t, prog(x), ref) <= _TOLERANCE["f32"]
        # A strided tensor is copied contiguous.
        prog.bind_state({"fc.weight": w.t().contiguous().t()})
        assert relative_error(t, prog(x), ref) <= _TOLERANCE["f32"]

        with pytest.raises(runtime.SignatureError, match=r"'fc\.weight' is not among the given tensors; did you "
                                                         r"mean 'fc\.weights'\?"):
            prog.bind_state({"fc.weights": w})
        with pytest.raises(runtime.SignatureError, match=r"'fc\.weight' has shape \[64, 32\], the program "
                                                         r"declares \[32, 64\]"):
            prog.bind_state({"fc.weight": w.t()})
        bad = w.clone()
        bad[0, 0] = 1.0
        with pytest.raises(runtime.WeightError, match="param 0 breaks its declared 2:4 sparsity"):
            prog.bind_state({"fc.weight": bad})
        assert not prog.bound
        with pytest.raises(runtime.SignatureError, match="not bound by name"):
            prog(x)
