"""Shared fixtures: where the build put the libraries and tools."""
import ctypes
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SPARSEOPT_BUILD_DIR", ROOT / "build"))


@pytest.fixture(scope="session")
def build_dir():
    if not (BUILD / "bin" / "sparse-opt").exists():
        pytest.fail(f"no build at {BUILD}: run scripts/build.sh first")
    return BUILD


@pytest.fixture(scope="session")
def formats_lib(build_dir):
    lib = ctypes.CDLL(str(build_dir / "lib" / "libsparseopt_formats.so"))
    i64, p = ctypes.c_int64, ctypes.c_void_p
    lib.sparseopt_sparse24_sizes.argtypes = [i64, i64, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.sparseopt_sparse24_compress.argtypes = [p, i64, i64, p, p, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.sparseopt_sparse24_decompress.argtypes = [p, p, i64, i64, p]
    lib.sparseopt_sparse24_prune.argtypes = [p, i64, i64, ctypes.c_int]
    return lib


@pytest.fixture(scope="session")
def runtime_lib(build_dir):
    lib = ctypes.CDLL(str(build_dir / "lib" / "libsparseopt_runtime.so"))
    lib.sparseopt_last_error.restype = ctypes.c_char_p
    lib.sparseopt_program_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.sparseopt_program_num_inputs.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_num_outputs.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_input_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_input_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_output_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_output_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_num_launches.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_launch_kernel.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_launch_kernel.restype = ctypes.c_char_p
    lib.sparseopt_program_destroy.argtypes = [ctypes.c_void_p]
    return lib
