"""The 2:4 weight format (values + mma.sp metadata) through the C library
libsparseopt_formats.so: the same code the compiler uses for constant
weights, for callers that compress weights themselves (benchmarks, weights
passed as arguments). Arrays are numpy; 16-bit floats are handled as their
raw uint16 bits (fp16 or bf16).

Also the sliding-window decomposition of (2N-2):2N weights (4:6, 6:8, ...)
into a 2:4 weight over a lifted reduction axis K' (sliding_shape,
decompose_sliding, lift; see include/sparse-opt/Formats/SlidingWindow.h):
lift(x, n) @ decompose_sliding(w, n).T has exactly the terms of x @ w.T, plus
products with zero."""
import ctypes

from . import _libs

_i64, _p = ctypes.c_int64, ctypes.c_void_p


class PatternError(ValueError):
    """The weight breaks 2:4 (or, with n > 2, (2n-2):2n); `row` and `group`
    name the first bad group of 2n columns (a chunk of 4 for 2:4)."""

    def __init__(self, row, group, n=2):
        width = 2 * n
        super().__init__("weight is not %d:%d sparse: row %d, group %d (columns %d..%d)"
                         % (width - 2, width, row, group, width * group, width * group + width - 1))
        self.row, self.group, self.n = row, group, n


def _configure(lib):
    lib.sparseopt_sparse24_sizes.argtypes = [_i64, _i64, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]
    lib.sparseopt_sparse24_compress.argtypes = [_p, _i64, _i64, _p, _p, ctypes.POINTER(_i64),
                                                ctypes.POINTER(_i64)]
    lib.sparseopt_sparse24_decompress.argtypes = [_p, _p, _i64, _i64, _p]
    lib.sparseopt_sparse24_prune.argtypes = [_p, _i64, _i64, ctypes.c_int]
    _int = ctypes.c_int
    lib.sparseopt_sliding_shape.argtypes = [_i64, _i64, _int, _i64, ctypes.POINTER(_i64)]
    lib.sparseopt_sliding_decompose.argtypes = [_p, _i64, _i64, _int, _i64, _p, ctypes.POINTER(_i64),
                                                ctypes.POINTER(_i64)]
    lib.sparseopt_sliding_lift.argtypes = [_p, _i64, _i64, _int, _i64, _p]
    lib.sparseopt_sliding_prune.argtypes = [_p, _i64, _i64, _int, _int]


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


def sliding_shape(rows, cols, n, tile_groups=0):
    """(rows, K'): the shape of the 2:4 weight that a rows x cols weight of
    family n ((2n-2):2n, 2 <= n <= 8) decomposes into;
    K' = ceil(cols / 2n) * 4(n-1), the group count rounded up to a multiple
    of tile_groups when it is positive (the tiled window order: each tile of
    tile_groups groups holds their even windows, then their odd ones; the
    sm_90a kernel's order for 6:8 is tile_groups=8)."""
    lifted = _i64()
    if _lib().sparseopt_sliding_shape(rows, cols, n, tile_groups, ctypes.byref(lifted)):
        raise ValueError("bad sliding weight shape %dx%d or family n=%r" % (rows, cols, n))
    return rows, lifted.value


def decompose_sliding(dense, n, tile_groups=0):
    """The 2:4 uint16 weight W' (rows x K') of a 2-D (2n-2):2n fp16 array
    (or uint16 bits of fp16/bf16): every group of 2n columns spread over n-1
    overlapping windows of 4, in the window order of tile_groups
    (sliding_shape). Raises PatternError on a group with more than 2n-2
    nonzeros."""
    import numpy as np
    bits = _bits(dense)
    rows, cols = bits.shape
    out = np.zeros(sliding_shape(rows, cols, n, tile_groups), dtype=np.uint16)
    row, group = _i64(), _i64()
    rc = _lib().sparseopt_sliding_decompose(bits.ctypes.data, rows, cols, n, tile_groups,
                                           out.ctypes.data,
                                           ctypes.byref(row), ctypes.byref(group))
    if rc == 1:
        raise PatternError(row.value, group.value, n)
    if rc:
        raise ValueError("sliding decomposition failed (status %d)" % rc)
    return out


def lift(x, n, tile_groups=0):
    """The lifted activations x' (M x K', uint16 bits) of a 2-D M x K array
    of 16-bit floats, matching decompose_sliding(w, n, tile_groups) for a
    weight with K columns: x'[:, c'] copies x[:, source(c')], zero past K."""
    import numpy as np
    bits = _bits(x)
    m, k = bits.shape
    out = np.zeros(sliding_shape(m, k, n, tile_groups), dtype=np.uint16)
    if _lib().sparseopt_sliding_lift(bits.ctypes.data, m, k, n, tile_groups, out.ctypes.data):
        raise ValueError("activation lifting failed")
    return out
