"""The (2N-2):2N sliding-window decomposition through sparse_opt.formats:
decompose a weight into 2:4 windows, lift the activations, and the product
is unchanged."""
import numpy as np
import pytest


def sliding_weight(rng, rows, cols, n):
    """Small-integer fp16 weight with at most 2n-2 nonzeros in every group of
    2n columns (a trailing partial group keeps at most as many)."""
    w = rng.integers(-8, 9, (rows, cols)).astype(np.float16)
    for start in range(0, cols, 2 * n):
        width = min(2 * n, cols - start)
        for r in range(rows):
            drop = rng.permutation(width)[: max(width - (2 * n - 2), 0)]
            w[r, start + drop] = 0
    return w


def lifted_cols(cols, n):
    return -(-cols // (2 * n)) * 4 * (n - 1)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_decompose_and_lift_keep_the_product(build_dir, n):
    from sparse_opt import formats
    rng = np.random.default_rng(n)
    for rows, cols in [(1, 1), (16, 2 * n), (20, 100), (33, 7 * n + 3)]:
        w = sliding_weight(rng, rows, cols, n)
        x = rng.integers(-8, 9, (5, cols)).astype(np.float16)
        assert formats.sliding_shape(rows, cols, n) == (rows, lifted_cols(cols, n))
        wl = formats.decompose_sliding(w, n)
        xl = formats.lift(x, n)
        assert wl.dtype == np.uint16 and wl.shape == (rows, lifted_cols(cols, n))
        assert xl.dtype == np.uint16 and xl.shape == (5, lifted_cols(cols, n))
        # W' is 2:4: every chunk of 4 lifted columns holds at most 2 nonzeros,
        # and it holds exactly the nonzeros of W.
        nz = (wl & 0x7FFF) != 0
        assert nz.reshape(rows, -1, 4).sum(axis=2).max(initial=0) <= 2
        assert nz.sum() == np.count_nonzero(w)
        # Small integers: float32 products and sums are exact.
        want = x.astype(np.float32) @ w.astype(np.float32).T
        got = xl.view(np.float16).astype(np.float32) @ wl.view(np.float16).astype(np.float32).T
        np.testing.assert_array_equal(got, want)
        # W' compresses as an ordinary 2:4 weight.
        values, _ = formats.compress(wl)
        assert np.count_nonzero(values) == nz.sum()


def test_lift_copies_source_columns(build_dir):
    """4:6, K = 8: groups cover columns 0..5 and 6..11 (10, 11 are padding)."""
    from sparse_opt import formats
    x = np.arange(1, 9, dtype=np.float16).reshape(1, 8)
    want = np.array([[1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0]], dtype=np.float16)
    np.testing.assert_array_equal(formats.lift(x, 3), want.view(np.uint16))


def test_greedy_window_assignment(build_dir):
    """6:8, nonzeros a..f at positions 1,2,3,4,6,7: windows fill left first."""
    from sparse_opt import formats
    w = np.array([[0, 1, 2, 3, 4, 0, 5, 6]], dtype=np.float16)
    want = np.array([[0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 5, 6]], dtype=np.float16)
    np.testing.assert_array_equal(formats.decompose_sliding(w, 4), want.view(np.uint16))
    # 2:4 is the identity, padded to a multiple of 4.
    w2 = np.array([[1, 0, 0, 2, 3]], dtype=np.float16)
    np.testing.assert_array_equal(formats.decompose_sliding(w2, 2),
                                  np.array([[1, 0, 0, 2, 3, 0, 0, 0]], dtype=np.float16).view(np.uint16))


def test_violation_and_bad_arguments(build_dir):
    from sparse_opt import formats
    w = np.zeros((6, 20), dtype=np.float16)
    w[4, 12:17] = 1.0  # five nonzeros in group 2 (columns 12..17) of row 4
    with pytest.raises(formats.PatternError) as e:
        formats.decompose_sliding(w, 3)
    assert (e.value.row, e.value.group) == (4, 2)
    assert "4:6" in str(e.value) and "12..17" in str(e.value)
    w[4, 12] = 0
    formats.decompose_sliding(w, 3)
    for bad_n in (1, 9):
        with pytest.raises(ValueError):
            formats.sliding_shape(4, 16, bad_n)
        with pytest.raises(ValueError):
            formats.decompose_sliding(w, bad_n)
    with pytest.raises(ValueError):
        formats.sliding_shape(0, 16, 3)
    with pytest.raises(ValueError):
        formats.lift(np.zeros((2, 6), dtype=np.float32), 3)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_tiled_window_order_keeps_the_product(build_dir, n):
    """tile_groups > 0: the windows of each tile of groups are reordered (even
    windows first) and the group count is rounded up to whole tiles; the
    weight and the activations must use the same order."""
    from sparse_opt import formats
    rng = np.random.default_rng(10 + n)
    rows, cols, tile = 12, 7 * 2 * n + 5, 8
    w = sliding_weight(rng, rows, cols, n)
    x = rng.integers(-8, 9, (3, cols)).astype(np.float16)
    groups = -(-(-(-cols // (2 * n))) // tile) * tile
    assert formats.sliding_shape(rows, cols, n, tile) == (rows, groups * 4 * (n - 1))
    wl = formats.decompose_sliding(w, n, tile)
    xl = formats.lift(x, n, tile)
    assert wl.shape == (rows, groups * 4 * (n - 1)) and xl.shape == (3, wl.shape[1])
    want = x.astype(np.float32) @ w.astype(np.float32).T
    got = xl.view(np.float16).astype(np.float32) @ wl.view(np.float16).astype(np.float32).T
    np.testing.assert_array_equal(got, want)
    nz = (wl & 0x7FFF) != 0
    assert nz.reshape(rows, -1, 4).sum(axis=2).max(initial=0) <= 2
    with pytest.raises(ValueError):
        formats.sliding_shape(rows, cols, n, -1)


def test_tiled_six_eight_keeps_the_columns_in_place(build_dir):
    """6:8 with 8 groups per tile (the sm_90a kernel's order): each tile of 96
    lifted columns is the tile's 64 original columns, then window 1
    (positions 2..5) of each of its 8 groups."""
    from sparse_opt import formats
    x = np.arange(1, 129, dtype=np.float16).reshape(1, 128)
    xl = formats.lift(x, 4, 8).view(np.float16)[0]
    for t in range(2):
        np.testing.assert_array_equal(xl[96 * t: 96 * t + 64], x[0, 64 * t: 64 * t + 64])
        shared = np.concatenate([x[0, 64 * t + 8 * g + 2: 64 * t + 8 * g + 6] for g in range(8)])
        np.testing.assert_array_equal(xl[96 * t + 64: 96 * t + 96], shared)
