/*===- sparse-opt-c/Formats.h - C API for sparse weight formats ---*- C -*-===*\
|*                                                                            *|
|* Part of the SparseOpt project.                                             *|
|*                                                                            *|
|*===----------------------------------------------------------------------===*|
|*                                                                            *|
|* Plain C interface (usable from C and from Python ctypes) to the 2:4        *|
|* structured-sparse compression in sparse-opt/Formats/Sparse24.h; see that   *|
|* header for a full description of the values / metadata layout. The         *|
|* sparseopt_sliding_* functions expose the (2N-2):2N -> 2:4 sliding-window   *|
|* decomposition of sparse-opt/Formats/SlidingWindow.h.                       *|
|*                                                                            *|
|* All matrices are row-major arrays of 16-bit floats (fp16 or bf16) passed   *|
|* as raw uint16_t bits. Output buffers are allocated by the caller with the  *|
|* sizes returned by sparseopt_sparse24_sizes() (sparseopt_sliding_shape()    *|
|* for the sliding-window functions).                                         *|
|*                                                                            *|
|* Every function returns an int status:                                      *|
|*   0  success                                                               *|
|*   1  the pattern is broken (sparseopt_sparse24_compress and                *|
|*      sparseopt_sliding_decompose only)                                     *|
|*   2  bad arguments (NULL pointer, rows <= 0 or cols <= 0, sizes that       *|
|*      overflow int64_t, a sliding family outside 2..8)                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPARSEOPT_C_FORMATS_H
#define SPARSEOPT_C_FORMATS_H

#include <stdint.h>

/* The shared library is built with hidden visibility; only these entry points
 * are exported. */
#if defined(__GNUC__)
#define SPARSEOPT_FORMATS_EXPORT __attribute__((visibility("default")))
#else
#define SPARSEOPT_FORMATS_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
#define SPARSEOPT_OK 0
#define SPARSEOPT_PATTERN_VIOLATION 1
#define SPARSEOPT_BAD_ARGUMENT 2

/* Buffer sizes for a rows x cols dense matrix:
 *   *num_values     = number of uint16_t in the values array
 *                     (roundUp(rows,16) * roundUp(cols,32) / 2),
 *   *num_meta_words = number of uint32_t in the metadata array
 *                     (roundUp(rows,16) * roundUp(cols,32) / 32).
 * Returns 0, or 2 on bad arguments. */
SPARSEOPT_FORMATS_EXPORT int sparseopt_sparse24_sizes(int64_t rows,
                                                      int64_t cols,
                                                      int64_t *num_values,
                                                      int64_t *num_meta_words);

/* Compresses dense (rows x cols) into values / meta.
 * Returns 0 on success (then *bad_row and *bad_group are set to -1),
 * 1 if some chunk of 4 columns has more than 2 nonzeros (then *bad_row and
 * *bad_group identify the first such chunk in row-major order, covering
 * columns 4*bad_group .. 4*bad_group+3, and values / meta are not written),
 * 2 on bad arguments. bad_row and bad_group may each be NULL. */
SPARSEOPT_FORMATS_EXPORT int
sparseopt_sparse24_compress(const uint16_t *dense, int64_t rows, int64_t cols,
                            uint16_t *values, uint32_t *meta, int64_t *bad_row,
                            int64_t *bad_group);

/* Rebuilds the dense rows x cols matrix from values / meta.
 * Returns 0, or 2 on bad arguments. */
SPARSEOPT_FORMATS_EXPORT int
sparseopt_sparse24_decompress(const uint16_t *values, const uint32_t *meta,
                              int64_t rows, int64_t cols, uint16_t *dense);

/* In-place magnitude pruning to 2:4: in every chunk of 4 columns keeps the 2
 * largest-magnitude elements (ties -> lower column), zeroes the others.
 * is_bf16 != 0 selects bf16 decoding, otherwise fp16.
 * Returns 0, or 2 on bad arguments. */
SPARSEOPT_FORMATS_EXPORT int sparseopt_sparse24_prune(uint16_t *dense,
                                                      int64_t rows,
                                                      int64_t cols,
                                                      int is_bf16);

/* --- (2N-2):2N sparsity as overlapping 2:4 windows (SlidingWindow.h) -----
 * family_n = N in 2..8 selects the pattern (2N-2):2N (2:4, 4:6, 6:8, ...).
 * A rows x cols weight W becomes the 2:4 weight W' of rows x lifted_cols,
 * lifted_cols = ceil(cols / 2N) * 4(N-1); activations x (m x cols) become
 * x' (m x lifted_cols), and x' . W'^T has exactly the terms of x . W^T
 * (plus products with +0).
 * tile_groups selects the order of the windows along K': 0 is the plain
 * order (group after group, window after window); a positive value cuts K'
 * into tiles of that many groups, each holding its groups' even windows,
 * then their odd ones, with the group count rounded up to a multiple of
 * tile_groups (SlidingWindow.h, section 7; the sm_90a kernel's order for 6:8
 * is tile_groups = 8). Decomposition and lift must use the same value. */

/* *lifted_cols = K' for a rows x cols weight of family family_n.
 * Returns 0, or 2 on bad arguments (including rows * K' overflowing and a
 * negative tile_groups). */
SPARSEOPT_FORMATS_EXPORT int sparseopt_sliding_shape(int64_t rows,
                                                     int64_t cols,
                                                     int family_n,
                                                     int64_t tile_groups,
                                                     int64_t *lifted_cols);

/* Decomposes dense (rows x cols) into expanded (rows x lifted_cols, every
 * element written). Returns 0 on success (then *bad_row and *bad_group are
 * set to -1), 1 if some group of 2N columns has more than 2N-2 nonzeros (then
 * *bad_row and *bad_group identify the first such group in row-major order,
 * covering columns 2N*bad_group .. 2N*bad_group+2N-1, and expanded is not
 * written), 2 on bad arguments. bad_row and bad_group may each be NULL. */
SPARSEOPT_FORMATS_EXPORT int
sparseopt_sliding_decompose(const uint16_t *dense, int64_t rows, int64_t cols,
                            int family_n, int64_t tile_groups,
                            uint16_t *expanded, int64_t *bad_row,
                            int64_t *bad_group);

/* Lifts activations x (m x k) into lifted (m x lifted_cols; columns whose
 * source is >= k become +0). Returns 0, or 2 on bad arguments. */
SPARSEOPT_FORMATS_EXPORT int sparseopt_sliding_lift(const uint16_t *x,
                                                    int64_t m, int64_t k,
                                                    int family_n,
                                                    int64_t tile_groups,
                                                    uint16_t *lifted);

/* In-place magnitude pruning to (2N-2):2N: in every group of 2N columns keeps
 * the 2N-2 largest-magnitude elements (ties -> lower column), zeroes the
 * others. is_bf16 != 0 selects bf16 decoding, otherwise fp16.
 * Returns 0, or 2 on bad arguments. */
SPARSEOPT_FORMATS_EXPORT int sparseopt_sliding_prune(uint16_t *dense,
                                                     int64_t rows,
                                                     int64_t cols,
                                                     int family_n,
                                                     int is_bf16);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSEOPT_C_FORMATS_H */
