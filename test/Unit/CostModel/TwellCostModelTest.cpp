//===- TwellCostModelTest.cpp - TwELL FFN or dense, and which consumer ----===//
//
// The TwELL cost model (lib/Transforms/TwellCostModel.h) against the H200
// measurements it was fit to (bf16, d = 2048, F = 5632, M = 16384,
// docs/performance.md): the CUDA-core consumer's speedups at 0.5% and 2%
// active, the tensor-core consumer's at the union fractions of random rows
// (27% and 73%), the break-evens (each model's speedup there is the
// minimum), and the ordering that makes the choice: on random rows the
// tensor cores never beat both, on rows sharing neurons they do.
//
//===----------------------------------------------------------------------===//

#include "TwellCostModel.h"

#include <gtest/gtest.h>

using namespace mlir::sgpu;

namespace {

double randomUnion(double p) {
  double miss = 1.0;
  for (int i = 0; i < 64; ++i)
    miss *= 1.0 - p;
  return 1.0 - miss;
}

TEST(TwellCostModel, CudaCoresMatchTheMeasurements) {
  // Measured: 1.53x at 0.5%, 0.70x at 2% (gated, d = 2048).
  EXPECT_NEAR(twellPredictedSpeedup(2048, true, 0.005), 1.48, 0.1);
  EXPECT_NEAR(twellPredictedSpeedup(2048, true, 0.02), 0.70, 0.1);
}

TEST(TwellCostModel, TensorCoresMatchTheMeasurements) {
  // Measured: 1.24x at 0.5% (union 27%), 0.72x at 2% (union 73%).
  EXPECT_NEAR(randomUnion(0.005), 0.274, 0.002);
  EXPECT_NEAR(twellTensorCorePredictedSpeedup(2048, true, randomUnion(0.005)),
              1.24, 0.05);
  EXPECT_NEAR(twellTensorCorePredictedSpeedup(2048, true, randomUnion(0.02)),
              0.72, 0.05);
}

TEST(TwellCostModel, BreakEvensAreWhereTheMinimumSpeedupIs) {
  for (bool gated : {false, true})
    for (int64_t d : {1024, 2048, 4096, 8192}) {
      double p = twellBreakEvenDensity(d, gated);
      if (p > 0)
        EXPECT_NEAR(twellPredictedSpeedup(d, gated, p), kTwellMinSpeedup, 1e-9);
      double u = twellTensorCoreBreakEvenUnion(d, gated);
      if (u > 0 && u < 1)
        EXPECT_NEAR(twellTensorCorePredictedSpeedup(d, gated, u),
                    kTwellMinSpeedup, 1e-9);
    }
}

TEST(TwellCostModel, RandomRowsNeverPickTheTensorCores) {
  // Independent activations: wherever the tensor cores beat 1.05x of
  // dense, the CUDA cores are faster still.
  for (bool gated : {false, true})
    for (int64_t d : {2048, 4096})
      for (double p = 0.001; p < 0.2; p *= 1.25) {
        double tc = twellTensorCorePredictedSpeedup(d, gated, randomUnion(p));
        if (tc >= kTwellMinSpeedup)
          EXPECT_GT(twellPredictedSpeedup(d, gated, p), tc) << d << " " << p;
      }
}

TEST(TwellCostModel, SharedNeuronsPickTheTensorCores) {
  // 0.5% active but a union of 14% (rows sharing hot neurons).
  double tc = twellTensorCorePredictedSpeedup(2048, true, 0.14);
  EXPECT_GT(tc, twellPredictedSpeedup(2048, true, 0.005));
  EXPECT_GT(tc, kTwellMinSpeedup);
  // Monotonic: a larger union costs more.
  EXPECT_GT(twellTensorCorePredictedSpeedup(2048, true, 0.1),
            twellTensorCorePredictedSpeedup(2048, true, 0.2));
}

TEST(TwellCostModel, TensorCoreShapes) {
  EXPECT_TRUE(twellTensorCoresFit(2048, 5632));
  EXPECT_TRUE(twellTensorCoresFit(4096, 16384));
  EXPECT_FALSE(twellTensorCoresFit(2044, 5632)); // d % 8
  EXPECT_FALSE(twellTensorCoresFit(2048, 5636)); // F % 8
  EXPECT_FALSE(twellTensorCoresFit(2048, 20480)); // F over the limit
}

} // namespace
