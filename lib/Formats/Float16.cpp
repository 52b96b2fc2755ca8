//===- Float16.cpp - fp16 / bf16 <-> float bit conversions ----------------===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Formats/Float16.h"

#include <cstring>

namespace sparseopt {

namespace {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Shifts `mantissa` right by `shift` (1..31) bits, rounding the result to
/// nearest, ties to even.
uint32_t shiftRightRNE(uint32_t mantissa, unsigned shift) {
  uint32_t kept = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    ++kept;
  return kept;
}

} // namespace

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;

  if (exponent == 0x1f) // Inf / NaN: keep the payload.
    return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) // +/-0.
      return bitsToFloat(sign);
    // Subnormal half: value = mantissa * 2^-24. Normalize it so the leading
    // one becomes the implicit bit of a (normal) float.
    int32_t e = -14;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --e;
    }
    mantissa &= 0x3ffu;
    return bitsToFloat(sign | (static_cast<uint32_t>(e + 127) << 23) |
                       (mantissa << 13));
  }
  // Normal: rebias the exponent from 15 to 127.
  return bitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;

  if (exponent == 0xff) {
    if (mantissa == 0) // Infinity.
      return sign | 0x7c00u;
    // NaN: force the quiet bit, keep the upper payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | (mantissa >> 13));
  }

  int32_t e = static_cast<int32_t>(exponent) - 127; // Unbiased exponent.
  if (e > 15) // Too large even before rounding.
    return sign | 0x7c00u;

  if (e >= -14) {
    // Normal half. Rounding may carry into the exponent field, which is
    // exactly right (including the carry from 65504+ into infinity).
    uint32_t rounded =
        shiftRightRNE((static_cast<uint32_t>(e + 15) << 23) | mantissa, 13);
    return static_cast<uint16_t>(sign | rounded);
  }

  if (e >= -25) {
    // Subnormal half (or rounds up to the smallest one): the result is
    // round(value / 2^-24) with the full 24-bit float significand
    // m * 2^(e-23), i.e. m shifted right by -(e+1) bits (14..24).
    uint32_t significand = mantissa | 0x800000u;
    uint32_t rounded =
        shiftRightRNE(significand, static_cast<unsigned>(-(e + 1)));
    return static_cast<uint16_t>(sign | rounded);
  }

  return sign; // Underflows to +/-0 (also covers float subnormals).
}

float bf16ToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBF16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u); // Quiet NaN.
  // Round to nearest even on the low 16 bits; a carry out of the mantissa
  // correctly bumps the exponent (and turns the largest floats into inf).
  uint32_t bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

} // namespace sparseopt
