//===- ElementwiseToGPU.cpp - element-wise linalg ops as kernels ----------===//
//
// Every element-wise linalg.generic of a host function (residual adds,
// bias adds and activations the rewrites did not fuse into a GEMM, RoPE
// products, transposes, fills) becomes its own kernel: one thread per
// element of the result, 256 threads per block and as many blocks as it
// takes, the last one masked. A thread splits its linear index into the
// result's multi-index (row-major, so a warp writes consecutive elements),
// maps it to the loop indices through the result's indexing map (a
// permutation), reads every input at its own map of those indices
// (projected permutations with zeros: a [D] weight or a bias row
// broadcasts, a size-1 dimension is read at 0), runs a clone of the
// generic's body on the scalars and stores what it yields.
//
// The body computes in the types it names: f16/bf16 arithmetic stays
// f16/bf16 unless the body extends it itself. Math ops (exp, tanh, rsqrt,
// ...) are lowered by convert-gpu-to-nvvm, to NVVM intrinsics or libdevice
// calls that gpu-module-to-binary links.
//
// The init (`outs`) of an element-wise generic is normally a tensor.empty
// or a fill that the body never reads: the kernel then ignores it and
// writes a new buffer. A body that reads its init (accumulating into an
// existing tensor) gets the init's buffer as one more input.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseToGPU.h"
#include "IndexMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::sgpu;

/// Whether `v` is defined outside `region` (captured by a body).
static bool isCaptured(Value v, Region &region) {
  return !region.isAncestor(v.getParentRegion());
}

FailureOr<linalg::GenericOp>
mlir::sgpu::generalizeElementwise(linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return generic;
  IRRewriter rewriter(op.getContext());
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::GenericOp> generic =
      linalg::generalizeNamedOp(rewriter, op);
  if (failed(generic))
    return op->emitError() << "'" << op->getName()
                           << "' has no GPU lowering: it cannot be rewritten "
                              "as a linalg.generic";
  return generic;
}

std::string mlir::sgpu::whyNotElementwise(linalg::LinalgOp op) {
  std::string why;
  llvm::raw_string_ostream os(why);
  if (!op.hasPureTensorSemantics())
    return "it works on buffers; only linalg ops on tensors are lowered";
  if (op->getNumResults() != 1) {
    os << "it has " << op->getNumResults()
       << " results; an element-wise kernel writes one";
    return why;
  }
  for (auto [i, t] : llvm::enumerate(op.getIteratorTypesArray()))
    if (t != utils::IteratorType::parallel) {
      os << "loop " << i << " is a " << utils::stringifyIteratorType(t)
         << " loop; only all-parallel (element-wise) ops are lowered";
      return why;
    }
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    Type type = operand.get().getType();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      // A scalar input (a generalized linalg.fill) is folded into the
      // kernel, so it must be a constant.
      if (!matchPattern(operand.get(), m_Constant())) {
        os << "operand #" << i << " is a scalar that is not a constant";
        return why;
      }
      continue;
    }
    if (!tensor.hasStaticShape()) {
      os << "operand #" << i << " has a dynamic shape (" << type << ")";
      return why;
    }
    if (tensor.getEncoding()) {
      os << "operand #" << i << " has an encoding (" << type << ")";
      return why;
    }
    if (tensor.getElementType().isIndex()) {
      os << "operand #" << i << " has index elements, which have no fixed "
         << "size in memory";
      return why;
    }
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (op.isDpsInit(&operand) && !map.isPermutation()) {
      os << "the result's indexing map " << map << " is not a permutation";
      return why;
    }
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true)) {
      os << "the indexing map " << map << " of operand #" << i
         << " is not a projected permutation (only broadcasts and "
            "transposes are read element-wise)";
      return why;
    }
  }
  if (op.hasIndexSemantics())
    return "its body uses linalg.index (the loop indices), which is not "
           "supported";
  // The payload (named ops have one too, only not printed).
  Region &body = *op.getBlock()->getParent();
  for (Operation &inner : body.front()) {
    if (isa<linalg::YieldOp>(inner))
      continue;
    if (!isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()) ||
        inner.getNumRegions() != 0) {
      os << "its body has '" << inner.getName()
         << "', which is not an arith or math op";
      return why;
    }
    auto scalar = [](Type t) { return t.isIntOrIndexOrFloat(); };
    if (!llvm::all_of(inner.getOperandTypes(), scalar) ||
        !llvm::all_of(inner.getResultTypes(), scalar)) {
      os << "its body computes on non-scalar values ('" << inner.getName()
         << "')";
      return why;
    }
  }
  WalkResult captured = body.walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (isCaptured(v, body) && !matchPattern(v, m_Constant()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (captured.wasInterrupted())
    return "its body uses a value defined outside it that is not a constant";
  return "";
}

bool mlir::sgpu::isOnlyUnreadInit(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  return llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
    auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
    return user && user.isDpsInit(&use) &&
           !user.payloadUsesValueFromOperand(&use) &&
           whyNotElementwise(user).empty();
  });
}

namespace {

/// Builds the body of one element-wise kernel.
struct ElementwiseKernelBuilder {
  OpBuilder &b;
  Location loc;
  IndexMath im;
  linalg::GenericOp op;

  /// Clones the constant `v` (defined outside the kernel) into it, once.
  Value cloneConstant(Value v, IRMapping &mapping) {
    if (Value known = mapping.lookupOrNull(v))
      return known;
    Operation *copy = b.clone(*v.getDefiningOp());
    Value result = copy->getResult(cast<OpResult>(v).getResultNumber());
    mapping.map(v, result);
    return result;
  }

  /// Arguments of `func`: the buffers `argOf` numbers, then the result.
  void build(gpu::GPUFuncOp func, const DenseMap<Value, unsigned> &argOf,
             bool readsInit) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t total = resultType.getNumElements();
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value id = im.add(im.mul(block, kElementwiseThreads), thread);
    // The last block's threads past the end have no element.
    auto guard = scf::IfOp::create(b, loc, im.lt(id, total),
                                   /*withElseRegion=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());

    // The result's multi-index, row-major: o_k = (id / stride_k) % shape_k.
    ArrayRef<int64_t> shape = resultType.getShape();
    SmallVector<Value> outIdx;
    int64_t stride = total;
    for (auto [k, size] : llvm::enumerate(shape)) {
      stride /= size;
      if (size == 1) {
        outIdx.push_back(im.c(0));
        continue;
      }
      Value q = stride == 1 ? id : im.div(id, stride);
      outIdx.push_back(k == 0 ? q : im.rem(q, size));
    }
    // The loop indices: the result's map is a permutation of them.
    OpOperand *init = op.getDpsInitOperand(0);
    AffineMap outMap = op.getMatchingIndexingMap(init);
    SmallVector<Value> loops(op.getNumLoops());
    for (auto [k, v] : llvm::enumerate(outIdx))
      loops[outMap.getDimPosition(k)] = v;

    Block &body = op.getRegion().front();
    IRMapping mapping;
    for (OpOperand *in : op.getDpsInputOperands()) {
      Value arg = body.getArgument(in->getOperandNumber());
      if (!isa<RankedTensorType>(in->get().getType())) {
        mapping.map(arg, cloneConstant(in->get(), mapping));
        continue;
      }
      // Dimension results index with the loop; the zeros of a broadcast
      // size-1 dimension stay 0.
      SmallVector<Value> idx;
      for (AffineExpr e : op.getMatchingIndexingMap(in).getResults())
        idx.push_back(isa<AffineDimExpr>(e)
                          ? loops[cast<AffineDimExpr>(e).getPosition()]
                          : im.c(0));
      Value buf = func.getArgument(argOf.lookup(in->get()));
      mapping.map(arg, memref::LoadOp::create(b, loc, buf, idx));
    }
    if (readsInit) {
      Value buf = func.getArgument(argOf.lookup(init->get()));
      mapping.map(body.getArgument(init->getOperandNumber()),
                  memref::LoadOp::create(b, loc, buf, outIdx));
    }
    // Constants the body captures from the host function.
    body.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (isCaptured(v, op.getRegion()))
          cloneConstant(v, mapping);
    });
    for (Operation &inner : body.without_terminator())
      b.clone(inner, mapping);
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    Value result = func.getArguments().back();
    memref::StoreOp::create(
        b, loc, mapping.lookupOrDefault(yield.getOperand(0)), result, outIdx);
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }
};

} // namespace

void mlir::sgpu::lowerElementwiseToGPU(linalg::GenericOp op,
                                       gpu::GPUModuleOp gpuModule,
                                       SymbolTable &symbols, size_t index) {
  Location loc = op.getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t total = resultType.getNumElements();
  OpOperand *init = op.getDpsInitOperand(0);
  bool readsInit = op.payloadUsesValueFromOperand(init);

  // Kernel arguments: each distinct tensor read once (an input, the init
  // when the body reads it), then the result.
  SmallVector<Value> tensors;
  DenseMap<Value, unsigned> argOf;
  auto addTensor = [&](Value v) {
    if (argOf.try_emplace(v, tensors.size()).second)
      tensors.push_back(v);
  };
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<RankedTensorType>(in->get().getType()))
      addTensor(in->get());
  if (readsInit)
    addTensor(init->get());

  OpBuilder b(op);
  Value out = memref::AllocOp::create(b, loc, memrefTypeOf(resultType));
  if (total != 0) {
    OpBuilder kb(gpuModule.getBodyRegion());
    kb.setInsertionPointToEnd(gpuModule.getBody());
    SmallVector<Type> argTypes;
    for (Value t : tensors)
      argTypes.push_back(memrefTypeOf(t.getType()));
    argTypes.push_back(memrefTypeOf(resultType));
    auto func = gpu::GPUFuncOp::create(
        kb, loc, "sgpu_elementwise_" + std::to_string(index),
        kb.getFunctionType(argTypes, {}));
    func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
    func.setKnownBlockSizeAttr(
        kb.getDenseI32ArrayAttr({int32_t(kElementwiseThreads), 1, 1}));
    symbols.insert(func);
    ElementwiseKernelBuilder{kb, loc, IndexMath{kb, loc}, op}.build(func, argOf,
                                                                    readsInit);

    // The host launch: enough blocks for one thread per element.
    SmallVector<Value> args;
    for (Value t : tensors)
      args.push_back(readBuffer(b, loc, t));
    args.push_back(out);
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    int64_t blocks = (total + kElementwiseThreads - 1) / kElementwiseThreads;
    gpu::KernelDim3 grid{c(blocks), c(1), c(1)};
    gpu::KernelDim3 threads{c(kElementwiseThreads), c(1), c(1)};
    gpu::LaunchFuncOp::create(b, loc, func, grid, threads,
                              /*dynamicSharedMemorySize=*/Value(), args);
  }
  Value result = bufferization::ToTensorOp::create(
      b, loc, resultType, out, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
  op->getResult(0).replaceAllUsesWith(result);
  op.erase();
}
