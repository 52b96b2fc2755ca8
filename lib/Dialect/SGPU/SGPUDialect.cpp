//===- SGPUDialect.cpp - sgpu dialect, attributes and types ---------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Formats/SlidingWindow.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SparseTensor/IR/SparseTensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::sgpu;

#include "sparse-opt/Dialect/SGPU/SGPUDialect.cpp.inc"
#include "sparse-opt/Dialect/SGPU/SGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUTypes.cpp.inc"

void SGPUDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "sparse-opt/Dialect/SGPU/SGPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "sparse-opt/Dialect/SGPU/SGPUTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "sparse-opt/Dialect/SGPU/SGPUOps.cpp.inc"
      >();
}

/// Checks `sgpu.tensor_map_args` on `op`: a function whose listed arguments
/// are tensor maps. Only the form is checked here; the indices are checked
/// against the signature by sgpu-tensor-map-params, on the lowered kernel.
static LogicalResult verifyTensorMapArgs(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name
                           << "' is a kernel function attribute (the indices "
                              "of its tensor map arguments), not an attribute "
                              "of '"
                           << op->getName() << "'";
  auto indices = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  if (!indices)
    return op->emitError() << "'" << name
                           << "' must be an array<i64> of argument indices, "
                              "got "
                           << attr.getValue();
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t index : indices.asArrayRef()) {
    if (index < 0)
      return op->emitError()
             << "'" << name << "' lists a negative argument index (" << index
             << ")";
    if (!seen.insert(index).second)
      return op->emitError()
             << "'" << name << "' lists argument #" << index << " twice";
  }
  return success();
}

/// Discardable sgpu.* attributes: model-level options on the module and the
/// tensor map arguments of kernels.
LogicalResult SGPUDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kTensorMapArgsAttr)
    return verifyTensorMapArgs(op, attr);
  if (name == kLadderBlockAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' is a unit attribute (on a residual add), "
                                "got "
                             << attr.getValue();
    return success();
  }
  if (name == kStageAttr) {
    if (!isa<gpu::LaunchFuncOp>(op))
      return op->emitError() << "'" << name
                             << "' is a gpu.launch_func attribute, not an "
                                "attribute of '"
                             << op->getName() << "'";
    auto stage = dyn_cast<StringAttr>(attr.getValue());
    if (!stage || stage.getValue() != "prepare")
      return op->emitError() << "'" << name
                             << "' must be \"prepare\" (the only stage "
                                "besides the default run stage), got "
                             << attr.getValue();
    return success();
  }
  if (name == kProgrammaticAttr) {
    if (!isa<gpu::LaunchFuncOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' is a unit gpu.launch_func attribute, got "
                             << attr.getValue() << " on '" << op->getName()
                             << "'";
    if (op->hasAttr(kStageAttr))
      return op->emitError() << "'" << name
                             << "' marks run-stage launches only; this launch "
                                "is in the prepare stage";
    return success();
  }
  if (name == kPersistentGridAttr) {
    auto grid = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<gpu::LaunchFuncOp>(op) || !grid || grid.size() != 3 ||
        grid[0] < 1 || grid[1] < 1 || grid[1] > 16 || grid[2] < 0)
      return op->emitError()
             << "'" << name
             << "' is a gpu.launch_func attribute array<i64: units >= 1, "
                "cluster 1 to 16, reserved >= 0>, got "
             << attr.getValue() << " on '" << op->getName() << "'";
    return success();
  }
  if (name == kTwellConsumerAttr) {
    auto value = dyn_cast<StringAttr>(attr.getValue());
    if (!value || (value.getValue() != "cuda-cores" &&
                   value.getValue() != "tensor-cores"))
      return op->emitError() << "'" << name
                             << "' must be \"cuda-cores\" or "
                                "\"tensor-cores\", got "
                             << attr.getValue();
    if (!isa<TwellPackOp>(op))
      return op->emitError() << "'" << name
                             << "' is an attribute of sgpu.twell_pack, not of '"
                             << op->getName() << "'";
    return success();
  }
  if (name == kTwellBreakEvenAttr || name == kStatLimitAttr ||
      name == kTwellUnionBreakEvenAttr) {
    auto value = dyn_cast<FloatAttr>(attr.getValue());
    if (!value || !value.getType().isF64() ||
        !(value.getValueAsDouble() >= 0.0 && value.getValueAsDouble() <= 1.0))
      return op->emitError() << "'" << name
                             << "' must be an f64 fraction in [0, 1], got "
                             << attr.getValue();
    if ((name == kTwellBreakEvenAttr || name == kTwellUnionBreakEvenAttr) &&
        !isa<TwellPackOp>(op))
      return op->emitError() << "'" << name
                             << "' is an attribute of sgpu.twell_pack, not of '"
                             << op->getName() << "'";
    if (name == kStatLimitAttr && !op->hasAttr(kStatTotalAttr))
      return op->emitError() << "'" << name << "' needs '" << kStatTotalAttr
                             << "' on the same allocation";
    return success();
  }
  if (name == kStatAttr || name == kStatTotalAttr) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    auto type = alloc ? alloc.getType() : MemRefType();
    if (!alloc || type.getRank() != 1 || type.getDimSize(0) < 1 ||
        !type.getElementType().isSignlessInteger() ||
        (type.getElementType().getIntOrFloatBitWidth() != 32 &&
         type.getElementType().getIntOrFloatBitWidth() != 64))
      return op->emitError() << "'" << name
                             << "' marks a program stat: an attribute of a "
                                "memref.alloc of memref<Nxi32> or "
                                "memref<Nxi64>";
    if (name == kStatTotalAttr) {
      auto total = dyn_cast<IntegerAttr>(attr.getValue());
      if (!total || total.getValue().getSExtValue() <= 0)
        return op->emitError() << "'" << name
                               << "' must be a positive integer, got "
                               << attr.getValue();
      if (!op->hasAttr(kStatAttr))
        return op->emitError() << "'" << name << "' needs '" << kStatAttr
                               << "' on the same allocation";
      return success();
    }
    auto stat = dyn_cast<StringAttr>(attr.getValue());
    if (!stat || stat.getValue().empty() ||
        !llvm::all_of(stat.getValue(), [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '.';
        }))
      return op->emitError() << "'" << name
                             << "' must be a name of letters, digits, '_' "
                                "and '.', got "
                             << attr.getValue();
    return success();
  }
  if (name == kLadderLayersAttr || name == kTwellAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name
                             << "' is a module attribute (model option)";
    if (name == kLadderLayersAttr) {
      auto layers = dyn_cast<IntegerAttr>(attr.getValue());
      if (!layers || layers.getValue().getSExtValue() <= 0)
        return op->emitError() << "'" << name
                               << "' must be a positive integer (the number "
                                  "of ladder-trained layers), got "
                               << attr.getValue();
    } else if (!isa<TwellLayoutAttr>(attr.getValue())) {
      return op->emitError() << "'" << name
                             << "' must be a #sgpu.twell<tile = T, "
                                "compression = C> attribute, got "
                             << attr.getValue();
    }
    return success();
  }
  if (name == kConfigAttr) {
    Attribute value = attr.getValue();
    // Each typed configuration belongs to its op.
    auto onlyOn = [&](StringRef owner, bool isOwner) -> LogicalResult {
      if (isOwner)
        return success();
      return op->emitError() << "'" << name << "' = " << value
                             << " configures " << owner << ", not '"
                             << op->getName() << "'";
    };
    if (isa<SpmmConfigAttr>(value))
      return onlyOn("sgpu.spmm", isa<SpmmOp>(op));
    if (isa<TwellPackConfigAttr>(value))
      return onlyOn("sgpu.twell_pack", isa<TwellPackOp>(op));
    if (isa<TwellFFNConfigAttr>(value))
      return onlyOn("sgpu.twell_ffn", isa<TwellFFNOp>(op));
    if (isa<AttentionConfigAttr>(value))
      return onlyOn("sgpu.attention", isa<AttentionOp>(op));
    if (isa<LaunchConfigAttr>(value))
      return onlyOn("sgpu.embedding, sgpu.rope and sgpu.cache_update",
                    isa<EmbeddingOp, RopeOp, CacheUpdateOp>(op));
    return op->emitError() << "'" << name
                           << "' must be a typed configuration "
                              "(#sgpu.spmm_config, #sgpu.twell_pack_config, "
                              "#sgpu.twell_ffn_config, "
                              "#sgpu.attention_config or "
                              "#sgpu.launch_config), got "
                           << value;
  }
  if (name == kParamAttr)
    return op->emitError() << "'" << name
                           << "' is a function argument attribute (a weight "
                              "bound by name), not an attribute of '"
                           << op->getName() << "'";
  if (name == kStateAttr)
    return op->emitError() << "'" << name
                           << "' is a function argument attribute (state "
                              "updated in place), not an attribute of '"
                           << op->getName() << "'";
  if (name == kReplicatedAttr)
    return op->emitError() << "'" << name
                           << "' is a function argument attribute (an "
                              "argument that is the same on every rank), not "
                              "an attribute of '"
                           << op->getName() << "'";
  return op->emitError() << "unknown sgpu attribute '" << name
                         << "' (known: " << kLadderLayersAttr << ", "
                         << kTwellAttr << ", " << kTensorMapArgsAttr << ", "
                         << kStageAttr << ", " << kPersistentGridAttr << ", "
                         << kProgrammaticAttr << ", "
                         << kLadderBlockAttr << ", "
                         << kStatAttr << ", " << kStatTotalAttr << ", "
                         << kStatLimitAttr << ", " << kTwellBreakEvenAttr
                         << ", " << kTwellConsumerAttr << ", "
                         << kTwellUnionBreakEvenAttr << ", " << kConfigAttr
                         << ")";
}

/// Discardable sgpu.* attributes of region arguments: `sgpu.replicated` on
/// a function argument.
LogicalResult SGPUDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  // Every sgpu argument attribute belongs on a function's arguments.
  auto onFunction = [&]() -> LogicalResult {
    if (func && regionIndex == 0)
      return success();
    return op->emitError() << "'" << name
                           << "' is a function argument attribute, not an "
                              "attribute of a region argument of '"
                           << op->getName() << "'";
  };
  auto unit = [&]() -> LogicalResult {
    if (isa<UnitAttr>(attr.getValue()))
      return success();
    return op->emitError() << "'" << name << "' on argument #" << argIndex
                           << " is a unit attribute, got " << attr.getValue();
  };
  if (name == kReplicatedAttr)
    return failure(failed(onFunction()) || failed(unit()));
  if (name == kParamAttr) {
    if (failed(onFunction()))
      return failure();
    auto qualified = dyn_cast<StringAttr>(attr.getValue());
    if (!qualified || qualified.getValue().empty())
      return op->emitError() << "'" << name << "' on argument #" << argIndex
                             << " must be a non-empty string (the weight's "
                                "qualified name), got "
                             << attr.getValue();
    return success();
  }
  if (name == kStateAttr) {
    if (failed(onFunction()) || failed(unit()))
      return failure();
    if (!func.getArgAttr(argIndex, kParamAttr))
      return op->emitError() << "'" << name << "' on argument #" << argIndex
                             << " needs '" << kParamAttr
                             << "' too: state is a named param the caller "
                                "binds";
    return success();
  }
  return op->emitError() << "unknown sgpu argument attribute '" << name
                         << "' on argument #" << argIndex << " (known: "
                         << kReplicatedAttr << ", " << kParamAttr << ", "
                         << kStateAttr << ")";
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool mlir::sgpu::isSupportedNMPattern(unsigned n, unsigned m) {
  return m % 2 == 0 && m >= 4 && m <= 16 && n + 2 == m;
}

int64_t mlir::sgpu::getLiftedK(int64_t k, NMSparsityAttr pattern,
                               int64_t tileGroups) {
  // The formats library's shape rule, the one the decomposition itself uses.
  return sparseopt::getSlideShape(/*rows=*/1, k,
                                  static_cast<int>(pattern.getFamilyN()),
                                  tileGroups)
      .liftedCols;
}

NMSparsityAttr mlir::sgpu::getNMPattern(Type type, bool *unsupported) {
  if (unsupported)
    *unsupported = false;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.getEncoding())
    return {};
  if (auto nm = dyn_cast<NMSparsityAttr>(tensor.getEncoding()))
    return nm;
  if (auto enc = dyn_cast<sparse_tensor::SparseTensorEncodingAttr>(
          tensor.getEncoding())) {
    // Accept exactly (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]).
    auto lvls = enc.getLvlTypes();
    if (lvls.size() == 3 && sparse_tensor::isDenseLT(lvls[0]) &&
        sparse_tensor::isDenseLT(lvls[1]) &&
        sparse_tensor::isNOutOfMLT(lvls[2]) &&
        sparse_tensor::getN(lvls[2]) == 2 && sparse_tensor::getM(lvls[2]) == 4)
      return NMSparsityAttr::get(type.getContext(), 2, 4);
    if (unsupported)
      *unsupported = true;
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// `<n:m>`, printed without spaces around the colon, as the pattern is written.
Attribute NMSparsityAttr::parse(AsmParser &parser, Type) {
  // Read as signed 64-bit so that a negative or huge count is reported as
  // written, not wrapped to an unsigned value.
  int64_t n = 0, m = 0;
  if (parser.parseLess() || parser.parseInteger(n) || parser.parseColon() ||
      parser.parseInteger(m) || parser.parseGreater())
    return {};
  if (n < 0 || m < 0 || n > 64 || m > 64) {
    parser.emitError(parser.getNameLoc())
        << "unsupported structured sparsity " << n << ":" << m
        << "; expected 2:4 or (2N-2):2N for N = 2..8";
    return {};
  }
  return NMSparsityAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), unsigned(n), unsigned(m));
}

void NMSparsityAttr::print(AsmPrinter &printer) const {
  printer << "<" << getN() << ":" << getM() << ">";
}

LogicalResult
NMSparsityAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned n,
                       unsigned m) {
  if (!isSupportedNMPattern(n, m))
    return emitError() << "unsupported structured sparsity " << n << ":" << m
                       << "; expected 2:4 or (2N-2):2N for N = 2..8 (2:4, "
                          "4:6, 6:8, 8:10, 10:12, 12:14, 14:16)";
  return success();
}

LogicalResult
TwellLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        unsigned tile, unsigned compression) {
  if (tile < 16 || tile > 65536 || (tile & (tile - 1)) != 0)
    return emitError() << "TwELL tile width must be a power of two in [16, "
                          "65536] (tile-local 16-bit column indices), got "
                       << tile;
  if (compression != 2 && compression != 4 && compression != 8)
    return emitError() << "TwELL compression factor must be 2, 4 or 8, got "
                       << compression;
  return success();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// Parses `<` dims `x` element-type `,` attribute `>` shared by the sgpu
/// shaped types.
template <typename AttrT>
static LogicalResult parseShapedParams(AsmParser &parser,
                                       SmallVectorImpl<int64_t> &shape,
                                       Type &elementType, AttrT &attr) {
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseAttribute(attr) || parser.parseGreater())
    return failure();
  return success();
}

static void printShapedParams(AsmPrinter &printer, ArrayRef<int64_t> shape,
                              Type elementType, Attribute attr) {
  printer << "<";
  for (int64_t d : shape)
    printer << d << "x";
  printer << elementType << ", " << attr << ">";
}

static LogicalResult
verifyMatrixParams(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                   ArrayRef<int64_t> shape, Type elementType) {
  if (shape.size() != 2)
    return emitError() << what << " must be rank 2, got rank " << shape.size();
  if (shape[0] <= 0 || shape[1] <= 0)
    return emitError() << what << " dimensions must be positive";
  if (!elementType.isF16() && !elementType.isBF16())
    return emitError() << what << " element type must be f16 or bf16, got "
                       << elementType;
  return success();
}

Type CompressedType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  NMSparsityAttr pattern;
  if (failed(parseShapedParams(parser, shape, elementType, pattern)))
    return {};
  return CompressedType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), shape, elementType, pattern);
}

void CompressedType::print(AsmPrinter &printer) const {
  printShapedParams(printer, getShape(), getElementType(), getPattern());
}

LogicalResult
CompressedType::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayRef<int64_t> shape, Type elementType,
                       NMSparsityAttr pattern) {
  if (failed(verifyMatrixParams(emitError, "compressed weight", shape,
                                elementType)))
    return failure();
  if (!pattern || !pattern.is24())
    return emitError() << "compressed weights are 2:4; decompose other "
                          "patterns with sgpu.nm_decompose";
  return success();
}

RankedTensorType CompressedType::getValuesType() const {
  return RankedTensorType::get({getPaddedRows(), getPaddedCols() / 2},
                               getElementType());
}

RankedTensorType CompressedType::getMetadataType() const {
  return RankedTensorType::get({getPaddedRows() * getPaddedCols() / 32},
                               IntegerType::get(getContext(), 32));
}

Type TwellType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  TwellLayoutAttr layout;
  if (failed(parseShapedParams(parser, shape, elementType, layout)))
    return {};
  return TwellType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), shape, elementType, layout);
}

void TwellType::print(AsmPrinter &printer) const {
  printShapedParams(printer, getShape(), getElementType(), getLayout());
}

LogicalResult TwellType::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayRef<int64_t> shape, Type elementType,
                                TwellLayoutAttr layout) {
  if (failed(verifyMatrixParams(emitError, "TwELL activations", shape,
                                elementType)))
    return failure();
  if (!layout)
    return emitError() << "TwELL activations need a #sgpu.twell layout";
  return success();
}
