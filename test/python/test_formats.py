"""The 2:4 compression C API as Python callers (benchmarks, bindings) use it."""
import ctypes

import numpy as np
import pytest


def sizes(lib, rows, cols):
    nv, nm = ctypes.c_int64(), ctypes.c_int64()
    assert lib.sparseopt_sparse24_sizes(rows, cols, ctypes.byref(nv), ctypes.byref(nm)) == 0
    return nv.value, nm.value



def prune(lib, w, bf16=False):
    w = np.ascontiguousarray(w.copy())
    assert lib.sparseopt_sparse24_prune(w.ctypes.data, w.shape[0], w.shape[1], int(bf16)) == 0
    return w


def compress(lib, w):
    nv, nm = sizes(lib, *w.shape)
    values = np.zeros(nv, dtype=np.uint16)
    meta = np.zeros(nm, dtype=np.uint32)
    row, group = ctypes.c_int64(), ctypes.c_int64()
    rc = lib.sparseopt_sparse24_compress(w.ctypes.data, w.shape[0], w.shape[1],
                                         values.ctypes.data, meta.ctypes.data,
                                         ctypes.byref(row), ctypes.byref(group))
    return rc, values, meta, (row.value, group.value)


def test_sizes_are_padded_to_the_mma_tile(formats_lib):
    # 20 x 40 -> 32 x 64: 32*32 values, 32*64/32 metadata words.
    assert sizes(formats_lib, 20, 40) == (1024, 64)
    assert sizes(formats_lib, 16, 32) == (256, 16)


def test_prune_then_compress_round_trips(formats_lib):
    rng = np.random.default_rng(1)
    for rows, cols in [(1, 4), (17, 36), (64, 128), (33, 100)]:
        w = prune(formats_lib, rng.standard_normal((rows, cols)).astype(np.float16))
        nz = (w.reshape(rows, -1) != 0)
        groups = np.pad(nz, ((0, 0), (0, (-cols) % 4))).reshape(rows, -1, 4).sum(axis=2)
        assert groups.max() <= 2
        rc, values, meta, _ = compress(formats_lib, w)
        assert rc == 0
        back = np.zeros_like(w)
        assert formats_lib.sparseopt_sparse24_decompress(values.ctypes.data, meta.ctypes.data,
                                                         rows, cols, back.ctypes.data) == 0
        np.testing.assert_array_equal(back, w)


def test_violation_names_row_and_group(formats_lib):
    w = np.zeros((16, 32), dtype=np.float16)
    w[5, 8:11] = 1.0  # three nonzeros in group 2 of row 5
    rc, _, _, where = compress(formats_lib, w)
    assert rc == 1
    assert where == (5, 2)


def test_bad_arguments(formats_lib):
    values = np.zeros(16, dtype=np.uint16)
    assert formats_lib.sparseopt_sparse24_compress(None, 16, 32, values.ctypes.data, None, None, None) == 2
    nv, nm = ctypes.c_int64(), ctypes.c_int64()
    assert formats_lib.sparseopt_sparse24_sizes(0, 32, ctypes.byref(nv), ctypes.byref(nm)) == 2


def test_compressed_values_reproduce_the_dense_product(formats_lib):
    """Decoding values + metadata the way the kernel reads them gives x . W^T."""
    rng = np.random.default_rng(2)
    w = prune(formats_lib, (rng.integers(-4, 5, (32, 64)) / 4).astype(np.float16))
    x = (rng.integers(-4, 5, (8, 64)) / 4).astype(np.float16)
    rc, values, meta, _ = compress(formats_lib, w)
    assert rc == 0
    vals = values.view(np.float16).reshape(32, 32)
    ksteps = 64 // 32
    y = np.zeros((8, 32), dtype=np.float32)
    for n in range(32):
        rt, inrow = divmod(n, 16)
        g, half = inrow % 8, inrow // 8
        for c in range(16):
            word = meta[((rt * ksteps + c // 8) * 8 + g) * 2 + (c // 4) % 2]
            nib = (int(word) >> (16 * half + 4 * (c % 4))) & 0xF
            for i, pos in enumerate((nib & 3, nib >> 2)):
                y[:, n] += x[:, 4 * c + pos].astype(np.float32) * np.float32(vals[n, 2 * c + i])
    np.testing.assert_array_equal(y, x.astype(np.float32) @ w.astype(np.float32).T)


def test_package_formats_module(build_dir):
    """sparse_opt.formats: the same library through the package."""
    from sparse_opt import formats
    rng = np.random.default_rng(5)
    w = rng.standard_normal((20, 40)).astype(np.float16)
    w.reshape(20, 10, 4)[:, :, 1::2] = 0  # keep positions 0 and 2 of every chunk
    values, meta = formats.compress(w)
    assert (values.size, meta.size) == formats.sizes(20, 40) == (1024, 64)
    np.testing.assert_array_equal(formats.decompress(values, meta, 20, 40), w.view(np.uint16))
    bad = w.copy()
    bad[7, 9] = 1.0  # a third nonzero in row 7, group 2
    with pytest.raises(formats.PatternError) as e:
        formats.compress(bad)
    assert (e.value.row, e.value.group) == (7, 2)
    with pytest.raises(ValueError):
        formats.compress(np.zeros((4, 4), dtype=np.float32))
