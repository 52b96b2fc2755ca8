//===- TensorMapParams.cpp - tensor maps as by-value kernel parameters ----===//
//
// A kernel receives each sgpu.tensor_map as an `!llvm.ptr` argument listed in
// its `sgpu.tensor_map_args` attribute. The runtime passes the encoded
// CUtensorMap (128 bytes) by value, so after the GPU-to-NVVM conversion this
// pass turns those arguments into 64-byte-aligned byval parameters marked
// `nvvm.grid_constant`: NVPTX then declares a 128-byte `.param` and gives
// the kernel its generic address (`cvta.param`), the operand of TMA copies
// and `prefetch.tensormap`.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Transforms/Passes.h"

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUTENSORMAPPARAMS
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

/// Size of a CUtensorMap in 64-bit words (CU_TENSOR_MAP_NUM_QWORDS: 128
/// bytes).
constexpr unsigned kTensorMapWords = 16;
/// Alignment the driver requires of a CUtensorMap, in bytes.
constexpr int64_t kTensorMapAlign = 64;

/// Rewrites the tensor map arguments of `fn`, which carries
/// `sgpu.tensor_map_args`, and drops the attribute. Checks everything before
/// changing anything, so a failure leaves `fn` as it was.
LogicalResult convertKernel(FunctionOpInterface fn) {
  StringRef attrName = sgpu::SGPUDialect::kTensorMapArgsAttr;
  Attribute attr = fn->getAttr(attrName);
  // The dialect's own check of the attribute's form (it only runs where the
  // sgpu dialect was loaded when the IR was verified).
  auto *dialect = fn->getContext()->getLoadedDialect<sgpu::SGPUDialect>();
  if (failed(dialect->verifyOperationAttribute(
          fn,
          NamedAttribute(StringAttr::get(fn->getContext(), attrName), attr))))
    return failure();

  auto llvmFunc = dyn_cast<LLVM::LLVMFuncOp>(fn.getOperation());
  if (!llvmFunc)
    return fn->emitError()
           << "'" << attrName << "' on '" << fn->getName() << "' @"
           << fn.getName()
           << ": sgpu-tensor-map-params rewrites kernels lowered to "
              "llvm.func (run it after convert-gpu-to-nvvm)";
  if (!llvmFunc->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
    return llvmFunc.emitError() << "@" << llvmFunc.getName() << " has '"
                                << attrName << "' but is not a kernel (no '"
                                << NVVM::NVVMDialect::getKernelFuncAttrName()
                                << "'): tensor maps are kernel parameters";

  ArrayRef<int64_t> indices = cast<DenseI64ArrayAttr>(attr).asArrayRef();
  unsigned numArgs = llvmFunc.getNumArguments();
  for (int64_t index : indices) {
    if (index >= int64_t(numArgs))
      return llvmFunc.emitError()
             << "'" << attrName << "' lists argument #" << index << " but @"
             << llvmFunc.getName() << " has " << numArgs << " argument"
             << (numArgs == 1 ? "" : "s");
    Type type = llvmFunc.getArgument(index).getType();
    auto pointer = dyn_cast<LLVM::LLVMPointerType>(type);
    if (!pointer || pointer.getAddressSpace() != 0)
      return llvmFunc.emitError()
             << "tensor map argument #" << index << " of @"
             << llvmFunc.getName()
             << " must be '!llvm.ptr' (the generic address space), got "
             << type;
  }

  MLIRContext *ctx = llvmFunc.getContext();
  Builder b(ctx);
  auto byvalType =
      TypeAttr::get(LLVM::LLVMArrayType::get(b.getI64Type(), kTensorMapWords));
  for (int64_t index : indices) {
    llvmFunc.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(kTensorMapAlign));
    llvmFunc.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(),
                        byvalType);
    llvmFunc.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
  }
  llvmFunc->removeAttr(attrName);
  return success();
}

struct TensorMapParamsPass
    : public sgpu::impl::SGPUTensorMapParamsBase<TensorMapParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    bool failedAny = false;
    getOperation()->walk([&](FunctionOpInterface fn) {
      if (fn->hasAttr(sgpu::SGPUDialect::kTensorMapArgsAttr) &&
          failed(convertKernel(fn)))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
