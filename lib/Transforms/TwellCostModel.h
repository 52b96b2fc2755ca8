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
// The constants below are fit by hand to per-kernel profiles. The unit
// test replays every committed FFN record (TwellCostRecords.inc, generated
// by bench/twell/cost_records.py) against the choice this model makes.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H
#define SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H

#include <algorithm>
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

// The tensor-core consumer (convert-sgpu-to-gpu twell-consumer=
// tensor-cores) over blocks of 64 rows, given the measured union fraction u
// of the blocks (the stat twell<i>.block_neurons: the neurons active in any
// row of a block, out of F, averaged), per token row in the same units:
//   TC     = 1                        the gate (or up) GEMM, cuBLASLt
//          + R / (d * Bhead)          the block pack reads H (F bf16 per row)
//          + u * R / (d * Bcoef)      and writes its coefficients
//          + u * k * R / Rgather      the gathered GEMMs (k = 2 gated: up
//                                     and down, 1 ungated: down) over the
//                                     union, at their measured rate
//          + Cup                      gated: the up GEMM's fixed part
// fit to the H200 profile of d = 2048, F = 5632, M = 16384 at 0.5% and 2%
// active (u = 0.27, 0.73): block pack 90 + 177 u us, up GEMM 112 + 945 u
// us, down GEMM 23 + 973 u us (bench/results/twell_tensor_cores_h200.json,
// docs/performance.md); it reproduces the measured 1.24x and 0.72x.

/// The block pack's fixed pass over H: M * F * 2 bytes in 90 us.
inline constexpr double kTwellBlocksBandwidth = 2.05e12;
/// Its coefficients: u * M * F * 2 bytes in 177 u us.
inline constexpr double kTwellCoefBandwidth = 1.04e12;
/// The gathered GEMMs: 2 * M * d * F FLOP each over the union fraction u in
/// about 960 u us.
inline constexpr double kTwellGatherRate = 394e12;
/// The gated up GEMM's part that does not scale with u (112 us against the
/// 547 us of the gate GEMM at the model's rate).
inline constexpr double kTwellUpFixed = 0.205;

/// The shapes the tensor-core consumer takes (the GPU lowering's
/// whyNoTwellTensorCores gives the reasons): d and F multiples of 8 (its
/// 16-byte copies) and F at most kTwellTensorCoreMaxF (the block pack's
/// neuron list in shared memory, 16-bit indices).
inline constexpr int64_t kTwellTensorCoreMaxF = 16384;
inline bool twellTensorCoresFit(int64_t d, int64_t f) {
  return d % 8 == 0 && f % 8 == 0 && f <= kTwellTensorCoreMaxF;
}

/// The predicted speedup over dense of the tensor-core consumer for an FFN
/// of output width `d` whose blocks of 64 rows have the union fraction
/// `unionFraction` (0..1).
inline double twellTensorCorePredictedSpeedup(int64_t d, bool gated,
                                              double unionFraction) {
  double g = gated ? 3.0 : 2.0, k = gated ? 2.0 : 1.0;
  double tc = 1.0 + kTwellGemmRate / (double(d) * kTwellBlocksBandwidth) +
              unionFraction * kTwellGemmRate / (double(d) * kTwellCoefBandwidth) +
              unionFraction * k * kTwellGemmRate / kTwellGatherRate +
              (gated ? kTwellUpFixed : 0.0);
  return g / tc;
}

/// The largest union fraction at which the tensor-core consumer is chosen
/// (twellTensorCorePredictedSpeedup against kTwellMinSpeedup), for the
/// run-time guard of the block_neurons stat; 0 when it never pays.
inline double twellTensorCoreBreakEvenUnion(int64_t d, bool gated) {
  double g = gated ? 3.0 : 2.0, k = gated ? 2.0 : 1.0;
  double budget = g / kTwellMinSpeedup - 1.0 -
                  kTwellGemmRate / (double(d) * kTwellBlocksBandwidth) -
                  (gated ? kTwellUpFixed : 0.0);
  double perUnion = kTwellGemmRate / (double(d) * kTwellCoefBandwidth) +
                    k * kTwellGemmRate / kTwellGatherRate;
  return budget <= 0 ? 0.0 : std::min(1.0, budget / perUnion);
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_TWELLCOSTMODEL_H
