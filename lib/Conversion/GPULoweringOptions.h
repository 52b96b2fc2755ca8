//===- GPULoweringOptions.h - convert-sgpu-to-gpu's typed choices -*- C++ -*-===//
//
// The string options of convert-sgpu-to-gpu (as the pass registry and
// pipeline strings spell them) parsed once into enums, so the lowerings
// compare values, not spellings, and every unknown value is one error that
// lists the known ones.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_GPULOWERINGOPTIONS_H
#define SPARSEOPT_CONVERSION_GPULOWERINGOPTIONS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace sgpu {

enum class SpmmKernel { Auto, Mma, Wgmma };
enum class SpmmEpilogue { Auto, Tma, Registers };
enum class TwellProducer { Auto, Fused, Library };
enum class TwellConsumer { Auto, CudaCores, TensorCores };
enum class TwellGather { CpAsync, Tma };
enum class TwellPack { Auto, Kernel, Consumer };

/// The choices as the user spelled them, and the numeric options checked
/// with them.
struct GPULoweringSpelling {
  llvm::StringRef kernel, epilogue, twellProducer, twellConsumer, twellGather,
      twellPack;
  int64_t twellPasses; ///< 0 (auto) or 1..64
  int64_t cluster;     ///< 0 (auto), 1, 2 or 4
};

/// The choices, typed.
struct GPULoweringChoices {
  SpmmKernel kernel = SpmmKernel::Auto;
  SpmmEpilogue epilogue = SpmmEpilogue::Auto;
  TwellProducer twellProducer = TwellProducer::Auto;
  TwellConsumer twellConsumer = TwellConsumer::Auto;
  TwellGather twellGather = TwellGather::CpAsync;
  TwellPack twellPack = TwellPack::Auto;
};

/// Parses every choice; on an unknown value, fails with "unknown <option>
/// '<value>'; expected a, b or c" in `message`, and on a number out of its
/// range with "invalid <passName> option: <option>=<n> is not ...".
FailureOr<GPULoweringChoices>
parseGPULoweringChoices(const GPULoweringSpelling &spelled,
                        StringRef passName, std::string *message);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_GPULOWERINGOPTIONS_H
