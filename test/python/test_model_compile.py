"""Whole decoders through the compiler: the 8B-shaped Llama decoder of
bench/model/decoder.py compiles from a meta-device module (no weight bytes
read) for sm_90a, quickly and into small artifacts; the 2-layer d=256
decoders (Llama- and GPT-2-style) imported from torch.fx and ONNX compute
torch's logits on the CPU reference."""
import io
import json
import os
import pathlib
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "model"))
sys.path.insert(0, str(ROOT / "bench"))

import decoder  # noqa: E402
from reference_runner import run_reference  # noqa: E402

BUILD = pathlib.Path(os.environ.get("SPARSEOPT_BUILD_DIR", ROOT / "build"))
# The budget for compiling the 8B shape on two cores.
COMPILE_SECONDS = 60.0
ARTIFACT_BYTES = 8 << 20


def _compile(model, sparsity, out, dtype="bf16"):
    from sparse_opt.compiler import Compiler
    from sparse_opt.importers.fx import import_fx
    ids = torch.zeros(1, model.config.seq, dtype=torch.long)
    start = time.perf_counter()
    text = import_fx(model, (ids,), sparsity=sparsity, dtype=dtype, weights="params")
    with Compiler() as c:
        art = c.parse(text, filename="decoder.mlir").compile(out, chip="sm_90a")
    return art, time.perf_counter() - start


@pytest.mark.parametrize("variant", ["dense", "2:4"])
def test_llama8b_shape_compiles(variant, tmp_path):
    pytest.importorskip("sparse_opt.compiler")
    model = decoder.Decoder(decoder.LLAMA_8B, device="meta").eval()
    sparsity = {n: "2:4" for n in decoder.block_linear_names(model)} if variant != "dense" else None
    art, seconds = _compile(model, sparsity, tmp_path / "art")
    out = pathlib.Path(art.directory)
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file() and f.name != "compiled.mlir")
    record = {"variant": variant, "seconds": seconds, "artifact_bytes": size}
    log = BUILD / "test-results"
    log.mkdir(parents=True, exist_ok=True)
    with open(log / "model_compile_times.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    print("8B-shaped %s: compiled in %.1f s, %d bytes of artifacts" % (variant, seconds, size))
    assert seconds < COMPILE_SECONDS, record
    assert size < ARTIFACT_BYTES, record
    sig = json.loads((out / "signature.json").read_text())
    # Every weight is a named param (embedding, 32 x 9, final norm, head)
    # and the only input is the token ids.
    names = [i["name"] for i in sig["inputs"] if "name" in i]
    assert len(sig["inputs"]) - len(names) == 1
    assert "embed.weight" in names and "head.weight" in names
    assert "layers.31.mlp.down.weight" in names
    # The run's temporaries share an arena far below their sum; the peak
    # is the caller's weights, the program's own persistent buffers (the
    # compressed copies of sparse weights, written when the params are
    # bound) and less than 1 GiB of run-time memory (arena and logits).
    mem = sig["memory"]
    assert mem["arena"] * 20 < mem["temps_unpacked"], mem
    assert mem["peak"] < mem["params"] + mem["temps"] + (1 << 30), mem
    if variant == "dense":
        assert mem["temps"] == 0, mem
    program = (out / "program.txt").read_text().splitlines()
    kernels = {line.split()[1] for line in program if line.startswith("launch ")}
    launches = sum(line.startswith("launch ") for line in program)
    # 32 identical layers: each kernel is generated once, launched per layer.
    assert len(kernels) < 40 < launches, (len(kernels), launches)
    # Each layer's causal prefill attention is cuDNN's fused attention: an
    # `attention` line per layer, no generated attention kernel. It reads
    # the projections' layout, so no transpose runs around it: the only
    # element-wise kernel left is SwiGLU's, one per layer.
    attention = [line for line in program if line.startswith("attention ")]
    assert len(attention) == 32 and all(line.endswith(" mask=causal layout=bshd") for line in attention)
    assert not [k for k in kernels if k.startswith("sgpu_attention")]
    assert sum(line.startswith("launch sgpu_elementwise") for line in program) == 32
    # Every residual add is fused into the RMS norm after it.
    assert sum(line.startswith("launch sgpu_add_rms_norm") for line in program) == 64
    if variant == "2:4":
        assert art.sparse_mma_counts() and max(art.sparse_mma_counts().values()) > 0


def _logits(model, ids):
    with torch.no_grad():
        return model(ids).float().numpy()


@pytest.mark.parametrize("config", ["llama", "gpt2"])
def test_small_decoder_fx_matches_torch(config):
    c = decoder.SMALL if config == "llama" else decoder.SMALL_GPT2
    torch.manual_seed(0)
    model = decoder.init_weights(decoder.Decoder(c).eval(), seed=0)
    ids = torch.randint(0, c.vocab, (1, c.seq), generator=torch.Generator().manual_seed(1))
    from sparse_opt.importers.fx import import_fx
    from sparse_opt.runtime import module_state
    text = import_fx(model, (ids,), weights="params")
    params = {k: v.detach().numpy() for k, v in module_state(model).items()}
    (got,) = run_reference(text, [ids.numpy()], params=params)
    want = _logits(model, ids)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 1e-4, err


def test_small_decoder_onnx_matches_torch():
    onnx = pytest.importorskip("onnx")
    from sparse_opt.importers.onnx_importer import import_onnx
    c = decoder.SMALL
    torch.manual_seed(0)
    model = decoder.init_weights(decoder.Decoder(c).eval(), seed=0)
    ids = torch.randint(0, c.vocab, (1, c.seq), generator=torch.Generator().manual_seed(1))
    buf = io.BytesIO()
    torch.onnx.export(model, (ids,), buf, opset_version=14, input_names=["ids"])
    proto = onnx.load_from_string(buf.getvalue())
    text = import_onnx(proto, weights="constants")
    (got,) = run_reference(text, [ids.numpy()])
    want = _logits(model, ids)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 1e-4, err


def test_small_decoder_bf16_matches_torch():
    # bf16 weights and activations: the reference rounds each op's result to
    # bf16 as the GPU programs do; torch runs the same bf16 module. The
    # stated tolerance: 3e-2 of the largest logit against torch's fp32
    # forward (torch's own bf16 forward is within about 1.5e-2).
    c = decoder.SMALL
    torch.manual_seed(0)
    model = decoder.init_weights(decoder.Decoder(c).eval(), seed=0)
    ids = torch.randint(0, c.vocab, (1, c.seq), generator=torch.Generator().manual_seed(1))
    want = _logits(model, ids)
    from sparse_opt.importers.fx import import_fx
    from sparse_opt.runtime import module_state
    text = import_fx(model, (ids,), weights="params", dtype="bf16")
    # The reference prints f32: cast the logits at the end of @forward.
    params = {k: v.detach().float().numpy() for k, v in module_state(model).items()}
    text = _f32_logits(text)
    (got,) = run_reference(text, [ids.numpy()], params=params)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 3e-2, err


def _f32_logits(text):
    """`text` with @forward's 16-bit result widened to f32 (a linalg.generic
    of arith.extf before its return), which is what the reference runner
    prints."""
    import re
    m = re.search(r"(func\.func @forward\(.*?\) -> )\(?(tensor<([0-9x]+)x(bf16|f16)>)\)?( \{)", text)
    assert m, "no single-result @forward"
    low, shape, et = m.group(2), m.group(3), m.group(4)
    wide = "tensor<%sxf32>" % shape
    ret = re.compile(r"return (%[\w.]+) : " + re.escape(low))
    r = list(ret.finditer(text, m.end()))[0]
    ds = ", ".join("d%d" % i for i in range(len(shape.split("x"))))
    identity = "affine_map<(%s) -> (%s)>" % (ds, ds)
    widen = (
        "%%f32_empty = tensor.empty() : %s\n"
        "  %%f32_logits = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]}"
        " ins(%s : %s) outs(%%f32_empty : %s) {\n"
        "  ^bb0(%%a: %s, %%o: f32):\n"
        "    %%e = arith.extf %%a : %s to f32\n"
        "    linalg.yield %%e : f32\n"
        "  } -> %s\n"
        "  return %%f32_logits : %s") % (
        wide, identity, identity, ", ".join(['"parallel"'] * len(shape.split("x"))), r.group(1), low,
        wide, et, et, wide, wide)
    text = text[:r.start()] + widen + text[r.end():]
    return text[:m.start()] + m.group(1) + "(" + wide + ")" + m.group(5) + text[m.end():]


def test_combo_ladder_matches_torch(tmp_path):
    # All three techniques in one model: 2:4 q/k and 6:8 v/o weights, the
    # ReLU FFN TwELL takes, and all-reduce markers that sgpu-ladder-residual
    # turns into ladder residuals. The compiler imports the standard form
    # and rewrites it; torch runs the ladder form it stands for. f16 on the
    # CPU reference, within 2e-2 of torch's fp32 ladder forward; the sm_90a
    # program has sparse GEMMs, the TwELL consumer and NCCL all-reduces.
    import subprocess
    import run_prefill
    from sparse_opt.importers.fx import import_fx
    from sparse_opt.runtime import module_state
    c_imp = run_prefill.config_for("small", "combo")
    c_ref = run_prefill.config_for("small", "combo", reference=True)
    torch.manual_seed(0)
    ref = decoder.init_weights(decoder.Decoder(c_ref).eval(), seed=0)
    sparsity = run_prefill.sparsity_for(ref, "combo")
    for name, pattern in sparsity.items():
        decoder.prune_linear(dict(ref.named_parameters())[name], *run_prefill.PATTERNS[pattern])
    imp = decoder.Decoder(c_imp).eval()
    imp.load_state_dict(ref.state_dict())
    ids = torch.randint(0, c_ref.vocab, (1, c_ref.seq), generator=torch.Generator().manual_seed(1))
    want = _logits(ref, ids)
    assert np.abs(want - _logits(imp, ids)).max() > 1e-3  # ladder changes the model
    text = import_fx(imp, (ids,), sparsity=sparsity, dtype="f16", weights="params")
    laddered = subprocess.run([str(BUILD / "bin" / "sparse-opt"), "--sgpu-ladder-residual", "-"],
                              input=text, capture_output=True, text=True, check=True).stdout
    params = {k: v.detach().numpy() for k, v in module_state(imp).items()}
    (got,) = run_reference(_f32_logits(laddered), [ids.numpy()], params=params)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 2e-2, err

    from sparse_opt.compiler import Compiler
    with Compiler() as comp:
        art = comp.parse(text, filename="combo.mlir").compile(tmp_path / "combo", chip="sm_90a",
                                                              twell=True, ladder=True)
    program = (pathlib.Path(art.directory) / "program.txt").read_text()
    assert "launch sgpu_spmm_" in program and "launch sgpu_twell_ffn_" in program
    assert program.count("allreduce ") == 2 * c_ref.layers
    assert sum(art.sparse_mma_counts().values()) > 0


FIXTURES = sorted((ROOT / "test" / "python" / "fixtures" / "export").glob("*.mlir"))


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_export_fixture_compiles_for_sm90a(fixture, tmp_path):
    # Every op family the importers emit (the op zoo: embedding, norms,
    # attention with and without causal masks, slices of a fused QKV, cat,
    # softmax and means outside the recognized blocks, f32 GEMMs, where,
    # clamp, casts; the Llama decoder; 2:4 layers) compiles for sm_90a into
    # a program of kernels and library calls only. bench/model/check_fixtures.py
    # runs the same programs on the GPU against torch.
    pytest.importorskip("sparse_opt.compiler")
    from sparse_opt.compiler import Compiler
    with Compiler() as c:
        art = c.parse_file(fixture).compile(tmp_path / fixture.stem, chip="sm_90a")
    program = (pathlib.Path(art.directory) / "program.txt").read_text()
    assert "launch " in program or "gemm " in program
