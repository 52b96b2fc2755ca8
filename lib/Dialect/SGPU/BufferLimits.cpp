//===- BufferLimits.cpp - sizes a GPU program can hold --------------------===//

#include "sparse-opt/Dialect/SGPU/BufferLimits.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::sgpu;

std::optional<int64_t> mlir::sgpu::checkedBytes(ArrayRef<int64_t> shape,
                                                unsigned bits) {
  int64_t bytes = (bits + 7) / 8, result = 0;
  for (int64_t d : shape)
    if (llvm::MulOverflow(bytes, d, result))
      return std::nullopt;
    else
      bytes = result;
  return bytes;
}

namespace {

/// The static shape and element type of `type` where it has them.
std::optional<std::pair<ArrayRef<int64_t>, Type>> shapeOf(Type type) {
  if (auto s = dyn_cast<ShapedType>(type))
    if (s.hasRank() && s.hasStaticShape())
      return std::make_pair(s.getShape(), s.getElementType());
  if (auto c = dyn_cast<CompressedType>(type))
    return std::make_pair(c.getShape(), c.getElementType());
  if (auto t = dyn_cast<TwellType>(type))
    return std::make_pair(t.getShape(), t.getElementType());
  return std::nullopt;
}

unsigned bitsOf(Type et) {
  if (et.isIntOrFloat())
    return et.getIntOrFloatBitWidth();
  return 64; // index and the rest: at most a pointer's size per element
}

/// The violation of `type` (empty when none). `boundary`: a function's
/// argument or result, which the runtime reads and writes as bytes.
std::string whyNot(Type type, bool boundary) {
  auto shape = shapeOf(type);
  if (!shape)
    return "";
  auto [dims, et] = *shape;
  for (auto [i, d] : llvm::enumerate(dims))
    if (d == 0)
      return "dimension " + std::to_string(i) +
             " is 0: GPU programs need at least one element in every "
             "dimension";
  std::optional<int64_t> bytes = checkedBytes(dims, bitsOf(et));
  if (!bytes)
    return "its size in bytes overflows a 64-bit integer";
  if (*bytes > kMaxBufferBytes)
    return "it holds " + std::to_string(*bytes) +
           " bytes, more than the 256 GiB any GPU buffer can hold";
  if (boundary && !et.isIntOrFloat())
    return "its elements have no fixed size in memory (use integer or "
           "float elements)";
  return "";
}

} // namespace

LogicalResult mlir::sgpu::checkBufferLimits(Operation *root) {
  bool failedAny = false;
  auto report = [&](Location loc, StringRef what, Type type, bool boundary) {
    std::string why = whyNot(type, boundary);
    if (why.empty())
      return;
    emitError(loc) << what << " of type " << type << ": " << why;
    failedAny = true;
  };
  root->walk([&](Operation *op) {
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
        report(func.isExternal() ? func.getLoc()
                                 : func.getArgument(i).getLoc(),
               "argument #" + std::to_string(i) + " of @" +
                   func.getSymName().str(),
               t, true);
      for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
        report(func.getLoc(),
               "result #" + std::to_string(i) + " of @" +
                   func.getSymName().str(),
               t, true);
      return;
    }
    for (OpResult r : op->getResults())
      report(op->getLoc(),
             "'" + op->getName().getStringRef().str() + "' result #" +
                 std::to_string(r.getResultNumber()),
             r.getType(), false);
  });
  return failure(failedAny);
}
