//===- ElementwiseToGPU.cpp - element-wise linalg ops as kernels ----------===//
//
// Every element-wise linalg.generic of a host function (residual adds,
// bias adds and activations the rewrites did not fuse into a GEMM, RoPE
// products, transposes, fills) becomes its own kernel: one thread per V
// consecutive elements of the result's last dimension (V = 8, 4 or 2 when
// it divides that dimension and V elements of every operand fit in 16
// bytes, else 1), 256 threads per block and as many blocks as it takes,
// the last one masked. A thread splits the linear index of its first
// element into the result's multi-index (row-major, so a warp writes
// consecutive elements), maps it to the loop indices through the result's
// indexing map (a permutation), reads every input at its own map of those
// indices (projected permutations with zeros: a [D] weight or a bias row
// broadcasts, a size-1 dimension is read at 0) — one vector load when the
// input's last dimension is the result's last loop, one scalar for all V
// when the input does not depend on that loop, V scalar loads otherwise
// (a transpose) — runs a clone of the generic's body per element and
// stores the V results with one vector store.
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
#include "TensorKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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
  return whyNotLoopKernel(op, /*reductions=*/false);
}

std::string mlir::sgpu::whyNotLoopKernel(linalg::LinalgOp op,
                                         bool reductions) {
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
    if (t != utils::IteratorType::parallel &&
        !(reductions && t == utils::IteratorType::reduction)) {
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
    if (op.isDpsInit(&operand) && !reductions && !map.isPermutation()) {
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

/// Bytes of the element type of `t` (a ranked tensor or a scalar).
int64_t elementBytes(Type t) {
  if (auto shaped = dyn_cast<ShapedType>(t))
    t = shaped.getElementType();
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// Result elements per thread: V consecutive elements of the result's last
/// dimension, the widest of 8/4/2 dividing it whose accesses stay within
/// 16 bytes for every tensor operand; 1 when none (or a size-1 last
/// dimension, or elements narrower than a byte).
int64_t elementsPerThread(linalg::GenericOp op) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (resultType.getRank() == 0)
    return 1;
  int64_t last = resultType.getShape().back();
  int64_t widest = 1;
  for (OpOperand &operand : op->getOpOperands()) {
    Type t = operand.get().getType();
    if (!isa<RankedTensorType>(t))
      continue;
    if (cast<ShapedType>(t).getElementTypeBitWidth() % 8 != 0)
      return 1;
    widest = std::max(widest, elementBytes(t));
  }
  for (int64_t v : {8, 4, 2})
    if (last % v == 0 && v * widest <= 16)
      return v;
  return 1;
}

/// Builds the body of one element-wise kernel.
struct ElementwiseKernelBuilder {
  OpBuilder &b;
  Location loc;
  IndexMath im;
  linalg::GenericOp op;
  /// Result elements per thread (elementsPerThread).
  int64_t vec = 1;

  /// Clones the constant `v` (defined outside the kernel) into it, once.
  Value cloneConstant(Value v, IRMapping &mapping) {
    if (Value known = mapping.lookupOrNull(v))
      return known;
    Operation *copy = b.clone(*v.getDefiningOp());
    Value result = copy->getResult(cast<OpResult>(v).getResultNumber());
    mapping.map(v, result);
    return result;
  }

  /// How a thread reads an operand for its `vec` elements.
  enum class Access {
    Contiguous, ///< its last dimension is the result's last loop: a vector
    Broadcast,  ///< it does not depend on that loop: one scalar for all
    Strided     ///< it does, elsewhere than last (a transpose): per element
  };
  Access accessOf(AffineMap map, unsigned innerLoop) {
    if (vec == 1)
      return Access::Broadcast;
    for (auto [k, e] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || dim.getPosition() != innerLoop)
        continue;
      return k + 1 == map.getNumResults() ? Access::Contiguous
                                          : Access::Strided;
    }
    return Access::Broadcast;
  }

  /// The `vec` values of buffer `buf` (indexed through `map`) for this
  /// thread's elements: lanes of a vector load, or one scalar repeated.
  SmallVector<Value> readOperand(Value buf, AffineMap map,
                                 ArrayRef<Value> loops, unsigned innerLoop) {
    auto indexAt = [&](int64_t lane) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        // The zeros of a broadcast size-1 dimension stay 0.
        if (!dim) {
          idx.push_back(im.c(0));
          continue;
        }
        Value i = loops[dim.getPosition()];
        idx.push_back(dim.getPosition() == innerLoop ? im.add(i, lane) : i);
      }
      return idx;
    };
    SmallVector<Value> lanes;
    switch (accessOf(map, innerLoop)) {
    case Access::Broadcast:
      lanes.assign(vec, memref::LoadOp::create(b, loc, buf, indexAt(0)));
      break;
    case Access::Strided:
      for (int64_t l = 0; l < vec; ++l)
        lanes.push_back(memref::LoadOp::create(b, loc, buf, indexAt(l)));
      break;
    case Access::Contiguous: {
      Type et = cast<MemRefType>(buf.getType()).getElementType();
      Value v = vector::LoadOp::create(
          b, loc, VectorType::get({vec}, et), buf, indexAt(0),
          /*nontemporal=*/false, llvm::Align(vec * elementBytes(et)));
      for (int64_t l = 0; l < vec; ++l)
        lanes.push_back(vector::ExtractOp::create(b, loc, v, l));
      break;
    }
    }
    return lanes;
  }

  /// Arguments of `func`: the buffers `argOf` numbers, then the result.
  void build(gpu::GPUFuncOp func, const DenseMap<Value, unsigned> &argOf,
             bool readsInit) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t total = resultType.getNumElements();
    int64_t threadsNeeded = total / vec;
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value tid = im.add(im.mul(block, kElementwiseThreads), thread);
    // The last block's threads past the end have no element.
    auto guard = scf::IfOp::create(b, loc, im.lt(tid, threadsNeeded),
                                   /*withElseRegion=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    // The thread's first element (it has `vec` consecutive ones along the
    // last dimension, which `vec` divides).
    Value id = vec == 1 ? tid : im.mul(tid, vec);

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
    unsigned innerLoop =
        shape.empty() ? 0 : outMap.getDimPosition(shape.size() - 1);

    Block &body = op.getRegion().front();
    // Per body argument, its `vec` lane values (a captured constant: one).
    DenseMap<Value, SmallVector<Value>> lanesOf;
    IRMapping constants;
    for (OpOperand *in : op.getDpsInputOperands()) {
      Value arg = body.getArgument(in->getOperandNumber());
      if (!isa<RankedTensorType>(in->get().getType())) {
        lanesOf[arg].assign(vec, cloneConstant(in->get(), constants));
        continue;
      }
      Value buf = func.getArgument(argOf.lookup(in->get()));
      lanesOf[arg] =
          readOperand(buf, op.getMatchingIndexingMap(in), loops, innerLoop);
    }
    if (readsInit) {
      Value buf = func.getArgument(argOf.lookup(init->get()));
      lanesOf[body.getArgument(init->getOperandNumber())] =
          readOperand(buf, outMap, loops, innerLoop);
    }
    // Constants the body captures from the host function.
    body.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (isCaptured(v, op.getRegion()))
          cloneConstant(v, constants);
    });
    // The body once per element.
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    SmallVector<Value> results;
    for (int64_t l = 0; l < vec; ++l) {
      IRMapping mapping = constants;
      for (auto &[arg, lanes] : lanesOf)
        mapping.map(arg, lanes[l]);
      for (Operation &inner : body.without_terminator())
        b.clone(inner, mapping);
      results.push_back(mapping.lookupOrDefault(yield.getOperand(0)));
    }
    Value result = func.getArguments().back();
    if (vec == 1) {
      memref::StoreOp::create(b, loc, results[0], result, outIdx);
    } else {
      Type et = resultType.getElementType();
      Value v = vector::FromElementsOp::create(
          b, loc, VectorType::get({vec}, et), results);
      vector::StoreOp::create(b, loc, v, result, outIdx,
                              /*nontemporal=*/false,
                              llvm::Align(vec * elementBytes(et)));
    }
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }
};

} // namespace

namespace {

/// The element-wise generic `op` (whyNotElementwise is empty) as a launch
/// at `b` of `sgpu_elementwise_<n>`, one thread per `vec` result elements:
/// returns the result tensor.
Value buildElementwiseLaunch(OpBuilder &b, linalg::GenericOp op,
                             KernelSink &sink) {
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

  // The host launch: enough blocks for one thread per `vec` elements.
  int64_t vec = elementsPerThread(op);
  int64_t threadsNeeded = total / vec;
  return kernelOnTensors(
      b, loc, sink, sink.name("sgpu_elementwise"), tensors, resultType,
      kElementwiseThreads,
      (threadsNeeded + kElementwiseThreads - 1) / kElementwiseThreads,
      [&](OpBuilder &kb, gpu::GPUFuncOp func) {
        ElementwiseKernelBuilder{kb, loc, IndexMath{kb, loc}, op, vec}.build(
            func, argOf, readsInit);
      });
}

} // namespace

void mlir::sgpu::populateElementwiseToGPUPatterns(RewritePatternSet &patterns,
                                                  KernelSink &sink) {
  // (Named ops are generalized before: generalizeElementwise.)
  patterns.add<KernelLaunchPattern<linalg::GenericOp>>(
      patterns.getContext(), sink, buildElementwiseLaunch,
      [](linalg::GenericOp op) { return whyNotElementwise(op).empty(); });
}
