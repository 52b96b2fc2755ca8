//===- Float16.h - fp16 / bf16 <-> float bit conversions --------*- C++ -*-===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// Tiny, dependency-free helpers to convert between 32-bit `float` and the two
// 16-bit floating-point formats used by tensor cores, both handled as raw
// `uint16_t` bit patterns:
//
//   * IEEE-754 binary16 ("half", fp16): 1 sign, 5 exponent, 10 mantissa bits.
//   * bfloat16 (bf16): the upper 16 bits of a binary32 float
//     (1 sign, 8 exponent, 7 mantissa bits).
//
// float -> 16-bit conversions round to nearest, ties to even, overflow to
// +/-infinity, and map NaN to a quiet NaN of the same sign. Subnormals are
// supported in both directions (no flush-to-zero).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_FORMATS_FLOAT16_H
#define SPARSEOPT_FORMATS_FLOAT16_H

#include <cstdint>

namespace sparseopt {

/// Decodes IEEE binary16 bits to float (exact: every half is a float).
float halfToFloat(uint16_t bits);

/// Encodes a float as IEEE binary16 bits, round-to-nearest-even.
uint16_t floatToHalf(float value);

/// Decodes bfloat16 bits to float (exact).
float bf16ToFloat(uint16_t bits);

/// Encodes a float as bfloat16 bits, round-to-nearest-even.
uint16_t floatToBF16(float value);

} // namespace sparseopt

#endif // SPARSEOPT_FORMATS_FLOAT16_H
