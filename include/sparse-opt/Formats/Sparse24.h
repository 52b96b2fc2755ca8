//===- Sparse24.h - 2:4 structured-sparse weight compression ----*- C++ -*-===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// Compression of a dense 16-bit-float weight matrix with 2:4 structured
// sparsity into the two arrays consumed by NVIDIA's warp-level sparse tensor
// core instruction
//
//   mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.{f16,bf16}
//
// (sparsity selector 0). The sparse matrix is the A operand (M x K, row
// major); the dense activations are the B operand.
//
// No MLIR or CUDA dependency: this is plain C++17 and can be used by the
// compiler, by host-side runtime code and by tests alike.
//
// ---------------------------------------------------------------------------
// 1. Elements and the dense input
// ---------------------------------------------------------------------------
// Elements are fp16 or bf16 values handled as raw `uint16_t` bits; the
// compressor never does arithmetic on them. An element is *zero* iff
// `(bits & 0x7fff) == 0`, so negative zero (0x8000) counts as zero.
//
// The dense weight W is row-major `rows x cols`:
//   rows = output features (M of the mma), cols = K (the reduction axis).
//
// ---------------------------------------------------------------------------
// 2. Padding
// ---------------------------------------------------------------------------
// One mma covers a 16 x 32 (M x K) tile of W, so the matrix is logically
// zero-padded to
//   paddedRows = roundUp(rows, 16),  paddedCols = roundUp(cols, 32).
// Padded elements are zero. Both output arrays are sized for the padded
// matrix (see Sparse24Shape).
//
// ---------------------------------------------------------------------------
// 3. The 2:4 pattern
// ---------------------------------------------------------------------------
// Each row is cut into *chunks* of 4 consecutive columns: chunk c holds
// columns 4c .. 4c+3. Every chunk may contain at most 2 nonzeros. (A chunk is
// also called a "group" in violation reports; group index == chunk index.)
//
// ---------------------------------------------------------------------------
// 4. Values array
// ---------------------------------------------------------------------------
// `uint16_t values[paddedRows][paddedCols / 2]`, row-major. Each chunk keeps
// exactly 2 slots, so chunk c of row r stores its two kept elements at
// compressed columns 2c and 2c+1:
//
//   dense row r :  | w0 w1 w2 w3 | w4 w5 w6 w7 | ...     (chunks 0, 1, ...)
//   values row r:  | v0 v1       | v2 v3       | ...
//
// ---------------------------------------------------------------------------
// 5. Per-chunk encoding (one 4-bit "nibble" per chunk)
// ---------------------------------------------------------------------------
// Each chunk selects two positions p0 < p1 (0..3) inside the chunk; the slots
// hold (W[p0], W[p1]) and the nibble is `p0 | (p1 << 2)`:
//
//   nonzeros in chunk        positions (p0,p1)   slots          nibble
//   2, at a < b              (a, b)              (W[a], W[b])   a | b<<2
//   1, at p in {0,1,2}       (p, 3)              (x, 0)         p | 3<<2
//   1, at p = 3              (0, 3)              (0, x)         0 | 3<<2
//   0 (also all padding)     (0, 1)              (0, 0)         0b0100
//
// Positions are always strictly ascending (p0 < p1), as required by the
// `::ordered_metadata` form of the instruction. A slot that holds a zero
// element always stores canonical +0 (0x0000), even if the input had -0.
//
// ---------------------------------------------------------------------------
// 6. Metadata array (uint32_t words, one per lane register)
// ---------------------------------------------------------------------------
// Four consecutive chunks (16 dense columns) form a 16-bit quantity:
//
//   meta16(r, q) = sum_{c'=0..3} nibble(r, 4q + c') << (4 * c')
//
// i.e. for the 16-column group q of row r, chunk 4q sits in bits 0..3, chunk
// 4q+1 in bits 4..7, chunk 4q+2 in bits 8..11 and chunk 4q+3 in bits 12..15.
//
// The metadata array has `paddedRows * paddedCols / 32` words, stored in the
// exact order in which the lanes of a warp consume them. Let
// KS = paddedCols / 32 (number of 32-wide k-steps). For
//   rt in [0, paddedRows/16)   row tile (the M=16 rows of one mma)
//   ks in [0, KS)              k step   (the K=32 columns of one mma)
//   g  in [0, 8)               lane group (row within the upper 8 rows)
//   p  in [0, 2)               which 16-column half of the k step
// the word at index
//
//   ((rt * KS + ks) * 8 + g) * 2 + p
//
// is
//
//   meta16(rt*16 + g, 2*ks + p) | (meta16(rt*16 + g + 8, 2*ks + p) << 16)
//
// Why this layout: in mma.sp m16n8k32 with sparsity selector 0, lane L of
// the warp (g = L >> 2, t = L & 3) contributes the metadata register iff
// t in {0, 1}. That register's low 16 bits describe row g of the 16x32 A tile
// and its high 16 bits row g + 8; t & 1 picks the low (p = 0: dense columns
// 0..15, chunks 0..3 of the k step) or the high (p = 1: columns 16..31,
// chunks 4..7) half of the k step. So every (rt, ks) tile owns 16 contiguous
// words, and a kernel lane simply loads
//
//   meta[((rt * KS + ks) * 8 + g) * 2 + (t & 1)]
//
// Example, one 16x32 tile (rt = 0, ks = 0, KS = 1):
//   word 0 = meta16(row 0, cols 0..15)  | meta16(row 8, cols 0..15)  << 16
//   word 1 = meta16(row 0, cols 16..31) | meta16(row 8, cols 16..31) << 16
//   word 2 = meta16(row 1, cols 0..15)  | meta16(row 9, cols 0..15)  << 16
//   ...
//   word 15 = meta16(row 7, cols 16..31) | meta16(row 15, cols 16..31) << 16
// An all-zero tile therefore has every word equal to 0x44444444.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_FORMATS_SPARSE24_H
#define SPARSEOPT_FORMATS_SPARSE24_H

#include <cstdint>
#include <optional>

namespace sparseopt {

/// Logical and padded sizes of a 2:4-compressed matrix.
struct Sparse24Shape {
  int64_t rows = 0;       ///< Rows of the dense (unpadded) matrix.
  int64_t cols = 0;       ///< Columns (K) of the dense (unpadded) matrix.
  int64_t paddedRows = 0; ///< roundUp(rows, 16).
  int64_t paddedCols = 0; ///< roundUp(cols, 32).

  /// Number of uint16_t elements in the values array:
  /// paddedRows * paddedCols / 2.
  int64_t numValues() const { return paddedRows * (paddedCols / 2); }
  /// Number of uint32_t words in the metadata array:
  /// paddedRows * paddedCols / 32.
  int64_t numMetaWords() const { return paddedRows * (paddedCols / 32); }
  /// Number of 32-wide k steps (KS in the layout description).
  int64_t numKSteps() const { return paddedCols / 32; }
  /// Number of 16-row tiles.
  int64_t numRowTiles() const { return paddedRows / 16; }
};

/// Computes the padded shape for a `rows x cols` dense matrix.
/// Precondition: rows >= 0, cols >= 0.
Sparse24Shape getSparse24Shape(int64_t rows, int64_t cols);

/// A chunk of 4 columns with more than 2 nonzeros.
struct PatternViolation {
  int64_t row;   ///< Row of the offending chunk.
  int64_t group; ///< Chunk index: the chunk covers columns 4*group..4*group+3.
  int nonzeros;  ///< Number of nonzeros found in that chunk (3 or 4).
};

/// Returns std::nullopt when every chunk of the row-major `rows x cols`
/// matrix has <= 2 nonzeros, otherwise the first offending chunk in row-major
/// (row, then chunk) order. A trailing partial chunk (cols % 4 != 0) only
/// counts its real columns.
std::optional<PatternViolation>
findSparse24Violation(const uint16_t *dense, int64_t rows, int64_t cols);

/// Compresses the row-major `rows x cols` matrix `dense` into `values`
/// (numValues() uint16_t) and `meta` (numMetaWords() uint32_t), both caller
/// allocated and sized by getSparse24Shape(rows, cols). Every element of both
/// outputs is written, padding included.
///
/// If the 2:4 pattern is broken, returns the first violation (same as
/// findSparse24Violation) and leaves `values` / `meta` untouched; otherwise
/// returns std::nullopt.
std::optional<PatternViolation> compressSparse24(const uint16_t *dense,
                                                 int64_t rows, int64_t cols,
                                                 uint16_t *values,
                                                 uint32_t *meta);

/// Inverse of compressSparse24: rebuilds the dense, unpadded, row-major
/// `rows x cols` matrix. Positions not selected by the metadata become +0;
/// kept slots are copied bit-exactly. Anything that decodes into the padding
/// is ignored.
void decompressSparse24(const uint16_t *values, const uint32_t *meta,
                        int64_t rows, int64_t cols, uint16_t *dense);

/// Decodes the metadata: returns the logical (dense) column, in
/// [0, shape.paddedCols), of compressed element (row, compressedCol), where
/// 0 <= row < shape.paddedRows and 0 <= compressedCol < shape.paddedCols / 2.
/// values[row * paddedCols/2 + compressedCol] multiplies that dense column.
int64_t sparse24LogicalColumn(const uint32_t *meta, const Sparse24Shape &shape,
                              int64_t row, int64_t compressedCol);

/// Magnitude pruning (for tests and benchmarks): in every chunk of 4 columns,
/// keeps the 2 elements of largest magnitude (ties -> lower column index),
/// sets the others to +0, in place. Elements are fp16 (`isBF16 == false`) or
/// bf16 (`isBF16 == true`) bits; NaN counts as larger than any number. A
/// trailing partial chunk only considers its real columns.
void pruneTo24(uint16_t *dense, int64_t rows, int64_t cols, bool isBF16);

} // namespace sparseopt

#endif // SPARSEOPT_FORMATS_SPARSE24_H
