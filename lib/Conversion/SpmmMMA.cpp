//===- SpmmMMA.cpp - the warp-level mma.sp spmm kernel --------------------===//
//
// The spmm kernel for any chip from sm_80 (kernel=mma): mma.sp with ordered
// metadata, m16n8k32, four warps per block.
//
// Mapping Y[M, N] = X[M, K] . W[N, K]^T onto the MMA: the sparse A operand is
// the weight (MMA rows = output features), B is X^T (MMA columns = tokens),
// so the token-major activations are exactly the "col" B operand and the
// accumulator tile is Y^T, stored transposed by the epilogue.
//
//===----------------------------------------------------------------------===//

#include "SpmmMMA.h"
#include "IndexMath.h"
#include "SpmmEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kWarps = kMmaSpmmWarps;
constexpr int64_t kRowsPerWarp = kMmaSpmmRowsPerWarp;
constexpr int64_t kTokensPerBlock = kMmaSpmmTokensPerBlock;
constexpr int64_t kNTiles = kTokensPerBlock / 8;
constexpr int64_t kKStep = 32;

class SpmmKernelBuilder {
public:
  SpmmKernelBuilder(OpBuilder &b, Location loc, const SpmmShape &s)
      : b(b), loc(loc), s(s), im{b, loc} {}

  /// Builds the body of `func` (arguments: x, values, metadata, [bias], y).
  void build(gpu::GPUFuncOp func) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value x = entry.getArgument(0), vals = entry.getArgument(1),
          meta = entry.getArgument(2);
    bias = s.hasBias ? entry.getArgument(3) : Value();
    Value y = entry.getArguments().back();

    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    Value warp = im.div(tid, 32), lane = im.rem(tid, 32);
    Value g = im.div(lane, 4), t = im.rem(lane, 4);
    // Feature tile of this warp; warps past the padded rows have no work
    // (the condition is warp-uniform, as the MMA requires).
    Value ft = im.add(im.mul(by, kWarps), warp);
    auto ifOp = scf::IfOp::create(b, loc, im.lt(ft, s.paddedN / kRowsPerWarp),
                                  /*withElseRegion=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());

    Value f0 = im.mul(ft, kRowsPerWarp);
    Value tok0 = im.mul(bx, kTokensPerBlock);
    Value rowA0 = im.add(f0, g), rowA1 = im.add(rowA0, 8);
    int64_t kSteps = s.paddedK / kKStep;

    auto accType = VectorType::get({4}, b.getF32Type());
    Value zero = arith::ConstantOp::create(
        b, loc, accType, DenseElementsAttr::get(accType, 0.0f));
    SmallVector<Value> init(kNTiles, zero);
    // Software pipelining: the fragments of k-step ks+1 are loaded while
    // the MMAs of step ks run (the loop carries them), so the global-load
    // latency overlaps tensor-core work instead of stalling every step.
    auto load = [&](Value ks) {
      return loadFragments(x, vals, meta, ft, rowA0, rowA1, tok0, g, t, ks,
                           kSteps);
    };
    SmallVector<Value> first = load(im.c(0));
    init.append(first.begin(), first.end());
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(kSteps), im.c(1), init,
        [&](OpBuilder &, Location, Value ks, ValueRange carried) {
          Value nextKs = arith::MinUIOp::create(b, loc, im.add(ks, 1),
                                                im.c(kSteps - 1));
          SmallVector<Value> next = load(nextKs);
          SmallVector<Value> acc =
              mmaStep(carried.drop_front(kNTiles), carried.take_front(kNTiles));
          acc.append(next.begin(), next.end());
          scf::YieldOp::create(b, loc, acc);
        });
    buildEpilogue(y, loop.getResults().take_front(kNTiles), f0, tok0, g, t);
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }

private:
  /// Loads two consecutive 16-bit elements at [row, col] as one i32
  /// (the lower column in the low half, as MMA fragments expect).
  Value loadPair(Value mem, Value row, Value col) {
    auto vt = VectorType::get({2}, s.elementType);
    Value v = vector::LoadOp::create(b, loc, vt, mem, ValueRange{row, col},
                                     /*nontemporal=*/false, llvm::Align(4));
    return packPair(v);
  }

  Value packPair(Value v) {
    auto i32v = VectorType::get({1}, b.getI32Type());
    Value cast = vector::BitCastOp::create(b, loc, i32v, v);
    return vector::ExtractOp::create(b, loc, cast, ArrayRef<int64_t>{0});
  }

  /// B fragment register: X[tok][k], X[tok][k+1], zero outside [M, K).
  Value loadActivationPair(Value x, Value tok, Value k) {
    bool fullM = s.m % kTokensPerBlock == 0;
    bool fullK = s.k % kKStep == 0;
    Value tokOk = fullM ? Value() : im.lt(tok, s.m);
    Value tokc = im.clamp(tok, tokOk);
    auto vt = VectorType::get({2}, s.elementType);
    Value zeroV = arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getZeroAttr(s.elementType)));
    if (s.k % 2 == 0) {
      // Pairs start at even k, so both halves are in or out together and
      // the 32-bit load is aligned.
      Value kOk = fullK ? Value() : im.lt(k, s.k);
      Value v = vector::LoadOp::create(b, loc, vt, x,
                                       ValueRange{tokc, im.clamp(k, kOk)},
                                       /*nontemporal=*/false, llvm::Align(4));
      if (Value ok = im.andi(tokOk, kOk))
        v = arith::SelectOp::create(b, loc, ok, v, zeroV);
      return packPair(v);
    }
    // Odd K: rows are not 4-byte aligned; load the halves separately.
    Value zeroS = arith::ConstantOp::create(b, loc, s.elementType,
                                            b.getZeroAttr(s.elementType));
    SmallVector<Value, 2> halves;
    for (int64_t h = 0; h < 2; ++h) {
      Value kh = im.add(k, h);
      Value ok = im.andi(tokOk, im.lt(kh, s.k));
      Value e = memref::LoadOp::create(
          b, loc, x, ValueRange{tokc, im.clamp(kh, im.lt(kh, s.k))});
      halves.push_back(arith::SelectOp::create(b, loc, ok, e, zeroS));
    }
    return packPair(vector::FromElementsOp::create(b, loc, vt, halves));
  }

  /// One sparse MMA: d = A(sparse) * B + c, with metadata `e`, selector 0.
  SmallVector<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bregs,
                            ArrayRef<Value> c, Value e) {
    std::string type = s.elementType.isBF16() ? "bf16" : "f16";
    std::string asmText =
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32." + type +
        "." + type +
        ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9,$10,$11}, "
        "{$12,$13,$14,$15}, $16, 0x0;";
    SmallVector<Value> operands;
    operands.append(a.begin(), a.end());
    operands.append(bregs.begin(), bregs.end());
    operands.append(c.begin(), c.end());
    operands.push_back(e);
    Type f32 = b.getF32Type();
    auto resType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                    {f32, f32, f32, f32});
    auto op = LLVM::InlineAsmOp::create(
        b, loc, resType, operands, asmText,
        "=f,=f,=f,=f,r,r,r,r,r,r,r,r,f,f,f,f,r",
        /*has_side_effects=*/false, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    SmallVector<Value, 4> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, op.getRes(), i));
    return d;
  }

  /// The registers one k-step's MMAs read, in order: the 4 A words, the
  /// metadata word, then 4 B words for each of the kNTiles N tiles.
  SmallVector<Value> loadFragments(Value x, Value vals, Value meta, Value ft,
                                   Value rowA0, Value rowA1, Value tok0,
                                   Value g, Value t, Value ks,
                                   int64_t kSteps) {
    // A fragment: compressed columns 2t, 2t+1 (chunk t) and 8+2t, 9+2t
    // (chunk t+4) of rows g and g+8 in this k-step's 16 compressed columns.
    Value colA = im.add(im.mul(ks, kKStep / 2), im.mul(t, 2));
    Value colA8 = im.add(colA, 8);
    SmallVector<Value> regs = {loadPair(vals, rowA0, colA),
                               loadPair(vals, rowA1, colA),
                               loadPair(vals, rowA0, colA8),
                               loadPair(vals, rowA1, colA8)};
    // Metadata register: word ((ft * kSteps + ks) * 8 + g) * 2 + (t & 1).
    Value word = im.add(
        im.mul(im.add(im.mul(im.add(im.mul(ft, kSteps), ks), 8), g), 2),
        im.rem(t, 2));
    regs.push_back(memref::LoadOp::create(b, loc, meta, ValueRange{word}));
    Value kBase = im.add(im.mul(ks, kKStep), im.mul(t, 2));
    for (int64_t j = 0; j < kNTiles; ++j) {
      Value tok = im.add(tok0, im.add(g, 8 * j));
      for (int64_t r = 0; r < 4; ++r)
        regs.push_back(loadActivationPair(x, tok, im.add(kBase, 8 * r)));
    }
    return regs;
  }

  /// The kNTiles MMAs of one k-step on fragments from loadFragments.
  SmallVector<Value> mmaStep(ValueRange regs, ValueRange acc) {
    ValueRange a = regs.take_front(4);
    Value e = regs[4];
    SmallVector<Value> next;
    for (int64_t j = 0; j < kNTiles; ++j) {
      ValueRange bregs = regs.slice(5 + 4 * j, 4);
      SmallVector<Value, 4> c;
      for (int64_t i = 0; i < 4; ++i)
        c.push_back(vector::ExtractOp::create(b, loc, acc[j],
                                              ArrayRef<int64_t>{i}));
      SmallVector<Value, 4> d = mma(SmallVector<Value>(a), SmallVector<Value>(bregs), c, e);
      next.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({4}, b.getF32Type()), d));
    }
    return next;
  }

  /// Accumulator element i of N tile j holds D[g + 8(i/2)][2t + (i%2)],
  /// i.e. Y[tok0 + 8j + 2t + i%2][f0 + g + 8(i/2)].
  void buildEpilogue(Value y, ValueRange acc, Value f0, Value tok0, Value g,
                     Value t) {
    SmallVector<Value> flat;
    for (int64_t j = 0; j < kNTiles; ++j)
      for (int64_t i = 0; i < 4; ++i)
        flat.push_back(vector::ExtractOp::create(b, loc, acc[j],
                                                 ArrayRef<int64_t>{i}));
    buildSpmmEpilogue(b, loc, im, s, flat, bias, y, im.add(f0, g), tok0, t,
                      s.m % kTokensPerBlock == 0, s.n % kRowsPerWarp == 0);
  }

  OpBuilder &b;
  Location loc;
  const SpmmShape &s;
  IndexMath im;
  Value bias; // the bias argument, when the spmm has one
};

} // namespace

void mlir::sgpu::buildMmaSpmmKernel(OpBuilder &b, Location loc,
                                    const SpmmShape &s, gpu::GPUFuncOp func) {
  SpmmKernelBuilder(b, loc, s).build(func);
}
