//===- SharedPrepare.cpp - prepared weights shared between programs -------===//

#include "SharedPrepare.h"

#include <cstring>
#include <map>

namespace sparseopt {

std::string ptxKernelDefinition(const std::string &ptx,
                                const std::string &name) {
  // ".entry <name>(" starts a kernel; its body is the first brace block
  // after it, closed by the matching brace.
  const std::string head = ".entry " + name + "(";
  size_t start = ptx.find(head);
  if (start == std::string::npos)
    return "";
  size_t from = start + head.size() - 1; // at the '('
  size_t open = ptx.find('{', from);
  if (open == std::string::npos)
    return "";
  int depth = 0;
  for (size_t i = open; i < ptx.size(); ++i) {
    if (ptx[i] == '{')
      ++depth;
    else if (ptx[i] == '}' && --depth == 0)
      return ptx.substr(from, i + 1 - from);
  }
  return "";
}

namespace {

std::vector<const StepDecl *> prepareSteps(const Manifest &m) {
  std::vector<const StepDecl *> out;
  for (const StepDecl &step : m.steps)
    if (step.stage == StepStage::Prepare)
      out.push_back(&step);
  return out;
}

} // namespace

PrepareMatch
matchPrepareStages(const Manifest &p, const std::string &pPtx,
                   const Manifest &donor, const std::string &donorPtx,
                   const std::function<bool(int, int)> &sameParam) {
  PrepareMatch result;
  auto differ = [&](const std::string &why) {
    result.matches = false;
    result.why = why;
    result.temps.clear();
    return result;
  };
  std::vector<const StepDecl *> mine = prepareSteps(p),
                                theirs = prepareSteps(donor);
  if (mine.empty())
    return differ("the program has no prepare steps");
  if (mine.size() != theirs.size())
    return differ("the prepare stages have " + std::to_string(mine.size()) +
                  " and " + std::to_string(theirs.size()) + " steps");
  std::map<size_t, size_t> forward, backward;
  for (size_t s = 0; s < mine.size(); ++s) {
    const std::string step = "prepare step " + std::to_string(s);
    if (mine[s]->kind != StepKind::Launch ||
        theirs[s]->kind != StepKind::Launch)
      return differ(step + " is not a kernel launch in both");
    const LaunchDecl &a = p.launches[mine[s]->index];
    const LaunchDecl &b = donor.launches[theirs[s]->index];
    std::string defA = ptxKernelDefinition(pPtx, a.kernel),
                defB = ptxKernelDefinition(donorPtx, b.kernel);
    if (defA.empty() || defA != defB)
      return differ(step + ": kernels " + a.kernel + " and " + b.kernel +
                    " are not the same PTX");
    if (std::memcmp(a.grid, b.grid, sizeof(a.grid)) ||
        a.persistent.units != b.persistent.units ||
        a.persistent.cluster != b.persistent.cluster ||
        a.persistent.reserved != b.persistent.reserved ||
        std::memcmp(a.block, b.block, sizeof(a.block)) ||
        a.sharedBytes != b.sharedBytes || a.args.size() != b.args.size())
      return differ(step + ": the launch shapes or argument counts differ");
    for (size_t i = 0; i < a.args.size(); ++i) {
      const ArgDecl &x = a.args[i], &y = b.args[i];
      const std::string arg = step + ", argument " + std::to_string(i);
      if (x.kind != y.kind)
        return differ(arg + ": the argument kinds differ");
      if (x.kind == ArgKind::TensorMap)
        return differ(arg + ": tensor maps are not compared");
      if (x.kind != ArgKind::Buffer) {
        if (std::memcmp(x.value, y.value, sizeof(x.value)))
          return differ(arg + ": the immediate values differ");
        continue;
      }
      const BufferDecl &bx = p.buffers[x.buffer], &by = donor.buffers[y.buffer];
      if (bx.kind != by.kind || bx.bytes != by.bytes)
        return differ(arg + ": buffers of other roles or sizes");
      if (bx.kind == BufferKind::Param) {
        if (!sameParam(bx.slot, by.slot))
          return differ(arg + ": params " + std::to_string(bx.slot) + " and " +
                        std::to_string(by.slot) + " are not the same tensor");
        continue;
      }
      if (bx.kind != BufferKind::Temp)
        return differ(arg + ": only params and temps are compared");
      if (bx.arenaOffset >= 0 || by.arenaOffset >= 0)
        return differ(arg + ": a temp in the arena");
      auto f = forward.find(x.buffer);
      auto g = backward.find(y.buffer);
      if ((f != forward.end() && f->second != y.buffer) ||
          (g != backward.end() && g->second != x.buffer))
        return differ(arg + ": the temps do not correspond one to one");
      forward[x.buffer] = y.buffer;
      backward[y.buffer] = x.buffer;
    }
  }
  // A stat counter is written by the run steps: never shared.
  for (const StatDecl &stat : p.stats)
    if (forward.count(stat.buffer))
      return differ("stat " + stat.name + " is a buffer of the prepare stage");
  for (const StatDecl &stat : donor.stats)
    if (backward.count(stat.buffer))
      return differ("the donor's stat " + stat.name +
                    " is a buffer of its prepare stage");
  result.matches = true;
  result.temps.assign(forward.begin(), forward.end());
  return result;
}

} // namespace sparseopt
