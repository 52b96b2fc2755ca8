//===- LoweringConfigs.cpp - verifiers of the lowering configurations -----===//
//
// The structural checks of #sgpu.spmm_config, #sgpu.twell_pack_config,
// #sgpu.twell_ffn_config, #sgpu.attention_config and #sgpu.launch_config:
// values any op could take. Whether a configuration fits its op and the
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

LogicalResult AttentionConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, AttentionKernelKind kernel,
    int64_t rowsPerBlock, int64_t warps, int64_t minBlocksPerSM, int64_t splits,
    int64_t unroll, int64_t lanesPerKey) {
  if (rowsPerBlock < 0 || rowsPerBlock > 32)
    return emitError() << "rows_per_block = " << rowsPerBlock
                       << " is not 0 (chosen) to 32";
  if (warps != 2 && warps != 4 && warps != 8)
    return emitError() << "warps = " << warps << " is not 2, 4 or 8";
  if (minBlocksPerSM < 0 || minBlocksPerSM > 32)
    return emitError() << "min_blocks_per_sm = " << minBlocksPerSM
                       << " is not 0 (no bound) to 32";
  if (splits < 0 || splits > kMaxSplits)
    return emitError() << "splits = " << splits << " is not 0 (chosen) to "
                       << kMaxSplits;
  if (unroll < 0 || unroll > 2)
    return emitError() << "unroll = " << unroll << " is not 0 (chosen), 1 or 2";
  if (lanesPerKey && !isPowerOfTwoIn(lanesPerKey, 1, 32))
    return emitError() << "lanes_per_key = " << lanesPerKey
                       << " is not 0 (chosen) or a power of two up to 32";
  // Each kernel's parameters configure that kernel (or auto) only.
  auto only = [&](AttentionKernelKind owner) {
    return kernel == AttentionKernelKind::chosen || kernel == owner;
  };
  if ((warps != 4 || minBlocksPerSM) &&
      !only(AttentionKernelKind::tensor_cores))
    return emitError() << "warps and min_blocks_per_sm configure the "
                          "tensor-core kernel, not kernel = "
                       << stringifyAttentionKernelKind(kernel);
  if ((unroll || lanesPerKey) && !only(AttentionKernelKind::decode))
    return emitError() << "unroll and lanes_per_key configure the "
                          "CUDA-core decode kernel, not kernel = "
                       << stringifyAttentionKernelKind(kernel);
  if (splits && !only(AttentionKernelKind::decode) &&
      kernel != AttentionKernelKind::decode_tensor_cores)
    return emitError() << "splits configures the decode kernels, not kernel = "
                       << stringifyAttentionKernelKind(kernel);
  if (rowsPerBlock && !only(AttentionKernelKind::cuda_cores))
    return emitError() << "rows_per_block configures the CUDA-core kernel, "
                          "not kernel = "
                       << stringifyAttentionKernelKind(kernel);
  return success();
}

LogicalResult
LaunchConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t threads) {
  if (threads < 32 || threads > 1024 || threads % 32)
    return emitError() << "threads = " << threads
                       << " is not a multiple of 32 from 32 to 1024";
  return success();
}
