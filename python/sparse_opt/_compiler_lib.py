"""The compiler's C library (libsparseopt_compiler.so,
include/sparse-opt-c/Compiler.h) through ctypes, and the error its calls
raise: what the Compiler (compiler.py) and the engines that run the library
in this process or in a child (_engine.py) share.
"""
import ctypes

from . import _libs

_p = ctypes.c_void_p


def configure(lib):
    lib.sparseopt_compiler_create.argtypes = [ctypes.POINTER(_p)]
    lib.sparseopt_compiler_destroy.argtypes = [_p]
    lib.sparseopt_compiler_destroy.restype = None
    lib.sparseopt_compiler_take_diagnostics.argtypes = [_p]
    lib.sparseopt_compiler_take_diagnostics.restype = _p
    lib.sparseopt_ir_parse.argtypes = [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                       ctypes.POINTER(_p)]
    lib.sparseopt_ir_parse_file.argtypes = [_p, ctypes.c_char_p, ctypes.POINTER(_p)]
    lib.sparseopt_ir_destroy.argtypes = [_p]
    lib.sparseopt_ir_destroy.restype = None
    lib.sparseopt_ir_verify.argtypes = [_p]
    lib.sparseopt_ir_run_pipeline.argtypes = [_p, ctypes.c_char_p]
    lib.sparseopt_ir_print.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_ir_print.restype = _p
    lib.sparseopt_ir_compile.argtypes = [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.sparseopt_string_free.argtypes = [_p]
    lib.sparseopt_string_free.restype = None
    lib.sparseopt_compiler_version.restype = ctypes.c_char_p


def load():
    """The library, loaded and configured on first use."""
    return _libs.load(_libs.COMPILER, configure)


def version():
    """The compiler library's version, e.g. "sparse-opt 0.1 (MLIR 22)"."""
    return load().sparseopt_compiler_version().decode()


def take_string(lib, ptr):
    """Copies and frees a string the C API returned."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.sparseopt_string_free(ptr)


class CompileError(Exception):
    """A compiler call failed. `diagnostics` holds what the compiler said
    (errors with their locations and notes, plus warnings and remarks)."""

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.message = message
        self.diagnostics = list(diagnostics)

    @property
    def errors(self):
        return [d for d in self.diagnostics if d.severity == "error"]

    def __str__(self):
        return "\n".join([self.message] + [str(d) for d in self.diagnostics])
