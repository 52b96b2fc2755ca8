//===- WgmmaAsm.h - inline-PTX building blocks of the sm_90a kernels -*- C++ -*-===//
//
// The warpgroup kernels issue instructions that have no NVVM op (sparse
// wgmma) or whose ordering the kernel must control exactly (fences, waits,
// mbarriers, TMA), as inline PTX. These helpers build those statements:
//
//  * asmVoid: a side-effecting statement without results;
//  * asmOnAcc: a statement whose outputs are the accumulator registers, tied
//    to the incoming accumulators. Passing the accumulators through every
//    wgmma fence, wgmma and wait keeps ordinary instructions from touching
//    them while a wgmma group is pending (the PTX rule), and lets a wait
//    also take registers that must stay allocated until it (the metadata of
//    an in-flight sparse wgmma);
//  * sparseWgmma: one wgmma.mma_async.sp m64nNk32 (SS form, selector 0);
//  * smemDescriptor: the 64-bit shared-memory matrix descriptor.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_WGMMAASM_H
#define SPARSEOPT_LIB_CONVERSION_WGMMAASM_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <cassert>
#include <cstdint>
#include <string>

namespace mlir {
namespace sgpu {

/// A sparse-MMA metadata word whose every nibble selects positions (0, 1):
/// the valid encoding for chunks of zeros (tiles past the weight).
constexpr uint32_t kEmptyMetadata = 0x44444444u;

/// Swizzle mode of a shared-memory matrix descriptor (bits 62-63).
enum class SmemSwizzle : int64_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

/// A side-effecting asm statement without results; it also clobbers memory
/// so that the compiler keeps shared-memory accesses on their side.
inline void asmVoid(OpBuilder &b, Location loc, StringRef text,
                    ValueRange operands, StringRef constraints) {
  std::string c = constraints.str();
  c += c.empty() ? "~{memory}" : ",~{memory}";
  LLVM::InlineAsmOp::create(b, loc, TypeRange{}, operands, text, c,
                            /*has_side_effects=*/true,
                            /*is_align_stack=*/false, LLVM::TailCallKind::None,
                            LLVM::AsmDialectAttr(), ArrayAttr());
}

/// An asm statement whose outputs are the accumulators (f32, "=f"), tied to
/// `acc` as inputs; `extra` operands (with `extraConstraints`) come first
/// among the inputs, so they are $N.. with N = acc.size().
inline SmallVector<Value> asmOnAcc(OpBuilder &b, Location loc, StringRef text,
                                   ValueRange extra,
                                   StringRef extraConstraints,
                                   ValueRange acc) {
  size_t n = acc.size();
  std::string c;
  for (size_t i = 0; i < n; ++i)
    c += (i ? ",=f" : "=f");
  if (!extraConstraints.empty())
    c += "," + extraConstraints.str();
  for (size_t i = 0; i < n; ++i)
    c += "," + std::to_string(i);
  c += ",~{memory}";
  SmallVector<Value> operands(extra.begin(), extra.end());
  operands.append(acc.begin(), acc.end());
  SmallVector<Type> fields(n, b.getF32Type());
  auto resType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  auto op = LLVM::InlineAsmOp::create(
      b, loc, resType, operands, text, c, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> d;
  for (size_t i = 0; i < n; ++i)
    d.push_back(LLVM::ExtractValueOp::create(b, loc, op.getRes(), i));
  return d;
}

/// setmaxnreg: the warpgroup gives registers back (`increase` false: the
/// producers) or takes them (the consumers), down or up to `regs`.
inline void setMaxRegisters(OpBuilder &b, Location loc, int64_t regs,
                            bool increase) {
  asmVoid(b, loc,
          std::string("setmaxnreg.") + (increase ? "inc" : "dec") +
              ".sync.aligned.u32 " + std::to_string(regs) + ";",
          {}, "");
}

/// The text of a wgmma with N = 2 * `n` (f32 accumulators $0..$n-1, then
/// the operands `$n, $n+1, ...` that `operands` names after the
/// accumulator list): `<opcode>.m64n<N>k<k>.f32.<t>.<t> {acc}, <operands>;`.
inline std::string wgmmaText(StringRef opcode, int64_t k, Type elementType,
                             size_t n, StringRef operands) {
  std::string type = elementType.isBF16() ? "bf16" : "f16";
  std::string text = opcode.str() + ".m64n" + std::to_string(2 * n) + "k" +
                     std::to_string(k) + ".f32." + type + "." + type + " {";
  for (size_t i = 0; i < n; ++i)
    text += (i ? ", $" : "$") + std::to_string(i);
  return text + "}, " + operands.str() + ";";
}

/// d = A(sparse, smem) * B(smem) + d: wgmma.mma_async.sp m64nNk32 with
/// N = 2 * acc.size(), f16 or bf16 inputs (`elementType`), f32
/// accumulators, metadata word `e` with selector 0, no transposes.
inline SmallVector<Value> sparseWgmma(OpBuilder &b, Location loc,
                                      Type elementType, Value descA,
                                      Value descB, Value e, ValueRange acc) {
  assert((elementType.isBF16() || elementType.isF16()) &&
         "sparse wgmma takes f16 or bf16 operands");
  size_t n = acc.size();
  std::string operands = "$" + std::to_string(n) + ", $" +
                         std::to_string(n + 1) + ", $" +
                         std::to_string(n + 2) + ", 0, 1, 1, 1, 0, 0";
  return asmOnAcc(b, loc,
                  wgmmaText("wgmma.mma_async.sp.sync.aligned", 32, elementType,
                            n, operands),
                  {descA, descB, e}, "l,l,r", acc);
}

/// d = A(smem) * B(smem) + d: the dense wgmma.mma_async m64nNk16 with
/// N = 2 * acc.size(), f16 or bf16 inputs, f32 accumulators, A K-major and
/// B K-major, or MN-major with `transB` (imm-trans-b 1).
inline SmallVector<Value> denseWgmma(OpBuilder &b, Location loc,
                                     Type elementType, Value descA,
                                     Value descB, ValueRange acc,
                                     bool transB = false) {
  assert((elementType.isBF16() || elementType.isF16()) &&
         "dense wgmma takes f16 or bf16 operands");
  size_t n = acc.size();
  std::string operands = "$" + std::to_string(n) + ", $" +
                         std::to_string(n + 1) + ", 1, 1, 1, 0, " +
                         (transB ? "1" : "0");
  return asmOnAcc(b, loc,
                  wgmmaText("wgmma.mma_async.sync.aligned", 16, elementType, n,
                            operands),
                  {descA, descB}, "l,l", acc);
}

/// The matrix descriptor of a K-major tile at shared address `addr` (i64):
/// bits 0-13 address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 62-63 swizzle;
/// base offset 0 (swizzled tiles start on their pattern boundary).
inline Value smemDescriptor(OpBuilder &b, Location loc, Value addr,
                            int64_t lbo, int64_t sbo, SmemSwizzle swizzle) {
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr, i64(0x3FFFF)), i64(4));
  int64_t fixed = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) |
                  (static_cast<int64_t>(swizzle) << 62);
  return arith::OrIOp::create(b, loc, start, i64(fixed));
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_WGMMAASM_H
