"""The program format is one schema: every directive that
sparseopt/program_format.h names is written by the compiler for some
program here, every program it writes is read back by the runtime's parser
(no GPU needed), and the compiler writes no directive the header does not
name. The programs: a 2:4 layer with a constant weight (compressed at
compile time), one with its weight as an argument (a prepare stage and a
weight check), a dense layer with a TwELL FFN in calibration mode (a
library GEMM, program stats), an all-reduce (a collective and its
wait) and a prefill attention (cuDNN's, an attention line)."""
import json
import pathlib
import re

import pytest

from conftest import ROOT
from sparse_opt import runtime
from sparse_opt.compiler import Compiler

HEADER = ROOT / "runtime" / "include" / "sparseopt" / "program_format.h"

LINEAR = """func.func @forward(%x: tensor<16x64xf16>{w}) -> tensor<16x32xf16> {{
  {const}%zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x32xf16>
  %acc = linalg.fill ins(%zero : f16) outs(%e : tensor<16x32xf16>) -> tensor<16x32xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x64xf16>, tensor<32x64xf16, #sgpu.nm<2:4>>)
      outs(%acc : tensor<16x32xf16>) -> tensor<16x32xf16>
  return %y : tensor<16x32xf16>
}}
"""

ALL_REDUCE = """func.func @forward(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = sgpu.all_reduce %x : tensor<16x64xf32>
  %y = arith.addf %r, %x : tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
"""

ATTENTION = """func.func @forward(%q: tensor<1x4x32x64xbf16>, %k: tensor<1x2x32x64xbf16>) -> tensor<1x4x32x64xbf16> {
  %o = sgpu.attention %q, %k, %k {causal, scale = 0.125 : f32}
       : tensor<1x4x32x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16> -> tensor<1x4x32x64xbf16>
  return %o : tensor<1x4x32x64xbf16>
}
"""


def directives():
    """The directives the header names."""
    return set(re.findall(r'#define SPARSEOPT_DIRECTIVE_\w+ "([^"]+)"', HEADER.read_text()))


def written(directory):
    """The directives of a compiled program (comments skipped)."""
    return {line.split()[0] for line in (pathlib.Path(directory) / "program.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("schema")
    model = ROOT / "test" / "Transforms" / "sparsify-ffn-calibration.mlir"
    with Compiler() as c:
        dirs = [
            c.parse(LINEAR.format(w="", const="%w = arith.constant dense<0.0> : tensor<32x64xf16, "
                                  "#sgpu.nm<2:4>>\n  ")).compile(out / "constant").directory,
            c.parse(LINEAR.format(w=", %w: tensor<32x64xf16, #sgpu.nm<2:4>>", const="")).compile(
                out / "argument").directory,
            c.parse_file(model).compile(out / "twell", twell=True).directory,
            c.parse(ALL_REDUCE).compile(out / "collective").directory,
            c.parse(ATTENTION).compile(out / "attention").directory,
        ]
    return [pathlib.Path(d) for d in dirs]


def test_the_header_names_the_directives():
    assert {"sparseopt-program", "module", "buffer", "launch", "gemm", "end"} <= directives()


def test_every_directive_is_written_and_nothing_else(programs):
    seen = set().union(*(written(d) for d in programs))
    assert seen == directives(), "written but not in the header: %s; in the header, never written: %s" % (
        sorted(seen - directives()), sorted(directives() - seen))


def test_every_program_is_read_back(programs):
    for d in programs:
        p = runtime.parse(d)
        try:
            sig = json.loads((d / "signature.json").read_text())
            assert len(p.signature.inputs) == len(sig["inputs"]), d.name
            assert len(p.signature.outputs) == len(sig["outputs"]), d.name
        finally:
            p.close()


def test_run_stage_kernels_are_programmatic_launches(tmp_path):
    """Compiled with programmatic_launch=True (the default; sm_90a), every
    run-stage kernel launch carries the header's `pdl` key (it waits for its
    predecessor itself), no prepare-stage launch does, and the runtime's
    step text says so; with programmatic_launch=False no launch does."""
    key = re.search(r'#define SPARSEOPT_LAUNCH_PDL_KEY "([^"]+)"', HEADER.read_text()).group(1)
    source = LINEAR.format(w=", %w: tensor<32x64xf16, #sgpu.nm<2:4>>", const="")
    for on in (None, True, False):
        options = {} if on is None else {"programmatic_launch": on}
        with Compiler() as c:
            out = c.parse(source).compile(tmp_path / str(on), sparse_policy="sparse",
                                          **options).directory
        on = on is not False
        p = runtime.parse(out)
        try:
            launches = [(stage, text) for stage, text in p.steps if text.startswith("launch ")]
        finally:
            p.close()
        assert {stage for stage, _ in launches} == {"prepare", "run"}
        for stage, text in launches:
            assert text.endswith(" " + key) == (on and stage == "run"), (on, stage, text)


def test_programmatic_launch_must_be_a_bool(tmp_path):
    with Compiler() as c:
        with pytest.raises(ValueError, match="programmatic_launch must be True or False"):
            c.parse(ALL_REDUCE).compile(tmp_path / "x", programmatic_launch="yes")


QKV = """func.func @qkv(%x: tensor<2048x1024xbf16>, %wq: tensor<256x1024xbf16, #sgpu.nm<2:4>>,
               %wk: tensor<128x1024xbf16, #sgpu.nm<2:4>>, %wv: tensor<64x1024xbf16, #sgpu.nm<2:4>>)
    -> (tensor<2048x256xbf16>, tensor<2048x128xbf16>, tensor<2048x64xbf16>) {
  %w = tensor.concat dim(0) %wq, %wk, %wv : (tensor<256x1024xbf16, #sgpu.nm<2:4>>, tensor<128x1024xbf16, #sgpu.nm<2:4>>, tensor<64x1024xbf16, #sgpu.nm<2:4>>) -> tensor<448x1024xbf16, #sgpu.nm<2:4>>
  %c = sgpu.compress %w : tensor<448x1024xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<448x1024xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<2048x1024xbf16>, !sgpu.compressed<448x1024xbf16, #sgpu.nm<2:4>> -> tensor<2048x448xbf16>
  %q = tensor.extract_slice %y[0, 0] [2048, 256] [1, 1] : tensor<2048x448xbf16> to tensor<2048x256xbf16>
  %k = tensor.extract_slice %y[0, 256] [2048, 128] [1, 1] : tensor<2048x448xbf16> to tensor<2048x128xbf16>
  %v = tensor.extract_slice %y[0, 384] [2048, 64] [1, 1] : tensor<2048x448xbf16> to tensor<2048x64xbf16>
  return %q, %k, %v : tensor<2048x256xbf16>, tensor<2048x128xbf16>, tensor<2048x64xbf16>
}
"""


def test_sliced_tma_store_option(tmp_path):
    """compile(sliced_tma_store=True) has a fused sibling GEMM that does not
    split K store q, k and v by TMA (one tensor map each, no copy kernels);
    the default stores the whole result and copies the three slices out. A
    value that is not a bool is a ValueError before anything is compiled."""
    for on in (False, True):
        with Compiler() as c:
            out = c.parse(QKV).compile(tmp_path / str(on), sparse_policy="sparse",
                                       sliced_tma_store=on).directory
        text = (pathlib.Path(out) / "program.txt").read_text()
        spmm = [l for l in text.splitlines() if l.startswith("launch sgpu_spmm_")]
        assert len(spmm) == 1, text
        copies = [l for l in text.splitlines() if l.startswith("launch sgpu_slice_")]
        assert len(copies) == (0 if on else 3), text
        # X, the weight, its metadata, then the store: one map, or one a slice.
        assert spmm[0].count(" tmap:") == (6 if on else 4), spmm[0]
    with Compiler() as c:
        with pytest.raises(ValueError, match="sliced_tma_store must be True or False"):
            c.parse(ALL_REDUCE).compile(tmp_path / "x", sliced_tma_store=1)
