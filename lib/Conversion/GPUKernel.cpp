//===- GPUKernel.cpp - creating and launching generated kernels -----------===//

#include "GPUKernel.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::sgpu;

static constexpr int32_t kWarpLanes = 32;

Value mlir::sgpu::warpInclusiveSum(OpBuilder &b, Location loc, Value v) {
  for (int32_t off = 1; off < kWarpLanes; off *= 2) {
    auto up = gpu::ShuffleOp::create(b, loc, v, off, kWarpLanes,
                                     gpu::ShuffleMode::UP);
    Value added = arith::AddIOp::create(b, loc, v, up.getShuffleResult());
    // Lanes below `off` have nothing to add.
    v = arith::SelectOp::create(b, loc, up.getValid(), added, v);
  }
  return v;
}

Value mlir::sgpu::warpAllSum(OpBuilder &b, Location loc, Value v) {
  for (int32_t off = kWarpLanes / 2; off > 0; off /= 2) {
    auto other = gpu::ShuffleOp::create(b, loc, v, off, kWarpLanes,
                                        gpu::ShuffleMode::XOR);
    v = arith::AddFOp::create(b, loc, v, other.getShuffleResult());
  }
  return v;
}

Value mlir::sgpu::nonzeroHalves(OpBuilder &b, Location loc, Value w) {
  auto c = [&](uint32_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int32_t>(v));
  };
  Value magnitudes = arith::AndIOp::create(b, loc, w, c(0x7fff7fffu));
  Value carried = arith::AddIOp::create(b, loc, magnitudes, c(0x7fff7fffu));
  return arith::AndIOp::create(b, loc, carried, c(0x80008000u));
}

DynamicShared mlir::sgpu::dynamicShared(OpBuilder &b, Location loc) {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bytes);
  return {bytes, base};
}

MemRefType mlir::sgpu::workgroupBuffer(OpBuilder &b, int64_t n, Type et) {
  return MemRefType::get({n}, et, AffineMap(),
                         gpu::AddressSpaceAttr::get(
                             b.getContext(), gpu::AddressSpace::Workgroup));
}

gpu::GPUFuncOp mlir::sgpu::createKernel(OpBuilder &kb, Location loc,
                                        SymbolTable &symbols,
                                        const std::string &name,
                                        ArrayRef<Type> args,
                                        ArrayRef<Type> workgroup,
                                        int64_t threads) {
  auto func = gpu::GPUFuncOp::create(
      kb, loc, name, kb.getFunctionType(args, {}), TypeRange(workgroup));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  symbols.insert(func);
  kb.setInsertionPointToStart(&func.getBody().front());
  return func;
}

void mlir::sgpu::finishKernel(OpBuilder &kb, Location loc,
                              gpu::GPUFuncOp func) {
  kb.setInsertionPointToEnd(&func.getBody().front());
  gpu::ReturnOp::create(kb, loc);
}

gpu::LaunchFuncOp mlir::sgpu::launchKernel(OpBuilder &b, Location loc,
                                           gpu::GPUFuncOp func, int64_t grid,
                                           int64_t threads, ValueRange args,
                                           int64_t dynamicSharedBytes) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // One statement each: the grid's constants come before the block's
  // whatever the compiler's argument evaluation order.
  gpu::KernelDim3 gridDim{c(grid), c(1), c(1)};
  gpu::KernelDim3 blockDim{c(threads), c(1), c(1)};
  Value smem;
  if (dynamicSharedBytes)
    smem = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        dynamicSharedBytes);
  return gpu::LaunchFuncOp::create(b, loc, func, gridDim, blockDim,
                                   /*dynamicSharedMemorySize=*/smem, args);
}

void mlir::sgpu::setPersistentGrid(gpu::LaunchFuncOp launch, int64_t units,
                                   int64_t cluster, int64_t reserved) {
  OpBuilder b(launch);
  launch->setAttr(SGPUDialect::kPersistentGridAttr,
                  b.getDenseI64ArrayAttr({units, cluster, reserved}));
}
