//===- AttentionKernels.h - the kernels of sgpu.attention -------*- C++ -*-===//
//
// Three kernel builders for sgpu.attention and one library call, chosen by
// AttentionToGPU.cpp:
//
//  * cuda-cores (AttentionToGPU.cpp): one warp per query row, any dtype,
//    masks, head sizes up to 256; the correctness baseline.
//  * tensor-cores (AttentionMmaKernel.cpp): flash attention on
//    mma.sync.m16n8k16 for f16/bf16, causal or unmasked, equal q/k and v
//    head sizes that are multiples of 16 up to 128.
//  * decode (AttentionDecodeKernel.cpp): one query per sequence over a KV
//    cache (positions), the keys split among blocks and merged by a second
//    kernel (flash decoding).
//  * library (AttentionToLibrary.cpp): sgpu.attention_call, which the
//    runtime runs as cuDNN's fused attention (f16/bf16 without mask or
//    positions).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_ATTENTIONKERNELS_H
#define SPARSEOPT_LIB_CONVERSION_ATTENTIONKERNELS_H

#include "ModelOpsToGPU.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>

namespace mlir {
namespace sgpu {

/// The tensor-core kernel's shape: a block of attentionMmaWarps(op) warps
/// (#sgpu.attention_config `warps`: 2, 4 or 8; default 4) owns 16 query rows
/// per warp of one (batch, head) and walks the keys in tiles of kMmaKeyTile,
/// double buffered in dynamic shared memory.
inline constexpr int64_t kMmaKeyTile = 64;

/// Why the tensor-core kernel cannot run `op` (empty when it can).
std::string whyNoAttentionMma(AttentionOp op);

/// Warps per block, blocks of the grid and dynamic shared-memory bytes of
/// the tensor-core kernel for `op`.
int64_t attentionMmaWarps(AttentionOp op);
int64_t attentionMmaBlocks(AttentionOp op);
int64_t attentionMmaSharedBytes(AttentionOp op);

/// Builds the tensor-core kernel's body into `func` (arguments q, k, v,
/// out), at `b`'s insertion point.
void buildAttentionMmaKernel(OpBuilder &b, Location loc, AttentionOp op,
                             gpu::GPUFuncOp func);

/// Why the split-KV decode kernels cannot run `op` (empty when they can).
std::string whyNoAttentionDecode(AttentionOp op);

/// The split-KV kernels' choices for `op` on a device of `numSMs`
/// multiprocessors, from its #sgpu.attention_config where given: lanes per
/// key row, keys per loop step, splits of the keys.
struct AttentionDecodeChoice {
  int64_t lanesPerKey, unroll, splits;
};
AttentionDecodeChoice chooseAttentionDecode(AttentionOp op, int64_t numSMs);

/// Builds the split-KV kernels for `op` into the sink's module and launches
/// them at `b` on `args` (the buffers of q, k, v and positions), writing
/// `out` (the result buffer, B x H x 1 x D); returns `out`.
Value buildAttentionDecode(OpBuilder &b, Location loc, AttentionOp op,
                           KernelSink &sink, ValueRange args, Value out);

/// Why cuDNN's fused attention cannot run `op` (empty when it can).
std::string whyNoAttentionLibrary(AttentionOp op);

/// Writes `op` as an sgpu.attention_call at `b` on `args` (the buffers of q,
/// k and v), writing `out` (the result buffer).
void buildAttentionCall(OpBuilder &b, Location loc, AttentionOp op,
                        ValueRange args, Value out);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_ATTENTIONKERNELS_H
