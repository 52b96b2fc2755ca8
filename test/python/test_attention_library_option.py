"""The attention-library option through the Python compiler: by default a
prefill attention is one `attention` line of the runtime program (cuDNN's
fused attention, no attention kernel); attention_library=False keeps it on
the generated tensor-core kernel; a value that is not a bool is refused."""
import pathlib

import pytest

from sparse_opt.compiler import Compiler

PREFILL = """func.func @prefill(%q: tensor<1x8x128x64xbf16>, %k: tensor<1x2x128x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %o = sgpu.attention %q, %k, %k {causal, scale = 0.125 : f32}
       : tensor<1x8x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x8x128x64xbf16>
  return %o : tensor<1x8x128x64xbf16>
}
"""


def program(tmp_path, name, **options):
    with Compiler() as c:
        c.parse(PREFILL).compile(tmp_path / name, **options)
    return (tmp_path / name / "program.txt").read_text().splitlines()


def test_default_is_one_attention_line(tmp_path):
    lines = program(tmp_path, "library")
    assert [l for l in lines if l.startswith("attention ")] == [
        "attention b=1 h=8 hkv=2 sq=128 sk=128 d=64 type=bf16 scale=0.125 "
        "q=b0 k=b1 v=b1 o=b2 mask=causal"]
    assert not [l for l in lines if l.startswith("launch ")]


def test_generated_kernel_when_the_library_is_off(tmp_path):
    lines = program(tmp_path, "generated", attention_library=False)
    assert not [l for l in lines if l.startswith("attention ")]
    assert [l.split()[1] for l in lines if l.startswith("launch ")] == ["sgpu_attention_mma_0"]


def test_attention_library_must_be_a_bool(tmp_path):
    with Compiler() as c, pytest.raises(ValueError, match="attention_library must be True or False"):
        c.parse(PREFILL).compile(tmp_path / "bad", attention_library="no")


def test_cli_no_attention_library(tmp_path):
    from test_cli import cli
    src = tmp_path / "prefill.mlir"
    src.write_text(PREFILL)
    r = cli("compile", src, "-o", tmp_path / "out", "--no-attention-library")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out" / "program.txt").read_text().splitlines()
    assert not [l for l in lines if l.startswith("attention ")]
    assert [l.split()[1] for l in lines if l.startswith("launch ")] == ["sgpu_attention_mma_0"]
