"""ctypes bindings of the SparseOpt runtime and the 2:4 format library, for
benchmarks run on a GPU machine (they load no MLIR). Point SPARSEOPT_LIB_DIR
at the folder holding libsparseopt_runtime.so and libsparseopt_formats.so
(default: build/lib next to this folder)."""
import ctypes
import os
import pathlib

_DEFAULT = pathlib.Path(__file__).resolve().parents[1] / "build" / "lib"
LIB_DIR = pathlib.Path(os.environ.get("SPARSEOPT_LIB_DIR", _DEFAULT))

_i64, _p, _u64 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64


class SparseOptError(RuntimeError):
    pass


class Runtime:
    def __init__(self, device=0):
        lib = ctypes.CDLL(str(LIB_DIR / "libsparseopt_runtime.so"))
        lib.sparseopt_last_error.restype = ctypes.c_char_p
        lib.sparseopt_status_string.restype = ctypes.c_char_p
        lib.sparseopt_program_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(_p)]
        lib.sparseopt_program_run.argtypes = [_p, ctypes.POINTER(_u64), ctypes.POINTER(_u64), _p]
        lib.sparseopt_program_destroy.argtypes = [_p]
        lib.sparseopt_program_num_inputs.argtypes = [_p]
        lib.sparseopt_program_num_outputs.argtypes = [_p]
        lib.sparseopt_program_input_bytes.argtypes = [_p, ctypes.c_int]
        lib.sparseopt_program_input_bytes.restype = ctypes.c_size_t
        lib.sparseopt_program_output_bytes.argtypes = [_p, ctypes.c_int]
        lib.sparseopt_program_output_bytes.restype = ctypes.c_size_t
        self.lib = lib
        self._check(lib.sparseopt_init(device))

    def _check(self, status):
        if status != 0:
            raise SparseOptError("%s: %s" % (self.lib.sparseopt_status_string(status).decode(),
                                             self.lib.sparseopt_last_error().decode()))

    def load(self, artifact_dir):
        prog = _p()
        self._check(self.lib.sparseopt_program_load(str(artifact_dir).encode(), ctypes.byref(prog)))
        return Program(self, prog)


class Program:
    """A compiled program; call it with device pointers (e.g. torch data_ptr())."""

    def __init__(self, rt, handle):
        self.rt, self.handle = rt, handle
        lib = rt.lib
        self.input_bytes = [lib.sparseopt_program_input_bytes(handle, i)
                            for i in range(lib.sparseopt_program_num_inputs(handle))]
        self.output_bytes = [lib.sparseopt_program_output_bytes(handle, i)
                             for i in range(lib.sparseopt_program_num_outputs(handle))]

    def run(self, inputs, outputs, stream=None):
        ins = (_u64 * len(inputs))(*inputs)
        outs = (_u64 * len(outputs))(*outputs)
        self.rt._check(self.rt.lib.sparseopt_program_run(self.handle, ins, outs, stream))

    def close(self):
        if self.handle:
            self.rt.lib.sparseopt_program_destroy(self.handle)
            self.handle = None


class Formats:
    def __init__(self):
        lib = ctypes.CDLL(str(LIB_DIR / "libsparseopt_formats.so"))
        lib.sparseopt_sparse24_sizes.argtypes = [_i64, _i64, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]
        lib.sparseopt_sparse24_compress.argtypes = [_p, _i64, _i64, _p, _p, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]
        self.lib = lib

    def sizes(self, rows, cols):
        nv, nm = _i64(), _i64()
        if self.lib.sparseopt_sparse24_sizes(rows, cols, ctypes.byref(nv), ctypes.byref(nm)):
            raise SparseOptError("bad 2:4 shape %dx%d" % (rows, cols))
        return nv.value, nm.value

    def compress(self, dense_u16, rows, cols):
        """dense_u16: a C-contiguous numpy uint16 array (fp16/bf16 bits)."""
        import numpy as np
        nv, nm = self.sizes(rows, cols)
        values = np.zeros(nv, dtype=np.uint16)
        meta = np.zeros(nm, dtype=np.uint32)
        row, group = _i64(), _i64()
        rc = self.lib.sparseopt_sparse24_compress(dense_u16.ctypes.data, rows, cols, values.ctypes.data,
                                                  meta.ctypes.data, ctypes.byref(row), ctypes.byref(group))
        if rc == 1:
            raise SparseOptError("weight is not 2:4: row %d, group %d" % (row.value, group.value))
        if rc != 0:
            raise SparseOptError("compression failed (%d)" % rc)
        return values, meta
