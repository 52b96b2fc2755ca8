//===- ConstantWeights.cpp - compile-time weight compression --------------===//

#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Formats/SlidingWindow.h"
#include "sparse-opt/Formats/Sparse24.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <optional>

using namespace mlir;
using namespace mlir::sgpu;

/// The 16-bit element bits of a constant weight, or failure when `v` is not
/// a constant with readable data.
static FailureOr<SmallVector<uint16_t>> getConstantBits(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return failure();
  int64_t count = cast<RankedTensorType>(v.getType()).getNumElements();
  SmallVector<uint16_t> bits(count);
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue())) {
    int64_t i = 0;
    for (APFloat f : dense.getValues<APFloat>())
      bits[i++] = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
    return bits;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(cst.getValue())) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob ||
        blob->getData().size() != static_cast<size_t>(count) * sizeof(uint16_t))
      return failure();
    std::memcpy(bits.data(), blob->getData().data(), count * sizeof(uint16_t));
    return bits;
  }
  return failure();
}

/// A weight that is a dense_resource constant whose blob is missing or of
/// the wrong size: an error at the constant naming the resource (the
/// weight would otherwise look like one computed in the function).
static LogicalResult checkResourceWeight(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto res = cst ? dyn_cast<DenseResourceElementsAttr>(cst.getValue())
                 : DenseResourceElementsAttr();
  if (!res)
    return success();
  auto type = cast<RankedTensorType>(v.getType());
  size_t want = size_t(type.getNumElements()) *
                ((type.getElementTypeBitWidth() + 7) / 8);
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  if (!blob)
    return cst.emitError() << "the weight's dense_resource '"
                           << res.getRawHandle().getKey()
                           << "' has no data (the module's "
                              "dialect_resources do not define it)";
  if (blob->getData().size() != want)
    return cst.emitError() << "the weight's dense_resource '"
                           << res.getRawHandle().getKey() << "' holds "
                           << blob->getData().size() << " bytes; its type "
                           << type << " needs " << want;
  return success();
}

template <typename T>
static DenseElementsAttr rawAttr(RankedTensorType type, ArrayRef<T> data) {
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(reinterpret_cast<const char *>(data.data()),
                           data.size() * sizeof(T)));
}

/// Replaces `op` (a compress or decompose with one use-able result) by
/// sgpu.assemble of the compressed `expanded` weight (rows x cols bits).
static LogicalResult assembleCompressed(Operation *op, CompressedType ctype,
                                        ArrayRef<uint16_t> expanded,
                                        Value weight, bool *folded) {
  int64_t rows = ctype.getRows(), cols = ctype.getCols();
  sparseopt::Sparse24Shape shape = sparseopt::getSparse24Shape(rows, cols);
  SmallVector<uint16_t> values(shape.numValues());
  SmallVector<uint32_t> meta(shape.numMetaWords());
  if (auto bad = sparseopt::compressSparse24(expanded.data(), rows, cols,
                                             values.data(), meta.data())) {
    InFlightDiagnostic d = weight.getDefiningOp()->emitError()
                           << "weight is not 2:4 sparse: row " << bad->row
                           << ", group " << bad->group << " (columns "
                           << 4 * bad->group << ".." << 4 * bad->group + 3
                           << ") has " << bad->nonzeros << " nonzeros";
    d.attachNote(op->getLoc()) << "compressed for this use";
    return failure();
  }
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value v = arith::ConstantOp::create(
      b, loc, rawAttr<uint16_t>(ctype.getValuesType(), values));
  Value m = arith::ConstantOp::create(
      b, loc, rawAttr<uint32_t>(ctype.getMetadataType(), meta));
  Value assembled = AssembleOp::create(b, loc, ctype, v, m);
  op->getResult(0).replaceAllUsesWith(assembled);
  op->erase();
  if (weight.use_empty())
    weight.getDefiningOp()->erase();
  if (folded)
    *folded = true;
  return success();
}

/// The bits of the weight that `op` (a compress or decompose) reads, when
/// it is a readable constant (`bits` stays empty otherwise); `*folded`
/// cleared. Fails after an error at a dense_resource without its data.
static LogicalResult readConstantWeight(Value weight, bool *folded,
                                        std::optional<SmallVector<uint16_t>> &bits) {
  if (folded)
    *folded = false;
  if (failed(checkResourceWeight(weight)))
    return failure();
  if (FailureOr<SmallVector<uint16_t>> read = getConstantBits(weight);
      succeeded(read))
    bits = std::move(*read);
  return success();
}

LogicalResult mlir::sgpu::foldConstantCompress(CompressOp op, bool *folded) {
  Value weight = op.getWeight();
  std::optional<SmallVector<uint16_t>> bits;
  if (failed(readConstantWeight(weight, folded, bits)))
    return failure();
  if (!bits)
    return success();
  return assembleCompressed(op, op.getResult().getType(), *bits, weight,
                            folded);
}

LogicalResult mlir::sgpu::foldConstantDecompose(NMDecomposeOp op,
                                                bool *folded) {
  Value weight = op.getWeight();
  std::optional<SmallVector<uint16_t>> bits;
  if (failed(readConstantWeight(weight, folded, bits)))
    return failure();
  if (!bits)
    return success();
  auto wt = cast<RankedTensorType>(weight.getType());
  NMSparsityAttr pattern = getNMPattern(wt);
  int fam = static_cast<int>(pattern.getFamilyN());
  int64_t rows = wt.getDimSize(0), cols = wt.getDimSize(1);
  int64_t tileGroups = getTileGroups(op.getOperation());
  sparseopt::SlideShape shape =
      sparseopt::getSlideShape(rows, cols, fam, tileGroups);
  SmallVector<uint16_t> expanded(rows * shape.liftedCols);
  if (auto bad = sparseopt::decomposeSliding(bits->data(), rows, cols, fam,
                                             expanded.data(), tileGroups)) {
    InFlightDiagnostic d =
        weight.getDefiningOp()->emitError()
        << "weight is not " << pattern.getN() << ":" << pattern.getM()
        << " sparse: row " << bad->row << ", group " << bad->group
        << " (columns " << pattern.getM() * bad->group << ".."
        << std::min<int64_t>(pattern.getM() * (bad->group + 1), cols) - 1
        << ") has " << bad->nonzeros << " nonzeros";
    d.attachNote(op.getLoc()) << "decomposed for this use";
    return failure();
  }
  return assembleCompressed(op, op.getResult().getType(), expanded, weight,
                            folded);
}

LogicalResult mlir::sgpu::foldConstantCompresses(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<CompressOp, NMDecomposeOp>(op))
      ops.push_back(op);
  });
  bool ok = true;
  for (Operation *op : ops) {
    if (auto c = dyn_cast<CompressOp>(op))
      ok &= succeeded(foldConstantCompress(c));
    else
      ok &= succeeded(foldConstantDecompose(cast<NMDecomposeOp>(op)));
  }
  return success(ok);
}

FailureOr<Value> mlir::sgpu::plainConstantWeight(OpBuilder &b, Value weight) {
  auto cst = weight.getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return failure();
  auto t = cast<RankedTensorType>(weight.getType());
  auto plain = RankedTensorType::get(t.getShape(), t.getElementType());
  // The same storage under the plain type: a splat stays a splat, a
  // resource blob is shared, not copied.
  TypedAttr value;
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()))
    value = DenseElementsAttr::getFromRawBuffer(plain, dense.getRawData());
  else if (auto res = dyn_cast<DenseResourceElementsAttr>(cst.getValue()))
    value = DenseResourceElementsAttr::get(plain, res.getRawHandle());
  else
    return failure();
  return arith::ConstantOp::create(b, weight.getLoc(), value).getResult();
}

bool mlir::sgpu::isWeightArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.hasOneUse())
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && arg.getOwner() == &func.getBody().front();
}
