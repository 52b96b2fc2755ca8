//===- NVVMHelpers.h - NVVM ops the GPU kernels share -----------*- C++ -*-===//
//
// The kernels compute shared-memory addresses as i32 offsets in the shared
// window; the NVVM ops take pointers. These helpers make the pointer of
// such an address (address space 3), its cluster view (address space 7,
// what TMA loads into, also for a block's own shared memory), and build
// the NVVM ops more than one kernel issues.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_NVVMHELPERS_H
#define SPARSEOPT_LIB_CONVERSION_NVVMHELPERS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace sgpu {

constexpr unsigned kSharedAddressSpace = 3, kSharedClusterAddressSpace = 7;

/// The shared-memory pointer of the i32 shared-window address `addr`.
inline Value sharedPtr(OpBuilder &b, Location loc, Value addr) {
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), kSharedAddressSpace),
      addr);
}

/// `addr` as a shared::cluster pointer: a shared::cta address of the
/// executing block is also its shared::cluster address (PTX ISA, state
/// spaces), so the integer converts directly. An addrspacecast from the
/// shared pointer would go through the generic space (cvta.shared, then
/// cvta.to.shared::cluster) before every TMA load, which measured 4% slower
/// on the H200 at 16 and 512 tokens (bench/results/spmm_nvvm_ops_ab_h200.json).
inline Value clusterSharedPtr(OpBuilder &b, Location loc, Value addr) {
  return LLVM::IntToPtrOp::create(
      b, loc,
      LLVM::LLVMPointerType::get(b.getContext(), kSharedClusterAddressSpace),
      addr);
}

/// fence.proxy.async.shared::cta: the generic proxy's shared-memory writes
/// before it are visible to the async proxy (wgmma, TMA) after it.
inline void fenceProxyAsyncShared(OpBuilder &b, Location loc) {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

/// setmaxnreg: the warpgroup's register budget goes down (producers) or up
/// (consumers) to `regs`.
inline void setMaxRegisters(OpBuilder &b, Location loc, int64_t regs,
                            bool increase) {
  NVVM::SetMaxRegisterOp::create(
      b, loc, b.getI32IntegerAttr(regs),
      NVVM::SetMaxRegisterActionAttr::get(
          b.getContext(), increase ? NVVM::SetMaxRegisterAction::increase
                                   : NVVM::SetMaxRegisterAction::decrease));
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_NVVMHELPERS_H
