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
//    kernel (flash decoding); decode_tensor_cores
//    (AttentionDecodeMmaKernel.cpp) is its split kernel on mma.sync, with
//    the query heads of a key/value head as the rows of a tile.
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

/// Why the tensor-core split kernel (AttentionDecodeMmaKernel.cpp) cannot
/// run `op` (empty when it can): the decode kernels' conditions, f16/bf16,
/// head size 64 or 128, at most 8 query heads per key/value head.
std::string whyNoAttentionDecodeMma(AttentionOp op);

/// The tensor-core split kernel's splits for `op` on a device of `numSMs`
/// multiprocessors (its #sgpu.attention_config `splits` where given).
int64_t attentionDecodeMmaSplits(AttentionOp op, int64_t numSMs);

/// Builds the tensor-core split kernel (arguments `argTypes`: q, k, v,
/// positions, partial acc, partial m/l) into the sink's module at `kb`;
/// attentionDecodeMmaThreads() threads per block, one block per (sequence,
/// key/value head, split).
gpu::GPUFuncOp buildAttentionDecodeMmaSplit(OpBuilder &kb, Location loc,
                                            AttentionOp op, KernelSink &sink,
                                            ArrayRef<Type> argTypes,
                                            int64_t splits);
int64_t attentionDecodeMmaThreads();

/// The split kernels' last step: `parts` partial softmax states per query
/// head of the block's key/value head (in workgroup memory: sml[(g + w *
/// group) * 2 + {0: m, 1: l}], sacc[(g + w * group) * d + column], base 2)
/// merged by the block's `threads` threads (thread id `tid`) into the
/// partial row (bi, head, split) of pacc (rows of d) and pml (m, l).
void mergeDecodeParts(OpBuilder &b, Location loc, Value tid, int64_t threads,
                      int64_t parts, int64_t group, int64_t heads, int64_t d,
                      int64_t splits, Value sml, Value sacc, Value pacc,
                      Value pml, Value bi, Value kvh, Value split);

/// Builds the split-KV kernels for `op` into the sink's module and launches
/// them at `b` on `args` (the buffers of q, k, v and positions), writing
/// `out` (the result buffer, B x H x 1 x D); returns `out`. The split
/// kernel is the tensor-core one where `op`'s configuration says
/// decode_tensor_cores.
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
