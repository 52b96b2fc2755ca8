//===- SparsifyFFN.cpp - ReLU FFNs to TwELL packing + sparse consumer -----===//
//
// Finds the feed-forward blocks whose hidden activations come out of a ReLU,
// ungated `relu(X Wu^T) Wd^T` and gated `(relu(X Wg^T) * (X Wu^T)) Wd^T`, in
// the linalg form the importers write, and rewrites the down projection into
// sgpu.twell_pack of the ReLU output followed by sgpu.twell_ffn, which only
// visits the nonzero (active) neurons. The producer GEMM and its ReLU stay
// as they are: the GPU pipeline fuses the packing into that GEMM's epilogue.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "ElementwiseMatch.h"
#include "EraseDeadChain.h"
#include "MatmulMatch.h"
#include "TwellCostModel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUSPARSIFYFFN
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Looks through tensor.collapse_shape / tensor.expand_shape ops that only
/// regroup the leading (token) dimensions and keep the last one as its own
/// group: importers wrap every linear of a [B, S, d] input in such a pair.
/// Row r of the [M, F] view is the same row on both sides of such a reshape,
/// so the FFN's rows line up whatever the grouping of B and S.
static Value skipRowReshapes(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    Value src;
    int64_t rank = 0;
    SmallVector<ReassociationIndices> groups;
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(def)) {
      src = c.getSrc();
      rank = c.getSrcType().getRank();
      groups = c.getReassociationIndices();
    } else if (auto e = dyn_cast<tensor::ExpandShapeOp>(def)) {
      src = e.getSrc();
      rank = e.getResultType().getRank();
      groups = e.getReassociationIndices();
    } else {
      break;
    }
    if (groups.empty() || groups.back() != ReassociationIndices{rank - 1})
      break;
    v = src;
  }
  return v;
}

/// The GEMM an element-wise activation reads: a linalg.matmul, through row
/// reshapes and an optional bias add (a torch Linear with bias).
static linalg::MatmulOp producerGemm(linalg::GenericOp act) {
  Value v = skipRowReshapes(act.getDpsInputOperand(0)->get());
  if (auto add = v.getDefiningOp<linalg::GenericOp>()) {
    for (OpOperand *in : add.getDpsInputOperands())
      if (matchBiasAdd(add, in->get())) {
        v = skipRowReshapes(in->get());
        break;
      }
  }
  return v.getDefiningOp<linalg::MatmulOp>();
}

/// An element-wise, one-input op on a GEMM's output that keeps the element
/// type: the activation of an FFN (a ReLU, or one this pass cannot use).
/// A cast (extf/truncf) is not an activation.
static bool isActivationOverGemm(linalg::GenericOp op) {
  if (!isPlainElementwise(op, 1))
    return false;
  auto in = cast<RankedTensorType>(op.getDpsInputOperand(0)->get().getType());
  auto out = cast<RankedTensorType>(op.getResult(0).getType());
  return in.getElementType() == out.getElementType() &&
         static_cast<bool>(producerGemm(op));
}

/// Whether `op` is the element-wise product of its two inputs (either
/// operand order in the body).
static bool isProduct(linalg::GenericOp op) {
  if (!isPlainElementwise(op, 2))
    return false;
  Value out = yielded(op);
  auto mul = out ? out.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul)
    return false;
  Block &body = op.getRegion().front();
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// Names the activation computed by `act` for a remark: the forms the
/// importers write for SiLU, sigmoid and GELU, else the body's ops.
static std::string describeActivation(linalg::GenericOp act) {
  Block &body = act.getRegion().front();
  Value in = body.getArgument(0);
  bool erf = false, tanh = false, exp = false, clamp = false;
  SmallVector<std::string> names;
  for (Operation &op : body.without_terminator()) {
    if (isa<arith::ConstantOp>(op))
      continue;
    erf |= isa<math::ErfOp>(op);
    tanh |= isa<math::TanhOp>(op);
    exp |= isa<math::ExpOp>(op);
    clamp |= isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
                 arith::MinNumFOp, arith::SelectOp>(op);
    names.push_back(op.getName().getStringRef().str());
  }
  Value out = yielded(act);
  auto mul = out ? out.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  bool timesInput = mul && (mul.getLhs() == in || mul.getRhs() == in);
  if (erf)
    return "GELU";
  if (tanh)
    return names.size() > 1 ? "GELU (tanh approximation)" : "tanh";
  if (exp)
    return timesInput ? "SiLU" : "sigmoid";
  if (clamp)
    return "a clamp other than max(x, 0)";
  if (names.empty())
    return "the identity";
  return "an element-wise " + llvm::join(names, ", ");
}

/// `W^T` of a 2-D tensor, as a linalg.transpose into a new tensor.
static Value transposed(OpBuilder &b, Location loc, Value w) {
  auto t = cast<RankedTensorType>(w.getType());
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{t.getDimSize(1), t.getDimSize(0)},
      t.getElementType());
  return linalg::TransposeOp::create(b, loc, w, init,
                                     ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

/// One recognized FFN, ready to rewrite. Only values and the two ops that
/// the rewrite touches are kept: rewriting another FFN first may erase
/// other ops of this one's chain (a stacked FFN's down projection can be
/// this one's producer).
struct FFN {
  linalg::MatmulOp down;  ///< Y = H . Wd^T, replaced
  linalg::GenericOp relu; ///< computes H (any rank, rows first)
  LinearMatch downLin;    ///< H, Wd (d x F) or its F x d form
  LinearMatch upLin;      ///< gated: X, Wu (F x d) or its d x F form
  int64_t m = 0, f = 0;
};

/// The output width d of the down projection `down` (Y = H . Wd^T).
int64_t outputWidth(linalg::MatmulOp down) {
  return cast<ShapedType>(down.getResult(0).getType()).getShape().back();
}

struct SparsifyFFNPass
    : public sgpu::impl::SGPUSparsifyFFNBase<SparsifyFFNPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (fallback != "dense") {
      module.emitError() << "unknown sgpu-sparsify-ffn fallback '" << fallback
                         << "'; expected dense (rows with a tile over "
                            "capacity computed by the dense path)";
      return signalPassFailure();
    }
    // An explicit option wins over the model's sgpu.twell attribute, which
    // wins over the defaults.
    unsigned t = tile, c = compression;
    if (auto attr = module->getAttrOfType<TwellLayoutAttr>(
            SGPUDialect::kTwellAttr)) {
      if (!tile.hasValue())
        t = attr.getTile();
      if (!compression.hasValue())
        c = attr.getCompression();
    }
    auto emitOptionError = [&]() -> InFlightDiagnostic {
      return module.emitError() << "invalid sgpu-sparsify-ffn options: ";
    };
    if (failed(TwellLayoutAttr::verify(emitOptionError, t, c)))
      return signalPassFailure();
    layout = TwellLayoutAttr::get(&getContext(), t, c);

    SmallVector<FFN> found;
    module.walk([&](linalg::MatmulOp op) {
      if (std::optional<FFN> ffn = match(op))
        found.push_back(*ffn);
    });
    FailureOr<Calibration> calibration = readCalibration(found.size());
    if (failed(calibration))
      return signalPassFailure();
    DenseMap<Operation *, Value> packs;
    for (auto [i, ffn] : llvm::enumerate(found)) {
      if (calibration->densities.empty()) {
        rewrite(ffn, packs);
        continue;
      }
      std::optional<double> u;
      if (!calibration->unions.empty())
        u = calibration->unions[i];
      Consumer choice = choose(ffn, calibration->densities[i], u);
      if (choice != Consumer::dense)
        rewrite(ffn, packs, choice == Consumer::tensorCores);
    }
    // A pack has one form: its consumers run on the tensor cores only when
    // every one of them was chosen there.
    for (auto &[pack, votes] : consumerVotes)
      if (votes.first && votes.second) {
        pack->removeAttr(SGPUDialect::kTwellConsumerAttr);
        pack->removeAttr(SGPUDialect::kTwellUnionBreakEvenAttr);
        pack->emitRemark() << "TwELL consumers of this pack: CUDA cores, "
                              "since not all of them predict a gain on "
                              "tensor cores";
      }
  }

  /// Per pack: how many of its consumers the cost model put on the tensor
  /// cores and how many on the CUDA cores.
  DenseMap<Operation *, std::pair<int, int>> consumerVotes;

  enum class Consumer { dense, cudaCores, tensorCores };

  /// A calibration: the densities of the rewritable FFNs (none: rewrite
  /// them all) and, optionally, their blocks' union fractions.
  struct Calibration {
    SmallVector<double> densities, unions;
  };

  /// The calibration from the options: `densities` and `unions`, or the
  /// `profile` file's "densities" and optional "block_unions" (a
  /// tensor-core build's twell<i>.block_neurons stats), one per rewritable
  /// FFN in the order the pass finds them. Errors at the module.
  FailureOr<Calibration> readCalibration(size_t ffns) {
    ModuleOp module = getOperation();
    auto error = [&]() -> InFlightDiagnostic {
      return module.emitError() << "sgpu-sparsify-ffn calibration: ";
    };
    Calibration c;
    c.densities.assign(densities.begin(), densities.end());
    c.unions.assign(unions.begin(), unions.end());
    if (!profile.empty()) {
      if (!c.densities.empty()) {
        error() << "give densities or profile, not both";
        return failure();
      }
      if (!c.unions.empty()) {
        error() << "give unions or a profile, not both";
        return failure();
      }
      auto file = llvm::MemoryBuffer::getFile(profile.getValue());
      if (!file) {
        error() << "cannot read profile '" << profile.getValue()
                << "': " << file.getError().message();
        return failure();
      }
      llvm::Expected<llvm::json::Value> json =
          llvm::json::parse((*file)->getBuffer());
      if (!json) {
        error() << "profile '" << profile.getValue()
                << "' is not JSON: " << llvm::toString(json.takeError());
        return failure();
      }
      const llvm::json::Object *root = json->getAsObject();
      const llvm::json::Array *list =
          root ? root->getArray("densities") : nullptr;
      if (!list) {
        error() << "profile '" << profile.getValue()
                << "' has no \"densities\" array";
        return failure();
      }
      auto numbers = [&](const llvm::json::Array &array, StringRef what,
                         SmallVector<double> &out) -> LogicalResult {
        for (const llvm::json::Value &v : array) {
          std::optional<double> d = v.getAsNumber();
          if (!d) {
            error() << "profile '" << profile.getValue() << "': every "
                    << what << " must be a number";
            return failure();
          }
          out.push_back(*d);
        }
        return success();
      };
      if (failed(numbers(*list, "density", c.densities)))
        return failure();
      if (const llvm::json::Array *u = root->getArray("block_unions"))
        if (failed(numbers(*u, "block union", c.unions)))
          return failure();
    }
    // No calibration given; a profile, even an empty one, must cover every
    // FFN.
    if (profile.empty() && c.densities.empty()) {
      if (!c.unions.empty()) {
        error() << "block unions need densities too";
        return failure();
      }
      return c;
    }
    auto validate = [&](ArrayRef<double> values, StringRef plural,
                        StringRef one) -> LogicalResult {
      if (values.size() != ffns) {
        error() << values.size() << " " << plural << " for " << ffns
                << " rewritable FFN(s); give one per FFN, in the order of "
                   "the program's twell<i> stats";
        return failure();
      }
      for (double v : values)
        if (!(v >= 0.0 && v <= 1.0)) {
          error() << llvm::formatv("{0} {1} is outside [0, 1]", one, v);
          return failure();
        }
      return success();
    };
    if (failed(validate(c.densities, "densities", "density")) ||
        (!c.unions.empty() &&
         failed(validate(c.unions, "block unions", "block union"))))
      return failure();
    return c;
  }

  /// The cost model's choice for `ffn` at `density` (and, when measured,
  /// the blocks' union fraction): the CUDA-core consumer, the tensor-core
  /// one (only with a union), or dense when neither predicts
  /// kTwellMinSpeedup; a remark at the down projection for the tensor
  /// cores and for dense.
  Consumer choose(FFN &ffn, double density, std::optional<double> u) {
    int64_t d = outputWidth(ffn.down);
    bool gated = static_cast<bool>(ffn.upLin.input);
    double cuda = twellPredictedSpeedup(d, gated, density);
    double tc = u && twellTensorCoresFit(d, ffn.f)
                    ? twellTensorCorePredictedSpeedup(d, gated, *u)
                    : 0.0;
    if (tc > cuda && tc >= kTwellMinSpeedup) {
      ffn.down.emitRemark() << llvm::formatv(
          "TwELL on tensor cores (cost model): calibrated union {0:P2} of "
          "the blocks of 64 rows predicts {1:F2}x of dense, the CUDA cores "
          "{2:F2}x at density {3:P2}",
          *u, tc, cuda, density);
      return Consumer::tensorCores;
    }
    if (cuda >= kTwellMinSpeedup)
      return Consumer::cudaCores;
    auto diag = ffn.down.emitRemark() << llvm::formatv(
        "FFN kept dense (TwELL cost model): calibrated density {0:P2} "
        "predicts {1:F2}x of dense; TwELL pays below {2:P2} ({3}, d = {4})",
        density, cuda, twellBreakEvenDensity(d, gated),
        gated ? "gated" : "ungated", d);
    if (u)
      diag << llvm::formatv("; on tensor cores, union {0:P2} predicts {1:F2}x "
                            "(pays below {2:P2})",
                            *u, tc, twellTensorCoreBreakEvenUnion(d, gated));
    return Consumer::dense;
  }

  /// Reads `down` as the down projection of a ReLU FFN. Returns nothing,
  /// silently, when it is not the last GEMM of an FFN; with a remark at
  /// `down` when it is one that this pass cannot rewrite.
  std::optional<FFN> match(linalg::MatmulOp down) {
    FFN ffn;
    ffn.down = down;
    ffn.downLin = matchLinear(down);
    if (!ffn.downLin.input)
      return std::nullopt;
    auto h = skipRowReshapes(ffn.downLin.input).getDefiningOp<linalg::GenericOp>();
    if (!h)
      return std::nullopt;

    // Ungated: the down projection reads the activation. Gated: it reads a
    // product with an activation on one side (either order) and the up
    // projection on the other.
    linalg::GenericOp act;
    Value other;
    if (isActivationOverGemm(h)) {
      act = h;
    } else if (isProduct(h)) {
      for (unsigned i = 0; i < 2 && !act; ++i) {
        auto g = skipRowReshapes(h.getDpsInputOperand(i)->get())
                     .getDefiningOp<linalg::GenericOp>();
        if (g && isActivationOverGemm(g)) {
          act = g;
          other = h.getDpsInputOperand(1 - i)->get();
        }
      }
    }
    if (!act)
      return std::nullopt;
    ffn.relu = act;

    auto remark = [&]() -> InFlightDiagnostic {
      return down.emitRemark() << "FFN not sparsified (TwELL): ";
    };
    if (!isRelu(act)) {
      remark() << "its activation is " << describeActivation(act)
               << ", not ReLU; TwELL packs the exact zeros a ReLU leaves "
                  "(other activations leave almost none)";
      return std::nullopt;
    }

    // The consumer computes X[m] . Wu[j] itself: the other factor must be
    // exactly that product (no bias, no scaling), read by a plain GEMM.
    linalg::MatmulOp up;
    if (other) {
      up = skipRowReshapes(other).getDefiningOp<linalg::MatmulOp>();
      if (up)
        ffn.upLin = matchLinear(up);
      if (!up || !ffn.upLin.input) {
        remark() << "the factor beside relu(X Wg^T) is not an up projection "
                    "X Wu^T (a bias add or other op in between?); "
                    "sgpu.twell_ffn computes X[m] . Wu[j] itself";
        return std::nullopt;
      }
    }

    // Element types: TwELL entries hold 16-bit values, and every operand of
    // sgpu.twell_ffn shares the activations' type.
    auto hType = cast<RankedTensorType>(act.getResult(0).getType());
    Type elt = hType.getElementType();
    if (!elt.isF16() && !elt.isBF16()) {
      remark() << "the FFN computes in " << elt
               << "; TwELL packs 16-bit values (f16 or bf16)";
      return std::nullopt;
    }
    SmallVector<std::pair<StringRef, Value>> operands = {
        {"the down weight", down.getInputs()[1]},
        {"the down projection's result", down.getResult(0)}};
    if (up) {
      operands.push_back({"the up projection's input", up.getInputs()[0]});
      operands.push_back({"the up weight", up.getInputs()[1]});
    }
    for (auto &[what, v] : operands) {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getElementType() != elt) {
        remark() << what << " is " << t.getElementType()
                 << ", not the activations' " << elt
                 << " (sgpu.twell_ffn takes and returns one 16-bit type)";
        return std::nullopt;
      }
      if (t.getEncoding()) {
        remark() << what << " carries the encoding " << t.getEncoding()
                 << "; a structured-sparse weight is sgpu-slide-sparse's";
        return std::nullopt;
      }
    }
    bool staticShapes = hType.hasStaticShape();
    for (auto &[what, v] : operands)
      staticShapes &= cast<RankedTensorType>(v.getType()).hasStaticShape();
    if (!staticShapes) {
      remark() << "dynamic shapes; TwELL packing needs static M and F";
      return std::nullopt;
    }
    if (!isZeroFill(down.getOutputs()[0]) ||
        (up && !isZeroFill(up.getOutputs()[0]))) {
      remark() << "the " << (isZeroFill(down.getOutputs()[0]) ? "up" : "down")
               << " projection accumulates into a value that is not a zero "
                  "fill";
      return std::nullopt;
    }

    // Shapes: H viewed as [M, F] (rows first) must be the down projection's
    // input, and the up projection's result for a gated FFN.
    auto dIn = cast<RankedTensorType>(ffn.downLin.input.getType());
    ffn.f = hType.getShape().back();
    ffn.m = hType.getNumElements() / std::max<int64_t>(ffn.f, 1);
    bool shapesAgree = dIn.getDimSize(0) == ffn.m && dIn.getDimSize(1) == ffn.f;
    if (up) {
      auto u = cast<RankedTensorType>(up.getResult(0).getType());
      shapesAgree &= u.getDimSize(0) == ffn.m && u.getDimSize(1) == ffn.f;
    }
    if (!shapesAgree || ffn.f == 0) {
      remark() << "the activations (" << hType
               << ") do not line up with the projections' [M, F] operands";
      return std::nullopt;
    }

    // Any F: the last tile of a row may be partial (the format and both
    // lowerings handle it).
    return ffn;
  }

  /// Packs the ReLU output (once per ReLU, right after it: the producer's
  /// epilogue) and replaces the down projection by sgpu.twell_ffn.
  void rewrite(FFN &ffn, DenseMap<Operation *, Value> &packs,
               bool tensorCores = false) {
    MLIRContext *ctx = &getContext();
    Value &packed = packs[ffn.relu];
    if (!packed) {
      OpBuilder b(ffn.relu);
      b.setInsertionPointAfter(ffn.relu);
      Location loc = ffn.relu.getLoc();
      Value h = ffn.relu.getResult(0);
      auto hType = cast<RankedTensorType>(h.getType());
      if (hType.getRank() != 2) {
        ReassociationIndices rows;
        for (int64_t i = 0; i + 1 < hType.getRank(); ++i)
          rows.push_back(i);
        h = tensor::CollapseShapeOp::create(
            b, loc, h,
            ArrayRef<ReassociationIndices>{rows, {hType.getRank() - 1}});
      }
      auto type = TwellType::get(ctx, {ffn.m, ffn.f}, hType.getElementType(),
                                 layout);
      packed = TwellPackOp::create(b, loc, type, h);
    }

    // sgpu.twell_ffn takes the weights in torch Linear layout (Wd : d x F,
    // Wu : F x d); a weight given as the K x N operand is transposed back.
    linalg::MatmulOp down = ffn.down;
    OpBuilder b(down);
    Location loc = down.getLoc();
    auto linearWeight = [&](const LinearMatch &lin) {
      return lin.weight ? lin.weight : transposed(b, loc, lin.kxn);
    };
    Value wd = linearWeight(ffn.downLin);
    Value x, wu;
    if (ffn.upLin.input) {
      x = ffn.upLin.input;
      wu = linearWeight(ffn.upLin);
    }
    Value y = TwellFFNOp::create(b, loc, down.getResult(0).getType(), packed,
                                 wd, x, wu);
    // The density above which dense would be faster, for run-time guards
    // (the smallest over the pack's consumers).
    double breakEven = std::max(
        0.0, twellBreakEvenDensity(outputWidth(down), static_cast<bool>(x)));
    Operation *pack = packed.getDefiningOp();
    if (auto known =
            pack->getAttrOfType<FloatAttr>(SGPUDialect::kTwellBreakEvenAttr))
      breakEven = std::min(breakEven, known.getValueAsDouble());
    pack->setAttr(SGPUDialect::kTwellBreakEvenAttr,
                  b.getF64FloatAttr(std::min(breakEven, 1.0)));
    auto &votes = consumerVotes[pack];
    (tensorCores ? votes.first : votes.second) += 1;
    // The tensor cores: their guard is the blocks' union, not the density.
    if (tensorCores) {
      pack->setAttr(SGPUDialect::kTwellConsumerAttr,
                    b.getStringAttr("tensor-cores"));
      double unionBreakEven = twellTensorCoreBreakEvenUnion(
          outputWidth(down), static_cast<bool>(x));
      if (auto known = pack->getAttrOfType<FloatAttr>(
              SGPUDialect::kTwellUnionBreakEvenAttr))
        unionBreakEven = std::min(unionBreakEven, known.getValueAsDouble());
      pack->setAttr(SGPUDialect::kTwellUnionBreakEvenAttr,
                    b.getF64FloatAttr(unionBreakEven));
    }
    down.getResult(0).replaceAllUsesWith(y);
    // The product, the up projection, reshapes, fills and transposes that
    // only fed it go with it.
    eraseDeadChain(down);
  }

  TwellLayoutAttr layout;
};

} // namespace
