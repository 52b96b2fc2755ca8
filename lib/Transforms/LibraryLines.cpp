//===- LibraryLines.cpp - the program lines of library calls -------------===//

#include "LibraryLines.h"

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparseopt/program_format.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace {

/// The id of `v`, an operand (`what`) of the library call `call`
/// (`callName` in messages), which must be a buffer of the program.
FailureOr<int> libraryBuffer(Operation *call, StringRef callName, Value v,
                             StringRef what,
                             const llvm::DenseMap<Value, int> &ids) {
  auto it = ids.find(v);
  if (it == ids.end())
    return call->emitError()
           << "the " << what << " of a " << callName
           << " must be a buffer of the runtime program (an argument of the "
              "host function, memref.alloc or memref.get_global) or a "
              "reshape of one";
  return it->second;
}

/// `gemm m=<M> n=<N> k=<K> in=<t> out=<t> x=b<id> w=b<id> y=b<id>
/// [bias=b<id>:<t>] [act=relu]`: a cuBLASLt call of the runtime.
LogicalResult writeGemm(sgpu::GemmCallOp gemm,
                        const llvm::DenseMap<Value, int> &ids,
                        raw_ostream &os) {
  auto buffer = [&](Value v, StringRef what) {
    return libraryBuffer(gemm, "library GEMM", v, what, ids);
  };
  FailureOr<int> x = buffer(gemm.getInput(), "input"),
                 w = buffer(gemm.getWeight(), "weight"),
                 y = buffer(gemm.getResult(), "result");
  if (failed(x) || failed(w) || failed(y))
    return failure();
  auto xt = cast<MemRefType>(gemm.getInput().getType());
  auto wt = cast<MemRefType>(gemm.getWeight().getType());
  auto yt = cast<MemRefType>(gemm.getResult().getType());
  os << SPARSEOPT_DIRECTIVE_GEMM " m=" << xt.getDimSize(0)
     << " n=" << wt.getDimSize(0) << " k=" << xt.getDimSize(1)
     << " in=" << xt.getElementType() << " out=" << yt.getElementType()
     << " x=b" << *x << " w=b" << *w << " y=b" << *y;
  if (Value bias = gemm.getBias()) {
    FailureOr<int> b = buffer(bias, "bias");
    if (failed(b))
      return failure();
    os << " bias=b" << *b << ":"
       << cast<MemRefType>(bias.getType()).getElementType();
  }
  if (gemm.getActivationOrNone() == sgpu::Activation::relu)
    os << " act=relu";
  os << "\n";
  return success();
}

/// `attention b=<B> h=<H> hkv=<Hkv> sq=<Sq> sk=<Sk> d=<D> type=<t>
/// scale=<s> q=b<id> k=b<id> v=b<id> o=b<id> [mask=causal] [layout=bshd]`:
/// cuDNN's fused attention, called by the runtime. The scale is printed
/// with 9 significant digits, which read back to the same f32.
LogicalResult writeAttention(sgpu::AttentionCallOp call,
                             const llvm::DenseMap<Value, int> &ids,
                             raw_ostream &os) {
  auto buffer = [&](Value v, StringRef what) {
    return libraryBuffer(call, "library attention", v, what, ids);
  };
  FailureOr<int> q = buffer(call.getQuery(), "query"),
                 k = buffer(call.getKey(), "key"),
                 v = buffer(call.getValue(), "value"),
                 o = buffer(call.getResult(), "result");
  if (failed(q) || failed(k) || failed(v) || failed(o))
    return failure();
  auto qt = cast<MemRefType>(call.getQuery().getType());
  auto kt = cast<MemRefType>(call.getKey().getType());
  unsigned hDim = call.headsDim(), sDim = call.seqDim();
  os << SPARSEOPT_DIRECTIVE_ATTENTION " b=" << qt.getDimSize(0)
     << " h=" << qt.getDimSize(hDim) << " hkv=" << kt.getDimSize(hDim)
     << " sq=" << qt.getDimSize(sDim) << " sk=" << kt.getDimSize(sDim)
     << " d=" << qt.getDimSize(3) << " type=" << qt.getElementType()
     << " scale="
     << llvm::format("%.9g", double(call.getScale().convertToFloat()))
     << " q=b" << *q << " k=b" << *k << " v=b" << *v << " o=b" << *o;
  if (call.getCausal())
    os << " mask=causal";
  if (call.getSeqMajor())
    os << " layout=bshd";
  os << "\n";
  return success();
}

} // namespace

LogicalResult mlir::sgpu::writeLibraryLine(
    Operation *call, const llvm::DenseMap<Value, int> &ids, raw_ostream &os) {
  if (auto gemm = dyn_cast<sgpu::GemmCallOp>(call))
    return writeGemm(gemm, ids, os);
  return writeAttention(cast<sgpu::AttentionCallOp>(call), ids, os);
}
