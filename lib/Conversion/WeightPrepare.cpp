//===- WeightPrepare.cpp - weight arguments compressed on the GPU ---------===//
//
// The kernel: one thread per (row n, group g) of the padded compressed
// weight, a group being 2N weight columns (one 2:4 chunk for N = 2) that
// feed N-1 windows (lifted chunks) g*(N-1) .. g*(N-1)+N-2. The thread
//  * loads the group (zeros past the weight), counts its nonzeros and, over
//    2N-2, raises the status word to 2^31-1 - (n * groups + g) (an atomic
//    max, so the first offending group in row-major order wins);
//  * assigns each nonzero to a window greedily, left to right, at most two
//    per window: the assignment of lib/Formats/SlidingWindow.cpp, the
//    compile-time path (tests compare the products: CPU reference with
//    exact values, GPU against torch);
//  * encodes every window as lib/Formats/Sparse24.cpp encodes a chunk (the
//    kept positions p0 < p1, an empty chunk as (0, 1), a single nonzero at
//    q as (q, 3) or (0, 3)), stores the two values and ORs the nibble into
//    the metadata word (the words are shared by 8 chunks of 2 rows, so the
//    buffer starts zeroed and the OR is atomic).
// Every row and chunk of the padded format is written, padding included.
//
//===----------------------------------------------------------------------===//

#include "WeightPrepare.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "SlideIndex.h"
#include "../Transforms/EraseDeadChain.h"

#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kThreads = 256;

/// encodeChunk's nibble for each mask of nonzero lanes (bit l: lane l),
/// packed 4 bits per mask: nibble(mask) = (table >> 4 * mask) & 0xf.
uint64_t nibbleTable() {
  uint64_t table = 0;
  for (unsigned mask = 0; mask < 16; ++mask) {
    int lanes[4], count = 0;
    for (int l = 0; l < 4; ++l)
      if (mask & (1u << l))
        lanes[count++] = l;
    int p0 = 0, p1 = 1;
    if (count == 1) {
      p0 = lanes[0] < 3 ? lanes[0] : 0;
      p1 = 3;
    } else if (count >= 2) { // more than 2 only in a reported violation
      p0 = lanes[0];
      p1 = lanes[1];
    }
    table |= static_cast<uint64_t>(p0 | (p1 << 2)) << (4 * mask);
  }
  return table;
}

class PrepareKernelBuilder {
public:
  /// A `rows` x `k` weight compressed into `ctype`; with `rowBase` >= 0,
  /// one part of a concatenated weight (a whole number of 16-row tiles)
  /// written at rows rowBase.. of `ctype`.
  PrepareKernelBuilder(OpBuilder &b, Location loc, int64_t rows, int64_t k,
                       int64_t familyN, int64_t tileGroups,
                       CompressedType ctype, int64_t rowBase = -1)
      : b(b), loc(loc), im{b, loc}, rows(rows), k(k), rowBase(rowBase),
        fam(familyN),
        tileGroups(tileGroups),
        windows(familyN - 1), width(2 * familyN),
        groups((k + 2 * familyN - 1) / (2 * familyN)),
        chunks(ctype.getPaddedCols() / 4),
        threadGroups((ctype.getPaddedCols() / 4 + familyN - 2) /
                     (familyN - 1)),
        kSteps(ctype.getPaddedCols() / 32),
        paddedRows(rowBase >= 0 ? rows : ctype.getPaddedRows()) {}

  int64_t totalThreads() const { return paddedRows * threadGroups; }
  int64_t realGroups() const { return groups; }

  int64_t numRows() const { return paddedRows; }
  int64_t numGroups() const { return threadGroups; }

  /// The GPU kernel: one thread per (row, group).
  void build(gpu::GPUFuncOp func) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value t = im.add(im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            kThreads),
                     gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    auto inside = scf::IfOp::create(b, loc, im.lt(t, totalThreads()), false);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
    emitGroup(im.div(t, threadGroups), im.rem(t, threadGroups),
              entry.getArgument(0), entry.getArgument(1),
              entry.getArgument(2), entry.getArgument(3));
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }

  /// The work of one (row n, group g) at the builder's insertion point: the
  /// body of the GPU kernel and of the CPU reference's loop nest.
  void emitGroup(Value n, Value g, Value w, Value values, Value meta,
                 Value status) {
    Type elem = cast<MemRefType>(w.getType()).getElementType();
    Type i16 = b.getI16Type(), i32 = b.getI32Type();

    // The group's elements as bits (zero past the weight) and their
    // nonzero flags (a zero of either sign is zero).
    Value zero16 = arith::ConstantIntOp::create(b, loc, i16, 0);
    Value rowOk = im.lt(n, rows);
    SmallVector<Value> bits, nz;
    Value count = im.i32(0);
    for (int64_t p = 0; p < width; ++p) {
      Value col = im.add(im.mul(g, width), p);
      Value ok = im.andi(rowOk, im.lt(col, k));
      Value v = memref::LoadOp::create(
          b, loc, w, ValueRange{im.clamp(n, ok), im.clamp(col, ok)});
      v = arith::BitcastOp::create(b, loc, i16, v);
      v = arith::SelectOp::create(b, loc, ok, v, zero16);
      Value mag = arith::AndIOp::create(
          b, loc, v, arith::ConstantIntOp::create(b, loc, i16, 0x7fff));
      Value isNz = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         mag, zero16);
      bits.push_back(v);
      nz.push_back(isNz);
      count = arith::AddIOp::create(
          b, loc, count, arith::ExtUIOp::create(b, loc, i32, isNz));
    }

    // Over the pattern's 2N-2 nonzeros: report (n, g), first one wins.
    {
      Value bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                        count, im.i32(2 * (fam - 1)));
      auto report = scf::IfOp::create(b, loc, bad, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&report.getThenRegion().front());
      Value flat = arith::IndexCastUIOp::create(
          b, loc, i32, im.add(im.mul(n, groups), g));
      Value code = arith::SubIOp::create(b, loc, im.i32(0x7fffffff), flat);
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::maxs, code,
                                  status, ValueRange{im.c(0)});
    }

    // Greedy window assignment, left to right (window -1: none).
    SmallVector<Value> used(windows, im.i32(0));
    SmallVector<Value> window;
    Value none = im.i32(-1);
    for (int64_t p = 0; p < width; ++p) {
      int64_t first = std::max<int64_t>(p / 2 - 1, 0);
      int64_t last = std::min<int64_t>(p / 2, windows - 1);
      Value assigned = none;
      for (int64_t j = last; j >= first; --j) {
        // Checked last to first so that the earliest free window wins.
        Value free = arith::AndIOp::create(
            b, loc, nz[p],
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, used[j],
                                  im.i32(2)));
        assigned = arith::SelectOp::create(b, loc, free, im.i32(j), assigned);
      }
      for (int64_t j = first; j <= last; ++j) {
        Value mine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           assigned, im.i32(j));
        used[j] = arith::AddIOp::create(
            b, loc, used[j], arith::ExtUIOp::create(b, loc, i32, mine));
      }
      window.push_back(assigned);
    }

    // Every window: its lifted chunk's two values and nibble, at row `out`
    // of the compressed weight.
    Value out = rowBase > 0 ? im.add(n, rowBase) : n;
    Value table = arith::ConstantIntOp::create(
        b, loc, b.getI64Type(), static_cast<int64_t>(nibbleTable()));
    for (int64_t j = 0; j < windows; ++j) {
      Value c = liftedChunkIndex(im, g, j, fam, tileGroups);
      auto exists = scf::IfOp::create(b, loc, im.lt(c, chunks), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&exists.getThenRegion().front());
      SmallVector<Value> lane;
      Value mask = im.i32(0);
      for (int64_t l = 0; l < 4; ++l) {
        int64_t p = 2 * j + l;
        Value mine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           window[p], im.i32(j));
        lane.push_back(arith::SelectOp::create(b, loc, mine, bits[p], zero16));
        mask = arith::OrIOp::create(
            b, loc, mask,
            arith::ShLIOp::create(b, loc,
                                  arith::ExtUIOp::create(b, loc, i32, mine),
                                  im.i32(l)));
      }
      Value shift64 = arith::ExtUIOp::create(
          b, loc, b.getI64Type(),
          arith::MulIOp::create(b, loc, mask, im.i32(4)));
      Value nibble = arith::TruncIOp::create(
          b, loc, i32,
          arith::AndIOp::create(
              b, loc, arith::ShRUIOp::create(b, loc, table, shift64),
              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0xf)));
      Value p0 = arith::AndIOp::create(b, loc, nibble, im.i32(3));
      Value p1 = arith::ShRUIOp::create(b, loc, nibble, im.i32(2));
      for (auto [slot, pos] : llvm::enumerate(SmallVector<Value>{p0, p1})) {
        Value v = lane[3];
        for (int64_t l = 2; l >= 0; --l)
          v = arith::SelectOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pos,
                                    im.i32(l)),
              lane[l], v);
        memref::StoreOp::create(
            b, loc, arith::BitcastOp::create(b, loc, elem, v), values,
            ValueRange{out, im.add(im.mul(c, 2), static_cast<int64_t>(slot))});
      }
      // The nibble's word and bit offset (lib/Formats/Sparse24.cpp).
      Value rowInTile = im.rem(out, 16);
      Value group16 = im.div(c, 4);
      Value word = im.add(
          im.mul(im.add(im.mul(im.add(im.mul(im.div(out, 16), kSteps),
                                      im.div(group16, 2)),
                               8),
                        im.rem(rowInTile, 8)),
                 2),
          im.rem(group16, 2));
      Value shift = arith::IndexCastUIOp::create(
          b, loc, i32,
          im.add(im.mul(im.div(rowInTile, 8), 16), im.mul(im.rem(c, 4), 4)));
      memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::ori,
          arith::ShLIOp::create(b, loc, nibble, shift), meta,
          ValueRange{word});
    }
  }

private:
  OpBuilder &b;
  Location loc;
  IndexMath im;
  int64_t rows, k, rowBase, fam, tileGroups, windows, width, groups, chunks,
      threadGroups, kSteps, paddedRows;
};

/// At `b`: sgpu.assemble of the `values` and `meta` buffers that `op` (a
/// compress or decompose) was lowered into, the value replacing it.
Value assembled(OpBuilder &b, Operation *op, CompressedType ctype,
                Value values, Value meta) {
  Location loc = op->getLoc();
  auto toTensor = [&](Value buf, Type t) -> Value {
    return bufferization::ToTensorOp::create(b, loc, t, buf,
                                             /*restrict=*/b.getUnitAttr(),
                                             /*writable=*/b.getUnitAttr());
  };
  return AssembleOp::create(b, loc, ctype,
                            toTensor(values, ctype.getValuesType()),
                            toTensor(meta, ctype.getMetadataType()));
}

/// The declared pattern of the weight `op` compresses (2:4 for a weight
/// without an encoding, which sgpu.compress takes as 2:4).
NMSparsityAttr declaredPattern(Operation *op) {
  NMSparsityAttr pattern = getNMPattern(op->getOperand(0).getType());
  return pattern ? pattern : NMSparsityAttr::get(op->getContext(), 2, 4);
}

} // namespace

SmallVector<Value> mlir::sgpu::preparedWeightParts(Operation *op) {
  if (!isa<CompressOp, NMDecomposeOp>(op))
    return {};
  Value weight = op->getOperand(0);
  if (isWeightArgument(weight))
    return {weight};
  // Arguments concatenated along the rows (sgpu-fuse-sibling-spmm), each a
  // whole number of 16-row tiles: each is compressed into its own rows.
  // Canonicalization may put casts that only drop or restore the sparsity
  // encoding around the concatenation; they move nothing.
  auto throughCasts = [](Value v) {
    while (auto cast = v.getDefiningOp<tensor::CastOp>()) {
      if (!cast->hasOneUse())
        break;
      v = cast.getSource();
    }
    return v;
  };
  auto concat = throughCasts(weight).getDefiningOp<tensor::ConcatOp>();
  if (!concat || !concat->hasOneUse() || concat.getDim() != 0)
    return {};
  SmallVector<Value> parts;
  for (Value in : concat.getInputs()) {
    Value arg = throughCasts(in);
    auto t = cast<RankedTensorType>(arg.getType());
    if (!isWeightArgument(arg) || !t.hasStaticShape() ||
        t.getDimSize(0) % 16 != 0)
      return {};
    parts.push_back(arg);
  }
  return parts;
}

bool mlir::sgpu::isPreparableWeight(Operation *op) {
  return !preparedWeightParts(op).empty();
}

namespace {

/// At `b`: the prepare-stage launches of `sgpu_prepare_<n>` compressing the
/// weight argument that `op` reads (one per part of a concatenation, each
/// into its rows), the checks of their status words, and the assembled
/// result, which it returns.
Value buildWeightPrepare(OpBuilder &b, Operation *op, KernelSink &sink) {
  Location loc = op->getLoc();
  SmallVector<Value> parts = preparedWeightParts(op);
  bool concatenated = op->getOperand(0) != parts.front();
  auto ctype = cast<CompressedType>(op->getResult(0).getType());
  NMSparsityAttr pattern = declaredPattern(op);
  int64_t familyN = pattern.getFamilyN();
  MemRefType vm = memrefTypeOf(ctype.getValuesType());
  MemRefType mm = memrefTypeOf(ctype.getMetadataType());
  MemRefType sm = MemRefType::get({1}, IntegerType::get(op->getContext(), 32));
  SmallVector<Value> weights = llvm::map_to_vector(
      parts, [&](Value part) { return readBuffer(b, loc, part); });
  Value values = memref::AllocOp::create(b, loc, vm);
  Value meta = memref::AllocOp::create(b, loc, mm);
  int64_t rowBase = 0;
  for (auto [part, w] : llvm::zip(parts, weights)) {
    auto wt = cast<RankedTensorType>(part.getType());
    MemRefType wm = memrefTypeOf(wt);
    OpBuilder kb = sink.builder();
    auto func = createKernel(kb, loc, sink.symbols, sink.name("sgpu_prepare"),
                             {wm, vm, mm, sm}, {}, kThreads);
    PrepareKernelBuilder builder(kb, loc, wt.getDimSize(0), wt.getDimSize(1),
                                 familyN, getTileGroups(op), ctype,
                                 concatenated ? rowBase : -1);
    builder.build(func);
    rowBase += wt.getDimSize(0);

    Value status = memref::AllocOp::create(b, loc, sm);
    auto launch =
        launchKernel(b, loc, func,
                     (builder.totalThreads() + kThreads - 1) / kThreads,
                     kThreads, ValueRange{w, values, meta, status});
    launch->setAttr(SGPUDialect::kStageAttr, b.getStringAttr("prepare"));
    WeightCheckOp::create(b, loc, status, w, pattern,
                          b.getI64IntegerAttr(builder.realGroups()));
  }
  return assembled(b, op, ctype, values, meta);
}

} // namespace

void mlir::sgpu::populateWeightPreparePatterns(RewritePatternSet &patterns,
                                               KernelSink &sink) {
  // Only the compressions of weight arguments (isPreparableWeight).
  MLIRContext *ctx = patterns.getContext();
  patterns.add<KernelLaunchPattern<CompressOp>>(
      ctx, sink,
      [](OpBuilder &b, CompressOp op, KernelSink &sink) {
        return buildWeightPrepare(b, op, sink);
      },
      [](CompressOp op) { return isPreparableWeight(op); });
  patterns.add<KernelLaunchPattern<NMDecomposeOp>>(
      ctx, sink,
      [](OpBuilder &b, NMDecomposeOp op, KernelSink &sink) {
        return buildWeightPrepare(b, op, sink);
      },
      [](NMDecomposeOp op) { return isPreparableWeight(op); });
}

/// The C library's `name` of `type`, declared in the module of `op` once.
static func::FuncOp libcFunction(Operation *op, StringRef name,
                                 FunctionType type) {
  auto module = op->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b(module.getBodyRegion());
  auto f = func::FuncOp::create(b, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

/// fflush(NULL); exit(1): the reference run fails after what it printed
/// reaches the caller.
static void exitWithFailure(OpBuilder &b, Location loc, Operation *op) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto fflush = libcFunction(op, "fflush",
                             b.getFunctionType({ptr}, {b.getI32Type()}));
  auto exit = libcFunction(op, "exit", b.getFunctionType({b.getI32Type()}, {}));
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  func::CallOp::create(b, loc, fflush, ValueRange{null});
  Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
  func::CallOp::create(b, loc, exit, ValueRange{one});
}

void mlir::sgpu::lowerWeightPrepareToLoops(Operation *op) {
  Location loc = op->getLoc();
  SmallVector<Value> parts = preparedWeightParts(op);
  // A concatenation of arguments (with its casts) rather than one argument.
  Operation *concat = parts.front() == op->getOperand(0)
                          ? nullptr
                          : op->getOperand(0).getDefiningOp();
  auto ctype = cast<CompressedType>(op->getResult(0).getType());
  NMSparsityAttr pattern = declaredPattern(op);
  int64_t familyN = pattern.getFamilyN();
  OpBuilder b(op);
  IndexMath im{b, loc};
  // Zeroed like the runtime's temporaries: the nibbles are ORed in.
  auto zeroed = [&](MemRefType t) -> Value {
    Value buf = memref::AllocOp::create(b, loc, t);
    Value zero = arith::ConstantOp::create(b, loc, t.getElementType(),
                                           b.getZeroAttr(t.getElementType()));
    int64_t n = t.getNumElements();
    Value flat = t.getRank() == 1
                     ? buf
                     : memref::CollapseShapeOp::create(
                           b, loc, buf,
                           ArrayRef<ReassociationIndices>{{0, 1}})
                           .getResult();
    scf::ForOp::create(b, loc, im.c(0), im.c(n), im.c(1), ValueRange{},
                       [&](OpBuilder &, Location, Value i, ValueRange) {
                         memref::StoreOp::create(b, loc, zero, flat, i);
                         scf::YieldOp::create(b, loc);
                       });
    return buf;
  };
  Value values = zeroed(memrefTypeOf(ctype.getValuesType()));
  Value meta = zeroed(memrefTypeOf(ctype.getMetadataType()));
  int64_t rowBase = 0;
  for (Value part : parts) {
    auto wt = cast<RankedTensorType>(part.getType());
    Value w = readBuffer(b, loc, part);
    Value status = zeroed(MemRefType::get({1}, b.getI32Type()));
    PrepareKernelBuilder builder(b, loc, wt.getDimSize(0), wt.getDimSize(1),
                                 familyN, getTileGroups(op), ctype,
                                 concat ? rowBase : -1);
    rowBase += wt.getDimSize(0);
    scf::ForOp::create(
        b, loc, im.c(0), im.c(builder.numRows()), im.c(1), ValueRange{},
        [&](OpBuilder &, Location, Value n, ValueRange) {
          scf::ForOp::create(
              b, loc, im.c(0), im.c(builder.numGroups()), im.c(1),
              ValueRange{}, [&](OpBuilder &, Location, Value g, ValueRange) {
                builder.emitGroup(n, g, w, values, meta, status);
                scf::YieldOp::create(b, loc);
              });
          scf::YieldOp::create(b, loc);
        });
    // A weight that breaks its pattern: the reference prints the row and
    // group the status word names (and, for a part of a concatenation, the
    // part's argument), flushes the output and exits with status 1 (the
    // runtime fails the bind instead); an assert would abort before the
    // buffered output reaches the caller.
    Value word = memref::LoadOp::create(b, loc, status, ValueRange{im.c(0)});
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, word,
                                     im.i32(0));
    std::string what;
    llvm::raw_string_ostream os(what);
    os << "a weight argument";
    if (concat)
      os << " (#" << cast<BlockArgument>(part).getArgNumber() << ")";
    os << " breaks its declared " << pattern << " sparsity";
    auto bad = scf::IfOp::create(b, loc, ok, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&bad.getElseRegion().front());
    Value flat = arith::SubIOp::create(b, loc, im.i32(0x7fffffff), word);
    int64_t groups = builder.realGroups();
    Value row = arith::DivUIOp::create(b, loc, flat, im.i32(groups));
    Value group = arith::RemUIOp::create(b, loc, flat, im.i32(groups));
    vector::PrintOp::create(b, loc, what + ": row ");
    vector::PrintOp::create(b, loc, row);
    vector::PrintOp::create(b, loc, "group ");
    vector::PrintOp::create(b, loc, group);
    exitWithFailure(b, loc, op);
  }
  op->getResult(0).replaceAllUsesWith(assembled(b, op, ctype, values, meta));
  // With it go the concatenation and its casts, which only it read.
  eraseDeadChain(op);
}

void mlir::sgpu::eraseDeadWeightConcats(ModuleOp module) {
  SmallVector<Operation *> dead;
  module.walk([&](Operation *op) {
    if (isa<tensor::ConcatOp, tensor::CastOp>(op) && op->use_empty())
      dead.push_back(op);
  });
  for (Operation *op : dead)
    eraseDeadChain(op);
}
