"""The 6:8 lift option through the Python compiler and the CLI: the split
lift (default above 16 tokens on sm_90a) writes only the shared windows,
[M, K'/3], and its GEMM takes a tensor map of X itself; the gather kernel
(separate) writes the whole lifted X; fused lifts inside the GEMM (the order
of 8 groups, so no lift kernel)."""
import pathlib

import pytest

from sparse_opt.compiler import Compiler
from test_cli import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
# One 6:8 linear layer, 256 tokens, K = 1024, the weight an argument.
MODEL = ROOT / "test" / "Target" / "spmm-split-lift-sm90a.mlir"


def launch_lines(directory):
    return [line for line in (pathlib.Path(directory) / "program.txt").read_text().splitlines()
            if line.startswith("launch ")]


def spmm_maps(directory):
    """The tensor maps of the spmm launch: (buffer, type, shape, box)."""
    line = next(l for l in launch_lines(directory) if l.startswith("launch sgpu_spmm_0 "))
    return [tuple(a.split(":")[1:5]) for a in line.split() if a.startswith("tmap:")]


def compile_with(tmp_path, name, **options):
    # The sparse kernel forced: at 256 tokens the cost model would run this
    # small layer on the library GEMM.
    with Compiler() as c:
        return c.parse_file(MODEL).compile(tmp_path / name, sparse_policy="sparse", **options)


def test_auto_policy_keeps_this_layer_dense(tmp_path):
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "auto")
    assert not any(l.startswith("launch sgpu_spmm") for l in launch_lines(art.directory))
    assert any(l.startswith("gemm ") for l in
               (pathlib.Path(art.directory) / "program.txt").read_text().splitlines())


def test_split_is_the_default_above_16_tokens(tmp_path):
    for name, options in (("auto", {}), ("split", {"lift": "split"})):
        art = compile_with(tmp_path, name, **options)
        maps = spmm_maps(art.directory)
        # X [256, 1024] in place, the values, W1 [256, 512], the metadata.
        assert [m[1:3] for m in maps] == [("f16", "256x1024"), ("f16", "256x768"),
                                          ("f16", "256x512"), ("i32", "16x768")], name
        assert any(l.startswith("launch sgpu_lift_0 ") for l in launch_lines(art.directory))


def test_separate_and_fused(tmp_path):
    art = compile_with(tmp_path, "sep", lift="separate")
    maps = spmm_maps(art.directory)
    # The whole lifted X, K' = 1536 (the plain order), is the GEMM's B.
    assert [m[1:3] for m in maps] == [("f16", "256x1536"), ("f16", "256x768"), ("i32", "16x768")]
    art = compile_with(tmp_path, "fused", lift="fused")
    assert not any(l.startswith("launch sgpu_lift") for l in launch_lines(art.directory))
    assert spmm_maps(art.directory)[0][1:3] == ("f16", "256x1024")


def test_bad_lift(tmp_path):
    with pytest.raises(ValueError, match="lift must be"):
        compile_with(tmp_path, "bad", lift="inline")


def test_cli_lift(tmp_path):
    r = cli("compile", MODEL, "-o", tmp_path / "sep", "--lift", "separate", "--sparse-policy", "sparse")
    assert r.returncode == 0, r.stderr
    assert spmm_maps(tmp_path / "sep")[0][1:3] == ("f16", "256x1536")
    r = cli("compile", MODEL, "-o", tmp_path / "split", "--lift", "split", "--sparse-policy", "sparse")
    assert r.returncode == 0, r.stderr
    assert spmm_maps(tmp_path / "split")[2][1:3] == ("f16", "256x512")
    r = cli("compile", MODEL, "-o", tmp_path / "bad", "--lift", "inline")
    assert r.returncode != 0 and "invalid choice" in r.stderr
