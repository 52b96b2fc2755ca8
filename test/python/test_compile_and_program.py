"""The compiler's artifacts as the runtime reads them (no GPU needed)."""
import ctypes
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def compile_model(build_dir, source, out, *extra):
    cmd = [str(build_dir / "bin" / "sparse-opt"), str(source),
           f"--sgpu-compile=output-dir={out} {' '.join(extra)}".strip(), "-o", str(out / "compiled.mlir")]
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run(cmd, capture_output=True, text=True)


def test_example_compiles_and_the_runtime_accepts_its_program(build_dir, runtime_lib, tmp_path):
    out = tmp_path / "art"
    r = compile_model(build_dir, ROOT / "examples" / "linear_relu_24.mlir", out)
    assert r.returncode == 0, r.stderr
    summary = (out / "summary.txt").read_text()
    assert "kernel sgpu_spmm_0: 8 sparse MMA instructions" in summary
    ptx = (out / "kernels.ptx").read_text()
    # The default kernel on sm_90a is the warpgroup one (4 wgmmas per k-tile
    # pair, 8 in the PTX); kernel=mma gives the warp-level kernel.
    assert ".target sm_90a" in ptx and "wgmma.mma_async.sp" in ptx
    r = compile_model(build_dir, ROOT / "examples" / "linear_relu_24.mlir", tmp_path / "mma", "kernel=mma")
    assert r.returncode == 0, r.stderr
    assert "mma.sp::ordered_metadata" in (tmp_path / "mma" / "kernels.ptx").read_text()

    prog = ctypes.c_void_p()
    rc = runtime_lib.sparseopt_program_parse(str(out).encode(), ctypes.byref(prog))
    assert rc == 0, runtime_lib.sparseopt_last_error().decode()
    try:
        assert runtime_lib.sparseopt_program_num_inputs(prog) == 1
        assert runtime_lib.sparseopt_program_num_outputs(prog) == 1
        assert runtime_lib.sparseopt_program_input_bytes(prog, 0) == 128 * 256 * 2
        assert runtime_lib.sparseopt_program_output_bytes(prog, 0) == 128 * 512 * 2
        assert runtime_lib.sparseopt_program_num_launches(prog) == 1
        assert runtime_lib.sparseopt_program_launch_kernel(prog, 0) == b"sgpu_spmm_0"
    finally:
        runtime_lib.sparseopt_program_destroy(prog)


def test_constants_hold_the_compressed_weight(build_dir, formats_lib, tmp_path):
    """The compile-time compression writes what the C utility computes."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((48, 64)).astype(np.float16)
    assert formats_lib.sparseopt_sparse24_prune(w.ctypes.data, 48, 64, 0) == 0
    src = tmp_path / "m.mlir"
    src.write_text(f"""
func.func @f(%x: tensor<16x64xf16>) -> tensor<16x48xf16> {{
  %w = arith.constant dense<"0x{w.astype('<f2').tobytes().hex()}"> : tensor<48x64xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x48xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x48xf16>) -> tensor<16x48xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x64xf16>, tensor<48x64xf16, #sgpu.nm<2:4>>) outs(%a : tensor<16x48xf16>) -> tensor<16x48xf16>
  return %y : tensor<16x48xf16>
}}
""")
    out = tmp_path / "art"
    r = compile_model(build_dir, src, out)
    assert r.returncode == 0, r.stderr
    consts = {}
    for line in (out / "program.txt").read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["buffer"] and parts[2] == "constant":
            consts[int(parts[4])] = (out / parts[3]).read_bytes()
    nv, nm = ctypes.c_int64(), ctypes.c_int64()
    formats_lib.sparseopt_sparse24_sizes(48, 64, ctypes.byref(nv), ctypes.byref(nm))
    values = np.zeros(nv.value, dtype=np.uint16)
    meta = np.zeros(nm.value, dtype=np.uint32)
    assert formats_lib.sparseopt_sparse24_compress(w.ctypes.data, 48, 64, values.ctypes.data,
                                                   meta.ctypes.data, None, None) == 0
    assert consts[values.nbytes] == values.tobytes()
    assert consts[meta.nbytes] == meta.tobytes()


@pytest.mark.parametrize("chip,message", [
    ("sm_75", "needs sparse tensor cores"),
    ("sm_90a features=+ptx80", "needs PTX ISA 8.5"),
])
def test_unusable_target_is_a_diagnostic(build_dir, tmp_path, chip, message):
    r = compile_model(build_dir, ROOT / "examples" / "linear_relu_24.mlir", tmp_path / "a", f"chip={chip}")
    assert r.returncode != 0
    assert message in r.stderr
    assert "Stack dump" not in r.stderr and "LLVM ERROR" not in r.stderr
