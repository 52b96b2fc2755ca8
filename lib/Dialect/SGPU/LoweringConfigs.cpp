//===- LoweringConfigs.cpp - verifiers of the lowering configurations -----===//
//
// The structural checks of #sgpu.spmm_config, #sgpu.twell_pack_config and
// #sgpu.twell_ffn_config: values any op could take. Whether a configuration fits its op and the
// target (the lift's window order, the shared memory of the device) is
// convert-sgpu-to-gpu's check, at the op.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

static bool isPowerOfTwoIn(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

LogicalResult
SpmmConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       SpmmKernelKind kernel, LiftLowering lift, int64_t tileN,
                       int64_t stages, int64_t splits, int64_t cluster,
                       int64_t storeBox, bool persistent) {
  if (kernel != SpmmKernelKind::tma) {
    if (lift != LiftLowering::separate)
      return emitError() << "lift = " << stringifyLiftLowering(lift)
                         << " needs kernel = tma (kernel = "
                         << stringifySpmmKernelKind(kernel)
                         << " reads a lift's result)";
    if (tileN || stages || splits != 1 || cluster != 1 || storeBox ||
        !persistent)
      return emitError() << "tile_n, stages, splits, cluster, store_box and "
                            "persistent configure kernel = tma; kernel = "
                         << stringifySpmmKernelKind(kernel) << " takes none";
    return success();
  }
  if (!isPowerOfTwoIn(tileN, 16, 256))
    return emitError() << "tile_n = " << tileN
                       << " is not a power of two from 16 to 256";
  if (stages < 1)
    return emitError() << "stages = " << stages << " is not at least 1";
  if (splits < 1 || splits > kMaxSplits)
    return emitError() << "splits = " << splits << " is not 1 to "
                       << kMaxSplits;
  if (cluster != 1 && cluster != 2 && cluster != 4)
    return emitError() << "cluster = " << cluster << " is not 1, 2 or 4";
  if (storeBox && !isPowerOfTwoIn(storeBox, 16, 128))
    return emitError() << "store_box = " << storeBox
                       << " is not 0 (stores from registers) or a power of "
                          "two from 16 to 128";
  if (storeBox > tileN)
    return emitError() << "store_box = " << storeBox
                       << " is larger than the tile's " << tileN << " tokens";
  return success();
}

LogicalResult
TwellPackConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            TwellPackForm form, int64_t cluster) {
  if (cluster != 1 && cluster != 2 && cluster != 4)
    return emitError() << "cluster = " << cluster << " is not 1, 2 or 4";
  if (cluster != 1 && form != TwellPackForm::fused_producer)
    return emitError() << "cluster = " << cluster
                       << " configures form = fused_producer, not form = "
                       << stringifyTwellPackForm(form);
  return success();
}

LogicalResult
TwellFFNConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           TwellConsumerKind consumer, int64_t passes,
                           bool tmaGather) {
  if (passes < 1 || passes > kMaxPasses)
    return emitError() << "passes = " << passes << " is not 1 to "
                       << kMaxPasses;
  if (consumer == TwellConsumerKind::tensor_cores && passes != 1)
    return emitError() << "passes = " << passes
                       << " configures the CUDA-core consumer; the "
                          "tensor-core consumer runs in one";
  if (consumer == TwellConsumerKind::cuda_cores && tmaGather)
    return emitError() << "tma_gather configures the tensor-core consumer";
  return success();
}
