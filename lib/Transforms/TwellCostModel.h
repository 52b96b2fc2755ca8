//===- TwellCostModel.h - TwELL FFN or dense FFN ---------------*- C++ -*-===//
//
// Whether a ReLU FFN runs faster as TwELL (gate GEMM + pack + sparse
// consumer) or dense, given the density of its activations measured on
// sample inputs (a calibration profile). sgpu-sparsify-ffn consults it when
// it is given densities.
//
// The model, per token row (times divided by the gate GEMM's):
//   dense  = G                        G = 3 GEMMs gated, 2 ungated
//   TwELL  = 1                        the gate (or up) GEMM, cuBLASLt
//          + R / (d * Bpack)          the pack reads H (F bf16 per row)
//          + p * k * R / Bcons        the consumer reads, per active neuron,
//                                     k rows of d bf16 (k = 2 gated: Wu and
//                                     WdT; 1 ungated: WdT)
// with R the dense GEMM rate and Bpack, Bcons the bandwidths the pack and
// the consumer reach, all measured on an H200 (bf16, d = 2048, F = 5632,
// M = 16384; bench/results/twell_ffn_h200.json, docs/performance.md).
// The consumer is bound by L2/DRAM traffic (random activations share no
// weight rows between tokens), so its cost is linear in p.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H
#define SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H

#include <cstdint>

namespace mlir {
namespace sgpu {

/// Dense GEMM rate, FLOP/s: the three GEMMs of the dense gated FFN (2 * M *
/// d * F each) in 1.64 ms.
inline constexpr double kTwellGemmRate = 691e12;
/// The pack kernel: M * F * 2 bytes of H in 74 us.
inline constexpr double kTwellPackBandwidth = 2.49e12;
/// The consumer: 16384 rows * 28 active neurons * 2 rows of 4 KiB in
/// 486 us at 0.5% active.
inline constexpr double kTwellConsumerBandwidth = 7.7e12;
/// TwELL is chosen when the model predicts at least this speedup: the
/// margin keeps a mispredicted point above 0.95x of dense.
inline constexpr double kTwellMinSpeedup = 1.05;

/// The predicted speedup of TwELL over dense for an FFN with output width
/// `d` and active fraction `density` (0..1).
inline double twellPredictedSpeedup(int64_t d, bool gated, double density) {
  double g = gated ? 3.0 : 2.0, k = gated ? 2.0 : 1.0;
  double twell = 1.0 + kTwellGemmRate / (double(d) * kTwellPackBandwidth) +
                 density * k * kTwellGemmRate / kTwellConsumerBandwidth;
  return g / twell;
}

/// The largest density at which TwELL is chosen (the break-even of
/// twellPredictedSpeedup against kTwellMinSpeedup), for remarks.
inline double twellBreakEvenDensity(int64_t d, bool gated) {
  double g = gated ? 3.0 : 2.0, k = gated ? 2.0 : 1.0;
  double budget = g / kTwellMinSpeedup - 1.0 -
                  kTwellGemmRate / (double(d) * kTwellPackBandwidth);
  return budget <= 0 ? 0.0
                     : budget * kTwellConsumerBandwidth / (k * kTwellGemmRate);
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H
