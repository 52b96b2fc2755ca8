"""`python -m sparse_opt` as a user runs it."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "linear_relu_24.mlir"


def cli(*args, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "sparse_opt", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)


def test_help_lists_the_commands():
    r = cli("--help")
    assert r.returncode == 0
    for word in ("import", "compile", "run"):
        assert word in r.stdout
    r = cli("compile", "--help")
    assert "--sparsity" in r.stdout and "--chip" in r.stdout and "--ladder-layers" in r.stdout


def test_compile_mlir_prints_kernels(tmp_path):
    out = tmp_path / "art"
    r = cli("compile", EXAMPLE, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "kernel sgpu_spmm_0: 8 sparse MMA instructions" in r.stdout
    for f in ("kernels.ptx", "program.txt", "signature.json", "summary.txt"):
        assert (out / f).exists()


def test_import_mlir_with_model_options(tmp_path):
    out = tmp_path / "m.mlir"
    r = cli("import", EXAMPLE, "-o", out, "--ladder-layers", "2", "--twell-tile", "256", "--twell-compression", "4")
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "module attributes {sgpu.ladder_layers = 2 : i64, sgpu.twell = #sgpu.twell<tile = 256, compression = 4>}" in text
    # The annotated module still compiles (the dialect verifies the options).
    r = cli("compile", out, "-o", tmp_path / "art")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,message", [
    (["--sparsity", "fc.weight"], "is not of the form <weight>=<n:m>"),
    (["--sparsity", "fc.weight=3:4"], "unsupported structured sparsity 3:4"),
    (["--ladder-layers", "0"], "ladder layers must be a positive integer"),
    (["--twell-tile", "100", "--twell-compression", "4"], "power of two"),
    (["--twell-tile", "256"], "need both a tile width and a compression factor"),
])
def test_bad_annotations_are_errors(tmp_path, args, message):
    r = cli("import", EXAMPLE, "-o", tmp_path / "m.mlir", *args)
    assert r.returncode == 1
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_compile_error_shows_location(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: tensor<4x32xf16>) {\n  %y = arith.addf %x, %x : tensor<4x16xf16>\n  return\n}\n")
    r = cli("compile", bad, "-o", tmp_path / "art")
    assert r.returncode == 1
    assert "bad.mlir:2:" in r.stderr
    assert "Traceback" not in r.stderr


def test_compile_for_a_chip_without_sparse_tensor_cores(tmp_path):
    r = cli("compile", EXAMPLE, "-o", tmp_path / "art", "--chip", "sm_75")
    assert r.returncode == 1
    assert "needs sparse tensor cores" in r.stderr


def test_run_without_a_gpu_is_a_clear_error(tmp_path):
    out = tmp_path / "art"
    assert cli("compile", EXAMPLE, "-o", out).returncode == 0
    r = cli("run", out, env_extra={"SPARSEOPT_CUDA_LIBRARY": str(tmp_path / "no-libcuda.so")})
    pytest.importorskip("torch")
    assert r.returncode == 1
    assert "error" in r.stderr and "Traceback" not in r.stderr


def test_unknown_source_kind(tmp_path):
    r = cli("import", tmp_path / "model.txt")
    assert r.returncode == 1
    assert "<file.py>:<factory>" in r.stderr


MODEL_FILE = """
import torch

def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU()), torch.randn(16, 64)
"""


def test_import_weights_option(tmp_path):
    pytest.importorskip("torch")
    r = cli("import", "--help")
    assert "--weights {params,constants}" in r.stdout and "sgpu.param" in r.stdout
    (tmp_path / "net.py").write_text(MODEL_FILE)
    source = "%s:make" % (tmp_path / "net.py")
    r = cli("import", source)
    assert r.returncode == 0, r.stderr
    assert '%p_0_weight: tensor<32x64xf32> {sgpu.param = "0.weight"}' in r.stdout
    assert "dense_resource" not in r.stdout
    r = cli("import", source, "--weights", "constants", "--dtype", "f16")
    assert r.returncode == 0, r.stderr
    assert "sgpu.param" not in r.stdout and "dense_resource<_0_weight> : tensor<32x64xf16>" in r.stdout
    r = cli("import", EXAMPLE, "--weights", "constants")
    assert r.returncode == 1 and "--weights applies to imported models" in r.stderr
    r = cli("import", source, "--weights", "blobs")
    assert r.returncode == 2 and "invalid choice: 'blobs'" in r.stderr


def test_compile_names_the_params(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "net.py").write_text(MODEL_FILE)
    out = tmp_path / "art"
    r = cli("compile", "%s:make" % (tmp_path / "net.py"), "-o", out, "--dtype", "f16")
    assert r.returncode == 0, r.stderr
    import json
    sig = json.loads((out / "signature.json").read_text())
    assert [sig["inputs"][p].get("name") for p in sig["params"]] == ["0.weight", "0.bias"]
