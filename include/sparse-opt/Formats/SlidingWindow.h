//===- SlidingWindow.h - (2N-2):2N sparsity as 2:4 windows ------*- C++ -*-===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// "SlideSparse": running a weight with (2N-2):2N structured sparsity (4:6,
// 6:8, 8:10, ...) on the 2:4 sparse tensor cores (mma.sp, see Sparse24.h).
//
// The hardware only knows 2:4. A (2N-2):2N weight keeps more of the model
// (density (N-1)/N instead of 1/2) but is not 2:4. The trick: cover every
// group of 2N columns with N-1 *overlapping* windows of 4 columns at stride
// 2, hand each nonzero to exactly one window (at most 2 per window), and lay
// the windows side by side. The result W' is an ordinary 2:4 matrix over a
// longer reduction axis K'; the activations are "lifted" the same way
// (columns shared by two windows are duplicated), so W' x' == W x exactly.
//
// No MLIR or CUDA dependency: plain C++17, like Sparse24.h.
//
// ---------------------------------------------------------------------------
// 1. Families
// ---------------------------------------------------------------------------
// Family N (2 <= N <= 8) is the pattern (2N-2):2N:
//
//   N   pattern   density   K'/K (lifted / original reduction length)
//   2   2:4       1/2       1      (the identity: W' is W, zero-padded)
//   3   4:6       2/3       4/3
//   4   6:8       3/4       3/2
//   5   8:10      4/5       8/5
//   8   14:16     7/8       7/4
//
// mma.sp over K' does the work of a dense product over K'/2 = K (N-1)/N,
// i.e. exactly the kept fraction of K: the ideal speed-up over a dense
// product is N / (N-1), the inverse of the density.
//
// ---------------------------------------------------------------------------
// 2. Elements
// ---------------------------------------------------------------------------
// As in Sparse24.h: 16-bit floats (fp16 or bf16) handled as raw `uint16_t`
// bits, never computed on. An element is *zero* iff `(bits & 0x7fff) == 0`
// (so -0 is zero). W is row-major `rows x cols`, cols = K (the reduction
// axis); activations x are row-major `M x K` (one row per token).
//
// ---------------------------------------------------------------------------
// 3. Groups and windows
// ---------------------------------------------------------------------------
// K is zero-padded to a multiple of 2N: there are G = ceil(K / 2N) groups,
// group g covering columns g*2N .. g*2N + 2N-1. Inside a group, window j
// (0 <= j < N-1) covers the 4 group positions 2j .. 2j+3. For N = 4 (6:8):
//
//   group position   0  1  2  3  4  5  6  7
//   window 0        [0  1  2  3]
//   window 1              [2  3  4  5]
//   window 2                    [4  5  6  7]
//
// Position p is covered by windows p/2 - 1 and p/2, clipped to [0, N-2]:
// the first and last pair of positions by one window, the others by two.
//
// ---------------------------------------------------------------------------
// 4. The lifted column space
// ---------------------------------------------------------------------------
// Each group becomes 4(N-1) lifted columns, window after window:
//
//   K' = G * 4(N-1)
//   lifted column c' = g*4(N-1) + 4j + l   (0 <= l < 4)
//     <->  original column g*2N + 2j + l   (its "source" column)
//
// For N = 3 (4:6), one group of 6 columns lifts to 8:
//
//   lifted c'   0 1 2 3 | 4 5 6 7 | 8 9 10 11 | 12 13 14 15 | ...
//   source      0 1 2 3 | 2 3 4 5 | 6 7  8  9 |  8  9 10 11 | ...
//               window 0  window 1  window 0    window 1
//                   group 0             group 1
//
// A source column >= K is padding (its activation is 0).
//
// ---------------------------------------------------------------------------
// 5. Assigning nonzeros to windows (the contract other code relies on)
// ---------------------------------------------------------------------------
// Per row and group: walk the group's nonzeros left to right and give each
// to the FIRST window (lowest j) that covers its position and has fewer than
// 2 nonzeros so far. A group with more than 2N-2 nonzeros (the windows' total
// capacity) is a violation; the first one in row-major (row, then group)
// order is reported as a PatternViolation {row, group, nonzeros}.
//
// Why the greedy never fails on a group with <= 2N-2 nonzeros. Call
// positions 2k, 2k+1 "pair k" (k = 0..N-1); pair 0 reaches only window 0,
// pair N-1 only window N-2, pair k otherwise windows k-1 and k.
//  (a) Only the last pair can fail: pair k < N-1 may always use window k,
//      which is still empty when pair k starts (only pairs k and k+1 reach
//      it) and pair k has at most 2 nonzeros.
//  (b) Suppose a nonzero of pair N-1 finds window N-2 full. Let j be the
//      smallest index such that windows j..N-2 are all full at that moment.
//      If j > 0, window j-1 still has a free slot, so it had one whenever a
//      nonzero of pair j was placed, and the greedy put all of pair j into
//      window j-1. Then windows j..N-2 were filled only by pairs j+1..N-1:
//      2(N-1-j) nonzeros, plus the one that failed, all in pairs j+1..N-1
//      which have only 2(N-1-j) positions. Contradiction, so j = 0: all
//      2N-2 slots are full and the failing nonzero is number 2N-1 or later.
// So the greedy succeeds iff the group has <= 2N-2 nonzeros (the unit test
// also checks every mask for N = 2..6). The implementation still reports a
// greedy failure as a violation rather than returning wrong data.
//
// A consequence worth knowing: the window index is non-decreasing along the
// group (a nonzero never lands left of an earlier one's window, since a
// window skipped as full stays full), so the lifted columns of a row's
// nonzeros are in the same order as their original columns. A group with
// exactly 2N-2 nonzeros fills every window with exactly 2.
//
// ---------------------------------------------------------------------------
// 6. The expanded weight and the lifted activations
// ---------------------------------------------------------------------------
//   W'[r][g*4(N-1) + 4j + l] = W[r][g*2N + 2j + l]  if that nonzero was
//                                                  assigned to window j,
//                            = +0                  otherwise;
//   x'[m][g*4(N-1) + 4j + l] = x[m][g*2N + 2j + l]  (bits copied),
//                            = +0                  if that column >= K.
// W' is `rows x K'`, x' is `M x K'`. Every window is one 2:4 chunk of W'
// (chunk index = g*(N-1) + j), holding at most 2 nonzeros, so W' satisfies
// 2:4 and compressSparse24(W', rows, K') yields the mma.sp operands. Each
// nonzero of W appears exactly once in W', next to a copy of its own
// activation, hence for every row r and token m
//
//   sum_c' W'[r][c'] * x'[m][c']  ==  sum_k W[r][k] * x[m][k]
//
// term by term (the extra terms are products with +0).
//
// Example, N = 4 (6:8), one group with nonzeros a..f at positions 1,2,3,4,6,7:
//   pos 1 -> window 0; pos 2 -> window 0 (now full); pos 3 -> window 1;
//   pos 4 -> window 1 (now full); pos 6, 7 -> window 2.
//   W  = [0 a b c d 0 e f]
//   W' = [0 a b 0 | 0 c d 0 | 0 0 e f]
//
// ---------------------------------------------------------------------------
// 7. The tiled window order (tileGroups > 0)
// ---------------------------------------------------------------------------
// The order of the chunks along K' is free, as long as W' and x' use the same
// one. The sm_90a GEMM lifts x inside its operand loads (no x' in global
// memory) and wants K' cut in tiles of `tileGroups` groups where every tile
// holds first the EVEN windows of its groups (group after group), then the
// ODD ones:
//
//   tile t = g / tileGroups, gl = g % tileGroups, E = ceil((N-1)/2) even and
//   O = floor((N-1)/2) odd windows per group, base = t * tileGroups * (N-1):
//     chunk(g, j even) = base + gl*E + j/2
//     chunk(g, j odd)  = base + tileGroups*E + gl*O + (j-1)/2
//
// Even windows 0, 2, 4, ... cover group positions [0, 4E) side by side, so
// for 6:8 (N = 4, E = 2, O = 1) with 8 groups per tile the first 64 lifted
// columns of a tile are the tile's 64 original columns, in place, and only
// the last 32 (window 1 of each group: positions 2..5) are a gather:
//
//   lifted (tile t)  0 .. 63              | 64 .. 95
//   source           64t + 0 .. 64t + 63  | 64t + 8gl + 2 + l  (4gl + l)
//
// The group count is rounded up to a multiple of tileGroups (zero groups past
// K), so K' = roundUp(G, tileGroups) * 4(N-1). tileGroups = 0 is the plain
// order of section 4.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_FORMATS_SLIDINGWINDOW_H
#define SPARSEOPT_FORMATS_SLIDINGWINDOW_H

#include "sparse-opt/Formats/Sparse24.h"

#include <cstdint>
#include <optional>

namespace sparseopt {

/// Sizes of a (2N-2):2N weight and of its lifted 2:4 form.
struct SlideShape {
  int64_t rows = 0;       ///< Rows of W (output features).
  int64_t cols = 0;       ///< Columns of W: K, the reduction axis.
  int64_t n = 0;          ///< Family N: the pattern is (2N-2):2N.
  int64_t groups = 0;     ///< G = ceil(K / 2N); 0 when invalid (see below).
  int64_t liftedCols = 0; ///< K' = G * 4(N-1).
};

/// True for the supported families, 2 <= familyN <= 8.
bool isSupportedFamily(int familyN);

/// Sizes for a `rows x cols` weight of family `familyN`, the groups rounded
/// up to a multiple of `tileGroups` when it is positive (section 7). Never
/// asserts: returns groups = liftedCols = 0 for an unsupported family,
/// negative sizes or tileGroups, or a K' that would overflow int64_t (and,
/// legitimately, for cols = 0).
SlideShape getSlideShape(int64_t rows, int64_t cols, int familyN,
                         int64_t tileGroups = 0);

/// The lifted chunk (4 columns of K') of window `window` of group `group`:
/// g*(N-1) + j in the plain order, section 7's formula for tileGroups > 0.
/// Precondition: supported family, 0 <= window < N-1, group >= 0.
int64_t liftedChunk(int64_t group, int64_t window, int familyN,
                    int64_t tileGroups = 0);

/// The original column that lifted column `liftedCol` copies (section 4, or
/// section 7 for tileGroups > 0): g*2N + 2j + l. The result may be >= K,
/// meaning padding (activation 0). Returns -1 for an unsupported family, a
/// negative `liftedCol` or a negative tileGroups.
int64_t liftedSourceColumn(int64_t liftedCol, int familyN,
                           int64_t tileGroups = 0);

/// Returns std::nullopt when every group of 2N columns of the row-major
/// `rows x cols` matrix can be decomposed (<= 2N-2 nonzeros), otherwise the
/// first offending group in row-major order; `group` is the group index
/// (columns 2N*group ..) and `nonzeros` its nonzero count. A trailing partial
/// group only counts its real columns. Precondition: supported family.
std::optional<PatternViolation> findSlidingViolation(const uint16_t *dense,
                                                     int64_t rows, int64_t cols,
                                                     int familyN);

/// Writes the expanded 2:4 weight W' (section 6, chunks in the order of
/// `tileGroups`, section 7) into `expanded`, which holds `rows x liftedCols`
/// uint16_t (getSlideShape with the same tileGroups); every element is
/// written. On a violation returns it (same as findSlidingViolation) and
/// leaves `expanded` untouched; otherwise returns std::nullopt.
/// Precondition: supported family, tileGroups >= 0.
std::optional<PatternViolation> decomposeSliding(const uint16_t *dense,
                                                 int64_t rows, int64_t cols,
                                                 int familyN,
                                                 uint16_t *expanded,
                                                 int64_t tileGroups = 0);

/// Writes the lifted activations x' (section 6, in the order of
/// `tileGroups`) of the row-major `m x k` matrix `x` into `lifted`
/// (`m x liftedCols`, every element written).
/// Precondition: supported family, tileGroups >= 0.
void liftActivations(const uint16_t *x, int64_t m, int64_t k, int familyN,
                     uint16_t *lifted, int64_t tileGroups = 0);

/// Magnitude pruning (for tests and benchmarks): in every group of 2N
/// columns keeps the 2N-2 elements of largest magnitude (ties -> lower
/// column), sets the others to +0, in place. fp16 (`isBF16 == false`) or
/// bf16 bits; NaN counts as larger than any number. A trailing partial group
/// only considers its real columns (untouched when it has <= 2N-2 of them).
/// Precondition: supported family.
void pruneToSliding(uint16_t *dense, int64_t rows, int64_t cols, int familyN,
                    bool isBF16);

} // namespace sparseopt

#endif // SPARSEOPT_FORMATS_SLIDINGWINDOW_H
