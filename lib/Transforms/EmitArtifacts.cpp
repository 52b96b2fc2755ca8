//===- EmitArtifacts.cpp - write PTX, constants and the runtime program ---===//
//
// The translation after sgpu-compile (writeArtifacts, Artifacts.h): turns
// the host function (buffers and kernel launches) into the line-based
// program the runtime executes, next to the PTX of the generated kernels,
// the raw bytes of every constant buffer and the function's signature
// (shapes and element types, for callers). The sgpu-emit-artifacts pass
// only calls it.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Transforms/Passes.h"
#include "sparse-opt/Transforms/Artifacts.h"

#include "LibraryLines.h"
#include "TempArena.h"

#include "sparse-opt/Dialect/SGPU/BufferLimits.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparseopt/launch_limits.h"
#include "sparseopt/program_format.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUEMITARTIFACTS
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

/// The largest constant written into an artifact.
constexpr int64_t kMaxConstantBytes = int64_t(16) << 30;

/// Size in bytes of a statically shaped memref of integer or float elements
/// (at most a program buffer's limit), or failure.
static FailureOr<int64_t> getByteSize(Type type) {
  auto m = dyn_cast<MemRefType>(type);
  if (!m || !m.hasStaticShape() || !m.getLayout().isIdentity() ||
      !m.getElementType().isIntOrFloat())
    return failure();
  std::optional<int64_t> bytes =
      sgpu::checkedBytes(m.getShape(), m.getElementTypeBitWidth());
  if (!bytes || *bytes > sgpu::kMaxBufferBytes)
    return failure();
  return *bytes;
}

/// Whether `op` reshapes a memref without moving it: memref.expand_shape,
/// memref.collapse_shape and memref.cast, whose result has the address and
/// the bytes of their source. The program treats such a view of a buffer as
/// the buffer itself.
static bool isReshape(Operation *op) {
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
      op);
}

/// Whether `v` is a buffer of the runtime program, or a reshape of one: an
/// argument of the host function or the result of a top-level memref.alloc
/// / memref.get_global.
static bool isProgramBuffer(Value v, func::FuncOp host) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isReshape(def))
      break;
    v = def->getOperand(0);
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &host.getBody().front();
  Operation *def = v.getDefiningOp();
  return def && def->getBlock() == &host.getBody().front() &&
         isa<memref::AllocOp, memref::GetGlobalOp>(def);
}

/// Whether `op` runs in the program's prepare stage (at bind time).
static bool isPrepareStep(Operation *op) {
  if (isa<sgpu::WeightCheckOp>(op))
    return true;
  auto stage = op->getAttrOfType<StringAttr>(sgpu::SGPUDialect::kStageAttr);
  return stage && stage.getValue() == "prepare";
}

/// Whether every use of `v`, through reshapes, is an operand of a
/// prepare-stage step (and there is one): an argument the runtime binds once
/// as a param rather than passing at every run.
static bool onlyPrepareUses(Value v) {
  bool any = false;
  for (Operation *user : v.getUsers()) {
    if (isReshape(user)) {
      if (!onlyPrepareUses(user->getResult(0)))
        return false;
      any = true;
      continue;
    }
    if (!isPrepareStep(user))
      return false;
    any = true;
  }
  return any;
}

/// The qualified name an importer gave argument `i` (sgpu.param), or "".
static StringRef paramName(func::FuncOp host, unsigned i) {
  auto name =
      host.getArgAttrOfType<StringAttr>(i, sgpu::SGPUDialect::kParamAttr);
  return name ? name.getValue() : StringRef();
}

/// Whether argument `arg` is a param: named by sgpu.param (a weight bound
/// once by name), or read only by prepare steps (a weight compressed once).
static bool isParam(func::FuncOp host, BlockArgument arg) {
  return !paramName(host, arg.getArgNumber()).empty() || onlyPrepareUses(arg);
}

/// The argument positions of `host` that are params, in order.
static SmallVector<int64_t> paramPositions(func::FuncOp host) {
  SmallVector<int64_t> params;
  for (BlockArgument arg : host.getArguments())
    if (isParam(host, arg))
      params.push_back(arg.getArgNumber());
  return params;
}

/// The `tmap:` launch argument of a tensor map over buffer `id`:
/// `tmap:b<id>:<dtype>:<d0>x<d1>...:<box0>x<box1>...:<swizzle>`, dimensions
/// and box outermost first, as in the memref type and the op.
static std::string tensorMapToken(sgpu::TensorMapOp map, int id) {
  std::string token;
  llvm::raw_string_ostream os(token);
  os << "tmap:b" << id << ":" << map.getSourceType().getElementType() << ":";
  llvm::interleave(map.getSourceType().getShape(), os, "x");
  os << ":";
  llvm::interleave(map.getBox(), os, "x");
  os << ":" << map.getSwizzle();
  return token;
}

/// Counts the sparse MMA instructions in each `.entry` of a PTX text.
static SmallVector<std::pair<std::string, int>> countSparseMMA(StringRef ptx) {
  SmallVector<std::pair<std::string, int>> counts;
  SmallVector<StringRef> lines;
  ptx.split(lines, '\n');
  for (StringRef line : lines) {
    StringRef l = line.trim();
    if (l.consume_front(".visible .entry ") || l.consume_front(".entry ")) {
      counts.emplace_back(l.take_until([](char c) { return c == '('; }).str(),
                          0);
      continue;
    }
    if (!counts.empty() &&
        (l.starts_with("mma.sp") || l.starts_with("wgmma.mma_async.sp")))
      ++counts.back().second;
  }
  return counts;
}

/// The first function the PTX declares `.extern` (called, never defined), or
/// an empty string. Generated kernels call libdevice functions for math ops
/// (`__nv_expf`, ...); gpu-module-to-binary links them from the CUDA
/// toolkit; where it cannot find libdevice it reports that but still emits
/// the PTX with the calls unresolved, which the driver's JIT would reject
/// only when the program is loaded on the GPU.
static std::string firstExternFunction(StringRef ptx) {
  SmallVector<StringRef> lines;
  ptx.split(lines, '\n');
  for (StringRef line : lines) {
    StringRef l = line.trim();
    if (!l.consume_front(".extern .func"))
      continue;
    l = l.trim();
    // Skip the return parameter list, "(.param .b32 func_retval0)".
    if (l.starts_with("("))
      l = l.drop_until([](char c) { return c == ')'; }).drop_front().trim();
    return l.take_until([](char c) { return c == '(' || llvm::isSpace(c); })
        .str();
  }
  return "";
}

/// The host function's interface as JSON: its name and, for every memref
/// argument ("inputs") and result ("outputs"), the shape and the element
/// type as MLIR prints it ("f16", "bf16", "f32", "i32", ...), and the
/// argument positions bound as params ("params", when there are any).
/// Callers such as the Python runtime check and allocate tensors with it. Every type is a
/// statically shaped memref (exportHost checked that).
/// Device bytes of a program by role; `peak` is what a loaded, bound
/// program holds at most: the caller's params, inputs and outputs plus
/// what the runtime allocates (constants, temporaries, the arena).
struct MemoryBytes {
  int64_t params = 0, inputs = 0, outputs = 0, constants = 0, temps = 0,
          arena = 0, unpackedArena = 0;
  int64_t peak() const {
    return params + inputs + outputs + constants + temps + arena;
  }
};

static std::string signatureJson(func::FuncOp host,
                                 ArrayRef<int64_t> params,
                                 const MemoryBytes &memory) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os);
  // `names` (when given) parallels `types`: a non-empty name is written as
  // the tensor's "name" (a param's qualified name).
  // `states` (when given) parallels `types`: true marks a state param (a
  // KV cache the program updates in place), written as "state": true.
  auto tensors = [&](TypeRange types, ArrayRef<StringRef> names,
                     ArrayRef<bool> states = {}) {
    j.arrayBegin();
    for (auto [index, type] : llvm::enumerate(types)) {
      auto memref = cast<MemRefType>(type);
      std::string dtype;
      llvm::raw_string_ostream(dtype) << memref.getElementType();
      j.objectBegin();
      j.attributeArray("shape", [&] {
        for (int64_t d : memref.getShape())
          j.value(d);
      });
      j.attribute("dtype", dtype);
      if (index < names.size() && !names[index].empty())
        j.attribute("name", names[index]);
      if (index < states.size() && states[index])
        j.attribute("state", true);
      j.objectEnd();
    }
    j.arrayEnd();
  };
  SmallVector<StringRef> names;
  SmallVector<bool> states;
  for (unsigned i = 0; i < host.getNumArguments(); ++i) {
    names.push_back(paramName(host, i));
    states.push_back(
        static_cast<bool>(host.getArgAttr(i, sgpu::SGPUDialect::kStateAttr)));
  }
  j.objectBegin();
  j.attribute("function", host.getName());
  j.attributeBegin("inputs");
  tensors(host.getArgumentTypes(), names, states);
  j.attributeEnd();
  j.attributeBegin("outputs");
  tensors(host.getResultTypes(), {});
  j.attributeEnd();
  if (!params.empty())
    j.attributeArray("params", [&] {
      for (int64_t p : params)
        j.value(p);
    });
  j.attributeObject("memory", [&] {
    j.attribute("params", memory.params);
    j.attribute("inputs", memory.inputs);
    j.attribute("outputs", memory.outputs);
    j.attribute("constants", memory.constants);
    j.attribute("temps", memory.temps);
    j.attribute("arena", memory.arena);
    j.attribute("temps_unpacked", memory.temps + memory.unpackedArena);
    j.attribute("peak", memory.peak());
  });
  j.objectEnd();
  os << "\n";
  return text;
}

/// The initializer of the constant global `get` reads when it has its data
/// (dense elements, or a dense_resource blob as the importers write
/// weights), else null.
static ElementsAttr constantInitializer(memref::GetGlobalOp get,
                                        ModuleOp module) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      module, get.getNameAttr());
  if (!global || !global.getConstant())
    return {};
  Attribute init = global.getConstantInitValue();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(init))
    return dense;
  auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(init);
  return resource && resource.getRawHandle().getBlob() ? resource
                                                       : ElementsAttr();
}

/// The bytes of `init` (constantInitializer's), a splat expanded.
static std::string constantBytes(ElementsAttr init) {
  std::string data;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
    ArrayRef<char> raw = resource.getRawHandle().getBlob()->getData();
    data.assign(raw.data(), raw.size());
    return data;
  }
  auto dense = cast<DenseElementsAttr>(init);
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return std::string(raw.data(), raw.size());
  for (int64_t i = 0, n = dense.getNumElements(); i < n; ++i)
    data.append(raw.data(), raw.size());
  return data;
}

/// A launch line up to its arguments: `launch <kernel> grid <x> <y> <z>
/// block <x> <y> <z> smem <bytes> [pdl] args` (`pdl`: sgpu.programmatic). A persistent grid's x
/// (sgpu.persistent_grid, checked by the dialect) is the size the runtime
/// resolves on the device the program loads on.
static std::string launchHead(gpu::LaunchFuncOp launch, const int64_t g[3],
                              const int64_t bl[3], int64_t smem) {
  std::string x = std::to_string(g[0]);
  if (auto persistent = launch->getAttrOfType<DenseI64ArrayAttr>(
          sgpu::SGPUDialect::kPersistentGridAttr))
    x = SPARSEOPT_PERSISTENT_GRID_PREFIX + std::to_string(persistent[0]) +
        ":" + std::to_string(persistent[1]) + ":" +
        std::to_string(persistent[2]);
  return (SPARSEOPT_DIRECTIVE_LAUNCH " " + launch.getKernelName().getValue() +
          " grid " + x + " " + std::to_string(g[1]) + " " +
          std::to_string(g[2]) + " block " + std::to_string(bl[0]) + " " +
          std::to_string(bl[1]) + " " + std::to_string(bl[2]) + " smem " +
          std::to_string(smem) +
          (launch->hasAttr(sgpu::SGPUDialect::kProgrammaticAttr)
               ? " " SPARSEOPT_LAUNCH_PDL_KEY
               : "") +
          " args")
      .str();
}

/// The `launch` line of `launch`, its buffers numbered by `ids`: sizes that
/// are constants within CUDA's limits, arguments that are program buffers,
/// tensor maps over them or integer constants.
static LogicalResult exportLaunch(gpu::LaunchFuncOp launch,
                                  DenseMap<Value, int> &ids, raw_ostream &os) {
  auto constant = [&](Value v, int64_t &out) {
    APInt value;
    if (!matchPattern(v, m_ConstantInt(&value)))
      return false;
    out = value.getSExtValue();
    return true;
  };
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  int64_t g[3], bl[3], smem = 0;
  if (!constant(grid.x, g[0]) || !constant(grid.y, g[1]) ||
      !constant(grid.z, g[2]) || !constant(block.x, bl[0]) ||
      !constant(block.y, bl[1]) || !constant(block.z, bl[2]) ||
      (launch.getDynamicSharedMemorySize() &&
       !constant(launch.getDynamicSharedMemorySize(), smem)))
    return launch.emitError() << "launch sizes must be constants";
  if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
    return launch.emitError() << "asynchronous launches are not exported";
  // What the runtime (and cuLaunchKernel) accept: a launch beyond them is
  // this compile's error, not the runtime's refusal of the program.
  if (g[0] < 1 || g[0] > SPARSEOPT_MAX_GRID_X || g[1] < 1 ||
      g[1] > SPARSEOPT_MAX_GRID_YZ || g[2] < 1 ||
      g[2] > SPARSEOPT_MAX_GRID_YZ)
    return launch.emitError()
           << "the kernel's grid " << g[0] << " x " << g[1] << " x " << g[2]
           << " is beyond CUDA's limits (x < 2^31, y and z <= 65535): the "
              "shape is too large for this kernel";
  if (bl[0] < 1 || bl[1] < 1 || bl[2] < 1 || bl[2] > SPARSEOPT_MAX_BLOCK_Z ||
      bl[0] * bl[1] * bl[2] > SPARSEOPT_MAX_BLOCK_THREADS)
    return launch.emitError() << "the kernel's block " << bl[0] << " x "
                              << bl[1] << " x " << bl[2]
                              << " is beyond CUDA's limit of 1024 threads";
  if (smem < 0 || smem > SPARSEOPT_MAX_SHARED_BYTES)
    return launch.emitError()
           << "the kernel needs " << smem
           << " bytes of shared memory, more than the 232448 a block can have";
  os << launchHead(launch, g, bl, smem);
  for (Value arg : launch.getKernelOperands()) {
    auto it = ids.find(arg);
    if (it != ids.end()) {
      os << " b" << it->second;
      continue;
    }
    if (auto map = arg.getDefiningOp<sgpu::TensorMapOp>()) {
      // The source was checked to be a program buffer or a reshape of
      // one, and both are numbered before the launches that use them.
      os << " " << tensorMapToken(map, ids.lookup(map.getSource()));
      continue;
    }
    APInt iv;
    if (matchPattern(arg, m_ConstantInt(&iv))) {
      unsigned w = arg.getType().isIndex() ? 64 : iv.getBitWidth();
      os << (w == 64 ? " i64:" : " i32:") << iv.getSExtValue();
      continue;
    }
    return launch.emitError()
           << "kernel argument is neither a known buffer, an "
              "sgpu.tensor_map nor an integer constant";
  }
  os << "\n";
  return success();
}

/// Writes the artifacts of one compiled module (writeArtifacts).
class ArtifactWriter {
public:
  ArtifactWriter(ModuleOp module, StringRef outputDir, StringRef entry)
      : module(module), outputDir(outputDir.str()), entry(entry.str()) {}

  LogicalResult write() {
    if (outputDir.empty()) {
      module.emitError() << "sgpu-emit-artifacts needs output-dir=<directory>";
      return failure();
    }
    func::FuncOp host = findEntry(module);
    if (!host)
      return failure();

    // The PTX of the (single) kernel binary.
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    std::string ptx;
    if (binaries.size() > 1) {
      binaries[1].emitError() << "expected at most one gpu.binary";
      return failure();
    }
    if (!binaries.empty()) {
      auto objects = binaries[0].getObjects();
      if (objects.size() != 1) {
        binaries[0].emitError() << "expected one object (one target)";
        return failure();
      }
      auto obj = cast<gpu::ObjectAttr>(objects[0]);
      if (obj.getFormat() != gpu::CompilationTarget::Assembly) {
        binaries[0].emitError()
            << "expected PTX (gpu-module-to-binary format=isa)";
        return failure();
      }
      ptx = obj.getObject().getValue().str();
      std::string missing = firstExternFunction(ptx);
      if (!missing.empty()) {
        binaries[0].emitError()
            << "the kernels call '" << missing
            << "', which the PTX does not define: a libdevice function for "
               "a math op that gpu-module-to-binary did not link (point "
               "CUDA_ROOT, CUDA_PATH or CUDA_HOME at a CUDA toolkit with "
               "nvvm/libdevice)";
        return failure();
      }
    }

    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      module.emitError() << "cannot create output directory '" << outputDir
                         << "': " << ec.message();
      return failure();
    }

    std::string program;
    llvm::raw_string_ostream os(program);
    os << SPARSEOPT_DIRECTIVE_HEADER " " << SPARSEOPT_PROGRAM_VERSION << "\n";
    os << "# host function @" << host.getName() << "\n";
    // A program of library calls only has no kernels and no module.
    if (!binaries.empty() ||
        !host.getBody().front().getOps<gpu::LaunchFuncOp>().empty())
      os << SPARSEOPT_DIRECTIVE_MODULE " kernels.ptx\n";
    if (failed(exportHost(host, os)))
      return failure();
    os << SPARSEOPT_DIRECTIVE_END "\n";

    if (failed(writeFile("kernels.ptx", ptx)) ||
        failed(writeFile("program.txt", program)) ||
        failed(writeFile("signature.json",
                         signatureJson(host, paramPositions(host),
                                       memory))))
      return failure();

    std::string summary;
    llvm::raw_string_ostream ss(summary);
    for (auto &[name, count] : countSparseMMA(ptx))
      ss << "kernel " << name << ": " << count
         << " sparse MMA instructions\n";
    ss << "peak device memory: " << memory.peak() << " bytes (params "
       << memory.params << ", inputs " << memory.inputs << ", outputs "
       << memory.outputs << ", constants " << memory.constants
       << ", temporaries " << memory.temps + memory.arena << ", of which "
       << memory.arena << " in the arena shared by liveness instead of "
       << memory.unpackedArena << ")\n";
    return writeFile("summary.txt", summary);
  }

private:
  ModuleOp module;
  std::string outputDir, entry;

  func::FuncOp findEntry(ModuleOp module) {
    func::FuncOp found;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      if (!entry.empty() ? f.getName() == entry : f.isPublic()) {
        if (found) {
          module.emitError() << "several public host functions; choose one "
                                "with entry=<name>";
          return {};
        }
        found = f;
      }
    }
    if (!found)
      module.emitError() << (entry.empty()
                                 ? std::string("no public host function")
                                 : "no host function @" + entry);
    return found;
  }

  LogicalResult writeFile(StringRef name, StringRef data) {
    SmallString<256> path(outputDir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream f(path, ec);
    if (ec)
      return module.emitError()
             << "cannot write '" << path << "': " << ec.message();
    f << data;
    return success();
  }

  /// Writes the buffers and steps of `host`. Without a prepare stage the
  /// lines follow the function's order; with one, the buffers come first,
  /// then `stage prepare` and its steps, then `stage run` and the others.
  LogicalResult exportHost(func::FuncOp host, raw_ostream &out) {
    bool staged = llvm::any_of(host.getBody().front(), [](Operation &op) {
      return isPrepareStep(&op);
    });
    std::string prepareText, runText, bufferText;
    llvm::raw_string_ostream prepareOs(prepareText), runOs(runText),
        bufferOs(bufferText);
    raw_ostream &os = staged ? bufferOs : out;
    raw_ostream &steps = staged ? runOs : out;
    if (failed(exportBuffersAndSteps(host, os, steps, prepareOs)))
      return failure();
    if (staged)
      out << bufferText << SPARSEOPT_DIRECTIVE_STAGE " prepare\n"
          << prepareText << SPARSEOPT_DIRECTIVE_STAGE " run\n"
          << runText;
    return success();
  }

  /// The `wait` line of an all-reduce's sync; its slot is free again.
  LogicalResult exportWait(sgpu::AllReduceSyncOp sync, raw_ostream &steps) {
    auto call = sync.getToken().getDefiningOp<sgpu::AllReduceCallOp>();
    auto slot = slots.find(call);
    if (slot == slots.end())
      return sync.emitError() << "waits for an all-reduce the program "
                                 "has not started";
    steps << SPARSEOPT_DIRECTIVE_WAIT " slot=" << slot->second << "\n";
    freeSlots.push_back(slot->second);
    slots.erase(slot);
    return success();
  }

  LogicalResult exportBuffersAndSteps(func::FuncOp host, raw_ostream &os,
                                      raw_ostream &steps,
                                      raw_ostream &prepare) {
    if (!host.getBody().hasOneBlock())
      return host.emitError() << "host function must have a single block";
    DenseMap<Value, int> ids;
    int next = 0;
    auto addBuffer = [&](Value v, Location loc) -> FailureOr<int64_t> {
      FailureOr<int64_t> bytes = getByteSize(v.getType());
      if (failed(bytes))
        return emitError(loc) << "buffer of type " << v.getType()
                              << " is not a statically shaped, contiguous "
                                 "memref of integer or float elements of at "
                                 "most 256 GiB";
      ids[v] = next++;
      return bytes;
    };

    // The function's arguments: params (read only by prepare steps, bound
    // once) and inputs (given at every run), each numbered in order.
    paramIndex.clear();
    memory = MemoryBytes();
    slots.clear();
    freeSlots.clear();
    nextSlot = 0;
    int inputs = 0, params = 0;
    for (BlockArgument arg : host.getArguments()) {
      FailureOr<int64_t> bytes = addBuffer(arg, host.getLoc());
      if (failed(bytes))
        return failure();
      bool param = isParam(host, arg);
      (param ? memory.params : memory.inputs) += *bytes;
      paramIndex[arg] = param ? params : -1;
      os << SPARSEOPT_DIRECTIVE_BUFFER " " << ids[arg] << (param ? " param " : " input ")
         << (param ? params++ : inputs++) << " " << *bytes << "\n";
    }

    // Outputs are allocations the function returns.
    auto ret = cast<func::ReturnOp>(host.getBody().front().getTerminator());
    DenseMap<Value, int> outputIndex;
    for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
      // A reshape of an allocation is that allocation's bytes.
      Value v = result;
      while (v.getDefiningOp() && isReshape(v.getDefiningOp()))
        v = v.getDefiningOp()->getOperand(0);
      if (!v.getDefiningOp<memref::AllocOp>())
        return ret.emitError() << "result #" << i
                               << " must be a buffer the function allocates "
                                  "(returning an input or a constant is not "
                                  "supported by the runtime program)";
      if (outputIndex.count(v))
        return ret.emitError() << "result #" << i << " repeats a result";
      outputIndex[v] = i;
    }

    // A tensor map describes one of the program's buffers, possibly
    // reshaped (the runtime encodes it from the buffer's address). Checked
    // before the ops run so that any other view under a tensor map is
    // reported at the map.
    for (auto map : host.getBody().front().getOps<sgpu::TensorMapOp>())
      if (!isProgramBuffer(map.getSource(), host))
        return map.emitError()
               << "the source of a tensor map must be a buffer of the "
                  "runtime program (an argument of the host function, "
                  "memref.alloc or memref.get_global) or a reshape of one "
                  "(memref.expand_shape, memref.collapse_shape, memref.cast)";

    // Run-stage temporaries share the arena by liveness (TempArena.h).
    DenseSet<Value> ownMemory;
    for (auto &entry : outputIndex)
      ownMemory.insert(entry.first);
    host.walk([&](memref::AllocOp alloc) {
      if (alloc->hasAttr(sgpu::SGPUDialect::kStatAttr))
        ownMemory.insert(alloc.getResult());
    });
    sgpu::TempArena arena =
        sgpu::planTempArena(host, isPrepareStep, ownMemory);
    memory.arena = arena.bytes;
    memory.unpackedArena = arena.unpackedBytes;
    if (arena.bytes)
      os << SPARSEOPT_DIRECTIVE_ARENA " " << arena.bytes << "\n";

    int constants = 0;
    for (Operation &op : host.getBody().front()) {
      Location loc = op.getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        Value v = alloc.getResult();
        FailureOr<int64_t> bytes = addBuffer(v, loc);
        if (failed(bytes))
          return failure();
        auto it = outputIndex.find(v);
        auto packed = arena.offsets.find(v);
        if (it != outputIndex.end()) {
          os << SPARSEOPT_DIRECTIVE_BUFFER " " << ids[v] << " output " << it->second << " "
             << *bytes << "\n";
          memory.outputs += *bytes;
        } else if (packed != arena.offsets.end()) {
          os << SPARSEOPT_DIRECTIVE_BUFFER " " << ids[v] << " temp " << *bytes << " arena "
             << packed->second << "\n";
        } else {
          os << SPARSEOPT_DIRECTIVE_BUFFER " " << ids[v] << " temp " << *bytes << "\n";
          memory.temps += *bytes;
        }
        if (auto stat =
                alloc->getAttrOfType<StringAttr>(sgpu::SGPUDialect::kStatAttr)) {
          if (it != outputIndex.end())
            return alloc.emitError() << "a program stat must be a temporary "
                                        "buffer, not a result";
          unsigned width = alloc.getType().getElementTypeBitWidth();
          os << SPARSEOPT_DIRECTIVE_STAT " " << stat.getValue() << " b" << ids[v] << " u" << width;
          if (auto total = alloc->getAttrOfType<IntegerAttr>(
                  sgpu::SGPUDialect::kStatTotalAttr))
            os << " of " << total.getValue().getSExtValue();
          if (auto limit = alloc->getAttrOfType<FloatAttr>(
                  sgpu::SGPUDialect::kStatLimitAttr))
            os << " limit " << llvm::formatv("{0:e}", limit.getValueAsDouble());
          os << "\n";
        }
        continue;
      }
      if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
        if (!constantInitializer(get, module))
          return get.emitError()
                 << "only constant globals with a dense or dense_resource "
                    "initializer (with its data) can be exported";
        FailureOr<int64_t> bytes = addBuffer(get.getResult(), loc);
        if (failed(bytes))
          return failure();
        // Written whole from memory (a splat expanded): bounded before any
        // allocation; weights that large belong in params.
        if (*bytes > kMaxConstantBytes)
          return get.emitError()
                 << "a constant of " << *bytes
                 << " bytes: the artifact holds constants of at most 16 GiB "
                    "(import large weights as params, weights=params)";
        std::string file = "const" + std::to_string(constants++) + ".bin";
        std::string data = constantBytes(constantInitializer(get, module));
        if (static_cast<int64_t>(data.size()) != *bytes)
          return get.emitError() << "constant data size " << data.size()
                                 << " does not match its type (" << *bytes
                                 << " bytes)";
        if (failed(writeFile(file, data)))
          return failure();
        os << SPARSEOPT_DIRECTIVE_BUFFER " " << ids[get.getResult()] << " constant " << file << " "
           << *bytes << "\n";
        memory.constants += *bytes;
        continue;
      }
      // A reshape of a buffer is that buffer (same address, same bytes).
      if (isReshape(&op)) {
        auto source = ids.find(op.getOperand(0));
        if (source != ids.end() &&
            succeeded(getByteSize(op.getResult(0).getType()))) {
          ids[op.getResult(0)] = source->second;
          continue;
        }
      }
      if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        bool prep = isPrepareStep(launch);
        if ((prep && failed(checkPrepareOperands(launch, host))) ||
            failed(exportLaunch(launch, ids, prep ? prepare : steps)))
          return failure();
        continue;
      }
      if (isa<sgpu::GemmCallOp, sgpu::AttentionCallOp>(op)) {
        if (failed(sgpu::writeLibraryLine(&op, ids, steps)))
          return failure();
        continue;
      }
      if (auto call = dyn_cast<sgpu::AllReduceCallOp>(op)) {
        if (failed(exportAllReduce(call, ids, steps)))
          return failure();
        continue;
      }
      if (auto sync = dyn_cast<sgpu::AllReduceSyncOp>(op)) {
        if (failed(exportWait(sync, steps)))
          return failure();
        continue;
      }
      if (auto check = dyn_cast<sgpu::WeightCheckOp>(op)) {
        if (failed(exportCheck(check, ids, prepare)))
          return failure();
        continue;
      }
      // Tensor maps are encoded by the runtime; they appear as `tmap:`
      // arguments of the launches that take them.
      if (isa<arith::ConstantOp, memref::DeallocOp, func::ReturnOp,
              sgpu::TensorMapOp>(op))
        continue;
      return op.emitError() << "'" << op.getName()
                            << "' cannot run on the host: the runtime "
                               "program only allocates buffers, launches "
                               "generated kernels, calls library GEMMs "
                               "and attention (sgpu.gemm_call, "
                               "sgpu.attention_call) and runs collectives "
                               "(sgpu.all_reduce_call / _sync)";
    }
    return success();
  }

  /// The slot of each all-reduce in flight, and the slots free again.
  DenseMap<Operation *, int> slots;
  SmallVector<int> freeSlots;
  int nextSlot = 0;

  /// `allreduce slot=<k> send=b<id> recv=b<id> count=<n> type=<t> op=<op>`:
  /// an NCCL all-reduce of the runtime. A slot is reused once its wait is
  /// written, so the numbers stay as small as the collectives in flight.
  LogicalResult exportAllReduce(sgpu::AllReduceCallOp call,
                                DenseMap<Value, int> &ids, raw_ostream &os) {
    auto send = ids.find(call.getSend()), recv = ids.find(call.getRecv());
    if (send == ids.end() || recv == ids.end())
      return call.emitError()
             << "the buffers of an all-reduce must be buffers of the "
                "runtime program (an argument of the host function, "
                "memref.alloc or memref.get_global) or reshapes of one";
    int slot = nextSlot;
    if (!freeSlots.empty())
      slot = freeSlots.pop_back_val();
    else
      ++nextSlot;
    slots[call] = slot;
    auto type = cast<MemRefType>(call.getSend().getType());
    os << SPARSEOPT_DIRECTIVE_ALLREDUCE " slot=" << slot << " send=b" << send->second << " recv=b"
       << recv->second << " count=" << type.getNumElements()
       << " type=" << type.getElementType()
       << " op=" << sgpu::stringifyReduceKind(call.getKind()) << "\n";
    return success();
  }

  /// Param index of each host argument (-1: an input).
  DenseMap<Value, int> paramIndex;
  /// The program's device bytes by role, counted as the buffers are written.
  MemoryBytes memory;

  /// The argument under reshapes of `v`, or null.
  static BlockArgument rootArgument(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isReshape(def))
        return {};
      v = def->getOperand(0);
    }
    return dyn_cast<BlockArgument>(v);
  }

  /// A prepare-stage launch runs when params are bound, before any input
  /// exists: it may read params, constants and temporaries only.
  LogicalResult checkPrepareOperands(gpu::LaunchFuncOp launch,
                                     func::FuncOp host) {
    for (Value arg : launch.getKernelOperands()) {
      BlockArgument root = rootArgument(arg);
      if (root && root.getOwner() == &host.getBody().front() &&
          paramIndex.lookup(root) < 0)
        return launch.emitError()
               << "a prepare-stage launch reads host argument #"
               << root.getArgNumber()
               << ", which is an input given at every run; it may read "
                  "params, constants and temporaries only";
    }
    return success();
  }

  /// `check b<status> param <index> pattern <n>:<m> groups <G>`.
  LogicalResult exportCheck(sgpu::WeightCheckOp check,
                            DenseMap<Value, int> &ids, raw_ostream &os) {
    auto status = ids.find(check.getStatus());
    BlockArgument weight = rootArgument(check.getWeight());
    if (status == ids.end() || !weight || paramIndex.lookup(weight) < 0)
      return check.emitError()
             << "a weight check needs a status buffer of the program and a "
                "weight that is a param (a host argument read only by "
                "prepare-stage steps)";
    os << SPARSEOPT_DIRECTIVE_CHECK " b" << status->second << " param "
       << paramIndex.lookup(weight) << " pattern "
       << check.getPattern().getN() << ":" << check.getPattern().getM()
       << " groups " << check.getGroups() << "\n";
    return success();
  }
};

/// The pass spelling of writeArtifacts, for pipelines (sgpu-compile's
/// output-dir) and the command line.
struct EmitArtifactsPass
    : public sgpu::impl::SGPUEmitArtifactsBase<EmitArtifactsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(sgpu::writeArtifacts(getOperation(), outputDir, entry)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::sgpu::writeArtifacts(ModuleOp module, StringRef outputDir,
                                         StringRef entry) {
  return ArtifactWriter(module, outputDir, entry).write();
}
