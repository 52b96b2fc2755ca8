//===- SGPUOps.cpp - sgpu operation verifiers -----------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/APInt.h"

#include <cmath>

using namespace mlir;
using namespace mlir::sgpu;

/// Checks that `type` is a static rank-2 tensor; names it `what` otherwise.
static LogicalResult verifyStaticMatrix(Operation *op, StringRef what,
                                        Type type) {
  auto t = cast<RankedTensorType>(type);
  if (t.getRank() != 2)
    return op->emitOpError() << "expects " << what << " to be rank 2, got "
                             << type;
  if (!t.hasStaticShape())
    return op->emitOpError() << "expects " << what
                             << " to have a static shape, got " << type;
  return success();
}

/// Tensor type without its encoding, for shape/element comparisons.
static RankedTensorType stripEncoding(Type type) {
  auto t = cast<RankedTensorType>(type);
  return RankedTensorType::get(t.getShape(), t.getElementType());
}

//===----------------------------------------------------------------------===//
// compress / assemble
//===----------------------------------------------------------------------===//

LogicalResult CompressOp::verify() {
  if (failed(verifyStaticMatrix(*this, "weight", getWeight().getType())))
    return failure();
  auto in = getWeight().getType();
  CompressedType out = getResult().getType();
  bool unsupported = false;
  NMSparsityAttr declared = getNMPattern(in, &unsupported);
  if (unsupported)
    return emitOpError() << "weight encoding is not a recognized structured "
                            "sparsity: " << in.getEncoding();
  if (declared && !declared.is24())
    return emitOpError() << "weight declares " << declared
                         << "; only 2:4 weights can be compressed directly "
                            "(use sgpu.nm_decompose)";
  if (in.getShape() != out.getShape() ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "result " << out
                         << " does not match the weight's shape and element "
                            "type "
                         << stripEncoding(in);
  return success();
}

LogicalResult AssembleOp::verify() {
  CompressedType out = getResult().getType();
  auto values = getValues().getType();
  auto meta = getMetadata().getType();
  if (!values.hasStaticShape() || !meta.hasStaticShape())
    return emitOpError() << "expects statically shaped parts";
  if (values != out.getValuesType())
    return emitOpError() << "values must be " << out.getValuesType()
                         << " for " << out << ", got " << values;
  if (meta != out.getMetadataType())
    return emitOpError() << "metadata must be " << out.getMetadataType()
                         << " for " << out << ", got " << meta;
  return success();
}

//===----------------------------------------------------------------------===//
// nm_decompose / lift
//===----------------------------------------------------------------------===//

int64_t mlir::sgpu::getTileGroups(Operation *op) {
  auto attr = op->getAttrOfType<IntegerAttr>("tile_groups");
  return attr ? attr.getInt() : 0;
}

/// tile_groups, where present, is a positive group count.
static LogicalResult verifyTileGroups(Operation *op) {
  auto attr = op->getAttrOfType<IntegerAttr>("tile_groups");
  if (attr && (attr.getInt() <= 0 || attr.getInt() > (1 << 20)))
    return op->emitOpError() << "tile_groups must be 1 to " << (1 << 20)
                             << ", got " << attr.getInt();
  return success();
}

LogicalResult NMDecomposeOp::verify() {
  if (failed(verifyStaticMatrix(*this, "weight", getWeight().getType())))
    return failure();
  auto in = getWeight().getType();
  NMSparsityAttr pattern = getNMPattern(in);
  if (!pattern)
    return emitOpError() << "weight must carry an #sgpu.nm encoding, got "
                         << in;
  if (failed(verifyTileGroups(*this)))
    return failure();
  CompressedType out = getResult().getType();
  int64_t lifted = getLiftedK(in.getDimSize(1), pattern, mlir::sgpu::getTileGroups(getOperation()));
  if (out.getRows() != in.getDimSize(0) || out.getCols() != lifted)
    return emitOpError() << "result must be " << in.getDimSize(0) << "x"
                         << lifted << " for a " << in.getDimSize(0) << "x"
                         << in.getDimSize(1) << " " << pattern << " weight"
                         << (mlir::sgpu::getTileGroups(getOperation()) ? " in tiled order" : "")
                         << ", got " << out;
  if (out.getElementType() != in.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from the weight's "
                         << in.getElementType();
  return success();
}

LogicalResult LiftOp::verify() {
  if (failed(verifyStaticMatrix(*this, "input", getInput().getType())) ||
      failed(verifyStaticMatrix(*this, "result", getResult().getType())))
    return failure();
  if (failed(verifyTileGroups(*this)))
    return failure();
  auto in = getInput().getType();
  auto out = getResult().getType();
  int64_t lifted =
      getLiftedK(in.getDimSize(1), getPattern(), mlir::sgpu::getTileGroups(getOperation()));
  if (out.getDimSize(0) != in.getDimSize(0) || out.getDimSize(1) != lifted)
    return emitOpError() << "result must be " << in.getDimSize(0) << "x"
                         << lifted << " for pattern " << getPattern()
                         << (mlir::sgpu::getTileGroups(getOperation()) ? " in tiled order" : "")
                         << ", got " << out;
  if (out.getElementType() != in.getElementType())
    return emitOpError() << "result element type must equal the input's";
  return success();
}

//===----------------------------------------------------------------------===//
// spmm
//===----------------------------------------------------------------------===//

/// The shape rules every GEMM op shares, for Y = X . W^T + b with the
/// weight given as its rows (N), columns (K) and element type: K and the
/// element types agree, Y is M x N of X's type or f32, b has N elements.
static LogicalResult verifyGemm(Operation *op, ShapedType x, int64_t n,
                                int64_t k, Type wElement, ShapedType y,
                                Value bias) {
  if (x.getDimSize(1) != k)
    return op->emitOpError() << "reduction sizes differ: input has K = "
                             << x.getDimSize(1) << ", weight has K = " << k;
  if (x.getElementType() != wElement)
    return op->emitOpError() << "input element type " << x.getElementType()
                             << " differs from the weight's " << wElement;
  if (y.getDimSize(0) != x.getDimSize(0) || y.getDimSize(1) != n)
    return op->emitOpError() << "result must be " << x.getDimSize(0) << "x"
                             << n << ", got " << y;
  if (y.getElementType() != x.getElementType() && !y.getElementType().isF32())
    return op->emitOpError() << "result element type must be the input's ("
                             << x.getElementType() << ") or f32, got "
                             << y.getElementType();
  if (bias) {
    auto b = cast<ShapedType>(bias.getType());
    if (b.getRank() != 1 || b.getDimSize(0) != n)
      return op->emitOpError() << "bias must be a " << n
                               << "-element vector (one per output feature), "
                                  "got "
                               << b;
  }
  return success();
}

/// The library GEMM (cuBLASLt) adds a bias of the result's element type
/// only.
static LogicalResult verifyLibraryBias(Operation *op, Value bias,
                                       ShapedType result) {
  if (!bias)
    return success();
  Type bt = cast<ShapedType>(bias.getType()).getElementType();
  if (bt != result.getElementType())
    return op->emitOpError()
           << "bias element type must be the result's ("
           << result.getElementType() << "), got " << bt
           << " (the library GEMM adds a bias of the result type)";
  return success();
}

LogicalResult SpmmOp::verify() {
  if (failed(verifyStaticMatrix(*this, "input", getInput().getType())) ||
      failed(verifyStaticMatrix(*this, "result", getResult().getType())))
    return failure();
  CompressedType w = getWeight().getType();
  return verifyGemm(*this, getInput().getType(), w.getRows(), w.getCols(),
                    w.getElementType(), getResult().getType(), getBias());
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyStaticMatrix(*this, "input", getInput().getType())) ||
      failed(verifyStaticMatrix(*this, "weight", getWeight().getType())) ||
      failed(verifyStaticMatrix(*this, "result", getResult().getType())))
    return failure();
  auto w = getWeight().getType();
  if (w.getEncoding())
    return emitOpError() << "weight must be a plain tensor, got " << w
                         << " (a structured-sparsity weight goes through "
                            "sgpu-slide-sparse)";
  if (failed(verifyGemm(*this, getInput().getType(), w.getDimSize(0),
                        w.getDimSize(1), w.getElementType(),
                        getResult().getType(), getBias())))
    return failure();
  return verifyLibraryBias(*this, getBias(), getResult().getType());
}

LogicalResult GemmCallOp::verify() {
  auto x = cast<MemRefType>(getInput().getType());
  auto w = cast<MemRefType>(getWeight().getType());
  auto y = cast<MemRefType>(getResult().getType());
  for (auto [what, t] : {std::pair<StringRef, MemRefType>{"input", x},
                         {"weight", w},
                         {"result", y}}) {
    if (t.getRank() != 2)
      return emitOpError() << "expects " << what << " to be rank 2, got "
                           << t;
    if (!t.getLayout().isIdentity())
      return emitOpError() << "expects " << what
                           << " to be row-major (identity layout), got " << t;
  }
  if (!x.getElementType().isF16() && !x.getElementType().isBF16())
    return emitOpError() << "supports f16 or bf16 inputs, got "
                         << x.getElementType();
  if (failed(verifyGemm(*this, x, w.getDimSize(0), w.getDimSize(1),
                        w.getElementType(), y, getBias())))
    return failure();
  return verifyLibraryBias(*this, getBias(), y);
}

LogicalResult AttentionCallOp::verify() {
  auto q = cast<MemRefType>(getQuery().getType()),
       k = cast<MemRefType>(getKey().getType()),
       v = cast<MemRefType>(getValue().getType()),
       o = cast<MemRefType>(getResult().getType());
  for (auto [name, t] : {std::pair<StringRef, MemRefType>{"query", q},
                         {"key", k}, {"value", v}, {"result", o}}) {
    if (t.getRank() != 4 || !t.getLayout().isIdentity())
      return emitOpError() << "expects " << name << " to be a row-major "
                           << (getSeqMajor() ? "B x S x H x D" : "B x H x S x D")
                           << " memref, got " << t;
    if (t.getElementType() != q.getElementType())
      return emitOpError() << "query, key, value and result must share one "
                              "element type";
  }
  if (!q.getElementType().isF16() && !q.getElementType().isBF16())
    return emitOpError() << "supports f16 or bf16, got " << q.getElementType();
  unsigned hDim = headsDim(), sDim = seqDim();
  int64_t b = q.getDimSize(0), h = q.getDimSize(hDim),
          sq = q.getDimSize(sDim), d = q.getDimSize(3),
          hkv = k.getDimSize(hDim), sk = k.getDimSize(sDim);
  if (k.getShape() != v.getShape() || k.getDimSize(0) != b ||
      k.getDimSize(3) != d)
    return emitOpError() << "key and value must be " << b << "x"
                         << (getSeqMajor() ? sk : hkv) << "x"
                         << (getSeqMajor() ? hkv : sk) << "x" << d
                         << ", got " << k << " and " << v;
  if (o.getShape() != q.getShape())
    return emitOpError() << "result must have the query's shape, got " << o;
  if (hkv == 0 || h % hkv != 0)
    return emitOpError() << "query heads (" << h
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";
  if (getCausal() && sq != sk)
    return emitOpError() << "a causal library attention needs as many "
                            "queries as keys, got "
                         << sq << " and " << sk;
  return success();
}

LogicalResult WeightCheckOp::verify() {
  auto status = cast<MemRefType>(getStatus().getType());
  if (status.getShape() != ArrayRef<int64_t>{1})
    return emitOpError() << "status must be memref<1xi32>, got " << status;
  if (cast<MemRefType>(getWeight().getType()).getRank() != 2)
    return emitOpError() << "weight must be rank 2, got "
                         << getWeight().getType();
  if (getGroups() < 1)
    return emitOpError() << "groups must be at least 1, got " << getGroups();
  return success();
}

//===----------------------------------------------------------------------===//
// TwELL
//===----------------------------------------------------------------------===//

LogicalResult TwellPackOp::verify() {
  if (failed(verifyStaticMatrix(*this, "input", getInput().getType())))
    return failure();
  auto in = getInput().getType();
  TwellType out = getResult().getType();
  if (in.getShape() != out.getShape() ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "result " << out
                         << " does not match the input's shape and element "
                            "type "
                         << in;
  return success();
}

LogicalResult TwellFFNOp::verify() {
  TwellType h = getPacked().getType();
  int64_t m = h.getShape()[0], f = h.getShape()[1];
  if (failed(verifyStaticMatrix(*this, "down weight", getDown().getType())) ||
      failed(verifyStaticMatrix(*this, "result", getResult().getType())))
    return failure();
  auto wd = getDown().getType();
  int64_t d = wd.getDimSize(0);
  if (wd.getDimSize(1) != f)
    return emitOpError() << "down weight must be d x " << f
                         << " (one column per neuron), got " << wd;
  if (static_cast<bool>(getInput()) != static_cast<bool>(getUp()))
    return emitOpError() << "a gated FFN needs both the input and the up "
                            "weight";
  if (getInput()) {
    if (failed(verifyStaticMatrix(*this, "input", getInput().getType())) ||
        failed(verifyStaticMatrix(*this, "up weight", getUp().getType())))
      return failure();
    auto x = getInput().getType();
    auto wu = getUp().getType();
    if (x.getDimSize(0) != m || x.getDimSize(1) != d)
      return emitOpError() << "input must be " << m << "x" << d << ", got "
                           << x;
    if (wu.getDimSize(0) != f || wu.getDimSize(1) != d)
      return emitOpError() << "up weight must be " << f << "x" << d
                           << ", got " << wu;
  }
  auto y = getResult().getType();
  if (y.getDimSize(0) != m || y.getDimSize(1) != d)
    return emitOpError() << "result must be " << m << "x" << d << ", got "
                         << y;
  for (Value v : getOperation()->getOperands().drop_front())
    if (cast<RankedTensorType>(v.getType()).getElementType() !=
        h.getElementType())
      return emitOpError() << "all operands must share the activations' "
                              "element type "
                           << h.getElementType();
  if (y.getElementType() != h.getElementType())
    return emitOpError() << "result element type must be "
                         << h.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations and attention
//===----------------------------------------------------------------------===//

/// Checks that a per-feature parameter is a 1-D tensor of the input's last
/// dimension and element type.
static LogicalResult verifyFeatureParam(Operation *op, StringRef what,
                                        RankedTensorType input, Type type) {
  auto t = cast<RankedTensorType>(type);
  int64_t last = input.getRank() ? input.getShape().back() : 0;
  if (t.getRank() != 1 || t.getDimSize(0) != last)
    return op->emitOpError() << "expects " << what << " of shape [" << last
                             << "] (the input's last dimension), got " << type;
  if (t.getElementType() != input.getElementType())
    return op->emitOpError() << "expects " << what << " element type "
                             << input.getElementType() << ", got "
                             << t.getElementType();
  return success();
}

static LogicalResult verifyNorm(Operation *op, Type inType, Type outType,
                                float epsilon) {
  auto in = cast<RankedTensorType>(inType);
  if (in.getRank() < 1 || !in.hasStaticShape())
    return op->emitOpError() << "expects a statically shaped input of rank "
                                ">= 1, got " << inType;
  if (inType != outType)
    return op->emitOpError() << "result type " << outType
                             << " must equal the input type " << inType;
  if (!(epsilon >= 0.0f) || std::isinf(epsilon))
    return op->emitOpError() << "expects a finite, non-negative epsilon, got "
                             << epsilon;
  return success();
}

LogicalResult AddRMSNormOp::verify() {
  RankedTensorType in = getInput().getType();
  if (getResidual().getType() != in || getSum().getType() != in)
    return emitOpError() << "expects the residual and the sum to have the "
                            "input's type "
                         << in << ", got " << getResidual().getType()
                         << " and " << getSum().getType();
  if (failed(verifyNorm(*this, in, getResult().getType(),
                        getEpsilon().convertToFloat())))
    return failure();
  return verifyFeatureParam(*this, "weight", in, getWeight().getType());
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyNorm(*this, getInput().getType(), getResult().getType(),
                        getEpsilon().convertToFloat())))
    return failure();
  return verifyFeatureParam(*this, "weight", getInput().getType(),
                            getWeight().getType());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNorm(*this, getInput().getType(), getResult().getType(),
                        getEpsilon().convertToFloat())) ||
      failed(verifyFeatureParam(*this, "weight", getInput().getType(),
                                getWeight().getType())))
    return failure();
  return verifyFeatureParam(*this, "bias", getInput().getType(),
                            getBias().getType());
}

LogicalResult AttentionOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(),
       v = getValue().getType(), r = getResult().getType();
  StringRef layout = getSeqMajor() ? "B x S x H x D" : "B x H x S x D";
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key", k}, {"value", v}, {"result", r}})
    if (t.getRank() != 4 || !t.hasStaticShape())
      return emitOpError() << "expects " << name << " to be a static "
                           << layout << " tensor, got " << t;
  if (getSeqMajor() && (getMask() || getPositions()))
    return emitOpError() << "seq_major takes no mask or positions";
  unsigned hDim = headsDim(), sDim = seqDim();
  int64_t b = q.getDimSize(0), h = q.getDimSize(hDim), sq = q.getDimSize(sDim),
          d = q.getDimSize(3);
  int64_t hkv = k.getDimSize(hDim), sk = k.getDimSize(sDim),
          dv = v.getDimSize(3);
  if (Value positions = getPositions()) {
    // Keys and values are a cache: its batch may exceed the query's.
    if (!getCausal())
      return emitOpError() << "positions need 'causal' (a query at position "
                              "p sees the cached keys 0..p)";
    if (getMask())
      return emitOpError() << "takes positions or a mask, not both";
    auto p = cast<RankedTensorType>(positions.getType());
    bool perSequence = p.getRank() == 2 && p.getDimSize(0) == b &&
                       p.getDimSize(1) == sq;
    bool shared = p.getRank() == 1 && p.getDimSize(0) == sq;
    if (!perSequence && !shared)
      return emitOpError() << "positions must be " << b << "x" << sq
                           << " (batch x query length) or " << sq
                           << " (the same for every sequence), got " << p;
    if (k.getDimSize(0) < b || v.getDimSize(0) != k.getDimSize(0))
      return emitOpError() << "the key/value cache batch ("
                           << k.getDimSize(0) << ", " << v.getDimSize(0)
                           << ") must be equal and at least the query batch ("
                           << b << ")";
  } else if (k.getDimSize(0) != b || v.getDimSize(0) != b) {
    return emitOpError() << "query, key and value must share the batch size";
  }
  if (v.getDimSize(hDim) != hkv || v.getDimSize(sDim) != sk)
    return emitOpError() << "key and value must share heads and length, got "
                         << k << " and " << v;
  if (hkv == 0 || h % hkv != 0)
    return emitOpError() << "query heads (" << h
                         << ") must be a multiple of key/value heads (" << hkv
                         << ")";
  if (k.getDimSize(3) != d)
    return emitOpError() << "query and key head sizes differ: " << d << " vs "
                         << k.getDimSize(3);
  if (r.getDimSize(0) != b || r.getDimSize(hDim) != h ||
      r.getDimSize(sDim) != sq || r.getDimSize(3) != dv)
    return emitOpError() << "result must be " << b << "x"
                         << (getSeqMajor() ? sq : h) << "x"
                         << (getSeqMajor() ? h : sq) << "x" << dv << ", got "
                         << r;
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType() ||
      q.getElementType() != r.getElementType())
    return emitOpError() << "query, key, value and result must share one "
                            "element type";
  if (Value mask = getMask()) {
    auto m = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> full = {b, h, sq, sk};
    if (m.getRank() > 4 || !m.hasStaticShape())
      return emitOpError() << "mask must be static and of rank <= 4, got "
                           << m;
    for (int64_t i = 0; i < m.getRank(); ++i) {
      int64_t dim = m.getDimSize(m.getRank() - 1 - i);
      int64_t want = full[3 - i];
      if (dim != 1 && dim != want)
        return emitOpError() << "mask " << m << " does not broadcast to "
                             << b << "x" << h << "x" << sq << "x" << sk;
    }
    if (!m.getElementType().isInteger(1) &&
        m.getElementType() != q.getElementType() &&
        !m.getElementType().isF32())
      return emitOpError() << "a float mask must have the query's element "
                              "type or f32";
  }
  return success();
}

/// The RoPE tables `cos` and `sin` of input `x` (sgpu.rope, and the rope of
/// sgpu.cache_update): an even last dimension, the tables of x's element
/// type and rank, broadcasting to x and covering its last dimension.
static LogicalResult verifyRopeTables(Operation *op, RankedTensorType x,
                                      RankedTensorType cos,
                                      RankedTensorType sin) {
  int64_t d = x.getShape().back();
  if (d % 2 != 0)
    return op->emitOpError() << "the rotated dimension must be even, got "
                             << d;
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"cos", cos},
                         {"sin", sin}}) {
    if (t.getElementType() != x.getElementType())
      return op->emitOpError() << name << " must have the input's element type "
                               << x.getElementType() << ", got " << t;
    if (t.getRank() != x.getRank() || !t.hasStaticShape())
      return op->emitOpError() << name
                               << " must be static with the input's rank "
                               << x.getRank() << ", got " << t;
    for (int64_t i = 0; i < x.getRank(); ++i)
      if (t.getDimSize(i) != 1 && t.getDimSize(i) != x.getDimSize(i))
        return op->emitOpError() << name << " " << t
                                 << " does not broadcast to " << x;
    if (t.getShape().back() != d)
      return op->emitOpError() << name << " must cover the whole rotated "
                                          "dimension ("
                               << d << "), got " << t;
  }
  return success();
}

LogicalResult CacheUpdateOp::verify() {
  auto cache = getCache().getType(), update = getUpdate().getType(),
       positions = getPositions().getType(), r = getResult().getType();
  for (auto [name, t] :
       {std::pair<StringRef, RankedTensorType>{"cache", cache},
        {"update", update}})
    if (t.getRank() != 4 || !t.hasStaticShape())
      return emitOpError() << "expects the " << name
                           << " to be a static B x H x S x D tensor, got " << t;
  if (r != cache)
    return emitOpError() << "result type " << r
                         << " must be the cache type " << cache;
  if (update.getElementType() != cache.getElementType())
    return emitOpError() << "update and cache must share one element type, got "
                         << update.getElementType() << " and "
                         << cache.getElementType();
  int64_t b = update.getDimSize(0), s = update.getDimSize(2);
  if (b > cache.getDimSize(0))
    return emitOpError() << "update batch " << b
                         << " exceeds the cache's maximum batch "
                         << cache.getDimSize(0);
  if (update.getDimSize(1) != cache.getDimSize(1) ||
      update.getDimSize(3) != cache.getDimSize(3))
    return emitOpError() << "update " << update
                         << " must match the cache's heads and head size ("
                         << cache << ")";
  if (s > cache.getDimSize(2))
    return emitOpError() << "update length " << s
                         << " exceeds the cache capacity "
                         << cache.getDimSize(2);
  bool perSequence = positions.getRank() == 2 &&
                     positions.getDimSize(0) == b &&
                     positions.getDimSize(1) == s;
  bool shared = positions.getRank() == 1 && positions.getDimSize(0) == s;
  if (!positions.hasStaticShape() || (!perSequence && !shared))
    return emitOpError() << "positions must be " << b << "x" << s
                         << " (batch x new tokens) or " << s
                         << " (the same for every sequence), got "
                         << positions;
  if (bool(getRopeCos()) != bool(getRopeSin()))
    return emitOpError() << "rope takes both tables, cos and sin";
  if (getRopeCos() &&
      failed(verifyRopeTables(*this, update,
                              getRopeCos().getType(),
                              getRopeSin().getType())))
    return failure();
  // The lowerings write the caller's buffer in place: the cache must be
  // that buffer (a state argument) and nothing else may read its old value.
  auto arg = dyn_cast<BlockArgument>(getCache());
  auto func = arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp())
                  : FunctionOpInterface();
  if (!func || arg.getOwner() != &func.getFunctionBody().front() ||
      !func.getArgAttr(arg.getArgNumber(), SGPUDialect::kStateAttr))
    return emitOpError() << "the cache must be a function argument marked '"
                         << SGPUDialect::kStateAttr
                         << "' (the buffer it updates in place)";
  if (!getCache().hasOneUse())
    return emitOpError() << "the cache argument #" << arg.getArgNumber()
                         << " has other uses: read the updated cache (this "
                            "op's result) instead";
  return success();
}

LogicalResult EmbeddingOp::verify() {
  auto table = getTable().getType(), ids = getIds().getType(),
       r = getResult().getType();
  if (table.getRank() != 2 || !table.hasStaticShape())
    return emitOpError() << "expects a static V x D table, got " << table;
  if (!ids.hasStaticShape())
    return emitOpError() << "expects statically shaped ids, got " << ids;
  SmallVector<int64_t> want(ids.getShape());
  want.push_back(table.getDimSize(1));
  if (r.getShape() != ArrayRef<int64_t>(want) ||
      r.getElementType() != table.getElementType())
    return emitOpError() << "result must be the ids' shape followed by D = "
                         << table.getDimSize(1)
                         << " with the table's element type, got " << r;
  return success();
}

LogicalResult RopeOp::verify() {
  auto x = getInput().getType(), r = getResult().getType();
  if (!x.hasStaticShape() || x.getRank() < 1)
    return emitOpError() << "expects a static input of rank >= 1, got " << x;
  if (r != x)
    return emitOpError() << "result must have the input's type " << x
                         << ", got " << r;
  return verifyRopeTables(*this, x, getCos().getType(), getSin().getType());
}

//===----------------------------------------------------------------------===//
// tensor_map
//===----------------------------------------------------------------------===//

LogicalResult TensorMapOp::verify() {
  // The limits cuTensorMapEncodeTiled places on a tiled map without
  // interleave.
  constexpr int64_t kMaxRank = 5;
  constexpr int64_t kMaxDim = int64_t(1) << 32;
  constexpr int64_t kMaxBoxDim = 256;
  constexpr int64_t kMaxPitch = int64_t(1) << 40;

  MemRefType source = getSourceType();
  if (!source.getLayout().isIdentity())
    return emitOpError() << "expects a row-major source (identity layout), "
                            "got "
                         << source;
  if (source.getMemorySpace())
    return emitOpError() << "expects a source in the default memory space "
                            "(device global memory), got "
                         << source;
  Type element = source.getElementType();
  if (!element.isF16() && !element.isBF16() && !element.isF32() &&
      !element.isSignlessInteger(32))
    return emitOpError() << "expects a source element type f16, bf16, f32 or "
                            "i32, got "
                         << element;
  int64_t rank = source.getRank();
  if (rank < 1 || rank > kMaxRank)
    return emitOpError() << "expects a source of rank 1 to " << kMaxRank
                         << ", got rank " << rank;
  ArrayRef<int64_t> shape = source.getShape();
  for (auto [i, dim] : llvm::enumerate(shape))
    if (dim < 1 || dim > kMaxDim)
      return emitOpError() << "source dimension #" << i << " is " << dim
                           << "; a tensor map needs dimensions from 1 to "
                              "2^32";

  int64_t swizzle = getSwizzle();
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitOpError() << "swizzle must be 0 (none), 32, 64 or 128 bytes, "
                            "got "
                         << swizzle;

  ArrayRef<int64_t> box = getBox();
  if (int64_t(box.size()) != rank)
    return emitOpError() << "box has rank " << box.size()
                         << " but the source has rank " << rank;
  for (auto [i, dim] : llvm::enumerate(box))
    if (dim < 1 || dim > kMaxBoxDim)
      return emitOpError() << "box dimension #" << i << " is " << dim
                           << "; expected 1 to " << kMaxBoxDim;

  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  int64_t innerBytes = box.back() * elementBytes;
  if (innerBytes % 16 != 0)
    return emitOpError() << "innermost box extent is " << innerBytes
                         << " bytes (" << box.back() << " x " << element
                         << "); it must be a multiple of 16 bytes";
  if (swizzle != 0 && innerBytes > swizzle)
    return emitOpError() << "innermost box extent of " << innerBytes
                         << " bytes exceeds the " << swizzle
                         << "-byte swizzle span";

  // Byte stride of each dimension but the innermost (dense row-major); each
  // is a multiple of the next, so only the innermost pitch can break the
  // 16-byte rule. The loop stops at the first pitch of 2^40 or more, so 128
  // bits never overflow (at most 2^40 * 2^32).
  APInt pitch(128, elementBytes);
  for (int64_t i = rank - 2; i >= 0; --i) {
    pitch *= APInt(128, shape[i + 1]);
    if (pitch.urem(16) != 0)
      return emitOpError() << "row pitch of dimension #" << i << " is "
                           << pitch.getZExtValue()
                           << " bytes; a tensor map needs a multiple of 16 "
                              "bytes";
    if (pitch.uge(kMaxPitch))
      return emitOpError() << "row pitch of dimension #" << i << " is "
                           << llvm::toString(pitch, 10, /*Signed=*/false)
                           << " bytes; a tensor map needs less than 2^40";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static LogicalResult verifyCollectiveInput(Operation *op, Type type) {
  auto t = cast<RankedTensorType>(type);
  if (!t.hasStaticShape())
    return op->emitOpError() << "expects a statically shaped tensor, got "
                             << type;
  if (!t.getElementType().isF16() && !t.getElementType().isBF16() &&
      !t.getElementType().isF32())
    return op->emitOpError()
           << "reduces f16, bf16 or f32 tensors, got " << t.getElementType();
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyCollectiveInput(*this, getInput().getType());
}

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifyCollectiveInput(*this, getInput().getType())))
    return failure();
  if (!getToken().hasOneUse() ||
      !isa<AllReduceWaitOp>(*getToken().getUsers().begin()))
    return emitOpError() << "token must be waited on by exactly one "
                            "sgpu.all_reduce_wait";
  return success();
}

LogicalResult AllReduceWaitOp::verify() {
  auto start = getToken().getDefiningOp<AllReduceStartOp>();
  if (!start)
    return emitOpError() << "token must come from an sgpu.all_reduce_start "
                            "in the same region";
  // The result has the input's type (AllTypesMatch), so this also fixes
  // the result type.
  if (getInput() != start.getInput())
    return emitOpError() << "input must be the value the matching "
                            "sgpu.all_reduce_start reduces (it keeps that "
                            "buffer alive until the wait)";
  return success();
}

LogicalResult AllReduceCallOp::verify() {
  auto send = cast<MemRefType>(getSend().getType());
  auto recv = cast<MemRefType>(getRecv().getType());
  if (send.getShape() != recv.getShape() ||
      send.getElementType() != recv.getElementType())
    return emitOpError() << "recv " << recv << " must have the shape and "
                         << "element type of send " << send;
  if (!send.getElementType().isF16() && !send.getElementType().isBF16() &&
      !send.getElementType().isF32())
    return emitOpError() << "reduces f16, bf16 or f32 buffers, got "
                         << send.getElementType();
  if (!send.getLayout().isIdentity() || !recv.getLayout().isIdentity())
    return emitOpError() << "reduces contiguous (identity layout) buffers";
  if (!getToken().hasOneUse() ||
      !isa<AllReduceSyncOp>(*getToken().getUsers().begin()))
    return emitOpError() << "token must be synchronized by exactly one "
                            "sgpu.all_reduce_sync";
  return success();
}

LogicalResult AllReduceSyncOp::verify() {
  auto call = getToken().getDefiningOp<AllReduceCallOp>();
  if (!call)
    return emitOpError() << "token must come from an sgpu.all_reduce_call";
  if (getSend().getType() != call.getSend().getType())
    return emitOpError() << "send " << getSend().getType()
                         << " must have the type of the call's send "
                         << call.getSend().getType();
  if (call->getBlock() != (*this)->getBlock() ||
      !call->isBeforeInBlock(*this))
    return emitOpError() << "must follow its sgpu.all_reduce_call in the "
                            "same block";
  return success();
}

#define GET_OP_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUOps.cpp.inc"
