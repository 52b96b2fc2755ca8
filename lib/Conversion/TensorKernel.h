//===- TensorKernel.h - a kernel in place of a tensor op --------*- C++ -*-===//
//
// The shell every "one op, one kernel" lowering of a tensor op shares: the
// kernel takes the buffers of the op's tensor operands and then the result
// buffer, the host allocates the result, launches the kernel on the
// operands' buffers and hands the result back as a tensor.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TENSORKERNEL_H
#define SPARSEOPT_LIB_CONVERSION_TENSORKERNEL_H

#include "GPUKernel.h"
#include "IndexMath.h"
#include "KernelSink.h"

namespace mlir {
namespace sgpu {

/// At `b` (on the host): allocates the result of type `resultType`, and
/// unless it is empty creates kernel `name` (arguments: the buffers of
/// `tensors`, then the result) in the sink's gpu.module, lets `build` write its whole
/// body (gpu.return included) and launches it on `blocks` x `threads`.
/// Returns the result as a tensor (bufferization.to_tensor).
inline Value kernelOnTensors(
    OpBuilder &b, Location loc, KernelSink &sink, const std::string &name,
    ValueRange tensors,
    RankedTensorType resultType, int64_t threads, int64_t blocks,
    function_ref<void(OpBuilder &, gpu::GPUFuncOp)> build) {
  Value out = memref::AllocOp::create(b, loc, memrefTypeOf(resultType));
  if (resultType.getNumElements() != 0) {
    OpBuilder kb = sink.builder();
    SmallVector<Type> argTypes;
    for (Value t : tensors)
      argTypes.push_back(memrefTypeOf(t.getType()));
    argTypes.push_back(memrefTypeOf(resultType));
    auto func = createKernel(kb, loc, sink.symbols, name, argTypes, {}, threads);
    build(kb, func);
    SmallVector<Value> args;
    for (Value t : tensors)
      args.push_back(readBuffer(b, loc, t));
    args.push_back(out);
    launchKernel(b, loc, func, blocks, threads, args);
  }
  return bufferization::ToTensorOp::create(b, loc, resultType, out,
                                           /*restrict=*/b.getUnitAttr(),
                                           /*writable=*/b.getUnitAttr());
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TENSORKERNEL_H
