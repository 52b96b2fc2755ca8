"""The 2:4 weight format (values + mma.sp metadata) through the C library
libsparseopt_formats.so: the same code the compiler uses for constant
weights, for callers that compress weights themselves (benchmarks, weights
passed as arguments). Arrays are numpy; 16-bit floats are handled as their
raw uint16 bits (fp16 or bf16)."""
import ctypes

from . import _libs

_i64, _p = ctypes.c_int64, ctypes.c_void_p


class PatternError(ValueError):
    """The weight breaks 2:4; `row` and `group` name the first bad chunk."""

    def __init__(self, row, group):
        super().__init__("weight is not 2:4 sparse: row %d, group %d (columns %d..%d)"
                         % (row, group, 4 * group, 4 * group + 3))
        self.row, self.group = row, group


def _configure(lib):
    lib.sparseopt_sparse24_sizes.argtypes = [_i64, _i64, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]
    lib.sparseopt_sparse24_compress.argtypes = [_p, _i64, _i64, _p, _p, ctypes.POINTER(_i64),
                                                ctypes.POINTER(_i64)]
    lib.sparseopt_sparse24_decompress.argtypes = [_p, _p, _i64, _i64, _p]
    lib.sparseopt_sparse24_prune.argtypes = [_p, _i64, _i64, ctypes.c_int]


def _lib():
    return _libs.load(_libs.FORMATS, _configure)


def sizes(rows, cols):
    """(number of 16-bit values, number of 32-bit metadata words)."""
    nv, nm = _i64(), _i64()
    if _lib().sparseopt_sparse24_sizes(rows, cols, ctypes.byref(nv), ctypes.byref(nm)):
        raise ValueError("bad 2:4 weight shape %dx%d" % (rows, cols))
    return nv.value, nm.value


def _bits(dense):
    import numpy as np
    a = np.ascontiguousarray(dense)
    if a.ndim != 2 or a.dtype.itemsize != 2:
        raise ValueError("expected a 2-D array of 16-bit floats (or their uint16 bits), got %s %s"
                         % (a.dtype, a.shape))
    return a.view(np.uint16)


def compress(dense):
    """Compresses a 2-D fp16 array (or uint16 bits of fp16/bf16) into
    (values uint16[...], metadata uint32[...]) in the layout of
    !sgpu.compressed; raises PatternError on a 2:4 violation."""
    import numpy as np
    bits = _bits(dense)
    rows, cols = bits.shape
    nv, nm = sizes(rows, cols)
    values = np.zeros(nv, dtype=np.uint16)
    meta = np.zeros(nm, dtype=np.uint32)
    row, group = _i64(), _i64()
    rc = _lib().sparseopt_sparse24_compress(bits.ctypes.data, rows, cols, values.ctypes.data,
                                           meta.ctypes.data, ctypes.byref(row), ctypes.byref(group))
    if rc == 1:
        raise PatternError(row.value, group.value)
    if rc:
        raise ValueError("2:4 compression failed (status %d)" % rc)
    return values, meta


def decompress(values, meta, rows, cols):
    """The dense rows x cols uint16 bits back from compressed parts."""
    import numpy as np
    values = np.ascontiguousarray(values, dtype=np.uint16)
    meta = np.ascontiguousarray(meta, dtype=np.uint32)
    if (values.size, meta.size) != sizes(rows, cols):
        raise ValueError("compressed parts do not match a %dx%d weight" % (rows, cols))
    out = np.zeros((rows, cols), dtype=np.uint16)
    if _lib().sparseopt_sparse24_decompress(values.ctypes.data, meta.ctypes.data, rows, cols, out.ctypes.data):
        raise ValueError("2:4 decompression failed")
    return out
