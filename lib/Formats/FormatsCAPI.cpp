//===- FormatsCAPI.cpp - C API for sparse weight formats ------------------===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// Thin extern "C" wrappers (see include/sparse-opt-c/Formats.h) around the
// C++ implementation in Sparse24.cpp and SlidingWindow.cpp. They validate
// arguments and translate results into integer status codes; nothing here
// throws.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt-c/Formats.h"

#include "sparse-opt/Formats/SlidingWindow.h"
#include "sparse-opt/Formats/Sparse24.h"

#include <limits>

using namespace sparseopt;

namespace {

/// True when rows/cols are positive and the padded element count of a
/// rows x cols matrix fits in int64_t.
bool validSize(int64_t rows, int64_t cols) {
  constexpr int64_t maxValue = std::numeric_limits<int64_t>::max();
  if (rows <= 0 || cols <= 0)
    return false;
  // Leave room for rounding up to 16 / 32.
  if (rows > maxValue - 16 || cols > maxValue - 32)
    return false;
  Sparse24Shape shape = getSparse24Shape(rows, cols);
  return shape.paddedRows <= maxValue / shape.paddedCols;
}

/// True when the family is supported, rows/cols are positive and the lifted
/// element count rows * K' fits in int64_t (K' >= cols, so rows * cols fits
/// too).
bool validSlideSize(int64_t rows, int64_t cols, int familyN,
                    int64_t tileGroups) {
  if (rows <= 0 || cols <= 0 || !isSupportedFamily(familyN) || tileGroups < 0)
    return false;
  SlideShape shape = getSlideShape(rows, cols, familyN, tileGroups);
  if (shape.liftedCols <= 0) // K' overflowed.
    return false;
  return rows <= std::numeric_limits<int64_t>::max() / shape.liftedCols;
}

} // namespace

extern "C" {

int sparseopt_sparse24_sizes(int64_t rows, int64_t cols, int64_t *num_values,
                             int64_t *num_meta_words) {
  if (!num_values || !num_meta_words || !validSize(rows, cols))
    return SPARSEOPT_BAD_ARGUMENT;
  Sparse24Shape shape = getSparse24Shape(rows, cols);
  *num_values = shape.numValues();
  *num_meta_words = shape.numMetaWords();
  return SPARSEOPT_OK;
}

int sparseopt_sparse24_compress(const uint16_t *dense, int64_t rows,
                                int64_t cols, uint16_t *values, uint32_t *meta,
                                int64_t *bad_row, int64_t *bad_group) {
  if (!dense || !values || !meta || !validSize(rows, cols))
    return SPARSEOPT_BAD_ARGUMENT;
  std::optional<PatternViolation> violation =
      compressSparse24(dense, rows, cols, values, meta);
  if (bad_row)
    *bad_row = violation ? violation->row : -1;
  if (bad_group)
    *bad_group = violation ? violation->group : -1;
  return violation ? SPARSEOPT_PATTERN_VIOLATION : SPARSEOPT_OK;
}

int sparseopt_sparse24_decompress(const uint16_t *values, const uint32_t *meta,
                                  int64_t rows, int64_t cols, uint16_t *dense) {
  if (!values || !meta || !dense || !validSize(rows, cols))
    return SPARSEOPT_BAD_ARGUMENT;
  decompressSparse24(values, meta, rows, cols, dense);
  return SPARSEOPT_OK;
}

int sparseopt_sparse24_prune(uint16_t *dense, int64_t rows, int64_t cols,
                             int is_bf16) {
  if (!dense || !validSize(rows, cols))
    return SPARSEOPT_BAD_ARGUMENT;
  pruneTo24(dense, rows, cols, is_bf16 != 0);
  return SPARSEOPT_OK;
}

int sparseopt_sliding_shape(int64_t rows, int64_t cols, int family_n,
                            int64_t tile_groups, int64_t *lifted_cols) {
  if (!lifted_cols || !validSlideSize(rows, cols, family_n, tile_groups))
    return SPARSEOPT_BAD_ARGUMENT;
  *lifted_cols = getSlideShape(rows, cols, family_n, tile_groups).liftedCols;
  return SPARSEOPT_OK;
}

int sparseopt_sliding_decompose(const uint16_t *dense, int64_t rows,
                                int64_t cols, int family_n,
                                int64_t tile_groups, uint16_t *expanded,
                                int64_t *bad_row, int64_t *bad_group) {
  if (!dense || !expanded ||
      !validSlideSize(rows, cols, family_n, tile_groups))
    return SPARSEOPT_BAD_ARGUMENT;
  std::optional<PatternViolation> violation = decomposeSliding(
      dense, rows, cols, family_n, expanded, tile_groups);
  if (bad_row)
    *bad_row = violation ? violation->row : -1;
  if (bad_group)
    *bad_group = violation ? violation->group : -1;
  return violation ? SPARSEOPT_PATTERN_VIOLATION : SPARSEOPT_OK;
}

int sparseopt_sliding_lift(const uint16_t *x, int64_t m, int64_t k,
                           int family_n, int64_t tile_groups,
                           uint16_t *lifted) {
  if (!x || !lifted || !validSlideSize(m, k, family_n, tile_groups))
    return SPARSEOPT_BAD_ARGUMENT;
  liftActivations(x, m, k, family_n, lifted, tile_groups);
  return SPARSEOPT_OK;
}

int sparseopt_sliding_prune(uint16_t *dense, int64_t rows, int64_t cols,
                            int family_n, int is_bf16) {
  if (!dense || !validSlideSize(rows, cols, family_n, 0))
    return SPARSEOPT_BAD_ARGUMENT;
  pruneToSliding(dense, rows, cols, family_n, is_bf16 != 0);
  return SPARSEOPT_OK;
}

} // extern "C"
