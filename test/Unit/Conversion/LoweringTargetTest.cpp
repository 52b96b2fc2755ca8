//===- LoweringTargetTest.cpp - what convert-sgpu-to-gpu leaves -----------===//
//
// addLoweredOpsIllegal, the target convert-sgpu-to-gpu's last conversion
// checks: an op its patterns should have replaced is a legalization error
// at the op's location; what the lowering leaves for the runtime is legal.
//
//===----------------------------------------------------------------------===//

#include "GPULoweringTarget.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class LoweringTarget : public ::testing::Test {
protected:
  MLIRContext ctx;
  std::vector<std::string> errors;

  LoweringTarget() {
    ctx.loadDialect<sgpu::SGPUDialect, func::FuncDialect, arith::ArithDialect,
                    linalg::LinalgDialect, tensor::TensorDialect,
                    memref::MemRefDialect,
                    bufferization::BufferizationDialect>();
  }

  /// Whether `source` converts to the target with no patterns (errors in
  /// `errors`, each with its line).
  bool legal(StringRef source) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
    EXPECT_TRUE(module);
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error) {
        auto loc = dyn_cast<FileLineColLoc>(d.getLocation());
        errors.push_back(std::to_string(loc ? loc.getLine() : 0) + ": " +
                         d.str());
      }
      return success();
    });
    ConversionTarget target(ctx);
    sgpu::addLoweredOpsIllegal(target);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    return succeeded(applyPartialConversion(
        module->getOperation(), target, RewritePatternSet(&ctx)));
  }
};

TEST_F(LoweringTarget, AnUnloweredOpIsAnErrorAtItsLocation) {
  EXPECT_FALSE(legal(R"mlir(
func.func @f(%x: tensor<4x8xf16>, %w: tensor<8xf16>) -> tensor<4x8xf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-05 : f32}
      : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}
)mlir"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("3: failed to legalize operation 'sgpu.rms_norm'",
                            0),
            0u)
      << errors[0];
}

TEST_F(LoweringTarget, AHostLinalgOpIsIllegal) {
  EXPECT_FALSE(legal(R"mlir(
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>)
                  outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
)mlir"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'linalg.add'"), std::string::npos) << errors[0];
}

TEST_F(LoweringTarget, WhatTheRuntimeRunsIsLegal) {
  // The host side of a lowered program: buffers, a library GEMM call and
  // the tensors over its result.
  EXPECT_TRUE(legal(R"mlir(
func.func @f(%x: tensor<16x32xf16>, %w: tensor<64x32xf16>) -> tensor<16x64xf16> {
  %xb = bufferization.to_buffer %x read_only : tensor<16x32xf16> to memref<16x32xf16>
  %wb = bufferization.to_buffer %w read_only : tensor<64x32xf16> to memref<64x32xf16>
  %y = memref.alloc() : memref<16x64xf16>
  sgpu.gemm_call %xb, %wb into %y : memref<16x32xf16>, memref<64x32xf16>, memref<16x64xf16>
  %t = bufferization.to_tensor %y restrict writable : memref<16x64xf16> to tensor<16x64xf16>
  return %t : tensor<16x64xf16>
}
)mlir"));
  EXPECT_TRUE(errors.empty());
}

} // namespace
