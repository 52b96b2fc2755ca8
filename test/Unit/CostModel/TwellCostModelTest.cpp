//===- TwellCostModelTest.cpp - TwELL FFN or dense, and which consumer ----===//
//
// The TwELL cost model (lib/Transforms/TwellCostModel.h) against the H200
// measurements it was fit to (bf16, d = 2048, F = 5632, M = 16384,
// docs/performance.md): the CUDA-core consumer's speedups at 0.5% and 2%
// active, the tensor-core consumer's at the union fractions of random rows
// (27% and 73%), the break-evens (each model's speedup there is the
// minimum), and the ordering that makes the choice: on random rows the
// tensor cores never beat both, on rows sharing neurons they do. Then every
// committed TwELL FFN record (TwellCostRecords.inc, generated from
// bench/results/ by bench/twell/cost_records.py) against the choice
// sgpu-sparsify-ffn makes from the model.
//
//===----------------------------------------------------------------------===//

#include "TwellCostModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

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
      if (p > 0) {
        EXPECT_NEAR(twellPredictedSpeedup(d, gated, p), kTwellMinSpeedup, 1e-9);
      }
      double u = twellTensorCoreBreakEvenUnion(d, gated);
      if (u > 0 && u < 1) {
        EXPECT_NEAR(twellTensorCorePredictedSpeedup(d, gated, u),
                    kTwellMinSpeedup, 1e-9);
      }
    }
}

TEST(TwellCostModel, RandomRowsNeverPickTheTensorCores) {
  // Independent activations: wherever the tensor cores beat 1.05x of
  // dense, the CUDA cores are faster still.
  for (bool gated : {false, true})
    for (int64_t d : {2048, 4096})
      for (double p = 0.001; p < 0.2; p *= 1.25) {
        double tc = twellTensorCorePredictedSpeedup(d, gated, randomUnion(p));
        if (tc >= kTwellMinSpeedup) {
          EXPECT_GT(twellPredictedSpeedup(d, gated, p), tc) << d << " " << p;
        }
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

struct TwellMeasured {
  int consumer; // 0: CUDA cores, 1: tensor cores
  int64_t m, d, f;
  double active, measuredActive, speedup;
  const char *record;
};

const TwellMeasured kMeasured[] = {
#define SPARSEOPT_TWELL_MEASURED(c, m, d, f, a, ma, s, r)                      \
  {c, m, d, f, a, ma, s, r},
#include "TwellCostRecords.inc"
#undef SPARSEOPT_TWELL_MEASURED
};

/// The measured options of one FFN shape and target density in one record
/// (the same process): dense is 1.0 by definition.
struct MeasuredOptions {
  double density = 0;
  double cuda = -1, tensor = -1;
};

// What sgpu-sparsify-ffn would choose from the model (SparsifyFFN.cpp,
// `choose`; the union of random rows as calibration measures it), against
// the options measured in the same process: the choice's measured speedup
// is within 3% of the best option's (dense included), on every record.
// Outside the fit shape the model is off by more than that (it predicts
// 1.53x at d = 4096 and 0.5% active where 1.13-1.24x was measured: its
// consumer term does not grow with d), but no record sees a wrong choice.
TEST(TwellCostModel, TheChoiceAgreesWithEveryMeasuredFFN) {
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, double>,
           MeasuredOptions>
      groups;
  for (const TwellMeasured &r : kMeasured) {
    MeasuredOptions &o = groups[{r.record, r.m, r.d, r.f, r.active}];
    o.density = r.measuredActive;
    (r.consumer ? o.tensor : o.cuda) = r.speedup;
  }
  ASSERT_EQ(groups.size(), 90u);
  for (const auto &[key, o] : groups) {
    int64_t d = std::get<2>(key), f = std::get<3>(key);
    double cuda = twellPredictedSpeedup(d, /*gated=*/true, o.density);
    double tc =
        o.tensor >= 0 && twellTensorCoresFit(d, f)
            ? twellTensorCorePredictedSpeedup(d, true, randomUnion(o.density))
            : 0.0;
    double chosen = 1.0; // dense
    if (tc > cuda && tc >= kTwellMinSpeedup)
      chosen = o.tensor;
    else if (cuda >= kTwellMinSpeedup)
      chosen = o.cuda;
    double best = std::max({1.0, o.cuda, o.tensor});
    EXPECT_GE(chosen, 0.97 * best)
        << std::get<0>(key) << " M=" << std::get<1>(key) << " d=" << d
        << " F=" << f << " active=" << o.density << ": chose " << chosen
        << "x of dense, best measured " << best << "x";
  }
}

} // namespace
