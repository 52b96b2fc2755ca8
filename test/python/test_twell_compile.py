"""TwELL through the Python compiler and the CLI: a calibration build (every
ReLU FFN rewritten, its runs report densities as program stats) and a
calibrated build (the cost model keeps dense what would lose)."""
import json
import pathlib

import pytest

from sparse_opt import runtime
from sparse_opt.compiler import CompileError, Compiler
from test_cli import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Two FFNs at d = 2048 (gated, then ungated), F = 512.
MODEL = ROOT / "test" / "Transforms" / "sparsify-ffn-calibration.mlir"


def compile_model(tmp_path, name, twell):
    with Compiler() as c:
        m = c.parse_file(MODEL)
        art = m.compile(tmp_path / name, twell=twell)
        return art, [str(d) for d in c.last_diagnostics]


def consumers(art):
    return [line.split()[1] for line in (pathlib.Path(art.directory) / "program.txt").read_text().splitlines()
            if line.startswith("launch sgpu_twell_ffn_")]


def test_calibration_build_reports_densities(tmp_path):
    art, _ = compile_model(tmp_path, "all", True)
    assert consumers(art) == ["sgpu_twell_ffn_0", "sgpu_twell_ffn_1"]
    prog = runtime.parse(art.directory)
    assert prog.stat_totals == {"twell0.fallback_rows": 16, "twell0.active_neurons": 16 * 512,
                                "twell1.fallback_rows": 16, "twell1.active_neurons": 16 * 512}
    # Each layer's break-even density (the cost model's), for run-time
    # guards: gated 0.96%, ungated 0.86% at d = 2048.
    assert sorted(prog.stat_limits) == ["twell0.active_neurons", "twell1.active_neurons"]
    assert prog.stat_limits["twell0.active_neurons"] == pytest.approx(0.0096, abs=5e-5)
    assert prog.stat_limits["twell1.active_neurons"] == pytest.approx(0.0086, abs=5e-5)
    # Each consumer's down weight is a param, transposed when bound.
    assert [s for s, text in prog.steps if "sgpu_twell_down_t" in text] == ["prepare", "prepare"]


def test_calibrated_build_keeps_losing_ffns_dense(tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"densities": [0.005, 0.02]}))
    for name, twell in (("list", [0.005, 0.02]), ("file", profile), ("str", str(profile))):
        art, diags = compile_model(tmp_path, name, twell)
        assert consumers(art) == ["sgpu_twell_ffn_0"], name
        assert any("FFN kept dense (TwELL cost model): calibrated density 2.00% predicts 0.68x "
                   "of dense" in d for d in diags), diags
    # Without TwELL the FFNs stay dense GEMMs.
    art, _ = compile_model(tmp_path, "off", False)
    assert consumers(art) == []


def test_bad_calibrations(tmp_path):
    with pytest.raises(ValueError, match="fractions in \\[0, 1\\]"):
        compile_model(tmp_path, "range", [0.5, 1.5])
    with pytest.raises(ValueError, match="fractions in \\[0, 1\\]"):
        compile_model(tmp_path, "empty", [])
    with pytest.raises(ValueError, match="does not exist"):
        compile_model(tmp_path, "missing", tmp_path / "nope.json")
    with pytest.raises(ValueError, match="a profile path or a list of densities"):
        compile_model(tmp_path, "kind", 3)
    with pytest.raises(CompileError) as e:
        compile_model(tmp_path, "count", [0.005])
    assert "1 densities for 2 rewritable FFN(s)" in str(e.value)


def test_cli_twell_options(tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"densities": [0.005, 0.02]}))
    r = cli("compile", MODEL, "-o", tmp_path / "a", "--twell-profile", profile)
    assert r.returncode == 0, r.stderr
    assert "FFN kept dense (TwELL cost model)" in r.stdout
    assert "sgpu_twell_ffn_0" in (tmp_path / "a" / "program.txt").read_text()
    assert "sgpu_twell_ffn_1" not in (tmp_path / "a" / "program.txt").read_text()
    r = cli("compile", MODEL, "-o", tmp_path / "b", "--twell")
    assert r.returncode == 0, r.stderr
    # Kernels without sparse MMAs are listed on one line.
    assert "sparse MMA instructions" not in r.stdout
    assert "other kernels: " in r.stdout and "sgpu_twell_ffn_1" in r.stdout
    assert "sgpu_twell_ffn_1" in (tmp_path / "b" / "program.txt").read_text()
    r = cli("compile", MODEL, "-o", tmp_path / "c", "--twell", "--twell-profile", profile)
    assert r.returncode != 0 and "not allowed with argument" in r.stderr
    r = cli("run", "--help")
    assert "--twell-profile-out" in r.stdout


def launches(art):
    return [line.split()[1] for line in (pathlib.Path(art.directory) / "program.txt").read_text().splitlines()
            if line.startswith("launch ")]


def stems(names):
    """The launched kernels' families in order (the numbered suffix dropped),
    leaving out the bind-time transposes of the down weights."""
    return [n.rsplit("_", 1)[0] for n in names if not n.startswith("sgpu_twell_down_t")]


def test_fused_producer(tmp_path):
    # Both FFNs' gate GEMMs become generated producers whose epilogue packs:
    # no cuBLASLt line, no pack kernel; clear, producer, fix-up, consumer.
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "fused", twell=True, twell_producer="fused")
    names = launches(art)
    # Identical kernels are generated once (sgpu-merge-identical-kernels),
    # so the two FFNs' launches are compared by kernel family.
    assert stems(names) == ["sgpu_twell_clear", "sgpu_twell_producer", "sgpu_twell_fixup",
                            "sgpu_twell_ffn"] * 2, names
    text = (pathlib.Path(art.directory) / "program.txt").read_text()
    assert not any(line.startswith("gemm ") for line in text.splitlines() if "n=512 " in line)
    # The default keeps the library GEMM, and the consumer reads its H
    # (the pack fused into the consumer: no pack kernel).
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "auto", twell=True)
    assert "sgpu_twell_ffn_0" in launches(art) and "sgpu_twell_pack_0" not in launches(art)
    assert not any(n.startswith("sgpu_twell_producer") for n in launches(art))
    with pytest.raises(ValueError, match="twell_producer must be"):
        with Compiler() as c:
            c.parse_file(MODEL).compile(tmp_path / "bad", twell=True, twell_producer="cublas")


def test_fused_producer_remark_on_other_chips(tmp_path):
    # sm_90 has no wgmma: the library path stays, and a remark says why.
    with Compiler() as c:
        c.parse_file(MODEL).compile(tmp_path / "sm90", chip="sm_90", twell=True,
                                    twell_producer="fused")
        diags = [str(d) for d in c.last_diagnostics]
    assert any("the target has no wgmma" in d for d in diags), diags


def test_cli_twell_producer(tmp_path):
    r = cli("compile", MODEL, "-o", tmp_path / "f", "--twell", "--twell-producer", "fused")
    assert r.returncode == 0, r.stderr
    assert "sgpu_twell_producer_0" in (tmp_path / "f" / "program.txt").read_text()
    r = cli("compile", MODEL, "-o", tmp_path / "g", "--twell", "--twell-producer", "cublas")
    assert r.returncode != 0 and "invalid choice" in r.stderr


def test_tensor_core_consumer(tmp_path):
    # Both FFNs on the tensor cores: the block pack instead of the pack
    # kernel, the gathered up GEMM for the gated one, the down GEMM for both.
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "tc", twell=True,
                                          twell_consumer="tensor-cores")
    names = launches(art)
    assert stems(names) == ["sgpu_twell_clear", "sgpu_twell_blocks", "sgpu_twell_up",
                            "sgpu_twell_down", "sgpu_twell_clear", "sgpu_twell_blocks",
                            "sgpu_twell_down"], names
    assert not any(n.startswith(("sgpu_twell_pack", "sgpu_twell_ffn")) for n in names)
    # The stats stay (fallback rows are always 0 in the block form).
    text = (pathlib.Path(art.directory) / "program.txt").read_text()
    assert "stat twell0.active_neurons" in text and "stat twell1.fallback_rows" in text
    with pytest.raises(ValueError, match="twell_consumer must be"):
        with Compiler() as c:
            c.parse_file(MODEL).compile(tmp_path / "bad", twell=True, twell_consumer="tpu")


def test_tensor_core_consumer_remark_on_other_chips(tmp_path):
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "sm90", chip="sm_90", twell=True,
                                          twell_consumer="tensor-cores")
        diags = [str(d) for d in c.last_diagnostics]
    assert any("TwELL consumer: CUDA cores, not tensor cores: the target has no wgmma" in d
               for d in diags), diags
    assert "sgpu_twell_ffn_0" in launches(art)


def test_cli_twell_consumer(tmp_path):
    r = cli("compile", MODEL, "-o", tmp_path / "t", "--twell", "--twell-consumer", "tensor-cores")
    assert r.returncode == 0, r.stderr
    assert "sgpu_twell_blocks_0" in (tmp_path / "t" / "program.txt").read_text()
    r = cli("compile", MODEL, "-o", tmp_path / "u", "--twell", "--twell-consumer", "gpu")
    assert r.returncode != 0 and "invalid choice" in r.stderr


def test_consumer_passes(tmp_path):
    # Two passes over the neurons: every CUDA-core consumer launches twice,
    # the second pass on the tiles the first did not visit.
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "p2", twell=True, twell_passes=2)
    names = launches(art)
    assert names.count("sgpu_twell_ffn_0") == 2 and names.count("sgpu_twell_ffn_1") == 2, names
    text = (pathlib.Path(art.directory) / "program.txt").read_text()
    ranges = [line.split()[-2:] for line in text.splitlines()
              if line.startswith("launch sgpu_twell_ffn_0 ")]
    assert ranges[0][0] == "i64:0" and ranges[0][1] == ranges[1][0], ranges
    # Automatic at these sizes: one pass.
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "auto", twell=True)
    assert launches(art).count("sgpu_twell_ffn_0") == 1
    for bad in (-1, 65, 1.5, True):
        with pytest.raises(ValueError, match="twell_passes must be"):
            with Compiler() as c:
                c.parse_file(MODEL).compile(tmp_path / "bad", twell=True, twell_passes=bad)


def test_cli_twell_passes(tmp_path):
    r = cli("compile", MODEL, "-o", tmp_path / "p", "--twell", "--twell-passes", "3")
    assert r.returncode == 0, r.stderr
    # F = 512 in tiles of 256: three passes asked, capped at the two tiles.
    text = (tmp_path / "p" / "program.txt").read_text()
    assert text.count("launch sgpu_twell_ffn_0 ") == 2, text
    r = cli("compile", MODEL, "-o", tmp_path / "q", "--twell", "--twell-passes", "x")
    assert r.returncode != 0 and "invalid int value" in r.stderr


def test_twell_pack(tmp_path):
    # The pack kernel on request; fused into the consumer by default.
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "k", twell=True, twell_pack="kernel")
    assert sum(n.startswith("sgpu_twell_pack") for n in launches(art)) == 2, launches(art)
    with Compiler() as c:
        art = c.parse_file(MODEL).compile(tmp_path / "c", twell=True, twell_pack="consumer")
    assert not any(n.startswith("sgpu_twell_pack") for n in launches(art))
    # Both stats stay (the fallback rows are always 0 in the fused form).
    text = (pathlib.Path(art.directory) / "program.txt").read_text()
    assert "stat twell0.active_neurons" in text and "stat twell0.fallback_rows" in text
    with pytest.raises(ValueError, match="twell_pack must be"):
        with Compiler() as c:
            c.parse_file(MODEL).compile(tmp_path / "bad", twell=True, twell_pack="inline")
    r = cli("compile", MODEL, "-o", tmp_path / "cli", "--twell", "--twell-pack", "kernel")
    assert r.returncode == 0, r.stderr
    assert "sgpu_twell_pack_0" in (tmp_path / "cli" / "program.txt").read_text()
    r = cli("compile", MODEL, "-o", tmp_path / "cli2", "--twell", "--twell-pack", "fused")
    assert r.returncode != 0 and "invalid choice" in r.stderr
