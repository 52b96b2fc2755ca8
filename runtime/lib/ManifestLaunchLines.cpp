//===- ManifestLaunchLines.cpp - Parsing launch lines ---------------------===//
//
// The parser of a manifest's `launch` lines: the kernel name, grid (fixed
// or persistent), block and shared memory within CUDA's limits, and the
// kernel arguments: buffers, scalars and TMA tensor maps.
//
//===----------------------------------------------------------------------===//

#include "ManifestParser.h"

#include <cctype>
#include <climits>
#include <cstring>

namespace sparseopt {

namespace {

/// A PTX identifier: [A-Za-z_$][A-Za-z0-9_$]*.
bool isKernelName(const std::string &name) {
  auto first = [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
  };
  if (name.empty() || !first(name[0]))
    return false;
  for (char c : name)
    if (!first(c) && !std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

} // namespace

/// launch <kernel> grid x y z block x y z smem <bytes> [pdl] args <arg>...
Status ManifestParser::parseLaunch() {
  LaunchDecl launch;
  launch.line = line;
  if (tokens.size() < 2)
    return error("expected 'launch <kernel> grid <x> <y> <z> block <x> <y> "
                 "<z> smem <bytes> [pdl] args <arg>...'");
  launch.kernel = tokens[1];
  if (!isKernelName(launch.kernel))
    return error("kernel name " + quoted(launch.kernel) +
                 " is not a PTX identifier ([A-Za-z_$][A-Za-z0-9_$]*)");
  size_t next = 2;
  for (auto [name, dims] : {std::make_pair("grid", launch.grid),
                            std::make_pair("block", launch.block)}) {
    if (Status s = keyword(next++, name))
      return s;
    for (int d = 0; d < 3; ++d, ++next) {
      if (next >= tokens.size())
        return error(std::string("launch line ends early: expected 3 ") + name +
                     " dimensions");
      if (dims == launch.grid && d == 0 &&
          tokens[next].rfind(SPARSEOPT_PERSISTENT_GRID_PREFIX, 0) == 0) {
        if (Status s = parsePersistentGrid(tokens[next], launch))
          return s;
        continue;
      }
      if (Status s = unsignedField(next, name, UINT_MAX, dims[d]))
        return s;
      if (dims[d] == 0)
        return error(std::string(name) + " dimensions must be >= 1");
    }
  }
  if (Status s = keyword(next++, "smem"))
    return s;
  if (next >= tokens.size())
    return error("launch line ends early: expected the shared memory size");
  if (Status s = unsignedField(next++, "smem", UINT_MAX, launch.sharedBytes))
    return s;
  if (Status s = checkLaunchLimits(launch))
    return s;
  if (next < tokens.size() && tokens[next] == SPARSEOPT_LAUNCH_PDL_KEY) {
    if (version < SPARSEOPT_PROGRAM_PDL_VERSION)
      return error("a programmatic launch ('" SPARSEOPT_LAUNCH_PDL_KEY
                   "') needs program version " +
                   std::to_string(SPARSEOPT_PROGRAM_PDL_VERSION) +
                   ", this program is version " + std::to_string(version));
    if (stage == StepStage::Prepare)
      return error("a prepare-stage launch cannot be programmatic ('" SPARSEOPT_LAUNCH_PDL_KEY
                   "'): bind runs the prepare steps once and waits for them");
    launch.programmatic = true;
    ++next;
  }
  if (Status s = keyword(next++, "args"))
    return s;
  for (; next < tokens.size(); ++next) {
    ArgDecl arg;
    if (Status s = parseArg(tokens[next], arg))
      return s;
    launch.args.push_back(arg);
  }
  m.steps.push_back({StepKind::Launch, m.launches.size(), stage});
  m.launches.push_back(std::move(launch));
  return SPARSEOPT_OK;
}

/// CUDA's launch limits on every GPU the runtime runs on (a device with
/// less opt-in shared memory is checked when the program is loaded).
Status ManifestParser::checkLaunchLimits(const LaunchDecl &launch) {
  const unsigned *g = launch.grid, *b = launch.block;
  if (g[0] > kMaxGridX || g[1] > kMaxGridYZ || g[2] > kMaxGridYZ)
    return error("grid " + std::to_string(g[0]) + " " + std::to_string(g[1]) +
                 " " + std::to_string(g[2]) +
                 " exceeds CUDA's limits (x < 2^31, y and z <= 65535)");
  uint64_t threads = uint64_t(b[0]) * b[1] * b[2];
  if (b[0] > kMaxBlockThreads || b[1] > kMaxBlockThreads || b[2] > kMaxBlockZ ||
      threads > kMaxBlockThreads)
    return error("block " + std::to_string(b[0]) + " " + std::to_string(b[1]) +
                 " " + std::to_string(b[2]) +
                 " exceeds CUDA's limits (at most 1024 threads, z <= 64)");
  if (launch.sharedBytes > kMaxSharedBytes)
    return error("smem " + std::to_string(launch.sharedBytes) +
                 " exceeds the 232448 bytes (227 KiB) of shared memory a "
                 "block can opt in to on any supported GPU");
  return SPARSEOPT_OK;
}

/// persistent:<units>:<cluster>:<reserved>, a launch's grid x (version 3
/// on): units and cluster at least 1, cluster at most 16, the largest
/// grid (units * cluster) within CUDA's limit.
Status ManifestParser::parsePersistentGrid(const std::string &token,
                                           LaunchDecl &launch) {
  const char *syntax = " (expected persistent:<units>:<cluster>:<reserved>)";
  if (version < SPARSEOPT_PROGRAM_PERSISTENT_GRID_VERSION)
    return error("a persistent grid needs program version " +
                 std::to_string(SPARSEOPT_PROGRAM_PERSISTENT_GRID_VERSION) +
                 ", this program is version " + std::to_string(version));
  // Three decimal fields after the prefix, separated by ':'.
  std::vector<std::string> parts;
  std::string rest =
      token.substr(std::strlen(SPARSEOPT_PERSISTENT_GRID_PREFIX)) + ":";
  for (size_t at = 0, colon; (colon = rest.find(':', at)) != std::string::npos;
       at = colon + 1)
    parts.push_back(rest.substr(at, colon - at));
  unsigned fields[3];
  if (parts.size() != 3)
    return error("invalid persistent grid " + quoted(token) + syntax);
  for (int i = 0; i < 3; ++i) {
    if (parts[i].empty() || parts[i].size() > 9 ||
        parts[i].find_first_not_of("0123456789") != std::string::npos)
      return error("invalid persistent grid " + quoted(token) + syntax);
    fields[i] = unsigned(std::stoul(parts[i]));
  }
  PersistentGrid &p = launch.persistent;
  p = {fields[0], fields[1], fields[2]};
  if (p.units == 0 || p.cluster == 0 || p.cluster > 16)
    return error("persistent grid " + quoted(token) +
                 ": units must be >= 1 and the cluster 1 to 16");
  uint64_t most = uint64_t(p.units) * p.cluster;
  if (most > kMaxGridX)
    return error("persistent grid " + quoted(token) +
                 " exceeds CUDA's limit (x < 2^31)");
  launch.grid[0] = unsigned(most);
  return SPARSEOPT_OK;
}

/// b<id> | i32:<v> | i64:<v> | f32:<v> | tmap:...
Status ManifestParser::parseArg(const std::string &token, ArgDecl &arg) {
  auto invalid = [&](const std::string &why) {
    return error("invalid launch argument " + quoted(token) + ": " + why);
  };
  if (token.compare(0, 5, "tmap:") == 0)
    return parseTensorMapArg(token, arg);
  if (token.size() > 1 && token[0] == 'b') {
    arg.kind = ArgKind::Buffer;
    if (!parseNumber(token.substr(1), arg.bufferId))
      return invalid("expected b<buffer id>");
    return SPARSEOPT_OK;
  }
  if (token.size() > 4 && token[3] == ':') {
    std::string type = token.substr(0, 3);
    std::string value = token.substr(4);
    if (type == "i32") {
      // Accept the signed and the unsigned 32-bit range.
      int64_t wide = 0;
      if (!parseNumber(value, wide) || wide < INT32_MIN || wide > UINT32_MAX)
        return invalid("expected a 32-bit integer");
      uint32_t bits = uint32_t(wide);
      arg.kind = ArgKind::I32;
      std::memcpy(arg.value, &bits, sizeof(bits));
      return SPARSEOPT_OK;
    }
    if (type == "i64") {
      int64_t signedValue = 0;
      uint64_t bits = 0;
      if (parseNumber(value, signedValue))
        bits = uint64_t(signedValue);
      else if (!parseNumber(value, bits))
        return invalid("expected a 64-bit integer");
      arg.kind = ArgKind::I64;
      std::memcpy(arg.value, &bits, sizeof(bits));
      return SPARSEOPT_OK;
    }
    if (type == "f32") {
      float f = 0;
      if (!parseNumber(value, f))
        return invalid("expected a floating-point number");
      arg.kind = ArgKind::F32;
      std::memcpy(arg.value, &f, sizeof(f));
      return SPARSEOPT_OK;
    }
  }
  return invalid("expected b<id>, i32:<value>, i64:<value>, f32:<value> or "
                 "tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>");
}

/// tmap:b<id>:<dtype>:<d0>x<d1>...:<box0>x<box1>...:<swizzle>, dimensions
/// and box outermost first. Checks what cuTensorMapEncodeTiled requires of
/// a tiled map without interleave over a dense row-major tensor.
Status ManifestParser::parseTensorMapArg(const std::string &token,
                                         ArgDecl &arg) {
  constexpr uint64_t kMaxDim = uint64_t(1) << 32;
  constexpr uint32_t kMaxBox = 256;
  constexpr uint64_t kMaxPitch = uint64_t(1) << 40;
  auto invalid = [&](const std::string &why) {
    return error("invalid tensor map argument " + quoted(token) + ": " + why);
  };
  std::vector<std::string> fields = split(token, ':');
  if (fields.size() != 6)
    return invalid("expected tmap:b<id>:<dtype>:<dims>:<box>:<swizzle> "
                   "(e.g. tmap:b2:f16:4096x2048:128x32:64)");
  arg.kind = ArgKind::TensorMap;
  TensorMapDecl &map = arg.tensorMap;

  const std::string &buffer = fields[1];
  if (!parseBufferRef(buffer, arg.bufferId))
    return invalid("expected b<buffer id>, got " + quoted(buffer));

  const std::string &dtype = fields[2];
  if (dtype == "f16" || dtype == "bf16") {
    map.dtype = dtype == "f16" ? TensorMapDType::F16 : TensorMapDType::BF16;
    map.elementBytes = 2;
  } else if (dtype == "f32" || dtype == "i32") {
    map.dtype = dtype == "f32" ? TensorMapDType::F32 : TensorMapDType::I32;
    map.elementBytes = 4;
  } else {
    return invalid("unknown element type " + quoted(dtype) +
                   " (expected f16, bf16, f32 or i32)");
  }

  std::vector<std::string> dims = split(fields[3], 'x');
  if (dims.size() > kMaxTensorMapRank)
    return invalid("a tensor map has 1 to " +
                   std::to_string(kMaxTensorMapRank) + " dimensions, got " +
                   std::to_string(dims.size()));
  map.rank = unsigned(dims.size());
  for (unsigned i = 0; i < map.rank; ++i)
    if (!parseExtent(dims[i], map.dims[i], kMaxDim))
      return invalid("dimension " + quoted(dims[i]) +
                     ": expected an integer from 1 to " +
                     std::to_string(kMaxDim));

  std::vector<std::string> box = split(fields[4], 'x');
  if (box.size() != map.rank)
    return invalid("the box has " + std::to_string(box.size()) +
                   " dimension(s) but the tensor has " +
                   std::to_string(map.rank));
  for (unsigned i = 0; i < map.rank; ++i)
    if (!parseExtent(box[i], map.box[i], kMaxBox))
      return invalid("box dimension " + quoted(box[i]) +
                     ": expected an integer from 1 to " +
                     std::to_string(kMaxBox));

  const std::string &swizzle = fields[5];
  if (!parseNumber(swizzle, map.swizzle) ||
      (map.swizzle != 0 && map.swizzle != 32 && map.swizzle != 64 &&
       map.swizzle != 128))
    return invalid("swizzle: expected 0, 32, 64 or 128 (bytes), got " +
                   quoted(swizzle));

  uint64_t inner = uint64_t(map.box[map.rank - 1]) * map.elementBytes;
  if (inner % 16 != 0)
    return invalid("the innermost box extent is " + std::to_string(inner) +
                   " bytes; it must be a multiple of 16");
  if (map.swizzle != 0 && inner > map.swizzle)
    return invalid("the innermost box extent of " + std::to_string(inner) +
                   " bytes exceeds the " + std::to_string(map.swizzle) +
                   "-byte swizzle span");

  // Row pitches (byte strides of all but the innermost dimension); each is
  // a multiple of the next, so only the innermost can break the 16-byte
  // rule. Stops before a product could overflow.
  uint64_t pitch = map.elementBytes;
  for (int i = int(map.rank) - 2; i >= 0; --i) {
    if (map.dims[i + 1] > (kMaxPitch - 1) / pitch)
      return invalid("the row pitch of dimension " + std::to_string(i) +
                     " is 2^40 bytes or more (the limit of a tensor map)");
    pitch *= map.dims[i + 1];
    if (pitch % 16 != 0)
      return invalid("the row pitch of dimension " + std::to_string(i) +
                     " is " + std::to_string(pitch) +
                     " bytes; it must be a multiple of 16");
  }

  map.slot = m.tensorMaps++;
  return SPARSEOPT_OK;
}

} // namespace sparseopt
