//===- MmaSync.h - warp-level mma.sync.m16n8k16 for the kernel builders --===//
//
// What the attention kernels' mma.sync code shares: a warp's m16n8k16
// product of f16/bf16 operands with f32 accumulators, in the register
// layout of the PTX ISA ("Matrix Fragments for mma.m16n8k16"); the packing
// of f32 results into an A-fragment word; the reduction over the 4 lanes
// that hold one row of a C fragment.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_MMASYNC_H
#define SPARSEOPT_LIB_CONVERSION_MMASYNC_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

namespace mlir {
namespace sgpu {

/// d = a * b + c on one m16n8k16 tile: `a` is 4 words (each two 16-bit
/// elements of `et`, f16 or bf16, lower element first), `b0`/`b1` 2 words,
/// `c` 4 f32 values; returns the 4 f32 values of d.
inline SmallVector<Value, 4> mmaM16N8K16(OpBuilder &b, Location loc, Type et,
                                         ArrayRef<Value> a, Value b0, Value b1,
                                         ArrayRef<Value> c) {
  bool bf16 = et.isBF16();
  // nvvm.mma.sync takes bf16 operands as packed i32 words and f16 ones as
  // vector<2xf16>.
  auto operand = [&](Value word) -> Value {
    if (bf16)
      return word;
    Value v = vector::BroadcastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), word);
    return vector::BitCastOp::create(b, loc,
                                     VectorType::get({2}, b.getF16Type()), v);
  };
  SmallVector<Value> aOps, bOps = {operand(b0), operand(b1)};
  for (Value w : a)
    aOps.push_back(operand(w));
  Type f = b.getF32Type();
  auto resType = LLVM::LLVMStructType::getLiteral(b.getContext(), {f, f, f, f});
  NVVM::MMATypes type = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value res = NVVM::MmaOp::create(
      b, loc, resType, aOps, bOps, c, ArrayRef<int64_t>{16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
  return out;
}

/// One word of two f32 values rounded to `et` (f16 or bf16), `lo` in the
/// lower half: an A-fragment register (P of flash attention).
inline Value packF32Pair(OpBuilder &b, Location loc, Type et, Value lo,
                         Value hi) {
  auto f2 = VectorType::get({2}, b.getF32Type());
  Value v = vector::FromElementsOp::create(b, loc, f2, ValueRange{lo, hi});
  Value h = arith::TruncFOp::create(b, loc, VectorType::get({2}, et), v);
  Value w = vector::BitCastOp::create(b, loc,
                                      VectorType::get({1}, b.getI32Type()), h);
  return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
}

/// `v` (f32) combined over the 4 lanes of a quad (lanes 4g..4g+3, which
/// hold one row of a C fragment): the maximum with `max`, else the sum.
inline Value quadReduce(OpBuilder &b, Location loc, Value v, bool max) {
  for (int32_t off : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, v, off, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    v = max ? arith::MaximumFOp::create(b, loc, v, other).getResult()
            : arith::AddFOp::create(b, loc, v, other).getResult();
  }
  return v;
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_MMASYNC_H
