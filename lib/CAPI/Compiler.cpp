//===- Compiler.cpp - C API of the SparseOpt compiler ---------------------===//
//
// Implements include/sparse-opt-c/Compiler.h over an MLIRContext set up like
// the sparse-opt driver. Every diagnostic is caught by a handler and kept as
// text until sparseopt_compiler_take_diagnostics; nothing is printed.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt-c/Compiler.h"

#include "sparse-opt/InitSparseOpt.h"
#include "sparse-opt/Pipelines/InputNesting.h"
#include "sparse-opt/Transforms/Artifacts.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unistd.h>

using namespace mlir;

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

struct sparseopt_compiler_s {
  explicit sparseopt_compiler_s(const DialectRegistry &registry)
      : context(registry) {
    // Diagnostics stay one line each: no IR dump attached as a note.
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          record(diag);
          return success();
        });
  }

  /// Appends one diagnostic (and its notes) to the pending text.
  void record(Diagnostic &diag);

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string pending;  // formatted diagnostics not yet taken
  unsigned errors = 0;  // error diagnostics seen so far (never reset)
  llvm::SmallPtrSet<sparseopt_ir, 4> modules; // owned by this compiler
};

struct sparseopt_ir_s {
  sparseopt_compiler compiler;
  OwningOpRef<ModuleOp> module;
};

//===----------------------------------------------------------------------===//
// Diagnostics as text
//===----------------------------------------------------------------------===//

namespace {

/// "<file>:<line>:<col>" of the first file location inside `loc` (through
/// name, call-site and fused locations), or "<unknown>:0:0".
std::string formatLocation(Location loc) {
  std::string out = "<unknown>:0:0";
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColRange>(inner)) {
      out = (file.getFilename().getValue() + ":" +
             llvm::Twine(file.getStartLine()) + ":" +
             llvm::Twine(file.getStartColumn()))
                .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return out;
}

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

/// One "<location>: <severity>: <message>" line; later lines of a multi-line
/// message are indented by four spaces.
void appendLine(std::string &out, llvm::StringRef indent,
                llvm::StringRef location, llvm::StringRef severity,
                llvm::StringRef message) {
  out += indent;
  out += location;
  out += ": ";
  out += severity;
  out += ": ";
  llvm::SmallVector<llvm::StringRef> lines;
  message.rtrim("\n").split(lines, '\n');
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i)
      out += "\n    ";
    out += line;
  }
  out += "\n";
}

} // namespace

/// The message of `diag`, led by its location where that has no file
/// position but says something (a name-only location, as the importers
/// write for a module path): `loc("layers.0.norm"): ...`, as sparse-opt
/// prints it.
static std::string messageOf(Diagnostic &diag) {
  Location loc = diag.getLocation();
  if (formatLocation(loc) != "<unknown>:0:0" || isa<UnknownLoc>(loc))
    return diag.str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  os << ": " << diag.str();
  return text;
}

void sparseopt_compiler_s::record(Diagnostic &diag) {
  if (diag.getSeverity() == DiagnosticSeverity::Error)
    ++errors;
  appendLine(pending, "", formatLocation(diag.getLocation()),
             severityName(diag.getSeverity()), messageOf(diag));
  for (Diagnostic &note : diag.getNotes())
    appendLine(pending, "  ", formatLocation(note.getLocation()), "note",
               messageOf(note));
}

namespace {

/// The pass-pipeline parser reports to a stream, in SourceMgr form
/// ("MLIR Textual PassPipeline Parser:1:5: error: ...", then the pipeline
/// line and a caret line) or as plain lines. Each message becomes an error
/// diagnostic located in the pipeline text ("<pipeline>:1:<col>").
void recordPipelineErrors(sparseopt_compiler c, llvm::StringRef text) {
  static constexpr llvm::StringLiteral kSource =
      "MLIR Textual PassPipeline Parser:";
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::string location = "<pipeline>:1:1";
  bool any = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i];
    // A caret line ends a SourceMgr message; the line before it echoes the
    // pipeline and was skipped below.
    if (line.trim().starts_with("^"))
      continue;
    if (line.consume_front(kSource)) {
      auto [lineNo, rest0] = line.split(':');
      auto [colNo, rest1] = rest0.split(':');
      location = ("<pipeline>:" + lineNo + ":" + colNo).str();
      line = rest1.trim();
      line.consume_front("error:");
      // Skip the echoed pipeline line if a caret line follows it.
      if (i + 2 < lines.size() && lines[i + 2].trim().starts_with("^"))
        ++i;
    }
    appendLine(c->pending, "", location, "error", line.trim());
    ++c->errors;
    any = true;
  }
  if (!any) {
    appendLine(c->pending, "", location, "error", "invalid pass pipeline");
    ++c->errors;
  }
}

/// Runs `fn` with file descriptor 2 sent to a temporary file and returns
/// what was written there. The pipeline parser reports most errors to the
/// stream it is given, but llvm::cl reports a bad option value (e.g.
/// "canonicalize{max-iterations=abc}") on llvm::errs(), and this API never
/// prints. The window is as short as the parse; one capture at a time.
std::string captureStderr(llvm::function_ref<void()> fn) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::FILE *tmp = std::tmpfile();
  int saved = tmp ? ::dup(2) : -1;
  llvm::errs().flush();
  std::fflush(stderr);
  if (saved < 0 || ::dup2(::fileno(tmp), 2) < 0) {
    if (saved >= 0)
      ::close(saved);
    if (tmp)
      std::fclose(tmp);
    fn();
    return "";
  }
  fn();
  llvm::errs().flush();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), tmp)) > 0;)
    out.append(buf, n);
  std::fclose(tmp);
  return out;
}

/// Copies `s` into a malloc'ed NUL-terminated string (NULL if out of memory).
char *copyString(llvm::StringRef s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (!out)
    return nullptr;
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

/// Parses `text` into a new module of `c`, after refusing input nested
/// deeper than the parser's stack takes (sgpu::lineNestedTooDeep).
int parseInto(sparseopt_compiler c, llvm::StringRef text,
              llvm::StringRef filename, sparseopt_ir *out) {
  unsigned errorsBefore = c->errors;
  if (unsigned line = sgpu::lineNestedTooDeep(text)) {
    emitError(FileLineColLoc::get(&c->context, filename, line, 1))
        << "brackets nested more than " << sgpu::kMaxInputNesting
        << " levels deep: the parser would exhaust its stack";
    return 1;
  }
  ParserConfig config(&c->context, /*verifyAfterParse=*/true);
  // MLIR's lexer reads up to a terminating NUL: the caller's text (a
  // pointer and a length) is copied into a buffer that has one.
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, filename), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module) {
    if (c->errors == errorsBefore)
      emitError(UnknownLoc::get(&c->context)) << "failed to parse " << filename;
    return 1;
  }
  auto *ir = new (std::nothrow) sparseopt_ir_s{c, std::move(module)};
  if (!ir)
    return 1;
  c->modules.insert(ir);
  *out = ir;
  return 0;
}

/// Splits "builtin.module(<inner>)" into <inner>; other text is returned
/// unchanged (it is anchored on the module by the pass manager).
llvm::StringRef stripModuleAnchor(llvm::StringRef pipeline) {
  llvm::StringRef inner = pipeline.trim();
  if (!inner.consume_front("builtin.module(") || !inner.ends_with(")"))
    return pipeline;
  // The parenthesis opened by the anchor must be the one closing the text.
  int depth = 1;
  for (size_t i = 0; i < inner.size(); ++i) {
    depth += inner[i] == '(' ? 1 : inner[i] == ')' ? -1 : 0;
    if (depth == 0)
      return i + 1 == inner.size() ? inner.drop_back() : pipeline;
  }
  return pipeline;
}

/// An option value that the textual pipeline syntax carries unchanged.
bool isPlainOption(llvm::StringRef value) {
  return llvm::none_of(value, [](char ch) {
    return std::isspace(static_cast<unsigned char>(ch)) || ch == '"' ||
           ch == '\'' || ch == '{' || ch == '}';
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

extern "C" {

int sparseopt_compiler_create(sparseopt_compiler *out) {
  if (!out)
    return 1;
  *out = nullptr;
  sgpu::registerSparseOptPassesAndPipelines();
  DialectRegistry registry;
  sgpu::registerSparseOptDialectsAndExtensions(registry);
  *out = new (std::nothrow) sparseopt_compiler_s(registry);
  return *out ? 0 : 1;
}

void sparseopt_compiler_destroy(sparseopt_compiler c) {
  if (!c)
    return;
  for (sparseopt_ir ir : c->modules)
    delete ir;
  delete c;
}

char *sparseopt_compiler_take_diagnostics(sparseopt_compiler c) {
  if (!c)
    return nullptr;
  char *text = copyString(c->pending);
  if (text)
    c->pending.clear();
  return text;
}

int sparseopt_ir_parse(sparseopt_compiler c, const char *text, size_t length,
                       const char *filename, sparseopt_ir *out) {
  if (!c || !out || (!text && length))
    return 1;
  *out = nullptr;
  return parseInto(c, llvm::StringRef(text, length),
                   filename ? filename : "<string>", out);
}

int sparseopt_ir_parse_file(sparseopt_compiler c, const char *path,
                            sparseopt_ir *out) {
  if (!c || !path || !out)
    return 1;
  *out = nullptr;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    emitError(FileLineColLoc::get(&c->context, path, 0, 0))
        << "cannot read '" << path << "': " << buffer.getError().message();
    return 1;
  }
  return parseInto(c, (*buffer)->getBuffer(), path, out);
}

void sparseopt_ir_destroy(sparseopt_ir ir) {
  if (!ir)
    return;
  ir->compiler->modules.erase(ir);
  delete ir;
}

int sparseopt_ir_verify(sparseopt_ir ir) {
  if (!ir)
    return 1;
  return failed(verify(*ir->module)) ? 1 : 0;
}

int sparseopt_ir_run_pipeline(sparseopt_ir ir, const char *pipeline) {
  if (!ir || !pipeline)
    return 1;
  sparseopt_compiler c = ir->compiler;
  PassManager pm(&c->context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  LogicalResult parsed = failure();
  std::string printed = captureStderr([&] {
    parsed = parsePassPipeline(stripModuleAnchor(pipeline), pm, errorStream);
  });
  if (failed(parsed)) {
    // What llvm::cl printed came first ("<program>: for the --x option: ...").
    llvm::StringRef cl = llvm::StringRef(printed).trim();
    cl.consume_front(":");
    recordPipelineErrors(c, (cl.trim() + "\n" + parseErrors).str());
    return 1;
  }
  // Output of another thread during the parse goes back where it belongs.
  if (!printed.empty())
    std::fwrite(printed.data(), 1, printed.size(), stderr);
  unsigned errorsBefore = c->errors;
  if (succeeded(pm.run(*ir->module)))
    return 0;
  // A pass that fails without saying why still leaves an error behind.
  if (c->errors == errorsBefore)
    ir->module->emitError() << "pass pipeline '" << pipeline << "' failed";
  return 1;
}

char *sparseopt_ir_print(sparseopt_ir ir, int generic) {
  if (!ir)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  ir->module->print(os, flags);
  return copyString(text);
}

int sparseopt_ir_compile(sparseopt_ir ir, const char *chip,
                         const char *features, const char *output_dir) {
  if (!ir)
    return 1;
  llvm::StringRef chipValue = chip ? chip : "sm_90a";
  llvm::StringRef featureValue = features ? features : "+ptx85";
  llvm::StringRef dir = output_dir ? output_dir : "";
  for (auto [name, value] : {std::pair{"chip", chipValue},
                             std::pair{"features", featureValue},
                             std::pair{"output directory", dir}}) {
    if (value.empty() || !isPlainOption(value)) {
      ir->module->emitError()
          << name << " '" << value
          << "' must be non-empty, without spaces, quotes or braces";
      return 1;
    }
  }
  std::string pipeline =
      ("sgpu-compile{chip=" + chipValue + " features=" + featureValue + "}")
          .str();
  if (sparseopt_ir_run_pipeline(ir, pipeline.c_str()) != 0)
    return 1;
  return sparseopt_ir_write_artifacts(ir, output_dir);
}

int sparseopt_ir_write_artifacts(sparseopt_ir ir, const char *output_dir) {
  if (!ir)
    return 1;
  if (!output_dir || !*output_dir) {
    ir->module->emitError() << "the output directory must be non-empty";
    return 1;
  }
  return failed(sgpu::writeArtifacts(*ir->module, output_dir)) ? 1 : 0;
}

void sparseopt_string_free(char *s) { std::free(s); }

#define SPARSEOPT_STR2(x) #x
#define SPARSEOPT_STR(x) SPARSEOPT_STR2(x)

const char *sparseopt_compiler_version(void) {
  return "sparse-opt 0.1 (MLIR " SPARSEOPT_STR(LLVM_VERSION_MAJOR) ")";
}

} // extern "C"
